// Scalar operators (arithmetic, comparisons, logic, casts) with their adjoints side by side.
// Convention: R f(A a, B b) and void adj_f(A a, B b, A& adj_a, B& adj_b, const R& adj_ret), accumulating.
#pragma once
#include "core.h"

namespace wp {

// Integer scalars have no derivative; their adjoint slots are accepted and ignored.
#define WP_FOR_INT_TYPES(X) X(int8) X(uint8) X(int16) X(uint16) X(int32) X(uint32) X(int64) X(uint64)
#define WP_FOR_FLOAT_TYPES(X) X(float16) X(bfloat16) X(float32) X(float64)

template <typename T> CUDA_CALLABLE inline T add(T a, T b) { return T(a + b); }
template <typename T> CUDA_CALLABLE inline void adj_add(T, T, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_a = T(adj_a + adj_ret);
    adj_b = T(adj_b + adj_ret);
}

template <typename T> CUDA_CALLABLE inline T sub(T a, T b) { return T(a - b); }
template <typename T> CUDA_CALLABLE inline void adj_sub(T, T, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_a = T(adj_a + adj_ret);
    adj_b = T(adj_b - adj_ret);
}

template <typename T> CUDA_CALLABLE inline T mul(T a, T b) { return T(a * b); }
template <typename T> CUDA_CALLABLE inline void adj_mul(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_a = T(adj_a + b * adj_ret);
    adj_b = T(adj_b + a * adj_ret);
}

template <typename T> CUDA_CALLABLE inline T div(T a, T b) { return T(a / b); }
template <typename T> CUDA_CALLABLE inline void adj_div(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    adj_a = T(adj_a + adj_ret / b);
    adj_b = T(adj_b - adj_ret * a / (b * b));
}

template <typename T> CUDA_CALLABLE inline T neg(T a) { return T(-a); }
template <typename T> CUDA_CALLABLE inline void adj_neg(T, T& adj_a, const T& adj_ret) { adj_a = T(adj_a - adj_ret); }

template <typename T> CUDA_CALLABLE inline T pos(T a) { return a; }
template <typename T> CUDA_CALLABLE inline void adj_pos(T, T& adj_a, const T& adj_ret) { adj_a = T(adj_a + adj_ret); }

// Remainder with the sign of the dividend (C's % and fmod), as Warp.
template <typename T> CUDA_CALLABLE inline T mod(T a, T b) { return T(a % b); }
CUDA_CALLABLE inline float32 mod(float32 a, float32 b) { return ::fmodf(a, b); }
CUDA_CALLABLE inline float64 mod(float64 a, float64 b) { return ::fmod(a, b); }
CUDA_CALLABLE inline float16 mod(float16 a, float16 b) { return float16(::fmodf(float(a), float(b))); }
CUDA_CALLABLE inline bfloat16 mod(bfloat16 a, bfloat16 b) { return bfloat16(::fmodf(float(a), float(b))); }
template <typename T> CUDA_CALLABLE inline void adj_mod(T a, T b, T& adj_a, T& adj_b, const T& adj_ret) {
    // d/da fmod(a, b) = 1; d/db = -trunc(a / b)
    adj_a = T(adj_a + adj_ret);
    adj_b = T(adj_b - adj_ret * T(::trunc(double(a) / double(b))));
}

// Floor division (Python's //).
template <typename T> CUDA_CALLABLE inline T floordiv(T a, T b) {
    T q = T(a / b);
    if ((a % b != 0) && ((a < 0) != (b < 0))) q = T(q - 1);
    return q;
}
CUDA_CALLABLE inline float32 floordiv(float32 a, float32 b) { return ::floorf(a / b); }
CUDA_CALLABLE inline float64 floordiv(float64 a, float64 b) { return ::floor(a / b); }
CUDA_CALLABLE inline float16 floordiv(float16 a, float16 b) { return float16(::floorf(float(a) / float(b))); }
CUDA_CALLABLE inline bfloat16 floordiv(bfloat16 a, bfloat16 b) {
    return bfloat16(::floorf(float(a) / float(b)));
}

// Comparisons and logic: no derivative.
template <typename T> CUDA_CALLABLE inline bool eq(T a, T b) { return a == b; }
template <typename T> CUDA_CALLABLE inline bool ne(T a, T b) { return a != b; }
template <typename T> CUDA_CALLABLE inline bool lt(T a, T b) { return a < b; }
template <typename T> CUDA_CALLABLE inline bool le(T a, T b) { return a <= b; }
template <typename T> CUDA_CALLABLE inline bool gt(T a, T b) { return a > b; }
template <typename T> CUDA_CALLABLE inline bool ge(T a, T b) { return a >= b; }
CUDA_CALLABLE inline bool logical_and(bool a, bool b) { return a && b; }
CUDA_CALLABLE inline bool logical_or(bool a, bool b) { return a || b; }
CUDA_CALLABLE inline bool logical_not(bool a) { return !a; }

template <typename T> CUDA_CALLABLE inline T bit_and(T a, T b) { return T(a & b); }
template <typename T> CUDA_CALLABLE inline T bit_or(T a, T b) { return T(a | b); }
template <typename T> CUDA_CALLABLE inline T bit_xor(T a, T b) { return T(a ^ b); }
template <typename T> CUDA_CALLABLE inline T lshift(T a, T b) { return T(a << b); }
template <typename T> CUDA_CALLABLE inline T rshift(T a, T b) { return T(a >> b); }
template <typename T> CUDA_CALLABLE inline T invert(T a) { return T(~a); }

// Truthiness of a scalar, for `if x:` on numbers.
template <typename T> CUDA_CALLABLE inline bool truthy(T a) { return a != T(0); }
template <typename T> CUDA_CALLABLE inline T nonzero(T a) { return a != T(0) ? T(1) : T(0); }
template <typename T> CUDA_CALLABLE inline void adj_nonzero(T, T&, const T&) {}

// Casts between scalar types: `R cast<R>(A)`. The gradient flows between float types and stops at integers.
template <typename R, typename A> CUDA_CALLABLE inline R cast(A a) { return R(a); }
template <typename R> CUDA_CALLABLE inline R cast(float16 a) { return R(float(a)); }
template <typename R> CUDA_CALLABLE inline R cast(bfloat16 a) { return R(float(a)); }
template <typename R, typename A> CUDA_CALLABLE inline void adj_cast(A, A& adj_a, const R& adj_ret) {
    adj_a = A(adj_a + A(adj_ret));
}
template <typename R> CUDA_CALLABLE inline void adj_cast(float16, float16& adj_a, const R& adj_ret) {
    adj_a = float16(float(adj_a) + float(adj_ret));
}
template <typename R> CUDA_CALLABLE inline void adj_cast(bfloat16, bfloat16& adj_a, const R& adj_ret) {
    adj_a = bfloat16(float(adj_a) + float(adj_ret));
}

// Copy of a value (used for explicit `wp.copy`-style rebinding in the IR).
template <typename T> CUDA_CALLABLE inline T copy(const T& a) { return a; }
template <typename T> CUDA_CALLABLE inline void adj_copy(const T&, T& adj_a, const T& adj_ret) { adj_a = add(adj_a, adj_ret); }

// Select: `where(cond, a, b)` returns a if cond else b. Used for merging values of branches too.
template <typename C, typename T> CUDA_CALLABLE inline T where(C cond, const T& a, const T& b) { return cond ? a : b; }
template <typename C, typename T>
CUDA_CALLABLE inline void adj_where(C cond, const T&, const T&, C&, T& adj_a, T& adj_b, const T& adj_ret) {
    if (cond) adj_a = add(adj_a, adj_ret);
    else adj_b = add(adj_b, adj_ret);
}

}  // namespace wp

