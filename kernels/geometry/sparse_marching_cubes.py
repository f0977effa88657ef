"""Sparse marching cubes (Warp's `warp.geometry.sparse_marching_cubes`, `lipschitz_octree`,
`sparse_marching_cubes_from_cells`): marching cubes on a chosen set of cells, and the Lipschitz octree that
chooses the cells around a level set of an implicit function without sampling the whole grid.

The octree: a cell of half-diagonal r centred at c is kept when |f(c) - threshold| <= lipschitz_bound * r (the level
set may pass through it), level by level from the root; the kept cells of the last level are the leaves. An
anisotropic grid of nx * ny * nz nodes is covered by a root of 2**depth cells per axis (depth for the longest axis)
and the leaves past the grid are culled. Extraction uses the dense tables (mc_tables.py), one vertex per crossed
cell edge shared by the cells around it, so the surface is the dense one on the same cells, watertight.
Differentiable from the corner values to the vertices; the octree (a discrete choice) is not differentiated.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..compiler import lang as wp
from ..compiler.function import Func
from ..runtime.array import array, zeros
from ..runtime.device import get_device
from ..runtime.launch import launch
from ..runtime.module import kernel
from . import mc_kernels, mc_tables
from .iso_surface import grid_frame

_OFFSETS = np.array(mc_tables.CUBE_CORNER_OFFSETS, np.int64)
_EDGE_CORNERS = np.array(mc_tables.EDGE_TO_CORNERS, np.int64)
_EDGE_AXES = np.array([mc_tables.edge_axis(e) for e in range(12)], np.int64)


@kernel
def _gather_corners(values: array(dtype=T.float32), corner_of: array(dtype=T.int32, ndim=2),
                    out: array(dtype=T.float32, ndim=2)):
    """out[cell, c] = values[corner_of[cell, c]] (the gradient returns to the one evaluation of each corner)."""
    cell, c = wp.tid()
    out[cell, c] = values[corner_of[cell, c]]


@kernel
def _cell_triangle_counts(values: array(dtype=T.float32, ndim=2), threshold: T.float32,
                          case_range: array(dtype=T.int32), counts: array(dtype=T.int32)):
    cell = wp.tid()
    case = int(0)
    for c in range(8):
        if values[cell, c] < threshold:
            case = case | (1 << c)
    counts[cell] = (case_range[case + 1] - case_range[case]) // 3


@kernel
def _cell_triangles(values: array(dtype=T.float32, ndim=2), threshold: T.float32, case_range: array(dtype=T.int32),
                    tri_edges: array(dtype=T.int32), first_triangle: array(dtype=T.int32),
                    vertex_of: array(dtype=T.int32, ndim=2), indices: array(dtype=T.int32)):
    """The cell's triangles; vertex_of[cell, e] is the vertex on the cell's local edge e."""
    cell = wp.tid()
    case = int(0)
    for c in range(8):
        if values[cell, c] < threshold:
            case = case | (1 << c)
    out = first_triangle[cell] * 3
    for n in range(case_range[case], case_range[case + 1]):
        indices[out] = vertex_of[cell, tri_edges[n]]
        out += 1


@kernel
def _vertex_positions(values: array(dtype=T.float32, ndim=2), threshold: T.float32, cells: array(dtype=T.vec3i),
                      source_cell: array(dtype=T.int32), source_edge: array(dtype=T.int32),
                      edge_ends: array(dtype=T.vec2i), corner_offsets: array(dtype=T.vec3i), origin: T.vec3,
                      width: T.vec3, verts: array(dtype=T.vec3)):
    """verts[v]: the crossing on local edge source_edge[v] of cell source_cell[v] (cells relative to `origin`)."""
    v = wp.tid()
    cell = source_cell[v]
    ends = edge_ends[source_edge[v]]
    f0 = values[cell, ends[0]]
    f1 = values[cell, ends[1]]
    t = (threshold - f0) / (f1 - f0)
    c = cells[cell]
    base = wp.vec3(float(c[0]), float(c[1]), float(c[2]))
    o0 = corner_offsets[ends[0]]
    o1 = corner_offsets[ends[1]]
    p0 = wp.vec3(float(o0[0]), float(o0[1]), float(o0[2]))
    p1 = wp.vec3(float(o1[0]), float(o1[1]), float(o1[2]))
    verts[v] = origin + wp.cw_mul(width, base + wp.lerp(p0, p1, t))


def _evaluator(field, device):
    """`field` (a batched callable: vec3 array -> float32 array) checked, as a function of numpy points."""
    if isinstance(field, Func) or not callable(field):
        raise TypeError("'field' must be a batched callable evaluate(points: wp.array(dtype=wp.vec3)) -> "
                        "wp.array(dtype=wp.float32); wrap a single-point @wp.func in a kernel that evaluates it "
                        f"over the points (got {type(field).__name__})")

    def evaluate(points: np.ndarray):
        values = field(array(points.astype(np.float32), dtype=T.vec3, device=device))
        if not isinstance(values, array) or values.shape != (len(points),):
            raise TypeError(f"'field' must return a wp.array of {len(points)} float32 values, got {values!r}")
        return values

    return evaluate


def _octree(evaluate, origin: np.ndarray, root: np.ndarray, max_depth: int, threshold: float, bound: float):
    """Leaf subscripts (int64 [n, 3]) of the Lipschitz octree and the number of field evaluations."""
    cells = np.zeros((1, 3), np.int64)
    evaluations = 0
    for depth in range(max_depth + 1):
        width = (root / float(1 << depth)).astype(np.float32)
        centers = origin.astype(np.float32) + (cells.astype(np.float32) + np.float32(0.5)) * width
        values = evaluate(centers).numpy()
        evaluations += len(cells)
        radius = np.float32(bound) * np.float32(0.5) * np.float32(np.linalg.norm(width.astype(np.float64)))
        cells = cells[np.abs(values - np.float32(threshold)) <= radius]
        if depth < max_depth and len(cells):
            cells = (2 * cells[:, None, :] + _OFFSETS[None, :, :]).reshape(-1, 3)
        if not len(cells):
            break
    return cells, evaluations


def lipschitz_octree(field, origin, root_width: float, max_depth: int, threshold: float = 0.0,
                     lipschitz_bound: float = 1.0, device=None) -> tuple:
    """The leaves (vec3i subscripts: cell (i, j, k) spans origin + cell_width * [(i, j, k), (i+1, j+1, k+1)]) of
    the octree bracketing the `threshold` level of `field` over the cube [origin, origin + root_width], and
    cell_width = root_width / 2**max_depth. `field`: a batched callable (see sparse_marching_cubes)."""
    if max_depth < 0:
        raise ValueError(f"max_depth must be non-negative, got {max_depth}.")
    if not root_width > 0.0:
        raise ValueError(f"root_width must be positive, got {root_width}.")
    if not lipschitz_bound >= 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {lipschitz_bound}.")
    device = get_device(device)
    evaluate = _evaluator(field, device)
    root = np.full(3, float(root_width))
    cells, _ = _octree(evaluate, np.array([float(x) for x in origin]), root, max_depth, threshold, lipschitz_bound)
    return array(cells.astype(np.int32).reshape(-1, 3), dtype=T.vec3i, device=device), root_width / (1 << max_depth)


def _cells_numpy(cells) -> np.ndarray:
    host = np.asarray(cells.numpy() if isinstance(cells, array) else cells)
    if host.size % 3:
        raise ValueError(f"'cells' must be integer subscripts of shape (n, 3) or vec3i, got shape {host.shape}")
    host = host.reshape(-1, 3)
    if not np.issubdtype(host.dtype, np.integer):
        raise TypeError(f"'cells' must hold integer subscripts, got {host.dtype}")
    return host.astype(np.int64)


def _corner_values(corner_values, count: int, device):
    """The corner values as a 2-d float32 array (count, 8) on `device` (a view of the caller's array if it is one)."""
    if not isinstance(corner_values, array):
        host = np.asarray(corner_values, np.float32)
        if host.size != 8 * count:
            raise ValueError(f"'corner_values' must hold 8 values per cell ({8 * count}), got shape {host.shape}")
        corner_values = array(host.reshape(-1, 8), dtype=T.float32, device=device)
    if corner_values.dtype is not T.float32:
        raise TypeError(f"'corner_values' must be float32, got {T.type_repr(corner_values.dtype)}")
    if corner_values.ndim == 1:
        corner_values = corner_values.reshape((-1, 8))
    if corner_values.ndim != 2 or tuple(corner_values.shape) != (count, 8):
        raise ValueError(f"'corner_values' must hold 8 values per cell, shape ({count}, 8), got "
                         f"{tuple(corner_values.shape)}")
    return corner_values


def sparse_marching_cubes_from_cells(cells, corner_values, origin=(0.0, 0.0, 0.0), cell_width=1.0,
                                     threshold: float = 0.0, device=None) -> tuple:
    """Marching cubes on the given cells (unique integer subscripts, vec3i or (n, 3)) with their corner values
    ((n, 8) or flat, in CUBE_CORNER_OFFSETS order; the values of a corner shared by cells should agree).

    Cell (i, j, k) spans origin + cell_width * [(i, j, k), (i+1, j+1, k+1)] (cell_width: a float or 3 floats).
    Returns (verts, indices) as IsoSurfaceMarchingCubes.extract does; gradients flow from verts to corner_values
    (to one deterministic entry per shared edge).
    """
    device = get_device(device) if device is not None else (
        corner_values.device if isinstance(corner_values, array) else get_device(None))
    subs = _cells_numpy(cells)
    width = np.broadcast_to(np.asarray(cell_width, np.float64), (3,)).copy()
    if not (np.isfinite(width).all() and (width > 0).all()):
        raise ValueError(f"'cell_width' must be positive and finite, got {cell_width}")
    values = _corner_values(corner_values, len(subs), device)
    requires_grad = values.requires_grad
    if not len(subs):
        return zeros(0, dtype=T.vec3, device=device, requires_grad=requires_grad), zeros(0, dtype=T.int32,
                                                                                            device=device)
    # subscripts relative to their minimum (exact in float32 however large they are); the offset joins the origin
    low = subs.min(axis=0)
    rel = subs - low
    origin64 = np.array([float(x) for x in origin]) + width * low
    host = values.numpy().astype(np.float32)
    below = host < np.float32(threshold)
    crossed = below[:, _EDGE_CORNERS[:, 0]] != below[:, _EDGE_CORNERS[:, 1]]  # (n, 12)
    # grid edge of each local edge: its lower corner and axis, packed into one integer
    corner = rel[:, None, :] + _OFFSETS[_EDGE_CORNERS[:, 0]][None, :, :]
    extent = rel.max(axis=0) + 2
    keys = ((corner[..., 0] * extent[1] + corner[..., 1]) * extent[2] + corner[..., 2]) * 3 + _EDGE_AXES[None, :]
    flat = np.flatnonzero(crossed.ravel())
    unique, first, inverse = np.unique(keys.ravel()[flat], return_index=True, return_inverse=True)
    vertex_of = np.full(crossed.size, -1, np.int32)
    vertex_of[flat] = inverse.astype(np.int32)
    source = flat[first]  # the first (cell, edge) in cell order holding each vertex
    verts = zeros(len(unique), dtype=T.vec3, device=device, requires_grad=requires_grad)
    tables = mc_kernels.tables(device)
    if len(unique):
        launch(_vertex_positions, dim=len(unique),
               inputs=[values, float(threshold), array(rel.astype(np.int32), dtype=T.vec3i, device=device),
                       array((source // 12).astype(np.int32), dtype=T.int32, device=device),
                       array((source % 12).astype(np.int32), dtype=T.int32, device=device),
                       array(_EDGE_CORNERS.astype(np.int32), dtype=T.vec2i, device=device),
                       tables["corner_offsets"], T.vec3(*origin64.tolist()), T.vec3(*width.tolist())],
               outputs=[verts], device=device)
    counts = zeros(len(subs), dtype=T.int32, device=device)
    launch(_cell_triangle_counts, dim=len(subs), inputs=[values, float(threshold), tables["case_range"], counts],
           device=device, record_tape=False)
    count = counts.numpy()
    indices = zeros(int(count.sum()) * 3, dtype=T.int32, device=device)
    if indices.size:
        first_triangle = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int32)
        launch(_cell_triangles, dim=len(subs),
               inputs=[values, float(threshold), tables["case_range"], tables["tri_edges"],
                       array(first_triangle, dtype=T.int32, device=device),
                       array(vertex_of.reshape(-1, 12), dtype=T.int32, device=device), indices],
               device=device, record_tape=False)
    return verts, indices


def sparse_marching_cubes(field, nx: int, ny: int, nz: int, *, lower=None, upper=None, threshold: float = 0.0,
                          lipschitz_bound: float = 1.0, device=None, return_stats: bool = False):
    """The `threshold` iso-surface of an implicit function on the grid of IsoSurfaceMarchingCubes.extract (nx, ny,
    nz nodes over [lower, upper]; the same surface), sampling only near it (see the module docstring).

    Args:
        field: batched callable, evaluate(points: wp.array(dtype=wp.vec3)) -> wp.array(dtype=wp.float32) on the
            points' device; its values must change by at most lipschitz_bound per unit length.
        nx, ny, nz: grid nodes per axis (at least 2).
        lower, upper: world positions of the first and last node.
        threshold: the iso-value.
        lipschitz_bound: bound on the field's Lipschitz constant (1 for a signed distance).
        device: where to compute.
        return_stats: also return {"resolution", "leaf_cells", "culled_cells", "field_evaluations"}.

    Returns:
        (verts, indices), plus the stats dict when asked. Differentiable through the values `field` returns.
    """
    shape = (int(nx), int(ny), int(nz))
    if min(shape) < 2:
        raise ValueError(f"nx, ny, nz must be at least 2 (one cell per axis), got {shape}.")
    if not lipschitz_bound >= 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {lipschitz_bound}.")
    device = get_device(device)
    evaluate = _evaluator(field, device)
    low, delta = grid_frame(shape, lower, upper)
    low, delta = np.array(list(low), np.float64), np.array(list(delta), np.float64)
    cells_per_axis = np.array(shape) - 1
    depth = int(np.ceil(np.log2(cells_per_axis.max()))) if cells_per_axis.max() > 1 else 0
    leaves, evaluations = _octree(evaluate, low, delta * (1 << depth), depth, threshold, lipschitz_bound)
    inside = (leaves < cells_per_axis[None, :]).all(axis=1)
    cells = leaves[inside]
    stats = {"resolution": 1 << depth, "leaf_cells": int(len(leaves)), "culled_cells": int((~inside).sum())}
    if len(cells):
        corners = cells[:, None, :] + _OFFSETS[None, :, :]
        key = (corners[..., 0] * (shape[1]) + corners[..., 1]) * shape[2] + corners[..., 2]
        unique, first, inverse = np.unique(key.ravel(), return_index=True, return_inverse=True)
        points = low + delta * corners.reshape(-1, 3)[first]
        values = evaluate(points)
        evaluations += len(unique)
        corner_values = zeros((len(cells), 8), dtype=T.float32, device=device, requires_grad=values.requires_grad)
        launch(_gather_corners, dim=(len(cells), 8),
               inputs=[values, array(inverse.reshape(-1, 8).astype(np.int32), dtype=T.int32, device=device)],
               outputs=[corner_values], device=device)
        verts, indices = sparse_marching_cubes_from_cells(cells, corner_values, low, delta, threshold, device)
    else:
        verts, indices = zeros(0, dtype=T.vec3, device=device), zeros(0, dtype=T.int32, device=device)
    stats["field_evaluations"] = int(evaluations)
    return (verts, indices, stats) if return_stats else (verts, indices)
