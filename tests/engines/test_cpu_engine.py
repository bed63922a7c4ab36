"""The CPU engine: values equal NumPy's own under the numpy policy, and the dispatcher's rules
(broadcasting, layouts, out=, aliasing, integer edge cases, errors, caches).

Values under the numpy policy equal NumPy's own (and ml_dtypes') results.

For every case, the same arguments go to ``gp.<op>`` and to ``np.<op>``: the dtype must be the
same, the values bit-equal for exact ops (any NaN matches any NaN) and within 1 ulp for the
transcendental ones. When NumPy refuses a case, gpupromote must refuse it too.

The sweep is chosen for CI time (each case is a Numba kernel, ~0.2-1 s to compile cold, ~10 ms
from the disk cache): every op over a representative set of dtypes and operand kinds, and every
dtype pair for add, with multiply / true_divide / less over a wide subset of pairs.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from tests.support import tier

mpmath = pytest.importorskip("mpmath")

# --- values and comparison helpers ------------------------------------------------------------

# Values that hit the interesting parts of each kind: zeros (divisors!), signs, the extremes,
# non-integral floats, inf, nan, subnormals. Cast with NumPy / ml_dtypes (wrapping for ints).
_INTS = [0, 1, -1, 2, -2, 3, -3, 5, -7, 7, 100, -100, 127, -128, 2**15, 2**31 - 1, -2**31, 2**62, -2**63, 2**63 - 1]
_FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -1.5, 3.0, 0.1, -7.25, 100.0, 1e-3, 1e30, -1e30,
           np.inf, -np.inf, np.nan, 1e-40, 65504.0, 448.0, 0.5]
_COMPLEX = [0j, 1 + 2j, -3 + 0.5j, 2.5 - 1j, -1j, 1 + 0j, complex(np.inf, 1), complex(np.nan, 0), 1e-3 + 1e3j, -2 - 2j]


def values(dtype, n=20, seed=0) -> np.ndarray:
    """An array of ``n`` values of gp dtype ``dtype`` (numpy / ml_dtypes storage)."""
    d = gp.dtype(dtype)
    if d.kind == "b":
        base = np.array([True, False, True, True, False] * 4)
    elif d.kind in "ui":
        info = np.iinfo(d.numpy)
        picks = [v for v in _INTS if d.kind == "i" or v >= 0] + [info.max, info.min]
        base = np.array([v & ((1 << d.bits) - 1) for v in picks], dtype=np.uint64).astype(
            np.dtype(f"u{d.itemsize}")).view(d.numpy)
    elif d.kind == "f":
        with np.errstate(all="ignore"):
            base = np.array(_FLOATS, dtype=np.float64).astype(d.numpy)
    else:
        base = np.array(_COMPLEX, dtype=d.numpy)
    rng = np.random.default_rng(seed)
    if seed == 0 and n == len(base):
        return base
    return base[rng.permutation(np.resize(np.arange(len(base)), n))]


def divisor_values(dtype, n=20, seed=1):
    return values(dtype, n, seed)


def _ordered(bits: np.ndarray, width: int) -> np.ndarray:
    """Map float bit patterns (sign-magnitude) to integers in the floats' order."""
    b = bits.astype(np.uint64)
    sign = np.uint64(1 << (width - 1))
    mag = (b & (sign - np.uint64(1))).astype(np.int64)
    return np.where((b & sign) != 0, -mag, mag)


