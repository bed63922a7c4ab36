"""exp, expm1, exp2, log, log1p, log2, log10 (and the kernels other functions share).

float64: reduce, evaluate a polynomial as a double-double where the rounding of the last
additions matters, and round once. float32 (and the narrow formats through ``_wide``): the same
in plain double with ~2^-50 relative error, branch-free, then one rounding.
"""
from __future__ import annotations

from ._core import (gpm_dd_add, gpm_fast_two_sum, gpm_max_f32, gpm_min_f32, gpm_pow2i, gpm_scale2, gpm_scale2_dd,
                    gpm_two_prod, gpm_two_sum)
from ._dsl import INF, Table, as_f64, as_u64, f32, f64, fabs, fma, helper, i64, public, rint, select, u64

# ln 2 = LN2_HI + LN2_LO (+ 2^-102): LN2_HI has 40 bits, so k * LN2_HI is exact for |k| < 2^13
LN2_HI = 0.6931471805592082
LN2_LO = 7.371002565167799e-13
LN2 = 0.6931471805599453           # RN(ln 2)
LN2_R = 2.3190468138462996e-17     # ln 2 - LN2
INV_LN2 = 1.4426950408889634
INV_LN2_LO = 2.0355273740931033e-17
INV_LN10 = 0.4342944819032518
INV_LN10_LO = 1.098319650216765e-17
LOG10_2_HI = 0.30102999566361177   # 40 bits
LOG10_2_LO = 3.694239077158931e-13
LN10 = 2.302585092994046
LN10_LO = -2.1707562233822494e-16
SQRT_HALF_BITS = 0x3fe6a09e667f3bcd  # the double just above sqrt(1/2)
SHIFT = 6755399441055744.0           # 1.5 * 2^52: x + SHIFT rounds x to an integer (|x| < 2^51)

# exp(r) = 1 + r + r^2/2 + r^3 * P(r) on |r| <= ln2/2 (_coefficients.py EXP_P_F64: 2^-63.9)
EP0 = 0.16666666666666682
EP1 = 0.041666666666666685
EP2 = 0.008333333333317592
EP3 = 0.0013888888888873316
EP4 = 0.00019841269895322846
EP5 = 2.4801587349077434e-05
EP6 = 2.7557235712254605e-06
EP7 = 2.755725197157587e-07
EP8 = 2.5111791508596463e-08
EP9 = 2.092171054185496e-09
# float32 paths (EXP_P_F32: 2^-51.6)
EF0 = 0.16666666666610855
EF1 = 0.04166666666660023
EF2 = 0.008333333371225124
EF3 = 0.0013888888928199718
EF4 = 0.00019841184727165082
EF5 = 2.4801507018475895e-05
EF6 = 2.7635211297305225e-06
EF7 = 2.7625816791379294e-07
# log1p(f) = 2s + s R(s^2), s = f/(2+f) (LOG_R_F64: 2^-66.9 relative to 2s)
LR1 = 0.6666666666666666
LR2 = 0.40000000000003133
LR3 = 0.2857142857044587
LR4 = 0.2222222237783706
LR5 = 0.1818180422245913
LR6 = 0.15385352382370077
LR7 = 0.1331090208569073
LR8 = 0.12115931580386531
LR9 = 0.08780132217746177
# (LOG_R_F32: 2^-52.2)
LF1 = 0.6666666666658699
LF2 = 0.40000000052369794
LF3 = 0.2857141711430515
LF4 = 0.2222337282542431
LF5 = 0.18123603620285167
LF6 = 0.1682031831941998


