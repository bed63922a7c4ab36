"""The CPU engine against NumPy on the same data in the same run (pytest-benchmark).

N = 10**7, one thread unless a row says otherwise (NumPy's add is single-threaded). Each group
holds a gpupromote row and a baseline row (``extra_info["impl"]``), so bench/report.py prints the
speed ratio; rows that move a known number of bytes carry it (``extra_info["bytes"]``: inputs read
+ output written), and the report prints their GB/s.

* ``N=1e7 <case>``: a new result each call (gpupromote's output pool on, NumPy allocating);
* ``N=1e7 <case>, pool off``: the same with gpupromote's pool off (GPUPROMOTE_CPU_POOL_MB=0), so
  both sides pay for fresh pages: the allocator's share, apart from the kernel's;
* ``out= N=1e7 <case>``: the output preallocated on both sides: kernel speed alone. Goals (issue
  12): every case >= 85% of the GB/s of np.add(f32, f32, out=) in the same run, >= 0.95x NumPy's
  own out= call, float16+float32 >= 5x;
* ``threads out= N=1e7 <case>``: all cores against one thread, both gpupromote (goal >= 1.7x for
  float16+float32 and int8+float32 on 2 cores), beside ``threads ceiling``: NumPy's own add split
  over the same cores, what the memory system gives them in this run, and a compute-bound op
  (hypot), where the memory does not bound the speed-up;
* ``dispatch: ...``: 1-element calls, everything but the arithmetic (goal >= 0.8x np.add), and the
  same with all cores allowed against one thread (the same code runs: no slower);
* ``small call: ...``: a gp.Array operator and a broadcast row op of 1024 elements, beside NumPy's
  call on ndarrays (no goal: what the general route costs where the compiled dispatcher declines);
* ``out= another dtype: ...``: float32 + float32 written into a float16 out= (no goal: the cast is
  the kernel's, where it was a temporary and a NumPy cast after it);
* compile and load: a kernel's native entry point compiled cold (<= 100 ms), loaded from the disk
  cache (<= 5 ms), also in a fresh process.

    python -m pytest bench/bench_cpu.py --benchmark-json=cpu.json && python bench/report.py cpu.json
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu import (
    cache as _numba_cache,
    kernels as _numba_kernels,
    modules as _kernel_modules,
    engine as cpu_numba,
)

# every core this process may run on (GPUPROMOTE_NUM_THREADS's default counts Numba's, which
# bench/run.py pins to 1 for the other suites)
ALL_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

N = 10**7
_rng = np.random.default_rng(0)
_F32 = _rng.standard_normal(N).astype(np.float32)
_G32 = _rng.standard_normal(N).astype(np.float32)
_I8 = _rng.integers(-100, 100, N).astype(np.int8)
_I32 = _rng.integers(-10**6, 10**6, N).astype(np.int32)
_F16 = _F32.astype(np.float16)
_BF16 = _F32.astype(ml_dtypes.bfloat16)

# case -> (operands, result dtype); both sides give that dtype (checked below)
CASES = {
    "float32+float32 (same dtype)": ((_F32, _G32), np.float32),
    "int8+float32": ((_I8, _G32), np.float32),
    "int32+Python float": ((_I32, 1.5), np.float64),
    "float16+float32": ((_F16, _G32), np.float32),
    "bfloat16+float32": ((_BF16, _G32), np.float32),
}
_OUT = {np.dtype(np.float32): np.empty(N, np.float32), np.dtype(np.float64): np.empty(N, np.float64)}


def _bytes(case):
    operands, result = CASES[case]
    return sum(x.nbytes for x in operands if isinstance(x, np.ndarray)) + N * np.dtype(result).itemsize


@pytest.fixture(autouse=True)
def one_thread():
    with cpu_numba.num_threads(1):
        yield


def _calls(case):
    (a, b), result = CASES[case]
    out = _OUT[np.dtype(result)]
    return (lambda: gp.add(a, b), lambda: np.add(a, b),
            lambda: gp.add(a, b, out=out), lambda: np.add(a, b, out=out))


def _check(case):
    ours, theirs, ours_out, theirs_out = _calls(case)
    assert ours().dtype == theirs().dtype    # same result dtype; compiles / loads the kernel
    assert ours_out() is _OUT[np.dtype(CASES[case][1])]


@pytest.mark.parametrize("case", CASES)
def test_gpupromote(benchmark, case):
    _check(case)
    benchmark.group = f"N=1e7 {case}"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(_calls(case)[0], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_numpy(benchmark, case):
    benchmark.group = f"N=1e7 {case}"
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_calls(case)[1], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_gpupromote_pool_off(benchmark, case, pool_off):
    _check(case)
    benchmark.group = f"N=1e7 {case}, pool off"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(_calls(case)[0], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_numpy_pool_off(benchmark, case):
    benchmark.group = f"N=1e7 {case}, pool off"
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_calls(case)[1], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_gpupromote_out(benchmark, case):
    _check(case)
    benchmark.group = f"out= N=1e7 {case}"
    benchmark.extra_info.update(impl="gpupromote", bytes=_bytes(case))
    benchmark.pedantic(_calls(case)[2], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_numpy_out(benchmark, case):
    benchmark.group = f"out= N=1e7 {case}"
    benchmark.extra_info.update(impl="numpy", bytes=_bytes(case))
    benchmark.pedantic(_calls(case)[3], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_gpupromote_out_all_cores(benchmark, case):
    _check(case)
    benchmark.group = f"threads out= N=1e7 {case}"
    benchmark.extra_info.update(impl="gpupromote", threads=ALL_CORES, bytes=_bytes(case))
    with cpu_numba.num_threads(ALL_CORES):
        benchmark.pedantic(_calls(case)[2], rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_gpupromote_out_one_thread(benchmark, case):
    benchmark.group = f"threads out= N=1e7 {case}"
    benchmark.extra_info.update(impl="1 thread", threads=1, bytes=_bytes(case))
    benchmark.pedantic(_calls(case)[2], rounds=15, warmup_rounds=1)


# --- what all cores can give: the memory system's ceiling, and a compute-bound op ---------------
# N = 1e7 streams 80-120 MB per call: one thread may already move what the memory system moves.
# The ceiling is NumPy's own np.add(f32, f32, out=) split over the same cores (NumPy releases the
# GIL), so "threads" rows read against what this machine's memory gives two threads in the same run.
_SPLITTER = ThreadPoolExecutor(ALL_CORES)


def _numpy_add_split(a, b, out):
    step = -(-len(out) // ALL_CORES)
    for f in [_SPLITTER.submit(np.add, a[i:i + step], b[i:i + step], out[i:i + step])
              for i in range(0, len(out), step)]:
        f.result()


_CEILING = "threads ceiling: np.add(f32, f32, out=) N=1e7 split over all cores"


def test_memory_ceiling_all_cores(benchmark):
    out = _OUT[np.dtype(np.float32)]
    benchmark.group = _CEILING
    benchmark.extra_info.update(impl="all cores", threads=ALL_CORES, bytes=3 * out.nbytes)
    benchmark.pedantic(_numpy_add_split, args=(_F32, _G32, out), rounds=15, warmup_rounds=1)


def test_memory_ceiling_one_thread(benchmark):
    out = _OUT[np.dtype(np.float32)]
    benchmark.group = _CEILING
    benchmark.extra_info.update(impl="1 thread", threads=1, bytes=3 * out.nbytes)
    benchmark.pedantic(np.add, args=(_F32, _G32), kwargs={"out": out}, rounds=15, warmup_rounds=1)


_COMPUTE_BOUND = "threads out= N=1e7 float32 hypot (compute-bound)"


def test_gpupromote_compute_bound_all_cores(benchmark):
    out = _OUT[np.dtype(np.float32)]
    benchmark.group = _COMPUTE_BOUND
    benchmark.extra_info.update(impl="gpupromote", threads=ALL_CORES)
    with cpu_numba.num_threads(ALL_CORES):
        benchmark.pedantic(gp.hypot, args=(_F32, _G32), kwargs={"out": out}, rounds=5, warmup_rounds=1)


def test_gpupromote_compute_bound_one_thread(benchmark):
    out = _OUT[np.dtype(np.float32)]
    benchmark.group = _COMPUTE_BOUND
    benchmark.extra_info.update(impl="1 thread", threads=1)
    benchmark.pedantic(gp.hypot, args=(_F32, _G32), kwargs={"out": out}, rounds=5, warmup_rounds=1)


# --- dispatch: a 1-element op, everything but the arithmetic ------------------------------------
_ONE_A, _ONE_B = np.ones(1, np.float32), np.ones(1, np.float32)
_ONE_I8 = np.ones(1, np.int8)
DISPATCH = {  # group -> (operands); a Python int's value can change the plan: it is checked against its bounds
    "dispatch: float32[1] + float32[1]": (_ONE_A, _ONE_B),
    "dispatch: int8[1] + Python int": (_ONE_I8, 3),
}
# why: pytest-benchmark sizes its rounds from the first call it times; one slow first call makes
# it settle on 1 call per round and time the timer too (see bench_resolve.py)
_WARM = pytest.mark.benchmark(warmup=True, warmup_iterations=20000)


@_WARM
@pytest.mark.parametrize("group", DISPATCH)
def test_gpupromote_dispatch(benchmark, group):
    a, b = DISPATCH[group]
    gp.add(a, b)
    benchmark.group = group
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark(lambda: gp.add(a, b))


@_WARM
@pytest.mark.parametrize("group", DISPATCH)
def test_numpy_dispatch(benchmark, group):
    a, b = DISPATCH[group]
    benchmark.group = group
    benchmark.extra_info["impl"] = "numpy"
    benchmark(lambda: np.add(a, b))


@_WARM
@pytest.mark.parametrize("group", DISPATCH)
def test_gpupromote_dispatch_all_cores(benchmark, group):
    a, b = DISPATCH[group]
    benchmark.group = group.replace("dispatch:", "dispatch, all cores:")
    benchmark.extra_info.update(impl="gpupromote", threads=ALL_CORES)
    with cpu_numba.num_threads(ALL_CORES):
        gp.add(a, b)
        benchmark(lambda: gp.add(a, b))


@_WARM
@pytest.mark.parametrize("group", DISPATCH)
def test_gpupromote_dispatch_one_thread(benchmark, group):
    a, b = DISPATCH[group]
    benchmark.group = group.replace("dispatch:", "dispatch, all cores:")
    benchmark.extra_info.update(impl="1 thread", threads=1)
    benchmark(lambda: gp.add(a, b))


# --- small calls off the 1-d same-shape case: a gp.Array's, broadcasts, a numpy scalar, views --------
_ROW, _ONE_PER_ROW = np.ones((1, 1024), np.float32), np.ones((1, 1), np.float32)
_ARR_A, _ARR_B = gp.asarray(np.ones(1024, np.float32)), gp.asarray(np.ones(1024, np.float32))
_V, _MAX = np.linspace(-3, 3, 1024, dtype=np.float32), np.float32(3)   # x.max() is a numpy scalar
_M, _BIAS, _COLUMN = np.ones((64, 64), np.float32), np.ones(64, np.float32), np.ones((64, 1), np.float32)
SMALL_CALLS = {  # group -> (gp's call, NumPy's call on the same data as ndarrays)
    "small call: gp.Array float32[1024] + gp.Array float32[1024]":
        (lambda: _ARR_A + _ARR_B, lambda: np.add(_ARR_A.storage, _ARR_B.storage)),
    "small call: float32[1,1024] - float32[1,1] (broadcast)":
        (lambda: gp.subtract(_ROW, _ONE_PER_ROW), lambda: np.subtract(_ROW, _ONE_PER_ROW)),
    "small call: float32[1024] - numpy float32 (x - x.max())":
        (lambda: gp.subtract(_V, _MAX), lambda: np.subtract(_V, _MAX)),
    "small call: float32[64,64] + float32[64] (a bias row)":
        (lambda: gp.add(_M, _BIAS), lambda: np.add(_M, _BIAS)),
    "small call: float32[64,64] - float32[64,1] (a column: x - x.max(axis=-1, keepdims=True))":
        (lambda: gp.subtract(_M, _COLUMN), lambda: np.subtract(_M, _COLUMN)),
    "small call: float32[64,64] views x[:, 1:] - x[:, :-1] (np.diff)":
        (lambda: gp.subtract(_M[:, 1:], _M[:, :-1]), lambda: np.subtract(_M[:, 1:], _M[:, :-1])),
}


@_WARM
@pytest.mark.parametrize("group", SMALL_CALLS)
def test_gpupromote_small_call(benchmark, group):
    call = SMALL_CALLS[group][0]
    call()
    benchmark.group = group
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark(call)


@_WARM
@pytest.mark.parametrize("group", SMALL_CALLS)
def test_numpy_small_call(benchmark, group):
    benchmark.group = group
    benchmark.extra_info["impl"] = "numpy"
    benchmark(SMALL_CALLS[group][1])


# --- out= of another dtype than the result's: the cast in the kernel (ir.stored_as) ---------------
_F16_OUT = np.empty(N, np.float16)
OUT_CASTS = {  # group -> operands (float32 + float32 is float32, written into float16)
    "out= another dtype: N=1e7 float32+float32 into float16": (_F32, _G32),
}


@pytest.mark.parametrize("group", OUT_CASTS)
def test_gpupromote_out_cast(benchmark, group):
    a, b = OUT_CASTS[group]
    assert gp.add(a, b, out=_F16_OUT) is _F16_OUT
    benchmark.group = group
    benchmark.extra_info.update(impl="gpupromote", bytes=a.nbytes + b.nbytes + _F16_OUT.nbytes)
    benchmark.pedantic(lambda: gp.add(a, b, out=_F16_OUT), rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("group", OUT_CASTS)
def test_numpy_out_cast(benchmark, group):
    a, b = OUT_CASTS[group]
    benchmark.group = group
    benchmark.extra_info.update(impl="numpy", bytes=a.nbytes + b.nbytes + _F16_OUT.nbytes)
    benchmark.pedantic(lambda: np.add(a, b, out=_F16_OUT), rounds=15, warmup_rounds=1)


# --- compile and load ---------------------------------------------------------------------------
_PLAN = plan_for("multiply", [np.ones(4, np.int16), np.ones(4, np.float32)], policy="numpy")
_ARGS = [np.ones(4, np.int16), np.ones(4, np.float32)]


_FRESH = []


def _compile_fresh():
    # A kernel no process has seen: the plan's source with a unique comment is a new module file,
    # and its native entry point (what a first gp.multiply call compiles) is compiled (and
    # written to the disk cache).
    module = _kernel_modules.load_module(cpu_numba.source(_PLAN) + f"# bench {uuid.uuid4().hex}\n")
    native = _numba_cache.cached_cfunc(_numba_kernels._NATIVE_SIGNATURE, error_model="numpy", boundscheck=False)(module.native)
    assert native.address and native.cache_hits == 0
    _FRESH.append(native)


def _remove_fresh_caches():
    """The throw-away kernels' modules and Numba cache files."""
    for native in _FRESH:
        base = native._cache._impl.filename_base
        for path in cpu_numba.WRITE_DIR.glob(base.split(".")[0] + "*"):
            path.unlink(missing_ok=True)
    _FRESH.clear()


