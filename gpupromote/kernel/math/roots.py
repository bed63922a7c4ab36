"""rsqrt and cbrt: a rounded first value, then one correction from the exact residual (a
double-double), so the float64 results are within a hair of correct rounding and the float32
ones are correctly rounded (one rounding of the double-double, by round-to-odd)."""
from __future__ import annotations

from ._core import gpm_to_f32, gpm_dd_to_f32, gpm_fast_two_sum, gpm_pow2i, gpm_round_odd, gpm_two_prod
from ._dsl import INF, NAN, as_f64, as_u64, copysign, f32, f64, fabs, floor, fma, helper, i64, public, select, sqrt, u64

# cbrt(v) ~ G(v) on [1, 8], 2^-10.2 relative (_coefficients.py CBRT_G): Newton's first guess
G0 = 0.5871047907417326
G1 = 0.5253948539203204
G2 = -0.13357728824497445
G3 = 0.023813125551178815
G4 = -0.0022518229969739284
G5 = 8.517344032461257e-05
# v^(-1/3) ~ R(v) on [1, 8], 2^-8.2 relative (_coefficients.py RCBRT_G): the float32 path's first guess
R0 = 1.4249029391057089
R1 = -0.5942968951702433
R2 = 0.20129135001335144
R3 = -0.03772893380211622
R4 = 0.0035719587438909537
R5 = -0.00013329694456805214
THIRD = 0.3333333333333333


@helper
def gpm_rsqrt_dd(x: f64) -> tuple[f64, f64]:
    """1/sqrt(x) as a double-double, x in [2^-1000, 2^1000]."""
    y = 1.0 / sqrt(x)
    p, pe = gpm_two_prod(y, y)
    e = fma(-x, p, 1.0) - x * pe          # 1 - x y^2, about 2^-52
    return gpm_fast_two_sum(y, y * e * 0.5)


@public
def gpm_rsqrt_f64(x: f64) -> f64:
    if x != x:
        return x
    if x < 0.0:
        return NAN
    if x == 0.0:
        return copysign(INF, x)
    if x == INF:
        return 0.0
    small = x < 9.332636185032189e-302        # 2^-1000
    big = x > 1.0715086071862673e+301         # 2^1000
    up = (x * gpm_pow2i(i64(1000))) * gpm_pow2i(i64(200))         # x 2^1200, exact
    down = (x * gpm_pow2i(i64(-1000))) * gpm_pow2i(i64(-200))     # x 2^-1200, exact
    xs = select(small, up, select(big, down, x))
    h, lo = gpm_rsqrt_dd(xs)
    return (h + lo) * select(small, gpm_pow2i(i64(600)), select(big, gpm_pow2i(i64(-600)), 1.0))


@helper
def gpm_rsqrt_special(x: f64, y: f64) -> f64:
    return select(x != x, x, select(x < 0.0, NAN, select(x == 0.0, copysign(INF, x), select(x == INF, 0.0, y))))


@public
def gpm_rsqrt_wide(x: f64) -> f64:
    xs = select((x > 0.0) & (x < INF), x, 1.0)
    h, lo = gpm_rsqrt_dd(xs)
    return gpm_rsqrt_special(x, h)


@helper
def gpm_rsqrt_f32_raw(x: f32) -> f32:
    d = f64(x)
    xs = select((d > 0.0) & (d < INF), d, 1.0)
    h, lo = gpm_rsqrt_dd(xs)
    return select(x != x, x, gpm_to_f32(gpm_rsqrt_special(d, gpm_round_odd(h, lo))))


@helper
def gpm_cbrt_split(a: f64) -> tuple[f64, i64]:
    """(v, e3) with a = v 2^(3 e3), v = m 2^(e mod 3) in [1, 8), for a positive normal a."""
    u = as_u64(a)
    e = i64(u >> u64(52)) - i64(1023)
    m = as_f64((u & u64(0xFFFFFFFFFFFFF)) | u64(0x3FF0000000000000))
    e3 = i64(floor((f64(e) + 0.5) * THIRD))       # floor(e / 3): e + 1/2 is never near a multiple of 3
    return m * gpm_pow2i(e - i64(3) * e3), e3


