"""gpupromote.engines.cpu.helpers against NumPy / ml_dtypes.

Narrow-float conversions: exhaustive widening, dense rounding-boundary sweeps for narrowing,
compared bit for bit. Math helpers: every applicable dtype on an edge-value grid (all pairs)
plus random pairs, bit-exact for exact ops and within 1 ulp of NumPy for the owned math functions
(correctly rounded themselves, tests/kernel/math). Helpers are
called through small @njit loops (array in, array out) so each sweep runs compiled.
"""
import functools
import subprocess
import sys
import textwrap
import warnings

import ml_dtypes
import numba
import numpy as np
import pytest
from numba import njit

from gpupromote.engines.cpu import narrow as N
from tests.support import tier
from gpupromote.engines.cpu.helpers import *  # noqa: F403 - the names generated kernels use
from gpupromote.engines.cpu.owned_math import gp_atan2, gp_hypot, gp_logaddexp, gp_power_complex, gp_powerf

RNG_SEED = 20240611


@functools.lru_cache(maxsize=None)
def unary_loop(fn):
    @njit(error_model="numpy")
    def run(a, out):
        for i in range(a.size):
            out[i] = fn(a[i])
    return run


def uint_view(x):
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


# ============================================================================================
# 1. Narrow float formats

BF16, E4M3, E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2

WIDEN = [  # id, helper, bit-pattern dtype, logical dtype
    ("f16_to_f32", f16_to_f32, np.uint16, np.float16),
    ("f16_to_f32[soft]", N._f16_to_f32_soft, np.uint16, np.float16),
    ("f16_to_f32[hw]", N._f16_to_f32_hw, np.uint16, np.float16),
    ("bf16_to_f32", bf16_to_f32, np.uint16, BF16),
    ("e4m3_to_f32", e4m3_to_f32, np.uint8, E4M3),
    ("e5m2_to_f32", e5m2_to_f32, np.uint8, E5M2),
]


@pytest.mark.parametrize("name,fn,bits,logical", WIDEN, ids=[w[0] for w in WIDEN])
def test_widen_every_pattern(name, fn, bits, logical):
    if name.endswith("[hw]") and not N.HARDWARE_HALF:
        pytest.skip("no hardware half conversion on this CPU")
    patterns = np.arange(np.iinfo(bits).max + 1, dtype=np.int64).astype(bits)
    out = np.empty(patterns.size, np.float32)
    unary_loop(fn)(patterns, out)
    expected = patterns.view(logical).astype(np.float32)
    # bit-exact, NaN payloads included (numpy and bfloat16 keep them, float8 NaNs become 0x7FC00000)
    bad = np.flatnonzero(uint_view(out) != uint_view(expected))
    assert bad.size == 0, [(hex(patterns[i]), hex(uint_view(expected)[i]), hex(uint_view(out)[i]))
                           for i in bad[:8]]


def widen_accepts_any_integer_type():
    return njit(lambda x: (f16_to_f32(x), bf16_to_f32(x), e4m3_to_f32(x), e5m2_to_f32(x)))


def test_widen_accepts_signed_patterns():
    # an int16 view of the same bits (or an int64 in a generated expression) must give the same value
    got = widen_accepts_any_integer_type()(np.int16(-16384))    # 0xC000
    assert got[0] == np.float32(-2.0) and got[1] == np.float32(-2.0)
    assert got[2] == np.float32(0.0) and got[3] == np.float32(0.0)   # low byte 0x00


NAN32 = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7FFFFFFF,
                  0x7F802000, 0x7F801FFF, 0x7FBFFFFF, 0xFFE00001], np.uint32).view(np.float32)
NAN64 = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                  0xFFF0000000000001, 0x7FF0000020000000, 0x7FF0040000000000,
                  0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF, 0x7FF003FFFFFFFFFF], np.uint64).view(np.float64)


