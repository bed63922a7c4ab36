// Host build of kernels/gpupromote_math.cuh for tests/engines/test_nvrtc.py.
//
// Compiled with g++ as plain C++17 (no CUDA headers needed) into a shared library; every
// exported function applies one helper elementwise:
//   void gph_<op>_<code>(const void* a, const void* b, void* out, long long n)    binary helpers
//   void gph_<load|store>_<fmt>[_d](const void* in, void* out, long long n)      conversions
// Type codes follow numpy: b1 i1 u1 i2 u2 i4 u4 i8 u8 f4 f8 c8 c16, plus l8 (C++ `long`) and
// c1 (C++ `char`). Complex values are std::complex<T> (layout-compatible with numpy's).
#include <complex>

#include "gpupromote_math.cuh"

#define GPH_BINARY(OP, T, CODE)                                                        \
  extern "C" void gph_##OP##_##CODE(const void* a, const void* b, void* out, long long n) { \
    const T* x = static_cast<const T*>(a);                                             \
    const T* y = static_cast<const T*>(b);                                             \
    T* z = static_cast<T*>(out);                                                       \
    for (long long i = 0; i < n; ++i) z[i] = gp_##OP(x[i], y[i]);                       \
  }

#define GPH_INT_OPS(T, CODE)                \
  GPH_BINARY(floor_divide, T, CODE)         \
  GPH_BINARY(remainder, T, CODE)            \
  GPH_BINARY(fmod, T, CODE)                 \
  GPH_BINARY(power, T, CODE)                \
  GPH_BINARY(maximum, T, CODE)              \
  GPH_BINARY(minimum, T, CODE)              \
  GPH_BINARY(fmax, T, CODE)                 \
  GPH_BINARY(fmin, T, CODE)                 \
  GPH_BINARY(left_shift, T, CODE)           \
  GPH_BINARY(right_shift, T, CODE)          \
  GPH_BINARY(floor_divide_xla, T, CODE)     \
  GPH_BINARY(remainder_xla, T, CODE)

#define GPH_FLOAT_OPS(T, CODE)              \
  GPH_BINARY(floor_divide, T, CODE)         \
  GPH_BINARY(remainder, T, CODE)            \
  GPH_BINARY(fmod, T, CODE)                 \
  GPH_BINARY(maximum, T, CODE)              \
  GPH_BINARY(minimum, T, CODE)              \
  GPH_BINARY(fmax, T, CODE)                 \
  GPH_BINARY(fmin, T, CODE)                 \
  GPH_BINARY(copysign, T, CODE)             \
  GPH_BINARY(nextafter, T, CODE)            \
  GPH_BINARY(floor_divide_xla, T, CODE)     \
  GPH_BINARY(remainder_xla, T, CODE)

#define GPH_COMPLEX_OPS(T, CODE)            \
  GPH_BINARY(maximum, T, CODE)              \
  GPH_BINARY(minimum, T, CODE)              \
  GPH_BINARY(fmax, T, CODE)                 \
  GPH_BINARY(fmin, T, CODE)

GPH_BINARY(maximum, bool, b1)
GPH_BINARY(minimum, bool, b1)
GPH_BINARY(fmax, bool, b1)
GPH_BINARY(fmin, bool, b1)
GPH_INT_OPS(signed char, i1)
GPH_INT_OPS(char, c1)
GPH_INT_OPS(unsigned char, u1)
GPH_INT_OPS(short, i2)
GPH_INT_OPS(unsigned short, u2)
GPH_INT_OPS(int, i4)
GPH_INT_OPS(unsigned int, u4)
GPH_INT_OPS(long long, i8)
GPH_INT_OPS(long, l8)
GPH_INT_OPS(unsigned long long, u8)
GPH_FLOAT_OPS(float, f4)
GPH_FLOAT_OPS(double, f8)
GPH_COMPLEX_OPS(std::complex<float>, c8)
GPH_COMPLEX_OPS(std::complex<double>, c16)

#define GPH_UNARY(NAME, TIN, TOUT)                                              \
  extern "C" void gph_##NAME(const void* in, void* out, long long n) {          \
    const TIN* x = static_cast<const TIN*>(in);                                 \
    TOUT* z = static_cast<TOUT*>(out);                                          \
    for (long long i = 0; i < n; ++i) z[i] = gp_##NAME(x[i]);                    \
  }

#define GPH_CONVERSIONS(FMT, BITS)              \
  GPH_UNARY(load_##FMT, BITS, float)            \
  GPH_UNARY(load_##FMT##_d, BITS, double)       \
  GPH_UNARY(store_##FMT, float, BITS)           \
  GPH_UNARY(store_##FMT##_d, double, BITS)

GPH_CONVERSIONS(f16, unsigned short)
GPH_CONVERSIONS(bf16, unsigned short)
GPH_CONVERSIONS(e4m3, unsigned char)
GPH_CONVERSIONS(e5m2, unsigned char)
