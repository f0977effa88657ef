"""Field-wise arithmetic on structs, used only on the elements of struct tiles (Warp 1.19's `t + u`, `t - u` and
tile_sum of struct tiles); not names a kernel can call. Type inference (typeinfer_tiles_struct) picks them when a
tile's dtype is a struct. Native code: the `add`, `sub` and their adjoints that render_module writes next to each
struct (fields of types without an atomic add, and arrays, keep the left operand's value, as Warp's)."""

from __future__ import annotations

from .registry import AnyType, add_builtin, declare_properties

_S = AnyType("S")
add_builtin("struct_add", (_S, _S), "S", native="add", group="tile", doc="a + b, field by field")
add_builtin("struct_sub", (_S, _S), "S", native="sub", group="tile", doc="a - b, field by field")
for _name in ("struct_add", "struct_sub"):
    declare_properties(_name, exposed=False)
