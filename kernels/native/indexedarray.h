// Warp's indexed arrays: a strided array read through optional int32 index arrays, one per dimension
// (kernels/runtime/indexedarray.py). Element access, atomics and views as for array_t, with their adjoints: the
// gradient argument of an indexed array is an indexed array over the parent's gradient with the same indices, so
// the gradient of a[i] lands in the parent's element a.data[indices[0][i]].
#pragma once
#include "array.h"

namespace wp {

// Layout shared with kernels/typesys.py (IndexedArrayDescriptor): keep in sync.
template <typename T>
struct indexedarray_t {
    array_t<T> data;     // the parent array, all of its dimensions
    int32* indices[4];   // indices[d]: the parent's coordinates along dimension d, or null (taken whole)
    int32 shape[4];      // the indexed array's shape: len(indices[d]) or the parent's extent
    CUDA_CALLABLE indexedarray_t() {
        for (int i = 0; i < 4; ++i) { indices[i] = nullptr; shape[i] = 0; }
    }
};

// The parent's coordinate of coordinate i along dimension d.
template <typename T> CUDA_CALLABLE inline int64 parent_index(const indexedarray_t<T>& a, int d, int64 i) {
    return a.indices[d] ? int64(a.indices[d][i]) : i;
}

#if defined(WP_DEBUG)
// Bounds are the indexed array's own shape (the index arrays' lengths), checked before the index arrays are read.
template <typename T>
CUDA_CALLABLE inline bool check_bounds(const indexedarray_t<T>& a, int line, int n, int64 i0, int64 i1, int64 i2,
                                       int64 i3) {
    array_t<T> outline;
    outline.ndim = a.data.ndim;
    for (int d = 0; d < 4; ++d) outline.shape[d] = a.shape[d];
    return check_bounds(outline, line, n, i0, i1, i2, i3);
}
#endif

template <typename T> CUDA_CALLABLE inline T& index(const indexedarray_t<T>& a, int wp_line, int64 i) {
    (void)wp_line;
    WP_CHECK(a, 1, i, 0, 0, 0);
    return index(a.data, wp_line, parent_index(a, 0, i));
}
template <typename T> CUDA_CALLABLE inline T& index(const indexedarray_t<T>& a, int wp_line, int64 i, int64 j) {
    (void)wp_line;
    WP_CHECK(a, 2, i, j, 0, 0);
    return index(a.data, wp_line, parent_index(a, 0, i), parent_index(a, 1, j));
}
template <typename T>
CUDA_CALLABLE inline T& index(const indexedarray_t<T>& a, int wp_line, int64 i, int64 j, int64 k) {
    (void)wp_line;
    WP_CHECK(a, 3, i, j, k, 0);
    return index(a.data, wp_line, parent_index(a, 0, i), parent_index(a, 1, j), parent_index(a, 2, k));
}
template <typename T>
CUDA_CALLABLE inline T& index(const indexedarray_t<T>& a, int wp_line, int64 i, int64 j, int64 k, int64 l) {
    (void)wp_line;
    WP_CHECK(a, 4, i, j, k, l);
    return index(a.data, wp_line, parent_index(a, 0, i), parent_index(a, 1, j), parent_index(a, 2, k),
                 parent_index(a, 3, l));
}

// a[i, ...] with fewer indices than dimensions: the indexed sub-array of the remaining dimensions (no copy). A
// missing gradient array stays missing.
template <typename T>
CUDA_CALLABLE inline indexedarray_t<T> view_n(const indexedarray_t<T>& a, int n, const int64* idx) {
    indexedarray_t<T> r;
    int64 mapped[4] = {0, 0, 0, 0};
    for (int d = 0; d < n; ++d) mapped[d] = a.data.data ? parent_index(a, d, idx[d]) : 0;
    r.data = view_n(a.data, n, mapped);
    for (int d = 0; d + n < 4; ++d) { r.indices[d] = a.indices[d + n]; r.shape[d] = a.shape[d + n]; }
    return r;
}
template <typename T> CUDA_CALLABLE inline indexedarray_t<T> view(const indexedarray_t<T>& a, int64 i) {
    const int64 idx[1] = {i};
    return view_n(a, 1, idx);
}
template <typename T> CUDA_CALLABLE inline indexedarray_t<T> view(const indexedarray_t<T>& a, int64 i, int64 j) {
    const int64 idx[2] = {i, j};
    return view_n(a, 2, idx);
}
template <typename T>
CUDA_CALLABLE inline indexedarray_t<T> view(const indexedarray_t<T>& a, int64 i, int64 j, int64 k) {
    const int64 idx[3] = {i, j, k};
    return view_n(a, 3, idx);
}

// ---- adjoints: as array_t's (array.h), on the element the indices select -----------------------------------

template <bool Atomic = true, typename T, typename... I>
CUDA_CALLABLE inline void adj_index_load_indexed(const indexedarray_t<T>& g, int line, const T& adj, I... i) {
    if (g.data.data) accumulate<Atomic>(&index(g, line, int64(i)...), adj);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const indexedarray_t<T>& g, int line, int64 i, const T& adj) {
    adj_index_load_indexed<Atomic>(g, line, adj, i);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const indexedarray_t<T>& g, int line, int64 i, int64 j, const T& adj) {
    adj_index_load_indexed<Atomic>(g, line, adj, i, j);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const indexedarray_t<T>& g, int line, int64 i, int64 j, int64 k,
                                         const T& adj) {
    adj_index_load_indexed<Atomic>(g, line, adj, i, j, k);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const indexedarray_t<T>& g, int line, int64 i, int64 j, int64 k, int64 l,
                                         const T& adj) {
    adj_index_load_indexed<Atomic>(g, line, adj, i, j, k, l);
}

template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_store_indexed(const indexedarray_t<T>& g, int line, T& adj_v, I... i) {
    if (g.data.data) adj_store_element(g.data, index(g, line, int64(i)...), adj_v);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const indexedarray_t<T>& g, int line, int64 i, T& adj_v) {
    adj_index_store_indexed(g, line, adj_v, i);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const indexedarray_t<T>& g, int line, int64 i, int64 j, T& adj_v) {
    adj_index_store_indexed(g, line, adj_v, i, j);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const indexedarray_t<T>& g, int line, int64 i, int64 j, int64 k,
                                          T& adj_v) {
    adj_index_store_indexed(g, line, adj_v, i, j, k);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const indexedarray_t<T>& g, int line, int64 i, int64 j, int64 k, int64 l,
                                          T& adj_v) {
    adj_index_store_indexed(g, line, adj_v, i, j, k, l);
}

template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_accumulate(const indexedarray_t<T>& g, int line, T& adj_v, I... i) {
    if (g.data.data) adj_v = add(adj_v, index(g, line, int64(i)...));
}

template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_minmax(const indexedarray_t<T>& a, const indexedarray_t<T>& g, int line,
                                           const T& v, T& adj_v, I... i) {
    if (g.data.data) minmax_winner(index(a, line, int64(i)...), v, index(g, line, int64(i)...), adj_v);
}

template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_overwrite(const indexedarray_t<T>& g, int line, T& adj_v, I... i) {
    if (g.data.data) {
        T& slot = index(g, line, int64(i)...);
        adj_v = add(adj_v, slot);
        slot = adj_zero<T>();
    }
}

}  // namespace wp