# the accurate exp (pow, logaddexp): exp(x) = 2^k 2^(j/64) exp(r), |r| <= ln2/128
LN2_64 = (0.010830424695996044, 2.5310172166650877e-13, -2.0507341277789462e-29)   # 35 bits, a double, a double
EXP2_J_HI = Table("f64", (
    1.0, 1.0108892860517005, 1.0218971486541166, 1.0330248790212284, 1.0442737824274138, 1.0556451783605572,
    1.0671404006768237, 1.0787607977571199, 1.0905077326652577, 1.102382583307841, 1.1143867425958924,
    1.1265216186082418, 1.1387886347566916, 1.1511892299529827, 1.1637248587775775, 1.1763969916502812,
    1.189207115002721, 1.202156731452703, 1.215247359980469, 1.22848053610687, 1.241857812073484, 1.255380757024691,
    1.2690509571917332, 1.2828700160787783, 1.2968395546510096, 1.3109612115247644, 1.3252366431597413,
    1.339667524053303, 1.3542555469368927, 1.3690024229745905, 1.383909881963832, 1.3989796725383112,
    1.4142135623730951, 1.42961333839197, 1.4451808069770467, 1.460917794180647, 1.4768261459394993,
    1.4929077282912648, 1.5091644275934228, 1.5255981507445384, 1.5422108254079407, 1.559004400237837,
    1.5759808451078865, 1.593142151342267, 1.6104903319492543, 1.6280274218573478, 1.645755478153965,
    1.6636765803267364, 1.681792830507429, 1.7001063537185235, 1.718619298122478, 1.7373338352737062,
    1.7562521603732995, 1.7753764925265212, 1.7947090750031072, 1.8142521755003989, 1.8340080864093424,
    1.8539791250833855, 1.8741676341103, 1.8945759815869656, 1.9152065613971474, 1.9360617934922943,
    1.9571441241754002, 1.978456026387951))
EXP2_J_LO = Table("f64", (
    0.0, -1.5234778603368577e-17, 5.109225028973444e-17, 7.600838874027088e-18, 8.551889705537965e-17,
    1.759325738772092e-18, -7.899853966841582e-17, -6.656660436056593e-17, -3.046782079812471e-17,
    5.2660368715706944e-17, 1.0410278456845571e-16, 5.165856758795457e-17, 8.912812676025408e-17,
    3.250710218863827e-17, 3.8292048369240935e-17, 5.554203254218079e-17, 3.982015231465646e-17,
    6.644981499252301e-17, -7.712630692681488e-17, -1.89878163130253e-17, 4.658027591836937e-17,
    -6.7113898212968784e-18, 2.667932131342186e-18, 1.713594918243561e-17, 2.5382502794888315e-17,
    -7.181536135519454e-17, -2.8587312100388614e-17, 8.927282594831732e-17, 7.70094837980299e-17,
    9.593797919118849e-17, -6.770511658794786e-17, -9.614213209051323e-17, -9.667293313452913e-17,
    -1.2031642489053655e-17, -3.0237581349939873e-17, -5.600377186075216e-17, -3.483994556892796e-17,
    1.4192920154284036e-17, -1.016455327754295e-16, -1.1024941712342561e-16, 7.949834809697621e-17,
    3.7812070533575275e-17, -1.0136916471278304e-17, -1.0094406542311964e-16, 2.4707192569797888e-17,
    -6.712955084707084e-17, -1.0125679913674773e-16, 5.8909926967131e-17, 8.199010020581497e-17,
    -8.0237193703977e-18, -1.851380418263111e-17, 3.164389299292957e-17, 2.960140695448873e-17,
    6.429731796556572e-17, 1.8227458427912087e-17, -9.969531538920349e-17, 3.283107224245627e-17,
    9.761887490727594e-17, -6.122763413004143e-17, 3.4034035352165297e-17, -1.0619946056195963e-16,
    1.0332385960676326e-16, 8.960767791036668e-17, 4.0388753109278167e-17))
# exp(r) - 1 = r + r^2/2 + r^3 EA(r), Taylor (|r| <= 0.0055: the r^8 term is below 2^-80)
EA = (0.16666666666666666, 0.041666666666666664, 0.008333333333333333, 0.001388888888888889, 0.0001984126984126984)


# --------------------------------------------------------------------------------------------
# exp

