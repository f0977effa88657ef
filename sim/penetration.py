"""Penetration depths of rigid shapes measured in numpy from poses alone, independently of the solvers' narrow
phase (for tests and benchmarks that check contacts by another route): boxes by the separating-axis theorem over
all 15 axes (the smallest overlap is the depth), a sphere in a box by its exact closest point, the ground by the
lowest point. Poses are (position [m], quaternion (x, y, z, w)) as in Model.body_q0; depths in metres."""

from __future__ import annotations

import itertools

import numpy as np

from .spatial import matrix_from_quat


def box_corners(pose, half) -> np.ndarray:
    """The 8 world corners [m] of a box with half extents `half` at `pose` (p, q (x, y, z, w)), shape (8, 3)."""
    pose = np.asarray(pose, np.float64)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
    return pose[:3] + (signs * np.asarray(half, np.float64)) @ matrix_from_quat(pose[3:]).T


def ground_depth(points, up: int = 1) -> float:
    """How far [m] the lowest of `points` (n, 3) lies below the ground plane through 0 (0 when above)."""
    return max(0.0, -float(np.asarray(points)[:, up].min()))


def box_box_depth(pose_a, half_a, pose_b, half_b) -> float:
    """Penetration depth [m] of two boxes: the smallest overlap of their projections over the 15 axes of the
    separating-axis theorem (the 6 face normals and the 9 edge cross products); 0 when an axis separates them."""
    ra = matrix_from_quat(np.asarray(pose_a, np.float64)[3:])
    rb = matrix_from_quat(np.asarray(pose_b, np.float64)[3:])
    axes = [ra[:, i] for i in range(3)] + [rb[:, i] for i in range(3)]
    for i in range(3):
        for j in range(3):
            c = np.cross(ra[:, i], rb[:, j])
            if np.linalg.norm(c) > 1e-6:
                axes.append(c / np.linalg.norm(c))
    delta = np.asarray(pose_a, np.float64)[:3] - np.asarray(pose_b, np.float64)[:3]
    best = np.inf
    for u in axes:
        extent_a = np.abs(ra.T @ u) @ np.asarray(half_a)
        extent_b = np.abs(rb.T @ u) @ np.asarray(half_b)
        best = min(best, extent_a + extent_b - abs(delta @ u))
    return max(0.0, float(best))


def sphere_box_depth(center, radius: float, pose, half) -> float:
    """Penetration depth [m] of a sphere into a box: radius minus the distance from its centre to the box (the
    centre inside the box counts as radius plus its depth below the nearest face)."""
    pose = np.asarray(pose, np.float64)
    r = matrix_from_quat(pose[3:])
    local = r.T @ (np.asarray(center, np.float64) - pose[:3])
    half = np.asarray(half, np.float64)
    outside = np.maximum(np.abs(local) - half, 0.0)
    if outside.any():
        return max(0.0, radius - float(np.linalg.norm(outside)))
    return radius + float((half - np.abs(local)).min())


def box_pile_depths(poses, half, up: int = 1) -> np.ndarray:
    """Depths [m] of every contact of equal boxes (half extents `half`) at `poses` (n, 7) on a ground plane
    through 0 along axis `up`: each box that reaches below the ground, and each pair of boxes that overlap (pairs
    whose centres are farther apart than the boxes' diameter are skipped). Contacts of depth 0 are left out."""
    poses = np.asarray(poses, np.float64)
    depths = [ground_depth(box_corners(p, half), up) for p in poses]
    reach = 2.0 * float(np.linalg.norm(half))
    centres = poses[:, :3]
    for i in range(len(poses)):
        near = np.flatnonzero(np.linalg.norm(centres[i + 1:] - centres[i], axis=1) < reach) + i + 1
        depths += [box_box_depth(poses[i], half, poses[j], half) for j in near]
    depths = np.asarray(depths)
    return depths[depths > 0.0]
