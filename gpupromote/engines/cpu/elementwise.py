"""The Numba twins of kernels/gpupromote_elementwise.cuh: the helpers core/ops.py's expressions name
beyond _numba_math's, under the same names, so one expression serves both generators.

Generated kernels do ``from gpupromote.engines.cpu.elementwise import *``. Each helper is an
``overload`` (inlined, typed per argument type) of a plain function that only compiled code calls.
Where the CUDA helper computes differently by design (float32 transcendentals rounded once from
double there), the twin follows NumPy, the CPU engine's reference, and says so.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.np.numpy_support import as_dtype

from . import helpers as M
from .intrinsics import declare_helper, iadd, imul, isub

__all__ = ["gp_cmul", "gp_cdiv", "gp_clt", "gp_cle", "gp_cgt", "gp_cge", "gp_truth", "gp_not", "gp_select",
           "gp_bool_true_divide", "gp_wrap_add", "gp_wrap_sub", "gp_wrap_mul", "gp_wrap_neg",
           "gp_nextafter_f2", "gp_nextafter_bf", "gp_nextafter_e4", "gp_nextafter_e5", "gp_ftz", "iabs"]


def _same(*ts):
    return all(t == ts[0] for t in ts)


# ---- complex arithmetic and order (NumPy's) ---------------------------------------------------

def _cmul_typer(a, b):
    """(ar*br - ai*bi, ar*bi + ai*br), every product rounded: NumPy's and the CUDA helper's."""
    if isinstance(a, types.Complex) and _same(a, b):
        ctype = as_dtype(a).type
        return lambda a, b: ctype(complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real))
    return None


def _cdiv_typer(a, b):
    """NumPy's complex division (Smith's algorithm with a reciprocal)."""
    if not (isinstance(a, types.Complex) and _same(a, b)):
        return None
    ftype, ctype = as_dtype(a.underlying_float).type, as_dtype(a).type
    zero, one = ftype(0), ftype(1)

    def impl(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        abs_br, abs_bi = abs(br), abs(bi)
        if abs_br >= abs_bi:
            if abs_br == zero and abs_bi == zero:
                return ctype(complex(ar / abs_br, ai / abs_bi))   # complex inf / nan, as numpy
            rat = bi / br
            scl = one / (br + bi * rat)
            return ctype(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
        rat = br / bi
        scl = one / (bi + br * rat)
        return ctype(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))
    return impl


def _order_typer(strict, greater):
    def typer(a, b):
        """NumPy's CLT / CLE / CGT / CGE: lexicographic; a NaN imaginary part counts on ties only."""
        if not (isinstance(a, types.Complex) and _same(a, b)):
            return None
        if greater and strict:
            return lambda a, b: ((a.real > b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
                ((a.real == b.real) & (a.imag > b.imag))
        if greater:
            return lambda a, b: ((a.real > b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
                ((a.real == b.real) & (a.imag >= b.imag))
        if strict:
            return lambda a, b: ((a.real < b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
                ((a.real == b.real) & (a.imag < b.imag))
        return lambda a, b: ((a.real < b.real) & (a.imag == a.imag) & (b.imag == b.imag)) | \
            ((a.real == b.real) & (a.imag <= b.imag))
    return typer


gp_cmul = declare_helper("gp_cmul", _cmul_typer)
gp_cdiv = declare_helper("gp_cdiv", _cdiv_typer)
gp_clt = declare_helper("gp_clt", _order_typer(True, False))
gp_cle = declare_helper("gp_cle", _order_typer(False, False))
gp_cgt = declare_helper("gp_cgt", _order_typer(True, True))
gp_cge = declare_helper("gp_cge", _order_typer(False, True))


# ---- truth, select, not, abs -----------------------------------------------------------------

def _truth_typer(x):
    """x != 0 (a NaN is true; a complex is true when either part is nonzero)."""
    if isinstance(x, types.Boolean):
        return lambda x: x
    if isinstance(x, types.Complex):
        return lambda x: (x.real != 0) | (x.imag != 0)
    if isinstance(x, (types.Integer, types.Float)):
        return lambda x: x != 0
    return None


def _not_typer(x):
    """Logical not of a bool (what ~ means on bool arrays)."""
    return (lambda x: not x) if isinstance(x, types.Boolean) else None


def _select_typer(c, a, b):
    """a where c else b (both already of the compute type)."""
    return (lambda c, a, b: a if c else b) if isinstance(c, types.Boolean) and _same(a, b) else None


def _iabs_typer(x):
    zero = as_dtype(x).type(0)
    return lambda x: isub(zero, x) if x < zero else x


iabs = declare_helper("iabs", _iabs_typer)
gp_truth = declare_helper("gp_truth", _truth_typer)
gp_not = declare_helper("gp_not", _not_typer)
gp_select = declare_helper("gp_select", _select_typer)


def _bool_true_divide_typer(a, b):
    """bool / bool kept bool (Paddle): 1/0 and 0/0 are inf and nan, both true."""
    return (lambda a, b: a or not b) if isinstance(a, types.Boolean) and _same(a, b) else None


gp_bool_true_divide = declare_helper("gp_bool_true_divide", _bool_true_divide_typer)


# ---- wrapping integer arithmetic (one LLVM instruction on the type itself) -------------------

def _wrap(intrinsic):
    def typer(a, b):
        """+ - * on one integer type, wrapping modulo 2**bits (no widening to int64)."""
        return (lambda a, b: intrinsic(a, b)) if isinstance(a, types.Integer) and _same(a, b) else None
    return typer


def _wrap_neg_typer(x):
    """-x modulo 2**bits (-INT_MIN is INT_MIN; unsigned wraps)."""
    if not isinstance(x, types.Integer):
        return None
    zero = as_dtype(x).type(0)
    return lambda x: isub(zero, x)


gp_wrap_add = declare_helper("gp_wrap_add", _wrap(iadd))
gp_wrap_sub = declare_helper("gp_wrap_sub", _wrap(isub))
gp_wrap_mul = declare_helper("gp_wrap_mul", _wrap(imul))
gp_wrap_neg = declare_helper("gp_wrap_neg", _wrap_neg_typer)


# ---- nextafter on a narrow result ---------------------------------------------------------------

def _narrow_nextafter(code, widen, narrow, storage):
    sign = 0x80 if storage is np.uint8 else 0x8000
    nan = np.float32(np.nan)

    def typer(a, b):
        """Step a's narrow bit pattern by one toward b (NumPy's npy_half_nextafter, ml_dtypes'
        nextafter); a and b are exact narrow values carried in float32. A NaN operand gives their
        canonical NaN, positive whatever the operands' signs."""
        if a != types.float32 or b != types.float32:
            return None

        def impl(a, b):
            if (a != a) | (b != b):
                return nan
            if a == b:
                return b
            if a == 0:
                bits = 1 | (sign if b < 0 else 0)
            else:
                bits = np.int64(narrow(a))
                bits = bits + 1 if (a < b) == (a > 0) else bits - 1
            return widen(storage(bits))
        return impl
    return declare_helper(f"gp_nextafter_{code}", typer)


gp_nextafter_f2 = _narrow_nextafter("f2", M.f16_to_f32, M.f32_to_f16, np.uint16)
gp_nextafter_bf = _narrow_nextafter("bf", M.bf16_to_f32, M.f32_to_bf16, np.uint16)
gp_nextafter_e4 = _narrow_nextafter("e4", M.e4m3_to_f32, M.f32_to_e4m3, np.uint8)
gp_nextafter_e5 = _narrow_nextafter("e5", M.e5m2_to_f32, M.f32_to_e5m2, np.uint8)


# ---- flush to zero (XLA's FTZ / DAZ) -----------------------------------------------------------

def _ftz_typer(x):
    """A subnormal becomes a zero of its sign; anything else (NaN included) stays."""
    if isinstance(x, types.Float):
        tiny, zero = as_dtype(x).type(np.finfo(as_dtype(x)).tiny), as_dtype(x).type(0)
        return lambda x: x if (abs(x) >= tiny) | (x != x) else np.copysign(zero, x)
    if isinstance(x, types.Complex):
        ftype, ctype = as_dtype(x.underlying_float).type, as_dtype(x).type
        tiny, zero = ftype(np.finfo(ftype).tiny), ftype(0)

        def impl(x):
            re, im = x.real, x.imag
            re = re if (abs(re) >= tiny) | (re != re) else np.copysign(zero, re)
            im = im if (abs(im) >= tiny) | (im != im) else np.copysign(zero, im)
            return ctype(complex(re, im))
        return impl
    return lambda x: x


gp_ftz = declare_helper("gp_ftz", _ftz_typer)
