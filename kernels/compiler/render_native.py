"""Renderer, @wp.func_native functions: the user's C++ snippets as functions, and the value-passing wrappers that
calls of the rest of the module use (see native_snippet.py for the semantics).

For a native function `f(x: wp.ref[float], y: float) -> float` named `f3_f` in the module:
  - `f3_f_snippet(wp::float32& x, wp::float32 y)`: the snippet as written, with Warp's parameter names and types
    (a wp.ref[T] parameter is a `T&`); `f3_f_snippet_replay` likewise when a replay snippet is given;
  - `f3_f_snippet_adj(x, y, adj_x, adj_y, adj_ret)`: the adjoint snippet, every adjoint a reference;
  - `f3_f`, `replay_f3_f`, `adj_f3_f`: the signatures of any user function here (values in, the result then the
    final value of each reference out; the adjoint adds into the arguments' adjoints), calling the snippets.
The text is the same for the CPU and CUDA: the snippet decides what it may use.
"""

from __future__ import annotations

from . import ir
from .render import ctype

_TEMPLATE = "static CUDA_CALLABLE inline {ret} {name}({params}) {{\n{body}\n}}"


def render_native(fn: ir.Function, name: str, *, backward: bool) -> str:
    """The C++ of native function `fn`, named `name` in the module; with `backward`, its replay and adjoint."""
    spec = fn.native
    refs = spec.references
    own = fn.return_types[:len(fn.return_types) - len(refs)]
    own_ret = ctype(own[0]) if own else "void"
    where = f"// {fn.loc.file}:{fn.loc.line}: wp.func_native '{fn.name}'"
    user = [f"{ctype(p.type)}{'&' if k in refs else ''} {n}" for k, (p, n) in enumerate(zip(fn.params,
                                                                                             fn.param_names))]
    out = [where, _TEMPLATE.format(ret=own_ret, name=f"{name}_snippet", params=", ".join(user),
                                   body=spec.snippet)]
    out.extend(_wrapper(fn, name, f"{name}_snippet", own, refs))
    if not backward:
        return "\n".join(out) + "\n"
    replay_target = f"{name}_snippet"
    if spec.replay_snippet is not None:
        replay_target = f"{name}_snippet_replay"
        out.append(_TEMPLATE.format(ret=own_ret, name=replay_target, params=", ".join(user),
                                    body=spec.replay_snippet))
    out.extend(_wrapper(fn, f"replay_{name}", replay_target, own, refs, declare_result=False))
    if fn.adjoint is not None and fn.adjoint.error is None:
        adj = [f"{ctype(p.type)}& adj_{n}" for p, n in zip(fn.params, fn.param_names)]
        if own:
            adj.append(f"{own_ret}& adj_ret")
        user_adj = [f"{ctype(p.type)}& {n}" for p, n in zip(fn.params, fn.param_names)] + adj
        out.append(_TEMPLATE.format(ret="void", name=f"{name}_snippet_adj", params=", ".join(user_adj),
                                    body=spec.adj_snippet or ""))
        out.append(_adjoint_wrapper(fn, name, own, refs))
    return "\n".join(out) + "\n"


def _wrapper(fn, name: str, target: str, own: list, refs: tuple, declare_result: bool = True) -> list:
    """The value-passing function `name` calling snippet function `target`: returns the snippet's result, then
    the final value of each reference parameter (a `{name}_ret` struct with fields v0, v1, ... for several)."""
    params = ", ".join(f"{ctype(p.type)} p{k}" for k, p in enumerate(fn.params))
    call = f"{target}({', '.join(f'p{k}' for k in range(len(fn.params)))})"
    values = (["r_"] if own else []) + [f"p{k}" for k in refs]
    out = []
    if len(values) > 1:
        struct = f"{name.removeprefix('replay_')}_ret"
        if declare_result:
            members = " ".join(f"{ctype(t)} v{k};" for k, t in enumerate(fn.return_types))
            out.append(f"struct {struct} {{ {members} }};")
        ret, tail = struct, f"    return {{{', '.join(values)}}};"
    elif values:
        ret, tail = ctype(fn.return_types[0]), f"    return {values[0]};"
    else:
        ret, tail = "void", ""
    body = f"    auto r_ = {call};\n{tail}" if own else f"    {call};\n{tail}"
    out.append(_TEMPLATE.format(ret=ret, name=name, params=params, body=body.rstrip()))
    return out


def _adjoint_wrapper(fn, name: str, own: list, refs: tuple) -> str:
    """`adj_{name}` with a user function's adjoint signature (primal values, adjoint references, then the
    adjoints of the results), calling the adjoint snippet: a reference parameter's adjoint starts as the adjoint
    of its final value, and what the snippet leaves in it is added to the argument's adjoint."""
    n = len(fn.params)
    params = [f"{ctype(p.type)} p{k}" for k, p in enumerate(fn.params)]
    params += [f"{ctype(p.type)}& adj_p{k}" for k, p in enumerate(fn.params)]
    params += [f"const {ctype(t)}& adj_ret{k}" for k, t in enumerate(fn.return_types)]
    lines = []
    adj_args = []
    for k in range(n):
        if k in refs:
            ret_index = len(own) + refs.index(k)
            lines.append(f"    {ctype(fn.params[k].type)} adj_ref{k}_ = adj_ret{ret_index};")
            adj_args.append(f"adj_ref{k}_")
        else:
            adj_args.append(f"adj_p{k}")
    if own:
        lines.append(f"    {ctype(own[0])} adj_r_ = adj_ret0;")
        adj_args.append("adj_r_")
    args = [f"p{k}" for k in range(n)] + adj_args
    lines.append(f"    {name}_snippet_adj({', '.join(args)});")
    lines.extend(f"    adj_p{k} = wp::add(adj_p{k}, adj_ref{k}_);" for k in refs)
    return _TEMPLATE.format(ret="void", name=f"adj_{name}", params=", ".join(params), body="\n".join(lines))
