"""sin, cos, tan: argument reduction good to the whole double range, then kernels on
|r| <= pi/4 (plus rounding).

Reduction, float64: none for |x| <= pi/4; Cody-Waite with pi/2 in four pieces (33+33+33 bits and a
double, so k * piece is exact for k < 2^20) accumulated as a double-double for |x| < 1.5e6;
above, Payne-Hanek: x = M 2^E (M a 53-bit integer in three 24-bit pieces) times the 24-bit digits
of 2/pi, summed by columns (exact in double), carries propagated, the columns worth a multiple
of 8 dropped, the fraction gathered as a double-double (about 2^-106 relative, enough for the
worst cancellation of the double range, about 2^-61).
float32: Cody-Waite (28+28 bits and a double, as a double-double) for |x| < 2^24, else x = M 2^e
times a per-exponent table of (2^(e-150) 2/pi) mod 8 in three doubles; both are computed and
one is selected (no branch).
"""
from __future__ import annotations

from ._core import (gpm_dd_add, gpm_dd_add_d, gpm_dd_div, gpm_dd_mul, gpm_fast_two_sum, gpm_pow2i, gpm_two_prod,
                    gpm_two_sum)
from ._dsl import (INF, NAN, Table, as_u64, f64, fabs, floor, fma, helper, i64, public, rint,
                   select, u64)

PIO2 = 1.5707963267948966
PIO2_LO = 6.123233995736766e-17
PIO4 = 0.7853981633974483
TWO_OVER_PI = 0.6366197723675814
# pi/2 = CW1 + CW2 + CW3 + CW4 (33, 33, 33 bits and a double)
CW1 = 1.5707963267341256
CW2 = 6.077100506303966e-11
CW3 = 2.0222662487111665e-21
CW4 = 8.4784276603689e-32
# float32 reduction: 28 + 28 bits and a double
CF1 = 1.570796325802803
CF2 = 9.920935739593517e-10
CF3 = 5.721188726109832e-18

# sin(r) = r + r^3 S(r^2) (SIN_S_F64: 2^-63.6 relative), cos(r) = 1 - r^2/2 + r^4 C(r^2) (COS_C_F64: 2^-69.3)
S0 = -0.16666666666666666
S1 = 0.008333333333332957
S2 = -0.00019841269840700868
S3 = 2.7557318788512384e-06
S4 = -2.5051918556462217e-08
S5 = 1.6009866004651932e-10
S6 = -1.5280089246071e-14
S7 = -6.176167624205338e-13
S8 = 2.1526413084650534e-13
C0 = 0.041666666666666664
C1 = -0.0013888888888888317
C2 = 2.4801587301031695e-05
C3 = -2.755731894410771e-07
C4 = 2.0876677015875203e-09
C5 = -1.145766003536351e-11
C6 = 3.635931768724489e-14
C7 = 3.984783546740638e-15
# float32 paths (SIN_S_F32: 2^-58.0, COS_C_F32: 2^-64.2)
SF0 = -0.16666666666666632
SF1 = 0.00833333333332247
SF2 = -0.00019841269829832942
SF3 = 2.7557313695986993e-06
SF4 = -2.5050758223923452e-08
SF5 = 1.589677828099061e-10
CF0 = 0.0416666666666666
CF1_ = -0.0013888888888874465
CF2_ = 2.4801587289660644e-05
CF3_ = -2.7557314396391856e-07
CF4_ = 2.0875728463132884e-09
CF5_ = -1.1359882937948215e-11

TWO_OVER_PI_24 = Table("f64", (
    0.0, 0.0, 10680707.0, 7228996.0, 1387004.0, 2578385.0, 16069853.0, 12639074.0, 9804092.0, 4427841.0,
    16666979.0, 11263675.0, 12935607.0, 2387514.0, 4345298.0, 14681673.0, 3074569.0, 13734428.0, 16653803.0,
    1880361.0, 10960616.0, 8533493.0, 3062596.0, 8710556.0, 7349940.0, 6258241.0, 3772886.0, 3769171.0, 3798172.0,
    8675211.0, 12450088.0, 3874808.0, 9961438.0, 366607.0, 15675153.0, 9132554.0, 7151469.0, 3571407.0, 2607881.0,
    12013382.0, 4155038.0, 6285869.0, 7677882.0, 13102053.0, 15825725.0, 473591.0, 9065106.0, 15363067.0,
    6271263.0, 9264392.0, 5636912.0, 4652155.0, 7056368.0, 13614112.0, 10155062.0, 1944035.0, 9527646.0,
    15080200.0))

