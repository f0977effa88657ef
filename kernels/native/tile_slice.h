// Tiles subscripted with slices (Warp's tile views, `t[2:6, ::2]`, `t[-1, :]`) and slice assignment
// (`t[0:4, :] = v`). Tiles are values here, so a view is a copy of the selected elements and a slice assignment
// gives the updated tile; type inference refuses the forms whose results would depend on Warp's sharing.
// Element k of a selection (row-major over its shape, `nc` columns) is a.at(r0 + (k / nc) * rs, c0 + (k % nc) * cs);
// type inference checks every selected position is inside the tile (bounds are compile-time) or, for a
// run-time integer key, the native code clamps nothing and the caller's index must be in range (checked below).
#pragma once
#include "tile.h"

namespace wp {

template <int R, int C>
CUDA_CALLABLE inline bool tile_slice_inside(int32 r, int32 c) { return r >= 0 && r < R && c >= 0 && c < C; }

template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline Out tile_slice(const tile_t<T, R, C>& a, int32 r0, int32 rs, int32 c0, int32 cs, int32 nc) {
    Out out = Out();
    for (int k = 0; k < tile_traits<Out>::size; ++k) {
        const int32 r = r0 + (k / nc) * rs, c = c0 + (k % nc) * cs;
        // a run-time row index outside the tile reads zeros (as tile_view's elements outside do)
        if (tile_slice_inside<R, C>(r, c)) out.data[k] = a.at(r, c);
    }
    return out;
}
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_slice(const tile_t<T, R, C>&, int32 r0, int32 rs, int32 c0, int32 cs, int32 nc,
                                         tile_t<T, R, C>& adj_a, int32&, int32&, int32&, int32&, int32&,
                                         const Out& adj_ret) {
    for (int k = 0; k < tile_traits<Out>::size; ++k) {
        const int32 r = r0 + (k / nc) * rs, c = c0 + (k % nc) * cs;
        if (tile_slice_inside<R, C>(r, c)) adj_a.at(r, c) = add(adj_a.at(r, c), adj_ret.data[k]);
    }
}

// Advanced indexing t[indices, :] / t[:, indices]: element (i, j) of the result reads t at the index tile's entry
// on the gathered axis. Negative entries count from the end (NumPy's rule); Warp calls entries beyond either end
// invalid: here they read 0 and take no adjoint. Repeated entries add their adjoints.
template <typename I, int K, int KC>
CUDA_CALLABLE inline int32 tile_gather_index(const tile_t<I, K, KC>& idx, int k, int length) {
    int64 v = int64(idx.data[k]);
    if (v < 0) v += length;
    return (v < 0 || v >= length) ? -1 : int32(v);
}
template <typename Out, typename T, int R, int C, typename I, int K, int KC>
CUDA_CALLABLE inline Out tile_gather(const tile_t<T, R, C>& a, const tile_t<I, K, KC>& idx, int32 axis) {
    Out out = Out();
    const int OC = tile_traits<Out>::cols;
    for (int k = 0; k < tile_traits<Out>::size; ++k) {
        const int i = k / OC, j = k % OC;
        const int32 r = axis == 0 ? tile_gather_index(idx, i, R) : i;
        const int32 c = axis == 0 ? j : tile_gather_index(idx, j, C);
        if (r >= 0 && c >= 0) out.data[k] = a.at(r, c);
    }
    return out;
}
template <typename Out, typename T, int R, int C, typename I, int K, int KC>
CUDA_CALLABLE inline void adj_tile_gather(const tile_t<T, R, C>&, const tile_t<I, K, KC>& idx, int32 axis,
                                          tile_t<T, R, C>& adj_a, tile_t<I, K, KC>&, int32&, const Out& adj_ret) {
    const int OC = tile_traits<Out>::cols;
    for (int k = 0; k < tile_traits<Out>::size; ++k) {
        const int i = k / OC, j = k % OC;
        const int32 r = axis == 0 ? tile_gather_index(idx, i, R) : i;
        const int32 c = axis == 0 ? j : tile_gather_index(idx, j, C);
        if (r >= 0 && c >= 0) adj_a.at(r, c) = add(adj_a.at(r, c), adj_ret.data[k]);
    }
}

// t with the selection replaced by v's elements, in order. The selection's positions are distinct (a slice never
// repeats an index), so each position takes exactly one element of v.
template <typename T, int R, int C, typename V>
CUDA_CALLABLE inline tile_t<T, R, C> tile_slice_assign(const tile_t<T, R, C>& t, const V& v, int32 r0, int32 rs,
                                                       int32 c0, int32 cs, int32 nc) {
    tile_t<T, R, C> out = t;
    for (int k = 0; k < tile_traits<V>::size; ++k) {
        const int32 r = r0 + (k / nc) * rs, c = c0 + (k % nc) * cs;
        if (tile_slice_inside<R, C>(r, c)) out.at(r, c) = v.data[k];
    }
    return out;
}
// The overwritten positions' adjoint goes to v, the others' to t.
template <typename T, int R, int C, typename V>
CUDA_CALLABLE inline void adj_tile_slice_assign(const tile_t<T, R, C>&, const V&, int32 r0, int32 rs, int32 c0,
                                                int32 cs, int32 nc, tile_t<T, R, C>& adj_t, V& adj_v, int32&, int32&,
                                                int32&, int32&, int32&, const tile_t<T, R, C>& adj_ret) {
    tile_t<T, R, C> passed = adj_ret;
    for (int k = 0; k < tile_traits<V>::size; ++k) {
        const int32 r = r0 + (k / nc) * rs, c = c0 + (k % nc) * cs;
        if (!tile_slice_inside<R, C>(r, c)) continue;
        adj_v.data[k] = add(adj_v.data[k], adj_ret.at(r, c));
        passed.at(r, c) = T();
    }
    for (int k = 0; k < R * C; ++k) adj_t.data[k] = add(adj_t.data[k], passed.data[k]);
}

}  // namespace wp

