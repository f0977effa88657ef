"""Quaternion, transform and spatial builtins (kernels/builtins/quat.py): values against numpy references in float32
and float64, gradients against central finite differences in float64.

Every kernel is created at import time, so the whole file compiles into one native library.
"""

import zlib

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

FLOATS = (wp.float32, wp.float64)
TOL = {wp.float32: 3e-5, wp.float64: 1e-12}
N = 16

# kind -> dtype -> type
KINDS = {
    "s": {wp.float32: wp.float32, wp.float64: wp.float64},
    "q": {wp.float32: wp.quatf, wp.float64: wp.quatd},
    "x": {wp.float32: wp.transformf, wp.float64: wp.transformd},
    "v3": {wp.float32: wp.vec3, wp.float64: wp.vec3d},
    "v6": {wp.float32: wp.spatial_vectorf, wp.float64: wp.spatial_vectord},
    "m33": {wp.float32: wp.mat33, wp.float64: wp.mat33d},
    "m44": {wp.float32: wp.mat44, wp.float64: wp.mat44d},
}

# ------------------------------------------------------------------------------------------------------------
# numpy references on batches (..., 4) quaternions (x, y, z, w), (..., 7) transforms (p, q)


def np_qmul(a, b):
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz], -1)


def np_qconj(q):
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def np_qmat(q):
    """Rotation matrix of unit quaternions (textbook formula, independent of the native one)."""
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def np_rotate(q, v):
    return np.einsum("...ij,...j->...i", np_qmat(q), v)


def np_axis_angle(axis, angle):
    h = np.asarray(angle)[..., None] / 2
    return np.concatenate([axis * np.sin(h), np.cos(h)], -1)


def np_rpy(r, p, y):
    e = np.eye(3)
    qx, qy, qz = (np_axis_angle(np.broadcast_to(e[k], np.shape(a) + (3,)), a) for k, a in enumerate((r, p, y)))
    return np_qmul(np_qmul(qz, qy), qx)


def np_slerp(a, b, t):
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    d = np.sum(a * b, -1)
    b = np.where(d[..., None] < 0, -b, b)
    th = np.arccos(np.clip(np.abs(d), -1, 1))[..., None]
    t = np.asarray(t)[..., None]
    return (np.sin((1 - t) * th) * a + np.sin(t * th) * b) / np.sin(th)


def np_xmul(a, b):
    return np.concatenate([a[..., :3] + np_rotate(a[..., 3:], b[..., :3]), np_qmul(a[..., 3:], b[..., 3:])], -1)


def np_xinv(t):
    qi = np_qconj(t[..., 3:])
    return np.concatenate([-np_rotate(qi, t[..., :3]), qi], -1)


def np_scross(a, b):
    wa, va, wb, vb = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([np.cross(wa, wb), np.cross(va, wb) + np.cross(wa, vb)], -1)


def np_scross_dual(a, b):
    w, v, n, f = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([np.cross(w, n) + np.cross(v, f), np.cross(w, f)], -1)


def np_mat44_apply(m, x, w):
    return np.einsum("...ij,...j->...i", m[..., :3, :3], x) + w * m[..., :3, 3]


def canonical_sign(q):
    """Quaternions q and -q are the same rotation: compare with w >= 0."""
    return np.where(q[..., 3:4] < 0, -q, q)


