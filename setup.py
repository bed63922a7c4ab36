"""The one compiled module, gp.result_type's and the ops' cache-hit paths (gpupromote/dispatch/fastpath/).

It is optional: without a C compiler the install still succeeds and result_type runs in Python.
The extension is every .c file of that folder (one per job, sharing fastpath.h), in sorted order,
built into the one module gpupromote.dispatch._fastpath (tests/architecture/test_c_files.py).
Everything else about the package is in pyproject.toml."""
import pathlib
import sys

import numpy
from setuptools import Extension, setup

FASTPATH = "gpupromote/dispatch/fastpath"
_HERE = pathlib.Path(__file__).parent


def _files(pattern):
    """FASTPATH's files matching pattern, sorted, as the relative paths setuptools wants."""
    return sorted(f"{FASTPATH}/{p.name}" for p in (_HERE / FASTPATH).glob(pattern))


setup(ext_modules=[Extension("gpupromote.dispatch._fastpath", _files("*.c"), depends=_files("*.h"),
                             include_dirs=[numpy.get_include()], optional=True,
                             extra_compile_args=[] if sys.platform == "win32" else ["-pthread"],
                             extra_link_args=[] if sys.platform == "win32" else ["-pthread"])])
