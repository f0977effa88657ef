// expect_eq / expect_neq / expect_near: in-kernel checks that print a report to stdout when they fail (Warp's
// "Utility" group). They never stop the kernel; a test harness treats any output as a failure.
#pragma once
#include "core.h"
#include "debug_print.h"

namespace wp {

// Component-wise equality and largest absolute difference over every value type, through double.
template <typename T> CUDA_CALLABLE inline bool expect_same(const T& a, const T& b) { return a == b; }
CUDA_CALLABLE inline bool expect_same(float16 a, float16 b) { return float(a) == float(b); }
template <unsigned N, typename T> CUDA_CALLABLE inline bool expect_same(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i)
        if (!expect_same(a.c[i], b.c[i])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline bool expect_same(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (!expect_same(a.data[i][j], b.data[i][j])) return false;
    return true;
}
template <typename T> CUDA_CALLABLE inline bool expect_same(const quat_t<T>& a, const quat_t<T>& b) {
    return expect_same(a.x, b.x) && expect_same(a.y, b.y) && expect_same(a.z, b.z) && expect_same(a.w, b.w);
}
template <typename T> CUDA_CALLABLE inline bool expect_same(const transform_t<T>& a, const transform_t<T>& b) {
    return expect_same(a.p, b.p) && expect_same(a.q, b.q);
}

template <typename T> CUDA_CALLABLE inline double expect_diff(const T& a, const T& b) {
    double d = double(a) - double(b);
    return d < 0.0 ? -d : d;
}
CUDA_CALLABLE inline double expect_diff(float16 a, float16 b) { return expect_diff(float(a), float(b)); }
template <unsigned N, typename T> CUDA_CALLABLE inline double expect_diff(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    double m = 0.0;
    for (unsigned i = 0; i < N; ++i) {
        double d = expect_diff(a.c[i], b.c[i]);
        m = (d > m || d != d) ? d : m;  // a NaN difference is reported, never hidden by max
    }
    return m;
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline double expect_diff(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    double m = 0.0;
    for (unsigned i = 0; i < R; ++i) {
        double d = expect_diff(*(const vec_t<C, T>*)a.data[i], *(const vec_t<C, T>*)b.data[i]);
        m = (d > m || d != d) ? d : m;
    }
    return m;
}
template <typename T> CUDA_CALLABLE inline double expect_diff(const quat_t<T>& a, const quat_t<T>& b) {
    vec_t<4, T> va, vb;
    va.c[0] = a.x; va.c[1] = a.y; va.c[2] = a.z; va.c[3] = a.w;
    vb.c[0] = b.x; vb.c[1] = b.y; vb.c[2] = b.z; vb.c[3] = b.w;
    return expect_diff(va, vb);
}

template <typename T> CUDA_CALLABLE inline void expect_report(const char* what, const T& actual, const T& expected) {
    ::printf("Error, %s() failed:\n", what);
    print_value("\t Expected: ", expected);
    print_value("\t Actual: ", actual);
}

template <typename T> CUDA_CALLABLE inline void expect_eq(const T& actual, const T& expected) {
    if (!expect_same(actual, expected)) expect_report("expect_eq", actual, expected);
}
template <typename T> CUDA_CALLABLE inline void expect_neq(const T& actual, const T& expected) {
    if (expect_same(actual, expected)) expect_report("expect_neq", actual, expected);
}
template <typename T, typename S>
CUDA_CALLABLE inline void expect_near(const T& actual, const T& expected, S tolerance) {
    double d = expect_diff(actual, expected);
    if (d > double(tolerance) || d != d) {
        ::printf("Error, expect_near() failed with tolerance %g:\n", double(tolerance));
        print_value("\t Expected: ", expected);
        print_value("\t Actual: ", actual);
        ::printf("\t Max absolute difference: %g\n", d);
    }
}

// Checks contribute nothing to gradients.
template <typename T, typename... R> CUDA_CALLABLE inline void adj_expect_eq(const T&, const T&, R&&...) {}
template <typename T, typename... R> CUDA_CALLABLE inline void adj_expect_neq(const T&, const T&, R&&...) {}
template <typename T, typename S, typename... R>
CUDA_CALLABLE inline void adj_expect_near(const T&, const T&, S, R&&...) {}

}  // namespace wp
