"""Warp's math helpers that are compositions of builtins (Warp's `warp.math`), written as `@func`s.

Their gradients are those of the builtins they are made of (the adjoint pass differentiates the bodies, branches
included), so none has a hand-written adjoint. Conventions follow Warp 1.19: quaternions are (x, y, z, w);
spatial vectors are (angular, linear); Euler sequences (i, j, k) are rotations about the fixed axes i, then j,
then k (axes 0, 1, 2 = x, y, z), and Euler angle vectors are indexed by axis. Angles in radians.
"""

from __future__ import annotations

from .compiler import lang as wp
from .compiler.function import func

from . import types as _T
from .types import Any


@func
def norm_l1(v: Any):
    """Sum of |v_i| of a float vector."""
    n = wp.abs(v[0])
    for i in range(1, len(v)):
        n += wp.abs(v[i])
    return n


@func
def norm_l2(v: Any):
    """Euclidean norm of a float vector (`length`)."""
    return wp.length(v)


@func
def norm_huber(v: Any, delta: float):
    """Huber norm: |v|^2 / 2 where |v| <= delta, else delta (|v| - delta / 2)."""
    a = wp.dot(v, v)
    if a <= delta * delta:
        return 0.5 * a
    return delta * (wp.sqrt(a) - 0.5 * delta)


@func
def norm_huber(v: Any):  # noqa: F811  (overload: delta = 1)
    return norm_huber(v, 1.0)


@func
def norm_pseudo_huber(v: Any, delta: float):
    """Pseudo-Huber norm delta sqrt(1 + |v|^2 / delta^2): smooth, ~|v|^2 / 2 near zero, ~delta |v| far out."""
    return delta * wp.sqrt(1.0 + wp.dot(v, v) / (delta * delta))


@func
def norm_pseudo_huber(v: Any):  # noqa: F811  (overload: delta = 1)
    return norm_pseudo_huber(v, 1.0)


@func
def smooth_normalize(v: Any, delta: float):
    """v divided by its pseudo-Huber norm: a normalisation that is smooth at zero (zero maps to zero)."""
    return v / norm_pseudo_huber(v, delta)


@func
def smooth_normalize(v: Any):  # noqa: F811  (overload: delta = 1)
    return smooth_normalize(v, 1.0)


@func
def velocity_at_point(qd: wp.spatial_vector, r: wp.vec3):
    """Linear velocity [m/s] of a point at offset r [m] from the origin of a frame moving with twist qd = (w, v)."""
    return wp.spatial_bottom(qd) + wp.cross(wp.spatial_top(qd), r)


@func
def quat_twist(axis: wp.vec3, q: wp.quat):
    """The twist part about the unit `axis` of q's swing-twist decomposition, as a unit quaternion."""
    imag = wp.vec3(q[0], q[1], q[2])
    along = wp.dot(imag, axis) * axis
    return wp.normalize(wp.quat(along[0], along[1], along[2], q[3]))


@func
def quat_twist_angle(axis: wp.vec3, q: wp.quat):
    """Unsigned twist angle of q about the unit `axis`: in [0, pi] when q[3] >= 0, else in (pi, 2 pi]."""
    s = wp.abs(wp.dot(axis, wp.vec3(q[0], q[1], q[2])))
    return 2.0 * wp.atan2(s, q[3])


@func
def quat_twist_angle_signed(axis: wp.vec3, q: wp.quat):
    """Twist angle of q about the unit `axis`, positive by the right-hand rule; in [-pi, pi] when q[3] >= 0."""
    s = wp.dot(axis, wp.vec3(q[0], q[1], q[2]))
    return 2.0 * wp.atan2(s, q[3])


@func
def quat_to_rpy(q: wp.quat):
    """(roll, pitch, yaw) of a unit quaternion: the inverse of quat_rpy (extrinsic x, y, z); pitch in
    [-pi/2, pi/2], inaccurate roll and yaw near gimbal lock."""
    x = q[0]
    y = q[1]
    z = q[2]
    w = q[3]
    roll = wp.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = wp.asin(wp.clamp(2.0 * (w * y - z * x), -1.0, 1.0))
    yaw = wp.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return wp.vec3(roll, pitch, yaw)


@func
def _axis_rotation(axis: int, angle: float):
    """Rotation of `angle` about coordinate axis 0, 1 or 2."""
    s = wp.sin(0.5 * angle)
    c = wp.cos(0.5 * angle)
    if axis == 0:
        return wp.quat(s, 0.0, 0.0, c)
    if axis == 1:
        return wp.quat(0.0, s, 0.0, c)
    return wp.quat(0.0, 0.0, s, c)


