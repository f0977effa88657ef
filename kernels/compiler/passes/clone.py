"""IR cloning with value remapping, used by passes that duplicate code (loop unrolling, if inlining)."""

from __future__ import annotations

from .. import ir


def clone_block_ops(block: ir.Block, mapping: dict) -> list:
    """Copies of `block`'s ops with operands remapped through `mapping` (extended with each new result)."""
    out = []
    for op in block.ops:
        out.append(clone_op(op, mapping))
    return out


def clone_op(op: ir.Op, mapping: dict) -> ir.Op:
    results = []
    for r in op.results:
        nr = ir.Value(type=r.type, name=r.name)
        mapping[r] = nr
        results.append(nr)
    regions = [clone_region(b, mapping) for b in op.regions]
    operands = [mapping.get(v, v) for v in op.operands]
    return ir.Op(op.opcode, operands, results, dict(op.attrs), regions, op.loc)


def clone_region(block: ir.Block, mapping: dict) -> ir.Block:
    new = ir.Block()
    for a in block.args:
        na = ir.Value(type=a.type, name=a.name)
        mapping[a] = na
        new.args.append(na)
    new.ops = clone_block_ops(block, mapping)
    new.yields = [mapping.get(v, v) for v in block.yields]
    return new


def substitute(block: ir.Block, mapping: dict):
    """Replace uses of values in `block` (recursively) according to `mapping`, in place."""
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            substitute(region, mapping)
    block.yields = [mapping.get(v, v) for v in block.yields]
