"""2-d Delaunay edge flipping and triangle adjacency (kernels.geometry) checked by brute force: after flipping, no
point lies inside any triangle's circumcircle; adjacency agrees with an edge dictionary; Warp gives the same
triangulation."""

from __future__ import annotations

import numpy as np
import pytest

import _warp_reference
import kernels as wp
import kernels.geometry as geometry


def jittered_grid(n: int, jitter: float, seed: int) -> tuple:
    """Points of an n x n cell grid (interior ones jittered) and its triangulation with one diagonal per cell."""
    xs, ys = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    points = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float64)
    interior = (xs.ravel() % n != 0) & (ys.ravel() % n != 0)
    points[interior] += np.random.default_rng(seed).uniform(-jitter, jitter, (int(interior.sum()), 2))
    tris = []
    for i in range(n):
        for j in range(n):
            bl, br, tr, tl = i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1
            tris += [[bl, br, tr], [bl, tr, tl]]
    return points.astype(np.float32), np.array(tris, np.int32)


def signed_areas(points, tris) -> np.ndarray:
    p = points.astype(np.float64)
    a, b, c = p[tris[:, 0]], p[tris[:, 1]], p[tris[:, 2]]
    return 0.5 * ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))


def test_flipped_mesh_has_empty_circumcircles():
    points, tris = jittered_grid(12, 0.35, seed=5)
    indices = wp.array(tris, dtype=wp.int32)
    flips = int(geometry.delaunay_edge_flip(wp.array(points, dtype=wp.vec2), indices).numpy()[0])
    out = indices.numpy()
    assert flips > 0
    assert (signed_areas(points, out) > 0).all()
    assert signed_areas(points, out).sum() == pytest.approx(144.0, rel=1e-6)
    # brute force over every triangle and every point (the domain is convex: the triangulation is Delaunay)
    p = points.astype(np.float64)
    for tri in out:
        a, b, c = p[tri]
        d = np.linalg.det(np.array([[a[0] - b[0], a[1] - b[1]], [a[0] - c[0], a[1] - c[1]]]))
        center = np.linalg.solve(2.0 * np.array([b - a, c - a]), [b @ b - a @ a, c @ c - a @ a])
        radius = np.linalg.norm(a - center)
        others = np.delete(p, tri, axis=0)
        assert d != 0 and (np.linalg.norm(others - center, axis=1) > radius * (1.0 - 1e-6)).all()
    # a Delaunay mesh is a fixed point
    assert int(geometry.delaunay_edge_flip(wp.array(points, dtype=wp.vec2), indices).numpy()[0]) == 0


def test_adjacency_matches_an_edge_dictionary():
    _, tris = jittered_grid(6, 0.2, seed=1)
    neighbors, edges = (a.numpy() for a in geometry.tri_tri_adjacency(wp.array(tris, dtype=wp.int32)))
    sides = {}
    for t, tri in enumerate(tris):
        for j in range(3):
            sides.setdefault(frozenset((tri[(j + 1) % 3], tri[(j + 2) % 3])), []).append((t, j))
    for pair in sides.values():
        if len(pair) == 1:
            assert neighbors[pair[0]] == -1
        else:
            (t0, j0), (t1, j1) = pair
            assert (neighbors[t0, j0], edges[t0, j0], neighbors[t1, j1], edges[t1, j1]) == (t1, j1, t0, j0)


def test_bad_arguments_are_refused():
    points, tris = jittered_grid(2, 0.1, seed=0)
    positions, indices = wp.array(points, dtype=wp.vec2), wp.array(tris, dtype=wp.int32)
    for kwargs in ({"max_passes": 0}, {"area_epsilon": -1.0}, {"ref_area_epsilon": float("nan")}):
        with pytest.raises(ValueError):
            geometry.delaunay_edge_flip(positions, indices, **kwargs)
    with pytest.raises(ValueError, match="num_tris, 3"):
        geometry.tri_tri_adjacency(wp.zeros(6, dtype=wp.int32))
    np.testing.assert_array_equal(indices.numpy(), tris)


_PROGRAM = '''
import importlib

import numpy as np


def run(wp, Tape):
    geometry = importlib.import_module(wp.__name__ + ".geometry")
    n = 10
    xs, ys = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    points = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)
    interior = (xs.ravel() % n != 0) & (ys.ravel() % n != 0)
    points[interior] += np.random.default_rng(2).uniform(-0.3, 0.3, (int(interior.sum()), 2)).astype(np.float32)
    tris = []
    for i in range(n):
        for j in range(n):
            bl, br, tr, tl = i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1
            tris += [[bl, br, tr], [bl, tr, tl]]
    indices = wp.array(np.array(tris, np.int32), dtype=wp.int32)
    flips = geometry.delaunay_edge_flip(wp.array(points, dtype=wp.vec2), indices)
    neighbors = geometry.tri_tri_adjacency(indices, return_neighbor_edge_indices=False)
    return {"flips": flips.numpy(), "indices": indices.numpy(), "neighbors": neighbors.numpy()}
'''


def test_triangulation_is_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "delaunay")
    # the Delaunay triangulation of points in general position is unique: the same triangles (in any order and
    # rotation), though the flips taken to reach it may differ
    def canonical(tris):
        return sorted(tuple(np.roll(t, -int(np.argmin(t)))) for t in tris.tolist())

    assert canonical(ours["indices"]) == canonical(warp["indices"])
