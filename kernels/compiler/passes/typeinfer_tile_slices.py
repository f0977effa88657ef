"""Type inference of tile subscripts that select more than one element: `t[2:6, ::2]`, `t[-1, :]`, `t[i]` (a row
of a 2-d tile), and of slice assignment `t[0:4, :] = v`. Mixed into TypeInference.

Semantics, as in Warp where kernels can give the same numbers: a view selects an arithmetic progression of
positions on each axis (Python's slice rules with compile-time bounds; an integer key, compile-time or run-time,
drops its axis). Tiles are values here, so a view is a copy and a slice assignment gives the updated tile, which is
rebound to the variable; reading a view after its parent changed cannot see the change, which matches Warp's
register tiles. Refused as in Warp (with its wording): empty selections, indices out of bounds, non-integer keys,
scalars or tiles of another shape assigned to a slice, compound assignment to a view.
Advanced indexing `t[indices, :]` (one 1-d integer index tile, full slices on the other axes) gathers a copy along
that axis (tile_gather); assigning through it is refused, as in Warp.
"""

from __future__ import annotations

from ... import types as T
from ...typesys import TileType, describe
from .typeinfer_slices import const_slice_indices, is_slice


class TileSliceForms:
    def tile_selection(self, t: TileType, keys, op):
        """(out shape, [r0, rs, c0, cs, nc] as int32 values) of `t[keys]`."""
        err = self.slice_error(op)
        if len(keys) > len(t.shape):
            raise self.error(f"a {len(t.shape)}-d tile takes at most {len(t.shape)} indices, got {len(keys)}", op,
                             ValueError)
        axes = []  # per axis: (start value, step, count, kept)
        for d, length in enumerate(t.shape):
            key = keys[d] if d < len(keys) else None
            if key is None or is_slice(key):
                picked = list(range(length)) if key is None else const_slice_indices(key, length, err)
                if not picked:
                    raise self.error(f"slicing axis {d} of a {describe(t)} gives an empty tile (zero-length axis)",
                                     op, ValueError)
                step = picked[1] - picked[0] if len(picked) > 1 else 1
                axes.append((self.typed_const(picked[0], T.int32, op.loc), step, len(picked), True))
                continue
            if isinstance(key.type, TileType):
                raise self.error("assigning through an integer index tile (advanced indexing) is not supported; "
                                 "a gathered tile is a copy", op, ValueError)
            if not T.is_int(key.type):
                raise self.error(f"tile indices must be integers or slices, got {describe(key.type)}", op, TypeError)
            if key.owner is not None and key.owner.opcode == "const":
                k = int(key.owner.attrs["value"])
                k = k + length if k < 0 else k
                if not 0 <= k < length:
                    raise self.error(f"tile index {key.owner.attrs['value']} is out of bounds for axis {d} of "
                                     f"length {length}", op, ValueError)
                start = self.typed_const(k, T.int32, op.loc)
            else:
                start = self.convert_weak_to(key, T.int32, op)
                if start.type is not T.int32:
                    start = self.cast_to(start, T.int32, op)
            axes.append((start, 0, 1, False))
        if len(axes) == 1:
            axes.append((self.typed_const(0, T.int32, op.loc), 0, 1, False))
        (r0, rs, nr, rk), (c0, cs, nc, ck) = axes
        shape = tuple(n for n, kept in ((nr, rk), (nc, ck)) if kept)
        consts = [self.typed_const(v, T.int32, op.loc) for v in (rs, cs, nc)]
        return shape, [r0, consts[0], c0, consts[1], consts[2]]

    def tile_gather_axis(self, t: TileType, keys, op):
        """The axis of `t[keys]` indexed by a 1-d integer tile, or None when no key is a tile (Warp's checks)."""
        tiles = [d for d, k in enumerate(keys) if not is_slice(k) and k is not None and isinstance(k.type, TileType)]
        if not tiles:
            return None
        if len(tiles) > 1:
            raise self.error("Tile indexing supports exactly one 1D integer index tile.", op, ValueError)
        if len(keys) > len(t.shape):
            raise self.error(f"tile indexing specified too many indices {len(keys)} > {len(t.shape)}", op, ValueError)
        axis = tiles[0]
        it = keys[axis].type
        if len(it.shape) != 1:
            raise self.error(f"Tile indexing requires a 1D integer index tile, got {len(it.shape)} dimensions.", op,
                             ValueError)
        if not T.is_int(it.dtype):
            raise self.error(f"Tile indexing requires an integer index tile, got dtype {describe(it.dtype)}.", op,
                             ValueError)
        err = self.slice_error(op)
        for d, key in enumerate(keys):
            if d == axis:
                continue
            if not is_slice(key) or const_slice_indices(key, t.shape[d], err) != list(range(t.shape[d])):
                raise self.error("Tile indexing with an integer index tile requires ':' on all other axes, e.g. "
                                 "`t[indices, :]`.", op, ValueError)
        return axis

    def tile_getitem(self, op, base, keys):
        t = base.type
        self.refuse_nd_selection(t, op)
        axis = self.tile_gather_axis(t, keys, op)
        if axis is not None:
            shape = list(t.shape)
            shape[axis] = keys[axis].type.shape[0]
            self.emit_typed(op, "tile_gather", TileType(t.dtype, tuple(shape)),
                            [base, keys[axis], self.typed_const(axis, T.int32, op.loc)])
            return
        shape, args = self.tile_selection(t, keys, op)
        self.emit_typed(op, "tile_slice", TileType(t.dtype, shape), [base, *args])

    def tile_setitem(self, op, base, keys, value):
        t = base.type
        self.refuse_nd_selection(t, op)
        shape, args = self.tile_selection(t, keys, op)
        vt = value.type
        if not isinstance(vt, TileType):
            raise self.error(f"assigning to a tile slice requires a tile of matching shape {shape}, got "
                             f"{describe(vt)}", op, ValueError)
        if tuple(vt.shape) != tuple(shape):
            raise self.error(f"shape mismatch: a tile of shape {tuple(vt.shape)} does not fit the slice's shape "
                             f"{shape}", op, ValueError)
        if vt.dtype != t.dtype:
            raise self.error(f"assigning a {describe(vt)} to a slice of a {describe(t)}: the dtypes differ", op,
                             TypeError)
        self.call_builtin(op, "tile_slice_assign", [base, value, *args])

    def refuse_tile_view_update(self, base, keys, op):
        """`t[0:4, :] += v`, `t[0] += v` (a row of a 2-d tile): refused, as in Warp."""
        if isinstance(base.type, TileType) and (any(is_slice(k) for k in keys) or len(keys) < len(base.type.shape)):
            raise self.error("Compound assignment to a tile view is not supported; write t[...] = t[...] + v", op,
                             ValueError)

