// Rigid transforms (p, q): x -> quat_rotate(q, x) + p, with their adjoints side by side (spatial vectors: vec.h).
// Convention: R f(A a) and void adj_f(A a, A& adj_a, const R& adj_ret), accumulating.
#pragma once
#include "core.h"
#include "quat.h"

namespace wp {

// ---- private helpers ------------------------------------------------------------------------------------------

template <typename T> CUDA_CALLABLE inline void xform_acc(transform_t<T>& a, const transform_t<T>& v, T s = T(1)) {
    quat_acc3(a.p, v.p, s);
    quat_accq(a.q, v.q, s);
}
// Component i of the flat layout (px, py, pz, qx, qy, qz, qw); a negative i counts from the end, as in Python.
template <typename T> CUDA_CALLABLE inline T& xform_component(transform_t<T>& t, int i) {
    if (i < 0) i += 7;
    return i < 3 ? t.p.c[i] : quat_component(t.q, i - 3);
}
template <typename T> CUDA_CALLABLE inline T xform_component(const transform_t<T>& t, int i) {
    if (i < 0) i += 7;
    return i < 3 ? t.p.c[i] : quat_component(t.q, i - 3);
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> xform_add3(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return quat_vec3<T>(T(a.c[0] + b.c[0]), T(a.c[1] + b.c[1]), T(a.c[2] + b.c[2]));
}

// ---- construction ---------------------------------------------------------------------------------------------

// transform() is all zeros (the quaternion too), as in Warp; transform_identity() has q = (0, 0, 0, 1).
template <typename R> CUDA_CALLABLE inline R construct_transform() {
    R t;
    t.q = quat_t<decltype(t.q.x)>(0, 0, 0, 0);
    return t;
}
template <typename R> CUDA_CALLABLE inline void adj_construct_transform(const R&) {}

template <typename R, typename T> CUDA_CALLABLE inline R construct_transform(const vec_t<3, T>& p, const quat_t<T>& q) {
    return R(p, q);
}
template <typename R, typename T>
CUDA_CALLABLE inline void adj_construct_transform(const vec_t<3, T>&, const quat_t<T>&, vec_t<3, T>& adj_p,
                                                  quat_t<T>& adj_q, const R& adj_ret) {
    quat_acc3(adj_p, adj_ret.p);
    quat_accq(adj_q, adj_ret.q);
}

// Translation only: identity rotation.
template <typename R, typename T> CUDA_CALLABLE inline R construct_transform(const vec_t<3, T>& p) {
    return R(p, quat_t<T>(0, 0, 0, 1));
}
template <typename R, typename T>
CUDA_CALLABLE inline void adj_construct_transform(const vec_t<3, T>&, vec_t<3, T>& adj_p, const R& adj_ret) {
    quat_acc3(adj_p, adj_ret.p);
}

// Seven components (px, py, pz, qx, qy, qz, qw).
template <typename R, typename T>
CUDA_CALLABLE inline R construct_transform(T px, T py, T pz, T qx, T qy, T qz, T qw) {
    return R(quat_vec3<T>(px, py, pz), quat_t<T>(qx, qy, qz, qw));
}
template <typename R, typename T>
CUDA_CALLABLE inline void adj_construct_transform(T, T, T, T, T, T, T, T& a0, T& a1, T& a2, T& a3, T& a4, T& a5, T& a6,
                                                  const R& adj_ret) {
    T* adj[7] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6};
    for (int i = 0; i < 7; ++i) quat_acc(*adj[i], xform_component(adj_ret, i));
}

// One scalar fills all seven components.
template <typename R, typename T> CUDA_CALLABLE inline R construct_transform_fill(T s) {
    return R(quat_vec3<T>(s, s, s), quat_t<T>(s, s, s, s));
}
template <typename R, typename T>
CUDA_CALLABLE inline void adj_construct_transform_fill(T, T& adj_s, const R& adj_ret) {
    for (int i = 0; i < 7; ++i) quat_acc(adj_s, xform_component(adj_ret, i));
}

// Copy, converting the scalar type.
template <typename R, typename U> CUDA_CALLABLE inline R construct_transform(const transform_t<U>& x) {
    R r;
    typedef decltype(r.q.x) T;
    for (int i = 0; i < 7; ++i) xform_component(r, i) = T(float64(xform_component(x, i)));
    return r;
}
template <typename R, typename U>
CUDA_CALLABLE inline void adj_construct_transform(const transform_t<U>&, transform_t<U>& adj_x, const R& adj_ret) {
    for (int i = 0; i < 7; ++i) quat_acc(xform_component(adj_x, i), U(float64(xform_component(adj_ret, i))));
}

template <typename R> CUDA_CALLABLE inline R transform_identity() {
    R t;
    t.q = quat_t<decltype(t.q.x)>(0, 0, 0, 1);
    return t;
}

// ---- components -----------------------------------------------------------------------------------------------

template <typename T> CUDA_CALLABLE inline vec_t<3, T> transform_get_translation(const transform_t<T>& t) {
    return t.p;
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_get_translation(const transform_t<T>&, transform_t<T>& adj_t,
                                                        const vec_t<3, T>& adj_ret) {
    quat_acc3(adj_t.p, adj_ret);
}
template <typename T> CUDA_CALLABLE inline quat_t<T> transform_get_rotation(const transform_t<T>& t) { return t.q; }
template <typename T>
CUDA_CALLABLE inline void adj_transform_get_rotation(const transform_t<T>&, transform_t<T>& adj_t,
                                                     const quat_t<T>& adj_ret) {
    quat_accq(adj_t.q, adj_ret);
}

// t[i] reads the flat layout (px, py, pz, qx, qy, qz, qw).
template <typename T, typename I> CUDA_CALLABLE inline T extract(const transform_t<T>& t, I i) {
    return xform_component(t, int(i));
}
template <typename T, typename I>
CUDA_CALLABLE inline void adj_extract(const transform_t<T>&, I i, transform_t<T>& adj_t, I&, const T& adj_ret) {
    quat_acc(xform_component(adj_t, int(i)), adj_ret);
}
template <typename T, typename I> CUDA_CALLABLE inline transform_t<T> assign(const transform_t<T>& t, I i, T v) {
    transform_t<T> r = t;
    xform_component(r, int(i)) = v;
    return r;
}
template <typename T, typename I>
CUDA_CALLABLE inline void adj_assign(const transform_t<T>&, I i, T, transform_t<T>& adj_t, I&, T& adj_v,
                                     const transform_t<T>& adj_ret) {
    transform_t<T> g = adj_ret;
    quat_acc(adj_v, xform_component(g, int(i)));
    xform_component(g, int(i)) = T(0);
    xform_acc(adj_t, g);
}

// ---- component-wise arithmetic ------------------------------------------------------------------------------------

template <typename T> CUDA_CALLABLE inline transform_t<T> add(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_t<T>(xform_add3(a.p, b.p), add(a.q, b.q));
}
template <typename T>
CUDA_CALLABLE inline void adj_add(const transform_t<T>&, const transform_t<T>&, transform_t<T>& adj_a,
                                  transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    xform_acc(adj_a, adj_ret);
    xform_acc(adj_b, adj_ret);
}
template <typename T> CUDA_CALLABLE inline transform_t<T> sub(const transform_t<T>& a, const transform_t<T>& b) {
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) xform_component(r, i) = T(xform_component(a, i) - xform_component(b, i));
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_sub(const transform_t<T>&, const transform_t<T>&, transform_t<T>& adj_a,
                                  transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    xform_acc(adj_a, adj_ret);
    xform_acc(adj_b, adj_ret, T(-1));
}
// -a componentwise: `a[i] -= t` on a transform array is an atomic add of neg(t).
template <typename T> CUDA_CALLABLE inline transform_t<T> neg(const transform_t<T>& a) {
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) xform_component(r, i) = T(-xform_component(a, i));
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_neg(const transform_t<T>&, transform_t<T>& adj_a, const transform_t<T>& adj_ret) {
    xform_acc(adj_a, adj_ret, T(-1));
}
template <typename T> CUDA_CALLABLE inline transform_t<T> mul(const transform_t<T>& a, T s) {
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) xform_component(r, i) = T(xform_component(a, i) * s);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_mul(const transform_t<T>& a, T s, transform_t<T>& adj_a, T& adj_s,
                                  const transform_t<T>& adj_ret) {
    xform_acc(adj_a, adj_ret, s);
    for (int i = 0; i < 7; ++i) quat_acc(adj_s, xform_component(a, i) * xform_component(adj_ret, i));
}
template <typename T> CUDA_CALLABLE inline transform_t<T> mul(T s, const transform_t<T>& a) { return mul(a, s); }
template <typename T>
CUDA_CALLABLE inline void adj_mul(T s, const transform_t<T>& a, T& adj_s, transform_t<T>& adj_a,
                                  const transform_t<T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}
template <typename T> CUDA_CALLABLE inline transform_t<T> lerp(const transform_t<T>& a, const transform_t<T>& b, T t) {
    return add(mul(a, T(T(1) - t)), mul(b, t));
}
template <typename T>
CUDA_CALLABLE inline void adj_lerp(const transform_t<T>& a, const transform_t<T>& b, T t, transform_t<T>& adj_a,
                                   transform_t<T>& adj_b, T& adj_t, const transform_t<T>& adj_ret) {
    xform_acc(adj_a, adj_ret, T(T(1) - t));
    xform_acc(adj_b, adj_ret, t);
    for (int i = 0; i < 7; ++i)
        quat_acc(adj_t, (xform_component(b, i) - xform_component(a, i)) * xform_component(adj_ret, i));
}

// ---- rigid motion ---------------------------------------------------------------------------------------------

template <typename T> CUDA_CALLABLE inline vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) {
    return xform_add3(quat_rotate(t.q, x), t.p);
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                              vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    quat_acc3(adj_t.p, adj_ret);
    adj_quat_rotate(t.q, x, adj_t.q, adj_x, adj_ret);
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& v) {
    return quat_rotate(t.q, v);
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& v, transform_t<T>& adj_t,
                                               vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate(t.q, v, adj_t.q, adj_v, adj_ret);
}

// 4x4 matrices act on column vectors (x, 1) for points and (v, 0) for vectors; the last row is ignored.
template <typename T>
CUDA_CALLABLE inline vec_t<3, T> xform_mat44_apply(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, T w) {
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i)
        r.c[i] = T(m.data[i][0] * x.c[0] + m.data[i][1] * x.c[1] + m.data[i][2] * x.c[2] + m.data[i][3] * w);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_xform_mat44_apply(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, T w,
                                                mat_t<4, 4, T>& adj_m, vec_t<3, T>& adj_x, const vec_t<3, T>& g) {
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            quat_acc(adj_m.data[i][j], g.c[i] * x.c[j]);
            quat_acc(adj_x.c[j], m.data[i][j] * g.c[i]);
        }
        quat_acc(adj_m.data[i][3], g.c[i] * w);
    }
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    return xform_mat44_apply(m, x, T(1));
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                              vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    adj_xform_mat44_apply(m, x, T(1), adj_m, adj_x, adj_ret);
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& v) {
    return xform_mat44_apply(m, v, T(0));
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& v, mat_t<4, 4, T>& adj_m,
                                               vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_xform_mat44_apply(m, v, T(0), adj_m, adj_v, adj_ret);
}

