"""The CUDA engine against the CPU engine, on a GPU (marked ``gpu``; skipped without a device).

The sweep's cases, values and comparison live in tests/support/engine_cases.py, shared with the host tier
(tests/hostcuda/test_hostcuda_sweep.py, which runs the same generated sources with g++): for every policy
x op x dtype pair x operand kind the GPU result (CuPy arrays in) must have the CPU engine's dtype
(NumPy arrays in) and its values, bit for bit for exact ops (signed zeros included, any NaN
matches any NaN), within ULPS for transcendental ones. GP_GPU_SWEEP picks the tier (quick,
standard (default), full: see engine_cases); GP_GPU_OPS=exp,clip,astype,... keeps the cases of those ops.

The CPU references are computed first in GP_GPU_WORKERS spawned processes (default: the CPU
count - 1; the CPU engine compiles one Numba kernel per plan), then the GPU kernels are compiled
in translation units of many kernels, in parallel too. GP_GPU_REPORT=path.json writes counts,
timings, the largest ulp distance seen per op and the failures.

The layout, size, cache and error tests below have host twins in tests/test_hostcuda_*.py; this
file is what a real GPU adds: NVRTC's machine code, CUDA's libm, real CuPy.
"""
from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from tests.support import engine_cases
from tests.support.engine_cases import GROUPS, Sweep, compare, known_divergence, quiet_call, values


def _gpu_available():
    if os.environ.get("GP_SWEEP_WORKER") == "1":  # a CPU-reference worker: never touch CUDA
        return False, "worker"
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no cupy, no driver, ...
        return False, f"{type(exc).__name__}: {exc}"
    return n > 0, f"{n} CUDA device(s)"


GPU, _GPU_WHY = _gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPU, reason=f"needs a CUDA device and CuPy ({_GPU_WHY})")]

if GPU:
    import cupy as cp
else:
    cp = None


def to_device(x):
    return engine_cases.to_device(x, cp)


def to_host(r):
    return engine_cases.to_host(r, cp)


# ---------------------------------------------------------------------------------------------
# The sweep (cases, values and comparison: tests/support/engine_cases.py, shared with the host tier)

@pytest.fixture(scope="session")
def sweep():
    from gpupromote.engines.cuda import engine as cuda_cupy
    workers = int(os.environ.get("GP_GPU_WORKERS", max(1, (os.cpu_count() or 2) - 1)))
    ops = set(filter(None, os.environ.get("GP_GPU_OPS", "").split(",")))   # a subset of the ops, e.g. "clip,astype"
    s = Sweep(os.environ.get("GP_GPU_SWEEP", "standard"), workers,
              lambda items: cuda_cupy.precompile(items, workers=workers),
              select=(lambda c: c[1] in ops) if ops else None)
    yield s
    path = os.environ.get("GP_GPU_REPORT")
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(s.report(), f, indent=1)


@pytest.mark.parametrize("policy, op", GROUPS, ids=[f"{p}-{op}" for p, op in GROUPS])
def test_gpu_equals_cpu_engine(sweep, policy, op):
    failures = [f for f in (sweep.check(c, cp) for c in sweep.by_group.get((policy, op), ())) if f]
    sweep.failures += failures
    assert not failures, f"{len(failures)} case(s) differ:\n" + "\n".join(failures[:20])


def test_known_generator_divergences_still_differ(sweep):
    """The cases of KNOWN_GENERATOR_DIVERGENCES (tests/support/engine_cases.py) that this tier ran; the
    host tier checks each one strictly, here they must not hide an error of another kind."""
    for case in sweep.cases:
        d = known_divergence(case)
        if d is not None:
            msg = sweep.check(case, cp)
            assert msg is None or "raised" not in msg, msg


# ---------------------------------------------------------------------------------------------
# Layouts, sizes and paths

def _cpu_gpu(op, host_args, policy="numpy", dev_args=None):
    want = to_host(quiet_call(op, host_args, policy))
    got = to_host(quiet_call(op, dev_args or tuple(to_device(a) if isinstance(a, np.ndarray) else a
                                                     for a in host_args), policy))
    ok, _, msg = compare(got, want, op)
    assert ok, msg


def test_issue_examples():
    a_h = np.arange(1 << 20, dtype=np.float16)
    b_h = np.ones(1 << 20, np.float32)
    a, b = cp.asarray(a_h), cp.asarray(b_h)
    r = gp.add(a, b, policy="torch")
    assert isinstance(r, cp.ndarray) and r.dtype == np.float32
    _cpu_gpu("add", (a_h, b_h), "torch")
    h = cp.full(4, 1000, cp.float16)
    # opmath scalar: 1000 * 1e-8 in float32, then rounded once to float16 (a subnormal, 168 * 2**-24)
    want = np.float16(np.float32(1000) * np.float32(1e-8))
    assert float(gp.multiply(h, 1e-8, policy="torch")[0]) == float(want) == 168 * 2.0**-24
    assert float(gp.multiply(h, 1e-8, policy="numpy")[0]) == 0.0                            # rounded to f16 first
    r = gp.add(a, np.float32(2), policy="numpy")
    assert r.dtype == np.float32
    assert plan_for("add", [a, np.float32(2)], policy="numpy").folded == (False, True)
    assert plan_for("add", [a, cp.asarray(np.float32(2))], policy="numpy").folded == (False, False)
    x = gp.asarray(a) + gp.asarray(b)
    assert isinstance(x, gp.Array) and x.device == "cuda:0" and x.dtype == gp.float32


