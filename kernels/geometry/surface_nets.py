"""Surface nets (Warp's `warp.geometry.IsoSurfaceNets`): one vertex per surface sheet of each cell the surface
crosses (the average of the sheet's edge crossings), and one quad around every crossed grid edge joining the
vertices of the four cells around it; optionally split into two triangles each.

The tables are in sn_tables.py (OpenVDB's numbering, our derivation; `_SN_*` below are Warp's names for them).
Two cells that both mark their shared face in AMBIGUOUS_FACE both take the complementary case (sn_tables.py).
Vertices of sheets that touch no interior edge belong to no quad and are dropped. Quads are wound
counter-clockwise seen from the outside (above the threshold). Differentiable from the vertices to the field
(through the edge interpolations); faces carry no gradient.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..compiler import lang as wp
from ..runtime.array import array, zeros
from ..runtime.launch import launch
from ..runtime.module import kernel
from . import sn_tables
from .iso_surface import IsoSurfaceBase, grid_frame, validate_field

_SN_CORNER_OFFSETS = sn_tables.CORNER_OFFSETS
_SN_EDGE_TO_CORNERS = sn_tables.EDGE_TO_CORNERS
_SN_EDGE_GROUP_TABLE = sn_tables.EDGE_GROUP_TABLE
_SN_AMBIGUOUS_FACE = sn_tables.AMBIGUOUS_FACE

TOPOLOGIES = ("triangle", "quad")
# the neighbour across each face id (index 0 unused), and the id of that face seen from the neighbour
_FACE_STEP = [(0, 0, 0)] + [tuple((1 if side else -1) if d == axis else 0 for d in range(3))
                            for axis, side in (sn_tables.FACES[f] for f in range(1, 7))]
_FACE_OPPOSITE = [0] + [sn_tables.OPPOSITE_FACE[f] for f in range(1, 7)]


@kernel
def _sn_signs(field: array(dtype=T.float32, ndim=3), threshold: T.float32, corners: array(dtype=T.vec3i),
              signs: array(dtype=T.int32, ndim=3)):
    i, j, k = wp.tid()
    s = int(0)
    for c in range(8):
        o = corners[c]
        if field[i + o[0], j + o[1], k + o[2]] < threshold:
            s = s | (1 << c)
    signs[i, j, k] = s


@kernel
def _sn_correct(signs: array(dtype=T.int32, ndim=3), ambiguous: array(dtype=T.int32), steps: array(dtype=T.vec3i),
                opposite: array(dtype=T.int32), groups: array(dtype=T.int32), case: array(dtype=T.int32, ndim=3),
                counts: array(dtype=T.int32, ndim=3)):
    """The case each cell uses (complemented when it and its neighbour share their one ambiguous face) and its
    number of vertices."""
    i, j, k = wp.tid()
    s = signs[i, j, k]
    face = ambiguous[s]
    if face != 0:
        step = steps[face]
        ni = i + step[0]
        nj = j + step[1]
        nk = k + step[2]
        if ni >= 0 and nj >= 0 and nk >= 0 and ni < signs.shape[0] and nj < signs.shape[1] and nk < signs.shape[2]:
            if ambiguous[signs[ni, nj, nk]] == opposite[face]:
                s = (~s) & 255
    case[i, j, k] = s
    counts[i, j, k] = groups[s * 13]


@kernel
def _sn_points(field: array(dtype=T.float32, ndim=3), threshold: T.float32, case: array(dtype=T.int32, ndim=3),
               first: array(dtype=T.int32, ndim=3), groups: array(dtype=T.int32), corners: array(dtype=T.vec3i),
               edges: array(dtype=T.vec2i), lower: T.vec3, delta: T.vec3, points: array(dtype=T.vec3)):
    """points[first[cell] + g - 1]: the average crossing of sheet g of the cell [world units]."""
    i, j, k = wp.tid()
    s = case[i, j, k]
    cell = wp.vec3(float(i), float(j), float(k))
    for g in range(1, groups[s * 13] + 1):
        total = wp.vec3(0.0)
        n = float(0.0)
        for e in range(12):
            if groups[s * 13 + 1 + e] == g:
                ends = edges[e]
                o0 = corners[ends[0]]
                o1 = corners[ends[1]]
                f0 = field[i + o0[0], j + o0[1], k + o0[2]]
                f1 = field[i + o1[0], j + o1[1], k + o1[2]]
                t = (threshold - f0) / (f1 - f0)
                p0 = wp.vec3(float(o0[0]), float(o0[1]), float(o0[2]))
                p1 = wp.vec3(float(o1[0]), float(o1[1]), float(o1[2]))
                total = total + wp.lerp(p0, p1, t)
                n = n + 1.0
        points[first[i, j, k] + g - 1] = lower + wp.cw_mul(delta, cell + total / n)


@kernel
def _gather(points: array(dtype=T.vec3), used: array(dtype=T.int32), verts: array(dtype=T.vec3)):
    v = wp.tid()
    verts[v] = points[used[v]]


def _point(case: np.ndarray, first: np.ndarray, table: np.ndarray, cells: tuple, column: int) -> np.ndarray:
    """Vertex of the sheet holding local edge `column - 1` in each of `cells` (index arrays)."""
    s = case[cells]
    several = table[s * 13] > 1
    offset = np.where(several, table[s * 13 + column] - 1, 0)
    return first[cells] + offset


def _quads(signs: np.ndarray, case: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Quads [n, 4] around the crossed interior grid edges, cell by cell, x then y then z edge at each cell."""
    table = np.array(_SN_EDGE_GROUP_TABLE, np.int64)
    inside = (signs & 1).astype(bool)
    # edge flags at each cell's corner 0: x edge to corner 1, y edge to corner 4, z edge to corner 3
    crossing = [inside != ((signs >> bit) & 1).astype(bool) for bit in (1, 4, 3)]
    # (cells around the edge, relative to the cell, with the column of the shared edge in each)
    around = (((0, 0, 0), 1), ((0, -1, 0), 5), ((0, -1, -1), 7), ((0, 0, -1), 3)), \
             (((0, 0, 0), 9), ((0, 0, -1), 12), ((-1, 0, -1), 11), ((-1, 0, 0), 10)), \
             (((0, 0, 0), 4), ((0, -1, 0), 8), ((-1, -1, 0), 6), ((-1, 0, 0), 2))
    found = []
    for axis in range(3):
        need = [d for d in range(3) if d != axis]
        mask = crossing[axis].copy()
        for d in need:
            index = [slice(None)] * 3
            index[d] = 0
            mask[tuple(index)] = False  # the four cells around the edge must exist
        cells = np.nonzero(mask)
        quad = np.stack([_point(case, first, table, tuple(c + o for c, o in zip(cells, offset)), column)
                         for offset, column in around[axis]], axis=1)
        flip = inside[cells] if axis == 2 else ~inside[cells]
        quad[flip] = quad[flip][:, ::-1]
        linear = np.ravel_multi_index(cells, signs.shape)
        found.append((linear, axis, quad))
    linear = np.concatenate([f[0] for f in found])
    axes = np.concatenate([np.full(len(f[0]), f[1]) for f in found])
    quads = np.concatenate([f[2] for f in found]).reshape(-1, 4)
    order = np.lexsort((axes, linear))
    return quads[order]