# name -> (builtin, argument kinds, result kind, numpy reference, comparator sign-insensitive)
CASES = {
    "add_q": (wp.add, ("q", "q"), "q", lambda a, b: a + b),
    "sub_q": (wp.sub, ("q", "q"), "q", lambda a, b: a - b),
    "neg_q": (wp.neg, ("q",), "q", lambda a: -a),
    "mul_qq": (wp.mul, ("q", "q"), "q", np_qmul),
    "mul_qs": (wp.mul, ("q", "s"), "q", lambda a, s: a * s[..., None]),
    "mul_sq": (wp.mul, ("s", "q"), "q", lambda s, a: a * s[..., None]),
    "div_qs": (wp.div, ("q", "s"), "q", lambda a, s: a / s[..., None]),
    "div_sq": (wp.div, ("s", "q"), "q", lambda s, a: s[..., None] / a),
    "dot_q": (wp.dot, ("q", "q"), "s", lambda a, b: np.sum(a * b, -1)),
    "length_q": (wp.length, ("q",), "s", lambda a: np.linalg.norm(a, axis=-1)),
    "length_sq_q": (wp.length_sq, ("q",), "s", lambda a: np.sum(a * a, -1)),
    "normalize_q": (wp.normalize, ("q",), "q", lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True)),
    "lerp_q": (wp.lerp, ("q", "q", "s"), "q", lambda a, b, t: a * (1 - t[..., None]) + b * t[..., None]),
    "quat_inverse": (wp.quat_inverse, ("q",), "q", np_qconj),
    "quat_from_axis_angle": (wp.quat_from_axis_angle, ("v3", "s"), "q", np_axis_angle),
    "quat_rotate": (wp.quat_rotate, ("q", "v3"), "v3", np_rotate),
    "quat_rotate_inv": (wp.quat_rotate_inv, ("q", "v3"), "v3", lambda q, v: np_rotate(np_qconj(q), v)),
    "quat_to_matrix": (wp.quat_to_matrix, ("q",), "m33", np_qmat),
    "quat_from_matrix": (wp.quat_from_matrix, ("m33",), "q", None),
    "quat_from_matrix44": (wp.quat_from_matrix, ("m44",), "q", None),
    "quat_rpy": (wp.quat_rpy, ("s", "s", "s"), "q", np_rpy),
    "quat_slerp": (wp.quat_slerp, ("q", "q", "s"), "q", np_slerp),
    "transform_get_translation": (wp.transform_get_translation, ("x",), "v3", lambda t: t[..., :3]),
    "transform_get_rotation": (wp.transform_get_rotation, ("x",), "q", lambda t: t[..., 3:]),
    "add_x": (wp.add, ("x", "x"), "x", lambda a, b: a + b),
    "sub_x": (wp.sub, ("x", "x"), "x", lambda a, b: a - b),
    "mul_xs": (wp.mul, ("x", "s"), "x", lambda a, s: a * s[..., None]),
    "mul_sx": (wp.mul, ("s", "x"), "x", lambda s, a: a * s[..., None]),
    "lerp_x": (wp.lerp, ("x", "x", "s"), "x", lambda a, b, t: a * (1 - t[..., None]) + b * t[..., None]),
    "mul_xx": (wp.mul, ("x", "x"), "x", np_xmul),
    "transform_multiply": (wp.transform_multiply, ("x", "x"), "x", np_xmul),
    "transform_inverse": (wp.transform_inverse, ("x",), "x", np_xinv),
    "transform_point": (wp.transform_point, ("x", "v3"), "v3", lambda t, p: np_rotate(t[..., 3:], p) + t[..., :3]),
    "transform_vector": (wp.transform_vector, ("x", "v3"), "v3", lambda t, v: np_rotate(t[..., 3:], v)),
    "transform_point44": (wp.transform_point, ("m44", "v3"), "v3", lambda m, p: np_mat44_apply(m, p, 1.0)),
    "transform_vector44": (wp.transform_vector, ("m44", "v3"), "v3", lambda m, v: np_mat44_apply(m, v, 0.0)),
    "spatial_top": (wp.spatial_top, ("v6",), "v3", lambda a: a[..., :3]),
    "spatial_bottom": (wp.spatial_bottom, ("v6",), "v3", lambda a: a[..., 3:]),
    "spatial_dot": (wp.spatial_dot, ("v6", "v6"), "s", lambda a, b: np.sum(a * b, -1)),
    "spatial_cross": (wp.spatial_cross, ("v6", "v6"), "v6", np_scross),
    "spatial_cross_dual": (wp.spatial_cross_dual, ("v6", "v6"), "v6", np_scross_dual),
}

# ------------------------------------------------------------------------------------------------------------
# One kernel per (case, dtype): out[i] = fn(args[i]...)


def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return wp.kernel(pyfunc)


