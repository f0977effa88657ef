"""Pass: refuse kernels whose backward replay would read array elements that the forward already overwrote.

The backward kernel replays the forward without its side effects, reading arrays as the forward left them. A read
of an element that the same kernel writes afterwards (`x[i] = x[i] * x[i]`, `x[i] += x[i] * y`, a read in a loop
that also writes the array, reads and writes inside called functions or through struct members) therefore sees the
new value in the replay, and every adjoint that uses that value is evaluated at the wrong point. Warp computes that
wrong gradient silently; this pass makes it a CompileError, raised only when a gradient is asked for.

Expects: typed, optimised IR of a kernel. Guarantees: raises CompileError naming the array and the lines of the
read and of the write when a read whose value the backward needs may run before a write to the same array in one
thread (earlier in program order, or both in one dynamic loop) and the indices are not provably different.

A read's value is needed when the reverse reads it, directly or through values computed from it: as an operand of
a non-linear builtin one of whose other inputs carries a gradient (a product `x[i] * y` with `y` constant needs
neither), as an index of a differentiable array access, as a branch condition or a loop bound. A read feeding only
linear updates (`x[i] = x[i] + v`, `x[i] = 2.0 * x[i]`), `wp.stop_gradient` values that meet only constants, or
integer bookkeeping of non-differentiable arrays, is not needed and stays allowed.
"""

from __future__ import annotations

from .. import ir
from ..access import array_access
from ...errors import CompileError
from ...typesys import ARRAY_VIEWS, ArrayType, is_differentiable_type, is_struct

_READS = {"load", "tile_load"}
_WRITES = {"store", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
           "atomic_exch", "atomic_cas", "tile_store", "tile_atomic_add", "tile_store_indexed",
           "tile_atomic_add_indexed"}
# builtins whose adjoint reads no primal value (constructors from components and conversions among float types are
# linear too: each output component is one input component)
_LINEAR = {"add", "sub", "neg", "pos", "copy", "extract", "assign", "struct_get", "struct_set", "construct",
           "address", "construct_vector", "construct_matrix", "construct_quat", "construct_transform",
           "matrix_from_rows", "matrix_from_cols", "transpose", "transform_get_translation",
           "transform_get_rotation"}


class _Access:
    """One array read or write, flattened out of nested regions and inlined function calls."""

    __slots__ = ("write", "array", "indices", "result", "op", "order", "loops", "branches", "where")

    def __init__(self, write, array, indices, result, op, order, loops, branches, where):
        self.write, self.array, self.indices, self.result = write, array, indices, result
        self.op, self.order, self.loops, self.branches, self.where = op, order, loops, branches, where


class _Flat:
    """The kernel with calls inlined: value keys, their definitions (operand keys and how the adjoint treats them),
    constants, array roots ("x", "params.q") and the accesses in program order."""

    def __init__(self):
        self.nodes: list = []  # (result keys, operand keys, kind)
        self.types: dict = {}
        self.consts: dict = {}
        self.roots: dict = {}  # array key -> parameter path; absent when it cannot be known
        self.viewed: set = set()  # array keys that are sub-array views (their indices are relative)
        self.accesses: list = []
        self.always_needed: set = set()
        self.returns: dict = {}  # call path -> keys of the values the inlined function returns

    def key(self, v, env, ctx):
        k = env.get(v)
        if k is None:
            k = (ctx, v)
            self.types[k] = v.type
        return k


def check_inplace(fn: ir.Function):
    if not any(read and written for read, written in array_access(fn, fn.param_names).values()):
        return  # no array both read and written: the common case, decided by a cheap walk
    flat = _Flat()
    env = {}
    for p, name in zip(fn.params, fn.param_names):
        k = flat.key(p, env, ())
        env[p] = k
        flat.roots[k] = name
    _flatten(fn.body, flat, env, (), (), (), fn.name)
    if not any(_differentiable_array(a) for a in flat.accesses):
        return  # integer bookkeeping only (sorting, counting): the backward does nothing with what it reads
    active = _activity(flat)
    needed = _needed(flat, active)
    _refuse_overwritten_reads(flat, needed, fn)


