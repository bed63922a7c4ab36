"""power: x^y = exp(y log x) with log x to about 2^-70 (a table of 128 reciprocals and their
logarithms as double-doubles, then log1p of a double-double r = m/c - 1, |r| < 2^-8, whose first
two terms are kept exact), y log x as a double-double, and the accurate exp of exp_log.py (2^-75); one
rounding at the end. Special values of C99 Annex F (F.9.4.4): pow(x, +-0) = 1 and pow(1, y) = 1
even for NaN, pow(-1, +-inf) = 1, signed zeros and infinities by the parity of y, NaN for a
negative base and a non-integer exponent.
"""
from __future__ import annotations

from ._core import (gpm_dd_add, gpm_dd_mul, gpm_fast_two_sum, gpm_round_odd, gpm_scale2, gpm_scale2_dd, gpm_to_f32,
                    gpm_two_prod, gpm_two_sum)
from ._dsl import (INF, NAN, NINF, Table, as_f32, as_f64, as_u64, copysign, f32, f64, fabs, floor, fma, helper, i64,
                   public, select, sqrt, u32, u64)
from .exp_log import SQRT_HALF_BITS, gpm_exp_acc, gpm_exp_wide_core
from .fast32 import gpm_tie_key_bits
from .log import gpm_ln_value

LN2_HI = 0.6931471805592082        # 40 bits: e * LN2_HI exact
LN2_LO = 7.371002565167799e-13
LN2_LO2 = 1.94704509238075e-31
# log1p(r) = r - r^2/2 + r^3 LP(r), Taylor coefficients (|r| < 2^-8: the r^11 term is below 2^-80 r)
LP = (0.3333333333333333, -0.25, 0.2, -0.16666666666666666, 0.14285714285714285, -0.125, 0.1111111111111111, -0.1,
      0.09090909090909091)

# |m * INVC - 1| <= 3.890e-03
LOG_INVC = Table("f64", (
    1.4103180722460826, 1.402591120662325, 1.3949483776611926, 1.3873884741409241, 1.3799100705190914,
    1.3725118559412781, 1.3651925475150783, 1.3579508895684753, 1.3507856529316984, 1.343695634241696,
    1.3366796552683995, 1.329736562261985, 1.3228652253203699, 1.3160645377762235, 1.3093334156027852,
    1.3026707968378255, 1.2960756410251055, 1.2895469286727173, 1.283083660727711, 1.2766848580664472,
    1.2703495610001183, 1.2640768287949227, 1.2578657392063846, 1.2517153880273337, 1.2456248886490842,
    1.2395933716353598, 1.2336199843085403, 1.2277038903478121, 1.2218442693988274, 1.216040316694487,
    1.2102912426864831, 1.2045962726872403, 1.1989546465219225, 1.1933656181901702, 1.1878284555372558,
    1.1823424399343518, 1.176906865967619, 1.1715210411358288, 1.166184285556254, 1.1608959316785599,
    1.1556553240064436, 1.1504618188267823, 1.145314783946049, 1.1402135984337733, 1.1351576523728293,
    1.1301463466163344, 1.125179092550961, 1.1202553118664638, 1.115374436331229, 1.110535907573668,
    1.1057391768692764, 1.1009837049331854, 1.0962689617180463, 1.0915944262170845, 1.0869595862721708,
    1.0823639383867614, 1.0778069875435645, 1.0732882470267915, 1.0688072382488631, 1.0643634905814363,
    1.0599565411906307, 1.05558593487633, 1.0512512239154443, 1.0469519679090185, 1.0426877336330742,
    1.038458094893086, 1.0342626323819823, 1.0301009335415767, 1.0259725924273289, 1.0218772095763466,
    1.017814391878536, 1.013783752450813, 1.0097849105142922, 1.0058174912743696, 1.0, 0.9959590828898943,
    0.9882694273236027, 0.9806976034258271, 0.9732409234168362, 0.9658967806455796, 0.9586626465516002,
    0.9515360677624559, 0.9445146633196501, 0.9375961220264809, 0.9307781999116066, 0.9240587178024752,
    0.9174355590031095, 0.9109066670710471, 0.9044700436885321, 0.8981237466233281, 0.8918658877747826,
    0.885694631301012, 0.8796081918233065, 0.873604832704065, 0.8676828643947698, 0.8618406428507032,
    0.8560765680092771, 0.850389082329021, 0.8447766693864234, 0.8392378525279734, 0.8337711935748838,
    0.8283752915781102, 0.823048781621402, 0.8177903336702377, 0.8125986514646031, 0.8074724714536808,
    0.802410561770607, 0.7974117212455515, 0.7924747784554589, 0.7875985908088722, 0.7827820436643369,
    0.7780240494809564, 0.7733235469997398, 0.7686795004544474, 0.7640908988107006, 0.7595567550321828,
    0.7550761053728132, 0.7506480086938258, 0.7462715458047383, 0.7419458188272416, 0.7376699505810844,
    0.7334430839910708, 0.7292643815143309, 0.7251330245870568, 0.7210482130899396, 0.7170091648315731,
    0.7130151150491225, 0.7090653159255911))
