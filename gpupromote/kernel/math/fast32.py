"""float32 fast twins (tanh, log, log2, log10, log1p) that round a shorter double evaluation and flag what
it cannot decide.

A float32 entry point evaluates in double to about 2^-50 and lists the few inputs where even that is
too close to a float32 rounding boundary (_f32_fixes.py). A twin here evaluates to about 2^-45 with
fewer operations and no list: its rare key (``gpm_tie_key_bits``) is at most TIE_KEY_LIMIT where the
double lies within NEAR_TIE units in the last place of a float32 half-way point, where its rounding
may differ from the exact value's, and where the input is one of the entry point's special cases.
Everywhere else the rounded double is the correctly rounded result, the entry point's bits (checked
over every float32 input: tests/kernel/math/test_fast_twins.py). The CPU engine's contiguous loops
run the twin and rerun a block with the entry point where a key was at most TIE_KEY_LIMIT
(twins.py); random inputs flag about one element in 2^17. The key and the twin evaluate the same
helper on the same input, which LLVM computes once.
"""
from __future__ import annotations

from ._core import gpm_min_f32
from ._dsl import as_f64, as_u64, copysign, f32, f64, fabs, fma, helper, i64, select, u64
from .exp_log import INV_LN10, INV_LN2, LN2, SHIFT
from .log import gpm_log_split

# the double ulps (of the result) a twin's value may be away from the exact one: log's 2^-44.9
# relative is about 2^8 ulps (tanh's 2^-48 about 2^5); eight times that covers the roundings
NEAR_TIE = 2048
TIE_KEY_LIMIT = 2 * NEAR_TIE

# -2u / expm1(-2u) = 1 + u + u^2 S(u^2) for |u| <= ln2/4, S(w) = (u coth u - 1) / u^2 (even)
# (_coefficients.py TANH_S_SHORT: 2^-49.6 absolute)
TS0 = 0.3333333333321254
TS1 = -0.022222221831395658
TS2 = 0.0021163628137494794
TS3 = -0.0002100815135048121
# log1p(f) = 2s + s z R(z), s = f / (2 + f), z = s^2, f in [sqrt(1/2) - 1, sqrt(2) - 1]
# (_coefficients.py LOG_R_SHORT: 2^-44.9 relative to 2s)
LS0 = 0.6666666667582147
LS1 = 0.3999999561509262
LS2 = 0.28572109909203025
LS3 = 0.2217615474989406
LS4 = 0.19584684044454098
M2_INV_LN2 = -2.8853900817779268   # -2 / ln 2 (RN(1/ln2) * -2, exact scaling)
HALF_LN2 = 0.34657359027997264     # RN(ln 2) / 2
LOG10_2 = 0.3010299956639812       # RN(log10 2)
MINUS_TWO_BITS = 0xC000000000000000
ONE_BITS = 0x3FF0000000000000
DOUBLE_INF_BITS = 0x7FF0000000000000
MINUS_ONE_BITS = 0xBFF0000000000000     # -1.0: every double from -1 down (and a NaN with the sign) is above
TWO_M29 = 1.862645149230957e-09         # 2^-29


@helper
def gpm_tie_key_bits(b: u64) -> u64:
    """The twins' rare key of the double of bits b (in float32's normal range, within NEAR_TIE ulps
    of the exact value): the distance of its 29 bits below float32's last from the half-way pattern
    0x10000000, plus NEAR_TIE, as an unsigned number. At most TIE_KEY_LIMIT exactly where the double
    lies so near a float32 half-way point that its rounding may differ from the exact value's."""
    return u64(i64(b & u64(0x1FFFFFFF)) - i64(0x10000000 - NEAR_TIE))


@helper
def gpm_tanh_short(a: f64) -> f64:
    """tanh(a) for 0 <= a <= 10 to about 2^-48 relative, one division. With k = round(-2a / ln 2),
    u = a + k ln2 / 2 (|u| <= ln2/4) and expm1(-2u) = -2u / D, D = 1 + u + u^2 S(u^2):
    expm1(-2a) = 2^k expm1(-2u) + 2^k - 1 = P / D with P = -2^(k+1) u + (2^k - 1) D, and
    tanh(a) = -expm1(-2a) / (2 + expm1(-2a)) = P / (-(2^k + 1) D + 2^(k+1) u). Ten multiply-adds
    (the entry point: 15); for k = 0 the numerator is -2u exactly."""
    t = fma(a, M2_INV_LN2, SHIFT)
    kf = t - SHIFT
    u = fma(kf, HALF_LN2, a)
    w = u * u
    v = fma(w, TS3, TS2)
    v = fma(w, v, TS1)
    v = fma(w, v, TS0)
    d = fma(w, v, 1.0 + u)
    k52 = as_u64(t) << u64(52)
    s = as_f64(k52 + u64(ONE_BITS))                  # 2^k (k <= 0), from the shifter's low bits
    m = as_f64(k52 + u64(MINUS_TWO_BITS)) * u        # -2^(k+1) u
    return fma(s - 1.0, d, m) / fma(-1.0 - s, d, -m)


@helper
def gpm_tanh_short_abs(x: f32) -> f64:
    """gpm_tanh_short of |x| clamped to 10 (tanh rounds to 1 in float32 from 9.02 on)."""
    return gpm_tanh_short(f64(gpm_min_f32(fabs(x), f32(10.0))))


