// gpupromote_math.cuh -- __host__ __device__ math helpers for gpupromote's elementwise kernels.
//
// Every helper takes two arguments of the same type T (the kernel has already converted both
// operands to the plan's compute dtype) and returns a T with NumPy 2's semantics for that type.
//
//   helper               integers (*)   bool   float/double   complex (**)
//   gp_floor_divide      yes            -      yes            -
//   gp_remainder         yes            -      yes            -
//   gp_fmod              yes            -      yes            -
//   gp_power             yes            -      -              -   (float, complex: owned math)
//   gp_maximum/minimum   yes            yes    yes            yes
//   gp_fmax/fmin         yes            yes    yes            yes
//   gp_left/right_shift  yes            -      -              -
//   gp_copysign, gp_nextafter                                     float/double only
//   (atan2, hypot, logaddexp and the float and complex powers are the owned math library's,
//   kernel/math, through the glue engines/cuda/math.py writes into each translation unit)
//   gp_floor_divide_xla, gp_remainder_xla                         integers + float/double
//
//   (*)  signed char, char, unsigned char, short, unsigned short, int, unsigned int, long,
//        unsigned long, long long, unsigned long long.
//   (**) any complex class with real()/imag() members and a (re, im) constructor, e.g.
//        CuPy's `complex<T>` (= thrust::complex<T> from cupy/complex.cuh), std::complex<T>.
//
// Narrow floats are kept as raw bits (uint16 / uint8 storage) and converted in registers:
//   float  gp_load_f16 (unsigned short)   double gp_load_f16_d (unsigned short)
//   unsigned short gp_store_f16(float)    unsigned short gp_store_f16_d(double)
//   ... and the same for bf16 (unsigned short), e4m3 (= float8_e4m3fn, unsigned char) and
//   e5m2 (= float8_e5m2, unsigned char).
// They are bit-exact with NumPy / ml_dtypes `astype` (round to nearest even, subnormals, inf,
// NaN sign and payload):
//   * float64 -> float16 rounds once, directly from double (NumPy does this);
//   * float64 -> bfloat16 / float8 rounds to float32 first, then to the narrow type
//     (ml_dtypes goes through float32, so it double-rounds; so do we);
//   * e4m3fn has no infinity: overflow and +-inf give NaN (0x7f | sign), as in ml_dtypes.
//
// Design notes
//   * No #include under NVRTC: the header compiles alone, after CuPy's headers
//     (cupy/complex.cuh, cupy/carray.cuh, ...) and next to cuda_fp16.h / cuda_bf16.h /
//     cuda_fp8.h. Public names all start with gp_, private ones live in namespace gp_detail.
//   * Conversions, copysign, nextafter and the float comparisons in maximum/minimum/fmax/fmin
//     are done on the integer bit patterns, so they give the same bits on the host and on the
//     device, even when a kernel is compiled with -ftz=true (CuPy always passes it). The other
//     float helpers use exact operations only (fmod, floor, IEEE arithmetic): no function of the
//     CUDA math library with an error bound is called.
//   * Integer helpers never trigger C++ undefined behaviour: division by zero, INT_MIN / -1,
//     over-wide or negative shift counts and power overflow are all handled explicitly (the
//     wrapping multiplications run in an unsigned type of at least 32 bits).
//   * Host builds (g++ / clang) need nothing but <math.h> (fmod, floor) and <string.h>; this is
//     how the test suite checks every helper against NumPy on a machine without a GPU.

#ifndef GPUPROMOTE_MATH_CUH
#define GPUPROMOTE_MATH_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__HIPCC__)
#define GP_HD __host__ __device__ __forceinline__
#else
#define GP_HD inline
#include <math.h>
#include <string.h>
#endif

namespace gp_detail {

typedef unsigned int u32;
typedef unsigned long long u64;

// ---- tiny type traits (NVRTC has no <type_traits> without extra include paths) ----------------

template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };

template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };

template <class T> struct remove_cvref { typedef T type; };
template <class T> struct remove_cvref<const T> { typedef T type; };
template <class T> struct remove_cvref<volatile T> { typedef T type; };
template <class T> struct remove_cvref<const volatile T> { typedef T type; };
template <class T> struct remove_cvref<T&> { typedef typename remove_cvref<T>::type type; };

