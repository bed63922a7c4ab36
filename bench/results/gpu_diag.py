"""Why the compiled dispatcher declines calls on CuPy arrays: each step of the entry, checked in
Python as fastpath/device.c checks it. Run on a GPU: PYTHONPATH=. python3 bench/results/gpu_diag.py"""
import time
import traceback

import cupy as cp
import numpy as np

import gpupromote as gp
from gpupromote.dispatch import opfunctions as O
from gpupromote.engines import get_backend


def step(name, fn):
    try:
        r = fn()
        print(f"{name}: {r!r}"[:600])
        return r
    except Exception:
        print(f"{name}: RAISED\n{traceback.format_exc()}")
        return None


a = cp.asarray(np.arange(999, dtype=np.float16))
b = cp.asarray(np.ones(999, np.float32))
step("fastpath", lambda: O._fastpath)
step("first call", lambda: gp.add(a, b, policy="torch").dtype)
step("second call", lambda: gp.add(a, b, policy="torch").dtype)
step("op_stats", lambda: O._fastpath.op_stats())
step("types", lambda: (type(a), O._device_array_type, type(a) is O._device_array_type, O._device_module))
step("fast_plan", lambda: O._fast_plan("add", (a, b), "torch", type(a)))
be = get_backend("cuda")
plan = step("plan", lambda: O._fast_plan("add", (a, b), "torch", type(a))[0])
step("storage", lambda: [(be.storage_dtype(d), d.numpy) for d in (*plan.inputs, plan.result)])
step("launch address", lambda: __import__("gpupromote.engines.cuda.device", fromlist=["x"]).launch_kernel_address())
nl = step("native_launch", lambda: be.native_launch(plan))
step("make_entry", lambda: O._make_entry("add", (a, b), "torch", None))
step("a layout", lambda: (a.shape, a.strides, a.data.ptr, a.data.device_id, a.data.ptr % 16))
step("getDevice", lambda: cp.cuda.runtime.getDevice())
step("stream", lambda: cp.cuda.get_current_stream().ptr)
step("empty", lambda: (type(cp.empty((999,), np.dtype("float32"))), cp.empty((999,), np.dtype("float32")).data.ptr % 256))
for i in range(3):
    gp.add(a, b, policy="torch")
step("op_stats after", lambda: O._fastpath.op_stats())
for label, fn in [("gp.add", lambda: gp.add(a, b, policy="torch")),
                  ("python path", lambda: gp.add.__wrapped__(a, b, policy="torch")),
                  ("cupy.add", lambda: cp.add(a, b))]:
    for _ in range(200):
        fn()
    t = time.perf_counter()
    for _ in range(2000):
        fn()
    print(f"{label}: {(time.perf_counter() - t) / 2000 * 1e6:.2f} us/call")
step("op_stats end", lambda: O._fastpath.op_stats())

import cProfile  # noqa: E402
import pstats  # noqa: E402

pr = cProfile.Profile()
pr.enable()
for _ in range(2000):
    gp.add(a, b, policy="torch")
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
