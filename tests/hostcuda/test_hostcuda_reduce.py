"""The generated CUDA reductions (engines/cuda/reduce.py) run on the host with g++ give the CPU
engine's bits: the same order of combination, whatever the grid.

One translation unit holds every case's kernels (one g++ compile); each case is launched over two
grids (one thread; several blocks, in reverse order) and compared bit for bit with
engines/cpu/reduce.run on the same (rows, K) views.
"""
from __future__ import annotations

import ctypes
import os

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import reduce as cpu
from gpupromote.engines.cuda import reduce as cuda
from gpupromote.kernel.reduce import CHUNK_LEAVES, LEAF, reduction_of
from tests import hostcuda
from tests.hostcuda.support import HOSTCUDA_MARKS

pytestmark = HOSTCUDA_MARKS

# (op, dtype, policy, rows, K)
CASES = [
    ("sum", "float32", "numpy", 1, 4097), ("sum", "float32", "numpy", 3, 70000), ("sum", "float16", "torch", 5, 300),
    ("sum", "bfloat16", "jax", 2, 4097), ("sum", "float64", "numpy", 4, 2049), ("sum", "int8", "numpy", 3, 1000),
    ("sum", "complex64", "numpy", 2, 777), ("prod", "float32", "numpy", 4, 129), ("mean", "float16", "torch", 3, 1000),
    ("mean", "int32", "numpy", 2, 333), ("var", "float32", "numpy", 3, 4097), ("std", "bfloat16", "torch", 2, 300),
    ("var", "complex64", "numpy", 2, 200), ("max", "float32", "numpy", 3, 1000), ("min", "float16", "torch", 3, 257),
    ("any", "float32", "numpy", 4, 300), ("all", "int8", "numpy", 4, 300), ("argmax", "float32", "numpy", 3, 1000),
    ("argmin", "int16", "torch", 3, 1000), ("cumsum", "float32", "numpy", 3, 500), ("cumprod", "float64", "numpy", 2, 50),
    ("cumsum", "float32", "torch", 3, 300), ("cumsum", "float16", "jax", 3, 300), ("cumprod", "bfloat16", "numpy", 2, 40),
    ("max", "float32", "jax", 3, 300), ("min", "float16", "numpy", 3, 300), ("min", "float64", "jax", 2, 129),
    ("sum", "float32", "numpy", 2, 0), ("sum", "float32", "numpy", 1, 1), ("sum", "float32", "numpy", 2, 7),
    # rows of more than FOLD chunk nodes: one fold with a short last group, two folds (1075 -> 34 -> 2)
    ("max", "float16", "torch", 2, 300_000), ("any", "int8", "numpy", 2, 70_000), ("sum", "float32", "numpy", 1, 2_200_000),
]
DIVISOR = {"mean": lambda K: float(K), "var": lambda K: float(max(K - 0, 0)), "std": lambda K: float(max(K - 1, 0))}


def _data(dtype, shape, seed, op):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    if dtype in ("int8", "int16", "int32"):
        x = rng.integers(-100, 100, shape)
    elif op in ("prod", "cumprod"):
        x = 1 + x / 50
    return x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype))


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def _launch(lib, name, grid, block, args, reverse):
    params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(b), ctypes.c_void_p) for b in args])
    lib.launcher(name)(grid, block, params, int(reverse))
    faults, what = lib.take_faults()
    assert faults == 0, what


def _operand_args(views):
    out = []
    for v in views:
        out += [_ptr(v), ctypes.c_longlong(v.strides[0]), ctypes.c_longlong(v.strides[1])]
    return out


def _stages(op, plan):
    if op in ("var", "std"):
        return [reduction_of(plan, "mean"), reduction_of(plan)]
    return [reduction_of(plan)]