LOG_LOGC_HI = Table("f64", (
    -0.3438152621032733, -0.3383213264734599, -0.3328574093278236, -0.3274231844103556, -0.3220183307551849,
    -0.31664253257282104, -0.31129547913944006, -0.3059768646891142, -0.30068638830889255, -0.2954237538366413,
    -0.29018866976156044, -0.28498084912728916, -0.279800009437521, -0.2746458725640533, -0.2695181646571922,
    -0.2644166160584435, -0.2593409612154206, -0.2542909385988997, -0.24926629062195785, -0.2442667635611362,
    -0.2392921074795597, -0.23434207615196223, -0.22941642699155837, -0.2245149209787055, -0.2196373225913078,
    -0.21478339973690802, -0.20995292368641988, -0.20514566900945336, -0.2003614135111868, -0.19559993817074195,
    -0.1908610270810202, -0.18614446738995563, -0.18145004924314917, -0.17677756572784156, -0.17212681281818956,
    -0.1674975893218088, -0.16288969682754903, -0.15830293965446507, -0.15373712480195506, -0.1491920619010306,
    -0.1446675631666891, -0.14016344335135986, -0.13567951969939213, -0.13121561190256079, -0.12677154205655997,
    -0.12234713461845885, -0.11794221636509422, -0.1135566163523771, -0.1091901658754857, -0.10484269842992458,
    -0.10051404967342761, -0.09620405738867985, -0.09191256144684076, -0.08763940377184698, -0.0833844283054738,
    -0.0791474809731362, -0.07492840965041381, -0.07072706413027564, -0.06654329609099405, -0.06237695906472374,
    -0.05822790840673532, -0.054096001265282384, -0.04998109655209032, -0.045883054913449, -0.04180173870189472,
    -0.037737011948468784, -0.03368874033553728, -0.02965679117015866, -0.02564103335798581, -0.021641337377690622,
    -0.017657575255897583, -0.013689620542615149, -0.009737348287152081, -0.0058006350145075455, 0.0,
    0.004049103677253191, 0.01179991868983392, 0.01949112032517086, 0.027123618590198614, 0.03469830281250489,
    0.04221604226219079, 0.049677686750528735, 0.057084067206451525, 0.0644359962318493, 0.07173426863660162,
    0.07897966195422755, 0.0861729369389885, 0.09331483804524014, 0.100406093889787, 0.10744741769796001,
    0.11443950773409683, 0.12138304771707883, 0.12827870722153886, 0.13512714206533127, 0.14192899468382475,
    0.14868489449155012, 0.15539545823171463, 0.16206129031406685, 0.1686829831415749, 0.17526111742635958,
    0.18179626249530506, 0.18828897658574686, 0.1947398071316233, 0.20114929104045595, 0.2075179549615108,
    0.2138463155454725, 0.2201348796959557, 0.2263841448131554, 0.2325945990299331, 0.23876672144061567,
    0.24490098232277702, 0.25099784335225944, 0.2570577578116788, 0.26308117079265037, 0.2690685193919611,
    0.2750202329019034, 0.28093673299497857, 0.28681843390316836, 0.29266574259196443, 0.29847905892934073,
    0.30425877584984123, 0.3100052795139544, 0.3157189494629328, 0.32140015876921657, 0.3270492741826071,
    0.33266665627233505, 0.33825265956516076, 0.34380763267963826))
