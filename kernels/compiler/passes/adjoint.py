"""Pass: the adjoint. Derives the reverse (backward) body of a function in IR form, or refuses it.

Expects: typed, optimised IR; the functions it calls have been through this pass (they are compiled first).
Guarantees: `fn.adjoint` is an `ir.Adjoint`: the user's (@wp.func_grad), the refusal (`error`, a CompileError that
is raised only when a gradient is asked for: the forward still compiles), or the replay and reverse regions built by
adjoint_regions.py. The refusals and decisions, as attrs on ops:
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
  - raises ConsumedAtomicError (passes/atomic_results.py) when a value returned by an atomic (a counter's slot)
    indexes an array of a differentiable type: atomics are not replayed, the backward cannot know the index.
"""

from __future__ import annotations

from .. import ir
from ...errors import CompileError, ConsumedAtomicError
from ...typesys import ArrayType, is_differentiable_type, is_struct
from .adjoint_regions import build_regions
from .atomic_results import consumed_atomic
from .inplace import check_inplace

# array accesses whose gradient array must be known (atomic_min/max are left out, as they always were)
_GRADIENT_ARRAY_FORMS = ("index_load", "index_store", "index_accumulate", "index_accumulate_neg")


def derive_adjoint(fn: ir.Function) -> ir.Function:
    """The pass: set `fn.adjoint` (see the module docstring)."""
    pure = _pure(fn)
    if getattr(fn, "custom_grad_ir", None) is not None:
        fn.adjoint = ir.Adjoint(custom=True, pure=pure)
        return fn
    try:
        _refuse_fixed_arrays(fn)
        analyze(fn)
        _refuse_consumed_atomics(fn)
        for op in ir.walk(fn.body):
            ov = op.attrs.get("overload")
            if op.opcode == "call" and op.operands and ov is not None and "callee" not in op.attrs \
                    and ov.props.adjoint in _GRADIENT_ARRAY_FORMS:
                array_adjoint_source(op.operands[0], fn)
            callee = op.attrs.get("callee")
            if callee is not None and adjoint_error(callee) is not None:
                raise adjoint_error(callee)
    except CompileError as e:
        # kept until a backward pass needs it, without its traceback: the traceback's frames reach up to the
        # launch that built the kernel and would keep that caller's arrays alive as long as the kernel
        error = e
        while error is not None:
            error.__traceback__ = None
            error = error.__cause__ or error.__context__
        fn.adjoint = ir.Adjoint(error=e, pure=pure)
        return fn
    fn.adjoint = build_regions(fn, pure)
    return fn


def _refuse_consumed_atomics(fn: ir.Function):
    """See atomic_results.py: a value an atomic returned must not reach the gradient."""
    hit = consumed_atomic(fn)
    if hit is None:
        return
    name = hit.attrs.get("name") or getattr(hit.attrs.get("callee"), "name", "a function")
    raise ConsumedAtomicError(
        f"the backward pass cannot be derived: the value returned by {name}() (a slot taken from a counter, or "
        "an old value) indexes an array that carries a gradient, and the backward does not run atomics again, so "
        "it cannot know that index (the counter has moved on). Save the slots the forward took "
        "in an array and differentiate a kernel that reads them, or set enable_backward=False when the kernel "
        "needs no gradient", hit.loc, fn.name)


def adjoint_error(fn: ir.Function):
    """Why `fn` (or a function it calls) has no derived adjoint: a CompileError, or None (also for a custom one)."""
    return None if fn.adjoint is None else fn.adjoint.error


def _active_type(t) -> bool:
    return is_differentiable_type(t)


def _builtin(op):
    """The builtin Overload an op calls, or None (a user function call, or not a call)."""
    if op.opcode != "call" or "callee" in op.attrs:
        return None
    return op.attrs.get("overload")


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


def _check_overwrites(fn: ir.Function):
    """See the module docstring: refuse a component write whose gradient would need the overwritten values."""
    ops = list(ir.walk(fn.body))
    for k, store in enumerate(ops):
        ov = _builtin(store)
        if not (ov is not None and ov.props.array_access == "write" and store.attrs.get("overwrite")):
            continue
        target = store.operands[0]
        if not is_differentiable_type(target.type.dtype):
            continue
        tainted: set = set()
        for op in ops[:k]:
            if _builtin(op) is not None and _builtin(op).props.array_access == "read" and op.operands[0] is target:
                tainted.update(op.results)
                continue
            reads = [v for k, v in enumerate(op.operands) if v in tainted and _active_type(v.type)
                     and k not in _snippet_references(op)]
            if not reads:
                continue
            tainted.update(op.results)
            if op.opcode == "call" and not (_builtin(op) is not None and _builtin(op).props.moves_components):
                what = op.attrs.get("name") or getattr(op.attrs.get("callee"), "name", "a function call")
                raise CompileError(
                    f"'{what}' uses values read from an array element that a component write on "
                    f"line {store.loc.line} then overwrites; the backward pass would read the new values in their "
                    f"place. Differentiable component writes may only copy, add or subtract such values (a[i].x = v, "
                    f"a[i].x += v): read the element into a local variable, update it, and store it whole",
                    op.loc, fn.name)


