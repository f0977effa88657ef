"""Type inference of Warp's fixed-size arrays (`wp.fixedarray`): `wp.zeros(shape=..., dtype=...)` in kernel code.

The shape must be a compile-time constant (Warp's rule and wording); the result's type carries it
(ArrayType.fixed), so the C++ value is a `wp::fixedarray_t<size, T>` holding its elements (native/fixedarray.h).
"""

from __future__ import annotations

from ... import types as T
from ...builtins import registry
from ...typesys import ArrayType, StaticType
from .. import ir


class FixedArrayForms:
    """The `wp.zeros` special form inside kernels (mixed into TypeInference)."""

    def builtin_fixedarray_zeros(self, op):
        args = self.call_arguments(op, ("shape", "dtype"))
        if "shape" not in args:
            raise self.error("zeros() inside a kernel needs a constant `shape`: wp.zeros(shape=(2, 3), dtype=float)",
                             op)
        shape_arg = args["shape"]
        if not (isinstance(shape_arg.type, StaticType) or (shape_arg.owner is not None
                                                            and shape_arg.owner.opcode == "const")):
            # Warp's wording (a CompileError is a RuntimeError, as Warp's is)
            raise self.error("the `shape` argument must be specified as a constant when zero-initializing an array",
                             op)
        shape = self.static_value(shape_arg, op, "shape")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not 1 <= len(shape) <= 4 or not all(isinstance(n, int) and n > 0 for n in shape):
            raise self.error(f"zeros() inside a kernel: the shape must be 1 to 4 positive ints, got {shape!r}", op,
                             kind=ValueError)
        dtype = T.float32
        if "dtype" in args:
            dtype = T.canonical_type(self.static_value(args["dtype"], op, "dtype"))
        if not (T.is_scalar(dtype) or T.is_composite(dtype) or registry_struct(dtype)):
            raise self.error(f"zeros() inside a kernel: dtype must be a scalar, vector, matrix or struct type, "
                             f"got {dtype!r}", op, kind=TypeError)
        out = ArrayType(dtype, len(shape), fixed=shape)
        dims = [self.typed_const(n, T.int32, op.loc) for n in shape + (0,) * (4 - len(shape))]
        ov = registry.BUILTINS["fixedarray_zeros"][0]
        op.results[0].type = out
        self.append(ir.Op("call", dims, list(op.results), {"name": "fixedarray_zeros", "overload": ov,
                                                            "type_arg": True}, [], op.loc))


def registry_struct(t) -> bool:
    from ...typesys import is_struct

    return is_struct(t)
