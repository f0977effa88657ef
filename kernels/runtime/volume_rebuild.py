"""Rebuildable volumes (`allocate_by_tiles/voxels(rebuildable=True, max_*=...)`, `Volume.rebuild`): the grid's
buffer is sized for a reserved number of nodes once, and each rebuild writes a new topology into it in place, so the
volume's id (the buffer's address) and its size never change. A topology that does not fit sets Warp's status flags
and leaves the volume as it was.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from .volume_layout import GRID_SIZE, TREE_SIZE

REBUILD_SUCCESS = 0
REBUILD_LEAF_CAPACITY_EXCEEDED = 1 << 0
REBUILD_LOWER_CAPACITY_EXCEEDED = 1 << 1
REBUILD_UPPER_CAPACITY_EXCEEDED = 1 << 2
REBUILD_VOXEL_CAPACITY_EXCEEDED = 1 << 3
REBUILD_INVALID_INPUT = 1 << 4


class Capacity(NamedTuple):
    """Reserved counts: active voxels, leaves, lower and upper nodes."""

    voxels: int
    leaves: int
    lower: int
    upper: int


def topology_counts(leaf_origins: np.ndarray, voxel_count: int) -> Capacity:
    """The counts a topology needs: its active voxels, and its leaves, lower and upper nodes (from the leaves'
    origins, [n, 3] multiples of 8)."""
    leaves = np.asarray(leaf_origins, dtype=np.int64).reshape(-1, 3)
    lower = len(np.unique(leaves & ~127, axis=0)) if len(leaves) else 0
    upper = len(np.unique(leaves & ~4095, axis=0)) if len(leaves) else 0
    return Capacity(int(voxel_count), len(leaves), lower, upper)


def capacity(requested: Capacity, needed: Capacity, *, per_leaf_voxels: bool) -> Capacity:
    """Reserved counts: those given (None: what the first topology needs); a tile volume reserves 512 voxels per
    leaf."""
    leaves = needed.leaves if requested.leaves is None else int(requested.leaves)
    if per_leaf_voxels:
        voxels = 512 * leaves
    else:
        voxels = needed.voxels if requested.voxels is None else int(requested.voxels)
    lower = needed.lower if requested.lower is None else int(requested.lower)
    upper = needed.upper if requested.upper is None else int(requested.upper)
    return Capacity(voxels, leaves, lower, upper)


def overflow(needed: Capacity, reserved: Capacity) -> int:
    """Status flags of the counts that exceed the reservation (REBUILD_SUCCESS when all fit)."""
    flags = REBUILD_SUCCESS
    if needed.leaves > reserved.leaves:
        flags |= REBUILD_LEAF_CAPACITY_EXCEEDED
    if needed.lower > reserved.lower:
        flags |= REBUILD_LOWER_CAPACITY_EXCEEDED
    if needed.upper > reserved.upper:
        flags |= REBUILD_UPPER_CAPACITY_EXCEEDED
    if needed.voxels > reserved.voxels:
        flags |= REBUILD_VOXEL_CAPACITY_EXCEEDED
    return flags


def reserved_size(layout: dict, reserved: Capacity) -> int:
    """Bytes of a grid holding the reserved numbers of nodes (one root tile per upper node)."""
    upper = reserved.upper * (layout["tile_size"] + layout["upper"]["size"])
    return (GRID_SIZE + TREE_SIZE + layout["root_size"] + upper + reserved.lower * layout["lower"]["size"]
            + reserved.leaves * layout["leaf"]["size"])


def padded(grid: bytes, size: int) -> np.ndarray:
    """The grid's bytes in a buffer of `size` bytes, its declared size set to it (the tail unused)."""
    out = np.zeros(size, dtype=np.uint8)
    out[:len(grid)] = np.frombuffer(grid, dtype=np.uint8)
    struct.pack_into("<Q", out, 32, size)
    return out


def write_status(status, flags: int) -> None:
    """Store the flags in a one-element uint32 array (Warp's status argument), if given."""
    if status is not None:
        status.assign(np.array([flags], dtype=np.uint32).reshape(status.shape))
