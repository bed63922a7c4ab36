"""Promotion grids of a policy (what `table`, `diff`, `audit` and the docs show), computed from the
resolver: rows are arrays of each dtype, columns arrays, 0-d arrays or Python scalars."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..core import dtypes as D
from ..dispatch.api import result_type, spec
from ..promotion.policies import get_policy

__all__ = ["Grid", "grid", "diff_cells", "audit", "SCALARS", "holds"]

# The Python scalars a grid's "s" columns show (the oracle's values).
SCALARS = {"True": True, "1": 1, "-1": -1, "300": 300, "1.5": 1.5, "1+2j": 1 + 2j}
ERROR, OVERFLOW = "--", "OV"


@dataclass
class Grid:
    policy: str
    op: str
    rows: list          # DType of each row (an array operand)
    cols: list          # column labels: "i4" (array), "i4[]" (0-d array), "300" (Python scalar)
    cells: dict         # (row code, column label) -> 2-char code, "--" refused, "OV" overflow

    def text(self) -> str:
        width = max(4, *(len(c) + 1 for c in self.cols))
        lines = [f"{self.policy} {self.op}: rows are arrays, columns {', '.join(_KIND_NAMES[k] for k in _kinds_of(self.cols))}",
                 " " * 5 + "".join(f"{c:>{width}}" for c in self.cols)]
        for r in self.rows:
            lines.append(f"{r.code:>4} " + "".join(f"{self.cells[r.code, c]:>{width}}" for c in self.cols))
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = ["| | " + " | ".join(f"`{c}`" for c in self.cols) + " |",
                 "|---|" + "---|" * len(self.cols)]
        for r in self.rows:
            lines.append(f"| `{r.code}` | " + " | ".join(_md_cell(self.cells[r.code, c]) for c in self.cols) + " |")
        return "\n".join(lines)


_KIND_NAMES = {"t": "arrays", "z": "0-d arrays", "s": "Python scalars"}


def _kinds_of(cols):
    kinds = []
    for c in cols:
        k = "s" if c in SCALARS else ("z" if c.endswith("[]") else "t")
        if k not in kinds:
            kinds.append(k)
    return kinds


def _md_cell(cell):
    return {"--": "✗", "OV": "overflow"}.get(cell, cell)


def _operand(label):
    if label in SCALARS:
        return SCALARS[label]
    if label.endswith("[]"):
        return spec(D.BY_CODE[label[:-2]], ndim=0)
    return spec(D.BY_CODE[label])


def cell(policy, op, a, b) -> str:
    try:
        return result_type(a, b, op=op, policy=policy).code
    except OverflowError:
        return OVERFLOW
    except (TypeError, ValueError):
        return ERROR


def grid(policy: str, op: str = "add", kinds=("t",), dtypes=None) -> Grid:
    pol = get_policy(policy)
    rows = [d for d in D.ALL if d.name in pol.dtypes] if dtypes is None else [D.dtype(d) for d in dtypes]
    cols = []
    for k in kinds:
        if k == "t":
            cols += [d.code for d in rows]
        elif k == "z":
            cols += [d.code + "[]" for d in rows]
        elif k == "s":
            cols += list(SCALARS)
        else:
            raise ValueError(f"unknown operand kind {k!r}: use t (arrays), z (0-d arrays), s (Python scalars)")
    cells = {(r.code, c): cell(policy, op, spec(r), _operand(c)) for r in rows for c in cols}
    return Grid(policy, op, rows, cols, cells)


def diff_cells(a: str, b: str, op: str = "add", kinds=("t",)):
    """[(row, col, cell under a, cell under b)] over the dtypes both policies have."""
    common = [d for d in D.ALL if d.name in get_policy(a).dtypes and d.name in get_policy(b).dtypes]
    ga, gb = grid(a, op, kinds, common), grid(b, op, kinds, common)
    return ga, gb, [(r, c, ga.cells[r, c], gb.cells[r, c]) for (r, c) in ga.cells if ga.cells[r, c] != gb.cells[r, c]]


# Significand bits (with the implicit one) and the largest finite exponent of each float, to
# decide whether a result dtype holds every value of an input dtype.
_FLOAT = {"float8_e4m3fn": (4, 8), "float8_e5m2": (3, 15), "float16": (11, 15), "bfloat16": (8, 127),
          "float32": (24, 127), "float64": (53, 1023)}
_COMPLEX_PART = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def holds(result: D.DType, source: D.DType) -> bool:
    """Every value of ``source`` is a value of ``result`` (NumPy's 'safe' cast, for all dtypes)."""
    if source.kind == "b" or result == source:
        return True
    if result.kind == "c":
        part = D.dtype(_COMPLEX_PART[result.name])
        src = D.dtype(_COMPLEX_PART[source.name]) if source.kind == "c" else source
        return holds(part, src)
    if source.kind == "c" or result.kind == "b":
        return False
    if result.kind in "ui":
        if source.kind not in "ui":
            return False
        if source.kind == "u":
            return result.bits > source.bits or (result.kind == "u" and result.bits >= source.bits)
        return result.kind == "i" and result.bits >= source.bits
    digits, emax = _FLOAT[result.name]
    if source.kind in "ui":
        return digits >= source.bits - (source.kind == "i")
    src_digits, src_emax = _FLOAT[source.name]
    return digits >= src_digits and emax >= src_emax


def _width(d):
    return d.bits // 2 if d.kind == "c" else d.bits


def audit(policy: str, op: str = "add"):
    """Non-commutative cells, non-associative triples, lossy results and silent 64-bit widenings
    of a policy's array-array promotion."""
    pol = get_policy(policy)
    names = [d for d in D.ALL if d.name in pol.dtypes]
    table = {}
    for a, b in itertools.product(names, names):
        try:
            table[a, b] = result_type(spec(a), spec(b), op=op, policy=policy)
        except (TypeError, ValueError, OverflowError):
            table[a, b] = None
    non_commutative = [(a, b, table[a, b], table[b, a]) for a, b in itertools.combinations(names, 2)
                       if table[a, b] != table[b, a]]
    non_associative = []
    for a, b, c in itertools.product(names, repeat=3):
        ab, bc = table[a, b], table[b, c]
        left = table.get((ab, c)) if ab is not None else None
        right = table.get((a, bc)) if bc is not None else None
        if left != right and (left is not None or right is not None):
            non_associative.append((a, b, c, left, right))
    # each unordered pair once, both orders where the table is asymmetric
    cells = [(a, b, r) for (a, b), r in table.items()
             if r is not None and (a.rank <= b.rank or r != table[b, a])]
    lossy = [(a, b, r) for a, b, r in cells if not (holds(r, a) and holds(r, b))]
    widened = [(a, b, r) for a, b, r in cells if _width(r) >= 64 > max(_width(a), _width(b))]
    return {"table": table, "non_commutative": non_commutative, "non_associative": non_associative,
            "lossy": lossy, "widened_to_64": widened}
