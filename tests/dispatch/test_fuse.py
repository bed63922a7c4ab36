"""gp.fuse: a chain of ops traced into one kernel, bit for bit the eager result under every policy.

The eager reference is the same function called on the real arrays, each op a gp.<op> call (or a
gp.Array operator) under the policy: what a user would have written without gp.fuse.
"""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpupromote as gp
from tests.support import tier
from gpupromote.core import dtypes as D
from gpupromote.core.errors import IntegerDivisionByZero
from gpupromote.promotion.policies import policy_names


def bits(x):
    """An array's bytes (NaN payloads and signed zeros included) and its dtype, for exact equality."""
    if isinstance(x, gp.Array):
        return x.dtype.name, np.ascontiguousarray(x.numpy()).tobytes(), x.shape
    x = np.asarray(x)
    return D.dtype(x.dtype).name, np.ascontiguousarray(x).tobytes(), x.shape


def eager(fn, args, policy):
    with gp.use_policy(policy):
        return fn(*args)


def outcome(run):
    """("ok", bits, warnings) or ("raise", exception class, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", bits(run()))
        except (TypeError, ValueError, ArithmeticError) as exc:
            result = ("raise", type(exc))
    return result + ([f"{w.category.__name__}: {w.message}" for w in caught],)


RNG = np.random.default_rng(7)
F16 = lambda *v: np.array(v, np.float16)  # noqa: E731


# ---------------------------------------------------------------------------------------------
# The examples the issue names

def test_chain_of_five_ops_is_one_kernel_equal_to_eager():
    a, b, c, d, e = (RNG.standard_normal(1001).astype(np.float32) for _ in range(5))
    f = gp.fuse(lambda a, b, c, d, e: a * b + c * d - e)
    got = f(a, b, c, d, e)
    assert bits(got) == bits(eager(lambda *x: gp.subtract(gp.add(gp.multiply(x[0], x[1]), gp.multiply(x[2], x[3])),
                                                         x[4]), (a, b, c, d, e), "numpy"))
    (trace,) = f._traces.values()
    assert len(trace.steps) == 4 and trace.kernel.arrays == [0, 1, 2, 3, 4]


def test_a_float16_intermediate_stays_float16():
    """2047 * 3 = 6141 rounds to 6140 in float16 before 1 is added (6141 rounds to 6140 again);
    kept in float32, 6141 + 1 = 6142 would round (a tie, to even) to 6144. Eager rounds the
    intermediate; so must the fused kernel."""
    a, b, c = F16(2047.0, 3.0), F16(3.0, 1.0), F16(1.0, 0.5)
    f = gp.fuse(lambda a, b, c: a * b + c)
    assert f(a, b, c).tolist() == (a * b + c).tolist() == [6140.0, 3.5]
    upcast = (a.astype(np.float32) * b + c).astype(np.float16)   # what an upcasting fuser returns
    assert upcast.tolist() == [6144.0, 3.5]


def test_integers_wrap_where_eager_wraps():
    x = np.array([100, -100, 127, -128], np.int8)
    f = gp.fuse(lambda x: (x + x) * 3 - x)
    assert bits(f(x)) == bits(eager(lambda x: gp.subtract(gp.multiply(gp.add(x, x), 3), x), (x,), "numpy"))
    assert f(x).tolist() == [(((v + v) * 3 - v + 128) % 256) - 128 for v in (100, -100, 127, -128)]


def test_narrow_promoted_float_rounds_each_input():
    """numpy: int8 17 + float8_e4m3fn 0.5: 17 rounds to 16 in float8 first, as NumPy does."""
    x, y = np.array([17], np.int8), np.array([0.5], ml_dtypes.float8_e4m3fn)
    assert gp.fuse(lambda x, y: x + y, policy="numpy")(x, y).astype(np.float32).tolist() == [16.0]
    assert (x + y).astype(np.float32).tolist() == [16.0]


@pytest.mark.parametrize("policy, a, b", [
    ("array-api", np.ones(2, np.int8), np.ones(2, np.float32)),   # mixed kinds are refused
    ("torch", np.ones(2, np.uint16), np.ones(2, np.int8)),          # no uint16 promotion in PyTorch
    ("tf-none", np.ones(2, np.int32), np.ones(2, np.int64)),        # no tensor-tensor promotion
])
def test_a_refused_promotion_raises_the_eager_error_at_trace_time(policy, a, b):
    with pytest.raises(gp.PromotionError) as eager_error:
        eager(lambda a, b: gp.add(gp.multiply(a, a), b), (a, b), policy)
    f = gp.fuse(lambda a, b: a * a + b, policy=policy)
    with pytest.raises(gp.PromotionError) as fused_error:
        f(a, b)
    assert str(fused_error.value) == str(eager_error.value)


# ---------------------------------------------------------------------------------------------
# Checks the eager call makes before a launch, made by the kernel

def test_integer_division_by_zero_inside_a_chain_raises_as_eager_and_leaves_out_alone():
    x, y = np.array([7, 8, 9], np.int64), np.array([1, 2, 3], np.int64)
    out = np.full(3, -1, np.int64)
    f = gp.fuse(lambda x, y: x // (y - y) + 1, policy="torch")
    with pytest.raises(IntegerDivisionByZero):
        f(x, y, out=out)
    assert out.tolist() == [-1, -1, -1]
    with pytest.raises(ZeroDivisionError):
        eager(lambda x, y: gp.add(gp.floor_divide(x, gp.subtract(y, y)), 1), (x, y), "torch")


def test_numpy_warns_for_integer_division_by_zero_in_step_order():
    x = np.array([-2**31, 6], np.int32)
    fn = lambda x: gp.floor_divide(gp.floor_divide(x, 0), -1)  # noqa: E731
    want = outcome(lambda: eager(fn, (x,), "numpy"))
    got = outcome(lambda: gp.fuse(fn, policy="numpy")(x))
    assert got == want and want[2] == ["RuntimeWarning: divide by zero encountered in floor_divide"]
    overflow = outcome(lambda: gp.fuse(lambda x: x // -1, policy="numpy")(x))
    assert overflow[2] == ["RuntimeWarning: overflow encountered in floor_divide"]


def test_negative_integer_power_raises_as_numpy():
    x = np.array([2, 3], np.int32)
    with pytest.raises(ValueError, match="negative integer powers"):
        gp.fuse(lambda x: x ** (x - 5), policy="numpy")(x)


# ---------------------------------------------------------------------------------------------
# Arguments: scalars, 0-d arrays, broadcasting, out=, gp.Array, captured arrays

def test_python_scalar_arguments_are_parameters_checked_at_every_call():
    x = np.arange(4, dtype=np.int8)
    f = gp.fuse(lambda x, s: x * s + 1, policy="numpy")
    assert f(x, 3).tolist() == [1, 4, 7, 10] and f(x, -2).tolist() == [1, -1, -3, -5]
    assert len(f._traces) == 1   # one trace for every int that fits int8
    with pytest.raises(OverflowError):  # NumPy 2: 300 does not fit int8, as eager raises
        f(x, 300)


def test_python_arithmetic_on_a_scalar_argument_runs_per_call():
    x = np.arange(3, dtype=np.float32)
    f = gp.fuse(lambda x, s: x * (s + 1) - s / 4)
    for s in (1, 2.5, -3):
        assert bits(f(x, s)) == bits(eager(lambda x: gp.subtract(gp.multiply(x, s + 1), s / 4), (x,), "numpy"))


def test_a_value_that_changes_the_plan_gets_its_own_trace():
    """NumPy 2 compares a uint8 array with 300 exactly (in int64), with 1 in uint8: two plans,
    two traces, each equal to eager."""
    x = np.arange(3, dtype=np.uint8)
    f = gp.fuse(lambda x, s: (x + 1) < s, policy="numpy")
    assert f(x, 1).tolist() == [False, False, False] and len(f._traces) == 1
    assert bits(f(x, 300)) == bits(eager(lambda x: gp.less(gp.add(x, 1), 300), (x,), "numpy"))
    assert len(f._traces) == 2 and f(x, 300).tolist() == [True, True, True] and f(x, 2).tolist() == [True, False, False]


def test_zero_dim_arrays_broadcasting_and_out():
    a = RNG.standard_normal((4, 1)).astype(np.float16)
    b = RNG.standard_normal(5).astype(np.float32)
    s = np.asarray(np.float64(0.3))
    fn = lambda a, b, s: gp.multiply(gp.add(a, b), s)  # noqa: E731
    f = gp.fuse(fn)
    for policy in ("numpy", "torch", "jax"):
        assert bits(f(a, b, s, policy=policy)) == bits(eager(fn, (a, b, s), policy)), policy
    out = np.empty((4, 5), np.float64)
    f(a, b, s, out=out)
    assert np.array_equal(out, eager(fn, (a, b, s), "numpy").astype(np.float64))
    with pytest.raises(TypeError, match="same_kind"):
        f(a, b, s, out=np.empty((4, 5), np.int32))


def test_out_aliasing_an_input():
    x = RNG.standard_normal(64).astype(np.float32)
    want = eager(lambda x: gp.subtract(gp.multiply(x, x), x[::-1]), (x,), "numpy")
    f = gp.fuse(lambda x, y: x * x - y)
    f(x, x[::-1], out=x)
    assert bits(x) == bits(want)


def test_gp_arrays_in_gp_arrays_out_and_operators_match_gp_array_operators():
    x = gp.asarray(np.array([1.5, -2.0, 0.25], np.float32)).astype("bfloat16")
    y = gp.asarray(np.array([3, -4, 5], np.int8))
    fn = lambda x, y: -(abs(x) * y) // 2 + (x > y)  # noqa: E731
    got = gp.fuse(fn, policy="torch")(x, y)
    assert isinstance(got, gp.Array) and bits(got) == bits(eager(fn, (x, y), "torch"))


def test_where_comparisons_and_captured_arrays():
    w = np.array([1.0, -1.0, 2.0], np.float32)
    fn = lambda x: gp.where(x > 0, x * w, -x)  # noqa: E731
    x = np.array([3, -2, 0], np.int16)
    assert bits(gp.fuse(fn)(x)) == bits(eager(fn, (x,), "numpy"))


def test_empty_outputs_run_eagerly():
    x = np.zeros((0, 3), np.int32)
    assert gp.fuse(lambda x: x // 2 + 1)(x).shape == (0, 3)


def test_explain_lists_every_step():
    text = gp.explain(gp.fuse(lambda a, b: a * b + 1.5), np.ones(2, np.float16), np.ones(2, np.int8))
    assert "step 0: multiply(float16[n] (argument 0), int8[n] (argument 1)) -> float16" in text
    assert "step 1: add(float16[n] (step 0), 1.5 (a constant)) -> float16" in text and "kernel:" in text


def test_traces_are_cached_per_signature():
    f = gp.fuse(lambda a, b: a - b)
    f(np.ones(3, np.float32), np.ones(3, np.float32))
    f(np.ones(5, np.float32), np.ones(5, np.float32))
    assert len(f._traces) == 1
    f(np.ones(3, np.float32), np.ones(3, np.float64))
    assert len(f._traces) == 2


def test_misuse_is_a_clear_error():
    with pytest.raises(TypeError, match="value of an array is unknown"):
        gp.fuse(lambda x: x if x > 0 else -x)(np.ones(2))
    with pytest.raises(TypeError, match="must return one array"):
        gp.fuse(lambda x: (x + 1, x - 1))(np.ones(2))
    assert gp.fuse(lambda x: 3)(np.ones(2)) == 3   # nothing to fuse: it runs as written
    with pytest.raises(TypeError, match="out= inside"):
        gp.fuse(lambda x: gp.add(x, 1, out=x))(np.ones(2))


# ---------------------------------------------------------------------------------------------
# The property: random chains, every policy, fused == eager bit for bit (or the same error)

_DTYPES = ["bool", "int8", "uint8", "int32", "uint64", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]
_BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power", "maximum",
           "fmin", "equal", "less", "logical_and", "bitwise_xor", "left_shift", "arctan2", "hypot", "copysign"]
_UNARY = ["negative", "absolute", "invert", "sqrt", "exp", "log", "expm1", "sin", "arctan", "tanh", "sigmoid", "erf",
          "cbrt", "floor", "trunc", "rint", "around", "sign", "square", "reciprocal", "isnan", "signbit",
          "logical_not", "conj", "real", "angle"]
_CASTS = ["bool", "int8", "uint8", "int32", "uint64", "float16", "bfloat16", "float32", "float64", "complex64"]
_SCALARS = [True, 3, -7, 300, 2.5, -0.0, 1e-3, 1.5 - 2j]
_SPECIAL = {"f": [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 65504.0], "i": [0, -1, 1, 127, -128], "u": [0, 1, 255]}
N = 7


def _values(dtype, seed):
    d = D.dtype(dtype)
    rng = np.random.default_rng(seed)
    if d.kind == "b":
        return rng.integers(0, 2, N).astype(bool)
    if d.kind in "ui":
        info = np.iinfo(d.numpy)
        v = rng.integers(max(info.min, -50), min(info.max, 50), N, endpoint=True)
        v[: 3] = rng.choice([x for x in _SPECIAL[d.kind] if info.min <= x <= info.max], 3)
        return v.astype(d.numpy)
    v = rng.standard_normal(N) * 4
    v[: 3] = rng.choice(_SPECIAL["f"], 3)
    if d.kind == "c":
        return (v + 1j * rng.standard_normal(N)).astype(d.numpy)
    with np.errstate(all="ignore"):
        return v.astype(d.numpy)


@st.composite
def chains(draw):
    n_inputs = draw(st.integers(1, 4))
    inputs = []
    for k in range(n_inputs):
        form = draw(st.sampled_from(["array", "array", "array", "zero-dim", "column"]))
        arr = _values(draw(st.sampled_from(_DTYPES)), seed=draw(st.integers(0, 99)))
        arr = {"zero-dim": np.asarray(arr[0]), "column": arr[:3, None]}.get(form, arr)  # column: (3, 1) x (7,)
        inputs.append(gp.asarray(arr) if draw(st.booleans()) else arr)   # gp.Array: its operators are gp ops

    def tree(depth):
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            if draw(st.integers(0, 4)) == 0:
                return ("scalar", draw(st.sampled_from(_SCALARS)))
            return ("input", draw(st.integers(0, n_inputs - 1)))
        kind = draw(st.sampled_from(["binary"] * 5 + ["unary"] * 2 + ["where", "clip", "astype"]))
        if kind == "unary":
            return ("unary", draw(st.sampled_from(_UNARY)), tree(depth - 1))
        if kind == "clip":   # a bound may be None
            bound = lambda: None if draw(st.integers(0, 3)) == 0 else tree(depth - 1)  # noqa: E731
            return ("clip", tree(depth - 1), bound(), bound())
        if kind == "astype":
            return ("astype", draw(st.sampled_from(_CASTS)), tree(depth - 1))
        if kind == "where":
            return ("where", tree(depth - 1), tree(depth - 1), tree(depth - 1))
        return ("binary", draw(st.sampled_from(_BINARY)), tree(depth - 1), tree(depth - 1),
                draw(st.booleans()))
    expr = tree(draw(st.integers(1, 4)))
    if expr[0] in ("scalar", "input"):
        expr = ("unary", "negative", expr)
    return inputs, expr, draw(st.sampled_from(policy_names()))


_PY_OPERATOR = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__", "true_divide": "__truediv__",
                "floor_divide": "__floordiv__", "remainder": "__mod__", "power": "__pow__", "bitwise_xor": "__xor__",
                "left_shift": "__lshift__", "equal": "__eq__", "less": "__lt__"}


def evaluate(expr, xs):
    """The chain as a user writes it: gp.<op> calls, or Python operators where an operand has them."""
    tag = expr[0]
    if tag == "input":
        return xs[expr[1]]
    if tag == "scalar":
        return expr[1]
    if tag == "unary":
        return getattr(gp, expr[1])(evaluate(expr[2], xs))
    if tag == "clip":
        return gp.clip(*(None if e is None else evaluate(e, xs) for e in expr[1:]))
    if tag == "astype":
        x = evaluate(expr[2], xs)
        return x.astype(expr[1]) if hasattr(x, "_tracer") else gp.astype(x, expr[1])
    if tag == "where":
        return gp.where(gp.not_equal(evaluate(expr[1], xs), 0), evaluate(expr[2], xs), evaluate(expr[3], xs))
    _, op, left, right, use_operator = expr
    a, b = evaluate(left, xs), evaluate(right, xs)
    scalar = (bool, int, float, complex)
    if isinstance(a, scalar) and isinstance(b, scalar):
        return getattr(gp, op)(np.asarray(a), b)  # two Python scalars: one becomes a 0-d array
    if use_operator and op in _PY_OPERATOR and not isinstance(a, (np.ndarray, *scalar)):
        return getattr(a, _PY_OPERATOR[op])(b)   # a gp.Array eagerly, a traced array in gp.fuse
    return getattr(gp, op)(a, b)


@settings(max_examples=tier.count("GP_FUSE_EXAMPLES", 150, 300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chains())
def test_fused_chains_equal_eager_bit_for_bit(case):
    inputs, expr, policy = case
    fn = lambda *xs: evaluate(expr, xs)  # noqa: E731
    want = outcome(lambda: eager(fn, inputs, policy))
    got = outcome(lambda: gp.fuse(fn, policy=policy)(*inputs))
    assert got == want, f"{policy}: {expr}"
