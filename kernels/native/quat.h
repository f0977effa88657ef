// Quaternions (x, y, z, w with w the real part): construction, Hamilton product, rotation, conversions, slerp,
// with their adjoints side by side. Convention: R f(A a) and void adj_f(A a, A& adj_a, const R& adj_ret), accumulating.
// float16 and bfloat16 quaternions compute through float (see the quat_ scalar helpers).
#pragma once
#include "core.h"

namespace wp {

// ---- private scalar helpers (prefixed so that they never clash with other groups' overloads) ------------------

CUDA_CALLABLE inline float32 quat_sqrt(float32 x) { return ::sqrtf(x); }
CUDA_CALLABLE inline float64 quat_sqrt(float64 x) { return ::sqrt(x); }
CUDA_CALLABLE inline float16 quat_sqrt(float16 x) { return float16(::sqrtf(float(x))); }
CUDA_CALLABLE inline bfloat16 quat_sqrt(bfloat16 x) { return bfloat16(::sqrtf(float(x))); }
CUDA_CALLABLE inline float32 quat_sin(float32 x) { return ::sinf(x); }
CUDA_CALLABLE inline float64 quat_sin(float64 x) { return ::sin(x); }
CUDA_CALLABLE inline float16 quat_sin(float16 x) { return float16(::sinf(float(x))); }
CUDA_CALLABLE inline bfloat16 quat_sin(bfloat16 x) { return bfloat16(::sinf(float(x))); }
CUDA_CALLABLE inline float32 quat_cos(float32 x) { return ::cosf(x); }
CUDA_CALLABLE inline float64 quat_cos(float64 x) { return ::cos(x); }
CUDA_CALLABLE inline float16 quat_cos(float16 x) { return float16(::cosf(float(x))); }
CUDA_CALLABLE inline bfloat16 quat_cos(bfloat16 x) { return bfloat16(::cosf(float(x))); }
CUDA_CALLABLE inline float32 quat_acos(float32 x) { return ::acosf(x); }
CUDA_CALLABLE inline float64 quat_acos(float64 x) { return ::acos(x); }
CUDA_CALLABLE inline float16 quat_acos(float16 x) { return float16(::acosf(float(x))); }
CUDA_CALLABLE inline bfloat16 quat_acos(bfloat16 x) { return bfloat16(::acosf(float(x))); }
CUDA_CALLABLE inline float32 quat_atan2(float32 y, float32 x) { return ::atan2f(y, x); }
CUDA_CALLABLE inline float64 quat_atan2(float64 y, float64 x) { return ::atan2(y, x); }
CUDA_CALLABLE inline float16 quat_atan2(float16 y, float16 x) { return float16(::atan2f(float(y), float(x))); }
CUDA_CALLABLE inline bfloat16 quat_atan2(bfloat16 y, bfloat16 x) { return bfloat16(::atan2f(float(y), float(x))); }

// a += v for any float type (float16 has no compound assignment).
template <typename T, typename U> CUDA_CALLABLE inline void quat_acc(T& a, U v) { a = T(a + v); }

template <typename T> CUDA_CALLABLE inline vec_t<3, T> quat_vec3(T x, T y, T z) {
    vec_t<3, T> v;
    v.c[0] = x; v.c[1] = y; v.c[2] = z;
    return v;
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> quat_imag(const quat_t<T>& q) {
    return quat_vec3<T>(q.x, q.y, q.z);
}
template <typename T> CUDA_CALLABLE inline T quat_dot3(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return T(a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2]);
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> quat_cross3(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return quat_vec3<T>(T(a.c[1] * b.c[2] - a.c[2] * b.c[1]), T(a.c[2] * b.c[0] - a.c[0] * b.c[2]),
                        T(a.c[0] * b.c[1] - a.c[1] * b.c[0]));
}
template <typename T> CUDA_CALLABLE inline void quat_acc3(vec_t<3, T>& a, const vec_t<3, T>& v, T s = T(1)) {
    for (int i = 0; i < 3; ++i) quat_acc(a.c[i], v.c[i] * s);
}
template <typename T> CUDA_CALLABLE inline void quat_accq(quat_t<T>& a, const quat_t<T>& v, T s = T(1)) {
    quat_acc(a.x, v.x * s); quat_acc(a.y, v.y * s); quat_acc(a.z, v.z * s); quat_acc(a.w, v.w * s);
}
// Component i of a quaternion; a negative i counts from the end, as in Python (q[-1] is w).
template <typename T> CUDA_CALLABLE inline T& quat_component(quat_t<T>& q, int i) {
    if (i < 0) i += 4;
    return i == 0 ? q.x : (i == 1 ? q.y : (i == 2 ? q.z : q.w));
}
template <typename T> CUDA_CALLABLE inline T quat_component(const quat_t<T>& q, int i) {
    if (i < 0) i += 4;
    return i == 0 ? q.x : (i == 1 ? q.y : (i == 2 ? q.z : q.w));
}

// ---- construction ---------------------------------------------------------------------------------------------

// quat() is zero, as in Warp; quat_identity() is (0, 0, 0, 1).
template <typename R> CUDA_CALLABLE inline R construct_quat() { return R(0, 0, 0, 0); }
template <typename R> CUDA_CALLABLE inline void adj_construct_quat(const R&) {}

template <typename R, typename T> CUDA_CALLABLE inline R construct_quat(T x, T y, T z, T w) { return R(x, y, z, w); }
template <typename R, typename T>
CUDA_CALLABLE inline void adj_construct_quat(T, T, T, T, T& adj_x, T& adj_y, T& adj_z, T& adj_w, const R& adj_ret) {
    quat_acc(adj_x, adj_ret.x); quat_acc(adj_y, adj_ret.y); quat_acc(adj_z, adj_ret.z); quat_acc(adj_w, adj_ret.w);
}

// From the imaginary part and the real part.
template <typename R, typename T> CUDA_CALLABLE inline R construct_quat(const vec_t<3, T>& v, T w) {
    return R(v.c[0], v.c[1], v.c[2], w);
}
template <typename R, typename T>
CUDA_CALLABLE inline void adj_construct_quat(const vec_t<3, T>&, T, vec_t<3, T>& adj_v, T& adj_w, const R& adj_ret) {
    quat_acc(adj_v.c[0], adj_ret.x); quat_acc(adj_v.c[1], adj_ret.y); quat_acc(adj_v.c[2], adj_ret.z);
    quat_acc(adj_w, adj_ret.w);
}

// Copy, converting the scalar type.
template <typename R, typename U> CUDA_CALLABLE inline R construct_quat(const quat_t<U>& q) {
    typedef decltype(R().x) T;
    return R(T(float64(q.x)), T(float64(q.y)), T(float64(q.z)), T(float64(q.w)));
}
template <typename R, typename U>
CUDA_CALLABLE inline void adj_construct_quat(const quat_t<U>&, quat_t<U>& adj_q, const R& adj_ret) {
    quat_acc(adj_q.x, U(float64(adj_ret.x))); quat_acc(adj_q.y, U(float64(adj_ret.y)));
    quat_acc(adj_q.z, U(float64(adj_ret.z))); quat_acc(adj_q.w, U(float64(adj_ret.w)));
}

template <typename R> CUDA_CALLABLE inline R quat_identity() { return R(0, 0, 0, 1); }

// ---- arithmetic -----------------------------------------------------------------------------------------------

template <typename T> CUDA_CALLABLE inline quat_t<T> add(const quat_t<T>& a, const quat_t<T>& b) {
    return quat_t<T>(T(a.x + b.x), T(a.y + b.y), T(a.z + b.z), T(a.w + b.w));
}
template <typename T>
CUDA_CALLABLE inline void adj_add(const quat_t<T>&, const quat_t<T>&, quat_t<T>& adj_a, quat_t<T>& adj_b,
                                  const quat_t<T>& adj_ret) {
    quat_accq(adj_a, adj_ret); quat_accq(adj_b, adj_ret);
}

template <typename T> CUDA_CALLABLE inline quat_t<T> sub(const quat_t<T>& a, const quat_t<T>& b) {
    return quat_t<T>(T(a.x - b.x), T(a.y - b.y), T(a.z - b.z), T(a.w - b.w));
}
template <typename T>
CUDA_CALLABLE inline void adj_sub(const quat_t<T>&, const quat_t<T>&, quat_t<T>& adj_a, quat_t<T>& adj_b,
                                  const quat_t<T>& adj_ret) {
    quat_accq(adj_a, adj_ret); quat_accq(adj_b, adj_ret, T(-1));
}

template <typename T> CUDA_CALLABLE inline quat_t<T> neg(const quat_t<T>& a) {
    return quat_t<T>(-a.x, -a.y, -a.z, -a.w);
}
template <typename T> CUDA_CALLABLE inline void adj_neg(const quat_t<T>&, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    quat_accq(adj_a, adj_ret, T(-1));
}

template <typename T> CUDA_CALLABLE inline quat_t<T> mul(const quat_t<T>& a, T s) {
    return quat_t<T>(T(a.x * s), T(a.y * s), T(a.z * s), T(a.w * s));
}
template <typename T>
CUDA_CALLABLE inline void adj_mul(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
    quat_accq(adj_a, adj_ret, s);
    quat_acc(adj_s, a.x * adj_ret.x + a.y * adj_ret.y + a.z * adj_ret.z + a.w * adj_ret.w);
}
template <typename T> CUDA_CALLABLE inline quat_t<T> mul(T s, const quat_t<T>& a) { return mul(a, s); }
template <typename T>
CUDA_CALLABLE inline void adj_mul(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <typename T> CUDA_CALLABLE inline quat_t<T> div(const quat_t<T>& a, T s) {
    return quat_t<T>(T(a.x / s), T(a.y / s), T(a.z / s), T(a.w / s));
}
template <typename T>
CUDA_CALLABLE inline void adj_div(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
    quat_accq(adj_a, adj_ret, T(T(1) / s));
    quat_acc(adj_s, -(a.x * adj_ret.x + a.y * adj_ret.y + a.z * adj_ret.z + a.w * adj_ret.w) / (s * s));
}
// s / q, component by component (as Warp).
template <typename T> CUDA_CALLABLE inline quat_t<T> div(T s, const quat_t<T>& a) {
    return quat_t<T>(T(s / a.x), T(s / a.y), T(s / a.z), T(s / a.w));
}
template <typename T>
CUDA_CALLABLE inline void adj_div(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    quat_acc(adj_s, adj_ret.x / a.x + adj_ret.y / a.y + adj_ret.z / a.z + adj_ret.w / a.w);
    quat_acc(adj_a.x, -s * adj_ret.x / (a.x * a.x)); quat_acc(adj_a.y, -s * adj_ret.y / (a.y * a.y));
    quat_acc(adj_a.z, -s * adj_ret.z / (a.z * a.z)); quat_acc(adj_a.w, -s * adj_ret.w / (a.w * a.w));
}

// Hamilton product: rotations compose right to left, rotate(a * b, v) == rotate(a, rotate(b, v)).
template <typename T> CUDA_CALLABLE inline quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
    return quat_t<T>(T(a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y),
                     T(a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x),
                     T(a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w),
                     T(a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z));
}
template <typename T> CUDA_CALLABLE inline quat_t<T> quat_inverse(const quat_t<T>& q) {
    return quat_t<T>(-q.x, -q.y, -q.z, q.w);
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_inverse(const quat_t<T>&, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    quat_acc(adj_q.x, -adj_ret.x); quat_acc(adj_q.y, -adj_ret.y); quat_acc(adj_q.z, -adj_ret.z);
    quat_acc(adj_q.w, adj_ret.w);
}
// The left and right multiplication matrices of a quaternion are orthogonal up to scale, with transposes given by the
// conjugate: adj_a = adj_ret * conj(b), adj_b = conj(a) * adj_ret.
template <typename T>
CUDA_CALLABLE inline void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                                  const quat_t<T>& adj_ret) {
    quat_accq(adj_a, mul(adj_ret, quat_inverse(b)));
    quat_accq(adj_b, mul(quat_inverse(a), adj_ret));
}

template <typename T> CUDA_CALLABLE inline T dot(const quat_t<T>& a, const quat_t<T>& b) {
    return T(a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w);
}
template <typename T>
CUDA_CALLABLE inline void adj_dot(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                                  const T& adj_ret) {
    quat_accq(adj_a, b, adj_ret); quat_accq(adj_b, a, adj_ret);
}

template <typename T> CUDA_CALLABLE inline T length_sq(const quat_t<T>& a) { return dot(a, a); }
template <typename T> CUDA_CALLABLE inline void adj_length_sq(const quat_t<T>& a, quat_t<T>& adj_a, const T& adj_ret) {
    quat_accq(adj_a, a, T(2 * adj_ret));
}

template <typename T> CUDA_CALLABLE inline T length(const quat_t<T>& a) { return quat_sqrt(dot(a, a)); }
template <typename T> CUDA_CALLABLE inline void adj_length(const quat_t<T>& a, quat_t<T>& adj_a, const T& adj_ret) {
    T l = length(a);
    if (l > T(0)) quat_accq(adj_a, a, T(adj_ret / l));
}

// Zero stays zero (no division by zero).
template <typename T> CUDA_CALLABLE inline quat_t<T> normalize(const quat_t<T>& a) {
    T l = length(a);
    return l > T(0) ? div(a, l) : quat_t<T>(0, 0, 0, 0);
}
template <typename T> CUDA_CALLABLE inline void adj_normalize(const quat_t<T>& a, quat_t<T>& adj_a,
                                                              const quat_t<T>& adj_ret) {
    T l = length(a);
    if (!(l > T(0))) return;
    quat_t<T> n = div(a, l);
    T d = dot(n, adj_ret);
    quat_accq(adj_a, sub(adj_ret, mul(n, d)), T(T(1) / l));
}

template <typename T> CUDA_CALLABLE inline quat_t<T> lerp(const quat_t<T>& a, const quat_t<T>& b, T t) {
    return add(mul(a, T(T(1) - t)), mul(b, t));
}
template <typename T>
CUDA_CALLABLE inline void adj_lerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b,
                                   T& adj_t, const quat_t<T>& adj_ret) {
    quat_accq(adj_a, adj_ret, T(T(1) - t));
    quat_accq(adj_b, adj_ret, t);
    quat_acc(adj_t, dot(sub(b, a), adj_ret));
}

// ---- components -----------------------------------------------------------------------------------------------

template <typename T, typename I> CUDA_CALLABLE inline T extract(const quat_t<T>& q, I i) {
    return quat_component(q, int(i));
}
template <typename T, typename I>
CUDA_CALLABLE inline void adj_extract(const quat_t<T>&, I i, quat_t<T>& adj_q, I&, const T& adj_ret) {
    quat_acc(quat_component(adj_q, int(i)), adj_ret);
}

// A copy of q with component i replaced by v (values are immutable in the IR).
template <typename T, typename I> CUDA_CALLABLE inline quat_t<T> assign(const quat_t<T>& q, I i, T v) {
    quat_t<T> r = q;
    quat_component(r, int(i)) = v;
    return r;
}
template <typename T, typename I>
CUDA_CALLABLE inline void adj_assign(const quat_t<T>&, I i, T, quat_t<T>& adj_q, I&, T& adj_v,
                                     const quat_t<T>& adj_ret) {
    quat_t<T> g = adj_ret;
    quat_acc(adj_v, quat_component(g, int(i)));
    quat_component(g, int(i)) = T(0);
    quat_accq(adj_q, g);
}

// ---- rotation -------------------------------------------------------------------------------------------------

// q = (axis * sin(angle / 2), cos(angle / 2)); axis is expected to be unit length.
template <typename T> CUDA_CALLABLE inline quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, T angle) {
    T h = T(angle * T(0.5));
    T s = quat_sin(h);
    return quat_t<T>(T(axis.c[0] * s), T(axis.c[1] * s), T(axis.c[2] * s), quat_cos(h));
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_from_axis_angle(const vec_t<3, T>& axis, T angle, vec_t<3, T>& adj_axis,
                                                   T& adj_angle, const quat_t<T>& adj_ret) {
    T h = T(angle * T(0.5));
    T s = quat_sin(h), c = quat_cos(h);
    vec_t<3, T> g = quat_imag(adj_ret);
    quat_acc3(adj_axis, g, s);
    quat_acc(adj_angle, T(0.5) * (c * quat_dot3(axis, g) - s * adj_ret.w));
}

// Rotation of v by q: v (2w^2 - 1) + 2w (u x v) + 2u (u . v), u the imaginary part. Equal to q v q* for unit q;
// this form (Warp's) fixes the derivative with respect to q off the unit sphere.
template <typename T>
CUDA_CALLABLE inline vec_t<3, T> quat_rotate_signed(const quat_t<T>& q, const vec_t<3, T>& v, T sign) {
    vec_t<3, T> u = quat_imag(q);
    T c = T(T(2) * q.w * q.w - T(1));
    T uv = quat_dot3(u, v);
    vec_t<3, T> uxv = quat_cross3(u, v);
    vec_t<3, T> r;
    // Warp's order of additions (v c + u (2 u.v) + 2 w (u x v)), so that rotations round as Warp's do
    T d = T(T(2) * uv);
    for (int i = 0; i < 3; ++i) r.c[i] = T(v.c[i] * c + u.c[i] * d + sign * (uxv.c[i] * q.w * T(2)));
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_rotate_signed(const quat_t<T>& q, const vec_t<3, T>& v, T sign, quat_t<T>& adj_q,
                                                 vec_t<3, T>& adj_v, const vec_t<3, T>& g) {
    vec_t<3, T> u = quat_imag(q);
    T c = T(T(2) * q.w * q.w - T(1));
    T uv = quat_dot3(u, v), ug = quat_dot3(u, g);
    // d/dv: c g + 2w sign (g x u) + 2u (u . g)
    vec_t<3, T> gxu = quat_cross3(g, u);
    for (int i = 0; i < 3; ++i) quat_acc(adj_v.c[i], c * g.c[i] + sign * T(2) * q.w * gxu.c[i] + T(2) * ug * u.c[i]);
    // d/dw: 4w (v . g) + 2 sign (u x v) . g
    quat_acc(adj_q.w, T(4) * q.w * quat_dot3(v, g) + sign * T(2) * quat_dot3(quat_cross3(u, v), g));
    // d/du: 2w sign (v x g) + 2v (u . g) + 2g (u . v)
    vec_t<3, T> vxg = quat_cross3(v, g);
    T du[3];
    for (int i = 0; i < 3; ++i) du[i] = T(sign * T(2) * q.w * vxg.c[i] + T(2) * ug * v.c[i] + T(2) * uv * g.c[i]);
    quat_acc(adj_q.x, du[0]); quat_acc(adj_q.y, du[1]); quat_acc(adj_q.z, du[2]);
}

template <typename T> CUDA_CALLABLE inline vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v) {
    return quat_rotate_signed(q, v, T(1));
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q,
                                          vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate_signed(q, v, T(1), adj_q, adj_v, adj_ret);
}
template <typename T> CUDA_CALLABLE inline vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v) {
    return quat_rotate_signed(q, v, T(-1));
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q,
                                              vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate_signed(q, v, T(-1), adj_q, adj_v, adj_ret);
}

