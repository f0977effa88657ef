// Triangle mesh queries (wp.Mesh): closest point (with inside/outside sign), ray casts, evaluation at barycentric
// coordinates. The mesh and its bounding volume hierarchy are built on the host (kernels/mesh.py), which fills
// mesh_t; kernels get its address as a uint64 id. Barycentrics follow Warp: a point of face f with vertices
// (i, j, k) is u * x_i + v * x_j + (1 - u - v) * x_k.
#pragma once
#include "core.h"
#include "vec.h"
#include "array.h"
#include "geometry.h"
#include "random.h"

namespace wp {

struct mesh_t {
    array_t<vec3f_t> points;      // [num_points] vertex positions [m]
    array_t<vec3f_t> velocities;  // [num_points] vertex velocities [m/s] (may be empty)
    array_t<int32> indices;       // [3 * num_tris] vertex indices, three per face
    int32 num_points;
    int32 num_tris;
    uint64 magic;                 // MESH_MAGIC: a cheap check that a handle points to a mesh
    // BVH, nodes stored flat; a node is a leaf when left < 0, its faces being prims[start:end)
    const vec3f_t* node_lower;
    const vec3f_t* node_upper;
    const int32* node_left;
    const int32* node_right;
    const int32* node_start;
    const int32* node_end;
    const int32* prims;
    int32 root;                   // the root node, or -1 for an empty mesh
    int32 num_groups;
    const int32* group_ids;       // [num_groups] sorted group ids
    const int32* group_roots;     // [num_groups] the root of each group's subtree
    array_t<vec3f_t> point_grads; // [num_points] gradient of the points (ray queries add into it; may be empty)
    uint64 bvh;                   // id of a bvh_t over the faces' boxes sharing these nodes (wp.mesh_get_bvh)
    float32 average_edge_length;  // [m] over the faces' three edges (the sign-by-normal query's tolerance scale)
};

static const uint64 MESH_MAGIC = 0x6d6573682d627668ull;

CUDA_CALLABLE inline mesh_t add(const mesh_t& a, const mesh_t&) { return a; }

// Element i of a mesh array, bounds-checked in debug mode like kernel array reads.
template <typename T> CUDA_CALLABLE inline T mesh_at(const array_t<T>& a, int64 i) { return index(a, 0, i); }

CUDA_CALLABLE inline const mesh_t* mesh_ptr(uint64 id) {
    const mesh_t* m = (const mesh_t*)id;
    if (m == nullptr || m->magic != MESH_MAGIC)
        return nullptr;
    return m;
}

// The mesh as a value (points, velocities, indices readable in kernels); zero for a bad id.
CUDA_CALLABLE inline mesh_t mesh_get(uint64 id) {
    const mesh_t* m = mesh_ptr(id);
    return m ? *m : mesh_t();
}

CUDA_CALLABLE inline void mesh_face(const mesh_t& m, int32 f, vec3f_t& a, vec3f_t& b, vec3f_t& c) {
    a = mesh_at(m.points, mesh_at(m.indices, 3 * f));
    b = mesh_at(m.points, mesh_at(m.indices, 3 * f + 1));
    c = mesh_at(m.points, mesh_at(m.indices, 3 * f + 2));
}

// Squared distance from p to the box [lo, hi].
CUDA_CALLABLE inline float32 mesh_box_dist_sq(const vec3f_t& lo, const vec3f_t& hi, const vec3f_t& p) {
    float32 d = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float32 e = p.c[k] < lo.c[k] ? lo.c[k] - p.c[k] : (p.c[k] > hi.c[k] ? p.c[k] - hi.c[k] : 0.0f);
        d += e * e;
    }
    return d;
}

static const int MESH_STACK = 64;  // BVH depth bound: the host builder splits at the median, depth <= log2(n) + 2

// ---- closest point ------------------------------------------------------------------------------------------

struct mesh_closest_t {
    int32 face;
    float32 u, v;
    float32 dist_sq;
    float32 sign_cos;  // normal . (p - closest) / |p - closest| of the chosen face, for the normal sign test
};

// Depth-first walk of m's tree from node `first` (nothing when first < 0): `enter(n)` says whether node n can still
// matter (asked at every node popped, so a query that narrows its bound while it goes prunes the nodes after); every
// face f of every leaf entered goes to `face(f)`, which returns true to end the walk (an any-hit query), else false.
// Every traversal of the queries below is this one, with its own box test and face test.
template <typename Enter, typename Face>
CUDA_CALLABLE inline void mesh_walk(const mesh_t& m, int32 first, Enter enter, Face face) {
    if (first < 0)
        return;
    int32 stack[MESH_STACK];
    int top = 0;
    stack[top++] = first;
    while (top > 0) {
        const int32 n = stack[--top];
        if (!enter(n))
            continue;
        if (m.node_left[n] >= 0) {
            stack[top++] = m.node_left[n];
            stack[top++] = m.node_right[n];
            continue;
        }
        for (int32 k = m.node_start[n]; k < m.node_end[n]; ++k)
            if (face(m.prims[k]))
                return;
    }
}

// Closest face strictly within max_dist. Among faces at (numerically) the same distance, keeps the one whose normal
// is most aligned with p - closest: at a shared edge or vertex that face tells inside from outside correctly.
CUDA_CALLABLE inline bool mesh_closest(const mesh_t& m, const vec3f_t& p, float32 max_dist, mesh_closest_t& out) {
    out.face = -1; out.u = 0.0f; out.v = 0.0f; out.sign_cos = 0.0f;
    out.dist_sq = max_dist * max_dist;
    if (m.root < 0 || !(max_dist > 0.0f))
        return false;
    mesh_walk(m, m.root, [&](int32 n) {
        return !(mesh_box_dist_sq(m.node_lower[n], m.node_upper[n], p) > out.dist_sq * 1.0001f + 1e-12f);
    }, [&](int32 f) {
        vec3f_t a, b, c;
        mesh_face(m, f, a, b, c);
        float32 wa, wb, wc;
        closest_point_triangle_weights(a, b, c, p, wa, wb, wc);
        vec3f_t q = geo_axpy(wa, a, geo_axpy(wb, b, geo_axpy(wc, c, vec3f_t())));
        vec3f_t d = geo_sub(p, q);
        float32 dsq = geo_dot(d, d);
        vec3f_t nrm = geo_cross(geo_sub(b, a), geo_sub(c, a));
        float32 nn = ::sqrtf(geo_dot(nrm, nrm) * dsq);
        float32 cosv = nn > 0.0f ? geo_dot(nrm, d) / nn : 0.0f;
        float32 tol = 1e-6f * (out.dist_sq > 0.0f ? out.dist_sq : 1e-12f);
        bool better = out.face < 0 ? dsq < out.dist_sq
                                   : (dsq < out.dist_sq - tol
                                      || (dsq <= out.dist_sq + tol && ::fabsf(cosv) > ::fabsf(out.sign_cos)));
        if (better) {
            out.face = f; out.u = wa; out.v = wb;
            out.dist_sq = dsq < out.dist_sq ? dsq : out.dist_sq;
            out.sign_cos = cosv;
        }
        return false;
    });
    return out.face >= 0;
}

