"""Quaternion and transform builtins (Warp 1.19's "Quaternion Math" and "Transformations" groups), for
float16/float32/float64. Spatial vectors (spatial_top, spatial_cross, ...) are the vector group's.

Conventions, as in Warp: a quaternion is (x, y, z, w) with w the real part; `a * b` is the Hamilton product and
applies b first; a transform is (p, q) and maps x to quat_rotate(q, x) + p. `wp.quat()` and `wp.transform()` are
all zeros; `quat_identity()` / `transform_identity()` give the identity rotation.

Native code: kernels/native/quat.h and kernels/native/transform.h (forward and adjoint side by side).
Gradient choices: quat_rotate uses v (2w^2 - 1) + 2w (u x v) + 2u (u . v), which fixes its derivative off the unit
sphere; normalize of a zero quaternion is zero with zero gradient; quat_from_matrix differentiates the Shepperd
branch taken (then the normalization); quat_slerp differentiates through normalize(b) and its sign flip, and falls
back to linear interpolation (and its gradient) when the inputs are within 1e-6 of parallel.
"""

from __future__ import annotations

from .. import types as T
from .registry import M, Q, S, TypeArg, V, X, add_builtin, declare_properties

F = S("T", "float")
U = S("U", "float")  # the source scalar type of a conversion
IDX = S("I", "int")
QF, XF = Q(F), X(F)
V3 = V(3, F)
GROUP_QUAT, GROUP_XFORM = "quaternion", "transform"


def _quat(name, args, ret, doc, arg_names, **kw):
    add_builtin(name, args, ret, group=GROUP_QUAT, doc=doc, arg_names=arg_names, **kw)


def _xform(name, args, ret, doc, arg_names, **kw):
    add_builtin(name, args, ret, group=GROUP_XFORM, doc=doc, arg_names=arg_names, **kw)


# ---- quaternion construction (`wp.quat(...)` resolves to construct_quat with the target type first) -------------

_CONSTRUCT = dict(native="construct_quat", template_ret=True)
_quat("construct_quat", (TypeArg(QF),), QF, "quat(): all zeros", ("dtype",), **_CONSTRUCT)
_quat("construct_quat", (TypeArg(QF), F, F, F, F), QF, "quat(x, y, z, w); w is the real part",
      ("dtype", "x", "y", "z", "w"), **_CONSTRUCT)
_quat("construct_quat", (TypeArg(QF), V3, F), QF, "quat(ijk, real): imaginary and real parts", ("dtype", "ijk", "real"),
      **_CONSTRUCT)
_quat("construct_quat", (TypeArg(QF), Q(U)), QF, "quat(q): a copy, converted to the target scalar type",
      ("dtype", "quat"), **_CONSTRUCT)
_quat("quat_identity", (), T.quatf, "the identity rotation (0, 0, 0, 1), float32", (), template_ret=True,
      differentiable=False)
_quat("quat_identity", (TypeArg(F),), QF, "the identity rotation (0, 0, 0, 1) of scalar type dtype", ("dtype",),
      template_ret=True, differentiable=False)

# ---- quaternion arithmetic ------------------------------------------------------------------------------------

_quat("add", (QF, QF), QF, "component-wise a + b", ("a", "b"))
_quat("sub", (QF, QF), QF, "component-wise a - b", ("a", "b"))
_quat("neg", (QF,), QF, "-q", ("a",))
_quat("mul", (QF, QF), QF, "Hamilton product; rotations compose right to left", ("a", "b"))
_quat("mul", (QF, F), QF, "q * s", ("a", "b"))
_quat("mul", (F, QF), QF, "s * q", ("a", "b"))
_quat("div", (QF, F), QF, "q / s", ("a", "b"))
_quat("div", (F, QF), QF, "s / q, component by component", ("a", "b"))
_quat("dot", (QF, QF), "T", "4-d dot product", ("a", "b"))
_quat("length", (QF,), "T", "Euclidean norm of the 4 components", ("a",))
_quat("length_sq", (QF,), "T", "squared norm of the 4 components", ("a",))
_quat("normalize", (QF,), QF, "q / |q|; zero stays zero", ("a",))
_quat("lerp", (QF, QF, F), QF, "a * (1 - t) + b * t (not normalized)", ("a", "b", "t"))
_quat("extract", (QF, IDX), "T", "q[i], i in 0..3 (x, y, z, w)", ("a", "i"))
_quat("assign", (QF, IDX, F), QF, "a copy of q with q[i] = value", ("a", "i", "value"))

# ---- rotations --------------------------------------------------------------------------------------------------

_quat("quat_inverse", (QF,), QF, "conjugate (-x, -y, -z, w): the inverse of a unit quaternion", ("quat",))
_quat("quat_from_axis_angle", (V3, F), QF, "rotation of angle [rad] about the unit axis, right-handed",
      ("axis", "angle"))
_quat("quat_to_axis_angle", (QF,), (V3, F),
      "(axis, angle [rad] in [0, pi]) of normalize(quat); a zero axis for a zero angle (as Warp)", ("quat",))
