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
CHAINS = [(seed, dt) for seed in range(12 if FULL else 9) for dt in (("float32", "float16") if FULL else ("float32",))]


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


def test_softmax_computes_its_exp_once(monkeypatch):
    """The sum's kernel keeps exp(x - max) (kernel/reduce.py ``kept``); the last stage divides the
    kept values and has no exp of its own. Three kernels."""
    from gpupromote.engines.cpu import kernels as engine
    keeps, maps = [], []
    original_fused, original_map = fuse_stages._fused_reduction, engine.run_map

    def spy_fused(recorder, op, leaves, fn, kwargs, keep=False):
        keeps.append((op, keep))
        return original_fused(recorder, op, leaves, fn, kwargs, keep)

    def spy_map(kernel, args, out, inplace=None):
        maps.append((kernel.text, inplace))
        return original_map(kernel, args, out, inplace)
    monkeypatch.setattr(fuse_stages, "_fused_reduction", spy_fused)
    monkeypatch.setattr(engine, "run_map", spy_map)
    counts = []
    original_settle = fuse_stages._settle
    monkeypatch.setattr(fuse_stages, "_settle", lambda root: (original_settle(root), counts.append(root._tracer.kernels)))
    got = gp.fuse(softmax)(X)
    assert keeps == [("sum", True)]
    assert len(maps) == 1 and "exp" not in maps[0][0] and "true_divide" in maps[0][0]
    assert maps[0][1] == 0   # written in place of the kept exp(x - max), which nothing reads after it
    assert counts == [2]   # max, then the sum keeping exp(x - max); the division is the third
    _same(got, _eager(softmax, (X,), "numpy"))


def _kept_softmax(x):
    e = gp.exp(x * 0.5)
    return e / gp.sum(e, axis=-1, keepdims=True)


def _kept_twice(x):
    e = gp.exp(x)
    return e / gp.sum(e, axis=-1, keepdims=True) + gp.max(e, axis=-1, keepdims=True)


def _kept_axis0(x):
    t = gp.tanh(x)
    return t - gp.max(t, axis=0)


def _kept_whole(x):
    s = gp.sigmoid(x)
    return s * gp.mean(s)


def _kept_bool(x):
    b = x > 0.1
    return gp.logical_and(b, gp.all(b, axis=-1, keepdims=True))


def _kept_and_reduced_inside(x):
    e = gp.square(x) + 1
    return gp.sum(e / gp.max(e, axis=-1, keepdims=True), axis=-1)


_KEPT = [_kept_softmax, _kept_twice, _kept_axis0, _kept_whole, _kept_bool, _kept_and_reduced_inside]
_KEPT_DTYPES = [("float32", "numpy"), ("float16", "torch"), ("bfloat16", "jax")]


@pytest.mark.parametrize("dtype, policy", _KEPT_DTYPES, ids=[f"{d}-{p}" for d, p in _KEPT_DTYPES])
@pytest.mark.parametrize("fn", _KEPT, ids=[f.__name__[1:] for f in _KEPT])
def test_a_chain_reduced_and_used_again_equals_eager(fn, dtype, policy):
    import ml_dtypes
    x = X[:9, :200].astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    try:
        want = _eager(fn, (x,), policy)
    except (gp.PromotionError, TypeError) as exc:
        with pytest.raises(type(exc)):
            gp.fuse(fn, policy=policy)(x)
        return
    _same(gp.fuse(fn, policy=policy)(x), want)


def test_a_refused_reduction_of_a_chain_raises_at_its_call():
    """A reduction of a chain waits to run, but what the eager call refuses raises at the call, as
    eagerly: a function that catches it takes the same branch fused and eager."""
    def f(x):
        try:
            s = gp.mean(x * 2, axis=-1, keepdims=True)   # torch.mean refuses integers
        except gp.PromotionError:
            s = gp.mean((x * 2).astype("float32"), axis=-1, keepdims=True) + 100
        return x * 2 - s
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    _same(gp.fuse(f, policy="torch")(x), _eager(f, (x,), "torch"))
    with pytest.raises(np.exceptions.AxisError):
        gp.fuse(lambda x: gp.sum(x * 2, axis=5) + 1)(x)


