"""2-d triangle meshes: triangle adjacency and parallel Delaunay edge flipping (Warp's
`warp.geometry.tri_tri_adjacency` and `delaunay_edge_flip`), with the predicates they rest on.

Local edge j of a triangle is the one opposite its vertex j (joining local vertices (j+1)%3 and (j+2)%3).
An interior edge is flipped when the opposite vertex of its neighbour lies strictly inside the triangle's
circumcircle and both new triangles keep a positive area (above `area_epsilon`, and above `ref_area_epsilon` in the
reference configuration when one is given). Each pass flips an independent set of edges: every candidate edge
claims its two triangles with a priority (an integer hash of the edge, so that the winners are spread over the mesh
rather than cascading along the triangle numbering), and the edges that hold both claims flip. Passes repeat until
one flips nothing. Not differentiable (connectivity only).
"""

from __future__ import annotations

import math

import numpy as np

from .. import types as T
from ..compiler import lang as wp
from ..compiler.function import func
from ..runtime.array import array, zeros
from ..runtime.array_algorithms import radix_sort_pairs
from ..runtime.array_create import full
from ..runtime.launch import launch
from ..runtime.module import kernel


@func
def signed_area(a: T.vec2, b: T.vec2, c: T.vec2) -> float:
    """The signed area of triangle abc [length^2], positive when counter-clockwise."""
    return 0.5 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


@func
def in_circle(a: T.vec2, b: T.vec2, c: T.vec2, d: T.vec2) -> bool:
    """Whether d lies strictly inside the circumcircle of the counter-clockwise triangle abc (in float64)."""
    adx = T.float64(a[0]) - T.float64(d[0])
    ady = T.float64(a[1]) - T.float64(d[1])
    bdx = T.float64(b[0]) - T.float64(d[0])
    bdy = T.float64(b[1]) - T.float64(d[1])
    cdx = T.float64(c[0]) - T.float64(d[0])
    cdy = T.float64(c[1]) - T.float64(d[1])
    ad2 = adx * adx + ady * ady
    bd2 = bdx * bdx + bdy * bdy
    cd2 = cdx * cdx + cdy * cdy
    det = adx * (bdy * cd2 - cdy * bd2) - ady * (bdx * cd2 - cdx * bd2) + ad2 * (bdx * cdy - bdy * cdx)
    return det > T.float64(0.0)


@func
def find_triangle_neighbor_edge_index(triangle_neighbors: array(dtype=T.int32, ndim=2), triangle: T.int32,
                                      neighbor: T.int32) -> T.int32:
    """The local edge of `triangle` across which `neighbor` lies, or -1 when they are not adjacent."""
    for j in range(3):
        if triangle_neighbors[triangle, j] == neighbor:
            return j
    return -1


@kernel
def _half_edge_keys(indices: array(dtype=T.int32, ndim=2), vertex_count: T.int64, keys: array(dtype=T.int64),
                    half_edges: array(dtype=T.int32)):
    t, j = wp.tid()
    a = T.int64(indices[t, (j + 1) % 3])
    b = T.int64(indices[t, (j + 2) % 3])
    h = t * 3 + j
    keys[h] = wp.min(a, b) * vertex_count + wp.max(a, b)
    half_edges[h] = h


