"""`wp.HashGrid`: a periodic grid of cells bucketing points for neighbour queries in kernels.

The grid is built on the host with numpy (sort points by cell, then find each cell's range) into buffers on the
grid's device, described by a `hash_grid_t` header (kernels/native/hash_grid.h) whose address is the grid's `id`.
Build and query compute a point's cell the same way, in the grid's precision, so they always agree.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import types as T
from .array import array
from .memory_tracker import native as _tracked_as
from ..builtins.query_types import QUERY_TYPES, HashGridQuery, hash_grid_query_type  # noqa: F401
from .struct import give_values
from .device import get_device

MAX_CELLS = 2**31 - 1  # cell indices are int32
_MAGIC = 0x6873686772696431  # HASH_GRID_MAGIC in hash_grid.h
_PRECISIONS = (T.float16, T.float32, T.float64)


class _HashGridHeader(ctypes.Structure):
    """ctypes mirror of `wp::hash_grid_t`."""

    _fields_ = [("magic", ctypes.c_uint64), ("point_ids", ctypes.c_void_p), ("cell_starts", ctypes.c_void_p),
                ("cell_ends", ctypes.c_void_p), ("point_keys", ctypes.c_void_p), ("dim_x", ctypes.c_int32),
                ("dim_y", ctypes.c_int32), ("dim_z", ctypes.c_int32), ("num_points", ctypes.c_int32),
                ("cell_width_inv", ctypes.c_double)]


for _t in QUERY_TYPES.values():  # declared with the builtins that return them; their Python values here
    give_values(_t)
del _t


def cell_coords(points: np.ndarray, inv, dtype) -> np.ndarray:
    """World cell of each point, [n, 3] int64: floor(p * inv) in the grid's precision, NaN -> 0, clamped to
    [INT32_MIN, INT32_MAX - 1] (hash_grid_cell in hash_grid.h)."""
    scaled = (points.astype(dtype._np_) * dtype._np_(inv)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        c = np.floor(scaled)
        c = np.where(np.isnan(c), 0.0, np.clip(c, -2.0**31, 2.0**31 - 2))
    return c.astype(np.int64)


class HashGrid:
    """Points bucketed into `dim_x * dim_y * dim_z` cells that repeat periodically in space.

    Args:
        dim_x, dim_y, dim_z: number of cells along each axis.
        device: where the grid's buffers live (the device of the points it is built from).
        dtype: precision of the points: float16, float32 (default) or float64.
    """

    @_tracked_as("hashgrid")  # buffers it allocates are the hashgrid's in memory reports
    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device=None, dtype=T.float32):
        dtype = T.canonical_type(dtype)
        if dtype not in _PRECISIONS:
            raise TypeError(f"HashGrid: dtype must be float16, float32 or float64, got {T.type_repr(dtype)}")
        dims = (int(dim_x), int(dim_y), int(dim_z))
        if min(dims) < 1:
            raise ValueError(f"HashGrid: dimensions must be positive, got {dims}")
        if dims[0] * dims[1] * dims[2] > MAX_CELLS:
            raise RuntimeError(f"HashGrid: cell count exceeds supported limit ({dims[0]} x {dims[1]} x {dims[2]} "
                               f"cells, at most {MAX_CELLS})")
        self.dim_x, self.dim_y, self.dim_z = dims
        self.device = get_device(device)
        self.dtype = dtype
        self.reserved = 0
        self._buffers = {}
        self._header = None
        self.id = 0
        self._store(np.zeros(0, np.int32), np.zeros(self.cell_count, np.int32), np.zeros(self.cell_count, np.int32),
                    None, 1.0)

    @property
    def cell_count(self) -> int:
        return self.dim_x * self.dim_y * self.dim_z

    def reserve(self, num_points: int, with_groups: bool = False):
        """Hint of the number of points later builds use (buffers are sized at each build)."""
        self.reserved = max(self.reserved, int(num_points))

    @_tracked_as("hashgrid")  # buffers it allocates are the hashgrid's in memory reports
    def build(self, points, radius: float, groups=None):
        """Bucket `points` (array of vec3 in the grid's precision, any shape) into cells of width `radius` [m];
        with `groups` (int32 array of the same size), queries given a group see only that group's points."""
        radius = float(radius)
        if not radius > 0.0:
            raise ValueError(f"HashGrid.build: radius must be positive, got {radius}")
        if not isinstance(points, array):
            raise TypeError("HashGrid.build: points must be an array of vec3")
        want = T.vector(3, self.dtype)
        if points.dtype is not want:
            raise TypeError(f"HashGrid.build: points must be an array of {T.type_repr(want)} for a "
                            f"{T.type_repr(self.dtype)} grid, got {T.type_repr(points.dtype)}")
        if points.device != self.device:
            raise RuntimeError(f"HashGrid.build: points must live on the same device as the grid ({self.device})")
        if groups is not None and groups.device != self.device:
            raise RuntimeError(f"HashGrid.build: groups must live on the same device as the grid ({self.device})")
        p = points.numpy().reshape(-1, 3)
        inv = float(self.dtype._np_(1.0 / radius))
        c = cell_coords(p, inv, self.dtype)
        cells = ((c[:, 2] % self.dim_z) * self.dim_y + c[:, 1] % self.dim_y) * self.dim_x + c[:, 0] % self.dim_x
        keys = None
        if groups is not None:
            g = groups.numpy().reshape(-1).astype(np.int32)
            if len(g) != len(p):
                raise ValueError(f"HashGrid.build: {len(g)} groups for {len(p)} points")
            keys = (cells.astype(np.uint64) << np.uint64(32)) | g.view(np.uint32).astype(np.uint64)
            order = np.argsort(keys, kind="stable")
            keys = keys[order]
        else:
            order = np.argsort(cells, kind="stable")
        sorted_cells = cells[order]
        all_cells = np.arange(self.cell_count)
        starts = np.searchsorted(sorted_cells, all_cells, side="left").astype(np.int32)
        ends = np.searchsorted(sorted_cells, all_cells, side="right").astype(np.int32)
        self._store(order.astype(np.int32), starts, ends, keys, inv)

    def _store(self, point_ids, starts, ends, keys, inv):
        """Put the buffers on the grid's device and point a fresh header at them (`id` changes only in address
        if the header moves; kernels always read the header through the current id)."""
        dev = self.device
        bufs = {"point_ids": array(point_ids, dtype=T.int32, device=dev),
                "cell_starts": array(starts, dtype=T.int32, device=dev),
                "cell_ends": array(ends, dtype=T.int32, device=dev)}
        if keys is not None:
            bufs["point_keys"] = array(keys, dtype=T.uint64, device=dev)
        header = _HashGridHeader(magic=_MAGIC, dim_x=self.dim_x, dim_y=self.dim_y, dim_z=self.dim_z,
                                 num_points=len(point_ids), cell_width_inv=inv)
        for name, buf in bufs.items():
            setattr(header, name, buf.ptr if buf.size else None)
        raw = np.frombuffer(bytes(header), dtype=np.uint8)
        if self._header is None:
            self._header = array(raw, dtype=T.uint8, device=dev)
            self.id = self._header.ptr
        else:
            self._header.assign(raw)  # same address: ids handed out before stay valid
        self._buffers = bufs

    def __del__(self):
        # buffers are freed with their arrays; safe on an instance that __init__ never ran on
        pass
