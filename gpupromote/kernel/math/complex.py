"""Complex functions, built on the real ones: cexp, clog, csqrt, cpow, csin, ccos, ctan, csinh,
ccosh, ctanh, casin, cacos, catan, casinh, cacosh, catanh.

Interface: a complex number travels as its two parts. complex128: ``gpm_cexp_k128(re: f64, im: f64)
-> tuple[f64, f64]``; complex64: ``gpm_cexp_c64(re: f32, im: f32) -> tuple[f32, f32]``; cpow takes
four parts (a.re, a.im, b.re, b.im). Numba returns the tuple; the C++ header returns a struct
``gpm_t_f64_f64 {v0, v1}`` (``gpm_t_f32_f32`` for complex64) and has an out-parameter twin
``gpm_cexp_c128_out(re, im, &out_re, &out_im)``.

Special values follow C99 Annex G (G.6) as NumPy (on glibc) returns them; a NaN part is the
canonical quiet NaN or a NaN input, never a NaN made by the hardware (so both engines agree).
complex64 is computed in double by the complex128 algorithms and each part rounded once, except
cpow's small integer powers, which multiply in float32 exactly as NumPy's npy_cpowf does.
"""
from __future__ import annotations

from ._core import (gpm_dd_add, gpm_dd_mul_d, gpm_fast_two_sum,
                    gpm_scale2, gpm_two_prod)
from ._dsl import INF, NAN, as_u64, copysign, f64, fabs, floor, helper, i64, select, sqrt, u64
from .exp_log import LN2, LN2_R, gpm_exp_acc, gpm_exp_f64, gpm_exp_kernel
from .hyperbolic import gpm_cosh_f64, gpm_sinh_f64, gpm_tanh_f64
from .inverse_trig import gpm_arctan2_f64
from .pow import gpm_log_acc
from .special import gpm_hypot_f64
from .trig import gpm_sincos_dd_arg, gpm_sincos_f64, gpm_tan_f64


@helper
def gpm_isfinite(x: f64) -> bool:
    return fabs(x) < INF


@helper
def gpm_isinf(x: f64) -> bool:
    return fabs(x) == INF


@helper
def gpm_c_signbit(x: f64) -> bool:
    return (as_u64(x) >> u64(63)) == u64(1)


# --------------------------------------------------------------------------------------------
# exp, log, sqrt

@helper
def gpm_exp_cis(x: f64, s: f64, c: f64, kadj: i64) -> tuple[f64, f64]:
    """(e^x 2^kadj c, e^x 2^kadj s) for x finite, without overflow in between (a scaled exp)."""
    if x > 1500.0:
        return c * INF, s * INF
    if x < -1500.0:
        return c * 0.0, s * 0.0
    h, lo, k = gpm_exp_kernel(x, 0.0)
    rh, rl = gpm_dd_mul_d(h, lo, c)
    ih, il = gpm_dd_mul_d(h, lo, s)
    return gpm_scale2(rh + rl, k + kadj), gpm_scale2(ih + il, k + kadj)


@helper
def gpm_cexp_k128(x: f64, y: f64) -> tuple[f64, f64]:
    if x != x:
        if y == 0.0:
            return x, y
        return x, NAN
    if gpm_isinf(x):
        if x > 0.0:
            if y == 0.0:
                return x, y
            if gpm_isfinite(y):
                s, c = gpm_sincos_f64(y)
                return x * c, x * s
            return x, NAN
        if gpm_isfinite(y):
            s, c = gpm_sincos_f64(y)
            return 0.0 * c, 0.0 * s
        return 0.0, copysign(0.0, y)
    if not gpm_isfinite(y):
        return NAN, NAN
    if y == 0.0:
        return gpm_exp_f64(x), y
    s, c = gpm_sincos_f64(y)
    return gpm_exp_cis(x, s, c, i64(0))


