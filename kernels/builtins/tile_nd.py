"""Tile builtins that take 3-d and 4-d tiles: overloads of tile.py's names whose native code knows the axes.

A 3-d or 4-d tile is stored row-major as a `tile_t<T, n0, n1*n2[*n3]>` (typesys.TileType), so an operation that
depends on the axes gets the extents as int32 arguments, which type inference (typeinfer_tiles_nd) fills in as
constants: shapes in the array's or tile's dimension order padded to four entries with 1, offsets with 0. Operations
that only see the elements in row-major order (elementwise arithmetic, tile_map, whole-tile reductions, reshape)
take the storage as it is. Every other tile builtin refuses these tiles (registry.Tl's nd_max). Native code:
kernels/native/tile_nd.h.
"""

from __future__ import annotations

from .. import types as T
from .registry import A, AnyType, S, Tl, TypeArg, V, add_builtin, declare_properties

I32 = T.int32
N = S("T", "scalar")
F = S("T", "float")
_ND = Tl(AnyType("T"), nd_max=4)
_SHAPE = (I32,) * 4
_OFFSET = (I32,) * 4

add_builtin("tile_load", (TypeArg(_ND), A(AnyType("T")), *_SHAPE, *_OFFSET), _ND, native="tile_load_nd",
            template_ret=True, group="tile",
            doc="tile_load(a, shape=(n0, n1, n2[, n3]), offset=(...)) from a 3-d or 4-d array (outside: zeros)")
add_builtin("tile_store", (A(AnyType("T")), _ND, *_SHAPE, *_OFFSET), None, native="tile_store_nd", side_effect=True,
            group="tile", doc="tile_store(a, t, offset=(...)) of a 3-d or 4-d tile (outside the array: not written)")
add_builtin("tile_atomic_add", (A(AnyType("T")), _ND, *_SHAPE, *_OFFSET), _ND, native="tile_atomic_add_nd",
            side_effect=True, group="tile",
            doc="tile_atomic_add(a, t, offset=(...)) of a 3-d or 4-d tile: adds t into a; returns the old values")

# Construction: every element the same, whatever the axes (random tiles: filled in row-major order).
for _name in ("tile_zeros", "tile_empty", "tile_ones"):
    add_builtin(_name, (TypeArg(_ND),), _ND, template_ret=True, group="tile", doc=f"{_name}(shape, dtype=float)")
add_builtin("tile_full", (TypeArg(_ND), AnyType("T")), _ND, template_ret=True, group="tile",
            doc="tile_full(shape, value, dtype=type of value)")
U32 = T.uint32
for _name, _dtype in (("tile_randi", I32), ("tile_randf", T.float32)):
    _RAND = Tl(_dtype, nd_max=4)
    add_builtin(_name, (TypeArg(_RAND), U32), _RAND, template_ret=True, differentiable=False, group="tile",
                doc=f"{_name}(shape, rng) of 3 or 4 dimensions")
    add_builtin(_name, (TypeArg(_RAND), U32, _dtype, _dtype), _RAND, template_ret=True, differentiable=False,
                group="tile", doc=f"{_name}(shape, rng, min, max) of 3 or 4 dimensions")

_OUT = Tl(AnyType("T"), "P", "Q", nd="__out_ndim", nd_max=4)
add_builtin("tile_broadcast", (TypeArg(_OUT), _ND, *_SHAPE, *_SHAPE), _OUT, native="tile_broadcast_nd",
            template_ret=True, group="tile",
            doc="tile_broadcast(t, shape) with 3 or 4 dimensions on either side (numpy rules, trailing axes aligned)")
add_builtin("tile_reshape", (TypeArg(_OUT), _ND), _OUT, template_ret=True, group="tile",
            doc="tile_reshape(t, shape) to or from 3 or 4 dimensions: the elements in row-major order")

add_builtin("extract", (_ND, I32, I32, I32, I32, I32, I32, I32), "T", native="extract_nd", group="tile",
            doc="t[i, j, k] / t[i, j, k, l] of a 3-d or 4-d tile")
add_builtin("assign", (_ND, I32, I32, I32, I32, I32, I32, I32, AnyType("T")), _ND, native="assign_nd", group="tile",
            doc="t[i, j, k] = v / t[i, j, k, l] = v of a 3-d or 4-d tile: a new tile")

# Whole-tile reductions see the elements in row-major order, whatever the axes.
add_builtin("tile_sum", (Tl(N, nd_max=4),), Tl(N, 1, 1, ndim=1), group="tile", doc="sum of all elements")
add_builtin("tile_sum", (Tl(V("L", F), nd_max=4),), Tl(V("L", F), 1, 1, ndim=1), group="tile",
            doc="sum of all elements of a tile of vectors")
for _name, _doc in (("tile_min", "smallest element"), ("tile_max", "largest element")):
    add_builtin(_name, (Tl(N, nd_max=4),), Tl(N, 1, 1, ndim=1), group="tile", doc=_doc)
for _name, _doc in (("tile_argmin", "flat index of the smallest element"),
                    ("tile_argmax", "flat index of the largest element")):
    add_builtin(_name, (Tl(N, nd_max=4),), Tl(I32, 1, 1, ndim=1), differentiable=False, group="tile", doc=_doc)

add_builtin("tile_squeeze", (_ND,), None, group="tile",
            doc="tile_squeeze(t, axis=None): t without its axes of extent 1 (or only those in `axis`)")

# print(t) of a tile of scalars (type inference passes the shape label and the extents; kernels/native/tile_print.h).
add_builtin("tile_print", (Tl(N, nd_max=4), AnyType("Label"), *_SHAPE, I32), None, side_effect=True, group="tile",
            arg_names=("t", "label", "n0", "n1", "n2", "n3", "ndim"),
            doc="print(t): the tile's elements in nested brackets, then its shape")
declare_properties("tile_print", exposed=False)