// Column j is quat_rotate(q, e_j), so that quat_to_matrix(q) * v == quat_rotate(q, v) for any q.
template <typename T> CUDA_CALLABLE inline mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
    mat_t<3, 3, T> m;
    for (int j = 0; j < 3; ++j) {
        vec_t<3, T> e;
        e.c[j] = T(1);
        vec_t<3, T> col = quat_rotate(q, e);
        for (int i = 0; i < 3; ++i) m.data[i][j] = col.c[i];
    }
    return m;
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& adj_ret) {
    for (int j = 0; j < 3; ++j) {
        vec_t<3, T> e, adj_e, g;
        e.c[j] = T(1);
        for (int i = 0; i < 3; ++i) g.c[i] = adj_ret.data[i][j];
        adj_quat_rotate(q, e, adj_q, adj_e, g);
    }
}

// Shepperd's method on the top-left 3x3 block: four branches, each dividing by the largest of |x|, |y|, |z|, |w|.
// Branch k: s = 1 + sum_i sign[k][i] m_ii, component big[k] = sqrt(s) / 2, and each other component j is
// (m[a] + sgn * m[b]) / (2 sqrt(s)). The result is normalized (the sign is unspecified, as in Warp).
struct quat_shepperd_branch {
    int big;
    int diag_sign[3];
    int comp[3];      // the three other components
    int a[3][2];      // first matrix entry of each
    int b[3][2];      // second matrix entry of each
    int sgn[3];       // its sign
};

