"""Which arrays a kernel reads and writes, by parameter path ("x", or "params.output" for a struct member).

Used by the Tape: overwrite checks, and finding gradient chains broken by an array without a gradient buffer.
Calls into user functions count through their parameters.
"""

from __future__ import annotations

from . import ir
from ..typesys import ARRAY_VIEWS

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
