"""The inverse complex functions: casinh (Hull, Fairgrieve and Tang), then casin, cacos, cacosh
from it; catanh, then catan from it (complex128 kernels; complex_entry.py has the entry points)."""
from __future__ import annotations

from ._core import gpm_dd_add, gpm_dd_mul, gpm_two_prod, gpm_two_sum
from ._dsl import INF, NAN, copysign, f64, fabs, helper, select, sqrt
from .exp_log import LN2
from .log import gpm_log1p_f64, gpm_log_f64
from .inverse_trig import PI, PI3O4, PIO2, PIO4, gpm_arccos_f64, gpm_arcsin_f64, gpm_arctan2_f64
from .special import gpm_hypot_f64
from .complex import gpm_c_signbit, gpm_isinf, gpm_log_abs


# --------------------------------------------------------------------------------------------
# inverse functions: casinh (Hull, Fairgrieve and Tang's algorithm: A = (|z+i| + |z-i|)/2, the
# real part log(A + sqrt(A^2 - 1)) and the imaginary part asin(y/A), each in the form that does
# not cancel), then casin, cacos, cacosh from it; catanh, then catan from it.

@helper
def gpm_hft_f(a: f64, b: f64, h: f64) -> f64:
    """(hypot(a, b) - b) / 2 without cancellation, h = hypot(a, b), a >= 0."""
    if b < 0.0:
        return (h - b) * 0.5
    if b == 0.0:
        return a * 0.5
    return a * a / (h + b) * 0.5


@helper
def gpm_casinh_core(ax: f64, ay: f64) -> tuple[f64, f64, f64, bool]:
    """For ax, ay >= 0 finite: (re, b, sq, use_b) with Re casinh(ax + i ay) = re and
    Im = asin(b) when use_b, else atan2(ay, sq)."""
    if (ax > 1e150) | (ay > 1e150):
        return gpm_log_abs(ax, ay) + LN2, 0.0, ax, False
    if (ax < 1e-18) & (ay < 1e-18):
        return ax, 0.0, 1.0, False
    r = gpm_hypot_f64(ax, ay + 1.0)
    s = gpm_hypot_f64(ax, ay - 1.0)
    a = 0.5 * (r + s)
    b = ay / a
    fp = gpm_hft_f(ax, ay + 1.0, r)       # f(x, y + 1)
    if a < 1.5:
        am1 = fp + gpm_hft_f(ax, 1.0 - ay, s)
        re = gpm_log1p_f64(am1 + sqrt(am1 * (a + 1.0)))
        if ay < 1.0:                         # x^2 negligible beside 1 - y^2 (and may underflow)
            w = sqrt((1.0 - ay) * (1.0 + ay))
            if ax < 7.450580596923828e-09 * w:
                re = ax / w
    else:
        re = gpm_log_f64(a + sqrt(a * a - 1.0))
    if b <= 0.6417:
        return re, b, 0.0, True
    if ay > 1.0:                             # x^2 negligible beside y^2 - 1: sqrt((A + y)(A - y)) ~ x y / sqrt(y^2 - 1)
        w = sqrt((ay - 1.0) * (ay + 1.0))
        if ax < 7.450580596923828e-09 * w:
            return re, b, ax * (ay / w), False
    amy = fp + gpm_hft_f(ax, ay - 1.0, s)   # A - y
    return re, b, sqrt((a + ay) * amy), False


@helper
def gpm_casinh_k128(x: f64, y: f64) -> tuple[f64, f64]:
    ax = fabs(x)
    ay = fabs(y)
    if (x != x) | (y != y):
        if gpm_isinf(x):
            return x, NAN
        if gpm_isinf(y):
            return INF, NAN
        if (y == 0.0) & (x != x):
            return NAN, y
        return NAN, NAN
    if gpm_isinf(x) | gpm_isinf(y):
        im = select(gpm_isinf(x) & gpm_isinf(y), PIO4, select(gpm_isinf(y), PIO2, 0.0))
        return copysign(INF, x), copysign(im, y)
    re, b, sq, use_b = gpm_casinh_core(ax, ay)
    if use_b:
        im = gpm_arcsin_f64(b)
    else:
        im = gpm_arctan2_f64(ay, sq)
    return copysign(re, x), copysign(im, y)


