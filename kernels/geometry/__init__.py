"""Geometry processing on grids and meshes (Warp's `warp.geometry`, imported explicitly: `import kernels.geometry`).

Dense-grid iso-surfaces share IsoSurfaceBase: IsoSurfaceMarchingCubes (triangles). 2-d triangle meshes:
tri_tri_adjacency, delaunay_edge_flip, and the kernel functions signed_area, in_circle,
find_triangle_neighbor_edge_index.
"""

from __future__ import annotations

from .delaunay import (delaunay_edge_flip, find_triangle_neighbor_edge_index, in_circle, signed_area,
                       tri_tri_adjacency)
from .iso_surface import IsoSurfaceBase
from .marching_cubes import IsoSurfaceMarchingCubes

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes", "delaunay_edge_flip", "find_triangle_neighbor_edge_index",
           "in_circle", "signed_area", "tri_tri_adjacency"]
