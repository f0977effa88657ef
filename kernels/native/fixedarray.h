// Warp's fixed-size arrays (wp.fixedarray, kernels/runtime/fixedarray.py): `wp.zeros(shape=..., dtype=...)` in a
// kernel or function makes one on the thread's stack. It is an array_t over storage it holds itself, so element
// access, views and every function taking an array_t work on it unchanged; copies (a function's result) carry
// their own elements and point at them, never at the storage of the value they were copied from.
#pragma once
#include "array.h"

namespace wp {

template <int Size, typename T>
struct fixedarray_t : array_t<T> {
    T storage[Size];

    CUDA_CALLABLE fixedarray_t() {
        for (int i = 0; i < Size; ++i) storage[i] = T();
        this->data = storage;
        this->ndim = 1;
        this->shape[0] = Size;
        this->strides[0] = sizeof(T);
    }
    CUDA_CALLABLE fixedarray_t(const fixedarray_t& other) { copy_from(other); }
    CUDA_CALLABLE fixedarray_t& operator=(const fixedarray_t& other) {
        copy_from(other);
        return *this;
    }

private:
    CUDA_CALLABLE void copy_from(const fixedarray_t& other) {
        for (int i = 0; i < Size; ++i) storage[i] = other.storage[i];
        this->data = storage;
        this->ndim = other.ndim;
        this->flags = 0;
        for (int d = 0; d < 4; ++d) {
            this->shape[d] = other.shape[d];
            this->strides[d] = other.strides[d];
        }
    }
};

// zeros of shape (d0, d1, d2, d3), the unused trailing dims 0; row-major strides in bytes.
template <typename R>
CUDA_CALLABLE inline R fixedarray_zeros(int32 d0, int32 d1, int32 d2, int32 d3) {
    R a;
    const int32 dims[4] = {d0, d1, d2, d3};
    int n = 0;
    while (n < 4 && dims[n] > 0) ++n;
    int64 stride = int64(sizeof(a.storage[0]));
    for (int d = 3; d >= 0; --d) {
        a.shape[d] = d < n ? dims[d] : 0;
        a.strides[d] = d < n ? stride : 0;
        if (d < n) stride *= dims[d];
    }
    a.ndim = n;
    return a;
}

}  // namespace wp