def _snippet_references(op) -> tuple:
    """Positions of a call's wp.ref[T] arguments whose value before the call its adjoint does not read: those of
    a C++ snippet (native_snippet.py; its adjoint sees the value after the call)."""
    native = getattr(op.attrs.get("callee"), "native", None)
    return native.references if native is not None else ()


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
        if ov is not None and "callee" not in op.attrs and ov.props.stops_gradient:
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
            if ov.props.array_access != "accumulate" and not float_out:
                continue
        for r in op.results:
            if _active_type(r.type) or isinstance(r.type, ArrayType):
                active.add(r)


def _needed_by_reverse(block: ir.Block, out: set):
    """Values whose primal value the reverse of `block` reads."""
    for op in block.ops:
        if op.opcode == "call":
            ov = op.attrs.get("overload")
            if _builtin(op) is not None and ov.props.linear:
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
    t = use.results[0].type if use.results else None
    if isinstance(t, ArrayType) and not is_differentiable_type(t.dtype):
        return  # an array of ints carries no gradient
    while base.owner is not None:
        op = base.owner
        if _builtin(op) is not None and _builtin(op).props.forward == "field_get":
            base = op.operands[0]
            continue
        maker = op.attrs.get("name") or op.opcode
        origin = "an element of an array of structs" if maker in ("load", "index_load") else \
            f"a struct made in the kernel (by {maker})"
        error = CompileError(f"the gradient of array field '{use.attrs['field']}' of {origin} cannot be computed: "
                             "its gradient array is unknown here (kernels keeps the gradient arrays of a struct "
                             "argument beside it, not inside each array); pass the array to the kernel as an "
                             "argument (or a field of a struct argument), or wrap the read in "
                             "wp.stop_gradient(...)", use.loc, fn.name)
        # a write into such an array is invisible to the Tape (the struct's array has no gradient of its own):
        # backward must raise this even when no array the kernel writes visibly carries a gradient
        error.untracked_writes = True
        raise error


def _refuse_fixed_arrays(fn: ir.Function) -> None:
    """A fixed-size array (wp.zeros(...) in kernel code, Warp's wp.fixedarray) has no backward pass: its elements
    live on the thread's stack, so the replay would see them as left at the end of the forward pass (stores are
    not replayed) and their gradients would need a second stack array carried through every call. Refused with
    the line that makes one, raised only when the adjoint is needed (Warp gives no gradient through one)."""
    for op in ir.walk(fn.body):
        if any(isinstance(getattr(r, "type", None), ArrayType) and r.type.fixed for r in op.results):
            raise CompileError("the backward pass of a function with a fixed-size array (wp.zeros(...) in a kernel "
                               "or function, Warp's wp.fixedarray) is not supported: launch it outside a Tape, or "
                               "pass an array argument instead", op.loc, fn.name)


def array_adjoint_source(v: ir.Value, fn):
    """How the gradient array of array value `v` is found: ("param", v) or ("field", base, name)."""
    if v.owner is None:
        return ("param", v)
    op = v.owner
    ov = _builtin(op)
    if ov is not None and ov.props.forward == "field_get":
        _check_struct_root(op.operands[0], op, fn)
        return ("field", op.operands[0], op.attrs["field"])
    if ov is not None and ov.props.array_view:
        return array_adjoint_source(op.operands[0], fn)
    raise CompileError("the gradient of an array chosen by control flow cannot be computed; "
                       "pass the array directly", op.loc, fn.name)




def _pure(fn: ir.Function) -> bool:
    """A user function that touches no array, has no side effect and no custom adjoint or replay, and calls only
    such functions (they passed this pass before): its adjoint adds nothing when every result adjoint is zero."""
    if getattr(fn, "custom_grad_ir", None) is not None or getattr(fn, "custom_replay_ir", None) is not None:
        return False
    if any(isinstance(p.type, ArrayType) or is_struct(p.type) for p in fn.params):
        return False
    for op in ir.walk(fn.body):
        ov = op.attrs.get("overload")
        callee = op.attrs.get("callee")
        if ov is not None and (ov.side_effect or ov.props.array_access):
            return False
        if callee is not None and not (callee.adjoint is not None and callee.adjoint.pure):
            return False
        if any(isinstance(v.type, ArrayType) for v in op.results):
            return False
    return True