CUDA_CALLABLE inline quat_shepperd_branch quat_shepperd(int k) {
    // k = 3: trace branch (w largest); k = 0, 1, 2: x, y, z largest.
    quat_shepperd_branch br;
    if (k == 3) {
        br = {3, {1, 1, 1}, {0, 1, 2}, {{2, 1}, {0, 2}, {1, 0}}, {{1, 2}, {2, 0}, {0, 1}}, {-1, -1, -1}};
    } else if (k == 0) {
        br = {0, {1, -1, -1}, {1, 2, 3}, {{0, 1}, {2, 0}, {2, 1}}, {{1, 0}, {0, 2}, {1, 2}}, {1, 1, -1}};
    } else if (k == 1) {
        br = {1, {-1, 1, -1}, {2, 0, 3}, {{1, 2}, {0, 1}, {0, 2}}, {{2, 1}, {1, 0}, {2, 0}}, {1, 1, -1}};
    } else {
        br = {2, {-1, -1, 1}, {0, 1, 3}, {{2, 0}, {1, 2}, {1, 0}}, {{0, 2}, {2, 1}, {0, 1}}, {1, 1, -1}};
    }
    return br;
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline int quat_shepperd_choice(const mat_t<R, C, T>& m) {
    T tr = T(m.data[0][0] + m.data[1][1] + m.data[2][2]);
    if (tr >= T(0)) return 3;
    if (m.data[0][0] >= m.data[1][1] && m.data[0][0] >= m.data[2][2]) return 0;
    if (m.data[1][1] >= m.data[2][2]) return 1;
    return 2;
}

// The unnormalized quaternion of branch br.
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline quat_t<T> quat_shepperd_raw(const mat_t<R, C, T>& m, const quat_shepperd_branch& br) {
    T s = T(1);
    for (int i = 0; i < 3; ++i) s = T(s + T(br.diag_sign[i]) * m.data[i][i]);
    T h = quat_sqrt(s);
    T f = T(T(0.5) / h);
    quat_t<T> p(0, 0, 0, 0);
    quat_component(p, br.big) = T(T(0.5) * h);
    for (int j = 0; j < 3; ++j) {
        T d = T(m.data[br.a[j][0]][br.a[j][1]] + T(br.sgn[j]) * m.data[br.b[j][0]][br.b[j][1]]);
        quat_component(p, br.comp[j]) = T(d * f);
    }
    return p;
}

template <unsigned R, unsigned C, typename T> CUDA_CALLABLE inline quat_t<T> quat_from_matrix(const mat_t<R, C, T>& m) {
    return normalize(quat_shepperd_raw(m, quat_shepperd(quat_shepperd_choice(m))));
}
template <unsigned R, unsigned C, typename T>
CUDA_CALLABLE inline void adj_quat_from_matrix(const mat_t<R, C, T>& m, mat_t<R, C, T>& adj_m,
                                               const quat_t<T>& adj_ret) {
    quat_shepperd_branch br = quat_shepperd(quat_shepperd_choice(m));
    quat_t<T> p = quat_shepperd_raw(m, br);
    quat_t<T> adj_p(0, 0, 0, 0);
    adj_normalize(p, adj_p, adj_ret);
    T s = T(1);
    for (int i = 0; i < 3; ++i) s = T(s + T(br.diag_sign[i]) * m.data[i][i]);
    T h = quat_sqrt(s);
    T f = T(T(0.5) / h);
    T adj_f = T(0);
    for (int j = 0; j < 3; ++j) {
        T g = quat_component(adj_p, br.comp[j]);
        T d = T(m.data[br.a[j][0]][br.a[j][1]] + T(br.sgn[j]) * m.data[br.b[j][0]][br.b[j][1]]);
        quat_acc(adj_f, g * d);
        quat_acc(adj_m.data[br.a[j][0]][br.a[j][1]], g * f);
        quat_acc(adj_m.data[br.b[j][0]][br.b[j][1]], T(br.sgn[j]) * g * f);
    }
    // h = sqrt(s), f = 0.5 / h
    T adj_h = T(T(0.5) * quat_component(adj_p, br.big) - adj_f * T(0.5) / (h * h));
    T adj_s = T(adj_h * T(0.5) / h);
    for (int i = 0; i < 3; ++i) quat_acc(adj_m.data[i][i], T(br.diag_sign[i]) * adj_s);
}

// Extrinsic x-y-z rotation: qz * qy * qx with qx = rotation of `roll` about x, etc.
template <typename T> CUDA_CALLABLE inline quat_t<T> quat_axis_rotation(int axis, T angle) {
    T h = T(angle * T(0.5));
    quat_t<T> q(0, 0, 0, quat_cos(h));
    quat_component(q, axis) = quat_sin(h);
    return q;
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_axis_rotation(int axis, T angle, T& adj_angle, const quat_t<T>& g) {
    T h = T(angle * T(0.5));
    quat_acc(adj_angle, T(0.5) * (quat_cos(h) * quat_component(g, axis) - quat_sin(h) * g.w));
}
template <typename T> CUDA_CALLABLE inline quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
    return mul(mul(quat_axis_rotation(2, yaw), quat_axis_rotation(1, pitch)), quat_axis_rotation(0, roll));
}
template <typename T>
CUDA_CALLABLE inline void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw,
                                       const quat_t<T>& adj_ret) {
    quat_t<T> qx = quat_axis_rotation(0, roll), qy = quat_axis_rotation(1, pitch), qz = quat_axis_rotation(2, yaw);
    quat_t<T> zy = mul(qz, qy);
    quat_t<T> adj_zy(0, 0, 0, 0), adj_qx(0, 0, 0, 0), adj_qy(0, 0, 0, 0), adj_qz(0, 0, 0, 0);
    adj_mul(zy, qx, adj_zy, adj_qx, adj_ret);
    adj_mul(qz, qy, adj_qz, adj_qy, adj_zy);
    adj_quat_axis_rotation(0, roll, adj_roll, adj_qx);
    adj_quat_axis_rotation(1, pitch, adj_pitch, adj_qy);
    adj_quat_axis_rotation(2, yaw, adj_yaw, adj_qz);
}

