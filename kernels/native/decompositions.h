// Small dense decompositions (Warp's svd3, svd2, qr3, eig3), each forward function with its adjoint beside it.
//
// Every decomposition is computed in double precision whatever the input type (float16, float32, float64) and
// rounded once at the end: the iterations then converge to full float32 accuracy, and float16 inputs do not
// suffer half-precision rotations. Adjoints recompute the decomposition from A (the out-parameters may alias).
//
// Conventions (Warp 1.19's documented ones):
//   svd3: A = U diag(sigma) V^T, U and V rotations (det +1), |sigma| decreasing, sigma[0], sigma[1] >= 0 and
//         sigma[2] carrying the sign of det(A).
//   svd2: A = U diag(sigma) V^T, U and V orthogonal, sigma >= 0 decreasing.
//   qr3:  A = Q R, Q a rotation, R upper triangular with R[0][0], R[1][1] >= 0 (R[2][2] has the sign of det(A)).
//   eig3: symmetric A = Q diag(d) Q^T, Q a rotation, d increasing. Only the symmetric part (A + A^T) / 2 is read,
//         so the gradient is symmetric.
// Signs: each singular/eigen vector pair is oriented so that the largest-magnitude component of the right (V)
// or eigen (Q) vector is positive (the last one is then fixed by det +1). This makes the factors continuous in A
// away from ties, so finite differences and the adjoints agree.
//
// Adjoints: the standard formulas (A = U S V^T: dA = U [F o (U^T dU - dU^T U) S + diag(dS) + S F o (V^T dV -
// dV^T V)] V^T with F_ij = 1 / (s_j^2 - s_i^2); symmetric eigenproblem: dA = Q [diag(dd) + G o (Q^T dQ)] Q^T with
// G_ij = 1 / (d_j - d_i), symmetrised; QR: dA = (dQ + Q copyltu(R triu(dR)^T - dQ^T Q)) R^-T). Where two singular
// values (or eigenvalues) coincide to the input precision, the derivative of their vectors does not exist: the
// pair's term is dropped (singular-vector and eigenvector gradients are zero for that pair), which keeps losses
// of the values alone (traces, sums of squares) exact at repeated values. QR needs a full-rank A: a zero diagonal
// entry of R passes no gradient through its row.
#pragma once
#include "core.h"
#include "vec.h"
#include "mat.h"

namespace wp {
namespace decomp {

// Relative gap below which two singular values / eigenvalues count as equal for the adjoint, per input type.
template <typename T> struct tie_tolerance { static constexpr double value = 1e-6; };
template <> struct tie_tolerance<float64> { static constexpr double value = 1e-12; };
template <> struct tie_tolerance<float16> { static constexpr double value = 1e-3; };

template <unsigned N> struct dmat {
    double m[N][N];
};

template <unsigned N> CUDA_CALLABLE inline dmat<N> dzero() {
    dmat<N> r;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.m[i][j] = 0.0;
    return r;
}

template <unsigned N> CUDA_CALLABLE inline dmat<N> didentity() {
    dmat<N> r = dzero<N>();
    for (unsigned i = 0; i < N; ++i) r.m[i][i] = 1.0;
    return r;
}

template <unsigned N, typename T> CUDA_CALLABLE inline dmat<N> load(const mat_t<N, N, T>& a) {
    dmat<N> r;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.m[i][j] = linalg::convert<double>(a.data[i][j]);
    return r;
}

template <unsigned N, typename T> CUDA_CALLABLE inline mat_t<N, N, T> store(const dmat<N>& a) {
    mat_t<N, N, T> r;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.data[i][j] = linalg::convert<T>(a.m[i][j]);
    return r;
}

template <unsigned N, typename T> CUDA_CALLABLE inline vec_t<N, T> store_vec(const double* v) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = linalg::convert<T>(v[i]);
    return r;
}

template <unsigned N, typename T> CUDA_CALLABLE inline void load_vec(const vec_t<N, T>& v, double* out) {
    for (unsigned i = 0; i < N; ++i) out[i] = linalg::convert<double>(v.c[i]);
}

// adj_a += a (rounded to T)
template <unsigned N, typename T> CUDA_CALLABLE inline void accumulate(mat_t<N, N, T>& adj_a, const dmat<N>& a) {
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) linalg::acc(adj_a.data[i][j], linalg::convert<T>(a.m[i][j]));
}