// a * b applies b first: p = a.p + rotate(a.q, b.p), q = a.q * b.q.
template <typename T> CUDA_CALLABLE inline transform_t<T> transform_multiply(const transform_t<T>& a,
                                                                             const transform_t<T>& b) {
    return transform_t<T>(xform_add3(quat_rotate(a.q, b.p), a.p), mul(a.q, b.q));
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b,
                                                 transform_t<T>& adj_a,
                                                 transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    quat_acc3(adj_a.p, adj_ret.p);
    adj_quat_rotate(a.q, b.p, adj_a.q, adj_b.p, adj_ret.p);
    adj_mul(a.q, b.q, adj_a.q, adj_b.q, adj_ret.q);
}
template <typename T> CUDA_CALLABLE inline transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_multiply(a, b);
}
template <typename T>
CUDA_CALLABLE inline void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                                  transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    adj_transform_multiply(a, b, adj_a, adj_b, adj_ret);
}

// Inverse of a transform with a unit quaternion: q* and -rotate(q*, p).
template <typename T> CUDA_CALLABLE inline transform_t<T> transform_inverse(const transform_t<T>& t) {
    quat_t<T> qi = quat_inverse(t.q);
    vec_t<3, T> p = quat_rotate(qi, t.p);
    return transform_t<T>(quat_vec3<T>(-p.c[0], -p.c[1], -p.c[2]), qi);
}
template <typename T>
CUDA_CALLABLE inline void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t,
                                                const transform_t<T>& adj_ret) {
    quat_t<T> qi = quat_inverse(t.q);
    quat_t<T> adj_qi = adj_ret.q;
    vec_t<3, T> g = quat_vec3<T>(-adj_ret.p.c[0], -adj_ret.p.c[1], -adj_ret.p.c[2]);
    adj_quat_rotate(qi, t.p, adj_qi, adj_t.p, g);
    adj_quat_inverse(t.q, adj_t.q, adj_qi);
}

}  // namespace wp