// ---- box queries ----------------------------------------------------------------------------------------------

// Iteration state of mesh_query_aabb: the faces whose bounding boxes overlap [lower, upper] (boundaries count),
// each once, in BVH order. Nodes still to visit wait on the stack; `cursor` walks the current leaf's faces.
struct mesh_query_aabb_t {
    const mesh_t* mesh;
    vec3f_t lower, upper;  // a sphere query (kind 1) keeps its center in lower, its radius in upper.c[0]
    int32 kind;
    int32 stack[MESH_STACK];
    int32 top;
    int32 cursor, cursor_end;
    int32 face;  // the face last yielded
    CUDA_CALLABLE mesh_query_aabb_t() : mesh(nullptr), kind(0), top(0), cursor(0), cursor_end(0), face(-1) {}
};
CUDA_CALLABLE inline mesh_query_aabb_t add(const mesh_query_aabb_t& a, const mesh_query_aabb_t&) { return a; }

CUDA_CALLABLE inline bool mesh_boxes_overlap(const vec3f_t& lo, const vec3f_t& hi, const vec3f_t& qlo,
                                             const vec3f_t& qhi) {
    for (int k = 0; k < 3; ++k)
        if (lo.c[k] > qhi.c[k] || hi.c[k] < qlo.c[k]) return false;
    return true;
}

CUDA_CALLABLE inline mesh_query_aabb_t mesh_query_aabb(uint64 id, vec3f_t lower, vec3f_t upper) {
    mesh_query_aabb_t q;
    q.mesh = mesh_ptr(id);
    q.lower = lower;
    q.upper = upper;
    if (q.mesh != nullptr && q.mesh->root >= 0) q.stack[q.top++] = q.mesh->root;
    return q;
}

// Sphere query: the faces whose closest point to `center` lies within `radius` (touching counts; a negative
// radius is 0). Iterated like mesh_query_aabb.
CUDA_CALLABLE inline mesh_query_aabb_t mesh_query_sphere(uint64 id, vec3f_t center, float32 radius) {
    vec3f_t r;
    r.c[0] = radius > 0.0f ? radius : 0.0f;
    mesh_query_aabb_t q = mesh_query_aabb(id, center, r);
    q.kind = 1;
    return q;
}

// Squared distance from p to segment [a, b].
CUDA_CALLABLE inline float32 mesh_segment_dist_sq(const vec3f_t& a, const vec3f_t& b, const vec3f_t& p) {
    vec3f_t ab = geo_sub(b, a), ap = geo_sub(p, a);
    float32 len2 = geo_dot(ab, ab);
    float32 t = len2 > 0.0f ? geo_dot(ap, ab) / len2 : 0.0f;
    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    float32 d2 = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float32 e = ap.c[k] - ab.c[k] * t;
        d2 += e * e;
    }
    return d2;
}

// Squared distance from p to triangle (a, b, c); a degenerate (zero-area) face is measured by its longest edge.
CUDA_CALLABLE inline float32 mesh_triangle_dist_sq(const vec3f_t& a, const vec3f_t& b, const vec3f_t& c,
                                                   const vec3f_t& p) {
    vec3f_t n = geo_cross(geo_sub(b, a), geo_sub(c, a));
    float32 lab = geo_dot(geo_sub(b, a), geo_sub(b, a)), lac = geo_dot(geo_sub(c, a), geo_sub(c, a));
    float32 lbc = geo_dot(geo_sub(c, b), geo_sub(c, b));
    // relative test: with fused multiply-add the cross product of two equal edges is a rounding error, not 0
    if (geo_dot(n, n) <= 1e-10f * lab * lac) {
        if (lab >= lac && lab >= lbc) return mesh_segment_dist_sq(a, b, p);
        if (lac >= lbc) return mesh_segment_dist_sq(a, c, p);
        return mesh_segment_dist_sq(b, c, p);
    }
    float32 wa, wb, wc;
    closest_point_triangle_weights(a, b, c, p, wa, wb, wc);
    float32 d2 = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float32 e = wa * a.c[k] + wb * b.c[k] + wc * c.c[k] - p.c[k];
        d2 += e * e;
    }
    return d2;
}

// The next face whose box overlaps the query's box (a sphere query: whose triangle is within the radius): true
// with its index in `index`, false when there are no more.
CUDA_CALLABLE inline bool mesh_query_aabb_next(mesh_query_aabb_t& q, int32& index) {
    const mesh_t* m = q.mesh;
    if (m == nullptr) return false;
    const float32 r2 = q.upper.c[0] * q.upper.c[0];
    while (true) {
        while (q.cursor < q.cursor_end) {
            int32 f = m->prims[q.cursor++];
            vec3f_t a, b, c;
            mesh_face(*m, f, a, b, c);
            vec3f_t lo, hi;
            for (int k = 0; k < 3; ++k) {
                lo.c[k] = ::fminf(a.c[k], ::fminf(b.c[k], c.c[k]));
                hi.c[k] = ::fmaxf(a.c[k], ::fmaxf(b.c[k], c.c[k]));
            }
            bool hit = q.kind == 1
                ? mesh_box_dist_sq(lo, hi, q.lower) <= r2 && mesh_triangle_dist_sq(a, b, c, q.lower) <= r2
                : mesh_boxes_overlap(lo, hi, q.lower, q.upper);
            if (hit) {
                q.face = f;
                index = f;
                return true;
            }
        }
        if (q.top == 0) return false;
        int32 n = q.stack[--q.top];
        bool visit = q.kind == 1 ? mesh_box_dist_sq(m->node_lower[n], m->node_upper[n], q.lower) <= r2
                                 : mesh_boxes_overlap(m->node_lower[n], m->node_upper[n], q.lower, q.upper);
        if (!visit) continue;
        if (m->node_left[n] >= 0) {
            q.stack[q.top++] = m->node_right[n];
            q.stack[q.top++] = m->node_left[n];
        } else {
            q.cursor = m->node_start[n];
            q.cursor_end = m->node_end[n];
        }
    }
}

// ---- rays ----------------------------------------------------------------------------------------------------

struct mesh_hit_t {
    int32 face;
    float32 t, u, v;
    float32 sign;      // 1 when the ray hits the front of the face (against its normal), -1 from behind
    vec3f_t normal;    // unit face normal
};

