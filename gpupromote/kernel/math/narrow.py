"""One rounding from double to the narrow formats' bit patterns (float16, bfloat16,
float8_e4m3fn, float8_e5m2): to nearest, ties to even, subnormals included, overflow to inf
(e4m3fn, which has no inf: to NaN), NaN to the format's quiet NaN with the input's sign.

The scheme, the same for the four: with E the exponent of |x| (held at the format's smallest
normal exponent below it), n = rint(|x| * 2^(p-1-E)) is the rounded significand, and the bit
pattern is (E - emin) * 2^(p-1) + n (a carry of n into the exponent field is right, up to inf).
"""
from __future__ import annotations

from ._dsl import as_u64, f64, fabs, helper, i64, public, rint, select, u8, u16, u64
from ._core import gpm_pow2i


@helper
def gpm_round_narrow(x: f64, p: i64, emin: i64, limit: f64) -> i64:
    """|x| rounded into a format of precision p, smallest normal exponent emin, as the magnitude
    bits; |x| must be below limit (where every larger value overflows), NaN excluded."""
    a = fabs(x)
    a = select(a < limit, a, 0.0)
    e = i64(as_u64(a) >> u64(52)) - i64(1023)
    e = select(e < emin, emin, e)
    n = rint(a * gpm_pow2i(p - i64(1) - e))
    return (e - emin) * (i64(1) << (p - i64(1))) + i64(n)


@public
def gpm_round_f16(x: f64) -> u16:
    sign = i64((as_u64(x) >> u64(48)) & u64(0x8000))
    mag = gpm_round_narrow(x, i64(11), i64(-14), 65536.0)
    mag = select(fabs(x) >= 65536.0, i64(0x7C00), mag)
    mag = select(x != x, i64(0x7E00), mag)
    return u16(sign | mag)


@public
def gpm_round_bf16(x: f64) -> u16:
    sign = i64((as_u64(x) >> u64(48)) & u64(0x8000))
    mag = gpm_round_narrow(x, i64(8), i64(-126), 3.402823669209385e+38)     # 2^128
    mag = select(fabs(x) >= 3.402823669209385e+38, i64(0x7F80), mag)
    mag = select(x != x, i64(0x7FC0), mag)
    return u16(sign | mag)


@public
def gpm_round_e4m3fn(x: f64) -> u8:
    sign = i64((as_u64(x) >> u64(56)) & u64(0x80))
    mag = gpm_round_narrow(x, i64(4), i64(-6), 480.0)
    mag = select((fabs(x) > 464.0) | (x != x), i64(0x7F), mag)
    return u8(sign | mag)


@public
def gpm_round_e5m2(x: f64) -> u8:
    sign = i64((as_u64(x) >> u64(56)) & u64(0x80))
    mag = gpm_round_narrow(x, i64(3), i64(-14), 65536.0)
    mag = select(fabs(x) >= 65536.0, i64(0x7C), mag)
    mag = select(x != x, i64(0x7E), mag)
    return u8(sign | mag)
