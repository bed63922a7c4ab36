"""gp ops and gp.fuse functions on dask arrays, computed on a real 2-process cluster.

The reference is always the eager call on the whole NumPy arrays under the same policy: a dask
result must have its dtype (and NumPy meta) before anything is computed, and its values bit for bit
once computed on the workers. The cluster (``distributed.LocalCluster``, 2 worker processes of one
thread each, loopback only) is started once for this module.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.core import dtypes as D
from gpupromote.core.errors import IntegerDivisionByZero
from gpupromote.promotion.policies import policy_names

da = pytest.importorskip("dask.array", reason="needs the dask extra: pip install '.[dask]' in a clone")
distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install '.[dask]' in a clone")
gp_dask = pytest.importorskip("gpupromote.integrations.dask")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    # not the default scheduler: every test says where it computes (client.compute or scheduler=...)
    with distributed.Client(cluster, set_as_default=False) as client:
        yield client


def compute(client, *graphs):
    """The graphs' results, computed on the cluster's workers."""
    return client.gather(client.compute(list(graphs)))


def bits(x):
    """An array's dtype, shape and bytes (NaN payloads and signed zeros included), for exact equality."""
    x = np.asarray(x)
    return D.dtype(x.dtype).name, x.shape, np.ascontiguousarray(x).tobytes()


# ---------------------------------------------------------------------------------------------
# Operands: a matrix in uneven blocks, a row and a column that broadcast against it in other
# blocks, a NumPy row among dask operands, a 0-d dask array and Python scalars.

_LAYOUTS = {
    "m": ((7, 10), ((3, 4), (4, 5, 1))),
    "row": ((10,), ((6, 4),)),
    "col": ((7, 1), ((2, 5), (1,))),
    "0d": ((), ()),
}
_CODES = {"b1": np.bool_, "i1": np.int8, "i2": np.int16, "i4": np.int32, "i8": np.int64, "u1": np.uint8,
          "f2": np.float16, "bf": ml_dtypes.bfloat16, "f4": np.float32, "f8": np.float64}


def _values(code, shape, seed, nonzero=False):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(_CODES[code])
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)
        return np.where(v == 0, dtype.type(7), v) if nonzero else v
    v = rng.standard_normal(shape) * 40
    v.flat[:3] = [np.inf, -0.0, np.nan][: v.size]   # specials travel through the blocks too
    return v.astype(dtype)


def operand(token, seed):
    """("f2[m]" | "f4[np-row]" | "i2[row+]" | a Python scalar, seed) -> (NumPy value, dask operand):
    ``np-`` keeps the NumPy array as the dask call's operand, ``+`` makes integers nonzero."""
    if not isinstance(token, str):
        return token, token
    code, layout = token[:-1].split("[")
    numpy_only, nonzero = layout.startswith("np-"), layout.endswith("+")
    shape, chunks = _LAYOUTS[layout.removeprefix("np-").rstrip("+")]
    value = _values(code, shape, seed, nonzero)
    return value, (value if numpy_only else da.from_array(value, chunks=chunks))


# op and operands; each policy runs all of them (those it refuses must be refused at graph
# construction, with the eager exception)
CASES = [
    ("add", "f2[m]", "f4[row]"),
    ("multiply", "bf[m]", "f4[col]"),
    ("subtract", "f2[m]", 2.5),
    ("subtract", 3.5, "bf[row]"),
    ("add", "i1[m]", 3),
    ("true_divide", "i4[col]", "i2[row]"),
    ("maximum", "bf[m]", "f2[row]"),
    ("less", "f4[m]", "f8[np-row]"),
    ("where", "b1[col]", "f2[m]", 1.5),
    ("floor_divide", "i2[m]", "i2[row+]"),
    ("add", "u1[m]", "i8[row]"),
    ("multiply", "f8[0d]", "f2[m]"),
    ("negative", "i1[m]"),
    ("power", "f2[m]", 2),
]


