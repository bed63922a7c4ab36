"""The package as a user installs and meets it: one version everywhere, a licence, every package
in the wheel, gp.show_config(), the thread controls, and an `import gpupromote` that loads no
compiler, GPU library or Dask until they are needed."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import gpupromote as gp
from gpupromote.tools import cli

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout


# ---------------------------------------------------------------------------------------------
# version, licence, metadata

def test_the_version_is_written_once_and_read_everywhere():
    assert re.fullmatch(r"\d+\.\d+\.\d+", gp.__version__)
    assert "version" in PYPROJECT["project"]["dynamic"] and "version" not in PYPROJECT["project"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpupromote._version.__version__"}
    assert f"## {gp.__version__}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_cli_prints_the_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpupromote {gp.__version__}"


def test_python_dash_m_prints_the_version_from_another_folder(tmp_path):
    out = subprocess.run([sys.executable, "-m", "gpupromote", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out.strip() == f"gpupromote {gp.__version__}"


def test_the_licence_is_bsd_3_clause_and_declared():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License") and "The gpupromote developers" in text
    assert PYPROJECT["project"]["license"] == "BSD-3-Clause"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]


def test_metadata_a_package_page_needs():
    project = PYPROJECT["project"]
    assert project["keywords"] and project["classifiers"] and project["authors"]
    assert all(url.startswith("https://github.com/gpupromote/gpupromote") for url in project["urls"].values())
    assert not any(c.startswith("License ::") for c in project["classifiers"]), "the SPDX `license` replaces them"


def test_every_python_package_is_in_the_wheel():
    """A folder with an __init__.py that setuptools' list misses is absent from the wheel (and the
    installed package fails on import)."""
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpupromote").rglob("__init__.py")}
    assert not found - listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(found - listed)}"


# ---------------------------------------------------------------------------------------------
# what `import gpupromote` loads

HEAVY = ("numba", "llvmlite", "cupy", "dask", "distributed", "torch", "jax", "matplotlib")


def test_import_loads_no_compiler_gpu_library_or_dask():
    loaded = _run("import sys, gpupromote\n"
                  f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    assert loaded.strip() == "[]", f"import gpupromote imported {loaded.strip()}"


def test_gpupromote_dask_is_there_on_first_use():
    out = _run("import sys, gpupromote\n"
               "print('dask' in sys.modules)\n"
               "print(callable(gpupromote.dask.kernel_cache_stats), 'dask' in sys.modules)\n"
               "print(gpupromote.integrations.dask is sys.modules['gpupromote.integrations.dask'])\n")
    assert out.split() == ["False", "True", "True", "True"]


def test_an_unknown_attribute_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        gp.no_such_thing  # noqa: B018


# ---------------------------------------------------------------------------------------------
# threads

def test_set_get_and_scope_the_thread_count():
    before = gp.get_num_threads()
    assert before >= 1
    with gp.num_threads(1) as n:
        assert n == 1 and gp.get_num_threads() == 1
        assert gp.set_num_threads(2) == 1      # returns the previous count
        assert gp.get_num_threads() == 2
    assert gp.get_num_threads() == before      # the block's count is undone, whatever it set inside


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_thread_count_is_refused(bad):
    before = gp.get_num_threads()
    with pytest.raises(ValueError, match="whole number of threads"):
        gp.set_num_threads(bad)
    assert gp.get_num_threads() == before


# ---------------------------------------------------------------------------------------------
# show_config

def test_show_config_prints_every_section(capsys):
    assert gp.show_config() is None
    out = capsys.readouterr().out
    for line in ("gpupromote:", f"version:            {gp.__version__}", "compiled fast path:", "Python:", "numpy:",
                 "ml_dtypes:", "numba:", "CPU engine:", "threads:", "kernel cache:", "CUDA engine:", "GPU:"):
        assert line in out, f"show_config() does not print {line!r}:\n{out}"
    assert f"threads:      {gp.get_num_threads()} " in out


def test_show_config_as_dicts_names_the_fast_path_it_uses():
    report = gp.show_config(mode="dicts")
    from gpupromote.dispatch import _fastpath
    assert report["gpupromote"]["compiled fast path"].startswith(f"built ({_fastpath.__file__})")
    assert report["required"]["numpy"] == __import__("numpy").__version__
    with pytest.raises(ValueError, match="'stdout'"):
        gp.show_config(mode="json")


def test_show_config_without_the_fast_path_says_it_is_missing(monkeypatch):
    import gpupromote.dispatch as dispatch
    monkeypatch.delattr(dispatch, "_fastpath", raising=False)
    monkeypatch.setitem(sys.modules, "gpupromote.dispatch._fastpath", None)
    assert gp.show_config(mode="dicts")["gpupromote"]["compiled fast path"].startswith("missing")


def test_show_config_without_optional_packages(monkeypatch):
    for name in ("cupy", "torch", "jax", "dask"):
        monkeypatch.setitem(sys.modules, name, None)   # import raises ImportError
    report = gp.show_config(mode="dicts")
    assert report["CUDA engine"]["GPU"].startswith("none: CuPy cannot be imported")


# ---------------------------------------------------------------------------------------------
# README as the package page

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_contributor_commands():
    assert README.startswith("# gpupromote\n\n```sh\nmake bench "), README[:80]
    block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert commands == ["make bench", "make test"]


def test_readme_installs_from_a_clone_and_claims_no_package_index():
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert 'pip install .' in install and 'pip install ".[cuda]"' in install and 'pip install ".[dask]"' in install
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"pip install gpupromote\b", text), f"{page.name} installs from an index gpupromote is not on"


def test_gpupromote_dask_without_dask_names_the_extra():
    out = _run("import sys\n"
               "sys.modules['dask'] = None   # as if Dask were not installed\n"
               "import gpupromote\n"
               "try:\n"
               "    gpupromote.dask\n"
               "except ImportError as exc:\n"
               "    print(type(exc).__name__, exc)\n")
    assert out.startswith("ImportError gpupromote.dask needs Dask") and "'.[dask]'" in out