TWO_OVER_PI_F32 = Table("f64", (
    1.2732395447351625, 1.4332989822430134e-16, 2.0363328774999416e-32, 2.546479089470325, 2.866597964486027e-16,
    4.072665754999883e-32, 5.09295817894065, 5.733195928972054e-16, 8.145331509999766e-32, 2.1859163578813012,
    2.5846076609428563e-16, 1.4995210471055625e-32, 4.3718327157626025, 5.169215321885713e-16,
    2.999042094211125e-32, 0.7436654315252059, 3.464234221450171e-17, 4.514059485870118e-33, 1.4873308630504118,
    6.928468442900342e-17, 9.028118971740236e-33, 2.9746617261008237, 1.3856936885800683e-16,
    1.805623794348047e-32, 5.949323452201647, 2.7713873771601367e-16, 3.611247588696094e-32, 3.898646904403295,
    1.1018826558196478e-16, 1.0595193553530338e-32, 7.79729380880659, 2.2037653116392956e-16,
    2.1190387107060675e-32, 7.594587617613181, 4.407530623278591e-16, 4.238077421412135e-32, 7.189175235226362,
    8.815061246557182e-16, 8.47615484282427e-32, 6.378350470452724, 8.748338296113113e-16, 7.091548370385894e-32,
    4.756700940905449, 8.614892395224975e-16, 4.32233542550914e-32, 1.5134018818108996, 1.6866624456977597e-16,
    1.249099864571294e-32, 3.0268037636217993, 3.3733248913955194e-16, 2.498199729142588e-32, 6.0536075272435985,
    6.746649782791039e-16, 4.996399458285176e-32, 4.107215054487198, 4.611515368580826e-16,
    1.3203760130770597e-33, 0.21443010897439677, 6.369078400411077e-18, 3.2963609288943647e-34,
    0.42886021794879353, 1.2738156800822154e-17, 6.592721857788729e-34, 0.8577204358975871,
    2.5476313601644308e-17, 1.3185443715577459e-33, 1.7154408717951741, 5.0952627203288616e-17,
    2.6370887431154917e-33, 3.4308817435903483, 1.0190525440657723e-16, 5.2741774862309835e-33,
    6.8617634871806965, 2.0381050881315446e-16, 1.0548354972461967e-32, 5.723526974361393, 4.0762101762630893e-16,
    2.1096709944923934e-32, 3.4470539487227865, 3.7115282540255524e-16, 4.219341988984787e-32, 6.894107897445573,
    7.423056508051105e-16, 8.438683977969574e-32, 5.788215794891147, 5.964328819100958e-16, 7.0166066406765e-32,
    3.5764315897822945, 3.046873441200665e-16, 4.1724519660903525e-32, 7.152863179564589, 6.09374688240133e-16,
    8.344903932180705e-32, 6.305726359129179, 3.305709567801409e-16, 1.8986658914674386e-32, 4.611452718258358,
    6.611419135602818e-16, 3.7973317829348773e-32, 1.2229054365167162, 2.1206080249540712e-16,
    1.9909257942276943e-33, 2.4458108730334325, 4.2412160499081424e-16, 3.9818515884553886e-33, 4.891621746066865,
    8.482432099816285e-16, 7.963703176910777e-33, 1.7832434921337315, 1.421741854880378e-16,
    1.5927406353821554e-32, 3.566486984267463, 2.843483709760756e-16, 3.185481270764311e-32, 7.132973968534926,
    5.686967419521512e-16, 6.370962541528622e-32, 6.2659479370698525, 2.4921506420417733e-16,
    2.8811637677945975e-32, 4.531895874139705, 4.984301284083547e-16, 5.762327535589195e-32, 1.063791748279411,
    1.0868183711658421e-16, 4.312985915079131e-33, 2.127583496558822, 2.1736367423316843e-16,
    8.625971830158263e-33, 4.255166993117644, 4.3472734846633686e-16, 1.7251943660316525e-32, 0.510333986235289,
    9.229857969506417e-17, 9.851984032476433e-33, 1.020667972470578, 1.8459715939012833e-16,
    1.9703968064952866e-32, 2.041335944941156, 3.6919431878025666e-16, 3.940793612990573e-32, 4.082671889882312,
    7.383886375605133e-16, 7.881587225981146e-32, 0.16534377976462591, 5.731767492694392e-18,
    4.758610576244814e-34, 0.33068755952925183, 1.1463534985388784e-17, 9.517221152489629e-34, 0.6613751190585037,
    2.2927069970777567e-17, 1.9034442304979257e-33, 1.3227502381170073, 4.5854139941555134e-17,
    3.8068884609958514e-33, 2.6455004762340146, 9.170827988311027e-17, 7.613776921991703e-33, 5.291000952468029,
    1.8341655976622054e-16, 1.5227553843983406e-32, 2.5820019049360585, 3.6683311953244107e-16,
    3.045510768796681e-32, 5.164003809872117, 7.336662390648821e-16, 6.091021537593362e-32, 2.3280076197442354,
    1.3506484857957655e-16, 2.3212817599240772e-32, 4.656015239488471, 2.701296971591531e-16,
    4.6425635198481545e-32, 1.3120304789769421, 9.617018446824365e-17, 6.569608888414932e-33, 2.6240609579538843,
    1.923403689364873e-16, 1.3139217776829864e-32, 5.2481219159077686, 3.846807378729746e-16,
    2.627843555365973e-32, 2.4962438318155376, 3.2527226589588664e-16, 3.253064531006224e-33, 4.992487663631075,
    6.505445317917733e-16, 6.506129062012448e-33, 1.9849753272621513, 1.9086603895839004e-16,
    1.3012258124024896e-32, 3.9699506545243026, 3.817320779167801e-16, 2.602451624804979e-32, 7.939901309048605,
    7.634641558335602e-16, 5.204903249609958e-32, 7.879802618097211, 6.387498919669952e-16, 5.490451839572709e-33,
    7.759605236194424, 3.8932136423386513e-16, 1.0980903679145418e-32, 7.519210472388847, 7.786427284677303e-16,
    2.1961807358290836e-32, 7.0384209447776955, 6.691070372353353e-16, 4.392361471658167e-32, 6.076841889555392,
    4.500356547705453e-16, 8.784722943316334e-32, 4.153683779110785, 1.1892889840965575e-17,
    4.964793821079659e-35, 0.3073675582215696, 2.378577968193115e-17, 9.929587642159319e-35, 0.6147351164431392,
    4.75715593638623e-17, 1.9859175284318637e-34, 1.2294702328862783, 9.51431187277246e-17, 3.971835056863727e-34,
    2.4589404657725566, 1.902862374554492e-16, 7.943670113727455e-34, 4.917880931545113, 3.805724749108984e-16,
    1.588734022745491e-33, 1.8357618630902273, 9.501113504670287e-17, 3.177468045490982e-33, 3.6715237261804545,
    1.9002227009340573e-16, 6.354936090981964e-33, 7.343047452360909, 3.8004454018681146e-16,
    1.2709872181963928e-32, 6.686094904721818, 7.600890803736229e-16, 2.5419744363927855e-32, 5.372189809443637,
    6.319997410471206e-16, 5.083948872785571e-32, 2.744379618887275, 3.758210623941161e-16,
    3.0713643030849664e-33, 5.48875923777455, 7.516421247882322e-16, 6.142728606169933e-33, 2.9775184755491018,
    1.7101662002627655e-16, 1.2285457212339866e-32, 5.9550369510982035, 3.420332400525531e-16,
    2.4570914424679731e-32, 3.9100739021964075, 2.3997727025504357e-16, 4.9141828849359463e-32, 7.820147804392815,
    4.799545405100871e-16, 9.828365769871893e-32, 7.640295608785631, 7.173066132004922e-17,
    1.1678040736263217e-32, 7.280591217571262, 1.4346132264009844e-16, 2.3356081472526433e-32, 6.561182435142523,
    2.869226452801969e-16, 4.6712162945052866e-32, 5.122364870285047, 5.738452905603938e-16,
    9.342432589010573e-32, 2.2447297405700946, 2.5951216142066247e-16, 3.8937232051271757e-32, 4.489459481140189,
    5.190243228413249e-16, 7.787446410254351e-32, 0.9789189622803792, 3.8847923520009147e-17,
    1.6745326541081697e-33, 1.9578379245607584, 7.769584704001829e-17, 3.3490653082163394e-33, 3.915675849121517,
    1.5539169408003659e-16, 6.698130616432679e-33, 7.831351698243034, 3.1078338816007317e-16,
    1.3396261232865357e-32, 7.662703396486068, 6.215667763201463e-16, 2.6792522465730715e-32, 7.325406792972136,
    3.549551329401675e-16, 4.2812383551481994e-33, 6.650813585944272, 7.09910265880335e-16, 8.562476710296399e-33,
    5.301627171888545, 5.316421120605448e-16, 1.7124953420592797e-32, 2.603254343777091, 1.7510580442096445e-16,
    9.598003553028977e-33, 5.206508687554182, 3.502116088419289e-16, 1.9196007106057955e-32))


