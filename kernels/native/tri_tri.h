// Triangle-triangle intersection test (wp.intersect_tri_tri): 1 when two triangles share a point, else 0.
// Interval-overlap method (Moller, "A Fast Triangle-Triangle Intersection Test", 1997): each triangle's vertices
// are classified against the other's plane (distances below 1e-6 count as on it, as Warp does); if both
// triangles straddle the other's plane, they intersect when their segments on the line where the planes meet
// overlap. Coplanar triangles are tested in 2-d (edges crossing, or one containing a vertex of the other).
// Not differentiable (an integer result). float32 and float64.
#pragma once
#include "core.h"
#include "vec.h"

namespace wp {
namespace tritri {

template <typename T> struct P3 {
    T x[3];
};
template <typename T> CUDA_CALLABLE inline P3<T> sub(const P3<T>& a, const P3<T>& b) {
    return P3<T>{{a.x[0] - b.x[0], a.x[1] - b.x[1], a.x[2] - b.x[2]}};
}
template <typename T> CUDA_CALLABLE inline P3<T> cross(const P3<T>& a, const P3<T>& b) {
    return P3<T>{{a.x[1] * b.x[2] - a.x[2] * b.x[1], a.x[2] * b.x[0] - a.x[0] * b.x[2],
                  a.x[0] * b.x[1] - a.x[1] * b.x[0]}};
}
template <typename T> CUDA_CALLABLE inline T dot(const P3<T>& a, const P3<T>& b) {
    return a.x[0] * b.x[0] + a.x[1] * b.x[1] + a.x[2] * b.x[2];
}
template <typename T> CUDA_CALLABLE inline T absval(T v) { return v < T(0) ? -v : v; }

// Signed distances (scaled by |n|) of q's vertices from the plane through p0 with normal n; tiny ones snap to 0.
template <typename T>
CUDA_CALLABLE inline void plane_distances(const P3<T>& n, const P3<T>& p0, const P3<T> (&q)[3], T (&d)[3]) {
    const T offset = -dot(n, p0);
    for (int i = 0; i < 3; ++i) {
        d[i] = dot(n, q[i]) + offset;
        if (absval(d[i]) < T(0.000001)) d[i] = T(0);
    }
}

// True when all three distances are nonzero and of one sign: the triangle lies strictly on one side.
template <typename T> CUDA_CALLABLE inline bool one_side(const T (&d)[3]) {
    return d[0] * d[1] > T(0) && d[0] * d[2] > T(0);
}

// The segment [lo, hi] where a triangle (vertex projections p on the planes' common line, distances d from the
// other plane) crosses that plane; false when the triangle lies in the plane.
template <typename T> CUDA_CALLABLE inline bool crossing(const T (&p)[3], const T (&d)[3], T& lo, T& hi) {
    int alone;  // the vertex on its own side of the plane
    if (d[0] * d[1] > T(0)) alone = 2;
    else if (d[0] * d[2] > T(0)) alone = 1;
    else if (d[1] * d[2] > T(0) || d[0] != T(0)) alone = 0;
    else if (d[1] != T(0)) alone = 1;
    else if (d[2] != T(0)) alone = 2;
    else return false;
    const int a = (alone + 1) % 3, b = (alone + 2) % 3;
    T s0 = p[alone] + (p[a] - p[alone]) * d[alone] / (d[alone] - d[a]);
    T s1 = p[alone] + (p[b] - p[alone]) * d[alone] / (d[alone] - d[b]);
    lo = s0 < s1 ? s0 : s1;
    hi = s0 < s1 ? s1 : s0;
    return true;
}

// 2-d orientation of c relative to the directed line a -> b (twice the signed area).
template <typename T> CUDA_CALLABLE inline T orient(const T* a, const T* b, const T* c) {
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}
template <typename T> CUDA_CALLABLE inline bool segments_meet(const T* a, const T* b, const T* c, const T* d) {
    T o1 = orient(a, b, c), o2 = orient(a, b, d), o3 = orient(c, d, a), o4 = orient(c, d, b);
    const bool cd_straddle_ab = (o1 > T(0) && o2 < T(0)) || (o1 < T(0) && o2 > T(0));
    const bool ab_straddle_cd = (o3 > T(0) && o4 < T(0)) || (o3 < T(0) && o4 > T(0));
    if (cd_straddle_ab && ab_straddle_cd) return true;
    // touching or collinear: an endpoint on the other segment
    auto on = [](const T* p, const T* q, const T* r) {  // r on segment p q, given collinear
        return (r[0] >= (p[0] < q[0] ? p[0] : q[0]) && r[0] <= (p[0] < q[0] ? q[0] : p[0]) &&
                r[1] >= (p[1] < q[1] ? p[1] : q[1]) && r[1] <= (p[1] < q[1] ? q[1] : p[1]));
    };
    return (o1 == T(0) && on(a, b, c)) || (o2 == T(0) && on(a, b, d)) || (o3 == T(0) && on(c, d, a)) ||
           (o4 == T(0) && on(c, d, b));
}
template <typename T> CUDA_CALLABLE inline bool inside(const T (*tri)[2], const T* p) {
    T o0 = orient(tri[0], tri[1], p), o1 = orient(tri[1], tri[2], p), o2 = orient(tri[2], tri[0], p);
    return (o0 >= T(0) && o1 >= T(0) && o2 >= T(0)) || (o0 <= T(0) && o1 <= T(0) && o2 <= T(0));
}

// Two triangles in one plane (normal n): drop the axis along which n is largest and test in 2-d.
template <typename T>
CUDA_CALLABLE inline int coplanar(const P3<T>& n, const P3<T> (&v)[3], const P3<T> (&u)[3]) {
    int drop = 0;
    if (absval(n.x[1]) > absval(n.x[drop])) drop = 1;
    if (absval(n.x[2]) > absval(n.x[drop])) drop = 2;
    const int i = drop == 0 ? 1 : 0, j = drop == 2 ? 1 : 2;
    T a[3][2], b[3][2];
    for (int k = 0; k < 3; ++k) {
        a[k][0] = v[k].x[i]; a[k][1] = v[k].x[j];
        b[k][0] = u[k].x[i]; b[k][1] = u[k].x[j];
    }
    for (int e = 0; e < 3; ++e)
        for (int f = 0; f < 3; ++f)
            if (segments_meet(a[e], a[(e + 1) % 3], b[f], b[(f + 1) % 3])) return 1;
    return (inside<T>(b, a[0]) || inside<T>(a, b[0])) ? 1 : 0;
}

template <typename T, typename V>
CUDA_CALLABLE inline int test(const V& v0, const V& v1, const V& v2, const V& u0, const V& u1, const V& u2) {
    const P3<T> v[3] = {{{v0.c[0], v0.c[1], v0.c[2]}}, {{v1.c[0], v1.c[1], v1.c[2]}}, {{v2.c[0], v2.c[1], v2.c[2]}}};
    const P3<T> u[3] = {{{u0.c[0], u0.c[1], u0.c[2]}}, {{u1.c[0], u1.c[1], u1.c[2]}}, {{u2.c[0], u2.c[1], u2.c[2]}}};
    const P3<T> nv = cross(sub(v[1], v[0]), sub(v[2], v[0]));
    T du[3];
    plane_distances(nv, v[0], u, du);
    if (one_side(du)) return 0;
    const P3<T> nu = cross(sub(u[1], u[0]), sub(u[2], u[0]));
    T dv[3];
    plane_distances(nu, u[0], v, dv);
    if (one_side(dv)) return 0;
    // the line where the planes meet runs along nv x nu: project on its largest axis
    const P3<T> line = cross(nv, nu);
    int axis = 0;
    if (absval(line.x[1]) > absval(line.x[axis])) axis = 1;
    if (absval(line.x[2]) > absval(line.x[axis])) axis = 2;
    const T pv[3] = {v[0].x[axis], v[1].x[axis], v[2].x[axis]};
    const T pu[3] = {u[0].x[axis], u[1].x[axis], u[2].x[axis]};
    T v_lo, v_hi, u_lo, u_hi;
    if (!crossing(pv, dv, v_lo, v_hi) || !crossing(pu, du, u_lo, u_hi)) return coplanar(nv, v, u);
    return (v_hi < u_lo || u_hi < v_lo) ? 0 : 1;
}

}  // namespace tritri

template <typename T>
CUDA_CALLABLE inline int32 intersect_tri_tri(const vec_t<3, T>& v0, const vec_t<3, T>& v1, const vec_t<3, T>& v2,
                                             const vec_t<3, T>& u0, const vec_t<3, T>& u1, const vec_t<3, T>& u2) {
    return tritri::test<T>(v0, v1, v2, u0, u1, u2);
}

}  // namespace wp
