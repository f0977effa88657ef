"""tools/profile_rigid.py's count of the box pairs that reach the rigid narrow phase (numpy, from poses)."""

import math

import numpy as np

from tools.profile_rigid import box_rotations, narrow_phase_pairs


def pose(x, angle=0.0):
    """(x, y, z, qx, qy, qz, qw): a box at x turned by `angle` [rad] about z."""
    return [*x, 0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)]


def test_rotations_match_the_quaternion():
    r = box_rotations(np.array([pose((0, 0, 0), math.pi / 2)])[:, 3:])[0]
    assert np.allclose(r @ [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])


def test_pairs_reach_the_narrow_phase_within_bounds_and_spheres():
    half, margin = 0.1, 0.01
    # a and b: faces 5 mm apart (bounds within the margin); c: 5 cm from b (bounds apart by more than the margin)
    poses = np.array([pose((0, 0, 0)), pose((0.205, 0, 0)), pose((0.455, 0, 0))])
    assert narrow_phase_pairs(poses, half, margin) == 1
    # turned by 45 degrees, c's bounds grow by 4.1 cm and reach b's: a second pair
    poses[2] = pose((0.455, 0, 0), math.pi / 4)
    assert narrow_phase_pairs(poses, half, margin) == 2
    # diagonal neighbours turned by 45 degrees: bounds overlap on every axis, bounding spheres (0.38 m apart,
    # reach 0.36 m) do not
    diagonal = np.array([pose((0, 0, 0), math.pi / 4), pose((0.27, 0.27, 0), math.pi / 4)])
    assert narrow_phase_pairs(diagonal, half, margin) == 0
    diagonal[1] = pose((0.24, 0.24, 0), math.pi / 4)  # 0.34 m apart: both overlap
    assert narrow_phase_pairs(diagonal, half, margin) == 1
