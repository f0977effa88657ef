"""wp.Bvh: box, ray and sphere queries against a brute-force count in numpy (an independent route), grouped roots,
refit, bad input refused, and the items each query yields compared with real Warp's on the same boxes; the
sphere query of a wp.Mesh likewise."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp


@wp.kernel
def _count_queries(id: wp.uint64, a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), radius: float,
                   kind: int, root: int, counts: wp.array(dtype=int), sums: wp.array(dtype=int)):
    t = wp.tid()
    n = int(0)
    s = int(0)
    if kind == 0:
        for item in wp.bvh_query_aabb(id, a[t], b[t], root):
            n += 1
            s += item
    elif kind == 1:
        query = wp.bvh_query_ray(id, a[t], b[t], root)
        item = int(0)
        while wp.bvh_query_next(query, item):
            n += 1
            s += item
    else:
        for item in wp.bvh_query_sphere(id, a[t], radius, root):
            n += 1
            s += item
    counts[t] = n
    sums[t] = s


def _boxes(count=300, seed=3):
    rng = np.random.default_rng(seed)
    centre = rng.uniform(-1.0, 1.0, (count, 3)).astype(np.float32)
    half = rng.uniform(0.01, 0.15, (count, 3)).astype(np.float32)
    return centre - half, centre + half


def _run(bvh, a, b, kind, radius=0.0, root=-1):
    n = len(a)
    counts, sums = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int)
    wp.launch(_count_queries, n, [bvh.id, wp.array(a, dtype=wp.vec3), wp.array(b, dtype=wp.vec3), radius, kind,
                                  root, counts, sums])
    return counts.numpy(), sums.numpy()


def _ray_hits(lo, hi, o, d):
    """Slab test in float64: the boxes the ray o + t d, t >= 0, enters."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (lo - o) / d, (hi - o) / d
    t0 = np.nanmax(np.where(d == 0, -np.inf, np.minimum(ta, tb)), axis=1)
    t1 = np.nanmin(np.where(d == 0, np.inf, np.maximum(ta, tb)), axis=1)
    inside = np.all((d != 0) | ((o >= lo) & (o <= hi)), axis=1)
    return inside & (np.maximum(t0, 0.0) <= t1)


def test_box_ray_and_sphere_queries_match_brute_force():
    lo, hi = _boxes()
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    rng = np.random.default_rng(7)
    q = rng.uniform(-1.2, 1.2, (64, 3)).astype(np.float32)
    counts, sums = _run(bvh, q - 0.2, q + 0.2, kind=0)
    hits = [np.flatnonzero(np.all((lo <= p + 0.2) & (hi >= p - 0.2), axis=1)) for p in q]
    assert counts.tolist() == [len(h) for h in hits] and sums.tolist() == [int(h.sum()) for h in hits]

    d = rng.normal(size=(64, 3)).astype(np.float32)
    counts, sums = _run(bvh, q, d, kind=1)
    hits = [np.flatnonzero(_ray_hits(lo.astype(np.float64), hi.astype(np.float64), o, v)) for o, v in zip(q, d)]
    assert counts.tolist() == [len(h) for h in hits] and sums.tolist() == [int(h.sum()) for h in hits]

    counts, sums = _run(bvh, q, q, kind=2, radius=0.25)
    gap = np.maximum(np.maximum(lo[None] - q[:, None], q[:, None] - hi[None]), 0.0)
    inside = (gap.astype(np.float64) ** 2).sum(axis=2) <= 0.25 ** 2
    assert counts.tolist() == inside.sum(axis=1).tolist()
    assert sums.tolist() == [int(np.flatnonzero(r).sum()) for r in inside]


