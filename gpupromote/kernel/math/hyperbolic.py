"""sinh, cosh, tanh, arcsinh, arccosh, arctanh.

float64: from the double-double exp/expm1/log kernels of exp_log.py (sinh = (t + t/(1+t))/2 with
t = expm1|x|; tanh = t/(t+2) with t = expm1(2|x|); asinh/acosh = log of x + sqrt(x^2 +- 1) kept
as a double-double; atanh = log1p(2x/(1-x))/2), one rounding at the end.
float32: the same formulas in plain double, branch-free.
"""
from __future__ import annotations

from ._core import (gpm_dd_add, gpm_dd_add_d, gpm_dd_div, gpm_dd_sqrt, gpm_min_f32, gpm_scale2, gpm_to_f32,
                    gpm_two_prod, gpm_two_sum)
from ._dsl import INF, NAN, copysign, f32, f64, fabs, fma, helper, i64, public, select, sqrt
from .exp_log import LN2, LN2_R, gpm_exp_kernel, gpm_exp_wide_core, gpm_expm1_dd, gpm_expm1_wide_core
from .log import gpm_log_dd, gpm_log_dd2, gpm_log_wide_core


@helper
def gpm_sinh_rare_f64(x: f64) -> bool:
    """Where gpm_sinh_fast_f64 is not gpm_sinh_f64: 22 < |x| <= 711 (e^|x| / 2)."""
    return (fabs(x) > 22.0) & (fabs(x) <= 711.0)


@helper
def gpm_sinh_core_f64(x: f64) -> f64:
    """gpm_sinh_f64 for 2^-27 <= |x| <= 22 (the core of gpm_sinh_fast_f64)."""
    a = fabs(x)
    th, tl = gpm_expm1_dd(a)
    dh, dl = gpm_dd_add_d(th, tl, 1.0)
    uh, ul = gpm_dd_div(th, tl, dh, dl)    # t / (1 + t) = 1 - e^-a
    h, lo = gpm_dd_add(th, tl, uh, ul)
    return copysign(0.5 * (h + lo), x)


@helper
def gpm_sinh_fast_f64(x: f64) -> f64:
    """gpm_sinh_f64 wherever gpm_sinh_rare_f64 is false, straight-line (the fast twin): the
    special values selected around the core."""
    a = fabs(x)
    y = gpm_sinh_core_f64(select((a >= 7.450580596923828e-09) & (a <= 22.0), x, 1.0))
    return select((x != x) | (a < 7.450580596923828e-09), x, select(a > 711.0, copysign(INF, x), y))


@public
def gpm_sinh_f64(x: f64) -> f64:
    if x != x:
        return x
    a = fabs(x)
    if a < 7.450580596923828e-09:          # 2^-27: x + x^3/6 rounds to x
        return x
    if a > 711.0:
        return copysign(INF, x)
    if a > 22.0:                           # e^-a below 2^-63 of e^a: sinh = e^a / 2
        h, lo, k = gpm_exp_kernel(a, 0.0)
        return copysign(gpm_scale2(h + lo, k - i64(1)), x)
    th, tl = gpm_expm1_dd(a)
    dh, dl = gpm_dd_add_d(th, tl, 1.0)
    uh, ul = gpm_dd_div(th, tl, dh, dl)    # t / (1 + t) = 1 - e^-a
    h, lo = gpm_dd_add(th, tl, uh, ul)
    return copysign(0.5 * (h + lo), x)


@helper
def gpm_cosh_rare_f64(x: f64) -> bool:
    """Where gpm_cosh_fast_f64 is not gpm_cosh_f64: 22 < |x| <= 711 (e^|x| / 2)."""
    return (fabs(x) > 22.0) & (fabs(x) <= 711.0)


