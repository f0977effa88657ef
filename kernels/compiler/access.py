"""Which arrays a kernel reads and writes, by parameter path ("x", or "params.output" for a struct member).

Used by the Tape: overwrite checks, and finding gradient chains broken by an array without a gradient buffer; and
by the CPU renderer: which arrays a parallel forward launch may add into through per-chunk private copies.
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
        if callee is not None and getattr(callee, "native", None) is not None:
            # a C++ snippet (native_snippet.py): it may read and write every array it is given
            for a in op.operands:
                if a in paths:
                    for path, _ in _array_types([(paths[a], a.type)]):
                        access[path] = [True, True]
            continue
        if callee is not None:
            inner = {p: paths[a] for p, a in zip(callee.params, op.operands) if a in paths}
            _walk(callee, inner, access)
            continue
        base = op.operands[0]
        if base in paths and (name in _READS or name in _WRITES):
            slot = access.setdefault(paths[base], [False, False])
            slot[0 if name in _READS else 1] = True


def privatizable_accumulations(fn: ir.Function, names: list, accumulable) -> list | None:
    """The array paths that a parallel CPU forward launch of kernel `fn` may give each chunk private copies of.

    The renderer turns every `a[i] += v` / wp.atomic_add / wp.atomic_sub of the kernel body on an array whose
    element type satisfies `accumulable` (floats) into a plain add when copies are used, so copies are allowed
    only if each array the kernel (or a function it calls) adds into that way is only added into: never read,
    stored to, passed to another builtin, merged with another array value, or asked for the old value an
    atomic returns. Returns [(path, ArrayType)] (empty when the kernel adds into no float array), or None when
    some float add must stay atomic (then all of them do).
    """
    added: set = set()
    tainted: set = set()
    _accumulations(fn, {p: n for p, n in zip(fn.params, names)}, added, tainted, accumulable)
    types = dict(_array_types(zip(names, (p.type for p in fn.params))))
    for path in added:
        parts = path.split(".")
        if path not in types or any(".".join(parts[:k]) in tainted for k in range(1, len(parts) + 1)):
            return None
        if not types[path].plain:  # indexed or Fabric: copies are not laid out like their elements
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
_ADDS = ("atomic_add", "atomic_sub")


def _accumulations(fn: ir.Function, paths: dict, added: set, tainted: set, accumulable):
    """Collect into `added` the paths of the float arrays `fn` adds into, and into `tainted` the paths used in
    any other way. `paths`: the values of `fn` that are (parts of) kernel parameters -> their path."""
    used = set(fn.body.yields)
    for op in ir.walk(fn.body):
        used.update(op.operands)
        for region in op.regions:
            used.update(region.yields)
    for v in fn.body.yields:
        if v in paths:
            tainted.add(paths[v])
    for op in ir.walk(fn.body):
        for region in op.regions:  # an array merged with another value (if/loop results) is no longer followed
            tainted.update(paths[v] for v in region.yields if v in paths)
        if op.opcode != "call":
            tainted.update(paths[v] for v in op.operands if v in paths)
            continue
        name, callee = op.attrs.get("name"), op.attrs.get("callee")
        if callee is not None and getattr(callee, "native", None) is not None:
            tainted.update(paths[v] for v in op.operands if v in paths)  # a snippet's use of them is unknown
            continue
        if callee is not None:
            inner = {p: paths[a] for p, a in zip(callee.params, op.operands) if a in paths}
            _accumulations(callee, inner, added, tainted, accumulable)
            continue
        if not op.operands:
            continue
        base = op.operands[0]
        if name == "struct_get" and base in paths:
            paths[op.results[0]] = f"{paths[base]}.{op.attrs['field']}"
            continue
        if name in ARRAY_VIEWS and base in paths:
            paths[op.results[0]] = paths[base]  # a sub-array: accesses count for the whole array
            tainted.update(paths[v] for v in op.operands[1:] if v in paths)
            continue
        float_add = name in _ADDS and isinstance(base.type, ArrayType) and accumulable(base.type.dtype)
        if float_add:
            added.add(paths.get(base, _UNKNOWN))
        plain = float_add and base in paths and not any(r in used for r in op.results)
        tainted.update(paths[v] for k, v in enumerate(op.operands) if v in paths and not (plain and k == 0))
