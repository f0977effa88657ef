// Vectors (vec_t<N, T>): construction, component access, arithmetic, products and norms, each forward function
// with its adjoint beside it. Convention as in scalar_ops.h: R f(A a, B b) and
// void adj_f(A a, B b, A& adj_a, B& adj_b, const R& adj_ret), accumulating; integer arguments get an ignored slot.
//
// Semantics follow Warp: negative indices count from the end (no bounds check), normalize() of a zero vector is
// the zero vector (and passes no gradient), min/max skip NaN components like fmin/fmax.
#pragma once
#include "core.h"

namespace wp {

// A division GCC 12 pairs into a two-lane vector (V2SF held in an xmm register) divides whatever the register's
// upper lanes hold: stack bytes reloaded with a 16-byte move after an 8-byte spill, often an integer whose bits are
// a denormal float, and each such division takes a microcode assist (~100+ cycles; issue 37: the 32x32 cloth's
// triangle kernel spent half its time there). An empty asm that keeps each quotient in its own register stops the
// pairing; the quotients are the same IEEE divisions, bit for bit.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(__i386__))
template <typename T> inline void scalar_lane(T&) {}  // integers, half floats: nothing to keep apart
inline void scalar_lane(float& x) { asm("" : "+x"(x)); }
inline void scalar_lane(double& x) { asm("" : "+x"(x)); }
#define WP_SCALAR_LANE(x) ::wp::scalar_lane(x)
#else
#define WP_SCALAR_LANE(x) ((void)0)
#endif

// ------------------------------------------------------------------------------------------------------------
// Private scalar helpers, in their own namespace so they never compete with scalar_math.h's public overloads.
namespace linalg {

// Conversion between any two scalar types; float16 and bfloat16 go through float (their only conversions).
template <typename T, typename U> struct convert_t {
    static CUDA_CALLABLE T apply(U u) { return T(u); }
};
template <typename U> struct convert_t<float16, U> {
    static CUDA_CALLABLE float16 apply(U u) { return float16(float(u)); }
};
template <typename T> struct convert_t<T, float16> {
    static CUDA_CALLABLE T apply(float16 u) { return T(float(u)); }
};
template <> struct convert_t<float16, float16> {
    static CUDA_CALLABLE float16 apply(float16 u) { return u; }
};
template <typename U> struct convert_t<bfloat16, U> {
    static CUDA_CALLABLE bfloat16 apply(U u) { return bfloat16(float(u)); }
};
template <typename T> struct convert_t<T, bfloat16> {
    static CUDA_CALLABLE T apply(bfloat16 u) { return T(float(u)); }
};
template <> struct convert_t<bfloat16, bfloat16> {
    static CUDA_CALLABLE bfloat16 apply(bfloat16 u) { return u; }
};
// between the two 16-bit floats (each partial specialisation above would match: name the pair)
template <> struct convert_t<float16, bfloat16> {
    static CUDA_CALLABLE float16 apply(bfloat16 u) { return float16(float(u)); }
};
template <> struct convert_t<bfloat16, float16> {
    static CUDA_CALLABLE bfloat16 apply(float16 u) { return bfloat16(float(u)); }
};
template <typename T, typename U> CUDA_CALLABLE inline T convert(U u) { return convert_t<T, U>::apply(u); }

// a += b for any scalar type (float16 has no compound assignment).
template <typename T> CUDA_CALLABLE inline void acc(T& a, T b) { a = T(a + b); }
template <typename T> CUDA_CALLABLE inline void dec(T& a, T b) { a = T(a - b); }

template <typename T> CUDA_CALLABLE inline bool is_nan(T x) { return !(x == x); }

CUDA_CALLABLE inline float32 sqrt(float32 x) { return ::sqrtf(x); }
CUDA_CALLABLE inline float64 sqrt(float64 x) { return ::sqrt(x); }
CUDA_CALLABLE inline float16 sqrt(float16 x) { return float16(::sqrtf(float(x))); }
CUDA_CALLABLE inline bfloat16 sqrt(bfloat16 x) { return bfloat16(::sqrtf(float(x))); }

// x < 0, spelled per type so that unsigned types do not compare against zero (a compiler warning).
template <typename T> CUDA_CALLABLE inline bool negative(T x) { return x < T(0); }
CUDA_CALLABLE inline bool negative(uint8) { return false; }
CUDA_CALLABLE inline bool negative(uint16) { return false; }
CUDA_CALLABLE inline bool negative(uint32) { return false; }
CUDA_CALLABLE inline bool negative(uint64) { return false; }

template <typename T> CUDA_CALLABLE inline T abs(T x) { return negative(x) ? T(-x) : x; }
CUDA_CALLABLE inline float32 abs(float32 x) { return ::fabsf(x); }
CUDA_CALLABLE inline float64 abs(float64 x) { return ::fabs(x); }
CUDA_CALLABLE inline float16 abs(float16 x) { return float16(::fabsf(float(x))); }
CUDA_CALLABLE inline bfloat16 abs(bfloat16 x) { return bfloat16(::fabsf(float(x))); }

template <typename T> CUDA_CALLABLE inline T fmod(T a, T b) { return T(a % b); }
CUDA_CALLABLE inline float32 fmod(float32 a, float32 b) { return ::fmodf(a, b); }
CUDA_CALLABLE inline float64 fmod(float64 a, float64 b) { return ::fmod(a, b); }
CUDA_CALLABLE inline float16 fmod(float16 a, float16 b) { return float16(::fmodf(float(a), float(b))); }
CUDA_CALLABLE inline bfloat16 fmod(bfloat16 a, bfloat16 b) { return bfloat16(::fmodf(float(a), float(b))); }
CUDA_CALLABLE inline double trunc(double x) { return ::trunc(x); }

// fmin/fmax semantics: a NaN operand is treated as missing. The adjoint follows the operand that was returned.
template <typename T> CUDA_CALLABLE inline T min(T a, T b) { return is_nan(a) ? b : (is_nan(b) ? a : (a < b ? a : b)); }
template <typename T> CUDA_CALLABLE inline T max(T a, T b) { return is_nan(a) ? b : (is_nan(b) ? a : (a > b ? a : b)); }
template <typename T> CUDA_CALLABLE inline bool min_takes_a(T a, T b) { return !is_nan(a) && (is_nan(b) || a < b); }
template <typename T> CUDA_CALLABLE inline bool max_takes_a(T a, T b) { return !is_nan(a) && (is_nan(b) || a > b); }

// Index into a length-n container; negative indices count from the end, as in Python and Warp.
template <typename I> CUDA_CALLABLE inline unsigned wrap(I i, unsigned n) {
    int64 k = int64(i);
    return unsigned(k < 0 ? k + int64(n) : k);
}

// Collects the adjoint slots of a variadic constructor call: args = (K forward values of E, K adjoints of E,
// adj_ret of R). Forward values are skipped; the result adjoint is recognised by its type.
template <typename E, typename R, unsigned K> struct variadic_adjoints {
    E* adj[K];
    const R* ret = nullptr;
    unsigned seen = 0;
    CUDA_CALLABLE void take(const E& x) {
        if (seen >= K) adj[seen - K] = const_cast<E*>(&x);
        ++seen;
    }
    CUDA_CALLABLE void take(const R& r) { ret = &r; }
};

}  // namespace linalg

template <typename V> struct vec_traits;
template <unsigned N, typename T> struct vec_traits<vec_t<N, T>> {
    typedef T scalar;
    static constexpr unsigned length = N;
};

// ------------------------------------------------------------------------------------------------------------
// Construction: rendered as vec_zero<V>(), vec_fill<V>(s), vec_from_components<V>(c0, ..., cn), vec_cast<V>(v).

template <typename V> CUDA_CALLABLE inline V vec_zero() { return V(); }
template <typename V> CUDA_CALLABLE inline void adj_vec_zero(const V&) {}

template <typename V> CUDA_CALLABLE inline V vec_fill(typename vec_traits<V>::scalar s) {
    V r;
    WP_UNROLL for (unsigned i = 0; i < vec_traits<V>::length; ++i) r.c[i] = s;
    return r;
}
template <typename V>
CUDA_CALLABLE inline void adj_vec_fill(typename vec_traits<V>::scalar, typename vec_traits<V>::scalar& adj_s,
                                       const V& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < vec_traits<V>::length; ++i) linalg::acc(adj_s, adj_ret.c[i]);
}