@helper
def gpm_log_abs(x: f64, y: f64) -> f64:
    """log(hypot(x, y)) for finite x, y not both 0, rounded once from a double-double: x^2 + y^2
    is formed exactly after scaling, so |z| near 1 keeps its relative accuracy."""
    ax = fabs(x)
    ay = fabs(y)
    m = select(ax > ay, ax, ay)
    e = i64(as_u64(m) >> u64(52)) - i64(1023)
    e = select(e == i64(-1023), i64(-1022), e)
    sx = gpm_scale2(ax, -e)
    sy = gpm_scale2(ay, -e)
    ph, pl = gpm_two_prod(sx, sx)
    qh, ql = gpm_two_prod(sy, sy)
    sh, sl = gpm_dd_add(ph, pl, qh, ql)
    lh, ll = gpm_log_acc(sh)
    c = sl / sh
    lh, ll = gpm_fast_two_sum(lh, ll + (c - 0.5 * c * c))
    ef = f64(e)
    # 0.5 log(s) + e ln2
    ah, al = gpm_two_prod(ef, LN2)
    al = al + ef * LN2_R
    h, lo = gpm_dd_add(0.5 * lh, 0.5 * ll, ah, al)
    return h + lo


@helper
def gpm_clog_k128(x: f64, y: f64) -> tuple[f64, f64]:
    ax = fabs(x)
    ay = fabs(y)
    if (x != x) | (y != y):
        if gpm_isinf(x) | gpm_isinf(y):
            return INF, NAN
        return NAN, NAN
    if gpm_isinf(x) | gpm_isinf(y):
        return INF, gpm_arctan2_f64(y, x)
    if (ax == 0.0) & (ay == 0.0):
        return -INF, gpm_arctan2_f64(y, x)
    return gpm_log_abs(x, y), gpm_arctan2_f64(y, x)


@helper
def gpm_csqrt_k128(x: f64, y: f64) -> tuple[f64, f64]:
    if (x == 0.0) & (y == 0.0):
        return 0.0, y
    if gpm_isinf(y):
        return INF, y
    if x != x:
        return x, NAN
    if gpm_isinf(x):
        if x < 0.0:
            if y != y:
                return NAN, copysign(INF, y)
            return 0.0, copysign(INF, y)
        if y != y:
            return x, y
        return x, copysign(0.0, y)
    if y != y:
        return NAN, y
    # scale: t = sqrt((|x| + |z|)/2) without overflow or loss in the subnormals
    ax = fabs(x)
    ay = fabs(y)
    m = select(ax > ay, ax, ay)
    e = i64(as_u64(m) >> u64(52)) - i64(1023)
    e = select(e == i64(-1023), i64(-1074), e)
    e = e & i64(-2)                        # even: the root halves it exactly
    sx = gpm_scale2(ax, -e)
    sy = gpm_scale2(ay, -e)
    h = gpm_hypot_f64(sx, sy)
    t = gpm_scale2(sqrt((sx + h) * 0.5), e >> i64(1))
    u = ay / (2.0 * t)                     # unscaled: a tiny part rounds once
    if x >= 0.0:
        return t, copysign(u, y)
    return u, copysign(t, y)


# --------------------------------------------------------------------------------------------
# hyperbolic and circular

@helper
def gpm_csinh_k128(x: f64, y: f64) -> tuple[f64, f64]:
    xf = gpm_isfinite(x)
    yf = gpm_isfinite(y)
    if xf & yf:
        if y == 0.0:
            return gpm_sinh_f64(x), y
        s, c = gpm_sincos_f64(y)
        ax = fabs(x)
        if ax < 700.0:
            return gpm_sinh_f64(x) * c, gpm_cosh_f64(x) * s
        re, im = gpm_exp_cis(ax, s, c, i64(-1))     # e^|x| / 2
        return copysign(1.0, x) * re, im
    if (x == 0.0) & (not yf):
        return x, NAN
    if (y == 0.0) & (not xf):
        return x, y
    if xf & (not yf):
        return NAN, NAN
    if gpm_isinf(x):
        if not yf:
            return INF, NAN
        s, c = gpm_sincos_f64(y)
        return x * c, INF * s
    return NAN, NAN


