"""Frontend, source: a Python function's parsed source (file and line mapping, compile-time name lookup) and the
queries on its syntax tree that lowering asks (which names a block assigns, whether a loop body can leave early).
"""

from __future__ import annotations

import ast
import builtins as py_builtins
import inspect
import sys
import textwrap

from . import ir
from .lang import BUILTIN_FUNCTIONS

# Names of the flags that lower `break`, `continue` and early `return` to structured control flow (frontend.py).
_BREAK, _CONT, _RET = "__break", "__continue", "__returned"


class FunctionSource:
    """The parsed source of a Python function, with the mapping back to file lines."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.file = inspect.getsourcefile(pyfunc) or "<unknown>"
        lines, first = inspect.getsourcelines(pyfunc)
        self.lines = lines
        self.first_line = first
        self.tree = ast.parse(textwrap.dedent("".join(lines)))
        self.fdef = next(n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.globals = pyfunc.__globals__
        self.early_statics = _evaluate_statics_early(self)

    @staticmethod
    def static_key(node) -> tuple:
        """Where a `wp.static(...)` argument sits in the source: the key of `early_statics`."""
        return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)

    @property
    def closure(self) -> dict:
        """The function's closure variables as they are now: read at compile time, so names bound after the
        decorator ran (a later helper, the function itself) are visible."""
        out = {}
        pyfunc = self.pyfunc
        if pyfunc.__closure__:
            for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
                try:
                    out[name] = cell.cell_contents
                except ValueError:  # a cell not filled yet
                    pass
        return out

    def loc(self, node) -> ir.Loc:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return ir.Loc(self.file, self.first_line + line - 1, text.rstrip("\n"))

    def lookup(self, name, *, package: bool = True):
        """Resolve a non-local name at compile time; raises KeyError when it is not defined. `package`: also a
        public name of the package (`vec3` for `wp.vec3`), Warp's last resort."""
        closure = self.closure
        if name in closure:
            return closure[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(py_builtins, name):
            return getattr(py_builtins, name)
        # as in Warp, a public name of the package may be used without its `wp.` prefix (`v = vec3(...)`)
        root = sys.modules[__package__.rpartition(".")[0]]
        if package and not name.startswith("_") and hasattr(root, name):
            return getattr(root, name)
        # and so may a builtin (`expect_eq(a, b)`)
        obj = BUILTIN_FUNCTIONS.get(name)
        if obj is not None:
            return obj
        raise KeyError(name)


def _assigned_names(stmts) -> set:
    """Names bound anywhere in `stmts` (targets of assignments, aug-assignments and for loops)."""
    names = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                base = node.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    names.add(base.id)
    return names


def _is_reversed_range(it) -> bool:
    return (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed"
            and len(it.args) == 1 and not it.keywords and isinstance(it.args[0], ast.Call)
            and isinstance(it.args[0].func, ast.Name) and it.args[0].func.id == "range")


def _may_exit_loop(body) -> bool:
    """Whether a loop body can leave the loop early: a break of its own, or a return anywhere inside."""
    return _contains(body, ast.Break, stop_at_loops=True) or _contains(body, ast.Return)


def _contains(stmts, kinds, stop_at_loops=False) -> bool:
    for stmt in stmts:
        if stop_at_loops and isinstance(stmt, (ast.For, ast.While)):
            continue
        for node in _walk_no_nested_defs(stmt, stop_at_loops):
            if isinstance(node, kinds):
                return True
    return False


def _walk_no_nested_defs(node, stop_at_loops):
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.Lambda)):
            continue
        if stop_at_loops and isinstance(child, (ast.For, ast.While)):
            continue
        yield from _walk_no_nested_defs(child, stop_at_loops)


def _mentions_static(func) -> bool:
    """Whether a call's function `name` or `a.b.name` has "static" in one of its names (what ast.unparse(func)
    would show, without unparsing every call of a kernel: 50 us each)."""
    while isinstance(func, ast.Attribute):
        if "static" in func.attr:
            return True
        func = func.value
    return isinstance(func, ast.Name) and "static" in func.id


def _evaluate_statics_early(source) -> dict:
    """The value of each `wp.static(expr)` whose expression reads no name of the function's own, evaluated once,
    when the decorator runs (as Warp does: a side-effecting expression runs once, and a global changed later
    does not change the kernel). Expressions that fail here (a name defined later, a loop index) are evaluated
    at compile time instead. Maps FunctionSource.static_key of the argument -> value."""
    fdef = source.fdef
    calls = [node for node in ast.walk(fdef) if isinstance(node, ast.Call) and len(node.args) == 1
             and not node.keywords and _mentions_static(node.func)]
    if not calls:
        return {}  # most functions: no need to collect the names they assign
    own = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs} | _assigned_names(fdef.body)
    namespace = None
    out = {}
    for node in calls:
        arg = node.args[0]
        if any(isinstance(n, ast.Name) and n.id in own for n in ast.walk(arg)):
            continue
        if namespace is None:
            namespace = dict(source.globals)
            namespace.update(source.closure)
        try:
            f = eval(compile(ast.Expression(body=node.func), source.file, "eval"), namespace)
            if getattr(f, "__name__", "") != "static" or not getattr(f, "__module__", "").startswith("kernels"):
                continue
            out[FunctionSource.static_key(arg)] = eval(compile(ast.Expression(body=arg), source.file, "eval"),
                                                       namespace)
        except Exception:
            continue
    return out
