// wp.Bvh: a bounding volume hierarchy over user boxes (items), queried by box, ray or sphere (kernels/bvh_object.py
// builds it on the host; the id is the address of a bvh_t). Not differentiable: queries yield item indices.
#pragma once
#include "mesh.h"

namespace wp {

struct bvh_t {
    uint64 magic;                 // BVH_MAGIC: a cheap check that a handle points to a BVH
    const vec3f_t* item_lower;    // [num_items] the items' boxes, as given to wp.Bvh (refit re-reads them)
    const vec3f_t* item_upper;
    int32 num_items;
    // nodes stored flat; a node is a leaf when left < 0, its items being prims[start:end)
    const vec3f_t* node_lower;
    const vec3f_t* node_upper;
    const int32* node_left;
    const int32* node_right;
    const int32* node_start;
    const int32* node_end;
    const int32* prims;
    int32 root;                   // -1 for an empty BVH
    int32 num_groups;
    const int32* group_ids;       // [num_groups] sorted group ids
    const int32* group_roots;     // [num_groups] the root of each group's subtree
};

static const uint64 BVH_MAGIC = 0x6276682d75736572ull;

CUDA_CALLABLE inline const bvh_t* bvh_ptr(uint64 id) {
    const bvh_t* b = (const bvh_t*)id;
    if (b == nullptr || b->magic != BVH_MAGIC)
        return nullptr;
    return b;
}

enum { BVH_QUERY_AABB = 0, BVH_QUERY_RAY = 1, BVH_QUERY_SPHERE = 2, BVH_QUERY_CAPSULE = 3 };

// Iteration state of a BVH query: nodes still to visit wait on the stack; `cursor` walks the current leaf's items.
struct bvh_query_t {
    const bvh_t* bvh;
    int32 kind;
    vec3f_t a, b;       // box: lower, upper; ray, capsule: start, dir; sphere: center, (radius, 0, 0)
    float32 radius;     // capsule: the boxes are inflated by it
    int32 stack[MESH_STACK];
    int32 top;
    int32 cursor, cursor_end;
    int32 bounds_nr;    // the item last yielded (Warp's field name)
    CUDA_CALLABLE bvh_query_t()
        : bvh(nullptr), kind(0), radius(0.0f), top(0), cursor(0), cursor_end(0), bounds_nr(-1) {}
};
CUDA_CALLABLE inline bvh_query_t add(const bvh_query_t& a, const bvh_query_t&) { return a; }

CUDA_CALLABLE inline bvh_query_t bvh_query_start(uint64 id, int32 kind, vec3f_t a, vec3f_t b, int32 root) {
    bvh_query_t q;
    q.bvh = bvh_ptr(id);
    q.kind = kind;
    q.a = a;
    q.b = b;
    if (q.bvh != nullptr) {
        int32 start = root >= 0 ? root : q.bvh->root;
        if (start >= 0) q.stack[q.top++] = start;
    }
    return q;
}

CUDA_CALLABLE inline bvh_query_t bvh_query_aabb(uint64 id, vec3f_t low, vec3f_t high, int32 root) {
    return bvh_query_start(id, BVH_QUERY_AABB, low, high, root);
}
CUDA_CALLABLE inline bvh_query_t bvh_query_aabb(uint64 id, vec3f_t low, vec3f_t high) {
    return bvh_query_aabb(id, low, high, -1);
}
CUDA_CALLABLE inline bvh_query_t bvh_query_ray(uint64 id, vec3f_t start, vec3f_t dir, int32 root) {
    return bvh_query_start(id, BVH_QUERY_RAY, start, dir, root);
}
CUDA_CALLABLE inline bvh_query_t bvh_query_ray(uint64 id, vec3f_t start, vec3f_t dir) {
    return bvh_query_ray(id, start, dir, -1);
}
CUDA_CALLABLE inline bvh_query_t bvh_query_sphere(uint64 id, vec3f_t center, float32 radius, int32 root) {
    vec3f_t r;
    r.c[0] = radius > 0.0f ? radius : 0.0f;
    return bvh_query_start(id, BVH_QUERY_SPHERE, center, r, root);
}
CUDA_CALLABLE inline bvh_query_t bvh_query_sphere(uint64 id, vec3f_t center, float32 radius) {
    return bvh_query_sphere(id, center, radius, -1);
}

// Capsule sweep start + t dir, t in [0, max_dist] of bvh_query_next (1 for the segment to start + dir): every
// item whose box, inflated by `radius` on each axis, the segment enters. Conservative, as Warp's: an item near a
// box corner may be yielded without being within `radius` of the segment. A negative radius counts as 0.
CUDA_CALLABLE inline bvh_query_t bvh_query_capsule(uint64 id, vec3f_t start, vec3f_t dir, float32 radius,
                                                   int32 root = -1) {
    bvh_query_t q = bvh_query_start(id, BVH_QUERY_CAPSULE, start, dir, root);
    q.radius = radius > 0.0f ? radius : 0.0f;
    return q;
}
// Whether box [lo, hi] passes the query (ray: entered at a t in [0, max_t], multiples of dir's length).
CUDA_CALLABLE inline bool bvh_query_box(const bvh_query_t& q, const vec3f_t& lo, const vec3f_t& hi, float32 max_t) {
    if (q.kind == BVH_QUERY_AABB)
        return mesh_boxes_overlap(lo, hi, q.a, q.b);
    if (q.kind == BVH_QUERY_SPHERE) {
        float32 d2 = mesh_box_dist_sq(lo, hi, q.a);
        return d2 <= q.b.c[0] * q.b.c[0];
    }
    if (q.kind == BVH_QUERY_CAPSULE) {
        vec3f_t lo_r, hi_r;
        for (int k = 0; k < 3; ++k) {
            lo_r.c[k] = lo.c[k] - q.radius;
            hi_r.c[k] = hi.c[k] + q.radius;
        }
        return mesh_ray_box(lo_r, hi_r, q.a, q.b, max_t);
    }
    return mesh_ray_box(lo, hi, q.a, q.b, max_t);
}

// The next item that passes the query: true with its index in `index`, false when there are no more.
CUDA_CALLABLE inline bool bvh_query_next(bvh_query_t& q, int32& index, float32 max_dist) {
    const bvh_t* m = q.bvh;
    if (m == nullptr) return false;
    while (true) {
        while (q.cursor < q.cursor_end) {
            int32 item = m->prims[q.cursor++];
            if (bvh_query_box(q, m->item_lower[item], m->item_upper[item], max_dist)) {
                q.bounds_nr = item;
                index = item;
                return true;
            }
        }
        if (q.top == 0) return false;
        int32 n = q.stack[--q.top];
        if (!bvh_query_box(q, m->node_lower[n], m->node_upper[n], max_dist)) continue;
        if (m->node_left[n] >= 0) {
            q.stack[q.top++] = m->node_right[n];
            q.stack[q.top++] = m->node_left[n];
        } else {
            q.cursor = m->node_start[n];
            q.cursor_end = m->node_end[n];
        }
    }
}
CUDA_CALLABLE inline bool bvh_query_next(bvh_query_t& q, int32& index) {
    return bvh_query_next(q, index, 3.402823466e+38f);
}

CUDA_CALLABLE inline int32 bvh_get_group_root(uint64 id, int32 group) {
    const bvh_t* m = bvh_ptr(id);
    if (m == nullptr) return -1;
    int32 lo = 0, hi = m->num_groups - 1;
    while (lo <= hi) {
        int32 mid = (lo + hi) / 2;
        if (m->group_ids[mid] == group) return m->group_roots[mid];
        if (m->group_ids[mid] < group) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

} // namespace wp
