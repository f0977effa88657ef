// Tile linear algebra: Cholesky factorisation and triangular solves, with their adjoints side by side.
// Matrices are square N x N tiles; a right-hand side is an N x C tile (C columns, or C == 1 for a 1-d tile).
// Each routine reads one triangle of its matrix argument and ignores the other, as Warp's do. A flag `Transposed`
// reads the matrix transposed (m(j, i) for M(i, j)), so one substitution routine serves L, L^T, U and U^T.
// Nothing is pivoted or clamped: a matrix that is not positive definite (Cholesky) or a zero on a triangular
// diagonal (solves) gives NaN or inf in the result, which is what Warp gives too.
#pragma once
#include "scalar_math.h"
#include "tile.h"

namespace wp {

template <bool Transposed, typename T, int N>
CUDA_CALLABLE inline const T& tile_tri_at(const tile_t<T, N, N>& m, int i, int j) {
    return Transposed ? m.at(j, i) : m.at(i, j);
}
template <bool Transposed, typename T, int N> CUDA_CALLABLE inline T& tile_tri_at(tile_t<T, N, N>& m, int i, int j) {
    return Transposed ? m.at(j, i) : m.at(i, j);
}

// ---- triangular substitution ------------------------------------------------------------------------------------

// Solves M z = y for lower-triangular M(i, j) = tile_tri_at<Transposed>(m, i, j), j <= i.
template <bool Transposed, typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, C> tile_forward_substitute(const tile_t<T, N, N>& m, const tile_t<T, N, C>& y) {
    tile_t<T, N, C> z;
    for (int i = 0; i < N; ++i) {
        const T inv = T(1) / tile_tri_at<Transposed>(m, i, i);
        for (int c = 0; c < C; ++c) {
            T s = y.at(i, c);
            for (int k = 0; k < i; ++k) s -= tile_tri_at<Transposed>(m, i, k) * z.at(k, c);
            z.at(i, c) = s * inv;
        }
    }
    return z;
}

// Solves M x = z for upper-triangular M(i, j) = tile_tri_at<Transposed>(m, i, j), j >= i.
template <bool Transposed, typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, C> tile_back_substitute(const tile_t<T, N, N>& m, const tile_t<T, N, C>& z) {
    tile_t<T, N, C> x;
    for (int i = N - 1; i >= 0; --i) {
        const T inv = T(1) / tile_tri_at<Transposed>(m, i, i);
        for (int c = 0; c < C; ++c) {
            T s = z.at(i, c);
            for (int k = i + 1; k < N; ++k) s -= tile_tri_at<Transposed>(m, i, k) * x.at(k, c);
            x.at(i, c) = s * inv;
        }
    }
    return x;
}

// Adjoint of z = M^-1 y (M lower, from tile_forward_substitute<Transposed>), given the solution z:
// w = M^-T adj_z; adj_y += w; adj_M -= tril(w z^T), added where M's entries are stored in m.
template <bool Transposed, typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_forward_substitute(const tile_t<T, N, N>& m, const tile_t<T, N, C>& z,
                                                      tile_t<T, N, N>& adj_m, tile_t<T, N, C>& adj_y,
                                                      const tile_t<T, N, C>& adj_z) {
    // M^T is upper triangular and is m read the other way round
    const tile_t<T, N, C> w = tile_back_substitute<!Transposed>(m, adj_z);
    adj_y = add(adj_y, w);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) {
            T g = T(0);
            for (int c = 0; c < C; ++c) g += w.at(i, c) * z.at(j, c);
            tile_tri_at<Transposed>(adj_m, i, j) -= g;
        }
}

// Adjoint of x = M^-1 z (M upper, from tile_back_substitute<Transposed>), given the solution x:
// w = M^-T adj_x; adj_z += w; adj_M -= triu(w x^T), added where M's entries are stored in m.
template <bool Transposed, typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_back_substitute(const tile_t<T, N, N>& m, const tile_t<T, N, C>& x,
                                                   tile_t<T, N, N>& adj_m, tile_t<T, N, C>& adj_z,
                                                   const tile_t<T, N, C>& adj_x) {
    const tile_t<T, N, C> w = tile_forward_substitute<!Transposed>(m, adj_x);
    adj_z = add(adj_z, w);
    for (int i = 0; i < N; ++i)
        for (int j = i; j < N; ++j) {
            T g = T(0);
            for (int c = 0; c < C; ++c) g += w.at(i, c) * x.at(j, c);
            tile_tri_at<Transposed>(adj_m, i, j) -= g;
        }
}