LOG_LOGC_LO = Table("f64", (
    -2.621158861577772e-17, -2.506761858102265e-17, 2.08987158937756e-17, -2.2014734348976213e-17,
    -2.4958570381936173e-17, 5.431250566156393e-18, 6.038677176655516e-18, 5.844816529721531e-18,
    2.6012752170841322e-17, -1.184866268445682e-17, -2.2056532332739915e-17, -1.1563987011878114e-17,
    -4.6940353399735575e-18, 4.7638262477471064e-18, 1.88984969824882e-17, -2.1526657928161916e-17,
    -2.5544787304224586e-17, 2.6016732121594623e-17, 6.743713514245088e-18, 2.8766275057721024e-18,
    1.1025217560744496e-17, 9.118509092108282e-18, -1.3178748023877976e-17, 1.1601615456902463e-17,
    -5.924474489882372e-18, 3.3781011968539115e-18, -8.283003458238979e-19, 5.873917757260776e-18,
    3.764394731419587e-18, -1.1660658465852149e-17, 1.0450030948650162e-18, 5.294160770332225e-18,
    1.1183563595563174e-17, 8.520237313587174e-18, 1.0249478496491773e-18, 2.1659436256007448e-18,
    6.752585586275546e-18, 4.513119171970838e-18, 4.189059771524387e-18, -5.951811028818334e-18,
    1.0786982432847722e-17, 5.606161062231893e-18, 2.1060568609244785e-18, -1.2365732908342721e-17,
    1.739785357580749e-18, -6.8548826287210706e-18, -1.5857660863956911e-18, -2.56586390531391e-18,
    -6.804506039847567e-18, -4.44137098272666e-18, -5.261608502027574e-18, 7.833944250622595e-19,
    1.0329315056724917e-18, -1.5238887987804349e-18, 9.172051218086434e-19, 6.1614158598476005e-18,
    4.887848519545884e-18, 5.623143245531594e-18, -2.3783685083352607e-18, 2.3594930125413303e-18,
    1.3868659870995563e-18, 2.5071989081748775e-18, 3.352046936114215e-18, 1.8765261253002928e-19,
    -7.559645339758971e-19, -2.0831833119073892e-19, 2.7373623791136664e-18, -1.5363408953573864e-18,
    -4.0326440701825616e-20, 1.6331873380952904e-18, -1.3870867704871958e-18, -6.817253993752604e-19,
    -3.175760915592295e-19, -2.7437148130959807e-19, 0.0, 3.5725319795613194e-19, 1.5386717742959198e-19,
    1.3410551192437724e-18, -1.8325160117329242e-19, 2.994109735192961e-18, -8.786540331963634e-19,
    1.1761806790468335e-18, 6.109819736843261e-19, 4.686743720789617e-18, 4.203789653549712e-18,
    4.607496222235704e-18, 3.8829461750994594e-18, 4.359678179160737e-20, -5.6631478492005204e-18,
    4.089223155583885e-18, -4.769859078929504e-18, -3.225936659383764e-18, 1.9131557921167302e-18,
    1.6476401406665034e-18, -4.9281026734264404e-18, 1.0106328408066724e-17, 4.61443968762794e-19,
    4.0467734757757384e-18, 6.473640656274943e-18, 1.6315090340901772e-18, 8.638813778277249e-18,
    1.3213409564140194e-17, -4.131452686113541e-18, 1.3974439207103232e-18, -6.326686717592624e-18,
    -5.498004024228256e-18, 8.951656296547097e-18, 5.357611439227202e-19, 1.30237329798378e-17,
    -6.652808919594175e-18, -1.1668590109079432e-17, -2.8332741033267173e-19, -3.1597079729954564e-18,
    -1.3315018478711123e-17, 5.679547021557861e-19, 5.581727789564991e-18, 1.9526892122323285e-17,
    -2.1064381597611407e-17, 1.9029167556955771e-19, 1.0430872070112015e-18, -1.6706414677845002e-17,
    -5.58157110696577e-18, -1.0254886724082973e-17, 2.1710479158835493e-17, -1.1160588721692914e-17,
    -8.988120862259243e-18, -1.0694798032802231e-17, 1.4202528393514052e-17))