// Ray-triangle intersection (Moller-Trumbore, edges inclusive): true with t >= 0 and the weights of a and b.
CUDA_CALLABLE inline bool mesh_ray_triangle(const vec3f_t& o, const vec3f_t& dir, const vec3f_t& a, const vec3f_t& b,
                                            const vec3f_t& c, float32& t, float32& u, float32& v) {
    vec3f_t e1 = geo_sub(b, a), e2 = geo_sub(c, a);
    vec3f_t h = geo_cross(dir, e2);
    float32 det = geo_dot(e1, h);
    if (det == 0.0f)
        return false;
    float32 inv = 1.0f / det;
    vec3f_t s = geo_sub(o, a);
    float32 wb = geo_dot(s, h) * inv;
    if (wb < 0.0f || wb > 1.0f)
        return false;
    vec3f_t qv = geo_cross(s, e1);
    float32 wc = geo_dot(dir, qv) * inv;
    if (wc < 0.0f || wb + wc > 1.0f)
        return false;
    t = geo_dot(e2, qv) * inv;
    if (!(t >= 0.0f))
        return false;
    u = 1.0f - wb - wc;
    v = wb;
    return true;
}

CUDA_CALLABLE inline bool mesh_ray_box(const vec3f_t& lo, const vec3f_t& hi, const vec3f_t& o, const vec3f_t& dir,
                                       float32 t_max) {
    float32 t0 = 0.0f, t1 = t_max;
    for (int k = 0; k < 3; ++k) {
        if (dir.c[k] == 0.0f) {
            if (o.c[k] < lo.c[k] || o.c[k] > hi.c[k]) return false;
            continue;
        }
        float32 inv = 1.0f / dir.c[k];
        float32 ta = (lo.c[k] - o.c[k]) * inv, tb = (hi.c[k] - o.c[k]) * inv;
        if (ta > tb) { float32 x = ta; ta = tb; tb = x; }
        t0 = ta > t0 ? ta : t0;
        t1 = tb < t1 ? tb : t1;
        if (t0 > t1 * 1.000001f + 1e-7f) return false;
    }
    return true;
}

// Closest hit with t < max_t from node `root` (the whole mesh when root < 0).
CUDA_CALLABLE inline bool mesh_ray(const mesh_t& m, const vec3f_t& o, const vec3f_t& dir, float32 max_t, int32 root,
                                   mesh_hit_t& hit) {
    hit.face = -1; hit.t = max_t; hit.u = 0.0f; hit.v = 0.0f; hit.sign = 0.0f; hit.normal = vec3f_t();
    mesh_walk(m, root >= 0 ? root : m.root, [&](int32 n) {
        return mesh_ray_box(m.node_lower[n], m.node_upper[n], o, dir, hit.t);
    }, [&](int32 f) {
        vec3f_t a, b, c;
        mesh_face(m, f, a, b, c);
        float32 t, u, v;
        if (mesh_ray_triangle(o, dir, a, b, c, t, u, v) && t < hit.t) {
            hit.face = f; hit.t = t; hit.u = u; hit.v = v;
            vec3f_t nrm = geo_cross(geo_sub(b, a), geo_sub(c, a));
            float32 len = ::sqrtf(geo_dot(nrm, nrm));
            if (len > 0.0f) { nrm.c[0] /= len; nrm.c[1] /= len; nrm.c[2] /= len; }
            hit.normal = nrm;
            hit.sign = geo_dot(nrm, dir) < 0.0f ? 1.0f : -1.0f;
        }
        return false;
    });
    return hit.face >= 0;
}

// ---- signs ---------------------------------------------------------------------------------------------------

// Majority vote of three axis-aligned rays: a ray whose closest hit is a back face (hit from inside) votes inside;
// a miss votes outside. Returns -1 inside, 1 outside.
CUDA_CALLABLE inline float32 mesh_sign_rays(const mesh_t& m, const vec3f_t& p) {
    int inside = 0;
    for (int k = 0; k < 3; ++k) {
        vec3f_t dir;
        dir.c[k] = 1.0f;
        mesh_hit_t hit;
        if (mesh_ray(m, p, dir, 3.0e38f, -1, hit) && hit.sign < 0.0f)
            inside++;
    }
    return inside >= 2 ? -1.0f : 1.0f;
}

// Generalised winding number: the solid angles of all faces seen from p, over 4 pi (van Oosterom & Strackee).
CUDA_CALLABLE inline float32 mesh_winding_number(const mesh_t& m, const vec3f_t& p) {
    float64 total = 0.0;
    for (int32 f = 0; f < m.num_tris; ++f) {
        vec3f_t a, b, c;
        mesh_face(m, f, a, b, c);
        vec3f_t x = geo_sub(a, p), y = geo_sub(b, p), z = geo_sub(c, p);
        float64 lx = ::sqrt(float64(geo_dot(x, x))), ly = ::sqrt(float64(geo_dot(y, y)));
        float64 lz = ::sqrt(float64(geo_dot(z, z)));
        float64 num = geo_dot(x, geo_cross(y, z));
        float64 den = lx * ly * lz + geo_dot(x, y) * lz + geo_dot(y, z) * lx + geo_dot(z, x) * ly;
        total += 2.0 * ::atan2(num, den);
    }
    return float32(total / (4.0 * 3.14159265358979323846));
}

// ---- query results (wp.MeshQueryPoint, wp.MeshQueryRay) -----------------------------------------------------

struct mesh_query_point_t {
    bool result;
    float32 sign;
    int32 face;
    float32 u;
    float32 v;
    CUDA_CALLABLE mesh_query_point_t() : result(false), sign(0.0f), face(0), u(0.0f), v(0.0f) {}
};
CUDA_CALLABLE inline mesh_query_point_t add(const mesh_query_point_t& a, const mesh_query_point_t& b) {
    mesh_query_point_t r = a;
    r.sign += b.sign; r.u += b.u; r.v += b.v;
    return r;
}

struct mesh_query_ray_t {
    bool result;
    float32 sign;
    int32 face;
    float32 t;
    float32 u;
    float32 v;
    vec3f_t normal;
    CUDA_CALLABLE mesh_query_ray_t() : result(false), sign(0.0f), face(0), t(0.0f), u(0.0f), v(0.0f) {}
};
CUDA_CALLABLE inline mesh_query_ray_t add(const mesh_query_ray_t& a, const mesh_query_ray_t& b) {
    mesh_query_ray_t r = a;
    r.sign += b.sign; r.t += b.t; r.u += b.u; r.v += b.v;
    r.normal = geo_axpy(1.0f, b.normal, r.normal);
    return r;
}

CUDA_CALLABLE inline float32 mesh_angle(const vec3f_t& x, const vec3f_t& y) {  // between x and y [rad]
    float32 cosv = geo_dot(x, y) / ::sqrtf(geo_dot(x, x) * geo_dot(y, y));
    return ::acosf(::fminf(1.0f, ::fmaxf(-1.0f, cosv)));
}

