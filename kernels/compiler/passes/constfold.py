"""Pass: constant folding.

Expects: typed IR. Guarantees: scalar arithmetic, comparisons and logic on constants are replaced by constants;
an `if` whose condition is a constant is replaced by the ops of the branch taken (its yields become the results).
Semantics follow the native code (C integer division and remainder, see scalar_semantics.py; results rounded
to their type).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import ir, scalar_semantics
from ... import types as T
from .clone import substitute

_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "eq": operator.eq, "ne": operator.ne,
         "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
         "logical_and": lambda a, b: bool(a and b), "logical_or": lambda a, b: bool(a or b),
         "logical_not": lambda a: not a, "neg": operator.neg, "pos": operator.pos, "truthy": lambda a: a != 0}


def _const(v: ir.Value):
    """(True, value as a Python number) for a scalar constant: a typed constant (`wp.constant(wp.int8(-128))`)
    holds a numpy-like scalar whose own arithmetic wraps at its width, where the native code promotes first."""
    if v.owner is not None and v.owner.opcode == "const" and (T.is_scalar(v.type)):
        value = v.owner.attrs["value"]
        if v.type is T.bool_:
            return True, bool(value)
        return True, float(value) if T.is_float(v.type) else int(value)
    return False, None


def _fold_value(name, args, t):
    if name in ("div", "mod"):
        if args[1] == 0:
            return None  # left to run time, as Warp does
        if T.is_int(t):
            r = (scalar_semantics.c_div if name == "div" else scalar_semantics.c_mod)(*args)
        else:
            r = args[0] / args[1] if name == "div" else math.fmod(*args)
    elif name in _FOLD:
        r = _FOLD[name](*args)
    else:
        return None
    if t is T.bool_:
        return bool(r)
    if T.is_int(t):
        info = np.iinfo(t._np_)
        return int(r) if info.min <= int(r) <= info.max else None  # overflow: leave it to run time
    if T.is_float(t):
        r = float(t(r)) if t is T.bfloat16 else float(t._np_(r))  # bfloat16: a value rounded to it
        return r if math.isfinite(r) else None
    return None


def fold_block(block: ir.Block, mapping: dict):
    out = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            fold_block(region, mapping)
        if op.opcode == "call" and "overload" in op.attrs and len(op.results) == 1 and not op.attrs["overload"].side_effect:
            consts = [_const(v) for v in op.operands]
            if consts and all(c for c, _ in consts):
                value = _fold_value(op.attrs["name"], [v for _, v in consts], op.results[0].type)
                if value is not None:
                    out.append(ir.Op("const", [], op.results, {"value": value, "weak": False}, [], op.loc))
                    continue
        if op.opcode == "if":
            known, cond = _const(op.operands[0])
            if known:
                taken = op.regions[0] if cond else op.regions[1]
                out.extend(taken.ops)
                for r, y in zip(op.results, taken.yields):
                    mapping[r] = mapping.get(y, y)
                continue
        out.append(op)
    block.ops = out
    block.yields = [mapping.get(v, v) for v in block.yields]


def fold_constants(fn: ir.Function) -> ir.Function:
    mapping: dict = {}
    fold_block(fn.body, mapping)
    substitute(fn.body, mapping)
    return fn
