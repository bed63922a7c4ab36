"""sigmoid, erf, hypot, logaddexp.

sigmoid(x) = 1/(1 + e^-x) as one function: t = e^-|x| as a double-double, then 1/(1+t) or t/(1+t).
erf: x + x Q(x^2) below 0.84375; above, 1 - exp(-x^2) G(x) with G a polynomial on each of five
pieces up to 6 (erfc = exp(-x^2) G is smooth and well conditioned), exp(-x^2) from the double-double
exp kernel with x^2 exact as a double-double; 1 beyond 6.
hypot: scaled near 1, x^2 + y^2 as a double-double, its square root corrected once.
logaddexp: NumPy's semantics (equal arguments give x + ln 2, equal infinities included), as
max + log1p(exp(-|x - y|)) with pow.py's accurate log and exp_log.py's accurate exp (double-doubles
with about 2^-70 error: the sum may cancel).
"""
from __future__ import annotations

from ._core import (gpm_dd_add, gpm_dd_add_d, gpm_dd_div, gpm_dd_mul, gpm_dd_sqrt, gpm_fast_two_sum, gpm_pow2i, gpm_round_odd,
                   gpm_scale2, gpm_scale2_dd, gpm_to_f32, gpm_two_prod, gpm_two_sum)
from ._dsl import INF, NINF, Table, as_u64, copysign, f32, f64, fabs, fma, helper, i64, public, select, sqrt, u64
from .exp_log import LN2, LN2_R, gpm_exp_acc, gpm_exp_f64, gpm_exp_kernel, gpm_exp_wide_core
from .pow import gpm_log_acc

# erf(x) = x + x Q(x^2), |x| <= 0.84375 (ERF_Q_F64: 2^-56.2 absolute in Q; ERF_Q_F32: 2^-50.4)
EQ = (
    0.1283791670955126, -0.37612638903183965, 0.11283791670965873, -0.026866170647663282, 0.005223977659045126,
    -0.0008548329804639664, 0.0001205548526187291, -1.493135489827007e-05, 1.6610596067950343e-06,
    -1.9049183589489605e-07, 4.783167493570151e-08, -2.7630165613329784e-08, 1.2454013225742666e-08,
    -2.5776406094687307e-09)
EQF = (
    0.1283791670955119, -0.37612638903164275, 0.11283791670046368, -0.02686617048077655, 0.005223976114693826,
    -0.0008548247115848528, 0.00012052751716152754, -1.4873745082999462e-05, 1.5824004999452903e-06,
    -1.1896211813431607e-07)
# erfc(x) = exp(-x^2) G(x), G a polynomial in x - mid on each piece of ERFC_PIECES
# (ERFC_G<k>_F64: 2^-53 .. 2^-54.9 relative, the rounding of the constant term; _F32: 2^-45.4 .. 2^-46.8)
EG0 = (
    0.38481374714100164, -0.22647194723379002, 0.11941693397640399, -0.05768681848679443, 0.025907596781088553,
    -0.010930541403577057, 0.004366122858468708, -0.0016611403371352832, 0.0006048684865817917,
    -0.00021162445142731813, 7.137461080746129e-05, -2.326970722054446e-05, 7.3465740399016755e-06,
    -2.253477248044913e-06, 6.970099830818365e-07, -2.0225472029665963e-07)
EG1 = (
    0.2694299851646704, -0.11801672272799837, 0.0481486300496735, -0.018492027589907062, 0.0067380391592972814,
    -0.0023432816664882713, 0.0007814620116349776, -0.00025086868426330174, 7.777080461514794e-05,
    -2.334409289538948e-05, 6.800164716938515e-06, -1.9261651977733946e-06, 5.31109385196294e-07,
    -1.4295512524201081e-07, 3.900295530208302e-08, -1.0014195904630449e-08)
EG2 = (
    0.1936620962790687, -0.06323763756063484, 0.019758592987322885, -0.005934337896997981, 0.0017195818852875557,
    -0.00048219508498069895, 0.0001311818005834703, -3.469860958919554e-05, 8.940155215716418e-06,
    -2.2473732538979122e-06, 5.519829054694128e-07, -1.3262696089460714e-07, 3.117596600220658e-08,
    -7.19281749819821e-09, 1.7112673030898234e-09, -3.798310146174916e-10)