@func
def quat_from_euler(e: wp.vec3, i: int, j: int, k: int):
    """Rotation about the fixed axes i, then j, then k by the angles e[i], e[j], e[k]: q_k * q_j * q_i.
    `quat_from_euler(e, 0, 1, 2)` equals `quat_rpy(e[0], e[1], e[2])`."""
    return _axis_rotation(k, e[k]) * (_axis_rotation(j, e[j]) * _axis_rotation(i, e[i]))


@func
def _scalar_first(q: wp.quat, axis: int):
    """Component `axis` (1, 2, 3 = x, y, z) of q in the scalar-first numbering, 0 for the real part."""
    if axis == 1:
        return q[0]
    if axis == 2:
        return q[1]
    if axis == 3:
        return q[2]
    return q[3]


@func
def quat_to_euler(q: wp.quat, i: int, j: int, k: int):
    """Angles e (indexed by axis) with quat_from_euler(e, i, j, k) the rotation q, for Tait-Bryan sequences
    (i != k), gimbal lock included: the second angle in [-pi/2, pi/2]. For proper sequences (i == k) the third
    angle, also about axis i, is stored in e[3 - i - j] and the second is in [0, pi].

    The direct method of Bernardes and Viollet (PLoS ONE, 2022) on the scalar-first quaternion."""
    a1 = i + 1
    a2 = j + 1
    a3 = k + 1
    tait_bryan = a1 != a3
    if not tait_bryan:
        a3 = 6 - a1 - a2
    sign = float((a1 - a2) * (a2 - a3) * (a3 - a1)) / 2.0  # Levi-Civita symbol of (a1, a2, a3)
    a = q[3]
    b = _scalar_first(q, a1)
    c = _scalar_first(q, a2)
    d = _scalar_first(q, a3) * sign
    if tait_bryan:
        a_new = a - c
        b_new = b + d
        c_new = c + a
        d_new = d - b
        a = a_new
        b = b_new
        c = c_new
        d = d_new
    middle = wp.acos(2.0 * (a * a + b * b) / (a * a + b * b + c * c + d * d) - 1.0)
    plus = wp.atan2(b, a)
    minus = wp.atan2(d, c)
    first = 0.0
    third = 0.0
    if wp.abs(middle) < 1.0e-6:
        third = 2.0 * plus
    elif wp.abs(middle - wp.pi) < 1.0e-6:
        third = 2.0 * minus
    else:
        first = plus - minus
        third = plus + minus
    if tait_bryan:
        middle = middle - wp.HALF_PI
        third = third * sign
    return _place_angles(a1, a2, a3, first, middle, third)


@func
def _place_angles(a1: int, a2: int, a3: int, first: float, middle: float, third: float):
    """The vector with `first` at axis a1, `middle` at a2 and `third` at a3 (1-based axes)."""
    out = wp.vec3(0.0, 0.0, 0.0)
    out[a1 - 1] = first
    out[a2 - 1] = middle
    out[a3 - 1] = third
    return out


@func
def transform_twist(t: wp.transform, x: wp.spatial_vector):
    """Twist x = (w, v) in the source frame of t = (p, R), expressed in its destination: (R w, R v + p x R w)."""
    q = wp.transform_get_rotation(t)
    w = wp.quat_rotate(q, wp.spatial_top(x))
    v = wp.quat_rotate(q, wp.spatial_bottom(x)) + wp.cross(wp.transform_get_translation(t), w)
    return wp.spatial_vector(w, v)


@func
def transform_wrench(t: wp.transform, x: wp.spatial_vector):
    """Wrench x = (tau, f) in the source frame of t = (p, R), expressed in its destination: (R tau + p x R f, R f)."""
    q = wp.transform_get_rotation(t)
    f = wp.quat_rotate(q, wp.spatial_bottom(x))
    tau = wp.quat_rotate(q, wp.spatial_top(x)) + wp.cross(wp.transform_get_translation(t), f)
    return wp.spatial_vector(tau, f)