// The sign of p against the closest point c at distance dist (Warp's mesh_query_point_sign_normal): by the
// angle-weighted pseudo-normal (Baerentzen and Aanaes 2005) of the faces within eps = 1e-3 average edge lengths of
// dist, each face's unit normal weighted by its angle at c: its corner angle when c is within eps of a corner, pi on
// an edge, 2 pi inside (degenerate faces left out). Outside (1) when it points towards p, else inside (-1).
CUDA_CALLABLE inline float32 mesh_sign_pseudo_normal(const mesh_t& m, const vec3f_t& p, float32 dist) {
    const float32 eps = m.average_edge_length * 1e-3f, eps_sq = eps * eps, reach = (dist + eps) * (dist + eps);
    const float32 pi = 3.14159265359f;
    vec3f_t acc, c_best;
    float32 best = -1.0f;
    mesh_walk(m, m.root, [&](int32 n) {
        return !(mesh_box_dist_sq(m.node_lower[n], m.node_upper[n], p) > reach);
    }, [&](int32 f) {
        vec3f_t a, b, c;
        mesh_face(m, f, a, b, c);
        vec3f_t e0 = geo_sub(b, a), e1 = geo_sub(c, a), e2 = geo_sub(c, b);
        vec3f_t nrm = geo_cross(e0, e1);
        float32 e0sq = geo_dot(e0, e0), e1sq = geo_dot(e1, e1), e2sq = geo_dot(e2, e2);
        float32 nlen = ::sqrtf(geo_dot(nrm, nrm));
        if (nlen / (e0sq + e1sq + e2sq) < 1e-6f)
            return false;
        float32 wa, wb, wc;
        closest_point_triangle_weights(a, b, c, p, wa, wb, wc);
        vec3f_t q = geo_axpy(wa, a, geo_axpy(wb, b, geo_axpy(wc, c, vec3f_t())));
        vec3f_t d = geo_sub(q, p);
        float32 qd = ::sqrtf(geo_dot(d, d));
        if (!(qd < dist + eps) || qd <= dist - eps)
            return false;
        vec3f_t qa = geo_sub(q, a), qb = geo_sub(q, b), qc = geo_sub(q, c);
        float32 weight;
        if (geo_dot(qa, qa) < eps_sq)
            weight = mesh_angle(e0, e1);
        else if (geo_dot(qb, qb) < eps_sq)
            weight = mesh_angle(e2, geo_sub(vec3f_t(), e0));
        else if (geo_dot(qc, qc) < eps_sq)
            weight = mesh_angle(geo_sub(vec3f_t(), e1), geo_sub(vec3f_t(), e2));
        else {
            float32 e0qa = geo_dot(e0, qa), e2qb = geo_dot(e2, qb), e1qa = geo_dot(e1, qa);
            bool on_edge = geo_dot(qa, qa) * e0sq - e0qa * e0qa < eps_sq * e0sq
                           || geo_dot(qb, qb) * e2sq - e2qb * e2qb < eps_sq * e2sq
                           || geo_dot(qa, qa) * e1sq - e1qa * e1qa < eps_sq * e1sq;
            weight = on_edge ? pi : 2.0f * pi;
        }
        acc = geo_axpy(weight / nlen, nrm, acc);
        if (best < 0.0f || qd < best) {
            best = qd;
            c_best = q;
        }
        return false;
    });
    return geo_dot(acc, geo_sub(p, c_best)) > 0.0f ? 1.0f : -1.0f;
}

// sign_mode: 0 none, 1 rays, 2 normal, 3 winding number (threshold)
CUDA_CALLABLE inline mesh_query_point_t mesh_query_point_impl(uint64 id, const vec3f_t& p, float32 max_dist,
                                                              int sign_mode, float32 threshold) {
    mesh_query_point_t q;
    const mesh_t* m = mesh_ptr(id);
    mesh_closest_t c;
    if (m == nullptr || !mesh_closest(*m, p, max_dist, c))
        return q;
    q.result = true; q.face = c.face; q.u = c.u; q.v = c.v;
    if (sign_mode == 1)
        q.sign = mesh_sign_rays(*m, p);
    else if (sign_mode == 2)
        q.sign = mesh_sign_pseudo_normal(*m, p, ::sqrtf(c.dist_sq));
    else if (sign_mode == 3)
        q.sign = mesh_winding_number(*m, p) > threshold ? -1.0f : 1.0f;
    return q;
}

// Gradient of a closest-point query: the weights (u, v) of the closest point move with p (see
// adj_closest_point_triangle_weights); face and sign are piecewise constant.
CUDA_CALLABLE inline void mesh_query_point_adjoint(uint64 id, const vec3f_t& p, const mesh_query_point_t& q,
                                                   vec3f_t& adj_p, const mesh_query_point_t& adj_ret) {
    const mesh_t* m = mesh_ptr(id);
    if (m == nullptr || !q.result)
        return;
    vec3f_t a, b, c;
    mesh_face(*m, q.face, a, b, c);
    adj_closest_point_triangle_weights(a, b, c, p, adj_ret.u, adj_ret.v, adj_p);
}

CUDA_CALLABLE inline mesh_query_point_t mesh_query_point(uint64 id, vec3f_t p, float32 max_dist) {
    return mesh_query_point_impl(id, p, max_dist, 1, 0.0f);
}
CUDA_CALLABLE inline mesh_query_point_t mesh_query_point_no_sign(uint64 id, vec3f_t p, float32 max_dist) {
    return mesh_query_point_impl(id, p, max_dist, 0, 0.0f);
}
CUDA_CALLABLE inline mesh_query_point_t mesh_query_point_sign_normal(uint64 id, vec3f_t p, float32 max_dist) {
    return mesh_query_point_impl(id, p, max_dist, 2, 0.0f);
}
CUDA_CALLABLE inline mesh_query_point_t mesh_query_point_sign_winding_number(uint64 id, vec3f_t p, float32 max_dist,
                                                                             float32 accuracy, float32 threshold) {
    return mesh_query_point_impl(id, p, max_dist, 3, threshold);
}

CUDA_CALLABLE inline mesh_query_point_t mesh_query_point_sign_winding_number_default(uint64 id, vec3f_t p,
                                                                                     float32 max_dist) {
    return mesh_query_point_impl(id, p, max_dist, 3, 0.5f);
}

#define WP_MESH_QUERY_POINT_ADJ(NAME, CALL)                                                                          \
    CUDA_CALLABLE inline void adj_##NAME(uint64 id, vec3f_t p, float32 max_dist, uint64&, vec3f_t& adj_p, float32&,  \
                                         const mesh_query_point_t& adj_ret) {                                        \
        mesh_query_point_t q = CALL;                                                                                 \
        mesh_query_point_adjoint(id, p, q, adj_p, adj_ret);                                                          \
    }