def _make_kernel(name, fn, kinds, out_kind, dtype):
    t = [KINDS[k][dtype] for k in kinds]
    r = KINDS[out_kind][dtype]
    if len(kinds) == 1:
        def k(a: wp.array(dtype=t[0]), out: wp.array(dtype=r)):
            i = wp.tid()
            out[i] = fn(a[i])
    elif len(kinds) == 2:
        def k(a: wp.array(dtype=t[0]), b: wp.array(dtype=t[1]), out: wp.array(dtype=r)):
            i = wp.tid()
            out[i] = fn(a[i], b[i])
    else:
        def k(a: wp.array(dtype=t[0]), b: wp.array(dtype=t[1]), c: wp.array(dtype=t[2]), out: wp.array(dtype=r)):
            i = wp.tid()
            out[i] = fn(a[i], b[i], c[i])
    return _named(k, f"{name}_{dtype.__name__}")


KERNELS = {(name, dt): _make_kernel(name, c[0], c[1], c[2], dt) for name, c in CASES.items() for dt in FLOATS}


def _unit_quats(rng, n):
    q = rng.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _inputs(kind, rng, n=N, name=""):
    """Float64 numpy inputs of a kind; rotations are proper (unit quaternions, rotation matrices)."""
    if kind == "s":
        return rng.uniform(0.5, 2.0, n) if name != "quat_rpy" else rng.uniform(-3.0, 3.0, n)
    if kind == "q":
        return _unit_quats(rng, n)
    if kind == "x":
        return np.concatenate([rng.standard_normal((n, 3)), _unit_quats(rng, n)], -1)
    if kind == "v3":
        v = rng.standard_normal((n, 3))
        return v / np.linalg.norm(v, axis=-1, keepdims=True) if name == "quat_from_axis_angle" else v
    if kind == "v6":
        return rng.standard_normal((n, 6))
    if kind == "m33":
        return np_qmat(_unit_quats(rng, n))
    if kind == "m44":
        m = rng.standard_normal((n, 4, 4))
        m[:, :3, :3] = np_qmat(_unit_quats(rng, n))
        return m
    raise ValueError(kind)


def _launch(name, dtype, args, device):
    _, kinds, out_kind, _ = CASES[name]
    arrays = [wp.array(a, dtype=KINDS[k][dtype], device=device) for a, k in zip(args, kinds)]
    out = wp.zeros(len(args[0]), dtype=KINDS[out_kind][dtype], device=device)
    wp.launch(KERNELS[(name, dtype)], dim=len(args[0]), inputs=[*arrays, out], device=device)
    return out.numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("name", sorted(CASES))
def test_values(name, dtype, device):
    _, kinds, _, ref = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args = [_inputs(k, rng, name=name) for k in kinds]
    if dtype is wp.float32:
        args = [a.astype(np.float32).astype(np.float64) for a in args]
    got = _launch(name, dtype, args, device)
    if ref is None:  # quat_from_matrix: the rotation matrix of the result is the input (the sign is free)
        m = args[0][..., :3, :3]
        assert np.allclose(np.linalg.norm(got, axis=-1), 1.0, atol=10 * TOL[dtype])
        np.testing.assert_allclose(np_qmat(got), m, atol=10 * TOL[dtype])
        return
    expect = ref(*args)
    np.testing.assert_allclose(got.reshape(expect.shape), expect, rtol=TOL[dtype], atol=TOL[dtype])


