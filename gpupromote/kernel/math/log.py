"""The logarithms: log, log1p, log2, log10 in float64 (double-double kernels, at most 0.65 ulp) and
the wide paths the float32 and narrow entry points round once (exp_log.py has the constants and the
exponentials)."""
from __future__ import annotations

from ._core import gpm_dd_mul, gpm_fast_two_sum, gpm_to_f32, gpm_two_prod, gpm_two_sum
from ._dsl import INF, NAN, NINF, as_f32, as_f64, as_u64, f32, f64, fabs, fma, helper, i64, public, select, u32, u64
from .exp_log import (INV_LN10, INV_LN10_LO, INV_LN2, INV_LN2_LO, LF1, LF2, LF3, LF4, LF5, LF6, LN2, LN2_HI,
                      LN2_LO, LN2_R, LOG10_2_HI, LOG10_2_LO, LR1, LR2, LR3, LR4, LR5, LR6, LR7, LR8, LR9,
                      SQRT_HALF_BITS)


# --------------------------------------------------------------------------------------------
# log

@helper
def gpm_log_split(x: f64) -> tuple[f64, f64]:
    """x = 2^e * m with m in [sqrt(1/2), sqrt(2)), for x positive normal: (e as f64, m - 1)."""
    u = as_u64(x)
    e = i64(u - u64(SQRT_HALF_BITS)) >> i64(52)
    m = as_f64(u - (u64(e) << u64(52)))
    return f64(e), m - 1.0


@helper
def gpm_log1p_kernel(f: f64) -> tuple[f64, f64]:
    """log(1 + f) as a double-double for f in [sqrt(1/2) - 1, sqrt(2) - 1], ~2^-56 relative."""
    s = f / (2.0 + f)
    z = s * s
    p = fma(z, LR9, LR8)
    p = fma(z, p, LR7)
    p = fma(z, p, LR6)
    p = fma(z, p, LR5)
    p = fma(z, p, LR4)
    p = fma(z, p, LR3)
    p = fma(z, p, LR2)
    p = fma(z, p, LR1)
    rr = z * p
    hh, hl = gpm_two_prod(f, f)
    hh = hh * 0.5
    hl = hl * 0.5
    ah, al = gpm_two_sum(f, -hh)
    b = s * (hh + rr)
    return gpm_fast_two_sum(ah, (al - hl) + b)


@helper
def gpm_log_dd(x: f64) -> tuple[f64, f64]:
    """log(x) as a double-double for x positive and finite (subnormals included)."""
    sub = x < 2.2250738585072014e-308
    xs = select(sub, x * 18014398509481984.0, x)   # 2^54
    e, f = gpm_log_split(xs)
    e = e - select(sub, 54.0, 0.0)
    hi, lo = gpm_log1p_kernel(f)
    sh, sl = gpm_two_sum(e * LN2_HI, hi)
    return gpm_fast_two_sum(sh, sl + lo + e * LN2_LO)


@helper
def gpm_log_core_f64(x: f64) -> f64:
    """log(x) for x positive and finite (subnormals included)."""
    h, lo = gpm_log_dd(x)
    return h + lo


@public
def gpm_log_f64(x: f64) -> f64:
    # straight-line (vectorizes): the special values selected around the core, which runs on 1.0 for them
    return gpm_log_special(x, gpm_log_core_f64(select((x > 0.0) & (x < INF), x, 1.0)))


@helper
def gpm_log_wide_core(x: f64) -> tuple[f64, f64]:
    """(e, log1p(f)) with x = 2^e (1 + f), x positive normal; ~2^-52 relative, branch-free."""
    e, f = gpm_log_split(x)
    s = f / (2.0 + f)
    z = s * s
    p = fma(z, LF6, LF5)
    p = fma(z, p, LF4)
    p = fma(z, p, LF3)
    p = fma(z, p, LF2)
    p = fma(z, p, LF1)
    hfsq = 0.5 * f * f
    return e, f - fma(-s, fma(z, p, hfsq), hfsq)


@helper
def gpm_log_special(x: f64, y: f64) -> f64:
    """The special values of log-like functions around a result y computed for x > 0 finite."""
    return select(x != x, x, select(x < 0.0, NAN, select(x == 0.0, NINF, select(x == INF, x, y))))


@public
def gpm_log_wide(x: f64) -> f64:
    return gpm_log_special(x, gpm_ln_value(x))


@helper
def gpm_ln_value(x: f64) -> f64:
    """log(x) in double for x > 0 finite (the _wide and float32 paths' value before the special cases)."""
    e, p = gpm_log_wide_core(x)
    return fma(e, LN2, fma(e, LN2_R, p))


@helper
def gpm_log_special_f32(x: f32, y: f64) -> f32:
    """y (computed for x > 0 finite) rounded to float32, the special values chosen in float32: what
    gpm_log_special then gpm_to_f32 give, with compares and selects on 8-lane float32 vectors
    instead of 8-lane double ones (a tenth of the float32 loop's work)."""
    r = select(x == f32(INF), x, f32(y))
    r = select(x == f32(0.0), f32(NINF), r)
    r = select(x < f32(0.0), as_f32(u32(0x7FC00000)), r)
    return select(x != x, x, r)


@helper
def gpm_log_f32_raw(x: f32) -> f32:
    return gpm_log_special_f32(x, gpm_ln_value(f64(x)))




# --------------------------------------------------------------------------------------------
# log1p, log2, log10

