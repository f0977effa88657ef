"""IR verifier, run after every pass when `config.verify_ir` is on (and in debug mode).

Checks every op against its schema (ir_ops.SCHEMA: operand and result counts, regions, required and allowed
attributes and their types), the shape of structured regions (an `if` yields one value per result from each branch;
a `for` body takes the index and the carried values and yields those; a `while` condition yields one bool), that
every operand is defined before its use and, in typed IR, that every result is typed and no frontend op is left.
After the adjoint pass, the replay and reverse regions are checked the same way (their operands are values of the
function; the replay defines the same values again).
"""

from __future__ import annotations

from .. import ir
from ..ir_ops import ADJOINT, ANY, FRONTEND, SCHEMA, Opcode


class IRVerifyError(Exception):
    pass


def verify(fn: ir.Function, stage: str = "", typed: bool = True) -> ir.Function:
    where = f"after {stage}" if stage else "IR"
    _verify_block(fn.body, set(fn.params), where, typed, adjoint=False)
    adj = fn.adjoint
    if adj is not None and adj.error is None and not adj.custom:
        if adj.replay is None or adj.reverse is None:
            raise IRVerifyError(f"{where}: the adjoint of '{fn.name}' has no replay or no reverse region")
        defined = set(fn.params) | _all_values(fn.body)
        _verify_block(adj.replay, defined, where, typed, adjoint=True)
        _verify_block(adj.reverse, defined, where, typed, adjoint=True)
    return fn


def _all_values(block: ir.Block) -> set:
    out = set(block.args)
    for op in ir.walk(block):
        out.update(op.results)
        for region in op.regions:
            out.update(region.args)
    return out


def _verify_block(block: ir.Block, defined: set, where: str, typed: bool, adjoint: bool):
    defined = set(defined) | set(block.args)
    for op in block.ops:
        _check_schema(op, where, typed, adjoint)
        for v in op.operands:
            if v not in defined:
                raise IRVerifyError(f"{where}: {op.opcode} at {op.loc} uses {v!r} before its definition")
        for region in op.regions:
            _verify_block(region, defined, where, typed, adjoint)
        for r in op.results:
            if typed and r.type is None:
                raise IRVerifyError(f"{where}: {op.opcode} at {op.loc} leaves {r!r} untyped")
            defined.add(r)
    for v in block.yields:
        if v is not None and v not in defined:
            raise IRVerifyError(f"{where}: a block yields {v!r}, which it cannot see")


def _count_ok(n: int, bounds: tuple) -> bool:
    lo, hi = bounds
    return n >= lo and (hi is None or n <= hi)


def _check_schema(op: ir.Op, where: str, typed: bool, adjoint: bool):
    def fail(what):
        raise IRVerifyError(f"{where}: {op.opcode} at {op.loc}: {what}")

    if not isinstance(op.opcode, Opcode):
        fail("opcode outside the closed set (ir_ops.Opcode)")
    spec = SCHEMA[op.opcode]
    if typed and spec.group == FRONTEND:
        fail("a frontend op left in typed IR (type inference rewrites it)")
    if spec.group == ADJOINT and not adjoint:
        fail("an adjoint op outside a function's adjoint regions")
    if not _count_ok(len(op.operands), spec.operands):
        fail(f"{len(op.operands)} operands, expected {_bounds_text(spec.operands)}")
    if not _count_ok(len(op.results), spec.results):
        fail(f"{len(op.results)} results, expected {_bounds_text(spec.results)}")
    if len(op.regions) != spec.regions:
        fail(f"{len(op.regions)} regions, expected {spec.regions}")
    for k in spec.attrs:
        if k not in op.attrs:
            fail(f"missing attribute '{k}'")
    for k, v in op.attrs.items():
        t = spec.attrs.get(k, spec.optional.get(k))
        if t is None:
            fail(f"attribute '{k}' is not in its schema")
        if t is not ANY and not isinstance(v, t):
            fail(f"attribute '{k}' is {type(v).__name__}, expected {_type_text(t)}")
    if typed and op.opcode == Opcode.CALL:
        if "overload" not in op.attrs and "callee" not in op.attrs:
            fail("a call with neither a builtin overload nor a typed callee")
    _check_regions(op, fail)


def _check_regions(op: ir.Op, fail):
    n = len(op.results)
    if op.opcode == Opcode.IF:
        for b in op.regions:
            if len(b.yields) != n:
                fail(f"a branch yields {len(b.yields)} values for {n} results")
    elif op.opcode == Opcode.FOR:
        body = op.regions[0]
        if len(body.args) != n + 1 or len(body.yields) != n or len(op.operands) != n + 3:
            fail(f"a loop of {n} carried values with {len(op.operands) - 3} initial values, "
                 f"{len(body.args)} body arguments (index + carried) and {len(body.yields)} yields")
    elif op.opcode == Opcode.WHILE:
        cond, body = op.regions
        if len(cond.yields) != 1 or len(body.yields) != n or len(op.operands) != n:
            fail(f"a while loop of {n} carried values: its condition yields {len(cond.yields)} values (1), its "
                 f"body {len(body.yields)}, with {len(op.operands)} initial values")


def _bounds_text(bounds: tuple) -> str:
    lo, hi = bounds
    return f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")


def _type_text(t) -> str:
    return " or ".join(x.__name__ for x in t) if isinstance(t, tuple) else t.__name__
