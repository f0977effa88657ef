// Core of the native runtime: scalar typedefs, float16, value-type storage, launch bounds, error reporting.
// Compiles unchanged as C++17 (CPU) and CUDA C++ (NVRTC); `#if defined(__CUDACC__)` only where they must differ.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WP_CUDA 1
#define CUDA_CALLABLE __host__ __device__
#define WP_DEVICE __device__
#define WP_FORCE_INLINE
// @wp.func(inline=True/False): Warp's hints, kept on both devices
#define WP_INLINE_ALWAYS __forceinline__
#define WP_INLINE_NEVER __noinline__
#else
#define CUDA_CALLABLE
#define WP_DEVICE
// The forward and replay versions of user functions on the CPU: inlined into their callers whatever their size.
// Called out of line, a function takes and returns its vectors through the ABI's registers and stack slots, and
// the partial stores and wide reloads that makes stall store-to-load forwarding: half the time of the cloth
// force kernels went there.
#define WP_FORCE_INLINE __attribute__((always_inline))
#define WP_INLINE_ALWAYS inline __attribute__((always_inline))
#define WP_INLINE_NEVER __attribute__((noinline))
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>  // calloc, free (libc++, as the ziglang wheel's clang uses, does not pull it in with the others)
#include <cstring>
#endif

// Fully unroll the short fixed-length loops of vector, matrix and quaternion math before the optimiser runs, so
// that their components live in registers: left to GCC's later passes, these loops kept vec3 values in stack
// memory or packed them into half-used SIMD lanes, and a vec3 kernel's backward ran 20-50% slower.
#if defined(WP_CUDA)
#define WP_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)  // GCC, and clang, which reads the same pragma
#define WP_UNROLL _Pragma("GCC unroll 16")
#else
#define WP_UNROLL
#endif

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif

