// Gradient (Perlin) noise over 1-4 dimensions: noise, pnoise (periodic), curlnoise (divergence-free), with the
// values of Warp 1.19 to the bit. A field is chosen by an RNG state (never advanced). Its lattice points carry
// random unit gradients; a sample blends the corners' planar ramps dot(offset, gradient) with the quintic fade
// S(t) = 6t^5 - 15t^4 + 10t^3, one axis after the other (x first). Every sum and product below is in Warp's order:
// that order is what makes the values match, so do not simplify it.
//
// Adjoints: noise and pnoise give the analytic gradient w.r.t. the coordinate; curlnoise (itself a gradient)
// chains through the analytic Hessian of the field. States, periods, octaves, lacunarity and gain get none.
#pragma once
#include "core.h"
#include "vec.h"
#include "random.h"

namespace wp {
namespace perlin {

CUDA_CALLABLE inline float32 fade(float32 t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }
CUDA_CALLABLE inline float32 fade_slope(float32 t) { return 30.0f * t * t * (t * (t - 2.0f) + 1.0f); }
CUDA_CALLABLE inline float32 fade_curvature(float32 t) { return 60.0f * t * (t * (t * 2.0f - 3.0f) + 1.0f); }

// The lattice cell of one sample: the corners' integer coordinates on each axis (lower, upper) and the sample's
// offset from the lower corner in [0, 1).
template <unsigned N> struct Cell {
    int32 lower[N];
    int32 upper[N];
    float32 offset[N];
};

// The cell around point p; with periods, lattice coordinates wrap (C's %, as Warp: negative cells stay negative).
template <unsigned N> CUDA_CALLABLE inline Cell<N> cell_of(const float32 (&p)[N], const int32* periods) {
    Cell<N> cell;
    for (unsigned k = 0; k < N; ++k) {
        float32 f = ::floorf(p[k]);
        cell.offset[k] = p[k] - f;
        int32 lower = int32(f);
        cell.lower[k] = periods ? lower % periods[k] : lower;
        cell.upper[k] = periods ? (cell.lower[k] + 1) % periods[k] : lower + 1;
    }
    return cell;
}

// The gradient at lattice point c of field `state`: the point's coordinates times one prime per axis, XORed
// (the state added to the last product), seed one stream of uniform draws. In 1-d a slope in [-1, 1); from 2-d
// on a direction drawn in the centred unit cube and normalised.
template <unsigned N> CUDA_CALLABLE inline vec_t<N, float32> lattice_gradient(uint32 state, const int32 (&c)[N]) {
    const uint32 primes[4] = {73856093u, 19349663u, 53471161u, 10000019u};
    uint32 seed = 0u;
    for (unsigned k = 0; k + 1 < N; ++k) seed ^= uint32(c[k]) * primes[k];
    seed ^= uint32(c[N - 1]) * primes[N - 1] + state;
    vec_t<N, float32> g;
    if (N == 1) {
        g.c[0] = randf(seed, -1.0f, 1.0f);
        return g;
    }
    for (unsigned k = 0; k < N; ++k) g.c[k] = randf(seed) - 0.5f;
    return normalize(g);
}

// One corner of the cell (bit k of `corner` picks the upper point on axis k): its gradient and the sample's
// offset from it.
template <unsigned N>
CUDA_CALLABLE inline void corner_ramp(uint32 state, const Cell<N>& cell, unsigned corner, vec_t<N, float32>& offset,
                                      vec_t<N, float32>& gradient) {
    int32 point[N];
    for (unsigned k = 0; k < N; ++k) {
        bool up = (corner >> k) & 1u;
        point[k] = up ? cell.upper[k] : cell.lower[k];
        offset.c[k] = up ? cell.offset[k] - 1.0f : cell.offset[k];
    }
    gradient = lattice_gradient<N>(state, point);
}

// The noise value: the 2^N corner ramps, blended pairwise along x, then y, ...
template <unsigned N> CUDA_CALLABLE inline float32 value(uint32 state, const Cell<N>& cell) {
    float32 v[1u << N];
    for (unsigned corner = 0; corner < (1u << N); ++corner) {
        vec_t<N, float32> offset, gradient;
        corner_ramp<N>(state, cell, corner, offset, gradient);
        v[corner] = dot(offset, gradient);
    }
    for (unsigned k = 0; k < N; ++k) {
        float32 s = fade(cell.offset[k]);
        for (unsigned j = 0; j < (1u << (N - 1 - k)); ++j) v[j] = (v[2 * j + 1] - v[2 * j]) * s + v[2 * j];
    }
    return v[0];
}

// The noise's gradient w.r.t. the sample point: each blend's derivative, (dB - dA) S + (B - A) S' e_k + dA.
template <unsigned N> CUDA_CALLABLE inline vec_t<N, float32> gradient(uint32 state, const Cell<N>& cell) {
    float32 v[1u << N];
    vec_t<N, float32> g[1u << N];
    for (unsigned corner = 0; corner < (1u << N); ++corner) {
        vec_t<N, float32> offset;
        corner_ramp<N>(state, cell, corner, offset, g[corner]);
        v[corner] = dot(offset, g[corner]);
    }
    for (unsigned k = 0; k < N; ++k) {
        float32 t = cell.offset[k], s = fade(t), s1 = fade_slope(t);
        for (unsigned j = 0; j < (1u << (N - 1 - k)); ++j) {
            const unsigned a = 2 * j, b = 2 * j + 1;
            float32 rise = (v[b] - v[a]) * s1;
            vec_t<N, float32> blended;
            for (unsigned i = 0; i < N; ++i) {
                blended.c[i] = (g[b].c[i] - g[a].c[i]) * s + rise * (i == k ? 1.0f : 0.0f) + g[a].c[i];
            }
            v[j] = (v[b] - v[a]) * s + v[a];
            g[j] = blended;
        }
    }
    return g[0];
}

// The noise's Hessian w.r.t. the sample point (row-major N x N), for curlnoise's adjoint: the corner ramps are
// linear, so all curvature comes from the fades; value, gradient and Hessian are blended together.
template <unsigned N> CUDA_CALLABLE inline void hessian(uint32 state, const Cell<N>& cell, float32 (&out)[N][N]) {
    struct Node {
        float32 v;
        float32 g[N];
        float32 h[N][N];
    };
    Node nodes[1u << N];
    for (unsigned corner = 0; corner < (1u << N); ++corner) {
        vec_t<N, float32> offset, grad;
        corner_ramp<N>(state, cell, corner, offset, grad);
        Node& node = nodes[corner];
        node.v = dot(offset, grad);
        for (unsigned i = 0; i < N; ++i) {
            node.g[i] = grad.c[i];
            for (unsigned j = 0; j < N; ++j) node.h[i][j] = 0.0f;
        }
    }
    for (unsigned k = 0; k < N; ++k) {
        float32 t = cell.offset[k], s = fade(t), s1 = fade_slope(t), s2 = fade_curvature(t);
        for (unsigned j = 0; j < (1u << (N - 1 - k)); ++j) {
            const Node a = nodes[2 * j], b = nodes[2 * j + 1];
            Node& f = nodes[j];
            float32 dv = b.v - a.v;
            float32 dg[N];
            for (unsigned i = 0; i < N; ++i) dg[i] = b.g[i] - a.g[i];
            f.v = a.v + dv * s;
            for (unsigned i = 0; i < N; ++i) f.g[i] = a.g[i] + dg[i] * s;
            f.g[k] += dv * s1;
            for (unsigned i = 0; i < N; ++i)
                for (unsigned m = 0; m < N; ++m) f.h[i][m] = a.h[i][m] + (b.h[i][m] - a.h[i][m]) * s;
            for (unsigned i = 0; i < N; ++i) {
                f.h[i][k] += dg[i] * s1;
                f.h[k][i] += dg[i] * s1;
            }
            f.h[k][k] += dv * s2;
        }
    }
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) out[i][j] = nodes[0].h[i][j];
}

template <unsigned N> CUDA_CALLABLE inline void coords(const vec_t<N, float32>& p, float32 (&out)[N]) {
    for (unsigned k = 0; k < N; ++k) out[k] = p.c[k];
}
template <unsigned N> CUDA_CALLABLE inline Cell<N> cell_at(const vec_t<N, float32>& p, const int32* periods) {
    float32 q[N];
    coords<N>(p, q);
    return cell_of<N>(q, periods);
}
template <unsigned N>
CUDA_CALLABLE inline void accumulate(vec_t<N, float32>& adj, const vec_t<N, float32>& g, float32 adj_ret) {
    for (unsigned k = 0; k < N; ++k) adj.c[k] += g.c[k] * adj_ret;
}

// The next octave's fields of a 3-d/4-d curl: two more states derived from the first.
CUDA_CALLABLE inline uint32 second_field(uint32 state) { return rand_init(state, 10019689); }
CUDA_CALLABLE inline uint32 third_field(uint32 state) { return rand_init(state, 13112221); }

}  // namespace perlin

