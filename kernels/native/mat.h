// Matrices (mat_t<R, C, T>, row-major): construction, element and row access, arithmetic, products with vectors
// and matrices, and linear algebra (transpose, determinant, inverse, ...), each forward function with its adjoint
// beside it. Convention as in vec.h.
//
// Semantics follow Warp: m[i] is row i; v * m is the row-vector product v^T m; inverse() of a singular matrix is
// the zero matrix; s / m is componentwise.
#pragma once
#include "core.h"
#include "vec.h"

namespace wp {

template <typename M> struct mat_traits;
template <unsigned R, unsigned C, typename T> struct mat_traits<mat_t<R, C, T>> {
    typedef T scalar;
    static constexpr unsigned rows = R;
    static constexpr unsigned cols = C;
};

// ------------------------------------------------------------------------------------------------------------
// Construction: rendered as mat_zero<M>(), mat_fill<M>(s), mat_from_components<M>(row-major values),
// mat_cast<M>(m), matrix_from_rows<M>(v0, ...), matrix_from_cols<M>(v0, ...), identity<M>().

template <typename M> CUDA_CALLABLE inline M mat_zero() { return M(); }
template <typename M> CUDA_CALLABLE inline void adj_mat_zero(const M&) {}

template <typename M> CUDA_CALLABLE inline M identity() {
    M r;
    WP_UNROLL for (unsigned i = 0; i < mat_traits<M>::rows; ++i) r.data[i][i] = typename mat_traits<M>::scalar(1);
    return r;
}
template <typename M> CUDA_CALLABLE inline void adj_identity(const M&) {}

template <typename M> CUDA_CALLABLE inline M mat_fill(typename mat_traits<M>::scalar s) {
    M r;
    WP_UNROLL for (unsigned i = 0; i < mat_traits<M>::rows; ++i)
        WP_UNROLL for (unsigned j = 0; j < mat_traits<M>::cols; ++j) r.data[i][j] = s;
    return r;
}
template <typename M>
CUDA_CALLABLE inline void adj_mat_fill(typename mat_traits<M>::scalar, typename mat_traits<M>::scalar& adj_s,
                                       const M& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < mat_traits<M>::rows; ++i)
        WP_UNROLL for (unsigned j = 0; j < mat_traits<M>::cols; ++j) linalg::acc(adj_s, adj_ret.data[i][j]);
}

template <typename M, typename... A> CUDA_CALLABLE inline M mat_from_components(A... c) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned R = mat_traits<M>::rows, C = mat_traits<M>::cols;
    static_assert(sizeof...(A) == R * C, "one value per element, row-major");
    const T values[] = {T(c)...};
    M r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = values[i * C + j];
    return r;
}
template <typename M, typename... A> CUDA_CALLABLE inline void adj_mat_from_components(A&&... args) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned R = mat_traits<M>::rows, C = mat_traits<M>::cols;
    static_assert(sizeof...(A) == 2 * R * C + 1, "values, their adjoints, the result adjoint");
    linalg::variadic_adjoints<T, M, R * C> slots;
    (slots.take(args), ...);
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::acc(*slots.adj[i * C + j], slots.ret->data[i][j]);
}

template <typename M, unsigned R, unsigned C, typename U> CUDA_CALLABLE inline M mat_cast(const mat_t<R, C, U>& a) {
    typedef typename mat_traits<M>::scalar T;
    M r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = linalg::convert<T>(a.data[i][j]);
    return r;
}
template <typename M, unsigned R, unsigned C, typename U>
CUDA_CALLABLE inline void adj_mat_cast(const mat_t<R, C, U>&, mat_t<R, C, U>& adj_a, const M& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::acc(adj_a.data[i][j], linalg::convert<U>(adj_ret.data[i][j]));
}