# --------------------------------------------------------------------------------------------
# float64 reduction

@helper
def gpm_ph_column(s: i64, x0: f64, x1: f64, x2: f64) -> f64:
    """Column s of the product: x0 D[s] + x1 D[s-1] + x2 D[s-2] (exact, below 2^50)."""
    return x0 * TWO_OVER_PI_24[s + i64(2)] + x1 * TWO_OVER_PI_24[s + i64(1)] + x2 * TWO_OVER_PI_24[s]


@helper
def gpm_ph_digit(v: f64) -> tuple[f64, f64]:
    """(v mod 2^24, floor(v / 2^24)) for 0 <= v < 2^53 integer."""
    c = floor(v * 5.960464477539063e-08)
    return v - c * 16777216.0, c


@helper
def gpm_reduce_ph(ax: f64) -> tuple[f64, f64, i64]:
    """Payne-Hanek: ax * 2/pi = n + f, |f| <= 1/2; returns f * pi/2 as a double-double and n mod 4.
    For ax >= 2^20 finite."""
    u = as_u64(ax)
    e = i64(u >> u64(52)) - i64(1075)
    m = (u & u64(0xFFFFFFFFFFFFF)) | u64(0x10000000000000)
    x0 = f64(i64(m >> u64(48)))
    x1 = f64(i64((m >> u64(24)) & u64(0xFFFFFF)))
    x2 = f64(i64(m & u64(0xFFFFFF)))
    smin = i64(floor(f64(e - i64(3)) * 0.041666666666666664)) + i64(2)   # /24: no integer is within rounding of a third
    smin = select(smin < i64(0), i64(0), smin)
    s0 = gpm_ph_column(smin, x0, x1, x2)
    s1 = gpm_ph_column(smin + i64(1), x0, x1, x2)
    s2 = gpm_ph_column(smin + i64(2), x0, x1, x2)
    s3 = gpm_ph_column(smin + i64(3), x0, x1, x2)
    s4 = gpm_ph_column(smin + i64(4), x0, x1, x2)
    s5 = gpm_ph_column(smin + i64(5), x0, x1, x2)
    s6 = gpm_ph_column(smin + i64(6), x0, x1, x2)
    s7 = gpm_ph_column(smin + i64(7), x0, x1, x2)
    # carries, from the last column up (all exact)
    d7, c = gpm_ph_digit(s7)
    d6, c = gpm_ph_digit(s6 + c)
    d5, c = gpm_ph_digit(s5 + c)
    d4, c = gpm_ph_digit(s4 + c)
    d3, c = gpm_ph_digit(s3 + c)
    d2, c = gpm_ph_digit(s2 + c)
    d1, c = gpm_ph_digit(s1 + c)
    d0, c = gpm_ph_digit(s0 + c)       # the last carry is worth a multiple of 8: dropped
    w0 = e + i64(24) - i64(24) * smin  # weight of column smin, in (-22, 2]
    a = d0 * gpm_pow2i(w0) + d1 * gpm_pow2i(w0 - i64(24))     # exact: 48 contiguous bits
    n = floor(a)
    fh = d7 * gpm_pow2i(w0 - i64(168))
    fl = 0.0
    fh, fl = gpm_dd_add_d(fh, fl, d6 * gpm_pow2i(w0 - i64(144)))
    fh, fl = gpm_dd_add_d(fh, fl, d5 * gpm_pow2i(w0 - i64(120)))
    fh, fl = gpm_dd_add_d(fh, fl, d4 * gpm_pow2i(w0 - i64(96)))
    fh, fl = gpm_dd_add_d(fh, fl, d3 * gpm_pow2i(w0 - i64(72)))
    fh, fl = gpm_dd_add_d(fh, fl, d2 * gpm_pow2i(w0 - i64(48)))
    fh, fl = gpm_dd_add_d(fh, fl, a - n)
    up = fh > 0.5
    n = select(up, n + 1.0, n)
    fh = select(up, fh - 1.0, fh)
    rh, rl = gpm_dd_mul(fh, fl, PIO2, PIO2_LO)
    return rh, rl, i64(n) & i64(3)


