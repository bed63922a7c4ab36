"""The Numba twins of kernels/gpupromote_unary.cuh: the unary helpers core/ops.py names that are
exact operations (rounding, sign, predicates, parts of complex numbers, clip), NumPy's semantics.
The math functions (exp, log, ...) are owned_math's; sqrt is the IEEE operation on reals.

Generated kernels do ``from gpupromote.engines.cpu.unary import *``; each helper is an overload
typed per argument type (intrinsics.declare_helper).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.np.numpy_support import as_dtype

from .elementwise import gp_cdiv, iabs
from .intrinsics import declare_helper
from .owned_math import gp_atan2, gp_csqrt, gp_hypot

__all__ = ["gp_abs", "gp_sqrt", "gp_floor", "gp_ceil", "gp_trunc", "gp_rint", "gp_sign", "gp_reciprocal", "gp_isnan",
           "gp_isinf", "gp_isfinite", "gp_signbit", "gp_logical_not", "gp_conj", "gp_real", "gp_imag",
           "gp_angle", "gp_clip", "gp_clip_min", "gp_clip_max", "gp_sign_torch", "gp_sign_jax", "gp_angle_torch",
           "gp_reciprocal_div", "gp_clip_jax", "gp_clip_min_jax", "gp_clip_max_jax", "gp_neg_torch"]


def _is_int(t):
    return isinstance(t, types.Integer) or t == types.boolean


def _abs_typer(x):
    """NumPy absolute: bool stays, ints wrap (abs(INT_MIN) is INT_MIN), floats clear the sign bit
    (NaNs too), complex gives hypot(re, im) in the part type."""
    if isinstance(x, types.Boolean):
        return lambda x: x
    if isinstance(x, types.Integer):
        return (lambda x: iabs(x)) if x.signed else (lambda x: x)
    if isinstance(x, types.Float):
        return lambda x: np.abs(x)
    if isinstance(x, types.Complex):   # the owned hypot, correctly rounded in the part type
        return lambda x: gp_hypot(x.real, x.imag)
    return None


def _sqrt_typer(x):
    """IEEE sqrt on reals (one correctly rounded operation on both engines); complex: the library's."""
    if isinstance(x, types.Float):
        return lambda x: np.sqrt(x)
    if isinstance(x, types.Complex):
        return lambda x: gp_csqrt(x)
    return None


def _rounding(fn):
    def typer(x):
        """floor / ceil / trunc / rint: exact on floats (rint: to nearest, ties to even, both parts of
        a complex); an integer or bool is its own value."""
        if isinstance(x, types.Float):
            return lambda x: fn(x)
        if isinstance(x, types.Complex):
            ctype = as_dtype(x).type
            return lambda x: ctype(complex(fn(x.real), fn(x.imag)))
        if _is_int(x):
            return lambda x: x
        return None
    return typer


def _sign_typer(x):
    """NumPy's sign: -1, 0 or 1 of x's type; +0.0 for either zero; a NaN stays; a complex z is
    z / |z| (0 for 0; an infinite part gives its unit, both infinite or any NaN give NaN)."""
    if x == types.boolean:
        return lambda x: x
    if isinstance(x, types.Integer):
        one, zero, minus = (as_dtype(x).type(v) for v in (1, 0, -1 if x.signed else 0))
        if x.signed:
            return lambda x: one if x > 0 else (minus if x < 0 else zero)
        return lambda x: one if x > 0 else zero
    if isinstance(x, types.Float):
        ftype = as_dtype(x).type
        one, zero = ftype(1), ftype(0)
        return lambda x: one if x > 0 else (-one if x < 0 else (zero if x == 0 else x))
    if isinstance(x, types.Complex):
        ftype, ctype = as_dtype(x.underlying_float).type, as_dtype(x).type
        one, zero, nan = ftype(1), ftype(0), ftype(np.nan)

        def impl(x):
            re, im = x.real, x.imag
            if (re != re) | (im != im):
                return ctype(complex(nan, nan))
            re_inf, im_inf = abs(re) == np.inf, abs(im) == np.inf
            if re_inf & im_inf:
                return ctype(complex(nan, nan))
            if re_inf:
                return ctype(complex(np.copysign(one, re), zero))
            if im_inf:
                return ctype(complex(zero, np.copysign(one, im)))
            if (re == 0) & (im == 0):
                return ctype(complex(zero, zero))
            r = gp_hypot(re, im)
            return ctype(complex(re / r, im / r))
        return impl
    return None


