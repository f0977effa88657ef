// Tiles: fixed-size blocks of values worked on together, with their adjoints side by side.
// A tile is a value (row-major R x C; a 1-d tile of length n is n x 1). On the CPU a block runs as one lane, so
// each operation is a loop over the whole tile in that lane; results are the same as a cooperative block's.
#pragma once
#include "array.h"
#include "core.h"
#include "random.h"
#include "scalar_ops.h"

namespace wp {

// No constructor: a declared tile is uninitialised (generated code declares every value up front, and zeroing
// large tiles there would cost more than the work); `tile_t<...>()` value-initialises it to zeros.
template <typename T, int R, int C>
struct tile_t {
    T data[R * C];
    CUDA_CALLABLE T& at(int i, int j) { return data[i * C + j]; }
    CUDA_CALLABLE const T& at(int i, int j) const { return data[i * C + j]; }
};

template <typename Tile> struct tile_traits;
template <typename T, int R, int C> struct tile_traits<tile_t<T, R, C>> {
    typedef T value_type;
    static const int rows = R, cols = C, size = R * C;
};

// ---- construction ------------------------------------------------------------------------------------------

template <typename Tile> CUDA_CALLABLE inline Tile tile_zeros() { return Tile(); }
template <typename Tile> CUDA_CALLABLE inline void adj_tile_zeros(const Tile&) {}

// tile_empty: Warp leaves the contents undefined (write before read); zeros cost one pass and keep a premature
// read deterministic on both backends.
template <typename Tile> CUDA_CALLABLE inline Tile tile_empty() { return Tile(); }
template <typename Tile> CUDA_CALLABLE inline void adj_tile_empty(const Tile&) {}

template <typename Tile> CUDA_CALLABLE inline Tile tile_ones() {
    Tile t = Tile();
    for (int k = 0; k < tile_traits<Tile>::size; ++k) t.data[k] = typename tile_traits<Tile>::value_type(1);
    return t;
}
template <typename Tile> CUDA_CALLABLE inline void adj_tile_ones(const Tile&) {}

template <typename Tile, typename T> CUDA_CALLABLE inline Tile tile_full(const T& value) {
    Tile t = Tile();
    for (int k = 0; k < tile_traits<Tile>::size; ++k) t.data[k] = value;
    return t;
}
template <typename Tile, typename T>
CUDA_CALLABLE inline void adj_tile_full(const T&, T& adj_value, const Tile& adj_ret) {
    for (int k = 0; k < tile_traits<Tile>::size; ++k) adj_value = add(adj_value, adj_ret.data[k]);
}

template <typename Tile, typename S> CUDA_CALLABLE inline Tile tile_arange(S start, S step) {
    Tile t = Tile();
    for (int k = 0; k < tile_traits<Tile>::size; ++k)
        t.data[k] = typename tile_traits<Tile>::value_type(start + S(k) * step);
    return t;
}
template <typename Tile, typename S>
CUDA_CALLABLE inline void adj_tile_arange(S, S, S&, S&, const Tile&) {}

// Random tiles: the generator of lane 0 (the only lane on the CPU), rand_pcg(0 + rng), fills the tile in order.
template <typename Tile> CUDA_CALLABLE inline Tile tile_randi(uint32 rng) {
    uint32 state = rand_pcg(rng);
    Tile t;
    for (int k = 0; k < tile_traits<Tile>::size; ++k) t.data[k] = randi(state);
    return t;
}
template <typename Tile> CUDA_CALLABLE inline Tile tile_randi(uint32 rng, int32 low, int32 high) {
    uint32 state = rand_pcg(rng);
    Tile t;
    for (int k = 0; k < tile_traits<Tile>::size; ++k) t.data[k] = randi(state, low, high);
    return t;
}
template <typename Tile> CUDA_CALLABLE inline Tile tile_randf(uint32 rng) {
    uint32 state = rand_pcg(rng);
    Tile t;
    for (int k = 0; k < tile_traits<Tile>::size; ++k) t.data[k] = randf(state);
    return t;
}
template <typename Tile> CUDA_CALLABLE inline Tile tile_randf(uint32 rng, float32 low, float32 high) {
    uint32 state = rand_pcg(rng);
    Tile t;
    for (int k = 0; k < tile_traits<Tile>::size; ++k) t.data[k] = randf(state, low, high);
    return t;
}

// wp.tile(x): the block's values as a tile; one lane on the CPU gives a tile of one element.
template <typename Tile, typename T> CUDA_CALLABLE inline Tile tile_from_value(const T& x) {
    Tile t = Tile();
    t.data[0] = x;
    return t;
}
template <typename Tile, typename T>
CUDA_CALLABLE inline void adj_tile_from_value(const T&, T& adj_x, const Tile& adj_ret) {
    adj_x = add(adj_x, adj_ret.data[0]);
}
template <typename T, int R, int C> CUDA_CALLABLE inline T untile(const tile_t<T, R, C>& t) { return t.data[0]; }
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_untile(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_t, const T& adj_ret) {
    adj_t.data[0] = add(adj_t.data[0], adj_ret);
}

// ---- sorting ----------------------------------------------------------------------------------------------

// tile_sort: heap sort of the keys (in place, no scratch memory however large the tile), values moved alongside.
template <typename K, int R, int C, typename V, int R2, int C2>
CUDA_CALLABLE inline void tile_sort(tile_t<K, R, C>& keys, tile_t<V, R2, C2>& values) {
    static_assert(R * C == R2 * C2, "tile_sort: keys and values must have the same number of elements");
    const int n = R * C;
    auto sift = [&](int root, int end) {
        while (2 * root + 1 < end) {
            int child = 2 * root + 1;
            if (child + 1 < end && keys.data[child] < keys.data[child + 1]) child++;
            if (!(keys.data[root] < keys.data[child])) return;
            K k = keys.data[root]; keys.data[root] = keys.data[child]; keys.data[child] = k;
            V v = values.data[root]; values.data[root] = values.data[child]; values.data[child] = v;
            root = child;
        }
    };
    for (int start = n / 2 - 1; start >= 0; --start) sift(start, n);
    for (int end = n - 1; end > 0; --end) {
        K k = keys.data[0]; keys.data[0] = keys.data[end]; keys.data[end] = k;
        V v = values.data[0]; values.data[0] = values.data[end]; values.data[end] = v;
        sift(0, end);
    }
}

// ---- element access -----------------------------------------------------------------------------------------

template <typename T, int R, int C> CUDA_CALLABLE inline T extract(const tile_t<T, R, C>& t, int32 i) {
    return t.data[i];
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_extract(const tile_t<T, R, C>&, int32 i, tile_t<T, R, C>& adj_t, int32&, const T& adj_ret) {
    adj_t.data[i] = add(adj_t.data[i], adj_ret);
}
template <typename T, int R, int C> CUDA_CALLABLE inline T extract(const tile_t<T, R, C>& t, int32 i, int32 j) {
    return t.at(i, j);
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_extract(const tile_t<T, R, C>&, int32 i, int32 j, tile_t<T, R, C>& adj_t, int32&, int32&,
                                      const T& adj_ret) {
    adj_t.at(i, j) = add(adj_t.at(i, j), adj_ret);
}
// t[i] = v, t[i, j] = v: a new tile. The written element's gradient goes to v, the others' to the old tile.
template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> assign(const tile_t<T, R, C>& t, int32 i, const T& v) {
    tile_t<T, R, C> r = t;
    r.data[i] = v;
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_assign(const tile_t<T, R, C>&, int32 i, const T&, tile_t<T, R, C>& adj_t, int32&, T& adj_v,
                                     const tile_t<T, R, C>& adj_ret) {
    for (int k = 0; k < R * C; ++k)
        if (k != i) adj_t.data[k] = add(adj_t.data[k], adj_ret.data[k]);
    adj_v = add(adj_v, adj_ret.data[i]);
}
template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> assign(const tile_t<T, R, C>& t, int32 i, int32 j, const T& v) {
    tile_t<T, R, C> r = t;
    r.at(i, j) = v;
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_assign(const tile_t<T, R, C>&, int32 i, int32 j, const T&, tile_t<T, R, C>& adj_t, int32&,
                                     int32&, T& adj_v, const tile_t<T, R, C>& adj_ret) {
    for (int k = 0; k < R * C; ++k)
        if (k != i * C + j) adj_t.data[k] = add(adj_t.data[k], adj_ret.data[k]);
    adj_v = add(adj_v, adj_ret.at(i, j));
}

// ---- memory: load, store, atomic add (elements outside the array read as zero and are not written) ----------

template <typename T> CUDA_CALLABLE inline bool tile_in_bounds(const array_t<T>& a, int64 i, int64 j) {
    if (a.ndim == 1) return i >= 0 && i < a.shape[0];
    return i >= 0 && j >= 0 && i < a.shape[0] && j < a.shape[1];
}
template <typename T> CUDA_CALLABLE inline T* tile_elem(const array_t<T>& a, int64 i, int64 j) {
    if (a.ndim == 1) return (T*)((char*)a.data + i * a.strides[0]);
    return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1]);
}

template <typename Tile, typename T> CUDA_CALLABLE inline Tile tile_load(const array_t<T>& a, int32 oi, int32 oj) {
    const int R = tile_traits<Tile>::rows, C = tile_traits<Tile>::cols;
    if (a.ndim == 2 && oi >= 0 && oj >= 0 && int64(oi) + R <= a.shape[0] && int64(oj) + C <= a.shape[1]) {
        // the whole tile lies inside the array: copy rows, no bounds checks, no zero fill
        Tile t;
        for (int i = 0; i < R; ++i) {
            const char* row = (const char*)a.data + (int64(oi) + i) * a.strides[0] + int64(oj) * a.strides[1];
            for (int j = 0; j < C; ++j) t.at(i, j) = *(const T*)(row + j * a.strides[1]);
        }
        return t;
    }
    Tile t = Tile();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai = a.ndim == 1 ? int64(oi) + i * C + j : int64(oi) + i;
            int64 aj = a.ndim == 1 ? 0 : int64(oj) + j;
            if (tile_in_bounds(a, ai, aj)) t.at(i, j) = *tile_elem(a, ai, aj);
        }
    return t;
}
template <typename Tile, typename T>
CUDA_CALLABLE inline void adj_tile_load(const array_t<T>&, int32 oi, int32 oj, const array_t<T>& adj_a, int32&, int32&,
                                        const Tile& adj_ret) {
    if (!adj_a.data) return;
    const int R = tile_traits<Tile>::rows, C = tile_traits<Tile>::cols;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai = adj_a.ndim == 1 ? int64(oi) + i * C + j : int64(oi) + i;
            int64 aj = adj_a.ndim == 1 ? 0 : int64(oj) + j;
            if (tile_in_bounds(adj_a, ai, aj)) atomic_rmw_add(tile_elem(adj_a, ai, aj), adj_ret.at(i, j));
        }
}

// tile_load_indexed: element (i, j) comes from the array at the offset plus (indices[i], j) (axis 0) or
// (i, indices[j]) (axis 1); a 1-d array gathers element i from offset + indices[i]. Outside the array: zero.
template <typename T, int K>
CUDA_CALLABLE inline void tile_indexed_source(const array_t<T>& a, const tile_t<int32, K, 1>& idx, int32 oi,
                                              int32 oj, int32 axis, int i, int j, int64& ai, int64& aj) {
    if (a.ndim == 1) { ai = int64(oi) + idx.data[i]; aj = 0; return; }
    ai = int64(oi) + (axis == 0 ? int64(idx.data[i]) : int64(i));
    aj = int64(oj) + (axis == 1 ? int64(idx.data[j]) : int64(j));
}
template <typename Tile, typename T, int K>
CUDA_CALLABLE inline Tile tile_load_indexed(const array_t<T>& a, const tile_t<int32, K, 1>& idx, int32 oi, int32 oj,
                                            int32 axis) {
    const int R = tile_traits<Tile>::rows, C = tile_traits<Tile>::cols;
    Tile t = Tile();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai, aj;
            tile_indexed_source(a, idx, oi, oj, axis, i, j, ai, aj);
            if (tile_in_bounds(a, ai, aj)) t.at(i, j) = *tile_elem(a, ai, aj);
        }
    return t;
}
template <typename Tile, typename T, int K>
CUDA_CALLABLE inline void adj_tile_load_indexed(const array_t<T>&, const tile_t<int32, K, 1>& idx, int32 oi, int32 oj,
                                                int32 axis, const array_t<T>& adj_a, tile_t<int32, K, 1>&, int32&,
                                                int32&, int32&, const Tile& adj_ret) {
    if (!adj_a.data) return;
    const int R = tile_traits<Tile>::rows, C = tile_traits<Tile>::cols;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai, aj;
            tile_indexed_source(adj_a, idx, oi, oj, axis, i, j, ai, aj);
            if (tile_in_bounds(adj_a, ai, aj)) atomic_rmw_add(tile_elem(adj_a, ai, aj), adj_ret.at(i, j));
        }
}

