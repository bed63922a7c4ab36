"""NumPy's complex power for the Numba CPU engine (npy_cpow): exact small-integer powers by
repeated multiplication, exp(b log a) otherwise, with C99 Annex G's infinite product.

``complex_power(t)`` is the complex implementation behind ``_numba_binary.gp_power``; apart from
it because the complex arithmetic here (npy_cpow's cmul / cdiv, libgcc's __muldc3) is a topic of
its own, with a CUDA twin (kernels/gpupromote_math.cuh, gp_detail::cpow_exp_log_) to keep in step.
"""
import numpy as np
from numba.np.numpy_support import as_dtype

from .intrinsics import helper_njit as _njit

__all__ = ["complex_power"]


@_njit
def _cmul(ar, ai, br, bi):
    # npy_cpow's cmul: the textbook formula, no C99 Annex G inf recovery
    return ar * br - ai * bi, ar * bi + ai * br


@_njit
def _cdiv(ar, ai, br, bi, one):
    # npy_cpow's cdiv (Smith's algorithm); `one` carries the precision
    abs_br, abs_bi = abs(br), abs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0 and abs_bi == 0:
            return ar / abs_br, ai / abs_bi
        rat = bi / br
        scl = one / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = one / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@_njit
def _cmul_annex_g(a, b, c, d):
    """(a + bi)(c + di) with C99 Annex G's recovery of infinities (libgcc's __muldc3, what glibc's
    cpow multiplies b * log(a) with): an infinite factor times a finite nonzero one is infinite,
    not nan. The CUDA twin is gp_detail::cmul_annex_g_."""
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    if np.isnan(x) and np.isnan(y):
        recalc = False
        if np.isinf(a) or np.isinf(b):
            a, b = np.copysign(1.0 if np.isinf(a) else 0.0, a), np.copysign(1.0 if np.isinf(b) else 0.0, b)
            c, d = (np.copysign(0.0, c) if np.isnan(c) else c), (np.copysign(0.0, d) if np.isnan(d) else d)
            recalc = True
        if np.isinf(c) or np.isinf(d):
            c, d = np.copysign(1.0 if np.isinf(c) else 0.0, c), np.copysign(1.0 if np.isinf(d) else 0.0, d)
            a, b = (np.copysign(0.0, a) if np.isnan(a) else a), (np.copysign(0.0, b) if np.isnan(b) else b)
            recalc = True
        if not recalc and (np.isinf(ac) or np.isinf(bd) or np.isinf(ad) or np.isinf(bc)):
            a, b = (np.copysign(0.0, a) if np.isnan(a) else a), (np.copysign(0.0, b) if np.isnan(b) else b)
            c, d = (np.copysign(0.0, c) if np.isnan(c) else c), (np.copysign(0.0, d) if np.isnan(d) else d)
            recalc = True
        if recalc:
            x, y = np.inf * (a * c - b * d), np.inf * (a * d + b * c)
    return x, y


def complex_power(t):
    ftype = as_dtype(t.underlying_float).type
    ctype = as_dtype(t).type
    fzero, fone = ftype(0), ftype(1)
    nan = ftype(np.nan)

    def impl(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if br == fzero and bi == fzero:
            return ctype(1)
        if ar == fzero and ai == fzero:
            return ctype(0) if br > fzero else ctype(complex(nan, nan))
        if bi == fzero and br > -100 and br < 100 and br == np.floor(br):
            # npy_cpow: small integer exponents by repeated multiplication in the
            # operands' precision (more accurate than cpow and what numpy returns)
            n = np.int64(br)
            if n == 1:
                return a
            if n == 2:
                xr, xi = _cmul(ar, ai, ar, ai)
                return ctype(complex(xr, xi))
            if n == 3:
                xr, xi = _cmul(ar, ai, ar, ai)
                xr, xi = _cmul(ar, ai, xr, xi)
                return ctype(complex(xr, xi))
            n = abs(n)
            rr, ri, pr, pi = fone, fzero, ar, ai
            mask = 1
            while True:
                if n & mask:
                    rr, ri = _cmul(rr, ri, pr, pi)
                mask <<= 1
                if n < mask:
                    break
                pr, pi = _cmul(pr, pi, pr, pi)
            if br < fzero:
                rr, ri = _cdiv(fone, fzero, rr, ri, fone)
            return ctype(complex(rr, ri))
        # Note: numpy calls the C library's cpow/cpowf here; exp(b * log(a)) in double
        # precision agrees to a few ulp (complex64: usually closer to the exact value).
        # The CUDA twin, gp_detail::cpow_exp_log_, spells out numba's complex log and exp and
        # this product step by step: keep the two in step.
        la = np.log(np.complex128(a))
        wr, wi = _cmul_annex_g(np.float64(br), np.float64(bi), la.real, la.imag)
        w = complex(wr, wi)
        if w.imag == 0:
            # exp(x + 0i) is exp(x) + 0i (C99 Annex G, as cpow and thrust's exp give): no inf * 0
            return ctype(complex(np.exp(w.real), w.imag))
        return ctype(np.exp(w))
    return impl