@kernel
def _link_twins(keys: array(dtype=T.int64), half_edges: array(dtype=T.int32),
                neighbors: array(dtype=T.int32, ndim=2), neighbor_edges: array(dtype=T.int32, ndim=2)):
    """Sorted half-edges with equal keys are the two sides of one edge."""
    i = wp.tid()
    if keys[i] == keys[i + 1]:
        h0 = half_edges[i]
        h1 = half_edges[i + 1]
        neighbors[h0 // 3, h0 % 3] = h1 // 3
        neighbors[h1 // 3, h1 % 3] = h0 // 3
        neighbor_edges[h0 // 3, h0 % 3] = h1 % 3
        neighbor_edges[h1 // 3, h1 % 3] = h0 % 3


@kernel
def _max_index(indices: array(dtype=T.int32, ndim=2), out: array(dtype=T.int32)):
    t, j = wp.tid()
    wp.atomic_max(out, 0, indices[t, j])


def _check_indices(indices) -> None:
    if indices.ndim != 2 or indices.shape[1] != 3:
        raise ValueError(f"indices must be a (num_tris, 3) int32 array of triangle vertex indices, got shape "
                         f"{tuple(indices.shape)}")


def tri_tri_adjacency(indices, vertex_count: int | None = None, return_neighbor_edge_indices: bool = True):
    """Triangle adjacency of an edge-manifold mesh (each edge in one or two triangles).

    Args:
        indices: int32 array (num_tris, 3) of vertex indices.
        vertex_count: number of vertices (None: one more than the largest index).
        return_neighbor_edge_indices: also return each neighbour's local index of the shared edge.

    Returns:
        neighbors: int32 (num_tris, 3), neighbors[t, j] the triangle across local edge j of t, -1 on the boundary;
        with neighbor_edges (int32 (num_tris, 3), the shared edge's local index in that neighbour) when asked.
    """
    _check_indices(indices)
    device = indices.device
    num_tris = indices.shape[0]
    neighbors = full((num_tris, 3), -1, dtype=T.int32, device=device)
    neighbor_edges = full((num_tris, 3), -1, dtype=T.int32, device=device)
    if num_tris:
        if vertex_count is None:
            top = zeros(1, dtype=T.int32, device=device)
            launch(_max_index, dim=(num_tris, 3), inputs=[indices, top], device=device, record_tape=False)
            vertex_count = int(top.numpy()[0]) + 1
        count = 3 * num_tris
        keys = zeros(2 * count, dtype=T.int64, device=device)
        half_edges = zeros(2 * count, dtype=T.int32, device=device)
        launch(_half_edge_keys, dim=(num_tris, 3), inputs=[indices, int(vertex_count), keys, half_edges],
               device=device, record_tape=False)
        radix_sort_pairs(keys, half_edges, count)
        launch(_link_twins, dim=count - 1, inputs=[keys, half_edges, neighbors, neighbor_edges], device=device,
               record_tape=False)
    return (neighbors, neighbor_edges) if return_neighbor_edge_indices else neighbors


@func
def _edge_priority(half_edge: T.int32) -> T.uint32:
    """A bijective hash of half_edge + 1 (so never 0, the unclaimed mark) spreading neighbours apart."""
    x = T.uint32(half_edge + 1)
    x = (x ^ (x >> T.uint32(16))) * T.uint32(0x7FEB352D)
    x = (x ^ (x >> T.uint32(15))) * T.uint32(0x846CA68B)
    return x ^ (x >> T.uint32(16))


@func
def _flip_allowed(indices: array(dtype=T.int32, ndim=2), neighbors: array(dtype=T.int32, ndim=2),
                  positions: array(dtype=T.vec2), ref: array(dtype=T.vec2), has_ref: T.int32,
                  area_epsilon: float, ref_area_epsilon: float, t: T.int32, j: T.int32) -> bool:
    n = neighbors[t, j]
    if n < t:  # boundary (-1), or the edge seen from its other triangle
        return False
    a = indices[t, j]
    b = indices[t, (j + 1) % 3]
    c = indices[t, (j + 2) % 3]
    jn = find_triangle_neighbor_edge_index(neighbors, n, t)
    d = indices[n, jn]
    if not in_circle(positions[a], positions[b], positions[c], positions[d]):
        return False
    # the new triangles (a, b, d) and (a, d, c) must keep a positive area: the quad abdc is convex
    if signed_area(positions[a], positions[b], positions[d]) <= area_epsilon:
        return False
    if signed_area(positions[a], positions[d], positions[c]) <= area_epsilon:
        return False
    if has_ref != 0:
        if signed_area(ref[a], ref[b], ref[d]) <= ref_area_epsilon:
            return False
        if signed_area(ref[a], ref[d], ref[c]) <= ref_area_epsilon:
            return False
    return True


@kernel
def _claim_flips(indices: array(dtype=T.int32, ndim=2), neighbors: array(dtype=T.int32, ndim=2),
                 positions: array(dtype=T.vec2), ref: array(dtype=T.vec2), has_ref: T.int32, area_epsilon: float,
                 ref_area_epsilon: float, claim: array(dtype=T.uint32), wanted: array(dtype=T.int32)):
    t, j = wp.tid()
    if _flip_allowed(indices, neighbors, positions, ref, has_ref, area_epsilon, ref_area_epsilon, t, j):
        h = t * 3 + j
        wanted[h] = 1
        priority = _edge_priority(h)
        wp.atomic_max(claim, t, priority)
        wp.atomic_max(claim, neighbors[t, j], priority)


@kernel
def _apply_flips(indices: array(dtype=T.int32, ndim=2), neighbors: array(dtype=T.int32, ndim=2),
                 claim: array(dtype=T.uint32), wanted: array(dtype=T.int32), flips: array(dtype=T.int32)):
    t, j = wp.tid()
    h = t * 3 + j
    if wanted[h] == 0:
        return
    n = neighbors[t, j]
    priority = _edge_priority(h)
    if claim[t] != priority or claim[n] != priority:
        return
    a = indices[t, j]
    b = indices[t, (j + 1) % 3]
    c = indices[t, (j + 2) % 3]
    d = indices[n, find_triangle_neighbor_edge_index(neighbors, n, t)]
    indices[t, 0] = a
    indices[t, 1] = b
    indices[t, 2] = d
    indices[n, 0] = a
    indices[n, 1] = d
    indices[n, 2] = c
    wp.atomic_add(flips, 0, 1)


def delaunay_edge_flip(positions, indices, ref_positions=None, max_passes: int = 1000, area_epsilon: float = 0.0,
                       ref_area_epsilon: float = 1.0e-10):
    """Flip non-Delaunay interior edges of a counter-clockwise 2-d triangle mesh in place (see the module
    docstring) until none is left or `max_passes` passes ran.

    Args:
        positions: vec2 array [length], shape [vertex_count].
        indices: int32 array (num_tris, 3), counter-clockwise triangles; rewritten in place.
        ref_positions: optional vec2 array like `positions`: flips degenerate there are refused.
        max_passes: at most this many passes (at least 1).
        area_epsilon: smallest signed area [length^2] a flip may create (finite, >= 0).
        ref_area_epsilon: the same in the reference configuration.

    Returns:
        int32 array of shape (1,) on the mesh's device: the number of edges flipped.
    """
    _check_indices(indices)
    device = indices.device
    if str(positions.device) != str(device):
        raise ValueError("positions and indices must be on the same device")
    if ref_positions is not None and str(ref_positions.device) != str(device):
        raise ValueError("ref_positions and indices must be on the same device")
    if max_passes < 1:
        raise ValueError(f"max_passes must be at least 1, got {max_passes}")
    for name, value in (("area_epsilon", area_epsilon), ("ref_area_epsilon", ref_area_epsilon)):
        if not math.isfinite(value) or value < 0.0:
            raise ValueError(f"{name} must be a finite, non-negative number, got {value}")
    total = zeros(1, dtype=T.int32, device=device)
    num_tris = indices.shape[0]
    if num_tris == 0:
        return total
    has_ref = 1 if ref_positions is not None else 0
    ref = ref_positions if ref_positions is not None else positions
    for _ in range(max_passes):
        neighbors = tri_tri_adjacency(indices, positions.shape[0], return_neighbor_edge_indices=False)
        claim = zeros(num_tris, dtype=T.uint32, device=device)
        wanted = zeros(3 * num_tris, dtype=T.int32, device=device)
        flips = zeros(1, dtype=T.int32, device=device)
        launch(_claim_flips, dim=(num_tris, 3), inputs=[indices, neighbors, positions, ref, has_ref,
                                                        float(area_epsilon), float(ref_area_epsilon), claim, wanted],
               device=device, record_tape=False)
        launch(_apply_flips, dim=(num_tris, 3), inputs=[indices, neighbors, claim, wanted, flips], device=device,
               record_tape=False)
        flipped = int(flips.numpy()[0])
        if flipped == 0:
            break
        total.assign(np.array([int(total.numpy()[0]) + flipped], np.int32))
    return total