template <unsigned N> CUDA_CALLABLE inline dmat<N> mul(const dmat<N>& a, const dmat<N>& b) {
    dmat<N> r = dzero<N>();
    for (unsigned i = 0; i < N; ++i)
        for (unsigned k = 0; k < N; ++k)
            for (unsigned j = 0; j < N; ++j) r.m[i][j] += a.m[i][k] * b.m[k][j];
    return r;
}

template <unsigned N> CUDA_CALLABLE inline dmat<N> transpose(const dmat<N>& a) {
    dmat<N> r;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.m[i][j] = a.m[j][i];
    return r;
}

CUDA_CALLABLE inline double dabs(double x) { return x < 0.0 ? -x : x; }

template <unsigned N> CUDA_CALLABLE inline double column_dot(const dmat<N>& a, unsigned i, const dmat<N>& b, unsigned j) {
    double s = 0.0;
    for (unsigned k = 0; k < N; ++k) s += a.m[k][i] * b.m[k][j];
    return s;
}

template <unsigned N> CUDA_CALLABLE inline void swap_columns(dmat<N>& a, unsigned i, unsigned j) {
    for (unsigned k = 0; k < N; ++k) {
        double t = a.m[k][i];
        a.m[k][i] = a.m[k][j];
        a.m[k][j] = t;
    }
}

template <unsigned N> CUDA_CALLABLE inline void negate_column(dmat<N>& a, unsigned j) {
    for (unsigned k = 0; k < N; ++k) a.m[k][j] = -a.m[k][j];
}

// Whether column j's largest-magnitude component (the first of equal ones) is negative: the orientation rule.
template <unsigned N> CUDA_CALLABLE inline bool leading_negative(const dmat<N>& a, unsigned j) {
    unsigned best = 0;
    for (unsigned k = 1; k < N; ++k)
        if (dabs(a.m[k][j]) > dabs(a.m[best][j])) best = k;
    return a.m[best][j] < 0.0;
}

// Column 2 of a 3x3 matrix := column 0 x column 1 (makes an orthonormal frame right-handed).
CUDA_CALLABLE inline void complete_right_handed(dmat<3>& a) {
    a.m[0][2] = a.m[1][0] * a.m[2][1] - a.m[2][0] * a.m[1][1];
    a.m[1][2] = a.m[2][0] * a.m[0][1] - a.m[0][0] * a.m[2][1];
    a.m[2][2] = a.m[0][0] * a.m[1][1] - a.m[1][0] * a.m[0][1];
}

// Orthonormalise column j of `a` against columns 0..j-1 (assumed orthonormal), twice for accuracy; when nothing
// is left (norm <= floor), any unit vector orthogonal to them. Returns the norm before normalising.
template <unsigned N> CUDA_CALLABLE inline double orthonormalize_column(dmat<N>& a, unsigned j, double floor) {
    for (int pass = 0; pass < 2; ++pass)
        for (unsigned i = 0; i < j; ++i) {
            double p = column_dot(a, i, a, j);
            for (unsigned k = 0; k < N; ++k) a.m[k][j] -= p * a.m[k][i];
        }
    double norm = ::sqrt(column_dot(a, j, a, j));
    if (norm > floor) {
        for (unsigned k = 0; k < N; ++k) a.m[k][j] /= norm;
        return norm;
    }
    // a fallback direction: the unit axis least aligned with the earlier columns
    unsigned axis = 0;
    double best = 2.0;
    for (unsigned e = 0; e < N; ++e) {
        double weight = 0.0;
        for (unsigned i = 0; i < j; ++i) weight += a.m[e][i] * a.m[e][i];
        if (weight < best) {
            best = weight;
            axis = e;
        }
    }
    for (unsigned k = 0; k < N; ++k) a.m[k][j] = k == axis ? 1.0 : 0.0;
    for (int pass = 0; pass < 2; ++pass)
        for (unsigned i = 0; i < j; ++i) {
            double p = column_dot(a, i, a, j);
            for (unsigned k = 0; k < N; ++k) a.m[k][j] -= p * a.m[k][i];
        }
    double n2 = ::sqrt(column_dot(a, j, a, j));
    for (unsigned k = 0; k < N; ++k) a.m[k][j] /= n2;
    return norm;
}

