"""The closed set of IR ops: one enum member per opcode and the schema (operands, attributes, regions, results)
that `passes/verify.py` checks every op against.

Three groups of ops:
  - frontend ops, rewritten away by type inference (`getattr`, `getitem`, `setitem`, `setattr`, `setpath`,
    `augpath`, `slice`, `construct`): they may not appear in typed IR;
  - typed ops, which the renderer prints (`const`, `undef`, `call`, `tuple`, `shape_of`, `if`, `for`, `while`,
    `return`, `adj_param_get`, `adj_param_set`);
  - adjoint ops, made by the adjoint pass (passes/adjoint.py) in a function's replay and reverse regions
    (`adj_*`, `count_iteration`, `store_carried`); see `ir.Adjoint`.

An attribute type is a Python type, a tuple of types, or `ANY` (any value: a constant, a type, a builtin overload,
a function).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Opcode(enum.StrEnum):
    """Every opcode of the IR. A StrEnum: `op.opcode == "call"` holds for `Opcode.CALL`."""

    # frontend ops (rewritten by type inference)
    GETATTR = "getattr"
    GETITEM = "getitem"
    SETITEM = "setitem"
    SETATTR = "setattr"
    SETPATH = "setpath"
    AUGPATH = "augpath"
    SLICE = "slice"
    CONSTRUCT = "construct"
    STARRED = "starred"  # `*x` in a call's arguments (typeinfer_starred.py)
    # typed ops
    CONST = "const"
    UNDEF = "undef"
    CALL = "call"
    TUPLE = "tuple"
    SHAPE_OF = "shape_of"
    IF = "if"
    FOR = "for"
    WHILE = "while"
    RETURN = "return"
    ADJ_PARAM_GET = "adj_param_get"  # in a @wp.func_grad body: the adjoint of a parameter (frontend_adjoint.py)
    ADJ_PARAM_SET = "adj_param_set"
    # adjoint ops (the adjoint pass's replay and reverse regions)
    ADJ_FIELD = "adj_field"
    ADJ_VIEW = "adj_view"
    COUNT_ITERATION = "count_iteration"
    STORE_CARRIED = "store_carried"
    ADJ_CALL = "adj_call"
    ADJ_ADD = "adj_add"
    ADJ_SET = "adj_set"
    ADJ_ZERO = "adj_zero"
    ADJ_IF = "adj_if"
    ADJ_LOOP = "adj_loop"
    ADJ_RETURN = "adj_return"


class _Any:
    def __repr__(self):
        return "ANY"


ANY = _Any()

FRONTEND, TYPED, ADJOINT = "frontend", "typed", "adjoint"

#: How the reverse of a builtin or user call is written (attr "form" of adj_call); chosen by the adjoint pass from
#: the builtin table's `adjoint` property (kernels/builtins/registry.Properties).
ADJOINT_FORMS = ("native", "cast", "callee", "index_load", "index_store", "index_overwrite", "index_accumulate",
                 "index_accumulate_neg", "index_minmax", "tile_map", "tile_reduce", "field_get", "field_set")


@dataclass(frozen=True)
class OpSpec:
    """What one opcode takes. `operands`/`results`: (min, max) counts, max None for any number. `attrs`: the
    attributes it must have; `optional`: those it may have. `regions`: how many nested blocks."""

    group: str
    operands: tuple = (0, None)
    results: tuple = (0, None)
    regions: int = 0
    attrs: dict = field(default_factory=dict)
    optional: dict = field(default_factory=dict)


_CALL_ATTRS = {
    "name": str,  # the builtin's or function's name
    "overload": ANY,  # the builtin Overload (after type inference)
    "callee": ANY,  # the typed ir.Function called (after type inference)
    "func": ANY,  # the user Func called (before type inference)
    "user_op": ANY,  # an operator's @wp.func of the same name, called instead where it takes the operand types
    "kwargs": list, "nresults": (int, type(None)), "caller": str,
    "inplace": bool,  # from an augmented assignment (`t &= v`): refusals name the in-place form, as Warp's do
    "gradient": bool, "seed": ANY,  # wp.grad(f)(...): f's adjoint seeded with one
    "mutates": tuple,  # argument positions the native function updates in place; results follow the outputs
    "matmul": bool, "type_arg": bool, "rtype": ANY, "ndim": int, "field": str, "axis": int, "elem": tuple,
    "lines": tuple,
    "storage": str,  # the storage a tile constructor names (shown by print(t), as Warp's label)  # a reduction along an axis of a 3-d/4-d tile seen as (outer, axis extent, inner)
    "overwrite": bool,  # a component write into an array element (a[i].x = v)
    "refuse_adjoint": str,  # the adjoint pass refuses this op with the message
    "refuse_build": bool,  # ... and a kernel with a backward is refused when built (passes/backward_build.py)
    "references": tuple,  # argument positions of a user function's wp.ref[T] parameters (frontend_reference.py)
    "addresses": tuple,  # argument positions given as wp.address_of(x) (frontend_reference.py)
    "reference_update": str,  # `x <op>= v` of wp.ref[T] parameter x: the result must be a T (type inference)
}
_LOOP_ATTRS = {"carried": list, "static": bool, "break_flag": int, "recompute": bool, "counter": int}

SCHEMA: dict = {
    Opcode.GETATTR: OpSpec(FRONTEND, (1, 1), (1, 1), attrs={"attr": str}, optional={"base": str}),
    Opcode.GETITEM: OpSpec(FRONTEND, (1, None), (1, 1)),
    Opcode.SETITEM: OpSpec(FRONTEND, (2, None), (0, 1)),
    Opcode.SETATTR: OpSpec(FRONTEND, (2, 2), (1, 1), attrs={"attr": str}),
    Opcode.SETPATH: OpSpec(FRONTEND, (2, None), (1, 1), attrs={"steps": ANY}),
    Opcode.AUGPATH: OpSpec(FRONTEND, (2, None), (1, 1), attrs={"steps": ANY, "op": str},
                           optional={"user_op": ANY}),
    Opcode.SLICE: OpSpec(FRONTEND, (0, None), (1, 1), attrs={"parts": ANY}),
    Opcode.STARRED: OpSpec(FRONTEND, (1, 1), (1, 1), attrs={"bounds": ANY}),
    Opcode.CONSTRUCT: OpSpec(FRONTEND, (0, None), (0, None), attrs={"type": ANY},
                             optional={"kwargs": list, "nresults": (int, type(None)), "component_update": ANY,
                                       "type_of": tuple}),  # the type: the first operand's, then these attributes
    Opcode.CONST: OpSpec(TYPED, (0, 0), (1, 1), attrs={"value": ANY}, optional={"weak": bool}),
    Opcode.UNDEF: OpSpec(TYPED, (0, 0), (1, 1)),
    Opcode.CALL: OpSpec(TYPED, optional=_CALL_ATTRS),
    Opcode.TUPLE: OpSpec(TYPED, (0, None), (1, 1)),
    Opcode.SHAPE_OF: OpSpec(TYPED, (1, 1), (1, 1)),
    Opcode.IF: OpSpec(TYPED, (1, 1), (0, None), regions=2, optional={"has_else": bool}),  # has_else: in a replay
    Opcode.FOR: OpSpec(TYPED, (3, None), (0, None), regions=1, optional=_LOOP_ATTRS),
    Opcode.WHILE: OpSpec(TYPED, (0, None), (0, None), regions=2, optional=_LOOP_ATTRS),
    Opcode.RETURN: OpSpec(TYPED, (0, None), (0, 0)),
    Opcode.ADJ_PARAM_GET: OpSpec(TYPED, (0, 0), (1, 1), attrs={"param": int}),
    Opcode.ADJ_PARAM_SET: OpSpec(TYPED, (1, 1), (0, 0), attrs={"param": int}),
    # adjoint ops: operands are values of the primal function; `of` is the primal op they derive from
    Opcode.ADJ_FIELD: OpSpec(ADJOINT, (2, 2), (0, 0), attrs={"field": str}),  # adj(r) = adj(struct).field
    Opcode.ADJ_VIEW: OpSpec(ADJOINT, (2, None), (0, 0), attrs={"view": str}),  # adj(r) = view(adj(a), idx...)
    Opcode.COUNT_ITERATION: OpSpec(ADJOINT, (0, 0), (0, 0), attrs={"counter": int}),
    Opcode.STORE_CARRIED: OpSpec(ADJOINT, (1, None), (0, 0), attrs={"counter": int}),
    Opcode.ADJ_CALL: OpSpec(ADJOINT, (0, None), (0, 0), attrs={"of": ANY, "form": str},
                            optional={"skip_if_zero": bool, "exclusive": bool}),
    Opcode.ADJ_ADD: OpSpec(ADJOINT, (2, 2), (0, 0)),  # adj(a) += adj(b)
    Opcode.ADJ_SET: OpSpec(ADJOINT, (2, 2), (0, 0)),  # adj(a) = adj(b)
    Opcode.ADJ_ZERO: OpSpec(ADJOINT, (0, None), (0, 0)),  # adj(v) = 0 for each operand
    Opcode.ADJ_IF: OpSpec(ADJOINT, (1, 1), (0, 0), regions=2, attrs={"of": ANY}),
    Opcode.ADJ_LOOP: OpSpec(ADJOINT, (0, None), (0, 0), regions=2, attrs={"of": ANY, "counter": int},
                            optional={"restore": str}),
    Opcode.ADJ_RETURN: OpSpec(ADJOINT, (0, None), (0, 0), attrs={"index": list}),  # adj(v_k) += adj_ret[index_k]
}

assert set(SCHEMA) == set(Opcode), "every opcode has a schema"
