"""`wp.Volume`: sparse NanoVDB grids (loaded from .nvdb files, allocated, or from dense numpy arrays), sampled in
kernels by their uint64 `id`.

A volume's buffer holds all grids of its file (as Warp's `array()`); its id is the address of its grid there, read
in place by kernels/native/volume.h. Every grid is validated first (volume_check.py), so no kernel or accessor
follows an offset out of it.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import numpy as np

from .. import types as T
from .array import array
from . import volume_rebuild as rb
from .volume_build import build_grid
from .volume_check import check_buffer
from .volume_layout import GRID_SIZE as _GRID_SIZE, GRID_TYPE_NAMES, INDEX_TYPES, VALUE_TYPES, node_layout

_MAGICS = (0x304244566F6E614E, 0x314244566F6E614E, 0x324244566F6E614E)  # "NanoVDB0", "NanoVDB1", "NanoVDB2"
#: Warp's types of feature arrays by NanoVDB name
_FEATURE_DTYPES = {"float": T.float32, "double": T.float64, "int32": T.int32, "int64": T.int64, "uint32": T.uint32,
                   "Vec3f": T.vec3, "Vec3d": T.vec3d, "Vec4f": T.vec4, "Vec4d": T.vec4d, "uint8": T.uint8}


class Volume:
    """A sparse volume (a NanoVDB grid of float32, float64, int32, int64, uint32, vec3f/d or vec4f/d values).
    Sample it in kernels with `wp.volume_sample(volume.id, uvw, wp.Volume.LINEAR, dtype=...)` at index-space
    coordinates (`wp.volume_world_to_index` maps world points there).

    Another value type (index grids, half, int16, ...) loads with a clear error.
    """

    CLOSEST = 0
    LINEAR = 1
    REBUILD_SUCCESS = rb.REBUILD_SUCCESS
    REBUILD_LEAF_CAPACITY_EXCEEDED = rb.REBUILD_LEAF_CAPACITY_EXCEEDED
    REBUILD_LOWER_CAPACITY_EXCEEDED = rb.REBUILD_LOWER_CAPACITY_EXCEEDED
    REBUILD_UPPER_CAPACITY_EXCEEDED = rb.REBUILD_UPPER_CAPACITY_EXCEEDED
    REBUILD_VOXEL_CAPACITY_EXCEEDED = rb.REBUILD_VOXEL_CAPACITY_EXCEEDED
    REBUILD_INVALID_INPUT = rb.REBUILD_INVALID_INPUT

    class GridInfo(NamedTuple):
        """Grid metadata (as Warp's): name, size in bytes, index and count of grids in the file, the value
        type's NanoVDB name, the index-to-world translation and linear part."""

        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: object
        transform_matrix: object

    class RebuildInfo(NamedTuple):
        """Rebuild capacity (Warp's): input kind ("tiles", "voxels" or None) and reserved counts."""

        kind: str | None
        max_voxel_count: int
        max_leaf_node_count: int
        max_lower_node_count: int
        max_upper_node_count: int

    class ActiveStats(NamedTuple):
        """The grid's active voxel count and its leaf, lower and upper node counts."""

        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class FeatureArrayInfo(NamedTuple):
        """A feature (blind data) array of the grid: name, address, value size [bytes], count, type string."""

        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    def __init__(self, data, copy: bool = True, *, device=None, _grid=None):
        """A volume over NanoVDB bytes: a uint8 array (copied unless copy=False), bytes or a numpy array.
        The first grid of the buffer is this volume's."""
        if isinstance(data, array):
            host = data.numpy().reshape(-1).view(np.uint8)
            device = device or data.device
            buffer = data if not copy else array(host.copy(), dtype=T.uint8, device=device)
        else:
            host = np.frombuffer(bytes(data), dtype=np.uint8)
            buffer = None
        if _grid is None:
            start, check = check_buffer(host, from_file=False)[0]
        else:
            start, check = _grid
        if buffer is None:
            buffer = array(host, dtype=T.uint8, device=device)
        self._buffer = buffer
        self._host = np.array(host[start:start + check.size])  # a snapshot: accessors never see later writes
        self._start = start
        self._check = check
        self.grid_type = check.grid_type
        self._layout = node_layout(check.grid_type)
        self.device = buffer.device
        self.id = buffer.ptr + start
        self._rebuild_info = Volume.RebuildInfo(None, 0, 0, 0, 0)
        self._voxel_size = struct.unpack_from("<3d", self._host, 608)

    def __del__(self):
        """Nothing to release by hand: the buffer is an array, freed with its last reference (Warp frees a native
        volume here; a volume made with __new__ alone has nothing)."""

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> "Volume":
        """The first grid of a .nvdb file (an open binary file or its bytes); uncompressed or zip-compressed.
        Every grid of the file is validated; `load_next_grid` gives the next ones."""
        data = file_or_buffer.read() if hasattr(file_or_buffer, "read") else bytes(file_or_buffer)
        host = np.frombuffer(_grid_bytes(data), dtype=np.uint8)
        grids = check_buffer(host, from_file=True)
        volume = cls(array(host, dtype=T.uint8, device=device), copy=False, _grid=grids[0])
        volume._grids = grids
        return volume

    @classmethod
    def allocate(cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0), points_in_world_space=False,
                 device=None) -> "Volume":
        """A volume with every 8^3 tile covering voxels min..max (inclusive, index space; world space with
        points_in_world_space) allocated; bg_value (its type is the volume's) everywhere."""
        voxel_size = normalize_voxel_size(voxel_size)
        lo, hi = np.asarray(min, dtype=np.float64), np.asarray(max, dtype=np.float64)
        if points_in_world_space:
            lo = np.around((lo - np.asarray(translation)) / np.asarray(voxel_size))
            hi = np.around((hi - np.asarray(translation)) / np.asarray(voxel_size))
        tile_lo, tile_hi = lo.astype(np.int32) // 8, hi.astype(np.int32) // 8
        axes = [np.arange(tile_lo[a], tile_hi[a] + 1) for a in range(3)]
        tiles = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3) * 8
        return cls.allocate_by_tiles(tiles.astype(np.int32), voxel_size, bg_value, translation, device)

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size=None, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                          device=None, transform=None, rebuildable=False, max_tiles=None, max_lower_nodes=None,
                          max_upper_nodes=None, status=None, point_mask=None) -> "Volume":
        """A volume with the 8^3 tile of each point allocated: integer points are index space, float points
        world space. point_mask: only points with a non-zero mask count. bg_value None makes an index grid.
        rebuildable (or any max_*): reserve room for `rebuild` (default: the first topology's counts)."""
        if bg_value is None:  # an index grid (OnIndex), every voxel of the tiles active
            code, scalar, components, background = INDEX_TYPES[1], np.uint64, 1, np.zeros(1, np.uint64)
        else:
            code, scalar, components = _grid_type_of(bg_value)
            background = np.array(bg_value, dtype=scalar).reshape(components)  # a copy: later edits don't count
        spec = _Spec("tiles", code, scalar, components, background, _index_to_world(voxel_size, transform),
                     tuple(float(t) for t in translation))
        reserve = rb.Capacity(None, max_tiles, max_lower_nodes, max_upper_nodes)
        return cls._allocate(spec, tile_points, point_mask, device, rebuildable, reserve, status)

    @classmethod
    def allocate_by_voxels(cls, voxel_points, voxel_size=None, translation=(0.0, 0.0, 0.0), device=None,
                           transform=None, rebuildable=False, max_active_voxels=None, max_leaf_nodes=None,
                           max_lower_nodes=None, max_upper_nodes=None, status=None, point_mask=None) -> "Volume":
        """An index grid (OnIndex) whose active voxels are the given points' (integer points: index space; float
        points: world space, to the nearest voxel). point_mask: only points with a non-zero mask count.
        rebuildable (or any max_*): reserve room for `rebuild` (default: the first topology's counts)."""
        spec = _Spec("voxels", INDEX_TYPES[1], np.uint64, 1, np.zeros(1, np.uint64),
                     _index_to_world(voxel_size, transform), tuple(float(t) for t in translation))
        reserve = rb.Capacity(max_active_voxels, max_leaf_nodes, max_lower_nodes, max_upper_nodes)
        return cls._allocate(spec, voxel_points, point_mask, device, rebuildable, reserve, status)

    @classmethod
    def _allocate(cls, spec, points, point_mask, device, rebuildable, reserve, status) -> "Volume":
        tiles, active, count = _topology(spec, points, point_mask)
        grid = _grid(spec, tiles, active)
        if not rebuildable and all(v is None for v in reserve):
            volume = cls(grid, device=device)
            rb.write_status(status, rb.REBUILD_SUCCESS)
            return volume
        needed = rb.topology_counts(tiles, count)
        reserved = rb.capacity(reserve, needed, per_leaf_voxels=spec.kind == "tiles")
        flags = rb.overflow(needed, reserved)
        if flags:  # as Warp: the volume is made, empty, and the status says what did not fit
            grid = _grid(spec, np.zeros((0, 3), np.int64), None if active is None else active[:0])
        volume = cls(rb.padded(grid, rb.reserved_size(node_layout(spec.code), reserved)), device=device)
        volume._spec, volume._reserved = spec, reserved
        volume._rebuild_info = Volume.RebuildInfo(spec.kind, *reserved)
        rb.write_status(status, flags)
        return volume

    def rebuild(self, points, status=None, point_mask=None):
        """Write a new topology from `points` (tiles or voxels, as the volume was allocated) into the volume's
        reserved buffer in place: the id, size, transform, type and background stay. A topology beyond the
        capacity leaves the volume unchanged and sets `status`' REBUILD_* flags. Returns `status`."""
        if self._rebuild_info.kind is None:
            raise RuntimeError("Volume is not rebuildable")
        tiles, active, count = _topology(self._spec, points, point_mask)
        flags = rb.overflow(rb.topology_counts(tiles, count), self._reserved)
        if not flags:
            grid = rb.padded(_grid(self._spec, tiles, active), self._check.size)
            self._buffer.assign(array(grid, dtype=T.uint8, device=self.device))
            self._check = check_buffer(grid, from_file=False)[0][1]
            self._host = grid
        rb.write_status(status, flags)
        return status

    @property
    def is_rebuildable(self) -> bool:
        """Whether the volume reserved room for `rebuild`."""
        return self._rebuild_info.kind is not None

    def get_rebuild_info(self) -> "Volume.RebuildInfo":
        """Rebuild input kind ("tiles", "voxels" or None) and reserved voxel, leaf, lower and upper counts."""
        return self._rebuild_info

    def get_active_stats(self) -> "Volume.ActiveStats":
        """Active voxel count and leaf, lower and upper node counts of the grid."""
        leaf, lower, upper = struct.unpack_from("<3I", self._host, _GRID_SIZE + 32)
        voxels = int(struct.unpack_from("<Q", self._host, _GRID_SIZE + 56)[0])  # the tree's active voxels
        return Volume.ActiveStats(voxels, int(leaf), int(lower), int(upper))

    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0,
                        device=None) -> "Volume":
        """A dense numpy grid [X, Y, Z] (or [X, Y, Z, 3] with a 3-number bg_value) as a volume whose voxel
        (0, 0, 0) sits at min_world; padded to whole 8^3 tiles with bg_value. A float bg_value makes a float32
        volume, an int an int32 one, 3 numbers a vec3f one (as Warp)."""
        voxel_size = normalize_voxel_size(voxel_size)
        vector = hasattr(bg_value, "__len__")
        if vector:
            if len(bg_value) != 3:
                raise ValueError("bg_value must be a scalar or a 3-element sequence")
            scalar, tail, bg_value = np.float32, (3,), tuple(float(b) for b in bg_value)
        else:
            scalar, tail = (np.int32 if isinstance(bg_value, (int, np.integer)) else np.float32), ()
            bg_value = int(bg_value) if scalar is np.int32 else float(bg_value)
        data = np.asarray(ndarray)
        if data.shape[3:] != tail or data.ndim != 3 + len(tail):
            raise ValueError(f"load_from_numpy: expected an array of shape [X, Y, Z]{' + [3]' if vector else ''}, "
                             f"got {data.shape}")
        padded_shape = tuple(-(-n // 8) * 8 for n in data.shape[:3])
        padded = np.full(padded_shape + tail, bg_value, dtype=scalar)
        padded[:data.shape[0], :data.shape[1], :data.shape[2]] = data
        tiles = np.stack(np.meshgrid(*(np.arange(n // 8) for n in padded_shape), indexing="ij"), -1).reshape(-1, 3)
        blocks = padded.reshape(padded_shape[0] // 8, 8, padded_shape[1] // 8, 8, padded_shape[2] // 8, 8, *tail)
        blocks = np.moveaxis(blocks, (1, 3), (3, 4)).reshape(len(tiles), 8, 8, 8, *tail)
        code = 6 if vector else (4 if scalar is np.int32 else 1)
        grid = build_grid(tiles * 8, code, node_layout(code), scalar, 3 if vector else 1, bg_value, voxel_size,
                          tuple(float(m) for m in min_world), leaf_values=blocks)
        return cls(grid, device=device)

    def load_next_grid(self) -> "Volume | None":
        """The grid after this one in the file it was loaded from (sharing its buffer), or None after the last."""
        grids = getattr(self, "_grids", [(self._start, self._check)])
        following = [g for g in grids if g[0] > self._start]
        if not following:
            return None
        volume = Volume(self._buffer, copy=False, _grid=following[0])
        volume._grids = grids
        return volume

    def save_to_nvdb(self, path, codec: str = "none") -> None:
        """Write this grid and the grids after it in its buffer to a .nvdb file (codec "none" or "zip").
        Only the first grid of a buffer can be saved (a later one is not a file's start)."""
        if self._start != 0:
            raise RuntimeError("save_to_nvdb: only the first grid of a volume's buffer can be saved")
        grids = [self._host] + [np.array(v._host) for v in self._following()]
        from .volume_file import nvdb_file

        data = nvdb_file(grids, codec)
        with open(path, "wb") as f:
            f.write(data)

    def _following(self):
        volume = self.load_next_grid()
        while volume is not None:
            yield volume
            volume = volume.load_next_grid()

    @property
    def is_index(self) -> bool:
        """Whether the grid is an index grid (its voxels index external value arrays)."""
        return self.grid_type in INDEX_TYPES

    def get_feature_array_count(self) -> int:
        """The number of feature (blind data) arrays stored with the grid."""
        return len(self._check.features)

    def get_feature_array_info(self, feature_index: int) -> "Volume.FeatureArrayInfo":
        """The metadata of feature array `feature_index` (as validated when the volume was made)."""
        if not 0 <= feature_index < len(self._check.features):
            raise RuntimeError("Invalid feature array")
        f = self._check.features[feature_index]
        return Volume.FeatureArrayInfo(f.name, self.id + f.offset, f.value_size, f.value_count, f.type_str)

    def feature_array(self, feature_index: int, dtype=None):
        """Feature array `feature_index` as an array viewing the volume's buffer (dtype from its metadata
        unless given; a byte array may be viewed as any type whose size divides it, and any as bytes)."""
        info = self.get_feature_array_info(feature_index)
        dtype = dtype or _FEATURE_DTYPES.get(info.type_str, T.uint8)
        size = T.type_size_in_bytes(T.canonical_type(dtype))
        count, value_size = info.value_count, info.value_size
        if size == 1:
            count, value_size = count * value_size, 1
        elif value_size == 1 and count % size == 0:
            count, value_size = count // size, size
        if size != value_size:
            raise RuntimeError(f"Cannot cast feature data of size {value_size} to array dtype {T.type_repr(dtype)}")
        return array(ptr=info.ptr, dtype=dtype, shape=(count,), device=self.device, _owner=self._buffer)

    @property
    def dtype(self):
        """The Warp type of the values."""
        entry = VALUE_TYPES.get(self.grid_type)
        return entry[0] if entry else None

    def get_voxel_size(self) -> tuple:
        """The size of a voxel along x, y, z in world units."""
        return tuple(self._voxel_size)

    def get_grid_info(self) -> "Volume.GridInfo":
        """The grid's metadata (GridInfo)."""
        h = self._host
        name = bytes(h[40:296]).split(b"\0", 1)[0].decode("ascii", "replace")
        index, count = struct.unpack_from("<2I", h, 24)
        matrix = T.mat33(*struct.unpack_from("<9f", h, 296))
        translation = T.vec3(*struct.unpack_from("<3f", h, 296 + 72))
        return Volume.GridInfo(name, int(struct.unpack_from("<Q", h, 32)[0]), int(index), int(count),
                               GRID_TYPE_NAMES[self.grid_type], translation, matrix)

    def _leaf_origins(self) -> np.ndarray:
        """Index-space origins of the leaves (8^3 voxel tiles), shape [leaf_count, 3], int32."""
        h, tree = self._host, _GRID_SIZE
        leaf_off = tree + struct.unpack_from("<Q", h, tree)[0]
        count = struct.unpack_from("<I", h, tree + 32)[0]
        size = self._layout["leaf"]["size"]
        starts = leaf_off + size * np.arange(count)
        rows = h[starts[:, None] + np.arange(12)[None, :]].copy().view("<i4").reshape(count, 3)
        return rows & ~7

    def get_tiles(self, out=None):
        """The index-space origins of the allocated tiles (leaves of 8^3 voxels): [tile_count, 3] int32."""
        return self._to_out(self._leaf_origins(), out)

    def get_voxel_count(self) -> int:
        """The number of allocated voxels: 512 per tile, or an index grid's active voxels; a rebuildable volume's
        reserved voxels (what an array of per-voxel values must hold for any rebuild)."""
        if self.is_rebuildable:
            return self._rebuild_info.max_voxel_count
        if self.is_index:
            return int(self._active_mask().sum())
        return int(struct.unpack_from("<I", self._host, _GRID_SIZE + 32)[0]) * 512

    def get_voxels(self, out=None):
        """The index-space coordinates of every allocated voxel, tile by tile: [voxel_count, 3] int32."""
        offsets = np.stack(np.meshgrid(np.arange(8), np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 3)
        voxels = (self._leaf_origins()[:, None, :] + offsets[None, :, :]).reshape(-1, 3).astype(np.int32)
        if self.is_index:  # only the active voxels, in index order (leaf by leaf, each in voxel order)
            voxels = voxels[self._active_mask().ravel()]
        return self._to_out(voxels, out)

    def _active_mask(self) -> np.ndarray:
        """The leaves' value masks, shape [leaf_count, 512] bool (voxel n = 64 i + 8 j + k of its leaf)."""
        h, tree = self._host, _GRID_SIZE
        leaf_off = tree + struct.unpack_from("<Q", h, tree)[0]
        count = struct.unpack_from("<I", h, tree + 32)[0]
        starts = leaf_off + self._layout["leaf"]["size"] * np.arange(count)
        masks = h[starts[:, None] + 16 + np.arange(64)[None, :]]
        return np.unpackbits(masks, axis=1, bitorder="little").astype(bool)

    def _to_out(self, rows: np.ndarray, out):
        if out is None:  # [n, 3] int32, as Warp's
            return array(np.ascontiguousarray(rows, dtype=np.int32), dtype=T.int32, device=self.device)
        if out.shape[0] < rows.shape[0]:
            raise RuntimeError(f"Volume: out has {out.shape[0]} rows, {rows.shape[0]} are needed")
        full = out.numpy().copy()  # rows past the coordinates keep their contents (a rebuilt volume's capacity)
        full.reshape(-1, 3)[:rows.shape[0]] = rows
        out.assign(full)
        return out

    def array(self):
        """The buffer of the volume's grids (uint8 array on the volume's device; this grid from byte
        `id - array().ptr`)."""
        return self._buffer


class _Spec(NamedTuple):
    """What an allocated volume is made of, kept for its rebuilds: input kind ("tiles" or "voxels"), grid type,
    numpy scalar and components of a value, the background (a copy), index-to-world matrix and translation."""

    kind: str
    code: int
    scalar: object
    components: int
    background: np.ndarray
    matrix: np.ndarray
    translation: tuple


def _topology(spec: _Spec, points, mask) -> tuple:
    """(leaf origins [n, 3], active voxels [n, 8, 8, 8] bool or None for all, active voxel count) of the points."""
    if spec.kind == "tiles":
        p = _points(points, mask, spec.matrix, spec.translation, np.floor)
        tiles = np.unique((p // 8) * 8, axis=0).reshape(-1, 3)
        return tiles, None, 512 * len(tiles)
    voxels = np.unique(_points(points, mask, spec.matrix, spec.translation, np.round), axis=0).reshape(-1, 3)
    tiles, where = np.unique((voxels // 8) * 8, axis=0, return_inverse=True)
    tiles, where = tiles.reshape(-1, 3), where.ravel()
    active = np.zeros((len(tiles), 8, 8, 8), bool)
    local = voxels - tiles[where]
    active[where, local[:, 0], local[:, 1], local[:, 2]] = True
    return tiles, active, len(voxels)


def _grid(spec: _Spec, tiles: np.ndarray, active) -> bytes:
    return build_grid(tiles, spec.code, node_layout(spec.code), spec.scalar, spec.components, spec.background,
                      spec.matrix, spec.translation, leaf_values=active)


def _index_to_world(voxel_size, transform) -> np.ndarray:
    """The 3x3 index-to-world matrix from a voxel size or a transform (one of them, as Warp requires)."""
    if transform is None:
        return np.diag(normalize_voxel_size(1.0 if voxel_size is None else voxel_size))
    if voxel_size is not None:
        raise ValueError("Only one of 'voxel_size' or 'transform' must be provided")
    return np.asarray(transform, dtype=np.float64).reshape(3, 3)


def _points(points, mask, matrix: np.ndarray, translation, to_int) -> np.ndarray:
    """Index-space integer points [n, 3] of an array of points (integer: index space; float: world space, mapped
    by the inverse of `matrix` after subtracting `translation`, then `to_int`), keeping those whose mask is set."""
    p = points.numpy() if hasattr(points, "numpy") else np.asarray(points)
    p = p.reshape(-1, 3)
    if mask is not None:
        keep = (mask.numpy() if hasattr(mask, "numpy") else np.asarray(mask)).reshape(-1) != 0
        p = p[keep]
    if np.issubdtype(p.dtype, np.floating):
        p = to_int((p - np.asarray(translation, dtype=np.float64)) @ np.linalg.inv(matrix).T)
    return p.astype(np.int64)


def normalize_voxel_size(voxel_size) -> tuple:
    """A voxel size as 3 positive finite floats (a scalar is isotropic), as Warp checks it."""
    if isinstance(voxel_size, (int, float, np.floating, np.integer)) and not isinstance(voxel_size, bool):
        voxel_size = (float(voxel_size),) * 3
    elif isinstance(voxel_size, (list, tuple, np.ndarray)):
        voxel_size = tuple(float(v) for v in voxel_size)
        if len(voxel_size) != 3:
            raise ValueError(f"voxel_size must be a scalar or a 3-element sequence, got length {len(voxel_size)}")
    else:
        raise TypeError(f"voxel_size must be a numeric scalar or a sequence of 3 floats, got "
                        f"{type(voxel_size).__name__}")
    if not all(np.isfinite(v) and v > 0.0 for v in voxel_size):
        raise ValueError(f"All voxel_size components must be finite and positive, got {voxel_size}")
    return voxel_size


def _grid_type_of(bg_value) -> tuple:
    """(NanoVDB grid type, numpy scalar, components) of a background value: a Warp scalar or vector keeps its
    type; a Python float is float32, an int int32, a sequence of 3 or 4 numbers vec3f / vec4f (as Warp)."""
    by_type = {v[0]: code for code, v in VALUE_TYPES.items()}
    t = T.canonical_type(type(bg_value)) if isinstance(type(bg_value), type) else None
    if t in by_type:
        code = by_type[t]
    elif isinstance(bg_value, (bool, np.bool_)):
        raise TypeError("Volume: bool background values are not supported")
    elif isinstance(bg_value, (int, np.integer)):
        code = 4
    elif isinstance(bg_value, (float, np.floating)):
        code = 1
    elif len(np.asarray(bg_value).ravel()) in (3, 4):
        code = 6 if len(np.asarray(bg_value).ravel()) == 3 else 17
    else:
        raise TypeError(f"Volume: unsupported background value {bg_value!r} (a scalar or 3 or 4 numbers)")
    dtype, size, align = VALUE_TYPES[code]
    scalar = {1: np.float32, 2: np.float64, 4: np.int32, 5: np.int64, 10: np.uint32}.get(code)
    if scalar is None:
        scalar = np.float64 if align == 8 else np.float32
    return code, scalar, size // align


def _grid_bytes(data: bytes) -> bytes:
    """The grid buffer of a .nvdb file: the file header and per-grid metadata skipped, chunks decompressed."""
    if len(data) < 16:
        raise RuntimeError("Volume.load_from_nvdb: not a NanoVDB file (too short)")
    magic, version, grid_count, codec = struct.unpack_from("<QIHH", data, 0)
    if magic not in _MAGICS:
        raise RuntimeError("Volume.load_from_nvdb: NanoVDB signature not found")
    if version >> 21 != 32:
        raise RuntimeError(f"Volume.load_from_nvdb: NanoVDB major version {version >> 21}, expected 32")
    offset, payload = 16, 0
    for _ in range(grid_count):  # one metadata record (176 bytes and the grid's name) per grid
        if offset + 176 > len(data):
            raise RuntimeError("Volume.load_from_nvdb: the file ends inside its grid metadata")
        payload += struct.unpack_from("<Q", data, offset + 8)[0]
        offset += 176 + struct.unpack_from("<I", data, offset + 136)[0]
    end = offset + payload
    if codec == 0:
        return data[offset:end]
    if codec != 1:
        raise RuntimeError(f"Volume.load_from_nvdb: compression codec {codec} is not supported (none or zip)")
    chunks = []
    while offset < end:
        size = struct.unpack_from("<Q", data, offset)[0]
        chunks.append(zlib.decompress(data[offset + 8:offset + 8 + size]))
        offset += 8 + size
    return b"".join(chunks)