def ulp_distance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Ulp distance between two real float arrays of one dtype (nan-to-nan is 0)."""
    width = x.dtype.itemsize * 8
    u = np.dtype(f"u{x.dtype.itemsize}")
    dist = np.abs(_ordered(x.view(u), width) - _ordered(y.view(u), width))
    both_nan = np.isnan(x.astype(np.float64)) & np.isnan(y.astype(np.float64))
    return np.where(both_nan, 0, dist)


def assert_same(result, expected, ulps=0, context=""):
    """dtype equal, shape equal and values bit-equal (any nan matches any nan), or within
    ``ulps`` units in the last place for real and imaginary parts."""
    result, expected = np.asarray(result), np.asarray(expected)
    assert result.dtype == expected.dtype, f"{context}: dtype {result.dtype} != NumPy's {expected.dtype}"
    assert result.shape == expected.shape, f"{context}: shape {result.shape} != NumPy's {expected.shape}"
    if expected.dtype.kind == "c":
        assert_same(result.real, expected.real, ulps, context + " (real)")
        assert_same(result.imag, expected.imag, ulps, context + " (imag)")
        return
    if expected.dtype.kind in "biu":
        bad = result != expected
    else:
        dist = ulp_distance(np.ascontiguousarray(result), np.ascontiguousarray(expected))
        bad = dist > ulps
    if np.any(bad):
        idx = np.flatnonzero(np.asarray(bad).reshape(-1))[:5]
        raise AssertionError(f"{context}: {int(np.sum(bad))} of {bad.size} values differ, e.g. at {idx.tolist()}: "
                             f"got {result.reshape(-1)[idx]!r}, NumPy {expected.reshape(-1)[idx]!r}")


# --- the NumPy sweep ------------------------------------------------------------------------
ALL_OPS = list(gp.OPS)
NUMPY_DTYPES = sorted((d.name for d in gp.core.dtypes.ALL if d.name != "complex32"),
                      key=lambda n: gp.dtype(n).rank)
# ≤ 1 ulp: NumPy calls the C library (or its own SIMD) for these.
TRANSCENDENTAL = {"power", "arctan2", "hypot", "logaddexp"}
# Note: the complex power helper computes cpow as exp(b*log(a)) in double precision; NumPy calls
# the C library's cpowf / cpow. They agree to a few ulp, not one (reported to the helper's owner).
COMPLEX_POWER_ULPS = 64

_SCALAR_OF_KIND = {"b": True, "u": 3, "i": -3, "f": 2.5, "c": 1 + 2j}


def operand(kind: str, dtype: str, seed: int):
    """``array`` (20 values), ``0d`` (a 0-d array), or ``scalar`` (a Python scalar whose kind is
    the dtype's)."""
    if kind == "array":
        return values(dtype, 20, seed)
    if kind == "0d":
        return np.asarray(values(dtype, 20, seed)[2 + seed])
    return _SCALAR_OF_KIND[gp.dtype(dtype).kind]


def check_against_numpy(op, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = getattr(np, op)(*args)
        except (TypeError, ValueError, OverflowError) as exc:
            with pytest.raises((TypeError, ValueError, OverflowError)):
                got = getattr(gp, op)(*args, policy="numpy")
                pytest.fail(f"NumPy raises {type(exc).__name__}: {exc}; gpupromote returned {got.dtype}")
            return
        result = getattr(gp, op)(*args, policy="numpy")
    assert isinstance(result, np.ndarray)
    expected = np.asarray(expected)
    ulps = 0
    if op in TRANSCENDENTAL:
        ulps = COMPLEX_POWER_ULPS if expected.dtype.kind == "c" else 1
        if expected.dtype.kind == "f" and expected.shape == np.asarray(result).shape:
            expected = _numpy_or_correctly_rounded(op, args, result, expected)
    described = ", ".join(f"{a.dtype}[{a.ndim}d]" if hasattr(a, "dtype") else repr(a) for a in args)
    assert_same(result, expected, ulps, f"{op}({described})")


_MPMATH_BINARY = {"power": "power", "arctan2": "atan2", "hypot": "hypot",
                  "logaddexp": lambda a, b: mpmath.log(mpmath.exp(a) + mpmath.exp(b))}


def _numpy_or_correctly_rounded(op, args, result, expected):
    """NumPy's values, except where gpupromote's owned function is more than 1 ulp from NumPy's
    and equal to the correctly rounded value (mpmath): NumPy's float32 logaddexp, for one, rounds
    in float32 twice."""
    far = ulp_distance(np.ascontiguousarray(result), np.ascontiguousarray(expected)) > 1
    if not far.any():
        return expected
    mpmath.mp.prec = 200
    fn = _MPMATH_BINARY[op]
    fn = getattr(mpmath, fn) if isinstance(fn, str) else fn
    a, b = (np.broadcast_to(np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind != "c" else v, far.shape)
            for v in args)
    fixed = expected.copy()
    for i in zip(*np.nonzero(far)):
        try:
            exact = fn(mpmath.mpf(float(a[i])), mpmath.mpf(float(b[i])))
        except (ValueError, ZeroDivisionError):
            continue
        if isinstance(exact, mpmath.mpf) and mpmath.isfinite(exact):
            with np.errstate(all="ignore"):
                fixed[i] = np.array(float(exact), np.float64).astype(expected.dtype)
    return fixed


def _cases(ops, pairs, kinds=(("array", "array"),), every=1):
    """Each op with each dtype pair and operand kinds; ``every``: the lean tier keeps one in ``every`` of
    an op's cells, rotating from op to op (tests/support/tier.py; GP_TEST_TIER=full keeps all)."""
    grid = [(op, da, db, ka, kb) for op in ops for da, db in pairs for ka, kb in kinds]
    for op, da, db, ka, kb in tier.thin(grid, every):
        yield pytest.param(op, da, db, ka, kb, id=f"{op}-{da}-{db}-{ka}-{kb}")


def _run(op, da, db, ka, kb):
    a, b = operand(ka, da, 0), operand(kb, db, 1)
    args = (values("bool", 20, 3), a, b) if op == "where" else (a, b)
    check_against_numpy(op, args)


# --- every op, same-dtype arrays over a representative set ------------------------------------
REPRESENTATIVE = ["bool", "int8", "uint64", "float16", "bfloat16", "float32", "complex128"]


@pytest.mark.parametrize("op, da, db, ka, kb", list(_cases(ALL_OPS, [(d, d) for d in REPRESENTATIVE], every=2)))
def test_every_op_same_dtype(op, da, db, ka, kb):
    _run(op, da, db, ka, kb)


# --- every op, mixed dtypes and operand kinds ---------------------------------------------------
MIXED = [("int8", "uint8"), ("int32", "float32"), ("bfloat16", "float64"), ("int64", "uint64"),
         ("float8_e4m3fn", "float16")]


@pytest.mark.parametrize("op, da, db, ka, kb", list(_cases(ALL_OPS, MIXED, every=2)))
def test_every_op_mixed_dtypes(op, da, db, ka, kb):
    _run(op, da, db, ka, kb)


KINDS = [("array", "scalar"), ("scalar", "array"), ("array", "0d"), ("0d", "array")]
KIND_PAIRS = [("int16", "int16"), ("float32", "float64"), ("float16", "float16"), ("uint8", "int32")]


MAIN_OPS = ("add", "multiply", "true_divide", "less", "power", "floor_divide", "where")


def _kind_cases():
    """The main ops: every operand kind for two dtype pairs; the others: one kind per dtype
    pair, rotating, which keeps the number of kernels (and CI time) down."""
    for i, p in enumerate(_cases(ALL_OPS, KIND_PAIRS, KINDS)):
        op, da, db, ka, kb = p.values
        pair, kind = KIND_PAIRS.index((da, db)), KINDS.index((ka, kb))
        if op in MAIN_OPS:
            if pair < 2:
                yield p
        elif kind == (pair + ALL_OPS.index(op)) % len(KINDS):
            yield p


@pytest.mark.parametrize("op, da, db, ka, kb", list(_kind_cases()))
def test_every_op_operand_kinds(op, da, db, ka, kb):
    _run(op, da, db, ka, kb)


# --- every dtype pair for add; a wide subset for multiply, true_divide, less ---------------------
@pytest.mark.parametrize("op, da, db, ka, kb",
                         list(_cases(["add"], [(a, b) for a in NUMPY_DTYPES for b in NUMPY_DTYPES], every=3)))
def test_add_every_dtype_pair(op, da, db, ka, kb):
    _run(op, da, db, ka, kb)


WIDE = ["bool", "uint32", "int8", "float8_e5m2", "float16", "bfloat16", "complex64"]


@pytest.mark.parametrize("op, da, db, ka, kb",
                         list(_cases(["multiply", "true_divide", "less"], [(a, b) for a in WIDE for b in WIDE], every=3)))
def test_main_ops_wide_dtype_pairs(op, da, db, ka, kb):
    _run(op, da, db, ka, kb)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_every_narrow_bit_pattern_round_trips_like_numpy(dtype):
    """All 2**16 (or 2**8) patterns through a kernel: widened, computed, narrowed again."""
    d = gp.dtype(dtype)
    bits = np.arange(2 ** d.bits, dtype=np.uint16 if d.bits == 16 else np.uint8)
    x = bits.view(d.numpy)
    check_against_numpy("add", (x, np.zeros_like(x)))
    check_against_numpy("multiply", (x, np.asarray(1.5, d.numpy)))
    check_against_numpy("add", (x, np.zeros(x.shape, np.float32)))


def test_narrowing_float32_to_float16_dense_sample():
    """Ties, subnormals, overflow: float32 values around every float16 boundary, narrowed by a
    float32 + float32 -> float16 plan (where(cond, f16, f32) computes in float32)."""
    h = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    h = h[np.isfinite(h)].astype(np.float32)
    step = np.spacing(h)  # float32 neighbours and midpoints of each float16 value
    x = np.concatenate([h, h + step, h - step, np.nextafter(h, np.inf), h * np.float32(1 + 2 ** -11)])
    x = x.astype(np.float32)
    y = np.zeros_like(x)
    with np.errstate(all="ignore"):
        got = gp.add(x, y, policy="numpy").astype(np.float16)
        assert_same(got, (x + y).astype(np.float16), 0, "float32 sample -> float16")
        # the kernel itself narrows here: float16 (strong) with float32 values -> float32; so use
        # a float16 result plan with a float32 compute: float16 array * 1.0 (weak float)
        h16 = x.astype(np.float16)
        assert_same(gp.multiply(h16, 1.0, policy="numpy"), h16 * 1.0, 0, "float16 * 1.0")


# --- what a user can do (the issue's examples) ---------------------------------------------------

def test_issue_examples():
    a = np.arange(6, dtype=np.int8)
    b = np.ones(6, ml_dtypes.bfloat16)
    r = gp.add(a, b, policy="torch")
    assert r.dtype == ml_dtypes.bfloat16 and r.tolist() == [1, 2, 3, 4, 5, 6]
    assert gp.true_divide(a, 2, policy="jax").dtype == np.float32
    h = np.full(4, 1000, np.float16)
    # PyTorch keeps the scalar in float32 (opmath); NumPy rounds it to float16 first (0.0)
    assert gp.multiply(h, 1e-8, policy="torch").tolist() == [np.float16(1e-5)] * 4
    assert gp.multiply(h, 1e-8, policy="numpy").tolist() == [0.0] * 4
    x = gp.asarray(a)
    y = x * 2.5
    x += 1
    assert y.dtype == gp.float64 and x.dtype == gp.int8 and np.asarray(x).tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("policy, expected", [("torch", 44), ("numpy", None)], ids=["torch-wraps", "numpy-raises"])
def test_out_of_range_python_int_wraps_or_raises_as_the_framework(policy, expected):
    a = np.zeros(3, np.int8)
    if expected is None:
        with pytest.raises(OverflowError):
            gp.add(a, 300, policy=policy)
    else:
        assert gp.add(a, 300, policy=policy).tolist() == [expected] * 3


def test_python_scalars_only_give_a_0d_numpy_array():
    r = gp.add(1, 2)
    assert isinstance(r, np.ndarray) and r.shape == () and r.dtype == np.int64 and r == 3
    r = gp.true_divide(1, 2, policy="torch")
    assert r.dtype == np.float32 and r == 0.5


def test_folded_0d_array_is_read_in_its_own_dtype():
    # torch: a zero-dim float64 tensor with an int8 tensor gives float64 (category rules)
    r = gp.add(np.asarray(0.1), np.arange(3, dtype=np.int8), policy="torch")
    assert r.dtype == np.float64 and r.tolist() == [0.1, 1.1, 2.1]
    r = gp.multiply(np.arange(3, dtype=np.float32), np.float64(0.1), policy="numpy")
    assert_same(r, np.arange(3, dtype=np.float32) * np.float64(0.1), 0, "numpy scalar")


# --- broadcasting and layouts --------------------------------------------------------------------

def _layouts():
    rng = np.random.default_rng(7)
    f = rng.standard_normal((4, 5, 6)).astype(np.float32)
    i = rng.integers(-50, 50, (4, 5, 6)).astype(np.int16)
    h = f.astype(np.float16)
    big = rng.standard_normal((4,) * 6)
    yield "row-with-column", f[0, :, :1], i[0, :1, :]
    yield "same-shape-3d", f, i
    yield "fortran-order", np.asfortranarray(f), np.asfortranarray(i)
    yield "mixed-orders", np.asfortranarray(f), i
    yield "negative-strides", f[::-1, :, ::-2], i[:, ::-1, ::-2]
    yield "non-contiguous-1d", f.reshape(-1)[::3], i.reshape(-1)[1::3]
    yield "reversed-1d", f.reshape(-1)[::-1], i.reshape(-1)
    yield "transposed", f.transpose(2, 0, 1), i.transpose(2, 0, 1)
    yield "broadcast-3d", f[:, :1, :], i[:1, :, :1]
    yield "narrow-broadcast", h[:, :, :1], h[:1]
    yield "0d-array", np.asarray(np.float32(2.5)), i
    yield "empty", f[:0], i[:0]
    yield "empty-broadcast", f[:, :0], i[:1, :0]
    yield "one-element", f[:1, :1, :1], i[:1, :1, :1]
    yield "6d-strided", big[::2, ::2, ::2, ::2, ::2, ::2], big[::-2, ::2, ::2, ::2, ::2, ::-2]
    yield "7d-broadcast", big[None, ::2, :, ::2, :1, ::2, ::3], np.arange(4.0)[:, None, None, None, None, None, None]
    yield "scalar-with-strided", f[:, ::2, 1], 3.5


@pytest.mark.parametrize("name, a, b", [pytest.param(n, a, b, id=n) for n, a, b in _layouts()])
@pytest.mark.parametrize("op", ["add", "less", "where"])
def test_broadcasting_and_layouts_equal_numpy(op, name, a, b):
    if op == "where":
        cond = np.asarray(a).astype(np.float64) > 0   # a's shape: broadcasts with a and b
        check_against_numpy("where", (cond, a, b))
    else:
        check_against_numpy(op, (a, b))


def test_shape_mismatch_raises_value_error_naming_shapes():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        gp.add(np.ones(3), np.ones(4))


# --- out= ---------------------------------------------------------------------------------------

def test_out_same_dtype_is_written_and_returned():
    a, b = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    out = np.empty(5, np.float32)
    assert gp.add(a, b, out=out) is out
    assert out.tolist() == [1, 2, 3, 4, 5]


def test_out_of_a_wider_dtype_gets_the_result_cast():
    a = np.array([100, 100], np.int8)
    out = np.zeros(2, np.float64)
    gp.add(a, a, out=out)            # computed in int8 (wraps), then cast, as NumPy does
    np.testing.assert_array_equal(out, np.add(a, a, out=np.zeros(2, np.float64)))


@pytest.mark.parametrize("policy, result, out_dtype, ok", [
    ("numpy", "float64", "int8", False),     # same_kind: no float -> int
    ("numpy", "float64", "float16", True),   # same_kind allows narrowing within a kind
    ("numpy", "int64", "bool", False),
    ("torch", "float32", "int32", False),    # canCast: no float -> integral
    ("torch", "int64", "int8", True),        # canCast allows narrowing ints
    ("torch", "complex64", "float32", False),
    ("torch", "int64", "bool", False),
], ids=lambda v: str(v))
def test_out_cast_rule_of_the_framework(policy, result, out_dtype, ok):
    a = np.ones(3, np.dtype(result))
    out = np.zeros(3, np.dtype(out_dtype))
    if ok:
        gp.add(a, a, policy=policy, out=out)
        assert out.tolist() == np.full(3, 2).astype(out_dtype).tolist()
    else:
        with pytest.raises(TypeError, match=f"{result}.*{out_dtype}"):
            gp.add(a, a, policy=policy, out=out)


def test_read_only_out_raises_value_error():
    out = np.zeros(3)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gp.add(np.ones(3), 1.0, out=out)


def test_out_shape_mismatch_raises_value_error_naming_shapes():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        gp.add(np.ones(3), np.ones(3), out=np.zeros(4))


def test_out_may_be_larger_than_the_inputs_when_they_broadcast_to_it():
    out = np.zeros((2, 3))
    gp.add(np.arange(3.0), 1.0, out=out)
    assert out.tolist() == [[1, 2, 3], [1, 2, 3]]


def test_out_identical_to_an_input_is_in_place():
    a = np.arange(6, dtype=np.int32)
    gp.multiply(a, 3, out=a)
    assert a.tolist() == [0, 3, 6, 9, 12, 15]


@pytest.mark.parametrize("case", ["shifted", "reversed", "broadcast-row", "transposed"])
def test_out_overlapping_an_input_uses_a_temporary(case):
    base = np.arange(16, dtype=np.float64).reshape(4, 4)
    mine, ref = base.copy(), base.copy()
    if case == "shifted":
        gp.add(mine[:-1], mine[1:], out=mine[1:])
        np.add(ref[:-1], ref[1:], out=ref[1:])
    elif case == "reversed":
        gp.subtract(mine[::-1], mine, out=mine)
        np.subtract(ref[::-1], ref, out=ref)
    elif case == "broadcast-row":
        gp.add(mine, mine[1], out=mine)
        np.add(ref, ref[1], out=ref)
    else:
        gp.add(mine.T, 1.0, out=mine)
        np.add(ref.T, 1.0, out=ref)
    np.testing.assert_array_equal(mine, ref)


# --- integer edge cases never crash the process ---------------------------------------------------

@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_numpy_integer_division_by_zero_is_zero_with_a_warning(op):
    a = np.array([5, -7, 0], np.int32)
    z = np.zeros(3, np.int32)
    with pytest.warns(RuntimeWarning, match=f"divide by zero encountered in {op}"):
        r = getattr(gp, op)(a, z, policy="numpy")
    assert r.tolist() == [0, 0, 0]
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        getattr(gp, op)(a, 0, policy="numpy")
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(gp, op)(a, z, policy="numpy")


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("divisor", ["array", "scalar", "wrapped-to-zero"])
def test_torch_integer_division_by_zero_raises_before_writing(op, divisor):
    a = np.array([5, -7, 3], np.int8)
    d = {"array": np.array([1, 0, 2], np.int8), "scalar": 0, "wrapped-to-zero": 256}[divisor]
    out = np.full(3, 9, np.int8)
    with pytest.raises(ZeroDivisionError, match="policy 'torch'"):
        getattr(gp, op)(a, d, policy="torch", out=out)
    assert out.tolist() == [9, 9, 9]


def test_jax_integer_division_by_zero_gives_xla_values():
    a = np.array([5, -7, 0], np.int32)
    z = np.zeros(3, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gp.floor_divide(a, z, policy="jax").tolist() == [-2, -2, -1]
        assert gp.remainder(a, z, policy="jax").tolist() == [0, 0, 0]
        assert gp.floor_divide(a.astype(np.uint8), z.astype(np.uint8), policy="jax").tolist() == [255] * 3


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_int_min_floor_divide_minus_one_wraps_without_trapping(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min, 7], dtype)
    d = np.array([-1, 1, -1], dtype)
    with pytest.warns(RuntimeWarning, match="overflow encountered in floor_divide"):
        assert gp.floor_divide(a, d).tolist() == [info.min, info.min, -7]
    assert gp.remainder(a, d).tolist() == [0, 0, 0]
    assert gp.fmod(a, d).tolist() == [0, 0, 0]
    assert gp.floor_divide(a, d, policy="jax-x64").tolist() == [info.min, info.min, -7]


@pytest.mark.parametrize("op", ["left_shift", "right_shift"])
def test_shifts_by_negative_or_too_large_amounts_equal_numpy(op):
    a = np.array([1, -1, 5, -128, 127, 3], np.int8)
    s = np.array([-1, 8, 100, 7, -100, 127], np.int8)
    check_against_numpy(op, (a, s))
    check_against_numpy(op, (a.astype(np.uint64), s.astype(np.uint64)))


def test_numpy_negative_integer_power_raises_value_error():
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        gp.power(np.array([2, 3]), np.array([1, -1]))
    with pytest.raises(ValueError):
        gp.power(np.array([2, 3]), -1)     # the resolver refuses the Python int already
    assert gp.power(np.array([2.0]), -1).tolist() == [0.5]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("exponent", [5, 100, 300, 2**31 + 7, 2**40, 2**63 - 1, 2**63, 2**64 + 5])
def test_jax_integer_pow_takes_the_exponent_exactly(dtype, exponent):
    # lax.integer_pow multiplies in the array's dtype with the exponent as given: the reference is
    # Python's exact modular power, wrapped into the dtype
    info = np.iinfo(dtype)
    bits = info.bits
    a = np.array([v for v in (3, -3, 5, 2, 7, 0, 1, -1, 6, 100) if info.min <= v <= info.max], dtype)
    policy = "jax-x64" if bits == 64 else "jax"
    want = [pow(int(v) % 2**bits, exponent, 2**bits) for v in a]
    want = [w - 2**bits if info.min < 0 and w > info.max else w for w in want]
    assert gp.power(a, exponent, policy=policy).tolist() == want


_INT_VALUES = [3, -1, 0, 127, 128, 255, 256, 300, -129, 70000, 2**31, 2**40, 2**63 - 1, 2**63, 2**64, -2**63 - 1]


def _outcome(fn, *args, **kwargs):
    """What a call gives: (dtype, bytes) or the exception's type, and the warnings it raised."""
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kwargs)
            got = r.dtype.name, r.tobytes()  # why: bit for bit, and NaN equals NaN
        except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
            got = type(exc).__name__
    return got, sorted(str(w.message) for w in raised)


_FAST_PATH_GRID = tier.thin([(op, policy) for op in ["add", "multiply", "less", "maximum", "bitwise_and", "left_shift",
                                                      "true_divide", "floor_divide", "remainder", "power"]
                             for policy in ["numpy", "torch", "jax", "jax-x64", "paddle", "tf-all", "array-api"]], 2)


@pytest.mark.parametrize("op, policy", _FAST_PATH_GRID, ids=[f"{op}-{policy}" for op, policy in _FAST_PATH_GRID])
def test_python_int_fast_path_equals_the_full_path(policy, op):
    # The op functions keep a runner per (policy, dtypes, int) built from an ordinary int and hold
    # it to the bounds that plan holds for; every value must come out as the full path gives it,
    # whichever value came first.
    from gpupromote.dispatch.eager import call
    diffs = []
    for dtype in ["bool", "uint8", "int8", "int32", "uint64", "float16", "float32"]:
        a = np.array([1, 2, 3], dtype)
        for values in (_INT_VALUES, _INT_VALUES[::-1]):
            getattr(gp, op)._fast_cache.clear()
            for v in values:
                for args in ((a, v), (v, a)):
                    got, want = _outcome(getattr(gp, op), *args, policy=policy), _outcome(call, op, args, policy)
                    if got != want:
                        diffs.append(f"{op}{args}: fast {got} | full {want}")
    assert not diffs, "\n".join(diffs[:20])


def test_huge_shapes_raise_memory_error_not_crash():
    a = np.broadcast_to(np.ones(1, np.float64), (2**40,))
    with pytest.raises(MemoryError):
        gp.add(a, 1.0)


# --- errors name what is wrong --------------------------------------------------------------------

def test_unknown_op_and_policy_and_dtype_are_clear_errors():
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        gp.add(np.ones(2), 1, policy="nope")
    with pytest.raises(TypeError, match="unknown dtype"):
        gp.add(np.array([object()]), 1)
    with pytest.raises(gp.PromotionError, match="policy 'torch'"):
        gp.add(np.ones(2, np.uint16), np.ones(2, np.int8), policy="torch")


def test_complex32_has_no_numpy_result():
    with pytest.raises(TypeError, match="complex32"):
        gp.add(np.ones(2, np.float16), 1j, policy="torch")


def test_aliases_are_the_same_functions():
    assert gp.sub is gp.subtract and gp.div is gp.true_divide
    assert gp.atan2 is gp.arctan2 and gp.ge is gp.greater_equal
    # NumPy's names that Python has as builtins too: gp's, as numpy's namespace has them; the builtins untouched
    assert gp.abs is gp.absolute and gp.round is gp.around and gp.pow is gp.power
    assert {"abs", "round", "pow"} <= set(gp.__all__) and abs(-2) == 2 and round(2.5) == 2 and pow(2, 3) == 8


# --- kernels and caches ---------------------------------------------------------------------------

def test_source_of_a_plan_is_readable_numba_code():
    from gpupromote.dispatch.api import plan_for
    from gpupromote.engines.cpu import engine as cpu_numba
    plan = plan_for("add", [np.ones(2, np.float16), np.ones(2, np.float32)], policy="numpy")
    src = cpu_numba.source(plan)
    assert "def flat(x0, x1, out):" in src and "f16_to_f32_plain(x0[i])" in src and "strided4" in src
    src = cpu_numba.source(plan_for("maximum", [np.ones(2, np.float16), np.ones(2, np.float32)], policy="numpy"))
    assert "f16_to_f32(x0[i])" in src   # a value maximum may return as it came: read exactly
    plan = plan_for("multiply", [np.ones(2, np.float16), 1e-8], policy="torch")
    assert "def flat(x0, s1, out):" in cpu_numba.source(plan)


_CHILD = """
import numpy as np, gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu.engine import kernel_for
a, b = np.ones(8, np.float16), np.ones(8, np.int16)
assert gp.multiply(a, b).tolist() == [1.0] * 8
s = kernel_for(plan_for("multiply", [a, b])).compile_stats()   # its flat, strided and native entry points
print(s["loaded"], s["compiled"])
"""


def test_second_process_loads_the_kernel_from_the_disk_cache(tmp_path):
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    first = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["0", "1"]
    assert second.stdout.split() == ["1", "0"]
    assert list(tmp_path.glob("numba-*/_gpk_*.py"))


def test_warmup_compiles_the_common_kernels():
    from gpupromote.tools.warmup import common_plans, warmup
    plans = common_plans("torch")
    assert len(plans) > 50 and all(p.policy == "torch" for p in plans)
    seen = []
    n = warmup("torch", progress=lambda done, total, plan: seen.append((done, total)), plans=plans[:3])
    assert n == 3 and seen[-1] == (3, 3)


def test_large_results_reuse_buffers_only_when_nothing_refers_to_them():
    a = np.ones(2**20, np.float64)            # 8 MiB results come from the buffer pool
    r = gp.add(a, 1.0)
    view, base = r[::2], None
    del r
    r2 = gp.add(a, 2.0)
    assert not np.shares_memory(view, r2) and (view == 2).all()
    r3 = gp.add(a, 3.0)
    base = r3.base
    del r3
    r4 = gp.add(a, 4.0)
    assert not np.shares_memory(base, r4)
    del r2, r4
    r5 = gp.add(a, 5.0)                      # a freed buffer is reused: same values, fresh result
    assert (r5 == 6).all() and r5.flags.writeable


def test_kernels_can_flush_subnormals_as_xla_does():
    """A plan with flush_subnormals (JAX / XLA run with FTZ and DAZ) reads and writes subnormals
    as zeros of their sign; the engine supports the flag where the resolver sets it."""
    from dataclasses import dataclass, fields

    from gpupromote.dispatch.api import plan_for
    from gpupromote.engines.cpu import engine as cpu_numba
    from gpupromote.promotion.resolve import Plan

    if "flush_subnormals" in {f.name for f in fields(Plan)}:
        FlushPlan = Plan
    else:
        @dataclass(frozen=True)
        class FlushPlan(Plan):
            flush_subnormals: bool = False

    base = plan_for("multiply", [np.ones(2, np.float32), np.ones(2, np.float32)], policy="numpy")
    values_ = {f.name: getattr(base, f.name) for f in fields(Plan)}
    values_["flush_subnormals"] = True
    plan = FlushPlan(**values_)
    a = np.array([1e-40, -1e-40, 1e-20, 3.0], np.float32)
    b = np.array([1.0, 1.0, 1e-20, np.float32(1e-38)], np.float32)
    out = np.empty(4, np.float32)
    cpu_numba.BACKEND.run(plan, [a, b], out)
    assert out.tolist() == [0.0, -0.0, 0.0, 0.0] and np.signbit(out[1])
    assert "gp_ftz(" in cpu_numba.source(plan) and "gp_ftz(" not in cpu_numba.source(base)
    cbase = plan_for("add", [np.ones(2, np.complex64), np.ones(2, np.complex64)], policy="numpy")
    values_ = {f.name: getattr(cbase, f.name) for f in fields(Plan)}
    values_["flush_subnormals"] = True
    c = np.array([complex(1e-40, 2.0), complex(3.0, -1e-40)], np.complex64)
    out = np.empty(2, np.complex64)
    cpu_numba.BACKEND.run(FlushPlan(**values_), [c, np.zeros(2, np.complex64)], out)
    assert out.tolist() == [complex(0, 2), complex(3, 0)]   # -0 + 0 is +0


@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"])
@pytest.mark.parametrize("value", [2**64, 2**63, -1, -2**63 - 1], ids=["2**64", "2**63", "-1", "-2**63-1"])
@pytest.mark.parametrize("dtype", ["uint8", "int64", "uint64"])
def test_out_of_range_python_int_comparisons_are_exact_like_numpy(op, value, dtype):
    info = np.iinfo(dtype)
    a = np.array([0, 5, info.max, info.min], dtype)
    for args in ((a, value), (value, a)):
        assert getattr(gp, op)(*args).tolist() == getattr(np, op)(*args).tolist()


def test_arrays_in_the_other_byte_order_are_read_by_value():
    a = np.arange(4, dtype=">f4")
    r = gp.add(a, np.ones(4, "<f4"))
    assert r.dtype == np.float32 and r.tolist() == [1, 2, 3, 4]
