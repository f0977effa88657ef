"""Type inference of assignments into parts of values: `setpath` (`a[i].x = v`) and `augpath` (`a[i][1] += v`).

The frontend gives the target as a root value, the index values (each target subexpression evaluated once) and
the steps ("item", n) / ("attr", name). Here the path becomes reads down to the updated part, the update, and the
writes back up; the write into an array is a store. Mixed into TypeInference.

Semantics, as in Warp:
- `+=` / `-=` on an array element, or on a component of one (a vector/matrix/quaternion element reached by
  indices and `.x`-style attributes), is an atomic add of the value placed in an otherwise zero element; its adjoint
  reads the gradient of that component. No element is read.
- `a[i].x = v` reads the element, replaces the part and stores it back as an "overwrite" (typeinfer.op_setitem):
  the store's adjoint takes the element's whole gradient and zeroes it (the old value is gone), `v` gets its
  component's share and the read gives the kept components theirs back.
- Any other update of an array slot (`*=`, an update of a struct field in an array of structs, a user @wp.func
  `add`/`sub` taking the slot's types, which replaces the builtin as in Warp) reads, updates and stores the
  element. Its gradient would need the element's value before the store, so when the element type carries a
  gradient the backward pass of the kernel is refused (attr "refuse_adjoint" on the store, passes/adjoint.py);
  for a component of a vector/matrix element (`a[i].x *= s`) a kernel with a backward is refused when built, as
  Warp refuses it (attr "refuse_build", passes/backward_build.py).
"""

from __future__ import annotations

import numpy as np

from .. import ir
from ... import types as T
from ...typesys import ArrayType, TileType, is_differentiable_type, is_struct

_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}