def _layouts():
    rng = np.random.default_rng(3)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    h = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    return {
        "broadcast-row": (h(64, 33), f(33)),
        "broadcast-col": (h(64, 1), f(1, 33)),
        "transposed": (h(33, 64).T, f(64, 33)),
        "negative-strides": (h(64, 33)[::-1, ::-2], f(64, 17)),
        "3d-mixed": (h(5, 1, 7), f(1, 6, 7)[:, :, ::-1]),
        "fortran": (np.asfortranarray(h(40, 30)), np.asfortranarray(f(40, 30))),
        "0d-device": (h(1000), np.asarray(np.float32(1.5))),
    }


@pytest.mark.parametrize("name", list(_layouts()))
def test_layouts_equal_cpu(name):
    a, b = _layouts()[name]
    _cpu_gpu("add", (a, b), "torch", (to_device(a), to_device(b)))
    _cpu_gpu("true_divide", (a, b), "numpy", (to_device(a), to_device(b)))


def test_misaligned_views_take_the_scalar_contiguous_kernel():
    from gpupromote.engines.cuda import launch as _cuda_launch
    a_h, b_h = values("float16", 4099, 1), values("float32", 4099, 2)
    a_big, b_big = cp.asarray(np.concatenate([a_h[:1], a_h])), cp.asarray(np.concatenate([b_h[:3], b_h]))
    a, b = a_big[1:], b_big[3:]  # 2 and 12 bytes past a 16-byte boundary
    assert a.data.ptr % 16 and b.data.ptr % 16
    _cpu_gpu("multiply", (a_h, b_h), "torch", (a, b))
    plan = plan_for("multiply", [a, b], policy="torch")
    launcher = _cuda_launch._launcher(plan)
    assert launcher.flat is not None  # the N = 1 contiguous kernel ran
    _cpu_gpu("multiply", (a_h, b_h), "torch", (cp.asarray(a_h), cp.asarray(b_h)))
    assert launcher.vec is not None   # and aligned arrays take the vectorized one


def test_strided_out_and_out_of_another_dtype():
    a_h, b_h = values("int8", 600, 1).reshape(20, 30), values("float32", 30, 2)
    want = to_host(quiet_call("add", (a_h, b_h), "numpy"))[1]
    out = cp.zeros((30, 20), cp.float32).T  # a transposed view
    gp.add(cp.asarray(a_h), cp.asarray(b_h), policy="numpy", out=out)
    assert compare(to_host(out), (gp.float32, want), "add")[0]
    out64 = cp.zeros((20, 30), cp.float64)
    gp.add(cp.asarray(a_h), cp.asarray(b_h), policy="numpy", out=out64)
    assert np.array_equal(out64.get(), want.astype(np.float64), equal_nan=True)


def test_large_grid_many_blocks():
    a_h, b_h = values("bfloat16", 3_000_001, 4), values("float32", 3_000_001, 5)
    _cpu_gpu("add", (a_h, b_h), "torch")
    _cpu_gpu("multiply", (a_h, 2.5), "torch")


def test_more_than_2_31_elements():
    """64-bit indexing: a cheap uint8 op on 2^31 + 4099 elements, contiguous and strided."""
    free, _ = cp.cuda.runtime.memGetInfo()
    n = 2**31 + 4099
    if free < 4 * n + 2**30:
        pytest.skip(f"needs {4 * n / 2**30:.1f} GiB free, {free / 2**30:.1f} GiB available")
    a = cp.ones(n, cp.uint8)
    a[-4099:] = cp.arange(4099, dtype=cp.int64).astype(cp.uint8)
    r = gp.add(a, np.uint8(2), policy="numpy")           # folded scalar, contiguous, vectorized
    tail = (np.arange(4099) % 256 + 2).astype(np.uint8)
    assert r.dtype == np.uint8 and np.array_equal(r[-4099:].get(), tail)
    assert int(r[:-4099].sum(dtype=cp.uint64)) == 3 * (n - 4099)
    del r
    r = gp.add(a, cp.asarray(np.uint8(2)), policy="numpy")  # 0-d device operand: strided, 64-bit
    assert np.array_equal(r[-4099:].get(), tail) and int(r[:-4099].sum(dtype=cp.uint64)) == 3 * (n - 4099)
    del r
    view = a[::-1]                                        # negative stride, 64-bit offsets
    r = gp.add(view, np.uint8(2), policy="numpy")
    assert np.array_equal(r[:4099].get(), tail[::-1]) and int(r[4099:].sum(dtype=cp.uint64)) == 3 * (n - 4099)