template <class T> struct int_traits { static const bool is_int = false; };
#define GP_DEFINE_INT_TRAITS(T, U, SIGNED)                                 \
  template <> struct int_traits<T> {                                      \
    static const bool is_int = true;                                      \
    static const bool is_signed = SIGNED;                                 \
    static const int bits = int(sizeof(T) * 8);                           \
    typedef U utype;                                                      \
    /* wide unsigned type for wrapping products without int promotion */ \
    typedef conditional<(sizeof(T) > 4), u64, u32>::type wtype;           \
  };
GP_DEFINE_INT_TRAITS(signed char, unsigned char, true)
GP_DEFINE_INT_TRAITS(char, unsigned char, (char(-1) < char(0)))
GP_DEFINE_INT_TRAITS(unsigned char, unsigned char, false)
GP_DEFINE_INT_TRAITS(short, unsigned short, true)
GP_DEFINE_INT_TRAITS(unsigned short, unsigned short, false)
GP_DEFINE_INT_TRAITS(int, unsigned int, true)
GP_DEFINE_INT_TRAITS(unsigned int, unsigned int, false)
GP_DEFINE_INT_TRAITS(long, unsigned long, true)
GP_DEFINE_INT_TRAITS(unsigned long, unsigned long, false)
GP_DEFINE_INT_TRAITS(long long, unsigned long long, true)
GP_DEFINE_INT_TRAITS(unsigned long long, unsigned long long, false)
#undef GP_DEFINE_INT_TRAITS

template <class T> struct is_int_or_bool { static const bool value = int_traits<T>::is_int; };
template <> struct is_int_or_bool<bool> { static const bool value = true; };

template <class T> struct float_traits { static const bool is_float = false; };
template <> struct float_traits<float> {
  static const bool is_float = true;
  typedef u32 utype;
  typedef int stype;
  static const u32 sign_mask = 0x80000000u;
  static const u32 exp_mask = 0x7f800000u;
};
template <> struct float_traits<double> {
  static const bool is_float = true;
  typedef u64 utype;
  typedef long long stype;
  static const u64 sign_mask = 0x8000000000000000ull;
  static const u64 exp_mask = 0x7ff0000000000000ull;
};

// complex-like: has real() and imag() returning float or double
template <class C> GP_HD C& declval_();  // only used in unevaluated contexts
template <class X> struct voider { typedef void type; };
template <class C, class = void> struct complex_traits { static const bool is_complex = false; };
template <class C>
struct complex_traits<C, typename voider<decltype(declval_<const C&>().imag())>::type> {
  typedef typename remove_cvref<decltype(declval_<const C&>().imag())>::type value_type;
  static const bool is_complex = float_traits<value_type>::is_float;
};

// ---- bit casts -------------------------------------------------------------------------------

GP_HD u32 f2u(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  u32 u;
  memcpy(&u, &x, sizeof u);
  return u;
#endif
}
GP_HD float u2f(u32 u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
#endif
}
GP_HD u64 d2u(double x) {
#ifdef __CUDA_ARCH__
  return (u64)__double_as_longlong(x);
#else
  u64 u;
  memcpy(&u, &x, sizeof u);
  return u;
#endif
}
GP_HD double u2d(u64 u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double((long long)u);
#else
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
#endif
}
GP_HD u32 to_bits(float x) { return f2u(x); }
GP_HD u64 to_bits(double x) { return d2u(x); }
GP_HD float from_bits(u32 u, float) { return u2f(u); }
GP_HD double from_bits(u64 u, double) { return u2d(u); }

GP_HD int clz32(u32 x) {  // x != 0
#ifdef __CUDA_ARCH__
  return __clz((int)x);
#else
  return __builtin_clz(x);
#endif
}

// ---- float predicates and an ordering on the bits (immune to flush-to-zero) -----------------

