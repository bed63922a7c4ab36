"""Pictures of promotion grids: ``table``, ``diff`` and ``audit`` as PNG or SVG (matplotlib).

matplotlib is an optional extra (``pip install ".[plot]"`` in a clone) and is imported only when a
picture is drawn. Every figure is a plain ``matplotlib.figure.Figure`` on an Agg canvas: no
pyplot, no GUI backend, no global state touched, so drawing works on a headless machine and
inside a user's notebook alike.

The colours encode the *kind* of the result dtype (bool, unsigned, signed, float, complex),
darker shades for wider dtypes; refused promotions are hatched white cells with a cross, and an
OverflowError (a Python int out of range) is a black cell.
"""
from __future__ import annotations

import functools

from ..core import dtypes as D

__all__ = ["MissingMatplotlib", "audit_figure", "compare_figure", "diff_figure", "table_figure"]

ERROR, OVERFLOW = "--", "OV"
CROSS = "\u2717"  # the glyph an error cell shows (DejaVu Sans, matplotlib's default font, has it)

# kind -> (legend label, colormap); the shade inside a colormap grows with the dtype's width.
_KINDS = {"b": ("bool", "Purples"),
          "u": ("unsigned int", "Greens"),
          "i": ("signed int", "Blues"),
          "f": ("float", "Oranges"),
          "c": ("complex", "RdPu")}
_WIDTHS = {"b": [8], "u": [8, 16, 32, 64], "i": [8, 16, 32, 64], "f": [8, 16, 32, 64], "c": [32, 64, 128]}
_ERROR_FACE, _ERROR_HATCH = "#ffffff", "#b0b0b0"
_OVERFLOW_FACE = "#202020"
_SAME_FACE, _SAME_TEXT = "#ececec", "#a8a8a8"
_DIFF_FACE, _DIFF_REFUSED_FACE = "#ffc94d", "#f4a3a3"
_NONCOMM_EDGE = "#d00000"
_GROUP_NAMES = {"t": "arrays", "z": "0-d arrays", "s": "Python scalars"}
_SCALAR_LABELS = {"True", "1", "-1", "300", "1.5", "1+2j"}

CELL = 0.44     # inches per grid cell
DPI = 150


class MissingMatplotlib(ImportError):
    """Drawing a picture needs matplotlib, an optional extra."""


def _mpl():
    try:
        import matplotlib
        from matplotlib import patches
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingMatplotlib("drawing pictures needs matplotlib: pip install matplotlib (in a clone of "
                                "gpupromote: pip install \".[plot]\", the plot extra)") from None
    return matplotlib, Figure, FigureCanvasAgg, patches


# ---------------------------------------------------------------------------------------------
# colours

@functools.cache
def _colour(code: str):
    """Face colour of a cell showing the result ``code``."""
    if code == ERROR:
        return _ERROR_FACE
    if code == OVERFLOW:
        return _OVERFLOW_FACE
    import matplotlib
    d = D.BY_CODE[code]
    widths = _WIDTHS[d.kind]
    if d.kind == "b":
        t = 0.45
    else:
        t = 0.25 + 0.55 * widths.index(d.bits) / (len(widths) - 1)
    return matplotlib.colormaps[_KINDS[d.kind][1]](t)


def _ink(face) -> str:
    """Black or white text, whichever reads better on ``face``."""
    from matplotlib.colors import to_rgb
    r, g, b = to_rgb(face)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def _label(code: str) -> str:
    return CROSS if code == ERROR else code


def _group(col: str) -> str:
    return "s" if col in _SCALAR_LABELS else ("z" if col.endswith("[]") else "t")


# ---------------------------------------------------------------------------------------------
# the common frame: a figure with a rows x cols grid, labelled axes and column groups

