"""Geometry processing on grids and meshes (Warp's `warp.geometry`, imported explicitly: `import kernels.geometry`).

Dense-grid iso-surfaces share IsoSurfaceBase: IsoSurfaceMarchingCubes (triangles), IsoSurfaceNets (quads or
triangles). Sparse extraction near the level set of an implicit function: sparse_marching_cubes (=
lipschitz_octree + sparse_marching_cubes_from_cells). 2-d triangle meshes: tri_tri_adjacency, delaunay_edge_flip,
and the kernel functions signed_area, in_circle, find_triangle_neighbor_edge_index. Swept volumes of moving meshes:
swept_volume_field, swept_volume_mesh, swept_volume_bounds, the kernel function swept_volume_sdf,
SweptVolumeSignMode.
"""

from __future__ import annotations

from . import surface_nets  # noqa: F401  (Warp's tests read the tables as warp._src.geometry.surface_nets._SN_*)
from .delaunay import (delaunay_edge_flip, find_triangle_neighbor_edge_index, in_circle, signed_area,
                       tri_tri_adjacency)
from .iso_surface import IsoSurfaceBase
from .marching_cubes import IsoSurfaceMarchingCubes
from .sparse_marching_cubes import lipschitz_octree, sparse_marching_cubes, sparse_marching_cubes_from_cells
from .surface_nets import IsoSurfaceNets
from .swept_volume import (SweptVolumeSignMode, swept_volume_bounds, swept_volume_field, swept_volume_mesh,
                           swept_volume_sdf)

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes", "IsoSurfaceNets", "SweptVolumeSignMode",
           "delaunay_edge_flip", "find_triangle_neighbor_edge_index", "in_circle", "lipschitz_octree",
           "signed_area", "sparse_marching_cubes", "sparse_marching_cubes_from_cells", "swept_volume_bounds",
           "swept_volume_field", "swept_volume_mesh", "swept_volume_sdf", "tri_tri_adjacency"]
