"""Type inference of Warp's `wp.cast(a, dtype)`: the bits of `a` read as a value of type `dtype` (a bit
reinterpretation, not a conversion; both types of one size). The call reaches type inference as the internal
builtin `bit_cast` (kernels.cast's `_wp_builtin_`); native code: kernels/native/builtin.h (bit_cast)."""

from __future__ import annotations

from ... import types as T
from ...builtins import registry
from .. import ir


class BitCastForms:
    """The `wp.cast` special form (mixed into TypeInference)."""

    def builtin_bit_cast(self, op):
        args = self.call_arguments(op, ("a", "dtype"))
        if "a" not in args or "dtype" not in args:
            raise self.error("cast() takes a value and a type: wp.cast(a, dtype)", op, kind=TypeError)
        dtype = T.canonical_type(self.static_value(args["dtype"], op, "the dtype of cast()"))
        source = args["a"].type
        sizes = []
        for t in (source, dtype):
            try:
                sizes.append(T.type_size_in_bytes(t))
            except TypeError:
                raise self.error(f"cast(): {T.type_repr(t)} has no fixed size in memory; cast takes scalar, "
                                 "vector, matrix and struct values", op, kind=TypeError) from None
        if sizes[0] != sizes[1]:
            raise self.error(f"cast(): source and destination must have the same size, {T.type_repr(source)} has "
                             f"{sizes[0]} bytes and {T.type_repr(dtype)} {sizes[1]}", op, kind=TypeError)
        op.results[0].type = dtype
        ov = registry.BUILTINS["bit_cast"][0]
        self.append(ir.Op("call", [args["a"]], list(op.results), {"name": "bit_cast", "overload": ov}, [], op.loc))
