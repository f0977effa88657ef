"""Vector and matrix builtins: constructors, component access, operators and linear algebra (Warp semantics).

Native code: kernels/native/vec.h and kernels/native/mat.h.

Where Warp's behaviour is a choice, we follow it: `m[i]` is row i; `v * m` is the row-vector product v^T m;
`s / v` and `s / m` divide componentwise; negative indices count from the end (never bounds-checked);
`normalize` of a zero vector and `inverse` of a singular matrix give zeros; `min`/`max` skip NaN like fmin/fmax.
A matrix cannot be constructed from vectors (`wp.mat33(v0, v1, v2)` is an error in Warp 1.19): use
`matrix_from_rows` or `matrix_from_cols`.
"""

from __future__ import annotations

from .. import types as T
from .registry import M, S, TypeArg, V, add_builtin, declare_properties

F = S("T", "float")
N = S("T", "scalar")
# constructors, component reads and writes take bool components too (Warp's vector(dtype=bool), matrix(...))
B = S("T", "any")
IDX = S("I", "int")

# v[i] and "v with component i replaced" (also of matrices, quaternions, transforms and tiles) move components
declare_properties("extract", moves_components=True, exposed=False)
declare_properties("assign", moves_components=True, exposed=False)

# Constructors from components and `matrix_from_rows/cols` need one overload per argument count.
MAX_VECTOR_LENGTH = 16
MAX_MATRIX_DIM = 8
MAX_MATRIX_VECTORS = 16

_GROUP = "vector"


def _builtin(name, args, ret, native=None, **kw):
    add_builtin(name, args, ret, native, group=_GROUP, **kw)


# ----------------------------------------------------------------------------------------------------------------
# Constructors: `wp.vec3(...)`, `wp.mat33(...)`. The target type arrives as the first (TypeArg) argument and is
# rendered as the template argument: wp::vec_fill<wp::vec_t<3, wp::float32>>(x).

_builtin("construct_vector", (TypeArg(V("N", B)),), V("N", B), "vec_zero", template_ret=True,
         doc="vecN() with every component zero")
_builtin("construct_vector", (TypeArg(V("N", B)), B), V("N", B), "vec_fill", template_ret=True,
         doc="vecN(s): every component s")
for _n in range(2, MAX_VECTOR_LENGTH + 1):
    _builtin("construct_vector", (TypeArg(V(_n, B)),) + (B,) * _n, V(_n, B), "vec_from_components",
             template_ret=True, doc=f"vec{_n}(x0, ..., x{_n - 1}) from components")
_builtin("construct_vector", (TypeArg(V("N", N)), V("N", S("U", "scalar"))), V("N", N), "vec_cast",
         template_ret=True, doc="vecN(v): convert each component of a vector of another scalar type")
_builtin("construct_vector", (TypeArg(V(6, N)), V(3, N), V(3, N)), V(6, N), "vec_from_halves", template_ret=True,
         doc="spatial_vector(w, v): angular part w on top, linear part v below")

_builtin("construct_matrix", (TypeArg(M("R", "C", B)),), M("R", "C", B), "mat_zero", template_ret=True,
         doc="matRC() with every element zero")
_builtin("construct_matrix", (TypeArg(M("R", "C", B)), B), M("R", "C", B), "mat_fill", template_ret=True,
         doc="matRC(s): every element s")
for _r in range(1, MAX_MATRIX_DIM + 1):
    for _c in range(1, MAX_MATRIX_DIM + 1):
        if _r * _c > 1:
            _builtin("construct_matrix", (TypeArg(M(_r, _c, B)),) + (B,) * (_r * _c), M(_r, _c, B),
                     "mat_from_components", template_ret=True,
                     doc=f"mat{_r}{_c}(x00, x01, ...) from elements in row-major order")
_builtin("construct_matrix", (TypeArg(M("R", "C", N)), M("R", "C", S("U", "scalar"))), M("R", "C", N), "mat_cast",
         template_ret=True, doc="matRC(m): convert each element of a matrix of another scalar type")

for _k in range(1, MAX_MATRIX_VECTORS + 1):
    _builtin("matrix_from_rows", (V("N", N),) * _k, M(_k, "N", N), template_ret=True,
             doc="matrix whose rows are the given vectors (k vectors of length n give a k x n matrix)")
    _builtin("matrix_from_cols", (V("N", N),) * _k, M("N", _k, N), template_ret=True,
             doc="matrix whose columns are the given vectors (k vectors of length n give an n x k matrix)")

# identity(n=3, dtype=float): the size is a compile-time value, which a type pattern cannot see. A typeinfer
# special form reads n and dtype and resolves this overload with the matrix type as a TypeArg (as constructors do).
_builtin("identity", (TypeArg(M("N", "N", N)),), M("N", "N", N), "identity", template_ret=True,
         differentiable=False, arg_names=("type",), doc="identity(n, dtype): the n x n identity matrix")

# ----------------------------------------------------------------------------------------------------------------
# Component access: v[i], v.x, m[i] (a row), m[i, j]; and the functional updates behind v[i] = x, m[i, j] = x,
# m[i] = row. `assign` returns the updated value.

_builtin("extract", (V("N", B), IDX), "T", doc="v[i]")
_builtin("extract", (M("R", "C", B), IDX), V("C", B), doc="m[i]: row i")
_builtin("extract", (M("R", "C", B), IDX, S("J", "int")), "T", doc="m[i, j]")
_builtin("assign", (V("N", B), IDX, B), V("N", B), doc="v with component i replaced")
_builtin("assign", (M("R", "C", B), IDX, S("J", "int"), B), M("R", "C", B), doc="m with element (i, j) replaced")
_builtin("assign", (M("R", "C", B), IDX, V("C", B)), M("R", "C", B), doc="m with row i replaced")

