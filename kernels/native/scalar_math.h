// Scalar math builtins (trigonometry, exponentials, rounding, min/max/clamp, interpolation, classification),
// forward functions and their adjoints side by side. Convention as in scalar_ops.h: adjoints accumulate.
//
// Float functions are templates restricted to float16/bfloat16/float32/float64 (SFINAE through sm::if_float), so they
// do not compete with vector/matrix overloads of the same name in other headers. 16-bit floats compute in float32.
// Integer overloads (abs, sign, step, min, max, clamp, bit_count) are likewise restricted to the integer types.
//
// Choices where the derivative is infinite or undefined (documented in kernels/builtins/scalar_math.py):
//   sqrt, cbrt at 0 and acos, asin at |x| >= 1 contribute 0 instead of inf/nan, so one degenerate point (the length
//   of a zero vector, a clamped angle) does not poison every gradient upstream. pow contributes 0 to d/dy where
//   x <= 0 (log x undefined) and 0 to d/dx where y == 0. Rounding functions, sign and step contribute 0.
#pragma once
#include "core.h"

namespace wp {

// ------------------------------------------------------------------------------------------------------------
// Helpers (namespace wp::sm, to stay clear of other headers): type restriction, compute type, accumulation.

namespace sm {
template <bool B, typename R> struct enable_if {};
template <typename R> struct enable_if<true, R> { typedef R type; };

template <typename T> struct is_float { static const bool value = false; };
template <> struct is_float<float16> { static const bool value = true; };
template <> struct is_float<bfloat16> { static const bool value = true; };
template <> struct is_float<float32> { static const bool value = true; };
template <> struct is_float<float64> { static const bool value = true; };
template <typename T> struct is_int { static const bool value = false; };
#define WP_SM_DECLARE_INT(I) template <> struct is_int<I> { static const bool value = true; };
WP_SM_DECLARE_INT(int8) WP_SM_DECLARE_INT(uint8) WP_SM_DECLARE_INT(int16) WP_SM_DECLARE_INT(uint16)
WP_SM_DECLARE_INT(int32) WP_SM_DECLARE_INT(uint32) WP_SM_DECLARE_INT(int64) WP_SM_DECLARE_INT(uint64)
#undef WP_SM_DECLARE_INT

// R (default T) when T is a float / integer scalar type; a substitution failure otherwise.
template <typename T, typename R = T> using if_float = typename enable_if<is_float<T>::value, R>::type;
template <typename T, typename R = T> using if_int = typename enable_if<is_int<T>::value, R>::type;

// The type a float computes in: float16 and bfloat16 compute in float32.
template <typename T> struct compute { typedef T type; };
template <> struct compute<float16> { typedef float32 type; };
template <> struct compute<bfloat16> { typedef float32 type; };
template <typename T> using compute_t = typename compute<T>::type;

// x < 0, without comparing an unsigned value with zero (a warning on every compiler).
template <typename T> CUDA_CALLABLE inline bool negative(T x) { return x < T(0); }
CUDA_CALLABLE inline bool negative(uint8) { return false; }
CUDA_CALLABLE inline bool negative(uint16) { return false; }
CUDA_CALLABLE inline bool negative(uint32) { return false; }
CUDA_CALLABLE inline bool negative(uint64) { return false; }

// adj += d, with d in the compute type (a float16 adjoint rounds once per accumulation).
template <typename T> CUDA_CALLABLE inline void accumulate(T& adj, compute_t<T> d) { adj = T(compute_t<T>(adj) + d); }
}  // namespace sm

// C math library, overloaded on float/double so the templates below can call one name.
namespace sm {
namespace cmath {
#define WP_CMATH_UNARY(name) \
    CUDA_CALLABLE inline float name(float x) { return ::name##f(x); } \
    CUDA_CALLABLE inline double name(double x) { return ::name(x); }
WP_CMATH_UNARY(sin) WP_CMATH_UNARY(cos) WP_CMATH_UNARY(tan) WP_CMATH_UNARY(asin) WP_CMATH_UNARY(acos)
WP_CMATH_UNARY(atan) WP_CMATH_UNARY(sinh) WP_CMATH_UNARY(cosh) WP_CMATH_UNARY(exp)
WP_CMATH_UNARY(log) WP_CMATH_UNARY(log2) WP_CMATH_UNARY(log10) WP_CMATH_UNARY(sqrt) WP_CMATH_UNARY(cbrt)
WP_CMATH_UNARY(floor) WP_CMATH_UNARY(ceil) WP_CMATH_UNARY(round) WP_CMATH_UNARY(rint) WP_CMATH_UNARY(trunc)
WP_CMATH_UNARY(fabs) WP_CMATH_UNARY(erf) WP_CMATH_UNARY(erfc)
#undef WP_CMATH_UNARY
// tanh: glibc's tanhf is exactly +-1 beyond |x| = 9.0109129 (every float above 9 checked), and reaches that through
// expm1f, which cost a tenth of a rigid-body step (contact laws saturate their tanh on impacts and slides); the
// same values without the call. CUDA keeps its own tanhf.
CUDA_CALLABLE inline float tanh(float x) {
#if !defined(__CUDA_ARCH__)
    if (x > 9.02f) return 1.0f;
    if (x < -9.02f) return -1.0f;
#endif
    return ::tanhf(x);
}
CUDA_CALLABLE inline double tanh(double x) { return ::tanh(x); }
CUDA_CALLABLE inline float atan2(float y, float x) { return ::atan2f(y, x); }
CUDA_CALLABLE inline double atan2(double y, double x) { return ::atan2(y, x); }
CUDA_CALLABLE inline float pow(float x, float y) { return ::powf(x, y); }
CUDA_CALLABLE inline double pow(double x, double y) { return ::pow(x, y); }
CUDA_CALLABLE inline float fmin(float a, float b) { return ::fminf(a, b); }
CUDA_CALLABLE inline double fmin(double a, double b) { return ::fmin(a, b); }
CUDA_CALLABLE inline float fmax(float a, float b) { return ::fmaxf(a, b); }
CUDA_CALLABLE inline double fmax(double a, double b) { return ::fmax(a, b); }
CUDA_CALLABLE inline float copysign(float a, float b) { return ::copysignf(a, b); }
CUDA_CALLABLE inline double copysign(double a, double b) { return ::copysign(a, b); }

// Sign bit, exponent-all-ones and mantissa tests on the bit pattern: independent of the host's isnan macros.
CUDA_CALLABLE inline uint64 bits_of(double x) { union { double f; uint64 u; } v; v.f = x; return v.u; }
CUDA_CALLABLE inline uint32 bits_of(float x) { union { float f; uint32 u; } v; v.f = x; return v.u; }
CUDA_CALLABLE inline bool signbit(float x) { return (bits_of(x) >> 31) != 0u; }
CUDA_CALLABLE inline bool signbit(double x) { return (bits_of(x) >> 63) != 0u; }
CUDA_CALLABLE inline bool isnan(float x) { return (bits_of(x) & 0x7fffffffu) > 0x7f800000u; }
CUDA_CALLABLE inline bool isnan(double x) { return (bits_of(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
CUDA_CALLABLE inline bool isinf(float x) { return (bits_of(x) & 0x7fffffffu) == 0x7f800000u; }
CUDA_CALLABLE inline bool isinf(double x) { return (bits_of(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }
CUDA_CALLABLE inline bool isfinite(float x) { return (bits_of(x) & 0x7f800000u) != 0x7f800000u; }
CUDA_CALLABLE inline bool isfinite(double x) {
    return (bits_of(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

// Inverse error functions. CUDA has them; on the CPU: Giles' single-precision approximation ("Approximating the
// erfinv function", 2010) refined by Newton steps in double. `c` is 1 - |x| computed without cancellation where the
// caller can (erfcinv), which keeps the tail accurate.
#if defined(WP_CUDA)
CUDA_CALLABLE inline float erfinv(float x) { return ::erfinvf(x); }
CUDA_CALLABLE inline double erfinv(double x) { return ::erfinv(x); }
CUDA_CALLABLE inline float erfcinv(float x) { return ::erfcinvf(x); }
CUDA_CALLABLE inline double erfcinv(double x) { return ::erfcinv(x); }
#else
// Initial guess for erfinv(z) where (1 - z) * (1 + z) == one_minus_z2 (about 1e-7 relative error).
inline double erfinv_guess(double z, double one_minus_z2) {
    double w = -::log(one_minus_z2);
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = ::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    return p * z;
}
// y >= 0 with erfc(y) == c, for 0 < c <= 1. Newton on log(erfc(y)) - log(c), which stays well scaled in the tail.
inline double erfcinv_upper(double c) {
    const double two_over_sqrt_pi = 1.1283791670955126;
    double log_c = ::log(c);
    double y;
    if (c > 1e-7) {
        y = erfinv_guess(1.0 - c, c * (2.0 - c));
    } else {  // past the polynomial's range: erfc(y) ~ exp(-y^2) / (y sqrt(pi)) gives y^2 ~ t - log(pi t) / 2
        double t = -log_c;
        y = ::sqrt(t - 0.5 * ::log(3.141592653589793 * t));
    }
    for (int it = 0; it < 4; ++it) {
        double e = ::erfc(y);
        if (!(e > 0.0)) break;  // underflow past the double range: keep the current estimate
        double slope = -two_over_sqrt_pi * ::exp(-y * y) / e;  // d/dy log(erfc(y))
        y -= (::log(e) - log_c) / slope;
    }
    return y;
}
inline double erfcinv(double c) {
    const double inf = 1.0 / 0.0;
    if (!(c >= 0.0 && c <= 2.0)) return 0.0 / 0.0;
    if (c == 0.0) return inf;
    if (c == 2.0) return -inf;
    if (c > 1.0) return -erfcinv_upper(2.0 - c);  // erfc(-y) = 2 - erfc(y); 2 - c is exact here
    return erfcinv_upper(c);
}
inline double erfinv(double x) {
    const double inf = 1.0 / 0.0;
    if (!(x >= -1.0 && x <= 1.0)) return 0.0 / 0.0;
    if (x == 1.0) return inf;
    if (x == -1.0) return -inf;
    double a = ::fabs(x);
    double y;
    if (a >= 0.5) {
        y = erfcinv_upper(1.0 - a);  // exact subtraction for a in [0.5, 1]
    } else {
        const double two_over_sqrt_pi = 1.1283791670955126;
        y = erfinv_guess(a, (1.0 - a) * (1.0 + a));
        for (int it = 0; it < 2; ++it) y -= (::erf(y) - a) / (two_over_sqrt_pi * ::exp(-y * y));
    }
    return x < 0.0 ? -y : y;
}
inline float erfinv(float x) { return float(erfinv(double(x))); }
inline float erfcinv(float x) { return float(erfcinv(double(x))); }
#endif
}  // namespace cmath
}  // namespace sm

// ------------------------------------------------------------------------------------------------------------
// Unary float functions whose derivative is a closed form of x and/or the result.

#define WP_FLOAT_UNARY(name, DERIV)                                                                   \
    template <typename T> CUDA_CALLABLE inline sm::if_float<T> name(T x) {                            \
        return T(sm::cmath::name(sm::compute_t<T>(x)));                                               \
    }                                                                                                 \
    template <typename T>                                                                             \
    CUDA_CALLABLE inline void adj_##name(T x_, sm::if_float<T>& adj_x, const T& adj_ret) {            \
        typedef sm::compute_t<T> C;                                                                   \
        C x = C(x_);                                                                                  \
        C r = C(sm::cmath::name(x)); /* the result, for derivatives written in terms of it */         \
        (void)r;                                                                                      \
        sm::accumulate<T>(adj_x, C(DERIV) * C(adj_ret));                                              \
    }

WP_FLOAT_UNARY(sin, sm::cmath::cos(x))
WP_FLOAT_UNARY(cos, -sm::cmath::sin(x))
WP_FLOAT_UNARY(tan, C(1) + r * r)
WP_FLOAT_UNARY(atan, C(1) / (C(1) + x * x))
WP_FLOAT_UNARY(sinh, sm::cmath::cosh(x))
WP_FLOAT_UNARY(cosh, sm::cmath::sinh(x))
WP_FLOAT_UNARY(tanh, C(1) - r * r)
WP_FLOAT_UNARY(exp, r)
WP_FLOAT_UNARY(log, C(1) / x)
WP_FLOAT_UNARY(log2, C(1.4426950408889634) / x)     // 1 / ln 2
WP_FLOAT_UNARY(log10, C(0.43429448190325176) / x)   // 1 / ln 10
WP_FLOAT_UNARY(erf, C(1.1283791670955126) * sm::cmath::exp(-x * x))    // 2 / sqrt(pi)
WP_FLOAT_UNARY(erfc, C(-1.1283791670955126) * sm::cmath::exp(-x * x))
WP_FLOAT_UNARY(erfinv, C(0.88622692545275801) * sm::cmath::exp(r * r))  // sqrt(pi) / 2
WP_FLOAT_UNARY(erfcinv, C(-0.88622692545275801) * sm::cmath::exp(r * r))
// Piecewise constant: derivative 0 almost everywhere.
WP_FLOAT_UNARY(floor, C(0))
WP_FLOAT_UNARY(ceil, C(0))
WP_FLOAT_UNARY(round, C(0))  // halfway cases away from zero (C's round)
WP_FLOAT_UNARY(rint, C(0))   // halfway cases to even (default rounding mode)
WP_FLOAT_UNARY(trunc, C(0))
// Infinite derivative at 0 replaced by 0 (see the file comment).
WP_FLOAT_UNARY(sqrt, r > C(0) ? C(0.5) / r : C(0))
WP_FLOAT_UNARY(cbrt, r != C(0) ? C(1) / (C(3) * r * r) : C(0))
#undef WP_FLOAT_UNARY

// asin and acos clamp their input to [-1, 1] (as Warp); the gradient is 0 where the clamp is active.
template <typename T> CUDA_CALLABLE inline sm::if_float<T> asin(T x) {
    typedef sm::compute_t<T> C;
    return T(sm::cmath::asin(sm::cmath::fmin(sm::cmath::fmax(C(x), C(-1)), C(1))));
}
template <typename T> CUDA_CALLABLE inline void adj_asin(T x, sm::if_float<T>& adj_x, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    C d = sm::cmath::sqrt(C(1) - C(x) * C(x));
    if (d > C(0)) sm::accumulate<T>(adj_x, C(adj_ret) / d);
}
template <typename T> CUDA_CALLABLE inline sm::if_float<T> acos(T x) {
    typedef sm::compute_t<T> C;
    return T(sm::cmath::acos(sm::cmath::fmin(sm::cmath::fmax(C(x), C(-1)), C(1))));
}
template <typename T> CUDA_CALLABLE inline void adj_acos(T x, sm::if_float<T>& adj_x, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    C d = sm::cmath::sqrt(C(1) - C(x) * C(x));
    if (d > C(0)) sm::accumulate<T>(adj_x, -C(adj_ret) / d);
}

template <typename T> CUDA_CALLABLE inline sm::if_float<T> degrees(T x) {
    return T(sm::compute_t<T>(x) * sm::compute_t<T>(57.295779513082321));
}
template <typename T> CUDA_CALLABLE inline void adj_degrees(T, sm::if_float<T>& adj_x, const T& adj_ret) {
    sm::accumulate<T>(adj_x, sm::compute_t<T>(57.295779513082321) * sm::compute_t<T>(adj_ret));
}
template <typename T> CUDA_CALLABLE inline sm::if_float<T> radians(T x) {
    return T(sm::compute_t<T>(x) * sm::compute_t<T>(0.017453292519943295));
}
template <typename T> CUDA_CALLABLE inline void adj_radians(T, sm::if_float<T>& adj_x, const T& adj_ret) {
    sm::accumulate<T>(adj_x, sm::compute_t<T>(0.017453292519943295) * sm::compute_t<T>(adj_ret));
}

// frac(x) = x - trunc(x): slope 1 between integers (Warp's adjoint adds 0; this one is the true derivative).
template <typename T> CUDA_CALLABLE inline sm::if_float<T> frac(T x) {
    typedef sm::compute_t<T> C;
    return T(C(x) - sm::cmath::trunc(C(x)));
}
template <typename T> CUDA_CALLABLE inline void adj_frac(T, sm::if_float<T>& adj_x, const T& adj_ret) {
    sm::accumulate<T>(adj_x, sm::compute_t<T>(adj_ret));
}

// ------------------------------------------------------------------------------------------------------------
// Binary float functions

// atan2(y, x), Warp's argument order.
template <typename T> CUDA_CALLABLE inline sm::if_float<T> atan2(T y, T x) {
    return T(sm::cmath::atan2(sm::compute_t<T>(y), sm::compute_t<T>(x)));
}
template <typename T>
CUDA_CALLABLE inline void adj_atan2(T y_, T x_, sm::if_float<T>& adj_y, T& adj_x, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    C y = C(y_), x = C(x_);
    C d = x * x + y * y;
    if (d > C(0)) {
        sm::accumulate<T>(adj_y, x / d * C(adj_ret));
        sm::accumulate<T>(adj_x, -y / d * C(adj_ret));
    }
}

template <typename T> CUDA_CALLABLE inline sm::if_float<T> pow(T x, T y) {
    return T(sm::cmath::pow(sm::compute_t<T>(x), sm::compute_t<T>(y)));
}
template <typename T>
CUDA_CALLABLE inline void adj_pow(T x_, T y_, sm::if_float<T>& adj_x, T& adj_y, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    C x = C(x_), y = C(y_), g = C(adj_ret);
    if (y != C(0)) sm::accumulate<T>(adj_x, y * sm::cmath::pow(x, y - C(1)) * g);
    if (x > C(0)) sm::accumulate<T>(adj_y, sm::cmath::log(x) * sm::cmath::pow(x, y) * g);
}

// copysign(x, y): |x| with the sign of y. d/dx = +-1 by whether the sign bits agree; d/dy = 0.
template <typename T> CUDA_CALLABLE inline sm::if_float<T> copysign(T x, T y) {
    return T(sm::cmath::copysign(sm::compute_t<T>(x), sm::compute_t<T>(y)));
}
template <typename T>
CUDA_CALLABLE inline void adj_copysign(T x, T y, sm::if_float<T>& adj_x, T&, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    bool same = sm::cmath::signbit(C(x)) == sm::cmath::signbit(C(y));
    sm::accumulate<T>(adj_x, same ? C(adj_ret) : -C(adj_ret));
}

// ------------------------------------------------------------------------------------------------------------
// abs, sign, step: floats and integers. sign(0) = 1 and step(x) = 1 if x < 0 else 0, as Warp.

template <typename T> CUDA_CALLABLE inline sm::if_float<T> abs(T x) { return T(sm::cmath::fabs(sm::compute_t<T>(x))); }
template <typename T> CUDA_CALLABLE inline void adj_abs(T x, sm::if_float<T>& adj_x, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    sm::accumulate<T>(adj_x, C(x) < C(0) ? -C(adj_ret) : C(adj_ret));
}
template <typename T> CUDA_CALLABLE inline sm::if_float<T> sign(T x) {
    return T(sm::compute_t<T>(x) < sm::compute_t<T>(0) ? sm::compute_t<T>(-1) : sm::compute_t<T>(1));
}
template <typename T> CUDA_CALLABLE inline void adj_sign(T, sm::if_float<T>&, const T&) {}
template <typename T> CUDA_CALLABLE inline sm::if_float<T> step(T x) {
    return T(sm::compute_t<T>(x) < sm::compute_t<T>(0) ? sm::compute_t<T>(1) : sm::compute_t<T>(0));
}
template <typename T> CUDA_CALLABLE inline void adj_step(T, sm::if_float<T>&, const T&) {}

// Integer overloads (no derivative; the adjoints accept and ignore their slots).
template <typename T> CUDA_CALLABLE inline sm::if_int<T> abs(T x) { return sm::negative(x) ? T(-x) : x; }
template <typename T> CUDA_CALLABLE inline sm::if_int<T> sign(T x) { return sm::negative(x) ? T(-1) : T(1); }
template <typename T> CUDA_CALLABLE inline sm::if_int<T> step(T x) { return sm::negative(x) ? T(1) : T(0); }
template <typename T> CUDA_CALLABLE inline void adj_abs(T, sm::if_int<T>&, const T&) {}
template <typename T> CUDA_CALLABLE inline void adj_sign(T, sm::if_int<T>&, const T&) {}
template <typename T> CUDA_CALLABLE inline void adj_step(T, sm::if_int<T>&, const T&) {}

// Number of set bits of the two's-complement representation.
template <typename T> CUDA_CALLABLE inline sm::if_int<T, int32> bit_count(T x) {
    uint64 u = uint64(x);  // sign-extended; only the low 8 * sizeof(T) bits are counted
    int32 n = 0;
    for (unsigned i = 0; i < 8u * unsigned(sizeof(T)); ++i) n += int32((u >> i) & 1u);
    return n;
}

// ------------------------------------------------------------------------------------------------------------
// min, max, clamp. Floats follow C fmin/fmax: a NaN operand is ignored unless both are NaN. The gradient goes to
// the operand the forward returned (b on ties).

template <typename T> CUDA_CALLABLE inline sm::if_float<T> min(T a, T b) {
    return T(sm::cmath::fmin(sm::compute_t<T>(a), sm::compute_t<T>(b)));
}
template <typename T> CUDA_CALLABLE inline sm::if_float<T> max(T a, T b) {
    return T(sm::cmath::fmax(sm::compute_t<T>(a), sm::compute_t<T>(b)));
}
template <typename T> CUDA_CALLABLE inline bool min_picks_a(T a, T b) {
    typedef sm::compute_t<T> C;
    if (sm::cmath::isnan(C(a))) return false;
    if (sm::cmath::isnan(C(b))) return true;
    return C(a) < C(b);
}
template <typename T> CUDA_CALLABLE inline bool max_picks_a(T a, T b) {
    typedef sm::compute_t<T> C;
    if (sm::cmath::isnan(C(a))) return false;
    if (sm::cmath::isnan(C(b))) return true;
    return C(a) > C(b);
}
template <typename T> CUDA_CALLABLE inline void adj_min(T a, T b, sm::if_float<T>& adj_a, T& adj_b, const T& adj_ret) {
    if (min_picks_a(a, b)) sm::accumulate<T>(adj_a, sm::compute_t<T>(adj_ret));
    else sm::accumulate<T>(adj_b, sm::compute_t<T>(adj_ret));
}
template <typename T> CUDA_CALLABLE inline void adj_max(T a, T b, sm::if_float<T>& adj_a, T& adj_b, const T& adj_ret) {
    if (max_picks_a(a, b)) sm::accumulate<T>(adj_a, sm::compute_t<T>(adj_ret));
    else sm::accumulate<T>(adj_b, sm::compute_t<T>(adj_ret));
}

// clamp(x, low, high) = min(max(low, x), high), as Warp (a NaN x gives min(low, high)). The gradient goes to x
// strictly inside the range, else to the bound that was returned.
template <typename T> CUDA_CALLABLE inline sm::if_float<T> clamp(T x, T low, T high) { return min(max(low, x), high); }
template <typename T>
CUDA_CALLABLE inline void adj_clamp(T x, T low, T high, sm::if_float<T>& adj_x, T& adj_low, T& adj_high,
                                    const T& adj_ret) {
    T m = max(low, x);
    if (!min_picks_a(m, high)) sm::accumulate<T>(adj_high, sm::compute_t<T>(adj_ret));
    else if (max_picks_a(low, x)) sm::accumulate<T>(adj_low, sm::compute_t<T>(adj_ret));
    else sm::accumulate<T>(adj_x, sm::compute_t<T>(adj_ret));
}

template <typename T> CUDA_CALLABLE inline sm::if_int<T> min(T a, T b) { return a < b ? a : b; }
template <typename T> CUDA_CALLABLE inline sm::if_int<T> max(T a, T b) { return a > b ? a : b; }
template <typename T> CUDA_CALLABLE inline sm::if_int<T> clamp(T x, T low, T high) { return min(max(low, x), high); }
template <typename T> CUDA_CALLABLE inline void adj_min(T, T, sm::if_int<T>&, T&, const T&) {}
template <typename T> CUDA_CALLABLE inline void adj_max(T, T, sm::if_int<T>&, T&, const T&) {}
template <typename T> CUDA_CALLABLE inline void adj_clamp(T, T, T, sm::if_int<T>&, T&, T&, const T&) {}

// ------------------------------------------------------------------------------------------------------------
// Classification (no derivative)

template <typename T> CUDA_CALLABLE inline sm::if_float<T, bool> isfinite(T a) {
    return sm::cmath::isfinite(sm::compute_t<T>(a));
}
template <typename T> CUDA_CALLABLE inline sm::if_float<T, bool> isnan(T a) {
    return sm::cmath::isnan(sm::compute_t<T>(a));
}
template <typename T> CUDA_CALLABLE inline sm::if_float<T, bool> isinf(T a) {
    return sm::cmath::isinf(sm::compute_t<T>(a));
}

// ------------------------------------------------------------------------------------------------------------
// Interpolation

// lerp(a, b, t) = a (1 - t) + b t
template <typename T> CUDA_CALLABLE inline sm::if_float<T> lerp(T a, T b, T t) {
    typedef sm::compute_t<T> C;
    return T(C(a) * (C(1) - C(t)) + C(b) * C(t));
}
template <typename T>
CUDA_CALLABLE inline void adj_lerp(T a, T b, T t, sm::if_float<T>& adj_a, T& adj_b, T& adj_t, const T& adj_ret) {
    typedef sm::compute_t<T> C;
    C g = C(adj_ret);
    sm::accumulate<T>(adj_a, (C(1) - C(t)) * g);
    sm::accumulate<T>(adj_b, C(t) * g);
    sm::accumulate<T>(adj_t, (C(b) - C(a)) * g);
}

// smoothstep(a, b, x): s = clamp((x - a) / (b - a), 0, 1); s^2 (3 - 2 s). Flat (zero gradient) outside (a, b).
template <typename T> CUDA_CALLABLE inline sm::if_float<T> smoothstep(T a, T b, T x) {
    typedef sm::compute_t<T> C;
    C s = (C(x) - C(a)) / (C(b) - C(a));
    s = sm::cmath::fmin(sm::cmath::fmax(s, C(0)), C(1));
    return T(s * s * (C(3) - C(2) * s));
}
template <typename T>
CUDA_CALLABLE inline void adj_smoothstep(T a_, T b_, T x_, sm::if_float<T>& adj_a, T& adj_b, T& adj_x,
                                         const T& adj_ret) {
    typedef sm::compute_t<T> C;
    C a = C(a_), b = C(b_), x = C(x_);
    C w = b - a;
    C s = (x - a) / w;
    if (!(s > C(0) && s < C(1))) return;
    C ds = C(6) * s * (C(1) - s) * C(adj_ret);  // d/ds of s^2 (3 - 2 s), times the incoming adjoint
    sm::accumulate<T>(adj_x, ds / w);
    sm::accumulate<T>(adj_a, ds * (x - b) / (w * w));
    sm::accumulate<T>(adj_b, -ds * (x - a) / (w * w));
}

}  // namespace wp
