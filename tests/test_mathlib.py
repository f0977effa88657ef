"""Warp's math helpers (kernels/mathlib.py): values against numpy references, gradients against central finite
differences. norm_l1/norm_l2 are generic (also tested in float64); the others take float32 values, as in Warp.

Every kernel is created at import time, so the whole file compiles into one native library.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

N = 8
RNG = np.random.default_rng(5)


def _unit_quats(n, rng):
    q = rng.standard_normal((n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q * np.sign(q[:, 3:4])  # real part >= 0: the unsigned twist angle is then in [0, pi]


def np_qmul(a, b):
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - np.sum(av * bv, -1, keepdims=True)], -1)


def np_axis_rotation(axis, angle):
    q = np.zeros(np.shape(angle) + (4,))
    q[..., axis] = np.sin(angle / 2)
    q[..., 3] = np.cos(angle / 2)
    return q


def np_rotate(q, v):
    u, w = q[..., :3], q[..., 3:]
    return v * (2 * w * w - 1) + 2 * w * np.cross(u, v) + 2 * u * np.sum(u * v, -1, keepdims=True)


# ---- kernels -----------------------------------------------------------------------------------------------------


@wp.kernel
def norms_kernel(v: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = wp.norm_l1(v[i])
    out[i, 1] = wp.norm_l2(v[i])
    out[i, 2] = wp.norm_huber(v[i])
    out[i, 3] = wp.norm_huber(v[i], 0.5)
    out[i, 4] = wp.norm_pseudo_huber(v[i])
    out[i, 5] = wp.norm_pseudo_huber(v[i], delta=2.0)


@wp.kernel
def norms_double_kernel(v: wp.array(dtype=wp.vec4d), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    out[i, 0] = wp.norm_l1(v[i])
    out[i, 1] = wp.norm_l2(v[i])


@wp.kernel
def smooth_normalize_kernel(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.smooth_normalize(v[i], 0.7)


@wp.kernel
def twist_kernel(axis: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = wp.quat_twist_angle(axis[i], q[i])
    out[i, 1] = wp.quat_twist_angle_signed(axis[i], q[i])
    t = wp.quat_twist(axis[i], q[i])
    for k in range(4):
        out[i, 2 + k] = t[k]


@wp.kernel
def rpy_kernel(q: wp.array(dtype=wp.quat), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.quat_to_rpy(q[i])


@wp.kernel
def euler_kernel(e: wp.array(dtype=wp.vec3), seq: wp.array(dtype=wp.vec3i), q_out: wp.array(dtype=wp.quat),
                 e_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    s = seq[i]
    q = wp.quat_from_euler(e[i], s[0], s[1], s[2])
    q_out[i] = q
    e_out[i] = wp.quat_to_euler(q, s[0], s[1], s[2])


@wp.kernel
def spatial_kernel(t: wp.array(dtype=wp.transform), x: wp.array(dtype=wp.spatial_vector),
                   r: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    tw = wp.transform_twist(t[i], x[i])
    wr = wp.transform_wrench(t[i], x[i])
    vp = wp.velocity_at_point(x[i], r[i])
    for k in range(6):
        out[i, k] = tw[k]
        out[i, 6 + k] = wr[k]
    for k in range(3):
        out[i, 12 + k] = vp[k]


# ---- norms --------------------------------------------------------------------------------------------------------


def _np_huber(n, delta):
    return np.where(n <= delta, 0.5 * n * n, delta * (n - 0.5 * delta))


def _np_pseudo_huber(n, delta):
    return delta * np.sqrt(1 + n * n / (delta * delta))


def test_norm_values(device):
    v_np = RNG.uniform(-1.5, 1.5, (N, 3))
    v_np[0] = 0.0
    v = wp.array(v_np, dtype=wp.vec3, device=device)
    out = wp.zeros((N, 6), dtype=float, device=device)
    wp.launch(norms_kernel, dim=N, inputs=[v, out], device=device)
    n = np.linalg.norm(v_np, axis=1)
    expected = np.stack([np.abs(v_np).sum(1), n, _np_huber(n, 1.0), _np_huber(n, 0.5), _np_pseudo_huber(n, 1.0),
                         _np_pseudo_huber(n, 2.0)], 1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_norms_are_generic(device):
    v_np = RNG.uniform(-1.5, 1.5, (N, 4))
    v_np[np.abs(v_np) < 0.05] = 0.3
    v = wp.array(v_np, dtype=wp.vec4d, device=device)
    out = wp.zeros((N, 2), dtype=wp.float64, device=device)
    wp.launch(norms_double_kernel, dim=N, inputs=[v, out], device=device)
    np.testing.assert_allclose(out.numpy(), np.stack([np.abs(v_np).sum(1), np.linalg.norm(v_np, axis=1)], 1),
                               rtol=1e-14)

    def fn(v):
        o = wp.zeros((N, 2), dtype=wp.float64, device=device)
        wp.launch(norms_double_kernel, dim=N, inputs=[v, o], device=device)
        return o

    gradcheck(fn, [v])


def test_norm_gradients(device):
    v_np = RNG.uniform(-1.5, 1.5, (N, 3))
    v_np[np.abs(v_np) < 0.05] = 0.3  # |x| has a kink at 0; keep finite differences away from it
    n = np.linalg.norm(v_np, axis=1)
    assert np.all(np.abs(n - 1.0) > 0.01) and np.all(np.abs(n - 0.5) > 0.01)  # and from the Huber switch

    def fn(v):
        out = wp.zeros((N, 6), dtype=float, device=device)
        wp.launch(norms_kernel, dim=N, inputs=[v, out], device=device)
        return out

    gradcheck(fn, [wp.array(v_np, dtype=wp.vec3, device=device)])


def test_smooth_normalize(device):
    v_np = RNG.uniform(-1.5, 1.5, (N, 3))
    v_np[0] = 0.0
    v = wp.array(v_np, dtype=wp.vec3, device=device)
    out = wp.zeros(N, dtype=wp.vec3, device=device)
    wp.launch(smooth_normalize_kernel, dim=N, inputs=[v, out], device=device)
    n = np.linalg.norm(v_np, axis=1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), v_np / _np_pseudo_huber(n, 0.7), rtol=1e-6, atol=1e-7)

    def fn(v):
        o = wp.zeros(N, dtype=wp.vec3, device=device)
        wp.launch(smooth_normalize_kernel, dim=N, inputs=[v, o], device=device)
        return o

    gradcheck(fn, [wp.array(v_np, dtype=wp.vec3, device=device)])


# ---- rotations ----------------------------------------------------------------------------------------------------


def _twist_inputs(rng):
    axis = rng.standard_normal((N, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    return axis, _unit_quats(N, rng)


def test_twist_values(device):
    axis_np, q_np = _twist_inputs(np.random.default_rng(1))
    angle = np.linspace(-3.0, 3.0, N)
    swing_axis = np.cross(axis_np, [0.3, 0.5, 0.8])
    swing_axis /= np.linalg.norm(swing_axis, axis=1, keepdims=True)
    # q = swing * twist with a known twist angle about `axis`
    twist = np.concatenate([axis_np * np.sin(angle / 2)[:, None], np.cos(angle / 2)[:, None]], 1)
    swing = np.concatenate([swing_axis * np.sin(0.4), np.full((N, 1), np.cos(0.4))], 1)
    q_np = np_qmul(swing, twist)
    out = wp.zeros((N, 6), dtype=float, device=device)
    wp.launch(twist_kernel, dim=N, inputs=[wp.array(axis_np, dtype=wp.vec3, device=device),
                                            wp.array(q_np, dtype=wp.quat, device=device), out], device=device)
    o = out.numpy()
    np.testing.assert_allclose(o[:, 1], angle, atol=2e-6)
    np.testing.assert_allclose(o[:, 0], np.abs(angle), atol=2e-6)
    np.testing.assert_allclose(o[:, 2:], twist, atol=2e-6)


def test_twist_gradients(device):
    axis_np, q_np = _twist_inputs(np.random.default_rng(2))

    def fn(axis, q):
        out = wp.zeros((N, 6), dtype=float, device=device)
        wp.launch(twist_kernel, dim=N, inputs=[axis, q, out], device=device)
        return out

    gradcheck(fn, [wp.array(axis_np, dtype=wp.vec3, device=device), wp.array(q_np, dtype=wp.quat, device=device)])


def test_quat_to_rpy_inverts_quat_rpy(device):
    rpy = np.stack([RNG.uniform(-3, 3, N), RNG.uniform(-1.4, 1.4, N), RNG.uniform(-3, 3, N)], 1)
    q_np = np_qmul(np_qmul(np_axis_rotation(2, rpy[:, 2]), np_axis_rotation(1, rpy[:, 1])),
                   np_axis_rotation(0, rpy[:, 0]))
    out = wp.zeros(N, dtype=wp.vec3, device=device)
    wp.launch(rpy_kernel, dim=N, inputs=[wp.array(q_np, dtype=wp.quat, device=device), out], device=device)
    np.testing.assert_allclose(out.numpy(), rpy, atol=1e-5)

    def fn(q):
        o = wp.zeros(N, dtype=wp.vec3, device=device)
        wp.launch(rpy_kernel, dim=N, inputs=[q, o], device=device)
        return o

    gradcheck(fn, [wp.array(q_np, dtype=wp.quat, device=device)])


SEQUENCES = [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1), (2, 0, 1), (1, 0, 2), (0, 1, 0), (2, 1, 2)]


def _euler_inputs():
    rng = np.random.default_rng(3)
    e = rng.uniform(-2.5, 2.5, (N, 3))
    seq = np.array(SEQUENCES, dtype=np.int32)
    # the middle angle (about axis j) comes back unchanged in [-pi/2, pi/2] (Tait-Bryan) or (0, pi) (proper)
    for n, (i, j, k) in enumerate(SEQUENCES):
        e[n, j] = rng.uniform(-1.2, 1.2) if i != k else rng.uniform(0.2, 2.8)
    return e, seq


def test_euler_round_trip(device):
    e_np, seq_np = _euler_inputs()
    q = wp.zeros(N, dtype=wp.quat, device=device)
    e_out = wp.zeros(N, dtype=wp.vec3, device=device)
    wp.launch(euler_kernel, dim=N, inputs=[wp.array(e_np, dtype=wp.vec3, device=device),
                                            wp.array(seq_np, dtype=wp.vec3i, device=device), q, e_out],
              device=device)
    for n, (i, j, k) in enumerate(SEQUENCES):
        expected = np_qmul(np_axis_rotation(k, e_np[n, k]), np_qmul(np_axis_rotation(j, e_np[n, j]),
                                                                    np_axis_rotation(i, e_np[n, i])))
        np.testing.assert_allclose(q.numpy()[n], expected, atol=1e-6)
        if i != k:  # Tait-Bryan: the angles come back by axis
            np.testing.assert_allclose(e_out.numpy()[n], e_np[n], atol=2e-5)
        else:  # proper: first angle at i, second at j, third (about i again) at 3 - i - j
            third = 3 - i - j
            back = np_qmul(np_axis_rotation(i, e_out.numpy()[n, third]),
                           np_qmul(np_axis_rotation(j, e_out.numpy()[n, j]),
                                   np_axis_rotation(i, e_out.numpy()[n, i])))
            assert np.allclose(back, expected, atol=2e-5) or np.allclose(back, -expected, atol=2e-5)


def test_euler_gradients(device):
    e_np, seq_np = _euler_inputs()
    seq = wp.array(seq_np, dtype=wp.vec3i, device=device)

    def fn(e):
        q = wp.zeros(N, dtype=wp.quat, device=device)
        e_out = wp.zeros(N, dtype=wp.vec3, device=device)
        wp.launch(euler_kernel, dim=N, inputs=[e, seq, q, e_out], device=device)
        return q, e_out

    gradcheck(fn, [wp.array(e_np, dtype=wp.vec3, device=device)])


def test_spatial_helpers(device):
    rng = np.random.default_rng(4)
    t_np = np.concatenate([rng.uniform(-1, 1, (N, 3)), _unit_quats(N, rng)], 1)
    x_np, r_np = rng.uniform(-1, 1, (N, 6)), rng.uniform(-1, 1, (N, 3))
    args = [wp.array(t_np, dtype=wp.transform, device=device), wp.array(x_np, dtype=wp.spatial_vector, device=device),
            wp.array(r_np, dtype=wp.vec3, device=device)]
    out = wp.zeros((N, 15), dtype=float, device=device)
    wp.launch(spatial_kernel, dim=N, inputs=[*args, out], device=device)
    p, q = t_np[:, :3], t_np[:, 3:]
    w, v = np_rotate(q, x_np[:, :3]), np_rotate(q, x_np[:, 3:])
    expected = np.concatenate([w, v + np.cross(p, w), w + np.cross(p, v), v, x_np[:, 3:] + np.cross(x_np[:, :3], r_np)],
                              1)
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-5)

    def fn(t, x, r):
        o = wp.zeros((N, 15), dtype=float, device=device)
        wp.launch(spatial_kernel, dim=N, inputs=[t, x, r, o], device=device)
        return o

    gradcheck(fn, args)


def test_constants():
    assert wp.pi == pytest.approx(np.pi) and wp.HALF_PI == pytest.approx(np.pi / 2) and wp.TAU == wp.tau
    assert wp.E == pytest.approx(np.e) and np.isinf(wp.inf) and np.isnan(wp.NAN)
