"""gp.fuse: what a trace is keyed on and what it captures (issue 25), fused equal to eager.

* the trace is keyed on each argument's rank, not "0-d or not": a function that looks at
  ``x.ndim`` runs its own branch for every rank;
* a step whose value is never used does not broadcast the result (eager's shape), yet its own
  operands must broadcast (eager's error), and its scalar conversions warn as eager's do;
* a Python scalar (or an array object) read from a closure or a module global is not frozen at
  trace time: the next call sees the new value, as eager does;
* a function that raises runs once per call, and a data check of an earlier step still raises
  first (as eager raises it).

The property test draws all of these at once: random chains over inputs of random ranks (called
twice, the second time with other ranks), unused steps (some over an input no other step can
broadcast with), closure scalars that change between the calls, and a branch on ``ndim``; the
fused call must equal the eager one (values, shape, dtype, exception class, warnings), and a
call that raises must have run the function once. GP_FUSE_TRACE_EXAMPLES sets how many (default 60; 150 under GP_TEST_TIER=full).
"""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpupromote as gp
from tests.support import tier
from gpupromote.core.errors import IntegerDivisionByZero, PromotionError
from gpupromote.dispatch.traced import Traced
from gpupromote.promotion.policies import policy_names
from tests.dispatch.test_fuse import _BINARY, _DTYPES, _SCALARS, _UNARY, _values, bits, eager, outcome

# ---------------------------------------------------------------------------------------------
# Ranks


def test_the_trace_is_keyed_on_rank():
    f = gp.fuse(lambda x: x * 2 if x.ndim == 2 else x + 100)
    assert f(np.ones(3)).tolist() == [101.0] * 3
    assert f(np.ones((2, 2))).tolist() == [[2.0, 2.0], [2.0, 2.0]], "a 2-d input runs the 2-d branch"
    assert f(np.ones((1, 1, 2))).tolist() == [[[101.0, 101.0]]]
    assert f(np.array(1.0)) == 101.0
    assert len(f._traces) == 4
    g = gp.fuse(lambda x: x + x.ndim)
    for ndim in range(5):
        assert bits(g(np.zeros((1,) * ndim, np.int16))) == bits(np.zeros((1,) * ndim, np.int16) + np.int16(ndim))
    sees = []
    h = gp.fuse(lambda x: sees.append(x.ndim) or x - 1)
    h(gp.asarray(np.ones((2, 3))))
    assert sees == [2], "a gp.Array's rank too"


# ---------------------------------------------------------------------------------------------
# Unused steps


def test_an_unused_step_does_not_broadcast_the_result():
    a, b = np.array(1.5, np.float32), np.arange(9, dtype=np.float32)

    def fn(a, b):
        unused = a + b        # noqa: F841 - computed, never used
        return a * 2

    got = gp.fuse(fn)(a, b)
    assert bits(got) == bits(eager(fn, (gp.asarray(a), gp.asarray(b)), "numpy").numpy()) and np.shape(got) == ()


def test_an_unused_step_over_an_input_the_result_cannot_broadcast_with():
    def fn(a, b):
        b * 2                 # broadcasts with nothing else: eager computes it alone
        return a + 1

    assert gp.fuse(fn)(np.ones(3), np.ones(4)).tolist() == [2.0, 2.0, 2.0]


def test_an_unused_step_whose_operands_do_not_broadcast_raises_as_eager():
    def fn(a, b, c):
        b + c                 # (4,) with (5,): eager raises here
        return a + 1

    args = (np.ones(3), np.ones(4), np.ones(5))
    with pytest.raises(ValueError, match="broadcast"):
        eager(fn, [gp.asarray(x) for x in args], "numpy")
    with pytest.raises(ValueError, match="broadcast"):
        gp.fuse(fn)(*args)


def test_an_unused_step_still_checks_its_data_and_converts_its_scalars():
    def divides(a, b, c):
        c // b                # b holds 0: torch refuses it though the quotient is unused
        return a + 1

    args = (np.ones(3, np.int32), np.array([1, 0, 2, 5], np.int32), np.arange(4, dtype=np.int32))
    with pytest.raises(IntegerDivisionByZero):
        gp.fuse(divides, policy="torch")(*args)
    assert gp.fuse(divides, policy="torch")(args[0], args[1] + 1, args[2]).tolist() == [2, 2, 2]

    def overflows(a, h):
        h + 1e6               # 1e6 does not fit float16: NumPy warns as it converts it
        return a * 3

    h = np.ones(2, np.float16)
    want = outcome(lambda: eager(overflows, (gp.asarray(np.ones(3)), gp.asarray(h)), "numpy").numpy())
    got = outcome(lambda: gp.fuse(overflows)(np.ones(3), h))
    assert got == want