EG3 = (
    0.1411674197630518, -0.034331663931861184, 0.008132222027089709, -0.0018795357179257359, 0.0004245105600631875,
    -9.382291907139615e-05, 2.0315582898534163e-05, -4.314295825906674e-06, 8.994215289537897e-07,
    -1.8423041477352266e-07, 3.710635920543011e-08, -7.35387402066854e-09, 1.4331245645658717e-09,
    -2.755371354918042e-10, 5.518427046791821e-11, -1.0299637308123206e-11)
EG4 = (
    0.1056127354688918, -0.01944544467214865, 0.0035241509401113995, -0.0006291014910425437, 0.00011068405606892072,
    -1.920407867205492e-05, 3.287547681662256e-06, -5.555581004835171e-07, 9.27169033848956e-08,
    -1.5287621723651087e-08, 2.4914163750832584e-09, -4.0143981620720896e-10, 6.389526778526229e-11,
    -1.0074975850572621e-11, 1.6602771579360074e-12, -2.56202253868298e-13)
EGF = Table("f64", (
    0.38481374714099587, -0.22647194723378825, 0.11941693398025462, -0.057686818487973676, 0.02590759636413369,
    -0.010930541275880603, 0.0043661393574803906, -0.0016611453905091868, 0.0006045737817507638,
    -0.00021153417477971092, 7.379298829324122e-05, -2.401076395569375e-05, 0.2694299851646684,
    -0.11801672272799782, 0.048148630050732, -0.018492027590191577, 0.006738039071544356, -0.002343281642900225,
    0.0007814646701538497, -0.0002508693989228402, 7.773444895389763e-05, -2.33343185593873e-05,
    7.028565043643344e-06, -1.987588336006513e-06, 0.1936620962790648, -0.06323763756063396, 0.01975859298843709,
    -0.0059343378972546625, 0.0017195818333406129, -0.0004821950730131651, 0.00013118268540452134,
    -3.469881344888202e-05, 8.933355098782602e-06, -2.245806314242386e-06, 5.75966497324383e-07,
    -1.3815510834728722e-07, 0.1411674197630492, -0.034331663931860684, 0.008132222027568527, -0.001879535718017679,
    0.00042451054577732813, -9.382291632812427e-05, 2.031573860372531e-05, -4.314325727322867e-06,
    8.98655945002154e-07, -1.8408337602608569e-07, 3.883316708810213e-08, -7.685609349923837e-09,
    0.10561273546889077, -0.019445444672148485, 0.0035241509402434193, -0.0006291014910633419,
    0.00011068405333349417, -1.9204078241110423e-05, 3.2875683871084726e-06, -5.555613626001853e-07,
    9.264619670104946e-08, -1.527648105850055e-08, 2.602194575760048e-09, -4.1889732287122014e-10))
ERFC_MID = (1.171875, 1.875, 2.75, 3.875, 5.25)
TWO_OVER_SQRTPI = 1.1283791670955126
TWO_OVER_SQRTPI_LO = 1.533545961316588e-17


# --------------------------------------------------------------------------------------------
# sigmoid

@helper
def gpm_sigmoid_rare_f64(x: f64) -> bool:
    """Where gpm_sigmoid_fast_f64 is not gpm_sigmoid_f64: x < -40 (e^x)."""
    return x < -40.0


@helper
def gpm_sigmoid_core_f64(x: f64) -> f64:
    """sigmoid(x) for |x| <= 40 (the core of gpm_sigmoid_fast_f64): 1 / (1 + e^-|x|) for x >= 0,
    e^-|x| / (1 + e^-|x|) below, one division of selected operands."""
    h, lo, k = gpm_exp_kernel(-fabs(x), 0.0)
    p = gpm_pow2i(k)                       # k >= -58: exact scalings
    th = h * p
    tl = lo * p
    dh, dl = gpm_dd_add_d(th, tl, 1.0)
    pos = x >= 0.0
    sh, sl = gpm_dd_div(select(pos, 1.0, th), select(pos, 0.0, tl), dh, dl)
    return sh + sl


@helper
def gpm_sigmoid_fast_f64(x: f64) -> f64:
    """gpm_sigmoid_f64 wherever gpm_sigmoid_rare_f64 is false, straight-line (the fast twin): the
    special values selected around the core."""
    y = gpm_sigmoid_core_f64(select(fabs(x) <= 40.0, x, 0.0))
    return select(x != x, x, select(x > 40.0, 1.0, y))           # 1 - e^-x rounds to 1 above 40


