"""Pass: common subexpression elimination.

Expects: typed IR. Guarantees: a pure builtin call (no side effect, no in-place argument) whose name, overload,
attributes and operands equal those of an earlier call that dominates it is replaced by that call's results.
Structured control flow makes dominance simple: an op dominates the rest of its block and everything nested in it.
Array reads count as pure only for arrays the function never writes (stores, atomics, tile writes), so a read
after a write is never merged with the read before it. This halves the gradient atomics of kernels that read the
same element twice.
"""

from __future__ import annotations

from .. import ir
from .clone import substitute

_KEY_ATTRS = ("name", "field", "ndim", "type_arg")


# ops whose array result reaches the memory of their first operand (a struct's array member, a view)
_DERIVED = ("struct_get", "view", "slice_view", "index_view")


def _roots(block: ir.Block):
    """A function mapping a value to the value its memory is reached from: through struct member reads and array
    views back to a parameter, a struct value or an array read from elsewhere. Two reads of `s.a` are distinct
    values until CSE merges them, and a view writes its parent's memory, so writes are tracked by root."""
    source = {}
    for op in ir.walk(block):
        if op.opcode == "call" and "callee" not in op.attrs and op.attrs.get("name") in _DERIVED and op.operands:
            for r in op.results:
                source[r] = op.operands[0]

    def root(v):
        while v in source:
            v = source[v]
        return v
    return root


def _written_arrays(block: ir.Block, root) -> set:
    """The roots (see _roots) of every array the function writes."""
    out = set()
    for op in ir.walk(block):
        ov = op.attrs.get("overload")
        if op.opcode == "call" and ov is not None and ov.side_effect and op.operands:
            out.add(root(op.operands[0]))
        if "callee" in op.attrs:
            out.update(root(v) for v in op.operands)  # a user function may write any array it is given
    return out


def _key(op: ir.Op, written: set, root):
    if op.opcode == "const":
        value = op.attrs["value"]
        try:
            hash(value)
        except TypeError:
            return None
        return ("const", type(value), value, op.results[0].type)
    if op.opcode != "call" or "overload" not in op.attrs or "callee" in op.attrs or "elem" in op.attrs:
        return None
    ov = op.attrs["overload"]
    if ov.side_effect or ov.mutates_first or op.attrs.get("mutates") is not None or len(op.results) != 1:
        return None
    if op.attrs.get("name") in ("load", "tid") and (op.attrs.get("name") == "tid"
                                                    or root(op.operands[0]) in written):
        return None  # tid has per-op attributes; loads of written arrays may see different values
    attrs = tuple(op.attrs.get(a) for a in _KEY_ATTRS)
    return (id(ov), attrs, tuple(op.operands), op.results[0].type)


def _cse_block(block: ir.Block, seen: dict, mapping: dict, written: set, root):
    keep = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            _cse_block(region, dict(seen), mapping, written, root)
        key = _key(op, written, root)
        if key is not None:
            earlier = seen.get(key)
            if earlier is not None:
                mapping[op.results[0]] = earlier
                continue
            seen[key] = op.results[0]
        keep.append(op)
    block.ops = keep
    block.yields = [mapping.get(v, v) for v in block.yields]


def eliminate_common_subexpressions(fn: ir.Function) -> ir.Function:
    mapping: dict = {}
    root = _roots(fn.body)
    _cse_block(fn.body, {}, mapping, _written_arrays(fn.body, root), root)
    substitute(fn.body, mapping)
    return fn