// ---- noise ---------------------------------------------------------------------------------------------------

CUDA_CALLABLE inline float32 noise(uint32 state, float32 x) {
    const float32 p[1] = {x};
    return perlin::value<1>(state, perlin::cell_of<1>(p, nullptr));
}
CUDA_CALLABLE inline void adj_noise(uint32 state, float32 x, uint32&, float32& adj_x, const float32& adj_ret) {
    const float32 p[1] = {x};
    adj_x += perlin::gradient<1>(state, perlin::cell_of<1>(p, nullptr)).c[0] * adj_ret;
}
template <unsigned N> CUDA_CALLABLE inline float32 noise(uint32 state, const vec_t<N, float32>& p) {
    return perlin::value<N>(state, perlin::cell_at<N>(p, nullptr));
}
template <unsigned N>
CUDA_CALLABLE inline void adj_noise(uint32 state, const vec_t<N, float32>& p, uint32&, vec_t<N, float32>& adj_p,
                                    const float32& adj_ret) {
    perlin::accumulate<N>(adj_p, perlin::gradient<N>(state, perlin::cell_at<N>(p, nullptr)), adj_ret);
}

// ---- pnoise: lattice coordinates wrap with the integer periods ------------------------------------------------

CUDA_CALLABLE inline float32 pnoise(uint32 state, float32 x, int32 px) {
    const float32 p[1] = {x};
    const int32 periods[1] = {px};
    return perlin::value<1>(state, perlin::cell_of<1>(p, periods));
}
CUDA_CALLABLE inline void adj_pnoise(uint32 state, float32 x, int32 px, uint32&, float32& adj_x, int32&,
                                     const float32& adj_ret) {
    const float32 p[1] = {x};
    const int32 periods[1] = {px};
    adj_x += perlin::gradient<1>(state, perlin::cell_of<1>(p, periods)).c[0] * adj_ret;
}
CUDA_CALLABLE inline float32 pnoise(uint32 state, const vec_t<2, float32>& p, int32 px, int32 py) {
    const int32 periods[2] = {px, py};
    return perlin::value<2>(state, perlin::cell_at<2>(p, periods));
}
CUDA_CALLABLE inline void adj_pnoise(uint32 state, const vec_t<2, float32>& p, int32 px, int32 py, uint32&,
                                     vec_t<2, float32>& adj_p, int32&, int32&, const float32& adj_ret) {
    const int32 periods[2] = {px, py};
    perlin::accumulate<2>(adj_p, perlin::gradient<2>(state, perlin::cell_at<2>(p, periods)), adj_ret);
}
CUDA_CALLABLE inline float32 pnoise(uint32 state, const vec_t<3, float32>& p, int32 px, int32 py, int32 pz) {
    const int32 periods[3] = {px, py, pz};
    return perlin::value<3>(state, perlin::cell_at<3>(p, periods));
}
CUDA_CALLABLE inline void adj_pnoise(uint32 state, const vec_t<3, float32>& p, int32 px, int32 py, int32 pz,
                                     uint32&, vec_t<3, float32>& adj_p, int32&, int32&, int32&,
                                     const float32& adj_ret) {
    const int32 periods[3] = {px, py, pz};
    perlin::accumulate<3>(adj_p, perlin::gradient<3>(state, perlin::cell_at<3>(p, periods)), adj_ret);
}
CUDA_CALLABLE inline float32 pnoise(uint32 state, const vec_t<4, float32>& p, int32 px, int32 py, int32 pz,
                                    int32 pt) {
    const int32 periods[4] = {px, py, pz, pt};
    return perlin::value<4>(state, perlin::cell_at<4>(p, periods));
}
CUDA_CALLABLE inline void adj_pnoise(uint32 state, const vec_t<4, float32>& p, int32 px, int32 py, int32 pz,
                                     int32 pt, uint32&, vec_t<4, float32>& adj_p, int32&, int32&, int32&, int32&,
                                     const float32& adj_ret) {
    const int32 periods[4] = {px, py, pz, pt};
    perlin::accumulate<4>(adj_p, perlin::gradient<4>(state, perlin::cell_at<4>(p, periods)), adj_ret);
}