@helper
def gpm_exp_poly(r: f64) -> f64:
    """P(r) with exp(r) = 1 + r + r^2/2 + r^3 P(r), |r| <= 0.35."""
    p = fma(r, EP9, EP8)
    p = fma(r, p, EP7)
    p = fma(r, p, EP6)
    p = fma(r, p, EP5)
    p = fma(r, p, EP4)
    p = fma(r, p, EP3)
    p = fma(r, p, EP2)
    p = fma(r, p, EP1)
    return fma(r, p, EP0)


@helper
def gpm_expm1_r(rh: f64, rl: f64) -> tuple[f64, f64]:
    """exp(r) - 1 as a double-double for r = rh + rl, |rh| <= 0.35, |rl| <= 2^-40 |rh|:
    rh + rh^2/2 + rh^3 P(rh) + rl exp(rh), relative error about 2^-58."""
    sh, sl = gpm_two_prod(rh, rh)
    sh = sh * 0.5
    sl = sl * 0.5
    a, b = gpm_two_sum(rh, sh)
    tail = rh * (rh * rh) * gpm_exp_poly(rh)
    # exp(rh + rl) - 1 = expm1(rh) + rl exp(rh)
    return gpm_fast_two_sum(a, b + sl + tail + rl * (1.0 + (a + tail)))


@helper
def gpm_exp_reduce(xh: f64, xl: f64) -> tuple[f64, f64, i64]:
    """xh + xl = k ln2 + (rh + rl), |rh| <= 0.35 (plus rounding), for |xh| <= 2^12."""
    kf = rint(xh * INV_LN2)
    r0 = xh - kf * LN2_HI                       # exact (Sterbenz; kf * LN2_HI is exact)
    th, tl = gpm_two_prod(kf, LN2_LO)
    rh, rl = gpm_two_sum(r0, -th)
    return rh, (rl - tl) + xl, i64(kf)


@helper
def gpm_exp_kernel(xh: f64, xl: f64) -> tuple[f64, f64, i64]:
    """exp(xh + xl) = 2^k * (h + l), h + l in [0.7, 1.42] with relative error about 2^-62;
    |xh| <= 2^12, |xl| <= 2^-40 |xh| or so."""
    rh, rl, k = gpm_exp_reduce(xh, xl)
    qh, ql = gpm_expm1_r(rh, rl)
    h, lo = gpm_fast_two_sum(1.0, qh)
    return h, lo + ql, k


@helper
def gpm_expm1_dd(x: f64) -> tuple[f64, f64]:
    """exp(x) - 1 as a double-double for |x| <= 36, relative error about 2^-60."""
    rh, rl, k = gpm_exp_reduce(x, 0.0)
    qh, ql = gpm_expm1_r(rh, rl)
    p = gpm_pow2i(k)
    # 2^k (1 + q) - 1 = (2^k - 1) + 2^k q; 2^k - 1 is exact for |k| <= 53
    return gpm_dd_add(p - 1.0, 0.0, qh * p, ql * p)


@helper
def gpm_exp_rare_f64(x: f64) -> bool:
    """Where gpm_exp_fast_f64 is not gpm_exp_f64: 708 < |x| <= 746 (subnormal results, the overflow edge)."""
    return (fabs(x) > 708.0) & (fabs(x) <= 746.0)


@helper
def gpm_exp_core_f64(x: f64) -> f64:
    """gpm_exp_f64 for |x| <= 708 (the core of gpm_exp_fast_f64): k = rint(x / ln 2) >= -1021 there,
    so gpm_scale2_dd's normal branch, gpm_scale2(h + lo, k), is the one taken."""
    h, lo, k = gpm_exp_kernel(x, 0.0)
    return gpm_scale2(h + lo, k)


@helper
def gpm_exp_fast_f64(x: f64) -> f64:
    """gpm_exp_f64 wherever gpm_exp_rare_f64 is false, straight-line (the fast twin): the
    special values selected around the core."""
    y = gpm_exp_core_f64(select(fabs(x) <= 708.0, x, 0.0))
    return select(x != x, x, select(x > 710.0, INF, select(x < -746.0, 0.0, y)))


@public
def gpm_exp_f64(x: f64) -> f64:
    if x != x:
        return x
    if x > 710.0:
        return INF
    if x < -746.0:
        return 0.0
    h, lo, k = gpm_exp_kernel(x, 0.0)
    return gpm_scale2_dd(h, lo, k)


