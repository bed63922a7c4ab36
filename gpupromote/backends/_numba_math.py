"""Compiled scalar helpers for the Numba CPU engine: the Python twins of ``kernels/*.cuh``.

Generated kernels do ``from gpupromote.backends._numba_math import *`` and call these names
inside ``@njit`` code. Two families:

* narrow float formats through bit patterns. Numba has no float16 on the CPU, so float16,
  bfloat16, float8_e4m3fn and float8_e5m2 arrays are read as uint16/uint8 patterns and
  converted here, bit-exact with ``numpy`` / ``ml_dtypes`` ``astype`` (NaN payloads included);
* ``gp_*`` elementwise math, generic over the (single) numba type of both arguments and
  returning that same type, with NumPy 2 semantics (plus two JAX/XLA integer variants).

Every helper is a ``numba.extending.overload`` of a plain Python function: the overload picks
an implementation per argument type at compile time (a generic-by-type function without
``generated_jit``), and LLVM inlines it into the calling loop, so the helpers vectorise with
it. Calling a helper from plain Python also works (it runs a jitted trampoline), which is
handy in a REPL; kernels never take that path.
"""
import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import config, errors
from numba.extending import intrinsic, overload
from numba.np.numpy_support import as_dtype

from ._numba_cache import cached_njit

__all__ = [
    "f16_to_f32", "f32_to_f16", "f64_to_f16",
    "bf16_to_f32", "f32_to_bf16", "f64_to_bf16",
    "e4m3_to_f32", "f32_to_e4m3", "f64_to_e4m3",
    "e5m2_to_f32", "f32_to_e5m2", "f64_to_e5m2",
    "gp_floor_divide", "gp_remainder", "gp_fmod", "gp_power",
    "gp_maximum", "gp_minimum", "gp_fmax", "gp_fmin",
    "gp_left_shift", "gp_right_shift",
    "gp_atan2", "gp_hypot", "gp_copysign", "gp_logaddexp", "gp_nextafter",
    "gp_floor_divide_xla", "gp_remainder_xla",
]

# why: float division by zero must give inf/nan as in NumPy, not raise ZeroDivisionError.
_JIT = {"error_model": "numpy"}
# cached in the kernels' tag folder, where a damaged file is dropped, not fatal (_numba_cache.py)
_njit = cached_njit(**_JIT)


def _hardware_half():
    """Whether LLVM lowers fpext/fptrunc between half and float to one instruction here.

    x86 needs F16C (vcvtph2ps / vcvtps2ph); AArch64 always has it. Elsewhere LLVM emits a
    libcall (__extendhfsf2) that Numba does not link, so the bit-manipulation path is used.
    Mirrors how Numba picks its target features (NUMBA_CPU_FEATURES, else the host's).
    """
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "amd64"):
        return False
    if config.CPU_FEATURES is not None:
        return "+f16c" in config.CPU_FEATURES.split(",")
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("f16c", False))


HARDWARE_HALF = _hardware_half()


# --------------------------------------------------------------------------------------------
# LLVM-level building blocks. Numba's own operators widen small ints to int64, turn
# uint64-with-int64 into float64 and guard integer division with a Python exception; these
# emit exactly one LLVM instruction on one type instead.

@intrinsic
def _bitcast(typingctx, value, totype):
    """Reinterpret the bits of a number as another number type of the same width."""
    target = getattr(totype, "instance_type", None)
    if not isinstance(value, (types.Integer, types.Float)) or \
            not isinstance(target, (types.Integer, types.Float)) or value.bitwidth != target.bitwidth:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(target))
    return target(value, totype), codegen


@intrinsic
def _half_bits_to_f32(typingctx, bits):
    """fpext half -> float (vcvtph2ps with F16C): exact, but quiets signalling NaNs."""
    if bits != types.uint16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(bits), codegen


