"""The compiled dispatcher of the reductions (gpupromote/dispatch/fastpath/reduce_op.c: gp.sum and
the other whole-array and last-axis reductions as C callables) against the Python function behind
each (``gp.sum.__wrapped__``, what GPUPROMOTE_PURE_PYTHON=1 runs alone).

Every call gives the same outcome on both: the result's type, dtype, shape and bits, or the same
exception and message. The compiled side is called twice (its miss makes the entry, its hit uses
it); reduce_stats() shows which calls it served and which it handed to Python.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch import opfunctions
from gpupromote.engines.cpu.reduce import ONE_CALL_MAX
from tests.support.refcounts import assert_no_reference_leaked_or_dropped

_fastpath = pytest.importorskip("gpupromote.dispatch._fastpath", reason="the C extension was not built (no C compiler?)")
pytestmark = pytest.mark.skipif(opfunctions._fastpath is None or not hasattr(_fastpath, "ReduceOp"),
                                reason="GPUPROMOTE_PURE_PYTHON is set, or an extension without ReduceOp")

COMPILED = ["sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin"]
DTYPES = {"f4": np.float32, "f8": np.float64, "f2": np.float16, "bf": ml_dtypes.bfloat16, "i1": np.int8,
          "i4": np.int32, "u8": np.uint64, "b1": np.bool_, "c8": np.complex64}
CALLS = {   # id -> (shape, keyword arguments): the calls the compiled side serves
    "1d": ((37,), {}),
    "1d-axis0": ((37,), {"axis": 0}),
    "2d-whole": ((6, 7), {}),
    "2d-last": ((6, 7), {"axis": -1}),
    "2d-last-positive": ((6, 7), {"axis": 1}),
    "3d-last-keepdims": ((2, 3, 5), {"axis": 2, "keepdims": True}),
    "3d-whole-keepdims": ((2, 3, 5), {"keepdims": True}),
}


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    v = rng.standard_normal(shape) * 3
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def _outcome(fn, *args, **kwargs):
    try:
        r = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return ("raises", type(exc).__name__, str(exc))
    return (type(r).__name__, str(r.dtype), r.shape, np.asarray(r).tobytes())


def _same_as_python(op, *args, **kwargs):
    fn = getattr(gp, op)
    want = _outcome(fn.__wrapped__, *args, **kwargs)
    for _ in range(2):
        got = _outcome(fn, *args, **kwargs)
        assert got == want, f"gp.{op}{tuple(a.shape if hasattr(a, 'shape') else a for a in args)} {kwargs}: {got} != {want}"


def _served():
    return _fastpath.reduce_stats()["served"]


# every dtype for one reduction of each combine kind, three for the others; the other policies
# (their own result dtypes) on two: each (op, dtype, policy result) compiles a kernel
_SWEPT = {"sum": DTYPES, "max": DTYPES, "argmax": DTYPES}
_FEW = {code: DTYPES[code] for code in ("f4", "bf", "i1")}


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("op", COMPILED)
def test_every_reduction_dtype_and_call_gives_the_python_outcome(op, call, policy):
    shape, kwargs = CALLS[call]
    dtypes = _SWEPT.get(op, _FEW) if policy == "numpy" else {code: DTYPES[code] for code in ("f4", "i1")}
    for dtype in dtypes.values():
        _same_as_python(op, _data(shape, dtype), policy=policy, **kwargs)


def test_the_common_calls_are_served_by_the_compiled_path():
    x = _data((6, 7), np.float32)
    before = _served()
    for op in COMPILED:
        getattr(gp, op)(x)
        getattr(gp, op)(x[0])
    gp.sum(x, axis=-1)
    gp.mean(x, axis=1, keepdims=True)
    assert _served() - before == 2 * len(COMPILED) + 2


DECLINED = {   # id -> a call the compiled side hands to Python, which gives the answer or the error
    "another-axis": lambda: gp.sum(_data((6, 7), np.float32), axis=0),
    "tuple-axis": lambda: gp.sum(_data((6, 7), np.float32), axis=(0, 1)),
    "dtype=": lambda: gp.sum(_data((6, 7), np.int8), dtype=np.float32),
    "out=": lambda: gp.sum(_data((6, 7), np.float32), axis=-1, out=np.empty(6, np.float32)),
    "strided": lambda: gp.sum(_data((6, 14), np.float32)[:, ::2]),
    "transposed": lambda: gp.max(_data((6, 7), np.float64).T, axis=-1),
    "0-d": lambda: gp.sum(np.float32(3.5) * np.ones((), np.float32)),
    "empty-sum": lambda: gp.sum(np.ones((0,), np.float32)),
    "empty-max": lambda: gp.max(np.ones((3, 0), np.float32), axis=-1),
    "long": lambda: gp.sum(_data((ONE_CALL_MAX + 5,), np.float32)),
    "list": lambda: gp.sum([1.0, 2.0, 3.0]),
    "gp-array": lambda: gp.sum(gp.Array(_data((5,), np.float32))),
    "numpy-bool-keepdims": lambda: gp.sum(_data((5,), np.float32), keepdims=np.True_),
    "refused": lambda: gp.mean(_data((5,), np.int32), policy="torch"),
    "unknown-policy": lambda: gp.sum(_data((5,), np.float32), policy="nope"),
    "bad-keyword": lambda: gp.sum(_data((5,), np.float32), axes=0),
    "axis-twice": lambda: gp.sum(_data((5,), np.float32), 0, axis=0),
    "argmax-last-of-2d": lambda: gp.argmax(_data((6, 7), np.float32), axis=-1),
}


@pytest.mark.parametrize("case", DECLINED)
def test_other_calls_go_to_python_and_give_its_outcome(case, monkeypatch):
    got = _outcome(DECLINED[case])
    python = {op: getattr(gp, op).__wrapped__ for op in COMPILED}
    for op, fn in python.items():
        monkeypatch.setattr(gp, op, fn)
    assert got == _outcome(DECLINED[case])


def test_the_refusal_is_the_python_error_naming_the_policy():
    with pytest.raises(TypeError, match="torch") as compiled:
        gp.mean(_data((5,), np.int32), policy="torch")
    with pytest.raises(TypeError) as python:
        gp.mean.__wrapped__(_data((5,), np.int32), policy="torch")
    assert str(compiled.value) == str(python.value)


def test_the_policy_comes_from_the_context_when_not_given():
    x = _data((9,), np.int8)
    with gp.use_policy("numpy"):
        assert gp.sum(x).dtype == np.int64
    with gp.use_policy("jax"):
        assert gp.sum(x).dtype == np.int32
    assert gp.sum(x, policy="jax").dtype == np.int32


def test_the_same_bits_on_any_thread_count(monkeypatch):
    """The compiled path runs up to ONE_CALL_MAX elements in the calling thread; the Python path
    splits longer rows over threads; the order of the additions is the row's either way."""
    x = _data((ONE_CALL_MAX,), np.float32)
    y = np.concatenate([x, x[:7]])
    whole = gp.sum(x)
    assert whole.tobytes() == gp.sum.__wrapped__(x).tobytes()
    assert gp.sum(y).tobytes() == gp.sum.__wrapped__(y).tobytes()


