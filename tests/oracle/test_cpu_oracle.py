"""Values under the torch and jax policies equal PyTorch's and JAX's own CPU results.

Marked ``oracle``: each framework is imported with pytest.importorskip, so the tests skip
cleanly where torch (``pip install torch==2.13.0``, a CPU build) or jax is not installed.

The same operands go to ``gp.<op>(..., policy=P)`` and to the framework's function: the dtype
must be the framework's, the values bit-equal for exact ops (any NaN matches any NaN) and
within 1 ulp for transcendental ones. Where the framework raises for a dtype combination the
case says so and is skipped: this file checks values; the resolver's tests check refusals.
"""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from tests.support import tier
from tests.engines.test_cpu_engine import TRANSCENDENTAL, _numpy_or_correctly_rounded, assert_same, values

pytestmark = pytest.mark.oracle

ALL_OPS = [op for op in gp.OPS]
SAME = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]
MIXED = [("int8", "bfloat16"), ("int16", "float16"), ("float16", "bfloat16"), ("int32", "float64"),
         ("uint8", "int8"), ("int64", "float32")]
# (first operand, second operand): ("array", dtype), ("0d", dtype) or ("scalar", value)
KINDS = [(("array", "int32"), ("scalar", 3)), (("array", "int8"), ("scalar", 2.5)),
         (("array", "float16"), ("scalar", 2.5)), (("array", "bfloat16"), ("scalar", 3)),
         (("array", "uint8"), ("scalar", True)), (("array", "float32"), ("scalar", 1 + 2j)),
         (("array", "int32"), ("0d", "float64")), (("array", "float16"), ("0d", "int64")),
         (("0d", "float32"), ("array", "int8"))]
_NONZERO = {"floor_divide", "remainder", "fmod"}   # integer division by zero has its own tests


def _operand(spec, op, seed, second, no_subnormals=False):
    kind, what = spec
    if kind == "scalar":
        return what
    x = values(what, 20, seed)
    if no_subnormals and x.dtype.kind in "fcV":
        # XLA flushes subnormals (FTZ/DAZ); see test_jax_flushes_subnormals
        x = np.where(np.abs(x.astype(np.complex128)) < 1e-30, np.ones((), x.dtype) * 3, x).astype(x.dtype)
    if op in _NONZERO and gp.dtype(x.dtype).kind == "f":
        # PyTorch's vectorized float remainder / fmod is a - b * floor(a / b): it differs from
        # C's fmod (and NumPy) where a / b overflows or is subnormal (1e30 % 1e-40). Keep the
        # quotients moderate; that corner is a documented difference, not a value case.
        x = np.where(np.abs(x.astype(np.float64)) > 1e20, 7.0, x).astype(x.dtype)
        x = np.where(np.abs(x.astype(np.float64)) < 1e-30, 3.0, x).astype(x.dtype)
    if second and op in _NONZERO | {"left_shift", "right_shift", "power"}:
        if x.dtype.kind in "biu":   # non-zero divisors, small non-negative shifts and exponents
            x = (np.abs(x.astype(np.int64)) % 5 + 1).astype(x.dtype)
        elif op in _NONZERO:
            x = np.where(x == 0, np.ones((), x.dtype), x).astype(x.dtype)
    return np.asarray(x[2]) if kind == "0d" else x


def _show(spec):
    kind, what = spec
    return f"py{type(what).__name__}" if kind == "scalar" else (what if kind == "array" else f"{what}[0d]")


def _complex(*specs):
    return any((k == "scalar" and isinstance(w, complex)) or (k != "scalar" and gp.dtype(w).kind == "c")
               for k, w in specs)


def _known_difference(framework, op, sa, sb):
    """The framework behaviour (or the gpupromote kernel) a case waits for, where gpupromote's values
    are known to differ from the framework's; None for the cases that must agree. Each is a strict
    xfail: a case that starts to agree fails, so that its entry here is taken off."""
    if op in ("arctan2", "logaddexp") and _complex(sa, sb):
        return (f"waits for a complex {op} kernel in gpupromote's engines (NumPy has no complex loop for it; "
                f"{framework} computes one)")
    both_complex_arrays = all(k == "array" and gp.dtype(w).kind == "c" for k, w in (sa, sb))
    if framework == "torch" and op in ("add", "subtract") and both_complex_arrays:
        return ("torch.add / torch.sub compute a + alpha * b with a complex alpha = 1, so an infinite part of b "
                "gives a NaN imaginary part where a + b does not")
    if framework == "jax" and op in ("maximum", "minimum") and _complex(sa, sb):
        return (f"jnp.{op} of complex values with a NaN part returns NaN; the jax policy's kernel orders them "
                f"as NumPy does")
    return None


def _ulps(framework, op, sa, sb):
    """Units in the last place a framework's own arithmetic may differ by, where it is not correctly
    rounded by design (TRANSCENDENTAL ops: its math library's)."""
    if framework == "jax" and op == "true_divide" and (sb[0] != "array" or _complex(sa, sb)):
        # XLA computes x / c as x * (1 / c) for a scalar or 0-d divisor, and divides complex numbers
        # its own way: within 1 ulp of the correctly rounded quotient, which the engine returns
        return 1
    return 1 if op in TRANSCENDENTAL else 0


