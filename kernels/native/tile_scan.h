// Prefix scans of a tile over its row-major sequence (Warp's tile_scan_*). On the CPU a block is one lane, so a
// scan is one sequential pass: each prefix is the left fold of its elements in order. Sums have adjoints (a
// suffix sum of the result's adjoint); the min/max scans have none (declared non-differentiable, as in Warp).
#pragma once
#include "tile.h"

namespace wp {

template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, R, C> tile_scan_inclusive(const tile_t<T, R, C>& a) {
    tile_t<T, R, C> r;
    T s = T(0);
    for (int k = 0; k < R * C; ++k) {
        s = add(s, a.data[k]);
        r.data[k] = s;
    }
    return r;
}
// d r_j / d a_i = 1 for i <= j: a_i's adjoint is the sum of the result's adjoint from i on.
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_scan_inclusive(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_a,
                                                  const tile_t<T, R, C>& adj_ret) {
    T s = T(0);
    for (int k = R * C - 1; k >= 0; --k) {
        s = add(s, adj_ret.data[k]);
        adj_a.data[k] = add(adj_a.data[k], s);
    }
}

template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, R, C> tile_scan_exclusive(const tile_t<T, R, C>& a) {
    tile_t<T, R, C> r;
    T s = T(0);
    for (int k = 0; k < R * C; ++k) {
        r.data[k] = s;
        s = add(s, a.data[k]);
    }
    return r;
}
// d r_j / d a_i = 1 for i < j.
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_scan_exclusive(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_a,
                                                  const tile_t<T, R, C>& adj_ret) {
    T s = T(0);
    for (int k = R * C - 1; k >= 0; --k) {
        adj_a.data[k] = add(adj_a.data[k], s);
        s = add(s, adj_ret.data[k]);
    }
}

// C's fmax/fmin for floats (a NaN operand is missing: the other one is kept), plain comparisons for integers.
CUDA_CALLABLE inline float32 tile_scan_larger(float32 a, float32 b) { return ::fmaxf(a, b); }
CUDA_CALLABLE inline float32 tile_scan_smaller(float32 a, float32 b) { return ::fminf(a, b); }
template <typename T> CUDA_CALLABLE inline T tile_scan_larger(T a, T b) { return a < b ? b : a; }
template <typename T> CUDA_CALLABLE inline T tile_scan_smaller(T a, T b) { return b < a ? b : a; }

template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> tile_scan_max_inclusive(const tile_t<T, R, C>& a) {
    tile_t<T, R, C> r;
    T m = a.data[0];
    for (int k = 0; k < R * C; ++k) {
        m = tile_scan_larger(m, a.data[k]);
        r.data[k] = m;
    }
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> tile_scan_min_inclusive(const tile_t<T, R, C>& a) {
    tile_t<T, R, C> r;
    T m = a.data[0];
    for (int k = 0; k < R * C; ++k) {
        m = tile_scan_smaller(m, a.data[k]);
        r.data[k] = m;
    }
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_scan_max_inclusive(const tile_t<T, R, C>&, tile_t<T, R, C>&,
                                                      const tile_t<T, R, C>&) {}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_scan_min_inclusive(const tile_t<T, R, C>&, tile_t<T, R, C>&,
                                                      const tile_t<T, R, C>&) {}

}  // namespace wp
