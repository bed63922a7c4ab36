"""The names a kernel's float32 and narrow math calls read: engines/cpu/source.py writes each such
call of a straight-line owned math function as one call of ``_gpmi_<function>``, a Numba intrinsic
that writes the function's LLVM instructions into the loop (kernel/math/llvm_binding.py); the
library's primitives are here too as ``_gpm_<name>`` (the reductions' max / min keys bit-cast with
``_gpm_as_i32`` ...). The generated module imports ``*`` from here as from the helper modules.
"""
from __future__ import annotations

from ...kernel.math.llvm_binding import kernel_intrinsics
from ...kernel.math.numba_binding import PRIMITIVES

_NAMES = {**kernel_intrinsics(), **{f"_gpm_{k}": v for k, v in PRIMITIVES.items()}}
__all__ = sorted(_NAMES)


def __getattr__(name):
    """The star import reads every name of __all__ through here (PEP 562)."""
    try:
        return _NAMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