@intrinsic
def _f32_to_half_bits(typingctx, value):
    """fptrunc float -> half (vcvtps2ph with F16C): round to nearest even; NaNs get quieted."""
    if value != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(value), codegen


def _same_type_int_op(signed_op, unsigned_op):
    @intrinsic
    def op(typingctx, a, b):
        if not isinstance(a, types.Integer) or a != b:
            return None

        def codegen(context, builder, sig, args):
            name = signed_op if sig.args[0].signed else unsigned_op
            return getattr(builder, name)(*args)
        return a(a, b), codegen
    return op


# Wrapping arithmetic in the operands' own width. Division, remainder and shifts are
# undefined for a zero divisor, INT_MIN / -1 or a shift >= the width: callers guard those.
_iadd = _same_type_int_op("add", "add")
_isub = _same_type_int_op("sub", "sub")
_imul = _same_type_int_op("mul", "mul")
_idiv = _same_type_int_op("sdiv", "udiv")   # truncating
_irem = _same_type_int_op("srem", "urem")   # sign of the dividend
_ishl = _same_type_int_op("shl", "shl")
_ishr = _same_type_int_op("ashr", "lshr")


@intrinsic
def _frem(typingctx, a, b):
    """LLVM frem, i.e. C fmod/fmodf (exact)."""
    if not isinstance(a, types.Float) or a != b:
        return None

    def codegen(context, builder, sig, args):
        return builder.frem(*args)
    return a(a, b), codegen


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
    h = np.uint16(h)
    mag = np.int64(h) & 0x7FFF
    # why: vcvtph2ps sets the quiet bit of a signalling NaN; numpy keeps the payload as is.
    nan = _f32_of(((np.int64(h) & 0x8000) << 16) | 0x7F800000 | (mag << 13))
    return nan if mag > 0x7C00 else _half_bits_to_f32(h)


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
    u = _bits_of_f32(x)
    a = u & 0x7FFFFFFF
    nan = np.uint16(_f16_nan_bits((a & 0x7FFFFF) >> 13) | ((u >> 16) & 0x8000))
    return nan if a > 0x7F800000 else _f32_to_half_bits(x)


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
    u = _bits_of_f32(x)
    # ml_dtypes (Eigen's float_to_bfloat16_rtne) turns every NaN into the quiet NaN 0x7FC0,
    # keeping only the sign. The sign bit rides along in the rounding add: no carry reaches it.
    nan = ((u >> 16) & 0x8000) | 0x7FC0
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.uint16(nan if (u & 0x7FFFFFFF) > 0x7F800000 else r)


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

_TRAMPOLINES = {}


def _call_jitted(fn, *args):
    tramp = _TRAMPOLINES.get(fn)
    if tramp is None:
        tramp = njit(lambda x: fn(x)) if len(args) == 1 else njit(lambda x, y: fn(x, y))
        _TRAMPOLINES[fn] = tramp
    return tramp(*args)


def _conversion(name, impl, accepts, doc):
    def public(x):
        return _call_jitted(public, x)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc

    @overload(public, jit_options=_JIT)
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


# --------------------------------------------------------------------------------------------
# Elementwise math. Each typer gets the numba type `t` of both arguments and returns an
# implementation for it. Constants are numpy scalars of the argument's own type, so that no
# expression drifts to int64 (int8 + int8 in numba) or float64 (uint64 with an int literal).

_BOOL, _SIGNED, _UNSIGNED, _FLOAT, _COMPLEX = "bool", "signed", "unsigned", "float", "complex"


def _kind(t):
    if isinstance(t, types.Boolean):
        return _BOOL
    if isinstance(t, types.Integer):
        return _SIGNED if t.signed else _UNSIGNED
    if isinstance(t, types.Float):
        return _FLOAT
    if isinstance(t, types.Complex):
        return _COMPLEX
    return None


