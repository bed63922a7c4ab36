"""The reductions' launches from C (engines/cuda/rawlaunch.py, _fastpath.launch in
dispatch/fastpath/device.c) on the host tier: the same bits as the same kernels launched through
CuPy, one driver-level launch per kernel, and clear errors for a bad call."""
from __future__ import annotations

import numpy as np
import pytest

import gpupromote as gp
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cpu.reduce import storage_view
from gpupromote.engines.cuda import reduce as engine
from gpupromote.kernel.reduce import reduction_of
from tests import hostcuda
from tests.hostcuda import fake_cupy
from tests.hostcuda.support import HOSTCUDA_MARKS

pytestmark = HOSTCUDA_MARKS
fastpath = pytest.importorskip("gpupromote.dispatch._fastpath")

# (op, dtype, policy, rows, K, kernels launched): whole rows of one to several folds, a sequential
# combine, argmax, a scan
CASES = [("sum", "float32", "torch", 1, 600_000, 4), ("sum", "float32", "numpy", 1, 2_200_000, 5),
         ("sum", "float16", "numpy", 3, 5000, 3), ("max", "bfloat16", "jax", 2, 70_000, 3),
         ("all", "int8", "numpy", 4, 300, 2), ("argmax", "float32", "numpy", 3, 1000, 1),
         ("cumsum", "float64", "numpy", 2, 300, 1), ("prod", "complex64", "numpy", 2, 200, 3)]


@pytest.mark.parametrize("op, dtype, policy, M, K, kernels", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}x{c[4]}" for c in CASES])
def test_launches_from_c_give_cupys_bits(op, dtype, policy, M, K, kernels):
    red = reduction_of(plan_for(op, [gp.spec(dtype)], policy))
    rng = np.random.default_rng(K)
    host = (rng.standard_normal((M, K)) * 3).astype(red.params[0].dtype.numpy)
    view = storage_view(red.params[0].dtype)
    with hostcuda.installed() as cp:
        x = cp.asarray(host.view(view) if view is not None else host)
        store = storage_view(red.out)
        shape = (M, K) if red.scan else (M,)
        outs = []
        for fast in ((True, False) if kernels % 2 else (False, True)):   # either launcher first (one load)
            out = cp.zeros(shape, store or red.out.numpy)
            before = fake_cupy.driver_launches
            engine.run(red, [x], out, K, float(K), fast=fast)
            launched = fake_cupy.driver_launches - before
            assert launched == (kernels if fast else 0), f"fast={fast}: {launched} driver-level launches"
            outs.append((fast, out.get()))
    got, want = (np.ascontiguousarray(o).view(np.uint8) for _, o in sorted(outs, key=lambda fo: not fo[0]))
    assert np.array_equal(got, want), f"{op} {dtype}: from C {got[:12]} vs through CuPy {want[:12]}"


def test_a_bad_launch_says_what_is_wrong():
    with hostcuda.installed():
        from gpupromote.engines.cuda.device import launch_kernel_address
        address = launch_kernel_address()
        with pytest.raises(ValueError, match="2 values for a format of 3"):
            fastpath.launch(address, 1, 1, 128, 0, "qqd", 1, 2)
        with pytest.raises(ValueError, match="no parameter type 'x'"):
            fastpath.launch(address, 1, 1, 128, 0, "x", 1)
        with pytest.raises(ValueError, match="block 2000"):
            fastpath.launch(address, 1, 1, 2000, 0, "q", 1)
        with pytest.raises(TypeError):
            fastpath.launch(address, 1, 1, 128, 0, "q", "not a number")
        # CUDADriverError (a RuntimeError) once bind_device ran, else the CUresult (400: invalid handle)
        with pytest.raises(RuntimeError, match="INVALID_HANDLE|CUresult 400"):
            fastpath.launch(address, 12345, 1, 128, 0, "q", 1)


# dispatch/reduce.py's fast path for CuPy arrays (whole arrays and last axes, the defaults): the CPU
# engine's dtype, shape and bits, and the other device declined to the general path
FAST = [(op, dt) for op in ("sum", "prod", "mean", "max", "min", "any", "all", "var", "argmax")
        for dt in ("float32", "float16", "int8", "bool", "complex64", "bfloat16")
        if not (op in ("max", "min", "argmax") and dt == "complex64")]


@pytest.mark.parametrize("op, dtype", FAST, ids=[f"{o}-{d}" for o, d in FAST])
def test_the_device_fast_path_gives_the_cpu_results(op, dtype):
    from gpupromote.dispatch import reduce as dispatch_reduce
    from gpupromote.dispatch.operands import storage_of
    rng = np.random.default_rng(7)
    host = (rng.standard_normal((6, 333)) * 2).astype(gp.spec(dtype).dtype.numpy)
    with hostcuda.installed() as cp:
        x = gp.asarray(host, device="cuda") if dtype == "bfloat16" else cp.asarray(host)
        for policy in ("numpy", "jax", "torch")[:3 if dtype == "float32" else 2]:   # (JAX: int32 indices)
            for axis, keepdims in ((None, False), (None, True), (-1, False), (1, True))[::1 if dtype == "float32" else 2]:
                try:
                    want = getattr(gp, op)(host, axis=axis, keepdims=keepdims, policy=policy)
                except TypeError as exc:   # a policy refusing the dtype refuses it on the device too
                    with pytest.raises(TypeError, match=str(exc)[:30].replace("(", r"\(").replace(")", r"\)")):
                        getattr(gp, op)(x, axis=axis, keepdims=keepdims, policy=policy)
                    continue
                got = getattr(gp, op)(x, axis=axis, keepdims=keepdims, policy=policy)
                w = np.asarray(want.numpy() if isinstance(want, gp.Array) else want)
                g = np.asarray(got.numpy() if isinstance(got, gp.Array) else got.get())
                label = f"{op} {dtype} {policy} axis={axis} keepdims={keepdims}"
                assert g.shape == w.shape and g.dtype == w.dtype, f"{label}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
                assert np.array_equal(g.reshape(-1).view(np.uint8), w.reshape(-1).view(np.uint8)), f"{label}: {g} vs {w}"
        served = [k for k, r in dispatch_reduce._fast_device.items() if r is not None]
        if op in ("sum", "prod", "mean", "max", "min", "any", "all") and dtype != "bfloat16":
            assert served, f"{op} {dtype}: no call took the device fast path"
            with cp.cuda.Device(1):   # an array on device 0 while device 1 is current: the general path
                other = getattr(gp, op)(x, policy="numpy")
            assert storage_of(other).device.id == 0
