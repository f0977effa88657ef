"""Swept volumes (kernels.geometry.swept_volume_*) checked against analytic shapes: a translated sphere sweeps a
capsule, every signed mode agrees on a closed mesh, an open shell's inside is found by the winding number, and
Warp computes the same field; gradients are refused on a Tape."""

from __future__ import annotations

import numpy as np
import pytest

import _warp_reference
import kernels as wp
import kernels.geometry as geometry
from autodiff import Tape

Mode = geometry.SweptVolumeSignMode


def icosphere(subdivisions: int, radius: float) -> tuple:
    """Points (float32, [n, 3]) and flat int32 indices of an outward-wound sphere approximation."""
    t = (1.0 + 5.0**0.5) / 2.0
    points = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
              [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    faces = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2],
             [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11],
             [6, 2, 10], [8, 6, 7], [9, 8, 1]]
    points = [np.array(p, float) / np.linalg.norm(p) for p in points]
    for _ in range(subdivisions):
        middle, refined = {}, []

        def mid(a, b):
            if (min(a, b), max(a, b)) not in middle:
                p = points[a] + points[b]
                points.append(p / np.linalg.norm(p))
                middle[min(a, b), max(a, b)] = len(points) - 1
            return middle[min(a, b), max(a, b)]

        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            refined += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        faces = refined
    return (np.array(points) * radius).astype(np.float32), np.array(faces, np.int32).ravel()


def sphere_mesh(radius: float = 0.5, subdivisions: int = 2, winding: bool = True) -> wp.Mesh:
    points, indices = icosphere(subdivisions, radius)
    return wp.Mesh(wp.array(points, dtype=wp.vec3), wp.array(indices, dtype=wp.int32),
                   support_winding_number=winding)


def translations(offsets) -> np.ndarray:
    offsets = np.asarray(offsets, np.float32)
    poses = np.zeros((*offsets.shape[:-1], 7), np.float32)
    poses[..., :3] = offsets
    poses[..., 6] = 1.0
    return poses


def node_positions(field, lower, upper) -> np.ndarray:
    shape = np.array(field.shape)
    lower, upper = np.array(list(lower)), np.array(list(upper))
    index = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), axis=-1)
    return lower + index * (upper - lower) / (shape - 1)


def test_translated_sphere_sweeps_a_capsule():
    radius = 0.5
    poses = translations([[[x, 0.0, 0.0] for x in np.linspace(-1.0, 1.0, 17)]])
    field, lower, upper = geometry.swept_volume_field([sphere_mesh(radius)], poses, voxel_size=0.1)
    p = node_positions(field, lower, upper)
    along = np.clip(p[..., 0], -1.0, 1.0)
    capsule = np.linalg.norm(p - np.stack([along, 0 * along, 0 * along], axis=-1), axis=-1) - radius
    band = np.abs(capsule) < 0.3
    # icosphere facets (subdivision 2) and the gaps between the 17 sampled poses: a few hundredths
    np.testing.assert_allclose(field.numpy()[band], capsule[band], atol=0.03)
    # the domain: the posed bounds plus two cells, grown to whole cells of exactly voxel_size
    spacing = (np.array(list(upper)) - np.array(list(lower))) / (np.array(field.shape) - 1)
    np.testing.assert_allclose(spacing, 0.1, rtol=1e-5)
    verts, _ = geometry.swept_volume_mesh([sphere_mesh(radius)], poses, voxel_size=0.1)
    v = verts.numpy()
    np.testing.assert_allclose(v.min(axis=0), [-1.5, -0.5, -0.5], atol=0.03)
    np.testing.assert_allclose(v.max(axis=0), [1.5, 0.5, 0.5], atol=0.03)


def test_signed_modes_agree_on_a_closed_mesh_and_unsigned_is_the_absolute_value():
    mesh = sphere_mesh(0.5)
    poses = translations([[[0.0, 0.0, 0.0], [0.4, 0.1, 0.0]]])
    fields = {mode: geometry.swept_volume_field([mesh], poses, resolution=(14, 12, 12), sign_mode=mode)[0].numpy()
              for mode in Mode}
    for mode in (Mode.NORMAL, Mode.PARITY):
        np.testing.assert_allclose(fields[mode], fields[Mode.WINDING_NUMBER], atol=1e-6, err_msg=str(mode))
    assert (fields[Mode.WINDING_NUMBER] < 0).any()
    # unsigned: the distance to the union's surface pieces; equal to the signed one outside every pose
    outside = fields[Mode.WINDING_NUMBER] > 0
    np.testing.assert_allclose(fields[Mode.NO_SIGN][outside], fields[Mode.WINDING_NUMBER][outside], atol=1e-6)
    assert (fields[Mode.NO_SIGN] >= 0).all()


