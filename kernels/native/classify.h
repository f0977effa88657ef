#pragma once
// isfinite / isnan / isinf of vectors, quaternions and matrices (Warp 1.19's composite overloads): a composite is
// finite when every component is, NaN or infinite when some component is. No derivative (bool results).

#include "scalar_math.h"

namespace wp {

template <unsigned N, typename T> CUDA_CALLABLE inline bool isfinite(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i) if (!isfinite(a.c[i])) return false;
    return true;
}
template <unsigned N, typename T> CUDA_CALLABLE inline bool isnan(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i) if (isnan(a.c[i])) return true;
    return false;
}
template <unsigned N, typename T> CUDA_CALLABLE inline bool isinf(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i) if (isinf(a.c[i])) return true;
    return false;
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline bool isfinite(const mat_t<R, C, T>& a) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) if (!isfinite(a.data[i][j])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline bool isnan(const mat_t<R, C, T>& a) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) if (isnan(a.data[i][j])) return true;
    return false;
}
template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline bool isinf(const mat_t<R, C, T>& a) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) if (isinf(a.data[i][j])) return true;
    return false;
}

template <typename T> CUDA_CALLABLE inline bool isfinite(const quat_t<T>& a) {
    return isfinite(a.x) && isfinite(a.y) && isfinite(a.z) && isfinite(a.w);
}
template <typename T> CUDA_CALLABLE inline bool isnan(const quat_t<T>& a) {
    return isnan(a.x) || isnan(a.y) || isnan(a.z) || isnan(a.w);
}
template <typename T> CUDA_CALLABLE inline bool isinf(const quat_t<T>& a) {
    return isinf(a.x) || isinf(a.y) || isinf(a.z) || isinf(a.w);
}

}  // namespace wp