// Rows (or columns) given as K vectors of one length.
template <typename M, typename... A> CUDA_CALLABLE inline M matrix_from_rows(const A&... rows) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned R = mat_traits<M>::rows, C = mat_traits<M>::cols;
    static_assert(sizeof...(A) == R, "one vector per row");
    const vec_t<C, T> values[] = {rows...};
    M r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = values[i].c[j];
    return r;
}
template <typename M, typename... A> CUDA_CALLABLE inline void adj_matrix_from_rows(A&&... args) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned R = mat_traits<M>::rows, C = mat_traits<M>::cols;
    static_assert(sizeof...(A) == 2 * R + 1, "rows, their adjoints, the result adjoint");
    linalg::variadic_adjoints<vec_t<C, T>, M, R> slots;
    (slots.take(args), ...);
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::acc(slots.adj[i]->c[j], slots.ret->data[i][j]);
}

template <typename M, typename... A> CUDA_CALLABLE inline M matrix_from_cols(const A&... cols) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned R = mat_traits<M>::rows, C = mat_traits<M>::cols;
    static_assert(sizeof...(A) == C, "one vector per column");
    const vec_t<R, T> values[] = {cols...};
    M r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = values[j].c[i];
    return r;
}
template <typename M, typename... A> CUDA_CALLABLE inline void adj_matrix_from_cols(A&&... args) {
    typedef typename mat_traits<M>::scalar T;
    constexpr unsigned R = mat_traits<M>::rows, C = mat_traits<M>::cols;
    static_assert(sizeof...(A) == 2 * C + 1, "columns, their adjoints, the result adjoint");
    linalg::variadic_adjoints<vec_t<R, T>, M, C> slots;
    (slots.take(args), ...);
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::acc(slots.adj[j]->c[i], slots.ret->data[i][j]);
}

// ------------------------------------------------------------------------------------------------------------
// Access: m[i] (row i), m[i, j], and the functional updates m[i, j] = x and m[i] = row.

template <unsigned R, unsigned C, typename T, typename I>
CUDA_CALLABLE inline vec_t<C, T> extract(const mat_t<R, C, T>& a, I i) {
    unsigned k = linalg::wrap(i, R);
    vec_t<C, T> r;
    WP_UNROLL for (unsigned j = 0; j < C; ++j) r.c[j] = a.data[k][j];
    return r;
}
template <unsigned R, unsigned C, typename T, typename I, typename J>
CUDA_CALLABLE inline void adj_extract(const mat_t<R, C, T>&, I i, mat_t<R, C, T>& adj_a, const J&,
                                      const vec_t<C, T>& adj_ret) {
    unsigned k = linalg::wrap(i, R);
    WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::acc(adj_a.data[k][j], adj_ret.c[j]);
}

template <unsigned R, unsigned C, typename T, typename I, typename J>
CUDA_CALLABLE inline T extract(const mat_t<R, C, T>& a, I i, J j) {
    return a.data[linalg::wrap(i, R)][linalg::wrap(j, C)];
}
template <unsigned R, unsigned C, typename T, typename I, typename J, typename K, typename L>
CUDA_CALLABLE inline void adj_extract(const mat_t<R, C, T>&, I i, J j, mat_t<R, C, T>& adj_a, const K&, const L&,
                                      const T& adj_ret) {
    linalg::acc(adj_a.data[linalg::wrap(i, R)][linalg::wrap(j, C)], adj_ret);
}

template <unsigned R, unsigned C, typename T, typename I, typename J>
CUDA_CALLABLE inline mat_t<R, C, T> assign(const mat_t<R, C, T>& a, I i, J j, T value) {
    mat_t<R, C, T> r = a;
    r.data[linalg::wrap(i, R)][linalg::wrap(j, C)] = value;
    return r;
}
template <unsigned R, unsigned C, typename T, typename I, typename J, typename K, typename L>
CUDA_CALLABLE inline void adj_assign(const mat_t<R, C, T>&, I i, J j, T, mat_t<R, C, T>& adj_a, const K&, const L&,
                                     T& adj_value, const mat_t<R, C, T>& adj_ret) {
    unsigned ki = linalg::wrap(i, R), kj = linalg::wrap(j, C);
    WP_UNROLL for (unsigned p = 0; p < R; ++p)
        WP_UNROLL for (unsigned q = 0; q < C; ++q)
            if (p != ki || q != kj) linalg::acc(adj_a.data[p][q], adj_ret.data[p][q]);
    linalg::acc(adj_value, adj_ret.data[ki][kj]);
}