@helper
def gpm_exp_wide_core(x: f64) -> f64:
    """exp(x) to about 2^-50 relative for |x| <= 300 (no special values)."""
    # t - SHIFT is the integer nearest x / ln2 (the one-rounded sum lands on an integer), and t's
    # low bits hold it: 2^k is added to e's exponent field, no conversion, no multiply
    t = fma(x, INV_LN2, SHIFT)
    kf = t - SHIFT
    r = fma(-kf, LN2, x)
    r = fma(-kf, LN2_R, r)
    p = fma(r, EF7, EF6)
    p = fma(r, p, EF5)
    p = fma(r, p, EF4)
    p = fma(r, p, EF3)
    p = fma(r, p, EF2)
    p = fma(r, p, EF1)
    p = fma(r, p, EF0)
    p = fma(r, p, 0.5)
    # 1 + r (1 + r p): Horner to the end, no r^2 (one rounding more than 1 + (r + r^2 p), 2^-54 of it)
    e = fma(r, fma(r, p, 1.0), 1.0)
    # e * 2^k exactly (e near 1, the result a normal double for |k| <= 433), as an integer add
    return as_f64(as_u64(e) + (as_u64(t) << u64(52)))


@public
def gpm_exp_wide(x: f64) -> f64:
    """exp in double for narrow inputs (float32 range), before the one rounding."""
    xc = select(x > 200.0, 200.0, select(x < -200.0, -200.0, select(x != x, 0.0, x)))
    y = gpm_exp_wide_core(xc)
    return select(x != x, x, select(x > 200.0, INF, select(x < -200.0, 0.0, y)))


@helper
def gpm_exp_f32_raw(x: f32) -> f32:
    # Note: not through gpm_exp_wide: the clamp to +-200 alone gives float32's inf and +0 beyond it
    # (exp(200) overflows binary32, exp(-200) is below half its least subnormal), and the input's
    # NaN is the one NaN, so the selects on the double result go (a fifth of the vector loop's work)
    # the clamp in float32, as a min and a max (a NaN becomes 200 there and is put back at the end)
    xc = gpm_max_f32(gpm_min_f32(x, f32(200.0)), f32(-200.0))
    return select(x != x, x, f32(gpm_exp_wide_core(f64(xc))))


# --------------------------------------------------------------------------------------------
# expm1

@helper
def gpm_expm1_rare_f64(x: f64) -> bool:
    """Where gpm_expm1_fast_f64 is not gpm_expm1_f64: 36 < |x|, x <= 710, x >= -38 (2^k - 1 not a
    double, or 2^k above 2^52)."""
    return (fabs(x) > 36.0) & (x <= 710.0) & (x >= -38.0)


@helper
def gpm_expm1_fast_f64(x: f64) -> f64:
    """gpm_expm1_f64 wherever gpm_expm1_rare_f64 is false, straight-line (the fast twin): for |x| <= 36
    k is in [-52, 52], so 2^k - 1 is a double; the special values selected around it."""
    rh, rl, k = gpm_exp_reduce(select(fabs(x) <= 36.0, x, 0.0), 0.0)
    qh, ql = gpm_expm1_r(rh, rl)
    p = gpm_pow2i(k)
    h, lo = gpm_dd_add(p - 1.0, 0.0, qh * p, ql * p)
    y = select(k == i64(0), qh + ql, h + lo)
    y = select(fabs(x) < 5.551115123125783e-17, x, y)     # 2^-54: x + x^2/2 rounds to x
    return select(x != x, x, select(x > 710.0, INF, select(x < -38.0, -1.0, y)))