def test_gpupromote_cold_compile_per_kernel(benchmark):
    gp.multiply(*_ARGS)   # Numba's one-time start-up (and the helpers' load) is not a kernel's compile time
    benchmark.group = "cold compile, one kernel"
    benchmark.extra_info["impl"] = "gpupromote"
    try:
        benchmark.pedantic(_compile_fresh, rounds=5, warmup_rounds=1)
    finally:
        _remove_fresh_caches()


def _evict():
    """Forget the kernel and its module in this process, so the next use executes the module again
    and loads its machine code from disk, as a new process does."""
    key = cpu_numba.kernel_key(_PLAN)
    kernel = _numba_kernels._kernels.pop(key, None)
    if kernel is not None:
        sys.modules.pop(kernel.module.__name__, None)
        _kernel_modules._modules.pop(kernel.module.__name__, None)


def _load_warm():
    native = cpu_numba.kernel_for(_PLAN).native()
    assert native.cache_hits == 1


def test_gpupromote_warm_load_per_kernel(benchmark):
    """Import the kernel's module again and let Numba load the native entry point from its disk
    cache (what a second process does), after Numba's own start-up."""
    cpu_numba.kernel_for(_PLAN).native()
    _evict()
    _load_warm()
    benchmark.group = "warm load from the disk cache, one kernel"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(_load_warm, setup=_evict, rounds=10, warmup_rounds=1)


