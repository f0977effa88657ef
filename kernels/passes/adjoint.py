"""Pass: adjoint analysis. Decides what the reverse (backward) body needs, and refuses what it cannot differentiate.

Expects: typed, optimised IR. Guarantees, as attrs on ops:
  - every dynamic `for`/`while` gets attr "recompute": True when the reverse of its body reads a value that depends
    on a loop-carried value. The backward code then restores the carried values of iteration k by replaying
    iterations 0..k-1 from the loop's initial values (O(n^2) replays, exact), instead of reading the stale final
    values, which is what gives wrong gradients for `p = p * x` in a dynamic loop (Warp's behaviour).
  - raises CompileError, naming the builtin and line, when a builtin without a derivative (differentiable=False)
    receives a value that carries a gradient and produces a float result or a side effect. `wp.stop_gradient(x)`
    marks a value as constant for differentiation.
  - raises CompileError when the arguments of `wp.grad(f)(...)` (a gradient computed in the forward code) carry
    a gradient: second derivatives are not derived.
  - raises CompileError when a builtin's argument declared constant (Overload.constant_args) carries a gradient.
  - raises CompileError for an op that type inference marked "refuse_adjoint" (a read-modify-write of an array
    slot, see typeinfer_paths.py), with its message.
  - raises CompileError when an array value whose gradient is needed is chosen by control flow or taken from a
    locally built struct (its gradient array cannot be known).
  - raises CompileError when a component write into an array element (`a[i].x *= s`, a store with attr
    "overwrite") is computed from values of that array read before it by an op whose adjoint needs their primal
    value: the backward replay would read the array after the write and use the new value in their place.
  - raises CompileError (passes/inplace.py) when a kernel reads an array element whose value the reverse needs
    and may write that element afterwards: the replay would read the new value.
"""

from __future__ import annotations

from .. import ir
from ..errors import CompileError
from ..typesys import ARRAY_VIEWS, ArrayType, is_differentiable_type
from .inplace import check_inplace

# builtins whose adjoint does not read the primal values of their operands
_LINEAR = {"add", "sub", "neg", "pos", "copy"}


def _active_type(t) -> bool:
    return is_differentiable_type(t)


def analyze(fn: ir.Function) -> ir.Function:
    active: set = set()
    for p in fn.params:
        if _active_type(p.type) or isinstance(p.type, ArrayType):
            active.add(p)
    _activity(fn.body, active, fn)
    _check_overwrites(fn)
    if fn.kind == "kernel":
        check_inplace(fn)
    _mark_loops(fn.body)
    return fn


# builtins whose adjoint reads no float primal operand: moving components around, array access
_STRUCTURAL = _LINEAR | {"extract", "assign", "struct_get", "struct_set", "load", "store", "atomic_add", "atomic_sub"}


def _check_overwrites(fn: ir.Function):
    """See the module docstring: refuse a component write whose gradient would need the overwritten values."""
    ops = list(ir.walk(fn.body))
    for k, store in enumerate(ops):
        if not (store.opcode == "call" and store.attrs.get("name") == "store" and store.attrs.get("overwrite")):
            continue
        target = store.operands[0]
        if not is_differentiable_type(target.type.dtype):
            continue
        tainted: set = set()
        for op in ops[:k]:
            if op.opcode == "call" and op.attrs.get("name") == "load" and op.operands[0] is target:
                tainted.update(op.results)
                continue
            reads = [v for v in op.operands if v in tainted and _active_type(v.type)]
            if not reads:
                continue
            tainted.update(op.results)
            if op.opcode == "call" and op.attrs.get("name") not in _STRUCTURAL:
                what = op.attrs.get("name") or getattr(op.attrs.get("callee"), "name", "a function call")
                raise CompileError(
                    f"'{what}' uses values read from an array element that a component write on "
                    f"line {store.loc.line} then overwrites; the backward pass would read the new values in their "
                    f"place. Differentiable component writes may only copy, add or subtract such values (a[i].x = v, "
                    f"a[i].x += v): read the element into a local variable, update it, and store it whole",
                    op.loc, fn.name)


