// gpupromote_unary.cuh -- the unary helpers core/ops.py names that are exact operations (rounding,
// sign, predicates, parts of complex numbers, clip), NumPy's semantics; the twins of
// gpupromote/engines/cpu/unary.py. The math functions (gp_exp ...) and gp_hypot / gp_atan2 /
// gp_csqrt, which some of these call, are the owned math library's, declared by the glue
// engines/cuda/math.py writes into the translation unit before this header; the primitives
// gpm_sqrt_f / gpm_floor_d ... (correctly rounded on host and device) come with the library.

#ifndef GPUPROMOTE_UNARY_CUH
#define GPUPROMOTE_UNARY_CUH

// ---- absolute, sqrt ---------------------------------------------------------------------------------
// NumPy absolute: bool stays, ints wrap (abs(INT_MIN) is INT_MIN), floats clear the sign bit (a
// NaN's too), complex gives hypot(re, im), correctly rounded in the part type.
GP_DEV bool gp_abs(bool x) { return x; }
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, T>::type gp_abs(T x) {
  typedef typename gp_detail::int_traits<T>::wtype W;
  return (gp_detail::int_traits<T>::is_signed && x < T(0)) ? (T)(W(0) - W(x)) : x;
}
GP_DEV float gp_abs(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
GP_DEV double gp_abs(double x) {
  return __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffull));
}
GP_DEV float gp_sqrt(float x) { return gpm_sqrt_f(x); }
GP_DEV double gp_sqrt(double x) { return gpm_sqrt_d(x); }
#ifdef GP_HAVE_COMPLEX
// (templates, here and below wherever a math helper is called: its body is written into the unit
// only when a kernel uses it, and a template is instantiated only then)
template <class T> GP_DEV T gp_abs(const complex<T>& z) { return gp_hypot(z.real(), z.imag()); }
template <class T> GP_DEV complex<T> gp_sqrt(const complex<T>& z) { return gp_csqrt(z); }
#endif

// ---- rounding: exact on floats (rint: to nearest, ties to even), an integer is its own value -------
#define GP_ROUNDING(NAME, F, D)                                                                        \
  GP_DEV float NAME(float x) { return F(x); }                                                          \
  GP_DEV double NAME(double x) { return D(x); }                                                        \
  template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, T>::type NAME(T x) { \
    return x;                                                                                           \
  }                                                                                                     \
  GP_DEV bool NAME(bool x) { return x; }
GP_ROUNDING(gp_floor, gpm_floor_f, gpm_floor_d)
GP_ROUNDING(gp_ceil, gpm_ceil_f, gpm_ceil_d)
GP_ROUNDING(gp_trunc, gpm_trunc_f, gpm_trunc_d)
GP_ROUNDING(gp_rint, gpm_rint_f, gpm_rint_d)
#undef GP_ROUNDING
#ifdef GP_HAVE_COMPLEX
template <class T> GP_DEV complex<T> gp_rint(const complex<T>& z) { return complex<T>(gp_rint(z.real()), gp_rint(z.imag())); }
#endif

