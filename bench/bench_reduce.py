"""Reductions (issue 24) against NumPy and torch on the CPU, same data, same run, one thread
(pytest-benchmark).

Rows:
  * ``reduce sum N=1e7 <dtype>``: gp.sum against np.sum (pairwise; float16 sums in float per
    block, bfloat16 through ml_dtypes' add loop) and torch.sum (one intra-op thread), float32,
    float16 and bfloat16; the float32 row also says its GB/s (report.py's bandwidth table).
  * ``reduce fused sum(x*y) N=1e7 float32``: gp.fuse(lambda x, y: gp.sum(x * y)), one reduction
    kernel reading x and y once, against np.sum(x * y) and torch.sum(x * y).
  * ``softmax rows 4096x1024 float32``: softmax over the last axis written with gp functions inside
    gp.fuse (three kernels; the sum's kernel keeps exp(x - max), which the last one divides in
    place; after the first call their recorded launches are replayed, in blocks of rows where its
    first calls timed that faster: engines/cpu/program.py, whose trial calls are made before the
    timed rounds), against the same in eager NumPy and torch.softmax(x, dim=-1);
    ``softmax rows 16x1024`` the same fused function on a small
    array, eager on its first call, replayed from its third (docs/fuse.md; no goal). The allocator
    apart (no goal): ``..., pool off`` (gpupromote's pool off: its kept exp and result allocated
    each call, as NumPy's temporaries are) and ``softmax 4096x1024 float32 into out=`` (no
    allocation on either side: gpupromote's replay into out=, NumPy's calls into buffers made once).
  * ``layer norm rows 4096x1024 float32``: layer norm over the last axis (mean, mean of squared
    deviations, the normalized affine result) inside gp.fuse, against the same in eager NumPy and
    torch.nn.functional.layer_norm. No goal: the issue names softmax; this row shows the other
    function it names.
  * ``reduce sum axis 0 of 4096x1024 float32`` (and var; sum over axis 1 of 32x512x256): reductions
    over leading and middle axes (the CPU engine's columns), against NumPy and torch; ``reduce argmax
    axis 1 of 4096x1024 float32`` and ``reduce any of N=1e7 bool, all False`` (no element decides
    before the end: NumPy's early stop gains nothing either). No goal.
  * ``reduce: one call, sum of 100 float32``: the time of one small call (the compiled dispatcher,
    dispatch/fastpath/reduce_op.c; ``gp.sum.__wrapped__``: the Python fast path) against np.sum.

Goals (issue 24): gp.sum float32 >= 0.9x np.sum and >= 85% of the run's reference bandwidth;
float16 and bfloat16 sums >= 5x NumPy; fused sum(x*y) >= 1.5x NumPy; fused softmax >= 2x NumPy
eager. Every gpupromote result is checked first: deterministic sums are within NumPy's accuracy,
the fused ones equal gpupromote's eager calls bit for bit.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import math  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpupromote as gp  # noqa: E402
from gpupromote.engines.cpu.program import TRIAL_CALLS  # noqa: E402
from _torch_cpu import as_torch, torch_one_thread  # noqa: E402  (bench/, on sys.path as the suite's folder)

gp.set_num_threads(1)

N = 10**7
_rng = np.random.default_rng(24)
_BASE = _rng.standard_normal(N).astype(np.float32)
_Y = _rng.standard_normal(N).astype(np.float32)
DATA = {"float32": _BASE, "float16": _BASE.astype(np.float16), "bfloat16": _BASE.astype(ml_dtypes.bfloat16)}
ROWS = _rng.standard_normal((4096, 1024)).astype(np.float32)
_ROUNDS = dict(rounds=7, warmup_rounds=1)




# --- sums -----------------------------------------------------------------------------------------

def _sum_group(dtype):
    return f"reduce sum N=1e7 {dtype}"


@pytest.mark.parametrize("dtype", list(DATA))
def test_gpupromote_sum(benchmark, dtype):
    x = DATA[dtype]
    got = gp.sum(x, policy="torch")   # accumulates in float32, returns the dtype
    exact = math.fsum(x.astype(np.float64).tolist()) if dtype == "float32" else None
    if exact is not None:
        assert abs(float(got) - exact) <= 1e-6 * abs(exact)
    benchmark.group = _sum_group(dtype)
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.extra_info["bytes"] = x.nbytes
    benchmark.pedantic(lambda: gp.sum(x, policy="torch"), **_ROUNDS)


@pytest.mark.parametrize("dtype", list(DATA))
def test_numpy_sum(benchmark, dtype):
    x = DATA[dtype]
    benchmark.group = _sum_group(dtype)
    benchmark.extra_info["impl"] = "numpy"
    benchmark.extra_info["bytes"] = x.nbytes
    benchmark.pedantic(np.sum, (x,), **_ROUNDS)


@pytest.mark.parametrize("dtype", list(DATA))
def test_torch_sum(benchmark, dtype):
    torch = torch_one_thread()
    t = as_torch(torch, DATA[dtype])
    benchmark.group = _sum_group(dtype)
    benchmark.extra_info["impl"] = "torch"
    benchmark.pedantic(torch.sum, (t,), **_ROUNDS)


# --- fused sum(x * y) -----------------------------------------------------------------------------

_DOT = "reduce fused sum(x*y) N=1e7 float32"
dot = gp.fuse(lambda x, y: gp.sum(x * y))


def test_gpupromote_fused_dot(benchmark):
    x, y = DATA["float32"], _Y
    assert np.asarray(dot(x, y)).tobytes() == np.asarray(gp.sum(gp.multiply(x, y))).tobytes()
    benchmark.group = _DOT
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(dot, (x, y), **_ROUNDS)


def test_numpy_dot(benchmark):
    x, y = DATA["float32"], _Y
    benchmark.group = _DOT
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(lambda: np.sum(x * y), **_ROUNDS)


def test_torch_dot(benchmark):
    torch = torch_one_thread()
    x, y = torch.from_numpy(DATA["float32"]), torch.from_numpy(_Y)
    benchmark.group = _DOT
    benchmark.extra_info["impl"] = "torch"
    benchmark.pedantic(lambda: torch.sum(x * y), **_ROUNDS)


# --- softmax over rows ----------------------------------------------------------------------------

_SOFTMAX = "softmax rows 4096x1024 float32"


def _softmax(x):
    m = gp.max(x, axis=-1, keepdims=True)
    e = gp.exp(x - m)
    return e / gp.sum(e, axis=-1, keepdims=True)


softmax = gp.fuse(_softmax)


def _softmax_numpy(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _settle_program(fused, *args):
    """The calls a recorded program times before it keeps its faster way of running its rows
    (engines/cpu/program.py TRIAL_CALLS), made before the timed rounds: the rows time the way kept."""
    for _ in range(TRIAL_CALLS):
        fused(*args)


def test_gpupromote_softmax_fused(benchmark):
    fused = softmax(ROWS)
    eager = _softmax(gp.asarray(ROWS)).numpy()
    assert fused.tobytes() == eager.tobytes()
    np.testing.assert_allclose(fused, _softmax_numpy(ROWS), rtol=1e-5, atol=1e-7)
    _settle_program(softmax, ROWS)
    benchmark.group = _SOFTMAX
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(softmax, (ROWS,), **_ROUNDS)


def test_numpy_softmax(benchmark):
    benchmark.group = _SOFTMAX
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_softmax_numpy, (ROWS,), **_ROUNDS)


def test_torch_softmax(benchmark):
    torch = torch_one_thread()
    t = torch.from_numpy(ROWS)
    benchmark.group = _SOFTMAX
    benchmark.extra_info["impl"] = "torch"
    benchmark.pedantic(lambda: torch.softmax(t, dim=-1), **_ROUNDS)


# The allocator apart from the kernels (the house rule): the plain rows above count gpupromote's
# pooled buffers (the kept exp and the result come back from its pool each call) against NumPy's
# fresh 16.8 MB temporaries; these rows take the pool, and NumPy's allocation, out of the ratio.
_SOFTMAX_POOL_OFF = "softmax rows 4096x1024 float32, pool off"
_SOFTMAX_NO_ALLOC = "softmax 4096x1024 float32 into out=, NumPy's temporaries made once (no allocation)"
_SOFTMAX_OUT = np.empty_like(ROWS)
_NP_KEPT, _NP_MAX, _NP_SUM = np.empty_like(ROWS), np.empty((4096, 1), np.float32), np.empty((4096, 1), np.float32)


def _softmax_numpy_into(x, out):
    np.max(x, axis=-1, keepdims=True, out=_NP_MAX)
    np.subtract(x, _NP_MAX, out=_NP_KEPT)
    np.exp(_NP_KEPT, out=_NP_KEPT)
    np.sum(_NP_KEPT, axis=-1, keepdims=True, out=_NP_SUM)
    return np.divide(_NP_KEPT, _NP_SUM, out=out)


def test_gpupromote_softmax_pool_off(benchmark, pool_off):   # (pool_off: bench/conftest.py)
    benchmark.group = _SOFTMAX_POOL_OFF
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(softmax, (ROWS,), **_ROUNDS)


def test_numpy_softmax_pool_off(benchmark):
    benchmark.group = _SOFTMAX_POOL_OFF
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_softmax_numpy, (ROWS,), **_ROUNDS)


def test_gpupromote_softmax_into_out(benchmark):
    assert softmax(ROWS, out=_SOFTMAX_OUT) is _SOFTMAX_OUT
    assert _SOFTMAX_OUT.tobytes() == softmax(ROWS).tobytes()
    benchmark.group = _SOFTMAX_NO_ALLOC
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(lambda: softmax(ROWS, out=_SOFTMAX_OUT), **_ROUNDS)


def test_numpy_softmax_into_out(benchmark):
    out = np.empty_like(ROWS)
    np.testing.assert_allclose(_softmax_numpy_into(ROWS, out), _softmax_numpy(ROWS), rtol=1e-6)
    benchmark.group = _SOFTMAX_NO_ALLOC
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(lambda: _softmax_numpy_into(ROWS, out), **_ROUNDS)


_SMALL_SOFTMAX = "softmax rows 16x1024 float32 (a small call: its recorded launches replayed)"
_SMALL_ROWS = ROWS[:16].copy()


def test_gpupromote_softmax_small(benchmark):
    fused = softmax(_SMALL_ROWS)
    assert fused.tobytes() == _softmax(gp.asarray(_SMALL_ROWS)).numpy().tobytes()
    benchmark.group = _SMALL_SOFTMAX
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark(softmax, _SMALL_ROWS)


def test_numpy_softmax_small(benchmark):
    benchmark.group = _SMALL_SOFTMAX
    benchmark.extra_info["impl"] = "numpy"
    benchmark(_softmax_numpy, _SMALL_ROWS)


def test_torch_softmax_small(benchmark):
    torch = torch_one_thread()
    t = torch.from_numpy(_SMALL_ROWS)
    benchmark.group = _SMALL_SOFTMAX
    benchmark.extra_info["impl"] = "torch"
    benchmark(lambda: torch.softmax(t, dim=-1))


# --- one small call ---------------------------------------------------------------------------------

_SMALL = "reduce: one call, sum of 100 float32"
_X100 = _BASE[:100].copy()


def test_gpupromote_sum_small(benchmark):
    assert gp.sum(_X100) == gp.sum(_X100.reshape(10, 10)[:, :].copy())   # warm, and the cached path's answer
    benchmark.group = _SMALL
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark(gp.sum, _X100)


def test_python_path_sum_small(benchmark):
    benchmark.group = _SMALL
    benchmark.extra_info["impl"] = "gpupromote (Python path)"
    benchmark(getattr(gp.sum, "__wrapped__", gp.sum), _X100)


def test_numpy_sum_small(benchmark):
    benchmark.group = _SMALL
    benchmark.extra_info["impl"] = "numpy"
    benchmark(np.sum, _X100)


# --- layer norm over rows -------------------------------------------------------------------------

_LAYER_NORM = "layer norm rows 4096x1024 float32"
_W = _rng.standard_normal(1024).astype(np.float32)
_B = _rng.standard_normal(1024).astype(np.float32)


def _layer_norm(x, w, b):
    mu = gp.mean(x, axis=-1, keepdims=True)
    var = gp.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / gp.sqrt(var + 1e-5) * w + b


layer_norm = gp.fuse(_layer_norm)


def _layer_norm_numpy(x, w, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def test_gpupromote_layer_norm_fused(benchmark):
    fused = layer_norm(ROWS, _W, _B)
    assert fused.tobytes() == _layer_norm(gp.asarray(ROWS), _W, _B).numpy().tobytes()
    np.testing.assert_allclose(fused, _layer_norm_numpy(ROWS, _W, _B), rtol=1e-4, atol=1e-5)
    _settle_program(layer_norm, ROWS, _W, _B)
    benchmark.group = _LAYER_NORM
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(layer_norm, (ROWS, _W, _B), **_ROUNDS)


def test_numpy_layer_norm(benchmark):
    benchmark.group = _LAYER_NORM
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_layer_norm_numpy, (ROWS, _W, _B), **_ROUNDS)


def test_torch_layer_norm(benchmark):
    torch = torch_one_thread()
    t, w, b = (torch.from_numpy(a) for a in (ROWS, _W, _B))
    benchmark.group = _LAYER_NORM
    benchmark.extra_info["impl"] = "torch"
    benchmark.pedantic(lambda: torch.nn.functional.layer_norm(t, (1024,), w, b, eps=1e-5), **_ROUNDS)


# --- over leading and middle axes -----------------------------------------------------------------

_T3 = _rng.standard_normal((32, 512, 256)).astype(np.float32)
_ZEROS = np.zeros(10**7, np.bool_)
_AXES = {   # group -> (array, axis): the reduced axes before the kept ones (columns, no copy); then
    # argmax over rows and any of a row no element decides before its end (no goals)
    "reduce sum axis 0 of 4096x1024 float32": (ROWS, 0),
    "reduce var axis 0 of 4096x1024 float32": (ROWS, 0),
    "reduce sum axis 1 of 32x512x256 float32": (_T3, 1),
    "reduce argmax axis 1 of 4096x1024 float32": (ROWS, 1),
    "reduce any of N=1e7 bool, all False": (_ZEROS, None),
}


def _axes_fn(group, module):
    return getattr(module, group.split()[1])


@pytest.mark.parametrize("group", list(_AXES))
def test_gpupromote_axes(benchmark, group):
    x, axis = _AXES[group]
    got = _axes_fn(group, gp)(x, axis=axis)
    np.testing.assert_allclose(got, _axes_fn(group, np)(x.astype(np.float64), axis=axis), rtol=1e-4, atol=1e-4)
    assert np.asarray(got).dtype.kind == np.asarray(_axes_fn(group, np)(x, axis=axis)).dtype.kind
    benchmark.group = group
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(_axes_fn(group, gp), (x,), dict(axis=axis), **_ROUNDS)


@pytest.mark.parametrize("group", list(_AXES))
def test_numpy_axes(benchmark, group):
    x, axis = _AXES[group]
    benchmark.group = group
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_axes_fn(group, np), (x,), dict(axis=axis), **_ROUNDS)


@pytest.mark.parametrize("group", list(_AXES))
def test_torch_axes(benchmark, group):
    torch = torch_one_thread()
    x, axis = _AXES[group]
    t = torch.from_numpy(x)
    name = group.split()[1]
    fn = {"var": lambda: torch.var(t, dim=axis, correction=0), "sum": lambda: torch.sum(t, dim=axis),
          "argmax": lambda: torch.argmax(t, dim=axis), "any": lambda: torch.any(t)}[name]
    benchmark.group = group
    benchmark.extra_info["impl"] = "torch"
    benchmark.pedantic(fn, **_ROUNDS)
