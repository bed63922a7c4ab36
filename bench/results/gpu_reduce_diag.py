"""Where a GPU reduction's time goes: host time against device time per call (cupyx.profiler.
benchmark's cpu_times / gpu_times), for the gp call, the engine's launches alone, and each kernel
of a whole-array float32 sum. Run on a GPU: PYTHONPATH=. python3 bench/results/gpu_reduce_diag.py"""
import numpy as np
import cupy as cp
from cupyx.profiler import benchmark

import gpupromote as gp
try:
    import torch
except ImportError:
    torch = None
from gpupromote.dispatch.api import plan_for
from gpupromote.engines.cuda import reduce as engine
from gpupromote.kernel.reduce import LANES, LEAF, reduction_of


def show(label, fn, *args, n=50):
    r = benchmark(fn, args, n_repeat=n, n_warmup=5)
    print(f"{label:<44} host {np.median(r.cpu_times) * 1e6:9.1f} us   device {np.median(r.gpu_times[0]) * 1e6:9.1f} us")


rng = cp.random.default_rng(3)
x = rng.standard_normal(10**7, dtype=cp.float32)
y = rng.standard_normal(10**7, dtype=cp.float32)
h = x.astype(cp.float16)
m = rng.standard_normal((4096, 1024), dtype=cp.float32)
print(f"{'call':<44} {'median of 50':>20}")
show("gp.sum f32 1e7 (torch)", lambda a: gp.sum(a, policy="torch"), x)
show("gp.sum f32 1e3 (torch)", lambda a: gp.sum(a, policy="torch"), x[:1000])
show("cupy.sum f32 1e3", cp.sum, x[:1000])
show("torch.sum f32 1e7", lambda a: torch.sum(a), torch.from_dlpack(x)) if torch else None
show("cupy.sum f32 1e7", cp.sum, x)
show("gp.sum f16 1e7 (torch)", lambda a: gp.sum(a, policy="torch"), h)
red = reduction_of(plan_for("sum", [gp.spec("float32")], "torch"))
K = x.size
out = cp.empty(1, cp.float32)
x2 = x.reshape(1, K)
show("engine.run sum f32 1e7 (launches from C)", lambda: engine.run(red, [x2], out, K))
show("engine.run sum f32 1e7 (launches through CuPy)", lambda: engine.run(red, [x2], out, K, fast=False))
print("engine.run equals gp.sum:", float(out[0]) == float(cp.asarray(gp.sum(x, policy="torch"))))

# each kernel alone (the launches of engine.run, as tests/gpu/test_gpu_reduce.py makes them)
mod, name = engine._module(red, 0)
nl = -(-K // LEAF)
nc = engine.chunks(K)
lanes = cp.empty(nl * LANES, cp.float32)
part = cp.empty(nc, cp.float32)
ops = [x2, np.int64(x2.strides[0]), np.int64(x2.strides[1])]
g = engine._grid
B = engine.BLOCK
show(f"  _lanes ({nl * LANES} threads)", lambda: mod.get_function(f"{name}_lanes")(
    (g(nl * LANES),), (B,), (np.int64(1), np.int64(K), np.int64(0), lanes, *ops)))
show(f"  _leaves ({nc} threads)", lambda: mod.get_function(f"{name}_leaves")(
    (g(nc),), (B,), (np.int64(1), np.int64(K), np.int64(nc), part, lanes)))
levels = engine.fold_levels(nc)
n = nc
src = part
for n in levels:
    ng = -(-n // engine.FOLD)
    dst = cp.empty(ng, cp.float32)
    show(f"  _fold ({n} -> {ng})", lambda s=src, d=dst, n=n, ng=ng: mod.get_function(f"{name}_fold")(
        (g(ng),), (B,), (np.int64(1), np.int64(n), s, d)))
    src, n = dst, ng
show(f"  _merge ({n} nodes)", lambda: mod.get_function(f"{name}_merge")(
    (1,), (B,), (np.int64(1), np.int64(n), np.float64(K), src, out)))
show(f"  _merge unfolded ({nc} nodes, before _fold)", lambda: mod.get_function(f"{name}_merge")(
    (1,), (B,), (np.int64(1), np.int64(nc), np.float64(K), part, out)))

softmax = gp.fuse(lambda a: (lambda e: e / gp.sum(e, axis=-1, keepdims=True))(
    gp.exp(a - gp.max(a, axis=-1, keepdims=True))), policy="torch")
show("gp.fuse softmax 4096x1024 f32", softmax, m)
show("gp.max axis -1 4096x1024 f32", lambda a: gp.max(a, axis=-1, keepdims=True, policy="torch"), m)
show("gp.sum axis 0 4096x1024 f32", lambda a: gp.sum(a, axis=0, policy="torch"), m)
show("cupy softmax (eager) 4096x1024 f32", lambda a: (lambda e: e / e.sum(-1, keepdims=True))(
    cp.exp(a - a.max(-1, keepdims=True))), m)
