"""Building blocks: error-free transformations, double-double arithmetic, powers of two,
and the single rounding of a double-double to float32."""
from __future__ import annotations

from ._dsl import INF, as_f32, as_f64, as_u64, f32, f64, fabs, fma, helper, i64, rint, select, sqrt, u32, u64


@helper
def gpm_two_sum(a: f64, b: f64) -> tuple[f64, f64]:
    """s + e == a + b exactly, s = RN(a + b) (Knuth; any order of magnitude)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@helper
def gpm_fast_two_sum(a: f64, b: f64) -> tuple[f64, f64]:
    """s + e == a + b exactly when |a| >= |b| (or a == 0)."""
    s = a + b
    e = b - (s - a)
    return s, e


@helper
def gpm_two_prod(a: f64, b: f64) -> tuple[f64, f64]:
    """p + e == a * b exactly (barring underflow), p = RN(a * b)."""
    p = a * b
    e = fma(a, b, -p)
    return p, e


@helper
def gpm_dd_add(ah: f64, al: f64, bh: f64, bl: f64) -> tuple[f64, f64]:
    """(ah + al) + (bh + bl), relative error about 2^-104 unless it cancels to nothing."""
    s, e = gpm_two_sum(ah, bh)
    t, f = gpm_two_sum(al, bl)
    e = e + t
    s, e = gpm_fast_two_sum(s, e)
    e = e + f
    return gpm_fast_two_sum(s, e)


@helper
def gpm_dd_add_d(ah: f64, al: f64, b: f64) -> tuple[f64, f64]:
    """(ah + al) + b."""
    s, e = gpm_two_sum(ah, b)
    e = e + al
    return gpm_fast_two_sum(s, e)


@helper
def gpm_dd_mul(ah: f64, al: f64, bh: f64, bl: f64) -> tuple[f64, f64]:
    """(ah + al) * (bh + bl), relative error about 2^-102."""
    p, e = gpm_two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    return gpm_fast_two_sum(p, e)


@helper
def gpm_dd_mul_d(ah: f64, al: f64, b: f64) -> tuple[f64, f64]:
    """(ah + al) * b."""
    p, e = gpm_two_prod(ah, b)
    e = e + al * b
    return gpm_fast_two_sum(p, e)


@helper
def gpm_dd_div(ah: f64, al: f64, bh: f64, bl: f64) -> tuple[f64, f64]:
    """(ah + al) / (bh + bl), relative error about 2^-100 (no overflow or underflow inside)."""
    q = ah / bh
    p, pe = gpm_two_prod(q, bh)
    r = (((ah - p) - pe) + al - q * bl) / bh
    return gpm_fast_two_sum(q, r)


@helper
def gpm_dd_sqrt(ah: f64, al: f64) -> tuple[f64, f64]:
    """sqrt(ah + al) for ah >= 0 (normal range or 0): one correction of the rounded root."""
    s = sqrt(ah)
    p, pe = gpm_two_prod(s, s)
    c = (((ah - p) - pe) + al) / (2.0 * s)
    return gpm_fast_two_sum(s, select(s == 0.0, 0.0, c))


@helper
def gpm_pow2i(k: i64) -> f64:
    """2^k for -1022 <= k <= 1023."""
    return as_f64(u64(k + 1023) << u64(52))


@helper
def gpm_scale2(v: f64, k: i64) -> f64:
    """v * 2^k rounded once, for |k| <= 2044 and v normal near 1: two exact-or-final steps."""
    k1 = k >> 1
    k2 = k - k1
    return (v * gpm_pow2i(k1)) * gpm_pow2i(k2)


@helper
def gpm_scale2_dd(h: f64, lo: f64, k: i64) -> f64:
    """(h + lo) * 2^k rounded once, for |h + lo| in [1/2, 2] and |k| <= 2044, subnormal results
    included: those are rounded as an integer count of 2^-1074 from the double-double."""
    if k >= i64(-1021):
        return gpm_scale2(h + lo, k)
    t = select(k < i64(-1200), i64(-100), k + i64(1074))
    s = gpm_pow2i(t)
    hs = h * s                             # exact: |hs| < 2^53
    ls = lo * s
    n = rint(hs)
    d = (hs - n) + ls
    n = n + select(d > 0.5, 1.0, select(d < -0.5, -1.0, 0.0))
    return n * gpm_pow2i(i64(-1022)) * 2.220446049250313e-16    # n 2^-1074, exact


@helper
def gpm_round_odd(hi: f64, lo: f64) -> f64:
    """hi + lo rounded to 53 bits with round-to-odd, hi = RN(hi + lo): rounding this double
    once more to any format of at most 51 bits gives the correctly rounded hi + lo."""
    b = as_u64(hi)
    inexact = (lo != 0.0) & ((b & u64(1)) == u64(0))
    away = (lo > 0.0) ^ (hi > 0.0)
    nb = select(away, b - u64(1), b + u64(1))
    return select(inexact & (hi == hi) & (fabs(hi) != INF), as_f64(nb), hi)


@helper
def gpm_min_f32(a: f32, b: f32) -> f32:
    """a < b ? a : b, one vminps on x86 (a NaN a gives b): the float32 paths' clamps."""
    return select(a < b, a, b)


@helper
def gpm_max_f32(a: f32, b: f32) -> f32:
    """a > b ? a : b, one vmaxps on x86 (a NaN a gives b)."""
    return select(a > b, a, b)


@helper
def gpm_to_f32(d: f64) -> f32:
    """d rounded to binary32; a NaN becomes the quiet NaN 0x7fc00000 (the engines' own conversions
    of a NaN differ: x86 keeps the payload, CUDA returns its canonical NaN)."""
    return select(d != d, as_f32(u32(0x7FC00000)), f32(d))


@helper
def gpm_dd_to_f32(hi: f64, lo: f64) -> f32:
    """The binary32 nearest hi + lo (one rounding), from a double-double."""
    return gpm_to_f32(gpm_round_odd(hi, lo))