@helper
def gpm_log_acc(x: f64) -> tuple[f64, f64]:
    """log(x) as a double-double with about 2^-70 relative error (2^-75 absolute near 1), for x
    positive and finite (subnormals included); branch-free."""
    sub = x < 2.2250738585072014e-308
    xs = select(sub, x * 18014398509481984.0, x)     # 2^54
    u = as_u64(xs)
    tmp = u - u64(SQRT_HALF_BITS)
    i = i64((tmp >> u64(45)) & u64(127))
    e = i64(tmp) >> i64(52)
    m = as_f64(u - (u64(e) << u64(52)))
    ef = f64(e) - select(sub, 54.0, 0.0)
    invc = LOG_INVC[i]
    p, pe = gpm_two_prod(m, invc)
    rh, rl = gpm_fast_two_sum(p - 1.0, pe)           # r = m / c - 1 exactly, |r| < 2^-8
    # log1p(r) = r - r^2/2 + r^3 LP(r)
    q, qe = gpm_two_prod(rh, rh)
    qe = fma(2.0 * rh, rl, qe)
    lp = fma(rh, LP[8], LP[7])
    lp = fma(rh, lp, LP[6])
    lp = fma(rh, lp, LP[5])
    lp = fma(rh, lp, LP[4])
    lp = fma(rh, lp, LP[3])
    lp = fma(rh, lp, LP[2])
    lp = fma(rh, lp, LP[1])
    lp = fma(rh, lp, LP[0])
    ah, al = gpm_two_sum(rh, -0.5 * q)
    al = al + (rl - 0.5 * qe + rh * q * lp)
    # + log c + e ln2
    bh, bl = gpm_two_prod(ef, LN2_LO)
    ch, cl = gpm_two_sum(ef * LN2_HI, LOG_LOGC_HI[i])
    ch, cl = gpm_fast_two_sum(ch, cl + (LOG_LOGC_LO[i] + bh + (bl + ef * LN2_LO2)))
    return gpm_dd_add(ch, cl, ah, al)


@helper
def gpm_pow_core(ax: f64, y: f64) -> tuple[f64, f64, i64]:
    """ax^y = 2^k (h + l) for ax positive finite, y finite; |y log ax| clamped to 1400 (beyond,
    the scaling overflows to inf or underflows to 0 as it should)."""
    lh, ll = gpm_log_acc(ax)
    p, pe = gpm_two_prod(lh, y)
    zh, zl = gpm_fast_two_sum(p, fma(ll, y, pe))
    big = not (fabs(p) <= 1400.0)          # inf when y is huge: no NaN from the tails
    zl = select(big, 0.0, zl)
    zh = select(big, copysign(1400.0, p), zh)
    return gpm_exp_acc(zh, zl)


@helper
def gpm_is_int(y: f64) -> bool:
    return floor(y) == y


@helper
def gpm_is_odd(y: f64) -> bool:
    """y an odd integer (finite)."""
    h = 0.5 * y
    return (floor(y) == y) & (floor(h) != h) & (fabs(y) < 9007199254740992.0)


