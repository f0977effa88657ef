// printf and print for kernels, on the CPU and in CUDA. No gradient contribution; never replayed in the adjoint.
// Each printed line is one ::printf call, so lines from different threads interleave whole.
#pragma once
#include "core.h"

namespace wp {

// Variadic arguments promote as C does, except that our float16 and bfloat16 (structs) must become doubles explicitly.
template <typename T> CUDA_CALLABLE inline T printf_arg(T v) { return v; }
CUDA_CALLABLE inline double printf_arg(float16 v) { return double(float(v)); }
CUDA_CALLABLE inline double printf_arg(bfloat16 v) { return double(float(v)); }
CUDA_CALLABLE inline double printf_arg(float32 v) { return double(v); }
CUDA_CALLABLE inline int printf_arg(bool v) { return v ? 1 : 0; }
CUDA_CALLABLE inline long long printf_arg(int64 v) { return (long long)v; }
CUDA_CALLABLE inline unsigned long long printf_arg(uint64 v) { return (unsigned long long)v; }

// wp::printf(fmt, args...): C format string rendered as a literal by the compiler.
template <typename... Args> CUDA_CALLABLE inline void printf(const char* fmt, Args... args) {
    ::printf(fmt, printf_arg(args)...);
}
// Printing contributes nothing to gradients (and is not repeated by the backward pass).
template <typename... Args> CUDA_CALLABLE inline void adj_printf(const char*, Args&&...) {}

// ---- print(x): the value on one line, Python-like ([a, b, c] for vectors) ------------------------------------

// How one component prints: floats as %g (through double), signed as %lld, unsigned as %llu.
template <typename T> struct print_spec {
    typedef long long arg_t;
    static CUDA_CALLABLE const char* spec() { return "%lld"; }
};
template <> struct print_spec<uint8> {
    typedef unsigned long long arg_t;
    static CUDA_CALLABLE const char* spec() { return "%llu"; }
};
template <> struct print_spec<uint16> : print_spec<uint8> {};
template <> struct print_spec<uint32> : print_spec<uint8> {};
template <> struct print_spec<uint64> : print_spec<uint8> {};
template <> struct print_spec<float16> {
    typedef double arg_t;
    static CUDA_CALLABLE const char* spec() { return "%g"; }
};
template <> struct print_spec<bfloat16> : print_spec<float16> {};
template <> struct print_spec<float32> : print_spec<float16> {};
template <> struct print_spec<float64> : print_spec<float16> {};

template <typename T> CUDA_CALLABLE inline typename print_spec<T>::arg_t print_component(T v) {
    return typename print_spec<T>::arg_t(v);
}
CUDA_CALLABLE inline double print_component(float16 v) { return double(float(v)); }
CUDA_CALLABLE inline double print_component(bfloat16 v) { return double(float(v)); }

CUDA_CALLABLE inline int print_append(char* buf, int k, const char* s) {
    while (*s) buf[k++] = *s++;
    return k;
}

// One line: "<label><open>v0, v1, ...<close>" with up to 16 components of type T, in a single ::printf call.
template <typename T>
CUDA_CALLABLE inline void print_row(const char* label, const char* open, const T* v, int n, const char* close) {
    typedef typename print_spec<T>::arg_t A;
    char fmt[16 * 7 + 32];
    int k = print_append(fmt, 0, "%s");
    k = print_append(fmt, k, open);
    for (int i = 0; i < n && i < 16; ++i) {
        if (i) k = print_append(fmt, k, ", ");
        k = print_append(fmt, k, print_spec<T>::spec());
    }
    k = print_append(fmt, k, close);
    fmt[k] = 0;
    A a[16];
    for (int i = 0; i < 16; ++i) a[i] = i < n ? print_component(v[i]) : A(0);
    // Arguments beyond those the format consumes are ignored by printf.
    ::printf(fmt, label, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14],
             a[15]);
}

template <typename T> CUDA_CALLABLE inline void print_value(const char* label, T v) {
    print_row(label, "", &v, 1, "\n");
}
CUDA_CALLABLE inline void print_value(const char* label, bool v) { ::printf("%s%s\n", label, v ? "True" : "False"); }
template <unsigned N, typename T> CUDA_CALLABLE inline void print_value(const char* label, const vec_t<N, T>& v) {
    for (unsigned i = 0; i < N; i += 16) {
        unsigned n = N - i < 16 ? N - i : 16;
        print_row(i == 0 ? label : "", i == 0 ? "[" : " ", v.c + i, int(n), i + 16 >= N ? "]\n" : ",\n");
    }
}
template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline void print_value(const char* label, const mat_t<R,
                                                                                    C, T>& m) {
    for (unsigned i = 0; i < R; ++i)
        print_row(i == 0 ? label : "", i == 0 ? "[[" : " [", m.data[i], int(C), i + 1 == R ? "]]\n" : "],\n");
}
template <typename T> CUDA_CALLABLE inline void print_value(const char* label, const quat_t<T>& q) {
    T c[4] = {q.x, q.y, q.z, q.w};
    print_row(label, "[", c, 4, "]\n");
}
template <typename T> CUDA_CALLABLE inline void print_value(const char* label, const transform_t<T>& t) {
    T c[7] = {t.p.c[0], t.p.c[1], t.p.c[2], t.q.x, t.q.y, t.q.z, t.q.w};
    print_row(label, "[", c, 7, "]\n");
}

// print(x) as in Python: the value alone.
template <typename T> CUDA_CALLABLE inline void print(const T& v) { print_value("", v); }
template <typename T> CUDA_CALLABLE inline void adj_print(const T&, T&) {}

}  // namespace wp
