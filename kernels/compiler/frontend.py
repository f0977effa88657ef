"""Frontend: the Python AST of a kernel or function -> untyped IR (structured SSA, see ir.py).

This module lowers statements and branches; frontend_loops.py lowers loops, frontend_expr.py expressions;
frontend_source.py holds the parsed source and syntax queries, frontend_tuples.py the helpers for tuple variables.

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

from . import ir
from ..errors import CompileError, CompileTypeError, KernelError
from .frontend_expr import _BINOPS, ExpressionLowering, Static, _mutated_args  # noqa: F401  (Static re-exported)
from .frontend_loops import LoopLowering
from .frontend_tile_refs import refuse_observed_tile_writes
from .function import UNBOUND_FUNCTION, Func, FuncGradient, is_function_argument, reference_params
from .frontend_reference import ReferenceLowering
from .frontend_adjoint import AdjointAccess
from .frontend_source import (  # noqa: F401  (FunctionSource: the compiler's entry point takes one)
    _BREAK, _CONT, _RET, FunctionSource, _walk_no_nested_defs)
from .frontend_tuples import (_Slot, _describe_binding, _fill_leaves, _fill_slots, _tuple_items, _tuple_leaves,
                              _tuple_shape)


class Frontend(LoopLowering, ExpressionLowering, ReferenceLowering, AdjointAccess):
    """Lowers one Python function to an `ir.Function`. `param_types` gives each parameter's (canonical) type."""

    def __init__(self, source: FunctionSource, kind: str, name: str, param_types: list, resolve_static, *,
                 return_count=None):
        self.src = source
        self.kind = kind
        self.statement = None  # the statement being lowered (see lower_stmts)
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
            if is_function_argument(t):  # a `wp.Function` parameter: the function passed, by name
                self.env[a.arg] = Static(t.obj)
                continue
            if t is Func:  # not specialised yet (counting the function's results): calls of it give one value
                self.env[a.arg] = Static(UNBOUND_FUNCTION)
                continue
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
        references = reference_params(self.src)
        if references and self.kind == "kernel":
            raise self.error("wp.ref[T] parameters are for @wp.func functions, not kernels", fdef, CompileTypeError)
        statements = self.adjoint_body(fdef.body) if self.kind == "func" else fdef.body
        self.bind_adjoints(params, fdef)
        self.lower_stmts(statements)
        if self.kind == "func":
            self.store_adjoints(params, fdef.body[-1])
            rets = [self.env[f"__retval{i}"] for i in range(self.n_returns or 0)]
            # the final values of wp.ref[T] parameters follow the results: the caller writes them back
            # (by source position: `wp.Function` parameters are no run-time parameters, so not in `names`)
            rets += [self.as_value(self.env[args.args[i].arg], fdef) for i in references]
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

    def check_tile_writes(self, func, call):
        """Refuse a call whose in-place change of a tile argument the caller would see in Warp (see
        frontend_tile_refs)."""
        refuse_observed_tile_writes(self, func, call, self.statement, _mutated_args)

    def lower_stmts(self, stmts):
        for i, stmt in enumerate(stmts):
            self.statement = stmt  # the statement whose expressions are lowered now (tile writes check reads)
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

    def lower_callee(self, source: FunctionSource, kind: str, name: str, param_types: list) -> ir.Function:
        """Another function's source lowered as this frontend lowers (for how many values a call of it gives)."""
        return lower_function(source, kind, name, param_types, self.resolve_static)

    def check_rebind(self, name, value, node):
        """A local bound to a function or to `wp.grad(f)` cannot be bound to anything else: kernels have no
        function pointers, so the call sites could not follow (Warp refuses it too)."""
        old = self.env.get(name)
        if not isinstance(old, Static):
            return
        new = value.obj if isinstance(value, Static) else None
        if isinstance(old.obj, FuncGradient):
            if not (isinstance(new, FuncGradient) and new.func is old.obj.func):
                raise self.error(f"Cannot reassign local '{name}': it is bound to wp.{old.obj.name}, a function "
                                 f"(kernels have no function pointers); use another name", node)
        elif isinstance(old.obj, Func) and new is not old.obj:
            what = "another function" if isinstance(new, (Func, FuncGradient)) else "a non-function value"
            raise self.error(f"rebinding function-valued local '{name}' to {what} is not supported (kernels have "
                             f"no function pointers); use another name", node)

    def assign(self, target, value, node):
        """Bind `value` to a name, or store it into a part of a value (`a[i].x = v`: a `setpath`, see
        passes/typeinfer_paths.py)."""
        if isinstance(target, ast.Name):
            self.check_rebind(target.id, value, node)
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
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            # Python evaluates the target's subexpressions (once) before the value
            root_node, root, operands, steps = self.lower_target_path(target, node)
            value = self.as_value(self.lower_expr(node.value), node)
            new = self.emit("augpath", [root, *operands, value], node,
                            attrs={"steps": steps, "op": opname, "user_op": self.user_operator(opname)})[0]
            self.rebind_root(root_node, new, node)
        elif isinstance(target, ast.Name):
            self.check_rebind(target.id, None, node)
            value = self.as_value(self.lower_expr(node.value), node)
            cur = self.lookup_name(target.id, target)
            res = self.binary_call(opname, self.as_value(cur, node), value, node, inplace=True)
            if self.kind == "func" and target.id in self.reference_names():
                res.owner.attrs["reference_update"] = target.id  # type inference: the result keeps T
            self.assign(target, res, node)
        else:
            raise self.error("unsupported augmented assignment target", node)
        return None

    def user_operator(self, opname):
        """A @wp.func named like the operator (`add`, `mul`, `bit_and`, ...) in the function's scope, or None. As
        in Warp, it replaces the builtin operator where one of its overloads takes the operands' types (type
        inference decides): in `a + b`, `x += b` and updates of array slots."""
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
            if isinstance(a, ir.Value) != isinstance(b, ir.Value) or isinstance(a, Static) and isinstance(b, Static):
                # a number known at compile time on one path (a loop index after its constant range) is a value
                a, b = (self.number_as_value(x, blk, node) for x, blk in zip((a, b), blocks))
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

    def number_as_value(self, x, block, node):
        """`x` as a value made at the end of `block` when it is a compile-time number; otherwise `x` itself."""
        if not (isinstance(x, Static) and type(x.obj) in (int, float)):
            return x
        outer, self.block = self.block, block
        try:
            return self.as_value(x, node)
        finally:
            self.block = outer

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
