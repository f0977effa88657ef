// Closest points between simple primitives, with adjoints: point-triangle (barycentric weights) and edge-edge.
// Used by mesh queries (mesh.h) and exposed as builtins (closest_point_edge_edge).
#pragma once
#include "core.h"
#include "vec.h"

namespace wp {

typedef vec_t<3, float32> vec3f_t;

CUDA_CALLABLE inline vec3f_t geo_sub(const vec3f_t& a, const vec3f_t& b) {
    vec3f_t r;
    r.c[0] = a.c[0] - b.c[0]; r.c[1] = a.c[1] - b.c[1]; r.c[2] = a.c[2] - b.c[2];
    return r;
}
CUDA_CALLABLE inline float32 geo_dot(const vec3f_t& a, const vec3f_t& b) {
    return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2];
}
CUDA_CALLABLE inline vec3f_t geo_cross(const vec3f_t& a, const vec3f_t& b) {
    vec3f_t r;
    r.c[0] = a.c[1] * b.c[2] - a.c[2] * b.c[1];
    r.c[1] = a.c[2] * b.c[0] - a.c[0] * b.c[2];
    r.c[2] = a.c[0] * b.c[1] - a.c[1] * b.c[0];
    return r;
}
CUDA_CALLABLE inline vec3f_t geo_axpy(float32 s, const vec3f_t& x, const vec3f_t& y) {  // s * x + y
    vec3f_t r;
    r.c[0] = s * x.c[0] + y.c[0]; r.c[1] = s * x.c[1] + y.c[1]; r.c[2] = s * x.c[2] + y.c[2];
    return r;
}

// ---- closest point on a triangle ------------------------------------------------------------------------------

// Regions of the closest point: the weights are piecewise smooth in p, one formula per region.
enum { TRI_VERTEX = 0, TRI_EDGE_AB = 1, TRI_EDGE_AC = 2, TRI_EDGE_BC = 3, TRI_FACE = 4 };

// Closest point on triangle (a, b, c) to p as barycentric weights (wa, wb, wc), summing to 1 (Ericson, Real-Time
// Collision Detection 5.1.5). Returns the region.
CUDA_CALLABLE inline int closest_point_triangle_weights(const vec3f_t& a, const vec3f_t& b, const vec3f_t& c,
                                                        const vec3f_t& p, float32& wa, float32& wb, float32& wc) {
    vec3f_t ab = geo_sub(b, a), ac = geo_sub(c, a), ap = geo_sub(p, a);
    float32 d1 = geo_dot(ab, ap), d2 = geo_dot(ac, ap);
    if (d1 <= 0.0f && d2 <= 0.0f) { wa = 1.0f; wb = 0.0f; wc = 0.0f; return TRI_VERTEX; }
    vec3f_t bp = geo_sub(p, b);
    float32 d3 = geo_dot(ab, bp), d4 = geo_dot(ac, bp);
    if (d3 >= 0.0f && d4 <= d3) { wa = 0.0f; wb = 1.0f; wc = 0.0f; return TRI_VERTEX; }
    float32 vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
        float32 t = d1 / (d1 - d3);
        wa = 1.0f - t; wb = t; wc = 0.0f;
        return TRI_EDGE_AB;
    }
    vec3f_t cp = geo_sub(p, c);
    float32 d5 = geo_dot(ab, cp), d6 = geo_dot(ac, cp);
    if (d6 >= 0.0f && d5 <= d6) { wa = 0.0f; wb = 0.0f; wc = 1.0f; return TRI_VERTEX; }
    float32 vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
        float32 t = d2 / (d2 - d6);
        wa = 1.0f - t; wb = 0.0f; wc = t;
        return TRI_EDGE_AC;
    }
    float32 va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
        float32 t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        wa = 0.0f; wb = 1.0f - t; wc = t;
        return TRI_EDGE_BC;
    }
    float32 denom = 1.0f / (va + vb + vc);
    wb = vb * denom;
    wc = vc * denom;
    wa = 1.0f - wb - wc;
    return TRI_FACE;
}