WP_MESH_QUERY_POINT_ADJ(mesh_query_point, mesh_query_point_no_sign(id, p, max_dist))
WP_MESH_QUERY_POINT_ADJ(mesh_query_point_no_sign, mesh_query_point_no_sign(id, p, max_dist))
WP_MESH_QUERY_POINT_ADJ(mesh_query_point_sign_normal, mesh_query_point_no_sign(id, p, max_dist))
WP_MESH_QUERY_POINT_ADJ(mesh_query_point_sign_winding_number_default, mesh_query_point_no_sign(id, p, max_dist))
#undef WP_MESH_QUERY_POINT_ADJ
CUDA_CALLABLE inline void adj_mesh_query_point_sign_winding_number(uint64 id, vec3f_t p, float32 max_dist,
                                                                   float32 accuracy, float32 threshold, uint64&,
                                                                   vec3f_t& adj_p, float32&, float32&, float32&,
                                                                   const mesh_query_point_t& adj_ret) {
    mesh_query_point_t q = mesh_query_point_no_sign(id, p, max_dist);
    mesh_query_point_adjoint(id, p, q, adj_p, adj_ret);
}

// Out-parameter forms (Warp's older signatures): results written into the caller's variables. On a find the
// outputs are replaced and the gradients of u and v go to p as in the result form (sign and face are piecewise
// constant); otherwise they keep their values, so their incoming adjoints pass through.
CUDA_CALLABLE inline bool mesh_query_point_write(const mesh_query_point_t& q, float32& sign, int32& face, float32& u,
                                                 float32& v) {
    if (q.result) { sign = q.sign; face = q.face; u = q.u; v = q.v; }
    return q.result;
}
CUDA_CALLABLE inline bool mesh_query_point_out(uint64 id, vec3f_t p, float32 max_dist, float32& sign, int32& face,
                                               float32& u, float32& v, int sign_mode, float32 threshold = 0.0f) {
    return mesh_query_point_write(mesh_query_point_impl(id, p, max_dist, sign_mode, threshold), sign, face, u, v);
}
CUDA_CALLABLE inline void adj_mesh_query_point_out(uint64 id, vec3f_t p, float32 max_dist, vec3f_t& adj_p,
                                                   float32& adj_u_in, float32& adj_v_in, float32& adj_sign_in,
                                                   float32 adj_u, float32 adj_v, float32 adj_sign) {
    mesh_query_point_t q = mesh_query_point_no_sign(id, p, max_dist);
    if (q.result) {
        mesh_query_point_t adj_ret;
        adj_ret.u = adj_u; adj_ret.v = adj_v;
        mesh_query_point_adjoint(id, p, q, adj_p, adj_ret);
        return;
    }
    adj_u_in += adj_u; adj_v_in += adj_v; adj_sign_in += adj_sign;
}
CUDA_CALLABLE inline bool mesh_query_point(uint64 id, vec3f_t p, float32 max_dist, float32& sign, int32& face,
                                           float32& u, float32& v) {
    return mesh_query_point_out(id, p, max_dist, sign, face, u, v, 1);
}
CUDA_CALLABLE inline bool mesh_query_point_sign_normal(uint64 id, vec3f_t p, float32 max_dist, float32& sign,
                                                       int32& face, float32& u, float32& v) {
    return mesh_query_point_out(id, p, max_dist, sign, face, u, v, 2);
}
#define WP_MESH_QUERY_POINT_OUT_ADJ(NAME)                                                                            \
    CUDA_CALLABLE inline void adj_##NAME(uint64 id, vec3f_t p, float32 max_dist, float32, int32, float32, float32,   \
                                         uint64&, vec3f_t& adj_p, float32&, float32& adj_sign_in, int32&,            \
                                         float32& adj_u_in, float32& adj_v_in, bool, float32 adj_sign, int32,        \
                                         float32 adj_u, float32 adj_v) {                                             \
        adj_mesh_query_point_out(id, p, max_dist, adj_p, adj_u_in, adj_v_in, adj_sign_in, adj_u, adj_v, adj_sign);   \
    }
WP_MESH_QUERY_POINT_OUT_ADJ(mesh_query_point)
WP_MESH_QUERY_POINT_OUT_ADJ(mesh_query_point_sign_normal)
#undef WP_MESH_QUERY_POINT_OUT_ADJ
CUDA_CALLABLE inline bool mesh_query_point_sign_winding_number(uint64 id, vec3f_t p, float32 max_dist, float32& sign,
                                                               int32& face, float32& u, float32& v, float32 accuracy,
                                                               float32 threshold) {
    return mesh_query_point_out(id, p, max_dist, sign, face, u, v, 3, threshold);
}
CUDA_CALLABLE inline void adj_mesh_query_point_sign_winding_number(
    uint64 id, vec3f_t p, float32 max_dist, float32, int32, float32, float32, float32, float32, uint64&,
    vec3f_t& adj_p, float32&, float32& adj_sign_in, int32&, float32& adj_u_in, float32& adj_v_in, float32&, float32&,
    bool, float32 adj_sign, int32, float32 adj_u, float32 adj_v) {
    adj_mesh_query_point_out(id, p, max_dist, adj_p, adj_u_in, adj_v_in, adj_sign_in, adj_u, adj_v, adj_sign);
}
CUDA_CALLABLE inline bool mesh_query_point_no_sign(uint64 id, vec3f_t p, float32 max_dist, int32& face, float32& u,
                                                   float32& v) {
    float32 sign = 0.0f;
    return mesh_query_point_out(id, p, max_dist, sign, face, u, v, 0);
}
CUDA_CALLABLE inline void adj_mesh_query_point_no_sign(uint64 id, vec3f_t p, float32 max_dist, int32, float32,
                                                       float32, uint64&, vec3f_t& adj_p, float32&, int32&,
                                                       float32& adj_u_in, float32& adj_v_in, bool, int32,
                                                       float32 adj_u, float32 adj_v) {
    float32 adj_sign_in = 0.0f;
    adj_mesh_query_point_out(id, p, max_dist, adj_p, adj_u_in, adj_v_in, adj_sign_in, adj_u, adj_v, 0.0f);
}