@helper
def gpm_reduce_cw(x: f64) -> tuple[f64, f64, i64]:
    """Cody-Waite for |x| < 1.5e6: x - k pi/2 as a double-double, and k mod 4."""
    k = rint(x * TWO_OVER_PI)
    r = x - k * CW1                       # exact
    rh, rl = gpm_two_sum(r, -(k * CW2))   # k * CW2 exact
    rh, rl = gpm_dd_add_d(rh, rl, -(k * CW3))
    ph, pl = gpm_two_prod(k, CW4)
    rh, rl = gpm_dd_add(rh, rl, -ph, -pl)
    return rh, rl, i64(k) & i64(3)


@helper
def gpm_reduce_pio2(x: f64) -> tuple[f64, f64, i64]:
    """x = n pi/2 + r, r = rh + rl with |r| <= pi/4 (about), for x finite; returns (rh, rl, n mod 4)."""
    ax = fabs(x)
    if ax <= PIO4:
        return x, 0.0, i64(0)
    if ax < 1500000.0:
        return gpm_reduce_cw(x)
    rh, rl, q = gpm_reduce_ph(ax)
    if x < 0.0:
        return -rh, -rl, (i64(4) - q) & i64(3)
    return rh, rl, q


# --------------------------------------------------------------------------------------------
# float64 kernels

