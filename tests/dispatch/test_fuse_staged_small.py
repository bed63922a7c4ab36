"""gp.fuse functions with reductions: a small call runs as the eager calls (dispatch/fuse.py
``STAGED_EAGER_MAX``; from the second call of a key, its recorded stages: test_fuse_programs.py),
a large one as stages, and both give the stages' bits and result types; a
key whose trace met a reduction goes to the stages without tracing again, and still raises first
what eager raises first."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core.errors import FuseError
from gpupromote.dispatch import fuse, fuse_stages, fuse_trace

pytestmark = pytest.mark.staged_eager   # (tests/conftest.py: keep the small calls eager here)

X = np.random.default_rng(11).standard_normal((16, 64)).astype(np.float32)


def softmax(x):
    e = gp.exp(x - gp.max(x, axis=-1, keepdims=True))
    return e / gp.sum(e, axis=-1, keepdims=True)


def layer_norm(x):
    d = x - gp.mean(x, axis=-1, keepdims=True)
    return d / gp.sqrt(gp.mean(d * d, axis=-1, keepdims=True) + 1e-5)


def dot(x):
    return gp.sum(x * x)


def scaled_max(x, s):
    return gp.max(x * s, axis=0)


def _staged(monkeypatch):
    """Counts the staged path's calls (fuse.run_recorded: the stages, or their recorded program)."""
    calls = []
    original = fuse.run_recorded
    monkeypatch.setattr(fuse, "run_recorded", lambda *a, **k: (calls.append(1), original(*a, **k))[1])
    return calls


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("fn, args", [(softmax, (X,)), (layer_norm, (X,)), (dot, (X,)), (scaled_max, (X, 3))],
                         ids=["softmax", "layer_norm", "dot", "scaled_max"])
def test_small_calls_run_eagerly_with_the_stages_bits(monkeypatch, policy, fn, args):
    calls = _staged(monkeypatch)
    F = gp.fuse(fn, policy=policy)
    small = F(*args)
    assert calls == []
    monkeypatch.setattr(fuse, "STAGED_EAGER_MAX", -1)
    staged = F(*args)
    assert calls == [1]
    assert type(small) is type(staged)
    assert np.asarray(small).dtype == np.asarray(staged).dtype
    assert np.asarray(small).tobytes() == np.asarray(staged).tobytes()


def test_large_calls_out_and_arrays_stage(monkeypatch):
    calls = _staged(monkeypatch)
    F = gp.fuse(softmax)
    monkeypatch.setattr(fuse, "STAGED_EAGER_MAX", X.size - 1)
    F(X)                                   # above the limit
    F(X[:2], out=np.empty((2, 64), np.float32))   # out=
    F(gp.asarray(X[:2]))                   # a gp.Array
    assert calls == [1, 1, 1]


def test_a_staged_key_is_not_traced_again(monkeypatch):
    traces = []
    original = fuse_trace.Tracer.trace
    monkeypatch.setattr(fuse_trace.Tracer, "trace", lambda self, *a: (traces.append(1), original(self, *a))[1])
    F = gp.fuse(dot)
    counts = []
    for _ in range(5):
        F(X)
        counts.append(len(traces))
    # the first call traces the function up to its reduction and runs eagerly; the second runs the
    # stages to record them (fuse_programs.run_small), tracing the reduced chain's stage once
    assert counts == [1, 2, 2, 2, 2]


def test_a_later_call_raises_first_what_eager_raises_first():
    """The first call stages; a later call of the same key whose operands do not broadcast raises
    eager's error from the step before the reduction, on the small and the staged route alike."""
    F = gp.fuse(lambda x, y: gp.sum(x * y, axis=-1))
    F(X, X)
    with pytest.raises(ValueError) as eager:
        gp.sum(gp.multiply(X, X[:3]), axis=-1)
    for limit in (fuse.STAGED_EAGER_MAX, -1):
        fuse.STAGED_EAGER_MAX, saved = limit, fuse.STAGED_EAGER_MAX
        try:
            with pytest.raises(ValueError) as fused:
                F(X, X[:3])
        finally:
            fuse.STAGED_EAGER_MAX = saved
        assert str(fused.value) == str(eager.value)


def test_the_stage_functions_are_still_built_by_large_calls(monkeypatch):
    """(the staged machinery, which small calls skip, still runs where the arrays are large)"""
    monkeypatch.setattr(fuse, "STAGED_EAGER_MAX", 0)
    seen = []
    original = fuse_stages._fused_reduction
    monkeypatch.setattr(fuse_stages, "_fused_reduction", lambda *a, **k: (seen.append(a[1]), original(*a, **k))[1])
    got = gp.fuse(dot)(X)
    assert seen == ["sum"]
    assert np.asarray(got).tobytes() == np.asarray(gp.sum(gp.multiply(X, X))).tobytes()


@pytest.mark.parametrize("limit", [fuse.STAGED_EAGER_MAX, -1], ids=["small-eager", "staged"])
def test_several_results_are_refused_on_both_routes(monkeypatch, limit):
    monkeypatch.setattr(fuse, "STAGED_EAGER_MAX", limit)
    F = gp.fuse(lambda x: (gp.sum(x), x * 2))
    with pytest.raises(FuseError, match="must return one array, not a tuple"):
        F(X)
