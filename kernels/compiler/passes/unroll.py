"""Pass: static loop unrolling.

Expects: typed, constant-folded IR. Guarantees: every `for` over a range with constant bounds and at most
`config.max_unroll` iterations (any count for `wp.static(range(...))`), no `break` and no tile values (unless
`wp.static`) is replaced by copies of its
body, the index bound to a constant in each copy, carried values threaded from one copy to the next.
"""

from __future__ import annotations

from ... import config
from .. import ir
from .clone import clone_block_ops, substitute
from ...typesys import TileType


def _const_int(v):
    if v.owner is not None and v.owner.opcode == "const" and isinstance(v.owner.attrs["value"], int):
        return v.owner.attrs["value"]
    return None


def _works_on_tiles(op: ir.Op) -> bool:
    """Loops over tiles stay loops: each copy of the body would hold its own (large) tiles, for no gain."""
    return any(isinstance(r.type, TileType) for o in ir.walk(op.regions[0]) for r in o.results)


def unroll_block(block: ir.Block, mapping: dict):
    out = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            unroll_block(region, mapping)
        if op.opcode == "for" and "break_flag" not in op.attrs and (op.attrs.get("static") or not _works_on_tiles(op)):
            bounds = [_const_int(v) for v in op.operands[:3]]
            if None not in bounds and bounds[2] != 0:
                iters = list(range(*bounds))
                if op.attrs.get("static") or len(iters) <= config.max_unroll:
                    body = op.regions[0]
                    index, *args = body.args
                    carried = list(op.operands[3:])
                    for i in iters:
                        idx = ir.Value(type=index.type, name=index.name)
                        out.append(ir.Op("const", [], [idx], {"value": i, "weak": False}, [], op.loc))
                        local = {index: idx, **dict(zip(args, carried))}
                        out.extend(clone_block_ops(body, local))
                        carried = [local.get(y, mapping.get(y, y)) for y in body.yields]
                    for r, v in zip(op.results, carried):
                        mapping[r] = v
                    continue
        out.append(op)
    block.ops = out
    block.yields = [mapping.get(v, v) for v in block.yields]


def unroll_static_loops(fn: ir.Function) -> ir.Function:
    mapping: dict = {}
    unroll_block(fn.body, mapping)
    substitute(fn.body, mapping)
    return fn
