"""The one compiled module, gp.result_type's cache-hit path (gpupromote/dispatch/fastpath/).

It is optional: without a C compiler the install still succeeds and result_type runs in Python.
Everything else about the package is in pyproject.toml."""
import sys

import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("gpupromote.dispatch._fastpath", ["gpupromote/dispatch/fastpath/_fastpath.c"],
                             include_dirs=[numpy.get_include()], optional=True,
                             extra_compile_args=[] if sys.platform == "win32" else ["-pthread"],
                             extra_link_args=[] if sys.platform == "win32" else ["-pthread"])])
