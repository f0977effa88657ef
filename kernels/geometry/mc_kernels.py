"""The kernels of dense marching cubes (kernels/geometry/marching_cubes.py runs them) and the tables they read.

Vertices live on grid edges (one per edge whose two nodes lie on different sides of the threshold), numbered in
the order of the grid's edge ids `((i * ny + j) * nz + k) * 3 + axis` (the edge from node (i, j, k) one step along
`axis`), so a vertex shared by neighbouring cells is emitted once. Only `mc_vertex_positions` reads field values
into the output: it is the one launch a Tape records, and the gradient reaches the field through its linear
interpolation.
"""

from __future__ import annotations

import numpy as np

from ..compiler import lang as wp
from ..compiler.function import func
from ..runtime.array import array
from ..runtime.module import kernel
from .. import types as T
from . import mc_tables


@kernel
def mc_edge_crossings(field: array(dtype=T.float32, ndim=3), threshold: T.float32,
                      crossing: array(dtype=T.int32)):
    """crossing[edge id] = 1 where the edge's nodes lie on both sides of the threshold (0 elsewhere)."""
    i, j, k = wp.tid()
    nx = field.shape[0]
    ny = field.shape[1]
    nz = field.shape[2]
    below = field[i, j, k] < threshold
    base = ((i * ny + j) * nz + k) * 3
    if i + 1 < nx:
        if (field[i + 1, j, k] < threshold) != below:
            crossing[base] = 1
    if j + 1 < ny:
        if (field[i, j + 1, k] < threshold) != below:
            crossing[base + 1] = 1
    if k + 1 < nz:
        if (field[i, j, k + 1] < threshold) != below:
            crossing[base + 2] = 1


@kernel
def mc_vertex_positions(field: array(dtype=T.float32, ndim=3), threshold: T.float32,
                        vertex_edges: array(dtype=T.int32), lower: T.vec3, delta: T.vec3,
                        verts: array(dtype=T.vec3)):
    """verts[v] = where the field, linear along edge vertex_edges[v], meets the threshold [world units]."""
    v = wp.tid()
    edge = vertex_edges[v]
    axis = edge % 3
    node = edge // 3
    nz = field.shape[2]
    ny = field.shape[1]
    k = node % nz
    j = (node // nz) % ny
    i = node // (nz * ny)
    i1 = i
    j1 = j
    k1 = k
    if axis == 0:
        i1 = i + 1
    elif axis == 1:
        j1 = j + 1
    else:
        k1 = k + 1
    f0 = field[i, j, k]
    f1 = field[i1, j1, k1]
    t = (threshold - f0) / (f1 - f0)
    p0 = wp.vec3(float(i), float(j), float(k))
    p1 = wp.vec3(float(i1), float(j1), float(k1))
    verts[v] = lower + wp.cw_mul(delta, wp.lerp(p0, p1, t))


@func
def mc_case(field: array(dtype=T.float32, ndim=3), threshold: T.float32, i: int, j: int, k: int,
            corner_offsets: array(dtype=T.vec3i)):
    """The cell's case code: bit c set when corner c is below the threshold."""
    case = int(0)
    for c in range(8):
        o = corner_offsets[c]
        if field[i + o[0], j + o[1], k + o[2]] < threshold:
            case = case | (1 << c)
    return case


@kernel
def mc_cell_triangle_counts(field: array(dtype=T.float32, ndim=3), threshold: T.float32,
                            corner_offsets: array(dtype=T.vec3i), case_range: array(dtype=T.int32),
                            counts: array(dtype=T.int32)):
    """counts[cell id] = the number of triangles of the cell (i, j, k), cell id (i * (ny-1) + j) * (nz-1) + k."""
    i, j, k = wp.tid()
    case = mc_case(field, threshold, i, j, k, corner_offsets)
    cell = (i * (field.shape[1] - 1) + j) * (field.shape[2] - 1) + k
    counts[cell] = (case_range[case + 1] - case_range[case]) // 3


@kernel
def mc_cell_triangles(field: array(dtype=T.float32, ndim=3), threshold: T.float32,
                      corner_offsets: array(dtype=T.vec3i), case_range: array(dtype=T.int32),
                      tri_edges: array(dtype=T.int32), edge_offsets: array(dtype=T.vec4i),
                      first_triangle: array(dtype=T.int32), vertex_of_edge: array(dtype=T.int32),
                      indices: array(dtype=T.int32)):
    """The cell's triangles as vertex indices, written from triangle first_triangle[cell id] on."""
    i, j, k = wp.tid()
    ny = field.shape[1]
    nz = field.shape[2]
    case = mc_case(field, threshold, i, j, k, corner_offsets)
    out = first_triangle[(i * (ny - 1) + j) * (nz - 1) + k] * 3
    for n in range(case_range[case], case_range[case + 1]):
        e = edge_offsets[tri_edges[n]]  # (dx, dy, dz, axis) of the cell's local edge
        grid_edge = (((i + e[0]) * ny + (j + e[1])) * nz + (k + e[2])) * 3 + e[3]
        indices[out] = vertex_of_edge[grid_edge]
        out += 1


_TABLES = {}


def tables(device) -> dict:
    """The case tables as arrays on `device` (built once per device)."""
    key = str(device)
    if key not in _TABLES:
        edge_offsets = []
        for e, (a, _) in enumerate(mc_tables.EDGE_TO_CORNERS):
            edge_offsets.append((*mc_tables.CUBE_CORNER_OFFSETS[a], mc_tables.edge_axis(e)))
        _TABLES[key] = {
            "corner_offsets": array(np.array(mc_tables.CUBE_CORNER_OFFSETS, np.int32), dtype=T.vec3i,
                                    device=device),
            "case_range": array(np.array(mc_tables.CASE_TO_TRI_RANGE, np.int32), dtype=T.int32, device=device),
            "tri_edges": array(np.array(mc_tables.TRI_LOCAL_INDICES, np.int32), dtype=T.int32, device=device),
            "edge_offsets": array(np.array(edge_offsets, np.int32), dtype=T.vec4i, device=device),
        }
    return _TABLES[key]
