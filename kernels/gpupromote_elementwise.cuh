// gpupromote_elementwise.cuh -- the pieces every generated elementwise kernel is made of.
//
// gpupromote/engines/cuda/source.py writes one small functor per Plan: it reads each array
// operand in its own storage type, converts it to the plan's compute type in registers, applies
// the op's expression (core/ops.py) and converts the value once to the result's storage type. This
// header holds what does not depend on the plan:
//
//   * storage structs for complex (gp_c32 / gp_c64 / gp_c128) and the narrow-float loads and
//     stores (gp_ld_XX / gp_st_XX, XX = the dtype's 2-char code);
//   * gp_cast<To>(v): the conversion between compute types, NumPy's rules (real -> complex with a
//     zero imaginary part, anything -> bool is "!= 0", a NaN is true);
//   * the few op variants the compute type needs beyond gpupromote_math.cuh (bool arithmetic,
//     NumPy's complex order, complex * and / without FMA contraction);
//   * gp_contig_loop<N>: the contiguous fast path, N elements per thread per step, loaded with
//     aligned vector loads (16 bytes of the narrowest operand), a grid-stride loop and a scalar
//     tail, 64-bit indices.
//
// Include order in a generated source: [<cupy/complex.cuh> + #define GP_HAVE_COMPLEX],
// "gpupromote_math.cuh", "gpupromote_elementwise.cuh". No other header: the float16 / bfloat16
// hardware conversions are one PTX instruction each (inline asm), which keeps NVRTC's cold
// compile short (cuda_fp16.h alone costs tens of milliseconds to parse).
//
// Bit-exactness: every conversion gives the bits NumPy / ml_dtypes `astype` gives, NaN payloads
// included (the hardware instructions canonicalize NaNs, so a NaN takes the integer path of
// gpupromote_math.cuh). Kernels are compiled without -ftz (float32 subnormals survive, as on the
// CPU) and with -fmad=false (no a*b+c contraction, as on the CPU).

#ifndef GPUPROMOTE_ELEMENTWISE_CUH
#define GPUPROMOTE_ELEMENTWISE_CUH

#ifndef GPUPROMOTE_MATH_CUH
#error "include gpupromote_math.cuh before gpupromote_elementwise.cuh"
#endif

#define GP_DEV __device__ __forceinline__

// ---- storage -----------------------------------------------------------------------------------

// complex32 (torch.chalf / Ascend): two float16 bit patterns, real first.
struct __align__(4) gp_c32 { unsigned short re, im; };
struct __align__(8) gp_c64 { float re, im; };
struct __align__(16) gp_c128 { double re, im; };

// ---- narrow float loads: storage bits -> float, exact --------------------------------------------

GP_DEV float gp_hw_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// cvt.f32.f16 is exact for every non-NaN half; NumPy also keeps a NaN's payload bits, which the
// instruction does not promise, so a NaN's bits are made apart (gp_load_f16's: sign, all-ones
// exponent, the 10 payload bits on top) and selected: no branch between the conversions of a
// fused chain (a float16 GELU had 366 branches in its SASS, 2026-11-27).
GP_DEV float gp_ld_f2(unsigned short h) {
  const unsigned int nan = ((unsigned int)(h & 0x8000u) << 16) | 0x7f800000u | ((unsigned int)(h & 0x3ffu) << 13);
  const float f = gp_hw_f16_to_f32(h);
  return ((h & 0x7fffu) > 0x7c00u) ? __uint_as_float(nan) : f;
}
GP_DEV float gp_ld_bf(unsigned short h) { return gp_load_bf16(h); }  // a shift: exact, payload kept
GP_DEV float gp_ld_e4(unsigned char h) { return gp_load_e4m3(h); }
GP_DEV float gp_ld_e5(unsigned char h) { return gp_load_e5m2(h); }
GP_DEV bool gp_ld_b1(unsigned char b) { return b != 0; }  // never load a C++ bool from memory

// ---- narrow float stores: float / double -> storage bits, round to nearest even ---------------------

GP_DEV bool gp_isnan_f(float x) { return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u; }