# Inputs for gradients: general (non-unit) quaternions where the formula allows it, so the derivative off the unit
# sphere is checked too; rotation matrices for quat_from_matrix (away from branch switches).
GRAD_UNIT = {"quat_from_matrix", "quat_from_matrix44"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients(name, device):
    _, kinds, out_kind, _ = CASES[name]
    rng = np.random.default_rng(7)
    args = [_inputs(k, rng, n=4, name=name) for k in kinds]
    if name not in GRAD_UNIT:
        args = [a + 0.1 * rng.standard_normal(a.shape) if k in ("q", "x") else a for a, k in zip(args, kinds)]
    arrays = [wp.array(a, dtype=KINDS[k][wp.float64], device=device) for a, k in zip(args, kinds)]
    kernel = KERNELS[(name, wp.float64)]

    def fn(*xs):
        out = wp.zeros(len(args[0]), dtype=KINDS[out_kind][wp.float64], device=device)
        wp.launch(kernel, dim=len(args[0]), inputs=[*xs, out], device=device)
        return out

    gradcheck(fn, arrays)


# ------------------------------------------------------------------------------------------------------------
# Construction, component access and operator syntax


def _make_construct_kernel(dtype):
    Q, X, V3, S = (KINDS[k][dtype] for k in ("q", "x", "v3", "s"))

    def k(v: wp.array(dtype=V3), q32: wp.array(dtype=wp.quatf), x32: wp.array(dtype=wp.transformf),
          oq: wp.array(dtype=Q), ox: wp.array(dtype=X), os: wp.array(dtype=S)):
        q = Q(S(1.0), S(2.0), S(3.0), S(4.0))
        oq[0] = q
        oq[1] = Q()
        oq[2] = Q(wp.quat_identity())
        oq[3] = Q(v[0], S(5.0))
        oq[4] = Q(q32[0])
        r = q
        r.y = S(-2.0)
        r[3] = S(-4.0)
        oq[5] = r
        oq[6] = -q * S(2.0) + q / S(2.0) - q
        ox[0] = X(v[0], q)
        ox[1] = X(v[0])
        ox[2] = X()
        ox[3] = X(wp.transform_identity())
        ox[4] = X(S(1.0), S(2.0), S(3.0), S(4.0), S(5.0), S(6.0), S(7.0))
        ox[5] = X(S(0.5))
        ox[6] = X(x32[0])
        t = X(v[0], q)
        t[1] = S(9.0)
        ox[7] = t
        os[0] = q.x
        os[1] = q.w
        os[2] = q[2]
        os[3] = t.p[2]
        os[4] = t.q.w
        os[5] = t[4]

    return _named(k, f"construct_{dtype.__name__}")


CONSTRUCT_KERNELS = {dt: _make_construct_kernel(dt) for dt in FLOATS}


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.__name__)
def test_construction_and_components(dtype, device):
    Q, X, V3, S = (KINDS[k][dtype] for k in ("q", "x", "v3", "s"))
    v = wp.array(np.array([[0.5, -1.0, 2.0]]), dtype=V3, device=device)
    q32 = wp.array(np.array([[0.25, 0.5, 0.75, 1.0]]), dtype=wp.quatf, device=device)
    x32 = wp.array(np.array([[1.0, 2.0, 3.0, 0.0, 0.6, 0.0, 0.8]]), dtype=wp.transformf, device=device)
    oq = wp.zeros(7, dtype=Q, device=device)
    ox = wp.zeros(8, dtype=X, device=device)
    os = wp.zeros(6, dtype=S, device=device)
    wp.launch(CONSTRUCT_KERNELS[dtype], dim=1, inputs=[v, q32, x32, oq, ox, os], device=device)
    q = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(oq.numpy(), [
        q, [0, 0, 0, 0], [0, 0, 0, 1], [0.5, -1.0, 2.0, 5.0], [0.25, 0.5, 0.75, 1.0], [1, -2, 3, -4],
        -q * 2 + q / 2 - q], rtol=1e-6)
    p = [0.5, -1.0, 2.0]
    np.testing.assert_allclose(ox.numpy(), [
        p + list(q), p + [0, 0, 0, 1], [0] * 7, [0, 0, 0, 0, 0, 0, 1], [1, 2, 3, 4, 5, 6, 7], [0.5] * 7,
        [1, 2, 3, 0, 0.6, 0, 0.8], [0.5, 9.0, 2.0] + list(q)], rtol=1e-6)
    np.testing.assert_allclose(os.numpy(), [1.0, 4.0, 3.0, 2.0, 4.0, 2.0])


