"""The owned math library: every math function written once, in a restricted typed Python
(``_dsl.py``), and rendered for both engines, so that they give the same bits:

    from gpupromote.kernel.math import cuda_source, numba_functions
    header = cuda_source()           # C++ text of __host__ __device__ gpm_* functions
    fns = numba_functions()          # {"gpm_exp_f32": njit dispatcher, ...}

See README.md in this folder for the language, the entry points and the measured accuracy.
"""
from __future__ import annotations

__all__ = ["cuda_source", "numba_functions", "entry_points", "lean_entries"]


def cuda_source(names=None) -> str:
    """The C++ text of the library (every function), or of ``names`` and what they call."""
    from ._cpp import cuda_source as _src
    return _src(None if names is None else tuple(sorted(set(names))))


def numba_functions(flat: bool = False) -> dict:
    """``{name: njit dispatcher}``; ``flat=True``: straight-line functions flattened (numba_binding)."""
    from .numba_binding import numba_functions as _fns
    return _fns(flat)


def entry_points() -> dict:
    """``{name: (parameter types, return type)}`` of the public functions, e.g.
    ``{"gpm_exp_f32": (("f32",), "f32"), "gpm_cexp_c128": (("f64", "f64"), ("f64", "f64")), ...}``."""
    from . import _library  # noqa: F401
    from ._cpp import signature
    from ._dsl import REGISTRY
    return {n: signature(n)[1:] for n, e in REGISTRY.items() if e.public}


def lean_entries() -> frozenset:
    """The float16 / bfloat16 entry points that round a lean float32 path (lean32.py), e.g.
    ``gpm_tanh_f16``: the CPU engine runs a float16 kernel that is one call of one of these as a
    loop, not a table lookup (engines/cpu/tables.py)."""
    from ._narrow_entries import LEAN
    return LEAN
