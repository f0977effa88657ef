"""The compiler's intermediate representation: SSA values and ops with structured control-flow regions.

A `Function` has parameters and a body `Block`. A `Block` is a list of `Op`s, with block arguments (`args`, e.g. a
loop index and loop-carried values) and the values it yields to its parent op (`yields`). Control flow is structured
(MLIR scf style): `if` has a then and an else block whose yields become the op's results; `for` carries values
through its body; `while` has a condition block and a body block. Every op keeps its source location.

The op set is closed: `ir_ops.Opcode` lists every opcode and `ir_ops.SCHEMA` what each takes; an Op with any
other opcode cannot be made. The adjoint pass adds a function's backward in IR form (`Adjoint`: a replay region
and a reverse region of adjoint ops). The main opcodes (operands / attrs / regions / results):
    const     -/value/-/1            a compile-time constant (attr "weak": a Python literal whose type adapts)
    call      args/name|func,...     a builtin (attr "name") or user function (attr "func"); 0+ results
    getattr   obj/attr/-/1           v.x, struct.field, array.shape — resolved by type inference
    getitem   obj,indices/-/-/1      v[i], m[i, j], a[i, j] — resolved to extract or load
    setitem   obj,indices,value/-    array store (side effect) or functional update of a value (1 result)
    setattr   obj,value/attr/-/1     functional update of a struct or vector component
    construct args/type/-/1          calling a type: vec3(...), MyStruct(), float(x)
    if        cond/-/then,else/n
    for       start,stop,step,inits/-/body/n     body args: index, carried...; body yields carried
    while     inits/-/cond,body/n    cond block yields [bool]; body block yields carried
    return    values/-/-/-           only in a function body's top-level block, last (after structurizing)
    break_if / continue are lowered away by the frontend
After type inference: `call` has attr "overload" (a builtin Overload) or "callee" (a typed user Function), and
`getattr`/`getitem`/`setitem`/`setattr`/`construct` are rewritten to `call`s of builtins.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .ir_ops import Opcode

_ids = itertools.count()


@dataclass(frozen=True)
class Loc:
    """A source position: Python file, line and the text of that line."""

    file: str
    line: int
    source: str = ""

    def __str__(self):
        return f"{self.file}:{self.line}"


class Value:
    """An SSA value. `type` is filled by type inference; `name` is a hint taken from the Python variable."""

    __slots__ = ("id", "type", "name", "owner")

    def __init__(self, type=None, name: str = "", owner=None):
        self.id = next(_ids)
        self.type = type
        self.name = name
        self.owner = owner  # the Op that defines it, or None for parameters and block args

    def __repr__(self):
        return f"%{self.name or ''}{self.id}"


@dataclass(eq=False)
class Op:
    opcode: str
    operands: list
    results: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)
    loc: Loc | None = None

    def __post_init__(self):
        self.opcode = Opcode(self.opcode)  # ValueError for an opcode outside the closed set
        for r in self.results:
            r.owner = self


@dataclass(eq=False)
class Block:
    ops: list = field(default_factory=list)
    args: list = field(default_factory=list)
    yields: list = field(default_factory=list)


@dataclass(eq=False)
class Function:
    """A kernel or a user function in IR form."""

    name: str
    kind: str  # "kernel" or "func"
    params: list  # Values (typed from annotations or specialisation)
    param_names: list
    body: Block
    loc: Loc
    return_types: list = field(default_factory=list)
    adjoint: Adjoint | None = None  # set by the adjoint pass (passes/adjoint.py)


@dataclass(eq=False)
class Adjoint:
    """A function's backward, in IR form (made by passes/adjoint.py; printed by render_adjoint.py).

    `error`: the CompileError that makes the function non-differentiable (it or a function it calls), else None;
    then there is no replay or reverse. `custom`: the user wrote the adjoint (@wp.func_grad); nothing is derived.
    `replay`: the forward body without side effects; the same SSA values are computed again, loops count their
    iterations (`count_iteration`) and keep the carried values of the first ones (`store_carried`), array values
    bind their gradient arrays (`adj_field`, `adj_view`). `reverse`: adjoint ops, last forward op first.
    `counters`: loop op -> counter number, for every loop of the body in program order. `restore`: loop op ->
    how its reverse gets the carried values of each iteration ("slots", "replay"), for loops that need them.
    `private_arrays`: kernels only: array paths whose gradients a parallel CPU backward may accumulate in
    per-thread copies, None when an array is both read and written (see render_adjoint). `pure`: the function
    touches no array, has no side effect and calls only such functions (its adjoint is zero when the adjoints of
    its results are).
    """

    error: object = None
    custom: bool = False
    replay: Block | None = None
    reverse: Block | None = None
    counters: dict = field(default_factory=dict)
    restore: dict = field(default_factory=dict)
    private_arrays: list | None = None
    pure: bool = False


def walk(block: Block):
    """Every op in `block` and its nested regions, in program order."""
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk(region)


def format_function(fn: Function, *, adjoint: bool = False) -> str:
    """Text form of a function, for debugging and IR tests. Values are numbered per function (%0, %1_x, ... in
    order of appearance), so the text of one function is the same in every run. With `adjoint`, the replay and
    reverse regions of its backward follow (or why it has none)."""
    names = _Names()
    params = ", ".join(f"{names(p)}: {_tname(p.type)}" for p in fn.params)
    lines = [f"{fn.kind} {fn.name}({params})"]
    _format_block(fn.body, lines, 1, names)
    adj = fn.adjoint
    if adjoint and adj is not None:
        if adj.error is not None:
            lines.append(f"adjoint refused: {getattr(adj.error, 'message', adj.error)}")
        elif adj.custom:
            lines.append("adjoint: custom (@wp.func_grad)")
        else:
            lines.append("replay")
            _format_block(adj.replay, lines, 1, names)
            lines.append("reverse")
            _format_block(adj.reverse, lines, 1, names)
    return "\n".join(lines)


class _Names:
    def __init__(self):
        self.names: dict = {}

    def __call__(self, v) -> str:
        if not isinstance(v, Value):
            return repr(v)
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = f"%{len(self.names)}" + (f"_{v.name}" if v.name else "")
        return n


def _tname(t):
    return getattr(t, "__name__", None) or repr(t)


def _attr_text(k, v, names) -> str:
    if isinstance(v, Op):  # adjoint ops name the primal op they derive from
        return f"{k}={v.opcode}" + (f":{v.attrs['name']}" if "name" in v.attrs else "")
    if isinstance(v, Value):
        return f"{k}={names(v)}"
    return f"{k}={_tname(v) if isinstance(v, type) else v!r}"


def _format_block(block: Block, lines: list, depth: int, names):
    pad = "  " * depth
    if block.args:
        lines.append(f"{pad}^({', '.join(names(a) for a in block.args)})")
    for op in block.ops:
        res = ", ".join(f"{names(r)}: {_tname(r.type)}" for r in op.results)
        attrs = [_attr_text(k, v, names) for k, v in op.attrs.items()
                 if k not in ("overload", "callee", "func", "name", "value", "elem", "kwargs", "nresults")]
        if "value" in op.attrs:
            attrs.insert(0, f"{op.attrs['value']!r}")
        words = [str(op.opcode), op.attrs.get("name", ""), f"({', '.join(names(v) for v in op.operands)})", *attrs]
        head = f"{res} = " if res else ""
        lines.append(pad + head + " ".join(w for w in words if w))
        for region in op.regions:
            lines.append(f"{pad}  {{")
            _format_block(region, lines, depth + 2, names)
            lines.append(f"{pad}  }}")
    if block.yields:
        lines.append(f"{pad}yield {', '.join(names(v) for v in block.yields)}")
