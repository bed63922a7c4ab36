// gp_hostcuda_shim.h -- what NVRTC and the GPU provide to a generated gpupromote kernel, for g++.
//
// tests/hostcuda/builder.py force-includes this header (-include) ahead of the exact source that
// _cuda_modules.load_module would hand to NVRTC, then appends one launch function per kernel. With it:
//
//   * the execution-space keywords (__global__, __device__, __forceinline__, __align__) and the
//     vector types (uint2, uint4, uint3, dim3) come from the CUDA toolkit's own host headers;
//   * __CUDACC__ and __CUDA_ARCH__ (sm_90) are defined *after* those headers, so that
//     kernels/*.cuh take their device code paths (the ones a GPU runs), while CUDA's and CuPy's
//     headers were compiled as host code;
//   * threadIdx / blockIdx / blockDim / gridDim are thread-local globals the launch function sets
//     before it calls the kernel once per (block, thread): one host thread plays every CUDA thread
//     in turn (thread-local: Python threads launching the same kernel at once, with the GIL
//     released by ctypes, each play their own launch; shared globals mixed their indices);
//   * the device intrinsics the headers call (bit casts, __clz, __ldg, the __*_rn operations) are
//     plain C++ with the same results;
//   * the three inline-PTX conversions of gpupromote_elementwise.cuh (cvt.f32.f16, cvt.rn.f16.f32,
//     cvt.rn.bf16.f32) reach gp_hostcuda_asm(): the builder rewrites each asm statement of the
//     headers into a call, and the conversion is cuda_fp16.h / cuda_bf16.h's host code, which
//     rounds to nearest even like the instructions.
//
// Not emulated: CUDA's libm (math calls resolve to the host's), NaN payloads made by GPU
// arithmetic, concurrency between threads (they run one after another).
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>

#include <cuda_fp16.h>  // host build: software float <-> half with round to nearest even
#include <cuda_bf16.h>
#include <vector_types.h>
#ifdef GP_HOSTCUDA_COMPLEX
#include <cupy/complex.cuh>  // CuPy's complex<T>, compiled as host code before __CUDA_ARCH__ is set
#endif

#define __CUDACC__ 1
#define __CUDA_ARCH__ 900

// ---- launch geometry: defined and set by the launch functions the builder appends ---------------
extern "C" {
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;
}

// ---- device intrinsics ---------------------------------------------------------------------------
static inline unsigned int __float_as_uint(float x) { unsigned int u; memcpy(&u, &x, sizeof u); return u; }
static inline float __uint_as_float(unsigned int u) { float x; memcpy(&x, &u, sizeof x); return x; }
static inline long long __double_as_longlong(double x) { long long u; memcpy(&u, &x, sizeof u); return u; }
static inline double __longlong_as_double(long long u) { double x; memcpy(&x, &u, sizeof x); return x; }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
// The builder compiles with -ffp-contract=off: a product is rounded on its own, as __fmul_rn.
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
// ... and the owned math library's primitives (each one correctly rounded IEEE operation, as on
// the device): the host's operators and exact builtins; floor / ceil / trunc / rint come from <math.h>
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline double __fma_rn(double a, double b, double c) { return __builtin_fma(a, b, c); }
static inline float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }
static inline double __dsqrt_rn(double x) { return __builtin_sqrt(x); }
// ld.global.nc is a typed load: -fsanitize=alignment checks it as the GPU's "misaligned address"
// fault would (a 16-byte uint4 load needs a 16-byte aligned address).
template <class T> static inline T __ldg(const T* p) { return *p; }

// ---- the inline PTX of gpupromote_elementwise.cuh ------------------------------------------------
static inline void gp_hostcuda_unknown_asm(const char* insn) {
  fprintf(stderr, "gp_hostcuda_shim.h: no host version of the PTX instruction \"%s\"\n", insn);
  abort();  // a header gained an instruction: add it here (the build tests catch this first)
}
static inline void gp_hostcuda_asm(const char* insn, float& out, unsigned short in) {
  if (strcmp(insn, "cvt.f32.f16 %0, %1;") != 0) gp_hostcuda_unknown_asm(insn);
  __half_raw raw;
  raw.x = in;
  out = __half2float(__half(raw));
}
static inline void gp_hostcuda_asm(const char* insn, unsigned short& out, float in) {
  if (strcmp(insn, "cvt.rn.f16.f32 %0, %1;") == 0) {
    out = __half_raw(__float2half_rn(in)).x;
  } else if (strcmp(insn, "cvt.rn.bf16.f32 %0, %1;") == 0) {
    out = __nv_bfloat16_raw(__float2bfloat16_rn(in)).x;
  } else {
    gp_hostcuda_unknown_asm(insn);
  }
}
