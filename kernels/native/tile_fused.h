// Fused tile operations (Warp's tile_axpy and tile_dot), forward and adjoint side by side. Elements are scalars,
// vectors or matrices; a product of two elements contracts every component (dot / ddot), as Warp's tensordot.
#pragma once
#include "mat.h"
#include "tile.h"
#include "vec.h"

namespace wp {

template <typename T> CUDA_CALLABLE inline T tile_element_dot(T a, T b) { return mul(a, b); }
template <unsigned N, typename T>
CUDA_CALLABLE inline T tile_element_dot(const vec_t<N, T>& a, const vec_t<N, T>& b) { return dot(a, b); }
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline T tile_element_dot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return ddot(a, b); }

// dest += alpha * src, in place (the compiler rebinds dest to the updated tile).
template <typename T, typename E, int R, int C>
CUDA_CALLABLE inline void tile_axpy(T alpha, const tile_t<E, R, C>& src, tile_t<E, R, C>& dest) {
    for (int k = 0; k < R * C; ++k) dest.data[k] = add(dest.data[k], mul(alpha, src.data[k]));
}
// adj_ret is the updated dest's adjoint: it flows unchanged to the old dest, scaled by alpha to src, and
// contracted with src to alpha.
template <typename T, typename E, int R, int C>
CUDA_CALLABLE inline void adj_tile_axpy(T alpha, const tile_t<E, R, C>& src, const tile_t<E, R, C>&, T& adj_alpha,
                                        tile_t<E, R, C>& adj_src, tile_t<E, R, C>& adj_dest,
                                        const tile_t<E, R, C>& adj_ret) {
    for (int k = 0; k < R * C; ++k) {
        adj_dest.data[k] = add(adj_dest.data[k], adj_ret.data[k]);
        adj_src.data[k] = add(adj_src.data[k], mul(alpha, adj_ret.data[k]));
        adj_alpha = add(adj_alpha, tile_element_dot(src.data[k], adj_ret.data[k]));
    }
}

// The sum over every element of a * b (components contracted): a 1-element tile of the scalar type T.
template <typename T, typename E, int R, int C>
CUDA_CALLABLE inline tile_t<T, 1, 1> tile_dot_impl(const tile_t<E, R, C>& a, const tile_t<E, R, C>& b) {
    tile_t<T, 1, 1> r = tile_t<T, 1, 1>();
    T s = T(0);
    for (int k = 0; k < R * C; ++k) s = add(s, tile_element_dot(a.data[k], b.data[k]));
    r.data[0] = s;
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, 1, 1> tile_dot(const tile_t<T, R, C>& a, const tile_t<T, R, C>& b) {
    return tile_dot_impl<T>(a, b);
}
template <unsigned N, typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, 1, 1> tile_dot(const tile_t<vec_t<N, T>, R, C>& a, const tile_t<vec_t<N, T>, R, C>& b) {
    return tile_dot_impl<T>(a, b);
}
template <unsigned MR, unsigned MC, typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, 1, 1> tile_dot(const tile_t<mat_t<MR, MC, T>, R, C>& a,
                                              const tile_t<mat_t<MR, MC, T>, R, C>& b) {
    return tile_dot_impl<T>(a, b);
}
template <typename T, typename E, int R, int C>
CUDA_CALLABLE inline void adj_tile_dot(const tile_t<E, R, C>& a, const tile_t<E, R, C>& b, tile_t<E, R, C>& adj_a,
                                       tile_t<E, R, C>& adj_b, const tile_t<T, 1, 1>& adj_ret) {
    const T g = adj_ret.data[0];
    for (int k = 0; k < R * C; ++k) {
        adj_a.data[k] = add(adj_a.data[k], mul(g, b.data[k]));
        adj_b.data[k] = add(adj_b.data[k], mul(g, a.data[k]));
    }
}

}  // namespace wp