template <class T> GP_HD bool isnan_(T x) {
  typedef float_traits<T> F;
  return (to_bits(x) & ~F::sign_mask) > F::exp_mask;
}
// Integer key with the IEEE order of non-NaN values (-0 and +0 get the same key).
template <class T> GP_HD typename float_traits<T>::stype key_(T x) {
  typedef float_traits<T> F;
  typedef typename F::stype S;
  typename F::utype u = to_bits(x);
  S mag = (S)(u & ~F::sign_mask);
  return (u & F::sign_mask) ? -mag : mag;
}
template <class T> GP_HD bool gt_(T a, T b) { return !isnan_(a) && !isnan_(b) && key_(a) > key_(b); }
template <class T> GP_HD bool lt_(T a, T b) { return !isnan_(a) && !isnan_(b) && key_(a) < key_(b); }
template <class T> GP_HD bool eq_(T a, T b) { return !isnan_(a) && !isnan_(b) && key_(a) == key_(b); }

// x with its quiet bit set (sign and payload kept): what an x86 operation returns for a NaN operand.
template <class T> GP_HD T quiet_(T x) {
  typedef float_traits<T> F;
  return from_bits(typename F::utype(to_bits(x) | ((F::exp_mask >> 1) & ~F::exp_mask)), T());
}
template <class T> GP_HD T qnan_() {
  typedef float_traits<T> F;
  return from_bits(typename F::utype(F::exp_mask | ((F::exp_mask >> 1) & ~F::exp_mask)), T());
}

template <class T> GP_HD T copysign_(T mag, T sgn) {
  typedef float_traits<T> F;
  return from_bits((to_bits(mag) & ~F::sign_mask) | (to_bits(sgn) & F::sign_mask), T());
}

// ---- libm wrappers picking the float / double entry points explicitly -----------------------

GP_HD float m_fmod(float a, float b) { return fmodf(a, b); }
GP_HD double m_fmod(double a, double b) { return fmod(a, b); }
GP_HD float m_floor(float a) { return floorf(a); }
GP_HD double m_floor(double a) { return floor(a); }
GP_HD float m_fabs(float a) { return fabsf(a); }
GP_HD double m_fabs(double a) { return fabs(a); }
GP_HD float m_trunc(float a) { return truncf(a); }                       // exact
GP_HD double m_trunc(double a) { return trunc(a); }
GP_HD float m_copysign(float a, float b) { return copysignf(a, b); }     // exact
GP_HD double m_copysign(double a, double b) { return copysign(a, b); }
// products that the device compiler must not contract into an FMA (NumPy does not)
GP_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GP_HD double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// ---- NumPy's npy_divmod (fmod-based floor division with Python's corrections) ---------------

template <class T> GP_HD T divmod_(T a, T b, T* modulus) {
  T mod = m_fmod(a, b);
  if (!b) {  // b == 0: NumPy returns a / b (inf or nan) and fmod's nan
    *modulus = mod;
    return a / b;
  }
  T div = (a - mod) / b;  // a - mod is very nearly an integer multiple of b
  if (mod) {
    if ((b < T(0)) != (mod < T(0))) {  // give the remainder the sign of the divisor
      mod += b;
      div -= T(1);
    }
  } else {
    mod = copysign_(T(0), b);
  }
  T floordiv;
  if (div) {  // snap the quotient to the nearest integral value
    floordiv = m_floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = copysign_(T(0), a / b);
  }
  *modulus = mod;
  return floordiv;
}

// ---- narrow float formats: integer-only conversions ------------------------------------------
//
// A format is (E exponent bits, M mantissa bits, FN): FN formats (float8_e4m3fn) have no
// infinity and a single NaN pattern (all ones) per sign.

enum { NAN_PAYLOAD = 0, NAN_PAYLOAD_QUIET = 1, NAN_CANONICAL = 2 };