def narrowing_inputs(logical, src):
    """Values around every rounding decision of `logical`, in source precision `src`."""
    bits = np.uint8 if np.dtype(logical).itemsize == 1 else np.uint16
    values = np.arange(np.iinfo(bits).max + 1, dtype=np.int64).astype(bits).view(logical)
    with np.errstate(invalid="ignore"):
        values = values.astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mids = (finite[:-1] + finite[1:]) / 2          # exact in float64 (few significant bits)
    top = finite[-1]
    step = top - finite[-2]
    over = np.array([top + step / 2, top + step, top + 3 * step / 2, 2 * top, 4 * top])
    seeds = np.concatenate([finite, mids, over, -over, [0.0, -0.0, np.inf, -np.inf]])
    with np.errstate(over="ignore"):
        seeds = seeds.astype(src)
    seeds = seeds[np.isfinite(seeds) | np.isinf(seeds)]
    near = [seeds]
    lo, hi = seeds.copy(), seeds.copy()
    for _ in range(2):                              # ties, ties +- 1 and 2 ulp of the source
        lo, hi = np.nextafter(lo, src(-np.inf)), np.nextafter(hi, src(np.inf))
        near += [lo, hi]
    if src == np.float64:
        # float32 ties of the midpoints (and their float64 neighbours): where rounding once
        # and rounding through float32 disagree
        f32_half_ulp = np.spacing(np.abs(mids.astype(np.float32))).astype(np.float64) / 2
        for t in (mids + f32_half_ulp, mids - f32_half_ulp):
            near += [t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf), -t]
        near += [mids * (1 + 2.0 ** -40), mids * (1 - 2.0 ** -40), -mids * (1 + 2.0 ** -40)]
    info = np.finfo(src)
    specials = np.array([info.smallest_subnormal, info.smallest_normal, info.max,
                         info.smallest_normal - info.smallest_subnormal], src)
    near += [specials, -specials, NAN32 if src == np.float32 else NAN64]

    rng = np.random.default_rng(RNG_SEED)
    n = 10 ** 6
    if src == np.float32:
        near.append(rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32))
    else:
        near.append(rng.integers(0, 2 ** 64, n // 4, dtype=np.uint64).view(np.float64))
    # log-uniform values across the target's range and a little beyond, both signs
    lo_exp = np.log2(float(finite[finite > 0][0])) - 3
    hi_exp = np.log2(float(top)) + 2
    mags = np.exp2(rng.uniform(lo_exp, hi_exp, n))
    with np.errstate(over="ignore"):
        near.append((mags * rng.choice([-1.0, 1.0], n)).astype(src))
    return np.concatenate([np.asarray(x, src) for x in near])


NARROW = [  # id, helper, source dtype, logical target dtype
    ("f32_to_f16", f32_to_f16, np.float32, np.float16),
    ("f32_to_f16[soft]", N._f32_to_f16_soft, np.float32, np.float16),
    ("f32_to_f16[hw]", N._f32_to_f16_hw, np.float32, np.float16),
    ("f64_to_f16", f64_to_f16, np.float64, np.float16),
    ("f32_to_bf16", f32_to_bf16, np.float32, BF16),
    ("f64_to_bf16", f64_to_bf16, np.float64, BF16),
    ("f32_to_e4m3", f32_to_e4m3, np.float32, E4M3),
    ("f64_to_e4m3", f64_to_e4m3, np.float64, E4M3),
    ("f32_to_e5m2", f32_to_e5m2, np.float32, E5M2),
    ("f64_to_e5m2", f64_to_e5m2, np.float64, E5M2),
]


@pytest.mark.parametrize("name,fn,src,logical", NARROW, ids=[n[0] for n in NARROW])
def test_narrow_matches_astype(name, fn, src, logical):
    if name.endswith("[hw]") and not N.HARDWARE_HALF:
        pytest.skip("no hardware half conversion on this CPU")
    x = narrowing_inputs(logical, src)
    bits = np.uint8 if np.dtype(logical).itemsize == 1 else np.uint16
    out = np.empty(x.size, bits)
    unary_loop(fn)(x, out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # overflow / invalid in the cast
        expected = x.astype(logical).view(bits)
    bad = np.flatnonzero(out != expected)
    assert bad.size == 0, [(hex(uint_view(x)[i]), float(x[i]), hex(expected[i]), hex(out[i]))
                           for i in bad[:8]]


def test_rounding_facts_the_helpers_rely_on():
    """The library behaviour the narrowing helpers copy (see the `why:` comments)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # numpy float64 -> float16 rounds once (1 + 2**-11 + 2**-40 rounds up; via float32 it ties to 1)
        x = np.array([1 + 2.0 ** -11 + 2.0 ** -40])
        assert x.astype(np.float16)[0] == np.float16(1 + 2.0 ** -10)
        assert x.astype(np.float32).astype(np.float16)[0] == 1.0
        # ml_dtypes float64 -> bfloat16 / float8 goes through float32 (rounds twice)
        assert np.array([1 + 2.0 ** -8 + 2.0 ** -40]).astype(BF16)[0] == 1.0
        assert np.array([1 + 2.0 ** -4 + 2.0 ** -30]).astype(E4M3)[0] == 1.0
        # e4m3fn has no inf: overflow and inf become NaN 0x7F with the sign; e5m2 overflows to inf
        assert list(np.array([448, 464, 465, np.inf, -500], np.float32).astype(E4M3).view(np.uint8)) \
            == [0x7E, 0x7E, 0x7F, 0x7F, 0xFF]
        assert list(np.array([57344, 61439, 61440], np.float32).astype(E5M2).view(np.uint8)) \
            == [0x7B, 0x7B, 0x7C]
        # numpy keeps signalling-NaN payloads through float16; ml_dtypes quiets bf16/float8 NaNs
        assert np.array([0x7F800001], np.uint32).view(np.float32).astype(np.float16).view(np.uint16)[0] == 0x7C01
        assert np.array([0x7C01], np.uint16).view(np.float16).astype(np.float32).view(np.uint32)[0] == 0x7F802000
        assert np.array([0xFF800001], np.uint32).view(np.float32).astype(BF16).view(np.uint16)[0] == 0xFFC0
    assert f64_to_f16.__doc__ and "one rounding" in f64_to_f16.__doc__


def test_conversions_callable_from_python_and_typed():
    assert f16_to_f32(np.uint16(0x3C00)) == np.float32(1.0)
    assert f32_to_f16(np.float32(65520.0)) == 0x7C00            # tie to even -> inf
    with pytest.raises(numba.core.errors.TypingError, match="f32_to_f16"):
        njit(lambda x: f32_to_f16(x))(1.0)                         # float64 would double-round


# ============================================================================================
# 2. Elementwise math

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_DTYPES = [np.float32, np.float64]
COMPLEX_DTYPES = [np.complex64, np.complex128]


def int_grid(dt):
    info = np.iinfo(dt)
    w = info.bits
    edge = [0, 1, -1, 2, -2, 3, -3, 5, -7, 7, 10, info.min, info.min + 1, info.max, info.max - 1,
            w - 1, w, w + 1, -w, 63, 64, 65, -1 - w, info.max // 2, info.min // 2]
    edge = [v for v in edge if info.min <= v <= info.max]
    rng = np.random.default_rng(RNG_SEED + w)
    rand = rng.integers(info.min, info.max, 24, dtype=dt, endpoint=True)
    return np.concatenate([np.array(edge, dt), rand, rng.integers(-9, 10, 8).astype(dt)])


def float_grid(dt):
    info = np.finfo(dt)
    edge = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0, 7.0, -7.0, 5.5,
            0.1, -1e-3, 1 / 3, 2.5e7, -1e30, info.eps, 1 + info.eps, info.max, -info.max,
            info.smallest_normal, -info.smallest_normal, info.smallest_subnormal,
            -info.smallest_subnormal, np.inf, -np.inf, np.nan, -np.nan, 100.0, -99.0, 0.75]
    rng = np.random.default_rng(RNG_SEED)
    with np.errstate(over="ignore"):
        rand = (rng.standard_normal(24) * np.exp2(rng.integers(-20, 20, 24))).astype(dt)
    return np.concatenate([np.array(edge, np.float64).astype(dt), rand])


def complex_grid(dt):
    parts = [0.0, -0.0, 1.0, -1.0, 2.5, -0.5, np.inf, -np.inf, np.nan]
    grid = np.array([complex(r, i) for r in parts for i in parts], dt)
    rng = np.random.default_rng(RNG_SEED)
    rand = (rng.standard_normal(16) + 1j * rng.standard_normal(16)) * 3
    return np.concatenate([grid, rand.astype(dt), np.array([1j, -1j, 2, -3, 0.5], dt)])


def grid_for(dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind in "iu":
        return int_grid(dt)
    return float_grid(dt) if dt.kind == "f" else complex_grid(dt)


def pairs(dt, n_random=4000):
    g = grid_for(dt)
    a, b = np.repeat(g, g.size), np.tile(g, g.size)
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        rng = np.random.default_rng(RNG_SEED + 1)
        ra = rng.integers(info.min, info.max, n_random, dtype=dt, endpoint=True)
        rb = rng.integers(info.min, info.max, n_random, dtype=dt, endpoint=True)
        a, b = np.concatenate([a, ra]), np.concatenate([b, rb])
    elif np.dtype(dt).kind == "f":
        rng = np.random.default_rng(RNG_SEED + 2)
        ra = (rng.standard_normal(n_random) * np.exp2(rng.integers(-30, 30, n_random))).astype(dt)
        rb = (rng.standard_normal(n_random) * np.exp2(rng.integers(-30, 30, n_random))).astype(dt)
        a, b = np.concatenate([a, ra]), np.concatenate([b, rb])
    return a, b


def ulp_distance(x, y):
    """|x - y| in units in the last place of their float type, counting across zero."""
    signed = np.int32 if x.dtype.itemsize == 4 else np.int64
    lowest = int(np.iinfo(signed).min)

    def ordered(v):   # sign-magnitude bits -> one monotonic integer line (-0.0 == +0.0)
        i = v.view(signed).astype(object)
        return np.where(i < 0, lowest - i, i)
    return np.abs(ordered(x) - ordered(y))


def assert_same(got, exp, a, b, *, ulps=0, zero_ties=False, what=""):
    """Bit-exact (ulps=0) or within `ulps`; NaN matches any NaN."""
    if got.dtype.kind == "c":
        if ulps:
            # a complex result is as good as its largest part: a part near zero after cancellation
            # (1j ** (1 + 1j)) carries the error of the whole, so each part is compared in ulps of
            # the larger one (NumPy computes complex64 powers in float32, the library in double)
            eps = np.finfo(got.real.dtype).eps
            scale = np.maximum(np.abs(exp.real), np.abs(exp.imag)).astype(np.float64)
            with np.errstate(invalid="ignore"):
                near = (np.abs(got.real - exp.real) <= 4 * ulps * eps * scale) & \
                       (np.abs(got.imag - exp.imag) <= 4 * ulps * eps * scale)
            got = np.where(near, exp, got)
        assert_same(got.real.copy(), exp.real.copy(), a, b, ulps=ulps, what=what + " real")
        assert_same(got.imag.copy(), exp.imag.copy(), a, b, ulps=ulps, what=what + " imag")
        return
    if got.dtype.kind in "iub":
        bad = got != exp
    else:
        both_nan = np.isnan(got) & np.isnan(exp)
        if ulps:
            finite = np.isfinite(got) & np.isfinite(exp)
            close = np.zeros(got.size, bool)
            close[finite] = ulp_distance(got[finite], exp[finite]) <= ulps
            bad = ~(both_nan | close | (uint_view(got) == uint_view(exp)))
        else:
            bad = ~(both_nan | (uint_view(got) == uint_view(exp)))
        if zero_ties:   # numpy's own SIMD loops disagree about which zero a tie returns
            bad &= ~((a == 0) & (b == 0) & (got == 0) & (exp == 0))
    idx = np.flatnonzero(bad)
    assert idx.size == 0, f"{what}: {idx.size} mismatches, e.g. " + ", ".join(
        f"({a[i]!r}, {b[i]!r}) -> {got[i]!r}, numpy {exp[i]!r}" for i in idx[:6])


def xla_floor_divide_reference(a, b):
    exp = np.floor_divide(a, b)
    if a.dtype.kind == "i":
        exp = np.where(b == 0, np.where(a == 0, -1, -2), exp).astype(a.dtype)
    elif a.dtype.kind == "u":
        exp = np.where(b == 0, np.iinfo(a.dtype).max, exp).astype(a.dtype)
    return exp


def wider(ufunc):
    """`ufunc` evaluated one precision up (float32 -> float64, float64 -> long double) and
    rounded back: a near-correctly-rounded reference. Used where numpy's own float loops may
    be SIMD approximations (on AVX-512, numpy's float32 arctan2 is 2 ulp off at atan2(0.5, 3))."""
    def ref(a, b):
        up = np.float64 if a.dtype == np.float32 else np.longdouble
        return ufunc(a.astype(up), b.astype(up)).astype(a.dtype)
    ref.__name__ = f"wider_{ufunc.__name__}"
    return ref


# op name -> (helper, reference, dtype kinds, ulps allowed for floats, float reference)
OPS = {
    "floor_divide": (gp_floor_divide, np.floor_divide, "iuf", 0),
    "remainder": (gp_remainder, np.remainder, "iuf", 0),
    "fmod": (gp_fmod, np.fmod, "iuf", 0),
    "power": (gp_power, np.power, "iu", 0),
    "power_float": (gp_powerf, np.power, "f", 1, wider(np.power)),
    "power_complex": (gp_power_complex, np.power, "c", 1),
    "maximum": (gp_maximum, np.maximum, "biufc", 0),
    "minimum": (gp_minimum, np.minimum, "biufc", 0),
    "fmax": (gp_fmax, np.fmax, "biufc", 0),
    "fmin": (gp_fmin, np.fmin, "biufc", 0),
    "left_shift": (gp_left_shift, np.left_shift, "iu", 0),
    "right_shift": (gp_right_shift, np.right_shift, "iu", 0),
    "atan2": (gp_atan2, np.arctan2, "f", 1, wider(np.arctan2)),
    "hypot": (gp_hypot, np.hypot, "f", 1, wider(np.hypot)),
    "copysign": (gp_copysign, np.copysign, "f", 0),
    # logaddexp: numpy's own formula (a + log1p(exp(b - a))) is itself several ulp from the
    # exact value near cancellation, so the reference is that formula one precision up
    "logaddexp": (gp_logaddexp, np.logaddexp, "f", 1, wider(np.logaddexp)),
    "nextafter": (gp_nextafter, np.nextafter, "f", 0),
    "floor_divide_xla": (gp_floor_divide_xla, xla_floor_divide_reference, "iuf", 0),
    "remainder_xla": (gp_remainder_xla, np.remainder, "iuf", 0),
}
ALL_DTYPES = [np.bool_, *INT_DTYPES, *FLOAT_DTYPES, *COMPLEX_DTYPES]
# lean tier: each function on half its dtypes, rotating (tests/support/tier.py; GP_TEST_TIER=full: all)
CASES = tier.thin([(op, np.dtype(dt)) for op, spec in OPS.items() for dt in ALL_DTYPES
                   if np.dtype(dt).kind in spec[2]], 2, column=lambda case: case[1].name)


@functools.lru_cache(maxsize=None)
def swept(dt):
    """Run every helper that applies to `dt` over pairs(dt) in ONE compiled kernel.

    why one kernel per dtype: compiling a loop per (op, dtype) costs ~2.5x more in total,
    and numba compile time dominates this file. Returns a, b and {op: (result, numba type)}.
    """
    names = [op for op, spec in OPS.items() if dt.kind in spec[2]]
    a, b = pairs(dt)
    scope = {f"f{k}": OPS[op][0] for k, op in enumerate(names)}
    body = "".join(f"        out[{k}, i] = f{k}(a[i], b[i])\n" for k in range(len(names)))
    # returning each helper's value on the first pair exposes its result type in the signature
    first = "".join(f"f{k}(a[0], b[0]), " for k in range(len(names)))
    exec(f"def sweep(a, b, out):\n    for i in range(a.size):\n{body}    return ({first})\n", scope)
    kernel = njit(error_model="numpy")(scope["sweep"])
    out = np.empty((len(names), a.size), dt)
    kernel(a, b, out)
    result_types = kernel.nopython_signatures[0].return_type.types
    return a, b, {op: (out[k], result_types[k]) for k, op in enumerate(names)}


@pytest.mark.parametrize("op,dt", CASES, ids=[f"{op}-{dt.name}" for op, dt in CASES])
def test_matches_numpy(op, dt):
    _, ref, _, ulps, *float_ref = OPS[op]
    if dt.kind == "f" and float_ref:
        ref = float_ref[0]
    a, b, results = swept(dt)
    got, rtype = results[op]
    assert rtype == numba.from_dtype(dt), f"{op} on {dt} returned {rtype}"
    keep = np.ones(a.size, bool)
    if op == "power" and dt.kind == "i":
        keep = b >= 0     # numpy raises for negative integer exponents (tested separately)
    if op == "power_complex":
        keep = np.isfinite(a) & np.isfinite(b)   # C cpow special values are libm-specific
    a, b, got = a[keep], b[keep], got[keep]
    with np.errstate(all="ignore"):
        exp = ref(a, b)
    assert exp.dtype == dt
    if op == "power_complex":
        assert_complex_close(got, exp, a, b)
        return
    assert_same(got, exp, a, b, ulps=ulps if dt.kind in "fc" else 0,
                zero_ties=op in ("fmax", "fmin"), what=f"{op}[{dt}]")


def assert_complex_close(got, exp, a, b):
    """Small integer powers are exact products (bit-exact up to 1 ulp); others go through
    cpow, whose libm implementation differs from exp(b*log(a)) by a few ulp of |result|."""
    eps = np.finfo(got.real.dtype).eps
    small_int = (b.imag == 0) & (np.abs(b.real) < 100) & (b.real == np.round(b.real))
    assert_same(got[small_int], exp[small_int], a[small_int], b[small_int], ulps=1,
                what="complex power, integer exponent")
    rest = ~small_int & np.isfinite(exp)
    scale = np.maximum(np.abs(exp[rest]), np.finfo(got.real.dtype).tiny)
    err = np.abs(got[rest] - exp[rest]) / scale
    assert np.all(err <= 64 * eps), (a[rest][np.argmax(err)], b[rest][np.argmax(err)], err.max())
    assert np.array_equal(np.isnan(got[~small_int]), np.isnan(exp[~small_int]))


# ---- behaviour spelled out --------------------------------------------------------------------

def run1(fn, x, y, dt):
    """fn(x, y) in dtype dt, looked up in the compiled sweep (its grid holds these values)."""
    dt = np.dtype(dt)
    op = next(name for name, spec in OPS.items() if spec[0] is fn)
    a, b, results = swept(dt)
    xb, yb = uint_view(np.array([x], dt))[0], uint_view(np.array([y], dt))[0]
    hits = np.flatnonzero((uint_view(a) == xb) & (uint_view(b) == yb))
    assert hits.size, f"({x}, {y}) is not in the {dt} grid"
    return results[op][0][hits[0]]


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_signed_division_edges(dt):
    lo = np.iinfo(dt).min
    assert run1(gp_floor_divide, lo, -1, dt) == lo            # wraps
    assert run1(gp_remainder, lo, -1, dt) == 0
    assert run1(gp_fmod, lo, -1, dt) == 0
    assert run1(gp_floor_divide, 7, 0, dt) == 0
    assert run1(gp_remainder, 7, 0, dt) == 0
    assert run1(gp_fmod, -7, 0, dt) == 0
    assert run1(gp_floor_divide, -7, 2, dt) == -4 and run1(gp_remainder, -7, 2, dt) == 1
    assert run1(gp_floor_divide, 7, -2, dt) == -4 and run1(gp_remainder, 7, -2, dt) == -1
    assert run1(gp_fmod, -7, 2, dt) == -1 and run1(gp_fmod, 7, -2, dt) == 1
    # JAX/XLA: x // 0 == -2 (x != 0) or -1 (x == 0); x % 0 == 0; INT_MIN // -1 wraps
    assert run1(gp_floor_divide_xla, 1, 0, dt) == -2
    assert run1(gp_floor_divide_xla, -7, 0, dt) == -2
    assert run1(gp_floor_divide_xla, 0, 0, dt) == -1
    assert run1(gp_floor_divide_xla, lo, -1, dt) == lo
    assert run1(gp_remainder_xla, 5, 0, dt) == 0 and run1(gp_remainder_xla, -7, 0, dt) == 0
    assert run1(gp_remainder_xla, lo, -1, dt) == 0


def test_unsigned_xla_division_by_zero():
    assert run1(gp_floor_divide_xla, 1, 0, np.uint8) == 255
    assert run1(gp_floor_divide_xla, 0, 0, np.uint64) == np.iinfo(np.uint64).max
    assert run1(gp_remainder_xla, 7, 0, np.uint32) == 0
    assert run1(gp_floor_divide, 1, 0, np.uint8) == 0


def test_int64_min_division_does_not_trap():
    """x86 idiv raises SIGFPE on INT64_MIN / -1 and on / 0: run in a child process so a trap
    shows up as a failure instead of killing the test session."""
    code = textwrap.dedent("""
        import numpy as np
        from numba import njit
        from gpupromote.engines.cpu.helpers import (gp_floor_divide, gp_remainder, gp_fmod,
            gp_floor_divide_xla, gp_remainder_xla)
        @njit
        def run(a, b):
            out = np.empty((5, a.size), np.int64)
            for i in range(a.size):
                out[0, i] = gp_floor_divide(a[i], b[i])
                out[1, i] = gp_remainder(a[i], b[i])
                out[2, i] = gp_fmod(a[i], b[i])
                out[3, i] = gp_floor_divide_xla(a[i], b[i])
                out[4, i] = gp_remainder_xla(a[i], b[i])
            return out
        lo = np.iinfo(np.int64).min
        print(run(np.array([lo, lo, 5]), np.array([-1, 0, 0])).tolist())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lo = np.iinfo(np.int64).min
    assert eval(proc.stdout) == [[lo, 0, 0], [0, 0, 0], [0, 0, 0], [lo, -2, -2], [0, 0, 0]]


def test_integer_power_negative_exponent():
    for dt in (np.int8, np.int64):
        assert run1(gp_power, 1, -3, dt) == 1
        assert run1(gp_power, -1, -3, dt) == -1
        assert run1(gp_power, -1, -2, dt) == 1
        assert run1(gp_power, 2, -1, dt) == 0
        assert run1(gp_power, 0, -3, dt) == 0
    assert run1(gp_power, 3, 5, np.int8) == np.int8(243 - 256)     # wraps like numpy
    big = np.iinfo(np.uint64).max
    assert run1(gp_power, 3, big, np.uint64) == pow(3, int(big), 2 ** 64)


def test_float_edges():
    for dt in FLOAT_DTYPES:
        assert np.signbit(run1(gp_maximum, 0.0, -0.0, dt)) and not np.signbit(run1(gp_maximum, -0.0, 0.0, dt))
        assert np.signbit(run1(gp_fmax, -0.0, 0.0, dt))             # fmax: `a` on ties
        assert np.isnan(run1(gp_maximum, 1.0, np.nan, dt)) and np.isnan(run1(gp_minimum, np.nan, 1.0, dt))
        assert run1(gp_fmax, np.nan, 1.0, dt) == 1.0 and run1(gp_fmin, 1.0, np.nan, dt) == 1.0
        assert run1(gp_floor_divide, 1.0, 0.0, dt) == np.inf
        assert np.isnan(run1(gp_remainder, 1.0, 0.0, dt))
        assert not np.signbit(run1(gp_remainder, -0.0, 5.5, dt))      # zero takes b's sign
        assert run1(gp_logaddexp, np.inf, np.inf, dt) == np.inf
        assert run1(gp_logaddexp, -np.inf, -np.inf, dt) == -np.inf
    one = np.float32(1)
    assert run1(gp_nextafter, 1.0, 2.0, np.float32) == one + np.finfo(np.float32).eps
    assert run1(gp_nextafter, 0.0, -1.0, np.float32) == -np.finfo(np.float32).smallest_subnormal


def test_shift_edges():
    assert run1(gp_left_shift, 1, 7, np.int8) == -128
    assert run1(gp_left_shift, 1, 8, np.int8) == 0
    assert run1(gp_left_shift, 1, -1, np.int8) == 0
    assert run1(gp_right_shift, -128, 8, np.int8) == -1
    assert run1(gp_right_shift, -128, -3, np.int8) == -1
    assert run1(gp_right_shift, 64, 10, np.int8) == 0
    assert run1(gp_right_shift, np.iinfo(np.uint64).max, 64, np.uint64) == 0
    assert run1(gp_left_shift, 3, 63, np.uint64) == np.uint64(2 ** 63)


def test_helpers_reject_mixed_or_unsupported_types():
    with pytest.raises(numba.core.errors.TypingError, match="same type"):
        njit(lambda a, b: gp_maximum(a, b))(np.int8(1), np.int16(2))
    with pytest.raises(numba.core.errors.TypingError, match="gp_left_shift"):
        njit(lambda a, b: gp_left_shift(a, b))(1.0, 2.0)


def test_python_level_call():
    assert gp_floor_divide(np.int64(-7), np.int64(2)) == -4
    assert gp_maximum(np.float32(1.0), np.float32(2.0)) == np.float32(2.0)