def test_a_fused_function_called_again_reuses_its_stages():
    """The stages' Fused functions are kept on the fused function, keyed by their recorded tree:
    a second call traces nothing new; a different constant is a different stage."""
    f = gp.fuse(lambda x: gp.exp(x * 0.5) / gp.sum(gp.exp(x * 0.5), axis=-1, keepdims=True))
    f(X)
    stages = dict(f._stages)
    traces = {k: len(F._traces) for k, F in stages.items()}
    _same(f(X), _eager(lambda x: gp.exp(x * 0.5) / gp.sum(gp.exp(x * 0.5), axis=-1, keepdims=True), (X,), "numpy"))
    assert f._stages == stages and {k: len(F._traces) for k, F in f._stages.items()} == traces
    g = gp.fuse(lambda x, c: gp.sum(x * c, axis=-1))
    _same(g(X, 0.5), gp.sum(gp.multiply(X, 0.5), axis=-1))
    _same(g(X, -0.0), gp.sum(gp.multiply(X, -0.0), axis=-1))
    _same(g(X, 0.0), gp.sum(gp.multiply(X, 0.0), axis=-1))
    assert len(g._stages) == 3


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
        if seed % 3 == 2 and _broadcasts_back(kwargs):   # the reduced chain read again: its kept values
            return vals[-1] * r
        return r + 1 if seed % 2 else r
    return fn


def _broadcasts_back(kwargs) -> bool:
    """Whether the result of a reduction of a (7, 130) chain broadcasts with the chain."""
    return kwargs.get("keepdims", False) or kwargs.get("axis") in (None, 0, (0, 1))


@pytest.mark.parametrize("seed, dtype", CHAINS, ids=[f"{s}-{d}" for s, d in CHAINS])
def test_random_chains_ending_in_a_reduction_equal_eager(seed, dtype):
    rng = np.random.default_rng(100 + seed)
    a, b = (rng.standard_normal((7, 130)) * 0.3).astype(dtype), (rng.standard_normal((7, 130)) * 0.3).astype(dtype)
    c = (rng.standard_normal(130) * 0.3).astype(dtype)
    fn = _random_chain(seed)
    policy = ["numpy", "torch", "jax"][seed % 3]
    F = gp.fuse(fn, policy=policy)
    _same(F(a, b, c), _eager(fn, (a, b, c), policy))
    # the key again, on new data: its recorded launches replayed where they could be recorded
    # (dispatch/fuse_programs.py), the stages again where not
    for _ in range(2):
        a, b, c = ((rng.standard_normal(v.shape) * 0.3).astype(dtype) for v in (a, b, c))
        _same(F(a, b, c), _eager(fn, (a, b, c), policy))


def test_a_fused_function_that_has_run_pickles():
    """dask ships fused functions to its workers: one that has run (traces and stages filled, whose
    IR nodes are interned per process) pickles without them, and its copy gives the same bits."""
    import pickle

    cloudpickle = pytest.importorskip("cloudpickle")
    for fn, args in ((lambda a, b: a * b + 1, (X, X)), (softmax, (X,))):
        f = gp.fuse(fn)
        want = f(*args)
        copy = pickle.loads(cloudpickle.dumps(f))
        assert not copy._traces and not hasattr(copy, "_stages")
        _same(copy(*args), want)


@pytest.mark.parametrize("fn", [lambda x: (gp.sum(x * 2), x * 3), lambda x: [gp.max(x * 2, axis=0)],
                                lambda x: {"total": gp.sum(x * 2)}], ids=["tuple", "list", "dict"])
def test_a_function_with_a_reduction_returns_one_array(fn):
    """As the one-kernel trace: several outputs are refused with the fix, never returned as the
    stages' internal values."""
    with pytest.raises(TypeError, match="must return one array"):   # (FuseError, a TypeError)
        gp.fuse(fn)(X)