class _Frame:
    def __init__(self, rows, cols, title, subtitle, legend_rows=2, cell=CELL):
        _, Figure, FigureCanvasAgg, self.patches = _mpl()
        self.rows, self.cols = list(rows), list(cols)
        nr, nc = len(self.rows), len(self.cols)
        groups = [_group(c) for c in self.cols]
        self.multi = len(set(groups)) > 1
        rotated = any(len(c) > 3 for c in self.cols)
        left, right = 1.05, 0.35
        subtitle = _wrap(subtitle, max(nc * cell + left + right, 8.5))
        sub_lines = subtitle.count("\n") + 1
        top = 1.1 + 0.22 * sub_lines + (0.3 if rotated else 0) + (0.25 if self.multi else 0)
        bottom = 0.25 + 0.26 * legend_rows
        width = max(nc * cell + left + right, 8.5)
        height = nr * cell + top + bottom
        self.fig = Figure(figsize=(width, height), dpi=DPI)
        FigureCanvasAgg(self.fig)  # Agg, whatever backend the user's session has chosen
        grid_w, grid_h = nc * cell, nr * cell
        x0 = left + (width - left - right - grid_w) / 2
        self.ax = ax = self.fig.add_axes([x0 / width, bottom / height, grid_w / width, grid_h / height])
        ax.set_xlim(0, nc)
        ax.set_ylim(nr, 0)
        ax.set_aspect("equal")
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.xaxis.tick_top()
        ax.set_xticks([i + 0.5 for i in range(nc)], self.cols, fontsize=8, fontfamily="monospace")
        for label in ax.get_xticklabels():
            if len(label.get_text()) > 3:
                label.set_rotation(90)
        ax.set_yticks([i + 0.5 for i in range(nr)], self.rows, fontsize=8, fontfamily="monospace")
        ax.tick_params(length=0, pad=3)
        ax.set_ylabel("first operand: an array of dtype", fontsize=9)
        self.fig.text(0.5, 1 - 0.3 / height, title, ha="center", va="top", fontsize=12.5, weight="bold")
        self.fig.text(0.5, 1 - 0.66 / height, subtitle, ha="center", va="top", fontsize=9, color="#333333",
                      linespacing=1.5)
        # column groups: a label above each, a thick line between them
        lift = 30 if rotated else 16
        start = 0
        for i in range(1, nc + 1):
            if i == nc or groups[i] != groups[start]:
                if self.multi:
                    ax.annotate(_GROUP_NAMES[groups[start]], xy=((start + i) / 2, 0), xycoords="data",
                                xytext=(0, lift), textcoords="offset points", ha="center", va="bottom",
                                fontsize=9, style="italic", annotation_clip=False)
                if i < nc:
                    ax.axvline(i, color="black", lw=2.2, zorder=5)
                start = i
        ax.set_xlabel("second operand (column)", fontsize=9, labelpad=22 if self.multi else 6)
        ax.xaxis.set_label_position("top")

    def cell(self, r, c, face, text, ink=None, hatch=None, edge="white", lw=0.8, size=8.0, weight="normal"):
        P = self.patches
        self.ax.add_patch(P.Rectangle((c, r), 1, 1, facecolor=face, edgecolor=edge, lw=lw, zorder=1))
        if hatch:
            self.ax.add_patch(P.Rectangle((c, r), 1, 1, facecolor="none", edgecolor=hatch[1], hatch=hatch[0],
                                          lw=0, zorder=2))
        if text:
            self.ax.text(c + 0.5, r + 0.53, text, ha="center", va="center", fontsize=size, zorder=4,
                         color=ink or _ink(face), weight=weight)

    def outline(self, r, c, colour, lw=2.2):
        self.ax.add_patch(self.patches.Rectangle((c + 0.06, r + 0.06), 0.88, 0.88, facecolor="none",
                                                 edgecolor=colour, lw=lw, zorder=6))

    def legend(self, handles, ncol, title=None):
        leg = self.fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8.5, frameon=False,
                              handlelength=1.6, handleheight=1.3, columnspacing=1.6, bbox_to_anchor=(0.5, 0.0),
                              title=title, title_fontsize=8.5)
        if title:
            leg.get_title().set_color("#444444")

    def patch(self, label, face, edge="#888888", hatch=None, lw=0.6):
        return self.patches.Patch(facecolor=face, edgecolor=edge, hatch=hatch, lw=lw, label=label)

    def save(self, path):
        return _save(self.fig, path)


def _wrap(text, width_in, sep="  ·  "):
    """Break a subtitle at its separators so that each line fits the figure (9 pt text)."""
    max_chars = int(width_in / 0.068)
    lines = []
    for line in text.split("\n"):
        cur = ""
        for part in line.split(sep):
            if cur and len(cur) + len(sep) + len(part) > max_chars:
                lines.append(cur)
                cur = part
            else:
                cur = f"{cur}{sep}{part}" if cur else part
        lines.append(cur)
    return "\n".join(lines)