// Rotation (c, s) that zeroes the off-diagonal entry of the symmetric 2x2 [[app, apq], [apq, aqq]]: the smaller
// of the two angles (|angle| <= pi/4), as in the classical Jacobi method.
CUDA_CALLABLE inline void jacobi_rotation(double app, double aqq, double apq, double& c, double& s) {
    double theta = (aqq - app) / (2.0 * apq);
    double t;
    if (dabs(theta) > 1e150) {
        t = 0.5 / theta;
    } else {
        t = 1.0 / (dabs(theta) + ::sqrt(theta * theta + 1.0));
        if (theta < 0.0) t = -t;
    }
    c = 1.0 / ::sqrt(t * t + 1.0);
    s = t * c;
}

// One-sided (Hestenes) Jacobi SVD of a square matrix: A = U diag(s) V^T with s >= 0 decreasing, U and V
// orthogonal, pairs oriented by V's leading component. Columns of U for zero singular values complete the basis.
template <unsigned N> CUDA_CALLABLE inline void svd_jacobi(const dmat<N>& a, dmat<N>& u, double* s, dmat<N>& v) {
    dmat<N> b = a;
    v = didentity<N>();
    for (int sweep = 0; sweep < 40; ++sweep) {
        bool rotated = false;
        for (unsigned p = 0; p + 1 < N; ++p)
            for (unsigned q = p + 1; q < N; ++q) {
                double alpha = column_dot(b, p, b, p), beta = column_dot(b, q, b, q), gamma = column_dot(b, p, b, q);
                if (!(dabs(gamma) > 1e-15 * ::sqrt(alpha * beta))) continue;  // orthogonal (or NaN): skip
                rotated = true;
                double c, sn;
                jacobi_rotation(alpha, beta, gamma, c, sn);
                for (unsigned k = 0; k < N; ++k) {
                    double bp = b.m[k][p], bq = b.m[k][q];
                    b.m[k][p] = c * bp - sn * bq;
                    b.m[k][q] = sn * bp + c * bq;
                    double vp = v.m[k][p], vq = v.m[k][q];
                    v.m[k][p] = c * vp - sn * vq;
                    v.m[k][q] = sn * vp + c * vq;
                }
            }
        if (!rotated) break;
    }
    for (unsigned j = 0; j < N; ++j) s[j] = ::sqrt(column_dot(b, j, b, j));
    for (unsigned i = 1; i < N; ++i)  // insertion sort, decreasing
        for (unsigned j = i; j > 0 && s[j] > s[j - 1]; --j) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
            swap_columns(b, j, j - 1);
            swap_columns(v, j, j - 1);
        }
    for (unsigned j = 0; j < N; ++j)
        if (leading_negative(v, j)) {
            negate_column(v, j);
            negate_column(b, j);
        }
    u = b;
    double floor = 1e-13 * s[0] > 1e-300 ? 1e-13 * s[0] : 1e-300;
    for (unsigned j = 0; j < N; ++j) orthonormalize_column(u, j, floor);
}