template <typename V, typename... A> CUDA_CALLABLE inline V vec_from_components(A... c) {
    typedef typename vec_traits<V>::scalar T;
    static_assert(sizeof...(A) == vec_traits<V>::length, "one value per component");
    const T values[] = {T(c)...};
    V r;
    WP_UNROLL for (unsigned i = 0; i < vec_traits<V>::length; ++i) r.c[i] = values[i];
    return r;
}
template <typename V, typename... A> CUDA_CALLABLE inline void adj_vec_from_components(A&&... args) {
    typedef typename vec_traits<V>::scalar T;
    constexpr unsigned N = vec_traits<V>::length;
    static_assert(sizeof...(A) == 2 * N + 1, "values, their adjoints, the result adjoint");
    linalg::variadic_adjoints<T, V, N> slots;
    (slots.take(args), ...);
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(*slots.adj[i], slots.ret->c[i]);
}

template <typename V, unsigned N, typename U> CUDA_CALLABLE inline V vec_cast(const vec_t<N, U>& a) {
    typedef typename vec_traits<V>::scalar T;
    V r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::convert<T>(a.c[i]);
    return r;
}
template <typename V, unsigned N, typename U>
CUDA_CALLABLE inline void adj_vec_cast(const vec_t<N, U>&, vec_t<N, U>& adj_a, const V& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.c[i], linalg::convert<U>(adj_ret.c[i]));
}

