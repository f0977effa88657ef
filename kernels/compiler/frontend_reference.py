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
        self.check_distinct(node, target, references)
        attrs.update({"nresults": total, "references": tuple(references),
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

    def check_distinct(self, node, target, references):
        """Two reference arguments rooted in the same variable must name provably different parts of it
        (`v[0]` and `v[2]`, `b.x` and `b.y`): written back one after the other, overlapping ones would not give
        Warp's in-place result."""
        paths = [(i, _path(node.args[i])) for i in references]
        for a, (i, pi) in enumerate(paths):
            for j, pj in paths[a + 1:]:
                if pi[0] == pj[0] and not _disjoint(pi[1:], pj[1:]):
                    raise self.error(f"arguments {i + 1} and {j + 1} of '{target.name}' are wp.ref[T] parameters "
                                     f"that may name the same storage ('{ast.unparse(node.args[i])}', "
                                     f"'{ast.unparse(node.args[j])}'): here references are written back when the "
                                     f"call returns (Warp updates them in place); pass distinct variables", node)

    @staticmethod
    def _reference_type_name(target, index) -> str:
        params = target.overloads[0][1] if target.overloads else []
        t = params[index] if index < len(params) else None
        return f"wp.{getattr(t, '__name__', 'float32')}"


def _path(arg) -> list:
    """[root name, step, ...] of an argument; a step is ("attr", name), ("index", constant) or None (dynamic)."""
    steps = []
    while isinstance(arg, (ast.Subscript, ast.Attribute)):
        if isinstance(arg, ast.Attribute):
            steps.append(("attr", arg.attr))
        else:
            try:
                steps.append(("index", ast.literal_eval(arg.slice)))
            except ValueError:
                steps.append(None)
        arg = arg.value
    return [arg.id if isinstance(arg, ast.Name) else None, *reversed(steps)]


def _disjoint(a: list, b: list) -> bool:
    """Whether two access paths below the same root are provably different storage: at the first step where they
    differ both are constant (a prefix of the other overlaps it)."""
    for x, y in zip(a, b):
        if x is None or y is None or not (_plain(x) and _plain(y)):
            return False
        if x != y:
            return True
    return False


def _plain(step) -> bool:
    """A step whose constant names one place only: a field, or non-negative indices (v[-1] may be v[2])."""
    kind, value = step
    if kind == "attr":
        return True
    values = value if isinstance(value, tuple) else (value,)
    return all(isinstance(k, int) and k >= 0 for k in values)
