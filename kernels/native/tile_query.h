// Block-cooperative spatial queries (Warp's tile_bvh_query_aabb/ray, tile_mesh_query_aabb and their *_next,
// tile_query_valid). A block runs as one lane here (kernels/runtime/launch.py), so the block's tile of results
// has one element: each *_next step hands that lane the next item, or -1 once the query is exhausted, which also
// clears `valid`. Every item is yielded exactly once, as from Warp's block of block_dim lanes.
#pragma once

#include "bvh.h"
#include "mesh.h"
#include "tile.h"

namespace wp {

struct bvh_query_tiled_t {
    bvh_query_t query;
    bool valid;
    CUDA_CALLABLE bvh_query_tiled_t() : valid(false) {}
};
CUDA_CALLABLE inline bvh_query_tiled_t add(const bvh_query_tiled_t& a, const bvh_query_tiled_t&) { return a; }

struct mesh_query_aabb_tiled_t {
    mesh_query_aabb_t query;
    bool valid;
    CUDA_CALLABLE mesh_query_aabb_tiled_t() : valid(false) {}
};
CUDA_CALLABLE inline mesh_query_aabb_tiled_t add(const mesh_query_aabb_tiled_t& a, const mesh_query_aabb_tiled_t&) {
    return a;
}

CUDA_CALLABLE inline bvh_query_tiled_t tile_bvh_query_aabb(uint64 id, vec3f_t low, vec3f_t high) {
    bvh_query_tiled_t q;
    q.query = bvh_query_aabb(id, low, high);
    q.valid = true;
    return q;
}
// The ray is one-sided and unbounded (no max_dist), as in Warp.
CUDA_CALLABLE inline bvh_query_tiled_t tile_bvh_query_ray(uint64 id, vec3f_t start, vec3f_t dir) {
    bvh_query_tiled_t q;
    q.query = bvh_query_ray(id, start, dir);
    q.valid = true;
    return q;
}
CUDA_CALLABLE inline mesh_query_aabb_tiled_t tile_mesh_query_aabb(uint64 id, vec3f_t low, vec3f_t high) {
    mesh_query_aabb_tiled_t q;
    q.query = mesh_query_aabb(id, low, high);
    q.valid = true;
    return q;
}

CUDA_CALLABLE inline tile_t<int32, 1, 1> tile_bvh_query_next(bvh_query_tiled_t& q) {
    tile_t<int32, 1, 1> t;
    int32 item = -1;
    if (!q.valid || !bvh_query_next(q.query, item)) {
        q.valid = false;
        item = -1;
    }
    t.data[0] = item;
    return t;
}
CUDA_CALLABLE inline tile_t<int32, 1, 1> tile_mesh_query_aabb_next(mesh_query_aabb_tiled_t& q) {
    tile_t<int32, 1, 1> t;
    int32 face = -1;
    if (!q.valid || !mesh_query_aabb_next(q.query, face)) {
        q.valid = false;
        face = -1;
    }
    t.data[0] = face;
    return t;
}

CUDA_CALLABLE inline bool tile_query_valid(const bvh_query_tiled_t& q) { return q.valid; }
CUDA_CALLABLE inline bool tile_query_valid(const mesh_query_aabb_tiled_t& q) { return q.valid; }

} // namespace wp