def _tables(device) -> dict:
    return {"corners": array(np.array(_SN_CORNER_OFFSETS, np.int32), dtype=T.vec3i, device=device),
            "edges": array(np.array(_SN_EDGE_TO_CORNERS, np.int32), dtype=T.vec2i, device=device),
            "groups": array(np.array(_SN_EDGE_GROUP_TABLE, np.int32), dtype=T.int32, device=device),
            "ambiguous": array(np.array(_SN_AMBIGUOUS_FACE, np.int32), dtype=T.int32, device=device),
            "steps": array(np.array(_FACE_STEP, np.int32), dtype=T.vec3i, device=device),
            "opposite": array(np.array(_FACE_OPPOSITE, np.int32), dtype=T.int32, device=device)}


def _check_topology(topology: str) -> None:
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")


def surface_nets(field, threshold: float = 0.0, lower=None, upper=None, topology: str = "triangle") -> tuple:
    """The `threshold` iso-surface of `field` (float32 (nx, ny, nz), at least 2 nodes per axis) by surface nets.

    Returns:
        (verts, indices): vec3 positions [world units] (differentiable with respect to `field`) and flat int32
        indices, 6 per quad (triangles (0, 1, 2), (0, 2, 3)) or 4 per quad with topology="quad".
    """
    validate_field(field)
    _check_topology(topology)
    device = field.device
    threshold = float(threshold)
    cells = tuple(n - 1 for n in field.shape)
    low, delta = grid_frame(field.shape, lower, upper)
    tables = _tables(device)
    signs = zeros(cells, dtype=T.int32, device=device)
    launch(_sn_signs, dim=cells, inputs=[field, threshold, tables["corners"], signs], device=device,
           record_tape=False)
    case = zeros(cells, dtype=T.int32, device=device)
    counts = zeros(cells, dtype=T.int32, device=device)
    launch(_sn_correct, dim=cells, inputs=[signs, tables["ambiguous"], tables["steps"], tables["opposite"],
                                           tables["groups"], case, counts], device=device, record_tape=False)
    count = counts.numpy()
    first = (np.cumsum(count.ravel()) - count.ravel()).reshape(cells).astype(np.int32)
    total = int(count.sum())
    points = zeros(total, dtype=T.vec3, device=device, requires_grad=field.requires_grad)
    if total:
        launch(_sn_points, dim=cells, inputs=[field, threshold, case, array(first, dtype=T.int32, device=device),
                                              tables["groups"], tables["corners"], tables["edges"], low, delta],
               outputs=[points], device=device)
    quads = _quads(signs.numpy(), case.numpy(), first) if total else np.zeros((0, 4), np.int64)
    used, remapped = np.unique(quads, return_inverse=True)
    quads = remapped.reshape(-1, 4).astype(np.int32)
    verts = zeros(len(used), dtype=T.vec3, device=device, requires_grad=field.requires_grad)
    if len(used):
        launch(_gather, dim=len(used), inputs=[points, array(used.astype(np.int32), dtype=T.int32, device=device)],
               outputs=[verts], device=device)
    faces = quads if topology == "quad" else quads[:, [0, 1, 2, 0, 2, 3]]
    return verts, array(np.ascontiguousarray(faces).reshape(-1), dtype=T.int32, device=device)


class IsoSurfaceNets(IsoSurfaceBase):
    """A reusable surface nets context for fields of nx * ny * nz nodes (see IsoSurfaceBase and `surface_nets`).

    Args:
        nx, ny, nz: nodes per axis.
        lower, upper: world positions of the first and last node (None: nodes at integer coordinates).
        topology: "triangle" (two per quad, the default) or "quad".
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower=None, upper=None, topology: str = "triangle"):
        _check_topology(topology)
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.topology = topology

    def surface(self, field, threshold: float) -> None:
        """Extract the `threshold` iso-surface of `field` (shape (nx, ny, nz)) into `verts` and `indices`."""
        validate_field(field)
        self._check_field_shape(field)
        self.verts, self.indices = surface_nets(field, threshold, self.lower, self.upper, self.topology)

    @classmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None, topology: str = "triangle") -> tuple:
        """The iso-surface of `field` as (verts, indices) (see `surface_nets`)."""
        return surface_nets(field, threshold, lower, upper, topology)