@helper
def gpm_casin_k128(x: f64, y: f64) -> tuple[f64, f64]:
    if gpm_isinf(x) & (y != y):            # NumPy (glibc): NaN + i inf
        return NAN, INF
    u, v = gpm_casinh_k128(-y, x)
    return v, -u


@helper
def gpm_cacos_k128(x: f64, y: f64) -> tuple[f64, f64]:
    ax = fabs(x)
    ay = fabs(y)
    if (x != x) | (y != y):
        if gpm_isinf(x):
            return NAN, copysign(INF, -y)
        if gpm_isinf(y):
            return NAN, -y
        if (x == 0.0) & (y != y):
            return PIO2, NAN
        return NAN, NAN
    if gpm_isinf(x) | gpm_isinf(y):
        if gpm_isinf(x) & gpm_isinf(y):
            re = select(x < 0.0, PI3O4, PIO4)
        elif gpm_isinf(x):
            re = select(x < 0.0, PI, 0.0)
        else:
            re = PIO2
        return re, copysign(INF, -y)
    re, b, sq, use_b = gpm_casinh_core(ay, ax)
    if use_b:
        rr = gpm_arccos_f64(copysign(b, x))
    else:
        rr = gpm_arctan2_f64(sq, x)
    return rr, copysign(re, -y)


@helper
def gpm_cacosh_k128(x: f64, y: f64) -> tuple[f64, f64]:
    u, v = gpm_cacos_k128(x, y)
    if (v != v) & (u != u):
        if gpm_isinf(x) | gpm_isinf(y):
            return INF, NAN
        return NAN, NAN
    if v != v:
        return NAN, u
    if gpm_c_signbit(v):
        return -v, u
    return v, -u


@helper
def gpm_catanh_k128(x: f64, y: f64) -> tuple[f64, f64]:
    ax = fabs(x)
    ay = fabs(y)
    if (x != x) | (y != y):
        if gpm_isinf(y):
            return copysign(0.0, x), copysign(PIO2, y)
        if gpm_isinf(x):
            return copysign(0.0, x), NAN
        if (x == 0.0) & (y != y):
            return x, NAN
        return NAN, NAN
    if gpm_isinf(x) | gpm_isinf(y):
        return copysign(0.0, x), copysign(PIO2, y)
    if (ax > 1e150) | (ay > 1e150):
        # 1/z: real x / |z|^2 (scaled), imaginary pi/2
        m = select(ax > ay, ax, ay)
        sx = ax / m
        sy = ay / m
        re = (sx / (sx * sx + sy * sy)) / m
        return copysign(re, x), copysign(PIO2, y)
    if (ax < 1e-18) & (ay < 1e-18):
        return x, y
    if (ax == 1.0) & (ay == 0.0):
        return copysign(INF, x), y
    # real: log1p(4x / ((1 - x)^2 + y^2)) / 4
    omh, oml = gpm_two_sum(1.0, -ax)
    d = omh * omh + ay * ay
    re = 0.25 * gpm_log1p_f64(4.0 * ax / d)
    # imaginary: atan2(2y, (1 - x)(1 + x) - y^2) / 2, the difference as a double-double
    oph, opl = gpm_two_sum(1.0, ax)
    ph, pl = gpm_dd_mul(omh, oml, oph, opl)
    qh, ql = gpm_two_prod(ay, ay)
    dh, dl = gpm_dd_add(ph, pl, -qh, -ql)
    im = 0.5 * gpm_arctan2_f64(2.0 * ay, dh + dl)
    return copysign(re, x), copysign(im, y)


@helper
def gpm_catan_k128(x: f64, y: f64) -> tuple[f64, f64]:
    u, v = gpm_catanh_k128(-y, x)
    return v, -u
