"""The CPU engine against NumPy on the same data in the same run (pytest-benchmark).

One thread (Numba's kernels are serial loops; NUMBA_NUM_THREADS=1 is set anyway), N = 10**7.
Each group holds a gpupromote row and a NumPy row (``extra_info["impl"]``), so bench/report.py
and bench/run.py can print the speed ratio. Goals (issue 3): same dtype >= 0.95x NumPy,
int8+float32 and int32+Python float >= 1.5x, float16+float32 >= 5x, bfloat16+float32 >= 1.5x
(NumPy with ml_dtypes), a 1-element op's dispatch <= 1.5 us median, cold compile <= 100 ms per
kernel, warm load from the disk cache <= 5 ms.

    NUMBA_NUM_THREADS=1 python -m pytest bench/bench_cpu.py --benchmark-json=cpu.json
    python bench/report.py cpu.json
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import uuid  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpupromote as gp  # noqa: E402
from gpupromote.api import plan_for  # noqa: E402
from gpupromote.backends import cpu_numba  # noqa: E402

N = 10**7
_rng = np.random.default_rng(0)
_F32 = _rng.standard_normal(N).astype(np.float32)
_G32 = _rng.standard_normal(N).astype(np.float32)
_I8 = _rng.integers(-100, 100, N).astype(np.int8)
_I32 = _rng.integers(-10**6, 10**6, N).astype(np.int32)
_F16 = _F32.astype(np.float16)
_BF16 = _F32.astype(ml_dtypes.bfloat16)

# case -> (gpupromote call, NumPy call); both give the same dtype (checked below)
CASES = {
    "float32+float32 (same dtype)": (lambda: gp.add(_F32, _G32), lambda: np.add(_F32, _G32)),
    "int8+float32": (lambda: gp.add(_I8, _G32), lambda: np.add(_I8, _G32)),
    "int32+Python float": (lambda: gp.add(_I32, 1.5), lambda: np.add(_I32, 1.5)),
    "float16+float32": (lambda: gp.add(_F16, _G32), lambda: np.add(_F16, _G32)),
    "bfloat16+float32": (lambda: gp.add(_BF16, _G32), lambda: np.add(_BF16, _G32)),
}


@pytest.mark.parametrize("case", CASES)
def test_gpupromote(benchmark, case):
    ours, theirs = CASES[case]
    assert ours().dtype == theirs().dtype     # same result dtype; compiles / loads the kernel
    benchmark.group = f"N=1e7 {case}"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(ours, rounds=15, warmup_rounds=1)


@pytest.mark.parametrize("case", CASES)
def test_numpy(benchmark, case):
    benchmark.group = f"N=1e7 {case}"
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(CASES[case][1], rounds=15, warmup_rounds=1)


# --- dispatch: a 1-element op, everything but the arithmetic ------------------------------------
_ONE_A, _ONE_B = np.ones(1, np.float32), np.ones(1, np.float32)


def test_gpupromote_dispatch_1_element(benchmark):
    gp.add(_ONE_A, _ONE_B)
    benchmark.group = "dispatch: float32[1] + float32[1]"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark(gp.add, _ONE_A, _ONE_B)


def test_numpy_dispatch_1_element(benchmark):
    benchmark.group = "dispatch: float32[1] + float32[1]"
    benchmark.extra_info["impl"] = "numpy"
    benchmark(np.add, _ONE_A, _ONE_B)


_ONE_I8 = np.ones(1, np.int8)


def test_gpupromote_dispatch_python_int(benchmark):
    # a Python int's value can change the plan: the runner checks it against the plan's bounds
    gp.add(_ONE_I8, 3)
    benchmark.group = "dispatch: int8[1] + Python int"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark(gp.add, _ONE_I8, 3)


def test_numpy_dispatch_python_int(benchmark):
    benchmark.group = "dispatch: int8[1] + Python int"
    benchmark.extra_info["impl"] = "numpy"
    benchmark(np.add, _ONE_I8, 3)


# --- compile and load ---------------------------------------------------------------------------
_PLAN = plan_for("multiply", [np.ones(4, np.int16), np.ones(4, np.float32)], policy="numpy")
_ARGS = [np.ones(4, np.int16), np.ones(4, np.float32)]


_FRESH = []


def _compile_fresh():
    # A kernel no process has seen: the plan's source with a unique comment is a new module file,
    # so Numba compiles it (and writes it to the disk cache).
    module = cpu_numba._load_module(cpu_numba.source(_PLAN) + f"# bench {uuid.uuid4().hex}\n")
    module.flat(*_ARGS, np.empty(4, np.float32))
    _FRESH.append(module.flat)


def _remove_fresh_caches():
    """Numba's cache files of the throw-away kernels (its locator knows where they went)."""
    import shutil
    for fn in _FRESH:
        path = getattr(getattr(fn, "_cache", None), "cache_path", None)
        if path and "numba" in str(path):
            shutil.rmtree(path, ignore_errors=True)
    _FRESH.clear()


def test_gpupromote_cold_compile_per_kernel(benchmark, tmp_path, monkeypatch):
    gp.multiply(*_ARGS)   # Numba's one-time start-up is not a kernel's compile time
    monkeypatch.setattr(cpu_numba, "KERNEL_DIR", tmp_path)   # keep the throw-away kernels out of the cache
    benchmark.group = "cold compile, one kernel"
    benchmark.extra_info["impl"] = "gpupromote"
    try:
        benchmark.pedantic(_compile_fresh, rounds=5, warmup_rounds=1)
    finally:
        _remove_fresh_caches()


def _evict():
    key = cpu_numba.kernel_key(_PLAN)
    kernel = cpu_numba._kernels.pop(key, None)
    if kernel is not None:
        sys.modules.pop(kernel.module.__name__, None)


def _load_warm():
    cpu_numba.kernel_for(_PLAN)(_ARGS, np.empty(4, np.float32))


def test_gpupromote_warm_load_per_kernel(benchmark):
    """Import the kernel's module again and let Numba load the compiled code from its disk cache
    (what a second process does), after Numba's own start-up."""
    _load_warm()
    benchmark.group = "warm load from the disk cache, one kernel"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(_load_warm, setup=_evict, rounds=10, warmup_rounds=1)


_CHILD = textwrap.dedent("""
    import time, numpy as np, gpupromote as gp
    from gpupromote.api import plan_for
    from gpupromote.backends import cpu_numba
    gp.add(np.ones(4, np.float64), np.ones(4, np.float64))     # Numba's start-up
    plans = [plan_for(op, [np.ones(4, a), np.ones(4, b)]) for op in ("multiply", "subtract")
             for a, b in ((np.int16, np.float32), (np.float16, np.float32), (np.int8, np.int32))]
    t = time.perf_counter()
    for p in plans:
        cpu_numba.kernel_for(p)([np.ones(4, d.numpy) for d in p.inputs], np.empty(4, p.result.numpy))
    print((time.perf_counter() - t) / len(plans))
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
