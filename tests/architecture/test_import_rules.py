"""The wings of gpupromote import only what tests/architecture/import_rules.ALLOWED lets them."""
import shutil
from pathlib import Path

import pytest

import gpupromote
from tests.architecture.import_rules import ALLOWED, modules, violations

PACKAGE = Path(gpupromote.__file__).parent


def test_every_module_keeps_the_import_rules():
    found = violations(PACKAGE)
    assert not found, "imports across the wings' rules:\n" + "\n".join(found)


def test_every_module_is_in_a_wing():
    names = modules(PACKAGE)
    root_files = {n for n in names if n.count(".") == 1 and n.split(".")[1] not in ALLOWED}
    assert root_files == {"gpupromote.__main__", "gpupromote._version", "gpupromote.dask"}, root_files
    assert {n.split(".")[1] for n in names if n.count(".") >= 1} - {"__main__", "_version", "dask"} == set(ALLOWED)


# (file to plant into, the line, what the report must name)
PLANTED = [
    ("core/dtypes.py", "from ..dispatch import api", "gpupromote.core.dtypes imports gpupromote.dispatch.api"),
    ("promotion/resolve.py", "    from ..engines import get_backend", "gpupromote.promotion.resolve imports gpupromote.engines"),
    ("kernel/ir.py", "import numba", "gpupromote.kernel.ir imports numba"),
    ("engines/cpu/source.py", "from ..cuda import source as cuda_source", "engines.cpu and engines.cuda stay apart"),
    ("engines/cuda/launch.py", "from ...promotion.policies import get_policy", "gpupromote.engines.cuda.launch imports"),
    ("dispatch/fuse.py", "from ..integrations import dask", "gpupromote.dispatch.fuse imports gpupromote.integrations"),
    ("integrations/dask.py", "from ..tools import cli", "gpupromote.integrations.dask imports gpupromote.tools"),
]


@pytest.mark.parametrize("target, line, reported", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_forbidden_import_is_reported(tmp_path, target, line, reported):
    copy = tmp_path / "gpupromote"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    path = copy / target
    text = path.read_text()
    if line.startswith(" "):   # inside a function: the checker reads function bodies too
        text += f"\n\ndef _planted():\n{line}\n"
    else:
        text += f"\n{line}\n"
    path.write_text(text)
    found = violations(copy)
    assert any(reported in v for v in found), found
    assert len(found) == 1, found