@public
def gpm_sigmoid_f64(x: f64) -> f64:
    if x != x:
        return x
    if x < -40.0:                          # e^x (1 - e^x + ...): e^x alone, rounded once
        return gpm_exp_f64(x)
    if x > 40.0:                           # 1 - e^-x rounds to 1
        return 1.0
    h, lo, k = gpm_exp_kernel(-fabs(x), 0.0)
    p = gpm_pow2i(k)                       # k >= -58: exact scalings
    th = h * p
    tl = lo * p
    dh, dl = gpm_dd_add_d(th, tl, 1.0)
    if x >= 0.0:
        sh, sl = gpm_dd_div(1.0, 0.0, dh, dl)
    else:
        sh, sl = gpm_dd_div(th, tl, dh, dl)
    return sh + sl


@helper
def gpm_sigmoid_narrow_dd(x: f64) -> tuple[f64, f64]:
    """sigmoid for float32 values as (hi, lo), branch-free. Near 0 the value is 1/2 + x/4 - x^3/48
    + ..., whose first two terms are often a float32 tie: they are kept exact (two_sum), the rest in lo."""
    a = select(x != x, 0.0, select(fabs(x) > 110.0, 110.0, fabs(x)))
    t = gpm_exp_wide_core(-a)
    d = 1.0 + t
    y = select(x >= 0.0, 1.0, t) / d           # 1 / d or t / d, one division
    xs = select(a < 0.0625, x, 0.0)
    z = xs * xs
    p = fma(z, fma(z, fma(z, 2.1356922398589065e-05, -0.00021081349206349207), 0.0020833333333333333),
            -0.020833333333333332)
    h, lo = gpm_two_sum(0.5, 0.25 * xs)
    h, lo = gpm_fast_two_sum(h, fma(xs * z, p, lo))
    small = a < 0.0625
    hi = select(x != x, x, select(x == NINF, 0.0, select(small, h, y)))
    return hi, select(small & (x == x), lo, 0.0)


@public
def gpm_sigmoid_wide(x: f64) -> f64:
    h, lo = gpm_sigmoid_narrow_dd(x)
    return h + lo


@helper
def gpm_sigmoid_f32_raw(x: f32) -> f32:
    h, lo = gpm_sigmoid_narrow_dd(f64(x))
    return select(x != x, x, gpm_to_f32(gpm_round_odd(h, lo)))


# --------------------------------------------------------------------------------------------
# erf

@helper
def gpm_erf_q(z: f64) -> f64:
    p = fma(z, EQ[13], EQ[12])
    p = fma(z, p, EQ[11])
    p = fma(z, p, EQ[10])
    p = fma(z, p, EQ[9])
    p = fma(z, p, EQ[8])
    p = fma(z, p, EQ[7])
    p = fma(z, p, EQ[6])
    p = fma(z, p, EQ[5])
    p = fma(z, p, EQ[4])
    p = fma(z, p, EQ[3])
    p = fma(z, p, EQ[2])
    p = fma(z, p, EQ[1])
    return fma(z, p, EQ[0])


@helper
def gpm_erfc_g0(t: f64) -> tuple[f64, f64]:
    p = fma(t, EG0[15], EG0[14])
    p = fma(t, p, EG0[13])
    p = fma(t, p, EG0[12])
    p = fma(t, p, EG0[11])
    p = fma(t, p, EG0[10])
    p = fma(t, p, EG0[9])
    p = fma(t, p, EG0[8])
    p = fma(t, p, EG0[7])
    p = fma(t, p, EG0[6])
    p = fma(t, p, EG0[5])
    p = fma(t, p, EG0[4])
    p = fma(t, p, EG0[3])
    p = fma(t, p, EG0[2])
    p = fma(t, p, EG0[1])
    return gpm_two_sum(EG0[0], t * p)


