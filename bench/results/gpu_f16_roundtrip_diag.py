"""What the float16 rounding between the steps of a fused chain costs on a GPU: the fused GELU
(tanh form) on 10^7 float16 as generated (each step rounded to float16 by gp_round_f2, a NaN's
payload bits kept as NumPy keeps them) against the same kernel with each round trip two
hardware conversions and no NaN test. A diagnosis for the float16 rows of bench_gpu.py (fused GELU
float16 at 8% of copy bandwidth, 2026-11-26/27); the variant is not the product (its NaN payloads
differ). Run on a GPU: PYTHONPATH=. python3 bench/results/gpu_f16_roundtrip_diag.py"""
import numpy as np
import cupy as cp
from cupyx.profiler import benchmark

import gpupromote as gp
from gpupromote.engines.cuda import launch as L, source as S
from gpupromote.engines.cuda.modules import load_module

_FAST_ROUNDTRIP = """
GP_DEV float gp_rt_fast(float x) {
  unsigned short h; float f;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
"""


def gelu(x):
    return 0.5 * x * (1 + gp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def main():
    n = 10**7
    x = cp.asarray(np.random.default_rng(5).standard_normal(n).astype(np.float16))
    fused = gp.fuse(gelu, policy="torch")
    want = fused(x)
    kernel = fused.kernel(x, policy="torch")
    width = S.vector_width(kernel)
    variant = ("contig", width)
    name = S.kernel_name(kernel, variant)
    source = S.kernel_source(kernel, variant)
    fast_source = source.replace("gp_round_f2(", "gp_rt_fast(")
    i = fast_source.index("struct ")
    fast_source = fast_source[:i] + _FAST_ROUNDTRIP + fast_source[i:]
    print("round trips replaced:", source.count("gp_round_f2("))
    scalars = [np.float32(v) for v in (0.5, 0.044715, 0.7978845608028654, 1.0)][:len(S.scalar_parameters(kernel))]
    grid = min(-(-(-(-n // width)) // L._BLOCK), L._max_blocks(0))
    outs = {}
    for label, src in (("as generated", source), ("hardware round trips", fast_source)):
        module, _ = load_module(src, False, 0)
        k = module.get_function(name)
        y = cp.empty(n, np.uint16)
        args = (np.int64(n), *scalars, y, x.view(np.uint16))
        k((grid,), (L._BLOCK,), args)
        r = benchmark(lambda: k((grid,), (L._BLOCK,), args), (), n_repeat=50, n_warmup=5)
        t = float(np.median(r.gpu_times[0])) * 1e3
        print(f"{label:<22} {t:.4f} ms  {4 * n / t / 1e6:.0f} GB/s")
        outs[label] = y
    same = bool(cp.all(outs["as generated"] == outs["hardware round trips"]))
    print("same bits (no NaN in the data):", same, "; gp.fuse result equal to the generated kernel's:",
          bool(cp.all(want.view(np.uint16) == outs["as generated"])))
    copy = benchmark(lambda: cp.copyto(cp.empty_like(x), x), (), n_repeat=50, n_warmup=5)
    print(f"copy of 10^7 float16: {float(np.median(copy.gpu_times[0])) * 1e3:.4f} ms")
    # every float16 bit pattern through the fused GELU and float32 -> float16 stores of NaN payloads:
    # the GPU against the CPU engine (a NaN that went through arithmetic is the GPU's canonical one)
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    host = np.asarray(gp.fuse(gelu, policy="torch")(every)).view(np.uint16)
    dev = fused(cp.asarray(every)).get().view(np.uint16)
    nan = np.isnan(every)
    print("fused GELU, all 65,536 float16 inputs: non-NaN inputs differing", int(np.sum((host != dev) & ~nan)),
          "; NaN inputs whose NaN bits differ", int(np.sum((host != dev) & nan)), "of", int(nan.sum()))
    payloads = (np.arange(2**12, dtype=np.uint32) << 11 | 0x7F800001).view(np.float32)
    host_cast = np.asarray(gp.astype(payloads, "float16")).view(np.uint16)
    dev_cast = gp.astype(cp.asarray(payloads), "float16").get().view(np.uint16)
    print("astype float32 NaN payloads -> float16, bits differing:", int(np.sum(host_cast != dev_cast)), "of", payloads.size)


if __name__ == "__main__":
    main()
