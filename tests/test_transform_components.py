"""A transform's components by index in kernels: t[i] and t[i] = v over the flat layout (px, py, pz, qx, qy, qz, qw),
negative indices counting from the end as in Python and Warp (they read and wrote outside the translation before),
and the attributes t.p and t.q assigned (t.p = v, t.p += v);
gradients by central differences, values against real Warp."""

import numpy as np

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.kernel
def _components(t: wp.array(dtype=wp.transformd), s: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.transformd),
                read: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = t[i]
    read[i] = x[-1] * wp.float64(2.0) + x[-7] - x[2]
    x[-1] = s[i]
    x[-5] *= s[i]
    x[3] = x[-4] + wp.float64(1.0)
    out[i] = x


def _run(t, s):
    out = wp.zeros(2, dtype=wp.transformd, requires_grad=True)
    read = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    wp.launch(_components, 2, [t, s, out, read])
    return out, read


def test_negative_indices_read_and_write_from_the_end_with_gradients():
    rng = np.random.default_rng(3)
    t, s = rng.normal(size=(2, 7)), rng.normal(size=2)
    out, read = (o.numpy() for o in _run(wp.array(t, dtype=wp.transformd), wp.array(s, dtype=wp.float64)))
    expected = t.copy()
    expected[:, 6] = s
    expected[:, 2] *= s
    expected[:, 3] = expected[:, 3] + 1.0
    np.testing.assert_allclose(out, expected, atol=1e-12)
    np.testing.assert_allclose(read, t[:, 6] * 2.0 + t[:, 0] - t[:, 2], atol=1e-12)
    args = [wp.array(t, dtype=wp.transformd, requires_grad=True), wp.array(s, dtype=wp.float64, requires_grad=True)]
    gradcheck(lambda t, s: _run(t, s)[0], args)
    gradcheck(lambda t, s: _run(t, s)[1], args)


@wp.kernel
def _parts(p: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    t = wp.transform_identity(dtype=wp.float64)
    t.p = p[i]
    t.q = q[i]
    t.p += p[i] * wp.float64(2.0)
    out[i] = t


def test_translation_and_rotation_attributes_are_assignable_with_gradients():
    rng = np.random.default_rng(4)
    p, q = rng.normal(size=(2, 3)), rng.normal(size=(2, 4))

    def run(p, q):
        out = wp.zeros(2, dtype=wp.transformd, requires_grad=True)
        wp.launch(_parts, 2, [p, q, out])
        return out

    out = run(wp.array(p, dtype=wp.vec3d), wp.array(q, dtype=wp.quatd)).numpy()
    np.testing.assert_allclose(out, np.concatenate([3.0 * p, q], axis=1), atol=1e-12)
    gradcheck(run, [wp.array(p, dtype=wp.vec3d, requires_grad=True), wp.array(q, dtype=wp.quatd, requires_grad=True)])


_PROGRAM = '''
import numpy as np


@wp.kernel
def components(out: wp.array(dtype=wp.transform), read: wp.array(dtype=float)):
    t = wp.transform(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat(4.0, 5.0, 6.0, 7.0))
    read[0] = t[-1] + t[-7] * 10.0 + t[-5] * 100.0
    t[-1] = 123.0
    t[-5] *= 2.0
    t[0] = 9.0
    t.p += wp.vec3(0.5, 0.25, 0.125)
    t.q = wp.quat(0.0, 0.6, 0.0, 0.8)
    out[0] = t


def run(wp, Tape):
    out, read = wp.zeros(1, dtype=wp.transform), wp.zeros(1, dtype=float)
    wp.launch(components, dim=1, inputs=[out, read])
    return {"out": out.numpy(), "read": read.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "transform_components")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