// Symmetric 3x3 eigenproblem by cyclic Jacobi rotations of the symmetric part of `a`: a = q diag(d) q^T,
// d increasing, q a rotation with columns oriented by their leading component.
CUDA_CALLABLE inline void eig_jacobi(const dmat<3>& a, dmat<3>& q, double* d) {
    dmat<3> s;
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) s.m[i][j] = 0.5 * (a.m[i][j] + a.m[j][i]);
    q = didentity<3>();
    for (int sweep = 0; sweep < 40; ++sweep) {
        double off = s.m[0][1] * s.m[0][1] + s.m[0][2] * s.m[0][2] + s.m[1][2] * s.m[1][2];
        double diag = s.m[0][0] * s.m[0][0] + s.m[1][1] * s.m[1][1] + s.m[2][2] * s.m[2][2];
        if (!(off > 1e-32 * (diag + off))) break;  // converged (or NaN)
        for (unsigned p = 0; p < 2; ++p)
            for (unsigned r = p + 1; r < 3; ++r) {
                if (s.m[p][r] == 0.0) continue;
                double c, sn;
                jacobi_rotation(s.m[p][p], s.m[r][r], s.m[p][r], c, sn);
                dmat<3> j = didentity<3>();
                j.m[p][p] = c;
                j.m[r][r] = c;
                j.m[p][r] = sn;
                j.m[r][p] = -sn;
                s = mul(transpose(j), mul(s, j));
                s.m[p][r] = s.m[r][p] = 0.0;
                q = mul(q, j);
            }
    }
    for (unsigned i = 0; i < 3; ++i) d[i] = s.m[i][i];
    for (unsigned i = 1; i < 3; ++i)  // insertion sort, increasing
        for (unsigned j = i; j > 0 && d[j] < d[j - 1]; --j) {
            double t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
            swap_columns(q, j, j - 1);
        }
    for (unsigned j = 0; j < 2; ++j)
        if (leading_negative(q, j)) negate_column(q, j);
    orthonormalize_column(q, 1, 0.5);  // re-orthogonalise against rounding before the cross product
    complete_right_handed(q);
}

// svd3's factors: the Jacobi SVD made proper (U, V rotations), the sign of det(A) moved into s[2].
CUDA_CALLABLE inline void svd3_factors(const dmat<3>& a, dmat<3>& u, double* s, dmat<3>& v) {
    svd_jacobi<3>(a, u, s, v);
    complete_right_handed(u);
    complete_right_handed(v);
    double av[3];
    for (unsigned k = 0; k < 3; ++k) av[k] = a.m[k][0] * v.m[0][2] + a.m[k][1] * v.m[1][2] + a.m[k][2] * v.m[2][2];
    s[2] = u.m[0][2] * av[0] + u.m[1][2] * av[1] + u.m[2][2] * av[2];
}

// Gram-Schmidt QR with a proper Q: columns 0, 1 of Q from those of A (R[0][0], R[1][1] >= 0), column 2 their
// cross product; R = Q^T A, upper triangle.
CUDA_CALLABLE inline void qr3_factors(const dmat<3>& a, dmat<3>& q, dmat<3>& r) {
    double scale = 0.0;
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) scale = dabs(a.m[i][j]) > scale ? dabs(a.m[i][j]) : scale;
    double floor = 1e-13 * scale > 1e-300 ? 1e-13 * scale : 1e-300;
    q = a;
    orthonormalize_column(q, 0, floor);
    orthonormalize_column(q, 1, floor);
    complete_right_handed(q);
    r = dzero<3>();
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = i; j < 3; ++j) r.m[i][j] = column_dot(q, i, a, j);
}

// The adjoint of A = U S V^T (any signs in S) given the adjoints of U, s, V; pairs with |s_i^2 - s_j^2| within
// the tie tolerance pass no singular-vector gradient.
template <unsigned N>
CUDA_CALLABLE inline dmat<N> svd_adjoint(const dmat<N>& u, const double* s, const dmat<N>& v, const dmat<N>& adj_u,
                                         const double* adj_s, const dmat<N>& adj_v, double tie) {
    dmat<N> gu = mul(transpose(u), adj_u), gv = mul(transpose(v), adj_v), x = dzero<N>();
    double smax = 0.0;
    for (unsigned i = 0; i < N; ++i) smax = dabs(s[i]) > smax ? dabs(s[i]) : smax;
    for (unsigned i = 0; i < N; ++i) {
        x.m[i][i] = adj_s[i];
        for (unsigned j = 0; j < N; ++j) {
            if (i == j) continue;
            double gap = s[j] * s[j] - s[i] * s[i];
            if (!(dabs(gap) > tie * smax * smax)) continue;
            x.m[i][j] = (s[j] * (gu.m[i][j] - gu.m[j][i]) + s[i] * (gv.m[i][j] - gv.m[j][i])) / gap;
        }
    }
    return mul(u, mul(x, transpose(v)));
}

}  // namespace decomp