# ----------------------------------------------------------------------------------------------------------------
# Operators (`@` maps to mul as well)

_INT = S("T", "int")
for _t in (V("N", _INT), M("R", "C", _INT)):
    for _name, _op in (("bit_and", "&"), ("bit_or", "|"), ("bit_xor", "^"), ("lshift", "<<"), ("rshift", ">>")):
        _builtin(_name, (_t, _t), _t, differentiable=False, doc=f"a {_op} b, componentwise (integer components)")
    _builtin("invert", (_t,), _t, differentiable=False, doc="~a, componentwise (integer components)")

for _t in (V("N", N), M("R", "C", N)):
    _builtin("add", (_t, _t), _t, doc="a + b")
    _builtin("sub", (_t, _t), _t, doc="a - b")
    _builtin("neg", (_t,), _t, doc="-a")
    _builtin("pos", (_t,), _t, doc="+a")
    _builtin("mul", (_t, N), _t, doc="a * s")
    _builtin("mul", (N, _t), _t, doc="s * a")
    _builtin("div", (_t, N), _t, doc="a / s")
    _builtin("div", (N, _t), _t, doc="s / a, componentwise")
    _builtin("eq", (_t, _t), T.bool_, differentiable=False, doc="a == b (every component)")
    _builtin("ne", (_t, _t), T.bool_, differentiable=False, doc="a != b (any component)")
    _builtin("cw_mul", (_t, _t), _t, doc="componentwise product")
    _builtin("cw_div", (_t, _t), _t, doc="componentwise quotient")

for _t in (V("N", F), M("R", "C", F)):
    _builtin("lerp", (_t, _t, F), _t, doc="a * (1 - t) + b * t")
_builtin("mul", (M("R", "C", N), V("C", N)), V("R", N), doc="m * v: matrix times column vector")
_builtin("mul", (V("R", N), M("R", "C", N)), V("C", N), doc="v * m: row vector times matrix (v^T m)")
_builtin("mul", (M("R", "K", N), M("K", "C", N)), M("R", "C", N), doc="matrix product")
_builtin("mod", (V("N", N), V("N", N)), V("N", N), doc="componentwise a % b with the sign of a")

# ----------------------------------------------------------------------------------------------------------------
# Vector functions

_builtin("dot", (V("N", N), V("N", N)), "T", doc="dot product")
_builtin("cross", (V(3, N), V(3, N)), V(3, N), doc="cross product of 3-vectors")
_builtin("length", (V("N", F),), "T", doc="Euclidean length")
_builtin("length_sq", (V("N", N),), "T", doc="squared Euclidean length")
_builtin("normalize", (V("N", F),), V("N", F), doc="v / length(v); the zero vector stays zero")
_builtin("min", (V("N", N), V("N", N)), V("N", N), doc="componentwise minimum (NaN components are skipped)")
_builtin("max", (V("N", N), V("N", N)), V("N", N), doc="componentwise maximum (NaN components are skipped)")
_builtin("min", (V("N", N),), "T", doc="smallest component")
_builtin("max", (V("N", N),), "T", doc="largest component")
_builtin("argmin", (V("N", N),), T.uint32, differentiable=False, doc="index of the first smallest component")
_builtin("argmax", (V("N", N),), T.uint32, differentiable=False, doc="index of the first largest component")
_builtin("abs", (V("N", N),), V("N", N), doc="componentwise absolute value")
_builtin("sign", (V("N", N),), V("N", N), doc="componentwise -1 if x < 0 else 1 (zero derivative)")
_builtin("outer", (V("R", N), V("C", N)), M("R", "C", N), doc="outer product a b^T")
_builtin("diag", (V("N", N),), M("N", "N", N), doc="square matrix with v on the diagonal")
_builtin("skew", (V(3, F),), M(3, 3, F), doc="cross-product matrix: skew(a) * b == cross(a, b)")

# ----------------------------------------------------------------------------------------------------------------
# Matrix functions

_builtin("transpose", (M("R", "C", N),), M("C", "R", N), doc="transpose")
_builtin("trace", (M("N", "N", N),), "T", doc="sum of the diagonal")
_builtin("get_diag", (M("N", "N", N),), V("N", N), doc="diagonal of a square matrix")
_builtin("ddot", (M("R", "C", N), M("R", "C", N)), "T", doc="double dot product: sum of a_ij * b_ij")
for _n in (2, 3, 4):
    _builtin("determinant", (M(_n, _n, F),), "T", doc="determinant (2x2, 3x3, 4x4)")
    _builtin("inverse", (M(_n, _n, F),), M(_n, _n, F), doc="inverse (2x2, 3x3, 4x4); zero if singular")

# ----------------------------------------------------------------------------------------------------------------
# Spatial vectors (length 6: angular part on top, linear part below)

_builtin("spatial_top", (V(6, N),), V(3, N), doc="first three components (angular part)")
_builtin("spatial_bottom", (V(6, N),), V(3, N), doc="last three components (linear part)")
_builtin("spatial_dot", (V(6, N), V(6, N)), "T", doc="dot product of spatial vectors")
_builtin("spatial_cross", (V(6, N), V(6, N)), V(6, N), doc="motion cross product (wa x wb, va x wb + wa x vb)")
_builtin("spatial_cross_dual", (V(6, N), V(6, N)), V(6, N), doc="force cross product (wa x wb + va x vb, wa x vb)")