// Axis and angle in [0, pi] of normalize(q); the axis is zero when the angle is zero. Two results (v0, v1).
template <typename T> struct quat_axis_angle_t {
    vec_t<3, T> v0;
    T v1;
};
template <typename T> CUDA_CALLABLE inline quat_axis_angle_t<T> quat_to_axis_angle(const quat_t<T>& q) {
    quat_t<T> n = normalize(q);
    if (n.w < T(0)) n = neg(n);
    vec_t<3, T> u = quat_imag(n);
    T s = quat_sqrt(quat_dot3(u, u));
    quat_axis_angle_t<T> r;
    r.v1 = T(T(2) * quat_atan2(s, n.w));
    // a zero rotation has no axis: zero, as Warp gives (normalize of a zero vector)
    r.v0 = vec_zero<vec_t<3, T>>();
    if (s > T(0)) {
        for (int i = 0; i < 3; ++i) r.v0.c[i] = T(u.c[i] / s);
    }
    return r;
}
// One adjoint per result (axis, angle). No gradient flows through a zero rotation, where the axis is arbitrary.
template <typename T>
CUDA_CALLABLE inline void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q, const vec_t<3, T>& adj_axis,
                                                 const T& adj_angle) {
    quat_t<T> n = normalize(q);
    T sign = T(1);
    if (n.w < T(0)) {
        n = neg(n);
        sign = T(-1);
    }
    vec_t<3, T> u = quat_imag(n);
    T s = quat_sqrt(quat_dot3(u, u));
    if (!(s > T(0))) return;
    vec_t<3, T> axis = quat_vec3<T>(T(u.c[0] / s), T(u.c[1] / s), T(u.c[2] / s));
    // angle = 2 atan2(s, w); axis = u / s; s = |u|
    T r2 = T(s * s + n.w * n.w);
    T adj_s = T(adj_angle * T(2) * n.w / r2);
    T adj_w = T(-adj_angle * T(2) * s / r2);
    T ag = quat_dot3(axis, adj_axis);
    quat_t<T> adj_n(0, 0, 0, 0);
    for (int i = 0; i < 3; ++i)
        quat_component(adj_n, i) = T((adj_axis.c[i] - axis.c[i] * ag) / s + adj_s * axis.c[i]);
    adj_n.w = adj_w;
    adj_normalize(q, adj_q, mul(adj_n, sign));
}

