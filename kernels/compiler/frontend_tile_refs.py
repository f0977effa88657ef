"""Tiles changed in place by a @wp.func: refused where the caller would see the change in Warp.

Warp passes tiles to a @wp.func by reference: `t += u` or `t[i] = v` on a tile parameter changes the caller's
tile. Tiles are values here, so the caller keeps its tile unchanged. That difference is invisible when the caller
never reads its tile again (`r = f(a, b)` with `a` dead after the call), and a wrong number otherwise; the call
is then refused at compile time with the way to write it (return the tile and assign it).

The writes are found in the callee's source: augmented assignment to the parameter, an element or slice store
into it, a builtin that updates that argument (`wp.tile_assign(t, ...)`, `wp.tile_matmul(a, b, t)`), or passing
it on to a @wp.func that writes the matching parameter.
"""

from __future__ import annotations

import ast

from .function import Func
from .frontend_loops import _continuation, _exposed_reads


def written_tile_params(func: Func, mutated_args, _seen=None) -> set:
    """Names of `func`'s tile parameters (annotated `wp.tile[...]`) that some overload's body changes in place.
    `mutated_args(builtin_name)` gives the argument positions a builtin updates."""
    seen = _seen if _seen is not None else set()
    if id(func) in seen:
        return set()
    seen.add(id(func))
    out = set()
    for source, _ in func.overloads:
        # (a tile_stack parameter is not a tile here: any update of one in a @wp.func is refused by type inference)
        tiles = {a.arg for a in source.fdef.args.args if a.annotation is not None
                 and "tile" in ast.unparse(a.annotation) and "tile_stack" not in ast.unparse(a.annotation)}
        if not tiles:
            continue
        for node in ast.walk(source.fdef):
            out |= _direct_writes(node, tiles)
            if isinstance(node, ast.Call):
                out |= _writes_through_call(node, tiles, source, mutated_args, seen)
    return out


def _direct_writes(node, tiles: set) -> set:
    targets = []
    if isinstance(node, ast.AugAssign):
        targets = [node.target]
    elif isinstance(node, ast.Assign):
        targets = [t for t in node.targets if not isinstance(t, ast.Name)]  # `t = ...` rebinds: no write
    out = set()
    for t in targets:
        base = t
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        if isinstance(base, ast.Name) and base.id in tiles:
            out.add(base.id)
    return out


def _writes_through_call(call, tiles: set, source, mutated_args, seen) -> set:
    try:
        callee = eval(compile(ast.Expression(body=call.func), source.file, "eval"),
                      {**source.globals, **source.closure})
    except Exception:
        return set()
    name = getattr(callee, "_wp_builtin_", None)
    if isinstance(name, str):
        positions = set(mutated_args(name))
    elif isinstance(callee, Func):
        written = written_tile_params(callee, mutated_args, seen)
        callee_params = [a.arg for a in callee.overloads[0][0].fdef.args.args]
        positions = {i for i, p in enumerate(callee_params) if p in written}
    else:
        return set()
    return {a.id for i, a in enumerate(call.args) if i in positions and isinstance(a, ast.Name) and a.id in tiles}


def refuse_observed_tile_writes(frontend, func: Func, call, stmt, mutated_args) -> None:
    """Raise a CompileError when `call` (in statement `stmt` of the function `frontend` lowers) passes a tile
    that `func` changes in place and the caller reads that variable afterwards (Warp would show the change)."""
    written = written_tile_params(func, mutated_args)
    if not written or stmt is None:
        return
    params = [a.arg for a in func.overloads[0][0].fdef.args.args]
    later = _continuation(frontend.src.fdef.body, stmt)
    read_after = _exposed_reads(later, frozenset()) if later is not None else None
    for i, arg in enumerate(call.args):
        if i >= len(params) or params[i] not in written or not isinstance(arg, ast.Name):
            continue
        name = arg.id
        # another read in the same statement may come after the call (`f(t) + wp.tile_sum(t)`)
        in_statement = sum(1 for n in ast.walk(stmt)
                           if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)) > 1
        # (a tile parameter of the function lowered here, passed on: its own callers are checked the same way,
        # as written_tile_params follows the call)
        if read_after is None or name in read_after or in_statement:
            raise frontend.error(
                f"'{func.name}' changes its tile parameter '{params[i]}' in place, and '{name}' is read after "
                f"this call: Warp passes tiles to a @wp.func by reference, so the caller would see the change, "
                f"but tiles are values here; return the tile from '{func.name}' and assign it "
                f"('{name} = {func.name}(...)')", call)
