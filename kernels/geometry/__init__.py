"""Geometry processing on grids and meshes (Warp's `warp.geometry`, imported explicitly: `import kernels.geometry`).

Dense-grid iso-surfaces share IsoSurfaceBase: IsoSurfaceMarchingCubes (triangles).
"""

from __future__ import annotations

from .iso_surface import IsoSurfaceBase
from .marching_cubes import IsoSurfaceMarchingCubes

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes"]