def _binary(name, kinds):
    """Declare the public `name`(a, b). The decorated function is its typer: given the numba
    type `t` of both arguments and its kind, it returns the implementation for that type; its
    docstring becomes the public function's."""
    def deco(typer):
        def public(a, b):
            return _call_jitted(public, a, b)
        public.__name__ = public.__qualname__ = name
        public.__doc__ = typer.__doc__

        @overload(public, jit_options=_JIT)
        def _typer(a, b):
            if a != b:
                raise errors.TypingError(
                    f"{name}: both arguments must have the same type (cast to the compute "
                    f"dtype first), got {a} and {b}")
            kind = _kind(a)
            if kind not in kinds:
                raise errors.TypingError(f"{name}: unsupported type {a}; supports {', '.join(kinds)}")
            return typer(a, kind)
        return public
    return deco


def _consts(t, *values):
    scalar = as_dtype(t).type
    return tuple(scalar(v) for v in values)


_INTS = (_SIGNED, _UNSIGNED)
_REAL = (_SIGNED, _UNSIGNED, _FLOAT)


@_njit
def _float_divmod(a, b, zero, one, half):
    """NumPy's npy_divmod (CPython's float divmod) for b != 0: (floor quotient, remainder)."""
    mod = _frem(a, b)
    div = (a - mod) / b          # very nearly an integer multiple of b
    if mod != zero:
        if (b < zero) != (mod < zero):   # make the remainder take the divisor's sign
            mod = mod + b
            div = div - one
    else:
        mod = np.copysign(zero, b)
    if div != zero:
        floordiv = np.floor(div)
        if div - floordiv > half:        # snap to the nearest integral value
            floordiv = floordiv + one
    else:
        floordiv = np.copysign(zero, a / b)
    return floordiv, mod


def _floor_divide_typer(t, kind, xla):
    zero, one, m1, half = _consts(t, 0, 1, 0 if kind == _UNSIGNED else -1,
                                  0.5 if kind == _FLOAT else 0)
    if kind == _FLOAT:
        def impl(a, b):
            # b == 0: plain division gives numpy's inf/nan; NaN b takes the divmod path like C's !b
            return a / b if b == zero else _float_divmod(a, b, zero, one, half)[0]
        return impl
    if kind == _UNSIGNED:
        by_zero = ~zero if xla else zero     # XLA: x / 0 is all ones
        return lambda a, b: by_zero if b == zero else _idiv(a, one if b == zero else b)
    (m2,) = _consts(t, -2)

    def impl(a, b):
        special = (b == zero) | (b == m1)
        d = one if special else b        # never divide by 0 or -1: x86 idiv traps on INT_MIN / -1
        q = _idiv(a, d)
        r = _irem(a, d)
        q = _isub(q, one) if (r != zero) & ((r < zero) != (d < zero)) else q
        if b == zero:
            # numpy: 0. JAX: XLA gives x / 0 == -1, then the floor fix-up subtracts 1
            # because sign(x) != sign(0) and x % 0 == x != 0, i.e. -2 unless x == 0.
            return (m1 if a == zero else m2) if xla else zero
        return _isub(zero, a) if special else q    # x // -1 == -x, wrapping: INT_MIN stays
    return impl


@_binary("gp_floor_divide", _REAL)
def gp_floor_divide(t, kind):
    """NumPy floor_divide: ints floor toward -inf, x // 0 == 0, INT_MIN // -1 == INT_MIN
    (wraps, never traps); floats as npy_floor_divide (fmod-based divmod, x / 0 for b == 0)."""
    return _floor_divide_typer(t, kind, xla=False)


@_binary("gp_floor_divide_xla", _REAL)
def gp_floor_divide_xla(t, kind):
    """jnp.floor_divide: equal to gp_floor_divide except for an integer divisor of 0.

    JAX computes q = lax.div(x, y) (XLA truncating division: x / 0 == -1 for signed types,
    all ones for unsigned ones, INT_MIN / -1 == INT_MIN) and, for signed types, returns q - 1
    where sign(x) != sign(y) and lax.rem(x, y) != 0 (XLA: x % 0 == x). Hence
    signed x // 0 == -2 for x != 0 and -1 for x == 0; unsigned x // 0 == MAX (uint8: 255).
    Floats: same as NumPy.
    """
    return _floor_divide_typer(t, kind, xla=True)