def _eager(op, values, policy):
    """("ok", result) or ("raise", exception class) of the eager call on the whole arrays."""
    try:
        return "ok", getattr(gp, op)(*values, policy=policy)
    except (TypeError, ValueError, ArithmeticError) as exc:
        return "raise", type(exc)


def _first_block(*blocks):
    return blocks[0]


@pytest.mark.parametrize("policy", policy_names())
def test_ops_on_dask_arrays_equal_the_eager_call_on_whole_arrays(client, policy):
    graphs, expected = [], []
    for k, (op, *tokens) in enumerate(CASES):
        values, operands = zip(*(operand(t, seed=10 * k + i) for i, t in enumerate(tokens)))
        kind, eager = _eager(op, values, policy)
        if kind == "raise":
            with pytest.raises(eager):   # refused while the graph is built, as eager refuses
                getattr(gp, op)(*operands, policy=policy)
            continue
        lazy = getattr(gp, op)(*operands, policy=policy)
        assert isinstance(lazy, da.Array), op
        assert (lazy.dtype, type(lazy._meta), lazy._meta.dtype) == (eager.dtype, np.ndarray, eager.dtype), (op, tokens)
        assert lazy.chunks == da.core.elemwise(_first_block, *operands, dtype=lazy.dtype).chunks, (op, tokens)
        graphs.append(lazy)
        expected.append(((op, *map(str, tokens)), bits(eager)))
    assert graphs, f"policy {policy!r} refused every case"
    got = compute(client, *graphs)
    assert [(case, bits(g)) for (case, _), g in zip(expected, got)] == expected


def test_every_policy_accepts_most_cases():
    """The sample is a sample of computations, not of refusals."""
    for policy in policy_names():
        accepted = sum(_eager(op, [operand(t, 0)[0] for t in tokens], policy)[0] == "ok" for op, *tokens in CASES)
        assert accepted >= 4, policy


def test_a_block_of_one_element_from_broadcast_operands():
    """Uneven chunks make (1, 1) blocks of a matrix beside (1,) blocks of a row: the CPU engine
    runs them as one element (it once looked for a 0-d strided loop)."""
    a, b = np.array([[2.5]], np.float16), np.array([3.0], np.float32)
    assert gp.add(a, b).tolist() == [[5.5]] and gp.fuse(lambda a, b: a * b + 1)(a, b).tolist() == [[8.5]]
    m, row = _values("f2", (7, 10), 1), _values("f4", (10,), 2)
    lazy = gp.add(da.from_array(m, chunks=((2, 1, 4), (4, 5, 1))), da.from_array(row, chunks=5))
    assert bits(lazy.compute(scheduler="sync")) == bits(gp.add(m, row))


# ---------------------------------------------------------------------------------------------
# The policy is fixed when the graph is built

def test_a_graph_built_under_use_policy_torch_computes_under_torch_on_the_workers(client):
    a, x = operand("i4[m]", 1)
    b, y = operand("f2[row]", 2)
    with gp.use_policy("torch"):
        lazy = gp.add(x, y)
        fused = gp.fuse(lambda x, y: x * y + 1.5)(x, y)
    assert gp.get_policy_name() == "numpy"    # computed outside the block, on workers whose default is numpy
    assert lazy.dtype == fused.dtype == np.float16   # torch keeps the float operand's dtype; numpy: float64
    got, got_fused = compute(client, lazy, fused)
    assert bits(got) == bits(gp.add(a, b, policy="torch"))
    assert bits(got_fused) == bits(gp.add(gp.multiply(a, b, policy="torch"), 1.5, policy="torch"))
    assert bits(got) != bits(gp.add(a, b, policy="numpy"))


def test_policy_argument_beats_the_current_policy():
    _, x = operand("i4[m]", 1)
    with gp.use_policy("numpy"):
        assert gp.add(x, 2.5, policy="jax").dtype == np.float32
        assert gp.add(x, 2.5).dtype == np.float64


# ---------------------------------------------------------------------------------------------
# gp.fuse over dask arrays