GP_DEV unsigned short gp_st_f2(float x) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));  // no .ftz: results that are float16 subnormals survive
  // NaN: NumPy keeps the payload's top 10 bits (one that would vanish becomes 1), as gp_store_f16
  const unsigned int u = __float_as_uint(x), payload = (u >> 13) & 0x3ffu;
  const unsigned short nan = (unsigned short)(((u >> 16) & 0x8000u) | 0x7c00u | (payload ? payload : 1u));
  return gp_isnan_f(x) ? nan : h;
}
GP_DEV unsigned short gp_st_f2(double x) { return gp_store_f16_d(x); }  // one rounding, as NumPy

// gp_ld_f2(gp_st_f2(x)): a float rounded to float16 and back, as the steps of a fused float16 chain
// round (for a NaN: its sign, exponent and top 10 payload bits, a vanishing payload made 1).
GP_DEV float gp_round_f2(float x) {
  unsigned short h;
  float f;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  const unsigned int top = __float_as_uint(x) & 0xffffe000u;
  const unsigned int nan = (top & 0x007fe000u) ? top : (top | 0x2000u);
  return gp_isnan_f(x) ? __uint_as_float(nan) : f;
}

GP_DEV unsigned short gp_st_bf(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return gp_isnan_f(x) ? gp_store_bf16(x) : h;  // NaN: ml_dtypes' quiet NaN with the input's sign
#else
  return gp_store_bf16(x);  // cvt.rn.bf16.f32 needs sm_80
#endif
}
GP_DEV unsigned short gp_st_bf(double x) { return gp_store_bf16_d(x); }  // via float32, as ml_dtypes

// float8: the integer helpers (ml_dtypes' overflow and NaN rules differ from the saturating and
// non-saturating hardware conversions in corner cases; float8 kernels are not bandwidth-critical
// enough to justify two code paths).
GP_DEV unsigned char gp_st_e4(float x) { return gp_store_e4m3(x); }
GP_DEV unsigned char gp_st_e4(double x) { return gp_store_e4m3_d(x); }
GP_DEV unsigned char gp_st_e5(float x) { return gp_store_e5m2(x); }
GP_DEV unsigned char gp_st_e5(double x) { return gp_store_e5m2_d(x); }
GP_DEV unsigned char gp_st_b1(bool b) { return b ? 1 : 0; }

// ---- conversions between compute types (NumPy's casting semantics) ---------------------------------

template <class To, class From> struct gp_caster {
  static GP_DEV To cast(const From& v) { return static_cast<To>(v); }
};
// why: spelled out so that NaN is true whatever comparison the compiler picks
template <> struct gp_caster<bool, float> {
  static GP_DEV bool cast(const float& v) { return !(v == 0.0f); }
};
template <> struct gp_caster<bool, double> {
  static GP_DEV bool cast(const double& v) { return !(v == 0.0); }
};

// float -> integer as NumPy gives it on x86-64 (engines/cpu/casts.py says why each rule): C++
// leaves NaN and out-of-range values undefined and CUDA saturates them, so the rule is written out.
// x86's truncating conversions give INT_MIN of their width ("integer indefinite") for those values.
GP_DEV int gp_cvtt32(double v) { return (v > -2147483649.0 && v < 2147483648.0) ? (int)v : (int)0x80000000u; }
GP_DEV long long gp_cvtt64(double v) {
  return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (long long)v : (long long)0x8000000000000000ull;
}
GP_DEV unsigned long long gp_cvtt_u64(double v) {
  return v >= 9223372036854775808.0 ? (unsigned long long)gp_cvtt64(v - 9223372036854775808.0) ^ 0x8000000000000000ull
                                    : (unsigned long long)gp_cvtt64(v);
}
#define GP_FLOAT_TO_INT(T, HOW)                                                                       \
  template <> struct gp_caster<T, float> { static GP_DEV T cast(const float& v) { return (T)HOW((double)v); } }; \
  template <> struct gp_caster<T, double> { static GP_DEV T cast(const double& v) { return (T)HOW(v); } };
GP_FLOAT_TO_INT(signed char, gp_cvtt32)
GP_FLOAT_TO_INT(unsigned char, gp_cvtt32)
GP_FLOAT_TO_INT(short, gp_cvtt32)
GP_FLOAT_TO_INT(unsigned short, gp_cvtt32)
GP_FLOAT_TO_INT(int, gp_cvtt32)
GP_FLOAT_TO_INT(unsigned int, gp_cvtt64)
GP_FLOAT_TO_INT(long long, gp_cvtt64)
GP_FLOAT_TO_INT(unsigned long long, gp_cvtt_u64)
#undef GP_FLOAT_TO_INT