// ---- tile_lower_solve, tile_upper_solve ------------------------------------------------------------------------

template <typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, C> tile_lower_solve(const tile_t<T, N, N>& l, const tile_t<T, N, C>& y) {
    return tile_forward_substitute<false>(l, y);
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_lower_solve(const tile_t<T, N, N>& l, const tile_t<T, N, C>& y,
                                               tile_t<T, N, N>& adj_l, tile_t<T, N, C>& adj_y,
                                               const tile_t<T, N, C>& adj_ret) {
    adj_tile_forward_substitute<false>(l, tile_forward_substitute<false>(l, y), adj_l, adj_y, adj_ret);
}

template <typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, C> tile_upper_solve(const tile_t<T, N, N>& u, const tile_t<T, N, C>& z) {
    return tile_back_substitute<false>(u, z);
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_upper_solve(const tile_t<T, N, N>& u, const tile_t<T, N, C>& z,
                                               tile_t<T, N, N>& adj_u, tile_t<T, N, C>& adj_z,
                                               const tile_t<T, N, C>& adj_ret) {
    adj_tile_back_substitute<false>(u, tile_back_substitute<false>(u, z), adj_u, adj_z, adj_ret);
}

// ---- Cholesky factorisation --------------------------------------------------------------------------------------

// The lower factor L (L L^T = A) of the symmetric A whose lower triangle is stored in a (read transposed when
// FromUpper: A's upper triangle). L's strict upper triangle is zero. A non-positive pivot gives sqrt of a negative
// number or a division by zero: NaN/inf from that column on.
template <bool FromUpper, typename T, int N>
CUDA_CALLABLE inline tile_t<T, N, N> tile_cholesky_lower_factor(const tile_t<T, N, N>& a) {
    tile_t<T, N, N> l = tile_t<T, N, N>();
    for (int j = 0; j < N; ++j) {
        T d = a.at(j, j);
        for (int k = 0; k < j; ++k) d -= l.at(j, k) * l.at(j, k);
        d = sqrt(d);
        l.at(j, j) = d;
        const T inv = T(1) / d;
        for (int i = j + 1; i < N; ++i) {
            T s = tile_tri_at<FromUpper>(a, i, j);
            for (int k = 0; k < j; ++k) s -= l.at(i, k) * l.at(j, k);
            l.at(i, j) = s * inv;
        }
    }
    return l;
}

// Adjoint of L = chol(A) with respect to A's stored triangle (the parameterisation the forward reads):
// P = Phi(L^T adj_L) (lower triangle, halved diagonal), S = P + P^T, B = L^-T S L^-1; the stored triangle gets B
// with its diagonal halved (an off-diagonal entry of the stored triangle stands for both A(i, j) and A(j, i)).
// Only adj_L's lower triangle counts: L's upper triangle is constant zero.
template <bool FromUpper, typename T, int N>
CUDA_CALLABLE inline void adj_tile_cholesky_lower_factor(const tile_t<T, N, N>& l, tile_t<T, N, N>& adj_a,
                                                         const tile_t<T, N, N>& adj_l) {
    tile_t<T, N, N> s;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) {
            T p = T(0);  // (L^T tril(adj_L))(i, j) = sum over k >= i of L(k, i) adj_L(k, j)
            for (int k = i; k < N; ++k) p += l.at(k, i) * adj_l.at(k, j);
            s.at(i, j) = p;  // S = P + P^T: P's halved diagonal counts twice
            s.at(j, i) = p;
        }
    const tile_t<T, N, N> x = tile_back_substitute<true>(l, s);                   // L^-T S
    const tile_t<T, N, N> bt = tile_back_substitute<true>(l, tile_transpose(x));  // (L^-T S L^-1)^T
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) {
            const T g = i == j ? T(0.5) * bt.at(i, i) : bt.at(j, i);
            tile_tri_at<FromUpper>(adj_a, i, j) += g;
        }
}

