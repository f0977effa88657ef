"""sim.geometry's per-step shape placement and bound test: a particle-shape pair skipped by the bound sphere is
one that cannot reach the shape, and the pairs that go on get the distance and normal of the plain signed
distance (shape_sdf, which poses the shape per call), for rotated shapes, a shape on a rotated body and worlds
far from the origin (where rounding is largest). Planes (infinite, finite, tilted, on a body) are skipped by their
height above the plane: the same checks."""

import numpy as np

import kernels as wp
import sim
from sim.geometry import FAR, ShapeData, collider_sdf, shape_data, shape_sdf

REACH = 0.05  # [m]


@wp.kernel
def both_distances(points: wp.array(dtype=wp.vec3), shapes: ShapeData, reach: float,
                   bounded: wp.array2d(dtype=float), plain: wp.array2d(dtype=float),
                   normal_gap: wp.array2d(dtype=float)):
    i, s = wp.tid()
    x = points[i]
    d, n = collider_sdf(shapes, s, x, reach)
    pose = shapes.transform[s]
    if shapes.body[s] >= 0:
        pose = wp.transform_multiply(shapes.body_q[shapes.body[s]], shapes.transform[s])
    d_ref, n_ref = shape_sdf(shapes.type[s], pose, shapes.scale[s], x)
    bounded[i, s] = d
    plain[i, s] = d_ref
    normal_gap[i, s] = wp.length(n - n_ref)


def shapes_model(offset):
    rot = wp.quat_from_axis_angle(wp.vec3(0.3, 1.0, -0.2), 0.7)
    b = sim.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.01)
    b.add_shape_sphere(pos=offset + (0.0, 0.0, 0.0), radius=0.3)
    b.add_shape_box(pos=offset + (1.0, 0.2, 0.0), rot=rot, hx=0.4, hy=0.1, hz=0.25)
    b.add_shape_capsule(pos=offset + (0.0, 0.3, 1.0), rot=rot, radius=0.15, half_height=0.35)
    tilt = wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), 0.9)
    body = b.add_body(pos=tuple(offset + (1.0, 1.0, 1.0)), rot=tuple(tilt))
    b.add_shape_box(pos=(0.1, 0.0, 0.2), rot=rot, hx=0.2, hy=0.3, hz=0.1, body=body)
    return b.finalize("cpu")


def test_the_bound_skips_only_pairs_that_cannot_touch():
    rng = np.random.default_rng(3)
    for offset in (np.zeros(3), np.array([300.0, 0.0, -200.0])):
        model = shapes_model(offset)
        shapes = shape_data(model)
        centres = shapes.pose.numpy()[:, :3]
        bounds = shapes.bound.numpy()
        np.testing.assert_allclose(bounds, [0.3, np.linalg.norm([0.4, 0.1, 0.25]), 0.5,
                                            np.linalg.norm([0.2, 0.3, 0.1])], rtol=1e-6)
        # points in a shell around each shape's bound sphere, and on each shape's surface ring
        points = [c + (r + rng.uniform(-0.4, 0.2)) * u / np.linalg.norm(u)
                  for c, r in zip(centres, bounds) for u in rng.normal(size=(2000, 3))]
        points = wp.array(np.array(points, np.float32), dtype=wp.vec3)
        out = [wp.zeros((len(points), model.shape_count), dtype=float) for _ in range(3)]
        wp.launch(both_distances, dim=out[0].shape, inputs=[points, shapes, REACH], outputs=out)
        bounded, plain, normal_gap = (a.numpy() for a in out)
        skipped = bounded == FAR
        assert 0.2 < skipped.mean() < 0.9  # the test sees both kinds of pair
        assert np.all(plain[skipped] > REACH)  # a skipped pair could not have touched
        near = ~skipped & (plain < REACH)
        assert near.sum() > 1000
        np.testing.assert_allclose(bounded[near], plain[near], atol=2e-6 * (1 + np.abs(offset).max()))
        assert normal_gap[near].max() < 1e-4


def planes_model(offset):
    """Planes through points near `offset`: the ground, a finite tilted one, and one on a rotated body."""
    rot = wp.quat_from_axis_angle(wp.vec3(0.3, 1.0, -0.2), 0.7)
    b = sim.ModelBuilder()
    b.add_particle((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), mass=1.0, radius=0.01)
    b.add_shape_plane(pos=tuple(offset))
    b.add_shape_plane(pos=tuple(offset + (1.0, 0.5, 0.0)), rot=tuple(rot), width=0.4, length=0.3)
    tilt = wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), 0.9)
    body = b.add_body(pos=tuple(offset + (0.0, 1.0, 1.0)), rot=tuple(tilt))
    b.add_shape_plane(pos=(0.1, 0.0, 0.2), rot=tuple(rot), body=body)
    return b.finalize("cpu")


def test_planes_skip_only_pairs_above_their_reach():
    rng = np.random.default_rng(4)
    for offset in (np.zeros(3), np.array([300.0, 0.0, -200.0])):
        model = planes_model(offset)
        shapes = shape_data(model)
        poses = shapes.pose.numpy()
        assert np.all(shapes.bound.numpy() < 0.0)  # planes have no bound sphere
        points = []
        for pose in poses:  # points at heights -0.1 .. 0.2 m above each plane, within 1 m of its origin
            rotation = wp.quat(*pose[3:])
            normal = np.array(wp.quat_rotate(rotation, wp.vec3(0.0, 1.0, 0.0)))
            along = rng.uniform(-1.0, 1.0, size=(3000, 3))
            along -= np.outer(along @ normal, normal)
            points += list(pose[:3] + along + np.outer(rng.uniform(-0.1, 0.2, 3000), normal))
        points = wp.array(np.array(points, np.float32), dtype=wp.vec3)
        out = [wp.zeros((len(points), model.shape_count), dtype=float) for _ in range(3)]
        wp.launch(both_distances, dim=out[0].shape, inputs=[points, shapes, REACH], outputs=out)
        bounded, plain, normal_gap = (a.numpy() for a in out)
        skipped = bounded == FAR
        assert 0.2 < skipped.mean() < 0.9
        assert np.all(plain[skipped] > REACH)  # a skipped pair could not have touched
        near = ~skipped & (plain < REACH)
        assert near.sum() > 1000
        # the pairs that go on are computed as before: the same distance and normal to the bit
        np.testing.assert_array_equal(bounded[near], plain[near])
        assert normal_gap[near].max() == 0.0
        # the slack is small (1e-5 of the coordinates' magnitudes): a pair just beyond it is skipped
        size = np.abs(points.numpy()).sum(axis=1)[:, None] + np.abs(poses[:, :3]).sum(axis=1)[None, :]
        beyond = plain > REACH + 1.01e-5 * size + 1e-5
        assert beyond.sum() > 1000 and np.all(bounded[beyond] == FAR)