@helper
def gpm_cube_residual(v: f64, y: f64) -> tuple[f64, f64]:
    """(y^2 rounded, v - y^3) for y near cbrt(v): the residual from y^3 as an exact double-double."""
    y2, y2l = gpm_two_prod(y, y)
    y3, y3l = gpm_two_prod(y2, y)
    y3l = fma(y2l, y, y3l)
    return y2, (v - y3) - y3l


@helper
def gpm_cbrt_core(a: f64) -> tuple[f64, f64, i64]:
    """cbrt(a) = (h + l) 2^e3 for a positive normal: Newton on v = m 2^(e mod 3) in [1, 8),
    then a correction from the exact residual v - y^3."""
    v, e3 = gpm_cbrt_split(a)
    y = fma(v, fma(v, fma(v, fma(v, fma(v, G5, G4), G3), G2), G1), G0)
    y = y - (y * y * y - v) / (3.0 * y * y)
    y = y - (y * y * y - v) / (3.0 * y * y)
    y = y - (y * y * y - v) / (3.0 * y * y)
    y2, r = gpm_cube_residual(v, y)
    h, lo = gpm_fast_two_sum(y, r / (3.0 * y2))
    return h, lo, e3


@public
def gpm_cbrt_f64(x: f64) -> f64:
    # straight-line (vectorizes): NaN, zeros and infinities selected around the core, run on 1.0 for them
    special = (x != x) | (x == 0.0) | (fabs(x) == INF)
    a = select(special, 1.0, fabs(x))
    sub = a < 2.2250738585072014e-308
    h, lo, e3 = gpm_cbrt_core(select(sub, a * 18014398509481984.0, a))     # 2^54
    e3 = e3 - select(sub, i64(18), i64(0))
    return select(special, x, copysign((h + lo) * gpm_pow2i(e3), x))


@public
def gpm_cbrt_wide(x: f64) -> f64:
    special = (x != x) | (x == 0.0) | (fabs(x) == INF)
    h, lo, e3 = gpm_cbrt_core(select(special, 1.0, fabs(x)))
    return select(special, x, copysign((h + lo) * gpm_pow2i(e3), x))


@helper
def gpm_rcbrt_step(v: f64, z: f64) -> f64:
    """One Newton step for z = v^(-1/3), no division: z + z (1 - v z^3) / 3 (relative error e -> 2e^2)."""
    e = fma(-v, z * z * z, 1.0)
    return fma(z * e, THIRD, z)


@helper
def gpm_cbrt_f32_core(a: f64) -> tuple[f64, f64, i64]:
    """gpm_cbrt_core without a division, for a = |x| of a float32 x (a normal double): Newton on the
    reciprocal cube root z of v = m 2^(e mod 3) in [1, 8) (2^-8.2, then three steps: 2^-52), y = v z^2,
    and the correction from the exact residual v - y^3 times z^2 / 3 (1 / (3 y^2))."""
    v, e3 = gpm_cbrt_split(a)
    z = fma(v, fma(v, fma(v, fma(v, fma(v, R5, R4), R3), R2), R1), R0)
    z = gpm_rcbrt_step(v, z)
    z = gpm_rcbrt_step(v, z)
    z = gpm_rcbrt_step(v, z)
    z2 = z * z
    y = v * z2
    _, r = gpm_cube_residual(v, y)
    h, lo = gpm_fast_two_sum(y, r * z2 * THIRD)
    return h, lo, e3


@helper
def gpm_cbrt_f32_raw(x: f32) -> f32:
    d = f64(x)
    special = (d != d) | (d == 0.0) | (fabs(d) == INF)
    h, lo, e3 = gpm_cbrt_f32_core(select(special, 1.0, fabs(d)))
    y = copysign(gpm_round_odd(h, lo) * gpm_pow2i(e3), d)
    return select(special, x, f32(y))


_ = gpm_dd_to_f32