@public
def gpm_expm1_f64(x: f64) -> f64:
    if x != x:
        return x
    if x > 710.0:
        return INF
    if x < -38.0:
        return -1.0
    if fabs(x) < 5.551115123125783e-17:     # 2^-54: x + x^2/2 rounds to x
        return x
    rh, rl, k = gpm_exp_reduce(x, 0.0)
    qh, ql = gpm_expm1_r(rh, rl)
    if k == i64(0):
        return qh + ql
    if k < i64(-52):                       # 2^k - 1 is not a double: keep -1 and 2^k apart
        p = gpm_pow2i(k)
        h, lo = gpm_dd_add(-1.0, p, qh * p, ql * p)
        return h + lo
    if k <= i64(52):
        p = gpm_pow2i(k)
        h, lo = gpm_dd_add(p - 1.0, 0.0, qh * p, ql * p)
        return h + lo
    # 2^k (1 + q) - 1 = 2^k (1 + q - 2^-k), the last term below 2^-53
    h, lo = gpm_dd_add(1.0, -gpm_pow2i(-select(k > i64(1000), i64(1000), k)), qh, ql)
    return gpm_scale2(h + lo, k)


@helper
def gpm_expm1_wide_core(x: f64) -> f64:
    """exp(x) - 1 to about 2^-50 relative for -60 <= x <= 300 (no special values), branch-free."""
    # k and 2^k from the shifter, as gpm_exp_wide_core: t's low bits hold k
    t = fma(x, INV_LN2, SHIFT)
    kf = t - SHIFT
    r = fma(-kf, LN2, x)
    r = fma(-kf, LN2_R, r)
    r2 = r * r
    p = fma(r, EF7, EF6)
    p = fma(r, p, EF5)
    p = fma(r, p, EF4)
    p = fma(r, p, EF3)
    p = fma(r, p, EF2)
    p = fma(r, p, EF1)
    p = fma(r, p, EF0)
    p = fma(r, p, 0.5)
    q = fma(r2, p, r)
    s = as_f64((as_u64(t) << u64(52)) + u64(0x3FF0000000000000))
    return fma(s, q, s - 1.0)


@public
def gpm_expm1_wide(x: f64) -> f64:
    xc = select(x > 200.0, 200.0, select(x < -50.0, -50.0, select(x != x, 0.0, x)))
    y = gpm_expm1_wide_core(xc)
    return select((x != x) | (x == 0.0), x, select(x > 200.0, INF, select(x < -50.0, -1.0, y)))


@helper
def gpm_expm1_f32_raw(x: f32) -> f32:
    # as gpm_expm1_wide, with the clamp in float32 (a min and a max): expm1(200) rounds to
    # float32's inf and expm1(-50) to -1, so the clamp alone gives the results beyond it; a NaN
    # becomes 200 there and is put back, as the zeros are (the core loses -0.0's sign)
    xc = gpm_max_f32(gpm_min_f32(x, f32(200.0)), f32(-50.0))
    return select((x != x) | (x == f32(0.0)), x, f32(gpm_expm1_wide_core(f64(xc))))


# --------------------------------------------------------------------------------------------
# exp2

@helper
def gpm_exp2_rare_f64(x: f64) -> bool:
    """Where gpm_exp2_fast_f64 is not gpm_exp2_f64: 1020 < |x| <= 1080 (subnormal results, the overflow edge)."""
    return (fabs(x) > 1020.0) & (fabs(x) <= 1080.0)


@helper
def gpm_exp2_core_f64(x: f64) -> f64:
    """gpm_exp2_f64 for |x| <= 1020 (the core of gpm_exp2_fast_f64): kf >= -1020 there, so
    gpm_scale2_dd's normal branch is the one taken."""
    kf = rint(x)
    r = x - kf                                  # exact, |r| <= 1/2
    th, tl = gpm_two_prod(r, LN2)
    tl = fma(r, LN2_R, tl)
    qh, ql = gpm_expm1_r(th, tl)
    h, lo = gpm_fast_two_sum(1.0, qh)
    return gpm_scale2(h + (lo + ql), i64(kf))


@helper
def gpm_exp2_fast_f64(x: f64) -> f64:
    """gpm_exp2_f64 wherever gpm_exp2_rare_f64 is false, straight-line (the fast twin): the
    special values selected around the core."""
    y = gpm_exp2_core_f64(select(fabs(x) <= 1020.0, x, 0.0))
    return select(x != x, x, select(x > 1025.0, INF, select(x < -1080.0, 0.0, y)))