// ---- curlnoise: octaves of noise gradients, rotated (2-d) or the curl of three fields (3-d, 4-d) -------------
// Octave i samples at lacunarity^i * p with weight gain^i.

template <typename O>
CUDA_CALLABLE inline vec_t<2, float32> curlnoise(uint32 state, const vec_t<2, float32>& p, O octaves,
                                                 float32 lacunarity, float32 gain) {
    vec_t<2, float32> sum;
    float32 frequency = 1.0f, amplitude = 1.0f;
    for (uint32 i = 0; i < uint32(octaves); ++i) {
        vec_t<2, float32> g = perlin::gradient<2>(state, perlin::cell_at<2>(mul(frequency, p), nullptr));
        for (unsigned k = 0; k < 2; ++k) sum.c[k] += amplitude * g.c[k];
        amplitude *= gain;
        frequency *= lacunarity;
    }
    vec_t<2, float32> r;
    r.c[0] = -sum.c[1];
    r.c[1] = sum.c[0];
    return r;
}
// d(-g_y, g_x)/dp = frequency * amplitude * (-H[1][.], H[0][.]); the adjoint is its transpose times adj_ret.
template <typename O>
CUDA_CALLABLE inline void adj_curlnoise(uint32 state, const vec_t<2, float32>& p, O octaves, float32 lacunarity,
                                        float32 gain, uint32&, vec_t<2, float32>& adj_p, O&, float32&, float32&,
                                        const vec_t<2, float32>& adj_ret) {
    float32 frequency = 1.0f, amplitude = 1.0f;
    for (uint32 i = 0; i < uint32(octaves); ++i) {
        float32 h[2][2];
        perlin::hessian<2>(state, perlin::cell_at<2>(mul(frequency, p), nullptr), h);
        float32 scale = amplitude * frequency;
        for (unsigned c = 0; c < 2; ++c) adj_p.c[c] += scale * (-h[1][c] * adj_ret.c[0] + h[0][c] * adj_ret.c[1]);
        amplitude *= gain;
        frequency *= lacunarity;
    }
}

