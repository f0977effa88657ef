"""Dense marching cubes (Warp's `warp.geometry.IsoSurfaceMarchingCubes`, formerly `wp.MarchingCubes`): the
triangle mesh of a field's iso-surface, one vertex per crossed grid edge, watertight (see mc_tables.py).

Differentiable: on a Tape, the gradient flows from the output vertex positions to the field values at the ends of
their edges (linear interpolation along the edge); which cells hold triangles, and `indices`, carry no gradient.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..logger import log_warning
from ..runtime.array import array, zeros
from ..runtime.launch import launch
from . import mc_kernels, mc_tables
from .iso_surface import IsoSurfaceBase, grid_frame, validate_field

_UNSET = object()  # a deprecated keyword argument left out


def _deprecated_bound(attribute: str, replacement: str) -> None:
    log_warning(f"IsoSurfaceMarchingCubes.{attribute} is deprecated and will be removed in a future version of "
                f"Warp. Use `{replacement}` instead.", category=DeprecationWarning, stacklevel=3)


def _merge_bound(canonical: str, value, legacy: str, legacy_value):
    """`value`, or the deprecated `legacy_value` given for it (which warns); both given is an error."""
    if legacy_value is _UNSET:
        return value
    if value is not None and legacy_value is not None:
        raise TypeError(f"Cannot specify both `{canonical}` and `{legacy}`.")
    log_warning(f"IsoSurfaceMarchingCubes() argument `{legacy}` is deprecated and will be removed in a future "
                f"version of Warp. Use `{canonical}` instead.", category=DeprecationWarning, stacklevel=3)
    return value if legacy_value is None else legacy_value


def marching_cubes(field, threshold: float = 0.0, lower=None, upper=None) -> tuple:
    """The `threshold` iso-surface of `field` as a triangle mesh.

    Args:
        field: float32 array of shape (nx, ny, nz), values at the grid nodes, each axis at least 2 nodes.
        threshold: the iso-value; nodes below it are inside.
        lower, upper: world positions of the first and last node (see iso_surface.grid_frame).

    Returns:
        (verts, indices): vec3 positions [world units], shape [vertex_count] (differentiable with respect to
        `field`), and int32 vertex indices, shape [3 * triangle_count], counter-clockwise seen from outside.
    """
    validate_field(field)
    device = field.device
    nx, ny, nz = field.shape
    threshold = float(threshold)
    low, delta = grid_frame(field.shape, lower, upper)
    tables = mc_kernels.tables(device)

    crossing = zeros(nx * ny * nz * 3, dtype=T.int32, device=device)
    launch(mc_kernels.mc_edge_crossings, dim=(nx, ny, nz), inputs=[field, threshold, crossing], device=device,
           record_tape=False)
    crossed = crossing.numpy().astype(bool)
    vertex_edges = np.flatnonzero(crossed).astype(np.int32)
    vertex_of_edge = np.full(crossed.size, -1, np.int32)
    vertex_of_edge[vertex_edges] = np.arange(vertex_edges.size, dtype=np.int32)

    verts = zeros(vertex_edges.size, dtype=T.vec3, device=device, requires_grad=field.requires_grad)
    if vertex_edges.size:
        launch(mc_kernels.mc_vertex_positions, dim=vertex_edges.size,
               inputs=[field, threshold, array(vertex_edges, dtype=T.int32, device=device), low, delta],
               outputs=[verts], device=device)

    cells = (nx - 1, ny - 1, nz - 1)
    counts = zeros(int(np.prod(cells)), dtype=T.int32, device=device)
    launch(mc_kernels.mc_cell_triangle_counts, dim=cells,
           inputs=[field, threshold, tables["corner_offsets"], tables["case_range"], counts], device=device,
           record_tape=False)
    count = counts.numpy()
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int32)
    indices = zeros(int(count.sum()) * 3, dtype=T.int32, device=device)
    if indices.size:
        launch(mc_kernels.mc_cell_triangles, dim=cells,
               inputs=[field, threshold, tables["corner_offsets"], tables["case_range"], tables["tri_edges"],
                       tables["edge_offsets"], array(first, dtype=T.int32, device=device),
                       array(vertex_of_edge, dtype=T.int32, device=device), indices],
               device=device, record_tape=False)
    return verts, indices


class IsoSurfaceMarchingCubes(IsoSurfaceBase):
    """A reusable marching cubes context for fields of nx * ny * nz nodes (see IsoSurfaceBase); `extract` is the
    stateless form. Gradients flow from `verts` to the field on a Tape (see the module docstring).

    The case tables are class attributes (tuples): CUBE_CORNER_OFFSETS (8 corner offsets, corner c is bit c of
    a case), EDGE_TO_CORNERS (12 corner pairs), CASE_TO_TRI_RANGE (257 offsets into TRI_LOCAL_INDICES: case c's
    triangles are TRI_LOCAL_INDICES[CASE_TO_TRI_RANGE[c]:CASE_TO_TRI_RANGE[c + 1]]), TRI_LOCAL_INDICES (edge
    numbers, three per triangle, 820 triangles).

    Args:
        nx, ny, nz: nodes per axis.
        lower, upper: world positions of the first and last node (None: nodes at integer coordinates).
        domain_bounds_lower_corner, domain_bounds_upper_corner: deprecated names of `lower` and `upper`.
    """

    CUBE_CORNER_OFFSETS = mc_tables.CUBE_CORNER_OFFSETS
    EDGE_TO_CORNERS = mc_tables.EDGE_TO_CORNERS
    CASE_TO_TRI_RANGE = mc_tables.CASE_TO_TRI_RANGE
    TRI_LOCAL_INDICES = mc_tables.TRI_LOCAL_INDICES

    def __init__(self, nx: int, ny: int, nz: int, lower=None, upper=None, *,
                 domain_bounds_lower_corner=_UNSET, domain_bounds_upper_corner=_UNSET):
        lower = _merge_bound("lower", lower, "domain_bounds_lower_corner", domain_bounds_lower_corner)
        upper = _merge_bound("upper", upper, "domain_bounds_upper_corner", domain_bounds_upper_corner)
        super().__init__(nx, ny, nz, lower=lower, upper=upper)

    @property
    def domain_bounds_lower_corner(self):
        """Deprecated name of `lower`."""
        _deprecated_bound("domain_bounds_lower_corner", "lower")
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value):
        _deprecated_bound("domain_bounds_lower_corner", "lower")
        self.lower = value

    @property
    def domain_bounds_upper_corner(self):
        """Deprecated name of `upper`."""
        _deprecated_bound("domain_bounds_upper_corner", "upper")
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value):
        _deprecated_bound("domain_bounds_upper_corner", "upper")
        self.upper = value

    def surface(self, field, threshold: float) -> None:
        """Extract the `threshold` iso-surface of `field` (shape (nx, ny, nz)) into `verts` and `indices`."""
        validate_field(field)
        self._check_field_shape(field)
        self.verts, self.indices = marching_cubes(field, threshold, self.lower, self.upper)

    @classmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """The iso-surface of `field` as (verts, indices) (see `marching_cubes`)."""
        return marching_cubes(field, threshold, lower, upper)

    @staticmethod
    def extract_surface_marching_cubes(field, threshold: float = 0.0, domain_bounds_lower_corner=None,
                                       domain_bounds_upper_corner=None) -> tuple:
        """Deprecated name of `extract`."""
        log_warning("IsoSurfaceMarchingCubes.extract_surface_marching_cubes() is deprecated and will be removed "
                    "in a future version of Warp. Use IsoSurfaceMarchingCubes.extract() instead.",
                    category=DeprecationWarning, stacklevel=2)
        return marching_cubes(field, threshold, domain_bounds_lower_corner, domain_bounds_upper_corner)
