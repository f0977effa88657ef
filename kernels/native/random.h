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

CUDA_CALLABLE inline float32 rand_two_pi() { return 2.0f * 3.14159265358979323846f; }

// Standard normal by Box-Muller, two uniform draws. Warp's values to the bit: the first draw is shifted by 5.96e-8
// (2^-24 rounded down) rather than clamped, so the log stays finite and every draw moves by the same amount.
CUDA_CALLABLE inline float32 randn(uint32& state) {
    float32 u1 = randf(state) + 5.96e-8f;
    float32 u2 = randf(state);
    return ::sqrtf(-2.0f * ::logf(u1)) * ::cosf(rand_two_pi() * u2);
}


// ---- points in simple domains (vec2 / vec3 of float32) ------------------------------------------------------
// Each uses Warp's mapping of the uniform draws, in Warp's order, so a seed gives Warp's points.

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
// A polar angle whose cosine is 1 - c (c uniform on [0, 2) covers the sphere, on [0, 1) the upper half).
CUDA_CALLABLE inline float32 rand_polar(float32 c) { return ::acosf(::fminf(::fmaxf(1.0f - c, -1.0f), 1.0f)); }
// The point at polar angle phi and azimuth theta, scaled by r.
CUDA_CALLABLE inline vec_t<3, float32> rand_spherical(float32 r, float32 phi, float32 theta) {
    float32 s = ::sinf(phi);
    return rand_vec3(r * ::cosf(theta) * s, r * ::sinf(theta) * s, r * ::cosf(phi));
}

// Uniform on the unit circle.
CUDA_CALLABLE inline vec_t<2, float32> sample_unit_ring(uint32& state) {
    float32 theta = randf(state, 0.0f, rand_two_pi());
    return rand_vec2(::cosf(theta), ::sinf(theta));
}
// Uniform in the unit disk: radius sqrt(u) makes the area density uniform.
CUDA_CALLABLE inline vec_t<2, float32> sample_unit_disk(uint32& state) {
    float32 r = ::sqrtf(randf(state));
    float32 theta = randf(state, 0.0f, rand_two_pi());
    return rand_vec2(r * ::cosf(theta), r * ::sinf(theta));
}
// Uniform on the unit sphere: cos(polar angle) uniform in (-1, 1] (Archimedes), azimuth uniform.
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_sphere_surface(uint32& state) {
    float32 phi = rand_polar(2.0f * randf(state));
    float32 theta = randf(state, 0.0f, rand_two_pi());
    return rand_spherical(1.0f, phi, theta);  // a factor 1 changes no bit
}
// Uniform in the unit ball: a surface direction at radius cbrt(u) (as powf(u, 1/3), Warp's rounding).
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_sphere(uint32& state) {
    float32 phi = rand_polar(2.0f * randf(state));
    float32 theta = randf(state, 0.0f, rand_two_pi());
    float32 r = ::powf(randf(state), 1.0f / 3.0f);
    return rand_spherical(r, phi, theta);
}
// Uniform on the upper (z >= 0) unit hemisphere.
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_hemisphere_surface(uint32& state) {
    float32 phi = rand_polar(randf(state));
    float32 theta = randf(state, 0.0f, rand_two_pi());
    return rand_spherical(1.0f, phi, theta);
}
// Uniform in the upper (z >= 0) half of the unit ball.
CUDA_CALLABLE inline vec_t<3, float32> sample_unit_hemisphere(uint32& state) {
    float32 phi = rand_polar(randf(state));
    float32 theta = randf(state, 0.0f, rand_two_pi());
    float32 r = ::powf(randf(state), 1.0f / 3.0f);
    return rand_spherical(r, phi, theta);
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
// Barycentric (u, v) uniform over a triangle: with s = sqrt(u1), (1 - s, u2 * s) has a uniform density.
CUDA_CALLABLE inline vec_t<2, float32> sample_triangle(uint32& state) {
    float32 s = ::sqrtf(randf(state));
    float32 u = 1.0f - s;
    float32 v = randf(state) * s;
    return rand_vec2(u, v);
}

// ---- discrete distributions -------------------------------------------------------------------------------

// Inverse-transform sample of a tabulated CDF (non-decreasing, last entry 1): the first index whose entry is >= u.
CUDA_CALLABLE inline int32 sample_cdf(uint32& state, const array_t<float32>& cdf) {
    return lower_bound(cdf, randf(state));
}

// log(Gamma(x)) for the Poisson rejection test, in float32 as Warp computes it (its values decide Warp's
// accept/reject, so the same arithmetic gives the same counts): Stirling's series in 1/x^2 (coefficients
// B_2k / (2k (2k - 1)), Horner from the smallest) at x shifted to at least 7, then the recurrence
// log Gamma(x) = log Gamma(x + 1) - log x back down (Zhang & Jin, Computation of Special Functions, 1996).
CUDA_CALLABLE inline float32 rand_log_gamma(float32 x) {
    if (x == 1.0f || x == 2.0f) return 0.0f;
    const float32 series[10] = {
        float32(1.0 / 12.0), float32(-1.0 / 360.0), float32(1.0 / 1260.0), float32(-1.0 / 1680.0),
        float32(1.0 / 1188.0), float32(-691.0 / 360360.0), float32(1.0 / 156.0), float32(-3617.0 / 122400.0),
        float32(43867.0 / 244188.0), float32(-174611.0 / 125400.0)};
    uint32 shift = x < 7.0f ? uint32(7.0f - x) : 0u;
    float32 x0 = x + float32(shift);
    float32 inv_sq = (1.0f / x0) * (1.0f / x0);
    float32 sum = series[9];
    for (int i = 8; i >= 0; --i) {
        sum *= inv_sq;
        sum += series[i];
    }
    const float32 half_log_two_pi = 0.5f * 1.8378770664093453f;
    float32 result = sum / x0 + half_log_two_pi + (x0 - 0.5f) * ::logf(x0) - x0;
    for (uint32 k = 0; k < shift; ++k) {
        result -= ::logf(x0 - 1.0f);
        x0 -= 1.0f;
    }
    return result;
}

// Poisson(lam) as uint32 (Warp's draws: the same sequence of uniform draws and tests). lam = 0 draws nothing.
// Below lam = 10, Knuth's product of uniforms (cost grows with lam); from 10 on, Hoermann's transformed rejection
// with squeeze (PTRS, 1993), whose cost is flat in lam. Its quick acceptance never sees a negative count for
// lam >= 10; a negative proposal is rejected before any conversion to unsigned.
CUDA_CALLABLE inline uint32 poisson(uint32& state, float32 lam) {
    if (lam == 0.0f) return 0u;
    if (lam < 10.0f) {
        const float32 limit = ::expf(-lam);
        float32 product = 1.0f;
        uint32 k = 0;
        while (true) {
            product *= randf(state);
            if (!(product > limit)) return k;
            ++k;
        }
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
        if (us >= 0.07f && v <= v_r && k >= 0.0f) return uint32(k);
        if (k < 0.0f || (us < 0.013f && v > us)) continue;
        const float32 lhs = ::logf(v) + ::logf(inv_alpha) - ::logf(a / (us * us) + b);
        if (lhs <= -lam + k * log_lam - rand_log_gamma(k + 1.0f)) return uint32(k);
    }
}

}  // namespace wp