@wp.kernel
def operators_kernel(a: wp.array(dtype=wp.quatd), b: wp.array(dtype=wp.quatd), x: wp.array(dtype=wp.transformd),
                     y: wp.array(dtype=wp.transformd), oq: wp.array(dtype=wp.quatd), ox: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    oq[i] = a[i] * b[i] + 2.0 * a[i] - b[i] / 4.0
    ox[i] = x[i] * y[i]


def test_operator_syntax(device):
    rng = np.random.default_rng(3)
    a, b = _unit_quats(rng, N), _unit_quats(rng, N)
    x, y = _inputs("x", rng), _inputs("x", rng)
    arrs = [wp.array(v, dtype=t, device=device) for v, t in ((a, wp.quatd), (b, wp.quatd), (x, wp.transformd),
                                                             (y, wp.transformd))]
    oq = wp.zeros(N, dtype=wp.quatd, device=device)
    ox = wp.zeros(N, dtype=wp.transformd, device=device)
    wp.launch(operators_kernel, dim=N, inputs=[*arrs, oq, ox], device=device)
    np.testing.assert_allclose(oq.numpy(), np_qmul(a, b) + 2 * a - b / 4, atol=1e-12)
    np.testing.assert_allclose(ox.numpy(), np_xmul(x, y), atol=1e-12)


# ------------------------------------------------------------------------------------------------------------
# Semantics worth pinning down beyond the numpy references


@wp.kernel
def axis_angle_kernel(q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.quatd), angle: wp.array(dtype=float)):
    i = wp.tid()
    axis, a = wp.quat_to_axis_angle(q[i])
    out[i] = wp.quat_from_axis_angle(axis, a)
    angle[i] = float(a)


def test_quat_to_axis_angle_round_trip(device):
    rng = np.random.default_rng(5)
    q = rng.standard_normal((N, 4)) * 3.0
    qa = wp.array(q, dtype=wp.quatd, device=device)
    out = wp.zeros(N, dtype=wp.quatd, device=device)
    angle = wp.zeros(N, dtype=float, device=device)
    wp.launch(axis_angle_kernel, dim=N, inputs=[qa, out, angle], device=device)
    qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
    np.testing.assert_allclose(canonical_sign(out.numpy()), canonical_sign(qn), atol=1e-12)
    assert np.all((angle.numpy() >= 0) & (angle.numpy() <= np.pi + 1e-6))


def test_rotation_identities(device):
    """rotate(a * b, v) == rotate(a, rotate(b, v)); rpy applies roll, then pitch, then yaw about fixed axes."""
    rng = np.random.default_rng(11)
    a, b, v = _unit_quats(rng, N), _unit_quats(rng, N), rng.standard_normal((N, 3))
    ab = _launch("mul_qq", wp.float64, [a, b], device)
    lhs = _launch("quat_rotate", wp.float64, [ab, v], device)
    rhs = _launch("quat_rotate", wp.float64, [a, _launch("quat_rotate", wp.float64, [b, v], device)], device)
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    # Warp's documented example: a quarter turn of roll then of yaw maps (1, 2, 3) to (3, 1, 2)
    q = _launch("quat_rpy", wp.float64, [np.array([np.pi / 2]), np.array([0.0]), np.array([np.pi / 2])], device)
    p = _launch("quat_rotate", wp.float64, [q, np.array([[1.0, 2.0, 3.0]])], device)
    np.testing.assert_allclose(p, [[3.0, 1.0, 2.0]], atol=1e-12)


def test_slerp_endpoints_and_shortest_arc(device):
    rng = np.random.default_rng(13)
    a, b = _unit_quats(rng, N), rng.standard_normal((N, 4)) * 2.0
    bn = b / np.linalg.norm(b, axis=-1, keepdims=True)
    sign = np.where(np.sum(a * bn, -1) < 0, -1.0, 1.0)[:, None]
    np.testing.assert_allclose(_launch("quat_slerp", wp.float64, [a, b, np.zeros(N)], device), a, atol=1e-12)
    np.testing.assert_allclose(_launch("quat_slerp", wp.float64, [a, b, np.ones(N)], device), sign * bn, atol=1e-12)
    # nearly parallel inputs take the linear fallback without producing nan
    near = a + 1e-9
    mid = _launch("quat_slerp", wp.float64, [a, near, np.full(N, 0.5)], device)
    np.testing.assert_allclose(mid, a, atol=1e-8)