@public
def gpm_exp2_f64(x: f64) -> f64:
    if x != x:
        return x
    if x > 1025.0:
        return INF
    if x < -1080.0:
        return 0.0
    kf = rint(x)
    r = x - kf                                  # exact, |r| <= 1/2
    th, tl = gpm_two_prod(r, LN2)
    tl = fma(r, LN2_R, tl)
    qh, ql = gpm_expm1_r(th, tl)
    h, lo = gpm_fast_two_sum(1.0, qh)
    return gpm_scale2_dd(h, lo + ql, i64(kf))


@public
def gpm_exp2_wide(x: f64) -> f64:
    xc = select(x > 300.0, 300.0, select(x < -300.0, -300.0, select(x != x, 0.0, x)))
    y = gpm_exp2_wide_core(xc)
    return select(x != x, x, select(x > 300.0, INF, select(x < -300.0, 0.0, y)))


@helper
def gpm_exp2_wide_core(xc: f64) -> f64:
    """2^xc to about 2^-50 relative for |xc| <= 300 (no special values): the shifter and the
    exponent-field add of gpm_exp_wide_core."""
    t = xc + SHIFT
    kf = t - SHIFT
    r = (xc - kf) * LN2
    r2 = r * r
    p = fma(r, EF7, EF6)
    p = fma(r, p, EF5)
    p = fma(r, p, EF4)
    p = fma(r, p, EF3)
    p = fma(r, p, EF2)
    p = fma(r, p, EF1)
    p = fma(r, p, EF0)
    p = fma(r, p, 0.5)
    e = 1.0 + fma(r2, p, r)
    return as_f64(as_u64(e) + (as_u64(t) << u64(52)))


@helper
def gpm_exp2_f32_raw(x: f32) -> f32:
    # the clamp in float32 (2^300 and 2^-300 round to float32's inf and +0): see gpm_exp_f32_raw
    xc = gpm_max_f32(gpm_min_f32(x, f32(300.0)), f32(-300.0))
    return select(x != x, x, f32(gpm_exp2_wide_core(f64(xc))))


# --------------------------------------------------------------------------------------------
# the accurate exp (pow.py, logaddexp, complex)

@helper
def gpm_exp_acc(xh: f64, xl: f64) -> tuple[f64, f64, i64]:
    """exp(xh + xl) = 2^k (h + l) with about 2^-75 relative error, h + l in [0.7, 1.42]; |xh| <= 1500,
    |xl| <= 2^-40 |xh|. Branch-free (two table reads)."""
    kf = rint(xh * 92.33248261689366)      # 64 / ln 2
    n = i64(kf)
    j = n & i64(63)
    k = n >> i64(6)
    r0 = xh - kf * LN2_64[0]               # exact: kf < 2^18, LN2_64[0] has 35 bits
    th, tl = gpm_two_prod(kf, LN2_64[1])
    rh, rl = gpm_two_sum(r0, -th)
    rl = (rl - tl) - kf * LN2_64[2] + xl
    rh, rl = gpm_fast_two_sum(rh, rl)
    sh, sl = gpm_two_prod(rh, rh)
    sh = 0.5 * sh
    sl = 0.5 * sl
    a, b = gpm_two_sum(rh, sh)
    p = fma(rh, EA[4], EA[3])
    p = fma(rh, p, EA[2])
    p = fma(rh, p, EA[1])
    p = fma(rh, p, EA[0])
    tail = rh * sh * 2.0 * p
    qh, ql = gpm_fast_two_sum(a, b + sl + tail + rl * (1.0 + (a + tail)))
    ch = EXP2_J_HI[j]
    cl = EXP2_J_LO[j]
    ph, pl = gpm_two_prod(ch, qh)
    h, lo = gpm_fast_two_sum(ch, ph)
    lo = lo + (pl + ch * ql + cl * (1.0 + qh))
    h, lo = gpm_fast_two_sum(h, lo)
    return h, lo, k
