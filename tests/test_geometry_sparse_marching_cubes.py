"""Sparse marching cubes (kernels.geometry.sparse_marching_cubes and its two stages) checked independently: the
octree keeps every cell where the field changes sign (brute force over the dense grid), the surface is closed and
consistently wound, equals the dense extraction on the same grid, and its vertex gradients match central
differences."""

from __future__ import annotations

import numpy as np

import kernels as wp
import kernels.geometry as geometry
from autodiff import gradcheck
from test_geometry_marching_cubes import area_and_volume, assert_closed_and_oriented


@wp.kernel
def _torus(points: wp.array(dtype=wp.vec3), values: wp.array(dtype=wp.float32)):
    i = wp.tid()
    p = points[i]
    q = wp.vec2(wp.length(wp.vec2(p[0], p[2])) - 0.5, p[1])
    values[i] = wp.length(q) - 0.2


def torus(points):
    values = wp.empty(points.shape[0], dtype=wp.float32, device=points.device)
    wp.launch(_torus, dim=points.shape[0], inputs=[points, values], device=points.device)
    return values


def torus_numpy(p: np.ndarray) -> np.ndarray:
    return np.hypot(np.hypot(p[..., 0], p[..., 2]) - 0.5, p[..., 1]) - 0.2


def test_octree_brackets_every_sign_change():
    cells, width = geometry.lipschitz_octree(torus, (-1.0, -1.0, -1.0), 2.0, 5)
    kept = {tuple(c) for c in cells.numpy().tolist()}
    x = -1.0 + width * np.arange(33)
    nodes = torus_numpy(np.stack(np.meshgrid(x, x, x, indexing="ij"), axis=-1)) < 0
    corners = [nodes[i:i + 32, j:j + 32, k:k + 32] for i in (0, 1) for j in (0, 1) for k in (0, 1)]
    mixed = np.argwhere(np.any(corners, axis=0) & ~np.all(corners, axis=0))
    assert len(mixed) > 100 and all(tuple(c) in kept for c in mixed.tolist())
    assert len(kept) < 33**3 // 4  # a shell, not the volume


def test_sparse_surface_is_the_dense_one_and_closed():
    n, lower, upper = 29, (-1.0, -0.9, -1.1), (1.0, 0.95, 1.05)  # anisotropic, not a power of two plus one
    verts, indices, stats = geometry.sparse_marching_cubes(torus, n, n, n, lower=lower, upper=upper,
                                                           return_stats=True)
    v, f = verts.numpy().astype(np.float64), indices.numpy().reshape(-1, 3)
    assert_closed_and_oriented(f)
    assert len(v) - len(f) * 3 // 2 + len(f) == 0  # Euler characteristic of a torus
    assert stats["resolution"] == 32 and stats["field_evaluations"] < n**3 // 2  # padded to 2**5 cells
    delta = (np.array(upper) - np.array(lower)) / (n - 1)
    index = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), axis=-1)
    field = wp.array(torus_numpy(np.array(lower) + index * delta).astype(np.float32), dtype=wp.float32)
    dense_v, dense_i = geometry.IsoSurfaceMarchingCubes.extract(field, 0.0, lower=lower, upper=upper)
    dense_v, dense_f = dense_v.numpy().astype(np.float64), dense_i.numpy().reshape(-1, 3)
    assert len(dense_f) == len(f) and len(dense_v) == len(v)
    # the same triangles as sets of vertex positions (float32 evaluation differs from numpy's by ~1e-7)
    def canonical(points, tris):
        return np.sort(np.round(points[tris], 4).reshape(len(tris), 9), axis=0)

    np.testing.assert_allclose(canonical(v, f), canonical(dense_v, dense_f), atol=2e-4)
    assert area_and_volume(v, f)[1] > 0  # wound outward


def test_vertex_gradients_match_central_differences():
    cells = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 1]], np.int32)
    rng = np.random.default_rng(4)
    values = rng.uniform(0.2, 1.0, (4, 8)) * rng.choice([-1.0, 1.0], (4, 8))
    corner_values = wp.array(values.astype(np.float32), dtype=wp.float32)

    def fn(v):
        verts, _ = geometry.sparse_marching_cubes_from_cells(cells, v, origin=(0.5, -1.0, 0.0), cell_width=0.3)
        return verts

    gradcheck(fn, [corner_values])
