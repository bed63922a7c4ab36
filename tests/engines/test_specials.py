"""IEEE special values through every op, in every operand position, against the live framework.

The specials of each float dtype: +-0, +-inf, NaN of either sign, +-the smallest subnormal, +-the
smallest normal, the dtype's max and min, and a few ordinary values; every pair of them. A result
must be the framework's bit for bit where it is a zero (the sign counts) or any other exact value,
a NaN where the framework's is a NaN, and within 1 ulp for the transcendental ops.

Where the framework disagrees with itself (NumPy's fmax of +-0 depends on the SIMD lane) or where
the frameworks that share a kernel disagree with each other (one plan serves every policy, and
the kernels have no per-framework tie rule), the cases are in KNOWN, each with a condition on the
operands that says exactly which elements may differ and why; docs/deviations.md lists them. Any
other difference fails. NumPy runs here; torch and JAX in the `oracle` tests.
"""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from tests.support import tier
from tests.engines.test_cpu_engine import _numpy_or_correctly_rounded, ulp_distance

BINARY_OPS = [op for op in gp.OPS if op != "where"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
TRANSCENDENTAL = {"arctan2", "hypot", "logaddexp", "power"}


def specials(dtype: str) -> np.ndarray:
    d = gp.dtype(dtype)
    if d.kind == "c":
        part = specials("float32" if d.name == "complex64" else "float64")
        picks = part[[0, 1, 2, 3, 4, 6, 8, 12]]   # +-0, +-inf, nan, subnormal, max, 1
        re, im = np.meshgrid(picks, picks, indexing="ij")
        z = np.empty(re.size, d.numpy)
        z.real, z.imag = re.ravel(), im.ravel()   # (re + 1j * im would turn inf * 1j into nan)
        return z
    fi = ml_dtypes.finfo(d.numpy)
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, fi.smallest_subnormal, -fi.smallest_subnormal,
              fi.max, fi.min, fi.smallest_normal, -fi.smallest_normal, 1.0, -1.0, 2.5, -0.5]
    with np.errstate(all="ignore"):
        return np.array([float(v) for v in values]).astype(d.numpy)


def pairs(dtype):
    v = specials(dtype)
    return np.repeat(v, len(v)), np.tile(v, len(v))


# --- what may differ, and why -----------------------------------------------------------------------