def _remainder_typer(t, kind):
    zero, one, m1, half = _consts(t, 0, 1, 0 if kind == _UNSIGNED else -1,
                                  0.5 if kind == _FLOAT else 0)
    if kind == _FLOAT:
        def impl(a, b):
            return _frem(a, b) if b == zero else _float_divmod(a, b, zero, one, half)[1]
        return impl
    if kind == _UNSIGNED:
        return lambda a, b: zero if b == zero else _irem(a, one if b == zero else b)

    def impl(a, b):
        special = (b == zero) | (b == m1)   # x % 0 == 0 (numpy), x % -1 == 0; no idiv trap
        d = one if special else b
        r = _irem(a, d)
        r = _iadd(r, d) if (r != zero) & ((r < zero) != (d < zero)) else r
        return zero if special else r
    return impl


@_binary("gp_remainder", _REAL)
def gp_remainder(t, kind):
    """NumPy remainder (Python %): result has the divisor's sign; ints: x % 0 == 0 and
    INT_MIN % -1 == 0; floats as npy_remainder (fmod for b == 0, i.e. nan)."""
    return _remainder_typer(t, kind)


@_binary("gp_remainder_xla", _REAL)
def gp_remainder_xla(t, kind):
    """jnp.remainder: JAX replaces an integer divisor of 0 by 1 before lax.rem (so x % 0 == 0)
    and XLA gives INT_MIN % -1 == 0, then adds y where the truncated remainder's sign differs
    from y's. That is NumPy's result for every integer input, and floats are NumPy's too.
    Note: older JAX releases did not substitute the zero divisor and returned x for x % 0."""
    return _remainder_typer(t, kind)


@_binary("gp_fmod", _REAL)
def gp_fmod(t, kind):
    """NumPy fmod (C fmod): result has the dividend's sign; ints: x fmod 0 == 0, and
    INT_MIN fmod -1 == 0 without trapping."""
    if kind == _FLOAT:
        return lambda a, b: _frem(a, b)
    zero, one, m1 = _consts(t, 0, 1, 0 if kind == _UNSIGNED else -1)
    if kind == _UNSIGNED:
        return lambda a, b: zero if b == zero else _irem(a, one if b == zero else b)

    def impl(a, b):
        special = (b == zero) | (b == m1)
        return zero if special else _irem(a, one if special else b)
    return impl


@_njit
def _cmul(ar, ai, br, bi):
    # npy_cpow's cmul: the textbook formula, no C99 Annex G inf recovery
    return ar * br - ai * bi, ar * bi + ai * br


@_njit
def _cdiv(ar, ai, br, bi, one):
    # npy_cpow's cdiv (Smith's algorithm); `one` carries the precision
    abs_br, abs_bi = abs(br), abs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0 and abs_bi == 0:
            return ar / abs_br, ai / abs_bi
        rat = bi / br
        scl = one / (br + bi * rat)
        return (ar + ai * rat) * scl, (ai - ar * rat) * scl
    rat = br / bi
    scl = one / (bi + br * rat)
    return (ar * rat + ai) * scl, (ai * rat - ar) * scl


