"""gp.fuse against eager NumPy and numexpr on the same data in the same run (pytest-benchmark).

One thread (NUMBA_NUM_THREADS=1, numexpr.set_num_threads(1)), N = 10**7, the chain
``a*b + c*d - e``: five inputs, four ops. NumPy eager runs it as four ufunc calls with three
temporaries; gp.fuse as one Numba loop that reads five arrays and writes one. Goals (issue 9):
float32 fused >= 2x NumPy eager and >= 1.0x numexpr; float16 inputs >= 5x NumPy eager (NumPy's
float16 loops convert in software, one element at a time).

Note: numexpr has no float16 (it refuses such inputs) and computes mixed int / float chains
in a wider type than eager's intermediates; on this float32 chain its result is compared with
eager's and the difference is reported in ``extra_info`` (max_abs_diff_vs_eager,
elements_differing_from_eager).

Compile rows: a new 5-step chain in a fresh process with an empty kernel cache (cold: trace,
generate, Numba compile, first call) and again in a fresh process with that cache warm (warm:
trace, generate, load from Numba's disk cache). Goals: cold <= 150 ms, warm <= 5 ms.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpupromote as gp  # noqa: E402

N = 10**7
_rng = np.random.default_rng(1)
F32 = [_rng.standard_normal(N).astype(np.float32) for _ in range(5)]
F16 = [x.astype(np.float16) for x in F32]


@gp.fuse
def chain(a, b, c, d, e):
    return a * b + c * d - e


def _numpy(a, b, c, d, e):
    return a * b + c * d - e


CASES = {"float32": F32, "float16": F16}


@pytest.mark.parametrize("dtype", CASES)
def test_gpupromote_fused(benchmark, dtype):
    xs = CASES[dtype]
    got, want = chain(*xs), _numpy(*xs)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))  # bit for bit
    benchmark.group = f"fuse a*b+c*d-e N=1e7 {dtype}"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(chain, xs, rounds=10, warmup_rounds=1)


@pytest.mark.parametrize("dtype", CASES)
def test_numpy_eager(benchmark, dtype):
    benchmark.group = f"fuse a*b+c*d-e N=1e7 {dtype}"
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_numpy, CASES[dtype], rounds=10, warmup_rounds=1)


_OUT_GROUP = "fuse into preallocated out (no allocation either side) a*b+c*d-e N=1e7 float32"


def test_gpupromote_fused_into_out(benchmark):
    """Kernel speed apart from the allocator: the output (and NumPy's temporaries) preallocated."""
    out = np.empty(N, np.float32)
    chain(*F32, out=out)
    benchmark.group = _OUT_GROUP
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(lambda: chain(*F32, out=out), rounds=10, warmup_rounds=1)


def test_numpy_eager_into_out(benchmark):
    a, b, c, d, e = F32
    t, out = np.empty(N, np.float32), np.empty(N, np.float32)

    def run():
        np.multiply(a, b, out=out)
        np.multiply(c, d, out=t)
        np.add(out, t, out=out)
        return np.subtract(out, e, out=out)
    benchmark.group = _OUT_GROUP
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(run, rounds=10, warmup_rounds=1)


def test_numexpr(benchmark):
    numexpr = pytest.importorskip("numexpr")
    numexpr.set_num_threads(1)
    names = dict(zip("abcde", F32))
    expr = "a*b + c*d - e"
    got, want = numexpr.evaluate(expr, local_dict=names), _numpy(*F32)
    assert got.dtype == want.dtype
    benchmark.group = "fuse a*b+c*d-e N=1e7 float32"
    benchmark.extra_info["impl"] = "numexpr"
    benchmark.extra_info["max_abs_diff_vs_eager"] = float(np.max(np.abs(got.astype(np.float64) - want)))
    benchmark.extra_info["elements_differing_from_eager"] = int(np.count_nonzero(got != want))
    benchmark.pedantic(lambda: numexpr.evaluate(expr, local_dict=names), rounds=10, warmup_rounds=1)


# --- compile: cold and warm, each in a fresh process -------------------------------------------

_PROBE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import gpupromote as gp
    xs = [np.ones(8, np.float32) for _ in range(5)]
    gp.add(xs[0], xs[1])                     # Numba's own start-up, paid once per process by any kernel
    f = gp.fuse(lambda a, b, c, d, e: (a * b + c * d - e) * 0.5)
    t = time.perf_counter()
    f(*xs)
    print(json.dumps({"seconds": time.perf_counter() - t}))
""")


def _probe(cache_dir):
    env = dict(os.environ, GPUPROMOTE_CACHE_DIR=cache_dir, NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"))
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


@pytest.fixture(scope="module")
def compile_times():
    with tempfile.TemporaryDirectory() as cache:
        cold = _probe(cache)
        warm = min(_probe(cache) for _ in range(3))
    return cold, warm


def test_fused_cold_compile(benchmark, compile_times):
    benchmark.group = "fuse: cold compile of a 5-step chain (new process, empty cache)"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.extra_info["per_kernel_s"] = compile_times[0]
    benchmark.pedantic(lambda: None, rounds=1)


def test_fused_warm_load(benchmark, compile_times):
    benchmark.group = "fuse: warm load of a 5-step chain (new process, disk cache)"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.extra_info["per_kernel_s"] = compile_times[1]
    benchmark.pedantic(lambda: None, rounds=1)
