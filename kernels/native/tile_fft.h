// Tile FFTs (wp.tile_fft / wp.tile_ifft): in place, along the last axis of a tile of complex numbers stored as
// vec2 (re, im) of float32 or float64, one transform per row. Both unnormalised, as Warp's: the forward sums
// x_j e^(-2 pi i jk / n), the inverse x_j e^(+2 pi i jk / n), so ifft(fft(x)) = n x.
//
// Power-of-two lengths: iterative radix-2 Cooley-Tukey (bit-reversed order, then log2(n) butterfly passes whose
// twiddle factor advances by one complex multiplication per butterfly). Other lengths: the direct O(n^2) sum.
// The arithmetic is the textbook one, in its usual order, which is also Warp's CPU order (its values to round-off
// or better).
//
// Gradients: the transform is linear and its adjoint (conjugate transpose) is the other direction, unnormalised:
// adj_x += ifft(adj_y) for y = fft(x), and adj_x += fft(adj_y) for y = ifft(x).
#pragma once
#include "core.h"
#include "vec.h"
#include "tile.h"
#include "scalar_math.h"

namespace wp {
namespace fft {

template <typename T> CUDA_CALLABLE inline bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Reorder x[0..n) so that element i moves to the bit-reversal of i (n a power of two).
template <typename T> CUDA_CALLABLE inline void bit_reverse(vec_t<2, T>* x, int n) {
    int j = 0;
    for (int i = 1; i < n; ++i) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            vec_t<2, T> swap = x[i];
            x[i] = x[j];
            x[j] = swap;
        }
    }
}

// sign: -1 forward, +1 inverse.
template <typename T> CUDA_CALLABLE inline void radix2(vec_t<2, T>* x, int n, int sign) {
    bit_reverse<T>(x, n);
    const T two_pi = T(6.283185307179586476925286766559);
    for (int span = 2; span <= n; span <<= 1) {
        const int half = span >> 1;
        const T angle = T(sign) * two_pi / T(span);
        const T step_re = sm::cmath::cos(angle), step_im = sm::cmath::sin(angle);
        for (int start = 0; start < n; start += span) {
            T w_re = T(1), w_im = T(0);
            for (int k = 0; k < half; ++k) {
                vec_t<2, T>& lo = x[start + k];
                vec_t<2, T>& hi = x[start + k + half];
                const T t_re = w_re * hi.c[0] - w_im * hi.c[1];
                const T t_im = w_re * hi.c[1] + w_im * hi.c[0];
                const T u_re = lo.c[0], u_im = lo.c[1];
                lo.c[0] = u_re + t_re;
                lo.c[1] = u_im + t_im;
                hi.c[0] = u_re - t_re;
                hi.c[1] = u_im - t_im;
                const T next_re = w_re * step_re - w_im * step_im;
                const T next_im = w_re * step_im + w_im * step_re;
                w_re = next_re;
                w_im = next_im;
            }
        }
    }
}

// The direct sum for any length (n at most the tile's row length, a compile-time bound).
template <typename T, int N> CUDA_CALLABLE inline void direct(vec_t<2, T>* x, int sign) {
    vec_t<2, T> out[N];
    const T base = T(sign) * T(6.283185307179586476925286766559) / T(N);
    for (int k = 0; k < N; ++k) {
        T re = T(0), im = T(0);
        for (int j = 0; j < N; ++j) {
            const T angle = base * T(k) * T(j);
            const T c = sm::cmath::cos(angle), s = sm::cmath::sin(angle);
            re += c * x[j].c[0] - s * x[j].c[1];
            im += c * x[j].c[1] + s * x[j].c[0];
        }
        out[k].c[0] = re;
        out[k].c[1] = im;
    }
    for (int k = 0; k < N; ++k) x[k] = out[k];
}

template <typename T, int R, int C> CUDA_CALLABLE inline void rows(tile_t<vec_t<2, T>, R, C>& t, int sign) {
    for (int r = 0; r < R; ++r) {
        if (power_of_two<T>(C))
            radix2<T>(t.data + r * C, C, sign);
        else
            direct<T, C>(t.data + r * C, sign);
    }
}

template <typename T, int R, int C>
CUDA_CALLABLE inline void accumulate_rows(tile_t<vec_t<2, T>, R, C>& adj, tile_t<vec_t<2, T>, R, C> g, int sign) {
    rows<T, R, C>(g, sign);
    for (int k = 0; k < R * C; ++k) adj.data[k] = add(adj.data[k], g.data[k]);
}

}  // namespace fft

template <typename T, int R, int C> CUDA_CALLABLE inline void tile_fft(tile_t<vec_t<2, T>, R, C>& t) {
    fft::rows<T, R, C>(t, -1);
}
template <typename T, int R, int C> CUDA_CALLABLE inline void tile_ifft(tile_t<vec_t<2, T>, R, C>& t) {
    fft::rows<T, R, C>(t, +1);
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_fft(const tile_t<vec_t<2, T>, R, C>&, tile_t<vec_t<2, T>, R, C>& adj_t,
                                       const tile_t<vec_t<2, T>, R, C>& adj_ret) {
    fft::accumulate_rows<T, R, C>(adj_t, adj_ret, +1);
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_ifft(const tile_t<vec_t<2, T>, R, C>&, tile_t<vec_t<2, T>, R, C>& adj_t,
                                        const tile_t<vec_t<2, T>, R, C>& adj_ret) {
    fft::accumulate_rows<T, R, C>(adj_t, adj_ret, -1);
}

}  // namespace wp