template <typename T, int R, int C>
CUDA_CALLABLE inline void tile_store(const array_t<T>& a, const tile_t<T, R, C>& t, int32 oi, int32 oj) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai = a.ndim == 1 ? int64(oi) + i * C + j : int64(oi) + i;
            int64 aj = a.ndim == 1 ? 0 : int64(oj) + j;
            if (tile_in_bounds(a, ai, aj)) *tile_elem(a, ai, aj) = t.at(i, j);
        }
}
// The gradient of each element a tile put in the array flows back to the tile. A plain store also consumes it
// when the gradient array is flagged so (ARRAY_FLAG_CONSUME, as adj_store_element): the stored value replaced
// the element, so an earlier write of that element gets no gradient from later reads.
template <typename T, int R, int C>
CUDA_CALLABLE inline void tile_gradient_to_tile(const array_t<T>& adj_a, tile_t<T, R, C>& adj_t, int32 oi, int32 oj,
                                                bool consume) {
    if (!adj_a.data) return;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai = adj_a.ndim == 1 ? int64(oi) + i * C + j : int64(oi) + i;
            int64 aj = adj_a.ndim == 1 ? 0 : int64(oj) + j;
            if (!tile_in_bounds(adj_a, ai, aj)) continue;
            T* slot = tile_elem(adj_a, ai, aj);
            adj_t.at(i, j) = add(adj_t.at(i, j), *slot);
            if (consume) *slot = adj_zero<T>();
        }
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_store(const array_t<T>&, const tile_t<T, R, C>&, int32 oi, int32 oj,
                                         const array_t<T>& adj_a, tile_t<T, R, C>& adj_t, int32&, int32&) {
    tile_gradient_to_tile(adj_a, adj_t, oi, oj, (adj_a.flags & ARRAY_FLAG_CONSUME) != 0);
}

