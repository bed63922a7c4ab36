"""Elementwise binary math for the Numba CPU engine: the ``gp_*`` helpers (floor_divide, remainder,
fmod, integer power, maximum / minimum / fmax / fmin, shifts, copysign, nextafter, and two JAX/XLA
integer variants), with NumPy 2 semantics. The transcendental ones (atan2, hypot, logaddexp, float
and complex power) are the owned math library's (owned_math.py).

Each is generic over the (single) numba type of both arguments and returns that same type: a
``numba.extending.overload`` of a plain function, declared by ``_binary``.
"""
import numpy as np
from numba import njit, types
from numba.core import errors
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from .intrinsics import (JIT_OPTIONS as _JIT, OVERLOAD_OPTIONS as _OVERLOAD, bitcast as _bitcast,
                         call_jitted as _call_jitted, frem as _frem, helper_njit as _njit, iadd as _iadd, idiv as _idiv,
                         imul as _imul, irem as _irem, ishl as _ishl, ishr as _ishr, isub as _isub)

__all__ = [
    "gp_floor_divide", "gp_remainder", "gp_fmod", "gp_power",
    "gp_maximum", "gp_minimum", "gp_fmax", "gp_fmin",
    "gp_left_shift", "gp_right_shift",
    "gp_copysign", "gp_nextafter",
    "gp_floor_divide_xla", "gp_remainder_xla", "gp_remainder_keepzero", "gp_floor_divide_jaxf", "gp_power_xla",
]


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

        @overload(public, jit_options=_OVERLOAD)
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


@_binary("gp_remainder_keepzero", (_FLOAT,))
def gp_remainder_keepzero(t, kind):
    """torch.remainder and jnp.remainder on floats: fmod, plus b where the remainder's sign differs
    from b's; a zero remainder keeps fmod's sign, the dividend's (NumPy's takes the divisor's)."""
    zero = _consts(t, 0)[0]

    def impl(a, b):
        mod = _frem(a, b)
        return mod + b if (mod != zero) & ((b < zero) != (mod < zero)) else mod
    return impl


@_binary("gp_floor_divide_jaxf", (_FLOAT,))
def gp_floor_divide_jaxf(t, kind):
    """jnp.floor_divide on floats (CPython's float_divmod, as jax._src.numpy.ufuncs._float_divmod):
    (a - fmod(a, b)) / b (a / b where b is 0), minus 1 where the remainder's sign differs from b's,
    rounded half away from zero. Its zeros differ from NumPy's: -0.0 // 5 is +0.0."""
    zero, one, half = _consts(t, 0, 1, 0.5)

    def impl(a, b):
        mod = _frem(a, b)
        div = (a if b == zero else a - mod) / b
        sign_b = one if b > zero else (-one if b < zero else b)
        sign_m = one if mod > zero else (-one if mod < zero else mod)
        if (mod != zero) & (sign_b != sign_m):
            div = div - one
        r = np.trunc(div)
        return r + np.copysign(one, div) if np.abs(div - r) >= half else r
    return impl


@_binary("gp_power_xla", _INTS)
def gp_power_xla(t, kind):
    """jnp.power on integer arrays: binary exponentiation over the exponent's low 6 bits (six
    rounds), wrapping: x ** y is x ** (y & 63), so 2 ** -1 is 2 ** 63 (INT64_MIN in int64)."""
    one, mask = _consts(t, 1, 63)
    same = as_dtype(t).type   # why: Numba widens int32 & int32 to int64

    def impl(a, b):
        r, base, e = one, a, same(b & mask)
        for _ in range(6):
            if (e & one) != 0:
                r = _imul(r, base)
            base = _imul(base, base)
            e = _ishr(e, one)
        return r
    return impl


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


@_binary("gp_power", (_SIGNED, _UNSIGNED))
def gp_power(t, kind):
    """NumPy power on integers: exponentiation by squaring with wrapping multiplication; a
    negative exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise (numpy rejects negative
    integer exponents before the loop; that check lives in the dispatcher). Float and complex
    powers are the owned ones (owned_math.gp_powerf, gp_power_complex)."""
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


@_binary("gp_copysign", (_FLOAT,))
def gp_copysign(t, kind):
    """|a| with the sign bit of b (NaN signs included)."""
    return lambda a, b: np.copysign(a, b)


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
