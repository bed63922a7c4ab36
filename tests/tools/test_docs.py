"""The pictures, the generated docs and the README, as a newcomer meets them.

* every CLI picture (table, diff, audit; --png and --svg) renders into a temporary folder with
  the Agg backend and is a valid image of a sensible size;
* the committed markdown under docs/ is what `make docs` writes now (the docs cannot drift);
* README's ```python blocks run as written, and each line commented with a dtype (``# float32:
  ...``) really gives that dtype; the CuPy block runs where CuPy sees a GPU.
"""
from __future__ import annotations

import ast
import io
import re
import shlex
import struct
import tokenize
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import gpupromote as gp
from gpupromote.tools import cli, docs
from gpupromote.core import dtypes as D

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _agg(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")


def png_size(path: Path):
    """(width, height) from a PNG's IHDR chunk, after checking the signature."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def svg_size(path: Path):
    root = ET.parse(path).getroot()  # raises if the SVG is not well-formed XML
    assert root.tag.endswith("svg")
    return tuple(float(re.match(r"[\d.]+", root.get(k))[0]) for k in ("width", "height"))


def check_png(path: Path):
    w, h = png_size(path)
    assert 600 <= w <= 4000 and 600 <= h <= 4000, f"{path.name} is {w} x {h} px"
    assert path.stat().st_size < 300_000, f"{path.name} is {path.stat().st_size} bytes"


# ---------------------------------------------------------------------------------------------
# pictures

PICTURES = {
    "table": ["table", "torch", "--kinds", "t,z,s"],
    "diff": ["diff", "numpy", "torch", "--kinds", "t,s"],
    "audit": ["audit", "ascend"],
}


@pytest.mark.parametrize("kind", list(PICTURES))
def test_cli_draws_png_and_svg(kind, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png, svg = tmp_path / f"{kind}.png", tmp_path / f"{kind}.svg"
    assert cli.main([*PICTURES[kind], "--png", str(png), "--svg", str(svg)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {png}" in out and f"wrote {svg}" in out
    check_png(png)
    w, h = svg_size(svg)  # points: 72 per inch
    assert 400 <= w <= 2000 and 400 <= h <= 2000
    text = svg.read_text()
    assert "<svg" in text and len(text) > 10_000


def test_pictures_name_what_they_show(tmp_path):
    """The SVG keeps its text: titles name the policies and the op, legends the kinds and errors."""
    pytest.importorskip("matplotlib")
    import matplotlib

    from gpupromote.tools import plots
    from gpupromote.tools.tables import audit, diff_cells, grid
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text, to read it back
        plots.table_figure(grid("torch", "add", ("t", "s")), path=tmp_path / "t.svg")
        ga, gb, cells = diff_cells("numpy", "torch")
        plots.diff_figure(ga, gb, path=tmp_path / "d.svg")
        plots.audit_figure("ascend", audit("ascend"), path=tmp_path / "a.svg")
    table, diff, aud = ((tmp_path / f).read_text() for f in ("t.svg", "d.svg", "a.svg"))
    assert "torch: result dtype of add" in table and "Python scalars" in table and "refused" in table
    assert f"numpy vs torch: {len(cells)} of {len(ga.cells)}" in diff and "f8/f2" in diff
    assert "non-commutative" in aud and "lossy" in aud


def test_missing_matplotlib_names_the_extra(monkeypatch):
    import sys

    from gpupromote.tools import plots
    from gpupromote.tools.tables import grid
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=re.escape('pip install ".[plot]"')):
        plots.table_figure(grid("numpy"), path="never-written.png")


# ---------------------------------------------------------------------------------------------
# generated docs

def test_committed_docs_match_make_docs(tmp_path):
    docs.generate(tmp_path, pictures=False, log=lambda *a: None)
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_text(encoding="utf-8") for p in tmp_path.rglob("*.md")}
    stale = [rel for rel, text in fresh.items()
             if not (DOCS / rel).exists() or (DOCS / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"docs/ is out of date ({', '.join(stale)}): run `make docs` and commit docs/"
    committed = {p.relative_to(DOCS).as_posix() for p in (DOCS / "policies").glob("*.md")}
    extra = committed - set(fresh)
    assert not extra, f"docs/ has pages for no policy: {sorted(extra)}"


def test_committed_pictures_exist_and_are_small():
    pictures = [f"{name}-{docs.OP}.png" for name in gp.policies() if docs._load(name)[0] is not None]
    pictures += list(docs.GALLERY)
    for name in pictures:
        path = DOCS / "img" / name
        assert path.exists(), f"docs/img/{name} is missing: run `make docs`"
        check_png(path)


def test_every_policy_has_a_page_linking_its_picture_and_deviations():
    for name in gp.policies():
        page = (DOCS / "policies" / f"{name}.md").read_text(encoding="utf-8")
        assert "## Known deviations" in page and "../deviations.md#" in page
        if docs._load(name)[0] is not None:
            assert f"![{name} add grid](../img/{name}-add.png)" in page
            assert "### Arrays with arrays" in page


def test_readme_gallery_pictures_are_generated():
    text = README.read_text(encoding="utf-8")
    for file in docs.GALLERY:
        assert f"](docs/img/{file})" in text, f"README does not show docs/img/{file}"


# ---------------------------------------------------------------------------------------------
# README

def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def _checked(block: str) -> str:
    """Rewrite each ``expr  # float32: why`` line into a check that expr gives that dtype."""
    names = {d.name for d in D.ALL}
    lines = block.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(block).readline):
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        word = tok.string.lstrip("# ").split(" ", 1)[0].rstrip(":,.;")
        code = lines[row - 1][:col].rstrip()
        if word not in names or not code.strip():
            continue
        try:
            expr = ast.parse(code.strip(), mode="eval").body
        except SyntaxError:
            continue
        if isinstance(expr, ast.Call) and getattr(expr.func, "id", None) == "print" and len(expr.args) == 1:
            expr = expr.args[0]
        indent = code[:len(code) - len(code.lstrip())]
        lines[row - 1] = f"{indent}__check__({ast.unparse(expr)}, {word!r}, {code.strip()!r})"
    return "\n".join(lines) + "\n"