// tile_store_indexed / tile_atomic_add_indexed: element (i, j) of t goes where tile_load_indexed reads it from.
template <typename T, int R, int C, int K>
CUDA_CALLABLE inline void tile_store_indexed(const array_t<T>& a, const tile_t<int32, K, 1>& idx,
                                             const tile_t<T, R, C>& t, int32 oi, int32 oj, int32 axis) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai, aj;
            tile_indexed_source(a, idx, oi, oj, axis, i, j, ai, aj);
            if (tile_in_bounds(a, ai, aj)) *tile_elem(a, ai, aj) = t.at(i, j);
        }
}
// The gradient of each scattered element flows back to the tile (a plain store consumes it when the gradient
// array is flagged so, as tile_store).
template <typename T, int R, int C, int K>
CUDA_CALLABLE inline void tile_indexed_gradient_to_tile(const array_t<T>& adj_a, const tile_t<int32, K, 1>& idx,
                                                        tile_t<T, R, C>& adj_t, int32 oi, int32 oj, int32 axis,
                                                        bool consume) {
    if (!adj_a.data) return;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai, aj;
            tile_indexed_source(adj_a, idx, oi, oj, axis, i, j, ai, aj);
            if (!tile_in_bounds(adj_a, ai, aj)) continue;
            T* slot = tile_elem(adj_a, ai, aj);
            adj_t.at(i, j) = add(adj_t.at(i, j), *slot);
            if (consume) *slot = T();
        }
}
template <typename T, int R, int C, int K>
CUDA_CALLABLE inline void adj_tile_store_indexed(const array_t<T>&, const tile_t<int32, K, 1>& idx,
                                                 const tile_t<T, R, C>&, int32 oi, int32 oj, int32 axis,
                                                 const array_t<T>& adj_a, tile_t<int32, K, 1>&, tile_t<T, R, C>& adj_t,
                                                 int32&, int32&, int32&) {
    tile_indexed_gradient_to_tile(adj_a, idx, adj_t, oi, oj, axis, (adj_a.flags & ARRAY_FLAG_CONSUME) != 0);
}
template <typename T, int R, int C, int K>
CUDA_CALLABLE inline tile_t<T, R, C> tile_atomic_add_indexed(const array_t<T>& a, const tile_t<int32, K, 1>& idx,
                                                             const tile_t<T, R, C>& t, int32 oi, int32 oj, int32 axis) {
    tile_t<T, R, C> old = tile_t<T, R, C>();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai, aj;
            tile_indexed_source(a, idx, oi, oj, axis, i, j, ai, aj);
            if (tile_in_bounds(a, ai, aj)) old.at(i, j) = atomic_rmw_add(tile_elem(a, ai, aj), t.at(i, j));
        }
    return old;
}
template <typename T, int R, int C, int K>
CUDA_CALLABLE inline void adj_tile_atomic_add_indexed(const array_t<T>&, const tile_t<int32, K, 1>& idx,
                                                      const tile_t<T, R, C>&, int32 oi, int32 oj, int32 axis,
                                                      const array_t<T>& adj_a, tile_t<int32, K, 1>&,
                                                      tile_t<T, R, C>& adj_t, int32&, int32&, int32&,
                                                      const tile_t<T, R, C>&) {
    tile_indexed_gradient_to_tile(adj_a, idx, adj_t, oi, oj, axis, false);  // the add kept the earlier value
}

