"""Type inference of subscripts with slices: `v[1:]`, `m[:2, 1]`, `q[::-1]`, `a[3:5, ::2]`. Mixed into
TypeInference.

Semantics, as in Warp:
- A vector, quaternion or matrix sliced with compile-time bounds gives a new vector (a quaternion's slice is a
  vector) or matrix of the selected components; Python's slice rules (negative bounds count from the end, bounds
  are clamped, any non-zero step). A matrix takes one key per dimension (`m[1:]` selects rows); an integer key
  drops its dimension. The read is the selected `extract`s and one construction, the write (`v[1:] = w`,
  `v[::2] += w`) an `assign` of each selected component, so their gradients are those of the components.
- An array sliced inside a kernel gives a view sharing its memory (bounds may be run-time ints; a negative integer
  key counts from the end of its dimension). The view's gradient array is the same view of the parent's gradient
  (render_adjoint replays it), so loads and stores through it have their usual gradients.
"""

from __future__ import annotations

from .. import ir
from ... import types as T
from ...errors import CompileTypeError, CompileValueError
from ...typesys import ArrayType, SliceType, TileType, describe


def is_slice(v: ir.Value) -> bool:
    return isinstance(v.type, SliceType)


def slice_bounds(v: ir.Value):
    """The (start, stop, step) values of a `slice` op's result, None for those not written."""
    op = v.owner
    given = iter(op.operands)
    return tuple(next(given) if present else None for present in op.attrs["parts"])


def const_slice_indices(v: ir.Value, length: int, error) -> list:
    """The indices `start:stop:step` selects from a sequence of `length` (Python's slice rules). Bounds must be
    compile-time integers; `error(message, kind)` makes the exception."""
    values = []
    for b in slice_bounds(v):
        if b is None:
            values.append(None)
            continue
        owner = b.owner
        if owner is None or owner.opcode != "const":
            raise error("Slice component must be a compile-time constant.", CompileValueError)
        c = owner.attrs["value"]
        if isinstance(c, bool) or not isinstance(c, int):
            raise error("Slice component must be an integer.", CompileTypeError)
        values.append(c)
    if values[2] == 0:
        raise error("Slice step cannot be zero.", CompileValueError)
    return list(range(*slice(*values).indices(length)))


def sliced_type(t, keys, error):
    """The type of `t[keys]` for a vector/quaternion/matrix `t` and keys that include a slice, with the selected
    positions: (type, [index tuples], selection shape). Integer keys are values (run-time or constant)."""
    scalar = t._wp_scalar_type_
    if T.is_matrix(t):
        if len(keys) > 2:
            raise error(f"a matrix takes at most 2 indices, got {len(keys)}", CompileValueError)
        keys = list(keys) + [None] * (2 - len(keys))  # m[1:] selects whole rows
        axes = []
        for key, length in zip(keys, t._shape_):
            if key is None:
                axes.append((list(range(length)), True))
            elif is_slice(key):
                axes.append((const_slice_indices(key, length, error), True))
            else:
                axes.append(([key], False))
        (rows, rows_kept), (cols, cols_kept) = axes
        positions = [(r, c) for r in rows for c in cols]
        if rows_kept and cols_kept:
            # an empty selection is a 0x0 matrix, as in Warp
            shape = (len(rows), len(cols)) if rows and cols else (0, 0)
            return T.matrix(shape, scalar), positions, shape
        n = len(rows) if rows_kept else len(cols)
        return T.vector(n, scalar), positions, (n,)
    if len(keys) != 1:
        raise error(f"a {describe(t)} takes one index, got {len(keys)}", CompileValueError)
    picked = const_slice_indices(keys[0], t._shape_[0], error)
    return T.vector(len(picked), scalar), [(k,) for k in picked], (len(picked),)