_quat("quat_rotate", (QF, V3), V3, "vec rotated by quat (unit length expected)", ("quat", "vec"))
_quat("quat_rotate_inv", (QF, V3), V3, "vec rotated by the inverse of quat", ("quat", "vec"))
_quat("quat_to_matrix", (QF,), M(3, 3, F), "3x3 rotation matrix m with m @ v == quat_rotate(quat, v)", ("quat",))
_quat("quat_from_matrix", (M(3, 3, F),), QF, "unit quaternion of a rotation matrix (sign unspecified)", ("mat",))
_quat("quat_from_matrix", (M(4, 4, F),), QF, "unit quaternion of the top-left 3x3 block (sign unspecified)", ("mat",))
_quat("quat_rpy", (F, F, F), QF, "qz * qy * qx: extrinsic rotations about x (roll), y (pitch), z (yaw) [rad]",
      ("roll", "pitch", "yaw"))
_quat("quat_slerp", (QF, QF, F), QF,
      "spherical interpolation on the shortest arc: a at t = 0, +-normalize(b) at t = 1", ("a", "b", "t"))

for _name, _doc in (("eq", "a == b (every component)"), ("ne", "a != b (any component)")):
    _quat(_name, (QF, QF), T.bool_, _doc, ("a", "b"), differentiable=False)
    _xform(_name, (XF, XF), T.bool_, _doc, ("a", "b"), differentiable=False)

# ---- transforms (`wp.transform(...)` resolves to construct_transform) --------------------------------------------

_CONSTRUCT = dict(native="construct_transform", template_ret=True)
_xform("construct_transform", (TypeArg(XF),), XF, "transform(): all zeros, the quaternion too", ("dtype",),
       **_CONSTRUCT)
_xform("construct_transform", (TypeArg(XF), V3, QF), XF, "transform(p, q): translation p, rotation q",
       ("dtype", "p", "q"), **_CONSTRUCT)
_xform("construct_transform", (TypeArg(XF), V3), XF, "transform(p): translation p, identity rotation",
       ("dtype", "p"), **_CONSTRUCT)
_xform("construct_transform", (TypeArg(XF),) + (F,) * 7, XF, "transform(px, py, pz, qx, qy, qz, qw)",
       ("dtype", "px", "py", "pz", "qx", "qy", "qz", "qw"), **_CONSTRUCT)
_xform("construct_transform", (TypeArg(XF), F), XF, "transform(s): every component s", ("dtype", "value"),
       native="construct_transform_fill", template_ret=True)
_xform("construct_transform", (TypeArg(XF), X(U)), XF, "transform(t): a copy, converted to the target scalar type",
       ("dtype", "xform"), **_CONSTRUCT)
_xform("transform_identity", (), T.transformf, "zero translation, identity rotation, float32", (), template_ret=True,
       differentiable=False)
_xform("transform_identity", (TypeArg(F),), XF, "zero translation, identity rotation, of scalar type dtype",
       ("dtype",), template_ret=True, differentiable=False)

_xform("transform_get_translation", (XF,), V3, "xform.p", ("xform",))
_xform("transform_get_rotation", (XF,), QF, "xform.q", ("xform",))
# a part of a transform, or a transform of parts (or converted), copied: no primal value in their adjoints, so a
# component write into an array element may follow them (passes/adjoint.py _check_overwrites)
for _name in ("transform_get_translation", "transform_get_rotation", "construct_transform"):
    declare_properties(_name, moves_components=True)
_xform("extract", (XF, IDX), "T", "xform[i] in the layout (px, py, pz, qx, qy, qz, qw)", ("a", "i"))
_xform("assign", (XF, IDX, F), XF, "a copy of xform with xform[i] = value", ("a", "i", "value"))
_xform("add", (XF, XF), XF, "component-wise a + b", ("a", "b"))
_xform("sub", (XF, XF), XF, "component-wise a - b", ("a", "b"))
_xform("mul", (XF, XF), XF, "transform_multiply(a, b): b applied first", ("a", "b"))
_xform("mul", (XF, F), XF, "component-wise xform * s", ("a", "b"))
_xform("mul", (F, XF), XF, "component-wise s * xform", ("a", "b"))
_xform("lerp", (XF, XF, F), XF, "component-wise a * (1 - t) + b * t", ("a", "b", "t"))
_xform("transform_multiply", (XF, XF), XF, "composition a * b: p = a.p + rotate(a.q, b.p), q = a.q * b.q", ("a", "b"))
_xform("transform_inverse", (XF,), XF, "inverse of a transform with a unit rotation", ("xform",))
_xform("transform_point", (XF, V3), V3, "quat_rotate(xform.q, point) + xform.p", ("xform", "point"))
_xform("transform_point", (M(4, 4, F), V3), V3, "first 3 components of mat @ (point, 1)", ("mat", "point"))
_xform("transform_vector", (XF, V3), V3, "quat_rotate(xform.q, vec) (no translation)", ("xform", "vec"))
_xform("transform_vector", (M(4, 4, F), V3), V3, "first 3 components of mat @ (vec, 0)", ("mat", "vec"))
