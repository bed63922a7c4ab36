"""The narrow float formats for the Numba CPU engine: float16, bfloat16, float8_e4m3fn and
float8_e5m2 values through their bit patterns.

Numba has no float16 on the CPU, so these arrays are read as uint16/uint8 patterns and converted
here, bit-exact with ``numpy`` / ``ml_dtypes`` ``astype`` (NaN payloads included): F16C where the
target has it (``HARDWARE_HALF``), branch-free bit manipulation elsewhere. Each public conversion
(``f16_to_f32``, ``f32_to_f16``, ...) is a ``numba.extending.overload`` of a plain function, as
``_numba_math`` describes. Apart from the elementwise math (``_numba_binary``) because the two
share nothing but the building blocks of ``_numba_intrinsics``.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import errors
from numba.extending import intrinsic, overload

from ...kernel.math.numba_binding import HARDWARE_HALF
from .intrinsics import (OVERLOAD_OPTIONS as _OVERLOAD, bitcast as _bitcast, call_jitted as _call_jitted,
                         helper_njit as _njit)

__all__ = [
    "f16_to_f32", "f32_to_f16", "f64_to_f16",
    "bf16_to_f32", "f32_to_bf16", "f64_to_bf16",
    "f16_to_f32_plain", "f32_to_f16_plain",
    "e4m3_to_f32", "f32_to_e4m3", "f64_to_e4m3",
    "e5m2_to_f32", "f32_to_e5m2", "f64_to_e5m2",
]




# LLVM's half <-> float conversions (one instruction with F16C; used when HARDWARE_HALF)

@intrinsic
def _half_bits_to_f32_exact(typingctx, bits):
    """float16 bits -> float32, NaN payloads kept as numpy keeps them (vcvtph2ps sets a
    signalling NaN's quiet bit): fpext, and for a NaN the float32 bits built from the half's, all
    in 32-bit lanes (the same in Numba's integers widened every lane to 64 bits: 4x the vector work)."""
    if bits != types.uint16:
        return None

    def codegen(context, builder, sig, args):
        # vcvtph2ps, then the quiet bit it set taken off again where the half was a signalling NaN
        # (its magnitude in 0x7C01 .. 0x7DFF): the test in 16-bit lanes, one masked xor in 32-bit
        # ones (five vector operations for 16 elements, where building the NaN's bits took eight)
        i16, i32 = ir.IntType(16), ir.IntType(32)
        wide = builder.bitcast(builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType()), i32)
        off = builder.sub(builder.and_(args[0], ir.Constant(i16, 0x7FFF)), ir.Constant(i16, 0x7C01))
        signalling = builder.icmp_unsigned("<", off, ir.Constant(i16, 0x01FF))
        kept = builder.select(signalling, builder.xor(wide, ir.Constant(i32, 0x00400000)), wide)
        return builder.bitcast(kept, ir.FloatType())
    return types.float32(bits), codegen


def _i32(v):
    return ir.Constant(ir.IntType(32), v)


@intrinsic
def _f32_to_half_bits_exact(typingctx, value):
    """float32 -> float16 bits, NaNs as numpy narrows them (npy_floatbits_to_halfbits: the top
    payload bits, signalling or not, a zero payload made 1; vcvtps2ph would quiet them): fptrunc,
    and for a NaN the half's bits built from the float's, in 32-bit lanes (as for the widening)."""
    if value != types.float32:
        return None

    def codegen(context, builder, sig, args):
        u = builder.bitcast(args[0], ir.IntType(32))
        a = builder.and_(u, _i32(0x7FFFFFFF))
        r = builder.add(_i32(0x7C00), builder.lshr(builder.and_(a, _i32(0x7FFFFF)), _i32(13)))
        r = builder.select(builder.icmp_unsigned("==", r, _i32(0x7C00)), _i32(0x7C01), r)
        nan = builder.trunc(builder.or_(r, builder.and_(builder.lshr(u, _i32(16)), _i32(0x8000))), ir.IntType(16))
        narrow = builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
        return builder.select(builder.icmp_unsigned(">", a, _i32(0x7F800000)), nan, narrow)
    return types.uint16(value), codegen


# The plain hardware conversions (vcvtph2ps / vcvtps2ph alone): for values no result's NaN payload
# depends on. A narrow math helper's operand (its result is the format's one quiet NaN for any NaN
# operand: the payload is not read) and its result (exact, or that quiet NaN, which both
# conversions narrow alike) go through these; engines/cpu/source.py decides where.

@intrinsic
def _half_bits_to_f32_plain(typingctx, bits):
    if bits != types.uint16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(bits), codegen


@intrinsic
def _f32_to_half_bits_plain(typingctx, value):
    if value != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(value), codegen


@intrinsic
def _f32_to_bf16_bits(typingctx, value):
    """float32 -> bfloat16 bits as ml_dtypes (Eigen's float_to_bfloat16_rtne): round to nearest
    even on the bits, every NaN the quiet NaN 0x7FC0 with its sign; in 32-bit lanes (the rounding
    add wraps only for NaNs, whose result is replaced)."""
    if value != types.float32:
        return None

    def codegen(context, builder, sig, args):
        u = builder.bitcast(args[0], ir.IntType(32))
        high = builder.lshr(u, _i32(16))
        nan = builder.or_(builder.and_(high, _i32(0x8000)), _i32(0x7FC0))
        r = builder.lshr(builder.add(builder.add(u, _i32(0x7FFF)), builder.and_(high, _i32(1))), _i32(16))
        is_nan = builder.icmp_unsigned(">", builder.and_(u, _i32(0x7FFFFFFF)), _i32(0x7F800000))
        return builder.trunc(builder.select(is_nan, nan, r), ir.IntType(16))
    return types.uint16(value), codegen


# --------------------------------------------------------------------------------------------
# Narrow float formats. Widening is exact; narrowing rounds to nearest even.
#
# why no lookup table: measured on 10**7 elements (float16 + float32 -> float32, AVX-512 box),
# F16C and the branch-free bit manipulation below both take ~3 ms (the loop is memory-bound),
# a 65536-entry float32 table 7.9 ms (gathers vectorise poorly), NumPy ~35 ms. Where the loop
# is not memory-bound F16C wins (float16 + float16 -> float16: 12 ms vs 20 ms for the bit
# version), so it is used when the target has it, with a select that restores numpy's NaN bits.

_TWO_M24 = np.float32(2.0 ** -24)   # float16 subnormal quantum
_TWO_M16 = np.float32(2.0 ** -16)   # float8_e5m2 subnormal quantum
_TWO_M9 = np.float32(2.0 ** -9)     # float8_e4m3fn subnormal quantum


@_njit
def _f32_of(bits):
    return _bitcast(np.uint32(bits), types.float32)


@_njit
def _bits_of_f32(x):
    return np.int64(_bitcast(x, types.uint32))


@_njit
def _f16_to_f32_soft(h):
    h = np.int64(h) & 0xFFFF
    mag = h & 0x7FFF
    r = (mag << 13) + (112 << 23)                       # normal: rebias 15 -> 127
    r = ((mag << 13) | 0x7F800000) if mag >= 0x7C00 else r   # inf/NaN, payload kept
    r = _bits_of_f32(np.float32(mag) * _TWO_M24) if mag < 0x0400 else r  # zero/subnormal
    return _f32_of(r | ((h & 0x8000) << 16))


@_njit
def _f16_to_f32_hw(h):
    # why: vcvtph2ps sets the quiet bit of a signalling NaN; numpy keeps the payload as is.
    return _half_bits_to_f32_exact(np.uint16(h))


@_njit
def _narrow_f32(a, shift, rebias, clamp, subnormal_below, magic):
    """Round |x| (float32 bits `a`, not NaN) to a format with `shift` fewer mantissa bits.

    Normal results: integer round-half-even on the bit pattern (a carry into the exponent is
    the correct next binade, and past the top it reaches the inf/NaN code, then `clamp`).
    Subnormal results: adding `magic` (whose ulp is the target's subnormal quantum) makes the
    FPU do the one correct rounding; the low bits of the sum are the result.
    """
    normal = min(((a + ((1 << (shift - 1)) - 1) + ((a >> shift) & 1)) >> shift) - rebias, clamp)
    subnormal = _bits_of_f32(_f32_of(a) + magic) - _bits_of_f32(magic)
    return subnormal if a < subnormal_below else normal


@_njit
def _f16_nan_bits(payload):
    # numpy (npy_floatbits_to_halfbits) keeps the top payload bits, signalling or not,
    # and only forces a non-zero mantissa so that the NaN stays a NaN.
    r = 0x7C00 + payload
    return r + 1 if r == 0x7C00 else r


@_njit
def _f32_to_f16_soft(x):
    u = _bits_of_f32(x)
    a = u & 0x7FFFFFFF
    r = _narrow_f32(a, 13, 112 << 10, 0x7C00, 113 << 23, np.float32(0.5))
    r = _f16_nan_bits((a & 0x7FFFFF) >> 13) if a > 0x7F800000 else r
    return np.uint16(r | ((u >> 16) & 0x8000))


@_njit
def _f32_to_f16_hw(x):
    return _f32_to_half_bits_exact(np.float32(x))


@_njit
def _f64_to_f16(x):
    # why: numpy rounds float64 -> float16 once, straight from the double
    # (npy_doublebits_to_halfbits); going through float32 would double-round.
    # Same scheme as _narrow_f32 on the int64 bit pattern (shift 52 - 10 = 42, rebias 1023 - 15).
    u = _bitcast(x, types.int64)
    a = u & 0x7FFFFFFFFFFFFFFF
    finite = min(a, 0x7FF0000000000000)   # NaN payloads must not overflow the rounding add
    normal = min(((finite + ((1 << 41) - 1) + ((finite >> 42) & 1)) >> 42) - (1008 << 10), 0x7C00)
    magic = 2.0 ** 28   # ulp(2**28) == 2**-24, the float16 subnormal quantum
    subnormal = _bitcast(_bitcast(a, types.float64) + magic, types.int64) - _bitcast(magic, types.int64)
    r = subnormal if a < (1009 << 52) else normal
    r = _f16_nan_bits((a & 0xFFFFFFFFFFFFF) >> 42) if a > 0x7FF0000000000000 else r
    return np.uint16(r | ((u >> 48) & 0x8000))


@_njit
def _f32_to_bf16(x):
    # ml_dtypes (Eigen's float_to_bfloat16_rtne) turns every NaN into the quiet NaN 0x7FC0,
    # keeping only the sign. The sign bit rides along in the rounding add: no carry reaches it.
    return _f32_to_bf16_bits(np.float32(x))


@_njit
def _f32_to_e4m3(x):
    u = _bits_of_f32(x)
    a = u & 0x7FFFFFFF
    # e4m3fn has no inf: ml_dtypes maps NaN, inf and overflow (>= 464, the midpoint past
    # 448) to the NaN code 0x7F with the input's sign; clamping to 0x7F does exactly that.
    r = _narrow_f32(a, 20, 120 << 3, 0x7F, 121 << 23, np.float32(16384.0))
    r = 0x7F if a > 0x7F800000 else r
    return np.uint8(r | ((u >> 24) & 0x80))


@_njit
def _f32_to_e5m2(x):
    u = _bits_of_f32(x)
    a = u & 0x7FFFFFFF
    # Rounds straight from float32 (not via float16). Overflow -> inf 0x7C; ml_dtypes turns
    # every NaN into 0x7E with the input's sign.
    r = _narrow_f32(a, 21, 112 << 2, 0x7C, 113 << 23, np.float32(128.0))
    r = 0x7E if a > 0x7F800000 else r
    return np.uint8(r | ((u >> 24) & 0x80))


@_njit
def _bf16_to_f32(h):
    # bfloat16 is the top half of a float32: exact, and ml_dtypes keeps NaN payloads too.
    return _f32_of((np.int64(h) & 0xFFFF) << 16)


@_njit
def _e4m3_to_f32(b):
    b = np.int64(b) & 0xFF
    mag = b & 0x7F
    r = (mag << 20) + (120 << 23)                              # rebias 7 -> 127
    r = _bits_of_f32(np.float32(mag) * _TWO_M9) if mag < 8 else r   # zero/subnormal
    r = 0x7FC00000 if mag == 0x7F else r                       # the only NaN code
    return _f32_of(r | ((b & 0x80) << 24))


@_njit
def _e5m2_to_f32(b):
    b = np.int64(b) & 0xFF
    mag = b & 0x7F
    r = (mag << 21) + (112 << 23)                              # rebias 15 -> 127
    r = _bits_of_f32(np.float32(mag) * _TWO_M16) if mag < 4 else r
    r = 0x7F800000 if mag == 0x7C else r
    r = 0x7FC00000 if mag > 0x7C else r   # ml_dtypes: every NaN widens to the quiet NaN
    return _f32_of(r | ((b & 0x80) << 24))


# --------------------------------------------------------------------------------------------
# Public names: a plain function (callable from Python through a jitted trampoline) plus the
# overload that njit code resolves.

def _conversion(name, impl, accepts, doc):
    def public(x):
        return _call_jitted(public, x)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc

    @overload(public, jit_options=_OVERLOAD)
    def _typer(x):
        if not accepts(x):
            raise errors.TypingError(f"{name}: unsupported argument type {x} ({doc})")
        return lambda x: impl(x)
    return public


def _is_int(t):
    return isinstance(t, types.Integer)


def _is_f32(t):
    return t == types.float32


def _is_f64(t):
    return t == types.float64


f16_to_f32 = _conversion("f16_to_f32", _f16_to_f32_hw if HARDWARE_HALF else _f16_to_f32_soft,
                         _is_int, "float16 bit pattern (uint16) -> float32, exact")
f32_to_f16 = _conversion("f32_to_f16", _f32_to_f16_hw if HARDWARE_HALF else _f32_to_f16_soft,
                         _is_f32, "float32 -> float16 bit pattern (uint16), as numpy astype")
f16_to_f32_plain = _conversion("f16_to_f32_plain", _half_bits_to_f32_plain if HARDWARE_HALF else _f16_to_f32_soft,
                               _is_int, "float16 bit pattern (uint16) -> float32, a NaN's payload as the hardware gives it")
f32_to_f16_plain = _conversion("f32_to_f16_plain", _f32_to_half_bits_plain if HARDWARE_HALF else _f32_to_f16_soft,
                               _is_f32, "float32 -> float16 bit pattern (uint16), a NaN's payload as the hardware gives it")
f64_to_f16 = _conversion("f64_to_f16", _f64_to_f16, _is_f64,
                         "float64 -> float16 bit pattern (uint16), one rounding, as numpy astype")
bf16_to_f32 = _conversion("bf16_to_f32", _bf16_to_f32, _is_int,
                          "bfloat16 bit pattern (uint16) -> float32, exact")
f32_to_bf16 = _conversion("f32_to_bf16", _f32_to_bf16, _is_f32,
                          "float32 -> bfloat16 bit pattern (uint16), as ml_dtypes astype")
e4m3_to_f32 = _conversion("e4m3_to_f32", _e4m3_to_f32, _is_int,
                          "float8_e4m3fn bit pattern (uint8) -> float32, exact")
f32_to_e4m3 = _conversion("f32_to_e4m3", _f32_to_e4m3, _is_f32,
                          "float32 -> float8_e4m3fn bit pattern (uint8), as ml_dtypes astype")
e5m2_to_f32 = _conversion("e5m2_to_f32", _e5m2_to_f32, _is_int,
                          "float8_e5m2 bit pattern (uint8) -> float32, exact")
f32_to_e5m2 = _conversion("f32_to_e5m2", _f32_to_e5m2, _is_f32,
                          "float32 -> float8_e5m2 bit pattern (uint8), as ml_dtypes astype")


# why: ml_dtypes (0.6) converts float64 to bfloat16 / float8 through float32, i.e. it rounds
# twice: 1 + 2**-8 + 2**-40 -> bfloat16 gives 1.0 (one rounding would give 1.0078125), and
# 1 + 2**-4 + 2**-30 -> float8_e4m3fn gives 1.0 (not 1.125). Checked on 10**6 random doubles
# too: astype(x) == astype(float32).astype(x) everywhere. Match it, unlike numpy's float16.
@_njit
def _f64_to_bf16(x):
    return _f32_to_bf16(np.float32(x))


@_njit
def _f64_to_e4m3(x):
    return _f32_to_e4m3(np.float32(x))


@_njit
def _f64_to_e5m2(x):
    return _f32_to_e5m2(np.float32(x))


f64_to_bf16 = _conversion("f64_to_bf16", _f64_to_bf16, _is_f64,
                          "float64 -> bfloat16 bit pattern (uint16), via float32 like ml_dtypes")
f64_to_e4m3 = _conversion("f64_to_e4m3", _f64_to_e4m3, _is_f64,
                          "float64 -> float8_e4m3fn bit pattern (uint8), via float32 like ml_dtypes")
f64_to_e5m2 = _conversion("f64_to_e5m2", _f64_to_e5m2, _is_f64,
                          "float64 -> float8_e5m2 bit pattern (uint8), via float32 like ml_dtypes")
