"""The owned math functions and the fused activations against NumPy, numexpr and torch on the CPU,
same data, same run, one thread (pytest-benchmark).

Rows, N = 10**7:
  * ``unary <fn> N=1e7 <dtype>``: gp.exp, gp.log, gp.tanh, gp.sigmoid on float32, float16,
    bfloat16 and float64 (and gp.sin on float32 and float64), against np.<fn> (NumPy's float16
    loops compute in float32 and convert one element at a time; bfloat16 goes through ml_dtypes'
    ufunc loops) and torch.<fn> (one intra-op thread). NumPy has no sigmoid: its row is the eager
    1 / (1 + exp(-x)).
  * ``unary <fn> N=1e7 <dtype> out= (no allocation)``: exp, log and tanh on float32, tanh on
    float16, into a preallocated output, gp against NumPy: the kernels alone (the rows above count
    gpupromote's pooled output against NumPy's fresh allocation).
  * ``power x ** <y> N=1e7 <dtype>``: gp.power(x, y) for a Python float y (float32 0.5 and 3: exact
    operations; 2.5: exp(y log x) in double, rounded once, checked near ties; float64 2.5: the entry
    point's double-double core) against np.power and torch.pow. No goal.
  * ``gelu tanh N=1e7 <dtype>``: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) fused into one
    kernel, against the same expression in eager NumPy, numexpr (float32) and
    torch.nn.functional.gelu(approximate="tanh").
  * ``unary: cold compile`` / ``gelu: cold compile``: a new process with an empty kernel cache, the
    first call of gp.exp on a float32 array and of the fused GELU (the time of that call alone, Numba's
    own start-up paid before it by another kernel).

Goals (issue 23): float32 exp / log / tanh / sigmoid >= 0.5x NumPy (NumPy uses its AVX-512 SIMD
loops; gpupromote's functions are correctly rounded, NumPy's are not: the price is named in
kernel/math/README.md), float16 and bfloat16 >= 3x NumPy, fused GELU float32 >= 2x NumPy eager
and >= 1x numexpr, float16 >= 5x NumPy eager; cold compile of a unary kernel <= 100 ms, of the
fused GELU <= 150 ms.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
import warnings  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpupromote as gp  # noqa: E402
from _torch_cpu import as_torch, torch_one_thread  # noqa: E402  (bench/, on sys.path as the suite's folder)

N = 10**7
_rng = np.random.default_rng(3)
_BASE = (_rng.standard_normal(N) * 3).astype(np.float32)
DATA = {"float32": _BASE, "float16": _BASE.astype(np.float16), "bfloat16": _BASE.astype(ml_dtypes.bfloat16),
        "float64": _BASE.astype(np.float64)}
POSITIVE = {k: np.abs(v) + v.dtype.type(0.5) for k, v in DATA.items()}   # log's domain
FUNCTIONS = ["exp", "log", "tanh", "sigmoid"]
# (no goals for float64 and sin: the float64 paths and the trig reduction, see docs/cpu-engine.md "Fast twins")
CASES = [(fn, dt) for fn in FUNCTIONS for dt in DATA] + [("sin", "float32"), ("sin", "float64")]
# why three warm-up rounds: pytest-benchmark holds a round's result while the next round runs, so a
# row's gpupromote outputs come from the pool in turn (three buffers: the first call's, two more),
# and the first rounds paid the fresh buffers' page faults and then the write-back of their lines
# (a float16 tanh: 2.5, 2.4, 1.1, 0.96, then 0.82 ms); the rounds timed are the steady state a loop
# over `y = gp.tanh(x)` reaches. NumPy and torch rows take the same rounds.
_ROUNDS = dict(rounds=5, warmup_rounds=3)


def _input(fn, dtype):
    return (POSITIVE if fn == "log" else DATA)[dtype]


def _numpy_fn(fn):
    if fn == "sigmoid":
        return lambda x: 1 / (1 + np.exp(-x))
    return getattr(np, fn)


def _group(fn, dtype):
    return f"unary {fn} N=1e7 {dtype}"


def _gp_fn(fn, dtype):
    # NumPy's sigmoid is SciPy's expit, which has no float16 / bfloat16 loop (the numpy policy gives
    # float64): the narrow rows run under torch's rules, which keep the format, as the baseline does
    if fn == "sigmoid" and dtype != "float32":
        return lambda x: gp.sigmoid(x, policy="torch")
    return getattr(gp, fn)


@pytest.mark.parametrize("fn, dtype", CASES, ids=[f"{f}-{d}" for f, d in CASES])
def test_gpupromote_unary(benchmark, fn, dtype):
    x, f = _input(fn, dtype), _gp_fn(fn, dtype)
    with np.errstate(all="ignore"):
        got, want = f(x), _numpy_fn(fn)(x)
    assert got.dtype == want.dtype
    benchmark.group = _group(fn, dtype)
    benchmark.extra_info.update(impl="gpupromote", bytes=2 * x.nbytes)   # the input read, the result written
    # largest difference from NumPy's value (NumPy's float32 functions are not correctly rounded)
    benchmark.extra_info["max_abs_diff_vs_numpy"] = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    benchmark.pedantic(f, (x,), **_ROUNDS)


@pytest.mark.parametrize("fn, dtype", CASES, ids=[f"{f}-{d}" for f, d in CASES])
def test_numpy_unary(benchmark, fn, dtype):
    x, f = _input(fn, dtype), _numpy_fn(fn)
    benchmark.group = _group(fn, dtype)
    benchmark.extra_info.update(impl="numpy", bytes=2 * x.nbytes)
    with np.errstate(all="ignore"):
        benchmark.pedantic(f, (x,), **_ROUNDS)




# Kernel speed apart from the allocator: both write into a preallocated out=. The rows above
# allocate a 40 MB result per call; NumPy's comes from the OS each time (page faults, several ms on
# this VM), gpupromote's from its pool, which the plain rows count in gpupromote's favour.
OUT_CASES = [("exp", "float32"), ("log", "float32"), ("tanh", "float32"), ("tanh", "float16")]


def _out_group(fn, dtype):
    return f"unary {fn} N=1e7 {dtype} out= (no allocation)"


@pytest.mark.parametrize("impl, module", [("gpupromote", gp), ("numpy", np)], ids=["gpupromote", "numpy"])
@pytest.mark.parametrize("fn, dtype", OUT_CASES, ids=[f"{f}-{d}" for f, d in OUT_CASES])
def test_unary_out(benchmark, fn, dtype, impl, module):
    x = _input(fn, dtype)
    benchmark.group = _out_group(fn, dtype)
    benchmark.extra_info.update(impl=impl, bytes=2 * x.nbytes)
    benchmark.pedantic(getattr(module, fn), (x,), {"out": np.empty_like(x)}, **_ROUNDS)


@pytest.mark.parametrize("fn, dtype", CASES, ids=[f"{f}-{d}" for f, d in CASES])
def test_torch_unary(benchmark, fn, dtype):
    torch = torch_one_thread()
    x = _input(fn, dtype)
    t, f = as_torch(torch, x), getattr(torch, fn)
    benchmark.group = _group(fn, dtype)
    benchmark.extra_info.update(impl="torch", bytes=2 * x.nbytes)
    benchmark.pedantic(f, (t,), **_ROUNDS)


# --- power by a Python scalar ------------------------------------------------------------------
# x ** y, y a Python float: float32 0.5 and 3 take the first fast twin's exact operations, 2.5 the
# keyed second twin; float64 2.5 its second twin, the entry point's double-double core
# straight-line (kernel/math/twins.py); against NumPy's power loop and torch.pow. No goal.
POWERS = [("float32", 0.5), ("float32", 3.0), ("float32", 2.5), ("float64", 2.5)]
_POWER_IDS = [f"{dt}-{y}" for dt, y in POWERS]


def _power_group(dtype, y):
    return f"power x ** {y} N=1e7 {dtype}"


@pytest.mark.parametrize("dtype, y", POWERS, ids=_POWER_IDS)
def test_gpupromote_power(benchmark, dtype, y):
    x = POSITIVE[dtype]
    got, want = gp.power(x, y), np.power(x, x.dtype.type(y))
    assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-14)
    benchmark.group = _power_group(dtype, y)
    benchmark.extra_info.update(impl="gpupromote", bytes=2 * x.nbytes)
    benchmark.pedantic(gp.power, (x, y), **_ROUNDS)


@pytest.mark.parametrize("dtype, y", POWERS, ids=_POWER_IDS)
def test_numpy_power(benchmark, dtype, y):
    x = POSITIVE[dtype]
    benchmark.group = _power_group(dtype, y)
    benchmark.extra_info.update(impl="numpy", bytes=2 * x.nbytes)
    benchmark.pedantic(np.power, (x, x.dtype.type(y)), **_ROUNDS)


@pytest.mark.parametrize("dtype, y", POWERS, ids=_POWER_IDS)
def test_torch_power(benchmark, dtype, y):
    torch = torch_one_thread()
    t = as_torch(torch, POSITIVE[dtype])
    benchmark.group = _power_group(dtype, y)
    benchmark.extra_info.update(impl="torch", bytes=2 * POSITIVE[dtype].nbytes)
    benchmark.pedantic(torch.pow, (t, y), **_ROUNDS)


# --- fused GELU (tanh form) -------------------------------------------------------------------

_C = 0.7978845608028654   # sqrt(2 / pi)


def _gelu(x):
    return 0.5 * x * (1 + gp.tanh(_C * (x + 0.044715 * x * x * x)))


def _gelu_numpy(x):
    return 0.5 * x * (1 + np.tanh(_C * (x + 0.044715 * x * x * x)))


gelu = gp.fuse(_gelu)
GELU = ["float32", "float16"]


@pytest.mark.parametrize("dtype", GELU)
def test_gpupromote_gelu_fused(benchmark, dtype):
    x = DATA[dtype]
    fused = gelu(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = _gelu(x)
    assert fused.dtype == eager.dtype and np.array_equal(fused.view(np.uint8), eager.view(np.uint8))
    benchmark.group = f"gelu tanh N=1e7 {dtype}"
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.pedantic(gelu, (x,), **_ROUNDS)


@pytest.mark.parametrize("dtype", GELU)
def test_numpy_gelu_eager(benchmark, dtype):
    benchmark.group = f"gelu tanh N=1e7 {dtype}"
    benchmark.extra_info["impl"] = "numpy"
    benchmark.pedantic(_gelu_numpy, (DATA[dtype],), **_ROUNDS)


def test_numexpr_gelu(benchmark):
    numexpr = pytest.importorskip("numexpr")
    numexpr.set_num_threads(1)
    expr = "0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))"
    names = {"x": DATA["float32"]}
    benchmark.group = "gelu tanh N=1e7 float32"
    benchmark.extra_info["impl"] = "numexpr"
    benchmark.pedantic(lambda: numexpr.evaluate(expr, local_dict=names), **_ROUNDS)


@pytest.mark.parametrize("dtype", GELU)
def test_torch_gelu(benchmark, dtype):
    torch = torch_one_thread()
    t = as_torch(torch, DATA[dtype])
    benchmark.group = f"gelu tanh N=1e7 {dtype}"
    benchmark.extra_info["impl"] = "torch"
    benchmark.pedantic(lambda: torch.nn.functional.gelu(t, approximate="tanh"), **_ROUNDS)


# --- cold compile, each in a fresh process with an empty cache ----------------------------------

_PROBE = textwrap.dedent("""
    import json, time
    import numpy as np
    import gpupromote as gp
    x = np.ones(8, np.float32)
    gp.add(x, x)                             # Numba's own start-up, paid once per process by any kernel
    c = 0.7978845608028654
    gelu = gp.fuse(lambda x: 0.5 * x * (1 + gp.tanh(c * (x + 0.044715 * x * x * x))))
    t = time.perf_counter()
    gp.exp(x)
    unary = time.perf_counter() - t
    t = time.perf_counter()
    gelu(x)
    print(json.dumps({"unary": unary, "gelu": time.perf_counter() - t}))
""")


@pytest.fixture(scope="module")
def compile_times():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, GPUPROMOTE_CACHE_DIR=cache, NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("what", ["unary", "gelu"])
def test_cold_compile(benchmark, compile_times, what):
    benchmark.group = (f"{what}: cold compile of " + ("gp.exp float32" if what == "unary" else "the fused GELU")
                       + " (new process, empty cache)")
    benchmark.extra_info["impl"] = "gpupromote"
    benchmark.extra_info["per_kernel_s"] = compile_times[what]
    benchmark.pedantic(lambda: None, rounds=1)