@pytest.mark.parametrize("policy, op, expect", [
    ("numpy", "floor_divide", [0, 0]),   # NumPy: x // 0 == 0 (with a RuntimeWarning)
    ("numpy", "remainder", [0, 0]),
    ("jax", "floor_divide", [-2, -1]),   # XLA: x / 0 == -1, then the floor fix-up
    ("jax", "remainder", [0, 0]),
])
def test_integer_division_by_zero(policy, op, expect):
    a, b = cp.asarray(np.array([7, 0], np.int32)), cp.zeros(2, cp.int32)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert getattr(gp, op)(a, b, policy=policy).get().tolist() == expect


def test_integer_division_by_zero_raises_under_torch():
    with pytest.raises(ZeroDivisionError):
        gp.floor_divide(cp.arange(3, dtype=cp.int64), cp.zeros(3, cp.int64), policy="torch")


def test_int_min_floor_divide_minus_one_never_traps():
    a = cp.asarray(np.array([-2**31, 7], np.int32))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert gp.floor_divide(a, cp.asarray(np.array([-1, -1], np.int32)), policy="numpy").get().tolist() == \
            [-2**31, -7]


def test_complex32_on_the_gpu():
    """complex32 has no CPU engine: check against complex64 math rounded per part to float16."""
    x = values("complex64", 257, 1)
    y = values("complex64", 257, 2)

    def c32(z):
        bits = (z.real.astype(np.float16).view(np.uint16).astype(np.uint32)
                | (z.imag.astype(np.float16).view(np.uint16).astype(np.uint32) << 16))
        return gp.Array(cp.asarray(bits), gp.complex32, "cuda:0")

    def back(arr):
        bits = arr._storage.get()
        re = (bits & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)
        im = (bits >> 16).astype(np.uint16).view(np.float16).astype(np.float32)
        return re + 1j * im

    xr = x.real.astype(np.float16).astype(np.float32) + 1j * x.imag.astype(np.float16).astype(np.float32)
    yr = y.real.astype(np.float16).astype(np.float32) + 1j * y.imag.astype(np.float16).astype(np.float32)
    r = gp.add(c32(x), c32(y), policy="torch")
    assert r.dtype == gp.complex32
    want = (xr.astype(np.complex64) + yr.astype(np.complex64))
    want = want.real.astype(np.float16).astype(np.float32) + 1j * want.imag.astype(np.float16).astype(np.float32)
    assert np.array_equal(back(r), want, equal_nan=True)


# ---------------------------------------------------------------------------------------------
# Caches

def test_memory_and_disk_cache(tmp_path, monkeypatch):
    from gpupromote.engines.cuda import modules as _cuda_modules
    from gpupromote.engines.cuda import source as S
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    plan = plan_for("subtract", [cp.ones(2, cp.int16), cp.ones(2, cp.float16)], policy="torch")
    src = S.kernel_source(plan, ("contig", S.vector_width(plan)))
    dev = cp.cuda.runtime.getDevice()
    t = time.perf_counter()
    _, how = _cuda_modules.load_module(src, False, dev)
    cold = time.perf_counter() - t
    assert how == "compiled" and os.listdir(os.path.join(str(tmp_path), "gpupromote"))
    t = time.perf_counter()
    _, how = _cuda_modules.load_module(src, False, dev)
    warm = time.perf_counter() - t
    assert how == "disk" and warm < cold
    a, b = cp.arange(100, dtype=cp.int16), cp.ones(100, cp.float16)
    r1 = gp.subtract(a, b, policy="torch")
    n_kernels = len(_cuda_modules._kernels)
    r2 = gp.subtract(a, b, policy="torch")
    assert len(_cuda_modules._kernels) == n_kernels and cp.array_equal(r1, r2)


def test_compiled_dispatcher_launches_from_c():
    """Calls on contiguous CuPy arrays take the compiled dispatcher's CUDA entries (one
    cuLaunchKernel from C, gpupromote/dispatch/fastpath/device.c) and give the Python launcher's result, bit for
    bit, on the current stream."""
    from gpupromote.dispatch import opfunctions
    if opfunctions._fastpath is None:
        pytest.skip("the C extension was not built, or GPUPROMOTE_PURE_PYTHON is set")
    stats = opfunctions._fastpath.op_stats
    a, b = cp.asarray(values("float16", 999, 1)), cp.asarray(values("float32", 999, 2))
    i8 = cp.asarray(values("int8", 999, 3))
    cases = [(gp.add, (a, b), "torch"), (gp.add, (a, 2.5), "torch"), (gp.multiply, (i8, 3), "numpy"),
             (gp.subtract, (b, 1 + 2j), "numpy"), (gp.maximum, (i8, b), "jax")]
    for fn, args, policy in cases:
        want = fn.__wrapped__(*args, policy=policy)
        fn(*args, policy=policy)   # the miss makes the entry
        served = stats()["served"]
        got = fn(*args, policy=policy)
        assert stats()["served"] == served + 1, f"{fn.__name__}{[getattr(x, 'dtype', x) for x in args]} declined"
        assert got.dtype == want.dtype and cp.array_equal(got, want, equal_nan=True)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        got = gp.add(a, b, policy="torch")
        stream.synchronize()
    assert cp.array_equal(got, gp.add.__wrapped__(a, b, policy="torch"), equal_nan=True)