def test_a_fused_function_over_dask_arrays_equals_its_eager_result(client):
    def chain(a, b, c, s):
        return gp.where(a > 0, a * b + c * s, -a)

    f = gp.fuse(chain)
    graphs, expected = [], []
    for policy in ("numpy", "torch", "jax"):
        (a, x), (b, y), (c, z) = operand("f2[m]", 3), operand("bf[row]", 4), operand("f4[col]", 5)
        lazy = f(x, y, z, 0.25, policy=policy)
        eager = f(a, b, c, 0.25, policy=policy)
        assert (lazy.dtype, lazy._meta.dtype) == (eager.dtype, eager.dtype), policy
        # one task per block: the whole chain is one blockwise layer (beside the inputs and their rechunking)
        assert [name for name in lazy.dask.layers if name.startswith("gp-")] == [lazy.name]
        graphs.append(lazy)
        with gp.use_policy(policy):
            expected.append(bits(chain(a, b, c, 0.25)))    # the unfused eager chain
        assert bits(eager) == expected[-1]
    assert [bits(g) for g in compute(client, *graphs)] == expected


def test_a_fused_function_is_traced_once_per_worker_process(client):
    f = gp.fuse(lambda a, b: (a - b) * 0.5)
    a, x = _values("f4", (64,), 1), da.from_array(_values("f4", (64,), 1), chunks=8)
    b, y = _values("f2", (64,), 2), da.from_array(_values("f2", (64,), 2), chunks=8)
    assert bits(compute(client, f(x, y))[0]) == bits(f(a, b))
    key = gp_dask._KEYS[f]

    def traces_here():
        import gpupromote.integrations.dask as on_worker
        fused = on_worker._ON_THIS_PROCESS.get(key)
        return None if fused is None else len(fused._traces)

    counts = [n for n in client.run(traces_here).values() if n is not None]
    assert counts and all(n == 1 for n in counts)   # 8 blocks, one trace (one kernel) per process


def test_a_fused_function_that_computes_nothing_returns_its_argument():
    _, x = operand("f4[m]", 1)
    assert gp.fuse(lambda a, b: a)(x, 2.0) is x


# ---------------------------------------------------------------------------------------------
# Errors: refusals at graph construction, data-dependent checks at compute

@pytest.mark.parametrize("op, tokens, policy", [
    ("add", ("u2", "i2"), "torch"),            # PyTorch does not promote uint16 with int16
    ("add", ("f2", "i4"), "array-api"),        # mixed kinds
    ("add", ("i1", 300), "numpy"),             # a Python int out of int8's range
    ("add", ("f4", "bf"), "tf-none"),          # no tensor-tensor promotion
])
def test_refusals_raise_while_the_graph_is_built_with_the_eager_exception(op, tokens, policy):
    values = [np.ones(5, t) if isinstance(t, str) and t != "bf" else
              (np.ones(5, ml_dtypes.bfloat16) if t == "bf" else t) for t in tokens]
    kind, eager = _eager(op, values, policy)
    assert kind == "raise"
    lazy_args = [da.from_array(v, chunks=2) if isinstance(v, np.ndarray) else v for v in values]
    with pytest.raises(eager) as refused:
        getattr(gp, op)(*lazy_args, policy=policy)
    assert policy in str(refused.value)
    with pytest.raises(eager):
        gp.fuse(lambda a, b: a + b)(*lazy_args, policy=policy)


def test_shapes_that_do_not_broadcast_and_out_are_refused_while_the_graph_is_built():
    x = da.ones((4, 3), chunks=2)
    with pytest.raises(ValueError, match="could not be broadcast"):
        gp.add(x, da.ones(4, chunks=2))
    with pytest.raises(TypeError, match="out= is not supported with dask arrays"):
        gp.add(x, 1.0, out=da.zeros((4, 3)))
    with pytest.raises(TypeError, match="is not a dask.array.Array"):
        gp.add(x, __import__("dask").delayed(1.0)())


