"""IR verifier, run between passes in debug mode: every operand is defined before use and typed."""

from __future__ import annotations

from .. import ir


class IRVerifyError(Exception):
    pass


def verify(fn: ir.Function, stage: str = "", typed: bool = True) -> ir.Function:
    _verify_block(fn.body, set(fn.params), stage, typed)
    return fn


def _verify_block(block: ir.Block, defined: set, stage: str, typed: bool):
    defined = set(defined) | set(block.args)
    for op in block.ops:
        for v in op.operands:
            if v not in defined:
                raise IRVerifyError(f"after {stage}: {op.opcode} at {op.loc} uses {v!r} before its definition")
        for region in op.regions:
            _verify_block(region, defined, stage, typed)
        for r in op.results:
            if typed and r.type is None:
                raise IRVerifyError(f"after {stage}: {op.opcode} at {op.loc} leaves {r!r} untyped")
            defined.add(r)
    for v in block.yields:
        if v not in defined:
            raise IRVerifyError(f"after {stage}: a block yields {v!r}, which it cannot see")