@_njit
def _cmul_annex_g(a, b, c, d):
    """(a + bi)(c + di) with C99 Annex G's recovery of infinities (libgcc's __muldc3, what glibc's
    cpow multiplies b * log(a) with): an infinite factor times a finite nonzero one is infinite,
    not nan. The CUDA twin is gp_detail::cmul_annex_g_."""
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    if np.isnan(x) and np.isnan(y):
        recalc = False
        if np.isinf(a) or np.isinf(b):
            a, b = np.copysign(1.0 if np.isinf(a) else 0.0, a), np.copysign(1.0 if np.isinf(b) else 0.0, b)
            c, d = (np.copysign(0.0, c) if np.isnan(c) else c), (np.copysign(0.0, d) if np.isnan(d) else d)
            recalc = True
        if np.isinf(c) or np.isinf(d):
            c, d = np.copysign(1.0 if np.isinf(c) else 0.0, c), np.copysign(1.0 if np.isinf(d) else 0.0, d)
            a, b = (np.copysign(0.0, a) if np.isnan(a) else a), (np.copysign(0.0, b) if np.isnan(b) else b)
            recalc = True
        if not recalc and (np.isinf(ac) or np.isinf(bd) or np.isinf(ad) or np.isinf(bc)):
            a, b = (np.copysign(0.0, a) if np.isnan(a) else a), (np.copysign(0.0, b) if np.isnan(b) else b)
            c, d = (np.copysign(0.0, c) if np.isnan(c) else c), (np.copysign(0.0, d) if np.isnan(d) else d)
            recalc = True
        if recalc:
            x, y = np.inf * (a * c - b * d), np.inf * (a * d + b * c)
    return x, y