def __check__(value, expected, source):
    got = str(getattr(value, "dtype", value))
    assert got == expected, f"README says {source} gives {expected}, it gives {got}"


def _has_gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device
        return False


BLOCKS = python_blocks()


def test_readme_has_a_quick_start():
    assert BLOCKS, "README has no ```python block"
    first = BLOCKS[0]
    for needed in ("gp.result_type(", "gp.add(", "gp.use_policy("):
        assert needed in first, f"the quick start shows no {needed}"
    assert any("cupy" in b for b in BLOCKS), "the quick start shows no cupy example"


@pytest.mark.parametrize("index", [pytest.param(i, marks=[pytest.mark.gpu] if "cupy" in b else [])
                                   for i, b in enumerate(BLOCKS)])
def test_readme_python_block_runs(index):
    block = BLOCKS[index]
    uses_cupy = "cupy" in block
    if uses_cupy and not _has_gpu():
        pytest.skip("CuPy sees no GPU")
    if "LocalCluster" in block:
        pytest.importorskip("distributed", reason="needs the dask extra (pip install '.[dask]' in a clone)")
    ns = {"__name__": "__readme__", "__check__": __check__}
    for earlier in BLOCKS[:index]:  # the blocks build on one another, as a reader runs them
        if "cupy" not in earlier and "LocalCluster" not in earlier:   # a cluster starts in its own test only
            exec(compile(earlier, "README.md", "exec"), ns)  # noqa: S102 - running the README is the test
    exec(compile(_checked(block), "README.md", "exec"), ns)  # noqa: S102


def test_readme_checks_its_dtype_comments():
    """The comment check above is not vacuous: the quick start has lines it verifies."""
    assert _checked(BLOCKS[0]).count("__check__(") >= 4


def test_readme_cli_lines_run(tmp_path, monkeypatch, capsys):
    """The README's `python -m gpupromote ...` lines run (pictures are covered above; here they
    are left out to keep the suite fast)."""
    monkeypatch.chdir(tmp_path)
    text = README.read_text(encoding="utf-8")
    commands = re.findall(r"^python -m gpupromote (.*?)(?:\s+#.*)?$", text, flags=re.MULTILINE)
    assert commands
    for command in commands:
        argv = shlex.split(command)
        if "--png" in argv or "--svg" in argv or argv[0] == "docs":
            continue
        if argv[0] == "--version":   # argparse prints the version and exits
            with pytest.raises(SystemExit) as done:
                cli.main(argv)
            assert done.value.code == 0, command
            continue
        assert cli.main(argv) == 0, command
    capsys.readouterr()


_PATH = re.compile(r"(?<![\w/.])((?:gpupromote|tests|kernels|bench|docs)/[\w./-]*\w)")


@pytest.mark.parametrize("page", ["README.md", "docs/ARCHITECTURE.md", "docs/cpu-engine.md", "docs/deviations.md",
                                  "docs/fuse.md", "docs/porting.md"])
def test_paths_the_docs_name_exist(page):
    text = (ROOT / page).read_text()
    missing = sorted({p for p in _PATH.findall(text)
                      if "<" not in p and "*" not in p and not (ROOT / p).exists()
                      and not (ROOT / p).with_suffix(".py").exists()})
    assert not missing, f"{page} names paths that do not exist: {missing}"