@helper
def gpm_sin_dd(rh: f64, rl: f64) -> tuple[f64, f64]:
    """sin(rh + rl), |rh| <= pi/4 + tiny, as a double-double (~2^-56 relative)."""
    z = rh * rh
    p = fma(z, S8, S7)
    p = fma(z, p, S6)
    p = fma(z, p, S5)
    p = fma(z, p, S4)
    p = fma(z, p, S3)
    p = fma(z, p, S2)
    p = fma(z, p, S1)
    p = fma(z, p, S0)
    # rh^3 as a double-double, then rh^3 p: the largest correction, kept to about 2^-60 of sin
    zh, zl = gpm_two_prod(rh, rh)
    ch, cl = gpm_two_prod(zh, rh)
    cl = fma(zl, rh, cl)
    th, tl = gpm_two_prod(ch, p)
    sh, sl = gpm_fast_two_sum(rh, th)
    return gpm_fast_two_sum(sh, sl + (tl + cl * p + rl * (1.0 - 0.5 * z)))


@helper
def gpm_cos_dd(rh: f64, rl: f64) -> tuple[f64, f64]:
    """cos(rh + rl), |rh| <= pi/4 + tiny, as a double-double (~2^-58 relative)."""
    z = rh * rh
    p = fma(z, C7, C6)
    p = fma(z, p, C5)
    p = fma(z, p, C4)
    p = fma(z, p, C3)
    p = fma(z, p, C2)
    p = fma(z, p, C1)
    p = fma(z, p, C0)
    hz, hl = gpm_two_prod(rh, rh)
    hz = 0.5 * hz
    hl = 0.5 * hl
    ah, al = gpm_two_sum(1.0, -hz)
    return gpm_fast_two_sum(ah, al - hl - rh * rl + (z * z) * p)


@helper
def gpm_trig_rare_f64(x: f64) -> bool:
    """Where the float64 trig twins are not the entry points: 1.5e6 <= |x| < inf (Payne-Hanek)."""
    return (fabs(x) >= 1500000.0) & (fabs(x) < INF)


@helper
def gpm_reduce_pio2_cw(x: f64) -> tuple[f64, f64, i64]:
    """gpm_reduce_pio2 for |x| < 1.5e6, straight-line."""
    rh, rl, q = gpm_reduce_cw(x)
    small = fabs(x) <= PIO4
    return select(small, x, rh), select(small, 0.0, rl), select(small, i64(0), q)


@helper
def gpm_sin_fast_f64(x: f64) -> f64:
    """gpm_sin_f64 wherever gpm_trig_rare_f64 is false, straight-line (the fast twin): both
    polynomials, the one the quadrant names selected; the special values selected around them."""
    ax = fabs(x)
    rh, rl, q = gpm_reduce_pio2_cw(select(ax < 1500000.0, x, 0.0))
    sh, sl = gpm_sin_dd(rh, rl)
    ch, cl = gpm_cos_dd(rh, rl)
    even = (q & i64(1)) == i64(0)
    v = select(even, sh, ch) + select(even, sl, cl)
    v = select(q >= i64(2), -v, v)
    return select(x != x, x, select(ax == INF, NAN, select(ax < 1.4901161193847656e-08, x, v)))


