"""The float16 conversions of the CUDA kernels (kernels/gpupromote_elementwise.cuh): gp_st_f2,
gp_ld_f2 and the round trip gp_round_f2, the hardware conversions with a NaN's bits selected beside
them, give gp_store_f16's and gp_load_f16's bits (NumPy's, the integer reference of gpupromote_math.cuh) on every float16 and on
float32 samples of every kind: every NaN sign and top payload, the float16 rounding boundaries and
their neighbours, subnormals, overflow, a stride through all 2^32 patterns."""
from __future__ import annotations

import numpy as np

from gpupromote.engines.cuda import source as S
from gpupromote.engines.cuda import modules as cuda_modules
from tests import hostcuda
from tests.hostcuda.support import HOSTCUDA_MARKS

pytestmark = HOSTCUDA_MARKS

KERNEL = S.prologue([], False) + """
extern "C" __global__ void gp_test_f16_conversions(long long n, const unsigned int* __restrict__ x,
                                                   unsigned int* __restrict__ y) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
    const float f = __uint_as_float(x[i]);
    const unsigned short h = (unsigned short)(x[i] & 0xffffu);
    const unsigned short st = gp_st_f2(f), st_ref = gp_store_f16(f);
    const unsigned int ld = __float_as_uint(gp_ld_f2(h)), ld_ref = __float_as_uint(gp_load_f16(h));
    const unsigned int rt = __float_as_uint(gp_round_f2(f)), rt_ref = __float_as_uint(gp_load_f16(st_ref));
    y[i] = (st != st_ref ? 1u : 0u) | (ld != ld_ref ? 2u : 0u) | (rt != rt_ref ? 4u : 0u);
  }
}
"""


def _samples():
    rng = np.random.default_rng(16)
    nan = (rng.integers(0, 2**23, 2**20, dtype=np.uint32) | 0x7F800001) | (rng.integers(0, 2, 2**20, dtype=np.uint32) << 31)
    every_payload = (np.arange(2**10, dtype=np.uint32) << 13) | 0x7F800000          # payloads that keep or vanish
    every_payload = np.concatenate([every_payload | low for low in (np.uint32(0), np.uint32(1), np.uint32(0x1FFF))])
    f16 = np.arange(2**16, dtype=np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    near = (np.concatenate([f16.astype(np.int64) + d for d in (-2, -1, 1, 2, 0x1000, 0xFFF, 0x1001)])  # ties at 0x1000
            & 0xFFFFFFFF).astype(np.uint32)
    stride = np.arange(0, 2**32, 4093, dtype=np.uint64).astype(np.uint32)
    every_half = np.arange(2**16, dtype=np.uint32) | (rng.integers(0, 2**16, 2**16, dtype=np.uint32) << 16)
    return np.concatenate([nan, every_payload, every_payload | 0x80000000, f16, near, stride, every_half])


def test_the_branch_free_float16_conversions_give_the_reference_bits():
    x = _samples()
    with hostcuda.installed() as cp:
        module, _ = cuda_modules.load_module(KERNEL, False, 0)
        kernel = module.get_function("gp_test_f16_conversions")
        y = cp.zeros(x.size, np.uint32)
        kernel((1024,), (128,), (np.int64(x.size), cp.asarray(x), y))
        bad = y.get()
    stores, loads = np.nonzero(bad & 1)[0], np.nonzero(bad & 2)[0]
    assert not stores.size, f"{stores.size} gp_st_f2 differ from gp_store_f16, e.g. x = {[hex(v) for v in x[stores[:5]]]}"
    assert not loads.size, f"{loads.size} gp_ld_f2 differ from gp_load_f16, e.g. h = {[hex(v & 0xFFFF) for v in x[loads[:5]]]}"
    trips = np.nonzero(bad & 4)[0]
    assert not trips.size, f"{trips.size} gp_round_f2 differ from the reference's, e.g. x = {[hex(v) for v in x[trips[:5]]]}"
