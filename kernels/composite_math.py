"""Numpy arithmetic of composite values' components that the Python-side operators of `kernels.types` share with
nothing of the types themselves: C++ integer division, the quaternion product and rotation."""

from __future__ import annotations

import numpy as np


def c_divide(a, b, is_int: bool):
    """`a / b` component by component: true division for floats, C++'s (truncating toward zero) for integers."""
    if not is_int:
        return np.true_divide(a, b)
    a, b = np.asarray(a), np.asarray(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def quat_product(a, b):
    """The quaternion product a * b of (x, y, z, w) component arrays."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - np.dot(av, bv)]])


def quat_rotate_vector(q, v):
    """The vector v rotated by the unit quaternion q (x, y, z, w)."""
    qv, qw = q[:3], q[3]
    return v * (2.0 * qw * qw - 1.0) + np.cross(qv, v) * qw * 2.0 + qv * np.dot(qv, v) * 2.0
