"""Compiled scalar helpers for the Numba CPU engine: the Python twins of ``kernels/*.cuh``.

Generated kernels do ``from gpupromote.engines.cpu.helpers import *`` and call these names
inside ``@njit`` code. Two families:

* narrow float formats through bit patterns. Numba has no float16 on the CPU, so float16,
  bfloat16, float8_e4m3fn and float8_e5m2 arrays are read as uint16/uint8 patterns and
  converted here, bit-exact with ``numpy`` / ``ml_dtypes`` ``astype`` (NaN payloads included);
* ``gp_*`` elementwise math, generic over the (single) numba type of both arguments and
  returning that same type, with NumPy 2 semantics (plus two JAX/XLA integer variants).

Every helper is a ``numba.extending.overload`` of a plain Python function: the overload picks
an implementation per argument type at compile time (a generic-by-type function without
``generated_jit``), and LLVM inlines it into the calling loop, so the helpers vectorise with
it. Calling a helper from plain Python also works (it runs a jitted trampoline), which is
handy in a REPL; kernels never take that path.

Where they live: the narrow float conversions in ``_numba_narrow.py``, the ``gp_*`` math in
``binary.py``, what they share (jit options, the trampoline, LLVM intrinsics) in ``intrinsics.py``; the
owned math functions in ``owned_math.py`` and the unary helpers in ``unary.py``. This module gathers the names generated
kernels use, so that their ``import *`` has one place to look.
"""
from .binary import (gp_copysign, gp_floor_divide, gp_floor_divide_jaxf, gp_floor_divide_xla, gp_fmax, gp_fmin,
                     gp_fmod, gp_left_shift, gp_maximum, gp_minimum, gp_nextafter, gp_power, gp_power_xla, gp_remainder,
                     gp_remainder_keepzero, gp_remainder_xla, gp_right_shift)
from .narrow import HARDWARE_HALF  # noqa: F401 - re-exported: whether float16 converts with F16C here
from .narrow import (bf16_to_f32, e4m3_to_f32, e5m2_to_f32, f16_to_f32, f16_to_f32_plain, f32_to_bf16, f32_to_e4m3,
                     f32_to_e5m2, f32_to_f16, f32_to_f16_plain, f64_to_bf16, f64_to_e4m3, f64_to_e5m2, f64_to_f16)

__all__ = [
    "f16_to_f32", "f32_to_f16", "f64_to_f16", "f16_to_f32_plain", "f32_to_f16_plain",
    "bf16_to_f32", "f32_to_bf16", "f64_to_bf16",
    "e4m3_to_f32", "f32_to_e4m3", "f64_to_e4m3",
    "e5m2_to_f32", "f32_to_e5m2", "f64_to_e5m2",
    "gp_floor_divide", "gp_remainder", "gp_fmod", "gp_power",
    "gp_maximum", "gp_minimum", "gp_fmax", "gp_fmin",
    "gp_left_shift", "gp_right_shift",
    "gp_copysign", "gp_nextafter",
    "gp_floor_divide_xla", "gp_remainder_xla", "gp_remainder_keepzero", "gp_floor_divide_jaxf", "gp_power_xla",
]