def test_group_roots_confine_queries_and_refit_follows_moved_boxes():
    lo, hi = _boxes(200)
    groups = np.arange(200, dtype=np.int32) % 5
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), groups=wp.array(groups, dtype=wp.int32),
                 leaf_size=3)

    @wp.kernel
    def roots(id: wp.uint64, out: wp.array(dtype=int)):
        out[wp.tid()] = wp.bvh_get_group_root(id, wp.tid())

    out = wp.zeros(7, dtype=int)
    wp.launch(roots, 7, [bvh.id, out])
    assert (out.numpy()[:5] >= 0).all() and out.numpy()[5:].tolist() == [-1, -1]
    big = np.array([[-5.0, -5.0, -5.0]], np.float32)
    for g in range(5):
        counts, sums = _run(bvh, big, -big, kind=0, root=int(out.numpy()[g]))
        assert counts[0] == 40 and sums[0] == int(np.flatnonzero(groups == g).sum())

    lowers, uppers = wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3)
    moved = wp.Bvh(lowers, uppers)
    lowers.assign(lo + 10.0)
    uppers.assign(hi + 10.0)
    moved.refit()
    near = np.array([[10.0, 10.0, 10.0]], np.float32)
    counts, _ = _run(moved, near - 2.0, near + 2.0, kind=0)
    assert counts[0] == 200


def _point_triangle_dist(p, a, b, c):
    """Distance from p to triangle abc by minimising over a fine barycentric grid and the edges (float64)."""
    s = np.linspace(0.0, 1.0, 201)
    u, v = np.meshgrid(s, s)
    keep = u + v <= 1.0
    u, v = u[keep], v[keep]
    pts = a + u[:, None] * (b - a) + v[:, None] * (c - a)
    return np.sqrt(((pts - p) ** 2).sum(axis=1).min())


def test_mesh_sphere_query_matches_brute_force():
    @wp.kernel
    def count(id: wp.uint64, centers: wp.array(dtype=wp.vec3), radius: float, hits: wp.array2d(dtype=int)):
        t = wp.tid()
        for face in wp.mesh_query_sphere(id, centers[t], radius):
            hits[t, face] = 1

    rng = np.random.default_rng(2)
    points = rng.uniform(-1.0, 1.0, (30, 3)).astype(np.float32)
    indices = rng.integers(0, 30, (40, 3)).astype(np.int32)
    mesh = wp.Mesh(wp.array(points, dtype=wp.vec3), wp.array(indices.ravel(), dtype=wp.int32))
    centers = rng.uniform(-1.0, 1.0, (12, 3)).astype(np.float32)
    hits = wp.zeros((12, 40), dtype=int)
    wp.launch(count, 12, [mesh.id, wp.array(centers, dtype=wp.vec3), 0.4, hits])
    p64 = points.astype(np.float64)
    for t, c in enumerate(centers.astype(np.float64)):
        for f, (i, j, k) in enumerate(indices):
            d = _point_triangle_dist(c, p64[i], p64[j], p64[k])
            if abs(d - 0.4) > 0.01:  # the grid's resolution: skip faces right at the radius
                assert hits.numpy()[t, f] == (d < 0.4), (t, f, d)


def test_bad_input_is_refused():
    lo, hi = _boxes(10)
    with pytest.raises(RuntimeError, match="same number"):
        wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi[:5], dtype=wp.vec3))
    with pytest.raises(RuntimeError, match="wp.vec3"):
        wp.Bvh(wp.array(lo.ravel(), dtype=float), wp.array(hi.ravel(), dtype=float))
    with pytest.raises(ValueError, match="leaf_size"):
        wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), leaf_size=0)


