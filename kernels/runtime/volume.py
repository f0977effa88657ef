"""`wp.Volume`: a sparse NanoVDB float grid, loaded from a .nvdb file, sampled in kernels by its uint64 `id`.

The grid's buffer is copied to the volume's device as it is stored (kernels/native/volume.h reads it in place).
Loading checks the buffer's layout first, so that no kernel follows an offset out of it: the grid and tree
headers, every root tile, and every child offset of the internal nodes must land on a node of the right level.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from .. import types as T
from .array import array

_MAGICS = (0x304244566F6E614E, 0x314244566F6E614E, 0x324244566F6E614E)  # "NanoVDB0", "NanoVDB1", "NanoVDB2"
_GRID_TYPE_NAMES = {1: "float", 2: "double", 3: "int16", 4: "int32", 5: "int64", 6: "vec3f"}
_FLOAT = 1
# byte layout of NanoVDB 32.x (see kernels/native/volume.h)
_GRID_SIZE, _TREE_SIZE = 672, 64
_ROOT_SIZE, _TILE_SIZE = 64, 32
_UPPER = dict(size=270400, child_mask=4128, table=8256, entries=32 ** 3)
_LOWER = dict(size=33856, child_mask=544, table=1088, entries=16 ** 3)
_LEAF_SIZE = 2144


class Volume:
    """A sparse volume of float voxels (NanoVDB). Sample it in kernels with `wp.volume_sample_f(volume.id, uvw,
    wp.Volume.LINEAR)` at index-space coordinates (`wp.volume_world_to_index` maps world points there).

    Only float grids are provided; another value type loads with a clear error.
    """

    CLOSEST = 0
    LINEAR = 1

    def __init__(self, data, *, device=None):
        buffer = np.frombuffer(bytes(data), dtype=np.uint8)
        self.grid_type = _check_grid(buffer)
        self._buffer = array(buffer, dtype=T.uint8, device=device)
        self.device = self._buffer.device
        self.id = self._buffer.ptr
        header = bytes(buffer[:_GRID_SIZE])
        self._voxel_size = struct.unpack_from("<3d", header, 608)

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> "Volume":
        """The first grid of a .nvdb file (an open binary file or its bytes); uncompressed or zip-compressed."""
        data = file_or_buffer.read() if hasattr(file_or_buffer, "read") else bytes(file_or_buffer)
        return cls(_grid_bytes(data), device=device)

    def get_voxel_size(self) -> tuple:
        """The size of a voxel along x, y, z in world units."""
        return tuple(self._voxel_size)

    def array(self):
        """The grid's buffer (uint8 array on the volume's device)."""
        return self._buffer


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
    """Refuse a buffer whose offsets a kernel could follow out of it; returns the grid type (float only)."""
    def bad(what):
        return RuntimeError(f"Volume: invalid NanoVDB grid ({what})")

    if buf.size < _GRID_SIZE + _TREE_SIZE + _ROOT_SIZE or struct.unpack_from("<Q", buf, 0)[0] not in _MAGICS:
        raise bad("no grid header")
    grid_type = struct.unpack_from("<I", buf, 636)[0]
    if grid_type != _FLOAT:
        name = _GRID_TYPE_NAMES.get(grid_type, f"type {grid_type}")
        raise RuntimeError(f"Volume: {name} grids are not supported (float grids are)")
    if struct.unpack_from("<Q", buf, 32)[0] > buf.size:
        raise bad("the grid is larger than its buffer")
    tree = _GRID_SIZE
    leaf_off, lower_off, upper_off, root_off = (tree + o for o in struct.unpack_from("<4Q", buf, tree))
    n_leaf, n_lower, n_upper = struct.unpack_from("<3I", buf, tree + 32)
    regions = {"upper": (upper_off, n_upper, _UPPER["size"]), "lower": (lower_off, n_lower, _LOWER["size"]),
               "leaf": (leaf_off, n_leaf, _LEAF_SIZE)}
    for name, (start, count, size) in regions.items():
        if start + count * size > buf.size:
            raise bad(f"its {name} nodes run past the buffer")
    if root_off + _ROOT_SIZE > buf.size:
        raise bad("no root")
    tiles = struct.unpack_from("<I", buf, root_off + 24)[0]
    if root_off + _ROOT_SIZE + tiles * _TILE_SIZE > buf.size:
        raise bad("its root table runs past the buffer")
    for t in range(tiles):
        child = struct.unpack_from("<q", buf, root_off + _ROOT_SIZE + t * _TILE_SIZE + 8)[0]
        if child:
            _check_node_start(np.array([root_off + child]), regions["upper"], bad)
    for parent, child_level, info in (("upper", "lower", _UPPER), ("lower", "leaf", _LOWER)):
        start, count, size = regions[parent]
        for node in range(count):
            base = start + node * size
            mask = np.unpackbits(buf[base + info["child_mask"]:base + info["child_mask"] + info["entries"] // 8],
                                 bitorder="little").astype(bool)
            table = np.frombuffer(buf[base + info["table"]:base + info["table"] + 8 * info["entries"]].tobytes(),
                                  dtype="<i8")
            _check_node_start(base + table[mask], regions[child_level], bad)
    return grid_type


def _check_node_start(addresses: np.ndarray, region: tuple, bad) -> None:
    """Every address must be the start of one of the `count` nodes of `size` bytes from `start`."""
    start, count, size = region
    inside = (addresses >= start) & (addresses < start + count * size) & ((addresses - start) % size == 0)
    if not inside.all():
        raise bad("a child offset points outside its level's nodes")
