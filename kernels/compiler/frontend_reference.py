"""Frontend, calls of @wp.func functions with `wp.ref[T]` parameters (Warp 1.19's pass by reference).

Functions take and return values here: a function returns the final values of its reference parameters after its
own results (frontend.lower), and the call writes each back to its argument, which must name storage the caller
can assign: a variable, an array element, a struct field or a component, or a path of these (`a[i].v[0]`). A
literal, a call's result (or a part of one), a compile-time constant and a local holding a bare literal (whose type
Warp has not fixed; the error says how to declare it) are refused, as Warp refuses them. A kernel calling such a
function has no backward (the call is marked refuse_adjoint for passes/adjoint.py; a backward-enabled kernel is
refused when built, passes/typeinfer_reference.py), as in Warp, unless the function is a @wp.func_native with an
adj_snippet. `wp.address_of(x)` arguments are written back the same way (call_with_references).
"""

from __future__ import annotations

import ast

from ..errors import CompileError
from .frontend_expr import Static
from .function import reference_params


class ReferenceLowering:
    """Mixed into `frontend.Frontend` (uses `emit`, `assign`, `env`, `error`, `lower_callee`)."""

    def call_with_references(self, node, target, references, operands, attrs, addresses=()):
        """Lower a call of `target` whose parameters at `references` are wp.ref[T], and whose arguments at
        `addresses` are `wp.address_of(x)`: its own results (a list; one placeholder when it has none).

        An address argument passes the address of a copy of x's value (a uint64) and x takes the copy's value when
        the call returns: the storage a snippet writes through the pointer is written back, as a reference is."""
        loc = self.src.loc(node)
        for i in references:
            self.check_addressable(node.args[i] if i < len(node.args) else None, target, i, node)
        total = target.result_count(len(operands), loc, self.name, self.lower_callee)
        own = total - len(references)
        places = {i: node.args[i] for i in references}
        places.update({i: node.args[i].args[0] for i in addresses})
        self.check_distinct(node, target, places)
        attrs.update({"nresults": total + len(addresses), "references": tuple(references)})
        if not getattr(target, "manual_reference_adjoint", False) and references:  # func_native with adj_snippet
            attrs["refuse_adjoint"] = (f"'{target.name}' takes wp.ref[T] parameters: a kernel calling it has no "
                                       f"backward (as in Warp); declare the kernel with enable_backward=False")
        if addresses:
            attrs["addresses"] = tuple(addresses)
            attrs["refuse_adjoint"] = (f"'{target.name}' is given wp.address_of(...): what is written through a "
                                       f"pointer has no gradient; declare the kernel with enable_backward=False")
        results = self.emit("call", operands, node, nresults=total + len(addresses), attrs=attrs)
        for i, value in zip(references, results[own:total]):
            self.assign(node.args[i], value, node)
        for i, value in zip(addresses, results[total:]):
            self.assign(node.args[i].args[0], value, node)
        return results[:own] if own else [Static(None)]

    def reference_names(self) -> set:
        """Names of this function's wp.ref[T] parameters."""
        params = self.src.fdef.args.args
        return {params[i].arg for i in reference_params(self.src)}

    def address_positions(self, node) -> tuple:
        """Positions of the arguments of call `node` written `wp.address_of(x)` (x checked: see check_address)."""
        found = []
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Call) and self.is_address_of(arg.func):
                self.check_address(arg)
                found.append(i)
        return tuple(found)

    def is_address_of(self, func_node) -> bool:
        try:
            return bool(getattr(self.static_eval(func_node, quiet=True), "_wp_address_of_", False))
        except Exception:  # noqa: BLE001  any other callee
            return False

    def check_address(self, call):
        """`wp.address_of(x)`: x must name storage (a variable, an array element, a field, a component, or a path
        of these), as Warp requires; a temporary, a constant or a local holding a bare literal is refused."""
        if len(call.args) != 1 or call.keywords:
            raise self.error("wp.address_of() takes exactly one positional argument", call)
        arg = call.args[0]
        root = arg
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        bound = self.env.get(root.id) if isinstance(root, ast.Name) else None
        if bound is None or isinstance(bound, Static):
            raise self.error(f"wp.address_of() requires an addressable expression (local variable, array "
                             f"element, struct field, or wp.ref[T] parameter), not '{ast.unparse(arg)}'", call,
                             CompileError)
        owner = getattr(bound, "owner", None)
        if root is arg and owner is not None and owner.opcode == "const" and owner.attrs.get("weak"):
            value = owner.attrs["value"]
            declared = "wp.float32" if isinstance(value, float) else "wp.bool" if isinstance(value, bool) \
                else "wp.int32"
            raise self.error(f"Error taking a mutable reference to constant local '{root.id}', use the following "
                             f"syntax: {root.id} = {declared}({value!r}) to declare a dynamic variable", call,
                             CompileError)

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

    def check_distinct(self, node, target, places: dict):
        """Two reference (or address) arguments rooted in the same variable must name provably different parts
        of it (`v[0]` and `v[2]`, `b.x` and `b.y`): written back one after the other, overlapping ones would not
        give Warp's in-place result. `places`: argument position -> the expression naming the storage."""
        paths = [(i, _path(place)) for i, place in places.items()]
        for a, (i, pi) in enumerate(paths):
            for j, pj in paths[a + 1:]:
                if pi[0] == pj[0] and not _disjoint(pi[1:], pj[1:]):
                    raise self.error(f"arguments {i + 1} and {j + 1} of '{target.name}' are wp.ref[T] parameters "
                                     f"that may name the same storage ('{ast.unparse(places[i])}', "
                                     f"'{ast.unparse(places[j])}'): here references are written back when the "
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
