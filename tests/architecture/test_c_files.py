"""The C extension stays in files by concern: no C file under gpupromote/ is over 600 lines, and the
one extension setup.py builds is made of exactly the .c files of gpupromote/dispatch/fastpath/."""
import runpy
from pathlib import Path

import pytest
import setuptools

import gpupromote

PACKAGE = Path(gpupromote.__file__).parent
ROOT = PACKAGE.parent
FASTPATH = PACKAGE / "dispatch" / "fastpath"
MAX_LINES = 600


def test_no_c_file_is_over_600_lines():
    files = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".c", ".h"))
    assert files, "no C sources under gpupromote/"
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in files
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, f"C files over {MAX_LINES} lines (split them by concern):\n" + "\n".join(long)


def _extensions(monkeypatch):
    """The ext_modules setup.py hands to setuptools.setup, without building anything."""
    seen = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: seen.update(kwargs))
    runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    return seen.get("ext_modules", [])


def test_the_extension_is_exactly_the_fastpath_folders_c_files(monkeypatch):
    if not (ROOT / "setup.py").exists():
        pytest.skip("gpupromote is installed, not checked out: no setup.py beside it")
    (ext,) = _extensions(monkeypatch)
    assert ext.name == "gpupromote.dispatch._fastpath"
    assert ext.optional, "the extension must stay optional: installs without a C compiler still succeed"
    want = sorted(str(p.relative_to(ROOT).as_posix()) for p in FASTPATH.glob("*.c"))
    assert len(want) > 1, want
    assert list(ext.sources) == want
    assert (FASTPATH / "fastpath.h").exists()