@helper
def gpm_log_dd2(xh: f64, xl: f64) -> tuple[f64, f64]:
    """log(xh + xl) as a double-double, xh positive normal, |xl| <= 2^-52 xh."""
    h, lo = gpm_log_dd(xh)
    c = xl / xh
    return gpm_fast_two_sum(h, lo + (c - 0.5 * c * c))


@helper
def gpm_log1p_core_f64(x: f64) -> f64:
    """log1p(x) for -1 < x < inf, |x| >= 2^-20."""
    uh, ul = gpm_two_sum(1.0, x)
    h, lo = gpm_log_dd2(uh, ul)
    return h + lo


@public
def gpm_log1p_f64(x: f64) -> f64:
    # straight-line (vectorizes): both paths computed, the special values selected around them
    # below 2^-20: x - x^2/2 + x^3/3 - x^4/4, the first two exactly (x itself below 2^-54)
    ph, pl = gpm_two_prod(x, x)
    h, lo = gpm_two_sum(x, -0.5 * ph)
    small = h + (lo + (-0.5 * pl + ph * x * (1.0 / 3.0 - 0.25 * x)))
    ok = (x > -1.0) & (x < INF)
    y = gpm_log1p_core_f64(select(ok, x, 0.5))
    y = select(fabs(x) < 9.5367431640625e-07, select(fabs(x) < 5.551115123125783e-17, x, small), y)
    return select(x != x, x, select(x < -1.0, NAN, select(x == -1.0, NINF, select(x == INF, x, y))))


@helper
def gpm_log1p_wide_dd(t: f64) -> f64:
    """log(1 + t) for t > -1 finite, to about 2^-51 relative (plain double; the rounding of
    1 + t is put back)."""
    u = 1.0 + t
    c = select(fabs(t) <= 1.0, (1.0 - u) + t, (t - u) + 1.0)
    e, p = gpm_log_wide_core(u)
    return fma(e, LN2, fma(e, LN2_R, p + c / u))


@public
def gpm_log1p_wide(x: f64) -> f64:
    # f32 inputs: 1 + x is exact in double for 2^-29 <= |x| <= 2^24
    u = 1.0 + x
    e, p = gpm_log_wide_core(select(u > 0.0, u, 1.0))
    y = fma(e, LN2, fma(e, LN2_R, p))
    small = fma(-0.5 * x, x, x)
    y = select(fabs(x) < 1.862645149230957e-09, small, y)     # 2^-29
    return select(x != x, x, select(x < -1.0, NAN, select(x == -1.0, NINF, select(x == INF, x, y))))


@helper
def gpm_log1p_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_log1p_wide(f64(x))))


@helper
def gpm_log2_core_f64(x: f64) -> f64:
    """log2(x) for x positive and finite (subnormals included)."""
    sub = x < 2.2250738585072014e-308
    xs = select(sub, x * 18014398509481984.0, x)
    e, f = gpm_log_split(xs)
    e = e - select(sub, 54.0, 0.0)
    hi, lo = gpm_log1p_kernel(f)
    ph, pl = gpm_dd_mul(hi, lo, INV_LN2, INV_LN2_LO)
    sh, sl = gpm_two_sum(e, ph)
    return sh + (sl + pl)


@public
def gpm_log2_f64(x: f64) -> f64:
    # straight-line (vectorizes): the special values selected around the core, which runs on 1.0 for them
    return gpm_log_special(x, gpm_log2_core_f64(select((x > 0.0) & (x < INF), x, 1.0)))


@public
def gpm_log2_wide(x: f64) -> f64:
    return gpm_log_special(x, gpm_log2_value(x))


@helper
def gpm_log2_value(x: f64) -> f64:
    """log2(x) in double for x > 0 finite."""
    e, p = gpm_log_wide_core(x)
    return fma(p, INV_LN2, e)


@helper
def gpm_log2_f32_raw(x: f32) -> f32:
    return gpm_log_special_f32(x, gpm_log2_value(f64(x)))


@helper
def gpm_log10_core_f64(x: f64) -> f64:
    """log10(x) for x positive and finite (subnormals included)."""
    sub = x < 2.2250738585072014e-308
    xs = select(sub, x * 18014398509481984.0, x)
    e, f = gpm_log_split(xs)
    e = e - select(sub, 54.0, 0.0)
    hi, lo = gpm_log1p_kernel(f)
    ph, pl = gpm_dd_mul(hi, lo, INV_LN10, INV_LN10_LO)
    sh, sl = gpm_two_sum(e * LOG10_2_HI, ph)
    return sh + (sl + (pl + e * LOG10_2_LO))


@public
def gpm_log10_f64(x: f64) -> f64:
    # straight-line (vectorizes): the special values selected around the core, which runs on 1.0 for them
    return gpm_log_special(x, gpm_log10_core_f64(select((x > 0.0) & (x < INF), x, 1.0)))


@public
def gpm_log10_wide(x: f64) -> f64:
    return gpm_log_special(x, gpm_log10_value(x))


@helper
def gpm_log10_value(x: f64) -> f64:
    """log10(x) in double for x > 0 finite."""
    e, p = gpm_log_wide_core(x)
    return fma(e, LOG10_2_HI, fma(e, LOG10_2_LO, p * INV_LN10))


@helper
def gpm_log10_f32_raw(x: f32) -> f32:
    return gpm_log_special_f32(x, gpm_log10_value(f64(x)))