_CHILD = textwrap.dedent("""
    import time, numpy as np, gpupromote as gp
    from gpupromote.dispatch.api import plan_for
    from gpupromote.engines.cpu import engine as cpu_numba
    gp.add(np.ones(4, np.float64), np.ones(4, np.float64))     # Numba's start-up
    operands = [[np.ones(4, a), np.ones(4, b)] for a, b in ((np.int16, np.float32), (np.float16, np.float32),
                                                            (np.int8, np.int32))]
    calls = [(getattr(gp, op), args) for op in ("multiply", "subtract") for args in operands]
    t = time.perf_counter()
    for fn, args in calls:    # what a first call in a new process costs: resolve, load, run
        fn(*args)
    print((time.perf_counter() - t) / len(calls))
""")


def test_gpupromote_warm_load_in_a_new_process(benchmark):
    subprocess.run([sys.executable, "-c", _CHILD], check=True, capture_output=True)  # fills the cache
    benchmark.group = "warm load from the disk cache, new process (per kernel)"
    benchmark.extra_info["impl"] = "gpupromote"
    per_kernel = []

    def run():
        out = subprocess.run([sys.executable, "-c", _CHILD], check=True, capture_output=True, text=True)
        per_kernel.append(float(out.stdout.split()[-1]))
    benchmark.pedantic(run, rounds=3)
    benchmark.extra_info["per_kernel_s"] = sorted(per_kernel)[len(per_kernel) // 2]