// a float8 value (its float32 carrier) -> integer as ml_dtypes gives it: NaN is 0, +-inf the
// target's extremes, a finite value its integer part wrapped
template <class T> GP_DEV T gp_f8toi(float v) {
  if (v != v) return T(0);
  if (v > 3.0e38f) return (T)(T(0) < T(-1) ? ~0ull : ~0ull >> (65 - 8 * sizeof(T)));
  if (v < -3.0e38f) return (T)(T(0) < T(-1) ? 0ull : 1ull << (8 * sizeof(T) - 1));
  return (T)(long long)v;
}

#ifdef GP_HAVE_COMPLEX
template <class T, class From> struct gp_caster<complex<T>, From> {  // real -> complex
  static GP_DEV complex<T> cast(const From& v) { return complex<T>(static_cast<T>(v), T(0)); }
};
template <class T, class U> struct gp_caster<complex<T>, complex<U> > {
  static GP_DEV complex<T> cast(const complex<U>& v) {
    return complex<T>(static_cast<T>(v.real()), static_cast<T>(v.imag()));
  }
};
template <class U> struct gp_caster<bool, complex<U> > {
  static GP_DEV bool cast(const complex<U>& v) { return !(v.real() == U(0)) || !(v.imag() == U(0)); }
};
template <class To, class U> struct gp_caster<To, complex<U> > {  // NumPy drops the imaginary part
  static GP_DEV To cast(const complex<U>& v) { return gp_caster<To, U>::cast(v.real()); }
};

GP_DEV complex<float> gp_ld_c4(gp_c32 z) { return complex<float>(gp_ld_f2(z.re), gp_ld_f2(z.im)); }
GP_DEV complex<float> gp_ld_c8(gp_c64 z) { return complex<float>(z.re, z.im); }
GP_DEV complex<double> gp_ld_c16(gp_c128 z) { return complex<double>(z.re, z.im); }
GP_DEV gp_c32 gp_st_c4(complex<float> z) {
  gp_c32 r;
  r.re = gp_st_f2(z.real());
  r.im = gp_st_f2(z.imag());
  return r;
}
GP_DEV gp_c64 gp_st_c8(complex<float> z) {
  gp_c64 r;
  r.re = z.real();
  r.im = z.imag();
  return r;
}
GP_DEV gp_c128 gp_st_c16(complex<double> z) {
  gp_c128 r;
  r.re = z.real();
  r.im = z.imag();
  return r;
}
#endif

template <class To, class From> GP_DEV To gp_cast(const From& v) { return gp_caster<To, From>::cast(v); }
template <class T> GP_DEV bool gp_truth(const T& v) { return gp_caster<bool, T>::cast(v); }

// ---- the expressions' small helpers (core/ops.py names them; engines/cpu/elementwise.py twins them) ----

template <class T> GP_DEV T gp_select(bool c, const T& a, const T& b) { return c ? a : b; }
GP_DEV bool gp_not(bool x) { return !x; }

// + - * and unary - on integers wrap modulo 2^bits, as NumPy's loops do. Written in an unsigned type
// of at least 32 bits: signed overflow is undefined in C++, and unsigned short * unsigned short
// promotes to (signed) int, where 65535 * 65535 overflows.
template <class T> GP_DEV T gp_wrap_add(T a, T b) {
  typedef typename gp_detail::int_traits<T>::wtype W;
  return (T)(W(a) + W(b));
}
template <class T> GP_DEV T gp_wrap_sub(T a, T b) {
  typedef typename gp_detail::int_traits<T>::wtype W;
  return (T)(W(a) - W(b));
}
template <class T> GP_DEV T gp_wrap_mul(T a, T b) {
  typedef typename gp_detail::int_traits<T>::wtype W;
  return (T)(W(a) * W(b));
}
template <class T> GP_DEV T gp_wrap_neg(T a) {
  typedef typename gp_detail::int_traits<T>::wtype W;
  return (T)(W(0) - W(a));
}