@public
def gpm_power_f64(x: f64, y: f64) -> f64:
    if y == 0.0:
        return 1.0
    if x == 1.0:
        return 1.0
    if x != x:
        return x
    if y == 2.0:                     # x ** 2: the product, correctly rounded (NumPy's square)
        return x * x
    if y != y:
        return y
    ax = fabs(x)
    if fabs(y) == INF:
        if ax == 1.0:
            return 1.0
        if (ax < 1.0) ^ (y < 0.0):
            return 0.0
        return INF
    odd = gpm_is_odd(y)
    if ax == 0.0:
        if y < 0.0:
            return select(odd, copysign(INF, x), INF)
        return select(odd, x, 0.0)
    if ax == INF:
        r = select(y < 0.0, 0.0, INF)
        return select((x < 0.0) & odd, -r, r)
    if (x < 0.0) & (not gpm_is_int(y)):
        return NAN
    h, lo, k = gpm_pow_core(ax, y)
    r = gpm_scale2_dd(h, lo, k)
    return select((x < 0.0) & odd, -r, r)


@helper
def gpm_pow_special(x: f64, y: f64, r: f64) -> f64:
    """C99 F.9.4.4 around r, the value computed for |x| positive finite and y finite."""
    ax = fabs(x)
    odd = (fabs(y) < INF) & gpm_is_odd(y)
    r = select((x < 0.0) & odd, -r, r)
    r = select((x < 0.0) & (fabs(y) < INF) & (not gpm_is_int(y)), NAN, r)
    rinf = select(y < 0.0, 0.0, INF)
    r = select(ax == INF, select((x < 0.0) & odd, -rinf, rinf), r)
    rzero = select(y < 0.0, INF, 0.0)
    r = select(ax == 0.0, select(odd, copysign(rzero, x), rzero), r)
    ryinf = select(ax == 1.0, 1.0, select((ax < 1.0) ^ (y < 0.0), 0.0, INF))
    r = select(fabs(y) == INF, ryinf, r)
    r = select(y != y, y, r)
    r = select(x != x, x, r)
    return select((y == 0.0) | (x == 1.0), 1.0, r)


@helper
def gpm_pow_dd_any(x: f64, y: f64) -> tuple[f64, f64, i64]:
    ax = fabs(x)
    ok = (ax > 0.0) & (ax < INF) & (fabs(y) < INF)
    return gpm_pow_core(select(ok, ax, 1.0), select(ok, y, 0.0))


@helper
def gpm_pow_int_step(rh: f64, rl: f64, ph: f64, pl: f64, n: i64, bit: i64) -> tuple[f64, f64, f64, f64]:
    """One bit of gpm_pow_int_dd's square-and-multiply: (r, p) times p where the bit is set, and p
    squared while n has higher bits."""
    take = ((n >> bit) & i64(1)) == i64(1)
    th, tl = gpm_dd_mul(rh, rl, ph, pl)
    more = (n >> (bit + i64(1))) != i64(0)     # square only as far as n needs
    qh, ql = gpm_dd_mul(ph, pl, ph, pl)
    return select(take, th, rh), select(take, tl, rl), select(more, qh, ph), select(more, ql, pl)


@helper
def gpm_pow_int_dd(a: f64, n: i64) -> tuple[f64, f64]:
    """a^n for 1 <= n <= 64 by squaring in double-doubles: exact whenever a^n has at most about
    100 significant bits (so an exact tie of a narrow format stays a tie), else ~2^-100; a^n
    within 2^+-1000 (then so are the powers on the way). Unrolled (7 bits): straight-line, so the
    float32 power vectorizes."""
    rh, rl, ph, pl = gpm_pow_int_step(1.0, 0.0, a, 0.0, n, i64(0))
    rh, rl, ph, pl = gpm_pow_int_step(rh, rl, ph, pl, n, i64(1))
    rh, rl, ph, pl = gpm_pow_int_step(rh, rl, ph, pl, n, i64(2))
    rh, rl, ph, pl = gpm_pow_int_step(rh, rl, ph, pl, n, i64(3))
    rh, rl, ph, pl = gpm_pow_int_step(rh, rl, ph, pl, n, i64(4))
    rh, rl, ph, pl = gpm_pow_int_step(rh, rl, ph, pl, n, i64(5))
    rh, rl, ph, pl = gpm_pow_int_step(rh, rl, ph, pl, n, i64(6))
    return rh, rl