// Round the bits of a binary (SE, SM) value to the narrower format (E, M, FN), nearest-even.
// NaN: NAN_PAYLOAD keeps the top M payload bits (NumPy's float16 casts; a payload that would
// vanish becomes 1), NAN_CANONICAL gives the quiet NaN with the input's sign (ml_dtypes).
template <int SE, int SM, int E, int M, bool FN, int NANP>
GP_HD u32 narrow_bits(u64 x) {
  const int sbias = (1 << (SE - 1)) - 1;
  const int bias = (1 << (E - 1)) - 1;
  const int emin = 1 - bias;
  const u32 sign = u32((x >> (SE + SM)) & 1u) << (E + M);
  const int ex = int((x >> SM) & ((1u << SE) - 1u));
  const u64 man = x & ((1ull << SM) - 1ull);
  const u32 inf_bits = ((1u << E) - 1u) << M;
  const u32 fn_nan = (1u << (E + M)) - 1u;
  if (ex == (1 << SE) - 1) {  // inf or nan
    if (FN) return sign | fn_nan;
    if (man == 0) return sign | inf_bits;
    if (NANP == NAN_CANONICAL) return sign | inf_bits | (1u << (M - 1));
    u32 payload = u32(man >> (SM - M));
    return sign | inf_bits | (payload ? payload : 1u);
  }
  // value = sig * 2^(e - SM)
  const u64 sig = ex ? (man | (1ull << SM)) : man;
  const int e = ex ? ex - sbias : 1 - sbias;
  if (sig == 0) return sign;
  const int shift = SM - M + (e < emin ? emin - e : 0);  // >= 1 as SM > M
  u64 q;
  if (shift > SM + 1) {
    q = 0;  // below half of the smallest subnormal
  } else {
    q = sig >> shift;
    const u64 rem = sig & ((1ull << shift) - 1ull);
    const u64 half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1ull))) ++q;
  }
  // subnormal results (q <= 2^M, q == 2^M is the smallest normal) are q itself; normal ones
  // are ((biased exponent - 1) << M) + q, which also absorbs a carry out of the mantissa.
  const u64 bits = (e < emin) ? q : ((u64(e - emin) << M) + q);
  if (FN) {
    if (bits >= fn_nan) return sign | fn_nan;
  } else if (bits >= inf_bits) {
    return sign | inf_bits;
  }
  return sign | u32(bits);
}

// Widen the bits of a narrow (E, M, FN) value to the wider format (TE, TM); exact.
// The target's exponent range must be strictly wider (every source subnormal is normal there).
template <int E, int M, bool FN, int TE, int TM, int NANP>
GP_HD u64 widen_bits(u32 h) {
  const int bias = (1 << (E - 1)) - 1;
  const int tbias = (1 << (TE - 1)) - 1;
  const u64 sign = u64((h >> (E + M)) & 1u) << (TE + TM);
  const u32 ex = (h >> M) & ((1u << E) - 1u);
  u32 man = h & ((1u << M) - 1u);
  const u64 tinf = u64((1u << TE) - 1u) << TM;
  const u64 tquiet = 1ull << (TM - 1);
  if (FN) {
    if ((h & ((1u << (E + M)) - 1u)) == ((1u << (E + M)) - 1u)) return sign | tinf | tquiet;
  } else if (ex == (1u << E) - 1u) {
    if (man == 0) return sign | tinf;
    if (NANP == NAN_CANONICAL) return sign | tinf | tquiet;
    return sign | tinf | (u64(man) << (TM - M)) | (NANP == NAN_PAYLOAD_QUIET ? tquiet : 0ull);
  }
  int e;
  if (ex == 0) {
    if (man == 0) return sign;
    const int lead = 31 - clz32(man);  // position of the leading one, < M
    man = (man << (M - lead)) & ((1u << M) - 1u);
    e = 1 - bias - (M - lead);
  } else {
    e = int(ex) - bias;
  }
  return sign | (u64(e + tbias) << TM) | (u64(man) << (TM - M));
}

}  // namespace gp_detail

// =============================================================================================
// Public helpers
// =============================================================================================

#define GP_IF_INT(T) typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, T>::type
#define GP_IF_INT_OR_BOOL(T) typename gp_detail::enable_if<gp_detail::is_int_or_bool<T>::value, T>::type
#define GP_IF_FLOAT(T) typename gp_detail::enable_if<gp_detail::float_traits<T>::is_float, T>::type
#define GP_IF_COMPLEX(C) typename gp_detail::enable_if<gp_detail::complex_traits<C>::is_complex, C>::type

// ---- floor_divide / remainder / fmod ---------------------------------------------------------