// ------------------------------------------------------------------------------------------------------------
// svd3

template <typename T> struct svd3_result_t {
    mat_t<3, 3, T> v0;
    vec_t<3, T> v1;
    mat_t<3, 3, T> v2;
};

template <typename T>
CUDA_CALLABLE inline void svd3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& u, vec_t<3, T>& sigma, mat_t<3, 3, T>& v) {
    decomp::dmat<3> du, dv;
    double s[3];
    decomp::svd3_factors(decomp::load(a), du, s, dv);
    u = decomp::store<3, T>(du);
    sigma = decomp::store_vec<3, T>(s);
    v = decomp::store<3, T>(dv);
}

template <typename T>
CUDA_CALLABLE inline void adj_svd3_impl(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const mat_t<3, 3, T>& adj_u,
                                        const vec_t<3, T>& adj_sigma, const mat_t<3, 3, T>& adj_v) {
    decomp::dmat<3> du, dv;
    double s[3], as[3];
    decomp::svd3_factors(decomp::load(a), du, s, dv);
    decomp::load_vec(adj_sigma, as);
    decomp::accumulate(adj_a, decomp::svd_adjoint<3>(du, s, dv, decomp::load(adj_u), as, decomp::load(adj_v),
                                                     decomp::tie_tolerance<T>::value));
}

// Out-parameter form: the incoming values of u, sigma, v are ignored, so their adjoints get nothing.
template <typename T>
CUDA_CALLABLE inline void adj_svd3(const mat_t<3, 3, T>& a, const mat_t<3, 3, T>&, const vec_t<3, T>&,
                                   const mat_t<3, 3, T>&, mat_t<3, 3, T>& adj_a, mat_t<3, 3, T>&, vec_t<3, T>&,
                                   mat_t<3, 3, T>&, const mat_t<3, 3, T>& adj_u, const vec_t<3, T>& adj_sigma,
                                   const mat_t<3, 3, T>& adj_v) {
    adj_svd3_impl(a, adj_a, adj_u, adj_sigma, adj_v);
}

template <typename T> CUDA_CALLABLE inline svd3_result_t<T> svd3(const mat_t<3, 3, T>& a) {
    svd3_result_t<T> r;
    svd3(a, r.v0, r.v1, r.v2);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_svd3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const mat_t<3, 3, T>& adj_u,
                                   const vec_t<3, T>& adj_sigma, const mat_t<3, 3, T>& adj_v) {
    adj_svd3_impl(a, adj_a, adj_u, adj_sigma, adj_v);
}

// ------------------------------------------------------------------------------------------------------------
// svd2

template <typename T> struct svd2_result_t {
    mat_t<2, 2, T> v0;
    vec_t<2, T> v1;
    mat_t<2, 2, T> v2;
};

template <typename T>
CUDA_CALLABLE inline void svd2(const mat_t<2, 2, T>& a, mat_t<2, 2, T>& u, vec_t<2, T>& sigma, mat_t<2, 2, T>& v) {
    decomp::dmat<2> du, dv;
    double s[2];
    decomp::svd_jacobi<2>(decomp::load(a), du, s, dv);
    u = decomp::store<2, T>(du);
    sigma = decomp::store_vec<2, T>(s);
    v = decomp::store<2, T>(dv);
}