@helper
def gpm_pow_narrow_dd(x: f64, y: f64) -> tuple[f64, f64]:
    """|x|^y as a double-double for the float32 and narrow paths: small positive integer
    exponents exactly by multiplication, every other one by exp(y log x)."""
    h, lo, k = gpm_pow_dd_any(x, y)
    small = (y >= 2.0) & (y <= 64.0) & (floor(y) == y) & (k > i64(-1000)) & (k < i64(1000))
    ih, il = gpm_pow_int_dd(fabs(x), select(small, i64(y), i64(1)))
    sh = gpm_scale2(gpm_round_odd(h, lo), k)          # exact scaling: the float32 range is normal here
    return select(small, ih, sh), select(small, il, 0.0)


@public
def gpm_power_wide(x: f64, y: f64) -> f64:
    h, lo = gpm_pow_narrow_dd(x, y)
    return gpm_pow_special(x, y, h)


@public
def gpm_power_f32(x: f32, y: f32) -> f32:
    dx = f64(x)
    dy = f64(y)
    h, lo = gpm_pow_narrow_dd(dx, dy)
    r = gpm_to_f32(gpm_pow_special(dx, dy, gpm_round_odd(h, lo)))
    return select((y == f32(0.0)) | (x == f32(1.0)), f32(1.0), select(x != x, x, select(y != y, y, r)))


@helper
def gpm_power_small_f32(x: f32, y: f32) -> f32:
    """gpm_power_f32(x, y) for y in {0, 1, -1, 2, 3, 4, 0.5} (gpm_power_not_small_f32 false), each the
    correctly rounded value by correctly rounded operations: x, 1 / x, x * x, sqrt(x); x^3 and x^4
    from the double x^2 (exact: 48 bits) times x or itself, that product's rounding error by an fma,
    and the two rounded once to float32 through round-to-odd. The special values as the entry point
    gives them (C99 F.9.4.4: (-0)^0.5 = +0, (-inf)^0.5 = +inf, a negative base's half power the
    quiet NaN). The fast twin of x ** y for these y (twins.py), where the entry point computes
    exp(y log x) in double-doubles and multiplies by squaring besides: 11-20 ns an element."""
    d = f64(x)
    s = d * d
    p3 = s * d
    p4 = s * s
    cube = gpm_to_f32(gpm_round_odd(p3, fma(s, d, -p3)))
    fourth = gpm_to_f32(gpm_round_odd(p4, fma(s, s, -p4)))
    half = select(x == f32(0.0), f32(0.0), sqrt(x))
    half = select(x < f32(0.0), select(x == f32(NINF), f32(INF), as_f32(u32(0x7FC00000))), half)
    r = select(y == f32(4.0), fourth, half)
    r = select(y == f32(3.0), cube, r)
    r = select(y == f32(2.0), x * x, r)
    r = select(y == f32(-1.0), f32(1.0) / x, r)
    r = select(y == f32(1.0), x, r)
    return select((y == f32(0.0)) | (x == f32(1.0)), f32(1.0), select(x != x, x, r))


@helper
def gpm_power_not_small_f32(x: f32, y: f32) -> bool:
    return not ((y == f32(0.0)) | (y == f32(1.0)) | (y == f32(-1.0)) | (y == f32(2.0)) | (y == f32(3.0))
                | (y == f32(4.0)) | (y == f32(0.5)))


@helper
def gpm_power_short(dx: f64, dy: f64) -> f64:
    """|x|^y to about 2^-42 relative for |x| positive finite and y finite, in double: exp(y log|x|)
    with the float32 log's double (about 2^-51) and the float32 exp's (2^-50), the product's error
    |y log x| 2^-50 at most 2^-43.1 where float32 neither overflows nor underflows (|y log x| <= 104).
    The product is clamped to +-200 (float32 overflowed to inf, or is far below its least
    subnormal); anything else (a zero, inf or NaN operand) gives some value gpm_pow_special replaces."""
    ax = fabs(dx)
    ok = (ax > 0.0) & (ax < INF) & (fabs(dy) < INF)
    z = select(ok, dy * gpm_ln_value(select(ok, ax, 1.0)), 0.0)
    return gpm_exp_wide_core(select(z > 200.0, 200.0, select(z < -200.0, -200.0, z)))