// ---- flush-to-zero (a plan flag: XLA runs with FTZ / DAZ) ------------------------------------------
// A subnormal becomes a zero of its sign, on the bits (the result does not depend on -ftz).
GP_DEV float gp_ftz(float x) {
  const unsigned int u = __float_as_uint(x);
  return ((u & 0x7f800000u) == 0u) ? __uint_as_float(u & 0x80000000u) : x;
}
GP_DEV double gp_ftz(double x) {
  const unsigned long long u = (unsigned long long)__double_as_longlong(x);
  return ((u & 0x7ff0000000000000ull) == 0ull) ? __longlong_as_double((long long)(u & 0x8000000000000000ull)) : x;
}
#ifdef GP_HAVE_COMPLEX
template <class T> GP_DEV complex<T> gp_ftz(const complex<T>& z) { return complex<T>(gp_ftz(z.real()), gp_ftz(z.imag())); }
#endif

// ---- bool compute (PyTorch pow, JAX rem, Paddle's bool division keep bool) ---------------------------
// The integer rules of gpupromote_math.cuh on 0 / 1: x // 0 == 0, x % 0 == 0, x ** 0 == 1.
// True division is float division read back as a truth value: 0/0 (nan) and 1/0 (inf) are true.

GP_DEV bool gp_floor_divide(bool a, bool b) { return a && b; }
GP_DEV bool gp_floor_divide_xla(bool a, bool b) { return a && b; }
GP_DEV bool gp_remainder(bool, bool) { return false; }
GP_DEV bool gp_remainder_xla(bool, bool) { return false; }
GP_DEV bool gp_fmod(bool, bool) { return false; }
GP_DEV bool gp_power(bool a, bool b) { return a || !b; }
GP_DEV bool gp_bool_true_divide(bool a, bool b) { return a || !b; }

// ---- nextafter on a narrow result -----------------------------------------------------------------
// The step is one ulp of the narrow result type, not of the float32 compute type (NumPy's
// npy_half_nextafter, ml_dtypes' nextafter): step the narrow bit pattern of a toward b. a and b
// are the float32 values of the operands; the result is widened back (exact) and stored. A NaN
// operand gives the positive quiet NaN (npy_half_nextafter's NPY_HALF_NAN; ml_dtypes and JAX alike).
#define GP_NARROW_NEXTAFTER(CODE, BITS_T, SIGN)                                              \
  GP_DEV float gp_nextafter_##CODE(float a, float b) {                                     \
    if (gp_isnan_f(a) || gp_isnan_f(b)) return gp_detail::qnan_<float>();  /* canonical */ \
    if (a == b) return b;                                                                  \
    if (a == 0.0f) return gp_ld_##CODE((BITS_T)(1u | (b < 0.0f ? (SIGN) : 0u)));           \
    const long long bits = (long long)gp_st_##CODE(a);                                     \
    return gp_ld_##CODE((BITS_T)((a < b) == (a > 0.0f) ? bits + 1 : bits - 1));            \
  }
GP_NARROW_NEXTAFTER(f2, unsigned short, 0x8000u)
GP_NARROW_NEXTAFTER(bf, unsigned short, 0x8000u)
GP_NARROW_NEXTAFTER(e4, unsigned char, 0x80u)
GP_NARROW_NEXTAFTER(e5, unsigned char, 0x80u)
#undef GP_NARROW_NEXTAFTER

// ---- complex: NumPy's lexicographic order and its * and / ------------------------------------------

#ifdef GP_HAVE_COMPLEX
// NumPy's CLT / CLE / CGT / CGE: a NaN real part never orders; a NaN imaginary part orders only
// when the real parts are equal (and then compares false).
template <class T> GP_DEV bool gp_clt(const complex<T>& a, const complex<T>& b) {
  const T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return (ar < br && ai == ai && bi == bi) || (ar == br && ai < bi);
}
template <class T> GP_DEV bool gp_cle(const complex<T>& a, const complex<T>& b) {
  const T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return (ar < br && ai == ai && bi == bi) || (ar == br && ai <= bi);
}
template <class T> GP_DEV bool gp_cgt(const complex<T>& a, const complex<T>& b) {
  const T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return (ar > br && ai == ai && bi == bi) || (ar == br && ai > bi);
}
template <class T> GP_DEV bool gp_cge(const complex<T>& a, const complex<T>& b) {
  const T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return (ar > br && ai == ai && bi == bi) || (ar == br && ai >= bi);
}
// (ar*br - ai*bi, ar*bi + ai*br) with every product rounded (the CPU engine's formula), and
// Smith's division as NumPy's npy_cdiv: thrust's operator/ scales differently.
template <class T> GP_DEV complex<T> gp_cmul(const complex<T>& a, const complex<T>& b) {
  return gp_detail::cmul_<complex<T>, T>(a, b);
}
template <class T> GP_DEV complex<T> gp_cdiv(const complex<T>& a, const complex<T>& b) {
  return gp_detail::cdiv_<complex<T>, T>(a, b);
}
#endif

