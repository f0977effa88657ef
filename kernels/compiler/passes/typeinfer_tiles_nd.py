"""Type inference of the tile forms on 3-d and 4-d tiles (Warp's): tile_load/tile_store/tile_atomic_add with 3-d and
4-d arrays, tile_broadcast, reductions along an axis, tile_squeeze, and element access t[i, j, k(, l)]. Mixed into
TypeInference; typeinfer_tiles hands these cases over. The overloads are declared in kernels/builtins/tile_nd.py,
whose native functions get the extents and offsets as constants (padded to four entries)."""

from __future__ import annotations

import math

from .. import ir
from ... import types as T
from ...typesys import ArrayType, PackType, StaticType, TileType, describe

ND_TILE_FORMS = ("tile_load, tile_store, tile_atomic_add, tile_zeros/ones/full/empty, tile_broadcast, tile_reshape, "
                "tile_squeeze, tile_map and arithmetic, tile_sum/min/max/reduce (whole tile or along an axis), "
                "t[i, j, k]")


def is_nd_tile(t) -> bool:
    """A tile of 3 or 4 dimensions."""
    return isinstance(t, TileType) and len(t.shape) > 2


class TileNdForms:
    def nd_consts(self, values, pad, op) -> list:
        """`values` (ints) padded to four with `pad`, as int32 constants."""
        values = list(values) + [pad] * (4 - len(values))
        return [self.typed_const(int(v), T.int32, op.loc) for v in values]

    def nd_offsets(self, v, ndim, what, op) -> list:
        """The offset argument of a 3-d/4-d load or store: one int32 per dimension (zeros when absent), padded to
        four with 0."""
        if v is None:
            items = []
        elif isinstance(v.type, PackType):
            items = list(v.owner.operands)
        elif isinstance(v.type, StaticType) and isinstance(v.type.obj, tuple):
            items = [self.typed_const(int(x), T.int32, op.loc) for x in v.type.obj]
        else:
            items = [v]
        if items and len(items) != ndim:
            raise self.error(f"{what}() offset argument must have the same number of dimensions as the array, got "
                             f"{len(items)} indices for an array with {ndim} dimensions", op, kind=ValueError)
        out = []
        for x in items:
            x = self.convert_weak_to(x, T.int32, op)
            if not T.is_int(x.type):
                raise self.error(f"tile offsets must be integers, got {describe(x.type)}", op)
            out.append(x if x.type is T.int32 else self.cast_to(x, T.int32, op))
        return out + [self.typed_const(0, T.int32, op.loc) for _ in range(4 - len(out))]

    def nd_array(self, v, ndim, what, op) -> ArrayType:
        at = v.type
        if not isinstance(at, ArrayType) or not at.plain:
            raise self.error(f"{what}() takes an array, got {describe(at)}", op)
        if at.ndim != ndim:
            raise self.error(f"{what}() array argument must have the same number of dimensions as the tile, got "
                             f"{at.ndim} dimensions for the array and {ndim} for the tile", op, kind=ValueError)
        return at

    def tile_load_nd(self, op, args, shape):
        """tile_load of a 3-d or 4-d tile from an array of as many dimensions."""
        at = args["a"].type
        if len(shape) != getattr(at, "ndim", 0):
            raise self.error(f"tile_load() array argument must have same number of dimensions as the tile shape, "
                             f"trying to perform an {len(shape)} dimensional load from an array with "
                             f"{getattr(at, 'ndim', 0)} dimensions.", op, kind=ValueError)
        self.nd_array(args["a"], len(shape), "tile_load", op)
        offsets = self.nd_offsets(args.get("offset"), len(shape), "tile_load", op)
        self.emit_typed(op, "tile_load", TileType(at.dtype, shape),
                        [args["a"], *self.nd_consts(shape, 1, op), *offsets])

    def tile_store_nd(self, op, name, args):
        """tile_store / tile_atomic_add of a 3-d or 4-d tile into an array of as many dimensions."""
        tt = args["t"].type
        self.nd_array(args["a"], len(tt.shape), name, op)
        offsets = self.nd_offsets(args.get("offset"), len(tt.shape), name, op)
        self.call_builtin(op, name, [args["a"], args["t"], *self.nd_consts(tt.shape, 1, op), *offsets])

    def tile_broadcast_nd(self, op, tile, shape):
        """tile_broadcast to or from 3 or 4 dimensions, numpy's rules: trailing axes aligned, extent 1 repeats."""
        tt = tile.type
        if len(tt.shape) > len(shape):
            raise self.error(f"cannot broadcast a {describe(tt)} to shape {shape}: it has more dimensions", op,
                             kind=ValueError)
        src = (1,) * (len(shape) - len(tt.shape)) + tuple(tt.shape)
        for have, want in zip(src, shape):
            if have not in (1, want):
                raise self.error(f"cannot broadcast a {describe(tt)} to shape {shape}", op, kind=ValueError)
        pad = 4 - len(shape)
        consts = self.nd_consts((1,) * pad + src, 1, op) + self.nd_consts((1,) * pad + tuple(shape), 1, op)
        self.emit_typed(op, "tile_broadcast", TileType(tt.dtype, tuple(shape)), [tile, *consts])

    def builtin_tile_squeeze(self, op):
        """tile_squeeze(t, axis=None): the same elements without axes of extent 1 (all of them, or those in `axis`;
        Warp's checks and wording)."""
        args = self.call_arguments(op, ("t", "axis"))
        tt = self.need_tile(args["t"], op, "tile_squeeze's argument")
        shape, ndim = tt.shape, len(tt.shape)
        if "axis" in args:
            axis = self.static_value(args["axis"], op, "tile_squeeze's axis")
            axis = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
            for a in axis:
                if not isinstance(a, int) or isinstance(a, bool):
                    raise self.error(f"tile_squeeze() axis must be an int or a tuple of ints, got {a!r}", op,
                                     kind=TypeError)
                if not -ndim <= a < ndim:
                    raise self.error(f"tile_squeeze() axis {a} is out of bounds for tile with {ndim} dimensions", op,
                                     kind=ValueError)
            axis = {a % ndim for a in axis}
            for a in sorted(axis):
                if shape[a] != 1:
                    raise self.error(f"Cannot select an axis to squeeze out which has size not equal to one, "
                                     f"axis={a}, size={shape[a]}", op, kind=ValueError)
            out = tuple(n for d, n in enumerate(shape) if d not in axis)
        else:
            out = tuple(n for n in shape if n != 1)
        if not out:
            raise self.error(f"tile_squeeze() of a {describe(tt)} would leave no dimension (a 0-d tile), which "
                             "kernels does not have; keep one axis, e.g. axis=0", op, kind=ValueError)
        self.emit_typed(op, "tile_reshape", TileType(tt.dtype, out), [args["t"]])

    def reduce_lines(self, tt: TileType, axis: int):
        """(outer, n, inner, result shape) of a reduction of `tt` along `axis`."""
        shape = tt.shape
        outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        return outer, shape[axis], inner, tuple(n for d, n in enumerate(shape) if d != axis)

    def tile_element_nd(self, op, base, idx, value=None):
        """t[i, j, k(, l)] (value None) or t[i, j, k(, l)] = value of a 3-d or 4-d tile."""
        t = base.type
        self.check_indices(idx, op)
        idx = [self.convert_weak_to(i, T.int32, op) for i in idx]
        idx = [i if i.type is T.int32 else self.cast_to(i, T.int32, op) for i in idx]
        idx += [self.typed_const(0, T.int32, op.loc) for _ in range(4 - len(idx))]
        dims = self.nd_consts(t.shape[1:], 1, op)[:3]
        if value is None:
            self.call_builtin(op, "extract", [base, *dims, *idx])
        else:
            self.call_builtin(op, "assign", [base, *dims, *idx, self.convert_weak_to(value, t.dtype, op)])

    def builtin_tile_fft(self, op):
        self.fft_nd(op, "tile_fft")

    def builtin_tile_ifft(self, op):
        self.fft_nd(op, "tile_ifft")

    def fft_nd(self, op, name):
        """tile_fft/tile_ifft of a 3-d or 4-d tile transform along its last axis: the tile reshaped to 2-d rows of
        that axis (the same row-major storage), transformed in place, reshaped back and rebound to the variable."""
        t = op.operands[0] if len(op.operands) == 1 and not op.attrs.get("kwargs") else None
        if t is None or not is_nd_tile(t.type):
            return self.call_builtin(op, name)
        tt = t.type
        rows = TileType(tt.dtype, (math.prod(tt.shape[:-1]), tt.shape[-1]))
        flat = ir.Op("call", [t], [ir.Value()], {"name": "tile_reshape"}, [], op.loc)
        self.emit_typed(flat, "tile_reshape", rows, [t])
        updated = ir.Value()
        transform = ir.Op("call", flat.results, [ir.Value(), updated], {"name": name, "mutates": (0,)}, [], op.loc)
        self.call_builtin(transform, name, flat.results)
        back = ir.Op("call", [updated], op.results[-1:], {"name": "tile_reshape"}, [], op.loc)
        self.emit_typed(back, "tile_reshape", tt, [updated])
        if len(op.results) > 1:
            op.results[0].type = None  # a statement: only the updated tile is a result

    def builtin_print(self, op):
        """print(t) of a tile of scalars (any number of dimensions) in Warp's layout, with its shape and, for a tile
        straight from a constructor or tile_load, the storage it names (kernels has one kind of tile, so other tiles'
        labels leave it out); other values as the `print` builtin."""
        t = op.operands[0] if len(op.operands) == 1 and not op.attrs.get("kwargs") else None
        if t is None or not isinstance(t.type, TileType):
            return self.call_builtin(op, "print")
        tt = t.type
        if not T.is_scalar(tt.dtype):
            raise self.error(f"print of a {describe(tt)}: kernels prints tiles of scalars (Warp prints other elements "
                             "as raw bits); print its elements, or tile_map them to scalars", op, kind=TypeError)
        storage = t.owner.attrs.get("storage") if t.owner is not None else None
        label = f" = tile(shape=({','.join(str(n) for n in tt.shape)})" + \
            (f", storage={storage})" if storage else ")")
        args = [t, self.typed_const(label, StaticType(label), op.loc), *self.nd_consts(tt.shape, 1, op),
                self.typed_const(len(tt.shape), T.int32, op.loc)]
        self.call_builtin(op, "tile_print", args)

    def refuse_nd_selection(self, t, op):
        """Subscripts of a 3-d/4-d tile that select more than one element (t[i], slices) are not supported."""
        if is_nd_tile(t):
            raise self.error(f"a subscript selecting part of a {len(t.shape)}-d tile (t[i], slices, index tiles) is "
                             f"not supported; {len(t.shape)}-d tiles take {ND_TILE_FORMS}", op)