@helper
def gpm_cosh_core_f64(x: f64) -> f64:
    """gpm_cosh_f64 for 2^-27 <= |x| <= 22 (the core of gpm_cosh_fast_f64)."""
    a = fabs(x)
    h, lo, k = gpm_exp_kernel(a, 0.0)
    p = gpm_scale2(1.0, k)
    eh = h * p                             # exact scalings, |k| <= 32
    el = lo * p
    ih, il = gpm_dd_div(1.0, 0.0, eh, el)
    sh, sl = gpm_dd_add(eh, el, ih, il)
    return 0.5 * (sh + sl)


@helper
def gpm_cosh_fast_f64(x: f64) -> f64:
    """gpm_cosh_f64 wherever gpm_cosh_rare_f64 is false, straight-line (the fast twin): the
    special values selected around the core."""
    a = fabs(x)
    y = gpm_cosh_core_f64(select((a >= 7.450580596923828e-09) & (a <= 22.0), x, 1.0))
    return select(x != x, x, select(a < 7.450580596923828e-09, 1.0, select(a > 711.0, INF, y)))


@public
def gpm_cosh_f64(x: f64) -> f64:
    if x != x:
        return x
    a = fabs(x)
    if a < 7.450580596923828e-09:
        return 1.0
    if a > 711.0:
        return INF
    h, lo, k = gpm_exp_kernel(a, 0.0)
    if a > 22.0:
        return gpm_scale2(h + lo, k - i64(1))
    p = gpm_scale2(1.0, k)
    eh = h * p                             # exact scalings, |k| <= 32
    el = lo * p
    ih, il = gpm_dd_div(1.0, 0.0, eh, el)
    sh, sl = gpm_dd_add(eh, el, ih, il)
    return 0.5 * (sh + sl)


@helper
def gpm_tanh_core_f64(x: f64) -> f64:
    """tanh(x) for 2^-28 <= |x| <= 22."""
    a = fabs(x)
    th, tl = gpm_expm1_dd(2.0 * a)
    dh, dl = gpm_dd_add_d(th, tl, 2.0)
    h, lo = gpm_dd_div(th, tl, dh, dl)
    return copysign(h + lo, x)


@public
def gpm_tanh_f64(x: f64) -> f64:
    # straight-line (vectorizes): below 2^-28 x - x^3/3 rounds to x, above 22 1 - 2e^-2a rounds to 1
    a = fabs(x)
    y = gpm_tanh_core_f64(select((a >= 3.725290298461914e-09) & (a <= 22.0), x, 1.0))
    return select((x != x) | (a < 3.725290298461914e-09), x, select(a > 22.0, copysign(1.0, x), y))


@public
def gpm_sinh_wide(x: f64) -> f64:
    a = select(x != x, 0.0, select(fabs(x) > 100.0, 100.0, fabs(x)))
    return select(x != x, x, copysign(select(fabs(x) > 100.0, INF, gpm_sinh_pos(a)), x))


@helper
def gpm_sinh_pos(a: f64) -> f64:
    """sinh(a) for 0 <= a <= 100: (t + t / (t + 1)) / 2, t = expm1(a)."""
    t = gpm_expm1_wide_core(a)
    return 0.5 * (t + t / (t + 1.0))


@helper
def gpm_cosh_pos(a: f64) -> f64:
    """cosh(a) for 0 <= a <= 100: (e + 1 / e) / 2, e = exp(a)."""
    e = gpm_exp_wide_core(a)
    return 0.5 * (e + 1.0 / e)


@public
def gpm_cosh_wide(x: f64) -> f64:
    a = select(x != x, 0.0, select(fabs(x) > 100.0, 100.0, fabs(x)))
    return select(x != x, x, select(fabs(x) > 100.0, INF, gpm_cosh_pos(a)))


@helper
def gpm_tanh_pos(a: f64) -> f64:
    """tanh(a) for 0 <= a <= 20, ~2^-51 relative: -expm1(-2a) / (2 + expm1(-2a))."""
    t = gpm_expm1_wide_core(-2.0 * a)
    return -t / (2.0 + t)


