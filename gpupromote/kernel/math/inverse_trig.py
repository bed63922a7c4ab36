"""arcsin, arccos, arctan, arctan2.

float64: polynomials on |x| <= 1/2 (asin, in x^2) and |t| <= tan(pi/8) (atan, in t^2), reached by
asin(x) = pi/2 - 2 asin(sqrt((1-x)/2)) and atan(x) = pi/4 + atan((x-1)/(x+1)) or pi/2 - atan(1/x),
every step a double-double, one rounding at the end. arctan2 divides the smaller by the larger
(a double-double quotient, after scaling both to near 1), then places the angle in its quadrant.
float32: the same reductions in plain double, selected without branches.
"""
from __future__ import annotations

from ._core import gpm_to_f32, gpm_dd_add, gpm_dd_add_d, gpm_dd_div, gpm_dd_sqrt, gpm_fast_two_sum, gpm_scale2
from ._dsl import INF, NAN, as_u64, copysign, f32, f64, fabs, fma, helper, i64, public, select, sqrt, u64

PIO2 = 1.5707963267948966
PIO2_LO = 6.123233995736766e-17
PIO4 = 0.7853981633974483
PIO4_LO = 3.061616997868383e-17
PI = 3.141592653589793
PI_LO = 1.2246467991473532e-16
PI3O4 = 2.356194490192345
TAN_PI8 = 0.41421356237309503
TAN_3PI8 = 2.414213562373095

# atan(t) = t + t^3 AT(t^2), |t| <= tan(pi/8) (ATAN_T_F64: 2^-65.5 relative; ATAN_T_F32: 2^-54.6)
AT = (-0.3333333333333333, 0.19999999999999404, -0.1428571428564078, 0.11111111106284914, -0.09090908896969598,
      0.07692302545580382, -0.06666572350738359, 0.058811285093668335, -0.05251763513001982, 0.04685908091802738,
      -0.03988972517341495, 0.028313515210462662, -0.0118495511416731)
ATF = (-0.3333333333333019, 0.19999999999091927, -0.14285714195209517, 0.1111110664352729, -0.0909078204977421,
       0.07690061874349882, -0.06641056796021517, 0.05692167506540932, -0.043579436595351614, 0.021244972144714075)
# asin(x) = x + x^3 AS(x^2), |x| <= 1/2 (ASIN_A_F64: 2^-65.5 relative; ASIN_A_F32: 2^-51.8)
AS = (0.16666666666666669, 0.07499999999999428, 0.04464285714353304, 0.03038194440197488, 0.022372160727791208,
      0.017352722546714144, 0.013965589705038056, 0.011542273238413605, 0.009850299161162123, 0.007785350314609451,
      0.010320094985025287, -0.004242294069041342, 0.031825173623994604, -0.03507418110410239, 0.03664890776113347)
ASF = (0.16666666666683916, 0.07499999996125589, 0.04464286018646564, 0.03038182511788233, 0.022374871583104937,
       0.01731416870640095, 0.014321846773832402, 0.0093837866375698, 0.018244576811677522, -0.011687692870727562,
       0.031509155046071165)


@helper
def gpm_atan_poly(z: f64) -> f64:
    p = fma(z, AT[12], AT[11])
    p = fma(z, p, AT[10])
    p = fma(z, p, AT[9])
    p = fma(z, p, AT[8])
    p = fma(z, p, AT[7])
    p = fma(z, p, AT[6])
    p = fma(z, p, AT[5])
    p = fma(z, p, AT[4])
    p = fma(z, p, AT[3])
    p = fma(z, p, AT[2])
    p = fma(z, p, AT[1])
    return fma(z, p, AT[0])


@helper
def gpm_atan_small_dd(th: f64, tl: f64) -> tuple[f64, f64]:
    """atan(th + tl) for |th| <= tan(pi/8) (plus rounding), as a double-double."""
    z = th * th
    return gpm_fast_two_sum(th, tl / (1.0 + z) + th * z * gpm_atan_poly(z))


