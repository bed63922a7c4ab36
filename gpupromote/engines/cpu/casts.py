"""Float -> integer conversions for the Numba CPU engine, as NumPy gives them on x86-64: the twins
of the float -> integer ``gp_caster`` specializations and ``gp_f8toi`` in
kernels/gpupromote_elementwise.cuh.

C leaves the conversion of NaN and of out-of-range values undefined (LLVM's fptosi gives poison,
CUDA saturates), so the rule is written out. NumPy's loops compile to x86's truncating
conversions, which give the "integer indefinite" (INT_MIN of their width) for those inputs:

  int8, uint8, int16, uint16, int32   the low bits of a 32-bit conversion (NaN is 0 in int8)
  uint32, int64                       the low bits of a 64-bit conversion
  uint64                              x < 2**63: a 64-bit conversion; above, x - 2**63 converted
                                      and the top bit flipped back

ml_dtypes' float8 types convert on their own: NaN is 0, +-inf the target's largest and smallest
value, a finite value its integer part wrapped to the target's width.

Note: NumPy's contiguous float64 / float32 -> uint32 loop is vectorized with another rule for NaN
and out-of-range values in its SIMD body (groups of four) and the scalar rule in its tail, so its
answer for those values depends on an element's position; gpupromote gives the scalar rule (what
NumPy gives for a strided or short array) everywhere.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.np.numpy_support import as_dtype

from .intrinsics import declare_helper, helper_njit

__all__ = ["gp_ftoi", "gp_f8toi"]

_I32_MIN = np.int32(-2**31)
_I64_MIN = np.int64(-2**63)
_TWO_63 = 9223372036854775808.0
_TOP_BIT = np.uint64(1 << 63)


@helper_njit
def _cvtt32(v):
    return np.int32(v) if (v > -2147483649.0) & (v < 2147483648.0) else _I32_MIN


@helper_njit
def _cvtt64(v):
    return np.int64(v) if (v >= -_TWO_63) & (v < _TWO_63) else _I64_MIN


def _ftoi_typer(x, like):
    """``x`` (a float) converted to the integer type of ``like`` (a zero of it) as NumPy converts."""
    if not isinstance(x, types.Float) or not isinstance(like, types.Integer):
        return None
    to = as_dtype(like).type
    if like.bitwidth == 64 and not like.signed:
        def to_uint64(x, like):
            v = np.float64(x)
            if v >= _TWO_63:
                return np.uint64(_cvtt64(v - _TWO_63)) ^ _TOP_BIT
            return np.uint64(_cvtt64(v))
        return to_uint64
    if like.bitwidth == 64 or (like.bitwidth == 32 and not like.signed):
        return lambda x, like: to(_cvtt64(np.float64(x)))
    return lambda x, like: to(_cvtt32(np.float64(x)))


def _f8toi_typer(x, like):
    """A float8 value (in its float32 carrier) converted to the integer type of ``like`` as
    ml_dtypes converts."""
    if not isinstance(x, types.Float) or not isinstance(like, types.Integer):
        return None
    to = as_dtype(like).type
    info = np.iinfo(as_dtype(like))
    hi, lo = to(info.max), to(info.min)

    def impl(x, like):
        if x != x:
            return to(0)
        if x == np.inf:
            return hi
        if x == -np.inf:
            return lo
        return to(np.int64(x))   # every finite float8 value fits an int64; the cast wraps it
    return impl


gp_ftoi = declare_helper("gp_ftoi", _ftoi_typer)
gp_f8toi = declare_helper("gp_f8toi", _f8toi_typer)
