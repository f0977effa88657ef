"""Matrix decompositions svd3, svd2, qr3, eig3: factorisation, orthogonality, Warp's ordering and sign conventions,
both call forms, and gradients (tape vs central differences) in float64, plus float32 and float16 forward."""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

M33D, V3D, M22D, V2D = wp.mat33d, wp.vec3d, wp.mat22d, wp.vec2d


# ---------------------------------------------------------------------------------------------------------------
# Kernels: each writes every output of a decomposition of a[i] (out-parameter or result form).


@wp.kernel
def svd3_out(a: wp.array(dtype=M33D), u: wp.array(dtype=M33D), s: wp.array(dtype=V3D), v: wp.array(dtype=M33D)):
    i = wp.tid()
    U = M33D()
    sigma = V3D()
    V = M33D()
    wp.svd3(a[i], U, sigma, V)
    u[i] = U
    s[i] = sigma
    v[i] = V


@wp.kernel
def svd3_ret(a: wp.array(dtype=M33D), u: wp.array(dtype=M33D), s: wp.array(dtype=V3D), v: wp.array(dtype=M33D)):
    i = wp.tid()
    U, sigma, V = wp.svd3(a[i])
    u[i] = U
    s[i] = sigma
    v[i] = V


@wp.kernel
def svd2_out(a: wp.array(dtype=M22D), u: wp.array(dtype=M22D), s: wp.array(dtype=V2D), v: wp.array(dtype=M22D)):
    i = wp.tid()
    U = M22D()
    sigma = V2D()
    V = M22D()
    wp.svd2(a[i], U, sigma, V)
    u[i] = U
    s[i] = sigma
    v[i] = V


@wp.kernel
def svd2_ret(a: wp.array(dtype=M22D), u: wp.array(dtype=M22D), s: wp.array(dtype=V2D), v: wp.array(dtype=M22D)):
    i = wp.tid()
    U, sigma, V = wp.svd2(a[i])
    u[i] = U
    s[i] = sigma
    v[i] = V


@wp.kernel
def qr3_out(a: wp.array(dtype=M33D), q: wp.array(dtype=M33D), r: wp.array(dtype=M33D)):
    i = wp.tid()
    Q = M33D()
    R = M33D()
    wp.qr3(a[i], Q, R)
    q[i] = Q
    r[i] = R


@wp.kernel
def qr3_ret(a: wp.array(dtype=M33D), q: wp.array(dtype=M33D), r: wp.array(dtype=M33D)):
    i = wp.tid()
    Q, R = wp.qr3(a[i])
    q[i] = Q
    r[i] = R


@wp.kernel
def eig3_out(a: wp.array(dtype=M33D), q: wp.array(dtype=M33D), d: wp.array(dtype=V3D)):
    i = wp.tid()
    Q = M33D()
    D = V3D()
    wp.eig3(a[i] + wp.transpose(a[i]), Q, D)
    q[i] = Q
    d[i] = D


@wp.kernel
def eig3_ret(a: wp.array(dtype=M33D), q: wp.array(dtype=M33D), d: wp.array(dtype=V3D)):
    i = wp.tid()
    Q, D = wp.eig3(a[i] + wp.transpose(a[i]))
    q[i] = Q
    d[i] = D


