"""The names the owned-math statements written into a kernel's loop read: engines/cpu/source.py
writes each float32 or narrow call of a straight-line library function inline (through
kernel/math/_flatten.py's ``inline_expression``), and the generated module imports ``*`` from
here as from the helper modules: the renderings' builtins as ``_gpm_<name>`` (numpy's scalar
types, the LLVM primitives) and the functions' module-level values as ``_g_<module>_<name>``.
"""
from __future__ import annotations

from ...kernel.math.numba_binding import inline_globals

_NAMES = inline_globals()
__all__ = sorted(_NAMES)


def __getattr__(name):
    """The star import reads every name of __all__ through here (PEP 562)."""
    try:
        return _NAMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