// Integers: b == 0 -> 0; MIN // -1 -> MIN (wraps); otherwise rounds toward -inf.
template <class T> GP_HD GP_IF_INT(T) gp_floor_divide(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  typedef typename I::utype U;
  if (b == T(0)) return T(0);
  if (I::is_signed && b == T(-1)) return T(U(U(0) - U(a)));  // wrapping negation
  T q = T(a / b);
  if (I::is_signed && T(a % b) != T(0) && ((a < T(0)) != (b < T(0)))) q = T(q - T(1));
  return q;
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_floor_divide(T a, T b) {
  if (!b) return a / b;  // NumPy: division by zero gives a / b (+-inf or nan)
  T mod;
  return gp_detail::divmod_(a, b, &mod);
}

// Integers: b == 0 -> 0; result has the sign of the divisor; MIN % -1 -> 0.
template <class T> GP_HD GP_IF_INT(T) gp_remainder(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  if (b == T(0)) return T(0);
  if (I::is_signed && b == T(-1)) return T(0);
  T r = T(a % b);
  if (I::is_signed && r != T(0) && ((r < T(0)) != (b < T(0)))) r = T(r + b);
  return r;
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_remainder(T a, T b) {
  if (!b) return gp_detail::m_fmod(a, b);  // nan
  T mod;
  gp_detail::divmod_(a, b, &mod);
  return mod;
}

// C's truncating remainder (sign of the dividend); integers: b == 0 -> 0, MIN fmod -1 -> 0.
template <class T> GP_HD GP_IF_INT(T) gp_fmod(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  if (b == T(0)) return T(0);
  if (I::is_signed && b == T(-1)) return T(0);
  return T(a % b);
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_fmod(T a, T b) { return gp_detail::m_fmod(a, b); }

// JAX / XLA flavour. XLA defines x / 0 == -1 for signed and all ones for unsigned integers,
// x % 0 == x, MIN / -1 == MIN and MIN % -1 == 0. jnp.floor_divide on signed integers is
//   q = lax.div(a, b); q - 1 where (sign(a) != sign(b)) & (lax.rem(a, b) != 0) else q
// so a // 0 is -1 for a == 0 and -2 otherwise; on unsigned integers it is lax.div (all ones).
// jnp.remainder replaces a zero integer divisor by 1 before lax.rem, so a % 0 == 0 (like NumPy).
// Floats follow NumPy.
template <class T> GP_HD GP_IF_INT(T) gp_floor_divide_xla(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  if (b == T(0)) {
    if (!I::is_signed) return T(~T(0));
    return a == T(0) ? T(-1) : T(-2);
  }
  return gp_floor_divide(a, b);
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_floor_divide_xla(T a, T b) { return gp_floor_divide(a, b); }
template <class T> GP_HD GP_IF_INT(T) gp_remainder_xla(T a, T b) { return gp_remainder(a, b); }
template <class T> GP_HD GP_IF_FLOAT(T) gp_remainder_xla(T a, T b) { return gp_remainder(a, b); }

// torch.remainder and jnp.remainder on floats: a zero remainder keeps fmod's sign (the dividend's)
template <class T> GP_HD GP_IF_FLOAT(T) gp_remainder_keepzero(T a, T b) {
  T mod = gp_detail::m_fmod(a, b);
  return (mod != T(0) && ((b < T(0)) != (mod < T(0)))) ? mod + b : mod;
}
// jnp.floor_divide on floats (engines/cpu/binary.py says how): -0.0 // 5 is +0.0
template <class T> GP_HD GP_IF_FLOAT(T) gp_floor_divide_jaxf(T a, T b) {
  T mod = gp_detail::m_fmod(a, b);
  T div = (b == T(0) ? a : a - mod) / b;
  T sign_b = b > T(0) ? T(1) : (b < T(0) ? T(-1) : b);
  T sign_m = mod > T(0) ? T(1) : (mod < T(0) ? T(-1) : mod);
  if (mod != T(0) && sign_b != sign_m) div = div - T(1);
  T r = gp_detail::m_trunc(div);
  return gp_detail::m_fabs(div - r) >= T(0.5) ? r + gp_detail::m_copysign(T(1), div) : r;
}

// ---- power -----------------------------------------------------------------------------------

// Integers: exponentiation by squaring, wrapping modulo 2^bits. A negative exponent (NumPy
// raises ValueError; a kernel cannot) gives 1 for base 1, +-1 for base -1 and 0 otherwise.
template <class T> GP_HD GP_IF_INT(T) gp_power(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  typedef typename I::utype U;
  typedef typename I::wtype W;
  if (I::is_signed && b < T(0)) {
    if (a == T(1)) return T(1);
    if (a == T(-1)) return (U(b) & 1u) ? T(-1) : T(1);
    return T(0);
  }
  W base = W(U(a)), result = 1;
  U e = U(b);
  while (e) {
    if (e & 1u) result *= base;
    base *= base;
    e = U(e >> 1);
  }
  return T(U(result));
}
// jnp.power on integer arrays: six rounds over the exponent's low 6 bits, wrapping (2 ** -1 is 2 ** 63)
template <class T> GP_HD GP_IF_INT(T) gp_power_xla(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  typedef typename I::utype U;
  typedef typename I::wtype W;
  W base = W(U(a)), result = 1;
  U e = U(U(b) & U(63));
  for (int k = 0; k < 6; k++) {
    if (e & 1u) result *= base;
    base *= base;
    e = U(e >> 1);
  }
  return T(U(result));
}
// Float and complex powers are the owned math library's (gp_powerf, gp_power_complex: the glue
// engines/cuda/math.py writes into each translation unit).

namespace gp_detail {
template <class C, class T> GP_HD C cmul_(const C& a, const C& b) {
  T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return C(mul_rn(ar, br) - mul_rn(ai, bi), mul_rn(ar, bi) + mul_rn(ai, br));
}
template <class C, class T> GP_HD C cdiv_(const C& a, const C& b) {  // Smith's algorithm, as NumPy
  T ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  T abs_br = m_fabs(br), abs_bi = m_fabs(bi);
  if (abs_br >= abs_bi) {
    if (abs_br == T(0) && abs_bi == T(0)) return C(ar / abs_br, ai / abs_bi);
    T rat = bi / br;
    T scl = T(1) / (br + mul_rn(bi, rat));
    return C(mul_rn(ar + mul_rn(ai, rat), scl), mul_rn(ai - mul_rn(ar, rat), scl));
  }
  T rat = br / bi;
  T scl = T(1) / (bi + mul_rn(br, rat));
  return C(mul_rn(mul_rn(ar, rat) + ai, scl), mul_rn(mul_rn(ai, rat) - ar, scl));
}

}  // namespace gp_detail

// ---- maximum / minimum / fmax / fmin ---------------------------------------------------------

// Integers and bool: plain comparisons.
template <class T> GP_HD GP_IF_INT_OR_BOOL(T) gp_maximum(T a, T b) { return a > b ? a : b; }
template <class T> GP_HD GP_IF_INT_OR_BOOL(T) gp_minimum(T a, T b) { return a < b ? a : b; }
template <class T> GP_HD GP_IF_INT_OR_BOOL(T) gp_fmax(T a, T b) { return a > b ? a : b; }
template <class T> GP_HD GP_IF_INT_OR_BOOL(T) gp_fmin(T a, T b) { return a < b ? a : b; }

// Floats: maximum/minimum propagate NaN (the first NaN operand is returned), fmax/fmin ignore
// a NaN operand. On ties (-0.0 vs +0.0) maximum/minimum return the second operand, which is what
// NumPy 2's loops return; fmax/fmin return the first, as C's fmax in NumPy's scalar loop (its SIMD
// lanes are not consistent), and the second when both are NaN: the CPU engine's twins alike.
template <class T> GP_HD GP_IF_FLOAT(T) gp_maximum(T a, T b) {
  return (gp_detail::isnan_(a) || gp_detail::gt_(a, b)) ? a : b;
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_minimum(T a, T b) {
  return (gp_detail::isnan_(a) || gp_detail::lt_(a, b)) ? a : b;
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_fmax(T a, T b) {
  return (gp_detail::isnan_(a) || gp_detail::gt_(b, a)) ? b : a;
}
template <class T> GP_HD GP_IF_FLOAT(T) gp_fmin(T a, T b) {
  return (gp_detail::isnan_(a) || gp_detail::lt_(b, a)) ? b : a;
}

// Complex: NumPy's lexicographic order (CGE / CLE); a value with a NaN part counts as NaN.
namespace gp_detail {
template <class T> GP_HD bool cge_(T xr, T xi, T yr, T yi) {
  return (gt_(xr, yr) && !isnan_(xi) && !isnan_(yi)) || (eq_(xr, yr) && (gt_(xi, yi) || eq_(xi, yi)));
}
template <class T> GP_HD bool cle_(T xr, T xi, T yr, T yi) {
  return (lt_(xr, yr) && !isnan_(xi) && !isnan_(yi)) || (eq_(xr, yr) && (lt_(xi, yi) || eq_(xi, yi)));
}
template <class C> GP_HD bool cnan_(const C& z) { return isnan_(z.real()) || isnan_(z.imag()); }
}  // namespace gp_detail

template <class C> GP_HD GP_IF_COMPLEX(C) gp_maximum(C a, C b) {
  return (gp_detail::cnan_(a) || gp_detail::cge_(a.real(), a.imag(), b.real(), b.imag())) ? a : b;
}
template <class C> GP_HD GP_IF_COMPLEX(C) gp_minimum(C a, C b) {
  return (gp_detail::cnan_(a) || gp_detail::cle_(a.real(), a.imag(), b.real(), b.imag())) ? a : b;
}
template <class C> GP_HD GP_IF_COMPLEX(C) gp_fmax(C a, C b) {
  return (gp_detail::cnan_(b) || gp_detail::cge_(a.real(), a.imag(), b.real(), b.imag())) ? a : b;
}
template <class C> GP_HD GP_IF_COMPLEX(C) gp_fmin(C a, C b) {
  return (gp_detail::cnan_(b) || gp_detail::cle_(a.real(), a.imag(), b.real(), b.imag())) ? a : b;
}

// ---- shifts (NumPy's npy_lshift / npy_rshift) ------------------------------------------------

// A count outside [0, bits) gives 0 (left), or 0 / -1 by the sign of a (right).
template <class T> GP_HD GP_IF_INT(T) gp_left_shift(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  typedef typename I::utype U;
  typedef typename I::wtype W;
  if (U(b) >= U(I::bits)) return T(0);  // negative counts are huge as unsigned
  return T(U(W(U(a)) << U(b)));
}
template <class T> GP_HD GP_IF_INT(T) gp_right_shift(T a, T b) {
  typedef gp_detail::int_traits<T> I;
  typedef typename I::utype U;
  if (U(b) >= U(I::bits)) return (I::is_signed && a < T(0)) ? T(-1) : T(0);
  return T(a >> U(b));  // arithmetic for signed types
}

// ---- float-only binary functions -------------------------------------------------------------

template <class T> GP_HD GP_IF_FLOAT(T) gp_copysign(T a, T b) { return gp_detail::copysign_(a, b); }


// C's nextafter, on the bits (subnormal steps survive -ftz=true).
template <class T> GP_HD GP_IF_FLOAT(T) gp_nextafter(T x, T y) {
  typedef gp_detail::float_traits<T> F;
  typedef typename F::utype U;
  // the NaN operand (y if both are), quieted, sign kept: glibc's x + y as NumPy runs it
  if (gp_detail::isnan_(y)) return gp_detail::quiet_(y);
  if (gp_detail::isnan_(x)) return gp_detail::quiet_(x);
  const U ux = gp_detail::to_bits(x), uy = gp_detail::to_bits(y);
  const U ax = ux & ~F::sign_mask, ay = uy & ~F::sign_mask;
  if (ux == uy || (ax == 0 && ay == 0)) return y;
  if (ax == 0) return gp_detail::from_bits(U((uy & F::sign_mask) | 1u), T());
  const bool toward_larger_magnitude = (gp_detail::key_(x) < gp_detail::key_(y)) == !(ux & F::sign_mask);
  return gp_detail::from_bits(U(toward_larger_magnitude ? ux + 1u : ux - 1u), T());
}

// ---- narrow float loads and stores -----------------------------------------------------------

// float16 (NumPy): NaN payloads are kept both ways (no quieting), like npy_half casts.
GP_HD float gp_load_f16(unsigned short h) {
  using namespace gp_detail;
  return u2f(u32(widen_bits<5, 10, false, 8, 23, NAN_PAYLOAD>(h)));
}
GP_HD double gp_load_f16_d(unsigned short h) {
  using namespace gp_detail;
  return u2d(widen_bits<5, 10, false, 11, 52, NAN_PAYLOAD>(h));
}
GP_HD unsigned short gp_store_f16(float x) {
  using namespace gp_detail;
  return (unsigned short)narrow_bits<8, 23, 5, 10, false, NAN_PAYLOAD>(f2u(x));
}
GP_HD unsigned short gp_store_f16_d(double x) {  // one rounding, straight from double
  using namespace gp_detail;
  return (unsigned short)narrow_bits<11, 52, 5, 10, false, NAN_PAYLOAD>(d2u(x));
}

namespace gp_detail {
// double -> float bits, round to nearest even (NaN payload kept); used by the double-input
// stores of the ml_dtypes types, which round through float32.
GP_HD u32 f64_to_f32_bits(double x) { return narrow_bits<11, 52, 8, 23, false, NAN_PAYLOAD>(d2u(x)); }
}  // namespace gp_detail

// bfloat16 (ml_dtypes): a load is a shift (payload kept); a store gives the canonical quiet NaN
// with the input's sign; loads to double quiet the NaN like the float -> double conversion.
GP_HD float gp_load_bf16(unsigned short h) { return gp_detail::u2f(gp_detail::u32(h) << 16); }
GP_HD double gp_load_bf16_d(unsigned short h) {
  using namespace gp_detail;
  return u2d(widen_bits<8, 7, false, 11, 52, NAN_PAYLOAD_QUIET>(h));
}
GP_HD unsigned short gp_store_bf16(float x) {
  using namespace gp_detail;
  return (unsigned short)narrow_bits<8, 23, 8, 7, false, NAN_CANONICAL>(f2u(x));
}
GP_HD unsigned short gp_store_bf16_d(double x) {
  using namespace gp_detail;
  return (unsigned short)narrow_bits<8, 23, 8, 7, false, NAN_CANONICAL>(f64_to_f32_bits(x));
}

// float8_e4m3fn (ml_dtypes / CUDA __NV_E4M3): no inf; NaN is 0x7f | sign; overflow -> NaN.
GP_HD float gp_load_e4m3(unsigned char h) {
  using namespace gp_detail;
  return u2f(u32(widen_bits<4, 3, true, 8, 23, NAN_CANONICAL>(h)));
}
GP_HD double gp_load_e4m3_d(unsigned char h) {
  using namespace gp_detail;
  return u2d(widen_bits<4, 3, true, 11, 52, NAN_CANONICAL>(h));
}
GP_HD unsigned char gp_store_e4m3(float x) {
  using namespace gp_detail;
  return (unsigned char)narrow_bits<8, 23, 4, 3, true, NAN_CANONICAL>(f2u(x));
}
GP_HD unsigned char gp_store_e4m3_d(double x) {
  using namespace gp_detail;
  return (unsigned char)narrow_bits<8, 23, 4, 3, true, NAN_CANONICAL>(f64_to_f32_bits(x));
}

// float8_e5m2 (ml_dtypes / CUDA __NV_E5M2): IEEE-like with inf; NaN loads and stores are
// canonical quiet NaNs with the input's sign.
GP_HD float gp_load_e5m2(unsigned char h) {
  using namespace gp_detail;
  return u2f(u32(widen_bits<5, 2, false, 8, 23, NAN_CANONICAL>(h)));
}
GP_HD double gp_load_e5m2_d(unsigned char h) {
  using namespace gp_detail;
  return u2d(widen_bits<5, 2, false, 11, 52, NAN_CANONICAL>(h));
}
GP_HD unsigned char gp_store_e5m2(float x) {
  using namespace gp_detail;
  return (unsigned char)narrow_bits<8, 23, 5, 2, false, NAN_CANONICAL>(f2u(x));
}
GP_HD unsigned char gp_store_e5m2_d(double x) {
  using namespace gp_detail;
  return (unsigned char)narrow_bits<8, 23, 5, 2, false, NAN_CANONICAL>(f64_to_f32_bits(x));
}

#undef GP_IF_INT
#undef GP_IF_INT_OR_BOOL
#undef GP_IF_FLOAT
#undef GP_IF_COMPLEX

#endif  // GPUPROMOTE_MATH_CUH