template <typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, R, C> tile_atomic_add(const array_t<T>& a, const tile_t<T, R, C>& t, int32 oi, int32 oj) {
    tile_t<T, R, C> old = tile_t<T, R, C>();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            int64 ai = a.ndim == 1 ? int64(oi) + i * C + j : int64(oi) + i;
            int64 aj = a.ndim == 1 ? 0 : int64(oj) + j;
            if (tile_in_bounds(a, ai, aj)) old.at(i, j) = atomic_rmw_add(tile_elem(a, ai, aj), t.at(i, j));
        }
    return old;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_atomic_add(const array_t<T>& a, const tile_t<T, R, C>& t, int32 oi, int32 oj,
                                              const array_t<T>& adj_a, tile_t<T, R, C>& adj_t, int32& ai_, int32& aj_,
                                              const tile_t<T, R, C>&) {
    tile_gradient_to_tile(adj_a, adj_t, oi, oj, false);  // the add kept the element's earlier value
}

// ---- elementwise arithmetic ------------------------------------------------------------------------------------

// add/sub/neg/pos on whole tiles: the adjoint code accumulates tile adjoints with them. (Tile arithmetic in
// kernels is an elementwise tile_map, which handles mixed element types and broadcast scalars.)
#define WP_TILE_BINARY(NAME)                                                                                        \
    template <typename T, int R, int C>                                                                             \
    CUDA_CALLABLE inline tile_t<T, R, C> NAME(const tile_t<T, R, C>& a, const tile_t<T, R, C>& b) {                 \
        tile_t<T, R, C> r;                                                                                          \
        for (int k = 0; k < R * C; ++k) r.data[k] = NAME(a.data[k], b.data[k]);                                     \
        return r;                                                                                                   \
    }
WP_TILE_BINARY(add)
WP_TILE_BINARY(sub)
#undef WP_TILE_BINARY

template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, R, C> neg(const tile_t<T, R, C>& a) {
    tile_t<T, R, C> r;
    for (int k = 0; k < R * C; ++k) r.data[k] = neg(a.data[k]);
    return r;
}

// ---- shape ----------------------------------------------------------------------------------------------------

template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, C, R> tile_transpose(const tile_t<T, R, C>& a) {
    tile_t<T, C, R> r = tile_t<T, C, R>();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.at(j, i) = a.at(i, j);
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_transpose(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_a, const tile_t<T, C, R>& adj_ret) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) adj_a.at(i, j) = add(adj_a.at(i, j), adj_ret.at(j, i));
}

