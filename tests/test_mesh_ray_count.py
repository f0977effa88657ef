"""wp.mesh_query_ray_count_intersections and wp.mesh_query_ray_anyhit: against real Warp on the same rays, and
against an independent measure (a ray from a point crosses a closed surface an odd number of times exactly when
the point is inside; numpy decides inside by the distance to the sphere's centre)."""

import numpy as np

import _meshes
import _warp_reference

_PROGRAM = '''
import numpy as np


@wp.kernel
def count_and_anyhit(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
                     max_t: float, group: int, counts: wp.array(dtype=int), anyhit: wp.array(dtype=int),
                     counts_group: wp.array(dtype=int), anyhit_group: wp.array(dtype=int)):
    i = wp.tid()
    counts[i] = wp.mesh_query_ray_count_intersections(mesh, starts[i], dirs[i])
    anyhit[i] = wp.where(wp.mesh_query_ray_anyhit(mesh, starts[i], dirs[i], max_t), 1, 0)
    root = wp.mesh_get_group_root(mesh, group)
    counts_group[i] = wp.mesh_query_ray_count_intersections(mesh, starts[i], dirs[i], root)
    anyhit_group[i] = int(wp.mesh_query_ray_anyhit(mesh, starts[i], dirs[i], max_t, root))


def run(wp, Tape):
    data = np.load(DATA)
    mesh = wp.Mesh(points=wp.array(data["points"], dtype=wp.vec3), indices=wp.array(data["indices"], dtype=int),
                   groups=wp.array(data["groups"], dtype=int))
    starts = wp.array(data["starts"], dtype=wp.vec3)
    dirs = wp.array(data["dirs"], dtype=wp.vec3)
    n = len(data["starts"])
    out = {}
    for max_t in (0.5, 1.5, 1.0e6):
        arrays = [wp.zeros(n, dtype=int) for _ in range(4)]
        wp.launch(count_and_anyhit, dim=n, inputs=[mesh.id, starts, dirs, max_t, 1], outputs=arrays)
        for name, a in zip(("counts", "anyhit", "counts_group", "anyhit_group"), arrays):
            out[f"{name}_{max_t}"] = a.numpy()
    return out
'''


def _scene(tmp_path):
    """Two overlapping unit icospheres (centres 0 and (1.2, 0, 0); group 0 and group 1) and 400 random rays."""
    v, f = _meshes.icosphere(2)
    points = np.concatenate([v, v + [1.2, 0.0, 0.0]]).astype(np.float32)
    indices = np.concatenate([f, f + len(v)]).reshape(-1).astype(np.int32)
    groups = np.repeat(np.array([0, 1], np.int32), len(f))
    rng = np.random.default_rng(7)
    starts = rng.uniform([-1.6, -1.3, -1.3], [2.8, 1.3, 1.3], size=(400, 3)).astype(np.float32)
    dirs = rng.normal(size=(400, 3))
    dirs = (dirs / np.linalg.norm(dirs, axis=1, keepdims=True)).astype(np.float32)
    path = tmp_path / "scene.npz"
    np.savez(path, points=points, indices=indices, groups=groups, starts=starts, dirs=dirs)
    return str(path), v, f, starts


def test_counts_and_anyhit_match_warp_and_inside_parity(tmp_path):
    data, v, f, starts = _scene(tmp_path)
    warp, ours = _warp_reference.both(f"DATA = {data!r}\n" + _PROGRAM, str(tmp_path), "ray_count")
    for name in warp:
        np.testing.assert_array_equal(ours[name], warp[name], err_msg=name)
    counts = ours["counts_1000000.0"]
    assert counts.max() >= 3 and (counts == 0).any()
    # Independent measure: the faces are planar chords of the unit spheres, so test parity against the polyhedra's
    # insides only where a point is clearly inside or outside both (away from the chords' 1.3 % sag).
    radius = np.linalg.norm(starts[:, None, :] - np.array([[0, 0, 0], [1.2, 0, 0]]), axis=2)
    clear = np.all(np.abs(radius - 1.0) > 0.02, axis=1)
    inside_each = (radius < 1.0).astype(int)
    assert clear.sum() > 300
    np.testing.assert_array_equal(counts[clear] % 2 == 1, inside_each[clear].sum(axis=1) % 2 == 1)
    # Group 1 alone (the sphere at x = 1.2): its count's parity says inside that sphere.
    group_counts = ours["counts_group_1000000.0"]
    np.testing.assert_array_equal(group_counts[clear] % 2, inside_each[clear, 1])
    # anyhit with an unbounded max_t is "count > 0"; a shorter max_t can only lose hits.
    np.testing.assert_array_equal(ours["anyhit_1000000.0"], (counts > 0).astype(int))
    assert (ours["anyhit_0.5"] <= ours["anyhit_1.5"]).all() and (ours["anyhit_0.5"] < ours["anyhit_1.5"]).any()