// ------------------------------------------------------------------------------------------------------------
// Component access: v[i] and the functional update v[i] = x (returns the new vector).

template <unsigned N, typename T, typename I> CUDA_CALLABLE inline T extract(const vec_t<N, T>& a, I i) {
    return a.c[linalg::wrap(i, N)];
}
template <unsigned N, typename T, typename I, typename J>
CUDA_CALLABLE inline void adj_extract(const vec_t<N, T>&, I i, vec_t<N, T>& adj_a, const J&, const T& adj_ret) {
    linalg::acc(adj_a.c[linalg::wrap(i, N)], adj_ret);
}

template <unsigned N, typename T, typename I>
CUDA_CALLABLE inline vec_t<N, T> assign(const vec_t<N, T>& a, I i, T value) {
    vec_t<N, T> r = a;
    r.c[linalg::wrap(i, N)] = value;
    return r;
}
template <unsigned N, typename T, typename I, typename J>
CUDA_CALLABLE inline void adj_assign(const vec_t<N, T>&, I i, T, vec_t<N, T>& adj_a, const J&, T& adj_value,
                                     const vec_t<N, T>& adj_ret) {
    unsigned k = linalg::wrap(i, N);
    WP_UNROLL for (unsigned j = 0; j < N; ++j)
        if (j != k) linalg::acc(adj_a.c[j], adj_ret.c[j]);
    linalg::acc(adj_value, adj_ret.c[k]);
}

// ------------------------------------------------------------------------------------------------------------
// Arithmetic operators

// Componentwise integer bit operations (no gradient).
#define WP_VEC_BITWISE(name, op) \
    template <unsigned N, typename T> \
    CUDA_CALLABLE inline vec_t<N, T> name(const vec_t<N, T>& a, const vec_t<N, T>& b) { \
        vec_t<N, T> r; \
        for (unsigned i = 0; i < N; ++i) r.c[i] = T(a.c[i] op b.c[i]); \
        return r; \
    }
WP_VEC_BITWISE(bit_and, &)
WP_VEC_BITWISE(bit_or, |)
WP_VEC_BITWISE(bit_xor, ^)
WP_VEC_BITWISE(lshift, <<)
WP_VEC_BITWISE(rshift, >>)
#undef WP_VEC_BITWISE
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> invert(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = T(~a.c[i]);
    return r;
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> add(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = T(a.c[i] + b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_add(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                  const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], adj_ret.c[i]);
        linalg::acc(adj_b.c[i], adj_ret.c[i]);
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> sub(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = T(a.c[i] - b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_sub(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                  const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], adj_ret.c[i]);
        linalg::dec(adj_b.c[i], adj_ret.c[i]);
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> mul(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = T(a.c[i] * s);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], T(adj_ret.c[i] * s));
        linalg::acc(adj_s, T(a.c[i] * adj_ret.c[i]));
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> mul(T s, const vec_t<N, T>& a) { return mul(a, s); }
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> div(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        r.c[i] = T(a.c[i] / s);
        WP_SCALAR_LANE(r.c[i]);
    }
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        T q = T(adj_ret.c[i] / s);
        WP_SCALAR_LANE(q);
        linalg::acc(adj_a.c[i], q);
        linalg::dec(adj_s, T(adj_ret.c[i] * a.c[i] / (s * s)));
    }
}