// Broadcast a tile to a larger shape: dimensions of size 1 repeat (numpy rules on up to 2 dimensions).
template <typename Out, typename T, int R, int C> CUDA_CALLABLE inline Out tile_broadcast(const tile_t<T, R, C>& a) {
    Out r = Out();
    const int OR = tile_traits<Out>::rows, OC = tile_traits<Out>::cols;
    for (int i = 0; i < OR; ++i)
        for (int j = 0; j < OC; ++j) r.at(i, j) = a.at(R == 1 ? 0 : i, C == 1 ? 0 : j);
    return r;
}
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_broadcast(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_a, const Out& adj_ret) {
    const int OR = tile_traits<Out>::rows, OC = tile_traits<Out>::cols;
    for (int i = 0; i < OR; ++i)
        for (int j = 0; j < OC; ++j) {
            T& slot = adj_a.at(R == 1 ? 0 : i, C == 1 ? 0 : j);
            slot = add(slot, adj_ret.at(i, j));
        }
}

// A 1-d tile of length n (stored n x 1) broadcast as a row: out(i, j) = a[j] (or a[0] when n == 1).
template <typename Out, typename T, int R>
CUDA_CALLABLE inline Out tile_broadcast_row(const tile_t<T, R, 1>& a) {
    Out r = Out();
    const int OR = tile_traits<Out>::rows, OC = tile_traits<Out>::cols;
    for (int i = 0; i < OR; ++i)
        for (int j = 0; j < OC; ++j) r.at(i, j) = a.data[R == 1 ? 0 : j];
    return r;
}
template <typename Out, typename T, int R>
CUDA_CALLABLE inline void adj_tile_broadcast_row(const tile_t<T, R, 1>&, tile_t<T, R, 1>& adj_a, const Out& adj_ret) {
    const int OR = tile_traits<Out>::rows, OC = tile_traits<Out>::cols;
    for (int i = 0; i < OR; ++i)
        for (int j = 0; j < OC; ++j) {
            T& slot = adj_a.data[R == 1 ? 0 : j];
            slot = add(slot, adj_ret.at(i, j));
        }
}

// The same elements (row-major order) with another shape of the same size.
template <typename Out, typename T, int R, int C> CUDA_CALLABLE inline Out tile_reshape(const tile_t<T, R, C>& a) {
    Out r;
    for (int k = 0; k < R * C; ++k) r.data[k] = a.data[k];
    return r;
}
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_reshape(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_a, const Out& adj_ret) {
    for (int k = 0; k < R * C; ++k) adj_a.data[k] = add(adj_a.data[k], adj_ret.data[k]);
}

// A sub-tile copied out of a tile: rows [oi, oi+OR), columns [oj, oj+OC); outside the source reads as zero.
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline Out tile_view(const tile_t<T, R, C>& a, int32 oi, int32 oj) {
    Out r = Out();
    const int OR = tile_traits<Out>::rows, OC = tile_traits<Out>::cols;
    for (int i = 0; i < OR; ++i)
        for (int j = 0; j < OC; ++j)
            if (oi + i < R && oj + j < C && oi + i >= 0 && oj + j >= 0) r.at(i, j) = a.at(oi + i, oj + j);
    return r;
}
template <typename Out, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_view(const tile_t<T, R, C>&, int32 oi, int32 oj, tile_t<T, R, C>& adj_a, int32&,
                                        int32&, const Out& adj_ret) {
    const int OR = tile_traits<Out>::rows, OC = tile_traits<Out>::cols;
    for (int i = 0; i < OR; ++i)
        for (int j = 0; j < OC; ++j)
            if (oi + i < R && oj + j < C && oi + i >= 0 && oj + j >= 0)
                adj_a.at(oi + i, oj + j) = add(adj_a.at(oi + i, oj + j), adj_ret.at(i, j));
}

// ---- reductions (results are 1-element tiles) ---------------------------------------------------------------------

