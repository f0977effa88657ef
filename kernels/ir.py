"""The compiler's intermediate representation: SSA values and ops with structured control-flow regions.

A `Function` has parameters and a body `Block`. A `Block` is a list of `Op`s, with block arguments (`args`, e.g. a
loop index and loop-carried values) and the values it yields to its parent op (`yields`). Control flow is structured
(MLIR scf style): `if` has a then and an else block whose yields become the op's results; `for` carries values
through its body; `while` has a condition block and a body block. Every op keeps its source location.

Opcodes (operands / attrs / regions / results):
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


def walk(block: Block):
    """Every op in `block` and its nested regions, in program order."""
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk(region)


def format_function(fn: Function) -> str:
    """Text form of a function, for debugging and IR tests."""
    lines = [f"{fn.kind} {fn.name}({', '.join(f'{p!r}: {_tname(p.type)}' for p in fn.params)})"]
    _format_block(fn.body, lines, 1)
    return "\n".join(lines)


def _tname(t):
    return getattr(t, "__name__", None) or repr(t)


def _format_block(block: Block, lines: list, depth: int):
    pad = "  " * depth
    if block.args:
        lines.append(f"{pad}^({', '.join(repr(a) for a in block.args)})")
    for op in block.ops:
        res = ", ".join(repr(r) for r in op.results)
        attrs = {k: v for k, v in op.attrs.items() if k not in ("overload", "callee", "func")}
        name = op.attrs.get("name", "")
        head = f"{res} = " if res else ""
        lines.append(f"{pad}{head}{op.opcode} {name} {op.operands} {attrs if attrs else ''}".rstrip())
        for region in op.regions:
            lines.append(f"{pad}  {{")
            _format_block(region, lines, depth + 2)
            lines.append(f"{pad}  }}")
    if block.yields:
        lines.append(f"{pad}yield {block.yields}")
