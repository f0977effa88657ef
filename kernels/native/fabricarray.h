// Warp's Fabric arrays: elements spread over buckets of contiguous memory (kernels/runtime/fabricarray.py), read
// and written in kernels as a[i] (element i of the concatenated buckets), and arrays of 1-d arrays (a[i] a
// plain array, a[i, j] its element). An indexed fabric array reads element indices[i]. Fabric memory has no
// gradient storage: kernels treat Fabric arrays as constants for differentiation (their adjoints add nothing),
// and a backward pass through a kernel that writes one is refused on the host.
#pragma once
#include "array.h"

namespace wp {

// Layout shared with kernels/typesys.py (FabricBucket, FabricArrayDescriptor, IndexedFabricArrayDescriptor).
struct fabricbucket_t {
    size_t index_start;  // first element of the bucket, counted over all buckets
    size_t index_end;    // one past its last element
    void* ptr;           // its elements; for an array of arrays, one pointer per element
    size_t* lengths;     // array of arrays only: the length of each element's array
};

template <typename T>
struct fabricarray_t {
    fabricbucket_t* buckets;
    size_t nbuckets;
    size_t size;
    CUDA_CALLABLE fabricarray_t() : buckets(nullptr), nbuckets(0), size(0) {}
};

template <typename T>
struct indexedfabricarray_t {
    fabricarray_t<T> fa;
    int32* indices;
    size_t size;
    CUDA_CALLABLE indexedfabricarray_t() : indices(nullptr), size(0) {}
};

template <typename T> CUDA_CALLABLE inline uint64 fabric_size(const fabricarray_t<T>& a) { return uint64(a.size); }
template <typename T> CUDA_CALLABLE inline uint64 fabric_size(const indexedfabricarray_t<T>& a) {
    return uint64(a.size);
}

// The bucket holding element i (binary search over the buckets' ranges), and i's position in it.
template <typename T>
CUDA_CALLABLE inline const fabricbucket_t* fabric_bucket(const fabricarray_t<T>& a, int64 i, int64& offset) {
    size_t lo = 0, hi = a.nbuckets;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        const fabricbucket_t* b = a.buckets + mid;
        if (size_t(i) >= b->index_end) lo = mid + 1;
        else if (size_t(i) < b->index_start) hi = mid;
        else { offset = i - int64(b->index_start); return b; }
    }
    offset = 0;
    return a.buckets;  // only reached out of bounds (caught in debug mode)
}

#if defined(WP_DEBUG)
template <typename T>
CUDA_CALLABLE inline bool check_fabric(size_t size, int line, int n, int64 i, int64 j, int64 length) {
    array_t<T> outline;
    outline.ndim = n;
    outline.shape[0] = int32(size);
    outline.shape[1] = int32(length);
    return check_bounds(outline, line, n, i, j, 0, 0);
}
#define WP_CHECK_FABRIC(size, n, i, j, length) \
    if (!check_fabric<T>(size, wp_line, n, i, j, length)) return *scratch<T>()
#else
#define WP_CHECK_FABRIC(size, n, i, j, length)
#endif

template <typename T> CUDA_CALLABLE inline T& index(const fabricarray_t<T>& a, int wp_line, int64 i) {
    (void)wp_line;
    WP_CHECK_FABRIC(a.size, 1, i, 0, 0);
    int64 k;
    const fabricbucket_t* b = fabric_bucket(a, i, k);
    return ((T*)b->ptr)[k];
}
// element j of the array at element i of an array of arrays
template <typename T> CUDA_CALLABLE inline T& index(const fabricarray_t<T>& a, int wp_line, int64 i, int64 j) {
    (void)wp_line;
    WP_CHECK_FABRIC(a.size, 1, i, 0, 0);
    int64 k;
    const fabricbucket_t* b = fabric_bucket(a, i, k);
    WP_CHECK_FABRIC(a.size, 2, i, j, int64(b->lengths[k]));
    return ((T**)b->ptr)[k][j];
}
template <typename T> CUDA_CALLABLE inline array_t<T> view(const fabricarray_t<T>& a, int64 i) {
    int64 k;
    const fabricbucket_t* b = fabric_bucket(a, i, k);
    array_t<T> r;
    r.data = ((T**)b->ptr)[k];
    r.ndim = 1;
    r.shape[0] = int32(b->lengths[k]);
    r.strides[0] = sizeof(T);
    return r;
}

template <typename T> CUDA_CALLABLE inline T& index(const indexedfabricarray_t<T>& a, int wp_line, int64 i) {
    (void)wp_line;
    WP_CHECK_FABRIC(a.size, 1, i, 0, 0);
    return index(a.fa, wp_line, int64(a.indices[i]));
}
template <typename T>
CUDA_CALLABLE inline T& index(const indexedfabricarray_t<T>& a, int wp_line, int64 i, int64 j) {
    (void)wp_line;
    WP_CHECK_FABRIC(a.size, 1, i, 0, 0);
    return index(a.fa, wp_line, int64(a.indices[i]), j);
}
template <typename T> CUDA_CALLABLE inline array_t<T> view(const indexedfabricarray_t<T>& a, int64 i) {
    return view(a.fa, int64(a.indices[i]));
}

// ---- adjoints: Fabric memory has no gradient storage, so its elements are constants for differentiation ------
#define WP_FABRIC_NO_ADJOINT(A) \
    template <bool Atomic = true, typename T, typename... I> \
    CUDA_CALLABLE inline void adj_index_load(const A<T>&, int, I...) {} \
    template <typename T, typename... I> CUDA_CALLABLE inline void adj_index_store(const A<T>&, int, I&&...) {} \
    template <typename T, typename... I> CUDA_CALLABLE inline void adj_index_accumulate(const A<T>&, int, T&, I...) {} \
    template <typename T, typename... I> \
    CUDA_CALLABLE inline void adj_index_minmax(const A<T>&, const A<T>&, int, const T&, T&, I...) {} \
    template <typename T, typename... I> CUDA_CALLABLE inline void adj_index_overwrite(const A<T>&, int, T&, I...) {}
WP_FABRIC_NO_ADJOINT(fabricarray_t)
WP_FABRIC_NO_ADJOINT(indexedfabricarray_t)
#undef WP_FABRIC_NO_ADJOINT

}  // namespace wp