template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, 1, 1> tile_sum(const tile_t<T, R, C>& a) {
    tile_t<T, 1, 1> r = tile_t<T, 1, 1>();
    T s = T();
    for (int k = 0; k < R * C; ++k) s = add(s, a.data[k]);
    r.data[0] = s;
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_sum(const tile_t<T, R, C>&, tile_t<T, R, C>& adj_a, const tile_t<T, 1, 1>& adj_ret) {
    for (int k = 0; k < R * C; ++k) adj_a.data[k] = add(adj_a.data[k], adj_ret.data[0]);
}

template <typename T, int R, int C> CUDA_CALLABLE inline int32 tile_arg_extreme(const tile_t<T, R, C>& a, bool want_max) {
    int32 best = 0;
    for (int k = 1; k < R * C; ++k)
        if (want_max ? (a.data[k] > a.data[best]) : (a.data[k] < a.data[best])) best = k;
    return best;
}
template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, 1, 1> tile_min(const tile_t<T, R, C>& a) {
    tile_t<T, 1, 1> r = tile_t<T, 1, 1>();
    r.data[0] = a.data[tile_arg_extreme(a, false)];
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_min(const tile_t<T, R, C>& a, tile_t<T, R, C>& adj_a, const tile_t<T, 1, 1>& adj_ret) {
    int32 k = tile_arg_extreme(a, false);
    adj_a.data[k] = add(adj_a.data[k], adj_ret.data[0]);
}
template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<T, 1, 1> tile_max(const tile_t<T, R, C>& a) {
    tile_t<T, 1, 1> r = tile_t<T, 1, 1>();
    r.data[0] = a.data[tile_arg_extreme(a, true)];
    return r;
}
template <typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_max(const tile_t<T, R, C>& a, tile_t<T, R, C>& adj_a, const tile_t<T, 1, 1>& adj_ret) {
    int32 k = tile_arg_extreme(a, true);
    adj_a.data[k] = add(adj_a.data[k], adj_ret.data[0]);
}
template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<int32, 1, 1> tile_argmin(const tile_t<T, R, C>& a) {
    tile_t<int32, 1, 1> r = tile_t<int32, 1, 1>();
    r.data[0] = tile_arg_extreme(a, false);
    return r;
}
template <typename T, int R, int C> CUDA_CALLABLE inline tile_t<int32, 1, 1> tile_argmax(const tile_t<T, R, C>& a) {
    tile_t<int32, 1, 1> r = tile_t<int32, 1, 1>();
    r.data[0] = tile_arg_extreme(a, true);
    return r;
}

// tile_map: element k of the result is f(k), a lambda the compiler writes as `fn(tile_elem(a, k), ...)`. The
// adjoint runs adj_f(k) for every k, which calls the element function's adjoint with tile_elem_ref(adj_a, k) slots.
// A non-tile argument is the same value for every element (broadcast); its adjoint slot is itself, so it
// accumulates the sum over the elements.
template <typename X> CUDA_CALLABLE inline const X& tile_elem(const X& x, int) { return x; }
template <typename T, int R, int C> CUDA_CALLABLE inline const T& tile_elem(const tile_t<T, R, C>& t, int k) {
    return t.data[k];
}
template <typename X> CUDA_CALLABLE inline X& tile_elem_ref(X& x, int) { return x; }
template <typename T, int R, int C> CUDA_CALLABLE inline T& tile_elem_ref(tile_t<T, R, C>& t, int k) {
    return t.data[k];
}
template <typename Out, typename F> CUDA_CALLABLE inline Out tile_map(F f) {
    Out r;
    for (int k = 0; k < tile_traits<Out>::size; ++k) r.data[k] = f(k);
    return r;
}
template <int Size, typename AdjF> CUDA_CALLABLE inline void adj_tile_map(AdjF adj_f) {
    for (int k = Size - 1; k >= 0; --k) adj_f(k);
}

// tile_reduce with its function given as lambdas f(x, y) and adj_f(x, y, adj_x, adj_y, adj_ret).
// A left fold: acc = f(acc, x_k) starting from x_0. The adjoint replays the fold to recover each step's
// accumulator, then runs the steps' adjoints backwards.
template <typename F, typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, 1, 1> tile_reduce(F f, const tile_t<T, R, C>& a) {
    tile_t<T, 1, 1> r = tile_t<T, 1, 1>();
    T acc = a.data[0];
    for (int k = 1; k < R * C; ++k) acc = f(acc, a.data[k]);
    r.data[0] = acc;
    return r;
}
template <typename F, typename AdjF, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_reduce(F f, AdjF adj_f, const tile_t<T, R, C>& a, tile_t<T, R, C>& adj_a,
                                          const tile_t<T, 1, 1>& adj_ret) {
    T prefix[R * C];
    prefix[0] = a.data[0];
    for (int k = 1; k < R * C; ++k) prefix[k] = f(prefix[k - 1], a.data[k]);
    T adj_acc = adj_ret.data[0];
    for (int k = R * C - 1; k >= 1; --k) {
        T adj_prev = T();  // T() is zero for scalars, vectors and matrices alike
        adj_f(prefix[k - 1], a.data[k], adj_prev, adj_a.data[k], adj_acc);
        adj_acc = adj_prev;
    }
    adj_a.data[0] = add(adj_a.data[0], adj_acc);
}

// tile_reduce / tile_sum along an axis: each line (a column for Axis 0, a row for Axis 1) folds to one element
// of a 1-d result. Element k of line l sits at data[tile_line_index<Axis, C>(l, k)].
template <int Axis, int C> CUDA_CALLABLE inline int tile_line_index(int l, int k) {
    return Axis == 0 ? k * C + l : l * C + k;
}
template <int Axis, typename F, typename T, int R, int C>
CUDA_CALLABLE inline tile_t<T, (Axis == 0 ? C : R), 1> tile_reduce_axis(F f, const tile_t<T, R, C>& a) {
    const int lines = Axis == 0 ? C : R, n = Axis == 0 ? R : C;
    tile_t<T, lines, 1> r;
    for (int l = 0; l < lines; ++l) {
        T acc = a.data[tile_line_index<Axis, C>(l, 0)];
        for (int k = 1; k < n; ++k) acc = f(acc, a.data[tile_line_index<Axis, C>(l, k)]);
        r.data[l] = acc;
    }
    return r;
}
template <int Axis, typename F, typename AdjF, typename T, int R, int C>
CUDA_CALLABLE inline void adj_tile_reduce_axis(F f, AdjF adj_f, const tile_t<T, R, C>& a, tile_t<T, R, C>& adj_a,
                                               const tile_t<T, (Axis == 0 ? C : R), 1>& adj_ret) {
    const int lines = Axis == 0 ? C : R, n = Axis == 0 ? R : C;
    T prefix[n];
    for (int l = 0; l < lines; ++l) {
        prefix[0] = a.data[tile_line_index<Axis, C>(l, 0)];
        for (int k = 1; k < n; ++k) prefix[k] = f(prefix[k - 1], a.data[tile_line_index<Axis, C>(l, k)]);
        T adj_acc = adj_ret.data[l];
        for (int k = n - 1; k >= 1; --k) {
            T adj_prev = T();  // T() is zero for scalars, vectors and matrices alike
            int at = tile_line_index<Axis, C>(l, k);
            adj_f(prefix[k - 1], a.data[at], adj_prev, adj_a.data[at], adj_acc);
            adj_acc = adj_prev;
        }
        int first = tile_line_index<Axis, C>(l, 0);
        adj_a.data[first] = add(adj_a.data[first], adj_acc);
    }
}

// ---- matrix product ---------------------------------------------------------------------------------------------

// c += a b on one lane. A block of RB rows x CB columns of c stays in registers while k runs: 3 rows of 128 bytes
// use 12 of the 16 AVX2 registers for floats (measured best: ~2.4x the plain i-k-j loop at 128x64x128). Rows and
// columns left over at the edges use the plain loop.
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void tile_matmul_accumulate(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, tile_t<T, M, N>& c) {
    constexpr int RB = 3;
    constexpr int CB = int(128 / sizeof(T)) > 1 ? int(128 / sizeof(T)) : 1;
    int i0 = 0;
    for (; i0 + RB <= M; i0 += RB) {
        int j0 = 0;
        for (; j0 + CB <= N; j0 += CB) {
            T acc[RB][CB];
            for (int r = 0; r < RB; ++r)
                for (int q = 0; q < CB; ++q) acc[r][q] = c.data[(i0 + r) * N + j0 + q];
            for (int k = 0; k < K; ++k) {
                const T* brow = b.data + k * N + j0;
                for (int r = 0; r < RB; ++r) {
                    const T ar = a.data[(i0 + r) * K + k];
                    for (int q = 0; q < CB; ++q) acc[r][q] += ar * brow[q];
                }
            }
            for (int r = 0; r < RB; ++r)
                for (int q = 0; q < CB; ++q) c.data[(i0 + r) * N + j0 + q] = acc[r][q];
        }
        for (int r = 0; r < RB; ++r)  // columns past the last full block
            for (int k = 0; k < K; ++k) {
                const T ar = a.data[(i0 + r) * K + k];
                for (int j = j0; j < N; ++j) c.data[(i0 + r) * N + j] += ar * b.data[k * N + j];
            }
    }
    for (int i = i0; i < M; ++i)  // rows past the last full block
        for (int k = 0; k < K; ++k) {
            const T aik = a.data[i * K + k];
            for (int j = 0; j < N; ++j) c.data[i * N + j] += aik * b.data[k * N + j];
        }
}
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline tile_t<T, M, N> tile_matmul(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b) {
    tile_t<T, M, N> c = tile_t<T, M, N>();
    tile_matmul_accumulate(a, b, c);
    return c;
}
// dA += dC B^T, dB += A^T dC
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void adj_tile_matmul(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, tile_t<T, M, K>& adj_a,
                                          tile_t<T, K, N>& adj_b, const tile_t<T, M, N>& adj_c) {
    for (int i = 0; i < M; ++i)
        for (int k = 0; k < K; ++k) {
            T s = T(0);
            for (int j = 0; j < N; ++j) s += adj_c.data[i * N + j] * b.data[k * N + j];
            adj_a.data[i * K + k] += s;
        }
    for (int k = 0; k < K; ++k)
        for (int i = 0; i < M; ++i) {
            const T aik = a.at(i, k);
            for (int j = 0; j < N; ++j) adj_b.data[k * N + j] += aik * adj_c.data[i * N + j];
        }
}
template <typename To, typename From, int R, int C>
CUDA_CALLABLE inline tile_t<To, R, C> tile_convert(const tile_t<From, R, C>& t) {
    tile_t<To, R, C> r;
    for (int k = 0; k < R * C; ++k) r.data[k] = To(t.data[k]);
    return r;
}
// float16 tiles, as Warp 1.19's CPU computes them: each product and each partial sum is rounded to float16, the sum
// starts at zero and is added to c at the end (Warp's scalar GEMM: c = alpha * sum + beta * c with alpha = beta = 1).
CUDA_CALLABLE inline float16 tile_matmul_muladd(float16 a, float16 b, float16 sum) {
    return float16(float(sum) + float(float16(float(a) * float(b))));
}
template <int M, int K, int N>
CUDA_CALLABLE inline void tile_matmul_accumulate(const tile_t<float16, M, K>& a, const tile_t<float16, K, N>& b,
                                                 tile_t<float16, M, N>& c) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float16 sum = float16(0.0f);
            for (int k = 0; k < K; ++k) sum = tile_matmul_muladd(a.data[i * K + k], b.data[k * N + j], sum);
            c.data[i * N + j] = float16(float(sum) + float(c.data[i * N + j]));
        }
}
// dA += dC B^T, dB += A^T dC, each as a float16 sum from zero added to the adjoint (Warp's beta = 1)
template <int M, int K, int N>
CUDA_CALLABLE inline void adj_tile_matmul(const tile_t<float16, M, K>& a, const tile_t<float16, K, N>& b,
                                          tile_t<float16, M, K>& adj_a, tile_t<float16, K, N>& adj_b,
                                          const tile_t<float16, M, N>& adj_c) {
    for (int i = 0; i < M; ++i)
        for (int k = 0; k < K; ++k) {
            float16 sum = float16(0.0f);
            for (int j = 0; j < N; ++j) sum = tile_matmul_muladd(adj_c.data[i * N + j], b.data[k * N + j], sum);
            adj_a.data[i * K + k] = float16(float(sum) + float(adj_a.data[i * K + k]));
        }
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < N; ++j) {
            float16 sum = float16(0.0f);
            for (int i = 0; i < M; ++i) sum = tile_matmul_muladd(a.data[i * K + k], adj_c.data[i * N + j], sum);
            adj_b.data[k * N + j] = float16(float(sum) + float(adj_b.data[k * N + j]));
        }
}
// bfloat16 tiles (operands converted to a wider out; Warp refuses a bfloat16 result): products accumulate in
// float32 and are rounded to 16 bits once, at the end.
template <int M, int K, int N>
CUDA_CALLABLE inline void tile_matmul_accumulate(const tile_t<bfloat16, M, K>& a, const tile_t<bfloat16, K, N>& b,
                                                 tile_t<bfloat16, M, N>& c) {
    tile_t<float32, M, N> wide = tile_convert<float32>(c);
    tile_matmul_accumulate(tile_convert<float32>(a), tile_convert<float32>(b), wide);
    c = tile_convert<bfloat16>(wide);
}
template <int M, int K, int N>
CUDA_CALLABLE inline void adj_tile_matmul(const tile_t<bfloat16, M, K>& a, const tile_t<bfloat16, K, N>& b,
                                          tile_t<bfloat16, M, K>& adj_a, tile_t<bfloat16, K, N>& adj_b,
                                          const tile_t<bfloat16, M, N>& adj_c) {
    tile_t<float32, M, K> wide_a = tile_convert<float32>(adj_a);
    tile_t<float32, K, N> wide_b = tile_convert<float32>(adj_b);
    adj_tile_matmul(tile_convert<float32>(a), tile_convert<float32>(b), wide_a, wide_b, tile_convert<float32>(adj_c));
    adj_a = tile_convert<bfloat16>(wide_a);
    adj_b = tile_convert<bfloat16>(wide_b);
}
// out += a b (Warp's tile_matmul(a, b, out)): updates `out` in place, which the compiler rebinds.
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void tile_matmul_acc(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, tile_t<T, M, N>& out) {
    tile_matmul_accumulate(a, b, out);
}
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void adj_tile_matmul_acc(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, const tile_t<T, M, N>&,
                                              tile_t<T, M, K>& adj_a, tile_t<T, K, N>& adj_b, tile_t<T, M, N>& adj_out,
                                              const tile_t<T, M, N>& adj_ret) {
    adj_out = add(adj_out, adj_ret);
    adj_tile_matmul(a, b, adj_a, adj_b, adj_ret);
}