@helper
def gpm_erfc_g1(t: f64) -> tuple[f64, f64]:
    p = fma(t, EG1[15], EG1[14])
    p = fma(t, p, EG1[13])
    p = fma(t, p, EG1[12])
    p = fma(t, p, EG1[11])
    p = fma(t, p, EG1[10])
    p = fma(t, p, EG1[9])
    p = fma(t, p, EG1[8])
    p = fma(t, p, EG1[7])
    p = fma(t, p, EG1[6])
    p = fma(t, p, EG1[5])
    p = fma(t, p, EG1[4])
    p = fma(t, p, EG1[3])
    p = fma(t, p, EG1[2])
    p = fma(t, p, EG1[1])
    return gpm_two_sum(EG1[0], t * p)


@helper
def gpm_erfc_g2(t: f64) -> tuple[f64, f64]:
    p = fma(t, EG2[15], EG2[14])
    p = fma(t, p, EG2[13])
    p = fma(t, p, EG2[12])
    p = fma(t, p, EG2[11])
    p = fma(t, p, EG2[10])
    p = fma(t, p, EG2[9])
    p = fma(t, p, EG2[8])
    p = fma(t, p, EG2[7])
    p = fma(t, p, EG2[6])
    p = fma(t, p, EG2[5])
    p = fma(t, p, EG2[4])
    p = fma(t, p, EG2[3])
    p = fma(t, p, EG2[2])
    p = fma(t, p, EG2[1])
    return gpm_two_sum(EG2[0], t * p)


@helper
def gpm_erfc_g3(t: f64) -> tuple[f64, f64]:
    p = fma(t, EG3[15], EG3[14])
    p = fma(t, p, EG3[13])
    p = fma(t, p, EG3[12])
    p = fma(t, p, EG3[11])
    p = fma(t, p, EG3[10])
    p = fma(t, p, EG3[9])
    p = fma(t, p, EG3[8])
    p = fma(t, p, EG3[7])
    p = fma(t, p, EG3[6])
    p = fma(t, p, EG3[5])
    p = fma(t, p, EG3[4])
    p = fma(t, p, EG3[3])
    p = fma(t, p, EG3[2])
    p = fma(t, p, EG3[1])
    return gpm_two_sum(EG3[0], t * p)


@helper
def gpm_erfc_g4(t: f64) -> tuple[f64, f64]:
    p = fma(t, EG4[15], EG4[14])
    p = fma(t, p, EG4[13])
    p = fma(t, p, EG4[12])
    p = fma(t, p, EG4[11])
    p = fma(t, p, EG4[10])
    p = fma(t, p, EG4[9])
    p = fma(t, p, EG4[8])
    p = fma(t, p, EG4[7])
    p = fma(t, p, EG4[6])
    p = fma(t, p, EG4[5])
    p = fma(t, p, EG4[4])
    p = fma(t, p, EG4[3])
    p = fma(t, p, EG4[2])
    p = fma(t, p, EG4[1])
    return gpm_two_sum(EG4[0], t * p)


@public
def gpm_erf_f64(x: f64) -> f64:
    if (x != x) | (x == 0.0):
        return x
    a = fabs(x)
    if a < 1.0947644252537633e-47:         # 2^-156: erf(x) = (2/sqrt(pi)) x, x scaled into [1/2, 1)
        u = as_u64(a)
        e = i64(u >> u64(52)) - i64(1022)
        e = select(e == i64(-1022), i64(-1073), e)       # subnormal: scale up generously
        xs = gpm_scale2(a, -e)
        ph, pl = gpm_two_prod(xs, TWO_OVER_SQRTPI)
        pl = fma(xs, TWO_OVER_SQRTPI_LO, pl)
        return copysign(gpm_scale2_dd(ph, pl, e), x)
    if a < 0.84375:
        z = x * x
        ph, pl = gpm_two_prod(x, gpm_erf_q(z))
        h, lo = gpm_two_sum(x, ph)
        return h + (lo + pl)
    if a >= 6.0:
        return copysign(1.0, x)
    if a < 1.5:
        gh, gl = gpm_erfc_g0(a - ERFC_MID[0])
    elif a < 2.25:
        gh, gl = gpm_erfc_g1(a - ERFC_MID[1])
    elif a < 3.25:
        gh, gl = gpm_erfc_g2(a - ERFC_MID[2])
    elif a < 4.5:
        gh, gl = gpm_erfc_g3(a - ERFC_MID[3])
    else:
        gh, gl = gpm_erfc_g4(a - ERFC_MID[4])
    sh, sl = gpm_two_prod(a, a)
    eh, el, k = gpm_exp_kernel(-sh, -sl)
    p = gpm_pow2i(k)                       # k >= -52
    ch, cl = gpm_dd_mul(eh * p, el * p, gh, gl)
    h, lo = gpm_dd_add_d(-ch, -cl, 1.0)
    return copysign(h + lo, x)


