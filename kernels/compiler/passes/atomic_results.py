"""Analysis for the adjoint pass: does a value returned by an atomic reach the gradient?

The backward replays the forward without its side effects (adjoint_regions.py): atomics do not run again, so the
value an atomic returned in the forward (the old value of its target: a slot taken from a counter, `slot =
wp.atomic_add(counter, 0, 1)`) is not known to the replay; nor could it be recomputed, as the counter has moved
on. When such a value indexes an array of a differentiable type (`output[slot] = x`: the adjoint reads
`output.grad[slot]`), the derived backward would be wrong (real Warp's too: it reads the gradient at a stale slot).
The adjoint pass refuses it (adjoint.py); Warp refuses it in deterministic mode, with the words kernels then uses
(runtime/launch.py). Not covered: such a value used as a factor of a differentiable value (`float(slot) * x`),
whose adjoint would need it too; an atomic's value stored or added (`old[i] = wp.atomic_add(...)`) needs no
primal value in the backward and is differentiated as before.

Expects: typed IR; the functions it calls analysed first (`fn.returns_atomic_result`).
Guarantees: `consumed_atomic(fn)` is the first atomic op whose result reaches the gradient, or None; sets
`fn.returns_atomic_result` when the function returns such a value.
"""

from __future__ import annotations

from .. import ir
from ...typesys import ArrayType, is_differentiable_type

# array accesses whose adjoint reads or writes the gradient array at the operand indices
_GRADIENT_FORMS = ("index_load", "index_store", "index_accumulate", "index_accumulate_neg")


def _overload(op):
    return op.attrs.get("overload") if op.opcode == "call" and "callee" not in op.attrs else None


def _is_atomic_source(op) -> bool:
    ov = _overload(op)
    return (ov is not None and ov.side_effect and bool(op.results)
            and str(op.attrs.get("name", "")).startswith("atomic_"))


def _taint(fn: ir.Function) -> dict:
    """Value -> the atomic op its value comes from, to a fixed point over regions and loop-carried values."""
    tainted: dict = {}
    changed = True
    while changed:
        changed = False
        for op in ir.walk(fn.body):
            source = op if _is_atomic_source(op) else next((tainted[v] for v in op.operands if v in tainted), None)
            callee = op.attrs.get("callee")
            if source is None and callee is not None and getattr(callee, "returns_atomic_result", None) is not None:
                source = op
            if source is None:
                for region in op.regions:
                    source = next((tainted[v] for v in region.yields if v in tainted), None)
                    if source is not None:
                        for arg in region.args:
                            if arg not in tainted:
                                tainted[arg] = source
                                changed = True
                        break
            if source is not None:
                for r in op.results:
                    if r not in tainted:
                        tainted[r] = source
                        changed = True
    return tainted


def consumed_atomic(fn: ir.Function):
    """The atomic op (or the call returning one's result) whose value reaches the gradient in `fn`, or None."""
    tainted = _taint(fn)
    fn.returns_atomic_result = None
    for op in ir.walk(fn.body):
        if op.opcode == "return" and any(v in tainted for v in op.operands) \
                and getattr(fn, "custom_replay_ir", None) is None:
            # (a function with a custom replay, Warp's wp.func_replay, gives its value again in the backward: the
            # slot its forward saved, test_grad_customs.py's reversible_increment)
            fn.returns_atomic_result = next(tainted[v] for v in op.operands if v in tainted)
        ov = _overload(op)
        if ov is not None and ov.props.adjoint in _GRADIENT_FORMS and op.operands:
            array = op.operands[0].type
            # the indices (a store's or accumulation's last operand is the value, which its adjoint does not need)
            indices = op.operands[1:] if ov.props.adjoint == "index_load" else op.operands[1:-1]
            if isinstance(array, ArrayType) and is_differentiable_type(array.dtype):
                hit = next((tainted[v] for v in indices if v in tainted), None)
                if hit is not None:
                    return hit
    return None
