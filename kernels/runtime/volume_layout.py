"""Byte layout of NanoVDB 32.x grids by value type (the one kernels/native/volume.h's vdb::layout reads).

A grid is a 672-byte header, a 64-byte tree header, the root and its tile table, then the upper (32^3 entries),
lower (16^3) and leaf (8^3 voxels) nodes, each 32-byte aligned. Offsets inside a node depend on the value's size
and alignment; statistics are double for 8-byte values, float otherwise.
"""

from __future__ import annotations

from .. import types as T

GRID_SIZE, TREE_SIZE = 672, 64

#: NanoVDB grid type code -> Warp's type string
GRID_TYPE_NAMES = {0: "?", 1: "float", 2: "double", 3: "int16", 4: "int32", 5: "int64", 6: "Vec3f", 7: "Vec3d",
                   8: "Mask", 9: "Half", 10: "uint32", 11: "bool", 12: "RGBA8", 13: "Float4", 14: "Float8",
                   15: "Float16", 16: "FloatN", 17: "Vec4f", 18: "Vec4d", 19: "Index", 20: "OnIndex",
                   21: "IndexMask", 22: "OnIndexMask", 23: "PointIndex", 24: "Vec3u8", 25: "Vec3u16", 26: "uint8"}

#: value grids kernels sample: code -> (value type, bytes per value, alignment, numpy scalar, components)
VALUE_TYPES = {1: (T.float32, 4, 4), 2: (T.float64, 8, 8), 4: (T.int32, 4, 4), 5: (T.int64, 8, 8),
               10: (T.uint32, 4, 4), 6: (T.vec3, 12, 4), 7: (T.vec3d, 24, 8), 17: (T.vec4, 16, 4),
               18: (T.vec4d, 32, 8)}
INDEX_TYPES = (19, 20)  # Index, OnIndex: voxels hold an index into external arrays
FPN = 16  # FloatN: float internal nodes, variable-size quantized leaves (loaded, not sampled)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def node_layout(grid_type: int) -> dict | None:
    """Sizes and offsets of a grid's nodes [bytes], or None for a type whose layout is not known here.
    A leaf size of 0 means variable-size leaves (FpN)."""
    if grid_type in VALUE_TYPES:
        _, size, align = VALUE_TYPES[grid_type]
        leaf_values = _align(80 + 2 * (size + (8 if size == 8 else 4)), 32)
        leaf_size = _align(leaf_values + size * 512, 32)
    elif grid_type in INDEX_TYPES:  # uint64 tiles and statistics; a leaf: its first index and prefix sums
        size, align, leaf_values, leaf_size = 8, 8, 0, 96
    elif grid_type == FPN:
        size, align, leaf_values, leaf_size = 4, 4, 0, 0
    else:
        return None
    stats = 8 if size == 8 else 4
    background = _align(28, align)
    tile_value = _align(20, align)
    stride = _align(max(size, 8), 8)
    upper_table = _align(32 + 2 * 4096 + 2 * (size + stats), 32)
    lower_table = _align(32 + 2 * 512 + 2 * (size + stats), 32)
    return dict(value_size=size, root_background=background, root_size=_align(background + 3 * size + 2 * stats, 32),
                tile_value=tile_value, tile_size=_align(tile_value + size, 32),
                upper=dict(size=_align(upper_table + stride * 32 ** 3, 32), child_mask=4128, table=upper_table,
                           stride=stride, entries=32 ** 3),
                lower=dict(size=_align(lower_table + stride * 16 ** 3, 32), child_mask=544, table=lower_table,
                           stride=stride, entries=16 ** 3),
                leaf=dict(size=leaf_size, values=leaf_values))