@public
def gpm_tanh_wide(x: f64) -> f64:
    a = select(x != x, 0.0, select(fabs(x) > 20.0, 20.0, fabs(x)))
    return select(x != x, x, copysign(gpm_tanh_pos(a), x))


@helper
def gpm_sinh_f32_raw(x: f32) -> f32:
    # as gpm_sinh_wide, with the clamp and the sign in float32: at |x| = 100 the double result
    # already rounds to float32's inf, so the clamp alone gives inf beyond it; a NaN becomes 100
    # in the clamp and is put back at the end
    a = f64(gpm_min_f32(fabs(x), f32(100.0)))
    return select(x != x, x, copysign(f32(gpm_sinh_pos(a)), x))


@helper
def gpm_cosh_f32_raw(x: f32) -> f32:
    # as gpm_cosh_wide, with the clamp in float32 (see gpm_sinh_f32_raw)
    return select(x != x, x, f32(gpm_cosh_pos(f64(gpm_min_f32(fabs(x), f32(100.0))))))


@helper
def gpm_tanh_f32_raw(x: f32) -> f32:
    # the clamp and the sign in float32 (a min, and a copysign after the one rounding, which is
    # symmetric): a NaN becomes 20 in the clamp and is put back at the end
    a = gpm_min_f32(fabs(x), f32(20.0))
    return select(x != x, x, copysign(f32(gpm_tanh_pos(f64(a))), x))


# --------------------------------------------------------------------------------------------
# inverse hyperbolic

@helper
def gpm_arcsinh_rare_f64(x: f64) -> bool:
    """Where gpm_arcsinh_fast_f64 is not gpm_arcsinh_f64: 2^28 < |x| < inf (log(2|x|))."""
    return (fabs(x) > 268435456.0) & (fabs(x) < INF)


@helper
def gpm_arcsinh_fast_f64(x: f64) -> f64:
    """gpm_arcsinh_f64 wherever gpm_arcsinh_rare_f64 is false, straight-line (the fast twin)."""
    a = fabs(x)
    a1 = select((a >= 3.725290298461914e-09) & (a <= 268435456.0), a, 1.0)
    ph, pl = gpm_two_prod(a1, a1)
    ph, pl = gpm_dd_add_d(ph, pl, 1.0)
    sh, sl = gpm_dd_sqrt(ph, pl)
    wh, wl = gpm_dd_add_d(sh, sl, a1)
    h, lo = gpm_log_dd2(wh, wl)
    return select((x != x) | (a == INF) | (a < 3.725290298461914e-09), x, copysign(h + lo, x))


@public
def gpm_arcsinh_f64(x: f64) -> f64:
    if (x != x) | (fabs(x) == INF):
        return x
    a = fabs(x)
    if a < 3.725290298461914e-09:          # 2^-28: x - x^3/6 rounds to x
        return x
    if a > 268435456.0:                    # 2^28: log(2a) to double precision
        h, lo = gpm_log_dd(a)
        h, lo = gpm_dd_add(h, lo, LN2, LN2_R)
        return copysign(h + lo, x)
    ph, pl = gpm_two_prod(a, a)
    ph, pl = gpm_dd_add_d(ph, pl, 1.0)
    sh, sl = gpm_dd_sqrt(ph, pl)
    wh, wl = gpm_dd_add_d(sh, sl, a)
    h, lo = gpm_log_dd2(wh, wl)
    return copysign(h + lo, x)


@helper
def gpm_arccosh_rare_f64(x: f64) -> bool:
    """Where gpm_arccosh_fast_f64 is not gpm_arccosh_f64: 2^28 < x < inf (log(2x))."""
    return (x > 268435456.0) & (x < INF)


