"""Type inference of control flow (part of TypeInference, kernels/compiler/passes/typeinfer.py): conditions, `if`
with the types of branch-local values merged, `for` and `while` loops with their carried values typed (and those no
iteration changes replaced by their initial value)."""

from __future__ import annotations

from .. import ir
from ... import types as T
from ...builtins import registry
from ...typesys import ArrayType, describe
from .clone import substitute


def _plain_array(t) -> bool:
    """A `wp::array_t` value, whose truth in a condition is whether it has memory (Warp's)."""
    return isinstance(t, ArrayType) and t.plain and not t.fixed


class ControlFlowForms:
    """TypeInference's methods for `if`, `for` and `while` (it provides visit_block, append, replace, error,
    convert_weak_to, is_weak and `cur`, the block being filled)."""

    def as_condition(self, v, op):
        if v.type is T.bool_:
            return v
        name = "truthy" if T.is_scalar(v.type) else "array_truthy" if _plain_array(v.type) else None
        if name is not None:
            r = ir.Value(type=T.bool_)
            ov, _ = registry.resolve(name, [v.type])
            self.append(ir.Op("call", [v], [r], {"name": name, "overload": ov}, [], op.loc))
            return r
        raise self.error(f"a {describe(v.type)} cannot be used as a condition", op)

    def op_if(self, op):
        op.operands = [self.as_condition(op.operands[0], op)]
        then_b, else_b = op.regions
        self.visit_block(then_b)
        self.visit_block(else_b)
        keep = []
        for i, r in enumerate(op.results):
            a, b = then_b.yields[i], else_b.yields[i]
            if a is b:  # the same value on both paths (e.g. an array stored into): no merge
                self.replace(r, a)
                continue
            r.type = self.merge_types(a, b, op, r.name, then_b, else_b, i)
            keep.append(i)
        op.results = [op.results[i] for i in keep]
        then_b.yields = [then_b.yields[i] for i in keep]
        else_b.yields = [else_b.yields[i] for i in keep]
        self.append(op)

    def merge_types(self, a, b, op, name, then_b, else_b, i):
        ta, tb = a.type, b.type
        if ta is None and tb is None:
            raise self.error(f"cannot tell the type of '{name}'", op)
        if ta is None:
            a.type = tb
            return tb
        if tb is None:
            b.type = ta
            return ta
        if ta == tb:
            return ta
        # one side a weak literal: convert it to the other side's type inside its branch
        for side, other, blk in ((a, b, then_b), (b, a, else_b)):
            if self.is_weak(side) and T.is_scalar(other.type):
                outer = self.cur
                self.cur = blk
                blk.yields[i] = self.convert_weak_to(side, other.type, op)
                self.cur = outer
                if blk.yields[i].type == other.type:
                    return other.type
        raise self.error(f"'{name}' is {describe(ta)} on one branch and {describe(tb)} on the other", op)

    def op_for(self, op):
        n_bounds = 3
        bounds = op.operands[:n_bounds]
        itype = T.int64 if any(b.type is T.int64 for b in bounds) else T.int32
        for b in bounds:
            # a literal bool (`range(wp.static(True))`) counts as the int it is in Python, as in Warp
            if not T.is_int(b.type) and not (b.type is T.bool_ and self.is_weak(b)):
                raise self.error(f"range() bounds must be integers, got {describe(b.type)}", op)
        op.operands[:n_bounds] = [self.convert_weak_to(b, itype, op) if b.type is not itype else b for b in bounds]
        body = op.regions[0]
        body.args[0].type = itype
        self.loop(op, op.operands[n_bounds:], body.args[1:], [body])

    def op_while(self, op):
        cond_b, body = op.regions
        self.loop(op, op.operands, body.args, [cond_b, body], cond_args=cond_b.args)

    def loop(self, op, inits, args, blocks, cond_args=None):
        # values that are an `undef` slot (a variable first assigned in a loop, read after it) or an enclosing
        # loop's carried copy of one: an inner loop's assignment types them all
        undefined = self.__dict__.setdefault("_undef_carried", set())
        is_undef = [init.type is None and (init.id in undefined or
                                           (init.owner is not None and init.owner.opcode == "undef"))
                    for init in inits]
        for init, a, undef in zip(inits, args, is_undef):
            if init.type is None and not undef:
                raise self.error(f"'{a.name}' may be used before it is assigned", op)
            a.type = init.type  # None for a return slot not typed yet: the body's assignment types it
            if undef:
                undefined.add(a.id)
        if cond_args is not None:
            for init, a in zip(inits, cond_args):
                a.type = init.type
            self.visit_block(blocks[0])
            c = blocks[0].yields[0]
            outer = self.cur
            self.cur = blocks[0]
            blocks[0].yields = [self.as_condition(c, op)]
            self.cur = outer
        body = blocks[-1]
        self.visit_block(body)
        for init, a, y, undef in zip(inits, args, body.yields, is_undef):
            if a.type is None and undef and y is not a:
                a.type = y.type  # first assigned in the loop and read after it: typed by that assignment
            if a.type is None:
                raise self.error(f"cannot tell the type of '{a.name}' carried through this loop", op)
            if init.type is None:
                init.type = a.type  # a return slot, typed by the return inside the loop
        for k, (a, y) in enumerate(zip(args, body.yields)):
            if y.type != a.type:
                outer = self.cur
                self.cur = body
                body.yields[k] = y = self.convert_weak_to(y, a.type, op)
                self.cur = outer
            if y.type != a.type:
                raise self.error(f"'{a.name}' changes type in the loop: {describe(a.type)} before it, "
                                 f"{describe(y.type)} after an iteration; give its initial value that type "
                                 f"(e.g. wp.{describe(y.type)}(...))", op)
        for r, a in zip(op.results, args):
            r.type = a.type
        self.drop_invariant(op)
        self.append(op)

    def drop_invariant(self, op):
        """Carried values that no iteration changes (arrays stored into, unchanged variables) become plain uses
        of their initial value."""
        body = op.regions[-1]
        n_fixed = 3 if op.opcode == "for" else 0
        args = body.args[1:] if op.opcode == "for" else body.args
        inits = op.operands[n_fixed:]
        keep, mapping = [], {}
        for k, (a, i, y) in enumerate(zip(args, inits, body.yields)):
            if y is a or y is i:
                mapping[a] = i
                if op.opcode == "while":
                    mapping[op.regions[0].args[k]] = i
                self.replace(op.results[k], i)
            else:
                keep.append(k)
        if not mapping:
            return
        for region in op.regions:
            substitute(region, mapping)
        carried = op.attrs.get("carried", [])
        brk = op.attrs.get("break_flag")
        op.attrs["carried"] = [carried[k] for k in keep] if carried else carried
        if brk is not None:
            op.attrs["break_flag"] = keep.index(brk)
        op.operands = op.operands[:n_fixed] + [inits[k] for k in keep]
        op.results = [op.results[k] for k in keep]
        new_args = [args[k] for k in keep]
        body.args = ([body.args[0]] if op.opcode == "for" else []) + new_args
        body.yields = [body.yields[k] for k in keep]
        if op.opcode == "while":
            op.regions[0].args = [op.regions[0].args[k] for k in keep]
