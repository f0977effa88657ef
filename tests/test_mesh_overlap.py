"""Box queries on meshes (mesh_query_aabb, mesh_query_aabb_next) and the triangle-triangle test
(intersect_tri_tri): the faces a query yields against a brute-force box test in numpy, and the triangle test
against an independent route (edges crossing the other triangle, in float64 numpy) and against real Warp.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp

import _meshes
import _warp_reference

MAX_HITS = 64


@wp.kernel
def faces_in_boxes(mesh: wp.uint64, lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3),
                   hits: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.mesh_query_aabb(mesh, lower[i], upper[i])
    n = int(0)
    for face in query:
        if n < hits.shape[1]:
            hits[i, n] = face
        n += 1
    counts[i] = n


@wp.kernel
def faces_in_boxes_next(mesh: wp.uint64, lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3),
                        counts: wp.array(dtype=int), last: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.mesh_query_aabb(mesh, lower[i], upper[i])
    face = int(-1)
    n = int(0)
    while wp.mesh_query_aabb_next(query, face):
        n += 1
    counts[i] = n
    last[i] = query.face


@wp.kernel
def tri_tri32(v: wp.array2d(dtype=wp.vec3), u: wp.array2d(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])


@wp.kernel
def tri_tri64(v: wp.array2d(dtype=wp.vec3d), u: wp.array2d(dtype=wp.vec3d), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])


def _sphere_mesh(device):
    vertices, faces = _meshes.icosphere(2)
    mesh = wp.Mesh(points=wp.array(vertices.astype(np.float32), dtype=wp.vec3, device=device),
                   indices=wp.array(faces.reshape(-1).astype(np.int32), dtype=int, device=device))
    return mesh, vertices.astype(np.float32), faces


def _boxes(n, seed):
    rng = np.random.default_rng(seed)
    centre = rng.uniform(-1.3, 1.3, size=(n, 3))
    half = rng.uniform(0.0, 0.4, size=(n, 3))
    return (centre - half).astype(np.float32), (centre + half).astype(np.float32)


def test_box_query_yields_each_overlapping_face_once(device):
    mesh, vertices, faces = _sphere_mesh(device)
    lower, upper = _boxes(200, seed=1)
    hits = wp.full((200, MAX_HITS), -1, dtype=int, device=device)
    counts = wp.zeros(200, dtype=int, device=device)
    wp.launch(faces_in_boxes, dim=200, inputs=[mesh.id, wp.array(lower, dtype=wp.vec3, device=device),
                                               wp.array(upper, dtype=wp.vec3, device=device), hits, counts],
              device=device)
    tri = vertices[faces]  # [faces, 3 corners, 3]
    face_lo, face_hi = tri.min(axis=1), tri.max(axis=1)
    got_hits, got_counts = hits.numpy(), counts.numpy()
    assert got_counts.max() < MAX_HITS
    nonempty = 0
    for i in range(200):
        expect = np.flatnonzero(np.all((face_lo <= upper[i]) & (face_hi >= lower[i]), axis=1))
        got = got_hits[i, :got_counts[i]]
        assert len(got) == len(set(got.tolist())), f"box {i}: a face yielded twice"
        assert sorted(got.tolist()) == expect.tolist(), f"box {i}"
        nonempty += bool(len(expect))
    assert 50 < nonempty < 200  # the boxes hit and miss the sphere


def test_box_query_next_and_the_last_face(device):
    mesh, vertices, faces = _sphere_mesh(device)
    lower, upper = _boxes(64, seed=2)
    counts = wp.zeros(64, dtype=int, device=device)
    last = wp.zeros(64, dtype=int, device=device)
    args = [mesh.id, wp.array(lower, dtype=wp.vec3, device=device), wp.array(upper, dtype=wp.vec3, device=device)]
    wp.launch(faces_in_boxes_next, dim=64, inputs=args + [counts, last], device=device)
    hits = wp.full((64, MAX_HITS), -1, dtype=int, device=device)
    loop_counts = wp.zeros(64, dtype=int, device=device)
    wp.launch(faces_in_boxes, dim=64, inputs=args + [hits, loop_counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), loop_counts.numpy())
    h, c = hits.numpy(), loop_counts.numpy()
    for i in range(64):
        assert last.numpy()[i] == (h[i, c[i] - 1] if c[i] else -1)


def test_box_query_of_an_empty_box_or_a_bad_id_yields_nothing(device):
    mesh, _, _ = _sphere_mesh(device)
    counts = wp.zeros(2, dtype=int, device=device)
    hits = wp.zeros((2, MAX_HITS), dtype=int, device=device)
    far = wp.array(np.array([[5, 5, 5], [5, 5, 5]], np.float32), dtype=wp.vec3, device=device)
    wp.launch(faces_in_boxes, dim=2, inputs=[mesh.id, far, far, hits, counts], device=device)
    wp.launch(faces_in_boxes, dim=1, inputs=[0, far, far, hits, counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), 0)


# ------------------------------------------------------------------------------------------------------------
# Triangle pairs


def _segment_hits_triangle(p, q, tri):
    """Segment p q meets triangle tri (float64, non-degenerate general position): Moller-Trumbore on the line."""
    e1, e2 = tri[1] - tri[0], tri[2] - tri[0]
    d = q - p
    h = np.cross(d, e2)
    det = e1 @ h
    if abs(det) < 1e-12:
        return False
    s = p - tri[0]
    u = (s @ h) / det
    qv = np.cross(s, e1)
    v = (d @ qv) / det
    t = (e2 @ qv) / det
    return 0 <= u <= 1 and 0 <= v and u + v <= 1 and 0 <= t <= 1


def _pairs(n, seed):
    rng = np.random.default_rng(seed)
    v = rng.uniform(-1, 1, size=(n, 3, 3))
    u = rng.uniform(-1, 1, size=(n, 3, 3)) + rng.uniform(-0.8, 0.8, size=(n, 1, 3))
    # coplanar pairs (z = 0.25): overlapping, touching at nothing, one inside the other
    v[:12, :, 2] = 0.25
    u[:12, :, 2] = 0.25
    u[12] = v[12] * 0.2 + v[12].mean(axis=0) * 0.8  # a small copy inside the triangle, in its plane
    return v, u


def _launch_pairs(v, u, device, double):
    vt, kernel = (wp.vec3d, tri_tri64) if double else (wp.vec3, tri_tri32)
    dtype = np.float64 if double else np.float32
    out = wp.zeros(len(v), dtype=int, device=device)
    wp.launch(kernel, dim=len(v), inputs=[wp.array(v.astype(dtype), dtype=vt, device=device),
                                          wp.array(u.astype(dtype), dtype=vt, device=device), out], device=device)
    return out.numpy()


@pytest.mark.parametrize("double", [False, True])
def test_tri_tri_agrees_with_edges_crossing_triangles(device, double):
    v, u = _pairs(2000, seed=3)
    v, u = v[13:], u[13:]  # general position only: the reference does not handle coplanar pairs
    got = _launch_pairs(v, u, device, double)
    expect = np.array([any(_segment_hits_triangle(a[i], a[(i + 1) % 3], b) for a, b in ((v[k], u[k]), (u[k], v[k]))
                           for i in range(3)) for k in range(len(v))], dtype=int)
    assert 200 < expect.sum() < len(v) - 200
    np.testing.assert_array_equal(got, expect)


def test_coplanar_triangles(device):
    v = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]] * 4, np.float64)
    u = np.array([[[0.5, 0.5, 0], [1.5, 0.5, 0], [0.5, 1.5, 0]],        # touch at a point: 1
                  [[0.6, 0.6, 0], [1.5, 0.6, 0], [0.6, 1.5, 0]],        # apart: 0
                  [[0.1, 0.1, 0], [0.3, 0.1, 0], [0.1, 0.3, 0]],        # inside: 1
                  [[-1, -1, 0], [3, -1, 0], [-1, 3, 0]]], np.float64)   # containing: 1
    for double in (False, True):
        np.testing.assert_array_equal(_launch_pairs(v, u, device, double), [1, 0, 1, 1])


_PROGRAM = '''
import numpy as np


@wp.kernel
def pairs32(v: wp.array2d(dtype=wp.vec3), u: wp.array2d(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])


@wp.kernel
def pairs64(v: wp.array2d(dtype=wp.vec3d), u: wp.array2d(dtype=wp.vec3d), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(v[i, 0], v[i, 1], v[i, 2], u[i, 0], u[i, 1], u[i, 2])


def run(wp, Tape):
    rng = np.random.default_rng(3)
    v = rng.uniform(-1, 1, size=(4000, 3, 3))
    u = rng.uniform(-1, 1, size=(4000, 3, 3)) + rng.uniform(-0.8, 0.8, size=(4000, 1, 3))
    v[:40, :, 2] = 0.25
    u[:40, :, 2] = 0.25
    results = {}
    for name, kernel, vt, dtype in (("f32", pairs32, wp.vec3, np.float32), ("f64", pairs64, wp.vec3d, np.float64)):
        out = wp.zeros(4000, dtype=int)
        wp.launch(kernel, dim=4000, inputs=[wp.array(v.astype(dtype), dtype=vt), wp.array(u.astype(dtype), dtype=vt),
                                            out])
        results[name] = out.numpy()
    return results
'''


def test_tri_tri_gives_warps_answers(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tri_tri")
    for key in ("f32", "f64"):
        np.testing.assert_array_equal(ours[key], warp[key])