@helper
def gpm_ccosh_k128(x: f64, y: f64) -> tuple[f64, f64]:
    xf = gpm_isfinite(x)
    yf = gpm_isfinite(y)
    if xf & yf:
        if y == 0.0:
            return gpm_cosh_f64(x), y * copysign(1.0, x)
        s, c = gpm_sincos_f64(y)
        ax = fabs(x)
        if ax < 700.0:
            return gpm_cosh_f64(x) * c, gpm_sinh_f64(x) * s
        re, im = gpm_exp_cis(ax, s, c, i64(-1))
        return re, copysign(1.0, x) * im
    if (x == 0.0) & (not yf):
        return NAN, 0.0
    if (y == 0.0) & (not xf):
        if x != x:
            return x, y * 0.0
        return INF, y * copysign(1.0, x)
    if xf & (not yf):
        return NAN, NAN
    if gpm_isinf(x):
        if not yf:
            return INF, NAN
        s, c = gpm_sincos_f64(y)
        return INF * c, x * s
    return NAN, NAN


@helper
def gpm_ctanh_k128(x: f64, y: f64) -> tuple[f64, f64]:
    if not gpm_isfinite(x):
        if x != x:
            if y == 0.0:
                return x, y
            return x, NAN
        if gpm_isinf(y) | (y != y):
            return copysign(1.0, x), copysign(0.0, y)
        s, c = gpm_sincos_f64(y)
        return copysign(1.0, x), copysign(0.0, s * c)
    if not gpm_isfinite(y):
        if x == 0.0:
            return x, NAN
        return NAN, NAN
    if fabs(x) >= 22.0:
        s, c = gpm_sincos_f64(y)
        e = gpm_exp_f64(-fabs(x))
        return copysign(1.0, x), 4.0 * s * c * e * e
    if y == 0.0:
        return gpm_tanh_f64(x), y
    t = gpm_tan_f64(y)
    beta = 1.0 + t * t
    s = gpm_sinh_f64(x)
    rho = sqrt(1.0 + s * s)
    den = 1.0 + beta * s * s
    return beta * rho * s / den, t / den


@helper
def gpm_csin_k128(x: f64, y: f64) -> tuple[f64, f64]:
    if gpm_isinf(y) & (not gpm_isfinite(x)):   # NumPy (glibc): NaN + i inf
        return NAN, INF
    u, v = gpm_csinh_k128(-y, x)
    return v, -u


@helper
def gpm_ccos_k128(x: f64, y: f64) -> tuple[f64, f64]:
    return gpm_ccosh_k128(-y, x)


@helper
def gpm_ctan_k128(x: f64, y: f64) -> tuple[f64, f64]:
    u, v = gpm_ctanh_k128(-y, x)
    return v, -u


# --------------------------------------------------------------------------------------------
# power (NumPy's npy_cpow)

@helper
def gpm_cmul(ar: f64, ai: f64, br: f64, bi: f64) -> tuple[f64, f64]:
    return ar * br - ai * bi, ar * bi + ai * br


@helper
def gpm_cdiv(ar: f64, ai: f64, br: f64, bi: f64) -> tuple[f64, f64]:
    """Smith's division, as NumPy's cdiv."""
    abr = fabs(br)
    abi = fabs(bi)
    if abr >= abi:
        if (abr == 0.0) & (abi == 0.0):
            return ar / abr, ai / abi
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@helper
def gpm_cpow_int(ar: f64, ai: f64, n: i64) -> tuple[f64, f64]:
    """a^n for 0 < |n| < 100 by NumPy's sequence of multiplications (n != 1, 2, 3 handled before)."""
    m = select(n < i64(0), -n, n)
    rr = 1.0
    ri = 0.0
    pr = ar
    pi_ = ai
    for bit in range(0, 7):
        if ((m >> bit) & i64(1)) == i64(1):
            rr, ri = gpm_cmul(rr, ri, pr, pi_)
        if (m >> (bit + i64(1))) != i64(0):
            pr, pi_ = gpm_cmul(pr, pi_, pr, pi_)
    return rr, ri