def _save(fig, path):
    if path is None:
        return fig
    import matplotlib
    path = str(path)
    with matplotlib.rc_context({"svg.hashsalt": "gpupromote", "hatch.linewidth": 0.8}):
        if path.lower().endswith(".svg"):
            fig.savefig(path, format="svg", metadata={"Date": None})
        elif not _save_small_png(fig, path):
            fig.savefig(path, dpi=DPI, metadata={"Software": None})
    return path


def _save_small_png(fig, path) -> bool:
    """Save a PNG with a 128-colour palette: the pictures are flat colours and text, so they look
    the same at a third of the size (the docs' pictures are committed)."""
    if not path.lower().endswith(".png"):
        return False
    try:
        from PIL import Image
    except ImportError:  # Pillow comes with matplotlib; without it savefig writes RGBA
        return False
    fig.set_dpi(DPI)
    fig.canvas.draw()
    im = Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    im = im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    im.save(path, optimize=True)
    return True


def _kind_handles(frame, codes):
    """One legend entry per result kind present, naming its dtypes from narrow to wide."""
    present = {D.BY_CODE[c] for c in codes if c not in (ERROR, OVERFLOW)}
    handles = []
    for kind, (label, _) in _KINDS.items():
        members = sorted((d for d in present if d.kind == kind), key=lambda d: d.rank)
        if members:
            mid = members[len(members) // 2]
            names = " ".join(d.code for d in members)
            handles.append(frame.patch(f"{label}: {names}", _colour(mid.code)))
    return handles


def _corner_handle(label):
    from matplotlib.lines import Line2D
    return Line2D([], [], color="black", marker=[(0, 1), (1, 1), (1, 0)], markersize=11, linestyle="none", label=label)


def _status_handles(frame, codes):
    handles = []
    if ERROR in codes:
        handles.append(frame.patch(f"{CROSS} refused (TypeError)", _ERROR_FACE, hatch="///"))
    if OVERFLOW in codes:
        handles.append(frame.patch("OV: OverflowError (the Python int does not fit)", _OVERFLOW_FACE))
    return handles


def _operands_phrase(cols):
    groups = []
    for c in cols:
        g = _GROUP_NAMES[_group(c)]
        if g not in groups:
            groups.append(g)
    return ", ".join(groups)


def _emulates(policy):
    try:
        from ..promotion.policies import get_policy
        return get_policy(policy).emulates
    except Exception:  # noqa: BLE001 - a title is no place to fail
        return ""


# ---------------------------------------------------------------------------------------------
# the pictures (gp.compare's at the end)

def table_figure(grid, path=None):
    """The grid of one policy as a heatmap: one colour per result kind, darker = wider, errors
    hatched, overflow black. Returns ``path`` (or the Figure when ``path`` is None)."""
    rows = [r.code for r in grid.rows]
    codes = set(grid.cells.values())
    emul = _emulates(grid.policy)
    handles_n = len({D.BY_CODE[c].kind for c in codes if c not in (ERROR, OVERFLOW)}) + \
        (ERROR in codes) + (OVERFLOW in codes)
    f = _Frame(rows, grid.cols, f"{grid.policy}: result dtype of {grid.op}(row, column)",
               f"rows: arrays  ·  columns: {_operands_phrase(grid.cols)}"
               + (f"  ·  emulates {emul}" if emul else ""), legend_rows=1 + (handles_n + 3) // 4)
    for i, r in enumerate(rows):
        for j, c in enumerate(grid.cols):
            code = grid.cells[r, c]
            face = _colour(code)
            f.cell(i, j, face, _label(code), hatch=("///", _ERROR_HATCH) if code == ERROR else None,
                   ink="#707070" if code == ERROR else None, weight="bold" if code == OVERFLOW else "normal")
    handles = _kind_handles(f, codes) + _status_handles(f, codes)
    f.legend(handles, ncol=min(4, len(handles)), title="colour: the kind of the result dtype, darker = wider")
    return f.save(path)


def diff_figure(grid_a, grid_b, path=None):
    """Where two policies disagree: differing cells highlighted with both results ("f8/f2", the
    first policy's first), every other cell greyed with the common result."""
    a, b = grid_a.policy, grid_b.policy
    rows = [r.code for r in grid_a.rows]
    cells = [(r, c) for r in rows for c in grid_a.cols]
    differ = {(r, c) for r, c in cells if grid_a.cells[r, c] != grid_b.cells[r, c]}
    n = len(differ)
    f = _Frame(rows, grid_a.cols, f"{a} vs {b}: {n} of {len(cells)} results of {grid_a.op} differ",
               f"coloured cells differ, written as {a} result / {b} result  ·  grey cells agree  ·  "
               f"rows: arrays, columns: {_operands_phrase(grid_a.cols)}", legend_rows=1, cell=0.5)
    refused_one = False
    for i, r in enumerate(rows):
        for j, c in enumerate(grid_a.cols):
            x, y = grid_a.cells[r, c], grid_b.cells[r, c]
            if (r, c) in differ:
                one_refuses = ERROR in (x, y) or OVERFLOW in (x, y)
                refused_one |= one_refuses
                text = f"{_label(x)}/{_label(y)}"
                f.cell(i, j, _DIFF_REFUSED_FACE if one_refuses else _DIFF_FACE, text, ink="black",
                       size=7.5 if len(text) <= 5 else 6.5, weight="bold", edge="#555555", lw=0.8)
            else:
                f.cell(i, j, _SAME_FACE, _label(x), ink=_SAME_TEXT, size=7.5)
    handles = [f.patch(f"different result dtype ({a} / {b})", _DIFF_FACE)]
    if refused_one:
        handles.append(f.patch(f"one of them refuses ({CROSS}) or overflows (OV)", _DIFF_REFUSED_FACE))
    handles.append(f.patch("same result in both (shown in grey)", _SAME_FACE))
    f.legend(handles, ncol=len(handles))
    return f.save(path)


def audit_figure(policy, report, path=None, op=None):
    """A policy's array-array grid with its non-commutative cells outlined in red, its lossy
    cells hatched and its silent widenings to 64 bits flagged by a corner mark."""
    op = op or report.get("op", "add")
    table = report["table"]
    names = sorted({a for a, _ in table}, key=lambda d: d.rank)
    codes = [d.code for d in names]
    noncomm = set()
    for x, y, _, _ in report["non_commutative"]:
        noncomm |= {(x, y), (y, x)}
    lossy, widened = set(), set()
    for key, found in (("lossy", lossy), ("widened_to_64", widened)):
        for x, y, r in report[key]:
            found.add((x, y))
            if table.get((y, x)) == r:
                found.add((y, x))
    nc, nl, nw = len(report["non_commutative"]), len(report["lossy"]), len(report["widened_to_64"])
    na = len(report["non_associative"])
    f = _Frame(codes, codes, f"audit of {policy}: {op}(row, column) on arrays",
               f"{nc} non-commutative pair{'s' * (nc != 1)} (red outline)  ·  {nl} lossy result{'s' * (nl != 1)} "
               f"(hatched)  ·  {nw} silent widening{'s' * (nw != 1)} to 64 bits (black corner)\n"
               f"{na} non-associative triple{'s' * (na != 1)}, (a + b) + c ≠ a + (b + c), are not drawn: "
               f"python -m gpupromote audit {policy} lists them", legend_rows=3)
    seen = set()
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            r = table[x, y]
            code = r.code if r is not None else ERROR
            seen.add(code)
            face = _colour(code)
            if (x, y) in lossy:
                f.cell(i, j, face, None, hatch=("////", "black"))
                f.ax.text(j + 0.5, i + 0.53, code, ha="center", va="center", fontsize=8, zorder=4,
                          color="black", weight="bold",
                          bbox={"boxstyle": "round,pad=0.12", "facecolor": "white", "edgecolor": "none"})
            else:
                f.cell(i, j, face, _label(code), hatch=("///", _ERROR_HATCH) if code == ERROR else None,
                       ink="#707070" if code == ERROR else None)
            if (x, y) in noncomm:
                f.outline(i, j, _NONCOMM_EDGE, lw=2.6)
            if (x, y) in widened:
                f.ax.add_patch(f.patches.Polygon([(j + 0.55, i), (j + 1, i), (j + 1, i + 0.45)], closed=True,
                                                 facecolor="black", edgecolor="white", lw=0.6, zorder=7))
    handles = [f.patch(f"non-commutative: {policy} gives a different dtype for b + a",
                       "white", edge=_NONCOMM_EDGE, lw=2.2),
               f.patch("lossy: the result cannot hold every value of both inputs", "white", edge="black",
                       hatch="////"),
               _corner_handle("silent widening: 64-bit result from narrower inputs")]
    handles += _kind_handles(f, seen) + _status_handles(f, seen)
    f.legend(handles, ncol=3)
    return f.save(path)


def compare_figure(report, path=None):
    """gp.compare's report as a picture: one row per step, one column per policy with the step's
    result dtype coloured by kind (as the grids are), a refusal as a hatched cross, a step not run
    (after a refusal) blank; a dtype that differs from the first policy's outlined in red, and on
    the right how each policy's values differ from the first's."""
    _, Figure, FigureCanvasAgg, patches = _mpl()
    steps, policies = report.steps, list(report.policies)
    labels = [f"{s.index}  {s.call}" for s in steps]
    notes = ["; ".join(f"{p}: {d}" for p, d in s.differences.items() if d.differs) for s in steps]
    where = [f"line {report.where(s)}  {s.text}" for s in steps]
    col, row = 1.05, 0.34
    left = 0.3 + 0.075 * max((len(x) for x in labels), default=4)
    right = 0.3 + 0.058 * max((len(a) + len(b) + 3 for a, b in zip(where, notes)), default=8)
    width = max(left + col * len(policies) + right, 7.0)
    top, bottom = 1.25, 0.3
    height = top + bottom + row * max(len(steps), 1)
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes([left / width, bottom / height, col * len(policies) / width, row * len(steps) / height])
    ax.set_xlim(0, len(policies))
    ax.set_ylim(len(steps), 0)
    ax.axis("off")
    ref = policies[0]
    for i, s in enumerate(steps):
        first = s is report.first_divergence
        ax.text(-0.08, i + 0.5, labels[i], ha="right", va="center", fontsize=8, fontfamily="monospace",
                weight="bold" if first else "normal", color="#b00000" if first else "black")
        for j, p in enumerate(policies):
            name = s.dtypes[p]
            if p in s.refusals:
                face, text, hatch = _ERROR_FACE, CROSS, ("///", _ERROR_HATCH)
            elif name is None:
                face, text, hatch = _SAME_FACE, "", None
            else:
                face, text, hatch = _colour(D.dtype(name).code), name, None
            ax.add_patch(patches.Rectangle((j, i), 1, 1, facecolor=face, edgecolor="white", lw=0.8, zorder=1))
            if hatch:
                ax.add_patch(patches.Rectangle((j, i), 1, 1, facecolor="none", edgecolor=hatch[1], hatch=hatch[0],
                                               lw=0, zorder=2))
            ax.text(j + 0.5, i + 0.53, text, ha="center", va="center", fontsize=7.5, zorder=4,
                    color="#707070" if p in s.refusals else _ink(face))
            if p != ref and (name != s.dtypes[ref] or p in s.refusals) and (name or p in s.refusals):
                ax.add_patch(patches.Rectangle((j + 0.04, i + 0.06), 0.92, 0.88, facecolor="none",
                                               edgecolor=_NONCOMM_EDGE, lw=1.8, zorder=6))
        ax.text(len(policies) + 0.1, i + 0.5, f"{where[i]}   {notes[i]}".rstrip(), ha="left", va="center",
                fontsize=7.5, color="#333333")
    for j, p in enumerate(policies):
        ax.text(j + 0.5, -0.25, p, ha="center", va="bottom", fontsize=8.5, weight="bold")
    fig.text(0.5, 1 - 0.28 / height, f"gp.compare({report.name}): {', '.join(policies)}", ha="center", va="top",
             fontsize=12, weight="bold")
    verdict = report.first_divergence
    sub = ("no divergence" if verdict is None else
           f"first divergence: step {verdict.index}, {verdict.op} at line {report.where(verdict)}")
    blank = "  ·  blank: not run (after a refusal)" if any(s.not_run for s in steps) else ""
    fig.text(0.5, 1 - 0.62 / height, f"{sub}  ·  red outline: a dtype other than {ref}'s  ·  {CROSS}: refused{blank}",
             ha="center", va="top", fontsize=8.5, color="#333333")
    return _save(fig, path)
