"""The complex entry points: gpm_<f>_c128 and gpm_<f>_c64 for every complex function, NaN parts
made the canonical quiet NaN, complex64 computed through complex128 and rounded once per part
(the kernels are in complex.py and complex_inverse.py)."""
from __future__ import annotations

from ._core import gpm_to_f32
from ._dsl import NAN, as_f32, f32, f64, fabs, floor, helper, i64, public, select, u32
from .complex import (gpm_ccos_k128, gpm_ccosh_k128, gpm_cexp_k128, gpm_clog_k128, gpm_cpow_k128, gpm_csin_k128,
                      gpm_csinh_k128, gpm_csqrt_k128, gpm_ctan_k128, gpm_ctanh_k128)
from .complex_inverse import (gpm_cacos_k128, gpm_cacosh_k128, gpm_casin_k128, gpm_casinh_k128, gpm_catan_k128,
                              gpm_catanh_k128)


# --------------------------------------------------------------------------------------------
# the entry points: NaN parts made the canonical quiet NaN; complex64 through complex128

@helper
def gpm_canon(v: f64) -> f64:
    return select(v != v, NAN, v)


@public
def gpm_cexp_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_cexp_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_cexp_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_cexp_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_clog_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_clog_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_clog_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_clog_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_csqrt_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_csqrt_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_csqrt_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_csqrt_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_csin_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_csin_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_csin_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_csin_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_ccos_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_ccos_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_ccos_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_ccos_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_ctan_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_ctan_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_ctan_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_ctan_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_csinh_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_csinh_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_csinh_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_csinh_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_ccosh_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_ccosh_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_ccosh_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_ccosh_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_ctanh_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_ctanh_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_ctanh_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_ctanh_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_casin_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_casin_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_casin_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_casin_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_cacos_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_cacos_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_cacos_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_cacos_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_catan_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_catan_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_catan_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_catan_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_casinh_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_casinh_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_casinh_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_casinh_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_cacosh_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_cacosh_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_cacosh_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_cacosh_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_catanh_c128(x: f64, y: f64) -> tuple[f64, f64]:
    r, i = gpm_catanh_k128(x, y)
    return gpm_canon(r), gpm_canon(i)


@public
def gpm_catanh_c64(x: f32, y: f32) -> tuple[f32, f32]:
    r, i = gpm_catanh_k128(f64(x), f64(y))
    return gpm_to_f32(r), gpm_to_f32(i)

@public
def gpm_cpow_c128(ar: f64, ai: f64, br: f64, bi: f64) -> tuple[f64, f64]:
    r, i = gpm_cpow_k128(ar, ai, br, bi)
    return gpm_canon(r), gpm_canon(i)


@helper
def gpm_cmul_f32(ar: f32, ai: f32, br: f32, bi: f32) -> tuple[f32, f32]:
    return ar * br - ai * bi, ar * bi + ai * br


@helper
def gpm_cdiv_f32(ar: f32, ai: f32, br: f32, bi: f32) -> tuple[f32, f32]:
    abr = fabs(br)
    abi = fabs(bi)
    if abr >= abi:
        if (abr == f32(0.0)) & (abi == f32(0.0)):
            return ar / abr, ai / abi
        rat = bi / br
        scl = f32(1.0) / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = f32(1.0) / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@public
def gpm_cpow_c64(ar: f32, ai: f32, br: f32, bi: f32) -> tuple[f32, f32]:
    """NumPy's npy_cpowf: small integer powers multiply in float32; otherwise the complex128
    algorithm, each part rounded once."""
    if (bi == f32(0.0)) & (br > f32(-100.0)) & (br < f32(100.0)) & (floor(br) == br) & (br != f32(0.0)) & \
            ((ar != f32(0.0)) | (ai != f32(0.0))):
        n = i64(br)
        if n == i64(1):
            return gpm_canon_f32(ar), gpm_canon_f32(ai)
        if n == i64(2):
            r2, i2 = gpm_cmul_f32(ar, ai, ar, ai)
            return gpm_canon_f32(r2), gpm_canon_f32(i2)
        if n == i64(3):
            sr, si = gpm_cmul_f32(ar, ai, ar, ai)
            r3, i3 = gpm_cmul_f32(ar, ai, sr, si)
            return gpm_canon_f32(r3), gpm_canon_f32(i3)
        m = select(n < i64(0), -n, n)
        rr = f32(1.0)
        ri = f32(0.0)
        pr = ar
        pi_ = ai
        for bit in range(0, 7):
            if ((m >> bit) & i64(1)) == i64(1):
                rr, ri = gpm_cmul_f32(rr, ri, pr, pi_)
            if (m >> (bit + i64(1))) != i64(0):
                pr, pi_ = gpm_cmul_f32(pr, pi_, pr, pi_)
        if br < f32(0.0):
            rr, ri = gpm_cdiv_f32(f32(1.0), f32(0.0), rr, ri)
        return gpm_canon_f32(rr), gpm_canon_f32(ri)
    r, i = gpm_cpow_k128(f64(ar), f64(ai), f64(br), f64(bi))
    return gpm_to_f32(r), gpm_to_f32(i)


@helper
def gpm_canon_f32(v: f32) -> f32:
    return select(v != v, as_f32(u32(0x7FC00000)), v)
