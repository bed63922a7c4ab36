"""Every path a call can take refuses the Python scalars its form refuses (issue 27), and only those:
the op functions (gp.maximum(x, 2.0) is torch.maximum(x, 2.0)) on their first call and on the 100th,
when the compiled dispatcher (dispatch/fastpath/ops.c, keyed by operand types) and gp.result_type's
C cache-hit path have entries for the same operand types from the other form; gp.Array's operators
(x + 1, the operator form, which paddle takes where paddle.add(x, 1) raises); gp.fuse, at trace
time, for both forms; and the Dask path. A handful of float32/int32 kernels in all."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core import caches
from gpupromote.core.errors import PromotionError
from gpupromote.dispatch import opfunctions

_REFUSAL = "must be a tensor, not a Python"


def _raises_refusal(call):
    with pytest.raises(PromotionError, match=_REFUSAL):
        call()


@pytest.fixture
def x():
    return np.arange(1, 4, dtype=np.float32)


def test_a_refused_function_call_refuses_on_the_first_and_the_hundredth_call(x):
    caches.clear_all()   # why: the first call must be a miss everywhere
    with gp.use_policy("torch"):
        assert gp.add(x, 2.0).dtype == np.float32   # a taken call of the same operand types fills the caches
        for _ in range(100):
            _raises_refusal(lambda: gp.maximum(x, 2.0))
            _raises_refusal(lambda: gp.maximum(2.0, x))
            _raises_refusal(lambda: gp.result_type(x, 2.0, op="maximum"))
        np.testing.assert_array_equal(gp.maximum(x, np.float32(2.0)), np.maximum(x, np.float32(2.0)))


@pytest.mark.skipif(opfunctions._fastpath is None, reason="the C extension was not built, or GPUPROMOTE_PURE_PYTHON")
def test_the_compiled_dispatcher_serves_taken_calls_and_never_a_refused_one(x):
    caches.clear_all()
    stats = opfunctions._fastpath.op_stats
    with gp.use_policy("paddle"):
        a = gp.asarray(x)
        for _ in range(3):
            assert (a + 1).dtype == gp.dtype("float32")                   # operator: taken, fills the plan cache
            assert gp.result_type(x, 1, op="add") == gp.dtype("float32")  # C path, the default (operator) form
        before = stats()
        for _ in range(100):
            _raises_refusal(lambda: gp.add(x, 1))                         # paddle.add(x, 1)
            _raises_refusal(lambda: gp.result_type(x, 1, op="add", form="function"))
        assert stats()["served"] == before["served"]
    with gp.use_policy("torch"):
        gp.maximum(x, x)
        before = stats()
        for _ in range(100):
            gp.maximum(x, x)
        assert stats()["served"] - before["served"] == 100               # the fast path still serves arrays


def test_numpys_keywords_do_not_turn_a_refused_scalar_into_an_array(x):
    with gp.use_policy("paddle"):
        _raises_refusal(lambda: gp.add(x, 1, dtype="float32"))      # paddle.add(x, 1) raises, whatever converts
        _raises_refusal(lambda: gp.add(x, 1, casting="same_kind"))
        _raises_refusal(lambda: np.add(gp.asarray(x), 1))            # a NumPy ufunc is a function call
        assert gp.add(x, np.float32(1), dtype="float32").dtype == np.float32


def test_the_operator_form_still_takes_the_scalar(x):
    a = gp.asarray(x)
    with gp.use_policy("paddle"):
        np.testing.assert_array_equal(np.asarray(a + 1), x + 1)
        np.testing.assert_array_equal(np.asarray(1 + a), 1 + x)
        b = gp.asarray(x.copy())
        b += 1
        np.testing.assert_array_equal(np.asarray(b), x + 1)
        i = gp.asarray(np.arange(3, dtype=np.int32))
        assert (1 & i).dtype == gp.dtype("int32")           # 1 & x runs in paddle
        _raises_refusal(lambda: i & 1)                       # x & 1 raises in paddle
    with gp.use_policy("torch"):
        assert (2 == a).dtype == gp.dtype("bool")            # torch.eq(2, t) raises, 2 == t runs
        _raises_refusal(lambda: gp.equal(2, x))


def test_fuse_refuses_at_trace_time_as_the_eager_call_refuses(x):
    @gp.fuse
    def function_form(a, s):
        return gp.maximum(a, s) * 2

    @gp.fuse
    def operator_form(a, s):
        return (a + s) * 2

    @gp.fuse
    def add_function(a, s):
        return gp.add(a, s) * 2

    with gp.use_policy("torch"):
        for _ in range(2):
            _raises_refusal(lambda: function_form(x, 2.0))
            np.testing.assert_array_equal(operator_form(x, 2.0), (x + 2) * 2)
        np.testing.assert_array_equal(function_form(x, np.float32(2.0)), np.maximum(x, 2) * 2)
    with gp.use_policy("paddle"):
        np.testing.assert_array_equal(np.asarray(operator_form(x, 1)), (x + 1) * 2)
        _raises_refusal(lambda: add_function(x, 1))
        assert "function form (paddle.add)" in add_function.explain(x, np.float32(1.0))


def test_a_fused_function_ending_in_a_reduction_keeps_each_steps_form(x):
    # such a function runs in stages (dispatch/fuse_stages.py), which replay the recorded steps
    @gp.fuse
    def operator_form(a, s):
        return gp.sum((a + s) * 2)

    @gp.fuse
    def function_form(a, s):
        return gp.sum(gp.add(a, s) * 2)

    with gp.use_policy("paddle"):
        assert int(np.asarray(operator_form(x, 1))) == int(((x.astype(np.int64) + 1) * 2).sum())
        _raises_refusal(lambda: function_form(x, 1))


def test_dask_graph_refuses_when_it_is_built(x):
    da = pytest.importorskip("dask.array")
    d = da.from_array(x, chunks=2)
    with gp.use_policy("torch"):
        _raises_refusal(lambda: gp.maximum(d, 2.0))
        assert gp.add(d, 2.0).compute().dtype == np.float32