def test_winding_number_finds_the_inside_of_an_open_box():
    h = 0.5
    points = np.array([[-h, -h, -h], [h, -h, -h], [h, h, -h], [-h, h, -h], [-h, -h, h], [h, -h, h], [h, h, h],
                       [-h, h, h]], np.float32)
    faces = np.array([[0, 3, 2], [0, 2, 1], [0, 1, 5], [0, 5, 4], [2, 3, 7], [2, 7, 6], [1, 2, 6], [1, 6, 5],
                      [3, 0, 4], [3, 4, 7]], np.int32)  # the +z face left out
    box = wp.Mesh(wp.array(points, dtype=wp.vec3), wp.array(faces.ravel(), dtype=wp.int32),
                  support_winding_number=True)
    field, lower, upper = geometry.swept_volume_field([box], translations([[[0.0, 0.0, 0.0]]]), resolution=(9, 9, 9),
                                                      lower=(-0.4, -0.4, -0.4), upper=(0.4, 0.4, 0.4))
    # every node is inside the shell, at the distance to the nearest wall (the open top is no wall)
    p = node_positions(field, lower, upper)
    walls = np.minimum(h - np.abs(p[..., 0]), np.minimum(h - np.abs(p[..., 1]), h + p[..., 2]))
    np.testing.assert_allclose(field.numpy(), -walls, atol=1e-5)


def test_bad_arguments_and_gradients_are_refused():
    mesh = sphere_mesh(0.5, subdivisions=1)
    poses = translations([[[0.0, 0.0, 0.0]]])
    with pytest.raises(ValueError, match="voxel_size"):
        geometry.swept_volume_field([mesh], poses)
    with pytest.raises(ValueError, match="rows"):
        geometry.swept_volume_field([mesh], translations([[[0.0] * 3], [[0.0] * 3]]), voxel_size=0.1)
    with pytest.raises(ValueError, match="support_winding_number"):
        geometry.swept_volume_field([sphere_mesh(0.5, 1, winding=False)], poses, voxel_size=0.1)
    with pytest.raises(ValueError, match="positive"):
        geometry.swept_volume_mesh([mesh], poses, voxel_size=0.1, sign_mode=Mode.NO_SIGN)
    differentiable = wp.array(poses[0], dtype=wp.transform, requires_grad=True).reshape((1, 1))
    with Tape():
        with pytest.raises(ValueError, match="not differentiable"):
            geometry.swept_volume_field([mesh], differentiable, voxel_size=0.1)


_PROGRAM = '''
import importlib

import numpy as np


def run(wp, Tape):
    geometry = importlib.import_module(wp.__name__ + ".geometry")
    t = (1.0 + 5.0 ** 0.5) / 2.0
    points = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t],
                       [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], np.float32) * 0.4
    faces = np.array([0, 11, 5, 0, 5, 1, 0, 1, 7, 0, 7, 10, 0, 10, 11, 1, 5, 9, 5, 11, 4, 11, 10, 2, 10, 7, 6, 7, 1,
                      8, 3, 9, 4, 3, 4, 2, 3, 2, 6, 3, 6, 8, 3, 8, 9, 4, 9, 5, 2, 4, 11, 6, 2, 10, 8, 6, 7, 9, 8, 1],
                     np.int32)
    mesh = wp.Mesh(wp.array(points, dtype=wp.vec3), wp.array(faces, dtype=wp.int32), support_winding_number=True)
    poses = np.zeros((1, 5, 7), np.float32)
    poses[0, :, 0] = np.linspace(-0.5, 0.5, 5)
    poses[0, :, 1] = np.linspace(0.0, 0.3, 5)
    poses[0, :, 6] = 1.0
    field, lower, upper = geometry.swept_volume_field([mesh], poses, voxel_size=0.1)
    return {"field": field.numpy(), "lower": np.array(list(lower)), "upper": np.array(list(upper))}
'''


def test_field_is_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "swept_volume")
    np.testing.assert_allclose(ours["lower"], warp["lower"], atol=1e-6)
    np.testing.assert_allclose(ours["upper"], warp["upper"], atol=1e-6)
    np.testing.assert_allclose(ours["field"], warp["field"], atol=1e-5)