def test_a_reduction_is_a_compiled_callable_that_reads_and_pickles_as_the_function():
    import inspect
    import pickle
    assert type(gp.sum).__name__ == "ReduceOp" and "compiled dispatcher" in repr(gp.sum)
    assert gp.sum.__name__ == "sum" and gp.sum.__module__ == "gpupromote" and gp.sum.__doc__
    assert "keepdims" in str(inspect.signature(gp.sum))
    assert pickle.loads(pickle.dumps(gp.sum)) is gp.sum
    assert type(gp.cumsum).__name__ == "function" and type(gp.var).__name__ == "function"


def test_clearing_the_caches_keeps_answers_right():
    from gpupromote.core import caches
    x = _data((6, 7), np.float32)
    first = gp.mean(x, axis=-1).tobytes()
    caches.clear_all()
    assert gp.mean(x, axis=-1).tobytes() == first


def test_no_reference_is_leaked_or_dropped():
    x = _data((6, 7), np.float32)
    y = _data((5,), np.int32)
    watched = [x, y, x.dtype, y.dtype, np.dtype(np.float64), gp.sum, gp.max, "numpy", True, False, None]

    def run(n):
        for _ in range(n):
            gp.sum(x)
            gp.max(x, axis=-1, keepdims=True)
            gp.mean(y, policy="numpy")
            gp.sum(x, axis=0)   # declined
    assert_no_reference_leaked_or_dropped(run, watched)