// ---- predicates -----------------------------------------------------------------------------------------
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, bool>::type gp_isnan(T) { return false; }
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, bool>::type gp_isinf(T) { return false; }
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, bool>::type gp_isfinite(T) { return true; }
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, bool>::type gp_signbit(T x) { return x < T(0); }
GP_DEV bool gp_isnan(bool) { return false; }
GP_DEV bool gp_isinf(bool) { return false; }
GP_DEV bool gp_isfinite(bool) { return true; }
GP_DEV bool gp_signbit(bool) { return false; }
GP_DEV bool gp_isnan(float x) { return x != x; }
GP_DEV bool gp_isnan(double x) { return x != x; }
GP_DEV bool gp_isinf(float x) { return (__float_as_uint(x) & 0x7fffffffu) == 0x7f800000u; }
GP_DEV bool gp_isinf(double x) { return ((unsigned long long)__double_as_longlong(x) << 1) == 0xffe0000000000000ull; }
GP_DEV bool gp_isfinite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }
GP_DEV bool gp_isfinite(double x) { return ((unsigned long long)__double_as_longlong(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }
GP_DEV bool gp_signbit(float x) { return (__float_as_uint(x) >> 31) != 0u; }
GP_DEV bool gp_signbit(double x) { return ((unsigned long long)__double_as_longlong(x) >> 63) != 0ull; }
#ifdef GP_HAVE_COMPLEX
template <class T> GP_DEV bool gp_isnan(const complex<T>& z) { return gp_isnan(z.real()) || gp_isnan(z.imag()); }
template <class T> GP_DEV bool gp_isinf(const complex<T>& z) { return gp_isinf(z.real()) || gp_isinf(z.imag()); }
template <class T> GP_DEV bool gp_isfinite(const complex<T>& z) { return gp_isfinite(z.real()) && gp_isfinite(z.imag()); }
#endif
// not x: a number is true when non-zero (a complex when either part is)
template <class T> GP_DEV bool gp_logical_not(T x) { return x == T(0); }
GP_DEV bool gp_logical_not(bool x) { return !x; }
#ifdef GP_HAVE_COMPLEX
template <class T> GP_DEV bool gp_logical_not(const complex<T>& z) { return z.real() == T(0) && z.imag() == T(0); }
#endif

// ---- sign -----------------------------------------------------------------------------------------------
// NumPy: -1, 0 or 1; +0.0 for either zero; a NaN stays; complex z / |z| (0 for 0; an infinite part
// gives its unit, both infinite or any NaN give NaN).
GP_DEV bool gp_sign(bool x) { return x; }
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, T>::type gp_sign(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
}
GP_DEV float gp_sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x)); }
GP_DEV double gp_sign(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : x)); }
// torch.sign: 0 for NaN
GP_DEV float gp_sign_torch(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
GP_DEV double gp_sign_torch(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0); }
// lax.sign (and ml_dtypes' sign): a zero keeps its sign, a NaN stays
GP_DEV float gp_sign_jax(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
GP_DEV double gp_sign_jax(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x); }
#ifdef GP_HAVE_COMPLEX
template <class T> GP_DEV complex<T> gp_sign(const complex<T>& z) {
  const T re = z.real(), im = z.imag(), nan = gp_detail::qnan_<T>();
  if (re != re || im != im) return complex<T>(nan, nan);
  const bool re_inf = gp_isinf(re), im_inf = gp_isinf(im);
  if (re_inf && im_inf) return complex<T>(nan, nan);
  if (re_inf) return complex<T>(gp_detail::copysign_(T(1), re), T(0));
  if (im_inf) return complex<T>(T(0), gp_detail::copysign_(T(1), im));
  if (re == T(0) && im == T(0)) return complex<T>(T(0), T(0));
  const T r = gp_hypot(re, im);
  return complex<T>(re / r, im / r);
}
// lax.sign: z / |z| as it comes (an infinite part gives NaN), 0 of z's signs for 0
template <class T> GP_DEV complex<T> gp_sign_jax(const complex<T>& z) {
  if (z.real() == T(0) && z.imag() == T(0)) return z;
  const T r = gp_hypot(z.real(), z.imag());
  return complex<T>(z.real() / r, z.imag() / r);
}
#endif

