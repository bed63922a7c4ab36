"""The generated CUDA reductions (engines/cuda/reduce.py) on a GPU give the CPU engine's bits
(marked ``gpu``; skipped without a device). The same cases as tests/hostcuda/test_hostcuda_reduce.py,
launched with CuPy over three grids, and a 10**7-element float32 sum."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import reduce as cpu
from gpupromote.engines.cuda import reduce as cuda
from gpupromote.kernel.reduce import CHUNK_LEAVES, LEAF


def _gpu_available():
    if os.environ.get("GP_SWEEP_WORKER") == "1":
        return False, "worker"
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no cupy, no driver, ...
        return False, f"{type(exc).__name__}: {exc}"
    return n > 0, f"{n} CUDA device(s)"


GPU, _WHY = _gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPU, reason=f"needs a CUDA device and CuPy ({_WHY})")]

from tests.hostcuda.test_hostcuda_reduce import (CASES, DIVISOR, EAGER, OUTS, SCANS, STAGED, _bits, _data,  # noqa: E402
                                                 _stages)

CASES = CASES + [("sum", "float32", "numpy", 1, 10**7), ("mean", "bfloat16", "torch", 64, 100_000)]


@pytest.fixture(scope="module")
def module():
    from gpupromote.engines.cuda.modules import load_module
    reds = [r for op, dt, pol, _, _ in CASES for r in _stages(op, plan_for(op, [gp.spec(dt)], pol))]
    src = cuda.reduction_source(reds)
    mod, _ = load_module(src, "cupy/complex.cuh" in src, 0)
    return mod


def _run_gpu(module, red, views, M, K, div, shape, grid, block, cols):
    import cupy as cp
    name = cuda.reduction_name(red)
    sv = cpu.storage_view(red.out)
    out = cp.zeros(shape, np.dtype(sv) if sv is not None else red.out.numpy)
    ops = []
    for v, p in zip(views, red.params):
        pv = cpu.storage_view(p.dtype)
        host = v.view(pv) if pv is not None else v
        if host.shape[1] > 1 and host.strides[1] == 0:   # a row-constant operand: one value per row on the device too
            d = cp.asarray(np.ascontiguousarray(host[:, 0]))
            ops += [d, np.int64(d.strides[0]), np.int64(0)]
        else:
            d = cp.asarray(np.ascontiguousarray(host))
            ops += [d, np.int64(d.strides[0]), np.int64(d.strides[1])]
    if red.combine in ("argmax", "argmin"):
        module.get_function(f"{name}_rows")((grid,), (block,), (np.int64(M), np.int64(K), np.float64(div), out, *ops))
    elif red.scan:
        module.get_function(f"{name}_scan")((grid,), (block,), (np.int64(M), np.int64(K), out, *ops))
    else:
        cl = 1 if cols else CHUNK_LEAVES   # parts of one leaf (run()'s) or of a chunk: the same tree
        nc = -(-(-(-K // LEAF)) // cl) if red.sequential else cuda.chunks(K)
        part = cp.zeros(max(M * nc, 1), red.acc.numpy)
        if red.sequential:
            module.get_function(f"{name}_parts")((grid,), (block,), (np.int64(M), np.int64(K), np.int64(nc),
                                                                        np.int64(cl), np.int64(cols), part, *ops))
        else:
            lanes = cp.zeros(max(M * -(-K // 128) * 8, 1), red.acc.numpy)
            module.get_function(f"{name}_lanes")((grid,), (block,), (np.int64(M), np.int64(K), np.int64(cols), lanes, *ops))
            module.get_function(f"{name}_leaves")((grid,), (block,), (np.int64(M), np.int64(K), np.int64(nc), part, lanes))
        for n in cuda.fold_levels(nc):
            nc = -(-n // cuda.FOLD)
            part, src = cp.zeros(max(M * nc, 1), red.acc.numpy), part
            module.get_function(f"{name}_fold")((grid,), (block,), (np.int64(M), np.int64(n), src, part))
        module.get_function(f"{name}_merge")((grid,), (block,), (np.int64(M), np.int64(nc), np.float64(div), part, out))
    return out.get()


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}x{c[4]}" for c in CASES])
def test_gpu_reduction_equals_the_cpu_engine(module, case):
    op, dt, pol, M, K = case
    plan = plan_for(op, [gp.spec(dt)], pol)
    x = _data(dt, (M, K), M * K + 1, op)
    stages = _stages(op, plan)
    div = DIVISOR.get(op, lambda K: float(K))(K)
    for grid, block, cols in ((1, 1, 0), (7, 64, 1), (264, 256, 0), (264, 256, 1)):   # cols: both schedules
        views = [x]
        for red in stages:
            shape = (M, K) if red.scan else (M,)
            want = np.empty(shape, red.out.numpy)
            d = float(K) if red is not stages[-1] else div
            cpu.run(red, views, want, K, d)
            got = _run_gpu(module, red, views, M, K, d, shape, grid, block, cols)
            w = _bits(want)
            with np.errstate(invalid="ignore"):
                nan = np.isnan(want.astype(np.complex128)) if want.dtype.kind in "fcV" or dt == "bfloat16" else False
            assert np.array_equal(np.where(nan, 0, got.view(w.dtype)), np.where(nan, 0, w)), \
                f"{op} {dt} grid {grid}x{block} cols={cols}: GPU {got[:4]} vs CPU {want[:4]}"
            if not red.scan:
                views = [x, np.broadcast_to(want[:, None], (M, K))]



@pytest.mark.parametrize("op, dtype, policy, shape, axis", EAGER, ids=[f"{e[0]}-{e[1]}-{e[2]}" for e in EAGER])
def test_eager_gpu_reductions_equal_the_cpu_engine(op, dtype, policy, shape, axis):
    import cupy as cp
    x = _data(dtype, shape, 7, op)
    want = getattr(gp, op)(x, axis=axis, policy=policy)
    d = gp.asarray(x, device="cuda") if dtype == "bfloat16" else cp.asarray(x)
    got = getattr(gp, op)(d, axis=axis, policy=policy)
    got = got.numpy() if isinstance(got, gp.Array) else got.get()
    want = want.numpy() if isinstance(want, gp.Array) else np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    _same_but_made_nans(got, want, op)


def _same_but_made_nans(got, want, op):
    """The same bits, but where both are NaN: a NaN made by an invalid operation (the mean of an
    empty row is 0 / 0) is x86's negative default NaN on the CPU and the positive canonical one on a
    GPU (docs/deviations.md, "NaN signs")."""
    g, w = _bits(got), _bits(want)
    if want.dtype.kind == "f":
        made = np.isnan(got) & np.isnan(want)
        g, w = np.where(made, 0, g), np.where(made, 0, w)
    assert g.tobytes() == w.tobytes(), f"{op}: GPU {got.ravel()[:4]} vs CPU {want.ravel()[:4]}"


def test_gpu_sum_of_ten_million_is_the_cpu_bits_and_fast():
    import time
    import cupy as cp
    x = np.random.default_rng(9).standard_normal(10**7).astype(np.float32)
    d = cp.asarray(x)
    assert np.asarray(gp.sum(d).get()).tobytes() == np.asarray(gp.sum(x)).tobytes()
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(20):
        gp.sum(d)
    cp.cuda.Device().synchronize()
    per = (time.perf_counter() - t) / 20
    print(f"\ngp.sum float32 N=1e7 on the GPU: {per * 1e3:.3f} ms ({x.nbytes / per / 1e9:.0f} GB/s); "
          f"cupy.sum: {_time(lambda: cp.sum(d)) * 1e3:.3f} ms")


def _time(f):
    import time
    import cupy as cp
    f()
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(20):
        f()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t) / 20


# gp.sum ... on CuPy arrays through the eager path (dispatch/reduce.py, engines/cuda/reduce.run): the
# host tier's cases (tests/hostcuda/test_hostcuda_reduce.py), the scans and out= included

def _host(r):
    return r.numpy() if isinstance(r, gp.Array) else r.get() if hasattr(r, "get") else np.asarray(r)


@pytest.mark.parametrize("op, dtype, policy, shape, axis", EAGER + SCANS,
                         ids=[f"{e[0]}-{e[1]}-{e[2]}-{e[4]}" for e in EAGER + SCANS])
def test_eager_reductions_and_scans_of_cupy_arrays_equal_the_cpu_engine(op, dtype, policy, shape, axis):
    import cupy as cp
    x = _data(dtype, shape, 7, op)
    want = _host(getattr(gp, op)(x, axis=axis, policy=policy))
    d = gp.asarray(x, device="cuda") if dtype == "bfloat16" else cp.asarray(x)
    got = _host(getattr(gp, op)(d, axis=axis, policy=policy))
    assert got.dtype == want.dtype and got.shape == want.shape
    _same_but_made_nans(got, want, op)


@pytest.mark.parametrize("op, dtype, out_dtype, axis", OUTS)
def test_out_on_the_gpu_holds_what_the_cpu_path_writes(op, dtype, out_dtype, axis):
    import cupy as cp
    x = _data(dtype, (5, 300), 3, op)
    want = np.zeros((5,) if axis == 1 else (300,) if axis == 0 else (), out_dtype)
    getattr(gp, op)(x, axis=axis, out=want, policy="numpy")
    out = cp.zeros(want.shape, out_dtype)
    assert getattr(gp, op)(cp.asarray(x), axis=axis, out=out, policy="numpy") is out
    assert _bits(out.get()).tobytes() == _bits(want).tobytes()


@pytest.mark.parametrize("fn, dtype, policy", STAGED, ids=[f"{f.__name__[1:]}-{d}-{p}" for f, d, p in STAGED])
def test_fused_functions_with_reductions_on_cupy_arrays_equal_the_cpu(fn, dtype, policy):
    """Softmax, layer norm, a sum of a product and a chain reduced twice, inside gp.fuse on the GPU
    (dispatch/fuse_stages.py's stages as device kernels): the CPU's bits."""
    import cupy as cp
    x = _data(dtype, (64, 1000), 5, "sum")
    want = _host(gp.fuse(fn, policy=policy)(x))
    got = _host(gp.fuse(fn, policy=policy)(cp.asarray(x)))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert _bits(got).tobytes() == _bits(want).tobytes(), f"{fn.__name__}: GPU {got.ravel()[:4]} vs CPU {want.ravel()[:4]}"
