"""`wp.Volume`: a sparse NanoVDB float grid, loaded from a .nvdb file, sampled in kernels by its uint64 `id`.

The grid's buffer is copied to the volume's device as it is stored (kernels/native/volume.h reads it in place).
Loading checks the buffer's layout first, so that no kernel follows an offset out of it: the grid and tree
headers, every root tile, and every child offset of the internal nodes must land on a node of the right level.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import numpy as np

from .. import types as T
from .array import array
from .volume_build import build_grid

_MAGICS = (0x304244566F6E614E, 0x314244566F6E614E, 0x324244566F6E614E)  # "NanoVDB0", "NanoVDB1", "NanoVDB2"
# NanoVDB grid type code -> (Warp's type string, value type, bytes per value, alignment)
_VALUE_TYPES = {1: ("float", T.float32, 4, 4), 2: ("double", T.float64, 8, 8), 4: ("int32", T.int32, 4, 4),
                5: ("int64", T.int64, 8, 8), 10: ("uint32", T.uint32, 4, 4), 6: ("Vec3f", T.vec3, 12, 4),
                7: ("Vec3d", T.vec3d, 24, 8), 17: ("Vec4f", T.vec4, 16, 4), 18: ("Vec4d", T.vec4d, 32, 8)}
_OTHER_TYPE_NAMES = {3: "int16", 8: "Mask", 9: "Half", 11: "bool", 19: "Index", 20: "OnIndex", 21: "IndexMask",
                     22: "OnIndexMask", 26: "uint8"}
_GRID_SIZE, _TREE_SIZE = 672, 64


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def node_layout(grid_type: int) -> dict:
    """Byte sizes and offsets of a grid's nodes for its value type (as vdb::layout in kernels/native/volume.h)."""
    _, _, size, align = _VALUE_TYPES[grid_type]
    stats = 8 if size == 8 else 4
    background = _align(28, align)
    tile_value = _align(20, align)
    stride = _align(max(size, 8), 8)
    upper_table = _align(32 + 2 * 4096 + 2 * (size + stats), 32)
    lower_table = _align(32 + 2 * 512 + 2 * (size + stats), 32)
    leaf_values = _align(80 + 2 * (size + stats), 32)
    return dict(value_size=size, root_background=background, root_size=_align(background + 3 * size + 2 * stats, 32),
                tile_value=tile_value, tile_size=_align(tile_value + size, 32),
                upper=dict(size=_align(upper_table + stride * 32 ** 3, 32), child_mask=4128, table=upper_table,
                           stride=stride, entries=32 ** 3),
                lower=dict(size=_align(lower_table + stride * 16 ** 3, 32), child_mask=544, table=lower_table,
                           stride=stride, entries=16 ** 3),
                leaf=dict(size=_align(leaf_values + size * 512, 32), values=leaf_values))