template <typename T>
CUDA_CALLABLE inline void adj_svd2_impl(const mat_t<2, 2, T>& a, mat_t<2, 2, T>& adj_a, const mat_t<2, 2, T>& adj_u,
                                        const vec_t<2, T>& adj_sigma, const mat_t<2, 2, T>& adj_v) {
    decomp::dmat<2> du, dv;
    double s[2], as[2];
    decomp::svd_jacobi<2>(decomp::load(a), du, s, dv);
    decomp::load_vec(adj_sigma, as);
    decomp::accumulate(adj_a, decomp::svd_adjoint<2>(du, s, dv, decomp::load(adj_u), as, decomp::load(adj_v),
                                                     decomp::tie_tolerance<T>::value));
}

template <typename T>
CUDA_CALLABLE inline void adj_svd2(const mat_t<2, 2, T>& a, const mat_t<2, 2, T>&, const vec_t<2, T>&,
                                   const mat_t<2, 2, T>&, mat_t<2, 2, T>& adj_a, mat_t<2, 2, T>&, vec_t<2, T>&,
                                   mat_t<2, 2, T>&, const mat_t<2, 2, T>& adj_u, const vec_t<2, T>& adj_sigma,
                                   const mat_t<2, 2, T>& adj_v) {
    adj_svd2_impl(a, adj_a, adj_u, adj_sigma, adj_v);
}

template <typename T> CUDA_CALLABLE inline svd2_result_t<T> svd2(const mat_t<2, 2, T>& a) {
    svd2_result_t<T> r;
    svd2(a, r.v0, r.v1, r.v2);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_svd2(const mat_t<2, 2, T>& a, mat_t<2, 2, T>& adj_a, const mat_t<2, 2, T>& adj_u,
                                   const vec_t<2, T>& adj_sigma, const mat_t<2, 2, T>& adj_v) {
    adj_svd2_impl(a, adj_a, adj_u, adj_sigma, adj_v);
}

// ------------------------------------------------------------------------------------------------------------
// qr3

template <typename T> struct qr3_result_t {
    mat_t<3, 3, T> v0;
    mat_t<3, 3, T> v1;
};

template <typename T> CUDA_CALLABLE inline void qr3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& q, mat_t<3, 3, T>& r) {
    decomp::dmat<3> dq, dr;
    decomp::qr3_factors(decomp::load(a), dq, dr);
    q = decomp::store<3, T>(dq);
    r = decomp::store<3, T>(dr);
}

template <typename T>
CUDA_CALLABLE inline void adj_qr3_impl(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const mat_t<3, 3, T>& adj_q,
                                       const mat_t<3, 3, T>& adj_r) {
    decomp::dmat<3> q, r, aq = decomp::load(adj_q), ar = decomp::load(adj_r);
    decomp::qr3_factors(decomp::load(a), q, r);
    for (unsigned i = 1; i < 3; ++i)
        for (unsigned j = 0; j < i; ++j) ar.m[i][j] = 0.0;  // R's lower triangle is constant zero
    decomp::dmat<3> m = decomp::mul(r, decomp::transpose(ar)), qtq = decomp::mul(decomp::transpose(aq), q);
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) m.m[i][j] -= qtq.m[i][j];
    for (unsigned i = 0; i < 3; ++i)  // copyltu: the lower triangle mirrored into the upper
        for (unsigned j = i + 1; j < 3; ++j) m.m[i][j] = m.m[j][i];
    decomp::dmat<3> b = decomp::mul(q, m);
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) b.m[i][j] += aq.m[i][j];
    // adj_A = B R^-T: solve X R^T = B, i.e. sum_{k >= j} X_ik R_jk = B_ij, by back substitution over columns
    decomp::dmat<3> x = decomp::dzero<3>();
    for (unsigned i = 0; i < 3; ++i)
        for (int j = 2; j >= 0; --j) {
            double t = b.m[i][j];
            for (unsigned k = j + 1; k < 3; ++k) t -= x.m[i][k] * r.m[j][k];
            x.m[i][j] = r.m[j][j] != 0.0 ? t / r.m[j][j] : 0.0;
        }
    decomp::accumulate(adj_a, x);
}

