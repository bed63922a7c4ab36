"""Small modules: no Python module of the package is over 500 lines (split one by concern when it
grows: the owned math library's complex functions are complex.py, complex_inverse.py and
complex_entry.py; gp.fuse is fuse.py, fuse_trace.py and fuse_stages.py)."""
from pathlib import Path

import gpupromote

PACKAGE = Path(gpupromote.__file__).parent
MAX_LINES = 500


def test_no_module_is_over_500_lines():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50, "the package's modules were not found"
    long = [f"{p.relative_to(PACKAGE.parent)}: {n} lines" for p in modules
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines (split them by concern):\n" + "\n".join(long)