// The furthest point of the mesh from p, farther than min_dist (Warp's mesh_query_furthest_point_no_sign): the
// furthest point of a triangle is one of its corners (the distance is convex), so the furthest corner of any face,
// found by visiting only the nodes whose box reaches farther than the best so far. The face whose corner it is
// first in the visit, and that corner's (u, v) (mesh_eval_position's weights: (1, 0), (0, 1) or (0, 0)).
CUDA_CALLABLE inline float32 mesh_box_far_sq(const vec3f_t& lo, const vec3f_t& hi, const vec3f_t& p) {
    float32 s = 0.0f;
    for (int a = 0; a < 3; ++a) {
        float32 d = ::fmaxf(::fabsf(p.c[a] - lo.c[a]), ::fabsf(hi.c[a] - p.c[a]));
        s += d * d;
    }
    return s;
}
CUDA_CALLABLE inline mesh_query_point_t mesh_query_furthest_point_no_sign(uint64 id, vec3f_t p, float32 min_dist) {
    mesh_query_point_t q;
    const mesh_t* m = mesh_ptr(id);
    if (m == nullptr || m->root < 0)
        return q;
    float32 best = min_dist > 0.0f ? min_dist * min_dist : 0.0f;
    mesh_walk(*m, m->root, [&](int32 n) {
        return !(mesh_box_far_sq(m->node_lower[n], m->node_upper[n], p) <= best);
    }, [&](int32 f) {
        vec3f_t corner[3];
        mesh_face(*m, f, corner[0], corner[1], corner[2]);
        for (int c = 0; c < 3; ++c) {
            vec3f_t d = geo_sub(corner[c], p);
            float32 dsq = geo_dot(d, d);
            if (dsq > best) {
                best = dsq;
                q.result = true; q.face = f;
                q.u = c == 0 ? 1.0f : 0.0f;
                q.v = c == 1 ? 1.0f : 0.0f;
            }
        }
        return false;
    });
    return q;
}
CUDA_CALLABLE inline bool mesh_query_furthest_point_no_sign(uint64 id, vec3f_t p, float32 min_dist, int32& face,
                                                            float32& u, float32& v) {
    float32 sign = 0.0f;
    return mesh_query_point_write(mesh_query_furthest_point_no_sign(id, p, min_dist), sign, face, u, v);
}

CUDA_CALLABLE inline mesh_query_ray_t mesh_query_ray_root(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t,
                                                       int32 root) {
    mesh_query_ray_t q;
    const mesh_t* m = mesh_ptr(id);
    mesh_hit_t hit;
    if (m == nullptr || !mesh_ray(*m, start, dir, max_t, root, hit))
        return q;
    q.result = true; q.sign = hit.sign; q.face = hit.face; q.t = hit.t; q.u = hit.u; q.v = hit.v;
    q.normal = hit.normal;
    return q;
}
CUDA_CALLABLE inline mesh_query_ray_t mesh_query_ray(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t) {
    return mesh_query_ray_root(id, start, dir, max_t, -1);
}
// Gradient of a ray cast. The hit o + t d = u a + v b + w c (w = 1 - u - v) solves M (t, u, v) = c - o with
// M = [d, c - a, c - b]; differentiating, M d(t, u, v) = -(do + t dd - u da - v db - w dc), so with
// lambda = M^-T (adj_t, adj_u, adj_v): adj_o -= lambda, adj_d -= t lambda, and the face's corners get u, v, w
// times lambda. The unit normal depends on the corners alone. Face and sign are piecewise constant. The corners'
// gradients go into the mesh's point gradient array when it has one.
// Returns false (nothing accumulated) when the ray misses.
CUDA_CALLABLE inline bool mesh_query_ray_adjoint(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t, int32 root,
                                                 vec3f_t& adj_start, vec3f_t& adj_dir,
                                                 const mesh_query_ray_t& adj_ret) {
    const mesh_t* m = mesh_ptr(id);
    mesh_hit_t hit;
    if (m == nullptr || !mesh_ray(*m, start, dir, max_t, root, hit))
        return false;
    vec3f_t a, b, c;
    mesh_face(*m, hit.face, a, b, c);
    const float32 w = 1.0f - hit.u - hit.v;
    // lambda = M^-T g: the rows of M^-1 are the cross products of M's columns over det(M)
    const vec3f_t col0 = dir, col1 = geo_sub(c, a), col2 = geo_sub(c, b);
    const float32 det = geo_dot(col0, geo_cross(col1, col2));
    vec3f_t lambda;
    if (det != 0.0f) {
        const float32 inv = 1.0f / det;
        const vec3f_t r0 = geo_cross(col1, col2), r1 = geo_cross(col2, col0), r2 = geo_cross(col0, col1);
        for (int k = 0; k < 3; ++k)
            lambda.c[k] = (adj_ret.t * r0.c[k] + adj_ret.u * r1.c[k] + adj_ret.v * r2.c[k]) * inv;
    }
    vec3f_t adj_a, adj_b, adj_c;
    for (int k = 0; k < 3; ++k) {
        adj_start.c[k] -= lambda.c[k];
        adj_dir.c[k] -= hit.t * lambda.c[k];
        adj_a.c[k] = hit.u * lambda.c[k];
        adj_b.c[k] = hit.v * lambda.c[k];
        adj_c.c[k] = w * lambda.c[k];
    }
    // normal = N / |N|, N = (b - a) x (c - a): adj_N = (g - n (n . g)) / |N|; then N's bilinear adjoints
    const vec3f_t e1 = geo_sub(b, a), e2 = geo_sub(c, a);
    const vec3f_t big_n = geo_cross(e1, e2);
    const float32 len = ::sqrtf(geo_dot(big_n, big_n));
    if (len > 0.0f) {
        const float32 along = geo_dot(hit.normal, adj_ret.normal);
        vec3f_t g;
        for (int k = 0; k < 3; ++k) g.c[k] = (adj_ret.normal.c[k] - hit.normal.c[k] * along) / len;
        const vec3f_t gb = geo_cross(e2, g), gc = geo_cross(g, e1);
        for (int k = 0; k < 3; ++k) {
            adj_b.c[k] += gb.c[k];
            adj_c.c[k] += gc.c[k];
            adj_a.c[k] -= gb.c[k] + gc.c[k];
        }
    }
    if (m->point_grads.data == nullptr)
        return true;
    const int32 corners[3] = {mesh_at(m->indices, 3 * hit.face), mesh_at(m->indices, 3 * hit.face + 1),
                              mesh_at(m->indices, 3 * hit.face + 2)};
    const vec3f_t* adj_corner[3] = {&adj_a, &adj_b, &adj_c};
    for (int i = 0; i < 3; ++i) {
        vec3f_t& slot = index(m->point_grads, 0, int64(corners[i]));
        for (int k = 0; k < 3; ++k) atomic_rmw_add(&slot.c[k], adj_corner[i]->c[k]);
    }
    return true;
}
CUDA_CALLABLE inline void adj_mesh_query_ray(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t, uint64&,
                                             vec3f_t& adj_start, vec3f_t& adj_dir, float32&,
                                             const mesh_query_ray_t& adj_ret) {
    mesh_query_ray_adjoint(id, start, dir, max_t, -1, adj_start, adj_dir, adj_ret);
}
CUDA_CALLABLE inline void adj_mesh_query_ray_root(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t, int32 root,
                                                  uint64&, vec3f_t& adj_start, vec3f_t& adj_dir, float32&, int32&,
                                                  const mesh_query_ray_t& adj_ret) {
    mesh_query_ray_adjoint(id, start, dir, max_t, root, adj_start, adj_dir, adj_ret);
}
CUDA_CALLABLE inline bool mesh_query_ray(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t, float32& t,
                                         float32& u, float32& v, float32& sign, vec3f_t& normal, int32& face,
                                         int32 root = -1) {
    const mesh_t* m = mesh_ptr(id);
    mesh_hit_t hit;
    if (m == nullptr || !mesh_ray(*m, start, dir, max_t, root, hit))
        return false;
    t = hit.t; u = hit.u; v = hit.v; sign = hit.sign; normal = hit.normal; face = hit.face;
    return true;
}
// Out-parameter form: on a hit the outputs are replaced (their gradients go to start, dir and the face's points as
// in the result form); on a miss they keep their values, so their incoming adjoints pass through.
CUDA_CALLABLE inline void adj_mesh_query_ray(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t, float32, float32,
                                             float32, float32, vec3f_t, int32, int32 root, uint64&,
                                             vec3f_t& adj_start, vec3f_t& adj_dir, float32&, float32& adj_t_in,
                                             float32& adj_u_in, float32& adj_v_in, float32& adj_sign_in,
                                             vec3f_t& adj_normal_in, int32&, int32&, bool, float32 adj_t,
                                             float32 adj_u, float32 adj_v, float32 adj_sign, vec3f_t adj_normal,
                                             int32) {
    mesh_query_ray_t adj_ret;
    adj_ret.t = adj_t; adj_ret.u = adj_u; adj_ret.v = adj_v; adj_ret.normal = adj_normal;
    if (mesh_query_ray_adjoint(id, start, dir, max_t, root, adj_start, adj_dir, adj_ret))
        return;
    adj_t_in += adj_t; adj_u_in += adj_u; adj_v_in += adj_v; adj_sign_in += adj_sign;
    adj_normal_in = geo_axpy(1.0f, adj_normal, adj_normal_in);
}
CUDA_CALLABLE inline void adj_mesh_query_ray(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t, float32 t,
                                             float32 u, float32 v, float32 sign, vec3f_t normal, int32 face,
                                             uint64& adj_id, vec3f_t& adj_start, vec3f_t& adj_dir,
                                             float32& adj_max_t, float32& adj_t_in, float32& adj_u_in,
                                             float32& adj_v_in, float32& adj_sign_in, vec3f_t& adj_normal_in,
                                             int32& adj_face_in, bool adj_hit, float32 adj_t, float32 adj_u,
                                             float32 adj_v, float32 adj_sign, vec3f_t adj_normal, int32 adj_face) {
    int32 adj_root = 0;
    adj_mesh_query_ray(id, start, dir, max_t, t, u, v, sign, normal, face, -1, adj_id, adj_start, adj_dir, adj_max_t,
                       adj_t_in, adj_u_in, adj_v_in, adj_sign_in, adj_normal_in, adj_face_in, adj_root, adj_hit,
                       adj_t, adj_u, adj_v, adj_sign, adj_normal, adj_face);
}