class SliceForms:
    def op_slice(self, op):
        # not kept: the subscript that uses it reads its bounds from this op (slice_bounds)
        for b in op.operands:
            if not T.is_int(b.type) and not self.is_weak(b):
                raise self.error(f"slice bounds must be integers, got {describe(b.type)}", op, TypeError)
        op.results[0].type = SliceType()

    def slice_error(self, op):
        return lambda message, kind: self.error(message, op, kind)

    def index_value(self, k, loc):
        return k if isinstance(k, ir.Value) else self.typed_const(k, T.int32, loc)

    def getitem_sliced(self, op, base, keys):
        t = base.type
        if isinstance(t, ArrayType):
            self.replace(op.results[0], self.array_slice(base, keys, op))
            return
        if isinstance(t, TileType):
            return self.tile_getitem(op, base, keys)
        if not T.is_composite(t) or T.is_transform(t):
            raise self.error(f"a {describe(t)} cannot be sliced inside a kernel", op)
        for k in keys:
            if not is_slice(k) and not T.is_int(k.type):
                raise self.error(f"indices must be integers, got {describe(k.type)}", op)
        rtype, positions, _ = sliced_type(t, keys, self.slice_error(op))
        parts = [self.call_value("extract", [base, *(self.index_value(i, op.loc) for i in p)], op.loc)
                 for p in positions]
        made = ir.Op("construct", parts, [ir.Value()], {"type": rtype}, [], op.loc)
        self.op_construct(made)
        self.replace(op.results[0], self.subst.get(made.results[0], made.results[0]))

    def setitem_sliced(self, op, base, keys, value):
        t = base.type
        if isinstance(t, ArrayType):
            raise self.error("cannot assign to a slice of an array inside a kernel; write its elements", op)
        if isinstance(t, TileType):
            return self.tile_setitem(op, base, keys, value)
        if not T.is_composite(t) or T.is_transform(t):
            raise self.error(f"a {describe(t)} cannot be sliced inside a kernel", op)
        rtype, positions, shape = sliced_type(t, keys, self.slice_error(op))
        self.check_slice_value(t, rtype, shape, value, op)
        for k, p in enumerate(positions):
            src = (k,) if len(shape) == 1 else divmod(k, shape[1])
            part = self.call_value("extract", [value, *(self.typed_const(i, T.int32, op.loc) for i in src)], op.loc)
            base = self.call_value("assign", [base, *(self.index_value(i, op.loc) for i in p), part], op.loc)
        self.replace(op.results[0], base)

    def check_slice_value(self, t, rtype, shape, value, op):
        """The value written to a slice must be a vector/matrix of the selection's shape and scalar type (Warp's
        messages: no broadcasting, no conversion)."""
        scalar = T.type_repr(t._wp_scalar_type_)
        vt = value.type
        if len(shape) == 1:
            if not T.is_vector(vt):
                raise self.error(f"The provided value is expected to be a vector of length {shape[0]}, "
                                 f"with dtype {scalar}.", op, ValueError)
            if vt._wp_scalar_type_ != t._wp_scalar_type_:
                raise self.error(f"The provided vector is expected to be of length {shape[0]} with dtype {scalar}.",
                                 op, ValueError)
            if vt._shape_[0] != shape[0]:
                raise self.error(f"The length of the provided vector ({vt._shape_[0]}) isn't compatible with the "
                                 f"given slice (expected {shape[0]}).", op, ValueError)
            return
        if not T.is_matrix(vt):
            raise self.error(f"The provided value is expected to be a matrix of shape {shape}, with dtype {scalar}.",
                             op, ValueError)
        if vt._wp_scalar_type_ != t._wp_scalar_type_:
            raise self.error(f"The provided matrix is expected to be of shape {shape} with dtype {scalar}.",
                             op, ValueError)
        if tuple(vt._shape_) != tuple(shape):
            raise self.error(f"The shape of the provided matrix ({tuple(vt._shape_)}) isn't compatible with the "
                             f"given slice (expected {tuple(shape)}).", op, ValueError)

    def array_slice(self, base, keys, op):
        """`a[keys]` with at least one slice: slice_view for each sliced dimension, then index_view for each
        integer key, last dimension first so that the dimension numbers stay valid."""
        t = base.type
        if len(keys) > t.ndim:
            raise self.error(f"Incorrect number of indices specified for array indexing, got {len(keys)} "
                             f"indices for a {t.ndim} dimensional array.", op)
        view = base
        for d, key in enumerate(keys):
            if not is_slice(key):
                continue
            bounds = slice_bounds(key)
            step = bounds[2]
            if step is not None and step.owner is not None and step.owner.opcode == "const" \
                    and step.owner.attrs["value"] == 0:
                raise self.error("Slice step cannot be zero.", op, ValueError)
            given = sum(1 << k for k, b in enumerate(bounds) if b is not None)
            args = [self.convert_weak_to(b, T.int64, op) if b is not None else self.typed_const(0, T.int64, op.loc)
                    for b in bounds]
            if bounds[2] is None:
                args[2] = self.typed_const(1, T.int64, op.loc)
            view = self.call_value("slice_view", [view, self.typed_const(d, T.int32, op.loc), *args,
                                                  self.typed_const(given, T.int32, op.loc)], op.loc)
        for d in reversed(range(len(keys))):
            key = keys[d]
            if is_slice(key):
                continue
            if not T.is_int(key.type):
                raise self.error(f"indices must be integers, got {describe(key.type)}", op)
            view = self.call_value("index_view", [view, self.typed_const(d, T.int32, op.loc), key], op.loc)
        return view