template <unsigned R, unsigned C, typename T, typename I>
CUDA_CALLABLE inline mat_t<R, C, T> assign(const mat_t<R, C, T>& a, I i, const vec_t<C, T>& row) {
    mat_t<R, C, T> r = a;
    unsigned k = linalg::wrap(i, R);
    WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[k][j] = row.c[j];
    return r;
}
template <unsigned R, unsigned C, typename T, typename I, typename J>
CUDA_CALLABLE inline void adj_assign(const mat_t<R, C, T>&, I i, const vec_t<C, T>&, mat_t<R, C, T>& adj_a, const J&,
                                     vec_t<C, T>& adj_row, const mat_t<R, C, T>& adj_ret) {
    unsigned k = linalg::wrap(i, R);
    WP_UNROLL for (unsigned p = 0; p < R; ++p)
        WP_UNROLL for (unsigned q = 0; q < C; ++q) linalg::acc(p == k ? adj_row.c[q] : adj_a.data[p][q], adj_ret.data[p][q]);
}

// ------------------------------------------------------------------------------------------------------------
// Elementwise arithmetic. `elementwise` applies a scalar lambda to every element, keeping the loops in one place.
namespace linalg {
template <unsigned R, unsigned C, typename T, typename F>
CUDA_CALLABLE inline mat_t<R, C, T> elementwise(const mat_t<R, C, T>&, F f) {
    mat_t<R, C, T> r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = f(i, j);
    return r;
}
}  // namespace linalg

// Componentwise integer bit operations (no gradient).
#define WP_MAT_BITWISE(name, op) \
    template <unsigned R, unsigned C, typename T> \
    CUDA_CALLABLE inline mat_t<R, C, T> name(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { \
        mat_t<R, C, T> r; \
        for (unsigned i = 0; i < R; ++i) \
            for (unsigned j = 0; j < C; ++j) r.data[i][j] = T(a.data[i][j] op b.data[i][j]); \
        return r; \
    }
WP_MAT_BITWISE(bit_and, &)
WP_MAT_BITWISE(bit_or, |)
WP_MAT_BITWISE(bit_xor, ^)
WP_MAT_BITWISE(lshift, <<)
WP_MAT_BITWISE(rshift, >>)
#undef WP_MAT_BITWISE
template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> invert(const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = T(~a.data[i][j]);
    return r;
}

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> add(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(a.data[i][j] + b.data[i][j]); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_add(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a,
                                  mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], adj_ret.data[i][j]);
            linalg::acc(adj_b.data[i][j], adj_ret.data[i][j]);
        }
}

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> sub(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(a.data[i][j] - b.data[i][j]); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_sub(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a,
                                  mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], adj_ret.data[i][j]);
            linalg::dec(adj_b.data[i][j], adj_ret.data[i][j]);
        }
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> neg(const mat_t<R, C, T>& a) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(-a.data[i][j]); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_neg(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::dec(adj_a.data[i][j], adj_ret.data[i][j]);
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> pos(const mat_t<R, C, T>& a) {
    return a;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_pos(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    adj_a = add(adj_a, adj_ret);
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> mul(const mat_t<R, C, T>& a, T s) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(a.data[i][j] * s); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                                  const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], T(adj_ret.data[i][j] * s));
            linalg::acc(adj_s, T(adj_ret.data[i][j] * a.data[i][j]));
        }
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> mul(T s, const mat_t<R, C, T>& a) {
    return mul(a, s);
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                                  const mat_t<R, C, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> div(const mat_t<R, C, T>& a, T s) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(a.data[i][j] / s); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                                  const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], T(adj_ret.data[i][j] / s));
            linalg::dec(adj_s, T(adj_ret.data[i][j] * a.data[i][j] / (s * s)));
        }
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<R, C, T> div(T s, const mat_t<R, C, T>& a) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(s / a.data[i][j]); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_div(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                                  const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            T x = a.data[i][j];
            linalg::acc(adj_s, T(adj_ret.data[i][j] / x));
            linalg::dec(adj_a.data[i][j], T(adj_ret.data[i][j] * s / (x * x)));
        }
}

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(a.data[i][j] * b.data[i][j]); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                                     mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], T(b.data[i][j] * adj_ret.data[i][j]));
            linalg::acc(adj_b.data[i][j], T(a.data[i][j] * adj_ret.data[i][j]));
        }
}

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return linalg::elementwise(a, [&](unsigned i, unsigned j) { return T(a.data[i][j] / b.data[i][j]); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                                     mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            T y = b.data[i][j];
            linalg::acc(adj_a.data[i][j], T(adj_ret.data[i][j] / y));
            linalg::dec(adj_b.data[i][j], T(adj_ret.data[i][j] * a.data[i][j] / (y * y)));
        }
}

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t) {
    return linalg::elementwise(
        a, [&](unsigned i, unsigned j) { return T(a.data[i][j] * T(T(1) - t) + b.data[i][j] * t); });
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t, mat_t<R, C, T>& adj_a,
                                   mat_t<R, C, T>& adj_b, T& adj_t, const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], T(adj_ret.data[i][j] * T(T(1) - t)));
            linalg::acc(adj_b.data[i][j], T(adj_ret.data[i][j] * t));
            linalg::acc(adj_t, T(adj_ret.data[i][j] * T(b.data[i][j] - a.data[i][j])));
        }
}

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline bool eq(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j)
            if (!(a.data[i][j] == b.data[i][j])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline bool ne(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return !eq(a, b);
}

// ------------------------------------------------------------------------------------------------------------
// Products

template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) {
    mat_t<R, C, T> r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = T(a.c[i] * b.c[j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b,
                                    const mat_t<R, C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.c[i], T(adj_ret.data[i][j] * b.c[j]));
            linalg::acc(adj_b.c[j], T(adj_ret.data[i][j] * a.c[i]));
        }
}

