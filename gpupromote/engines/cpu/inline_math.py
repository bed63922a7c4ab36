"""The names a kernel's float32 and narrow math calls read: engines/cpu/source.py writes each such
call of a straight-line owned math function as one call of ``_gpmi_<function>``, a Numba intrinsic
that writes the function's LLVM instructions into the loop (kernel/math/llvm_binding.py); the
generated module imports ``*`` from here as from the helper modules.
"""
from __future__ import annotations

from ...kernel.math.llvm_binding import kernel_intrinsics

_NAMES = kernel_intrinsics()
__all__ = sorted(_NAMES)


def __getattr__(name):
    """The star import reads every name of __all__ through here (PEP 562)."""
    try:
        return _NAMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
