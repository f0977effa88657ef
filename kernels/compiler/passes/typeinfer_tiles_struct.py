"""Type inference of arithmetic on tiles of structs (Warp 1.19): `t + u`, `t - u`, their in-place forms, and tile_sum
(whole, or along an axis) field by field; unary operators refused with Warp's wording. Mixed into TypeInference;
typeinfer_tiles hands struct tiles over (typeinfer_paths the element updates `t[i] += s`). The element functions are
the hidden builtins of kernels/builtins/struct_ops.py."""

from __future__ import annotations

from ...builtins import registry
from ...typesys import TileType, describe, is_struct

_ELEMENT = {"add": "struct_add", "sub": "struct_sub"}


class TileStructForms:
    def struct_tile_arithmetic(self, op, name):
        """`a + b`, `a - b` of two struct tiles of one struct type and shape: field by field."""
        args = list(op.operands)
        if len(args) == 1:
            raise self.error("Tile unary operators do not support Warp struct tile elements", op, kind=TypeError)
        if name not in _ELEMENT or len(args) != 2 or not all(isinstance(a.type, TileType) for a in args) \
                or any(a.type.dtype is not args[0].type.dtype for a in args):
            got = ", ".join(describe(a.type) for a in args)
            raise self.error(f"'{name}' of tiles of structs ({got}): struct tiles take + and - of two tiles of the "
                             f"same struct type, field by field", op, kind=TypeError)
        shape = self.common_shape([a.type for a in args], op, f"'{name}'")
        ov = registry.BUILTINS[_ELEMENT[name]][0]
        self.emit_tile_map(op, ("builtin", ov), args, TileType(args[0].type.dtype, shape))

    def struct_tile_sum(self, op, tile, axis):
        """tile_sum of a struct tile: a left fold of the field-wise add from the first element (fields that are not
        accumulated keep its value, as Warp's)."""
        assert is_struct(tile.type.dtype)
        self.emit_reduce(op, "tile_sum", ("builtin", registry.BUILTINS["struct_add"][0]), tile, axis)