def _f64(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _zero(x):
    return _f64(x) == 0


def _inexact(x):
    x = np.asarray(x)
    return x.dtype.kind in "fcV"   # V: ml_dtypes' bfloat16 and float8


def _subnormal(x):
    x = np.asarray(x)
    if not _inexact(x):
        return np.zeros(x.shape, bool)
    tiny = ml_dtypes.finfo(x.dtype).smallest_normal if x.dtype.kind != "c" else np.finfo(x.dtype).tiny
    v = np.abs(_f64(x))
    return (v > 0) & (v < float(tiny))


def _zero_or_subnormal(x):
    return _zero(x) | _subnormal(x)


def _nonfinite_part(x):
    v = _f64(x)
    return ~np.isfinite(v.real) | ~np.isfinite(v.imag) if v.dtype.kind == "c" else ~np.isfinite(v)


def _overflowing_part(x):
    """A part whose square overflows, or an infinite or NaN part: products of parts may be inf."""
    if not _inexact(x):
        return np.zeros(np.shape(x), bool)
    v = _f64(x)
    limit = float(np.sqrt(ml_dtypes.finfo(np.asarray(x).dtype).max if np.asarray(x).dtype.kind != "c"
                          else np.finfo(np.asarray(x).dtype).max))
    return _nonfinite_part(x) | (np.abs(v.real) > limit) | (np.abs(v.imag) > limit)


def _product_out_of_range(a, b):
    """Some product of a part of a with a part of b overflows or underflows (into the subnormals)
    in the complex result's precision, or a part is infinite or NaN: where a fused multiply-add
    and a rounded product differ in value or in the sign of a zero."""
    a, b = np.asarray(a), np.asarray(b)
    kinds = [x.dtype for x in (a, b) if x.dtype.kind == "c"]
    double = any(d == np.complex128 for d in kinds) or any(x.dtype == np.float64 for x in (a, b))
    fi = np.finfo(np.float64 if double else np.float32)
    va, vb = _f64(a).astype(np.complex128), _f64(b).astype(np.complex128)
    out = _nonfinite_part(va) | _nonfinite_part(vb)
    with np.errstate(all="ignore"):
        for pa in (va.real, va.imag):
            for pb in (vb.real, vb.imag):
                product = np.abs(pa.astype(np.longdouble) * pb.astype(np.longdouble))
                out |= (product > float(fi.max)) | ((product > 0) & (product < float(fi.tiny)))
    return out


def _zero_part(x):
    v = _f64(x)
    return (v.real == 0) | (v.imag == 0)


def _quotient_beyond_precision(a, b):
    """|a / b| too large for a - b * floor(a / b) to be exact, or a division by a subnormal."""
    with np.errstate(all="ignore"):
        return ~(np.abs(_f64(a) / _f64(b)) < 2.0 ** 24) | _subnormal(b)


def _any(predicate):
    return lambda a, b: predicate(a) | predicate(b)


def _both(predicate):
    return lambda a, b: predicate(a) & predicate(b)


def _everything(a, b):
    return np.ones(np.shape(a), bool)


_ZERO_TIES = (_both(_zero), "+0 against -0: which zero is returned (see the tie rules in docs/deviations.md)")

# (framework, op, dtypes) -> (which elements may differ, why)
KNOWN = {
    ("numpy", "maximum", ("float16",)): _ZERO_TIES,
    ("numpy", "minimum", ("float16",)): _ZERO_TIES,
    ("numpy", "fmax", ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float32", "float64")): _ZERO_TIES,
    ("numpy", "fmin", ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float32", "float64")): _ZERO_TIES,
    ("numpy", "nextafter", ("float16",)): (_both(_zero), "npy_half_nextafter returns x for x == y, C's nextafter y"),
    ("numpy", "multiply", ("complex64", "complex128")):
        (_product_out_of_range, "NumPy's AVX-512 complex loop fuses multiply-adds: where a product of "
                                "parts overflows or underflows, inf/nan parts and zero signs differ"),
    ("numpy", "power", ("complex64", "complex128")):
        (_everything, "NumPy calls the C library's cpow, gp exp(b * log(a)) in double precision: ordinary "
                      "values agree within a few ulp (test_cpu_engine), special values are the library's"),

    ("torch", "remainder", tuple(FLOATS)):
        (_quotient_beyond_precision,
         "torch's vectorized loop computes a - b * floor(a / b): quotients beyond the precision (its tail and "
         "gpupromote take fmod's remainder)"),
    ("torch", "fmod", ("bfloat16", "float32", "float64")):
        (lambda a, b: _subnormal(b) | (np.abs(_f64(a)) > 1e30) | _subnormal(a),
         "torch's vectorized fmod is a - b * trunc(a / b): the quotient overflows"),
    ("torch", "fmax", ("bfloat16",)): _ZERO_TIES,
    ("torch", "fmin", ("bfloat16",)): _ZERO_TIES,
    ("torch", "add", tuple(COMPLEX)): (lambda a, b: _nonfinite_part(a) | _nonfinite_part(b) | _zero_part(b),
                                       "torch computes a + alpha * b (alpha = 1 + 0j): zero signs, inf parts"),
    ("torch", "subtract", tuple(COMPLEX)): (lambda a, b: _nonfinite_part(a) | _nonfinite_part(b) | _zero_part(b),
                                            "torch computes a - alpha * b (alpha = 1 + 0j): zero signs, inf parts"),
    ("torch", "true_divide", tuple(COMPLEX)):
        (_any(_subnormal), "torch's complex division: the sign of a quotient that underflows to 0"),
    ("torch", "power", tuple(COMPLEX)): (_everything, "torch's cpow: its own special values (0 ** 0 is nan)"),

    # XLA flushes subnormals in most ops (FTZ/DAZ, lowering-dependent), computes narrow floats in
    # their own precision, and has its own complex semantics: see cpu-engine.md, "JAX".
    ("jax", "*", tuple(FLOATS)): (_any(_subnormal), "XLA flushes subnormals, op by op"),
    ("jax", "*", tuple(COMPLEX)): (_everything, "XLA's complex arithmetic, order and cpow"),
    ("jax", "maximum", tuple(FLOATS)): _ZERO_TIES,
    ("jax", "minimum", tuple(FLOATS)): _ZERO_TIES,
    ("jax", "fmax", tuple(FLOATS)): _ZERO_TIES,
    ("jax", "fmin", tuple(FLOATS)): _ZERO_TIES,
    ("jax", "hypot", ("float16", "bfloat16")): (_everything, "XLA computes it in the narrow type"),
    ("jax", "logaddexp", ("float16", "bfloat16")): (_everything, "XLA computes it in the narrow type"),
    ("jax", "power", tuple(FLOATS)): (_any(_zero_or_subnormal), "XLA's pow of zeros and subnormals"),
}


def known(framework, op, dtype):
    for key in ((framework, op), (framework, "*")):
        for (fw, name, dtypes), rule in KNOWN.items():
            if (fw, name) == key and dtype in dtypes:
                yield rule


def differences(result, expected, ulps):
    """Elements where ``result`` is not ``expected``: exact values bit for bit (the sign of a zero
    counts), NaN for NaN (either sign), ``ulps`` for the transcendental ops."""
    result, expected = np.asarray(result), np.asarray(expected)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if result.ndim != 1:
        return differences(result.reshape(-1), expected.reshape(-1), ulps).reshape(result.shape)
    if expected.dtype.kind == "c":
        return differences(result.real, expected.real, ulps) | differences(result.imag, expected.imag, ulps)
    if expected.dtype.kind in "biu":
        return result != expected
    r, e = result.astype(np.float64), expected.astype(np.float64)
    nan = np.isnan(r) | np.isnan(e)
    bad = np.where(nan, np.isnan(r) != np.isnan(e), (r != e) | (np.signbit(r) != np.signbit(e)))
    if ulps:
        close = ulp_distance(np.ascontiguousarray(result), np.ascontiguousarray(expected)) <= ulps
        bad &= ~(close & (np.signbit(r) == np.signbit(e)) & ~nan)
    return bad


def check(framework, op, dtype, a, b, result, expected, where=""):
    ulps = 1 if op in TRANSCENDENTAL else 0
    if ulps and np.asarray(expected).dtype.kind == "f" and np.shape(result) == np.shape(expected):
        # where the framework is further than 1 ulp from the exact value, the correctly rounded one
        expected = _numpy_or_correctly_rounded(op, (a, b), np.asarray(result), np.asarray(expected))
    bad = differences(result, expected, ulps)
    for allowed, _why in known(framework, op, dtype):
        bad &= ~np.broadcast_to(allowed(a, b), bad.shape)
    if bad.any():
        idx = np.flatnonzero(bad.reshape(-1))[:6]
        a_, b_ = np.broadcast_to(a, bad.shape).reshape(-1), np.broadcast_to(b, bad.shape).reshape(-1)
        shown = "; ".join(f"{op}({a_[i]!r}, {b_[i]!r}) = {np.asarray(result).reshape(-1)[i]!r}, "
                          f"{framework} {np.asarray(expected).reshape(-1)[i]!r}" for i in idx)
        pytest.fail(f"{framework} {dtype}{where}: {int(bad.sum())} of {bad.size} differ: {shown}")


def _numpy(op, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(np, op)(*args)


def _gp(op, *args, policy="numpy"):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(gp, op)(*args, policy=policy)


def _numpy_takes(op, dtype):
    try:
        _numpy(op, *[x[:1] for x in pairs(dtype)])
        return True
    except TypeError:
        return False


NUMPY_CASES = [(op, d) for d in FLOATS + COMPLEX for op in BINARY_OPS if _numpy_takes(op, d)]


# lean tier (tests/support/tier.py): each op on half its (dtype, layout) cells; GP_TEST_TIER=full: all
_NUMPY_GRID = tier.thin([(op, d, layout) for op, d in NUMPY_CASES for layout in ("contiguous", "strided")], 2)


@pytest.mark.parametrize("op, dtype, layout", _NUMPY_GRID, ids=[f"{op}-{d}-{layout}" for op, d, layout in _NUMPY_GRID])
def test_specials_against_numpy(op, dtype, layout):
    a, b = pairs(dtype)
    if layout == "strided":   # every other element of arrays twice as long: the strided loops
        a, b = np.repeat(a, 2)[::2], np.repeat(b, 2)[1::2]
    check("numpy", op, dtype, a, b, _gp(op, a, b), _numpy(op, a, b), f" ({layout})")


SCALAR_CASES = [(op, d) for d in ("float32", "float64") for op in BINARY_OPS if _numpy_takes(op, d)]


@pytest.mark.parametrize("op, dtype", SCALAR_CASES, ids=[f"{op}-{d}" for op, d in SCALAR_CASES])
def test_specials_as_folded_scalars_against_numpy(op, dtype):
    """Each special as a Python float (first and second operand) and as a 0-d array."""
    v = specials(dtype)
    for s in v:
        for folded in (float(s), np.asarray(s)):
            for a, b in ((v, folded), (folded, v)):
                where = f" ({type(folded).__name__} {float(s)!r} {'second' if b is folded else 'first'})"
                check("numpy", op, dtype, np.asarray(a), np.asarray(b), _gp(op, a, b), _numpy(op, a, b), where)


def test_where_passes_specials_through_bit_for_bit():
    for dtype in FLOATS + COMPLEX:
        a, b = pairs(dtype)
        cond = np.arange(a.size) % 3 == 0
        got, want = gp.where(cond, a, b), np.where(cond, a, b)
        assert got.tobytes() == want.tobytes(), dtype


# NaN signs: where the result is an operand's NaN passed through, its sign is the framework's.
NAN_PASSTHROUGH = [
    ("copysign", "float32"), ("copysign", "float64"), ("maximum", "float32"), ("minimum", "float64"),
    ("fmax", "float32"), ("fmin", "float64"), ("nextafter", "float32"), ("nextafter", "float64"),
    ("power", "float32"), ("power", "float64"), ("add", "float32"), ("multiply", "float64"),
    ("nextafter", "float16"), ("nextafter", "bfloat16"),
]


@pytest.mark.parametrize("op, dtype", NAN_PASSTHROUGH, ids=[f"{op}-{d}" for op, d in NAN_PASSTHROUGH])
def test_a_single_nan_operand_keeps_the_sign_the_framework_gives_it(op, dtype):
    v = specials(dtype)
    nans = v[np.isnan(v.astype(np.float64))]
    others = v[~np.isnan(v.astype(np.float64))]
    a, b = np.repeat(nans, len(others)), np.tile(others, len(nans))
    for x, y in ((a, b), (b, a)):
        got, want = _gp(op, x, y).astype(np.float64), _numpy(op, x, y).astype(np.float64)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all()
        assert (np.signbit(got[nan]) == np.signbit(want[nan])).all(), f"{op} {dtype}: NaN signs differ"


# --- torch and JAX ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _torch_call(torch, op, a, b):
    from tests.oracle.test_cpu_oracle import _TORCH_FN, _from_torch, _to_torch
    return _from_torch(torch, getattr(torch, _TORCH_FN.get(op, op))(_to_torch(torch, a), _to_torch(torch, b)))


_TORCH_GRID = tier.thin([(op, d) for op in BINARY_OPS for d in FLOATS + COMPLEX], 2)


@pytest.mark.oracle
@pytest.mark.parametrize("op, dtype", _TORCH_GRID, ids=[f"{op}-{d}" for op, d in _TORCH_GRID])
def test_specials_against_torch(torch, op, dtype):
    a, b = pairs(dtype)
    try:
        expected = _torch_call(torch, op, a, b)
    except Exception as exc:  # noqa: BLE001 - torch has no such kernel: not a values case
        pytest.skip(f"torch raises {type(exc).__name__}")
    if op in ("arctan2", "logaddexp") and dtype in COMPLEX:
        pytest.skip("the CPU engine has no complex arctan2 / logaddexp kernel")
    check("torch", op, dtype, a, b, _gp(op, a, b, policy="torch"), expected)


_JAX_GRID = tier.thin([(op, d) for op in BINARY_OPS for d in ("float16", "bfloat16", "float32", "complex64")], 2, shift=1)


@pytest.mark.oracle
@pytest.mark.parametrize("op, dtype", _JAX_GRID, ids=[f"{op}-{d}" for op, d in _JAX_GRID])
def test_specials_against_jax(op, dtype):
    jnp = pytest.importorskip("jax.numpy")
    a, b = pairs(dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = np.asarray(getattr(jnp, op)(jnp.asarray(a), jnp.asarray(b)))
    except Exception as exc:  # noqa: BLE001 - JAX refuses the dtype: not a values case
        pytest.skip(f"jax raises {type(exc).__name__}")
    if op in ("arctan2", "logaddexp") and dtype in COMPLEX:
        pytest.skip("the CPU engine has no complex arctan2 / logaddexp kernel")
    check("jax", op, dtype, a, b, _gp(op, a, b, policy="jax"), expected)