# float -> integer as NumPy's loops convert on x86-64 (cvttsd2si): a NaN or a value out of range
# gives the integer indefinite, INT_MIN of a 32-bit (for 8-, 16- and 32-bit targets) or 64-bit
# conversion, then truncated to the target's width.
def _reciprocal_typer(x):
    """NumPy's reciprocal: 1 / x; on integers (T)(1.0 / x), so 1 and -1 give themselves, 0 the
    x86 conversion of inf (INT_MIN for int32 and int64, 0 for narrower and unsigned types) and
    anything else 0."""
    if isinstance(x, types.Float):
        one = as_dtype(x).type(1)
        return lambda x: one / x
    if isinstance(x, types.Complex):
        # NumPy's own complex reciprocal (not its division): r = im / re (or re / im), d = re + im r,
        # 1 / d and -r / d; 1 / 0 is nan + nan j
        ftype, ctype = as_dtype(x.underlying_float).type, as_dtype(x).type
        one = ftype(1)

        def impl(x):
            re, im = x.real, x.imag
            if abs(im) <= abs(re):
                r = im / re
                d = re + im * r
                return ctype(complex(one / d, -r / d))
            r = re / im
            d = re * r + im
            return ctype(complex(r / d, -one / d))
        return impl
    if isinstance(x, types.Integer):
        ttype = as_dtype(x).type
        of_zero = ttype(np.iinfo(ttype).min) if x.signed and x.bitwidth >= 32 else ttype(0)
        one, zero = ttype(1), ttype(0)
        if x.signed:
            return lambda x: of_zero if x == 0 else (x if (x == one) | (x == -one) else zero)
        return lambda x: of_zero if x == 0 else (x if x == one else zero)
    return None


def _predicate(of_float, of_int):
    of_float = njit(inline="always")(of_float)

    def typer(x):
        """isnan / isinf / isfinite: of a complex, of either part (isfinite: of both); an integer or
        bool is never NaN or infinite."""
        if isinstance(x, types.Float):
            return lambda x: of_float(x)
        if isinstance(x, types.Complex):
            if of_int:   # isfinite: both parts
                return lambda x: of_float(x.real) & of_float(x.imag)
            return lambda x: of_float(x.real) | of_float(x.imag)
        if _is_int(x):
            return lambda x: of_int
        return None
    return typer


def _signbit_typer(x):
    """The sign bit of a float (-0.0 and negative NaNs too); an integer's x < 0; bool: False."""
    if isinstance(x, types.Float):
        return lambda x: np.signbit(x)
    if x == types.boolean:
        return lambda x: False
    if isinstance(x, types.Integer):
        return lambda x: x < 0
    return None


def _logical_not_typer(x):
    """not x: a number is true when non-zero (a complex when either part is)."""
    if isinstance(x, types.Complex):
        return lambda x: (x.real == 0) & (x.imag == 0)
    if isinstance(x, (types.Float, types.Integer)) or x == types.boolean:
        return lambda x: x == 0
    return None


def _conj_typer(x):
    if isinstance(x, types.Complex):
        return lambda x: x.conjugate()
    return lambda x: x


def _real_typer(x):
    if isinstance(x, types.Complex):
        return lambda x: x.real
    return lambda x: x


def _imag_typer(x):
    """The imaginary part; of a real number, a zero of its type."""
    if isinstance(x, types.Complex):
        return lambda x: x.imag
    zero = as_dtype(x).type(0) if x != types.boolean else False
    return lambda x: zero


def _angle_typer(x):
    """arctan2(imag, real) by the owned arctan2: pi for a negative real number and for -0.0."""
    if isinstance(x, types.Complex):
        return lambda x: gp_atan2(x.imag, x.real)
    if isinstance(x, types.Float):
        zero = as_dtype(x).type(0)
        return lambda x: gp_atan2(zero, x)
    return None


# clip as NumPy (and torch.clamp) computes it: max(x, lo) then min(., hi) with NaN propagation,
# where of two equal values (-0.0 and 0.0) x stays: a NaN of x or of a bound comes through
def _clip_min_typer(x, lo):
    return lambda x, lo: lo if (lo != lo) | (x < lo) else x


def _clip_max_typer(x, hi):
    return lambda x, hi: hi if (hi != hi) | (hi < x) else x


def _clip_typer(x, lo, hi):
    def impl(x, lo, hi):
        y = lo if (lo != lo) | (x < lo) else x
        return hi if (hi != hi) | (hi < y) else y
    return impl


# ---- where a framework's values differ from NumPy's (core/ops.py's "torch." / "jax." lines) ----

def _sign_torch_typer(x):
    """torch.sign of a float: 0 for NaN, else NumPy's."""
    if not isinstance(x, types.Float):
        return None
    one, zero = as_dtype(x).type(1), as_dtype(x).type(0)
    return lambda x: one if x > 0 else (-one if x < 0 else zero)