// m * v (column vector)
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline vec_t<R, T> mul(const mat_t<R, C, T>& a, const vec_t<C, T>& b) {
    vec_t<R, T> r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.c[i] = T(r.c[i] + a.data[i][j] * b.c[j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_mul(const mat_t<R, C, T>& a, const vec_t<C, T>& b, mat_t<R, C, T>& adj_a,
                                  vec_t<C, T>& adj_b, const vec_t<R, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], T(adj_ret.c[i] * b.c[j]));
            linalg::acc(adj_b.c[j], T(a.data[i][j] * adj_ret.c[i]));
        }
}

// v * m (row vector): r[j] = sum_i v[i] m[i][j]
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline vec_t<C, T> mul(const vec_t<R, T>& b, const mat_t<R, C, T>& a) {
    vec_t<C, T> r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.c[j] = T(r.c[j] + b.c[i] * a.data[i][j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_mul(const vec_t<R, T>& b, const mat_t<R, C, T>& a, vec_t<R, T>& adj_b,
                                  mat_t<R, C, T>& adj_a, const vec_t<C, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_b.c[i], T(a.data[i][j] * adj_ret.c[j]));
            linalg::acc(adj_a.data[i][j], T(b.c[i] * adj_ret.c[j]));
        }
}

template <unsigned R, unsigned K, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    mat_t<R, C, T> r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned k = 0; k < K; ++k)
            WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = T(r.data[i][j] + a.data[i][k] * b.data[k][j]);
    return r;
}
template <unsigned R, unsigned K, unsigned C, typename T>
CUDA_CALLABLE inline void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a,
                                  mat_t<K, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    // adj_a += adj_ret b^T, adj_b += a^T adj_ret
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned k = 0; k < K; ++k)
            WP_UNROLL for (unsigned j = 0; j < C; ++j) {
                linalg::acc(adj_a.data[i][k], T(adj_ret.data[i][j] * b.data[k][j]));
                linalg::acc(adj_b.data[k][j], T(a.data[i][k] * adj_ret.data[i][j]));
            }
}

