// Tiles of 3 and 4 dimensions: loads and stores from 3-d/4-d arrays, numpy broadcasting, reductions along one axis.
// A tile of shape (n0, n1, n2[, n3]) is stored row-major in a tile_t<T, n0, n1*n2[*n3]>; its axes are not part of
// that type, so these functions take the extents (and offsets) as arguments: shapes in the array's dimension order,
// padded with 1 (offsets with 0) up to four entries. Type inference passes them as constants.
#pragma once
#include "tile.h"

namespace wp {

// The four coordinates of element k of a row-major (n0, n1, n2, n3) block.
CUDA_CALLABLE inline void tile_nd_coords(int k, int n1, int n2, int n3, int c[4]) {
    c[3] = k % n3; k /= n3;
    c[2] = k % n2; k /= n2;
    c[1] = k % n1;
    c[0] = k / n1;
}

// The array element at offset + c on the array's own dimensions, or null when it lies outside the array.
template <typename T>
CUDA_CALLABLE inline T* tile_nd_slot(const array_t<T>& a, const int c[4], int32 o0, int32 o1, int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    char* p = (char*)a.data;
    for (int d = 0; d < a.ndim; ++d) {
        int64 x = int64(o[d]) + c[d];
        if (x < 0 || x >= a.shape[d]) return nullptr;
        p += x * a.strides[d];
    }
    return (T*)p;
}

// ---- memory ---------------------------------------------------------------------------------------------------

template <typename Tile, typename T>
CUDA_CALLABLE inline Tile tile_load_nd(const array_t<T>& a, int32 n0, int32 n1, int32 n2, int32 n3, int32 o0,
                                       int32 o1, int32 o2, int32 o3) {
    Tile t = Tile();  // elements outside the array read as zero
    int c[4];
    for (int k = 0; k < tile_traits<Tile>::size; ++k) {
        tile_nd_coords(k, n1, n2, n3, c);
        if (const T* src = tile_nd_slot(a, c, o0, o1, o2, o3)) t.data[k] = *src;
    }
    return t;
}
template <typename Tile, typename T>
CUDA_CALLABLE inline void adj_tile_load_nd(const array_t<T>&, int32 n0, int32 n1, int32 n2, int32 n3, int32 o0,
                                           int32 o1, int32 o2, int32 o3, const array_t<T>& adj_a, int32&, int32&,
                                           int32&, int32&, int32&, int32&, int32&, int32&, const Tile& adj_ret) {
    if (!adj_a.data) return;
    int c[4];
    for (int k = 0; k < tile_traits<Tile>::size; ++k) {
        tile_nd_coords(k, n1, n2, n3, c);
        if (T* slot = tile_nd_slot(adj_a, c, o0, o1, o2, o3)) atomic_rmw_add(slot, adj_ret.data[k]);
    }
}

template <typename T, int R, int C>
CUDA_CALLABLE inline void tile_store_nd(const array_t<T>& a, const tile_t<T, R, C>& t, int32 n0, int32 n1, int32 n2,
                                        int32 n3, int32 o0, int32 o1, int32 o2, int32 o3) {
    int c[4];
    for (int k = 0; k < R * C; ++k) {
        tile_nd_coords(k, n1, n2, n3, c);
        if (T* dst = tile_nd_slot(a, c, o0, o1, o2, o3)) *dst = t.data[k];  // outside the array: not written
    }
}
// The gradient of each element the tile put in the array flows back to the tile; `consume` as tile_store's.
template <typename T, int R, int C>
CUDA_CALLABLE inline void tile_nd_gradient_to_tile(const array_t<T>& adj_a, tile_t<T, R, C>& adj_t, int32 n1,
                                                   int32 n2, int32 n3, int32 o0, int32 o1, int32 o2, int32 o3,
                                                   bool consume) {
    if (!adj_a.data) return;
    int c[4];
    for (int k = 0; k < R * C; ++k) {
        tile_nd_coords(k, n1, n2, n3, c);
        T* slot = tile_nd_slot(adj_a, c, o0, o1, o2, o3);
        if (!slot) continue;
        adj_t.data[k] = add(adj_t.data[k], *slot);
        if (consume) *slot = adj_zero<T>();
    }
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_store_nd(const array_t<T>&, const tile_t<T, R, C>&, int32 n0, int32 n1, int32 n2,
                                            int32 n3, int32 o0, int32 o1, int32 o2, int32 o3, const array_t<T>& adj_a,
                                            tile_t<T, R, C>& adj_t, int32&, int32&, int32&, int32&, int32&, int32&,
                                            int32&, int32&) {
    tile_nd_gradient_to_tile(adj_a, adj_t, n1, n2, n3, o0, o1, o2, o3, (adj_a.flags & ARRAY_FLAG_CONSUME) != 0);
}

template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> tile_atomic_add_nd(const array_t<T>& a, const tile_t<T, R, C>& t, int32 n0,
                                                        int32 n1, int32 n2, int32 n3, int32 o0, int32 o1, int32 o2,
                                                        int32 o3) {
    tile_t<T, R, C> old = tile_t<T, R, C>();
    int c[4];
    for (int k = 0; k < R * C; ++k) {
        tile_nd_coords(k, n1, n2, n3, c);
        if (T* dst = tile_nd_slot(a, c, o0, o1, o2, o3)) old.data[k] = atomic_rmw_add(dst, t.data[k]);
    }
    return old;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_atomic_add_nd(const array_t<T>&, const tile_t<T, R, C>&, int32 n0, int32 n1,
                                                 int32 n2, int32 n3, int32 o0, int32 o1, int32 o2, int32 o3,
                                                 const array_t<T>& adj_a, tile_t<T, R, C>& adj_t, int32&, int32&,
                                                 int32&, int32&, int32&, int32&, int32&, int32&,
                                                 const tile_t<T, R, C>&) {
    tile_nd_gradient_to_tile(adj_a, adj_t, n1, n2, n3, o0, o1, o2, o3, false);  // the add kept the earlier value
}

// ---- broadcast: source (s0..s3) to output (n0..n3), both padded at the front with 1; an axis of extent 1 in the
// source repeats (numpy's rules, checked by type inference) ----------------------------------------------------------

CUDA_CALLABLE inline int tile_nd_broadcast_source(int k, int s1, int s2, int s3, int n1, int n2, int n3, int s0) {
    int c[4];
    tile_nd_coords(k, n1, n2, n3, c);
    const int s[4] = {s0, s1, s2, s3};
    int src = 0;
    for (int d = 0; d < 4; ++d) src = src * s[d] + (s[d] == 1 ? 0 : c[d]);
    return src;
}
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline Out tile_broadcast_nd(const tile_t<T, R, C>& a, int32 s0, int32 s1, int32 s2, int32 s3,
                                           int32 n0, int32 n1, int32 n2, int32 n3) {
    Out r;
    for (int k = 0; k < tile_traits<Out>::size; ++k)
        r.data[k] = a.data[tile_nd_broadcast_source(k, s1, s2, s3, n1, n2, n3, s0)];
    return r;
}
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_broadcast_nd(const tile_t<T, R, C>&, int32 s0, int32 s1, int32 s2, int32 s3,
                                                int32 n0, int32 n1, int32 n2, int32 n3, tile_t<T, R, C>& adj_a, int32&,
                                                int32&, int32&, int32&, int32&, int32&, int32&, int32&,
                                                const Out& adj_ret) {
    for (int k = 0; k < tile_traits<Out>::size; ++k) {
        T& slot = adj_a.data[tile_nd_broadcast_source(k, s1, s2, s3, n1, n2, n3, s0)];
        slot = add(slot, adj_ret.data[k]);
    }
}

// ---- element access: t[i, j, k(, l)] of a tile of extents (n0, n1, n2, n3) ------------------------------------------

CUDA_CALLABLE inline int tile_nd_flat(int32 n1, int32 n2, int32 n3, int32 i, int32 j, int32 k, int32 l) {
    return ((i * n1 + j) * n2 + k) * n3 + l;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline T extract_nd(const tile_t<T, R, C>& t, int32 n1, int32 n2, int32 n3, int32 i, int32 j, int32 k,
                                  int32 l) {
    return t.data[tile_nd_flat(n1, n2, n3, i, j, k, l)];
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_extract_nd(const tile_t<T, R, C>&, int32 n1, int32 n2, int32 n3, int32 i, int32 j,
                                         int32 k, int32 l, tile_t<T, R, C>& adj_t, int32&, int32&, int32&, int32&,
                                         int32&, int32&, int32&, const T& adj_ret) {
    int at = tile_nd_flat(n1, n2, n3, i, j, k, l);
    adj_t.data[at] = add(adj_t.data[at], adj_ret);
}
// t[i, j, k(, l)] = v: a new tile; the written element's gradient goes to v, the others' to the old tile.
template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> assign_nd(const tile_t<T, R, C>& t, int32 n1, int32 n2, int32 n3, int32 i, int32 j,
                                               int32 k, int32 l, const T& v) {
    tile_t<T, R, C> r = t;
    r.data[tile_nd_flat(n1, n2, n3, i, j, k, l)] = v;
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_assign_nd(const tile_t<T, R, C>&, int32 n1, int32 n2, int32 n3, int32 i, int32 j,
                                        int32 k, int32 l, const T&, tile_t<T, R, C>& adj_t, int32&, int32&, int32&,
                                        int32&, int32&, int32&, int32&, T& adj_v, const tile_t<T, R, C>& adj_ret) {
    int at = tile_nd_flat(n1, n2, n3, i, j, k, l);
    for (int q = 0; q < R * C; ++q)
        if (q != at) adj_t.data[q] = add(adj_t.data[q], adj_ret.data[q]);
    adj_v = add(adj_v, adj_ret.data[at]);
}

// ---- reduction along one axis: the tile seen as (Outer, N, Inner) with N the reduced axis; each of the
// Outer * Inner lines folds left to one element of the result (row-major (Outer, Inner)) ----------------------------

template <typename Out, int Outer, int N, int Inner, typename F, typename T, int R, int C>
CUDA_CALLABLE inline Out tile_reduce_lines(F f, const tile_t<T, R, C>& a) {
    static_assert(Outer * N * Inner == R * C && Outer * Inner == tile_traits<Out>::size, "tile_reduce_lines: shape");
    Out r;
    for (int o = 0; o < Outer; ++o)
        for (int i = 0; i < Inner; ++i) {
            const T* line = a.data + o * N * Inner + i;
            T acc = line[0];
            for (int k = 1; k < N; ++k) acc = f(acc, line[k * Inner]);
            r.data[o * Inner + i] = acc;
        }
    return r;
}
template <int Outer, int N, int Inner, typename F, typename AdjF, typename T, int R, int C, typename Out>
CUDA_CALLABLE inline void adj_tile_reduce_lines(F f, AdjF adj_f, const tile_t<T, R, C>& a, tile_t<T, R, C>& adj_a,
                                                const Out& adj_ret) {
    T prefix[N];
    for (int o = 0; o < Outer; ++o)
        for (int i = 0; i < Inner; ++i) {
            const int base = o * N * Inner + i;
            prefix[0] = a.data[base];
            for (int k = 1; k < N; ++k) prefix[k] = f(prefix[k - 1], a.data[base + k * Inner]);
            T adj_acc = adj_ret.data[o * Inner + i];
            for (int k = N - 1; k >= 1; --k) {
                T adj_prev = T();  // T() is zero for scalars, vectors and matrices alike
                const int at = base + k * Inner;
                adj_f(prefix[k - 1], a.data[at], adj_prev, adj_a.data[at], adj_acc);
                adj_acc = adj_prev;
            }
            adj_a.data[base] = add(adj_a.data[base], adj_acc);
        }
}

}  // namespace wp