def test_integer_division_by_zero_raises_at_compute_with_the_eager_class(client):
    a = np.arange(12, dtype=np.int32)
    d = np.ones(12, np.int32)
    d[9] = 0                                              # in the last of three blocks
    with pytest.raises(IntegerDivisionByZero):
        gp.floor_divide(a, d, policy="torch")             # eager
    x, y = da.from_array(a, chunks=4), da.from_array(d, chunks=4)
    lazy = gp.floor_divide(x, y, policy="torch")           # builds: the zero is data
    fused = gp.fuse(lambda a, b: a % b + 1)(x, y, policy="torch")
    for graph in (lazy, fused):
        with pytest.raises(IntegerDivisionByZero, match="policy 'torch', (floor_divide|remainder)"):
            compute(client, graph)


def test_numpy_policy_division_by_zero_gives_the_eager_values(client):
    a, d = np.arange(12, dtype=np.int16), np.arange(12, dtype=np.int16) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eager = gp.floor_divide(a, d, policy="numpy")      # NumPy warns and gives 0
    got = compute(client, gp.floor_divide(da.from_array(a, chunks=5), da.from_array(d, chunks=5), policy="numpy"))[0]
    assert bits(got) == bits(eager)


# ---------------------------------------------------------------------------------------------
# Kernels on the workers: compiled once per process, loaded from the disk cache by a later worker

def _start_worker(scheduler, name, cache_dir):
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=str(cache_dir), NUMBA_CACHE_DIR=str(cache_dir / "numba"))
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--name", name,
                             "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _address_of(client, name, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
            if info.get("name") == name:
                return address
        time.sleep(0.2)
    raise TimeoutError(f"worker {name!r} did not join the cluster in {timeout} s")


def _compute_on(client, address, seed):
    """gp.multiply(int16, float32) on 4 blocks, all on one worker; its kernel statistics there."""
    a, b = _values("i2", (40,), seed), _values("f4", (40,), seed + 1)
    lazy = gp.multiply(da.from_array(a, chunks=10), da.from_array(b, chunks=10))
    got = client.compute(lazy, workers=[address], allow_other_workers=False).result()
    assert bits(got) == bits(gp.multiply(a, b))
    return client.run(gp_dask.kernel_cache_stats, workers=[address])[address]


def test_a_worker_started_after_the_cache_is_warm_does_not_recompile(client, cluster, tmp_path):
    first = _start_worker(cluster.scheduler_address, "gp-cold", tmp_path)
    second = None
    try:
        cold = _compute_on(client, _address_of(client, "gp-cold"), seed=1)
        assert cold["kernel_dir"].startswith(str(tmp_path))
        assert cold["compiled"] >= 1 and cold["loaded"] == 0    # an empty cache: compiled (and written)
        second = _start_worker(cluster.scheduler_address, "gp-warm", tmp_path)
        warm = _compute_on(client, _address_of(client, "gp-warm"), seed=5)
        assert warm["kernel_dir"] == cold["kernel_dir"]
        assert warm["kernels"] == cold["kernels"] >= 1
        assert warm["compiled"] == 0 and warm["loaded"] >= 1      # the same kernels, from the disk cache
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=60)


def test_each_worker_compiles_or_loads_a_kernel_once_however_many_blocks_it_runs(client):
    def machine_code_events():
        return {w: s["compiled"] + s["loaded"] for w, s in client.run(gp_dask.kernel_cache_stats).items()}

    def fmax_in_blocks(seed):   # a kernel no other test here runs: fmax(uint8, float16) under jax, 12 blocks
        a, b = _values("u1", (96,), seed), _values("f2", (96,), seed + 1)
        lazy = gp.fmax(da.from_array(a, chunks=8), da.from_array(b, chunks=8), policy="jax")
        assert bits(compute(client, lazy)[0]) == bits(gp.fmax(a, b, policy="jax"))

    before = machine_code_events()
    fmax_in_blocks(3)
    first = machine_code_events()
    fmax_in_blocks(7)
    again = machine_code_events()
    new = {w: first[w] - before[w] for w in before}
    # once per entry point and process, for 12 blocks: the native one (the compiled dispatcher), and
    # the flat one for blocks that arrive unaligned (distributed's pickle-5 buffers), which the
    # compiled dispatcher leaves to the Python path
    assert sum(new.values()) >= 1 and all(n <= 2 for n in new.values())
    assert again == first                                                    # and never again