def test_quat_from_matrix_every_branch(device):
    """Rotations of about 180 degrees about x, y and z select the three non-trace branches of Shepperd's method."""
    rng = np.random.default_rng(17)
    axes = np.eye(3)
    q = np.concatenate([np_axis_angle(axes, np.full(3, 3.0)), _unit_quats(rng, 3)])
    m = np_qmat(q)
    got = _launch("quat_from_matrix", wp.float64, [m], device)
    np.testing.assert_allclose(canonical_sign(got), canonical_sign(q), atol=1e-12)
    arrays = [wp.array(m, dtype=wp.mat33d, device=device)]

    def fn(x):
        out = wp.zeros(len(m), dtype=wp.quatd, device=device)
        wp.launch(KERNELS[("quat_from_matrix", wp.float64)], dim=len(m), inputs=[x, out], device=device)
        return out

    gradcheck(fn, arrays)


def test_transform_inverse_composes_to_identity(device):
    rng = np.random.default_rng(19)
    x = _inputs("x", rng)
    xi = _launch("transform_inverse", wp.float64, [x], device)
    e = _launch("transform_multiply", wp.float64, [x, xi], device)
    np.testing.assert_allclose(e, np.tile([0, 0, 0, 0, 0, 0, 1.0], (N, 1)), atol=1e-12)  # q q* = +|q|^2


@wp.kernel
def _slerp_builtin(q0: wp.array(dtype=wp.quatd), q1: wp.array(dtype=wp.quatd), t: wp.array(dtype=wp.float64),
                   out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    out[i] = wp.quat_slerp(q0[i], q1[i], t[i])


@wp.kernel
def _slerp_composed(q0: wp.array(dtype=wp.quatd), q1: wp.array(dtype=wp.quatd), t: wp.array(dtype=wp.float64),
                    out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    axis, angle = wp.quat_to_axis_angle(wp.mul(wp.quat_inverse(q0[i]), q1[i]))
    out[i] = wp.mul(q0[i], wp.quat_from_axis_angle(axis, t[i] * angle))


def test_slerp_is_warps_composite_in_value_and_gradient():
    """quat_slerp is q0 * exp(t log(q0^-1 q1)) as Warp defines it: the same values and the same gradients as that
    composition, off the unit sphere too (a different extension gave different q0 gradients before)."""
    rng = np.random.default_rng(4)
    q = rng.normal(size=(2, 6, 4))
    q0 = wp.array(q[0] / np.linalg.norm(q[0], axis=1, keepdims=True), dtype=wp.quatd, requires_grad=True)
    q1 = wp.array(q[1] / np.linalg.norm(q[1], axis=1, keepdims=True), dtype=wp.quatd, requires_grad=True)
    t = wp.array(rng.uniform(0.0, 1.0, 6), dtype=wp.float64, requires_grad=True)
    grads = []
    for kernel in (_slerp_builtin, _slerp_composed):
        out = wp.zeros(6, dtype=wp.quatd, requires_grad=True)
        tape = Tape()
        with tape:
            wp.launch(kernel, 6, inputs=[q0, q1, t, out])
        tape.backward(grads={out: wp.array(np.ones((6, 4)), dtype=wp.quatd)})
        grads.append((out.numpy().copy(), q0.grad.numpy().copy(), q1.grad.numpy().copy(), t.grad.numpy().copy()))
        tape.zero()
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, atol=1e-10)

    def f(q0, q1, t):
        out = wp.zeros(6, dtype=wp.quatd, requires_grad=True)
        wp.launch(_slerp_builtin, 6, inputs=[q0, q1, t, out])
        return out

    gradcheck(f, [q0, q1, t], eps=1e-6)


@wp.kernel
def _negative_components(out: wp.array(dtype=float)):
    q = wp.quat(1.0, 2.0, 3.0, 4.0)
    q[-1] = 123.0
    q[-2] *= 2.0
    out[0] = q[0]
    out[1] = q[1]
    out[2] = q[2]
    out[3] = q[3]
    out[4] = q[-4]


def test_negative_quaternion_indices_count_from_the_end():
    # q[-2] read and wrote w before (every index other than 0, 1, 2 was w)
    out = wp.zeros(5, dtype=float)
    wp.launch(_negative_components, 1, inputs=[out])
    assert out.numpy().tolist() == [1.0, 2.0, 6.0, 123.0, 1.0]
