"""Spatial math for host code (numpy, float64): quaternions (x, y, z, w), rotation matrices and transforms
(px, py, pz, qx, qy, qz, qw), as the builder, the importers, the scene code and the viewer use them. The one
home of these helpers; kernels use the kernel language's own builtins (wp.quat_rotate, wp.transform_point, ...)."""

from __future__ import annotations

import math

import numpy as np

import kernels as wp

IDENTITY_TRANSFORM = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def quat_identity():
    """The identity rotation as a wp.quat (x, y, z, w)."""
    return wp.quat(0.0, 0.0, 0.0, 1.0)


def quat_from_axis_angle(axis, angle: float):
    """Rotation of `angle` radians about `axis` (normalised here) as a wp.quat."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    s = math.sin(angle * 0.5)
    return wp.quat(a[0] * s, a[1] * s, a[2] * s, math.cos(angle * 0.5))


def quat_normalized(rot) -> np.ndarray:
    """A rotation given as a wp.quat or an (x, y, z, w) sequence, as a unit quaternion, shape (4,); ValueError for
    anything else or a zero quaternion."""
    q = np.asarray(rot, dtype=np.float64).reshape(-1)
    if q.shape != (4,):
        raise ValueError(f"a rotation is a quaternion (x, y, z, w), got {rot!r}")
    n = np.linalg.norm(q)
    if n == 0:
        raise ValueError("a rotation quaternion must not be zero")
    return q / n


def quat_rotate(q, v) -> np.ndarray:
    """Rotate vectors v, shape (3,) or (n, 3), by unit quaternion q (x, y, z, w), shape (4,) or (n, 4) (row i of
    v by row i of q)."""
    q = np.asarray(q, dtype=np.float64)
    u, w = q[..., :3], q[..., 3:4]
    v = np.asarray(v, dtype=np.float64)
    return v * (2 * w * w - 1) + 2 * w * np.cross(u, v) + 2 * np.sum(v * u, axis=-1, keepdims=True) * u


def quat_multiply(a, b) -> np.ndarray:
    """The product a * b of quaternions (x, y, z, w): the rotation b, then a."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def matrix_from_quat(q) -> np.ndarray:
    """The 3x3 rotation matrix of a unit quaternion (x, y, z, w); its columns are the rotated axes."""
    x, y, z, w = np.asarray(q, dtype=np.float64)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quat_from_matrix(r) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a 3x3 rotation matrix."""
    r = np.asarray(r, dtype=np.float64)
    w = math.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2.0
    x = math.copysign(math.sqrt(max(0.0, 1.0 + r[0, 0] - r[1, 1] - r[2, 2])) / 2.0, r[2, 1] - r[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1.0 - r[0, 0] + r[1, 1] - r[2, 2])) / 2.0, r[0, 2] - r[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1.0 - r[0, 0] - r[1, 1] + r[2, 2])) / 2.0, r[1, 0] - r[0, 1])
    q = np.array([x, y, z, w])
    return q / np.linalg.norm(q)


def quat_between(u, v) -> np.ndarray:
    """The shortest rotation taking unit vector u onto unit vector v (x, y, z, w)."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    c = float(u @ v)
    if c < -1.0 + 1e-12:  # opposite: half a turn about any axis perpendicular to u
        perp = np.cross(u, (1.0, 0.0, 0.0) if abs(u[0]) < 0.9 else (0.0, 1.0, 0.0))
        return np.concatenate([perp / np.linalg.norm(perp), [0.0]])
    q = np.concatenate([np.cross(u, v), [1.0 + c]])
    return q / np.linalg.norm(q)


def transform_normalized(xform, what: str = "a transform") -> np.ndarray:
    """(px, py, pz, qx, qy, qz, qw) with a unit quaternion from a wp.transform, a 7-sequence or None (identity);
    ValueError for anything else."""
    if xform is None:
        return np.array(IDENTITY_TRANSFORM)
    t = np.asarray(xform, dtype=np.float64).reshape(-1)
    if t.shape != (7,) or not np.linalg.norm(t[3:]) > 0:
        raise ValueError(f"{what} is (px, py, pz, qx, qy, qz, qw), got {xform!r}")
    return np.concatenate([t[:3], t[3:] / np.linalg.norm(t[3:])])


def transform_multiply(a, b) -> np.ndarray:
    """The transform a * b (b applied first), both (p, q) 7-vectors."""
    return np.concatenate([a[:3] + quat_rotate(a[3:], b[:3]), quat_multiply(a[3:], b[3:])])


def transform_inverse(t) -> np.ndarray:
    """The inverse of a (p, q) 7-vector transform."""
    q_inv = np.array([-t[3], -t[4], -t[5], t[6]])
    return np.concatenate([-quat_rotate(q_inv, t[:3]), q_inv])