// s / v is componentwise, as Warp.
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> div(T s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        r.c[i] = T(s / a.c[i]);
        WP_SCALAR_LANE(r.c[i]);
    }
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        T q = T(adj_ret.c[i] / a.c[i]);
        WP_SCALAR_LANE(q);
        linalg::acc(adj_s, q);
        linalg::dec(adj_a.c[i], T(adj_ret.c[i] * s / (a.c[i] * a.c[i])));
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> neg(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = T(-a.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_neg(const vec_t<N, T>&, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::dec(adj_a.c[i], adj_ret.c[i]);
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> pos(const vec_t<N, T>& a) { return a; }
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_pos(const vec_t<N, T>&, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.c[i], adj_ret.c[i]);
}

// Componentwise remainder with the sign of the dividend (C's % and fmod).
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> mod(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::fmod(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_mod(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                  const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], adj_ret.c[i]);
        linalg::dec(adj_b.c[i], T(adj_ret.c[i] * T(linalg::trunc(double(a.c[i]) / double(b.c[i])))));
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline bool eq(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        if (!(a.c[i] == b.c[i])) return false;
    return true;
}
template <unsigned N, typename T> CUDA_CALLABLE inline bool ne(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    return !eq(a, b);
}

// ------------------------------------------------------------------------------------------------------------
// Componentwise functions

template <unsigned N, typename T>
CUDA_CALLABLE inline vec_t<N, T> cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = T(a.c[i] * b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a,
                                     vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], T(b.c[i] * adj_ret.c[i]));
        linalg::acc(adj_b.c[i], T(a.c[i] * adj_ret.c[i]));
    }
}

