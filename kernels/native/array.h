// Arrays (strided views of 1-4 dimensions), element load/store with adjoints, and atomics.
#pragma once
#include "core.h"
#include "scalar_ops.h"
#include "parallel.h"

namespace wp {

// Layout shared with kernels/array.py (ArrayDescriptor): keep in sync.
// A gradient array whose primal array is stored to by plain writes (a[i] = v) in this launch, and whose
// elements those writes consume: the write's adjoint takes the element's gradient and zeroes it, since the value
// written replaces whatever the earlier writes of that element put there (Warp's final-write-wins). Not set for a
// gradient array the caller passed explicitly, nor for an array with retain_grad.
#define ARRAY_FLAG_CONSUME 1
// A gradient array that is its primal array's own .grad (set with or without retain_grad). retain_grad belongs to
// the array the caller made, not to a view a kernel takes of it: as in Warp 1.19, plain writes through an in-kernel
// view (a[i], a[0:1, :]) of such a gradient consume its elements even when the array has retain_grad.
#define ARRAY_FLAG_OWN_GRAD 2

template <typename T>
struct array_t {
    T* data;
    int32 shape[4];
    int64 strides[4];  // bytes
    int32 ndim;
    int32 flags;  // ARRAY_FLAG_*, set on gradient arrays passed to a backward launch
    CUDA_CALLABLE array_t() : data(nullptr), ndim(0), flags(0) {
        for (int i = 0; i < 4; ++i) { shape[i] = 0; strides[i] = 0; }
    }
    // as Warp's array_t: C++ snippets (@wp.func_native) index a contiguous array directly, `out[tid] = x[tid]`
    CUDA_CALLABLE inline operator T*() const { return data; }
};

// `if a:` / `not a` of an array in a kernel (Warp's): whether it has memory; an argument passed as None has none.
template <typename T>
CUDA_CALLABLE inline bool array_truthy(const array_t<T>& a) { return a.data != nullptr; }

// Debug mode: the first out-of-bounds access of a launch is recorded here and reported by the host.
#if defined(WP_DEBUG)
#if defined(WP_CUDA)
__device__ error_t g_error;
#else
extern "C" error_t g_error;
#endif
template <typename T>
CUDA_CALLABLE inline bool check_bounds(const array_t<T>& a, int line, int n, int64 i0, int64 i1, int64 i2, int64 i3) {
    const int64 idx[4] = {i0, i1, i2, i3};
    bool ok = (n == a.ndim);
    for (int d = 0; d < n && ok; ++d) ok = idx[d] >= 0 && idx[d] < a.shape[d];
    if (!ok && !g_error.set) {
        g_error.set = 1;
        g_error.kind = 1;
        g_error.line = line;
        g_error.ndim = n;
        for (int d = 0; d < 4; ++d) { g_error.index[d] = idx[d]; g_error.shape[d] = a.shape[d]; }
    }
    return ok;
}
#define WP_CHECK(a, n, i0, i1, i2, i3) if (!check_bounds(a, wp_line, n, i0, i1, i2, i3)) return *scratch<T>()
template <typename T> CUDA_CALLABLE inline T* scratch() {
    // Out-of-bounds accesses in debug mode read and write this slot instead of foreign memory. On CUDA a
    // function-scope static must have no constructor: raw bytes there.
#if defined(WP_CUDA)
    alignas(16) static WP_DEVICE unsigned char slot[sizeof(T)];
    return reinterpret_cast<T*>(slot);
#else
    static T slot;
    return &slot;
#endif
}
#else
#define WP_CHECK(a, n, i0, i1, i2, i3)
#endif

template <typename T> CUDA_CALLABLE inline T& index(const array_t<T>& a, int wp_line, int64 i) {
    (void)wp_line;
    WP_CHECK(a, 1, i, 0, 0, 0);
    return *(T*)((char*)a.data + i * a.strides[0]);
}
template <typename T> CUDA_CALLABLE inline T& index(const array_t<T>& a, int wp_line, int64 i, int64 j) {
    (void)wp_line;
    WP_CHECK(a, 2, i, j, 0, 0);
    return *(T*)((char*)a.data + i * a.strides[0] + j * a.strides[1]);
}
template <typename T> CUDA_CALLABLE inline T& index(const array_t<T>& a, int wp_line, int64 i, int64 j, int64 k) {
    (void)wp_line;
    WP_CHECK(a, 3, i, j, k, 0);
    return *(T*)((char*)a.data + i * a.strides[0] + j * a.strides[1] + k * a.strides[2]);
}
template <typename T>
CUDA_CALLABLE inline T& index(const array_t<T>& a, int wp_line, int64 i, int64 j, int64 k, int64 l) {
    (void)wp_line;
    WP_CHECK(a, 4, i, j, k, l);
    return *(T*)((char*)a.data + i * a.strides[0] + j * a.strides[1] + k * a.strides[2] + l * a.strides[3]);
}

// a[i, ...] with fewer indices than dimensions: the sub-array of the remaining dimensions, sharing memory. A
// missing array (a gradient that was not allocated) stays missing. A view of a gradient array keeps its flags:
// a plain write through the view consumes the element's gradient as a write into the parent does; a view of an
// array's own gradient consumes even under retain_grad (view_flags).
CUDA_CALLABLE inline int32 view_flags(int32 f) { return (f & ARRAY_FLAG_OWN_GRAD) ? (f | ARRAY_FLAG_CONSUME) : f; }
template <typename T> CUDA_CALLABLE inline array_t<T> view_n(const array_t<T>& a, int n, const int64* idx) {
    array_t<T> r;
    if (!a.data) return r;
    r.flags = view_flags(a.flags);
    char* p = (char*)a.data;
    for (int d = 0; d < n; ++d) p += idx[d] * a.strides[d];
    r.data = (T*)p;
    r.ndim = a.ndim - n;
    for (int d = 0; d < r.ndim; ++d) { r.shape[d] = a.shape[d + n]; r.strides[d] = a.strides[d + n]; }
    return r;
}
template <typename T> CUDA_CALLABLE inline array_t<T> view(const array_t<T>& a, int64 i) {
    const int64 idx[1] = {i};
    return view_n(a, 1, idx);
}
template <typename T> CUDA_CALLABLE inline array_t<T> view(const array_t<T>& a, int64 i, int64 j) {
    const int64 idx[2] = {i, j};
    return view_n(a, 2, idx);
}
template <typename T> CUDA_CALLABLE inline array_t<T> view(const array_t<T>& a, int64 i, int64 j, int64 k) {
    const int64 idx[3] = {i, j, k};
    return view_n(a, 3, idx);
}

// a[..., start:stop:step, ...] along dimension d, with Python's slice rules (bit 0/1/2 of `given`: start/stop/step
// written; negative bounds count from the end; bounds clamped). A zero step (only possible at run time; a literal
// one is refused by the compiler) selects nothing. Same missing-array rule as view_n.
template <typename T>
CUDA_CALLABLE inline array_t<T> slice_view(const array_t<T>& a, int32 d, int64 start, int64 stop, int64 step,
                                           int32 given) {
    array_t<T> r;
    if (!a.data) return r;
    r = a;
    r.flags = view_flags(a.flags);
    const int64 n = a.shape[d];
    if (!(given & 4)) step = 1;
    const int64 lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    const int64 s0 = (given & 1) ? (start < 0 ? (start + n > lo ? start + n : lo) : (start < hi ? start : hi))
                                 : (step > 0 ? lo : hi);
    const int64 s1 = (given & 2) ? (stop < 0 ? (stop + n > lo ? stop + n : lo) : (stop < hi ? stop : hi))
                                 : (step > 0 ? hi : lo);
    int64 count = 0;
    if (step > 0 && s1 > s0) count = (s1 - s0 + step - 1) / step;
    if (step < 0 && s0 > s1) count = (s0 - s1 - step - 1) / (-step);
    if (count > 0) r.data = (T*)((char*)a.data + s0 * a.strides[d]);
    r.shape[d] = (int32)count;
    r.strides[d] = a.strides[d] * step;
    return r;
}
// a[..., i, ...] inside a subscript that also slices: dimension d dropped at index i (negative i counts from the end)
template <typename T> CUDA_CALLABLE inline array_t<T> index_view(const array_t<T>& a, int32 d, int64 i) {
    array_t<T> r;
    if (!a.data) return r;
    if (i < 0) i += a.shape[d];
    r.flags = view_flags(a.flags);
    r.data = (T*)((char*)a.data + i * a.strides[d]);
    r.ndim = a.ndim - 1;
    for (int k = 0; k < r.ndim; ++k) {
        const int src = k < d ? k : k + 1;
        r.shape[k] = a.shape[src];
        r.strides[k] = a.strides[src];
    }
    return r;
}

// ---- atomics on one address; return the previous value --------------------------------------------------------

// Compare-and-swap on the bits of any 1-8 byte scalar: the building block of float atomics on the CPU.
template <typename T> CUDA_CALLABLE inline bool cas_bits(T* p, T& expected, T desired) {
#if defined(WP_CUDA)
    if (sizeof(T) == 4) {
        unsigned int e, d;
        memcpy(&e, &expected, 4); memcpy(&d, &desired, 4);
        unsigned int old = atomicCAS((unsigned int*)p, e, d);
        bool ok = old == e;
        memcpy(&expected, &old, 4);
        return ok;
    } else if (sizeof(T) == 8) {
        unsigned long long e, d;
        memcpy(&e, &expected, 8); memcpy(&d, &desired, 8);
        unsigned long long old = atomicCAS((unsigned long long*)p, e, d);
        bool ok = old == e;
        memcpy(&expected, &old, 8);
        return ok;
    } else {
        // 1 and 2 byte values: CAS on the enclosing aligned 32-bit word.
        unsigned int* word = (unsigned int*)((size_t)p & ~size_t(3));
        unsigned int shift = unsigned((size_t)p & 3) * 8;
        unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
        unsigned int e_bits = 0, d_bits = 0;
        memcpy(&e_bits, &expected, sizeof(T)); memcpy(&d_bits, &desired, sizeof(T));
        unsigned int cur = *word;
        unsigned int assumed = (cur & ~mask) | (e_bits << shift);
        unsigned int old = atomicCAS(word, assumed, (cur & ~mask) | (d_bits << shift));
        unsigned int old_bits = (old & mask) >> shift;
        memcpy(&expected, &old_bits, sizeof(T));
        return old == assumed;
    }
#else
    return __atomic_compare_exchange(p, &expected, &desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

template <typename T> CUDA_CALLABLE inline T atomic_rmw_add(T* p, T v) {
    T old = *p;
    while (!cas_bits(p, old, T(old + v))) {}
    return old;
}
// min/max as Warp's (fmin/fmax): a NaN element is replaced by the value, a NaN value leaves a number in place.
// `old != old` holds only for a NaN (never for integers).
template <typename T> CUDA_CALLABLE inline T atomic_rmw_min(T* p, T v) {
    T old = *p;
    while ((v < old || old != old) && !cas_bits(p, old, v)) {}
    return old;
}
template <typename T> CUDA_CALLABLE inline T atomic_rmw_max(T* p, T v) {
    T old = *p;
    while ((v > old || old != old) && !cas_bits(p, old, v)) {}
    return old;
}

// Bitwise read-modify-writes, exchange and compare-and-swap (no gradient): compare-and-swap loops on the element's
// bits, for CPU and CUDA alike. atomic_rmw_cas returns the old value: `compare` when the swap happened.
template <typename T> CUDA_CALLABLE inline T atomic_rmw_and(T* p, T v) {
    T old = *p;
    while (!cas_bits(p, old, T(old & v))) {}
    return old;
}
template <typename T> CUDA_CALLABLE inline T atomic_rmw_or(T* p, T v) {
    T old = *p;
    while (!cas_bits(p, old, T(old | v))) {}
    return old;
}
template <typename T> CUDA_CALLABLE inline T atomic_rmw_xor(T* p, T v) {
    T old = *p;
    while (!cas_bits(p, old, T(old ^ v))) {}
    return old;
}
template <typename T> CUDA_CALLABLE inline T atomic_rmw_exch(T* p, T v) {
    T old = *p;
    while (!cas_bits(p, old, v)) {}
    return old;
}
template <typename T> CUDA_CALLABLE inline T atomic_rmw_cas(T* p, T compare, T v) {
    T expected = compare;
    cas_bits(p, expected, v);
    return expected;
}

#if !defined(WP_CUDA)
#define WP_NATIVE_FETCH_ADD(T) \
    inline T atomic_rmw_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
WP_FOR_INT_TYPES(WP_NATIVE_FETCH_ADD)
#undef WP_NATIVE_FETCH_ADD
#else
inline __device__ float32 atomic_rmw_add(float32* p, float32 v) { return atomicAdd(p, v); }
inline __device__ float64 atomic_rmw_add(float64* p, float64 v) { return atomicAdd(p, v); }
inline __device__ int32 atomic_rmw_add(int32* p, int32 v) { return atomicAdd(p, v); }
inline __device__ uint32 atomic_rmw_add(uint32* p, uint32 v) { return atomicAdd(p, v); }
inline __device__ uint64 atomic_rmw_add(uint64* p, uint64 v) {
    return atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
#endif

#if !defined(WP_CUDA)
// A run of n float32 components (a vector, matrix or quaternion) on the CPU: x86 has no atomic float add and every
// compare-and-swap is a full fence, so each 8-byte aligned pair of components takes one 64-bit CAS instead of two.
typedef uint64 __attribute__((may_alias)) uint64_alias;
inline void atomic_add_float32_run(float32* p, const float32* v, float32* old, unsigned n) {
    unsigned k = 0;
    while (k < n) {
        if (k + 1 < n && ((size_t)(p + k) & 7) == 0) {
            uint64_alias* pair = (uint64_alias*)(p + k);
            uint64 expected = __atomic_load_n(pair, __ATOMIC_RELAXED), desired;
            do {
                float32 sum[2];
                memcpy(sum, &expected, 8);
                sum[0] += v[k];
                sum[1] += v[k + 1];
                memcpy(&desired, sum, 8);
            } while (!__atomic_compare_exchange_n(pair, &expected, desired, false, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED));
            memcpy(old + k, &expected, 8);
            k += 2;
        } else {
            old[k] = atomic_rmw_add(p + k, v[k]);
            k += 1;
        }
    }
}
template <unsigned N> inline vec_t<N, float32> atomic_rmw_add(vec_t<N, float32>* p, vec_t<N, float32> v) {
    vec_t<N, float32> old;
    atomic_add_float32_run(p->c, v.c, old.c, N);
    return old;
}
template <unsigned R, unsigned C>
inline mat_t<R, C, float32> atomic_rmw_add(mat_t<R, C, float32>* p, mat_t<R, C, float32> v) {
    mat_t<R, C, float32> old;
    atomic_add_float32_run(&p->data[0][0], &v.data[0][0], &old.data[0][0], R * C);
    return old;
}
inline quat_t<float32> atomic_rmw_add(quat_t<float32>* p, quat_t<float32> v) {
    quat_t<float32> old;
    atomic_add_float32_run(&p->x, &v.x, &old.x, 4);
    return old;
}
#endif

// Other composite values (vectors, matrices, quaternions, transforms) are atomically updated component by component.
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> atomic_rmw_add(vec_t<N, T>* p, vec_t<N, T> v) {
    vec_t<N, T> old;
    for (unsigned i = 0; i < N; ++i) old.c[i] = atomic_rmw_add(&p->c[i], v.c[i]);
    return old;
}
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> atomic_rmw_min(vec_t<N, T>* p, vec_t<N, T> v) {
    vec_t<N, T> old;
    for (unsigned i = 0; i < N; ++i) old.c[i] = atomic_rmw_min(&p->c[i], v.c[i]);
    return old;
}
template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> atomic_rmw_max(vec_t<N, T>* p, vec_t<N, T> v) {
    vec_t<N, T> old;
    for (unsigned i = 0; i < N; ++i) old.c[i] = atomic_rmw_max(&p->c[i], v.c[i]);
    return old;
}
#define WP_COMPOSITE_ATOMIC_BITWISE(name) \
    template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> name(vec_t<N, T>* p, vec_t<N, T> v) { \
        vec_t<N, T> old; \
        for (unsigned i = 0; i < N; ++i) old.c[i] = name(&p->c[i], v.c[i]); \
        return old; \
    } \
    template <unsigned R, unsigned C, typename T> \
    CUDA_CALLABLE inline mat_t<R, C, T> name(mat_t<R, C, T>* p, mat_t<R, C, T> v) { \
        mat_t<R, C, T> old; \
        for (unsigned i = 0; i < R; ++i) \
            for (unsigned j = 0; j < C; ++j) old.data[i][j] = name(&p->data[i][j], v.data[i][j]); \
        return old; \
    }
WP_COMPOSITE_ATOMIC_BITWISE(atomic_rmw_and)
WP_COMPOSITE_ATOMIC_BITWISE(atomic_rmw_or)
WP_COMPOSITE_ATOMIC_BITWISE(atomic_rmw_xor)
#undef WP_COMPOSITE_ATOMIC_BITWISE
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> atomic_rmw_add(mat_t<R, C, T>* p, mat_t<R, C, T> v) {
    mat_t<R, C, T> old;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) old.data[i][j] = atomic_rmw_add(&p->data[i][j], v.data[i][j]);
    return old;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> atomic_rmw_min(mat_t<R, C, T>* p, mat_t<R, C, T> v) {
    mat_t<R, C, T> old;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) old.data[i][j] = atomic_rmw_min(&p->data[i][j], v.data[i][j]);
    return old;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline mat_t<R, C, T> atomic_rmw_max(mat_t<R, C, T>* p, mat_t<R, C, T> v) {
    mat_t<R, C, T> old;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) old.data[i][j] = atomic_rmw_max(&p->data[i][j], v.data[i][j]);
    return old;
}
template <typename T> CUDA_CALLABLE inline quat_t<T> atomic_rmw_add(quat_t<T>* p, quat_t<T> v) {
    quat_t<T> old;
    old.x = atomic_rmw_add(&p->x, v.x); old.y = atomic_rmw_add(&p->y, v.y);
    old.z = atomic_rmw_add(&p->z, v.z); old.w = atomic_rmw_add(&p->w, v.w);
    return old;
}
template <typename T> CUDA_CALLABLE inline transform_t<T> atomic_rmw_add(transform_t<T>* p, transform_t<T> v) {
    transform_t<T> old;
    old.p = atomic_rmw_add(&p->p, v.p);
    old.q = atomic_rmw_add(&p->q, v.q);
    return old;
}

#if !defined(WP_CUDA)
// Private copies of a gradient array for a parallel backward pass on the CPU, one per chunk of the launch: each chunk
// adds into its own zeroed copy without atomics (chunk 0 into the real array), then `reduce` sums the copies into the
// real gradient array in parallel, in chunk order, so the result does not depend on which thread ran which chunk.
// calloc gives zero pages that cost nothing until touched. An array without a gradient (data == nullptr) is kept.
template <typename T> struct grad_shadow {
    array_t<T> target;
    T* block = nullptr;  // copies for chunks 1..threads-1; chunk 0 adds into `target` itself
    int64 count = 0;
    int threads = 0;  // number of chunks (one per pool thread)

    grad_shadow(const array_t<T>& a, int nthreads) : target(a), threads(nthreads) {
        if (!a.data || nthreads < 2) return;
        count = 1;
        for (int d = 0; d < a.ndim; ++d) count *= a.shape[d];
        size_t n = size_t(count) * size_t(nthreads - 1);
        block = (T*)calloc(n > 0 ? n : 1, sizeof(T));
    }
    ~grad_shadow() { free(block); }
    bool ok() const { return !target.data || threads < 2 || block != nullptr; }

    // thread t's gradient array: the real one for thread 0, a private contiguous copy of the same shape otherwise
    array_t<T> view(int t) const {
        if (!target.data || t == 0) return target;
        array_t<T> v = target;
        v.data = block + int64(t - 1) * count;
        int64 stride = sizeof(T);
        for (int d = v.ndim - 1; d >= 0; --d) {
            v.strides[d] = stride;
            stride *= v.shape[d];
        }
        return v;
    }

    bool contiguous() const {
        int64 stride = sizeof(T);
        for (int d = target.ndim - 1; d >= 0; --d) {
            if (target.strides[d] != stride) return false;
            stride *= target.shape[d];
        }
        return true;
    }

    // after the launch: add the private copies into the real gradient array
    void reduce() {
        if (!target.data || threads < 2) return;
        const bool flat = contiguous();
        parallel_for(count, threads * kChunksPerThread, threads, [&](int64 begin, int64 end, int) {
        for (int64 e = begin; e < end; ++e) {
            T sum = block[e];
            for (int t = 1; t < threads - 1; ++t) sum = add(sum, block[int64(t) * count + e]);
            T* dst;
            if (flat) {
                dst = target.data + e;
            } else {
                int64 rest = e, offset = 0;
                for (int d = target.ndim - 1; d >= 0; --d) {
                    offset += (rest % target.shape[d]) * target.strides[d];
                    rest /= target.shape[d];
                }
                dst = (T*)((char*)target.data + offset);
            }
            *dst = add(*dst, sum);
        }
        });
    }
};

// Private copies pay off when the gradient arrays are not much larger than the launch (every element gets work).
inline bool privatize_gradients(int64 launch_size, int64 gradient_elements) {
    return gradient_elements <= 4 * launch_size;
}

template <typename T> inline int64 gradient_elements(const array_t<T>& a) {
    if (!a.data) return 0;
    int64 count = 1;
    for (int d = 0; d < a.ndim; ++d) count *= a.shape[d];
    return count;
}
#endif

// Add v into *p: atomically when other threads of the launch may add into the same element.
template <bool Atomic, typename T> CUDA_CALLABLE inline void accumulate(T* p, const T& v) {
    if (Atomic) atomic_rmw_add(p, v);
    else *p = add(*p, v);
}

// A kernel's `a[i] += v` / wp.atomic_add on the CPU: a plain add when no other thread of the launch adds into the
// same memory (Atomic = false: the launch runs on one thread, or each chunk adds into its own private copy of the
// array). On x86 every float atomic add is a locked compare-and-swap loop (a full fence each): most of the time of
// kernels that scatter forces. Returns the previous value, as the atomic does; the same sum in the same order.
template <bool Atomic, typename T> CUDA_CALLABLE inline T atomic_add_maybe(T* p, const T& v) {
    if (Atomic) return atomic_rmw_add(p, v);
    const T old = *p;
    *p = add(old, v);
    return old;
}

// Adjoint of a read a[i...]: the result's adjoint is added into the gradient array, if there is one. Kernel backward
// passes instantiate Atomic = false for launches that run on one thread.
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const array_t<T>& g, int line, int64 i, const T& adj) {
    if (g.data) accumulate<Atomic>(&index(g, line, i), adj);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const array_t<T>& g, int line, int64 i, int64 j, const T& adj) {
    if (g.data) accumulate<Atomic>(&index(g, line, i, j), adj);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const array_t<T>& g, int line, int64 i, int64 j, int64 k, const T& adj) {
    if (g.data) accumulate<Atomic>(&index(g, line, i, j, k), adj);
}
template <bool Atomic = true, typename T>
CUDA_CALLABLE inline void adj_index_load(const array_t<T>& g, int line, int64 i, int64 j, int64 k, int64 l,
                                         const T& adj) {
    if (g.data) accumulate<Atomic>(&index(g, line, i, j, k, l), adj);
}

// Adjoint of a write a[i...] = v (or an atomic add of v): v's adjoint gains the gradient of that element.
// atomic_sub renders its value negated, so its adjoint flows through that negation.
// A plain write also consumes the element's gradient when the array is flagged so (ARRAY_FLAG_CONSUME).
template <typename T> CUDA_CALLABLE inline void adj_store_element(const array_t<T>& g, T& slot, T& adj_v) {
    adj_v = add(adj_v, slot);
    if (g.flags & ARRAY_FLAG_CONSUME) slot = adj_zero<T>();
}
template <typename T> CUDA_CALLABLE inline void adj_index_store(const array_t<T>& g, int line, int64 i, T& adj_v) {
    if (g.data) adj_store_element(g, index(g, line, i), adj_v);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const array_t<T>& g, int line, int64 i, int64 j, T& adj_v) {
    if (g.data) adj_store_element(g, index(g, line, i, j), adj_v);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const array_t<T>& g, int line, int64 i, int64 j, int64 k, T& adj_v) {
    if (g.data) adj_store_element(g, index(g, line, i, j, k), adj_v);
}
template <typename T>
CUDA_CALLABLE inline void adj_index_store(const array_t<T>& g, int line, int64 i, int64 j, int64 k, int64 l,
                                          T& adj_v) {
    if (g.data) adj_store_element(g, index(g, line, i, j, k, l), adj_v);
}

// Adjoint of an atomic add a[i] += v: v's adjoint gains the element's gradient, which stays (the add kept the
// element's earlier value).
template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_accumulate(const array_t<T>& g, int line, T& adj_v, I... i) {
    if (g.data) adj_v = add(adj_v, index(g, line, int64(i)...));
}

// Adjoint of atomic_min/atomic_max: the element's gradient goes to the value that equals its final value (the thread
// that won; every tied thread gets it too, as in Warp), component by component for vectors and matrices. A NaN value
// that meets a NaN element counts as the winner (Warp's rule: the forward wrote the value's NaN), though NaN != NaN.
CUDA_CALLABLE inline void minmax_winner(float16 final_v, float16 v, float16 g, float16& adj_v) {
    const float f = float(final_v), x = float(v);
    if (f == x || (f != f && x != x)) adj_v = float16(float(adj_v) + float(g));
}
template <typename T> CUDA_CALLABLE inline void minmax_winner(T final_v, T v, T g, T& adj_v) {
    if (final_v == v || (final_v != final_v && v != v)) adj_v = add(adj_v, g);  // x != x: NaN (never for integers)
}
template <unsigned N, typename T>
CUDA_CALLABLE inline void minmax_winner(const vec_t<N, T>& f, const vec_t<N, T>& v, const vec_t<N, T>& g,
                                        vec_t<N, T>& adj_v) {
    for (unsigned k = 0; k < N; ++k) minmax_winner(f.c[k], v.c[k], g.c[k], adj_v.c[k]);
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void minmax_winner(const mat_t<R, C, T>& f, const mat_t<R, C, T>& v, const mat_t<R, C, T>& g,
                                        mat_t<R, C, T>& adj_v) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) minmax_winner(f.data[i][j], v.data[i][j], g.data[i][j], adj_v.data[i][j]);
}
template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_minmax(const array_t<T>& a, const array_t<T>& g, int line, const T& v, T& adj_v,
                                           I... i) {
    if (g.data) minmax_winner(index(a, line, int64(i)...), v, index(g, line, int64(i)...), adj_v);
}

// Adjoint of a store that overwrites the element it read (a[i].x = v, a[i][j] += v): the stored value takes the
// element's gradient and the element's gradient restarts from zero, so the earlier read of the old element gives
// back only the components the store kept. Without the reset the kept components would count twice.
template <typename T, typename... I>
CUDA_CALLABLE inline void adj_index_overwrite(const array_t<T>& g, int line, T& adj_v, I... i) {  // indices last: a pack
    if (g.data) {
        T& slot = index(g, line, int64(i)...);
        adj_v = add(adj_v, slot);
        slot = adj_zero<T>();
    }
}


// ---- searching sorted 1-d arrays ------------------------------------------------------------------------------

// Index of the first element of a[begin, end) that is >= value, or end - 1 when none is (Warp's lower_bound: the
// result is always a valid index of a non-empty range).
template <typename T> CUDA_CALLABLE inline int32 lower_bound(const array_t<T>& a, int32 begin, int32 end, T value) {
    int32 last = end - 1;
    while (begin < last) {
        int32 mid = begin + (last - begin) / 2;
        if (*(const T*)((const char*)a.data + int64(mid) * a.strides[0]) < value) begin = mid + 1;
        else last = mid;
    }
    return begin;
}
template <typename T> CUDA_CALLABLE inline int32 lower_bound(const array_t<T>& a, T value) {
    return lower_bound(a, 0, a.shape[0], value);
}

}  // namespace wp