namespace wp {

// Warp's select: select(cond, value_if_false, value_if_true).
template <typename C, typename T> CUDA_CALLABLE inline T select(C cond, const T& f, const T& t) { return cond ? t : f; }
template <typename C, typename T>
CUDA_CALLABLE inline void adj_select(C cond, const T&, const T&, C&, T& adj_f, T& adj_t, const T& adj_ret) {
    if (cond) adj_t = add(adj_t, adj_ret);
    else adj_f = add(adj_f, adj_ret);
}

// Bit patterns of special float constants (inf, nan) that have no portable literal.
CUDA_CALLABLE inline float32 float32_from_bits(uint32 bits) {
    union { uint32 u; float32 f; } v; v.u = bits; return v.f;
}
CUDA_CALLABLE inline float64 float64_from_bits(uint64 bits) {
    union { uint64 u; float64 f; } v; v.u = bits; return v.f;
}

// Build any value type from its scalar components (row-major), e.g. constants captured from Python.
template <typename V, typename S> CUDA_CALLABLE inline V load_components(const S* c) {
    V v;
    memcpy((void*)&v, (const void*)c, sizeof(V));
    return v;
}

}  // namespace wp

namespace wp {

// stop_gradient: the value passes, its gradient does not.
template <typename T> CUDA_CALLABLE inline T stop_gradient(const T& a) { return a; }
template <typename T> CUDA_CALLABLE inline void adj_stop_gradient(const T&, T&, const T&) {}

}  // namespace wp
