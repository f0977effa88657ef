"""Writing .nvdb files (`wp.Volume.save_to_nvdb`): NanoVDB's file layout, version 32.

A file is a 16-byte header (signature, version, grid count, codec), one 176-byte record per grid (followed by the
grid's name) and the grids' bytes, each stored as is (codec "none") or as one zlib chunk preceded by its size
("zip"). volume.py's `_grid_bytes` reads it back.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from .volume_layout import GRID_SIZE

_FILE_MAGIC = 0x304244566F6E614E  # "NanoVDB0"
_CODECS = {"none": 0, "zip": 1}


def nvdb_file(grids: list, codec: str) -> bytes:
    """The file holding `grids` (numpy uint8 buffers, one grid each), compressed with `codec`."""
    if codec not in _CODECS:
        raise RuntimeError(f"save_to_nvdb: codec {codec!r} is not supported (none or zip)")
    records, payloads = [], []
    for grid in grids:
        data = grid.tobytes()
        payload = data if codec == "none" else _zip_chunk(data)
        records.append(_record(grid, len(payload), _CODECS[codec]))
        payloads.append(payload)
    version = struct.unpack_from("<I", grids[0], 16)[0] if grids else 32 << 21
    header = struct.pack("<QIHH", _FILE_MAGIC, version, len(grids), _CODECS[codec])
    return header + b"".join(records) + b"".join(payloads)


def _zip_chunk(data: bytes) -> bytes:
    packed = zlib.compress(data)
    return struct.pack("<Q", len(packed)) + packed


def _record(grid: np.ndarray, file_size: int, codec: int) -> bytes:
    """The per-grid record: sizes, voxel count, type and class, boxes, voxel size, name size, node and tile counts,
    codec and version; then the name with its terminator."""
    g = grid
    name = bytes(g[40:296]).split(b"\0", 1)[0] + b"\0"
    tree = GRID_SIZE
    record = bytearray(176)
    grid_size = struct.unpack_from("<Q", g, 32)[0]
    voxel_count = struct.unpack_from("<Q", g, tree + 56)[0]
    grid_class, grid_type = struct.unpack_from("<II", g, 632)
    struct.pack_into("<QQQQII", record, 0, grid_size, file_size, 0, voxel_count, grid_type, grid_class)
    record[40:88] = bytes(g[560:608])  # world box
    root = tree + struct.unpack_from("<Q", g, tree + 24)[0]
    record[88:112] = bytes(g[root:root + 24])  # index box
    record[112:136] = bytes(g[608:632])  # voxel size
    struct.pack_into("<I", record, 136, len(name))
    upper, lower, leaf = (struct.unpack_from("<I", g, tree + 32 + 4 * n)[0] for n in (2, 1, 0))
    tiles = struct.unpack_from("<3I", g, tree + 44)
    struct.pack_into("<4I3IHHI", record, 140, leaf, lower, upper, 1, *tiles, codec, 0,
                     struct.unpack_from("<I", g, 16)[0])
    return bytes(record) + name