template <typename T>
CUDA_CALLABLE inline void adj_qr3(const mat_t<3, 3, T>& a, const mat_t<3, 3, T>&, const mat_t<3, 3, T>&,
                                  mat_t<3, 3, T>& adj_a, mat_t<3, 3, T>&, mat_t<3, 3, T>&, const mat_t<3, 3, T>& adj_q,
                                  const mat_t<3, 3, T>& adj_r) {
    adj_qr3_impl(a, adj_a, adj_q, adj_r);
}

template <typename T> CUDA_CALLABLE inline qr3_result_t<T> qr3(const mat_t<3, 3, T>& a) {
    qr3_result_t<T> r;
    qr3(a, r.v0, r.v1);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_qr3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const mat_t<3, 3, T>& adj_q,
                                  const mat_t<3, 3, T>& adj_r) {
    adj_qr3_impl(a, adj_a, adj_q, adj_r);
}

// ------------------------------------------------------------------------------------------------------------
// eig3

template <typename T> struct eig3_result_t {
    mat_t<3, 3, T> v0;
    vec_t<3, T> v1;
};

template <typename T> CUDA_CALLABLE inline void eig3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& q, vec_t<3, T>& d) {
    decomp::dmat<3> dq;
    double dd[3];
    decomp::eig_jacobi(decomp::load(a), dq, dd);
    q = decomp::store<3, T>(dq);
    d = decomp::store_vec<3, T>(dd);
}

template <typename T>
CUDA_CALLABLE inline void adj_eig3_impl(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const mat_t<3, 3, T>& adj_q,
                                        const vec_t<3, T>& adj_d) {
    decomp::dmat<3> q;
    double d[3], ad[3];
    decomp::eig_jacobi(decomp::load(a), q, d);
    decomp::load_vec(adj_d, ad);
    decomp::dmat<3> g = decomp::mul(decomp::transpose(q), decomp::load(adj_q)), x = decomp::dzero<3>();
    double dmax = 0.0;
    for (unsigned i = 0; i < 3; ++i) dmax = decomp::dabs(d[i]) > dmax ? decomp::dabs(d[i]) : dmax;
    double tie = decomp::tie_tolerance<T>::value * dmax;
    for (unsigned i = 0; i < 3; ++i) {
        x.m[i][i] = ad[i];
        for (unsigned j = 0; j < 3; ++j) {
            double gap = d[j] - d[i];
            if (i != j && decomp::dabs(gap) > tie) x.m[i][j] = g.m[i][j] / gap;
        }
    }
    decomp::dmat<3> full = decomp::mul(q, decomp::mul(x, decomp::transpose(q))), sym;
    for (unsigned i = 0; i < 3; ++i)
        for (unsigned j = 0; j < 3; ++j) sym.m[i][j] = 0.5 * (full.m[i][j] + full.m[j][i]);
    decomp::accumulate(adj_a, sym);
}

template <typename T>
CUDA_CALLABLE inline void adj_eig3(const mat_t<3, 3, T>& a, const mat_t<3, 3, T>&, const vec_t<3, T>&,
                                   mat_t<3, 3, T>& adj_a, mat_t<3, 3, T>&, vec_t<3, T>&, const mat_t<3, 3, T>& adj_q,
                                   const vec_t<3, T>& adj_d) {
    adj_eig3_impl(a, adj_a, adj_q, adj_d);
}

template <typename T> CUDA_CALLABLE inline eig3_result_t<T> eig3(const mat_t<3, 3, T>& a) {
    eig3_result_t<T> r;
    eig3(a, r.v0, r.v1);
    return r;
}
template <typename T>
CUDA_CALLABLE inline void adj_eig3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const mat_t<3, 3, T>& adj_q,
                                   const vec_t<3, T>& adj_d) {
    adj_eig3_impl(a, adj_a, adj_q, adj_d);
}

}  // namespace wp
