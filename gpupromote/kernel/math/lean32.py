"""Lean float32 evaluations for the narrow entry points: a function in float32 arithmetic only, to
about float32's precision, for ``gpm_<f>_f16`` / ``gpm_<f>_bf16`` to round to 11 or 8 bits.

Why: a float16 kernel's vector loop converts 16 lanes at a time (F16C) and then runs 16 float32
lanes of the function; the float32 paths the other narrow entries round (``gpm_<f>_f32_raw``) are
double evaluations, 8 lanes with 64-bit integer work: 10**7 float16 tanh, one thread, 5.2 ms
through the raw path's loop, 2.05 through a table (tables.py), 1.03 through this one's.

Nothing here is correctly rounded in float32, and nothing needs to be: the narrow results are
checked on all 65,536 inputs of each format (tests/kernel/math/find_narrow_exceptions.py picks a
lean path only where rounding it needs at most a few fixes, and writes them;
test_narrow_exhaustive.py holds every entry to the correctly rounded result). A lean path's value
on a NaN input is not read (the entries round with gpm_narrow_<fmt>_nan_in), except where x86 gives
the NaN input back through it (tanh: gpm_narrow_f16_carried, whose rounding there has no select).
"""
from __future__ import annotations

from ._core import gpm_max_f32, gpm_min_f32
from ._dsl import as_f32, as_u32, f32, fma, helper, i64, u32


@helper
def gpm_tanh_f32_lean(x: f32) -> f32:
    """tanh(x) within 3.4 float32 ulps for the float16 values |x| <= 4.75 (measured against mpmath),
    tanh(+-4.75) beyond: c P(c^2) / Q(c^2), c = x clamped to +-4.75 (tanh rounds to +-1 in float16
    from |x| = 4.5054 on, in bfloat16 from 3.4652). tanh(c) / c
    = P / Q, degrees 3 and 3 in c^2: a least-squares fit of the relative error at Chebyshev nodes in
    c^2 (mpmath's tanh), 2^-24.6 before rounding, then both divided by Q's leading coefficient and
    rounded to float32: Q's Horner scheme starts with an addition, which runs beside the multiply-adds
    (float16 tanh in the cache: 5.5 -> 5.3 cycles per 16 elements). Rounded to float16 it needs no fix
    on any input, where degrees 3 and 2 needed 25. Float arithmetic and NaN-passing selects alone: the
    float16 entry rounds it with gpm_narrow_f16_carried."""
    # the clamp's selects pass a NaN x on (a NaN second operand is the one returned), so a NaN x
    # reaches the result as itself, quieted, on x86 (narrow32.gpm_narrow_f16_carried)
    c = gpm_min_f32(f32(4.75), gpm_max_f32(f32(-4.75), x))
    s = c * c
    p = fma(s, fma(s, fma(s, f32(0.03101339191198349), f32(14.72926139831543)), f32(731.1760864257812)),
            f32(5816.1357421875))
    q = fma(s, fma(s, s + f32(129.21044921875), f32(2669.8857421875)), f32(5816.13623046875))
    return c * p / q


@helper
def gpm_exp_f32_lean(x: f32) -> f32:
    """exp(x) within 0.8 float32 ulp for the float16 values x in [-17.3, 11.1] (measured against
    mpmath); x is clamped to [-18, 12], where float16's exp rounds to 0 below -17.33 and to inf
    above 11.09 (bfloat16's range is wider: the scan keeps its raw path). k = round(x / ln 2) in
    the shifter's low bits, r = x - k ln 2 in two steps (ln 2's high part has 14 bits, so k ln2_hi
    is exact), e^r = 1 + r + r^2 q(r) with q of degree 4 (a
    least-squares fit, 2^-27.9 relative over |r| <= 0.35), then k added to the exponent. Rounded to
    float16 it needs two fixes (inputs within 0.1 float32 ulp of a float16 tie: 0x1f79, 0x25cf)."""
    a = gpm_min_f32(gpm_max_f32(x, f32(-18.0)), f32(12.0))
    m = fma(a, f32(1.4426950216293335), f32(12582912.0))      # 1.5 * 2^23: k in the low bits
    k = m - f32(12582912.0)
    r = fma(k, f32(-0.693145751953125), a)
    r = fma(k, f32(-1.428606765330187e-06), r)
    q = fma(r, fma(r, fma(r, fma(r, f32(0.0013748822966590524), f32(0.008369628340005875)), f32(0.04166964441537857)),
                   f32(0.16666512191295624)), f32(0.49999988079071045))
    p = fma(r, fma(r, q, f32(1.0)), f32(1.0))
    # p * 2^k as k added to p's exponent field (k << 23 modulo 2^32 from the shifter's bits; every
    # result is normal after the clamp), an integer add where a multiply took an FMA pipe
    return as_f32(u32(i64(as_u32(p)) + (i64(as_u32(m)) << i64(23))))
