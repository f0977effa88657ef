// Hash grid neighbour queries (wp.HashGrid): points bucketed into a periodic grid of dim_x * dim_y * dim_z cells.
// The grid is built on the host (kernels/hash_grid.py), which fills hash_grid_t; kernels get its address as a uint64
// id. A world cell (x, y, z) = floor(p / cell_width) maps to the physical cell (x mod dim_x, y mod dim_y, z mod dim_z),
// so a query visits every physical cell its box overlaps, at most once, and the caller filters by distance.
// Not differentiable: queries yield indices.
#pragma once
#include "core.h"
#include "vec.h"

namespace wp {

// Written by the host build (kernels/hash_grid.py mirrors this layout with ctypes). Points are sorted by physical
// cell (and by group within a cell for a grouped build); a cell's points are point_ids[cell_starts[c]:cell_ends[c]].
struct hash_grid_t {
    uint64 magic;             // HASH_GRID_MAGIC: a cheap check that a handle points to a grid
    const int32* point_ids;   // [num_points] original index of each sorted point
    const int32* cell_starts; // [dim_x * dim_y * dim_z]
    const int32* cell_ends;   // [dim_x * dim_y * dim_z]
    const uint64* point_keys; // [num_points] (cell << 32 | uint32(group)) of each sorted point; null if not grouped
    int32 dim_x, dim_y, dim_z;
    int32 num_points;
    float64 cell_width_inv;   // 1 / cell width [1/m], rounded to the grid's precision
};

static const uint64 HASH_GRID_MAGIC = 0x6873686772696431ull;

CUDA_CALLABLE inline const hash_grid_t* hash_grid_get(uint64 id) {
    const hash_grid_t* g = (const hash_grid_t*)id;
    if (g == nullptr || g->magic != HASH_GRID_MAGIC)
        return nullptr;
    return g;
}

// World cell coordinate of a scaled coordinate: floor, with NaN -> 0 and values past the int32 range clamped to
// [INT32_MIN, INT32_MAX - 1], so that every coordinate (infinities included) has a cell.
template <typename Type> CUDA_CALLABLE inline int32 hash_grid_cell(Type scaled) {
    float64 v = float64(scaled);
    if (!(v == v))
        return 0;
    float64 c = ::floor(v);
    if (c >= 2147483646.0)
        return 2147483646;
    if (c <= -2147483648.0)
        return -2147483647 - 1;
    return int32(c);
}

CUDA_CALLABLE inline int32 hash_grid_wrap(int64 x, int32 dim) {
    int64 r = x % int64(dim);
    return int32(r < 0 ? r + dim : r);
}

// Iteration state of one query. The box spans `count[k]` world cells from `lower[k]` on each axis (at most dim_k,
// so no physical cell is visited twice); `step` counts the cells visited so far.
template <typename Type> struct hash_grid_query_t {
    const hash_grid_t* grid;
    int32 lower[3];
    int32 count[3];
    int64 step;       // index of the current cell in x-fastest order
    int32 cursor;     // next sorted point in the current cell
    int32 cursor_end; // end of the current cell's range
    int32 group;
    int32 use_group;  // 1: yield only points of `group` (when the grid was built with groups)
    CUDA_CALLABLE hash_grid_query_t()
        : grid(nullptr), lower{0, 0, 0}, count{0, 0, 0}, step(0), cursor(0), cursor_end(0), group(0), use_group(0) {}
};

template <typename Type>
CUDA_CALLABLE inline hash_grid_query_t<Type> add(const hash_grid_query_t<Type>& a, const hash_grid_query_t<Type>&) {
    return a;
}

// First position in keys[lo:hi) whose key is >= key.
CUDA_CALLABLE inline int32 hash_grid_lower_bound(const uint64* keys, int32 lo, int32 hi, uint64 key) {
    while (lo < hi) {
        int32 mid = lo + (hi - lo) / 2;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Point the cursor at the points of cell number `query.step` of the box.
template <typename Type> CUDA_CALLABLE inline void hash_grid_enter_cell(hash_grid_query_t<Type>& query) {
    const hash_grid_t* g = query.grid;
    int64 s = query.step;
    int64 x = int64(query.lower[0]) + s % query.count[0];
    s /= query.count[0];
    int64 y = int64(query.lower[1]) + s % query.count[1];
    s /= query.count[1];
    int64 z = int64(query.lower[2]) + s;
    int32 cell = (hash_grid_wrap(z, g->dim_z) * g->dim_y + hash_grid_wrap(y, g->dim_y)) * g->dim_x
                 + hash_grid_wrap(x, g->dim_x);
    int32 start = g->cell_starts[cell];
    int32 end = g->cell_ends[cell];
    if (query.use_group && g->point_keys != nullptr) {
        uint64 key = (uint64(uint32(cell)) << 32) | uint64(uint32(query.group));
        start = hash_grid_lower_bound(g->point_keys, start, end, key);
        end = hash_grid_lower_bound(g->point_keys, start, end, key + 1);  // key + 1 < next cell's keys
    }
    query.cursor = start;
    query.cursor_end = end;
}

template <typename Type>
CUDA_CALLABLE inline hash_grid_query_t<Type> hash_grid_query_make(uint64 id, const vec_t<3, Type>& p, Type radius,
                                                                  int32 group, int32 use_group) {
    hash_grid_query_t<Type> query;
    const hash_grid_t* g = hash_grid_get(id);
    if (g == nullptr || g->num_points <= 0)
        return query;  // grid null: the query yields nothing
    query.grid = g;
    query.group = group;
    query.use_group = use_group;
    Type inv = Type(g->cell_width_inv);
    const int32 dims[3] = {g->dim_x, g->dim_y, g->dim_z};
    for (int k = 0; k < 3; ++k) {
        int32 lo = hash_grid_cell(Type((p[k] - radius) * inv));
        int32 hi = hash_grid_cell(Type((p[k] + radius) * inv));
        int64 n = int64(hi) - int64(lo) + 1;
        if (n < 1)
            n = 1;  // a negative or NaN radius: the query's own cell
        query.lower[k] = lo;
        query.count[k] = int32(n < dims[k] ? n : dims[k]);
    }
    hash_grid_enter_cell(query);
    return query;
}

template <typename Type>
CUDA_CALLABLE inline hash_grid_query_t<Type> hash_grid_query(uint64 id, vec_t<3, Type> p, Type radius) {
    return hash_grid_query_make(id, p, radius, 0, 0);
}
template <typename Type>
CUDA_CALLABLE inline hash_grid_query_t<Type> hash_grid_query(uint64 id, vec_t<3, Type> p, Type radius, int32 group) {
    return hash_grid_query_make(id, p, radius, group, 1);
}

// Advance the query: true and the next candidate's index in `index`, or false when every cell was visited.
template <typename Type> CUDA_CALLABLE inline bool hash_grid_query_next(hash_grid_query_t<Type>& query, int32& index) {
    const hash_grid_t* g = query.grid;
    if (g == nullptr)
        return false;
    const int64 cells = int64(query.count[0]) * query.count[1] * query.count[2];
    while (query.cursor >= query.cursor_end) {
        if (++query.step >= cells)
            return false;
        hash_grid_enter_cell(query);
    }
    index = g->point_ids[query.cursor++];
    return true;
}

// Original index of the point at sorted position `index` (threads ordered by cell read memory coherently);
// -1 outside [0, num_points).
CUDA_CALLABLE inline int32 hash_grid_point_id(uint64 id, int32 index) {
    const hash_grid_t* g = hash_grid_get(id);
    if (g == nullptr || index < 0 || index >= g->num_points)
        return -1;
    return g->point_ids[index];
}

}  // namespace wp