# ---------------------------------------------------------------------------------------------
# gpupromote without dask

def test_importing_gpupromote_and_eager_calls_do_not_import_dask():
    code = ("import sys, numpy as np, gpupromote as gp\n"
            "gp.add(np.ones(3, np.float16), np.ones(3, np.float32)); gp.fuse(lambda a: a * 2)(np.ones(3))\n"
            "print(sorted(m for m in sys.modules if m == 'dask' or m.startswith(('dask.', 'distributed'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# CuPy blocks on a GPU: dask_cuda.LocalCUDACluster when it is installed, else the threaded scheduler

def _gpu_available():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device
        return False


_GPU = pytest.mark.skipif(not _gpu_available(), reason="needs a CUDA device and CuPy")


@pytest.fixture(scope="module")
def gpu_compute():
    """compute(*graphs) on the GPU: a dask-cuda cluster if dask_cuda imports, else threads."""
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        import dask
        yield lambda *graphs: dask.compute(*graphs, scheduler="threads")
        return
    with LocalCUDACluster(host="127.0.0.1", dashboard_address=None) as cuda_cluster, \
            distributed.Client(cuda_cluster, set_as_default=False) as cuda_client:
        yield lambda *graphs: compute(cuda_client, *graphs)


@pytest.mark.gpu
@_GPU
@pytest.mark.parametrize("policy", ["numpy", "torch", "jax", "paddle"])
def test_cupy_blocks_equal_the_single_gpu_call(gpu_compute, policy):
    import cupy as cp
    cases = [("add", "f2[m]", "f4[row]"), ("multiply", "i1[m]", 2.5), ("true_divide", "i4[col]", "i2[row+]"),
             ("where", "b1[col]", "f2[m]", 1.5)]
    graphs, expected = [], []
    for k, (op, *tokens) in enumerate(cases):
        values = [operand(t, 10 * k + i)[0] for i, t in enumerate(tokens)]
        on_gpu = [cp.asarray(v) if isinstance(v, np.ndarray) else v for v in values]
        kind, eager = _eager(op, on_gpu, policy)
        if kind == "raise":
            continue
        lazy_args = [da.from_array(v, chunks=_LAYOUTS[t[:-1].split("[")[1].rstrip("+")][1], asarray=False)
                     if isinstance(v, cp.ndarray) else v for v, t in zip(on_gpu, tokens)]
        lazy = getattr(gp, op)(*lazy_args, policy=policy)
        assert isinstance(lazy._meta, cp.ndarray) and lazy.dtype == eager.dtype, (op, tokens)
        graphs.append(lazy)
        expected.append(bits(cp.asnumpy(eager)))
    got = gpu_compute(*graphs)
    assert [bits(cp.asnumpy(g)) for g in got] == expected


@pytest.mark.gpu
@_GPU
def test_a_fused_function_on_cupy_blocks_equals_the_single_gpu_call(gpu_compute):
    import cupy as cp
    f = gp.fuse(lambda a, b, c: a * b + c * 0.5)
    arrays = [cp.asarray(_values(code, (7, 10), seed)) for seed, code in enumerate(("f2", "f2", "f4"))]
    lazy = f(*(da.from_array(a, chunks=(3, 4), asarray=False) for a in arrays), policy="torch")
    eager = f(*arrays, policy="torch")
    assert isinstance(lazy._meta, cp.ndarray) and lazy.dtype == eager.dtype
    assert bits(cp.asnumpy(gpu_compute(lazy)[0])) == bits(cp.asnumpy(eager))