namespace wp {

// Warp's tile_assign(dst, src, offset): src's elements written into dst from (oi, oj), in place (the compiler
// rebinds dst); positions outside dst are not written. Elements convert to dst's type.
template <typename T, int R, int C, typename S, int SR, int SC>
CUDA_CALLABLE inline void tile_assign(tile_t<T, R, C>& dst, const tile_t<S, SR, SC>& src, int32 oi, int32 oj) {
    for (int i = 0; i < SR; ++i)
        for (int j = 0; j < SC; ++j)
            if (tile_slice_inside<R, C>(oi + i, oj + j)) dst.at(oi + i, oj + j) = T(src.at(i, j));
}
// adj_ret is the updated dst's adjoint: the overwritten positions' share goes to src, the others' to the old dst.
template <typename T, int R, int C, typename S, int SR, int SC>
CUDA_CALLABLE inline void adj_tile_assign(const tile_t<T, R, C>&, const tile_t<S, SR, SC>&, int32 oi, int32 oj,
                                          tile_t<T, R, C>& adj_dst, tile_t<S, SR, SC>& adj_src, int32&, int32&,
                                          const tile_t<T, R, C>& adj_ret) {
    tile_t<T, R, C> passed = adj_ret;
    for (int i = 0; i < SR; ++i)
        for (int j = 0; j < SC; ++j)
            if (tile_slice_inside<R, C>(oi + i, oj + j)) {
                adj_src.at(i, j) = add(adj_src.at(i, j), S(adj_ret.at(oi + i, oj + j)));
                passed.at(oi + i, oj + j) = T();
            }
    for (int k = 0; k < R * C; ++k) adj_dst.data[k] = add(adj_dst.data[k], passed.data[k]);
}

}  // namespace wp