def test_query_box_has_no_gradient():
    @wp.kernel
    def weighted(id: wp.uint64, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        for item in wp.bvh_query_aabb(id, x[0], x[0] + wp.vec3(1.0)):
            out[0] += float(item)

    lo, hi = _boxes(10)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    # item indices are integers: nothing differentiable flows out of the query, so the adjoint compiles and the
    # gradient w.r.t. the query box is zero, as in Warp (the box only selects which items are summed)
    x = wp.zeros(1, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    from autodiff import Tape

    tape = Tape()
    with tape:
        wp.launch(weighted, 1, [bvh.id, x, out])
    tape.backward(loss=out)
    assert np.all(x.grad.numpy() == 0.0)


_PROGRAM = '''
import numpy as np


@wp.kernel
def collect(id: wp.uint64, a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), kind: int,
            hits: wp.array2d(dtype=int)):
    t = wp.tid()
    item = int(0)
    if kind == 0:
        query = wp.bvh_query_aabb(id, a[t], b[t])
        while wp.bvh_query_next(query, item):
            hits[t, item] = 1
    elif kind == 1:
        query = wp.bvh_query_ray(id, a[t], b[t])
        while wp.bvh_query_next(query, item):
            hits[t, item] = 1
    else:
        query = wp.bvh_query_sphere(id, a[t], 0.3)
        while wp.bvh_query_next(query, item):
            hits[t, item] = 1


@wp.kernel
def mesh_sphere(id: wp.uint64, centers: wp.array(dtype=wp.vec3), radius: float, hits: wp.array2d(dtype=int)):
    t = wp.tid()
    face = int(0)
    query = wp.mesh_query_sphere(id, centers[t], radius)
    while wp.mesh_query_next(query, face):
        hits[t, face] = 1


def run(wp, Tape):
    rng = np.random.default_rng(11)
    centre = rng.uniform(-1.0, 1.0, (150, 3)).astype(np.float32)
    half = rng.uniform(0.01, 0.2, (150, 3)).astype(np.float32)
    bvh = wp.Bvh(wp.array(centre - half, dtype=wp.vec3), wp.array(centre + half, dtype=wp.vec3))
    q = rng.uniform(-1.0, 1.0, (40, 3)).astype(np.float32)
    d = rng.normal(size=(40, 3)).astype(np.float32)
    out = {}
    for kind, b in ((0, q + 0.25), (1, d), (2, q)):
        hits = wp.zeros((40, 150), dtype=int)
        a = q - 0.25 if kind == 0 else q
        wp.launch(collect, 40, [bvh.id, wp.array(a, dtype=wp.vec3), wp.array(b, dtype=wp.vec3), kind, hits])
        out[f"hits{kind}"] = hits.numpy()
    points = rng.uniform(-1.0, 1.0, (60, 3)).astype(np.float32)
    points[5] = points[4]  # a degenerate face (two equal corners)
    indices = rng.integers(0, 60, (80, 3)).astype(np.int32)
    indices[0] = (4, 5, 6)
    mesh = wp.Mesh(wp.array(points, dtype=wp.vec3), wp.array(indices.ravel(), dtype=wp.int32))
    hits = wp.zeros((40, 80), dtype=int)
    wp.launch(mesh_sphere, 40, [mesh.id, wp.array(q, dtype=wp.vec3), 0.3, hits])
    out["mesh_sphere"] = hits.numpy()
    return out
'''


def test_items_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "bvh")
    for key in ("hits0", "hits1", "hits2", "mesh_sphere"):
        assert warp[key].sum() > 0
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


@pytest.mark.parametrize("groups", [False, True])
def test_refit_on_the_device_gives_the_host_builders_boxes_in_place(groups):
    """Mesh.refit and Bvh.refit recompute the node boxes by kernels (kernels/runtime/bvh_refit.py; on the CPU the
    internal nodes in one launch, lowest first) into the buffers the header already points at: after the points move, every node box equals what the host builder's
    numpy refit computes from the moved corners, and neither the id nor a buffer address changes."""
    from kernels.runtime.bvh import Bvh as HostTree

    rng = np.random.default_rng(5)
    n = 23
    grid = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    points = np.c_[grid[:, 0], np.zeros(len(grid)), grid[:, 1]].astype(np.float32) * 0.1
    quads = [(i * n + j, i * n + j + 1, i * n + j + n, i * n + j + n + 1) for i in range(n - 1) for j in range(n - 1)]
    tris = np.array([t for a, b, c, d in quads for t in ((a, b, c), (b, d, c))], np.int32)
    group = (np.arange(len(tris)) % 3).astype(np.int32) if groups else None
    mesh = wp.Mesh(points=wp.array(points, dtype=wp.vec3), indices=wp.array(tris.reshape(-1), dtype=wp.int32),
                   groups=None if group is None else wp.array(group, dtype=wp.int32))
    lowers = wp.array(points - 0.01, dtype=wp.vec3)
    uppers = wp.array(points + 0.02, dtype=wp.vec3)
    bvh = wp.Bvh(lowers, uppers, groups=None if group is None else wp.array(group[:len(points)], dtype=wp.int32))
    before = (mesh.id, bvh.id, mesh._buffers["node_lower"].ptr, bvh._buffers["node_lower"].ptr)

    moved = points + rng.normal(scale=0.3, size=points.shape).astype(np.float32)
    mesh.points.assign(moved)
    mesh.refit()
    lowers.assign(moved - 0.01)
    uppers.assign(moved + 0.02)
    bvh.refit()
    assert (mesh.id, bvh.id, mesh._buffers["node_lower"].ptr, bvh._buffers["node_lower"].ptr) == before

    host = HostTree(points[tris], groups=group)  # the same tree, refitted on the host
    host.refit(moved[tris])
    # independently: every node's box is the union of its subtree's faces' boxes
    node_lower, node_upper = mesh._buffers["node_lower"].numpy(), mesh._buffers["node_upper"].numpy()
    face_lower, face_upper = moved[tris].min(axis=1), moved[tris].max(axis=1)

    def subtree_faces(node):
        if host.left[node] < 0:
            return list(host.prims[host.start[node]:host.end[node]])
        return subtree_faces(host.left[node]) + subtree_faces(host.right[node])

    for node in range(len(host.left)):
        faces = subtree_faces(node)
        assert np.array_equal(node_lower[node], face_lower[faces].min(axis=0)), node
        assert np.array_equal(node_upper[node], face_upper[faces].max(axis=0)), node
    assert np.array_equal(mesh._buffers["node_lower"].numpy(), host.lower)
    assert np.array_equal(mesh._buffers["node_upper"].numpy(), host.upper)
    assert np.array_equal(mesh._face_bvh.lowers.numpy(), moved[tris].min(axis=1))
    host = HostTree(np.stack([points - 0.01, points + 0.02], axis=1), leaf_size=1,
                    groups=None if group is None else group[:len(points)])
    host.refit(np.stack([moved - 0.01, moved + 0.02], axis=1))
    assert np.array_equal(bvh._buffers["node_lower"].numpy(), host.lower)
    assert np.array_equal(bvh._buffers["node_upper"].numpy(), host.upper)


def test_refit_kernels_compile_to_ptx():
    """The device refit's kernels (forward) compile for CUDA, with or without a GPU."""
    import kernels.runtime.bvh_refit as refit
    from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source
    from kernels.runtime.module import get_module

    module_kernels = get_module(refit.__name__).kernels
    ptx = compile_source_to_ptx(render_cuda_source(module_kernels), 90, "bvh_refit.cu")
    assert len(module_kernels) == 4
    for i, k in enumerate(module_kernels):
        assert f"k{i}_{k.name}_cuda_forward" in ptx


def _reference_tree(corners, leaf_size):
    """The builder's tree by its definition, node by node in Python: nodes numbered level by level; a node of more
    than leaf_size faces sorts them stably (np.argsort kind='stable') by centroid along the widest axis of their
    centroids' box (the first of equal extents) and splits at the half. (left, right, start, end, prims)."""
    centroids = corners.mean(axis=1)
    left, right, start, end = [-1], [-1], [0], [0]
    level = [(0, np.arange(len(corners)), 0)]
    while level:
        following = []
        for node, faces, lo in level:
            if len(faces) <= leaf_size:
                start[node], end[node] = lo, lo + len(faces)
                continue
            c = centroids[faces]
            axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
            faces = faces[np.argsort(c[:, axis], kind="stable")]
            half = len(faces) // 2
            left[node], right[node] = len(left), len(left) + 1
            for _ in range(2):
                left.append(-1), right.append(-1), start.append(0), end.append(0)
            following += [(left[node], faces[:half], lo), (right[node], faces[half:], lo + half)]
        level = following
    prims = np.zeros(len(corners), np.int64)
    for faces, lo in _leaves_of(corners, leaf_size, centroids):
        prims[lo:lo + len(faces)] = faces
    return np.array(left), np.array(right), np.array(start), np.array(end), prims


def _leaves_of(corners, leaf_size, centroids):
    """(faces, first position in prims) of every leaf of the reference tree, depth first."""
    stack = [(np.arange(len(corners)), 0)]
    while stack:
        faces, lo = stack.pop()
        if len(faces) <= leaf_size:
            yield faces, lo
            continue
        c = centroids[faces]
        axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
        faces = faces[np.argsort(c[:, axis], kind="stable")]
        half = len(faces) // 2
        stack += [(faces[:half], lo), (faces[half:], lo + half)]


@pytest.mark.parametrize("case", ["random", "quantised", "signed_zeros", "all_equal"])
def test_the_native_builder_gives_the_tree_of_its_definition(case):
    # the native builder partitions instead of sorting each node (native/bvh_build.cpp): ties between equal
    # coordinates, which decide which faces go to which half, must fall as the stable sorts would make them
    from kernels.runtime.bvh import Bvh

    rng = np.random.default_rng(5)
    corners = {"random": rng.normal(size=(700, 3, 3)),
               "quantised": rng.integers(0, 3, size=(700, 3, 3)),
               "signed_zeros": rng.choice([-0.0, 0.0, 1.0, -1.0], size=(700, 3, 3)),
               "all_equal": np.ones((64, 3, 3))}[case].astype(np.float32)
    tree = Bvh(corners, leaf_size=4)
    left, right, start, end, prims = _reference_tree(corners, 4)
    for got, want in ((tree.left, left), (tree.right, right), (tree.start, start), (tree.end, end),
                      (tree.prims, prims)):
        np.testing.assert_array_equal(got, want)
    # and each node's box is the box of its faces' corners
    for node in range(len(tree.left)):
        faces = _faces_under(tree, node)
        np.testing.assert_array_equal(tree.lower[node], corners[faces].reshape(-1, 3).min(axis=0))
        np.testing.assert_array_equal(tree.upper[node], corners[faces].reshape(-1, 3).max(axis=0))


def _faces_under(tree, node):
    if tree.left[node] < 0:
        return tree.prims[tree.start[node]:tree.end[node]]
    return np.concatenate([_faces_under(tree, tree.left[node]), _faces_under(tree, tree.right[node])])


def test_corner_stats_are_numpys_mean_min_and_max_to_the_bit():
    # the builder's keys (centroids) decide the tree, so they must be numpy's mean exactly: float sums in corner
    # order, then one division; boxes too (two corners per item) and denormal values
    from kernels.runtime.bvh import corner_stats

    rng = np.random.default_rng(9)
    for corners in (rng.normal(size=(600, 3, 3)) * 1e3, rng.normal(size=(300, 2, 3)),
                    rng.normal(size=(50, 3, 3)) * 1e-40, np.zeros((0, 3, 3))):
        corners = corners.astype(np.float32)
        centroids, lower, upper = corner_stats(corners)
        np.testing.assert_array_equal(centroids, corners.mean(axis=1))
        np.testing.assert_array_equal(lower, corners.min(axis=1))
        np.testing.assert_array_equal(upper, corners.max(axis=1))


def test_face_corners_gather_and_summarise_a_mesh_like_numpy_and_refuse_a_bad_index():
    from kernels.runtime.bvh import corner_stats, face_corners

    rng = np.random.default_rng(3)
    points = rng.normal(size=(40, 3)).astype(np.float32)
    indices = rng.integers(0, 40, size=(90, 3)).astype(np.int32)
    corners, stats, edge_length = face_corners(points, indices)
    np.testing.assert_array_equal(corners, points[indices])
    edges = np.roll(corners, -1, axis=1) - corners  # Warp's average_edge_length: over the faces' three edges
    np.testing.assert_allclose(edge_length, np.linalg.norm(edges.astype(np.float64), axis=2).mean(), rtol=1e-6)
    for got, want in zip(stats, corner_stats(points[indices])):
        np.testing.assert_array_equal(got, want)
    for bad in (-1, 40):
        wrong = indices.copy()
        wrong[7, 2] = bad
        with pytest.raises(RuntimeError, match=rf"indices must lie in \[0, 40\) \(index 23 is {bad}\)"):
            face_corners(points, wrong)
        with pytest.raises(RuntimeError, match=r"indices must lie in \[0, 40\)"):
            wp.Mesh(points=wp.array(points, dtype=wp.vec3), indices=wp.array(wrong.reshape(-1), dtype=wp.int32))