def _run_cuda(lib, red, views, M, K, div, out, grid, block, reverse, keep=None, cols=None):
    """engines/cuda/reduce.run's launches; ``cols``: the schedule (neighbouring threads on
    neighbouring results, or on neighbouring lanes of one), by default the one run() picks."""
    name = cuda.reduction_name(red)
    cols = ctypes.c_longlong(int(cuda._columns(views, red) if cols is None else cols))
    store = out.view(cpu.storage_view(red.out)) if cpu.storage_view(red.out) is not None else out
    views = [v.view(cpu.storage_view(d)) if cpu.storage_view(d) is not None else v
             for v, d in zip(views, [p.dtype for p in red.params])]
    if keep is not None:   # the kept value's array goes after the operands (engines/cuda/reduce._operand_params)
        views.append(keep.view(cpu.storage_view(red.kept.dtype)) if cpu.storage_view(red.kept.dtype) is not None else keep)
    if red.combine in ("argmax", "argmin"):
        _launch(lib, f"{name}_rows", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(K), ctypes.c_double(div),
                                                   _ptr(store), *_operand_args(views)], reverse)
    elif red.scan:
        _launch(lib, f"{name}_scan", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(K), _ptr(store),
                                                   *_operand_args(views)], reverse)
    else:
        cl = 1 if cols.value else CHUNK_LEAVES   # parts of one leaf (run()'s) or of a chunk: the same tree
        nc = -(-(-(-K // LEAF)) // cl) if red.sequential else cuda.chunks(K)
        part = np.zeros(max(M * nc, 1), red.acc.numpy)
        if red.sequential:
            _launch(lib, f"{name}_parts", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(K), ctypes.c_longlong(nc),
                                                        ctypes.c_longlong(cl), cols, _ptr(part), *_operand_args(views)],
                    reverse)
        else:
            lanes = np.zeros(max(M * -(-K // 128) * 8, 1), red.acc.numpy)
            _launch(lib, f"{name}_lanes", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(K), cols, _ptr(lanes),
                                                        *_operand_args(views)], reverse)
            _launch(lib, f"{name}_leaves", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(K), ctypes.c_longlong(nc),
                                                         _ptr(part), _ptr(lanes)], reverse)
        for n in cuda.fold_levels(nc):
            nc = -(-n // cuda.FOLD)
            part, src = np.zeros(max(M * nc, 1), red.acc.numpy), part
            _launch(lib, f"{name}_fold", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(n), _ptr(src), _ptr(part)],
                    reverse)
        _launch(lib, f"{name}_merge", grid, block, [ctypes.c_longlong(M), ctypes.c_longlong(nc), ctypes.c_double(div),
                                                    _ptr(part), _ptr(store)], reverse)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a.view(np.uint8)


# The acceptance sweep (issue 24): sum, mean, var, std, cumsum, prod on float32 / float16 / bfloat16 /
# float64, N in {1, 7, 4097, 65537, 10**6} and axes of 2-d and 3-d arrays, against the CPU engine on
# 1 and 8 threads (GP_FULL_REDUCE=1: every dtype at every size; else float16 and float64 up to 65537).
FULL = os.environ.get("GP_FULL_REDUCE") == "1"
SWEEP_OPS = ["sum", "mean", "var", "std", "cumsum", "prod"]
SWEEP_DTYPES = ["float32", "float16", "bfloat16", "float64"]
SWEEP = [(op, dt, (n,), None) for op in SWEEP_OPS for dt in SWEEP_DTYPES for n in (1, 7, 4097, 65537, 10**6)
         if FULL or n < 10**6 or dt in ("float32", "bfloat16")]
SWEEP += [(op, dt, shape, axis) for op in SWEEP_OPS for dt in ("float32", "bfloat16")
          for shape, axis in (((64, 300), 0), ((64, 300), 1), ((5, 40, 33), (0, 2)), ((5, 40, 33), 1))
          if not (op == "cumsum" and isinstance(axis, tuple))]


# Reductions of a fused chain that keep the chain's value (kernel/reduce.py ``kept``: softmax's
# exp(x - max), stored as it is summed): (op, chain, dtype, policy, rows, K)
KEPT = [("sum", lambda x, m: gp.exp(x - m), "float32", "numpy", 3, 1000),
        ("max", lambda x, m: gp.tanh(x * m), "float16", "torch", 4, 300),
        ("mean", lambda x, m: x * x + m, "bfloat16", "jax", 2, 4097),
        ("any", lambda x, m: x > m, "float32", "numpy", 3, 200),
        ("sum", lambda x, m: gp.sigmoid(x) * m, "float16", "numpy", 2, 129)]


def _kept_reduction(case):
    from gpupromote.dispatch.reduce import reduction_plan
    from gpupromote.kernel.reduce import fused
    op, chain, dt, pol, M, K = case
    x, m = _data(dt, (M, K), M + K, "sum"), _data(dt, (M, 1), M, "sum")
    kernel = gp.fuse(chain, policy=pol).kernel(x, m)
    return fused(kernel, reduction_plan(op, kernel.out, 2, None, pol), label=f"kept_{op}", keep=True), x, m


@pytest.fixture(scope="module")
def library():
    plans = [plan_for(op, [gp.spec(dt)], pol) for op, dt, pol, _, _ in CASES]
    plans += [plan_for(op, [gp.spec(dt)], "numpy") for op, dt, _, _ in SWEEP]
    ops = [c[0] for c in CASES] + [c[0] for c in SWEEP]
    reds = list({cuda.reduction_name(r): r for op, p in zip(ops, plans) for r in _stages(op, p)}.values())
    reds += [_kept_reduction(case)[0] for case in KEPT]
    b = hostcuda.builder()
    key = b.submit(cuda.reduction_source(reds))
    return b.library(key)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}x{c[4]}" for c in CASES])
def test_host_cuda_reduction_equals_the_cpu_engine(library, case):
    op, dt, pol, M, K = case
    plan = plan_for(op, [gp.spec(dt)], pol)
    x = _data(dt, (M, K), M * K + 1, op)
    stages = _stages(op, plan)
    div = DIVISOR.get(op, lambda K: float(K))(K)
    # the two schedules (engines/cuda/reduce._columns: threads along results or along lanes) each
    # give every result the same operations
    for grid, block, reverse, cols in ((1, 1, False, 0), (3, 5, True, 0), (3, 5, True, 1)):
        views = [x]
        for red in stages:
            shape = (M, K) if red.scan else (M,)
            want = np.empty(shape, red.out.numpy)
            got = np.zeros(shape, red.out.numpy)
            d = float(K) if red is not stages[-1] else div
            cpu.run(red, views, want, K, d)
            _run_cuda(library, red, views, M, K, d, got, grid, block, reverse, cols=cols)
            with np.errstate(invalid="ignore"):
                nan = np.isnan(want.astype(np.complex128)) if want.dtype.kind in "fcV" or dt == "bfloat16" else False
            assert np.array_equal(np.where(nan, 0, _bits(got)), np.where(nan, 0, _bits(want))), \
                f"{op} {dt} grid {grid}x{block} cols={cols}: host CUDA {got[:4]} vs CPU {want[:4]}"
            if not red.scan:
                views = [x, np.broadcast_to(want[:, None], (M, K))]


@pytest.mark.parametrize("case", KEPT, ids=[f"{c[0]}-{c[2]}-{c[3]}-{c[4]}x{c[5]}" for c in KEPT])
def test_host_cuda_kept_chain_values_equal_the_cpu_engine(library, case):
    red, x, m = _kept_reduction(case)
    M, K = x.shape
    views = [x, np.broadcast_to(m, (M, K))]
    div = float(K)
    want, want_kept = np.empty(M, red.out.numpy), np.empty((M, K), red.kept.dtype.numpy)
    cpu.run(red, views, want, K, div, keep=want_kept)
    np.testing.assert_array_equal(_bits(want_kept), _bits(gp.fuse(case[1], policy=case[3])(x, m)))
    for grid, block, reverse in ((1, 1, False), (3, 5, True)):
        got, got_kept = np.zeros(M, red.out.numpy), np.zeros((M, K), red.kept.dtype.numpy)
        _run_cuda(library, red, views, M, K, div, got, grid, block, reverse, keep=got_kept)
        assert _bits(got).tobytes() == _bits(want).tobytes(), f"{case[0]} {case[2]} grid {grid}x{block}: {got} vs {want}"
        assert _bits(got_kept).tobytes() == _bits(want_kept).tobytes(), f"{case[0]} {case[2]} grid {grid}x{block}: kept values"


# ---------------------------------------------------------------------------------------------
# gp.fuse functions with reductions on (host-emulated) CuPy arrays: their stages (dispatch/fuse_stages.py)
# on the device give the CPU's bits

def _softmax(x):
    m = gp.max(x, axis=-1, keepdims=True)
    e = gp.exp(x - m)
    return e / gp.sum(e, axis=-1, keepdims=True)


def _layer_norm(x):
    mu = gp.mean(x, axis=-1, keepdims=True)
    var = gp.mean((x - mu) * (x - mu), axis=-1, keepdims=True)
    return (x - mu) / gp.sqrt(var + 1e-5) * 0.5 + 0.25


def _sum_of_product(x):
    return gp.sum(x * (x + 0.5), axis=0)


def _reduced_twice(x):
    e = gp.tanh(x)
    return e / gp.sum(e, axis=-1, keepdims=True) + gp.max(e)


STAGED = [(fn, dt, pol) for fn in (_softmax, _layer_norm, _sum_of_product, _reduced_twice)
          for dt, pol in (("float32", "numpy"), ("float16", "torch"), ("float32", "jax"))]


@pytest.mark.parametrize("fn, dtype, policy", STAGED, ids=[f"{f.__name__[1:]}-{d}-{p}" for f, d, p in STAGED])
def test_fused_functions_with_reductions_on_device_arrays_equal_the_cpu(fn, dtype, policy):
    x = _data(dtype, (9, 300), 5, "sum")
    want = gp.fuse(fn, policy=policy)(x)
    with hostcuda.installed() as cp:
        got = gp.fuse(fn, policy=policy)(cp.asarray(x))
        got = got.numpy() if isinstance(got, gp.Array) else got.get()
    want = want.numpy() if isinstance(want, gp.Array) else np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert _bits(got).tobytes() == _bits(want).tobytes(), f"{fn.__name__}: device {got.ravel()[:4]} vs CPU {want.ravel()[:4]}"


def test_device_softmax_is_three_kernels_with_one_exp(monkeypatch):
    """On device arrays too the sum of exp(x - max) is one reduction kernel that keeps the chain
    (dispatch/fuse_stages._fused_reduction_cuda), and the last stage reads it."""
    from gpupromote.dispatch import fuse_stages
    ran, counts = [], []
    real, real_settle = fuse_stages._fused_reduction_cuda, fuse_stages._settle

    def spy(red, *args):
        done = real(red, *args)
        ran.append((red.label, red.kept is not None, done is not None))
        return done
    monkeypatch.setattr(fuse_stages, "_fused_reduction_cuda", spy)
    monkeypatch.setattr(fuse_stages, "_settle", lambda root: (real_settle(root), counts.append(root._tracer.kernels)))
    x = _data("float32", (9, 300), 5, "sum")
    want = gp.fuse(_softmax)(x)
    with hostcuda.installed() as cp:
        got = gp.fuse(_softmax)(cp.asarray(x)).get()
    assert [r[1:] for r in ran] == [(True, True)] and ran[0][0].startswith("sum_of")
    assert counts[-1] == 2   # max, the sum keeping exp(x - max); the division is the third
    assert _bits(got).tobytes() == _bits(want).tobytes()


# ---------------------------------------------------------------------------------------------
# gp.sum ... on (host-emulated) CuPy arrays: the eager path through engines/cuda/reduce.run

EAGER = [("sum", "float32", "numpy", (5, 3000), 1), ("mean", "float16", "torch", (4, 70, 3), (0, 2)),
         ("var", "float32", "numpy", (6, 500), -1), ("std", "float64", "torch", (2000,), None),
         ("max", "float32", "jax", (3, 400), 1), ("argmin", "int32", "numpy", (4, 300), 1),
         ("any", "int8", "numpy", (3, 50), 0), ("sum", "bfloat16", "jax", (4097,), None),
         # leading axes: the kernels' column schedule (engines/cuda/reduce._columns)
         ("sum", "float32", "numpy", (700, 300), 0), ("max", "float16", "torch", (300, 129), 0),
         ("var", "float32", "jax", (4, 300, 50), (0, 1)),
         # JAX's int32 index (the rows kernel stores int64: it wrote past the int32 result before)
         ("argmax", "float32", "jax", (5, 300), 1), ("argmin", "float16", "jax", (900,), None),
         # the device fast path (dispatch/reduce.py): whole C-contiguous arrays and last axes
         ("sum", "float32", "torch", (3, 5000), None), ("mean", "float16", "numpy", (7, 300), -1),
         # empty rows: the merge of no nodes alone (+0.0 for a sum), no operand read
         ("sum", "float32", "numpy", (3, 0), 1), ("mean", "float32", "torch", (2, 0), -1)]

SCANS = [("cumsum", "float32", "numpy", (5, 300), 1), ("cumsum", "float16", "torch", (40, 7, 3), 0),
         ("cumprod", "int8", "numpy", (6, 50), -1), ("cumsum", "bfloat16", "jax", (4097,), None),
         ("cumsum", "int32", "numpy", (3, 4, 5), None), ("cumprod", "float64", "torch", (9, 11), 0)]
OUTS = [("sum", "float32", "float32", 1), ("mean", "float16", "float64", 0), ("argmax", "float32", "int32", None),
        ("max", "int8", "float32", 1)]


@pytest.mark.parametrize("op, dtype, policy, shape, axis", EAGER + SCANS,
                         ids=[f"{e[0]}-{e[1]}-{e[2]}-{e[4]}" for e in EAGER + SCANS])
def test_eager_reductions_and_scans_of_device_arrays_equal_the_cpu_engine(op, dtype, policy, shape, axis):
    x = _data(dtype, shape, 7, op)
    want = getattr(gp, op)(x, axis=axis, policy=policy)
    with hostcuda.installed() as cp:
        d = gp.asarray(x, device="cuda") if dtype == "bfloat16" else cp.asarray(x)
        got = getattr(gp, op)(d, axis=axis, policy=policy)
        got = got.numpy() if isinstance(got, gp.Array) else got.get()
    want = want.numpy() if isinstance(want, gp.Array) else np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert _bits(got).tobytes() == _bits(want).tobytes(), f"{op}: device {got.ravel()[:4]} vs CPU {want.ravel()[:4]}"


@pytest.mark.parametrize("op, dtype, out_dtype, axis", OUTS)
def test_out_on_the_device_holds_what_the_cpu_path_writes(op, dtype, out_dtype, axis):
    x = _data(dtype, (5, 300), 3, op)
    want = np.zeros((5,) if axis == 1 else (300,) if axis == 0 else (), out_dtype)
    getattr(gp, op)(x, axis=axis, out=want, policy="numpy")
    with hostcuda.installed() as cp:
        out = cp.zeros(want.shape, out_dtype)
        got = getattr(gp, op)(cp.asarray(x), axis=axis, out=out, policy="numpy")
        assert got is out
        with pytest.raises(ValueError, match="out has shape"):
            getattr(gp, op)(cp.asarray(x), axis=axis, out=cp.zeros((7, 7), out_dtype), policy="numpy")
        with pytest.raises(TypeError, match="out is a host array"):
            getattr(gp, op)(cp.asarray(x), axis=axis, out=np.zeros(want.shape, out_dtype), policy="numpy")
        got = out.get()
    assert _bits(got).tobytes() == _bits(want).tobytes(), f"{op}: device {got.ravel()[:4]} vs CPU {want.ravel()[:4]}"


@pytest.mark.parametrize("op, dtype, shape, axis", SWEEP, ids=[f"{o}-{d}-{'x'.join(map(str, s))}-{a}" for o, d, s, a in SWEEP])
def test_acceptance_sweep_same_bits_as_the_cpu_engine_on_1_and_8_threads(library, op, dtype, shape, axis):
    from gpupromote.dispatch.reduce import reduction_layout
    plan = plan_for(op, [gp.spec(dtype)], "numpy")
    x = _data(dtype, shape, int(np.prod(shape)) + 3, op)
    if op in ("cumsum",):
        ax = -1 if axis is None else axis
        x = np.moveaxis(x, ax, -1)
        M, K = int(np.prod(x.shape[:-1])), x.shape[-1]
        x2 = x.reshape(M, K)
    else:
        layout = reduction_layout(shape, axis, False, op)
        M, K = layout.M, layout.K
        x2 = layout.rows(x)
    stages = _stages(op, plan)
    div = float(K) if op != "var" and op != "std" else float(K)   # NumPy's ddof=0
    views = [x2]
    for red in stages:
        rshape = (M, K) if red.scan else (M,)
        runs = []
        for threads in (1, 8):
            want = np.empty(rshape, red.out.numpy)
            with gp.num_threads(threads):
                cpu.run(red, views, want, K, div)
            runs.append(_bits(want).tobytes())
        assert runs[0] == runs[1], f"{op} {dtype} {shape}: 1 and 8 threads differ"
        got = np.zeros(rshape, red.out.numpy)
        _run_cuda(library, red, views, M, K, div, got, 5, 32, True)
        assert _bits(got).tobytes() == runs[0], f"{op} {dtype} {shape} axis {axis}: host CUDA differs from the CPU engine"
        if not red.scan:
            views = [x2, np.broadcast_to(want[:, None], (M, K))]
