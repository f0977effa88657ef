"""Which arrays a kernel reads and writes, by parameter path ("x", or "params.output" for a struct member).

Used by the Tape: overwrite checks, and finding gradient chains broken by an array without a gradient buffer.
Calls into user functions count through their parameters.
"""

from __future__ import annotations

from . import ir
from ..typesys import ARRAY_VIEWS, ArrayType, is_struct

_READS = {"load", "tile_load", "tile_load_indexed"}
_WRITES = {"store", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
           "atomic_exch", "atomic_cas", "tile_store", "tile_atomic_add", "tile_store_indexed", "tile_atomic_add_indexed"}


def array_access(fn: ir.Function, names: list) -> dict:
    """Parameter path -> (read, written) for every array reachable from the parameters of `fn`."""
    access: dict = {}
    paths = {p: n for p, n in zip(fn.params, names)}
    _walk(fn, paths, access)
    return {k: (bool(v[0]), bool(v[1])) for k, v in access.items()}


def _walk(fn: ir.Function, paths: dict, access: dict):
    for op in ir.walk(fn.body):
        if op.opcode != "call" or not op.operands:
            continue
        name = op.attrs.get("name")
        if name == "struct_get" and op.operands[0] in paths:
            paths[op.results[0]] = f"{paths[op.operands[0]]}.{op.attrs['field']}"
            continue
        if name in ARRAY_VIEWS and op.operands[0] in paths:  # a sub-array: accesses count for the whole array
            paths[op.results[0]] = paths[op.operands[0]]
            continue
        callee = op.attrs.get("callee")
        if callee is not None:
            inner = {p: paths[a] for p, a in zip(callee.params, op.operands) if a in paths}
            _walk(callee, inner, access)
            continue
        base = op.operands[0]
        if base in paths and (name in _READS or name in _WRITES):
            slot = access.setdefault(paths[base], [False, False])
            slot[0 if name in _READS else 1] = True


def privatizable_accumulations(fn: ir.Function, names: list, accumulable) -> list | None:
    """The array paths that a parallel CPU forward launch of kernel `fn` may give each chunk private copies of:
    arrays the kernel (or a function it calls) only adds into, with `a[i] += v` or wp.atomic_add/atomic_sub,
    never reads, stores to, passes to another builtin, or uses the returned old value of, and whose element type
    satisfies `accumulable` (floats: the sum does not depend on which copy an addend went to, up to rounding).

    Returns [(path, ArrayType)] (empty when the kernel adds into no array), or None when an array that the
    kernel body adds into is also used otherwise: then every add must stay atomic.
    """
    params = {p: n for p, n in zip(fn.params, names)}
    added: dict = {}  # path -> ArrayType
    tainted: set = set()
    _accumulations(fn, params, added, tainted, accumulable)
    types = dict(_array_types(zip(names, (p.type for p in fn.params))))
    for path in added:
        parts = path.split(".")
        if path not in types or any(".".join(parts[:k]) in tainted for k in range(1, len(parts) + 1)):
            return None
    return [(path, types[path]) for path in sorted(added)]


def _array_types(named_types, prefix: str = ""):
    """(path, ArrayType) of every array reachable from the named types, through struct members."""
    for name, t in named_types:
        if isinstance(t, ArrayType):
            yield prefix + name, t
        elif is_struct(t):
            yield from _array_types(t._wp_struct_.fields.items(), f"{prefix}{name}.")


_UNKNOWN = "<an array no parameter path reaches>"


def _accumulations(fn: ir.Function, paths: dict, added: dict, tainted: set, accumulable):
    used = set()
    for op in ir.walk(fn.body):
        used.update(op.operands)
        for region in op.regions:
            used.update(region.yields)
            for v in region.yields:
                if v in paths:
                    tainted.add(paths[v])  # merged with another value: no longer followed
    used.update(fn.body.yields)
    for v in fn.body.yields:
        if v in paths:
            tainted.add(paths[v])
    for op in ir.walk(fn.body):
        touched = [v for v in op.operands if v in paths]
        if not touched and op.attrs.get("callee") is None and op.attrs.get("name") not in ("atomic_add", "atomic_sub"):
            continue
        name = op.attrs.get("name")
        if op.opcode == "call" and name == "struct_get" and op.operands[0] in paths:
            paths[op.results[0]] = f"{paths[op.operands[0]]}.{op.attrs['field']}"
            continue
        if op.opcode == "call" and name in ARRAY_VIEWS and op.operands[0] in paths:
            paths[op.results[0]] = paths[op.operands[0]]  # a sub-array: accesses count for the whole array
            if any(v in paths for v in op.operands[1:]):
                tainted.update(paths[v] for v in op.operands[1:] if v in paths)
            continue
        callee = op.attrs.get("callee") if op.opcode == "call" else None
        if callee is not None:
            inner = {p: paths[a] for p, a in zip(callee.params, op.operands) if a in paths}
            _accumulations(callee, inner, added, tainted, accumulable)
            continue
        base = op.operands[0]
        float_add = (op.opcode == "call" and name in ("atomic_add", "atomic_sub")
                     and isinstance(base.type, ArrayType) and accumulable(base.type.dtype))
        if float_add:
            # every such add counts, private or not: the renderer makes them all plain adds when copies are used
            added[paths.get(base, _UNKNOWN)] = True
        if not (float_add and base in paths and not any(r in used for r in op.results)
                and not any(v in paths for v in op.operands[1:])):
            tainted.update(paths[v] for v in touched)