@wp.kernel
def eigenvalue_losses(a: wp.array(dtype=M33D), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    Q, d = wp.eig3(a[i])
    out[3 * i] = d[0] + d[1] + d[2]
    out[3 * i + 1] = wp.dot(d, d)
    out[3 * i + 2] = d[0] * d[1] * d[2]


@wp.kernel
def singular_value_losses(a: wp.array(dtype=M33D), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    U, s, V = wp.svd3(a[i])
    out[2 * i] = wp.dot(s, s)
    out[2 * i + 1] = s[0] * s[1] * s[2]


@wp.kernel
def svd3_into_computed_value(a: wp.array(dtype=M33D), b: wp.array(dtype=M33D), out: wp.array(dtype=wp.float64)):
    # U starts as a value computed from b; svd3 overwrites it, so b must get no gradient through it
    i = wp.tid()
    U = b[i] * wp.float64(2.0)
    sigma = V3D()
    V = M33D()
    wp.svd3(a[i], U, sigma, V)
    out[i] = wp.ddot(U, U * wp.float64(3.0)) + sigma[0]


@wp.kernel
def decompositions_f32(a: wp.array(dtype=wp.mat33), b: wp.array(dtype=wp.mat22), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    U, s, V = wp.svd3(a[i])
    U2, s2, V2 = wp.svd2(b[i])
    Q, R = wp.qr3(a[i])
    E, d = wp.eig3(a[i] + wp.transpose(a[i]))
    out[4 * i] = wp.length(wp.get_diag(U * wp.diag(s) * wp.transpose(V) - a[i]))
    out[4 * i + 1] = wp.ddot(U2 * wp.diag(s2) * wp.transpose(V2) - b[i], U2 * wp.diag(s2) * wp.transpose(V2) - b[i])
    out[4 * i + 2] = wp.ddot(Q * R - a[i], Q * R - a[i])
    out[4 * i + 3] = wp.ddot(E * wp.diag(d) * wp.transpose(E) - a[i] - wp.transpose(a[i]),
                             E * wp.diag(d) * wp.transpose(E) - a[i] - wp.transpose(a[i]))


@wp.kernel
def decompositions_f16(a: wp.array(dtype=wp.mat33h), u: wp.array(dtype=wp.mat33h), s: wp.array(dtype=wp.vec3h),
                       v: wp.array(dtype=wp.mat33h), q: wp.array(dtype=wp.mat33h), d: wp.array(dtype=wp.vec3h)):
    i = wp.tid()
    U = wp.mat33h()
    sigma = wp.vec3h()
    V = wp.mat33h()
    wp.svd3(a[i], U, sigma, V)
    u[i] = U
    s[i] = sigma
    v[i] = V
    Q, D = wp.eig3(a[i] + wp.transpose(a[i]))
    q[i] = Q
    d[i] = D


# ---------------------------------------------------------------------------------------------------------------
# Helpers

SVD3_KERNELS = {"out": svd3_out, "ret": svd3_ret}
SVD2_KERNELS = {"out": svd2_out, "ret": svd2_ret}
QR3_KERNELS = {"out": qr3_out, "ret": qr3_ret}
EIG3_KERNELS = {"out": eig3_out, "ret": eig3_ret}


def _matrices(n, seed=0):
    """Random 3x3 test matrices with special cases appended: negative determinant, rank 2, rank 1, zero,
    identity, repeated singular values."""
    rng = np.random.default_rng(seed)
    rand = rng.uniform(-1.0, 1.0, (n, 3, 3)) + np.eye(3)
    special = [np.diag([1.0, 2.0, -3.0]), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
               np.outer([1.0, 2.0, 2.0], [0.0, 3.0, 4.0]), np.zeros((3, 3)), np.eye(3), np.diag([2.0, 2.0, 1.0]),
               -np.eye(3)]
    return np.concatenate([rand, np.array(special)], axis=0)


def _launch(kernel, a_np, dtype, out_types):
    a = wp.array(a_np, dtype=dtype)
    outs = [wp.zeros(len(a_np), dtype=t) for t in out_types]
    wp.launch(kernel, dim=len(a_np), inputs=[a], outputs=outs)
    return [o.numpy() for o in outs]


def _assert_orthogonal(m, tol):
    n = m.shape[-1]
    np.testing.assert_allclose(m @ np.swapaxes(m, -1, -2), np.broadcast_to(np.eye(n), m.shape), atol=tol)


# ---------------------------------------------------------------------------------------------------------------
# Forward: factorisation and conventions


@pytest.mark.parametrize("form", ["out", "ret"])
def test_svd3_factorises_with_rotations_and_signed_last_value(form):
    a = _matrices(12)
    u, s, v = _launch(SVD3_KERNELS[form], a, M33D, (M33D, V3D, M33D))
    np.testing.assert_allclose(u @ (s[:, :, None] * np.swapaxes(v, 1, 2)), a, atol=1e-12)
    _assert_orthogonal(u, 1e-12)
    _assert_orthogonal(v, 1e-12)
    np.testing.assert_allclose(np.linalg.det(u), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(v), 1.0, atol=1e-12)
    assert np.all(s[:, :2] >= 0.0)
    assert np.all(s[:, 0] >= s[:, 1]) and np.all(s[:, 1] >= np.abs(s[:, 2]) - 1e-12)
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(a, compute_uv=False), atol=1e-12)
    det = np.linalg.det(a)
    nonsingular = np.abs(det) > 1e-9
    assert np.all(np.sign(s[nonsingular, 2]) == np.sign(det[nonsingular]))


@pytest.mark.parametrize("form", ["out", "ret"])
def test_svd2_factorises_with_nonnegative_decreasing_values(form):
    rng = np.random.default_rng(1)
    special = [np.zeros((2, 2)), np.eye(2), 5.0 * np.eye(2), [[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 2.0]],
               [[1.0, 1.0], [-1.0, -1.0]], [[3.0, 0.0], [4.0, 5.0]], [[0.0, 1.0], [1.0, 0.0]]]
    a = np.concatenate([rng.uniform(-1.0, 1.0, (16, 2, 2)) + np.eye(2), np.array(special, dtype=float)])
    u, s, v = _launch(SVD2_KERNELS[form], a, M22D, (M22D, V2D, M22D))
    np.testing.assert_allclose(u @ (s[:, :, None] * np.swapaxes(v, 1, 2)), a, atol=1e-12)
    _assert_orthogonal(u, 1e-12)
    _assert_orthogonal(v, 1e-12)
    assert np.all(s >= 0.0) and np.all(s[:, 0] >= s[:, 1])
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)


@pytest.mark.parametrize("form", ["out", "ret"])
def test_qr3_factorises_with_rotation_and_upper_triangle(form):
    a = _matrices(12, seed=2)
    q, r = _launch(QR3_KERNELS[form], a, M33D, (M33D, M33D))
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    _assert_orthogonal(q, 1e-12)
    np.testing.assert_allclose(np.linalg.det(q), 1.0, atol=1e-12)
    assert np.all(r[:, 1, 0] == 0.0) and np.all(r[:, 2, :2] == 0.0)
    assert np.all(r[:, 0, 0] >= 0.0) and np.all(r[:, 1, 1] >= 0.0)
    det = np.linalg.det(a)
    nonsingular = np.abs(det) > 1e-9
    assert np.all(np.sign(r[nonsingular, 2, 2]) == np.sign(det[nonsingular]))


@pytest.mark.parametrize("form", ["out", "ret"])
def test_eig3_diagonalises_with_rotation_and_increasing_values(form):
    a = _matrices(12, seed=3)
    sym = a + np.swapaxes(a, 1, 2)
    q, d = _launch(EIG3_KERNELS[form], a, M33D, (M33D, V3D))
    np.testing.assert_allclose(q @ (d[:, :, None] * np.swapaxes(q, 1, 2)), sym, atol=1e-12)
    _assert_orthogonal(q, 1e-12)
    np.testing.assert_allclose(np.linalg.det(q), 1.0, atol=1e-12)
    np.testing.assert_allclose(d, np.linalg.eigvalsh(sym), atol=1e-12)


def test_eig3_reads_the_symmetric_part():
    rng = np.random.default_rng(4)
    a = rng.uniform(-1.0, 1.0, (4, 3, 3))
    q, d = _launch(eig3_ret, a, M33D, (M33D, V3D))  # eig3 of a + a^T
    q2, d2 = _launch(eig3_ret, 0.5 * (a + np.swapaxes(a, 1, 2)), M33D, (M33D, V3D))
    np.testing.assert_allclose(d, d2, atol=1e-12)
    np.testing.assert_allclose(q, q2, atol=1e-12)


def test_float32_decompositions_reconstruct():
    rng = np.random.default_rng(5)
    a = rng.uniform(-1.0, 1.0, (8, 3, 3)) + np.eye(3)
    b = rng.uniform(-1.0, 1.0, (8, 2, 2)) + np.eye(2)
    out = wp.zeros(32, dtype=wp.float32)
    wp.launch(decompositions_f32, dim=8, inputs=[wp.array(a, dtype=wp.mat33), wp.array(b, dtype=wp.mat22)],
              outputs=[out])
    assert np.all(out.numpy() < 1e-6)  # float32 rounding of the factors


def test_float16_decompositions_reconstruct():
    rng = np.random.default_rng(6)
    a = (rng.uniform(-1.0, 1.0, (4, 3, 3)) + np.eye(3)).astype(np.float16)
    outs = [wp.zeros(4, dtype=t) for t in (wp.mat33h, wp.vec3h, wp.mat33h, wp.mat33h, wp.vec3h)]
    wp.launch(decompositions_f16, dim=4, inputs=[wp.array(a, dtype=wp.mat33h)], outputs=outs)
    u, s, v, q, d = (o.numpy().astype(np.float64) for o in outs)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(u @ (s[:, :, None] * np.swapaxes(v, 1, 2)), a64, atol=1e-2)
    sym = a64 + np.swapaxes(a64, 1, 2)
    np.testing.assert_allclose(q @ (d[:, :, None] * np.swapaxes(q, 1, 2)), sym, atol=2e-2)


# ---------------------------------------------------------------------------------------------------------------
# Gradients: every output weighted (autodiff.gradcheck) on well-conditioned matrices


def _well_conditioned(n, size, seed):
    rng = np.random.default_rng(seed)
    # distinct singular values / eigenvalues: a diagonal spread plus a small random part
    return rng.uniform(-0.3, 0.3, (n, size, size)) + np.diag(np.arange(1.0, size + 1.0))


def _gradcheck_decomposition(kernel, a_np, dtype, out_types):
    a = wp.array(a_np, dtype=dtype)

    def fn(a):
        outs = [wp.zeros(a.shape[0], dtype=t, requires_grad=True) for t in out_types]
        wp.launch(kernel, dim=a.shape[0], inputs=[a], outputs=outs)
        return outs

    gradcheck(fn, [a])


@pytest.mark.parametrize("form", ["out", "ret"])
def test_svd3_gradient(form):
    a = _well_conditioned(4, 3, seed=7)
    a[1] = a[1] @ np.diag([1.0, 1.0, -1.0])  # negative determinant: signed sigma[2]
    _gradcheck_decomposition(SVD3_KERNELS[form], a, M33D, (M33D, V3D, M33D))


@pytest.mark.parametrize("form", ["out", "ret"])
def test_svd2_gradient(form):
    _gradcheck_decomposition(SVD2_KERNELS[form], _well_conditioned(4, 2, seed=8), M22D, (M22D, V2D, M22D))


@pytest.mark.parametrize("form", ["out", "ret"])
def test_qr3_gradient(form):
    a = _well_conditioned(4, 3, seed=9)
    a[2] = a[2] @ np.diag([1.0, -1.0, 1.0])
    _gradcheck_decomposition(QR3_KERNELS[form], a, M33D, (M33D, M33D))


@pytest.mark.parametrize("form", ["out", "ret"])
def test_eig3_gradient(form):
    _gradcheck_decomposition(EIG3_KERNELS[form], 0.5 * _well_conditioned(4, 3, seed=10), M33D, (M33D, V3D))


def test_value_only_losses_are_exact_at_repeated_values():
    """sum(d) = trace(A), |d|^2 = |A|^2, prod(d) = det(A): their gradients exist at repeated eigenvalues and
    singular values, and the decompositions give them exactly there too."""
    rot = np.array(((1.0, 2.0, 2.0), (2.0, 1.0, -2.0), (-2.0, 2.0, -1.0))) / 3.0
    sym = np.array([np.diag([2.0, 2.0, 3.0]), np.eye(3), rot @ np.diag([2.0, 2.0, 3.0]) @ rot.T,
                    np.diag([-1.0, 1.0, 1.0])])
    a = wp.array(sym, dtype=M33D, requires_grad=True)
    out = wp.zeros(12, dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(eigenvalue_losses, dim=4, inputs=[a], outputs=[out])
    seed = np.tile([1.0, 10.0, 100.0], 4)
    tape.backward(grads={out: wp.array(seed, dtype=wp.float64)})
    cof = np.linalg.det(sym)[:, None, None] * np.linalg.inv(sym).transpose(0, 2, 1)
    expected = 1.0 * np.eye(3) + 10.0 * 2.0 * sym + 100.0 * cof
    np.testing.assert_allclose(a.grad.numpy(), expected, atol=1e-10)

    b = wp.array(sym, dtype=M33D, requires_grad=True)  # svd3: |s|^2 = |A|^2, prod(s) = det(A)
    out2 = wp.zeros(8, dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(singular_value_losses, dim=4, inputs=[b], outputs=[out2])
    tape.backward(grads={out2: wp.array(np.tile([1.0, 10.0], 4), dtype=wp.float64)})
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * sym + 10.0 * cof, atol=1e-10)


def test_out_parameter_value_passed_in_gets_no_gradient():
    """svd3 overwrites U: the value U held before (computed from b) gets no gradient; the native adjoint leaves
    the out-parameters' incoming adjoints alone."""
    a_np = _well_conditioned(2, 3, seed=11)
    a = wp.array(a_np, dtype=M33D, requires_grad=True)
    b = wp.array(np.ones((2, 3, 3)), dtype=M33D, requires_grad=True)
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(svd3_into_computed_value, dim=2, inputs=[a, b], outputs=[out])
    tape.backward(grads={out: wp.array(np.ones(2), dtype=wp.float64)})
    np.testing.assert_array_equal(b.grad.numpy(), 0.0)
    # |U|^2 is constant (U orthogonal): only sigma[0] contributes, d sigma_0 / dA = u_0 v_0^T
    u, s, vt = np.linalg.svd(a_np)
    np.testing.assert_allclose(a.grad.numpy(), u[:, :, 0:1] * vt[:, 0:1, :], atol=1e-10)