// tile_cholesky(A, fill_mode): L (lower, upper == false) or U = L^T (upper == true, read from A's upper triangle).
template <typename T, int N> CUDA_CALLABLE inline tile_t<T, N, N> tile_cholesky(const tile_t<T, N, N>& a, bool upper) {
    if (upper) return tile_transpose(tile_cholesky_lower_factor<true>(a));
    return tile_cholesky_lower_factor<false>(a);
}
template <typename T, int N>
CUDA_CALLABLE inline void adj_tile_cholesky(const tile_t<T, N, N>& a, bool upper, tile_t<T, N, N>& adj_a, bool&,
                                            const tile_t<T, N, N>& adj_ret) {
    if (upper)
        adj_tile_cholesky_lower_factor<true>(tile_cholesky_lower_factor<true>(a), adj_a, tile_transpose(adj_ret));
    else
        adj_tile_cholesky_lower_factor<false>(tile_cholesky_lower_factor<false>(a), adj_a, adj_ret);
}

// ---- tile_cholesky_solve: A x = y with A = L L^T (L lower) or A = U^T U (U upper, stored in the same argument) --

// With M the lower factor (L, or U read transposed): z = M^-1 y, then x = M^-T z.
template <bool Upper, typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, C> tile_cholesky_solve_with(const tile_t<T, N, N>& f, const tile_t<T, N, C>& y) {
    return tile_back_substitute<!Upper>(f, tile_forward_substitute<Upper>(f, y));
}
template <bool Upper, typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_cholesky_solve_with(const tile_t<T, N, N>& f, const tile_t<T, N, C>& y,
                                                       tile_t<T, N, N>& adj_f, tile_t<T, N, C>& adj_y,
                                                       const tile_t<T, N, C>& adj_x) {
    const tile_t<T, N, C> z = tile_forward_substitute<Upper>(f, y);
    tile_t<T, N, C> adj_z = tile_t<T, N, C>();
    adj_tile_back_substitute<!Upper>(f, tile_back_substitute<!Upper>(f, z), adj_f, adj_z, adj_x);
    adj_tile_forward_substitute<Upper>(f, z, adj_f, adj_y, adj_z);
}

template <typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, C> tile_cholesky_solve(const tile_t<T, N, N>& f, const tile_t<T, N, C>& y,
                                                         bool upper) {
    return upper ? tile_cholesky_solve_with<true>(f, y) : tile_cholesky_solve_with<false>(f, y);
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_cholesky_solve(const tile_t<T, N, N>& f, const tile_t<T, N, C>& y, bool upper,
                                                  tile_t<T, N, N>& adj_f, tile_t<T, N, C>& adj_y, bool&,
                                                  const tile_t<T, N, C>& adj_ret) {
    if (upper)
        adj_tile_cholesky_solve_with<true>(f, y, adj_f, adj_y, adj_ret);
    else
        adj_tile_cholesky_solve_with<false>(f, y, adj_f, adj_y, adj_ret);
}

// ---- in-place forms (Warp's *_inplace; no gradient): the argument is replaced by the result ---------------------

template <typename T, int N> CUDA_CALLABLE inline void tile_cholesky_inplace(tile_t<T, N, N>& a, bool upper) {
    a = tile_cholesky(a, upper);
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void tile_cholesky_solve_inplace(const tile_t<T, N, N>& f, tile_t<T, N, C>& y, bool upper) {
    y = tile_cholesky_solve(f, y, upper);
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void tile_lower_solve_inplace(const tile_t<T, N, N>& l, tile_t<T, N, C>& y) {
    y = tile_lower_solve(l, y);
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void tile_upper_solve_inplace(const tile_t<T, N, N>& u, tile_t<T, N, C>& z) {
    z = tile_upper_solve(u, z);
}

// a + diag(d): Warp's tile_diag_add, which adds a regularisation to a matrix before a factorisation; the adjoint
// of d is the diagonal of the result's adjoint
template <typename T, int N, int C>
CUDA_CALLABLE inline tile_t<T, N, N> tile_diag_add(const tile_t<T, N, N>& a, const tile_t<T, N, C>& d) {
    tile_t<T, N, N> r = a;
    for (int i = 0; i < N; ++i) r.at(i, i) = add(r.at(i, i), d.data[i]);
    return r;
}
template <typename T, int N, int C>
CUDA_CALLABLE inline void adj_tile_diag_add(const tile_t<T, N, N>&, const tile_t<T, N, C>&, tile_t<T, N, N>& adj_a,
                                            tile_t<T, N, C>& adj_d, const tile_t<T, N, N>& adj_ret) {
    for (int k = 0; k < N * N; ++k) adj_a.data[k] = add(adj_a.data[k], adj_ret.data[k]);
    for (int i = 0; i < N; ++i) adj_d.data[i] = add(adj_d.data[i], adj_ret.at(i, i));
}

}  // namespace wp