// Spherical interpolation along the shortest arc: a at t = 0, +-normalize(b) at t = 1 (the sign making
// dot(a, b) >= 0). Nearly parallel inputs fall back to linear interpolation.
// Spherical interpolation as Warp defines it: q0 * exp(t * log(q0^-1 q1)), through the axis and angle of the
// relative rotation. On unit quaternions this is the usual slerp (shorter arc, since the angle is in [0, pi]); off
// the unit sphere it extends the same way Warp's does, so gradients agree with Warp's in every direction.
template <typename T> CUDA_CALLABLE inline quat_t<T> quat_slerp(const quat_t<T>& q0, const quat_t<T>& q1, T t) {
    quat_axis_angle_t<T> rel = quat_to_axis_angle(mul(quat_inverse(q0), q1));
    return mul(q0, quat_from_axis_angle(rel.v0, T(t * rel.v1)));
}
// The chain rule through the same steps (each step's own adjoint), recomputing the forward values.
template <typename T>
CUDA_CALLABLE inline void adj_quat_slerp(const quat_t<T>& q0, const quat_t<T>& q1, T t, quat_t<T>& adj_q0,
                                         quat_t<T>& adj_q1, T& adj_t, const quat_t<T>& adj_ret) {
    quat_t<T> inv = quat_inverse(q0);
    quat_t<T> rel = mul(inv, q1);
    quat_axis_angle_t<T> aa = quat_to_axis_angle(rel);
    T scaled = T(t * aa.v1);
    quat_t<T> step = quat_from_axis_angle(aa.v0, scaled);
    quat_t<T> adj_step(0, 0, 0, 0), adj_rel(0, 0, 0, 0), adj_inv(0, 0, 0, 0);
    vec_t<3, T> adj_axis = vec_zero<vec_t<3, T>>();
    T adj_scaled = T(0), adj_angle = T(0);
    adj_mul(q0, step, adj_q0, adj_step, adj_ret);
    adj_quat_from_axis_angle(aa.v0, scaled, adj_axis, adj_scaled, adj_step);
    quat_acc(adj_t, T(adj_scaled * aa.v1));
    quat_acc(adj_angle, T(adj_scaled * t));
    adj_quat_to_axis_angle(rel, adj_rel, adj_axis, adj_angle);
    adj_mul(inv, q1, adj_inv, adj_q1, adj_rel);
    adj_quat_inverse(q0, adj_q0, adj_inv);
}

// ---- comparisons (no adjoint: booleans) ----------------------------------------------------------------------
template <typename T> CUDA_CALLABLE inline bool eq(const quat_t<T>& a, const quat_t<T>& b) {
    return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
}
template <typename T> CUDA_CALLABLE inline bool ne(const quat_t<T>& a, const quat_t<T>& b) { return !eq(a, b); }
template <typename T> CUDA_CALLABLE inline bool eq(const transform_t<T>& a, const transform_t<T>& b) {
    return eq(a.p, b.p) && eq(a.q, b.q);
}
template <typename T> CUDA_CALLABLE inline bool ne(const transform_t<T>& a, const transform_t<T>& b) {
    return !eq(a, b);
}

}  // namespace wp
