"""Frontend, calls of @wp.func functions with `wp.ref[T]` parameters (Warp 1.19's pass by reference).

Functions take and return values here: a function returns the final values of its reference parameters after its
own results (frontend.lower), and the call writes each back to its argument, which must name storage the caller
can assign: a variable, an array element, a struct field or a component, or a path of these (`a[i].v[0]`). A
literal, a call's result (or a part of one), a compile-time constant and a local holding a bare literal (whose type
Warp has not fixed; the error says how to declare it) are refused, as Warp refuses them. A kernel calling such a
function has no backward (the call is marked refuse_adjoint for passes/adjoint.py), as in Warp.
"""

from __future__ import annotations

import ast

from ..errors import CompileError
from .frontend_expr import Static


class ReferenceLowering:
    """Mixed into `frontend.Frontend` (uses `emit`, `assign`, `env`, `error`, `lower_callee`)."""

    def call_with_references(self, node, target, references, operands, attrs):
        """Lower a call of `target` whose parameters at `references` are wp.ref[T]: its own results (a list; one
        placeholder when it has none)."""
        loc = self.src.loc(node)
        for i in references:
            self.check_addressable(node.args[i] if i < len(node.args) else None, target, i, node)
        total = target.result_count(len(operands), loc, self.name, self.lower_callee)
        own = total - len(references)
        attrs.update({"nresults": total,
                      "refuse_adjoint": f"'{target.name}' takes wp.ref[T] parameters: a kernel calling it has no "
                                        f"backward (as in Warp); declare the kernel with enable_backward=False"})
        results = self.emit("call", operands, node, nresults=total, attrs=attrs)
        for i, value in zip(references, results[own:]):
            self.assign(node.args[i], value, node)
        return results[:own] if own else [Static(None)]

    def check_addressable(self, arg, target, index, node):
        if arg is None or isinstance(arg, ast.Starred):
            raise self.error(f"a wp.ref[T] argument of '{target.name}' must be passed by position", node)
        root = arg
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        bound = self.env.get(root.id) if isinstance(root, ast.Name) else None
        if bound is None or isinstance(bound, Static):
            raise self.error(f"argument {index + 1} of '{target.name}' is a wp.ref[T] parameter: pass a variable, "
                             f"an array element, a struct field or a component, not '{ast.unparse(arg)}' (a "
                             f"temporary value or a compile-time constant has no storage to update)", node,
                             CompileError)
        owner = getattr(bound, "owner", None)
        if root is arg and owner is not None and owner.opcode == "const" and owner.attrs.get("weak"):
            declared = self._reference_type_name(target, index)
            raise self.error(f"argument {index + 1} of '{target.name}' is a wp.ref[T] parameter, and '{root.id}' "
                             f"holds a literal whose type is not fixed: declare it with its type, e.g. "
                             f"{root.id} = {declared}({owner.attrs['value']!r})", node, CompileError)

    @staticmethod
    def _reference_type_name(target, index) -> str:
        params = target.overloads[0][1] if target.overloads else []
        t = params[index] if index < len(params) else None
        return f"wp.{getattr(t, '__name__', 'float32')}"
