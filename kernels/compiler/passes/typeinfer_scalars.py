"""Type inference, scalar comparisons: operands of two scalar types compare as Warp's C operators compare them.

Mixed into `typeinfer.TypeInference`. Warp emits `a < b` as C source, so an int32 compares with a float32 as a
float, an int32 with a uint32 as unsigned, and a Python literal takes part as the int32 or float32 it is in Warp
(`d < 0.1` with a float64 `d` compares with float32(0.1)). Both operands are converted to that common type
(scalar_semantics.comparison_type) before the builtin is resolved.
"""

from __future__ import annotations

import numpy as np

from .. import ir, scalar_semantics
from ... import types as T
from ...builtins import registry

_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


class ScalarForms:
    """Comparison builtins for `TypeInference` (uses its `call_builtin`, `is_weak`, `typed_const`, `append`)."""

    def compare(self, op):
        args = list(op.operands)
        if self.compares_as_c(args, op):
            args = [self.literal_as_warp_type(a, op) for a in args]
            common = scalar_semantics.comparison_type(args[0].type, args[1].type)
            args = [self.scalar_converted(a, common, op) for a in args]
        self.call_builtin(op, op.attrs["name"], args)

    def compares_as_c(self, args, op) -> bool:
        """Two scalars of different types, a literal, or bools (which C compares as ints)."""
        if len(args) != 2 or op.attrs.get("kwargs") or not all(T.is_scalar(a.type) for a in args):
            return False
        return args[0].type is not args[1].type or args[0].type is T.bool_ or any(self.is_weak(a) for a in args)

    builtin_eq = builtin_ne = builtin_lt = builtin_le = builtin_gt = builtin_ge = compare

    def literal_as_warp_type(self, v, op):
        """A Python literal as the typed constant it is in Warp: an int32 (int64 when it does not fit) or a
        float32."""
        if not self.is_weak(v):
            return v
        value = v.owner.attrs["value"]
        if isinstance(value, float) or T.is_float(v.type):
            return self.typed_const(float(np.float32(value)), T.float32, op.loc)
        t = T.int32 if scalar_semantics.INT32_MIN <= int(value) <= scalar_semantics.INT32_MAX else T.int64
        return self.typed_const(int(value), t, op.loc)

    def scalar_converted(self, v, t, op):
        """`v` converted to scalar type `t` as C converts (a constant is converted here)."""
        if v.type is t:
            return v
        if v.owner is not None and v.owner.opcode == "const":
            value = v.owner.attrs["value"]
            if T.is_float(t):
                value = float(value)
            elif T.is_int(t):
                info = np.iinfo(t._np_)
                value = scalar_semantics.wrap_int(int(value), info.bits, info.min < 0)
            return self.typed_const(value, t, op.loc)
        r = ir.Value(type=t)
        self.append(ir.Op("call", [v], [r], {"name": "cast", "overload": registry.BUILTINS["cast"][0], "rtype": t},
                          [], op.loc))
        return r
