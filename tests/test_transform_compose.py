"""wp.transform_compose / wp.transform_decompose and wp.spatial_adjoint (kernels/mathlib.py): the matrix against
numpy's product T R S, decompose inverting compose, the spatial adjoint mapping twists as a transform does,
gradients by central differences, and Warp's values."""

import numpy as np

import _warp_reference
import kernels as wp
from autodiff import gradcheck


def _rotation(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@wp.kernel
def _roundtrip(p: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), s: wp.array(dtype=wp.vec3d),
               m: wp.array(dtype=wp.mat44d), p2: wp.array(dtype=wp.vec3d), q2: wp.array(dtype=wp.quatd),
               s2: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    mm = wp.transform_compose(p[i], q[i], s[i])
    m[i] = mm
    a, b, c = wp.transform_decompose(mm)
    p2[i] = a
    q2[i] = b
    s2[i] = c


def _inputs():
    rng = np.random.default_rng(6)
    q = rng.normal(size=(3, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 3] < 0] *= -1.0  # w >= 0: the quaternion quat_from_matrix gives back
    return rng.normal(size=(3, 3)), q, rng.uniform(0.5, 2.0, (3, 3))


def _run(p, q, s):
    outs = [wp.zeros(3, dtype=t, requires_grad=True) for t in (wp.mat44d, wp.vec3d, wp.quatd, wp.vec3d)]
    wp.launch(_roundtrip, 3, [p, q, s] + outs)
    return outs


def test_matrix_is_translation_rotation_scale_and_decompose_inverts_it():
    p, q, s = _inputs()
    m, p2, q2, s2 = (o.numpy() for o in _run(wp.array(p, dtype=wp.vec3d), wp.array(q, dtype=wp.quatd),
                                               wp.array(s, dtype=wp.vec3d)))
    for i in range(3):
        expected = np.eye(4)
        expected[:3, :3] = _rotation(q[i]) @ np.diag(s[i])
        expected[:3, 3] = p[i]
        np.testing.assert_allclose(m[i], expected, atol=1e-12)
    np.testing.assert_allclose(p2, p, atol=1e-12)
    np.testing.assert_allclose(s2, s, atol=1e-12)
    np.testing.assert_allclose(q2, q, atol=1e-9)


def test_gradients_match_central_differences():
    p, q, s = _inputs()
    args = [wp.array(p, dtype=wp.vec3d, requires_grad=True), wp.array(q, dtype=wp.quatd, requires_grad=True),
            wp.array(s, dtype=wp.vec3d, requires_grad=True)]
    gradcheck(lambda p, q, s: _run(p, q, s)[0], args)
    gradcheck(lambda p, q, s: _run(p, q, s)[2], args)
    gradcheck(lambda p, q, s: _run(p, q, s)[3], args)


@wp.kernel
def _spatial(r: wp.array(dtype=wp.mat33d), s: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.spatial_matrixd)):
    i = wp.tid()
    out[i] = wp.spatial_adjoint(r[i], s[i])


def test_spatial_adjoint_maps_twists_as_the_transform_does():
    p, q, _ = _inputs()
    rot = np.stack([_rotation(x) for x in q])
    skew = np.stack([np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]) for v in p])
    s = skew @ rot
    out = wp.zeros(3, dtype=wp.spatial_matrixd)
    wp.launch(_spatial, 3, [wp.array(rot, dtype=wp.mat33d), wp.array(s, dtype=wp.mat33d), out])
    twist = np.random.default_rng(2).normal(size=6)
    for i in range(3):
        w, v = rot[i] @ twist[:3], rot[i] @ twist[3:]
        np.testing.assert_allclose(out.numpy()[i] @ twist, np.concatenate([w, np.cross(p[i], w) + v]), atol=1e-12)

    def run(r, s):
        y = wp.zeros(3, dtype=wp.spatial_matrixd, requires_grad=True)
        wp.launch(_spatial, 3, [r, s, y])
        return y

    gradcheck(run, [wp.array(rot, dtype=wp.mat33d, requires_grad=True),
                    wp.array(s, dtype=wp.mat33d, requires_grad=True)])


