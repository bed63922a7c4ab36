"""Reductions inside gp.fuse (dispatch/fuse_stages.py): fused equals eager bit for bit (softmax and
layer norm under every policy, random chains ending in a reduction), and a reduction of a chain is
one kernel whose element term is the chain."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import fuse_stages


def softmax(x):
    m = gp.max(x, axis=-1, keepdims=True)
    e = gp.exp(x - m)
    return e / gp.sum(e, axis=-1, keepdims=True)


def layer_norm(x, w, b):
    mu = gp.mean(x, axis=-1, keepdims=True)
    var = gp.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / gp.sqrt(var + 1e-5) * w + b


def _host(a):
    return a.numpy() if isinstance(a, gp.Array) else np.asarray(a)


def _same(a, b):
    a, b = _host(a), _host(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


X = np.random.default_rng(0).standard_normal((33, 300)).astype(np.float32)
W = np.random.default_rng(1).standard_normal(300).astype(np.float32)
B = np.random.default_rng(2).standard_normal(300).astype(np.float32)


def _eager(fn, args, policy):
    """fn on gp.Arrays, so that its Python operators are gp ops as inside gp.fuse."""
    with gp.use_policy(policy):
        return fn(*[gp.asarray(a) for a in args])


FULL = os.environ.get("GP_FULL_REDUCE") == "1"   # the wider sweeps (each case compiles kernels of its own)
CHAINS = [(seed, dt) for seed in range(10 if FULL else 6) for dt in (("float32", "float16") if FULL else ("float32",))]


@pytest.mark.parametrize("policy", gp.policies())
@pytest.mark.parametrize("fn, args", [(softmax, (X,)), (layer_norm, (X, W, B))], ids=["softmax", "layer_norm"])
def test_softmax_and_layer_norm_fused_equal_eager(policy, fn, args):
    try:
        want = _eager(fn, args, policy)
    except (gp.PromotionError, TypeError) as exc:
        with pytest.raises(type(exc)):
            gp.fuse(fn, policy=policy)(*args)
        return
    _same(gp.fuse(fn, policy=policy)(*args), want)


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
def test_float16_softmax_fused_equals_eager(policy):
    x = X.astype(np.float16)
    _same(gp.fuse(softmax, policy=policy)(x), _eager(softmax, (x,), policy))


def test_a_reduction_of_a_chain_is_one_kernel(monkeypatch):
    fused_maps = []
    original = fuse_stages._fused_reduction

    def spy(*a, **k):
        r = original(*a, **k)
        fused_maps.append(r is not None)
        return r
    monkeypatch.setattr(fuse_stages, "_fused_reduction", spy)
    x, y = X.reshape(-1), np.random.default_rng(3).standard_normal(X.size).astype(np.float32)
    got = gp.fuse(lambda a, b: gp.sum(a * b))(x, y)
    assert fused_maps == [True]
    _same(got, gp.sum(gp.multiply(x, y)))


_BINARY = ["add", "subtract", "multiply", "maximum"]
_UNARY = ["exp", "negative", "absolute", "square"]
_REDUCE = [("sum", {}), ("mean", {"axis": -1, "keepdims": True}), ("max", {"axis": 0}), ("prod", {"axis": 1}),
           ("min", {}), ("any", {"axis": 1}), ("sum", {"axis": (0, 1)}), ("var", {"axis": -1})]


def _random_chain(seed):
    rng = np.random.default_rng(seed)
    steps = [(rng.choice(_BINARY), int(rng.integers(0, 3)), int(rng.integers(0, 3))) if rng.random() < 0.6 else
             (rng.choice(_UNARY), int(rng.integers(0, 3)), None) for _ in range(int(rng.integers(1, 4)))]
    red, kwargs = _REDUCE[seed % len(_REDUCE)]
    scale = float(rng.choice([0.5, 2.0]))

    def fn(a, b, c):
        vals = [a, b, c]
        for op, i, j in steps:
            f = getattr(gp, op)
            vals.append(f(vals[-1 - i % len(vals)], vals[j % len(vals)]) if j is not None else
                        f(vals[-1 - i % len(vals)] * scale))
        r = getattr(gp, red)(vals[-1], **kwargs)
        return r + 1 if seed % 2 else r
    return fn


@pytest.mark.parametrize("seed, dtype", CHAINS, ids=[f"{s}-{d}" for s, d in CHAINS])
def test_random_chains_ending_in_a_reduction_equal_eager(seed, dtype):
    rng = np.random.default_rng(100 + seed)
    a, b = (rng.standard_normal((7, 130)) * 0.3).astype(dtype), (rng.standard_normal((7, 130)) * 0.3).astype(dtype)
    c = (rng.standard_normal(130) * 0.3).astype(dtype)
    fn = _random_chain(seed)
    policy = ["numpy", "torch", "jax"][seed % 3]
    _same(gp.fuse(fn, policy=policy)(a, b, c), _eager(fn, (a, b, c), policy))
