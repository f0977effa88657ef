"""Frontend, `wp.adjoint[x]` in a @wp.func_grad body: the adjoint of parameter x (or of a field/component path of
it, `wp.adjoint[s.vec]`), as storage the body reads and updates like a local variable.

Before lowering, each `wp.adjoint[<path of parameter x>]` in the body becomes `<path>` rooted at a hidden local
(`__adj_x`); that local starts as the adjoint x has when the custom adjoint is called (op `adj_param_get`) and its
final value is the adjoint x has after it (op `adj_param_set`, at the end of the body). So `wp.adjoint[x] += v`,
`wp.adjoint[s.vec][0] += v` and `wp.adjoint[s.vec].y = v` update the adjoint as Warp's do. For an array parameter the
adjoint is its gradient array: `wp.adjoint[xs][i] += v` adds into it (atomically), and `wp.adjoint[C]` passes it on.
"""

from __future__ import annotations

import ast
import copy

from ..errors import CompileError
from ..typesys import ArrayType

ADJOINT_LOCAL = "__adj_"


class AdjointAccess:
    """Mixed into `frontend.Frontend` (uses `is_adjoint_accessor`, `emit`, `env`, `error`, `as_value`)."""

    adjoint_params: list = []  # names of the parameters whose adjoints the body uses (set by adjoint_body)

    def adjoint_body(self, body: list) -> list:
        """The statements of `body` with every `wp.adjoint[...]` rewritten (a copy; `body` is left as it is), and
        `self.adjoint_params` the names of the parameters whose adjoints they use."""
        self.adjoint_params = []
        if not any(self._is_adjoint_subscript(n) for stmt in body for n in ast.walk(stmt)):
            return body
        names = [a.arg for a in self.src.fdef.args.args]
        frontend = self

        class Rewrite(ast.NodeTransformer):
            def visit_Subscript(self, node):
                if not frontend._is_adjoint_subscript(node):
                    return self.generic_visit(node)
                return frontend._adjoint_path(node, names)

        return [Rewrite().visit(copy.deepcopy(stmt)) for stmt in body]

    def _is_adjoint_subscript(self, node) -> bool:
        return isinstance(node, ast.Subscript) and self.is_adjoint_accessor(node.value)

    def _adjoint_path(self, node, names):
        path = copy.deepcopy(node.slice)
        root = path
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if not isinstance(root, ast.Name) or root.id not in names:
            raise self.error(f"wp.adjoint[...] takes a parameter name of the function (or a field or component "
                             f"path of one), not '{ast.unparse(node.slice)}'", node, CompileError)
        if root.id not in self.adjoint_params:
            self.adjoint_params.append(root.id)
        root.id = ADJOINT_LOCAL + root.id
        return ast.copy_location(path, node)

    def bind_adjoints(self, params: list, node):
        """At the start of the body: each used adjoint as the local the rewritten body reads."""
        names = [p.name for p in params]
        for name in self.adjoint_params:
            if name not in names:
                raise self.error(f"wp.adjoint[{name}]: '{name}' is not a run-time parameter", node, CompileError)
            k = names.index(name)
            value = self.emit("adj_param_get", [], node, attrs={"param": k}, names=[ADJOINT_LOCAL + name])[0]
            self.env[ADJOINT_LOCAL + name] = value

    def store_adjoints(self, params: list, node):
        """At the end of the body: each used adjoint (not an array's: a handle, updated in place) set from the
        local's final value."""
        names = [p.name for p in params]
        for name in self.adjoint_params:
            k = names.index(name)
            if isinstance(params[k].type, ArrayType):
                continue
            value = self.as_value(self.env[ADJOINT_LOCAL + name], node)
            self.emit("adj_param_set", [value], node, nresults=0, attrs={"param": k})