template <unsigned N, typename T>
CUDA_CALLABLE inline vec_t<N, T> cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        r.c[i] = T(a.c[i] / b.c[i]);
        WP_SCALAR_LANE(r.c[i]);
    }
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a,
                                     vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        T q = T(adj_ret.c[i] / b.c[i]);
        WP_SCALAR_LANE(q);
        linalg::acc(adj_a.c[i], q);
        linalg::dec(adj_b.c[i], T(adj_ret.c[i] * a.c[i] / (b.c[i] * b.c[i])));
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> min(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::min(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_min(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                  const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        linalg::acc(linalg::min_takes_a(a.c[i], b.c[i]) ? adj_a.c[i] : adj_b.c[i], adj_ret.c[i]);
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> max(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::max(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_max(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                  const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        linalg::acc(linalg::max_takes_a(a.c[i], b.c[i]) ? adj_a.c[i] : adj_b.c[i], adj_ret.c[i]);
}

// Index of the first smallest (largest) component, skipping NaN; 0 if every component is NaN.
template <unsigned N, typename T> CUDA_CALLABLE inline uint32 argmin(const vec_t<N, T>& v) {
    uint32 k = 0;
    for (uint32 i = 1; i < N; ++i)
        if (linalg::min_takes_a(v.c[i], v.c[k])) k = i;
    return k;
}
template <unsigned N, typename T> CUDA_CALLABLE inline uint32 argmax(const vec_t<N, T>& v) {
    uint32 k = 0;
    for (uint32 i = 1; i < N; ++i)
        if (linalg::max_takes_a(v.c[i], v.c[k])) k = i;
    return k;
}

// Reductions min(v), max(v): the gradient goes to the component argmin/argmax picks.
template <unsigned N, typename T> CUDA_CALLABLE inline T min(const vec_t<N, T>& v) { return v.c[argmin(v)]; }
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_min(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    linalg::acc(adj_v.c[argmin(v)], adj_ret);
}
template <unsigned N, typename T> CUDA_CALLABLE inline T max(const vec_t<N, T>& v) { return v.c[argmax(v)]; }
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_max(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    linalg::acc(adj_v.c[argmax(v)], adj_ret);
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> abs(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::abs(a.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_abs(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        if (linalg::negative(a.c[i])) linalg::dec(adj_a.c[i], adj_ret.c[i]);
        else linalg::acc(adj_a.c[i], adj_ret.c[i]);
    }
}

// sign(x) = -1 if x < 0 else 1 per component (Warp); zero derivative.
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> sign(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::negative(a.c[i]) ? T(-1) : T(1);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_sign(const vec_t<N, T>&, vec_t<N, T>&, const vec_t<N, T>&) {}

// lerp(a, b, t) = a * (1 - t) + b * t
template <unsigned N, typename T>
CUDA_CALLABLE inline vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = T(a.c[i] * T(T(1) - t) + b.c[i] * t);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a,
                                   vec_t<N, T>& adj_b, T& adj_t, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], T(adj_ret.c[i] * T(T(1) - t)));
        linalg::acc(adj_b.c[i], T(adj_ret.c[i] * t));
        linalg::acc(adj_t, T(adj_ret.c[i] * T(b.c[i] - a.c[i])));
    }
}

// ------------------------------------------------------------------------------------------------------------
// Products and norms

template <unsigned N, typename T> CUDA_CALLABLE inline T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    T r = T(0);
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r = T(r + a.c[i] * b.c[i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                                  const T& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) {
        linalg::acc(adj_a.c[i], T(b.c[i] * adj_ret));
        linalg::acc(adj_b.c[i], T(a.c[i] * adj_ret));
    }
}

template <typename T> CUDA_CALLABLE inline vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    vec_t<3, T> r;
    r.c[0] = T(a.c[1] * b.c[2] - a.c[2] * b.c[1]);
    r.c[1] = T(a.c[2] * b.c[0] - a.c[0] * b.c[2]);
    r.c[2] = T(a.c[0] * b.c[1] - a.c[1] * b.c[0]);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b,
                                    const vec_t<3, T>& adj_ret) {
    // d(a x b) = da x b + a x db, so adj_a += b x adj_ret and adj_b += adj_ret x a
    adj_a = add(adj_a, cross(b, adj_ret));
    adj_b = add(adj_b, cross(adj_ret, a));
}

template <unsigned N, typename T> CUDA_CALLABLE inline T length_sq(const vec_t<N, T>& a) { return dot(a, a); }
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.c[i], T(T(2) * a.c[i] * adj_ret));
}

template <unsigned N, typename T> CUDA_CALLABLE inline T length(const vec_t<N, T>& a) {
    return linalg::sqrt(dot(a, a));
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_length(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    T l = length(a);
    if (l > T(0)) {
        T s = adj_ret / l;
        WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.c[i], T(a.c[i] * s));
    }
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> normalize(const vec_t<N, T>& a) {
    T l = length(a);
    return l > T(0) ? div(a, l) : vec_t<N, T>();
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    // d(a / |a|) = (I - n n^T) da / |a|
    T l = length(a);
    if (!(l > T(0))) return;
    T inv = T(1) / l;
    vec_t<N, T> n;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) n.c[i] = a.c[i] * inv;
    T proj = dot(n, adj_ret);
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.c[i], T((adj_ret.c[i] - n.c[i] * proj) * inv));
}

// ------------------------------------------------------------------------------------------------------------
// Spatial vectors (length 6: angular part on top, linear part below), as Warp's spatial_* builtins.

namespace linalg {
template <typename T> CUDA_CALLABLE inline vec_t<3, T> half(const vec_t<6, T>& a, unsigned offset) {
    vec_t<3, T> r;
    WP_UNROLL for (unsigned i = 0; i < 3; ++i) r.c[i] = a.c[offset + i];
    return r;
}
template <typename T> CUDA_CALLABLE inline vec_t<6, T> join(const vec_t<3, T>& top, const vec_t<3, T>& bottom) {
    vec_t<6, T> r;
    WP_UNROLL for (unsigned i = 0; i < 3; ++i) {
        r.c[i] = top.c[i];
        r.c[3 + i] = bottom.c[i];
    }
    return r;
}
template <typename T> CUDA_CALLABLE inline void acc_half(vec_t<6, T>& a, unsigned offset, const vec_t<3, T>& d) {
    WP_UNROLL for (unsigned i = 0; i < 3; ++i) acc(a.c[offset + i], d.c[i]);
}
}  // namespace linalg