// The square case, spelled out so that it is more specialised than scalar_ops.h's generic mul(T, T).
template <unsigned N, typename T>
CUDA_CALLABLE inline mat_t<N, N, T> mul(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b) {
    return mul<N, N, N, T>(a, b);
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_mul(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b, mat_t<N, N, T>& adj_a,
                                  mat_t<N, N, T>& adj_b, const mat_t<N, N, T>& adj_ret) {
    adj_mul<N, N, N, T>(a, b, adj_a, adj_b, adj_ret);
}

// Double dot (Frobenius inner product): sum_ij a_ij b_ij
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    T r = T(0);
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r = T(r + a.data[i][j] * b.data[i][j]);
    return r;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                                   mat_t<R, C, T>& adj_b, const T& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) {
            linalg::acc(adj_a.data[i][j], T(b.data[i][j] * adj_ret));
            linalg::acc(adj_b.data[i][j], T(a.data[i][j] * adj_ret));
        }
}

// ------------------------------------------------------------------------------------------------------------
// Structure: transpose, trace, diagonals, skew

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline mat_t<C, R, T> transpose(const mat_t<R, C, T>& a) {
    mat_t<C, R, T> r;
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[j][i] = a.data[i][j];
    return r;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_transpose(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<C, R, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j) linalg::acc(adj_a.data[i][j], adj_ret.data[j][i]);
}

template <unsigned N, typename T> CUDA_CALLABLE inline T trace(const mat_t<N, N, T>& a) {
    T r = T(0);
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r = T(r + a.data[i][i]);
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_trace(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_a, const T& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.data[i][i], adj_ret);
}