def _flatten(block, flat, env, ctx, loops, branches, where):
    key = lambda v: flat.key(v, env, ctx)  # noqa: E731
    for op in block.ops:
        results = [key(r) for r in op.results]
        operands = [key(v) for v in op.operands]
        if op.opcode == "const":
            flat.consts[results[0]] = op.attrs.get("value")
        elif op.opcode == "if":
            flat.always_needed.add(operands[0])
            for k, region in enumerate(op.regions):
                _flatten(region, flat, env, ctx, loops, branches + ((id(op), k),), where)
            yields = [[key(b.yields[j]) for b in op.regions] for j in range(len(results))]
            for r, ys in zip(results, yields):
                flat.nodes.append(([r], ys, "linear"))
        elif op.opcode in ("for", "while"):
            _flatten_loop(op, flat, env, ctx, loops, branches, where, results, operands)
        elif op.opcode == "call":
            _flatten_call(op, flat, env, ctx, loops, branches, where, results, operands)
        elif op.opcode == "return":
            flat.returns[ctx] = operands
        else:
            flat.nodes.append((results, operands, "nonlinear"))


def _flatten_loop(op, flat, env, ctx, loops, branches, where, results, operands):
    key = lambda v: flat.key(v, env, ctx)  # noqa: E731
    inner = loops if op.attrs.get("static") else loops + (id(op),)
    body = op.regions[-1]
    if op.opcode == "for":
        flat.always_needed.update(operands[:3])
        flat.nodes.append(([key(body.args[0])], operands[:3], "linear"))
        inits = operands[3:]
        carried = [body.args[1:]]
    else:
        inits = operands
        carried = [region.args for region in op.regions]  # the condition and the body see the same values
    for region in op.regions:
        _flatten(region, flat, env, ctx, inner, branches, where)
    if op.opcode == "while":
        flat.always_needed.update(key(y) for y in op.regions[0].yields)
    yields = [key(y) for y in body.yields]
    for args in carried:
        for a, i, y in zip(args, inits, yields):
            flat.nodes.append(([key(a)], [i, y], "linear"))
    for r, y in zip(results, yields):
        flat.nodes.append(([r], [y], "linear"))


def _flatten_call(op, flat, env, ctx, loops, branches, where, results, operands):
    name = op.attrs.get("name")
    callee = op.attrs.get("callee")
    native = getattr(callee, "native", None)
    if native is not None and native.references:
        # a C++ snippet's adjoint sees a reference argument's value after the call (its result), not before
        refs = set(native.references)
        flat.nodes.append((results, [k for j, k in enumerate(operands) if j not in refs], "opaque"))
        flat.nodes.append((results, [k for j, k in enumerate(operands) if j in refs], "linear"))
        return
    if callee is not None and getattr(callee, "custom_grad_ir", None) is None and native is None:
        inner_ctx = ctx + (id(op),)
        inner_env = {p: k for p, k in zip(callee.params, operands)}
        _flatten(callee.body, flat, inner_env, inner_ctx, loops, branches, callee.name)
        rets = flat.returns.get(inner_ctx, [])
        for r, k in zip(results, rets):
            flat.nodes.append(([r], [k], "linear"))
        return
    if callee is not None:  # a user-written adjoint or a C++ snippet: assume it reads every argument
        flat.nodes.append((results, operands, "opaque"))
        return
    ov = op.attrs.get("overload")
    if name == "struct_get" and is_struct(op.results[0].type):
        if operands[0] in flat.roots:  # a nested struct: its arrays are found by their path
            flat.roots[results[0]] = f"{flat.roots[operands[0]]}.{op.attrs['field']}"
        flat.nodes.append((results, operands, "linear"))
        return
    if results and isinstance(op.results[0].type, ArrayType):
        if (name == "struct_get" or name in ARRAY_VIEWS) and operands[0] in flat.roots:
            field = op.attrs.get("field")
            flat.roots[results[0]] = flat.roots[operands[0]] + (f".{field}" if name == "struct_get" else "")
            if name in ARRAY_VIEWS or operands[0] in flat.viewed:
                flat.viewed.add(results[0])
        return
    if name in _READS or name in _WRITES:
        array = operands[0]
        dtype = getattr(op.operands[0].type, "dtype", None)
        if dtype is not None and is_differentiable_type(dtype):
            flat.always_needed.update(operands[1:] if name in _READS else operands[1:-1])
        flat.accesses.append(_Access(name in _WRITES, array, operands[1:] if name in _READS else operands[1:-1],
                                     results[0] if name in _READS and results else None, op,
                                     len(flat.accesses), loops, branches, where))
        if name in _READS:
            flat.nodes.append((results, operands[1:], "load"))
        return
    if name == "stop_gradient":
        kind = "stop"
    elif ov is not None and not ov.differentiable:
        kind = "stop"
    elif name in _LINEAR:
        kind = "linear"
    elif name in ("mul", "div"):
        kind = name
    else:
        kind = "nonlinear"
    flat.nodes.append((results, operands, kind))