@helper
def gpm_cos_fast_f64(x: f64) -> f64:
    """gpm_cos_f64 wherever gpm_trig_rare_f64 is false, straight-line (the fast twin)."""
    ax = fabs(x)
    rh, rl, q = gpm_reduce_pio2_cw(select(ax < 1500000.0, x, 0.0))
    sh, sl = gpm_sin_dd(rh, rl)
    ch, cl = gpm_cos_dd(rh, rl)
    even = (q & i64(1)) == i64(0)
    v = select(even, ch, sh) + select(even, cl, sl)
    v = select((q == i64(1)) | (q == i64(2)), -v, v)
    return select(x != x, x, select(ax == INF, NAN, select(ax < 7.450580596923828e-09, 1.0, v)))


@helper
def gpm_tan_fast_f64(x: f64) -> f64:
    """gpm_tan_f64 wherever gpm_trig_rare_f64 is false, straight-line (the fast twin)."""
    ax = fabs(x)
    rh, rl, q = gpm_reduce_pio2_cw(select(ax < 1500000.0, x, 0.0))
    sh, sl = gpm_sin_dd(rh, rl)
    ch, cl = gpm_cos_dd(rh, rl)
    even = (q & i64(1)) == i64(0)
    h, lo = gpm_dd_div(select(even, sh, ch), select(even, sl, cl), select(even, ch, sh), select(even, cl, sl))
    v = select(even, h + lo, -(h + lo))
    return select(x != x, x, select(ax == INF, NAN, select(ax < 1.4901161193847656e-08, x, v)))


@public
def gpm_sin_f64(x: f64) -> f64:
    if x != x:
        return x
    if fabs(x) == INF:
        return NAN
    if fabs(x) < 1.4901161193847656e-08:      # 2^-26
        return x
    rh, rl, q = gpm_reduce_pio2(x)
    if (q & i64(1)) == i64(0):
        h, lo = gpm_sin_dd(rh, rl)
    else:
        h, lo = gpm_cos_dd(rh, rl)
    v = h + lo
    return select(q >= i64(2), -v, v)


@public
def gpm_cos_f64(x: f64) -> f64:
    if x != x:
        return x
    if fabs(x) == INF:
        return NAN
    if fabs(x) < 7.450580596923828e-09:      # 2^-27: 1 - x^2/2 rounds to 1
        return 1.0
    rh, rl, q = gpm_reduce_pio2(x)
    if (q & i64(1)) == i64(0):
        h, lo = gpm_cos_dd(rh, rl)
    else:
        h, lo = gpm_sin_dd(rh, rl)
    v = h + lo
    return select((q == i64(1)) | (q == i64(2)), -v, v)


@public
def gpm_tan_f64(x: f64) -> f64:
    if x != x:
        return x
    if fabs(x) == INF:
        return NAN
    if fabs(x) < 1.4901161193847656e-08:
        return x
    rh, rl, q = gpm_reduce_pio2(x)
    sh, sl = gpm_sin_dd(rh, rl)
    ch, cl = gpm_cos_dd(rh, rl)
    if (q & i64(1)) == i64(0):
        h, lo = gpm_dd_div(sh, sl, ch, cl)
        return h + lo
    h, lo = gpm_dd_div(ch, cl, sh, sl)
    return -(h + lo)


# --------------------------------------------------------------------------------------------
# sin and cos together (the complex functions)

@helper
def gpm_sincos_dd_arg(xh: f64, xl: f64) -> tuple[f64, f64]:
    """(sin, cos) of xh + xl, each rounded once from a double-double (xh finite, |xl| <= ulp(xh))."""
    if fabs(xh) < 1.4901161193847656e-08:
        return xh + xl, 1.0
    rh, rl, q = gpm_reduce_pio2(xh)
    rh, rl = gpm_two_sum(rh, rl + xl)
    sh, sl = gpm_sin_dd(rh, rl)
    ch, cl = gpm_cos_dd(rh, rl)
    s = sh + sl
    c = ch + cl
    odd = (q & i64(1)) == i64(1)
    s2 = select(odd, c, s)
    c2 = select(odd, -s, c)
    s2 = select(q >= i64(2), -s2, s2)
    c2 = select(q >= i64(2), -c2, c2)
    return s2, c2


@helper
def gpm_sincos_f64(x: f64) -> tuple[f64, f64]:
    """(sin x, cos x) for x finite, each within 0.6 ulp; sin(+-0) = +-0."""
    if x == 0.0:
        return x, 1.0
    return gpm_sincos_dd_arg(x, 0.0)