// alpha * (a b), and out = alpha * (a b) + beta * out; beta == 0 overwrites out without reading it, so stale
// NaN or inf there does not leak into the result. alpha and beta get no gradient (the compiler refuses one).
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline tile_t<T, M, N> tile_matmul_scaled(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, T alpha) {
    tile_t<T, M, N> c = tile_matmul(a, b);
    for (int k = 0; k < M * N; ++k) c.data[k] = mul(alpha, c.data[k]);
    return c;
}
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void adj_tile_matmul_scaled(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, T alpha,
                                                 tile_t<T, M, K>& adj_a, tile_t<T, K, N>& adj_b, T&,
                                                 const tile_t<T, M, N>& adj_ret) {
    tile_t<T, M, N> scaled;
    for (int k = 0; k < M * N; ++k) scaled.data[k] = mul(alpha, adj_ret.data[k]);
    adj_tile_matmul(a, b, adj_a, adj_b, scaled);
}
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void tile_matmul_acc(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, tile_t<T, M, N>& out,
                                          T alpha, T beta) {
    if (alpha == T(1) && beta == T(1)) {
        tile_matmul_accumulate(a, b, out);
        return;
    }
    tile_t<T, M, N> c = tile_matmul(a, b);
    for (int k = 0; k < M * N; ++k)
        out.data[k] = beta == T(0) ? mul(alpha, c.data[k]) : add(mul(alpha, c.data[k]), mul(beta, out.data[k]));
}
template <typename T, int M, int K, int N>
CUDA_CALLABLE inline void adj_tile_matmul_acc(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, const tile_t<T, M, N>&,
                                              T alpha, T beta, tile_t<T, M, K>& adj_a, tile_t<T, K, N>& adj_b,
                                              tile_t<T, M, N>& adj_out, T&, T&, const tile_t<T, M, N>& adj_ret) {
    tile_t<T, M, N> scaled;
    for (int k = 0; k < M * N; ++k) {
        if (beta != T(0)) adj_out.data[k] = add(adj_out.data[k], mul(beta, adj_ret.data[k]));
        scaled.data[k] = mul(alpha, adj_ret.data[k]);
    }
    adj_tile_matmul(a, b, adj_a, adj_b, scaled);
}

}  // namespace wp