@helper
def gpm_atan_pos_dd(xh: f64, xl: f64) -> tuple[f64, f64]:
    """atan(xh + xl) for 0 <= xh < inf, as a double-double: atan itself up to tan(pi/8), pi/4 +
    atan((x - 1) / (x + 1)) up to tan(3pi/8), pi/2 - atan(1 / x) above. Straight-line: the argument
    and the constant of the interval selected, each interval's own operations on them."""
    small = xh <= TAN_PI8
    inv = xh >= TAN_3PI8
    nh, nl = gpm_dd_add_d(xh, xl, -1.0)
    dh, dl = gpm_dd_add_d(xh, xl, 1.0)
    th, tl = gpm_dd_div(select(inv, 1.0, nh), select(inv, 0.0, nl), select(inv, xh, dh), select(inv, xl, dl))
    ah, al = gpm_atan_small_dd(select(small, xh, th), select(small, xl, tl))
    bh, bl = gpm_dd_add(select(inv, PIO2, PIO4), select(inv, PIO2_LO, PIO4_LO), select(inv, -ah, ah), select(inv, -al, al))
    return select(small, ah, bh), select(small, al, bl)


@public
def gpm_arctan_f64(x: f64) -> f64:
    # straight-line (vectorizes): below 2^-27 x - x^3/3 rounds to x, above 2^60 pi/2 - 1/x to pi/2
    a = fabs(x)
    h, lo = gpm_atan_pos_dd(select((a >= 7.450580596923828e-09) & (a <= 1.152921504606847e+18), a, 1.0), 0.0)
    return select((x != x) | (a < 7.450580596923828e-09), x,
                  select(a > 1.152921504606847e+18, copysign(PIO2, x), copysign(h + lo, x)))


@helper
def gpm_atan_wide_core(a: f64) -> f64:
    """atan(a) for a >= 0 (inf included), plain double, ~2^-52 relative, branch-free."""
    inv = a > TAN_3PI8
    mid = (a > TAN_PI8) & (a <= TAN_3PI8)
    # -(1 / a) or (a - 1) / (a + 1) as one division (RN is symmetric: -(1 / a) = -1 / a)
    t = select(inv | mid, select(inv, -1.0, a - 1.0) / select(inv, a, a + 1.0), a)
    base = select(inv, PIO2, select(mid, PIO4, 0.0))
    z = t * t
    p = fma(z, ATF[9], ATF[8])
    p = fma(z, p, ATF[7])
    p = fma(z, p, ATF[6])
    p = fma(z, p, ATF[5])
    p = fma(z, p, ATF[4])
    p = fma(z, p, ATF[3])
    p = fma(z, p, ATF[2])
    p = fma(z, p, ATF[1])
    p = fma(z, p, ATF[0])
    return base + fma(t * z, p, t)


@public
def gpm_arctan_wide(x: f64) -> f64:
    a = select(x != x, 0.0, fabs(x))
    return select(x != x, x, copysign(gpm_atan_wide_core(a), x))


@helper
def gpm_arctan_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_arctan_wide(f64(x))))


# --------------------------------------------------------------------------------------------
# arcsin, arccos

@helper
def gpm_asin_poly(z: f64) -> f64:
    p = fma(z, AS[14], AS[13])
    p = fma(z, p, AS[12])
    p = fma(z, p, AS[11])
    p = fma(z, p, AS[10])
    p = fma(z, p, AS[9])
    p = fma(z, p, AS[8])
    p = fma(z, p, AS[7])
    p = fma(z, p, AS[6])
    p = fma(z, p, AS[5])
    p = fma(z, p, AS[4])
    p = fma(z, p, AS[3])
    p = fma(z, p, AS[2])
    p = fma(z, p, AS[1])
    return fma(z, p, AS[0])


