"""Build a NanoVDB grid buffer (version 32, one grid) from a set of allocated 8^3 tiles, on the host with numpy.

Used by `wp.Volume.allocate`, `allocate_by_tiles`, `allocate_by_voxels` and `load_from_numpy`. The layout is the one
kernels/native/volume.h reads (node order: grid, tree, root and its tiles, upper, lower, leaf nodes); every
unallocated entry holds the background value, every leaf voxel starts as `values` (or the background).
"""

from __future__ import annotations

import struct

import numpy as np

_GRID_MAGIC = 0x314244566F6E614E  # "NanoVDB1"
_VERSION = (32 << 21) | (6 << 10) | 1
_BREADTH_FIRST = 1 << 5
_ON_INDEX = 20  # grid flag: nodes stored level by level (the only layout read)


def _value_bytes(value, numpy_scalar, components: int) -> bytes:
    return np.broadcast_to(np.asarray(value, dtype=numpy_scalar), (components,)).astype(numpy_scalar).tobytes()


def tree_order(leaf_origins: np.ndarray) -> np.ndarray:
    """The order of leaves in a tree as Warp's builder writes it: by their upper node's origin (x, y, z as signed
    integers), then their lower node's entry in the upper node, then their entry in the lower node. Voxel indices
    (index grids, volume_lookup_index) follow it."""
    o = np.asarray(leaf_origins, dtype=np.int64)
    upper = o & ~4095
    n2 = (((o[:, 0] & 4095) >> 7) << 10) | (((o[:, 1] & 4095) >> 7) << 5) | ((o[:, 2] & 4095) >> 7)
    n1 = (((o[:, 0] & 127) >> 3) << 8) | (((o[:, 1] & 127) >> 3) << 4) | ((o[:, 2] & 127) >> 3)
    return np.lexsort((n1, n2, upper[:, 2], upper[:, 1], upper[:, 0]))


def _in_order(origins: np.ndarray) -> tuple:
    """The distinct rows of `origins` (grouped: equal rows are adjacent) in order of appearance, and the row of
    each input among them."""
    if len(origins) == 0:
        return origins.reshape(0, 3), np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[True], np.any(origins[1:] != origins[:-1], axis=1)])
    return origins[starts], np.cumsum(starts) - 1