_PROGRAM = '''
import numpy as np


@wp.kernel
def compose(p: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), s: wp.array(dtype=wp.vec3),
            m: wp.array(dtype=wp.mat44), q2: wp.array(dtype=wp.quat), s2: wp.array(dtype=wp.vec3),
            sa: wp.array(dtype=wp.spatial_matrix)):
    i = wp.tid()
    mm = wp.transform_compose(p[i], q[i], s[i])
    m[i] = mm
    a, b, c = wp.transform_decompose(mm)
    q2[i] = b
    s2[i] = c
    sa[i] = wp.spatial_adjoint(wp.quat_to_matrix(q[i]), wp.skew(p[i]))


@wp.kernel
def to_from(t: wp.array(dtype=wp.transformh), m: wp.array(dtype=wp.mat44h), t2: wp.array(dtype=wp.transformh),
            sa: wp.array(dtype=wp.spatial_matrixh)):
    i = wp.tid()
    mm = wp.transform_to_matrix(t[i])
    m[i] = mm
    t2[i] = wp.transform_from_matrix(mm)
    sa[i] = wp.spatial_adjoint(wp.quat_to_matrix(wp.transform_get_rotation(t[i])), wp.skew(wp.transform_get_translation(t[i])))


def run(wp, Tape):
    rng = np.random.default_rng(9)
    q = rng.normal(size=(8, 4)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    p, s = rng.normal(size=(8, 3)).astype(np.float32), rng.uniform(0.5, 2.0, (8, 3)).astype(np.float32)
    m, q2, s2 = wp.zeros(8, dtype=wp.mat44), wp.zeros(8, dtype=wp.quat), wp.zeros(8, dtype=wp.vec3)
    sa = wp.zeros(8, dtype=wp.spatial_matrix)
    wp.launch(compose, dim=8, inputs=[wp.array(p, dtype=wp.vec3), wp.array(q, dtype=wp.quat),
                                      wp.array(s, dtype=wp.vec3), m, q2, s2, sa])
    t = np.concatenate([p, q], axis=1).astype(np.float16)
    mh, th, sah = wp.zeros(8, dtype=wp.mat44h), wp.zeros(8, dtype=wp.transformh), wp.zeros(8, dtype=wp.spatial_matrixh)
    wp.launch(to_from, dim=8, inputs=[wp.array(t, dtype=wp.transformh), mh, th, sah])
    return {"m": m.numpy(), "q2": q2.numpy(), "s2": s2.numpy(), "sa": sa.numpy(), "mh": mh.numpy(), "th": th.numpy(),
            "sah": sah.numpy()}
'''


@wp.kernel
def _to_from_matrix(t: wp.array(dtype=wp.transformd), m: wp.array(dtype=wp.mat44d), t2: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    mm = wp.transform_to_matrix(t[i])
    m[i] = mm
    t2[i] = wp.transform_from_matrix(mm)


def _run_to_from(t):
    m = wp.zeros(3, dtype=wp.mat44d, requires_grad=True)
    t2 = wp.zeros(3, dtype=wp.transformd, requires_grad=True)
    wp.launch(_to_from_matrix, 3, [t, m, t2])
    return m, t2


def test_transform_to_and_from_matrix_and_their_gradients():
    p, q, _ = _inputs()
    t = np.concatenate([p, q], axis=1)
    m, t2 = (o.numpy() for o in _run_to_from(wp.array(t, dtype=wp.transformd)))
    for i in range(3):
        expected = np.eye(4)
        expected[:3, :3] = _rotation(q[i])
        expected[:3, 3] = p[i]
        np.testing.assert_allclose(m[i], expected, atol=1e-12)
    np.testing.assert_allclose(t2, t, atol=1e-9)  # w >= 0: the quaternion quat_from_matrix gives back
    arg = [wp.array(t, dtype=wp.transformd, requires_grad=True)]
    gradcheck(lambda t: _run_to_from(t)[0], arg)
    gradcheck(lambda t: _run_to_from(t)[1], arg)


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "transform_compose")
    np.testing.assert_array_equal(ours["m"], warp["m"])
    np.testing.assert_array_equal(ours["sa"], warp["sa"])
    # float16: kernels' quat_to_matrix rounds its half-precision products in another order than Warp's (one half ulp)
    np.testing.assert_allclose(ours["sah"].astype(np.float32), warp["sah"].astype(np.float32), atol=1e-3)
    np.testing.assert_allclose(ours["mh"].astype(np.float32), warp["mh"].astype(np.float32), atol=2e-3)
    th_ours, th_warp = ours["th"].astype(np.float32), warp["th"].astype(np.float32)
    np.testing.assert_allclose(th_ours[:, :3], th_warp[:, :3], atol=2e-3)
    sign = np.sign(np.sum(th_ours[:, 3:] * th_warp[:, 3:], axis=1, keepdims=True))
    np.testing.assert_allclose(th_ours[:, 3:] * sign, th_warp[:, 3:], atol=5e-3)
    np.testing.assert_allclose(ours["s2"], warp["s2"], rtol=1e-6)
    # a rotation's quaternion is defined up to its sign
    q_ours, q_warp = ours["q2"], warp["q2"]
    sign = np.sign(np.sum(q_ours * q_warp, axis=1, keepdims=True))
    np.testing.assert_allclose(q_ours * sign, q_warp, atol=2e-6)