class PathForms:
    def path_parts(self, op):
        """(root, [(kind, indices or attr name)], value) of a setpath/augpath op."""
        root, *rest = op.operands
        steps, pos = [], 0
        for kind, arg in op.attrs["steps"]:
            if kind == "item":
                steps.append(("item", rest[pos:pos + arg]))
                pos += arg
            else:
                steps.append(("attr", arg))
        return root, steps, rest[pos]

    def read_step(self, base, step, loc):
        kind, arg = step
        if kind == "item":
            get = ir.Op("getitem", [base, *arg], [ir.Value()], {}, [], loc)
            self.op_getitem(get)
        else:
            get = ir.Op("getattr", [base], [ir.Value()], {"attr": arg}, [], loc)
            self.op_getattr(get)
        return self.subst.get(get.results[0], get.results[0])

    def write_step(self, base, step, value, loc, refuse=None, component=False, at_build=False):
        kind, arg = step
        result = ir.Value()
        if kind == "item":
            # component: the value is the element read back with a part replaced (op_setitem marks the store an
            # overwrite: its adjoint takes the element's whole gradient, the read gives back what was kept)
            put = ir.Op("setitem", [base, *arg, value], [result], {"component_update": component}, [], loc)
            self.op_setitem(put)
            if refuse is not None and isinstance(base.type, ArrayType):
                self.cur.ops[-1].attrs["refuse_adjoint"] = refuse
                if at_build:
                    self.cur.ops[-1].attrs["refuse_build"] = True
        else:
            put = ir.Op("setattr", [base, value], [result], {"attr": arg}, [], loc)
            self.op_setattr(put)
        return self.subst.get(result, result)

    def call_value(self, name, args, loc):
        call = ir.Op("call", [], [ir.Value()], {"name": name}, [], loc)
        self.call_builtin(call, name, list(args))
        return self.subst.get(call.results[0], call.results[0])

    def read_path(self, root, steps, loc):
        """Values along the path: [root, part after step 0, ...] (without the last step's part). An array element
        read to write part of it back keeps its gradient: the components it keeps get theirs back from the
        overwriting store's adjoint."""
        vals = [root]
        for step in steps[:-1]:
            vals.append(self.read_step(vals[-1], step, loc))
        return vals

    def write_path(self, vals, steps, new, loc, refuse=None, at_build=False):
        """Write `new` back along the path. A store into an array (a parameter or a view `a[i]` of one, as in
        `a[i][j] = v`) writes its memory: nothing above it changes, so the root is returned as it was."""
        last = len(steps) - 1
        for k, (base, step) in reversed(list(enumerate(zip(vals, steps)))):
            if isinstance(base.type, ArrayType) and isinstance(getattr(new, "type", None), ArrayType):
                return vals[0]  # a view written back into the array it views: its memory already is
            new = self.write_step(base, step, new, loc, refuse, component=k < last, at_build=at_build)
            if k > 0 and isinstance(base.type, ArrayType) and step[0] == "item":
                return vals[0]
        return new

    def op_setpath(self, op):
        root, steps, value = self.path_parts(op)
        vals = self.read_path(root, steps, op.loc)
        self.check_slot_value(vals, steps, value, op)
        self.replace(op.results[0], self.write_path(vals, steps, value, op.loc))

    def op_augpath(self, op):
        root, steps, value = self.path_parts(op)
        name = op.attrs["op"]
        vals = self.read_path(root, steps, op.loc)
        arrays = [k for k, v in enumerate(vals) if isinstance(v.type, ArrayType)]
        if not arrays:  # an update of a local value or a part of one
            if steps[-1][0] == "item":
                self.refuse_tile_view_update(vals[-1], steps[-1][1], op)
            cur = self.read_step(vals[-1], steps[-1], op.loc)
            if name in ("add", "sub") and isinstance(vals[-1].type, TileType) and is_struct(cur.type) \
                    and value.type is cur.type:
                new = self.call_value("struct_" + name, [cur, value], op.loc)  # t[i] += s: field by field
            else:
                new = self.binary(name, cur, value, op)
            self.replace(op.results[0], self.write_path(vals, steps, new, op.loc))
            return
        k = arrays[-1]
        array, index = vals[k], steps[k]
        if index[0] != "item":
            raise self.error(f"cannot update attribute '{index[1]}' of an array", op)
        element_type = array.type.dtype
        user = op.attrs.get("user_op")
        leaf_type = _part_type(element_type, steps[k + 1:])
        value = self.convert_weak_to(value, leaf_type, op) if leaf_type is not None else value
        user = user if user is not None and user.takes_exactly([leaf_type, value.type]) else None
        # Warp 1.19: `a[i] += v` on an array element is its atomic add even where a user `add` takes the types;
        # a user operator replaces it only in updates of a part of the element (`a[i].x += v`)
        direct = k + 1 == len(steps)
        if name in ("add", "sub") and (user is None or direct) and leaf_type is not None \
                and value.type == leaf_type and (direct or T.is_composite(element_type)) \
                and _has_atomic(element_type):
            delta = self.one_hot(element_type, steps[k + 1:], value, op)
            self.call_value("atomic_" + name, [array, *index[1], delta], op.loc)
            self.cur.ops[-1].results = []  # statement form: the old value is not needed
            self.replace(op.results[0], self.write_path(vals[:k], steps[:k], array, op.loc))
            return
        refuse = None
        at_build = not direct and T.is_composite(element_type) and is_differentiable_type(element_type)
        if at_build:  # Warp refuses this one when the kernel is built (passes/backward_build.py), in these words
            refuse = ("Differentiable composite slot augmented assignments with this operator are not supported "
                      "with backward code generation enabled. Write the result to a separate array, or use "
                      "enable_backward=False for forward-only code.")
        elif is_differentiable_type(element_type):
            how = f"the user function '{user.name}'" if user is not None else f"'{_SYMBOL.get(name, name)}='"
            refuse = (f"this update of an array slot with {how} reads and rewrites the element, which has no "
                      f"correct gradient; only += and -= of the builtin operators on array elements and their "
                      f"vector/matrix components are atomic and differentiable (or launch with "
                      f"enable_backward=False)")
        cur = self.read_step(vals[-1], steps[-1], op.loc)
        new = self.call_user_value(user, [cur, value], op) if user is not None else self.binary(name, cur, value, op)
        self.replace(op.results[0], self.write_path(vals, steps, new, op.loc, refuse, at_build))

    def check_slot_value(self, vals, steps, value, op):
        """`a[i].y = v`: a value that is no scalar (or composite) of the slot's type is refused, as Warp refuses
        it: a TypeError, in its words."""
        arrays = [k for k, v in enumerate(vals) if isinstance(v.type, ArrayType)]
        if not arrays or arrays[-1] + 1 >= len(steps):
            return
        k = arrays[-1]
        slot = _part_type(vals[k].type.dtype, steps[k + 1:])
        if slot is None or value.type is None or self.is_weak(value) or value.type == slot:
            return
        if T.is_scalar(slot) == T.is_scalar(value.type):
            return  # scalars of other types convert, as they do elsewhere (or the builtin refuses them)
        raise self.error(f"Composite slot assignment expects value of type {T.warp_type_name(slot)}, got "
                         f"{T.warp_type_name(value.type)}", op, TypeError)

    def binary(self, name, a, b, op):
        call = ir.Op("call", [a, b], [ir.Value()], {"name": name, "inplace": True}, [], op.loc)
        self.op_call(call)
        return self.subst.get(call.results[0], call.results[0])

    def call_user_value(self, func, args, op):
        call = ir.Op("call", list(args), [ir.Value()], {"func": func}, [], op.loc)
        self.call_user(call)
        return call.results[0]

    def one_hot(self, element_type, steps, value, op):
        """An element of `element_type` that is zero except for the part `steps` leads to, which is `value`."""
        if not steps:
            return value
        zero = ir.Op("construct", [], [ir.Value()], {"type": element_type}, [], op.loc)
        self.op_construct(zero)
        base = self.subst.get(zero.results[0], zero.results[0])
        inner = self.one_hot(_part_type(element_type, steps[:1]), steps[1:], value, op)
        return self.write_step(base, steps[0], inner, op.loc)


_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "floordiv": "//", "pow": "**"}


def _has_atomic(element_type) -> bool:
    """Whether += / -= on a slot of this element type is atomic. 8- and 16-bit integers (and their vectors) have
    no atomic form: as in Warp, their update is a plain read, add and store (no gradient: they are integers)."""
    scalar = T.scalar_type(element_type) if T.is_scalar(element_type) or T.is_composite(element_type) else None
    return scalar is None or not (T.is_int(scalar) and np.dtype(scalar._np_).itemsize < 4)


def _part_type(t, steps):
    """The type of the part of a `t` value that `steps` lead to when each step is a component of a vector,
    matrix or quaternion (constant or run-time index, `.x`-style attribute); None for any other path."""
    for kind, arg in steps:
        if not (T.is_vector(t) or T.is_matrix(t) or T.is_quat(t)):
            return None
        if kind == "attr":
            if T.is_matrix(t) or arg not in _COMPONENTS or _COMPONENTS[arg] >= t._shape_[0]:
                return None
            t = t._wp_scalar_type_
        elif len(arg) == 1 and T.is_matrix(t):
            t = T.vector(t._shape_[1], t._wp_scalar_type_)
        elif len(arg) == 2 and T.is_matrix(t) or len(arg) == 1:
            t = t._wp_scalar_type_
        else:
            return None
    return t