// Adjoint of the weights (wa, wb) w.r.t. p, given their adjoints: inside a region the weights are linear in p
// (vertex: constant; edge: t = (p - e0).e / |e|^2; face: the barycentrics of p's projection).
CUDA_CALLABLE inline void adj_closest_point_triangle_weights(const vec3f_t& a, const vec3f_t& b, const vec3f_t& c,
                                                             const vec3f_t& p, float32 adj_wa, float32 adj_wb,
                                                             vec3f_t& adj_p) {
    float32 wa, wb, wc;
    int region = closest_point_triangle_weights(a, b, c, p, wa, wb, wc);
    vec3f_t ab = geo_sub(b, a), ac = geo_sub(c, a);
    if (region == TRI_EDGE_AB) {  // wa = 1 - t, wb = t
        float32 s = (adj_wb - adj_wa) / geo_dot(ab, ab);
        adj_p = geo_axpy(s, ab, adj_p);
    } else if (region == TRI_EDGE_AC) {  // wa = 1 - t, wc = t
        adj_p = geo_axpy(-adj_wa / geo_dot(ac, ac), ac, adj_p);
    } else if (region == TRI_EDGE_BC) {  // wb = 1 - t, wc = t, t = (p - b).bc / |bc|^2
        vec3f_t bc = geo_sub(c, b);
        adj_p = geo_axpy(-adj_wb / geo_dot(bc, bc), bc, adj_p);
    } else if (region == TRI_FACE) {
        float32 d00 = geo_dot(ab, ab), d01 = geo_dot(ab, ac), d11 = geo_dot(ac, ac);
        float32 inv = 1.0f / (d00 * d11 - d01 * d01);
        // wb = (d11 (p-a).ab - d01 (p-a).ac) / den, wc = (d00 (p-a).ac - d01 (p-a).ab) / den, wa = 1 - wb - wc
        float32 gb = adj_wb - adj_wa, gc = -adj_wa;
        float32 s_ab = (gb * d11 - gc * d01) * inv;
        float32 s_ac = (gc * d00 - gb * d01) * inv;
        adj_p = geo_axpy(s_ab, ab, adj_p);
        adj_p = geo_axpy(s_ac, ac, adj_p);
    }
}

// ---- closest points between two segments ------------------------------------------------------------------------

// Segment parameters (s, t) of the closest points of [p1, q1] and [p2, q2] (Ericson 5.1.9); a segment whose squared
// length is <= epsilon is a point (its parameter 0). `region` records which clamps were active, so that the adjoint
// differentiates the same formula.
CUDA_CALLABLE inline void closest_edge_edge_params(const vec3f_t& p1, const vec3f_t& q1, const vec3f_t& p2,
                                                   const vec3f_t& q2, float32 epsilon, float32& s, float32& t,
                                                   int& region) {
    vec3f_t d1 = geo_sub(q1, p1), d2 = geo_sub(q2, p2), r = geo_sub(p1, p2);
    float32 a = geo_dot(d1, d1), e = geo_dot(d2, d2), f = geo_dot(d2, r);
    if (a <= epsilon && e <= epsilon) { s = 0.0f; t = 0.0f; region = 0; return; }
    if (a <= epsilon) {  // first segment is a point
        s = 0.0f;
        t = f / e;
        region = 1;
        if (t <= 0.0f) { t = 0.0f; region = 0; } else if (t >= 1.0f) { t = 1.0f; region = 0; }
        return;
    }
    float32 c = geo_dot(d1, r);
    if (e <= epsilon) {  // second segment is a point
        t = 0.0f;
        s = -c / a;
        region = 2;
        if (s <= 0.0f) { s = 0.0f; region = 0; } else if (s >= 1.0f) { s = 1.0f; region = 0; }
        return;
    }
    float32 b = geo_dot(d1, d2);
    float32 denom = a * e - b * b;
    // s_free: s from the unclamped 2x2 solve (or 0 for parallel segments), clamped to [0, 1]
    int s_free = 0;
    if (denom != 0.0f) {
        s = (b * f - c * e) / denom;
        if (s <= 0.0f) s = 0.0f; else if (s >= 1.0f) s = 1.0f; else s_free = 1;
    } else {
        s = 0.0f;
    }
    float32 tnom = b * s + f;
    if (tnom <= 0.0f) {
        t = 0.0f;
        s = -c / a;
        region = 3;  // t clamped to 0, s from p2
        if (s <= 0.0f) { s = 0.0f; region = 0; } else if (s >= 1.0f) { s = 1.0f; region = 0; }
    } else if (tnom >= e) {
        t = 1.0f;
        s = (b - c) / a;
        region = 4;  // t clamped to 1, s from q2
        if (s <= 0.0f) { s = 0.0f; region = 0; } else if (s >= 1.0f) { s = 1.0f; region = 0; }
    } else {
        t = tnom / e;
        region = s_free ? 5 : 6;  // 5: both free; 6: s clamped, t = (b s + f) / e
    }
}

// vec3(s, t, d): segment parameters of the closest points and their distance.
CUDA_CALLABLE inline vec3f_t closest_point_edge_edge(vec3f_t p1, vec3f_t q1, vec3f_t p2, vec3f_t q2, float32 epsilon) {
    float32 s, t;
    int region;
    closest_edge_edge_params(p1, q1, p2, q2, epsilon, s, t, region);
    vec3f_t c1 = geo_axpy(s, geo_sub(q1, p1), p1), c2 = geo_axpy(t, geo_sub(q2, p2), p2);
    vec3f_t d = geo_sub(c1, c2);
    vec3f_t out;
    out.c[0] = s; out.c[1] = t; out.c[2] = ::sqrtf(geo_dot(d, d));
    return out;
}

