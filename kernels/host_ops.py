"""Operators on vector, matrix, quaternion and transform values in ordinary Python (outside kernels).

They follow the kernel semantics of the same operators: `*` is the matrix/quaternion/transform product where the
kernel has one (mat * vec, vec * mat, quat * quat, transform * transform), integer division truncates toward zero
and `%` takes the sign of the dividend (C++), and integer results wrap around like the C++ types.
"""

from __future__ import annotations

import numpy as np


def _is_value(x) -> bool:
    from .types import Composite
    return isinstance(x, Composite)


def _data(x, shape=None) -> np.ndarray:
    """Components of a composite (in its shape) or of a sequence/scalar operand as a numpy array."""
    if _is_value(x):
        return x._data.reshape(x._shape_)
    a = np.asarray(x)
    return a.reshape(shape) if shape is not None and a.size == int(np.prod(shape)) else a


def _wrap(like, data, cls=None):
    """A value of `cls` (default: the type of `like`) holding `data`, converted to its scalar type (ints wrap)."""
    from . import types as T
    cls = cls or type(like)
    out = cls.__new__(cls)
    st = T.value_dtype(cls._wp_scalar_type_)
    a = np.asarray(data)
    if a.dtype != st:
        a = a.astype(st) if st.kind != "f" or a.dtype.kind != "O" else a.astype(np.float64).astype(st)
    a = np.array(a, dtype=st).reshape(-1)
    object.__setattr__(out, "_data", T.halfbits.round_to_bfloat16(a) if cls._wp_scalar_type_ is T.bfloat16 else a)
    return out


def _div(a, b, is_int: bool):
    if not is_int:
        return np.true_divide(a, b)
    a, b = np.asarray(a), np.asarray(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def elementwise(x, y, op: str, reverse: bool = False):
    """`x op y` (or `y op x` when `reverse`) component by component. x is a composite; y a composite or sequence
    of the same shape, or for `/` a scalar."""
    a = _data(x)
    b = _data(y, x._shape_)
    if np.shape(b) != a.shape and not (op == "/" and np.ndim(b) == 0):
        raise TypeError(f"cannot apply '{op}' to {type(x).__name__} and {type(y).__name__}")
    if reverse:
        a, b = b, a
    is_int = x._wp_scalar_type_._kind_ in ("int", "uint")
    with np.errstate(over="ignore"):
        if op == "+":
            r = np.add(a, b)
        elif op == "-":
            r = np.subtract(a, b)
        elif op == "/":
            r = _div(a, b, is_int)
        else:
            r = np.fmod(a, b)
    return _wrap(x, r)


def _quat_mul(a, b):
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - np.dot(av, bv)]])


def _quat_rotate(q, v):
    qv, qw = q[:3], q[3]
    return v * (2.0 * qw * qw - 1.0) + np.cross(qv, v) * qw * 2.0 + qv * np.dot(qv, v) * 2.0


def product(x, y, reverse: bool = False):
    """`x * y` (or `y * x` when `reverse`) for a composite x: scaling by a scalar, else the kernel's product."""
    if not _is_value(y) and np.ndim(y) == 0:
        with np.errstate(over="ignore"):
            return _wrap(x, np.multiply(_data(y), _data(x)) if reverse else np.multiply(_data(x), _data(y)))
    left, right = (y, x) if reverse else (x, y)
    return matmul(left, right)


def matmul(left, right):
    """The kernel's `mul` of two composites: mat @ mat, mat @ vec, vec @ mat, quat * quat, transform * transform."""
    from .types import is_matrix, is_quat, is_transform, is_vector, matrix, vector
    lt, rt = type(left), type(right)
    if not _is_value(left):
        left = _wrap(right, left, vector(len(left), rt._wp_scalar_type_)) if np.ndim(left) == 1 else left
        lt = type(left)
    if not _is_value(right):
        right = _wrap(left, right, vector(len(right), lt._wp_scalar_type_)) if np.ndim(right) == 1 else right
        rt = type(right)
    a, b = _data(left), _data(right)
    with np.errstate(over="ignore"):
        if is_quat(lt) and is_quat(rt):
            return _wrap(left, _quat_mul(a, b))
        if is_transform(lt) and is_transform(rt):
            p = a[:3] + _quat_rotate(a[3:], b[:3])
            return _wrap(left, np.concatenate([p, _quat_mul(a[3:], b[3:])]))
        if (is_matrix(lt) or is_vector(lt)) and (is_matrix(rt) or is_vector(rt)) and \
                not (is_vector(lt) and is_vector(rt)):
            if a.shape[-1] != b.shape[0]:
                raise TypeError(f"cannot multiply {lt.__name__} by {rt.__name__}: shapes {a.shape} and {b.shape}")
            r = np.matmul(a, b)
            st = lt._wp_scalar_type_
            cls = vector(r.shape[0], st) if r.ndim == 1 else matrix(r.shape, st)
            return _wrap(left, r, cls)
    raise TypeError(f"no product of {lt.__name__} and {rt.__name__}")


def equal(x, other) -> bool:
    """Warp's `==` on values: same shape and equal components; never raises for another shape."""
    a = _data(x)
    try:
        b = np.asarray(_data(other))
    except (ValueError, TypeError):
        return False
    if b.shape != a.shape:
        if b.size != a.size or b.ndim != 1 or a.ndim == 1:
            return False
        b = b.reshape(a.shape)
    return bool(np.all(a == b))


def to_str(x) -> str:
    """`str()` of a value as Warp prints it: `[1.0, 2.0]`, matrices one row per line."""
    a = _data(x)
    if a.ndim == 1:
        return "[" + ", ".join(str(v) for v in a) + "]"
    return "[" + ",\n ".join("[" + ", ".join(str(v) for v in row) + "]" for row in a) + "]"