// spatial_vector(w, v): rendered vec_from_halves<V>(w, v).
template <typename V, typename T>
CUDA_CALLABLE inline V vec_from_halves(const vec_t<3, T>& top, const vec_t<3, T>& bottom) {
    return linalg::join(top, bottom);
}
template <typename V, typename T>
CUDA_CALLABLE inline void adj_vec_from_halves(const vec_t<3, T>&, const vec_t<3, T>&, vec_t<3, T>& adj_top,
                                              vec_t<3, T>& adj_bottom, const V& adj_ret) {
    adj_top = add(adj_top, linalg::half(adj_ret, 0));
    adj_bottom = add(adj_bottom, linalg::half(adj_ret, 3));
}

template <typename T> CUDA_CALLABLE inline vec_t<3, T> spatial_top(const vec_t<6, T>& a) { return linalg::half(a, 0); }
template <typename T>
CUDA_CALLABLE inline void adj_spatial_top(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    linalg::acc_half(adj_a, 0, adj_ret);
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) {
    return linalg::half(a, 3);
}
template <typename T>
CUDA_CALLABLE inline void adj_spatial_bottom(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    linalg::acc_half(adj_a, 3, adj_ret);
}

template <typename T> CUDA_CALLABLE inline T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    return dot(a, b);
}
template <typename T>
CUDA_CALLABLE inline void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                          vec_t<6, T>& adj_b, const T& adj_ret) {
    adj_dot(a, b, adj_a, adj_b, adj_ret);
}

// Motion cross product: (wa x wb, va x wb + wa x vb)
template <typename T> CUDA_CALLABLE inline vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    vec_t<3, T> wa = linalg::half(a, 0), va = linalg::half(a, 3), wb = linalg::half(b, 0), vb = linalg::half(b, 3);
    return linalg::join(cross(wa, wb), add(cross(va, wb), cross(wa, vb)));
}
template <typename T>
CUDA_CALLABLE inline void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                            vec_t<6, T>& adj_b, const vec_t<6, T>& adj_ret) {
    vec_t<3, T> wa = linalg::half(a, 0), va = linalg::half(a, 3), wb = linalg::half(b, 0), vb = linalg::half(b, 3);
    vec_t<3, T> gw = linalg::half(adj_ret, 0), gv = linalg::half(adj_ret, 3);
    vec_t<3, T> g_wa, g_va, g_wb, g_vb;
    adj_cross(wa, wb, g_wa, g_wb, gw);
    adj_cross(va, wb, g_va, g_wb, gv);
    adj_cross(wa, vb, g_wa, g_vb, gv);
    linalg::acc_half(adj_a, 0, g_wa);
    linalg::acc_half(adj_a, 3, g_va);
    linalg::acc_half(adj_b, 0, g_wb);
    linalg::acc_half(adj_b, 3, g_vb);
}

// Force cross product: (wa x wb + va x vb, wa x vb)
template <typename T>
CUDA_CALLABLE inline vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    vec_t<3, T> wa = linalg::half(a, 0), va = linalg::half(a, 3), wb = linalg::half(b, 0), vb = linalg::half(b, 3);
    return linalg::join(add(cross(wa, wb), cross(va, vb)), cross(wa, vb));
}
template <typename T>
CUDA_CALLABLE inline void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                                 vec_t<6, T>& adj_b, const vec_t<6, T>& adj_ret) {
    vec_t<3, T> wa = linalg::half(a, 0), va = linalg::half(a, 3), wb = linalg::half(b, 0), vb = linalg::half(b, 3);
    vec_t<3, T> gw = linalg::half(adj_ret, 0), gv = linalg::half(adj_ret, 3);
    vec_t<3, T> g_wa, g_va, g_wb, g_vb;
    adj_cross(wa, wb, g_wa, g_wb, gw);
    adj_cross(va, vb, g_va, g_vb, gw);
    adj_cross(wa, vb, g_wa, g_vb, gv);
    linalg::acc_half(adj_a, 0, g_wa);
    linalg::acc_half(adj_a, 3, g_va);
    linalg::acc_half(adj_b, 0, g_wb);
    linalg::acc_half(adj_b, 3, g_vb);
}

}  // namespace wp
