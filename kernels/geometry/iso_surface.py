"""What every dense-grid iso-surface extractor shares (Warp's `warp.geometry.IsoSurfaceBase`): the field checks,
the grid-to-world mapping and the reusable-context interface (`surface` fills `verts`/`indices`; `extract` is the
stateless form).

Conventions of all backends: the field is a 3-d float32 array sampled at grid nodes; node (i, j, k) sits at
`lower + (i, j, k) * delta` with `delta = (upper - lower) / (shape - 1)` (defaults: lower at the origin, one unit
per cell); a node is inside when its value is below the threshold; faces are wound counter-clockwise seen from
the outside (the side above the threshold, e.g. outside a signed distance field that is negative inside).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .. import types as T


def validate_field(field) -> None:
    """Check that `field` is a 3-d float32 array with at least one cell (2 nodes on every axis).

    Raises:
        ValueError: not 3-d, or fewer than 2 nodes on an axis.
        TypeError: dtype other than float32.
    """
    shape = tuple(field.shape)
    if len(shape) != 3:
        raise ValueError(f"Expected a 3D array for 'field', but got an array with shape {shape}.")
    if any(n < 2 for n in shape):
        raise ValueError(f"Expected 'field' to have at least 2 nodes on each axis (one cell), but got an array "
                         f"with shape {shape}.")
    if field.dtype is not T.float32:
        raise TypeError(f"Expected a dtype of wp.float32 for 'field', but got {T.type_repr(field.dtype)}.")


def grid_frame(shape, lower=None, upper=None) -> tuple:
    """World position of node (0, 0, 0) and the cell size per axis, as two vec3.

    Args:
        shape: nodes per axis (nx, ny, nz), each at least 2.
        lower: position of node (0, 0, 0); None: the origin.
        upper: position of node (nx-1, ny-1, nz-1); None: (nx-1, ny-1, nz-1) (nodes at integer coordinates).
    """
    cells = np.array(shape[:3], dtype=np.float64) - 1.0
    low = np.zeros(3) if lower is None else np.array([float(x) for x in lower])
    high = cells.copy() if upper is None else np.array([float(x) for x in upper])
    delta = (high.astype(np.float32) - low.astype(np.float32)) / cells.astype(np.float32)
    return T.vec3(*low.tolist()), T.vec3(*delta.tolist())


class IsoSurfaceBase(ABC):
    """A reusable iso-surface extraction context for fields of nx * ny * nz nodes.

    Args:
        nx, ny, nz: nodes per axis.
        lower: position of node (0, 0, 0) (None: the origin).
        upper: position of node (nx-1, ny-1, nz-1) (None: nodes at integer coordinates).

    Attributes:
        verts: vertex positions (vec3 array, shape [vertex_count]) after `surface`, else None.
        indices: int32 array of vertex indices, each face's vertices one after the other (3 per triangle), after
            `surface`, else None.
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower=None, upper=None):
        self.nx, self.ny, self.nz = nx, ny, nz
        self.lower = lower
        self.upper = upper
        self.verts = None
        self.indices = None

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """Take fields of nx * ny * nz nodes from the next `surface` call on."""
        self.nx, self.ny, self.nz = nx, ny, nz

    def _check_field_shape(self, field) -> None:
        if tuple(field.shape) != (self.nx, self.ny, self.nz):
            raise ValueError(f"Field shape {tuple(field.shape)} does not match context grid dimensions "
                             f"{(self.nx, self.ny, self.nz)}.")

    @abstractmethod
    def surface(self, field, threshold: float) -> None:
        """Extract the `threshold` iso-surface of `field` (shape (nx, ny, nz)) into `verts` and `indices`."""

    @classmethod
    @abstractmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """The iso-surface of `field` as (verts, indices), without a context."""