def build_grid(leaf_origins: np.ndarray, grid_type: int, layout: dict, numpy_scalar, components: int, background,
               voxel_size, translation, leaf_values: np.ndarray | None = None) -> bytes:
    """The grid buffer. leaf_origins: [n, 3] int, multiples of 8 (unique); leaf_values: [n, 8, 8, 8, components] in
    the leaves' order, or None for the background everywhere (index grids: [n, 8, 8, 8] bool, the active voxels);
    voxel_size: 3 floats [world units per voxel] or the 3x3 index-to-world matrix;
    translation: the index-to-world offset (3 floats)."""
    leaf_origins = np.asarray(leaf_origins, dtype=np.int64).reshape(-1, 3)
    order = tree_order(leaf_origins)
    leaf_origins = leaf_origins[order]
    if leaf_values is not None:
        leaf_values = np.asarray(leaf_values)[order]
    lower_origins, lower_of_leaf = _in_order(leaf_origins & ~127)
    upper_origins, upper_of_lower = _in_order(lower_origins & ~4095)
    n_leaf, n_lower, n_upper = len(leaf_origins), len(lower_origins), len(upper_origins)
    bg = _value_bytes(background, numpy_scalar, components)
    size = layout["value_size"]

    tree = 672
    root = tree + 64
    upper_start = root + layout["root_size"] + n_upper * layout["tile_size"]
    lower_start = upper_start + n_upper * layout["upper"]["size"]
    leaf_start = lower_start + n_lower * layout["lower"]["size"]
    total = leaf_start + n_leaf * layout["leaf"]["size"]
    buf = np.zeros(total, dtype=np.uint8)

    # grid header: magic, version, index 0 of 1 grid, size, map, world box, voxel size, type
    vs = np.asarray(voxel_size, dtype=np.float64)
    tr = np.asarray(translation, dtype=np.float64)
    mat = np.diag(vs) if vs.ndim == 1 else vs  # a full index-to-world matrix may be given
    inv = np.linalg.inv(mat)
    vs = mat @ np.ones(3)
    struct.pack_into("<QQIIIIQ", buf, 0, _GRID_MAGIC, 0, _VERSION, _BREADTH_FIRST, 0, 1, total)
    struct.pack_into("<9f9f3ff", buf, 296, *mat.ravel(), *inv.ravel(), *tr, 1.0)
    struct.pack_into("<9d9d3dd", buf, 296 + 88, *mat.ravel(), *inv.ravel(), *tr, 1.0)
    if n_leaf:
        lo, hi = leaf_origins.min(axis=0), leaf_origins.max(axis=0) + 7
        struct.pack_into("<6d", buf, 560, *(lo * vs + tr), *((hi + 1) * vs + tr))
    struct.pack_into("<3d", buf, 608, *vs)
    struct.pack_into("<II", buf, 632, 0, grid_type)

    # tree: offsets of the first leaf, lower, upper node and the root (from the tree), counts
    struct.pack_into("<4Q3I3IQ", buf, tree, leaf_start - tree, lower_start - tree, upper_start - tree, root - tree,
                     n_leaf, n_lower, n_upper, 0, 0, 0, n_leaf * 512)

    # root: index box, tile count, background; one tile per upper node, keyed by its origin's top bits
    if n_leaf:
        struct.pack_into("<6i", buf, root, *lo, *hi)
    struct.pack_into("<I", buf, root + 24, n_upper)
    buf[root + layout["root_background"]:root + layout["root_background"] + size] = np.frombuffer(bg, np.uint8)
    for t, origin in enumerate(upper_origins):
        key = (int(origin[2] & 0xFFFFFFFF) >> 12) | ((int(origin[1] & 0xFFFFFFFF) >> 12) << 21) \
            | ((int(origin[0] & 0xFFFFFFFF) >> 12) << 42)
        tile = root + layout["root_size"] + t * layout["tile_size"]
        struct.pack_into("<Qq", buf, tile, key, upper_start + t * layout["upper"]["size"] - root)

    _internal_nodes(buf, layout["upper"], upper_start, upper_origins, lower_origins, upper_of_lower,
                    lower_start, layout["lower"]["size"], 4095, 5, bg)
    _internal_nodes(buf, layout["lower"], lower_start, lower_origins, leaf_origins, lower_of_leaf,
                    leaf_start, layout["leaf"]["size"], 127, 4, bg)

    # leaves: origin, box extent 7, all voxels active, values
    leaf_size, values_at = layout["leaf"]["size"], layout["leaf"]["values"]
    leaves = buf[leaf_start:].reshape(n_leaf, leaf_size)
    leaves[:, 0:12] = leaf_origins.astype("<i4").view(np.uint8).reshape(n_leaf, 12)
    leaves[:, 12:15] = 7
    leaves[:, 16:80] = 0xFF
    if grid_type == _ON_INDEX:  # leaf_values: which voxels are active (all when None); 0 indexes the background
        active = np.ones((n_leaf, 512), bool) if leaf_values is None else \
            np.asarray(leaf_values, bool).reshape(n_leaf, 512)
        words = np.packbits(active, axis=1, bitorder="little")  # [n_leaf, 64] bytes = 8 words of 64 voxels
        leaves[:, 16:80] = words
        counts = active.reshape(n_leaf, 8, 64).sum(axis=2).astype(np.uint64)  # active voxels per word
        cumulative = np.cumsum(counts, axis=1)[:, :7]  # before words 1..7
        prefix = (cumulative << (np.uint64(9) * np.arange(7, dtype=np.uint64))).sum(axis=1, dtype=np.uint64)
        per_leaf = counts.sum(axis=1)
        firsts = (1 + np.cumsum(per_leaf) - per_leaf).astype(np.uint64)  # 1 + the active voxels of earlier leaves
        leaves[:, 80:96] = np.stack([firsts, prefix], 1).astype("<u8").view(np.uint8)
        total_active = int(counts.sum())
        struct.pack_into("<Q", buf, tree + 56, total_active)
        struct.pack_into("<Q", buf, 656, total_active + 1)  # the grid's value count
        return buf.tobytes()
    if leaf_values is None:
        data = np.tile(np.frombuffer(bg, np.uint8), (n_leaf, 512))
    else:
        data = np.ascontiguousarray(leaf_values, dtype=numpy_scalar).reshape(n_leaf, -1).view(np.uint8)
    leaves[:, values_at:values_at + 512 * size] = data
    return buf.tobytes()


def _internal_nodes(buf, info, start, origins, child_origins, parent_of_child, child_start, child_size, mask, shift,
                    bg) -> None:
    """Fill internal nodes (upper: 32^3 entries of 128^3 voxels; lower: 16^3 of 8^3): origin, child mask, child
    offsets, the background in every other entry. shift: log2 of the entries per axis."""
    node_size, stride, table = info["size"], info["stride"], info["table"]
    nodes = buf[start:start + len(origins) * node_size].reshape(len(origins), node_size)
    nodes[:, 0:12] = np.asarray(origins, dtype="<i4").view(np.uint8).reshape(len(origins), 12)
    entries = info["entries"]
    tiles = nodes[:, table:table + stride * entries].reshape(len(origins), entries, stride)
    tiles[:, :, :len(bg)] = np.frombuffer(bg, np.uint8)
    child_size_voxels = (mask + 1) >> shift
    local = (np.asarray(child_origins) & mask) // child_size_voxels
    n = (local[:, 0] << (2 * shift)) | (local[:, 1] << shift) | local[:, 2]
    for c, (parent, entry) in enumerate(zip(parent_of_child, n)):
        node = nodes[parent]
        node[info["child_mask"] + entry // 8] |= np.uint8(1 << (entry % 8))
        node[32 + entry // 8] |= np.uint8(1 << (entry % 8))  # the value mask (active) precedes the child mask
        offset = child_start + c * child_size - (start + parent * node_size)
        tiles[parent, entry, :] = 0
        tiles[parent, entry, :8] = np.frombuffer(struct.pack("<q", offset), np.uint8)