def _sign_jax_typer(x):
    """lax.sign: a zero keeps its sign and a NaN stays; a complex z is z / |z| as it comes (an
    infinite part gives NaN), 0 for 0 (of z's sign)."""
    if isinstance(x, types.Float):
        one = as_dtype(x).type(1)
        return lambda x: one if x > 0 else (-one if x < 0 else x)
    if isinstance(x, types.Complex):
        ctype = as_dtype(x).type

        def impl(x):
            if (x.real == 0) & (x.imag == 0):
                return x
            r = gp_hypot(x.real, x.imag)
            return ctype(complex(x.real / r, x.imag / r))
        return impl
    return None


def _angle_torch_typer(x):
    """torch.angle of a real number: pi where x < 0, 0 otherwise (-0.0 included), NaN stays."""
    if not isinstance(x, types.Float):
        return None
    ftype = as_dtype(x).type
    pi, zero = ftype(np.pi), ftype(0)
    return lambda x: pi if x < 0 else (zero if x == x else x)


# jnp.clip: minimum(maximum(x, lo), hi) with XLA's max and min: a NaN of x or of a bound comes
# through, and of two equal zeros the bound wins (jnp.maximum(-0.0, 0.0) is +0.0)
def _clip_min_jax_typer(x, lo):
    return lambda x, lo: x if (x != x) | (x > lo) else lo


def _clip_max_jax_typer(x, hi):
    return lambda x, hi: x if (x != x) | (x < hi) else hi


def _clip_jax_typer(x, lo, hi):
    def impl(x, lo, hi):
        y = x if (x != x) | (x > lo) else lo
        return y if (y != y) | (y < hi) else hi
    return impl


def _neg_torch_typer(x):
    """torch's complex negation: 0 - z (so -(0 + 0j) is 0 + 0j, not -0 - 0j)."""
    if not isinstance(x, types.Complex):
        return None
    ftype, ctype = as_dtype(x.underlying_float).type, as_dtype(x).type
    zero = ftype(0)
    return lambda x: ctype(complex(zero - x.real, zero - x.imag))


def _reciprocal_div_typer(x):
    """1 / z by complex division (torch's and XLA's reciprocal): 1 / 0 is inf + nan j."""
    if not isinstance(x, types.Complex):
        return None
    one = as_dtype(x).type(1)
    return lambda x: gp_cdiv(one, x)


gp_abs = declare_helper("gp_abs", _abs_typer)
gp_sqrt = declare_helper("gp_sqrt", _sqrt_typer)
gp_floor = declare_helper("gp_floor", _rounding(np.floor))
gp_ceil = declare_helper("gp_ceil", _rounding(np.ceil))
gp_trunc = declare_helper("gp_trunc", _rounding(np.trunc))
gp_rint = declare_helper("gp_rint", _rounding(np.rint))
gp_sign = declare_helper("gp_sign", _sign_typer)
gp_reciprocal = declare_helper("gp_reciprocal", _reciprocal_typer)
gp_isnan = declare_helper("gp_isnan", _predicate(lambda v: v != v, False))
gp_isinf = declare_helper("gp_isinf", _predicate(lambda v: abs(v) == np.inf, False))
gp_isfinite = declare_helper("gp_isfinite", _predicate(lambda v: abs(v) < np.inf, True))
gp_signbit = declare_helper("gp_signbit", _signbit_typer)
gp_logical_not = declare_helper("gp_logical_not", _logical_not_typer)
gp_conj = declare_helper("gp_conj", _conj_typer)
gp_real = declare_helper("gp_real", _real_typer)
gp_imag = declare_helper("gp_imag", _imag_typer)
gp_angle = declare_helper("gp_angle", _angle_typer)
gp_clip = declare_helper("gp_clip", _clip_typer)
gp_clip_min = declare_helper("gp_clip_min", _clip_min_typer)
gp_clip_max = declare_helper("gp_clip_max", _clip_max_typer)
gp_sign_torch = declare_helper("gp_sign_torch", _sign_torch_typer)
gp_clip_min_jax = declare_helper("gp_clip_min_jax", _clip_min_jax_typer)
gp_clip_max_jax = declare_helper("gp_clip_max_jax", _clip_max_jax_typer)
gp_clip_jax = declare_helper("gp_clip_jax", _clip_jax_typer)
gp_neg_torch = declare_helper("gp_neg_torch", _neg_torch_typer)
gp_sign_jax = declare_helper("gp_sign_jax", _sign_jax_typer)
gp_angle_torch = declare_helper("gp_angle_torch", _angle_torch_typer)
gp_reciprocal_div = declare_helper("gp_reciprocal_div", _reciprocal_div_typer)