// ---- reciprocal ---------------------------------------------------------------------------------------
// NumPy: 1 / x; on integers (T)(1.0 / x) as x86-64 converts: 1 and -1 give themselves, 0 the
// conversion of inf (INT_MIN for 32- and 64-bit signed types, 0 for narrower and unsigned ones),
// anything else 0.
GP_DEV float gp_reciprocal(float x) { return 1.0f / x; }
GP_DEV double gp_reciprocal(double x) { return 1.0 / x; }
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::int_traits<T>::is_int, T>::type gp_reciprocal(T x) {
  typedef gp_detail::int_traits<T> I;
  const T of_zero = (I::is_signed && I::bits >= 32) ? (T)((typename I::utype)1 << (I::bits - 1)) : T(0);
  if (x == T(0)) return of_zero;
  if (x == T(1) || (I::is_signed && x == (T)-1)) return x;
  return T(0);
}
#ifdef GP_HAVE_COMPLEX
// NumPy's own complex reciprocal (not its division): 1 / 0 is nan + nan j
template <class T> GP_DEV complex<T> gp_reciprocal(const complex<T>& z) {
  const T re = z.real(), im = z.imag();
  if (gp_abs(im) <= gp_abs(re)) {
    const T r = im / re, d = re + im * r;
    return complex<T>(T(1) / d, -r / d);
  }
  const T r = re / im, d = re * r + im;
  return complex<T>(r / d, -T(1) / d);
}
// torch and XLA: complex division (Smith's), 1 / 0 is inf + nan j
template <class T> GP_DEV complex<T> gp_reciprocal_div(const complex<T>& z) {
  return gp_detail::cdiv_<complex<T>, T>(complex<T>(T(1), T(0)), z);
}
#endif

// ---- parts of a complex number ----------------------------------------------------------------------
template <class T> GP_DEV T gp_conj(T x) { return x; }
template <class T> GP_DEV T gp_real(T x) { return x; }
template <class T> GP_DEV T gp_imag(T) { return T(0); }
GP_DEV bool gp_imag(bool) { return false; }
// arctan2(imag, real) by the owned arctan2: pi for a negative real number and for -0.0
template <class T> GP_DEV typename gp_detail::enable_if<gp_detail::float_traits<T>::is_float, T>::type gp_angle(T x) {
  return gp_atan2(T(0), x);
}
// torch.angle of a real number: pi where x < 0, 0 otherwise (-0.0 included), NaN stays
GP_DEV float gp_angle_torch(float x) { return x < 0.0f ? 0x1.921fb6p+1f : (x == x ? 0.0f : x); }
GP_DEV double gp_angle_torch(double x) { return x < 0.0 ? 0x1.921fb54442d18p+1 : (x == x ? 0.0 : x); }
#ifdef GP_HAVE_COMPLEX
template <class T> GP_DEV complex<T> gp_conj(const complex<T>& z) { return complex<T>(z.real(), -z.imag()); }
template <class T> GP_DEV T gp_real(const complex<T>& z) { return z.real(); }
template <class T> GP_DEV T gp_imag(const complex<T>& z) { return z.imag(); }
template <class T> GP_DEV T gp_angle(const complex<T>& z) { return gp_atan2(z.imag(), z.real()); }
#endif

// ---- clip ---------------------------------------------------------------------------------------------
// NumPy (and torch.clamp): max(x, lo) then min(., hi) with NaN propagation, where of two equal
// values (-0.0 and 0.0) x stays: a NaN of x or of a bound comes through.
template <class T> GP_DEV T gp_clip_min(T x, T lo) { return (lo != lo || x < lo) ? lo : x; }
template <class T> GP_DEV T gp_clip_max(T x, T hi) { return (hi != hi || hi < x) ? hi : x; }
template <class T> GP_DEV T gp_clip(T x, T lo, T hi) { return gp_clip_max(gp_clip_min(x, lo), hi); }
// jnp.clip: XLA's max and min, where of two equal zeros the bound wins (jnp.maximum(-0.0, 0.0) is +0.0)
template <class T> GP_DEV T gp_clip_min_jax(T x, T lo) { return (x != x || x > lo) ? x : lo; }
template <class T> GP_DEV T gp_clip_max_jax(T x, T hi) { return (x != x || x < hi) ? x : hi; }
template <class T> GP_DEV T gp_clip_jax(T x, T lo, T hi) { return gp_clip_max_jax(gp_clip_min_jax(x, lo), hi); }

#ifdef GP_HAVE_COMPLEX
// torch's complex negation: 0 - z (so -(0 + 0j) is 0 + 0j, not -0 - 0j)
template <class T> GP_DEV complex<T> gp_neg_torch(const complex<T>& z) { return complex<T>(T(0) - z.real(), T(0) - z.imag()); }
#endif

#endif  // GPUPROMOTE_UNARY_CUH
