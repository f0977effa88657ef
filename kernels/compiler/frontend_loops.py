"""Frontend, loops: `for` over ranges, reversed ranges and queries, `while`, static unrolling, and the names a loop
carries from one iteration to the next. Mixed into `frontend.Frontend` (see frontend.py for the overall scheme).
"""

from __future__ import annotations

import ast

from . import ir
from .lang import BuiltinFunction
from .frontend_expr import Static, _mutated_args
from .frontend_source import _BREAK, _CONT, _RET, _assigned_names, _contains, _is_reversed_range, _may_exit_loop
from .frontend_tuples import _tuple_items
from ..builtins.registry import QUERY_NEXT



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


class LoopLowering:
    """Lowers loops; needs the statement and expression lowering of the Frontend it is mixed into."""

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
                    self.src.lookup(name, package=False)
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
                    for idx in (_mutated_args(name, len(node.args) + len(node.keywords)) if name is not None else ()):
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
        constant = [b.obj if isinstance(b, Static) else None for b in bounds]
        bounds = [self.as_value(b, node) for b in bounds]
        has_break = _may_exit_loop(node.body)
        self.lower_loop("for", node, bounds, node.body, node.target.id, has_break, is_static)
        self.bind_index_after_loop(node, constant, has_break)
        return None

    def bind_index_after_loop(self, node, constant, has_break):
        """After a loop over a constant, non-empty range that runs to its end, the index holds the range's last
        value, as in Python (and in Warp, which reads it in a later `wp.static(...)`): `for i in range(3): ...`
        leaves i == 2, whatever i was before. Other loops leave the binding from before the loop."""
        name = node.target.id
        if has_break or name in _assigned_names(node.body) or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in constant):
            return
        values = range(*constant)
        if len(values):
            self.env[name] = Static(values[-1])

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
        try:
            f = self.static_eval(call.func, quiet=True)
        except Exception:
            return None
        return QUERY_NEXT.get(getattr(f, "_wp_builtin_", None))

    def held_query(self, name_node):
        """The `*_next` builtin of the query held in the variable `name_node` (`neighbors =
        wp.hash_grid_query(...)`), or None when the variable holds no query made by a builtin call."""
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
        advance = BuiltinFunction(next_builtin)
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
        for name in assigned:
            # a number known at compile time (a loop index after its constant range) that the body rebinds
            # changes from one iteration to the next: carried as a run-time value
            bound = self.env.get(name)
            if isinstance(bound, Static) and type(bound.obj) in (int, float):
                self.env[name] = self.as_value(bound, node)
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
        body.yields = [self.as_value(self.env[n], node) for n in carried]  # an inner loop may leave a Static
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