@helper
def gpm_erfc_coef(p1: bool, p2: bool, p3: bool, p4: bool, k: i64) -> f64:
    """Coefficient k of G on the piece the flags name (p1: a < 1.5, ..., none: the last piece)."""
    return select(p1, EGF[k], select(p2, EGF[k + i64(12)], select(p3, EGF[k + i64(24)],
                                                                   select(p4, EGF[k + i64(36)], EGF[k + i64(48)]))))


@public
def gpm_erf_wide(x: f64) -> f64:
    a = select(x != x, 0.0, select(fabs(x) > 6.0, 6.0, fabs(x)))
    # below 0.84375
    z = a * a
    q = fma(z, EQF[9], EQF[8])
    q = fma(z, q, EQF[7])
    q = fma(z, q, EQF[6])
    q = fma(z, q, EQF[5])
    q = fma(z, q, EQF[4])
    q = fma(z, q, EQF[3])
    q = fma(z, q, EQF[2])
    q = fma(z, q, EQF[1])
    q = fma(z, q, EQF[0])
    small = fma(a, q, a)
    # the pieces: G's coefficients picked by selects (one table lookup by a computed index per
    # coefficient would be a gather on the CPU's vectors); Horner written out, as a loop would make
    # the function branchy (called, not inlined, not vectorised); the operations are the same
    p1 = a < 1.5
    p2 = a < 2.25
    p3 = a < 3.25
    p4 = a < 4.5
    mid = select(p1, ERFC_MID[0], select(p2, ERFC_MID[1], select(p3, ERFC_MID[2], select(p4, ERFC_MID[3], ERFC_MID[4]))))
    t = a - mid
    g = gpm_erfc_coef(p1, p2, p3, p4, i64(11))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(10)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(9)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(8)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(7)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(6)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(5)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(4)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(3)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(2)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(1)))
    g = fma(t, g, gpm_erfc_coef(p1, p2, p3, p4, i64(0)))
    big = 1.0 - gpm_exp_wide_core(-z) * g
    y = select(a < 0.84375, small, select(a >= 6.0, 1.0, big))
    return select(x != x, x, copysign(y, x))


@helper
def gpm_erf_f32_raw(x: f32) -> f32:
    return select(x != x, x, gpm_to_f32(gpm_erf_wide(f64(x))))


# --------------------------------------------------------------------------------------------
# hypot

@public
def gpm_hypot_f64(x: f64, y: f64) -> f64:
    ax = fabs(x)
    ay = fabs(y)
    if (ax == INF) | (ay == INF):
        return INF
    if x != x:
        return x
    if y != y:
        return y
    a = select(ax > ay, ax, ay)
    b = select(ax > ay, ay, ax)
    if b == 0.0:
        return a
    if b * 1.152921504606847e+18 < a:      # b < 2^-60 a: a + b^2/2a rounds to a
        return a
    e = i64(as_u64(a) >> u64(52)) - i64(1023)
    e = select(e == i64(-1023), i64(-1022), e)
    sa = gpm_scale2(a, -e)
    sb = gpm_scale2(b, -e)
    ph, pl = gpm_two_prod(sa, sa)
    qh, ql = gpm_two_prod(sb, sb)
    sh, sl = gpm_dd_add(ph, pl, qh, ql)
    h, lo = gpm_dd_sqrt(sh, sl)
    return gpm_scale2_dd(h, lo, e)


@helper
def gpm_hypot_dd_f32(x: f64, y: f64) -> tuple[f64, f64]:
    """sqrt(x^2 + y^2) as a double-double for float32 values x, y (finite; squares exact)."""
    sh, sl = gpm_two_sum(x * x, y * y)
    r = sqrt(sh)
    p, pe = gpm_two_prod(r, r)
    c = (((sh - p) - pe) + sl) / (2.0 * r)
    return gpm_fast_two_sum(r, select(r == 0.0, 0.0, c))


@helper
def gpm_hypot_special(x: f64, y: f64, r: f64) -> f64:
    inf = (fabs(x) == INF) | (fabs(y) == INF)
    return select(inf, INF, select(x != x, x, select(y != y, y, r)))