// Every face the ray start + t dir (t >= 0) crosses, from node `root` (the whole mesh when root < 0); unlike
// mesh_ray it does not stop at the closest hit, so an odd count means start is inside a closed mesh.
CUDA_CALLABLE inline int32 mesh_query_ray_count_intersections(uint64 id, vec3f_t start, vec3f_t dir, int32 root = -1) {
    const mesh_t* m = mesh_ptr(id);
    if (m == nullptr)
        return 0;
    int32 count = 0;
    mesh_walk(*m, root >= 0 ? root : m->root, [&](int32 n) {
        return mesh_ray_box(m->node_lower[n], m->node_upper[n], start, dir, 3.0e38f);
    }, [&](int32 f) {
        vec3f_t a, b, c;
        mesh_face(*m, f, a, b, c);
        float32 t, u, v;
        if (mesh_ray_triangle(start, dir, a, b, c, t, u, v))
            ++count;
        return false;
    });
    return count;
}

// True as soon as any face is hit at 0 <= t < max_t (no closest-hit search), from node `root` (-1: whole mesh).
CUDA_CALLABLE inline bool mesh_query_ray_anyhit(uint64 id, vec3f_t start, vec3f_t dir, float32 max_t,
                                                int32 root = -1) {
    const mesh_t* m = mesh_ptr(id);
    if (m == nullptr)
        return false;
    bool hit = false;
    mesh_walk(*m, root >= 0 ? root : m->root, [&](int32 n) {
        return mesh_ray_box(m->node_lower[n], m->node_upper[n], start, dir, max_t);
    }, [&](int32 f) {
        vec3f_t a, b, c;
        mesh_face(*m, f, a, b, c);
        float32 t, u, v;
        hit = mesh_ray_triangle(start, dir, a, b, c, t, u, v) && t < max_t;
        return hit;  // the first hit ends the walk
    });
    return hit;
}

// The id of the mesh's BVH as a wp.Bvh (items: faces, with their boxes), for the bvh_query_* builtins; 0 for a
// bad id.
CUDA_CALLABLE inline uint64 mesh_get_bvh(uint64 id) {
    const mesh_t* m = mesh_ptr(id);
    return m == nullptr ? 0 : m->bvh;
}

// Root of the subtree of the faces in `group` (for grouped ray queries), or -1 if the mesh has no such group.
CUDA_CALLABLE inline int32 mesh_get_group_root(uint64 id, int32 group) {
    const mesh_t* m = mesh_ptr(id);
    if (m == nullptr)
        return -1;
    int32 lo = 0, hi = m->num_groups;
    while (lo < hi) {
        int32 mid = lo + (hi - lo) / 2;
        if (m->group_ids[mid] < group) lo = mid + 1; else hi = mid;
    }
    return lo < m->num_groups && m->group_ids[lo] == group ? m->group_roots[lo] : -1;
}

// ---- evaluation ----------------------------------------------------------------------------------------------

CUDA_CALLABLE inline vec3f_t mesh_eval_attr(const mesh_t* m, const array_t<vec3f_t>& attr, int32 face, float32 u,
                                            float32 v, vec3f_t* x_i, vec3f_t* x_j, vec3f_t* x_k) {
    vec3f_t a = mesh_at(attr, mesh_at(m->indices, 3 * face));
    vec3f_t b = mesh_at(attr, mesh_at(m->indices, 3 * face + 1));
    vec3f_t c = mesh_at(attr, mesh_at(m->indices, 3 * face + 2));
    if (x_i) { *x_i = a; *x_j = b; *x_k = c; }
    return geo_axpy(u, a, geo_axpy(v, b, geo_axpy(1.0f - u - v, c, vec3f_t())));
}