def _compose_decompose(vec3, quat, mat44, zero, one):
    """transform_compose/transform_decompose for one precision (vec3, quat, mat44 of float32 or float64)."""

    def transform_compose(position: vec3, rotation: quat, scale: vec3):
        """4x4 matrix [R(rotation) diag(scale) | position; 0 0 0 1]: scale first, then rotate, then translate."""
        r = wp.quat_to_matrix(rotation)
        return mat44(scale[0] * r[0, 0], scale[1] * r[0, 1], scale[2] * r[0, 2], position[0],
                     scale[0] * r[1, 0], scale[1] * r[1, 1], scale[2] * r[1, 2], position[1],
                     scale[0] * r[2, 0], scale[1] * r[2, 1], scale[2] * r[2, 2], position[2],
                     zero, zero, zero, one)

    def transform_decompose(m: mat44):
        """(position, rotation, scale) of a matrix made by transform_compose: the scales are the lengths of the
        first three columns (positive), the rotation that of the columns divided by them."""
        position = vec3(m[0, 3], m[1, 3], m[2, 3])
        c0 = vec3(m[0, 0], m[1, 0], m[2, 0])
        c1 = vec3(m[0, 1], m[1, 1], m[2, 1])
        c2 = vec3(m[0, 2], m[1, 2], m[2, 2])
        scale = vec3(wp.length(c0), wp.length(c1), wp.length(c2))
        r = wp.matrix_from_cols(c0 / scale[0], c1 / scale[1], c2 / scale[2])
        return position, wp.quat_from_matrix(r), scale

    # the annotations name this precision's types (this module's `from __future__ import annotations` keeps
    # them as text, which would be looked up among the module's globals)
    transform_compose.__annotations__ = {"position": vec3, "rotation": quat, "scale": vec3}
    transform_decompose.__annotations__ = {"m": mat44}
    return transform_compose, transform_decompose


def _transform_matrix_for(vec3, mat33, mat44, transform, zero, one):
    """transform_to_matrix/transform_from_matrix for one precision."""

    def transform_to_matrix(xform: transform):
        """4x4 matrix [R | p; 0 0 0 1] of a transform (p, R)."""
        p = wp.transform_get_translation(xform)
        r = wp.quat_to_matrix(wp.transform_get_rotation(xform))
        return mat44(r[0, 0], r[0, 1], r[0, 2], p[0],
                     r[1, 0], r[1, 1], r[1, 2], p[1],
                     r[2, 0], r[2, 1], r[2, 2], p[2],
                     zero, zero, zero, one)

    def transform_from_matrix(mat: mat44):
        """The transform (p, R) of a 4x4 matrix [R | p; ...]: its last column and the rotation of its upper-left
        3x3 block (quat_from_matrix)."""
        r = mat33(mat[0, 0], mat[0, 1], mat[0, 2], mat[1, 0], mat[1, 1], mat[1, 2], mat[2, 0], mat[2, 1], mat[2, 2])
        return transform(vec3(mat[0, 3], mat[1, 3], mat[2, 3]), wp.quat_from_matrix(r))

    transform_to_matrix.__annotations__ = {"xform": transform}
    transform_from_matrix.__annotations__ = {"mat": mat44}
    return transform_to_matrix, transform_from_matrix


# float32 first: a call whose types match no overload reports against the first one, as Warp's float32 default
for _types in ((wp.vec3, wp.quat, wp.mat33, wp.mat44, wp.transform, 0.0, 1.0),
               (_T.vec3h, _T.quath, _T.mat33h, _T.mat44h, _T.transformh, _T.float16(0.0), _T.float16(1.0)),
               (wp.vec3d, wp.quatd, wp.mat33d, wp.mat44d, _T.transformd, wp.float64(0.0), wp.float64(1.0))):
    vec3_, quat_, mat33_, mat44_, transform_, zero_, one_ = _types
    _compose, _decompose = _compose_decompose(vec3_, quat_, mat44_, zero_, one_)
    transform_compose = func(_compose)
    transform_decompose = func(_decompose)
    _to_matrix, _from_matrix = _transform_matrix_for(vec3_, mat33_, mat44_, transform_, zero_, one_)
    transform_to_matrix = func(_to_matrix)
    transform_from_matrix = func(_from_matrix)


def _spatial_adjoint_for(mat33, mat66):
    def spatial_adjoint(r: mat33, s: mat33):
        """6x6 [[r, 0], [s, r]]: with r = R and s = skew(p) R of a transform (R, p), it maps a twist (w, v) to
        (R w, p x R w + R v)."""
        a = mat66()
        for i in range(3):
            for j in range(3):
                a[i, j] = r[i, j]
                a[i + 3, j + 3] = r[i, j]
                a[i + 3, j] = s[i, j]
        return a

    spatial_adjoint.__annotations__ = {"r": mat33, "s": mat33}
    return spatial_adjoint


for _types in ((wp.mat33, wp.spatial_matrix), (_T.mat33h, _T.spatial_matrixh), (wp.mat33d, wp.spatial_matrixd)):
    spatial_adjoint = func(_spatial_adjoint_for(*_types))