def _complex_power(t):
    ftype = as_dtype(t.underlying_float).type
    ctype = as_dtype(t).type
    fzero, fone = ftype(0), ftype(1)
    nan = ftype(np.nan)

    def impl(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if br == fzero and bi == fzero:
            return ctype(1)
        if ar == fzero and ai == fzero:
            return ctype(0) if br > fzero else ctype(complex(nan, nan))
        if bi == fzero and br > -100 and br < 100 and br == np.floor(br):
            # npy_cpow: small integer exponents by repeated multiplication in the
            # operands' precision (more accurate than cpow and what numpy returns)
            n = np.int64(br)
            if n == 1:
                return a
            if n == 2:
                xr, xi = _cmul(ar, ai, ar, ai)
                return ctype(complex(xr, xi))
            if n == 3:
                xr, xi = _cmul(ar, ai, ar, ai)
                xr, xi = _cmul(ar, ai, xr, xi)
                return ctype(complex(xr, xi))
            n = abs(n)
            rr, ri, pr, pi = fone, fzero, ar, ai
            mask = 1
            while True:
                if n & mask:
                    rr, ri = _cmul(rr, ri, pr, pi)
                mask <<= 1
                if n < mask:
                    break
                pr, pi = _cmul(pr, pi, pr, pi)
            if br < fzero:
                rr, ri = _cdiv(fone, fzero, rr, ri, fone)
            return ctype(complex(rr, ri))
        # Note: numpy calls the C library's cpow/cpowf here; exp(b * log(a)) in double
        # precision agrees to a few ulp (complex64: usually closer to the exact value).
        # The CUDA twin, gp_detail::cpow_exp_log_, spells out numba's complex log and exp and
        # this product step by step: keep the two in step.
        la = np.log(np.complex128(a))
        wr, wi = _cmul_annex_g(np.float64(br), np.float64(bi), la.real, la.imag)
        w = complex(wr, wi)
        if w.imag == 0:
            # exp(x + 0i) is exp(x) + 0i (C99 Annex G, as cpow and thrust's exp give): no inf * 0
            return ctype(complex(np.exp(w.real), w.imag))
        return ctype(np.exp(w))
    return impl


def _quiet_nan(t):
    """x -> x with its quiet bit set (a NaN keeps its sign and payload), for float type ``t``:
    what an x86 operation returns for a NaN operand."""
    bits = types.uint32 if t == types.float32 else types.uint64
    unsigned = as_dtype(bits).type
    quiet = unsigned(1 << (22 if t == types.float32 else 51))

    @njit(**_JIT)
    def quiet_nan(x):
        return _bitcast(unsigned(_bitcast(x, bits) | quiet), t)   # why: Numba widens uint32 | uint32
    return quiet_nan


@_binary("gp_power", (_SIGNED, _UNSIGNED, _FLOAT, _COMPLEX))
def gp_power(t, kind):
    """NumPy power. Ints: exponentiation by squaring with wrapping multiplication; a negative
    exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise (numpy rejects negative integer
    exponents before the loop; that check lives in the dispatcher). Floats: C pow (a NaN base
    comes back quieted with its sign, as C's pow returns it; LLVM's pow(x, +-1) would not).
    Complex: npy_cpow (exact small-integer powers, cpow otherwise)."""
    if kind == _FLOAT:
        quiet, (zero,) = _quiet_nan(t), _consts(t, 0)
        return lambda a, b: quiet(a) if (a != a) & (b != zero) else a ** b
    if kind == _COMPLEX:
        return _complex_power(t)
    zero, one, m1 = _consts(t, 0, 1, 0 if kind == _UNSIGNED else -1)

    def impl(a, b):
        if b < zero:
            if a == one:
                return one
            if a == m1:
                return m1 if (b & one) != zero else one
            return zero
        r, base, e = one, a, b
        while e != zero:
            if (e & one) != zero:
                r = _imul(r, base)
            base = _imul(base, base)
            e = _ishr(e, one)
        return r
    return impl


@_njit
def _complex_ge(xr, xi, yr, yi):
    return ((xr > yr) & (xi == xi) & (yi == yi)) | ((xr == yr) & (xi >= yi))


@_njit
def _complex_le(xr, xi, yr, yi):
    return ((xr < yr) & (xi == xi) & (yi == yi)) | ((xr == yr) & (xi <= yi))


def _minmax(t, kind, greater, propagate_nan):
    """Shared body of maximum/minimum (NaN-propagating) and fmax/fmin (NaN-ignoring)."""
    if kind == _BOOL:
        return (lambda a, b: a | b) if greater else (lambda a, b: a & b)
    if kind in _INTS:
        return (lambda a, b: a if a > b else b) if greater else (lambda a, b: a if a < b else b)
    if kind == _FLOAT:
        # numpy's float32/float64 loops (SIMD and scalar alike) return b on ties, so
        # maximum(-0.0, 0.0) is 0.0 and maximum(0.0, -0.0) is -0.0; a NaN `a` wins over a NaN `b`.
        # fmax/fmin follow numpy's scalar loop (C fmax): `a` on ties, `b` if both are NaN.
        # Note: numpy's own SIMD fmax/fmin loops are not consistent about which zero or NaN
        # they return for ties / double NaN; the scalar loop is the reference here.
        if propagate_nan:
            if greater:
                return lambda a, b: a if (a > b) | (a != a) else b
            return lambda a, b: a if (a < b) | (a != a) else b
        if greater:
            return lambda a, b: b if (b > a) | (a != a) else a
        return lambda a, b: b if (b < a) | (a != a) else a

    # complex: numpy's lexicographic order (CGE / CLE in loops.c.src), NaN in either part
    # counts as NaN.
    cmp = _complex_ge if greater else _complex_le

    if propagate_nan:
        def impl(a, b):
            a_nan = (a.real != a.real) | (a.imag != a.imag)
            return a if a_nan | cmp(a.real, a.imag, b.real, b.imag) else b
    else:
        def impl(a, b):
            b_nan = (b.real != b.real) | (b.imag != b.imag)
            return a if b_nan | cmp(a.real, a.imag, b.real, b.imag) else b
    return impl


_ALL = (_BOOL, _SIGNED, _UNSIGNED, _FLOAT, _COMPLEX)


@_binary("gp_maximum", _ALL)
def gp_maximum(t, kind):
    """NumPy maximum: NaN if either argument is NaN; complex in lexicographic order."""
    return _minmax(t, kind, greater=True, propagate_nan=True)


@_binary("gp_minimum", _ALL)
def gp_minimum(t, kind):
    """NumPy minimum: NaN if either argument is NaN; complex in lexicographic order."""
    return _minmax(t, kind, greater=False, propagate_nan=True)


@_binary("gp_fmax", _ALL)
def gp_fmax(t, kind):
    """NumPy fmax: a NaN argument is ignored (NaN only if both are)."""
    return _minmax(t, kind, greater=True, propagate_nan=False)


@_binary("gp_fmin", _ALL)
def gp_fmin(t, kind):
    """NumPy fmin: a NaN argument is ignored (NaN only if both are)."""
    return _minmax(t, kind, greater=False, propagate_nan=False)


@_binary("gp_left_shift", _INTS)
def gp_left_shift(t, kind):
    """NumPy left_shift (npy_lshift): wraps in the type; a shift >= the bit width or < 0 gives 0."""
    zero, width = _consts(t, 0, t.bitwidth)

    def impl(a, b):
        ok = (b >= zero) & (b < width)
        return _ishl(a, b if ok else zero) if ok else zero
    return impl


@_binary("gp_right_shift", _INTS)
def gp_right_shift(t, kind):
    """NumPy right_shift (npy_rshift): arithmetic for signed types; a shift >= the bit width
    or < 0 gives 0, or -1 when a signed `a` is negative (the sign fills every bit)."""
    zero, width, top = _consts(t, 0, t.bitwidth, t.bitwidth - 1)

    def impl(a, b):
        ok = (b >= zero) & (b < width)
        return _ishr(a, b if ok else top)   # ashr by width-1 is exactly 0 or -1
    if kind == _SIGNED:
        return impl

    def impl_unsigned(a, b):
        ok = b < width
        return _ishr(a, b if ok else zero) if ok else zero
    return impl_unsigned


@_binary("gp_atan2", (_FLOAT,))
def gp_atan2(t, kind):
    """C atan2 / atan2f."""
    import math
    return lambda a, b: math.atan2(a, b)


@_binary("gp_hypot", (_FLOAT,))
def gp_hypot(t, kind):
    """C hypot / hypotf."""
    import math
    return lambda a, b: math.hypot(a, b)


@_binary("gp_copysign", (_FLOAT,))
def gp_copysign(t, kind):
    """|a| with the sign bit of b (NaN signs included)."""
    return lambda a, b: np.copysign(a, b)


@_binary("gp_logaddexp", (_FLOAT,))
def gp_logaddexp(t, kind):
    """npy_logaddexp: log(exp(a) + exp(b)) without overflow; a == b (inf included) gives
    a + log(2); a NaN gives NaN."""
    import math
    (loge2,) = _consts(t, np.log(2.0))
    zero = _consts(t, 0)[0]

    def impl(a, b):
        if a == b:
            return a + loge2
        tmp = a - b
        if tmp > zero:
            return a + math.log1p(math.exp(-tmp))
        if tmp <= zero:
            return b + math.log1p(math.exp(tmp))
        return tmp   # NaN
    return impl


@_binary("gp_nextafter", (_FLOAT,))
def gp_nextafter(t, kind):
    """C nextafter / nextafterf: the next representable value of a's own type toward b
    (so float32 steps by a float32 ulp); a NaN operand comes back quieted (b if both are),
    a == b gives b."""
    bits = types.int32 if t == types.float32 else types.int64
    zero, tiny = _consts(t, 0, np.finfo(as_dtype(t)).smallest_subnormal)
    to_int = as_dtype(bits).type

    quiet = _quiet_nan(t)

    def impl(a, b):
        # the NaN operand (b if both are), quieted, sign kept: glibc's x + y as NumPy runs it
        if b != b:
            return quiet(b)
        if a != a:
            return quiet(a)
        if a == b:
            return b
        if a == zero:
            return np.copysign(tiny, b)
        u = np.int64(_bitcast(a, bits))
        # the magnitude bits grow away from zero for either sign
        u = u + 1 if (a < b) == (a > zero) else u - 1
        return _bitcast(to_int(u), t)
    return impl