@helper
def gpm_asin_half_dd(a: f64) -> tuple[f64, f64]:
    """asin(s) with s = sqrt((1 - a)/2), for 1/2 < a <= 1, as a double-double."""
    z = (1.0 - a) * 0.5                    # exact
    sh, sl = gpm_dd_sqrt(z, 0.0)
    return gpm_fast_two_sum(sh, sl + sh * z * gpm_asin_poly(z))


@public
def gpm_arcsin_f64(x: f64) -> f64:
    # straight-line (vectorizes): both intervals' evaluations, of selected operands, the one of x's
    # interval selected; NaN, |x| > 1 and |x| < 2^-27 (where asin rounds to x) around them
    a = fabs(x)
    xs = select(a <= 0.5, x, 0.25)
    z = xs * xs
    sh, sl = gpm_fast_two_sum(xs, xs * z * gpm_asin_poly(z))
    bh, bl = gpm_asin_half_dd(select((a > 0.5) & (a <= 1.0), a, 0.75))
    h, lo = gpm_dd_add(PIO2, PIO2_LO, -2.0 * bh, -2.0 * bl)
    v = select(a <= 0.5, sh + sl, copysign(h + lo, x))
    return select((x != x) | (a < 7.450580596923828e-09), x, select(a > 1.0, NAN, v))


@public
def gpm_arccos_f64(x: f64) -> f64:
    # straight-line (vectorizes), as gpm_arcsin_f64: pi/2 - asin(x) up to 1/2, 2 asin(sqrt((1 - |x|) / 2))
    # above (pi minus it for x < 0)
    a = fabs(x)
    xs = select(a <= 0.5, x, 0.25)
    z = xs * xs
    sh, sl = gpm_fast_two_sum(xs, xs * z * gpm_asin_poly(z))
    h, lo = gpm_dd_add(PIO2, PIO2_LO, -sh, -sl)
    bh, bl = gpm_asin_half_dd(select((a > 0.5) & (a <= 1.0), a, 0.75))
    ph, pl = gpm_dd_add(PI, PI_LO, -2.0 * bh, -2.0 * bl)
    v = select(a <= 0.5, h + lo, select(x > 0.0, 2.0 * bh + 2.0 * bl, ph + pl))
    return select(x != x, x, select(a > 1.0, NAN, v))


@helper
def gpm_asin_wide_core(x: f64) -> tuple[f64, bool]:
    """(w, big): asin(|x|) = w when not big, pi/2 - 2w when big (|x| > 1/2); |x| <= 1."""
    a = fabs(x)
    big = a > 0.5
    z = select(big, (1.0 - a) * 0.5, a * a)
    s = select(big, sqrt(z), a)
    p = fma(z, ASF[10], ASF[9])
    p = fma(z, p, ASF[8])
    p = fma(z, p, ASF[7])
    p = fma(z, p, ASF[6])
    p = fma(z, p, ASF[5])
    p = fma(z, p, ASF[4])
    p = fma(z, p, ASF[3])
    p = fma(z, p, ASF[2])
    p = fma(z, p, ASF[1])
    p = fma(z, p, ASF[0])
    return fma(s * z, p, s), big


@public
def gpm_arcsin_wide(x: f64) -> f64:
    ok = fabs(x) <= 1.0
    w, big = gpm_asin_wide_core(select(ok, x, 0.0))
    y = copysign(select(big, PIO2 - 2.0 * w, w), x)
    return select(x != x, x, select(ok, y, NAN))


@public
def gpm_arccos_wide(x: f64) -> f64:
    ok = fabs(x) <= 1.0
    w, big = gpm_asin_wide_core(select(ok, x, 0.0))
    y = select(big, select(x > 0.0, 2.0 * w, PI - 2.0 * w), PIO2 - copysign(w, x))
    return select(x != x, x, select(ok, y, NAN))


@helper
def gpm_arcsin_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_arcsin_wide(f64(x))))