@helper
def gpm_power_short_value(x: f32, y: f32, s: f64) -> f32:
    """gpm_power_fast_f32's result from s, gpm_power_short of x and y: rounded once, with the entry
    point's special values around it."""
    dx = f64(x)
    dy = f64(y)
    r = gpm_to_f32(gpm_pow_special(dx, dy, s))
    return select((y == f32(0.0)) | (x == f32(1.0)), f32(1.0), select(x != x, x, select(y != y, y, r)))


@helper
def gpm_power_short_key(s: f64) -> u64:
    """gpm_power_key_f32 from s, gpm_power_short of x and y: the tie key, or 0 in float32's
    subnormal range (2^-151 to 2^-126: rounded on a coarser grid than the key places; below it, 0 is
    the correctly rounded result)."""
    subnormal = (s < 1.1754943508222875e-38) & (s >= 3.503246160812043e-46)
    return select(subnormal, u64(0), gpm_tie_key_bits(as_u64(s)))


@helper
def gpm_power_fast_f32(x: f32, y: f32) -> f32:
    """gpm_power_f32 wherever gpm_power_key_f32 is above TIE_KEY_LIMIT (the second twin): for every
    exponent, gpm_power_short rounded once, with the entry point's special values around it. (The
    small exponents too: the engine reaches this pass only in a block where some exponent is not
    small, and their correctly rounded results are this one's wherever the key does not flag; their
    exact ties, as (1 + 2^-12)^2, it flags.)"""
    return gpm_power_short_value(x, y, gpm_power_short(f64(x), f64(y)))


@helper
def gpm_power_key_f32(x: f32, y: f32) -> u64:
    """The rare key of gpm_power_fast_f32 (rare: at most TIE_KEY_LIMIT, fast32.py): the double of
    gpm_power_short near a float32 tie, or in float32's subnormal range."""
    return gpm_power_short_key(gpm_power_short(f64(x), f64(y)))


@helper
def gpm_power_fast_keyed_f32(x: f32, y: f32) -> tuple[f32, u64]:
    """(gpm_power_fast_f32, gpm_power_key_f32) from one evaluation of gpm_power_short: what the CPU
    engine's second pass calls (twins.TOGETHER). As two calls LLVM evaluated the power twice, the
    log and the exp in double (x ** 2.5 of 10**6 float32: 4.2 ms, 2.4 without the key)."""
    s = gpm_power_short(f64(x), f64(y))
    return gpm_power_short_value(x, y, s), gpm_power_short_key(s)


@helper
def gpm_power_sq_f64(x: f64, y: f64) -> f64:
    """gpm_power_f64(x, 2), straight-line: the fast twin of x ** 2 (twins.py)."""
    return select(x != x, x, x * x)


@helper
def gpm_power_not_sq_f64(x: f64, y: f64) -> bool:
    return not (y == 2.0)


@helper
def gpm_power_fast_f64(x: f64, y: f64) -> f64:
    """gpm_power_f64 wherever gpm_power_rare_f64 is false, straight-line (the second twin): the
    entry point's own double-double core with its branches as selects (gpm_pow_special), the
    scaling without gpm_scale2_dd's subnormal branch, which only a rare input takes."""
    h, lo, k = gpm_pow_dd_any(x, y)
    r = gpm_pow_special(x, y, gpm_scale2(h + lo, k))
    return select(y == 2.0, gpm_power_sq_f64(x, y), r)


@helper
def gpm_power_rare_f64(x: f64, y: f64) -> bool:
    """Where gpm_power_fast_f64 may differ from gpm_power_f64: |y| times a bound on |log2 |x||
    above 1000 (the result may be subnormal: 2^k with k < -1021; or overflow, left to the entry
    point as well), from x's exponent field alone (a subnormal x: 1075)."""
    ex = i64((as_u64(x) >> u64(52)) & u64(2047))
    lg = select(ex == i64(0), 1075.0, fabs(f64(ex - i64(1023))) + 1.0)
    return fabs(y) * lg > 1000.0