# ---------------------------------------------------------------------------------------------
# Captured values


SCALE = 2.0


def test_a_closure_scalar_is_read_at_each_call():
    k = 2.0
    f = gp.fuse(lambda x: x * k)
    x = np.ones(3, np.float32)
    assert f(x).tolist() == [2.0] * 3
    k = 3.0
    assert f(x).tolist() == [3.0] * 3
    k = -0.0
    assert np.signbit(f(x)).all(), "-0.0 is not 0.0"
    k = 0.0
    assert not np.signbit(f(x)).any()
    k = 3                 # another type: another plan (an int scalar keeps float32 here too)
    assert bits(f(x)) == bits(x * np.float32(3))
    k = np.float64(0.5)   # a NumPy scalar, as eager promotes it
    assert bits(f(x)) == bits(eager(lambda x: x * k, [gp.asarray(x)], "numpy").numpy())
    k = float("nan")
    assert np.isnan(f(x)).all() and np.isnan(f(x)).all()


def test_a_global_scalar_and_a_nested_function_are_read_at_each_call():
    global SCALE
    f = gp.fuse(lambda x: x * SCALE)
    g = gp.fuse(lambda x: (lambda y: y + SCALE)(x))
    x = np.ones(2)
    try:
        assert f(x).tolist() == [2.0, 2.0] and g(x).tolist() == [3.0, 3.0]
        SCALE = 5.0
        assert f(x).tolist() == [5.0, 5.0] and g(x).tolist() == [6.0, 6.0]
    finally:
        SCALE = 2.0


def test_a_captured_array_rebound_is_read_again():
    w = np.arange(3.0)
    f = gp.fuse(lambda x: x + w)
    assert f(np.ones(3)).tolist() == [1.0, 2.0, 3.0]
    w[0] = 10.0           # its contents, as they are at the call
    assert f(np.ones(3)).tolist() == [11.0, 2.0, 3.0]
    w = np.full(3, -1.0)  # another array under the name
    assert f(np.ones(3)).tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------
# Raising functions


def test_a_function_that_raises_runs_once_per_call():
    runs = []

    def refused(a, b):
        runs.append(type(a))
        return a + b

    f = gp.fuse(refused, policy="jax-strict")
    for _ in range(3):
        with pytest.raises(PromotionError):
            f(np.ones(2, np.int32), np.ones(2, np.uint32))
    assert runs == [Traced] * 3

    def own_error(a):
        runs.append(type(a))
        raise KeyError("mine")

    runs.clear()
    with pytest.raises(KeyError):
        gp.fuse(own_error)(np.ones(2))
    assert len(runs) == 1


def test_a_data_check_before_a_refusal_raises_first_and_fn_runs_once():
    runs = []

    def fn(a, b):
        runs.append(1)
        q = gp.floor_divide(a, b)                  # b holds 0: torch raises here ...
        return gp.add(q, np.ones(3, np.uint64))    # ... before refusing int64 + uint64

    a, b = np.array([1, 2, 3]), np.array([1, 0, 1])
    with pytest.raises(IntegerDivisionByZero):
        eager(fn, (a, b), "torch")
    runs.clear()
    with pytest.raises(IntegerDivisionByZero):
        gp.fuse(fn, policy="torch")(a, b)
    assert runs == [1]
    runs.clear()
    with pytest.raises(PromotionError):
        gp.fuse(fn, policy="torch")(a, b + 1)   # no zero: the refusal
    assert runs == [1]


# ---------------------------------------------------------------------------------------------
# The property: ranks, unused steps and closures drawn, fused == eager

_BASE = (2, 3, 1, 4)


def _array(dtype, shape, seed):
    return np.resize(_values(dtype, seed), shape)


def _shape(draw, rank):
    """The last ``rank`` axes of _BASE, some of them 1: every such shape broadcasts with the others."""
    return tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in _BASE[len(_BASE) - rank:])


