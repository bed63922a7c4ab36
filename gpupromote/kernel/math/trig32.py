"""sin, cos and tan of float32 (and narrow) values: double evaluation, branch-free, one rounding.
The reduction is Cody-Waite below 2^24 and Payne-Hanek from a table above; the entry points
(float32.py) select between the two, and their fast twins (float32.FAST_TWINS) use the first alone."""
from __future__ import annotations

from ._core import gpm_dd_mul, gpm_fast_two_sum, gpm_to_f32, gpm_two_prod, gpm_two_sum
from ._dsl import INF, NAN, as_u32, f32, f64, fabs, floor, fma, helper, i64, public, rint, select
from .trig import (CF0, CF1, CF1_, CF2, CF2_, CF3, CF3_, CF4_, CF5_, PIO2, PIO2_LO, SF0, SF1, SF2, SF3, SF4, SF5, TWO_OVER_PI,
                   TWO_OVER_PI_F32)


@helper
def gpm_reduce_f32_cw(x: f64) -> tuple[f64, i64]:
    """gpm_reduce_f32 for |x| < 2^24: Cody-Waite (k < 2^25: k * CF1, k * CF2 exact); (0, 0) for larger x."""
    xs = select(fabs(x) < 16777216.0, x, 0.0)
    k = rint(xs * TWO_OVER_PI)
    r1 = xs - k * CF1
    ah, al = gpm_two_sum(r1, -(k * CF2))
    return ah + (al - k * CF3), i64(k) & i64(3)


@helper
def gpm_reduce_f32_ph(x: f64) -> tuple[f64, i64]:
    """gpm_reduce_f32 for 2^24 <= |x| < 2^128, from the table: |x| = m 2^(e-150), m a 24-bit integer."""
    xf = f32(x)
    b = i64(as_u32(xf))
    eb = (b >> i64(23)) & i64(255)
    m = f64((b & i64(0x7FFFFF)) | i64(0x800000))
    idx = select(eb >= i64(151), eb - i64(151), i64(0)) * i64(3)
    c0 = TWO_OVER_PI_F32[idx]
    c1 = TWO_OVER_PI_F32[idx + i64(1)]
    c2 = TWO_OVER_PI_F32[idx + i64(2)]
    p0, e0 = gpm_two_prod(m, c0)
    p0 = p0 - 8.0 * floor(p0 * 0.125)              # exact: multiples of 8 are whole turns
    p1, e1 = gpm_two_prod(m, c1)
    a, bb = gpm_two_sum(e0, p1)
    sh, sl = gpm_two_sum(p0, a)
    sl = sl + (bb + e1 + m * c2)
    n = floor(sh)
    fh, fl = gpm_fast_two_sum(sh - n, sl)
    up = fh > 0.5
    n = select(up, n + 1.0, n)
    fh = select(up, fh - 1.0, fh)
    rh, rl = gpm_dd_mul(fh, fl, PIO2, PIO2_LO)
    neg = x < 0.0
    r_ph = select(neg, -(rh + rl), rh + rl)
    return r_ph, select(neg, i64(4) - (i64(n) & i64(3)), i64(n)) & i64(3)


@helper
def gpm_reduce_f32(x: f64) -> tuple[f64, i64]:
    """x (a float32 value, finite) = n pi/2 + r: (r to about 2^-53 relative, n mod 4)."""
    r_cw, q_cw = gpm_reduce_f32_cw(x)
    r_ph, q_ph = gpm_reduce_f32_ph(x)
    big = fabs(x) >= 16777216.0
    return select(big, r_ph, r_cw), select(big, q_ph, q_cw)


@helper
def gpm_trig_big_f32(x: f32) -> bool:
    """Where the float32 trig paths need the table (gpm_reduce_f32_ph): the twins' rare inputs."""
    return fabs(x) >= f32(16777216.0)


@helper
def gpm_sin_cos_f32k(r: f64) -> tuple[f64, f64]:
    """(sin r, cos r) in double, |r| <= pi/4 + tiny, ~2^-52 relative."""
    z = r * r
    ps = fma(z, SF5, SF4)
    ps = fma(z, ps, SF3)
    ps = fma(z, ps, SF2)
    ps = fma(z, ps, SF1)
    ps = fma(z, ps, SF0)
    pc = fma(z, CF5_, CF4_)
    pc = fma(z, pc, CF3_)
    pc = fma(z, pc, CF2_)
    pc = fma(z, pc, CF1_)
    pc = fma(z, pc, CF0)
    s = fma(r * z, ps, r)
    c = fma(z * z, pc, 1.0 - 0.5 * z)
    return s, c


@helper
def gpm_trig_f32_sanitize(x: f64) -> f64:
    return select((x != x) | (fabs(x) == INF), 0.0, x)


@helper
def gpm_sin_from(x: f64, r: f64, q: i64) -> f64:
    s, c = gpm_sin_cos_f32k(r)
    v = select((q & i64(1)) == i64(0), s, c)
    v = select(q >= i64(2), -v, v)
    return select((x != x) | (x == 0.0), x, select(fabs(x) == INF, NAN, v))


@helper
def gpm_cos_from(x: f64, r: f64, q: i64) -> f64:
    s, c = gpm_sin_cos_f32k(r)
    v = select((q & i64(1)) == i64(0), c, s)
    v = select((q == i64(1)) | (q == i64(2)), -v, v)
    return select(x != x, x, select(fabs(x) == INF, NAN, v))


@helper
def gpm_tan_from(x: f64, r: f64, q: i64) -> f64:
    s, c = gpm_sin_cos_f32k(r)
    even = (q & i64(1)) == i64(0)
    v = select(even, s, -c) / select(even, c, s)   # s / c or -(c / s), one division
    return select((x != x) | (x == 0.0), x, select(fabs(x) == INF, NAN, v))


@public
def gpm_sin_wide(x: f64) -> f64:
    r, q = gpm_reduce_f32(gpm_trig_f32_sanitize(x))
    return gpm_sin_from(x, r, q)


@public
def gpm_cos_wide(x: f64) -> f64:
    r, q = gpm_reduce_f32(gpm_trig_f32_sanitize(x))
    return gpm_cos_from(x, r, q)


@public
def gpm_tan_wide(x: f64) -> f64:
    r, q = gpm_reduce_f32(gpm_trig_f32_sanitize(x))
    return gpm_tan_from(x, r, q)


@helper
def gpm_sin_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_sin_wide(f64(x))))


@helper
def gpm_cos_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_cos_wide(f64(x))))


@helper
def gpm_tan_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_tan_wide(f64(x))))


# the raw paths without the table: equal to the above wherever gpm_trig_big_f32(x) is false
# (gpm_reduce_f32 selects the Cody-Waite reduction there), for the CPU engine's fast twins

@helper
def gpm_sin_cw_f32_raw(x: f32) -> f32:
    r, q = gpm_reduce_f32_cw(gpm_trig_f32_sanitize(f64(x)))
    return select(x != x, x, gpm_to_f32(gpm_sin_from(f64(x), r, q)))


@helper
def gpm_cos_cw_f32_raw(x: f32) -> f32:
    r, q = gpm_reduce_f32_cw(gpm_trig_f32_sanitize(f64(x)))
    return select(x != x, x, gpm_to_f32(gpm_cos_from(f64(x), r, q)))


@helper
def gpm_tan_cw_f32_raw(x: f32) -> f32:
    r, q = gpm_reduce_f32_cw(gpm_trig_f32_sanitize(f64(x)))
    return select(x != x, x, gpm_to_f32(gpm_tan_from(f64(x), r, q)))