@helper
def gpm_arccos_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_arccos_wide(f64(x))))


# --------------------------------------------------------------------------------------------
# arctan2

@helper
def gpm_signbit(x: f64) -> bool:
    return (as_u64(x) >> u64(63)) == u64(1)


@public
def gpm_arctan2_f64(y: f64, x: f64) -> f64:
    # straight-line (vectorizes): the core on (|x|, |y|) within 2^60 of each other, both nonzero
    # and finite ((1, 1) otherwise), then the other cases selected over it, the first ones last
    ax = fabs(x)
    ay = fabs(y)
    xneg = gpm_signbit(x)
    big = ay * 8.673617379884035e-19 > ax       # ay > 2^60 ax: pi/2 (+ or -) a tiny angle rounds to pi/2
    small = ax * 8.673617379884035e-19 > ay     # ay < 2^-60 ax
    ok = (ax > 0.0) & (ay > 0.0) & (ax < INF) & (ay < INF) & (not big) & (not small)
    ax1 = select(ok, ax, 1.0)
    ay1 = select(ok, ay, 1.0)
    # scale both near 1 (exact: within 2^60 of each other)
    m = select(ax1 > ay1, ax1, ay1)
    e = i64(as_u64(m) >> u64(52)) - i64(1023)
    e = select(e == i64(-1023), i64(-1074), e)   # a subnormal larger one: scale up generously
    sx = gpm_scale2(ax1, -e)
    sy = gpm_scale2(ay1, -e)
    swap = sy > sx
    num = select(swap, sx, sy)
    den = select(swap, sy, sx)
    qh = num / den
    ql = fma(-qh, den, num) / den
    ah, al = gpm_atan_pos_dd(qh, ql)
    bh, bl = gpm_dd_add(PIO2, PIO2_LO, -ah, -al)
    ah = select(swap, bh, ah)
    al = select(swap, bl, al)
    ch, cl = gpm_dd_add(PI, PI_LO, -ah, -al)
    ah = select(xneg, ch, ah)
    al = select(xneg, cl, al)
    r = copysign(ah + al, y)
    r = select(small, select(xneg, copysign(PI, y), copysign(ay / ax, y)), r)   # atan(t) = t, rounded once
    r = select(big, copysign(PIO2, y), r)
    r = select(ax == 0.0, copysign(PIO2, y), r)
    r = select(ay == 0.0, copysign(select(xneg, PI, 0.0), y), r)
    r = select(ax == INF, copysign(select(xneg, PI, 0.0), y), r)
    r = select(ay == INF, select(ax == INF, copysign(select(xneg, PI3O4, PIO4), y), copysign(PIO2, y)), r)
    return select(y != y, y, select(x != x, x, r))


@public
def gpm_arctan2_wide(y: f64, x: f64) -> f64:
    ax = fabs(x)
    ay = fabs(y)
    xneg = gpm_signbit(x)
    swap = ay > ax
    num = select(swap, ax, ay)
    den = select(swap, ay, ax)
    ok = (den > 0.0) & (den < INF)
    q = select(ok, num / select(ok, den, 1.0), 0.0)
    a = gpm_atan_wide_core(q)
    a = select(swap, PIO2 - a, a)
    a = select(xneg, PI - a, a)
    # zeros and infinities
    a = select(ay == 0.0, select(xneg, PI, 0.0), a)
    a = select((ax == 0.0) & (ay != 0.0), PIO2, a)
    a = select(ay == INF, select(ax == INF, select(xneg, PI3O4, PIO4), PIO2), a)
    a = select((ax == INF) & (ay != INF), select(xneg, PI, 0.0), a)
    return select(y != y, y, select(x != x, x, copysign(a, y)))


@public
def gpm_arctan2_f32(y: f32, x: f32) -> f32:
    r = gpm_to_f32(gpm_arctan2_wide(f64(y), f64(x)))
    return select(y != y, y, select(x != x, x, r))