template <unsigned N, typename T> CUDA_CALLABLE inline mat_t<N, N, T> diag(const vec_t<N, T>& d) {
    mat_t<N, N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.data[i][i] = d.c[i];
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_diag(const vec_t<N, T>&, vec_t<N, T>& adj_d, const mat_t<N, N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_d.c[i], adj_ret.data[i][i]);
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> get_diag(const mat_t<N, N, T>& a) {
    vec_t<N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = a.data[i][i];
    return r;
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_get_diag(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i) linalg::acc(adj_a.data[i][i], adj_ret.c[i]);
}

// skew(a) * b == cross(a, b)
template <typename T> CUDA_CALLABLE inline mat_t<3, 3, T> skew(const vec_t<3, T>& a) {
    mat_t<3, 3, T> r;
    r.data[0][1] = T(-a.c[2]);
    r.data[0][2] = a.c[1];
    r.data[1][0] = a.c[2];
    r.data[1][2] = T(-a.c[0]);
    r.data[2][0] = T(-a.c[1]);
    r.data[2][1] = a.c[0];
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_skew(const vec_t<3, T>&, vec_t<3, T>& adj_a, const mat_t<3, 3, T>& adj_ret) {
    linalg::acc(adj_a.c[0], T(adj_ret.data[2][1] - adj_ret.data[1][2]));
    linalg::acc(adj_a.c[1], T(adj_ret.data[0][2] - adj_ret.data[2][0]));
    linalg::acc(adj_a.c[2], T(adj_ret.data[1][0] - adj_ret.data[0][1]));
}

// ------------------------------------------------------------------------------------------------------------
// Determinant and inverse (2x2, 3x3, 4x4) through the cofactor matrix: det(a) = sum_j a[0][j] cof[0][j],
// d det / d a = cof, inverse(a) = cof^T / det.
namespace linalg {

template <typename T> CUDA_CALLABLE inline mat_t<2, 2, T> cofactor(const mat_t<2, 2, T>& a) {
    mat_t<2, 2, T> r;
    r.data[0][0] = a.data[1][1];
    r.data[0][1] = T(-a.data[1][0]);
    r.data[1][0] = T(-a.data[0][1]);
    r.data[1][1] = a.data[0][0];
    return r;
}

// Determinant of the 3x3 submatrix of `a` on rows r0<r1<r2 and columns c0<c1<c2.
template <unsigned N, typename T>
CUDA_CALLABLE inline T minor3(const mat_t<N, N, T>& a, const unsigned* r, const unsigned* c) {
    return T(a.data[r[0]][c[0]] * (a.data[r[1]][c[1]] * a.data[r[2]][c[2]] - a.data[r[1]][c[2]] * a.data[r[2]][c[1]]) -
             a.data[r[0]][c[1]] * (a.data[r[1]][c[0]] * a.data[r[2]][c[2]] - a.data[r[1]][c[2]] * a.data[r[2]][c[0]]) +
             a.data[r[0]][c[2]] * (a.data[r[1]][c[0]] * a.data[r[2]][c[1]] - a.data[r[1]][c[1]] * a.data[r[2]][c[0]]));
}

template <unsigned N, typename T> CUDA_CALLABLE inline mat_t<N, N, T> cofactor(const mat_t<N, N, T>& a) {
    static_assert(N == 3 || N == 4, "cofactor matrix for 2x2, 3x3 and 4x4");
    mat_t<N, N, T> r;
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        WP_UNROLL for (unsigned j = 0; j < N; ++j) {
            // rows other than i, columns other than j
            unsigned rows[3], cols[3];
            for (unsigned k = 0, n = 0; k < N; ++k)
                if (k != i) rows[n++] = k;
            for (unsigned k = 0, n = 0; k < N; ++k)
                if (k != j) cols[n++] = k;
            if constexpr (N == 3) {
                T m = T(a.data[rows[0]][cols[0]] * a.data[rows[1]][cols[1]] -
                        a.data[rows[0]][cols[1]] * a.data[rows[1]][cols[0]]);
                r.data[i][j] = ((i + j) % 2) ? T(-m) : m;
            } else {
                T m = minor3(a, rows, cols);
                r.data[i][j] = ((i + j) % 2) ? T(-m) : m;
            }
        }
    return r;
}

}  // namespace linalg

namespace linalg {
// A 4x4 determinant in float32 or float16 cancels badly (24 products of three entries summed); Warp forms its
// intermediates in double there, so we work in double for these types and round once.
template <unsigned N, typename T> struct det_work { using type = T; };
template <> struct det_work<4, float> { using type = double; };
template <> struct det_work<4, float16> { using type = double; };
template <unsigned N, typename W, typename T> CUDA_CALLABLE inline mat_t<N, N, W> widened(const mat_t<N, N, T>& a) {
    mat_t<N, N, W> w;
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        WP_UNROLL for (unsigned j = 0; j < N; ++j) w.data[i][j] = W(a.data[i][j]);
    return w;
}
}  // namespace linalg

template <unsigned N, typename T> CUDA_CALLABLE inline T determinant(const mat_t<N, N, T>& a) {
    using W = typename linalg::det_work<N, T>::type;
    mat_t<N, N, W> w = linalg::widened<N, W>(a);
    mat_t<N, N, W> cof = linalg::cofactor(w);
    W r = W(0);
    WP_UNROLL for (unsigned j = 0; j < N; ++j) r = W(r + w.data[0][j] * cof.data[0][j]);
    return T(r);
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_determinant(const mat_t<N, N, T>& a, mat_t<N, N, T>& adj_a, const T& adj_ret) {
    using W = typename linalg::det_work<N, T>::type;
    mat_t<N, N, W> cof = linalg::cofactor(linalg::widened<N, W>(a));
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        WP_UNROLL for (unsigned j = 0; j < N; ++j) linalg::acc(adj_a.data[i][j], T(cof.data[i][j] * W(adj_ret)));
}

template <unsigned N, typename T> CUDA_CALLABLE inline mat_t<N, N, T> inverse(const mat_t<N, N, T>& a) {
    mat_t<N, N, T> cof = linalg::cofactor(a);
    T det = T(0);
    WP_UNROLL for (unsigned j = 0; j < N; ++j) det = T(det + a.data[0][j] * cof.data[0][j]);
    if (det == T(0)) return mat_t<N, N, T>();
    return div(transpose(cof), det);
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void adj_inverse(const mat_t<N, N, T>& a, mat_t<N, N, T>& adj_a, const mat_t<N, N, T>& adj_ret) {
    // d(a^-1) = -a^-1 da a^-1, so adj_a -= a^-T adj_ret a^-T (zero where a is singular, as the forward result)
    mat_t<N, N, T> inv_t = transpose(inverse(a));
    adj_a = sub(adj_a, mul(mul(inv_t, adj_ret), inv_t));
}

}  // namespace wp