@st.composite
def traced_cases(draw):
    n_inputs = draw(st.integers(1, 3))
    dtypes = [draw(st.sampled_from(_DTYPES)) for _ in range(n_inputs)]
    seeds = [draw(st.integers(0, 99)) for _ in range(n_inputs)]
    calls = []
    for _ in range(2):   # two calls on the same fused function: other ranks, another closure value
        shapes = [_shape(draw, draw(st.integers(0, 4))) for _ in range(n_inputs)]
        odd = (5,) if draw(st.booleans()) else (1, 5)   # broadcasts with no other input (their axes are 1..4)
        arrays = [_array(d, s, seed) for d, s, seed in zip(dtypes, shapes, seeds)]
        arrays.append(_array(draw(st.sampled_from(_DTYPES)), odd, 7))
        calls.append((arrays, draw(st.sampled_from(_SCALARS))))

    def tree(depth, leaves):
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            pick = draw(st.integers(0, 9))
            if pick == 0:
                return ("scalar", draw(st.sampled_from(_SCALARS)))
            if pick == 1:
                return ("closure",)
            return ("input", draw(st.sampled_from(leaves)))
        kind = draw(st.sampled_from(["binary"] * 4 + ["unary", "where"]))
        if kind == "unary":
            return ("unary", draw(st.sampled_from(_UNARY)), tree(depth - 1, leaves))
        if kind == "where":
            return ("where", tree(depth - 1, leaves), tree(depth - 1, leaves), tree(depth - 1, leaves))
        return ("binary", draw(st.sampled_from(_BINARY)), tree(depth - 1, leaves), tree(depth - 1, leaves))

    used = list(range(n_inputs))
    result = tree(draw(st.integers(1, 3)), used)
    if result[0] != "binary" and result[0] != "unary" and result[0] != "where":
        result = ("unary", "negative", result)
    unused = [tree(draw(st.integers(1, 2)), used + [n_inputs]) for _ in range(draw(st.integers(0, 2)))]
    branch = draw(st.booleans())
    return calls, result, unused, branch, draw(st.sampled_from(policy_names()))


def _evaluate(expr, xs, k):
    tag = expr[0]
    if tag == "input":
        return xs[expr[1]]
    if tag == "scalar":
        return expr[1]
    if tag == "closure":
        return k[0]
    if tag == "unary":
        return getattr(gp, expr[1])(_evaluate(expr[2], xs, k))
    if tag == "where":
        return gp.where(gp.not_equal(_evaluate(expr[1], xs, k), 0), _evaluate(expr[2], xs, k), _evaluate(expr[3], xs, k))
    a, b = _evaluate(expr[2], xs, k), _evaluate(expr[3], xs, k)
    scalar = (bool, int, float, complex)
    if isinstance(a, scalar) and isinstance(b, scalar):
        return getattr(gp, expr[1])(np.asarray(a), b)   # two Python scalars: one becomes a 0-d array
    return getattr(gp, expr[1])(a, b)


def _make(result, unused, branch):
    """The function a user would write: unused steps computed and dropped, a branch on the rank of
    the first argument, a scalar read from its closure (``k``, changed between calls), and a count
    of its runs (traced, eager)."""
    k, runs = [None], {"traced": 0, "eager": 0}

    def fn(*xs):
        runs["traced" if isinstance(xs[0], Traced) else "eager"] += 1
        for expr in unused:
            _evaluate(expr, xs, k)
        r = _evaluate(result, xs, k)
        if branch and xs[0].ndim >= 2:
            r = gp.add(r, r)
        return r
    return fn, k, runs


@settings(max_examples=tier.count("GP_FUSE_TRACE_EXAMPLES", 60, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(traced_cases())
def test_fused_equals_eager_over_ranks_unused_steps_and_closures(case):
    calls, result, unused, branch, policy = case
    fn, k, runs = _make(result, unused, branch)
    fused = gp.fuse(fn, policy=policy)
    for arrays, closure_value in calls:
        k[0] = closure_value
        want = outcome(lambda: eager(fn, [gp.asarray(a) for a in arrays], policy))
        want = (want[0], _plain(want[1]), want[2]) if want[0] == "ok" else want
        runs.update(traced=0, eager=0)
        got = outcome(lambda: fused(*arrays))
        assert got == want, f"{policy}: result {result}, unused {unused}, branch {branch}, k={closure_value!r}, " \
                            f"shapes {[a.shape for a in arrays]}"
        if got[0] == "raise" and not runs["eager"]:
            assert runs["traced"] <= 1, f"a raising function ran {runs['traced']} times in one call"


def _plain(b):
    """bits() of an eager gp.Array result as the fused call returns it (a NumPy array of the same bits)."""
    return b