@helper
def gpm_tanh_short_key_f32(x: f32) -> u64:
    """The rare key of gpm_tanh_short_f32 (rare: at most TIE_KEY_LIMIT): near a float32 tie. A
    subnormal x needs no flag: tanh x = x - x^3/3 rounds to x, and the twin's double lies within
    2^-44 |x| < 2^-170 of it, far inside the subnormal grid's half step 2^-150."""
    return gpm_tie_key_bits(as_u64(gpm_tanh_short_abs(x)))


@helper
def gpm_tanh_short_f32(x: f32) -> f32:
    """gpm_tanh_f32 wherever gpm_tanh_short_key_f32 is above TIE_KEY_LIMIT (the fast twin): the sign
    after the one rounding, which is symmetric; a NaN becomes 10 in the clamp and is put back."""
    return select(x != x, x, copysign(f32(gpm_tanh_short_abs(x)), x))


@helper
def gpm_log_short_parts(x: f64) -> tuple[f64, f64]:
    """(e, log(1 + f)) for x = 2^e (1 + f) the double of a positive finite float32, 1 + f in
    [sqrt(1/2), sqrt 2): log(1 + f) = 2s + s z R(z) to about 2^-45 relative."""
    e, f = gpm_log_split(x)
    s = f / (2.0 + f)
    z = s * s
    r = fma(z, LS4, LS3)
    r = fma(z, r, LS2)
    r = fma(z, r, LS1)
    r = fma(z, r, LS0)
    return e, fma(s * z, r, s + s)


@helper
def gpm_log_short(x: f64) -> f64:
    """log(x) = e ln 2 + log(1 + f) (one rounding of e ln 2 more than the entry point's two-part
    constant: 2^-54 of a result at least ln 2 / 2 when e != 0)."""
    e, p = gpm_log_short_parts(x)
    return fma(e, LN2, p)


@helper
def gpm_log2_short(x: f64) -> f64:
    """log2(x) = e + log(1 + f) / ln 2: e exact (a power of two gives it exactly)."""
    e, p = gpm_log_short_parts(x)
    return fma(p, INV_LN2, e)


@helper
def gpm_log10_short(x: f64) -> f64:
    """log10(x) = e log10(2) + log(1 + f) / ln 10 (each product rounded once)."""
    e, p = gpm_log_short_parts(x)
    return fma(e, LOG10_2, p * INV_LN10)


@helper
def gpm_log_special_key(x: f32, y: f64) -> u64:
    """The rare key of a logarithm's twin value y of x: 0 where x is not positive and finite (zeros,
    negatives, inf, NaN: the entry point's special values), else y's tie key."""
    special = as_u64(f64(x)) - u64(1) >= u64(DOUBLE_INF_BITS - 1)
    return select(special, u64(0), gpm_tie_key_bits(as_u64(y)))


@helper
def gpm_log_short_key_f32(x: f32) -> u64:
    """The rare key of gpm_log_short_f32 (rare: at most TIE_KEY_LIMIT)."""
    return gpm_log_special_key(x, gpm_log_short(f64(x)))


@helper
def gpm_log_short_f32(x: f32) -> f32:
    """gpm_log_f32 wherever gpm_log_short_key_f32 is above TIE_KEY_LIMIT (the fast twin)."""
    return f32(gpm_log_short(f64(x)))


@helper
def gpm_log2_short_key_f32(x: f32) -> u64:
    return gpm_log_special_key(x, gpm_log2_short(f64(x)))


@helper
def gpm_log2_short_f32(x: f32) -> f32:
    """gpm_log2_f32 wherever gpm_log2_short_key_f32 is above TIE_KEY_LIMIT."""
    return f32(gpm_log2_short(f64(x)))


@helper
def gpm_log10_short_key_f32(x: f32) -> u64:
    return gpm_log_special_key(x, gpm_log10_short(f64(x)))


@helper
def gpm_log10_short_f32(x: f32) -> f32:
    """gpm_log10_f32 wherever gpm_log10_short_key_f32 is above TIE_KEY_LIMIT."""
    return f32(gpm_log10_short(f64(x)))


@helper
def gpm_log1p_short(x: f64) -> f64:
    """log(1 + x) for x the double of a float32 above -1, finite: 1 + x is exact in double from
    2^-29 up to 2^53 (and within 2^-53 beyond, where log x > 36), so log_short of it; below 2^-29,
    x - x^2 / 2 (the cube is 2^-58 of it), as the entry point."""
    return select(fabs(x) < TWO_M29, fma(-0.5 * x, x, x), gpm_log_short(1.0 + x))


@helper
def gpm_log1p_short_key_f32(x: f32) -> u64:
    """The rare key of gpm_log1p_short_f32 (rare: at most TIE_KEY_LIMIT): near a float32 tie, or 0
    for x <= -1 and +inf (the special values; a NaN x is the twin's own). A subnormal x needs no
    flag: x - x^2 / 2 is x exactly there, its correctly rounded result."""
    b = as_u64(f64(x))
    special = (b >= u64(MINUS_ONE_BITS)) | (b == u64(DOUBLE_INF_BITS))
    return select(special, u64(0), gpm_tie_key_bits(as_u64(gpm_log1p_short(f64(x)))))


@helper
def gpm_log1p_short_f32(x: f32) -> f32:
    """gpm_log1p_f32 wherever gpm_log1p_short_key_f32 is above TIE_KEY_LIMIT (the fast twin)."""
    return select(x != x, x, f32(gpm_log1p_short(f64(x))))