@helper
def gpm_arccosh_fast_f64(x: f64) -> f64:
    """gpm_arccosh_f64 wherever gpm_arccosh_rare_f64 is false, straight-line (the fast twin)."""
    x1 = select((x > 1.0) & (x <= 268435456.0), x, 2.0)
    ph, pl = gpm_two_prod(x1, x1)
    ph, pl = gpm_dd_add_d(ph, pl, -1.0)
    sh, sl = gpm_dd_sqrt(ph, pl)
    wh, wl = gpm_dd_add_d(sh, sl, x1)
    h, lo = gpm_log_dd2(wh, wl)
    return select(x != x, x, select(x < 1.0, NAN, select(x == INF, x, select(x == 1.0, 0.0, h + lo))))


@public
def gpm_arccosh_f64(x: f64) -> f64:
    if x != x:
        return x
    if x < 1.0:
        return NAN
    if x == INF:
        return x
    if x == 1.0:
        return 0.0
    if x > 268435456.0:
        h, lo = gpm_log_dd(x)
        h, lo = gpm_dd_add(h, lo, LN2, LN2_R)
        return h + lo
    ph, pl = gpm_two_prod(x, x)
    ph, pl = gpm_dd_add_d(ph, pl, -1.0)
    sh, sl = gpm_dd_sqrt(ph, pl)
    wh, wl = gpm_dd_add_d(sh, sl, x)
    h, lo = gpm_log_dd2(wh, wl)
    return h + lo


@public
def gpm_arctanh_f64(x: f64) -> f64:
    # straight-line (vectorizes): NaN, |x| >= 1 and |x| < 2^-28 (x + x^3/3 rounds to x) selected
    a = fabs(x)
    a1 = select((a >= 3.725290298461914e-09) & (a < 1.0), a, 0.5)
    dh, dl = gpm_two_sum(1.0, -a1)
    th, tl = gpm_dd_div(2.0 * a1, 0.0, dh, dl)
    uh, ul = gpm_dd_add_d(th, tl, 1.0)
    h, lo = gpm_log_dd2(uh, ul)
    v = copysign(0.5 * (h + lo), x)
    return select((x != x) | (a < 3.725290298461914e-09), x, select(a > 1.0, NAN, select(a == 1.0, copysign(INF, x), v)))


@helper
def gpm_log1p_wide_corr(t: f64) -> f64:
    """log(1 + t) for t >= 0 finite, to about 2^-51 relative: the rounding of 1 + t is put back."""
    u = 1.0 + t
    c = select(t <= 1.0, (1.0 - u) + t, (t - u) + 1.0)
    e, p = gpm_log_wide_core(u)
    return fma(e, LN2, fma(e, LN2_R, p + c / u))


@public
def gpm_arcsinh_wide(x: f64) -> f64:
    a = select((x != x) | (fabs(x) == INF), 0.0, fabs(x))
    a2 = a * a
    t = a + a2 / (1.0 + sqrt(1.0 + a2))
    y = gpm_log1p_wide_corr(t)
    y = select(a < 1.4901161193847656e-08, a, y)
    return select((x != x) | (fabs(x) == INF), x, copysign(y, x))


@public
def gpm_arccosh_wide(x: f64) -> f64:
    ok = (x >= 1.0) & (x < INF)
    xs = select(ok, x, 1.0)
    u = xs - 1.0
    t = u + sqrt(u * (xs + 1.0))
    y = gpm_log1p_wide_corr(t)
    return select(x != x, x, select(x == INF, x, select(ok, y, NAN)))


@public
def gpm_arctanh_wide(x: f64) -> f64:
    a = fabs(x)
    ok = a < 1.0
    a = select(ok, a, 0.0)
    y = 0.5 * gpm_log1p_wide_corr(2.0 * a / (1.0 - a))
    y = select(a < 1.4901161193847656e-08, a, y)
    return select(x != x, x, select(ok, copysign(y, x), select(fabs(x) == 1.0, copysign(INF, x), NAN)))


@helper
def gpm_arcsinh_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_arcsinh_wide(f64(x))))


@helper
def gpm_arccosh_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_arccosh_wide(f64(x))))


@helper
def gpm_arctanh_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_arctanh_wide(f64(x))))