@public
def gpm_hypot_wide(x: f64, y: f64) -> f64:
    ok = (fabs(x) < INF) & (fabs(y) < INF)
    h, lo = gpm_hypot_dd_f32(select(ok, x, 0.0), select(ok, y, 0.0))
    return gpm_hypot_special(x, y, h)


@public
def gpm_hypot_f32(x: f32, y: f32) -> f32:
    dx = f64(x)
    dy = f64(y)
    ok = (fabs(dx) < INF) & (fabs(dy) < INF)
    h, lo = gpm_hypot_dd_f32(select(ok, dx, 0.0), select(ok, dy, 0.0))
    r = gpm_to_f32(gpm_round_odd(h, lo))
    inf = (fabs(x) == f32(INF)) | (fabs(y) == f32(INF))
    return select(inf, f32(INF), select(x != x, x, select(y != y, y, r)))


# --------------------------------------------------------------------------------------------
# logaddexp

@helper
def gpm_logaddexp_dd(x: f64, y: f64) -> tuple[f64, f64]:
    """log(e^x + e^y) as a double-double for x, y finite (branch-free)."""
    m = select(x > y, x, y)
    dh, dl = gpm_two_sum(x, -y)
    neg = dh > 0.0
    ah = select(neg, -dh, dh)              # -|x - y|
    al = select(neg, -dl, dl)
    low = ah < -800.0
    eh, el, k = gpm_exp_acc(select(low, -800.0, ah), select(low, 0.0, al))
    th = gpm_scale2(eh, k)
    tl = gpm_scale2(el, k)
    th = select(low, 0.0, th)
    tl = select(low, 0.0, tl)
    uh, ul = gpm_dd_add_d(th, tl, 1.0)     # 1 + t in [1, 2]
    lh, ll = gpm_log_acc(uh)
    c = ul / uh
    lh, ll = gpm_fast_two_sum(lh, ll + (c - 0.5 * c * c))
    return gpm_dd_add_d(lh, ll, m)


@public
def gpm_logaddexp_f64(x: f64, y: f64) -> f64:
    # straight-line (vectorizes): the special cases selected around the double-double core, which
    # runs on (0, 1) for them; x == y is x + ln 2 (log(e^x + e^x)), +0.0 added where one side is
    # -inf (log(e^y + 0) is y, and log(1) is +0: a -0.0 becomes +0.0)
    fin = (fabs(x) < INF) & (fabs(y) < INF)
    h, lo = gpm_logaddexp_dd(select(fin, x, 0.0), select(fin, y, 1.0))
    eh, el = gpm_two_sum(x, LN2)
    same = select(fabs(x) == INF, x, eh + (el + LN2_R))
    v = select((x == INF) | (y == INF), INF, select(x == NINF, y + 0.0, select(y == NINF, x + 0.0, h + lo)))
    return select(x != x, x, select(y != y, y, select(x == y, same, v)))


@helper
def gpm_logaddexp_any(x: f64, y: f64) -> tuple[f64, f64]:
    """The double-double result with every special case, branch-free (float32 and narrow paths)."""
    fin = (fabs(x) < INF) & (fabs(y) < INF)
    h, lo = gpm_logaddexp_dd(select(fin, x, 0.0), select(fin, y, 1.0))
    eh, el = gpm_two_sum(select(fin, x, 0.0), LN2)
    eq = x == y
    h = select(eq, eh, h)
    lo = select(eq, el + LN2_R, lo)
    sp = select((x == INF) | (y == INF), INF, select(x == NINF, y, x) + 0.0)   # (-0.0 with -inf: +0.0)
    h = select(fin, h, sp)
    lo = select(fin, lo, 0.0)
    h = select(y != y, y, select(x != x, x, h))
    return h, select((x != x) | (y != y), 0.0, lo)


@public
def gpm_logaddexp_wide(x: f64, y: f64) -> f64:
    h, lo = gpm_logaddexp_any(x, y)
    return h


@public
def gpm_logaddexp_f32(x: f32, y: f32) -> f32:
    h, lo = gpm_logaddexp_any(f64(x), f64(y))
    r = gpm_to_f32(gpm_round_odd(h, lo))
    return select(x != x, x, select(y != y, y, r))
