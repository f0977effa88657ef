"""Type inference of `*x` in call arguments (Warp's unpacking): the frontend's `starred` value becomes the elements
of x, and calls and constructors take them in its place.

What unpacks (as in Warp 1.19): a vector's or quaternion's components, a matrix's rows, and those a slice with
compile-time bounds picks from them (Python's slice rules, negative bounds from the end); a 1-d array's elements
only through such a slice, with an explicit upper bound, no negative bound and a positive step, since an array's
length is not known when the kernel is compiled. Each element is an ordinary extract or load, so gradients flow
through unpacked values as through `v[i]` and `arr[i]`.
"""

from __future__ import annotations

from .. import ir
from ... import types as T
from ...typesys import ArrayType, describe

_ONLY = "Starred expressions are only supported for arrays (with slice), vectors, quaternions, and matrices."


class StarredForms:
    """Mixed into TypeInference (uses its error, op_getitem, typed_const, subst)."""

    def op_starred(self, op):
        base = op.operands[0]
        items = []
        for i in self._starred_indices(op, base.type, op.attrs["bounds"]):
            pick = ir.Op("getitem", [base, self.typed_const(i, T.int32, op.loc)], [ir.Value()], {}, [], op.loc)
            self.op_getitem(pick)
            items.append(self.subst.get(pick.results[0], pick.results[0]))
        if not items:
            raise self.error("Starred expression results in empty sequence.", op)
        self.starred_items[op.results[0]] = items

    def expand_starred(self, op):
        """`op`'s operands with each starred value replaced by its elements."""
        out = []
        for v in op.operands:
            out.extend(self.starred_items.get(v, (v,)))
        op.operands = out

    def _starred_indices(self, op, t, bounds) -> range:
        if T.is_composite(t):
            length = t._shape_[0]
            if bounds is None:
                return range(length)
            start, stop, step = bounds
            if step == 0:
                raise self.error("Slice step cannot be zero.", op, ValueError)
            return range(*slice(start, stop, step).indices(length))
        if isinstance(t, ArrayType):
            if bounds is None:
                raise self.error("Starred expressions apply to arrays only if they are sliced with bounds known at "
                                 "compile-time.", op, TypeError)
            if t.ndim != 1:
                raise self.error(f"Starred expressions with slices are only supported for 1D arrays, got {t.ndim}D "
                                 "array.", op, ValueError)
            start, stop, step = bounds
            step = 1 if step is None else step
            if step == 0:
                raise self.error("Slice step cannot be zero.", op, ValueError)
            if step < 0 and (start is None or stop is None):
                raise self.error("Reverse slices require explicit start and stop bounds when the sequence length is "
                                 "not known at compile time (e.g. slicing an array).", op, ValueError)
            if stop is None:
                raise self.error("Starred expression on arrays requires explicit upper bound (e.g., *array[0:3], "
                                 "not *array[0:]).", op, ValueError)
            start = 0 if start is None else start
            if start < 0 or stop < 0:
                raise self.error("Starred expression slice bounds cannot be negative for arrays.", op, ValueError)
            if step < 0:
                raise self.error("Starred expression slice step cannot be negative for arrays.", op, ValueError)
            return range(start, stop, step)
        if bounds is not None:
            raise self.error("Starred expressions with slices are only supported for arrays, vectors, quaternions, "
                             f"and matrices. Got {describe(t)}.", op, TypeError)
        raise self.error(f"{_ONLY} Got {describe(t)}.", op, TypeError)