// Adjoint: (s, t) are differentiated within the active region (a clamped parameter is constant), then the
// distance |c1 - c2| through c1 = p1 + s d1, c2 = p2 + t d2.
CUDA_CALLABLE inline void adj_closest_point_edge_edge(vec3f_t p1, vec3f_t q1, vec3f_t p2, vec3f_t q2, float32 epsilon,
                                                      vec3f_t& adj_p1, vec3f_t& adj_q1, vec3f_t& adj_p2,
                                                      vec3f_t& adj_q2, float32& adj_epsilon, const vec3f_t& adj_ret) {
    float32 s, t;
    int region;
    closest_edge_edge_params(p1, q1, p2, q2, epsilon, s, t, region);
    vec3f_t d1 = geo_sub(q1, p1), d2 = geo_sub(q2, p2), r = geo_sub(p1, p2);
    vec3f_t c1 = geo_axpy(s, d1, p1), c2 = geo_axpy(t, d2, p2);
    vec3f_t w = geo_sub(c1, c2);
    float32 dist = ::sqrtf(geo_dot(w, w));
    float32 gs = adj_ret.c[0], gt = adj_ret.c[1];
    vec3f_t gd1, gd2, gr, gp1, gp2;  // adjoints of d1, d2, r, and of p1, p2 directly
    // distance part: d(dist) = n . (dp1 + s dd1 + ds d1 - dp2 - t dd2 - dt d2), n = w / dist
    if (dist > 0.0f) {
        vec3f_t n = w;
        float32 k = adj_ret.c[2] / dist;
        n.c[0] *= k; n.c[1] *= k; n.c[2] *= k;
        gp1 = n;
        gd1 = geo_axpy(s, n, gd1);
        gs += geo_dot(n, d1);
        gp2 = geo_axpy(-1.0f, n, gp2);
        gd2 = geo_axpy(-t, n, gd2);
        gt -= geo_dot(n, d2);
    }
    // parameters: accumulate the adjoints of the scalars a = d1.d1, b = d1.d2, c = d1.r, e = d2.d2, f = d2.r
    float32 a = geo_dot(d1, d1), b = geo_dot(d1, d2), c = geo_dot(d1, r), e = geo_dot(d2, d2), f = geo_dot(d2, r);
    float32 ga = 0.0f, gb = 0.0f, gc = 0.0f, ge = 0.0f, gf = 0.0f;
    if (region == 1) {  // t = f / e
        gf += gt / e; ge -= gt * f / (e * e);
    } else if (region == 2 || region == 3) {  // s = -c / a
        gc -= gs / a; ga += gs * c / (a * a);
    } else if (region == 4) {  // s = (b - c) / a
        gb += gs / a; gc -= gs / a; ga -= gs * (b - c) / (a * a);
    } else if (region == 6) {  // t = (b s + f) / e with s constant
        gb += gt * s / e; gf += gt / e; ge -= gt * (b * s + f) / (e * e);
    } else if (region == 5) {  // s = (b f - c e) / den, t = (b s + f) / e, den = a e - b^2
        float32 den = a * e - b * b;
        gb += gt * s / e; gf += gt / e; ge -= gt * (b * s + f) / (e * e);
        float32 gs_total = gs + gt * b / e;  // s also feeds t
        float32 num = b * f - c * e;
        float32 gnum = gs_total / den, gden = -gs_total * num / (den * den);
        gb += gnum * f + gden * (-2.0f * b);
        gf += gnum * b;
        gc -= gnum * e;
        ge += -gnum * c + gden * a;
        ga += gden * e;
    }
    // a = d1.d1, b = d1.d2, c = d1.r, e = d2.d2, f = d2.r
    gd1 = geo_axpy(2.0f * ga, d1, gd1);
    gd1 = geo_axpy(gb, d2, gd1);
    gd2 = geo_axpy(gb, d1, gd2);
    gd1 = geo_axpy(gc, r, gd1);
    gr = geo_axpy(gc, d1, gr);
    gd2 = geo_axpy(2.0f * ge, d2, gd2);
    gd2 = geo_axpy(gf, r, gd2);
    gr = geo_axpy(gf, d2, gr);
    // d1 = q1 - p1, d2 = q2 - p2, r = p1 - p2
    for (int k = 0; k < 3; ++k) {
        adj_q1.c[k] += gd1.c[k];
        adj_p1.c[k] += gp1.c[k] - gd1.c[k] + gr.c[k];
        adj_q2.c[k] += gd2.c[k];
        adj_p2.c[k] += gp2.c[k] - gd2.c[k] - gr.c[k];
    }
}

}  // namespace wp