@helper
def gpm_cpow_general(ar: f64, ai: f64, br: f64, bi: f64) -> tuple[f64, f64]:
    """exp(b log a) with log a and the product in double-doubles (a != 0, all finite)."""
    lr = gpm_log_abs(ar, ai)
    li = gpm_arctan2_f64(ai, ar)
    # b * log a: real br lr - bi li, imaginary br li + bi lr
    p1h, p1l = gpm_two_prod(br, lr)
    p2h, p2l = gpm_two_prod(bi, li)
    rh, rl = gpm_dd_add(p1h, p1l, -p2h, -p2l)
    q1h, q1l = gpm_two_prod(br, li)
    q2h, q2l = gpm_two_prod(bi, lr)
    th, tl = gpm_dd_add(q1h, q1l, q2h, q2l)
    if not (fabs(th) < 1e300):
        return NAN, NAN
    s, c = gpm_sincos_dd_arg(th, tl)
    if rh > 1500.0:
        return c * INF, s * INF
    if rh < -1500.0:
        return c * 0.0, s * 0.0
    h, lo, k = gpm_exp_acc(rh, rl)
    reh, rel = gpm_dd_mul_d(h, lo, c)
    imh, iml = gpm_dd_mul_d(h, lo, s)
    return gpm_scale2(reh + rel, k), gpm_scale2(imh + iml, k)


@helper
def gpm_box(x: f64) -> f64:
    """An infinity as +-1, anything else as a zero of its sign (C99 Annex G's recovery)."""
    return copysign(select(gpm_isinf(x), 1.0, 0.0), x)


@helper
def gpm_unnan(x: f64) -> f64:
    return select(x != x, copysign(0.0, x), x)


@helper
def gpm_cmul_annex_g(a: f64, b: f64, c: f64, d: f64) -> tuple[f64, f64]:
    """(a + ib)(c + id) with C99 Annex G's recovery of infinities (what glibc's cpow multiplies
    b log a with, libgcc's __muldc3): a NaN result from infinite factors becomes the infinity
    the factors' signs give."""
    ac = a * c
    bd = b * d
    ad = a * d
    bc = b * c
    x = ac - bd
    y = ad + bc
    if (x == x) | (y == y):
        return x, y
    recalc = False
    if gpm_isinf(a) | gpm_isinf(b):
        a = gpm_box(a)
        b = gpm_box(b)
        c = gpm_unnan(c)
        d = gpm_unnan(d)
        recalc = True
    if gpm_isinf(c) | gpm_isinf(d):
        c = gpm_box(c)
        d = gpm_box(d)
        a = gpm_unnan(a)
        b = gpm_unnan(b)
        recalc = True
    if (not recalc) & (gpm_isinf(ac) | gpm_isinf(bd) | gpm_isinf(ad) | gpm_isinf(bc)):
        a = gpm_unnan(a)
        b = gpm_unnan(b)
        c = gpm_unnan(c)
        d = gpm_unnan(d)
        recalc = True
    if recalc:
        x = INF * (a * c - b * d)
        y = INF * (a * d + b * c)
    return x, y


@helper
def gpm_cpow_k128(ar: f64, ai: f64, br: f64, bi: f64) -> tuple[f64, f64]:
    if (br == 0.0) & (bi == 0.0):
        return 1.0, 0.0
    if (ar == 0.0) & (ai == 0.0):
        if br > 0.0:
            return 0.0, 0.0
        return NAN, NAN
    if (bi == 0.0) & (br > -100.0) & (br < 100.0) & (floor(br) == br):
        n = i64(br)
        if n == i64(1):
            return ar, ai
        if n == i64(2):
            return gpm_cmul(ar, ai, ar, ai)
        if n == i64(3):
            sr, si = gpm_cmul(ar, ai, ar, ai)
            return gpm_cmul(ar, ai, sr, si)
        rr, ri = gpm_cpow_int(ar, ai, n)
        if br < 0.0:
            return gpm_cdiv(1.0, 0.0, rr, ri)
        return rr, ri
    if not (gpm_isfinite(ar) & gpm_isfinite(ai) & gpm_isfinite(br) & gpm_isfinite(bi)):
        # NaN and infinite parts as glibc's cpow gives them: cexp(b * clog(a)), each step by Annex G
        lr, li = gpm_clog_k128(ar, ai)
        er, ei = gpm_cmul_annex_g(br, bi, lr, li)
        return gpm_cexp_k128(er, ei)
    return gpm_cpow_general(ar, ai, br, bi)