// The curl of three noise fields (states s, second_field(s), third_field(s), the state moving on each octave):
// (dN3/dy - dN2/dz, dN1/dz - dN3/dx, dN2/dx - dN1/dy) from the first three gradient components.
template <unsigned N>
CUDA_CALLABLE inline vec_t<3, float32> curl_of_fields(uint32 state, const vec_t<N, float32>& p, uint32 octaves,
                                                      float32 lacunarity, float32 gain) {
    vec_t<N, float32> sum[3];
    float32 frequency = 1.0f, amplitude = 1.0f;
    for (uint32 i = 0; i < octaves; ++i) {
        perlin::Cell<N> cell = perlin::cell_at<N>(mul(frequency, p), nullptr);
        for (unsigned f = 0; f < 3; ++f) {
            if (f == 1) state = perlin::second_field(state);
            if (f == 2) state = perlin::third_field(state);
            vec_t<N, float32> g = perlin::gradient<N>(state, cell);
            for (unsigned k = 0; k < N; ++k) sum[f].c[k] += amplitude * g.c[k];
        }
        amplitude *= gain;
        frequency *= lacunarity;
    }
    vec_t<3, float32> r;
    r.c[0] = sum[2].c[1] - sum[1].c[2];
    r.c[1] = sum[0].c[2] - sum[2].c[0];
    r.c[2] = sum[1].c[0] - sum[0].c[1];
    return r;
}
template <unsigned N>
CUDA_CALLABLE inline void adj_curl_of_fields(uint32 state, const vec_t<N, float32>& p, uint32 octaves,
                                             float32 lacunarity, float32 gain, vec_t<N, float32>& adj_p,
                                             const vec_t<3, float32>& adj_ret) {
    float32 frequency = 1.0f, amplitude = 1.0f;
    for (uint32 i = 0; i < octaves; ++i) {
        perlin::Cell<N> cell = perlin::cell_at<N>(mul(frequency, p), nullptr);
        float32 h[3][N][N];
        for (unsigned f = 0; f < 3; ++f) {
            if (f == 1) state = perlin::second_field(state);
            if (f == 2) state = perlin::third_field(state);
            perlin::hessian<N>(state, cell, h[f]);
        }
        float32 scale = amplitude * frequency;
        for (unsigned c = 0; c < N; ++c) {
            adj_p.c[c] += scale * (adj_ret.c[0] * (h[2][1][c] - h[1][2][c]) +
                                   adj_ret.c[1] * (h[0][2][c] - h[2][0][c]) +
                                   adj_ret.c[2] * (h[1][0][c] - h[0][1][c]));
        }
        amplitude *= gain;
        frequency *= lacunarity;
    }
}
template <unsigned N, typename O>
CUDA_CALLABLE inline vec_t<3, float32> curlnoise(uint32 state, const vec_t<N, float32>& p, O octaves,
                                                 float32 lacunarity, float32 gain) {
    static_assert(N == 3 || N == 4, "curlnoise of 3 or 4 coordinates returns a 3-vector");
    return curl_of_fields<N>(state, p, uint32(octaves), lacunarity, gain);
}
template <unsigned N, typename O>
CUDA_CALLABLE inline void adj_curlnoise(uint32 state, const vec_t<N, float32>& p, O octaves, float32 lacunarity,
                                        float32 gain, uint32&, vec_t<N, float32>& adj_p, O&, float32&, float32&,
                                        const vec_t<3, float32>& adj_ret) {
    adj_curl_of_fields<N>(state, p, uint32(octaves), lacunarity, gain, adj_p, adj_ret);
}

}  // namespace wp
