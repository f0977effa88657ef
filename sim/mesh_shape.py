"""Triangle-mesh colliders: checking a mesh, telling a closed solid from an open surface, and the BVH kernels
query (`wp.Mesh`)."""

from __future__ import annotations

import numpy as np

import kernels as wp

#: A face whose area is below this fraction of the mesh's mean face area is degenerate.
DEGENERATE_AREA = 1.0e-12


def checked_mesh(vertices, indices) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3) float64, triangles (m, 3) int32) of a collider mesh, or ValueError naming the problem:
    no triangles, an index out of range, a non-finite vertex, or a degenerate (zero-area) triangle."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
    if len(t) == 0:
        raise ValueError("a mesh collider needs at least one triangle")
    if not np.all(np.isfinite(v)):
        raise ValueError("mesh collider vertices must be finite")
    if t.min() < 0 or t.max() >= len(v):
        raise ValueError(f"mesh collider triangle index {int(t.max() if t.max() >= len(v) else t.min())} out of "
                         f"range ({len(v)} vertices)")
    area = 0.5 * np.linalg.norm(np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]), axis=1)
    bad = np.flatnonzero(area <= DEGENERATE_AREA * max(float(area.mean()), 1e-30))
    if len(bad):
        raise ValueError(f"mesh collider triangle {int(bad[0])} {tuple(int(x) for x in t[bad[0]])} is degenerate "
                         f"(zero area; {len(bad)} such triangles)")
    return v, t.astype(np.int32)


def mesh_is_closed(triangles: np.ndarray) -> bool:
    """Whether every edge is shared by exactly two triangles that run through it in opposite directions: a
    closed, consistently oriented surface, whose inside is well defined."""
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    directed = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    keys = directed[:, 0] * (int(t.max()) + 1) + directed[:, 1]
    reverse = directed[:, 1] * (int(t.max()) + 1) + directed[:, 0]
    unique, counts = np.unique(keys, return_counts=True)
    if np.any(counts > 1):  # a directed edge used twice: inconsistent orientation or a non-manifold edge
        return False
    return bool(np.all(np.isin(reverse, unique)))


def mesh_bounding_radius(vertices: np.ndarray, scale: float) -> float:
    """Radius [m] of a sphere about the shape's origin containing the scaled mesh."""
    return float(np.max(np.linalg.norm(vertices, axis=1)) * scale)


def build_collider_meshes(meshes: list, device) -> tuple[list, wp.array, wp.array]:
    """The BVHs of a model's shapes: `meshes` holds (vertices, triangles) or None per shape. Returns
    (wp.Mesh or None per shape, ids uint64 [shape_count], closed flags int32 [shape_count])."""
    bvhs, ids, closed = [], [], []
    for entry in meshes:
        if entry is None:
            bvhs.append(None)
            ids.append(0)
            closed.append(0)
            continue
        vertices, triangles = entry
        mesh = wp.Mesh(points=wp.array(vertices.astype(np.float32), dtype=wp.vec3, device=device),
                       indices=wp.array(triangles.reshape(-1).astype(np.int32), dtype=wp.int32, device=device))
        bvhs.append(mesh)
        ids.append(mesh.id)
        closed.append(int(mesh_is_closed(triangles)))
    return (bvhs, wp.array(np.array(ids, dtype=np.uint64), dtype=wp.uint64, device=device),
            wp.array(np.array(closed, dtype=np.int32), dtype=wp.int32, device=device))
