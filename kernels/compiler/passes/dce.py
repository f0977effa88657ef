"""Pass: dead code elimination.

Expects: typed IR. Guarantees: ops whose results are unused and that have no side effect (array stores, atomics,
printing, calls of user functions that have side effects, control flow containing any of these) are removed.
"""

from __future__ import annotations

from .. import ir


def _has_side_effect(op: ir.Op) -> bool:
    if op.opcode in ("return", "adj_param_set"):
        return True
    ov = op.attrs.get("overload")
    if ov is not None and ov.side_effect:
        return True
    callee = op.attrs.get("callee")
    if callee is not None and callee_has_side_effects(callee):
        return True
    return any(_has_side_effect(o) for region in op.regions for o in region.ops)


def callee_has_side_effects(fn: ir.Function) -> bool:
    cached = getattr(fn, "_side_effects", None)
    if cached is None:
        cached = any(_has_side_effect(op) for op in fn.body.ops if op.opcode != "return")
        fn._side_effects = cached
    return cached


def _used_values(block: ir.Block, used: set):
    used.update(block.yields)
    for op in block.ops:
        used.update(op.operands)
        for region in op.regions:
            _used_values(region, used)


def _sweep(block: ir.Block, used: set) -> bool:
    changed = False
    keep = []
    for op in block.ops:
        for region in op.regions:
            changed |= _sweep(region, used)
        live = any(r in used for r in op.results) or _has_side_effect(op)
        if live:
            keep.append(op)
        else:
            changed = True
    block.ops = keep
    return changed


def eliminate_dead_code(fn: ir.Function) -> ir.Function:
    while True:
        used: set = set()
        _used_values(fn.body, used)
        if not _sweep(fn.body, used):
            return fn