// ---- the contiguous fast path ------------------------------------------------------------------------

// N elements of T, aligned for one 16-byte access (or N * sizeof(T) bytes when that is less):
// a struct copy of it compiles to ld.global.nc.v4 / st.global.v4.
template <class T, int N> struct gp_vec_align {
  static const int value = (sizeof(T) * N >= 16) ? 16 : int(sizeof(T) * N);
};
template <class T, int N> struct alignas(gp_vec_align<T, N>::value) gp_vec { T v[N]; };

// Whole-vector loads and stores in the widest chunks the size allows (uint4 = 16 bytes). Copying
// the struct instead lets the compiler split it into one load per element, which it does once the
// element conversions put branches between them (the NaN path gp_ld_f2 had).
template <int BYTES> struct gp_chunk { typedef uint4 type; static const int size = 16; };
template <> struct gp_chunk<8> { typedef uint2 type; static const int size = 8; };
template <> struct gp_chunk<4> { typedef unsigned int type; static const int size = 4; };
template <> struct gp_chunk<2> { typedef unsigned short type; static const int size = 2; };
template <> struct gp_chunk<1> { typedef unsigned char type; static const int size = 1; };

template <class T, int N> GP_DEV gp_vec<T, N> gp_vload(const T* __restrict__ base, long long i) {
  typedef gp_chunk<gp_vec_align<T, N>::value> C;
  const int count = int(sizeof(T) * N) / C::size;
  const typename C::type* __restrict__ src = reinterpret_cast<const typename C::type*>(base + i * N);
  gp_vec<T, N> r;
  typename C::type* dst = reinterpret_cast<typename C::type*>(&r);
#pragma unroll
  for (int k = 0; k < count; ++k) dst[k] = __ldg(src + k);
  return r;
}
template <class T, int N> GP_DEV void gp_vstore(T* __restrict__ base, long long i, const gp_vec<T, N>& v) {
  typedef gp_chunk<gp_vec_align<T, N>::value> C;
  const int count = int(sizeof(T) * N) / C::size;
  typename C::type* __restrict__ dst = reinterpret_cast<typename C::type*>(base + i * N);
  const typename C::type* src = reinterpret_cast<const typename C::type*>(&v);
#pragma unroll
  for (int k = 0; k < count; ++k) dst[k] = src[k];
}

template <int N, class F, class Y, class... V>
GP_DEV void gp_vec_apply(const F& f, gp_vec<Y, N>& out, const V&... in) {
#pragma unroll
  for (int j = 0; j < N; ++j) out.v[j] = f(in.v[j]...);
}

// y[i] = f(x[i]...) for i < n. Every pointer must be aligned to gp_vec_align<its T, N> (the
// launcher checks and picks N = 1 otherwise). Indices are 64-bit: n may exceed 2^31.
template <int N, class F, class Y, class... X>
GP_DEV void gp_contig_loop(long long n, const F& f, Y* __restrict__ y, const X* __restrict__... x) {
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (N > 1) {
    const long long nvec = n / N;
    for (long long i = tid; i < nvec; i += stride) {
      gp_vec<Y, N> out;
      gp_vec_apply<N>(f, out, gp_vload<X, N>(x, i)...);
      gp_vstore<Y, N>(y, i, out);
    }
    for (long long i = nvec * N + tid; i < n; i += stride) y[i] = f(x[i]...);  // the scalar tail
  } else {
    for (long long i = tid; i < n; i += stride) y[i] = f(x[i]...);
  }
}

#endif  // GPUPROMOTE_ELEMENTWISE_CUH
