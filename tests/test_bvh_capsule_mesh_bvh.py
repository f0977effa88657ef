"""wp.bvh_query_capsule (boxes inflated by the radius, swept by a segment) and wp.mesh_get_bvh (a mesh's BVH as a
wp.Bvh over its faces' boxes): the same items as real Warp's, and as a slab test and a box distance in numpy."""

import numpy as np

import _warp_reference

_PROGRAM = '''
import numpy as np


@wp.kernel
def capsule(bvh: wp.uint64, p0: wp.vec3, p1: wp.vec3, radius: float, max_dist: float, hits: wp.array(dtype=int)):
    query = wp.bvh_query_capsule(bvh, p0, p1 - p0, radius)
    item = int(0)
    while wp.bvh_query_next(query, item, max_dist):
        wp.atomic_add(hits, item, 1)


@wp.kernel
def capsule_root(bvh: wp.uint64, p0: wp.vec3, p1: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    query = wp.bvh_query_capsule(bvh, p0, p1 - p0, radius, -1)
    item = int(0)
    while wp.bvh_query_next(query, item):
        wp.atomic_add(hits, item, 1)


@wp.kernel
def mesh_sphere(mesh: wp.uint64, center: wp.vec3, radius: float, hits: wp.array(dtype=int)):
    query = wp.bvh_query_sphere(wp.mesh_get_bvh(mesh), center, radius)
    face = int(0)
    while wp.bvh_query_next(query, face):
        wp.atomic_add(hits, face, 1)


def run(wp, Tape):
    data = np.load(DATA)
    bvh = wp.Bvh(wp.array(data["lower"], dtype=wp.vec3), wp.array(data["upper"], dtype=wp.vec3), leaf_size=2)
    n = len(data["lower"])
    out = {}
    p0, p1 = wp.vec3(0.5, 1.0, 0.0), wp.vec3(7.0, 6.0, 8.0)
    for radius in (0.0, 0.7, -1.0):
        for max_dist in (1.0, 0.5):
            hits = wp.zeros(n, dtype=int)
            wp.launch(capsule, dim=1, inputs=[bvh.id, p0, p1, radius, max_dist, hits])
            out[f"capsule_{radius}_{max_dist}"] = hits.numpy()
    hits = wp.zeros(n, dtype=int)
    wp.launch(capsule_root, dim=1, inputs=[bvh.id, p0, p1, 0.7, hits])
    out["capsule_unbounded"] = hits.numpy()
    mesh = wp.Mesh(points=wp.array(data["points"], dtype=wp.vec3), indices=wp.array(data["indices"], dtype=int))
    for k, (center, radius) in enumerate(zip(data["centers"], data["radii"])):
        faces = wp.zeros(len(data["indices"]) // 3, dtype=int)
        wp.launch(mesh_sphere, dim=1, inputs=[mesh.id, wp.vec3(*center), float(radius), faces])
        out[f"mesh_sphere_{k}"] = faces.numpy()
    return out
'''


def _segment_hits_boxes(p0, p1, radius, lower, upper, t_max):
    """Slab test of segment p0 + t (p1 - p0), t in [0, t_max], against the boxes inflated by radius."""
    lo, hi, d = lower - radius, upper + radius, p1 - p0
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - p0) / d, (hi - p0) / d
    t_in = np.max(np.where(d != 0, np.minimum(t1, t2), -np.inf), axis=1)
    t_out = np.min(np.where(d != 0, np.maximum(t1, t2), np.inf), axis=1)
    inside_flat = np.all((d != 0) | ((p0 >= lo) & (p0 <= hi)), axis=1)
    return inside_flat & (np.maximum(t_in, 0.0) <= np.minimum(t_out, t_max))


def test_capsule_and_mesh_bvh_match_warp_and_numpy(tmp_path):
    rng = np.random.default_rng(5)
    lower = (rng.random((150, 3)) * 8.0).astype(np.float32)
    upper = (lower + rng.random((150, 3)) * 2.0).astype(np.float32)
    centers = (rng.random((2000, 3)) * 6.0).astype(np.float32)
    tri = centers[:, None, :] + (rng.random((2000, 3, 3)) - 0.5).astype(np.float32) * 0.4
    points, indices = tri.reshape(-1, 3).astype(np.float32), np.arange(6000, dtype=np.int32)
    sphere_centers, radii = (rng.random((4, 3)) * 6.0).astype(np.float32), rng.uniform(0.2, 1.0, 4)
    data = tmp_path / "scene.npz"
    np.savez(data, lower=lower, upper=upper, points=points, indices=indices, centers=sphere_centers, radii=radii)
    warp, ours = _warp_reference.both(f"DATA = {str(data)!r}\n" + _PROGRAM, str(tmp_path), "capsule")
    for name in warp:
        np.testing.assert_array_equal(ours[name], warp[name], err_msg=name)
    p0, p1 = np.array([0.5, 1.0, 0.0]), np.array([7.0, 6.0, 8.0])
    for radius in (0.0, 0.7):
        for t_max in (1.0, 0.5):
            expected = _segment_hits_boxes(p0, p1, radius, lower, upper, t_max)
            np.testing.assert_array_equal(ours[f"capsule_{radius}_{t_max}"], expected.astype(int))
    np.testing.assert_array_equal(ours["capsule_-1.0_1.0"], ours["capsule_0.0_1.0"])  # radius < 0 counts as 0
    assert ours["capsule_0.7_1.0"].sum() > ours["capsule_0.0_1.0"].sum() > 0
    lo, hi = tri.min(axis=1), tri.max(axis=1)
    for k, (c, r) in enumerate(zip(sphere_centers, radii)):
        near = ((c - np.clip(c, lo, hi)) ** 2).sum(axis=1) <= r * r
        np.testing.assert_array_equal(ours[f"mesh_sphere_{k}"], near.astype(int))