class Volume:
    """A sparse volume (a NanoVDB grid of float32, float64, int32, int64, uint32, vec3f/d or vec4f/d values).
    Sample it in kernels with `wp.volume_sample(volume.id, uvw, wp.Volume.LINEAR, dtype=...)` at index-space
    coordinates (`wp.volume_world_to_index` maps world points there).

    Another value type (index grids, half, int16, ...) loads with a clear error.
    """

    CLOSEST = 0
    LINEAR = 1

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

    def __init__(self, data, *, device=None, _rest: bytes = b""):
        buffer = np.frombuffer(bytes(data), dtype=np.uint8)
        self.grid_type = _check_grid(buffer)
        self._layout = node_layout(self.grid_type)
        self._buffer = array(buffer, dtype=T.uint8, device=device)
        self._host = buffer
        self._rest = _rest  # the grids after this one in its file (load_next_grid)
        self.device = self._buffer.device
        self.id = self._buffer.ptr
        header = bytes(buffer[:_GRID_SIZE])
        self._voxel_size = struct.unpack_from("<3d", header, 608)

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> "Volume":
        """The first grid of a .nvdb file (an open binary file or its bytes); uncompressed or zip-compressed."""
        data = file_or_buffer.read() if hasattr(file_or_buffer, "read") else bytes(file_or_buffer)
        grids = _grid_bytes(data)
        first = struct.unpack_from("<Q", grids, 32)[0] if len(grids) >= 40 else len(grids)
        return cls(grids[:first], device=device, _rest=grids[first:])

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
        return cls._from_tiles(tiles, voxel_size, bg_value, translation, device)

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size=None, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                          device=None) -> "Volume":
        """A volume with the 8^3 tile of each point allocated: integer points are index space, float points
        world space (divided by voxel_size after subtracting translation)."""
        points = tile_points.numpy() if hasattr(tile_points, "numpy") else np.asarray(tile_points)
        points = points.reshape(-1, 3)
        voxel_size = normalize_voxel_size(1.0 if voxel_size is None else voxel_size)
        if np.issubdtype(points.dtype, np.floating):
            points = np.floor((points - np.asarray(translation)) / np.asarray(voxel_size))
        tiles = np.unique((points.astype(np.int64) // 8) * 8, axis=0)
        return cls._from_tiles(tiles, voxel_size, bg_value, translation, device)

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

    @classmethod
    def _from_tiles(cls, tiles, voxel_size, bg_value, translation, device) -> "Volume":
        if bg_value is None:
            raise RuntimeError("Volume: index grids (bg_value=None) are not supported; give a background value")
        code, scalar, components = _grid_type_of(bg_value)
        grid = build_grid(tiles, code, node_layout(code), scalar, components, bg_value, voxel_size, translation)
        return cls(grid, device=device)

    def load_next_grid(self) -> "Volume | None":
        """The grid after this one in the file it was loaded from, or None after the last."""
        if len(self._rest) < _GRID_SIZE:
            return None
        size = struct.unpack_from("<Q", self._rest, 32)[0]
        return Volume(self._rest[:size], device=self.device, _rest=self._rest[size:])

    @property
    def dtype(self):
        """The Warp type of the values."""
        return _VALUE_TYPES[self.grid_type][1]

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
                               _VALUE_TYPES[self.grid_type][0], translation, matrix)

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
        """The index-space origins of the allocated tiles (leaves of 8^3 voxels): an array of vec3i."""
        return self._to_out(self._leaf_origins(), out)

    def get_voxel_count(self) -> int:
        """The number of allocated voxels (512 per tile)."""
        return int(struct.unpack_from("<I", self._host, _GRID_SIZE + 32)[0]) * 512

    def get_voxels(self, out=None):
        """The index-space coordinates of every allocated voxel, tile by tile: an array of vec3i."""
        offsets = np.stack(np.meshgrid(np.arange(8), np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 3)
        voxels = (self._leaf_origins()[:, None, :] + offsets[None, :, :]).reshape(-1, 3).astype(np.int32)
        return self._to_out(voxels, out)

    def _to_out(self, rows: np.ndarray, out):
        if out is None:
            return array(np.ascontiguousarray(rows, dtype=np.int32), dtype=T.vec3i, device=self.device)
        if out.shape[0] != rows.shape[0]:
            raise RuntimeError(f"Volume: out has {out.shape[0]} rows, expected {rows.shape[0]}")
        out.assign(array(np.ascontiguousarray(rows, dtype=np.int32), dtype=out.dtype, device=out.device))
        return out

    def array(self):
        """The grid's buffer (uint8 array on the volume's device)."""
        return self._buffer


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
    by_type = {v[1]: code for code, v in _VALUE_TYPES.items()}
    t = type(bg_value)
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
    name, dtype, size, align = _VALUE_TYPES[code]
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


def _check_grid(buf: np.ndarray) -> int:
    """Refuse a buffer whose offsets a kernel could follow out of it; returns the grid type code."""
    def bad(what):
        return RuntimeError(f"Volume: invalid NanoVDB grid ({what})")

    if buf.size < _GRID_SIZE + _TREE_SIZE + 64 or struct.unpack_from("<Q", buf, 0)[0] not in _MAGICS:
        raise bad("no grid header")
    grid_type = struct.unpack_from("<I", buf, 636)[0]
    if grid_type not in _VALUE_TYPES:
        name = _OTHER_TYPE_NAMES.get(grid_type, f"type {grid_type}")
        supported = ", ".join(v[0] for v in _VALUE_TYPES.values())
        raise RuntimeError(f"Volume: {name} grids are not supported ({supported} are)")
    if struct.unpack_from("<Q", buf, 32)[0] > buf.size:
        raise bad("the grid is larger than its buffer")
    lay = node_layout(grid_type)
    tree = _GRID_SIZE
    leaf_off, lower_off, upper_off, root_off = (tree + o for o in struct.unpack_from("<4Q", buf, tree))
    n_leaf, n_lower, n_upper = struct.unpack_from("<3I", buf, tree + 32)
    regions = {"upper": (upper_off, n_upper, lay["upper"]["size"]), "lower": (lower_off, n_lower, lay["lower"]["size"]),
               "leaf": (leaf_off, n_leaf, lay["leaf"]["size"])}
    for name, (start, count, size) in regions.items():
        if start + count * size > buf.size:
            raise bad(f"its {name} nodes run past the buffer")
    if root_off + lay["root_size"] > buf.size:
        raise bad("no root")
    tiles = struct.unpack_from("<I", buf, root_off + 24)[0]
    if root_off + lay["root_size"] + tiles * lay["tile_size"] > buf.size:
        raise bad("its root table runs past the buffer")
    for t in range(tiles):
        child = struct.unpack_from("<q", buf, root_off + lay["root_size"] + t * lay["tile_size"] + 8)[0]
        if child:
            _check_node_start(np.array([root_off + child]), regions["upper"], bad)
    for parent, child_level in (("upper", "lower"), ("lower", "leaf")):
        info = lay[parent]
        start, count, size = regions[parent]
        for node in range(count):
            base = start + node * size
            mask = np.unpackbits(buf[base + info["child_mask"]:base + info["child_mask"] + info["entries"] // 8],
                                 bitorder="little").astype(bool)
            table = buf[base + info["table"]:base + info["table"] + info["stride"] * info["entries"]]
            offsets = table.reshape(info["entries"], info["stride"])[:, :8].copy().view("<i8").ravel()
            _check_node_start(base + offsets[mask], regions[child_level], bad)
    return grid_type


def _check_node_start(addresses: np.ndarray, region: tuple, bad) -> None:
    """Every address must be the start of one of the `count` nodes of `size` bytes from `start`."""
    start, count, size = region
    inside = (addresses >= start) & (addresses < start + count * size) & ((addresses - start) % size == 0)
    if not inside.all():
        raise bad("a child offset points outside its level's nodes")