def _activity(block: ir.Block, active: set, fn):
    for op in block.ops:
        if op.opcode in ("for", "while"):
            # carried values are active if their initial value or anything in the body makes them so: iterate
            args = op.regions[-1].args[1:] if op.opcode == "for" else op.regions[-1].args
            inits = op.operands[3:] if op.opcode == "for" else op.operands
            for a, i in zip(args, inits):
                if i in active:
                    active.add(a)
            for _ in range(3):
                before = len(active)
                for region in op.regions:
                    if op.opcode == "while":
                        for a, i in zip(region.args, inits):
                            if i in active or a in active:
                                active.add(a)
                    _activity(region, active, fn)
                for a, y in zip(args, op.regions[-1].yields):
                    if y in active:
                        active.add(a)
                if op.opcode == "while":
                    for a in op.regions[0].args:
                        if any(b in active and b.name == a.name for b in args):
                            active.add(a)
                if len(active) == before:
                    break
            for r, a in zip(op.results, args):
                if a in active:
                    active.add(r)
            continue
        for region in op.regions:
            _activity(region, active, fn)
        if op.opcode == "if":
            for k, r in enumerate(op.results):
                if any(b.yields[k] in active for b in op.regions):
                    active.add(r)
            continue
        if op.opcode != "call":
            continue
        name = op.attrs.get("name")
        ov = op.attrs.get("overload")
        if op.attrs.get("refuse_adjoint"):
            raise CompileError(op.attrs["refuse_adjoint"], op.loc, fn.name)
        ins = [v for v in op.operands if v in active]
        if not ins:
            continue
        if name == "stop_gradient":
            continue
        if op.attrs.get("gradient") and any(_active_type(v.type) for v in ins):
            raise CompileError(f"wp.grad({name}) has no gradient itself (second derivatives are not supported), but "
                               f"its argument depends on differentiable inputs; wrap the argument in "
                               f"wp.stop_gradient(...) or launch with enable_backward=False", op.loc, fn.name)
        for i in getattr(ov, "constant_args", ()):
            if op.operands[i] in active and _active_type(op.operands[i].type):
                raise CompileError(f"'{name}' has no gradient with respect to its argument '{ov.arg_names[i]}', "
                                   f"which depends on differentiable inputs; wrap it in wp.stop_gradient(...)",
                                   op.loc, fn.name)
        if ov is not None and not ov.differentiable:
            float_in = [v for v in ins if _active_type(v.type)]
            float_out = any(_active_type(r.type) for r in op.results)
            if float_in and (float_out or ov.side_effect):
                raise CompileError(f"'{name}' has no gradient, but its argument depends on differentiable inputs; "
                                   f"wrap the argument in wp.stop_gradient(...) if no gradient should flow here",
                                   op.loc, fn.name)
            if name.startswith("atomic_") is False and not float_out:
                continue
        for r in op.results:
            if _active_type(r.type) or isinstance(r.type, ArrayType):
                active.add(r)


def _needed_by_reverse(block: ir.Block, out: set):
    """Values whose primal value the reverse of `block` reads."""
    for op in block.ops:
        if op.opcode == "call":
            name = op.attrs.get("name")
            ov = op.attrs.get("overload")
            if name in _LINEAR:
                continue
            if ov is not None and not ov.differentiable:
                continue
            out.update(op.operands)
        elif op.opcode == "if":
            out.add(op.operands[0])
        elif op.opcode == "for":
            out.update(op.operands)
        elif op.opcode == "while":
            out.update(op.operands)
        for region in op.regions:
            _needed_by_reverse(region, out)
            if op.opcode == "while":
                out.update(region.yields)


def _tainted(block: ir.Block, tainted: set):
    """Extend `tainted` with every value computed (in `block`) from a tainted value."""
    for op in block.ops:
        if op.opcode in ("for", "while"):
            body = op.regions[-1]
            args = body.args[1:] if op.opcode == "for" else body.args
            inits = op.operands[3:] if op.opcode == "for" else op.operands
            for a, i in zip(args, inits):
                if i in tainted:
                    tainted.add(a)
            for region in op.regions:
                _tainted(region, tainted)
            if any(v in tainted for v in op.operands):
                tainted.update(op.results)
            continue
        for region in op.regions:
            _tainted(region, tainted)
        if any(v in tainted for v in op.operands) or any(y in tainted for b in op.regions for y in b.yields):
            tainted.update(op.results)


def _mark_loops(block: ir.Block):
    for op in block.ops:
        for region in op.regions:
            _mark_loops(region)
        if op.opcode not in ("for", "while"):
            continue
        body = op.regions[-1]
        carried = body.args[1:] if op.opcode == "for" else body.args
        tainted = set(carried)
        if op.opcode == "while":
            tainted.update(op.regions[0].args)
        _tainted(body, tainted)
        needed: set = set()
        _needed_by_reverse(body, needed)
        op.attrs["recompute"] = bool(needed & tainted)


def _check_struct_root(base: ir.Value, use: ir.Op, fn):
    """An array reached through struct fields has a gradient array only when the struct is a kernel parameter (its
    adjoint struct holds the fields' gradient arrays). A struct made in the kernel (by a builtin such as
    wp.mesh_get, or built locally) has none: refuse rather than drop the gradient."""
    from ..typesys import ARRAY_VIEWS, ArrayType, is_differentiable_type
    t = use.results[0].type if use.results else None
    if isinstance(t, ArrayType) and not is_differentiable_type(t.dtype):
        return  # an array of ints carries no gradient
    while base.owner is not None:
        op = base.owner
        if op.opcode == "call" and op.attrs.get("name") == "struct_get":
            base = op.operands[0]
            continue
        maker = op.attrs.get("name") or op.opcode
        raise CompileError(f"the gradient of array field '{use.attrs['field']}' of a struct made in the kernel "
                           f"(by {maker}) cannot be computed: its gradient array is unknown here; pass the array "
                           "to the kernel as an argument (or a field of a struct argument), or wrap the read in "
                           "wp.stop_gradient(...)", use.loc, fn.name)


def array_adjoint_source(v: ir.Value, fn):
    """How the gradient array of array value `v` is found: ("param", v) or ("field", base, name)."""
    if v.owner is None:
        return ("param", v)
    op = v.owner
    if op.opcode == "call" and op.attrs.get("name") == "struct_get":
        _check_struct_root(op.operands[0], op, fn)
        return ("field", op.operands[0], op.attrs["field"])
    if op.opcode == "call" and op.attrs.get("name") in ARRAY_VIEWS:
        return array_adjoint_source(op.operands[0], fn)
    raise CompileError("the gradient of an array chosen by control flow cannot be computed; "
                       "pass the array directly", op.loc, fn.name)