CUDA_CALLABLE inline bool mesh_face_ok(const mesh_t* m, int32 face) {
    return m != nullptr && face >= 0 && face < m->num_tris;
}

// u x_i + v x_j + (1 - u - v) x_k of face `face`; zero for a bad id or face.
CUDA_CALLABLE inline vec3f_t mesh_eval_position(uint64 id, int32 face, float32 u, float32 v) {
    const mesh_t* m = mesh_ptr(id);
    return mesh_face_ok(m, face) ? mesh_eval_attr(m, m->points, face, u, v, nullptr, nullptr, nullptr) : vec3f_t();
}
CUDA_CALLABLE inline void adj_mesh_eval_position(uint64 id, int32 face, float32 u, float32 v, uint64&, int32&,
                                                 float32& adj_u, float32& adj_v, const vec3f_t& adj_ret) {
    const mesh_t* m = mesh_ptr(id);
    if (!mesh_face_ok(m, face)) return;
    vec3f_t a, b, c;
    mesh_eval_attr(m, m->points, face, u, v, &a, &b, &c);
    adj_u += geo_dot(geo_sub(a, c), adj_ret);
    adj_v += geo_dot(geo_sub(b, c), adj_ret);
}
CUDA_CALLABLE inline vec3f_t mesh_eval_velocity(uint64 id, int32 face, float32 u, float32 v) {
    const mesh_t* m = mesh_ptr(id);
    if (!mesh_face_ok(m, face) || m->velocities.data == nullptr) return vec3f_t();
    return mesh_eval_attr(m, m->velocities, face, u, v, nullptr, nullptr, nullptr);
}
CUDA_CALLABLE inline void adj_mesh_eval_velocity(uint64 id, int32 face, float32 u, float32 v, uint64&, int32&,
                                                 float32& adj_u, float32& adj_v, const vec3f_t& adj_ret) {
    const mesh_t* m = mesh_ptr(id);
    if (!mesh_face_ok(m, face) || m->velocities.data == nullptr) return;
    vec3f_t a, b, c;
    mesh_eval_attr(m, m->velocities, face, u, v, &a, &b, &c);
    adj_u += geo_dot(geo_sub(a, c), adj_ret);
    adj_v += geo_dot(geo_sub(b, c), adj_ret);
}

// Unit normal of face `face` (right-handed winding).
CUDA_CALLABLE inline vec3f_t mesh_eval_face_normal(uint64 id, int32 face) {
    const mesh_t* m = mesh_ptr(id);
    if (!mesh_face_ok(m, face)) return vec3f_t();
    vec3f_t a, b, c;
    mesh_face(*m, face, a, b, c);
    vec3f_t n = geo_cross(geo_sub(b, a), geo_sub(c, a));
    float32 len = ::sqrtf(geo_dot(n, n));
    return len > 0.0f ? geo_axpy(1.0f / len - 1.0f, n, n) : n;
}

CUDA_CALLABLE inline vec3f_t mesh_get_point(uint64 id, int32 index) {
    const mesh_t* m = mesh_ptr(id);
    return m ? mesh_at(m->points, mesh_at(m->indices, index)) : vec3f_t();
}
CUDA_CALLABLE inline vec3f_t mesh_get_velocity(uint64 id, int32 index) {
    const mesh_t* m = mesh_ptr(id);
    return m && m->velocities.data ? mesh_at(m->velocities, mesh_at(m->indices, index)) : vec3f_t();
}
CUDA_CALLABLE inline int32 mesh_get_index(uint64 id, int32 index) {
    const mesh_t* m = mesh_ptr(id);
    return m ? mesh_at(m->indices, index) : -1;
}

// ---- closest point signed by ray parity (Warp's mesh_query_point_sign_parity) ----------------------------------

// -1 (inside) when at least half of n_sample rays from p cross the mesh an odd number of times, else 1: each ray
// along (1, 1, 1) perturbed per axis by a uniform draw in [-scale, scale) from the fixed seed 42 (the same
// directions at every call, Warp's); n_sample <= 0 casts none and says inside.
CUDA_CALLABLE inline float32 mesh_sign_parity(uint64 id, const vec3f_t& p, int32 n_sample, float32 scale) {
    int32 vote = 0;
    uint32 state = rand_init(42);
    for (int32 i = 0; i < n_sample; ++i) {
        vec3f_t dir;
        do {
            float32 x = randf(state, -scale, scale);
            float32 y = randf(state, -scale, scale);
            float32 z = randf(state, -scale, scale);
            dir.c[0] = 1.0f + x; dir.c[1] = 1.0f + y; dir.c[2] = 1.0f + z;
        } while (geo_dot(dir, dir) < 1e-8f);
        if (mesh_query_ray_count_intersections(id, p, dir) % 2)
            ++vote;
    }
    return vote * 2 >= n_sample ? -1.0f : 1.0f;
}
CUDA_CALLABLE inline mesh_query_point_t mesh_query_point_sign_parity(uint64 id, vec3f_t p, float32 max_dist,
                                                                     int32 n_sample, float32 perturbation_scale) {
    mesh_query_point_t q = mesh_query_point_impl(id, p, max_dist, 0, 0.0f);
    if (q.result)
        q.sign = mesh_sign_parity(id, p, n_sample, perturbation_scale);
    return q;
}
CUDA_CALLABLE inline void adj_mesh_query_point_sign_parity(uint64 id, vec3f_t p, float32 max_dist, int32, float32,
                                                           uint64&, vec3f_t& adj_p, float32&, int32&, float32&,
                                                           const mesh_query_point_t& adj_ret) {
    mesh_query_point_t q = mesh_query_point_no_sign(id, p, max_dist);
    mesh_query_point_adjoint(id, p, q, adj_p, adj_ret);
}
CUDA_CALLABLE inline bool mesh_query_point_sign_parity(uint64 id, vec3f_t p, float32 max_dist, float32& sign,
                                                       int32& face, float32& u, float32& v, int32 n_sample,
                                                       float32 perturbation_scale) {
    return mesh_query_point_write(mesh_query_point_sign_parity(id, p, max_dist, n_sample, perturbation_scale), sign,
                                  face, u, v);
}
CUDA_CALLABLE inline void adj_mesh_query_point_sign_parity(
    uint64 id, vec3f_t p, float32 max_dist, float32, int32, float32, float32, int32, float32, uint64&,
    vec3f_t& adj_p, float32&, float32& adj_sign_in, int32&, float32& adj_u_in, float32& adj_v_in, int32&, float32&,
    bool, float32 adj_sign, int32, float32 adj_u, float32 adj_v) {
    adj_mesh_query_point_out(id, p, max_dist, adj_p, adj_u_in, adj_v_in, adj_sign_in, adj_u, adj_v, adj_sign);
}

}  // namespace wp
