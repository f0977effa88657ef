"""Frontend: the Python AST of a kernel or function -> untyped IR (structured SSA, see ir.py).

This module lowers statements and control flow; frontend_expr.py lowers expressions.

Python variables become SSA values: each assignment rebinds a name; `if` merges names whose values differ into the
op's results (a name both paths rebind to one existing value simply takes it); loops carry the names they
reassign. A variable bound to several values (`t = (a, b)`, or `t = f(x)`
where f returns several) holds a tuple of them, merged and carried item by item. `break`, `continue` and early
`return` are lowered to boolean flags that guard the statements after them, so that the IR has only structured
control flow. A func's `return` slots are made at entry; `return f(x)` passes on every value f returns.
Names that are not local resolve, at compile time, through the function's closure, its module globals and Python
builtins; such values (constants, types, functions, `wp.static(...)` results) are `Static` until used as operands.
"""

from __future__ import annotations

import ast
import builtins as py_builtins
import inspect
import textwrap

from . import ir
from .errors import CompileError, CompileTypeError, KernelError
from .frontend_expr import (  # noqa: F401  (Static re-exported)
    _BINOPS, ExpressionLowering, Static, _is_number, _mutated_args)

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

    def lookup(self, name):
        """Resolve a non-local name at compile time; raises KeyError when it is not defined."""
        closure = self.closure
        if name in closure:
            return closure[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(py_builtins, name):
            return getattr(py_builtins, name)
        raise KeyError(name)


def _continuation(stmts, target) -> list | None:
    """The statements that can run after the statement `target` (somewhere in `stmts`) has finished: the ones
    after it in its block and in every enclosing block, and the enclosing loops themselves (their next
    iteration); not the other branch of an enclosing `if`. None when `target` is not in `stmts`."""
    for i, stmt in enumerate(stmts):
        if stmt is target:
            return list(stmts[i + 1:])
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if not isinstance(inner, list):
                continue
            found = _continuation(inner, target)
            if found is not None:
                again = [stmt] if isinstance(stmt, (ast.For, ast.While)) else []
                return found + again + list(stmts[i + 1:])
    return None


def _loads(node) -> set:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def _exposed_reads(stmts, assigned: frozenset) -> set:
    """Names that `stmts`, run in order, may read before assigning them themselves (a for loop's target counts
    as assigned in its body, a plain assignment for what follows it); `assigned`: names already assigned."""
    out = set()
    for stmt in stmts:
        if isinstance(stmt, ast.For):
            out |= _loads(stmt.iter) - assigned
            out |= _exposed_reads(stmt.body, assigned | {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)})
            out |= _exposed_reads(stmt.orelse, assigned)
        elif isinstance(stmt, (ast.While, ast.If)):
            out |= _loads(stmt.test) - assigned
            out |= _exposed_reads(stmt.body, assigned) | _exposed_reads(stmt.orelse, assigned)
        elif isinstance(stmt, ast.Assign):
            out |= _loads(stmt) - assigned
            assigned = assigned | {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        else:
            out |= _loads(stmt) - assigned
    return out


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


class Frontend(ExpressionLowering):
    """Lowers one Python function to an `ir.Function`. `param_types` gives each parameter's (canonical) type."""

    def __init__(self, source: FunctionSource, kind: str, name: str, param_types: list, resolve_static, *,
                 return_count=None):
        self.src = source
        self.kind = kind
        self.name = name
        self.param_types = param_types
        self.resolve_static = resolve_static  # hook: (python object) -> Static or None, for wp.* objects
        self.block = None
        self.env: dict = {}
        # Number of values a func returns: the first `return` lowered fixes it. Until then it is the guess read
        # from the first `return` in the source (see declare_return_slots), unless a retry passes it in.
        self.n_returns = return_count
        self.n_returns_fixed = return_count is not None
        self.in_loop = False
        self.held_queries: dict = {}  # variable -> `*_next` builtin, for variables a query loop advanced
        self.env_stack: list = []  # environments saved by enclosing ifs, which must see return slots
        self.entry_block_ops: list = []

    # ------------------------------------------------------------------------------------------------ helpers

    def error(self, message, node, kind=CompileError):
        return kind(message, self.src.loc(node), self.name)

    def kernel_return_error(self, node):
        # the wording Warp's users (and its tests) match
        return self.error("Warp kernels cannot return values. Write results to output arguments, and omit the "
                          "return annotation or use `-> None`.", node, CompileTypeError)

    def emit(self, opcode, operands, node, *, nresults=1, attrs=None, regions=None, names=None):
        results = [ir.Value(name=(names[i] if names else "")) for i in range(nresults)]
        op = ir.Op(opcode, list(operands), results, dict(attrs or {}), list(regions or []), self.src.loc(node))
        self.block.ops.append(op)
        return results

    def const(self, value, node, weak=True):
        return self.emit("const", [], node, attrs={"value": value, "weak": weak})[0]

    def as_value(self, x, node):
        """Materialise a lowered expression as an SSA value (constants become `const` ops)."""
        if isinstance(x, ir.Value):
            return x
        if isinstance(x, Static):
            obj = x.obj
            return self.emit("const", [], node, attrs={"value": obj, "weak": isinstance(obj, (bool, int, float))})[0]
        if isinstance(x, tuple):
            # a tuple of run-time values (e.g. a tile offset): a pack that builtins taking tuples read apart
            items = [self.as_value(i, node) for i in x]
            return self.emit("tuple", items, node)[0]
        raise self.error(f"cannot use {x!r} as a value", node)

    # ------------------------------------------------------------------------------------------------ entry

    def lower(self) -> ir.Function:
        fdef = self.src.fdef
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs:
            raise self.error("*args, **kwargs and keyword-only parameters are not supported", fdef)
        params, names = [], []
        for a, t in zip(args.args, self.param_types):
            v = ir.Value(type=t, name=a.arg)
            params.append(v)
            names.append(a.arg)
            self.env[a.arg] = v
        if len(args.args) != len(self.param_types):
            raise self.error("parameter count does not match its types", fdef)
        body = ir.Block()
        self.block = body
        self.entry_block_ops = body.ops
        self.env[_RET] = self.const(False, fdef, weak=False)
        if self.kind == "func":
            self.declare_return_slots(fdef)
        elif self.src.pyfunc.__annotations__.get("return", None) not in (None, type(None), "None"):
            raise self.kernel_return_error(fdef)
        self.lower_stmts(fdef.body)
        if self.kind == "func":
            rets = [self.env[f"__retval{i}"] for i in range(self.n_returns or 0)]
            self.emit("return", rets, fdef.body[-1], nresults=0)
        return ir.Function(self.name, self.kind, params, names, body, self.src.loc(fdef))

    # ------------------------------------------------------------------------------------------------ statements

    def flags_set(self) -> list:
        """Exit flags (break/continue/return) that may be true at this point."""
        out = []
        for f in (_BREAK, _CONT, _RET):
            v = self.env.get(f)
            if v is not None and not (v.owner is not None and v.owner.opcode == "const" and v.owner.attrs["value"] is False):
                out.append(v)
        return out

    def lower_stmts(self, stmts):
        for i, stmt in enumerate(stmts):
            if self.lower_stmt(stmt) == "exit":
                return  # the rest is unreachable
            flags = self.flags_set()
            if flags and i + 1 < len(stmts):
                # guard the rest: it runs only while no exit flag was raised
                rest = stmts[i + 1:]
                cond = flags[0]
                for f in flags[1:]:
                    cond = self.emit("call", [cond, f], rest[0], attrs={"name": "logical_or"})[0]
                cond = self.emit("call", [cond], rest[0], attrs={"name": "logical_not"})[0]
                self.lower_if_blocks(cond, lambda: self.lower_stmts(rest), lambda: None, rest[0], rest)
                return

    def lower_stmt(self, node):
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"unsupported statement '{type(node).__name__}' in a kernel", node)
        try:
            return method(node)
        except (KernelError, _ReturnCountGuessWrong):
            raise
        except Exception as e:  # noqa: BLE001  (a compiler bug must still name the user's line, never escape raw)
            raise self.error(f"internal compiler error in '{ast.unparse(node).splitlines()[0]}' "
                             f"({type(e).__name__}: {e})", node) from e

    def stmt_Pass(self, node):
        return None

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstring
        self.lower_expr(node.value)
        return None

    def stmt_Assign(self, node):
        value_node = node.value
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                self.assign_tuple(target, value_node, node)
            elif isinstance(target, ast.Name) and isinstance(value_node, ast.Call):
                self.assign(target, self.lower_call_value(value_node), node)  # a tuple if the call gives several
            else:
                self.assign(target, self.lower_expr(value_node), node)
        return None

    def stmt_AnnAssign(self, node):
        if node.value is None:
            raise self.error("a declaration without a value is not supported; assign a value", node)
        ann = self.static_eval(node.annotation)
        value = self.as_value(self.lower_expr(node.value), node)
        value = self.emit("construct", [value], node, attrs={"type": ann})[0]
        self.assign(node.target, value, node)
        return None

    def assign_tuple(self, target, value_node, node):
        n = len(target.elts)
        if isinstance(value_node, (ast.Tuple, ast.List)):
            if len(value_node.elts) != n:
                raise self.error(f"cannot unpack {len(value_node.elts)} values into {n} names", node)
            values = [self.lower_expr(e) for e in value_node.elts]
        elif isinstance(value_node, ast.Call):
            values = self.lower_call(value_node, nresults=n)
        else:
            v = self.lower_expr(value_node)
            if isinstance(v, tuple) and len(v) == n:
                values = list(v)
            elif isinstance(v, Static) and isinstance(v.obj, tuple) and len(v.obj) == n:
                values = [Static(x) for x in v.obj]
            else:
                raise self.error(f"cannot unpack this value into {n} names", node)
        for t, v in zip(target.elts, values):
            self.assign(t, v, node)

    def assign(self, target, value, node):
        """Bind `value` to a name, or store it into a part of a value (`a[i].x = v`: a `setpath`, see
        passes/typeinfer_paths.py)."""
        if isinstance(target, ast.Name):
            if isinstance(value, Static) and not isinstance(value.obj, (bool, int, float)):
                self.env[target.id] = value  # e.g. an alias of a function or type
            elif isinstance(value, tuple):
                self.env[target.id] = value
            else:
                self.env[target.id] = self.as_value(value, node)
                if not self.env[target.id].name:
                    self.env[target.id].name = target.id
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            # Python evaluates the value (already lowered) before the target's own subexpressions
            root_node, root, operands, steps = self.lower_target_path(target, node)
            new = self.emit("setpath", [root, *operands, self.as_value(value, node)], node,
                            attrs={"steps": steps})[0]
            self.rebind_root(root_node, new, node)
        else:
            raise self.error(f"cannot assign to '{ast.unparse(target)}'", node)

    def lower_target_path(self, target, node):
        """The parts of an assignment target such as `a[f(i)][1].x`, each subexpression lowered exactly once,
        left to right: (root node, root value, index values, steps), a step being ("item", number of indices)
        or ("attr", name). Type inference turns the path into reads, the update and the writes back."""
        chain = []
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            chain.append(target)
            target = target.value
        root = self.as_value(self.lower_expr(target), node)
        operands, steps = [], []
        for part in reversed(chain):
            if isinstance(part, ast.Subscript):
                indices = self.lower_indices(part.slice, node)
                operands += indices
                steps.append(("item", len(indices)))
            else:
                steps.append(("attr", part.attr))
        return target, root, operands, steps

    def rebind_root(self, root_node, new_value, node):
        """After a functional update of a value reached from `root_node`, bind the updated value to its name."""
        if not isinstance(root_node, ast.Name):
            raise self.error(f"cannot assign into '{ast.unparse(root_node)}'", node)
        self.env[root_node.id] = new_value
        new_value.name = new_value.name or root_node.id

    def stmt_AugAssign(self, node):
        opname = _BINOPS.get(type(node.op))
        if opname is None:
            raise self.error(f"unsupported operator {type(node.op).__name__}=", node)
        target = node.target
        if isinstance(target, ast.Subscript) and self.is_adjoint_accessor(target.value):
            value = self.as_value(self.lower_expr(node.value), node)
            return self.adjoint_accumulate(target, value, opname, node)
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            # Python evaluates the target's subexpressions (once) before the value
            root_node, root, operands, steps = self.lower_target_path(target, node)
            value = self.as_value(self.lower_expr(node.value), node)
            new = self.emit("augpath", [root, *operands, value], node,
                            attrs={"steps": steps, "op": opname, "user_op": self.user_operator(opname)})[0]
            self.rebind_root(root_node, new, node)
        elif isinstance(target, ast.Name):
            value = self.as_value(self.lower_expr(node.value), node)
            cur = self.lookup_name(target.id, target)
            res = self.emit("call", [self.as_value(cur, node), value], node, attrs={"name": opname})[0]
            self.assign(target, res, node)
        else:
            raise self.error("unsupported augmented assignment target", node)
        return None

    def user_operator(self, opname):
        """A @wp.func named like the operator (`add`, `sub`) in the function's scope, or None. As in Warp, it
        replaces the builtin in `+=` / `-=` on array slots whose types it takes (type inference decides)."""
        if opname not in ("add", "sub"):
            return None
        try:
            obj = self.src.lookup(opname)
        except KeyError:
            return None
        resolved = self.resolve_static(obj)
        return resolved[1] if resolved is not None and resolved[0] == "func" else None

    def is_adjoint_accessor(self, node) -> bool:
        try:
            return bool(getattr(self.static_eval(node, quiet=True), "_wp_adjoint_", False))
        except Exception:
            return False

    def adjoint_accumulate(self, target, value, opname, node):
        """`wp.adjoint[x] += v` in a @wp.func_grad: add v to the adjoint of parameter x."""
        names = [a.arg for a in self.src.fdef.args.args]
        if not isinstance(target.slice, ast.Name) or target.slice.id not in names:
            raise self.error("wp.adjoint[...] takes a parameter name of the function", node)
        if opname not in ("add", "sub"):
            raise self.error("wp.adjoint[x] supports += and -=", node)
        if opname == "sub":
            value = self.emit("call", [value], node, attrs={"name": "neg"})[0]
        self.emit("adj_accum", [value], node, nresults=0, attrs={"param": names.index(target.slice.id)})
        return None

    def stmt_Return(self, node):
        if self.kind == "kernel":
            if node.value is not None:
                raise self.kernel_return_error(node)
        else:
            values = self.return_values(node)
            self.fix_return_count(len(values), node)
            for i, v in enumerate(values):
                self.env[f"__retval{i}"] = v
        self.env[_RET] = self.const(True, node, weak=False)
        if self.in_loop:
            self.env[_BREAK] = self.const(True, node, weak=False)
        return "exit"

    def return_values(self, node) -> list:
        """The values `return ...` gives: a tuple's items, every result of a call (`return f(x)` passes on all
        that f returns), or the items of a tuple variable."""
        if node.value is None:
            return []
        if isinstance(node.value, ast.Tuple):
            items = [self.lower_expr(e) for e in node.value.elts]
        elif isinstance(node.value, ast.Call):
            items = self.lower_call(node.value, nresults=None)
        else:
            v = self.lower_expr(node.value)
            items = _tuple_items(v)
            items = [v] if items is None else list(items)
        if any(_tuple_items(i) is not None for i in items):
            raise self.error("a function cannot return a tuple inside a tuple; return its items", node)
        return [self.as_value(i, node) for i in items]

    def fix_return_count(self, n, node):
        """Every `return` of a func gives the same number of values. The first one lowered fixes it; when the
        slots were made for another count (a guess from the source), lowering starts again with this one."""
        if self.n_returns is None:
            self.n_returns = n
            self.init_retvals(node)
        elif not self.n_returns_fixed and n != self.n_returns:
            raise _ReturnCountGuessWrong(n)
        elif n != self.n_returns:
            raise self.error(f"returns {n} values here but {self.n_returns} elsewhere", node)
        self.n_returns_fixed = True

    def declare_return_slots(self, fdef):
        """Create the return-value slots at entry, so that branches and loops can carry them (their type comes
        from what is assigned to them). Their number is known, or guessed from the first `return` in the source."""
        if self.n_returns is None:
            first = next((n for n in _walk_no_nested_defs(fdef, stop_at_loops=False) if isinstance(n, ast.Return)),
                         None)
            if first is None:
                return
            self.n_returns = self.guess_return_count(first)
        self.init_retvals(fdef)

    def guess_return_count(self, node) -> int:
        """The number of values `node` returns as far as its syntax and callee tell, before anything is lowered
        (a variable counts as one value: if it holds a tuple, fix_return_count corrects the guess)."""
        value = node.value
        if value is None:
            return 0
        if isinstance(value, ast.Tuple):
            return len(value.elts)
        if isinstance(value, ast.Call) and not self.is_static_call(value.func):
            try:
                resolved = self.resolve_static(self.static_eval(value.func, quiet=True))
                if resolved is not None:
                    return self.result_count(*resolved, len(value.args) + len(value.keywords), value)
            except Exception:  # noqa: BLE001  (a local alias, or an error that lowering the call will report)
                pass
        return 1

    def init_retvals(self, node):
        """Return-value slots must exist at function entry so that branches can merge them."""
        entry = self.entry_block_ops
        for i in range(self.n_returns):
            v = ir.Value(name=f"retval{i}")
            op = ir.Op("undef", [], [v], {}, [], self.src.loc(node))
            entry.insert(0, op)
            # propagate into every environment snapshot taken since entry (they all miss the slot)
            for env in self.env_stack:
                env.setdefault(f"__retval{i}", v)
            self.env.setdefault(f"__retval{i}", v)

    def stmt_Break(self, node):
        if not self.in_loop:
            raise self.error("'break' outside a loop", node)
        self.env[_BREAK] = self.const(True, node, weak=False)
        return "exit"

    def stmt_Continue(self, node):
        if not self.in_loop:
            raise self.error("'continue' outside a loop", node)
        self.env[_CONT] = self.const(True, node, weak=False)
        return "exit"

    # ---- if

    def stmt_If(self, node):
        test = self.lower_expr(node.test)
        if isinstance(test, Static):
            # a compile-time condition (e.g. wp.static(...) or a module constant): lower one branch only
            self.lower_stmts(node.body if test.obj else node.orelse)
            return None
        cond = self.as_value(test, node)
        self.lower_if_blocks(cond, lambda: self.lower_stmts(node.body), lambda: self.lower_stmts(node.orelse),
                             node, node.body + node.orelse)
        return None

    def lower_if_blocks(self, cond, then_fn, else_fn, node, stmts):
        """Emit an `if` op whose results are the variables that either branch rebinds."""
        before = dict(self.env)
        outer_block = self.block
        self.env_stack.append(before)
        branch_envs, blocks = [], []
        for fn in (then_fn, else_fn):
            self.env = dict(before)
            self.block = ir.Block()
            fn()
            branch_envs.append(self.env)
            blocks.append(self.block)
        self.env_stack.pop()
        self.block = outer_block
        # names visible after the if: those defined before it (possibly rebound), or defined in both branches
        merged, tuples, same = [], {}, {}
        for name in dict.fromkeys(list(branch_envs[0]) + list(branch_envs[1])):
            a, b = branch_envs[0].get(name, before.get(name)), branch_envs[1].get(name, before.get(name))
            if a is None or b is None:
                continue
            if a is b or isinstance(a, Static) and isinstance(b, Static) and a.obj is b.obj:
                # both paths bind the name to one existing value (`t = c` in each branch): no merge, but the
                # name is rebound all the same
                same[name] = a
                continue
            if _tuple_items(a) is not None or _tuple_items(b) is not None:
                tuples[name] = self.merge_tuple_items(name, a, b, blocks, merged, node)
                continue
            if not isinstance(a, ir.Value) or not isinstance(b, ir.Value):
                raise self.error(f"'{name}' is bound to different compile-time objects (or to one and a run-time "
                                 f"value) on the two paths of this if; bind it the same way on both", node)
            merged.append((name, a, b))
        for blk, (i) in zip(blocks, (1, 2)):
            blk.yields = [m[i] for m in merged]
        results = self.emit("if", [cond], node, nresults=len(merged), regions=blocks,
                            names=[m[0].lstrip("_") for m in merged])
        env = dict(before)
        env.update(same)
        for (name, _, _), r in zip(merged, results):
            if "[" not in name:  # not a tuple item (those are put back into their tuple below)
                env[name] = r
        for name, items in tuples.items():
            env[name] = _fill_slots(items, results)
        self.env = env

    def merge_tuple_items(self, name, a, b, blocks, merged, node):
        """A tuple variable that the two branches of an if bind differently, merged item by item: each differing
        item is appended to `merged`. Returns the tuple after the if, with `_Slot(k)` for `merged[k]`."""
        a_items, b_items = _tuple_items(a), _tuple_items(b)
        if a_items is None or b_items is None or len(a_items) != len(b_items):
            raise self.error(f"'{name}' is {_describe_binding(a)} after one branch of this if and "
                             f"{_describe_binding(b)} after the other", node)
        items = []
        for i, (x, y) in enumerate(zip(a_items, b_items)):
            key = f"{name}[{i}]"
            if x is y:
                items.append(x)
            elif _tuple_items(x) is not None or _tuple_items(y) is not None:
                items.append(self.merge_tuple_items(key, x, y, blocks, merged, node))
            else:
                merged.append((key, self.value_in(blocks[0], x, node), self.value_in(blocks[1], y, node)))
                items.append(_Slot(len(merged) - 1))
        return tuple(items)

    def value_in(self, block, x, node):
        """`x` as an SSA value; a constant is materialised at the end of `block`."""
        outer, self.block = self.block, block
        try:
            return self.as_value(x, node)
        finally:
            self.block = outer

    # ---- loops

    def split_tuples(self, names, node) -> dict:
        """Bind each item of the tuple variables `names` to a name of its own (`t[0]`, ...), so that a loop can
        carry it as a value. Returns {tuple variable: (the tuple, its item names)}."""
        out = {}
        for name in names:
            keys = []
            template = _tuple_items(self.env[name])
            for path, item in _tuple_leaves(template):
                key = name + "".join(f"[{i}]" for i in path)
                self.env[key] = self.as_value(item, node)
                keys.append(key)
            out[name] = (template, keys)
        return out

    def join_tuples(self, split: dict):
        """Undo split_tuples: rebuild each tuple variable from its items' current values."""
        for name, (template, keys) in split.items():
            self.env[name] = _fill_leaves(template, iter([self.env.pop(k) for k in keys]))

    def resplit_tuples(self, split: dict, node):
        """At the end of a loop body: the items of each carried tuple variable, under their own names again."""
        for name, (template, keys) in split.items():
            bound = self.env.get(name)
            value = _tuple_items(bound)
            if _tuple_shape(value) != _tuple_shape(template):
                raise self.error(f"'{name}' is {_describe_binding(template)} before this loop and "
                                 f"{_describe_binding(bound)} at the end of its body", node)
            for key, (_, item) in zip(keys, _tuple_leaves(value)):
                self.env[key] = self.as_value(item, node)

    def loop_carried(self, body_stmts, extra=()):
        names = _assigned_names(body_stmts) | set(extra) | self.mutated_by_calls(body_stmts)
        return [n for n in self.env if n in names and isinstance(self.env[n], ir.Value)]

    def declare_loop_locals(self, node, body_stmts, assigned) -> None:
        """Python scoping, as Warp allows it: a variable first assigned inside a loop and read after it keeps its
        last iteration's value. Such a variable enters the loop as an `undef` slot (zero of its type once type
        inference knows it from the body's assignment) and is carried through the loop like any other."""
        later_stmts = _continuation(self.src.fdef.body, node)
        if later_stmts is None:  # a loop the frontend made itself (not in the source): any read may follow it
            inside = {id(sub) for sub in ast.walk(node)}
            read_after = {sub.id for sub in ast.walk(self.src.fdef)
                          if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and id(sub) not in inside}
        else:
            read_after = _exposed_reads(later_stmts, frozenset())
        for name in sorted(assigned & read_after):
            if name not in self.env and not name.startswith("__"):
                try:
                    self.src.lookup(name)
                    continue  # a global of that name: reads before the loop see it, as in Python
                except KeyError:
                    pass
                value = ir.Value(name=name)
                self.block.ops.append(ir.Op("undef", [], [value], {}, [], self.src.loc(node)))
                self.env[name] = value

    def mutated_by_calls(self, stmts) -> set:
        """Variables that builtins update in place (`wp.randf(state)`, `wp.tile_matmul(a, b, out)`): they change
        in a loop."""
        out = set()
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and node.args:
                    try:
                        f = self.static_eval(node.func, quiet=True)
                    except Exception:
                        continue
                    name = getattr(f, "_wp_builtin_", None)
                    for idx in (_mutated_args(name) if name is not None else ()):
                        if idx < len(node.args) and isinstance(node.args[idx], ast.Name):
                            out.add(node.args[idx].id)
        return out

    def stmt_For(self, node):
        if node.orelse:
            raise self.error("'for ... else' is not supported", node)
        if not isinstance(node.target, ast.Name):
            raise self.error("a for loop must bind one name: 'for i in range(...)'", node)
        it = node.iter
        is_static = False
        if isinstance(it, ast.Call) and self.is_static_call(it.func):
            # for i in wp.static(range(...)): always unrolled
            r = self.static_eval(it.args[0])
            if not isinstance(r, range):
                raise self.error("wp.static in a for loop must give a range", node)
            bounds = [Static(r.start), Static(r.stop), Static(r.step)]
            is_static = True
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            args = [self.lower_expr(a) for a in it.args]
            if not 1 <= len(args) <= 3 or it.keywords:
                raise self.error("range() takes 1 to 3 positional arguments", node)
            if len(args) == 1:
                args = [Static(0), args[0], Static(1)]
            elif len(args) == 2:
                args.append(Static(1))
            bounds = args
        elif isinstance(it, ast.Call) and self.query_iterator(it) is not None:
            return self.lower_query_loop(node, it, self.query_iterator(it))
        elif isinstance(it, ast.Name) and self.held_query(it) is not None:
            return self.lower_query_loop(node, it, self.held_query(it))
        elif _is_reversed_range(it):
            return self.lower_reversed_range(node, it.args[0])
        else:
            raise self.error(f"for loops must iterate over range(...) or a query (wp.hash_grid_query(...), "
                             f"wp.mesh_query_aabb(...), or a variable assigned one); got '{ast.unparse(it)}'", node)
        if self.unroll_for_static_index(node, bounds):
            return None
        bounds = [self.as_value(b, node) for b in bounds]
        has_break = _may_exit_loop(node.body)
        self.lower_loop("for", node, bounds, node.body, node.target.id, has_break, is_static)
        return None

    def lower_reversed_range(self, node, range_call):
        """`for i in reversed(range(a, b, s)): body` visits range(a, b, s)'s values last first: it is lowered as
        `for k in range(n): i = a + (n - 1 - k) * s; body`, with a, b, s evaluated once and n the range's length
        (whatever the sign of s)."""
        if range_call.keywords or not 1 <= len(range_call.args) <= 3:
            raise self.error("range() takes 1 to 3 positional arguments", node)
        args = list(range_call.args)
        if len(args) == 1:
            args = [ast.Constant(0), args[0]]
        if len(args) == 2:
            args.append(ast.Constant(1))
        tag = sum(1 for k in self.env if k.startswith("__rev_start"))
        start, stop, step, count, k = (f"__rev_{w}{tag}" for w in ("start", "stop", "step", "count", "k"))
        code = (f"{start} = int({ast.unparse(args[0])})\n{stop} = int({ast.unparse(args[1])})\n"
                f"{step} = int({ast.unparse(args[2])})\n"
                f"{count} = max(0, ({stop} - {start} + {step} - 1) // {step}) if {step} > 0 else "
                f"max(0, ({start} - {stop} - {step} - 1) // (-{step}))\n"
                f"for {k} in range({count}):\n    {node.target.id} = {start} + ({count} - 1 - {k}) * {step}\n")
        tree = ast.parse(code)
        loop = tree.body[-1]
        loop.body.extend(node.body)
        for stmt in tree.body:
            for sub in ast.walk(stmt):
                if hasattr(sub, "lineno") and sub not in node.body:
                    ast.copy_location(sub, node)
        ast.fix_missing_locations(tree)
        self.lower_stmts(tree.body)
        return None

    def query_iterator(self, call):
        """The `*_next` builtin that advances the query made by `call` (`wp.hash_grid_query(...)`), or None."""
        from .builtins.registry import QUERY_NEXT
        try:
            f = self.static_eval(call.func, quiet=True)
        except Exception:
            return None
        return QUERY_NEXT.get(getattr(f, "_wp_builtin_", None))

    def held_query(self, name_node):
        """The `*_next` builtin of the query held in the variable `name_node` (`neighbors =
        wp.hash_grid_query(...)`), or None when the variable holds no query made by a builtin call."""
        from .builtins.registry import QUERY_NEXT
        if name_node.id not in self.env:
            return None
        owner = getattr(self.env[name_node.id], "owner", None)
        if owner is not None and owner.opcode == "call" and owner.attrs.get("name") in QUERY_NEXT:
            return QUERY_NEXT[owner.attrs["name"]]
        return self.held_queries.get(name_node.id)  # a query that a loop has advanced (a loop's result now)

    def lower_query_loop(self, node, query, next_builtin):
        """`for i in wp.hash_grid_query(...): body` is `q = wp.hash_grid_query(...); i = int(0);
        while wp.hash_grid_query_next(q, i): body`, with `q` under a name the user cannot write. `for i in q`
        with `q` a variable holding a query advances `q` itself: as in Warp, a second loop over `q` finds the
        query used up and runs no iteration."""
        from . import _BuiltinFunction
        advance = _BuiltinFunction(next_builtin)
        n = sum(1 for k in self.env if k.startswith("__query"))
        next_name = f"__query_next{n}"
        if isinstance(query, ast.Name):
            query_name = query.id
            self.held_queries[query_name] = next_builtin
        else:
            query_name = f"__query{n}"
            self.env[query_name] = self.as_value(self.lower_expr(query), node)
        self.env[next_name] = Static(advance)
        index = node.target.id
        self.env[index] = self.emit("const", [], node, attrs={"value": 0, "weak": False}, names=[index])[0]
        test = ast.Call(func=ast.Name(id=next_name, ctx=ast.Load()),
                        args=[ast.Name(id=query_name, ctx=ast.Load()), ast.Name(id=index, ctx=ast.Load())],
                        keywords=[])
        loop = ast.While(test=test, body=node.body, orelse=[])
        ast.copy_location(loop, node)
        ast.fix_missing_locations(loop)
        return self.stmt_While(loop)

    def unroll_for_static_index(self, node, bounds) -> bool:
        """A loop over a constant range whose body uses its index inside `wp.static(...)` is unrolled here, the
        index bound to each compile-time value in turn (as Warp does); True when it was."""
        name = node.target.id
        if not self.static_uses(node.body, name):
            return False
        values = [b.obj if isinstance(b, Static) else None for b in bounds]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise self.error(f"wp.static(...) uses the loop index '{name}', but the loop's range is not a "
                             f"compile-time constant", node)
        if _may_exit_loop(node.body) or _contains(node.body, ast.Return, stop_at_loops=False):
            raise self.error(f"wp.static(...) uses the loop index '{name}' in a loop with break, continue or "
                             f"return, which cannot be unrolled at compile time", node)
        for v in range(*values):
            self.env[name] = Static(v)
            self.lower_stmts(node.body)
        return True

    def static_uses(self, stmts, name) -> bool:
        """Whether a `wp.static(...)` call in `stmts` reads `name`."""
        for stmt in stmts:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Call) and self.is_static_call(sub.func) and any(
                        isinstance(n, ast.Name) and n.id == name for a in sub.args for n in ast.walk(a)):
                    return True
        return False

    def stmt_While(self, node):
        if node.orelse:
            raise self.error("'while ... else' is not supported", node)
        if self.mutated_by_calls([node.test]):
            # a condition that updates variables (`while wp.hash_grid_query_next(query, index):`) runs at the top
            # of the body, where its updates are carried like any other: `while True: if not c: break; ...`
            guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=node.test), body=[ast.Break()], orelse=[])
            node = ast.While(test=ast.Constant(value=True), body=[guard, *node.body], orelse=[])
            ast.copy_location(node, node.body[0].test.operand)
            ast.fix_missing_locations(node)
        has_break = _may_exit_loop(node.body)
        self.lower_loop("while", node, [], node.body, None, has_break, False, test=node.test)
        return None

    def lower_loop(self, kind, node, bounds, body_stmts, index_name, has_break, is_static, test=None):
        outer_break = self.env.get(_BREAK)
        outer_cont = self.env.get(_CONT)
        outer_in_loop = self.in_loop
        if has_break:
            self.env[_BREAK] = self.const(False, node, weak=False)
        extra = [_BREAK] if has_break else []
        if _contains(body_stmts, ast.Return, stop_at_loops=False):
            extra.append(_RET)
            extra.extend(f"__retval{i}" for i in range(self.n_returns or 0))
        assigned = _assigned_names(body_stmts)
        self.declare_loop_locals(node, body_stmts, assigned - {index_name})
        split = self.split_tuples([n for n, v in self.env.items() if n in assigned and _tuple_items(v) is not None],
                                  node)
        extra.extend(k for _, keys in split.values() for k in keys)
        carried = self.loop_carried(body_stmts, extra)
        inits = [self.env[n] for n in carried]
        outer_block, before = self.block, dict(self.env)

        def body_env(block):
            outer_env, self.env = self.env, dict(before)
            for n in carried:
                a = ir.Value(name=n.lstrip("_"))
                block.args.append(a)
                self.env[n] = a
            self.join_tuples(split)
            env, self.env = self.env, outer_env
            return env

        regions = []
        if kind == "while":
            cond_block = ir.Block()
            self.block, self.env = cond_block, body_env(cond_block)
            c = self.as_value(self.lower_expr(test), node)
            if has_break:
                nb = self.emit("call", [self.env[_BREAK]], node, attrs={"name": "logical_not"})[0]
                c = self.emit("call", [self.truth(c, node), nb], node, attrs={"name": "logical_and"})[0]
            cond_block.yields = [c]
            regions.append(cond_block)
        body = ir.Block()
        if kind == "for":
            index = ir.Value(name=index_name)
            body.args.append(index)
        self.block, self.env = body, body_env(body)
        if kind == "for":
            self.env[index_name] = index
        self.env[_CONT] = self.const(False, node, weak=False)
        self.in_loop = True
        self.lower_stmts(body_stmts)
        self.in_loop = outer_in_loop
        self.resplit_tuples(split, node)
        body.yields = [self.env[n] for n in carried]
        regions.append(body)
        self.block = outer_block
        attrs = {"carried": carried, "static": is_static}
        if kind == "for" and has_break:
            attrs["break_flag"] = carried.index(_BREAK)
        results = self.emit(kind, bounds + inits, node, nresults=len(carried), regions=regions, attrs=attrs,
                            names=[n.lstrip("_") for n in carried])
        self.env = dict(before)
        for n, r in zip(carried, results):
            self.env[n] = r
        self.join_tuples(split)
        if has_break:
            if outer_break is None:
                self.env.pop(_BREAK, None)
            elif _contains(body_stmts, ast.Return):
                self.env[_BREAK] = self.env[_RET]  # a return inside this loop also leaves the enclosing loop
            else:
                self.env[_BREAK] = outer_break
        if outer_cont is None:
            self.env.pop(_CONT, None)
        else:
            self.env[_CONT] = outer_cont