namespace wp {

typedef int8_t int8;
typedef uint8_t uint8;
typedef int16_t int16;
typedef uint16_t uint16;
typedef int32_t int32;
typedef uint32_t uint32;
typedef int64_t int64;
typedef uint64_t uint64;
typedef float float32;
typedef double float64;

// IEEE half stored as 16 bits; arithmetic converts to float32 (as Warp does on the CPU).
struct float16 {
    uint16 bits;
    CUDA_CALLABLE float16() : bits(0) {}
    CUDA_CALLABLE float16(float f) : bits(from_float(f)) {}
    CUDA_CALLABLE float16(double f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE float16(int f) : bits(from_float(float(f))) {}
    // the other integer widths, so that a conversion from any of them is not ambiguous
    CUDA_CALLABLE float16(uint32 f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE float16(int64 f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE float16(uint64 f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE operator float() const { return to_float(bits); }

    static CUDA_CALLABLE uint16 from_float(float f) {
        union { float f; uint32 u; } v; v.f = f;
        uint32 x = v.u;
        uint32 sign = (x >> 16) & 0x8000u;
        int32 exp = int32((x >> 23) & 0xffu) - 127 + 15;
        uint32 mant = x & 0x7fffffu;
        if (((x >> 23) & 0xffu) == 0xffu)  // inf or nan
            return uint16(sign | 0x7c00u | (mant ? 0x200u : 0u));
        if (exp >= 31) return uint16(sign | 0x7c00u);
        if (exp <= 0) {
            if (exp < -10) return uint16(sign);
            mant |= 0x800000u;
            uint32 shift = uint32(14 - exp);
            uint32 half_mant = mant >> shift;
            uint32 rem = mant & ((1u << shift) - 1u);
            uint32 halfway = 1u << (shift - 1u);
            if (rem > halfway || (rem == halfway && (half_mant & 1u))) half_mant++;
            return uint16(sign | half_mant);
        }
        uint32 h = sign | (uint32(exp) << 10) | (mant >> 13);
        uint32 rem = mant & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return uint16(h);
    }
    static CUDA_CALLABLE float to_float(uint16 h) {
        uint32 sign = uint32(h & 0x8000u) << 16;
        uint32 exp = (h >> 10) & 0x1fu;
        uint32 mant = h & 0x3ffu;
        uint32 out;
        if (exp == 0) {
            if (mant == 0) out = sign;
            else {
                exp = 127 - 15 + 1;
                while (!(mant & 0x400u)) { mant <<= 1; exp--; }
                mant &= 0x3ffu;
                out = sign | (exp << 23) | (mant << 13);
            }
        } else if (exp == 31) out = sign | 0x7f800000u | (mant << 13);
        else out = sign | ((exp - 15 + 127) << 23) | (mant << 13);
        union { uint32 u; float f; } v; v.u = out;
        return v.f;
    }
};

// bfloat16 (float32's sign and exponent, 7 mantissa bits) stored as 16 bits; arithmetic converts to float32, as
// Warp does. float32 -> bfloat16 rounds to nearest, ties to even; NaN stays NaN (quiet bit forced), as in
// kernels/halfbits.py on the host.
struct bfloat16 {
    uint16 bits;
    CUDA_CALLABLE bfloat16() : bits(0) {}
    CUDA_CALLABLE bfloat16(float f) : bits(from_float(f)) {}
    CUDA_CALLABLE bfloat16(double f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE bfloat16(int f) : bits(from_float(float(f))) {}
    // the other integer widths, so that a conversion from any of them is not ambiguous
    CUDA_CALLABLE bfloat16(uint32 f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE bfloat16(int64 f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE bfloat16(uint64 f) : bits(from_float(float(f))) {}
    CUDA_CALLABLE operator float() const { return to_float(bits); }

    static CUDA_CALLABLE uint16 from_float(float f) {
        union { float f; uint32 u; } v; v.f = f;
        uint32 x = v.u;
        if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))  // NaN
            return uint16((x | 0x400000u) >> 16);
        return uint16((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
    static CUDA_CALLABLE float to_float(uint16 b) {
        union { uint32 u; float f; } v; v.u = uint32(b) << 16;
        return v.f;
    }
};

// Value-type storage. Operations live in vec.h, mat.h, quat.h, transform.h.
template <unsigned Length, typename Type>
struct vec_t {
    Type c[Length];
    CUDA_CALLABLE vec_t() { WP_UNROLL for (unsigned i = 0; i < Length; ++i) c[i] = Type(0); }
    CUDA_CALLABLE Type& operator[](int i) { return c[i]; }
    CUDA_CALLABLE const Type& operator[](int i) const { return c[i]; }
};

template <unsigned Rows, unsigned Cols, typename Type>
struct mat_t {
    Type data[Rows][Cols];
    CUDA_CALLABLE mat_t() {
        WP_UNROLL for (unsigned i = 0; i < Rows; ++i)
            WP_UNROLL for (unsigned j = 0; j < Cols; ++j) data[i][j] = Type(0);
    }
};

// Zero-size vectors and matrices (an empty slice such as v[9:]): C++ has no zero-size arrays (NVRTC refuses them),
// so one unused element is stored; every operation loops over the zero length and never touches it.
template <typename Type>
struct vec_t<0, Type> {
    Type c[1];
    CUDA_CALLABLE vec_t() { c[0] = Type(0); }
    CUDA_CALLABLE Type& operator[](int i) { return c[i]; }
    CUDA_CALLABLE const Type& operator[](int i) const { return c[i]; }
};

template <typename Type>
struct mat_t<0, 0, Type> {
    Type data[1][1];
    CUDA_CALLABLE mat_t() { data[0][0] = Type(0); }
};

template <typename Type>
struct quat_t {
    Type x, y, z, w;
    CUDA_CALLABLE quat_t() : x(0), y(0), z(0), w(0) {}
    CUDA_CALLABLE quat_t(Type x_, Type y_, Type z_, Type w_) : x(x_), y(y_), z(z_), w(w_) {}
};

template <typename Type>
struct transform_t {
    vec_t<3, Type> p;
    quat_t<Type> q;
    CUDA_CALLABLE transform_t() {}
    CUDA_CALLABLE transform_t(const vec_t<3, Type>& p_, const quat_t<Type>& q_) : p(p_), q(q_) {}
};

// Whether a value is all zeros. The backward pass skips a pure function's adjoint when every one of its result
// adjoints is zero: the adjoint is linear in them, so it would add only zeros.
template <typename T> CUDA_CALLABLE inline bool is_zero(const T& v) { return v == T(0); }
CUDA_CALLABLE inline bool is_zero(const float16& v) { return float(v) == 0.0f; }
CUDA_CALLABLE inline bool is_zero(const bfloat16& v) { return float(v) == 0.0f; }
template <unsigned N, typename T> CUDA_CALLABLE inline bool is_zero(const vec_t<N, T>& v) {
    WP_UNROLL for (unsigned i = 0; i < N; ++i)
        if (!is_zero(v.c[i])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline bool is_zero(const mat_t<R, C, T>& m) {
    WP_UNROLL for (unsigned i = 0; i < R; ++i)
        WP_UNROLL for (unsigned j = 0; j < C; ++j)
            if (!is_zero(m.data[i][j])) return false;
    return true;
}
template <typename T> CUDA_CALLABLE inline bool is_zero(const quat_t<T>& q) {
    return is_zero(q.x) && is_zero(q.y) && is_zero(q.z) && is_zero(q.w);
}
template <typename T> CUDA_CALLABLE inline bool is_zero(const transform_t<T>& t) {
    return is_zero(t.p) && is_zero(t.q);
}

// The starting value of an adjoint accumulator: -0.0 in floating-point components, because x + (-0.0) == x for
// every x (+0.0 + -0.0 is +0.0) and the compiler may drop that first addition, while x + 0.0 is not x for x = -0.0
// and must be kept. Integers, float16, bfloat16 and structs start at T().
template <typename T> struct zero_adjoint {
    CUDA_CALLABLE static T value() { return T(); }
};
template <> struct zero_adjoint<float32> {
    CUDA_CALLABLE static float32 value() { return -0.0f; }
};
template <> struct zero_adjoint<float64> {
    CUDA_CALLABLE static float64 value() { return -0.0; }
};
template <unsigned N, typename T> struct zero_adjoint<vec_t<N, T>> {
    CUDA_CALLABLE static vec_t<N, T> value() {
        vec_t<N, T> r;
        WP_UNROLL for (unsigned i = 0; i < N; ++i) r.c[i] = zero_adjoint<T>::value();
        return r;
    }
};
template <unsigned R, unsigned C, typename T> struct zero_adjoint<mat_t<R, C, T>> {
    CUDA_CALLABLE static mat_t<R, C, T> value() {
        mat_t<R, C, T> r;
        WP_UNROLL for (unsigned i = 0; i < R; ++i)
            WP_UNROLL for (unsigned j = 0; j < C; ++j) r.data[i][j] = zero_adjoint<T>::value();
        return r;
    }
};
template <typename T> struct zero_adjoint<quat_t<T>> {
    CUDA_CALLABLE static quat_t<T> value() {
        const T z = zero_adjoint<T>::value();
        return quat_t<T>(z, z, z, z);
    }
};
template <typename T> struct zero_adjoint<transform_t<T>> {
    CUDA_CALLABLE static transform_t<T> value() {
        return transform_t<T>(zero_adjoint<vec_t<3, T>>::value(), zero_adjoint<quat_t<T>>::value());
    }
};
template <typename T> CUDA_CALLABLE inline T adj_zero() { return zero_adjoint<T>::value(); }

// Slots a backward function keeps for the loop-carried values of one dynamic loop (`bytes` per iteration): the
// values at the start of each of the first `carry_slots` iterations are stored during the replay, so the reverse
// restores them instead of replaying every earlier iteration (O(n) instead of O(n^2)); later iterations replay
// from the last slot. The budget is per loop and per thread: small on CUDA, where it is local memory.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
constexpr int64 carry_slot_budget = 1024;
#else
constexpr int64 carry_slot_budget = 8192;
#endif
CUDA_CALLABLE constexpr int64 carry_slots(int64 bytes) {
    return carry_slot_budget / bytes < 4 ? 4 : (carry_slot_budget / bytes > 64 ? 64 : carry_slot_budget / bytes);
}

// Launch grid: up to 4 dimensions, flattened row-major into `size` threads.
struct launch_bounds_t {
    int64 shape[4];
    int32 ndim;
    int64 size;
    int32 block_dim;  // lanes per block as wp.block_dim() reads it (CPU blocks: kernels/runtime/cpu_blocks.py)
};

// Component k of the n-dimensional thread index of flat thread `task` (0 <= task < lb.size, so the first component
// needs no modulo). A division by a run-time shape is the slow part (a 64-bit idiv, one at a time): a 2-D launch
// (the contact kernels' particle x shape slot) divides once for both components, in 32 bits when it fits; the
// particle-shape kernel's task index took a third of its time.
CUDA_CALLABLE inline int32 tid_component(int64 task, const launch_bounds_t& lb, int k) {
    if (lb.ndim == 2) {
        if (lb.size <= 0x7fffffff) {
            const uint32 t = uint32(task), w = uint32(lb.shape[1]);
            return int32(k == 0 ? t / w : t % w);
        }
        return int32(k == 0 ? task / lb.shape[1] : task % lb.shape[1]);
    }
    int64 index = task;
    for (int d = lb.ndim - 1; d > k; --d) index /= lb.shape[d];
    return int32(k == 0 ? index : index % lb.shape[k]);
}

// Threads per block as wp.block_dim() reads it: the launch's effective block_dim (kernels/runtime/cpu_blocks.py;
// above 1 on the CPU only with wp.config.enable_cpu_blocks; CUDA's default 256). A kernel that reads it stores
// lb.block_dim in a slot at each thread (compiler/block_dim_source.py), read by user functions too, which have no
// launch bounds at hand: a thread-local on the CPU, a block-shared value on CUDA (every thread of a launch writes
// the same value, so the unsynchronised writes agree).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__shared__ int32 block_dim_shared;
#endif
CUDA_CALLABLE inline int32& block_dim_slot() {
#if defined(__CUDA_ARCH__)
    return block_dim_shared;
#else
    static thread_local int32 value = 1;
    return value;
#endif
}
CUDA_CALLABLE inline int32 block_dim() { return block_dim_slot(); }

// First error raised by a kernel in debug mode (bounds check); read and cleared by the host after a launch.
struct error_t {
    int32 set;
    int32 line;
    int32 ndim;
    int32 kind;  // 1: index out of bounds
    int64 index[4];
    int64 shape[4];
};

}  // namespace wp
