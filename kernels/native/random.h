// Random numbers from a 32-bit state advanced by the PCG hash (Jarzynski & Olano 2020), as Warp's rand_* builtins.
// Not differentiable. The draw functions take the state by reference and advance it: generated code copies the
// incoming state into the call's rebound result first (builtins marked mutates_first), so SSA values stay immutable
// and the adjoint pass's replay of the forward code draws the same numbers.
#pragma once
#include "core.h"
#include "array.h"

namespace wp {

// One PCG-RXS-M-XS step: a bijective 32-bit hash with good avalanche, used both to seed and to advance.
CUDA_CALLABLE inline uint32 rand_pcg(uint32 v) {
    uint32 state = v * 747796405u + 2891336453u;
    uint32 word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// The state after one draw (for a frontend that rebinds the state explicitly).
CUDA_CALLABLE inline uint32 rand_next(uint32 state) { return rand_pcg(state); }

template <typename S> CUDA_CALLABLE inline uint32 rand_init(S seed) { return rand_pcg(uint32(seed)); }
template <typename S, typename O> CUDA_CALLABLE inline uint32 rand_init(S seed, O offset) {
    return rand_pcg(uint32(seed) + rand_pcg(uint32(offset)));
}

CUDA_CALLABLE inline uint32 randu(uint32& state) {
    state = rand_pcg(state);
    return state;
}
// Uniform in [low, high) by modulo reduction (slightly biased for huge ranges, as Warp documents).
CUDA_CALLABLE inline uint32 randu(uint32& state, uint32 low, uint32 high) { return low + randu(state) % (high - low); }

CUDA_CALLABLE inline int32 randi(uint32& state) { return int32(randu(state)); }
CUDA_CALLABLE inline int32 randi(uint32& state, int32 low, int32 high) {
    return int32(uint32(low) + randu(state) % uint32(high - low));
}

// Uniform in [0, 1): the top 24 bits, so every value is a multiple of 2^-24 and exactly representable.
CUDA_CALLABLE inline float32 randf(uint32& state) { return float32(randu(state) >> 8) * (1.0f / 16777216.0f); }
CUDA_CALLABLE inline float32 randf(uint32& state, float32 low, float32 high) {
    return low + (high - low) * randf(state);
}

// Standard normal by Box-Muller, two uniform draws (Warp's values; a zero first draw is nudged to 2^-25 so that the
// log stays finite).
CUDA_CALLABLE inline float32 randn(uint32& state) {
    float32 u1 = ::fmaxf(randf(state), 2.98023224e-8f);
    float32 u2 = randf(state);
    return ::sqrtf(-2.0f * ::logf(u1)) * ::cosf(6.28318530717958647692f * u2);
}

CUDA_CALLABLE inline float32 rand_two_pi() { return 6.28318530717958647692f; }

// ---- points in simple domains (vec2 / vec3 of float32) ------------------------------------------------------

CUDA_CALLABLE inline vec_t<2, float32> rand_vec2(float32 x, float32 y) {
    vec_t<2, float32> v;
    v.c[0] = x; v.c[1] = y;
    return v;
}
CUDA_CALLABLE inline vec_t<3, float32> rand_vec3(float32 x, float32 y, float32 z) {
    vec_t<3, float32> v;
    v.c[0] = x; v.c[1] = y; v.c[2] = z;
    return v;
}

// Uniform on the unit circle.
CUDA_CALLABLE inline vec_t<2, float32> sample_unit_ring(uint32& state) {
    float32 phi = rand_two_pi() * randf(state);
    return rand_vec2(::cosf(phi), ::sinf(phi));
}
// Uniform in the unit disk: radius sqrt(u) makes the area density uniform.
CUDA_CALLABLE inline vec_t<2, float32> sample_unit_disk(uint32& state) {
    float32 r = ::sqrtf(randf(state));
    float32 phi = rand_two_pi() * randf(state);
    return rand_vec2(r * ::cosf(phi), r * ::sinf(phi));
}
// Uniform on the unit sphere: z uniform in [-1, 1] (Archimedes), azimuth uniform.
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_sphere_surface(uint32& state) {
    float32 z = 1.0f - 2.0f * randf(state);
    float32 phi = rand_two_pi() * randf(state);
    float32 r = ::sqrtf(::fmaxf(0.0f, 1.0f - z * z));
    return rand_vec3(r * ::cosf(phi), r * ::sinf(phi), z);
}
// Uniform in the unit ball: a surface point scaled by cbrt(u).
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_sphere(uint32& state) {
    vec_t<3, float32> d = sample_unit_sphere_surface(state);
    float32 r = ::cbrtf(randf(state));
    return rand_vec3(r * d.c[0], r * d.c[1], r * d.c[2]);
}
// Uniform on the upper (z >= 0) unit hemisphere.
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_hemisphere_surface(uint32& state) {
    vec_t<3, float32> d = sample_unit_sphere_surface(state);
    d.c[2] = ::fabsf(d.c[2]);
    return d;
}
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_hemisphere(uint32& state) {
    vec_t<3, float32> d = sample_unit_sphere(state);
    d.c[2] = ::fabsf(d.c[2]);
    return d;
}
// Uniform in [-0.5, 0.5)^2 and [-0.5, 0.5)^3.
CUDA_CALLABLE inline vec_t<2, float32> sample_unit_square(uint32& state) {
    float32 x = randf(state) - 0.5f;
    float32 y = randf(state) - 0.5f;
    return rand_vec2(x, y);
}
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_cube(uint32& state) {
    float32 x = randf(state) - 0.5f;
    float32 y = randf(state) - 0.5f;
    float32 z = randf(state) - 0.5f;
    return rand_vec3(x, y, z);
}
// Barycentric (u, v) uniform over a triangle: reflect the unit-square sample into the lower-left half.
CUDA_CALLABLE inline vec_t<2, float32> sample_triangle(uint32& state) {
    float32 u = randf(state);
    float32 v = randf(state);
    if (u + v > 1.0f) {
        u = 1.0f - u;
        v = 1.0f - v;
    }
    return rand_vec2(u, v);
}

// ---- discrete distributions -------------------------------------------------------------------------------

// Inverse-transform sample of a tabulated CDF (non-decreasing, last entry 1): the first index whose entry is >= u.
CUDA_CALLABLE inline int32 sample_cdf(uint32& state, const array_t<float32>& cdf) {
    return lower_bound(cdf, randf(state));
}

// Poisson(lam) as uint32. Below lam = 10, Knuth's product of uniforms (cost grows with lam); from 10 on,
// Hoermann's transformed rejection with squeeze (PTRS, 1993), whose cost is flat in lam. PTRS can propose
// negative counts near the switch: they are rejected before any conversion to unsigned.
CUDA_CALLABLE inline uint32 poisson(uint32& state, float32 lam) {
    if (lam < 10.0f) {
        const float32 limit = ::expf(-lam);
        float32 product = randf(state);
        uint32 k = 0;
        while (product > limit) {
            ++k;
            product *= randf(state);
        }
        return k;
    }
    const float32 log_lam = ::logf(lam);
    const float32 b = 0.931f + 2.53f * ::sqrtf(lam);
    const float32 a = -0.059f + 0.02483f * b;
    const float32 inv_alpha = 1.1239f + 1.1328f / (b - 3.4f);
    const float32 v_r = 0.9277f - 3.6224f / (b - 2.0f);
    while (true) {
        const float32 u = randf(state) - 0.5f;
        const float32 v = randf(state);
        const float32 us = 0.5f - ::fabsf(u);
        const float32 k = ::floorf((2.0f * a / us + b) * u + lam + 0.43f);
        if (k < 0.0f) continue;
        if (us >= 0.07f && v <= v_r) return uint32(k);
        if (us < 0.013f && v > us) continue;
        const float32 lhs = ::logf(v) + ::logf(inv_alpha) - ::logf(a / (us * us) + b);
        if (lhs <= -lam + k * log_lam - ::lgammaf(k + 1.0f)) return uint32(k);
    }
}

}  // namespace wp