def _differentiable_array(access) -> bool:
    dtype = getattr(access.op.operands[0].type, "dtype", None)
    return dtype is not None and is_differentiable_type(dtype)


def _activity(flat: _Flat) -> set:
    """Keys that carry a gradient: values computed from reads of differentiable arrays. Scalar kernel arguments
    carry none (their adjoints are not returned)."""
    active: set = set()
    changed = True
    while changed:
        changed = False
        for results, operands, kind in flat.nodes:
            if kind == "load":
                on = True
            elif kind == "stop":
                on = False
            else:
                on = any(k in active for k in operands)
            for r in results:
                if on and r not in active and is_differentiable_type(flat.types.get(r)):
                    active.add(r)
                    changed = True
    return active


def _needed(flat: _Flat, active: set) -> set:
    """Keys whose primal value the reverse reads, closed over the values the replay computes them from."""
    needed = set(flat.always_needed)
    defs = {}
    for results, operands, kind in flat.nodes:
        for r in results:
            defs.setdefault(r, []).extend(operands)
        act = [k in active for k in operands]
        if kind in ("nonlinear", "opaque") and any(act):
            needed.update(operands)
        elif kind == "mul" and len(operands) == 2:
            # the adjoint of a product with respect to one factor reads only the other
            needed.update(k for k, other in zip(operands, reversed(act)) if other)
        elif kind == "div" and len(operands) == 2:
            if act[1]:
                needed.update(operands)
            elif act[0]:
                needed.add(operands[1])
    work = list(needed)
    while work:
        for k in defs.get(work.pop(), ()):
            if k not in needed:
                needed.add(k)
                work.append(k)
    return needed


def _refuse_overwritten_reads(flat: _Flat, needed: set, fn: ir.Function):
    writes = [a for a in flat.accesses if a.write]
    if not writes:
        return
    for read in flat.accesses:
        if read.write or read.result not in needed:
            continue
        for write in writes:
            if _same_array(flat, read, write) and _may_run_before(read, write) and \
                    not _disjoint(flat, read, write):
                raise CompileError(_message(flat, read, write, fn.name), read.op.loc, fn.name)


def _same_array(flat, a, b) -> bool:
    ra, rb = flat.roots.get(a.array), flat.roots.get(b.array)
    if ra is None or rb is None:  # chosen at run time: may be any array of its type
        return a.op.operands[0].type == b.op.operands[0].type
    return ra == rb


def _may_run_before(read, write) -> bool:
    if set(read.loops) & set(write.loops):
        return True  # a later iteration's read follows an earlier iteration's write
    exclusive = any(ia == ib and ka != kb for ia, ka in read.branches for ib, kb in write.branches)
    return not exclusive and read.order < write.order


def _disjoint(flat, a, b) -> bool:
    if a.array in flat.viewed or b.array in flat.viewed or len(a.indices) != len(b.indices):
        return False
    for i, j in zip(a.indices, b.indices):
        if i in flat.consts and j in flat.consts and flat.consts[i] != flat.consts[j]:
            return True
    return False


def _message(flat, read, write, kernel_name) -> str:
    def at(access):
        inside = f" (in function '{access.where}')" if access.where != kernel_name else ""
        return f"line {access.op.loc.line}{inside}"

    name = flat.roots.get(read.array, "an array")
    return (f"array '{name}' is read on {at(read)} and written on {at(write)} by the same kernel; its gradient "
            f"cannot be computed: the backward pass replays the read after the write and would use the new value. "
            f"Write the result to a different array, or wrap the read in wp.stop_gradient(...) if no gradient "
            f"should flow through it")