def _cases(framework):
    specs = [(("array", d), ("array", d)) for d in SAME] + \
            [(("array", a), ("array", b)) for a, b in MIXED] + KINDS
    # lean tier: each op with a third of the operand pairs, each pair under a third of the ops, the other
    # framework on another third (tests/support/tier.py); GP_TEST_TIER=full runs them all
    grid = tier.thin([(op, sa, sb) for op in ALL_OPS for sa, sb in specs], 3, shift=framework == "jax")
    for op, sa, sb in grid:
        why = _known_difference(framework, op, sa, sb)
        marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
        yield pytest.param(op, sa, sb, id=f"{op}-{_show(sa)}-{_show(sb)}", marks=marks)


def _args(op, sa, sb, no_subnormals=False):
    a, b = _operand(sa, op, 0, False, no_subnormals), _operand(sb, op, 1, True, no_subnormals)
    return (values("bool", 20, 3), a, b) if op == "where" else (a, b)


def _compare(policy, op, args, native_call, to_numpy, ulps):
    try:
        expected = native_call(op, args)
    except Exception as exc:  # noqa: BLE001 - the framework refuses: not a values case
        pytest.skip(f"{policy} raises {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    expected = to_numpy(expected)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = getattr(gp, op)(*args, policy=policy)
    context = f"{policy}: {op}{tuple(getattr(a, 'dtype', a) for a in args)}"
    if op in TRANSCENDENTAL and expected.dtype.kind == "c":
        # Complex pow: each library has its own cpow; compare relative to the magnitude, as a
        # component near zero has no meaningful ulp count.
        assert result.dtype == expected.dtype, context
        rtol = 1e-5 if expected.dtype == np.complex64 else 1e-13
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=0, equal_nan=True, err_msg=context)
        return
    if op in TRANSCENDENTAL and expected.dtype.kind == "f" and np.shape(result) == np.shape(expected):
        # where the framework is further than 1 ulp from the exact value: the correctly rounded one
        expected = _numpy_or_correctly_rounded(op, args, np.asarray(result), expected)
    assert_same(result, expected, ulps, context)


# --- PyTorch ------------------------------------------------------------------------------------

# torch.equal compares whole tensors (one bool): torch.eq is the elementwise op
_TORCH_FN = {"arctan2": "atan2", "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
             "power": "pow", "equal": "eq"}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _to_torch(torch, x):
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16)
    if x.dtype == ml_dtypes.float8_e4m3fn:
        return torch.from_numpy(x.view(np.uint8).copy()).view(torch.float8_e4m3fn)
    if x.dtype == ml_dtypes.float8_e5m2:
        return torch.from_numpy(x.view(np.uint8).copy()).view(torch.float8_e5m2)
    return torch.from_numpy(x.copy())


def _from_torch(torch, t):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return t.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn if t.dtype == torch.float8_e4m3fn
                                                   else ml_dtypes.float8_e5m2)
    return t.numpy()


@pytest.mark.parametrize("op, sa, sb", list(_cases("torch")))
def test_torch_values(torch, op, sa, sb):
    args = _args(op, sa, sb)

    def call(op, args):
        native = [_to_torch(torch, a) for a in args]
        return getattr(torch, _TORCH_FN.get(op, op))(*native)
    _compare("torch", op, args, call, lambda t: _from_torch(torch, t), ulps=_ulps("torch", op, sa, sb))


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_torch_integer_division_by_zero_raises_like_torch(torch, op):
    a, z = np.array([1, 2], np.int32), np.array([1, 0], np.int32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(z))
    with pytest.raises(RuntimeError):     # gp's IntegerDivisionByZero is a RuntimeError too
        getattr(gp, op)(a, z, policy="torch")


# --- JAX ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["jax", "jax-x64"])
def jax_policy(request):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param == "jax-x64")
    yield request.param, jnp
    jax.config.update("jax_enable_x64", previous)


@pytest.mark.parametrize("op, sa, sb", list(_cases("jax")))
def test_jax_values(jax_policy, op, sa, sb):
    policy, jnp = jax_policy
    # Subnormal inputs are left out here: XLA's flushing depends on how each op is lowered
    # (fmax and bfloat16 comparisons keep them, arithmetic flushes); test_jax_flushes_subnormals
    # checks the float32 arithmetic the plans' flush_subnormals covers.
    args = _args(op, sa, sb, no_subnormals=True)

    def call(op, args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # x64 off: "explicitly requested dtype int64 ..."
            native = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
            return getattr(jnp, op)(*native)
    _compare(policy, op, args, call, lambda r: np.asarray(r), ulps=_ulps("jax", op, sa, sb))


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8"])
def test_jax_integer_division_by_zero_values(jax_policy, dtype):
    policy, jnp = jax_policy
    a = np.array([5, 0, 7, 1], dtype)
    z = np.zeros(4, dtype)
    for op in ("floor_divide", "remainder"):
        expected = np.asarray(getattr(jnp, op)(jnp.asarray(a), jnp.asarray(z)))
        assert_same(getattr(gp, op)(a, z, policy=policy), expected, 0, f"{policy} {op} {dtype} by 0")


def test_jax_flushes_subnormals(jax_policy):
    policy, jnp = jax_policy
    a = np.array([1e-40, -1e-40, 1e-20, 2.0], np.float32)
    b = np.array([1.0, 1.0, 1e-20, 1e-38], np.float32)
    for op in ("multiply", "add", "maximum", "logical_and", "less", "where", "copysign", "nextafter"):
        args = (a > 1, a, b) if op == "where" else (a, b)
        expected = np.asarray(getattr(jnp, op)(*[jnp.asarray(x) for x in args]))
        assert_same(getattr(gp, op)(*args, policy=policy), expected, 0, f"{policy} {op} subnormals")