class _Slot:
    """Stands for result `index` of an if op in a tuple being merged (see Frontend.merge_tuple_items)."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


def _fill_slots(items: tuple, results: list) -> tuple:
    return tuple(results[i.index] if isinstance(i, _Slot) else _fill_slots(i, results) if isinstance(i, tuple)
                 else i for i in items)


def _tuple_items(value):
    """The items of a tuple variable: a tuple of lowered values, or a compile-time tuple of numbers such as
    `(1.0, 2.0)`; None for anything else."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, Static) and isinstance(value.obj, tuple) and all(_is_number(v) for v in value.obj):
        return tuple(Static(v) for v in value.obj)
    return None


def _tuple_leaves(value, path=()):
    """(path, item) for each item of a (possibly nested) tuple, in order."""
    if not isinstance(value, tuple):
        return [(path, value)]
    return [leaf for i, v in enumerate(value) for leaf in _tuple_leaves(v, path + (i,))]


def _fill_leaves(template, leaves):
    """`template` with each of its items replaced by the next of `leaves`."""
    if not isinstance(template, tuple):
        return next(leaves)
    return tuple(_fill_leaves(t, leaves) for t in template)


def _tuple_shape(value):
    return tuple(_tuple_shape(v) for v in value) if isinstance(value, tuple) else None


def _describe_binding(value) -> str:
    items = _tuple_items(value)
    if items is not None:
        return f"a tuple of {len(items)} values"
    return "one value" if value is not None else "not defined"


class _ReturnCountGuessWrong(Exception):
    """The first `return` lowered gives another number of values than the slots were made for."""

    def __init__(self, count: int):
        super().__init__(count)
        self.count = count


def lower_function(source: FunctionSource, kind: str, name: str, param_types: list, resolve_static) -> ir.Function:
    """Lower `source` as a kernel or func whose parameters have `param_types`."""
    try:
        return Frontend(source, kind, name, param_types, resolve_static).lower()
    except _ReturnCountGuessWrong as wrong:
        return Frontend(source, kind, name, param_types, resolve_static, return_count=wrong.count).lower()
