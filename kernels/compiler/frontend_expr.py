"""Frontend, expressions: Python expressions -> IR values (or compile-time `Static` objects).

Mixed into `frontend.Frontend`, which lowers statements; see frontend.py for the overall scheme.
"""

from __future__ import annotations

import ast
import copy
import builtins as py_builtins
import types

from . import ir, scalar_semantics
from ..types import Composite
from ..typesys import ArrayValue
from .function import UNBOUND_FUNCTION, grad, is_function_object
from ..builtins import BUILTINS
from .frontend_source import FunctionSource
from ..errors import CompileKeyError, CompileTypeError, CompileValueError

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "mul", ast.BitAnd: "bit_and", ast.BitOr: "bit_or",
           ast.BitXor: "bit_xor", ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "logical_not"}

# Python builtins that mean a kernel builtin of the same (or another) name inside kernels.
_PY_BUILTIN_MAP = {py_builtins.min: "min", py_builtins.max: "max", py_builtins.abs: "abs", py_builtins.pow: "pow",
                   py_builtins.round: "round", py_builtins.print: "print", py_builtins.len: "len"}


class Static:
    """A compile-time Python object reached from kernel code (a constant, type, module, function, tuple)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


class ExpressionLowering:
    """Expression lowering for `frontend.Frontend` (uses its `emit`, `error`, `env`, `src` and `block`)."""

    def truth(self, v, node):
        return self.emit("call", [v], node, attrs={"name": "bool"})[0]

    def lower_expr(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"Construct `ast.{type(node).__name__}` not supported in kernels.", node)
        return method(node)

    def expr_Constant(self, node):
        return Static(node.value)

    def lookup_name(self, name, node):
        if name in self.env:
            return self.env[name]
        try:
            obj = self.src.lookup(name)
        except KeyError:
            # Warp's wording (a KeyError there too), with Python's
            raise self.error(f"Referencing undefined symbol: {name} (name '{name}' is not defined)", node,
                             CompileKeyError) from None
        if _is_array_object(obj):
            # its contents would be read once, at compile time, and later changes silently ignored
            raise self.error(f"Invalid external reference type: {type(obj)}: '{name}' is an array defined outside "
                             "the kernel; pass it as a kernel argument", node, CompileTypeError)
        return Static(obj)

    def expr_Name(self, node):
        return self.lookup_name(node.id, node)

    def expr_Attribute(self, node):
        base = self.lower_expr(node.value)
        if isinstance(base, Static):
            try:
                obj = getattr(base.obj, node.attr)
            except AttributeError:
                raise self.error(f"'{ast.unparse(node.value)}' has no attribute '{node.attr}'", node) from None
            if _is_array_object(obj):  # as for a global array: read once at compile time, later changes lost
                raise self.error(f"Invalid external reference type: {type(obj)}: '{ast.unparse(node)}' is an array "
                                 "reached at compile time; pass it (or its struct) as a kernel argument", node,
                                 CompileTypeError)
            return Static(obj)
        if isinstance(base, tuple):
            raise self.error("attribute of a tuple", node)
        return self.emit("getattr", [base], node, attrs={"attr": node.attr, "base": ast.unparse(node.value)})[0]

    def expr_BinOp(self, node):
        name = _BINOPS.get(type(node.op))
        if name is None:
            raise self.error(f"unsupported operator {type(node.op).__name__}", node)
        a, b = self.lower_expr(node.left), self.lower_expr(node.right)
        if isinstance(a, Static) and isinstance(b, Static) and _is_number(a.obj) and _is_number(b.obj):
            try:
                return Static(scalar_semantics.fold_binary(name, a.obj, b.obj))
            except scalar_semantics.ScalarSemanticsError as e:
                raise self.error(f"{ast.unparse(node)}: {e}", node) from None
        return self.binary_call(name, self.as_value(a, node), self.as_value(b, node), node,
                                matmul=isinstance(node.op, ast.MatMult))

    def binary_call(self, name, a, b, node, *, matmul=False, inplace=False):
        """`a <op> b`: the builtin operator `name`, or, as in Warp, a @wp.func of that name in the function's
        scope where one of its overloads takes the operands' types (type inference decides). `inplace`: from
        `x <op>= b` (type inference refuses some of those on structs, as Warp)."""
        attrs = {"name": name, "matmul": matmul}
        if inplace:
            attrs["inplace"] = True
        user = self.user_operator(name)
        if user is not None:
            attrs["user_op"] = user
        return self.emit("call", [a, b], node, attrs=attrs)[0]

    def expr_UnaryOp(self, node):
        a = self.lower_expr(node.operand)
        if isinstance(a, Static) and _is_number(a.obj):
            if isinstance(node.op, ast.USub):
                return Static(-a.obj)
            if isinstance(node.op, ast.Not):
                return Static(not a.obj)
        a = self.as_value(a, node)
        if isinstance(node.op, ast.Not):
            a = self.truth(a, node)
        return self.emit("call", [a], node, attrs={"name": _UNARY[type(node.op)]})[0]

    def expr_BoolOp(self, node):
        name = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        values = [self.lower_expr(v) for v in node.values]
        if all(isinstance(v, Static) for v in values):
            objs = [v.obj for v in values]
            return Static(all(objs) if name == "logical_and" else any(objs))
        acc = self.truth(self.as_value(values[0], node), node)
        for v in values[1:]:
            acc = self.emit("call", [acc, self.truth(self.as_value(v, node), node)], node, attrs={"name": name})[0]
        return acc

    def expr_Compare(self, node):
        left = self.lower_expr(node.left)
        acc = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.lower_expr(right_node)
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                raise self.error(f"unsupported comparison '{type(op).__name__}'", node)
            if isinstance(left, Static) and isinstance(right, Static):
                try:
                    c = Static(_fold_compare(_CMPOPS[type(op)], left.obj, right.obj))
                except TypeError as e:
                    raise self.error(f"cannot compare these compile-time values: {e}", node) from None
            else:
                c = self.emit("call", [self.as_value(left, node), self.as_value(right, node)], node,
                              attrs={"name": _CMPOPS[type(op)]})[0]
            if acc is None:
                acc = c
            elif isinstance(acc, Static) and isinstance(c, Static):
                acc = Static(acc.obj and c.obj)
            else:
                acc = self.emit("call", [self.as_value(acc, node), self.as_value(c, node)], node,
                                attrs={"name": "logical_and"})[0]
            left = right
        return acc

    def expr_IfExp(self, node):
        test = self.lower_expr(node.test)
        if isinstance(test, Static):
            return self.lower_expr(node.body if test.obj else node.orelse)
        cond = self.as_value(test, node)
        outer, blocks = self.block, []
        for branch in (node.body, node.orelse):
            self.block = ir.Block()
            v = self.as_value(self.lower_expr(branch), node)
            self.block.yields = [v]
            blocks.append(self.block)
        self.block = outer
        return self.emit("if", [cond], node, nresults=1, regions=blocks)[0]

    def expr_Tuple(self, node):
        items = tuple(self.lower_expr(e) for e in node.elts)
        if all(isinstance(i, Static) for i in items):
            return Static(tuple(i.obj for i in items))
        return items

    def expr_List(self, node):
        raise self.error("List constructs are not supported in kernels. Use vectors like `wp.vec3()` for small "
                         "fixed-size collections, or `wp.zeros(shape=N, dtype=...)` for stack-allocated arrays.", node)

    def lower_indices(self, slice_node, node) -> list:
        if isinstance(slice_node, ast.Tuple):
            items = slice_node.elts
        else:
            items = [slice_node]
        out = []
        for it in items:
            out.append(self.lower_slice(it, node) if isinstance(it, ast.Slice)
                       else self.as_value(self.lower_expr(it), node))
        return out

    def lower_slice(self, item, node):
        """`start:stop:step` in a subscript: a `slice` op whose operands are the bounds given (attr "parts" says
        which); type inference reads them (constants for vectors and matrices, any ints for arrays)."""
        parts = (item.lower is not None, item.upper is not None, item.step is not None)
        bounds = [self.as_value(self.lower_expr(b), node) for b in (item.lower, item.upper, item.step) if b is not None]
        return self.emit("slice", bounds, node, attrs={"parts": parts})[0]

    def lower_slice_call(self, node):
        """`slice(stop)`, `slice(start, stop[, step])` (Python's forms; None leaves a bound out): the `slice` op
        that `start:stop:step` in a subscript makes (Warp 1.19 takes them in tile_view offsets)."""
        if node.keywords or not 1 <= len(node.args) <= 3 or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error("slice() takes 1 to 3 positional arguments: slice(stop) or slice(start, stop[, step])",
                             node)
        given = [None, node.args[0], None] if len(node.args) == 1 else list(node.args) + [None] * (3 - len(node.args))
        given = [None if isinstance(a, ast.Constant) and a.value is None else a for a in given]
        parts = tuple(a is not None for a in given)
        bounds = [self.as_value(self.lower_expr(a), node) for a in given if a is not None]
        return self.emit("slice", bounds, node, attrs={"parts": parts})[0]

    def expr_Subscript(self, node):
        # f(x)[i] picks one of the results of a function that returns several
        base = self.lower_call_value(node.value) if isinstance(node.value, ast.Call) else self.lower_expr(node.value)
        if isinstance(base, Static):
            obj = base.obj
            if isinstance(obj, (tuple, list)):
                idx = self.lower_expr(node.slice)
                if isinstance(idx, Static):
                    return Static(obj[idx.obj])
            # generic type subscripts such as wp.array[float] are compile-time objects
            try:
                return Static(obj[self.static_eval(node.slice)])
            except Exception:
                if not isinstance(obj, Composite):
                    raise self.error(f"cannot index the compile-time value '{ast.unparse(node.value)}'",
                                     node) from None
            base = self.as_value(base, node)  # a constant vector or matrix read at a run-time index
        if isinstance(base, tuple):
            idx = self.lower_expr(node.slice)
            if not isinstance(idx, Static) or not isinstance(idx.obj, int):
                raise self.error("a tuple can only be indexed by a constant integer", node)
            if not -len(base) <= idx.obj < len(base):
                raise self.error(f"index {idx.obj} is out of range for a tuple of {len(base)} values", node)
            return base[idx.obj]
        indices = self.lower_indices(node.slice, node)
        return self.emit("getitem", [base, *indices], node)[0]

    def is_static_call(self, func_node) -> bool:
        try:
            f = self.static_eval(func_node, quiet=True)
        except Exception:
            return False
        return getattr(f, "__name__", "") == "static" and getattr(f, "__module__", "").startswith("kernels")

    def _reads_runtime_values(self, node) -> bool:
        """Whether `node` is `len(x)` of a run-time kernel variable x (not a compile-time object)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name)):
            return False
        bound = self.env.get(node.args[0].id)
        return bound is not None and not isinstance(bound, Static)

    def static_lengths(self, node):
        """`node` with each `len(x)` of a run-time variable x whose type fixes its length (a vector, matrix,
        quaternion or transform: a parameter, a constructor's result or a builtin's) replaced by that length, as
        Warp's static expressions allow (`wp.static(len(v) + 1)`)."""
        frontend = self

        class _Lengths(ast.NodeTransformer):
            def visit_Call(self, call):
                self.generic_visit(call)
                if (isinstance(call.func, ast.Name) and call.func.id == "len" and len(call.args) == 1
                        and isinstance(call.args[0], ast.Name)):
                    n = _static_length(frontend.env.get(call.args[0].id))
                    if n is not None:
                        return ast.copy_location(ast.Constant(n), call)
                return call

        if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len"
                   for n in ast.walk(node)):
            return node
        return ast.fix_missing_locations(_Lengths().visit(copy.deepcopy(node)))

    def static_eval(self, node, quiet=False):
        """Evaluate an expression in Python at compile time (module globals, closure, and local Statics)."""
        local = {k: v.obj for k, v in self.env.items() if isinstance(v, Static)}
        # a local whose value here is a literal (`n = 3`) is a constant, as Warp's static context has it
        local.update({k: v.owner.attrs["value"] for k, v in self.env.items()
                      if isinstance(v, ir.Value) and v.owner is not None and v.owner.opcode == "const"
                      and _is_number(v.owner.attrs.get("value")) and not k.startswith("__")})
        node = self.static_lengths(node)
        for n in ast.walk(node):
            # a run-time local shadows any global of its name: it has no compile-time value
            if isinstance(n, ast.Name) and n.id in self.env and n.id not in local and not n.id.startswith("__"):
                raise self.error(f"Error evaluating static expression: name '{n.id}' is not defined. Make sure all "
                                 f"variables used in the static expression are constant. '{n.id}' is a run-time "
                                 f"variable of the kernel.", node)
        namespace = dict(self.src.globals)
        namespace.update(self.src.closure)
        namespace.update(local)
        try:
            return eval(compile(ast.Expression(body=node), self.src.file, "eval"), namespace)
        except Exception as e:
            if quiet:
                raise
            raise self.error(f"Error evaluating static expression: {e} (evaluating '{ast.unparse(node)}' at "
                             f"compile time)", node) from None

    def expr_Call(self, node):
        res = self.lower_call(node, nresults=1)
        return res[0] if isinstance(res, list) else res

    def lower_call_value(self, node):
        """A call whose results are kept together (`t = f(x)`, `f(x)[i]`): its value, or a tuple of its values
        when the callee returns several (as Warp's tuples)."""
        results = self.lower_call(node, nresults=None)
        return results[0] if len(results) == 1 else tuple(results)

    def lower_call(self, node, nresults):
        """Lower a call that gives `nresults` values; None: as many as the callee returns (at least one)."""
        if self.is_static_call(node.func):
            if len(node.args) != 1:
                raise self.error("wp.static takes one expression", node)
            if self._reads_runtime_values(node.args[0]):
                # `wp.static(len(v))` of a kernel variable: its value depends only on v's type, which type
                # inference folds to a constant; lower it as ordinary code
                return [self.lower_call_value(node.args[0]) if isinstance(node.args[0], ast.Call)
                        else self.lower_expr(node.args[0])]
            key = FunctionSource.static_key(node.args[0])
            early = getattr(self.src, "early_statics", {})
            value = early[key] if key in early else self.static_eval(node.args[0])
            return self._static_result(value, nresults, node)
        type_of = self.type_of_value(node.func)
        if type_of is not None:
            return self.construct_type_of(node, *type_of)
        callee = self.lower_expr(node.func)
        if not isinstance(callee, Static):
            raise self.error(f"'{ast.unparse(node.func)}' is not callable in a kernel", node)
        obj = callee.obj
        if obj is UNBOUND_FUNCTION:  # only while counting results (see frontend.lower): one value
            return [self.const(0, node, weak=False)]
        if obj is grad:  # `wp.grad(f)`: a compile-time value, called (now or through a local) like a function
            return [Static(self.static_eval(node))]
        if getattr(obj, "_wp_address_of_", False):  # as an argument of a user call, lowered by that call
            self.check_address(node)
            raise self.error("wp.address_of(x) is supported as an argument of a function call only, of a "
                             "@wp.func or @wp.func_native (the callee gets the address of x's storage for the "
                             "call)", node)
        resolved = self.resolve_static(obj)
        if resolved is None and obj in _PY_BUILTIN_MAP:
            resolved = ("builtin", _PY_BUILTIN_MAP[obj])
        if resolved is None and obj in (float, int, bool):
            resolved = ("type", obj)
        if resolved is None and obj is slice:
            return [self.lower_slice_call(node)]
        if resolved is None:
            raise self.error(f"'{ast.unparse(node.func)}' is not a kernel builtin, @func or type", node)
        what, target = resolved
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        n_out = _output_argument_count(target, len(node.args)) \
            if what == "builtin" and not node.keywords and not starred else 0
        if n_out:
            return self._call_with_outputs(node, target, n_out)
        addresses = self.address_positions(node) if what == "func" else ()
        if resolved == ("builtin", "len"):
            args = [self.lower_call_value(a) if isinstance(a, ast.Call) else self.lower_expr(a) for a in node.args]
        else:
            args = [self.lower_starred(a.value) if isinstance(a, ast.Starred)
                    else self.lower_expr(a.args[0]) if i in addresses else self.lower_expr(a)
                    for i, a in enumerate(node.args)]
        kwargs = {k.arg: self.lower_expr(k.value) for k in node.keywords}
        if any(k is None for k in kwargs):
            raise self.error("**kwargs are not supported in kernel calls", node)
        if what == "builtin" and all(isinstance(a, Static) for a in args) and not kwargs and target in ("min", "max", "abs") \
                and all(_is_number(a.obj) for a in args):
            return [Static({"min": min, "max": max, "abs": abs}[target](*(a.obj for a in args)))]
        if what == "builtin" and target == "len" and len(args) == 1 and isinstance(args[0], tuple):
            return [Static(len(args[0]))]
        operands = [self.as_value(a, node) for a in args] + [self.as_value(v, node) for v in kwargs.values()]
        node_nresults = nresults
        if nresults is None:  # (starred arguments: their count is known once types are)
            nresults = self.result_count(what, target, None if starred else len(operands), node)
        attrs = {"kwargs": list(kwargs), "nresults": nresults}
        if what == "type":
            return self.emit("construct", operands, node, attrs={**attrs, "type": target})
        if what in ("grad", "grad_builtin"):
            # the gradient of @func or builtin `target` w.r.t. each argument: one value per argument
            label = target if isinstance(target, str) else target.name
            # a function passed to a wp.Function parameter has no gradient: one value per other argument
            n_grads = len(operands) - sum(1 for a in list(args) + list(kwargs.values())
                                          if isinstance(a, Static) and is_function_object(a.obj))
            if attrs["nresults"] == len(operands) and n_grads != len(operands) and node_nresults is None:
                nresults = attrs["nresults"] = n_grads
            if nresults != n_grads:
                raise self.error(f"wp.grad({label})(...) gives one gradient per argument ({n_grads}), "
                                 f"but {nresults} value(s) are expected here", node)
            attrs.update({"func": target} if what == "grad" else {"name": target})
            attrs["gradient"] = True
            return self.emit("call", operands, node, nresults=n_grads, attrs=attrs)
        if what == "builtin":
            attrs["name"] = target
            mutated = tuple(i for i in _mutated_args(target, len(node.args) + len(node.keywords))
                            if i < len(node.args))
            if mutated and starred:
                raise self.error(f"'{target}' changes its arguments in place: they cannot be starred", node)
            if mutated:
                # the call also yields each updated argument, rebound to the caller's variable
                attrs["mutates"] = mutated
                results = self.emit("call", operands, node, nresults=nresults + len(mutated), attrs=attrs)
                for idx, updated in zip(mutated, results[nresults:]):
                    if isinstance(node.args[idx], ast.Name):
                        self.env[node.args[idx].id] = updated
                        updated.name = node.args[idx].id
                return results[:nresults]
        else:
            attrs["func"] = target
            self.check_tile_writes(target, node)
            references = target.reference_indices(len(operands)) if hasattr(target, "reference_indices") else ()
            if references is None:
                raise self.error(f"the overloads of '{target.name}' differ in which parameters are wp.ref[T]", node)
            if references or addresses:  # written back to the arguments (frontend_reference.py)
                return self.call_with_references(node, target, references, operands, attrs, addresses)
        return self.emit("call", operands, node, nresults=nresults, attrs=attrs)

    def type_of_value(self, func):
        """Warp's generic constructors: `type(x)(...)`, `type(x).dtype(...)`, `a.dtype(...)` of a run-time value
        x (or local a): (the value, the attribute names after its type), or None for any other callee."""
        steps = []
        base = func
        while isinstance(base, ast.Attribute):
            steps.insert(0, base.attr)
            base = base.value
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "type" \
                and len(base.args) == 1 and not base.keywords:
            callee = self.lookup_name("type", base.func)
            if isinstance(callee, Static) and callee.obj is type:
                value = self.lower_expr(base.args[0])
                if isinstance(value, Static):
                    raise self.error("type(...) of a compile-time value in a kernel: use the type itself", base)
                return self.as_value(value, base), tuple(steps)
            return None
        if steps and steps[0] == "dtype" and isinstance(base, ast.Name) and base.id in self.env:
            value = self.env[base.id]
            if not isinstance(value, (Static, tuple)):
                return value, tuple(steps)
        return None

    def construct_type_of(self, node, value, steps):
        """A constructor call whose type is that of a run-time value (see `type_of_value`): type inference reads
        the type from the first operand."""
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error("starred arguments of a generic constructor are not supported", node)
        args = [self.as_value(self.lower_expr(a), node) for a in node.args]
        kwargs = {k.arg: self.as_value(self.lower_expr(k.value), node) for k in node.keywords}
        attrs = {"kwargs": list(kwargs), "nresults": 1, "type": None, "type_of": steps}
        return self.emit("construct", [value, *args, *kwargs.values()], node, attrs=attrs)

    def _call_with_outputs(self, node, target, n_out):
        """Warp's output-argument form of a builtin that gives several values: `wp.svd3(A, U, sigma, V)` is
        `U, sigma, V = wp.svd3(A)`; the trailing arguments must be variable names."""
        inputs, outputs = node.args[:-n_out], node.args[-n_out:]
        for out in outputs:
            if not isinstance(out, ast.Name):
                raise self.error(f"the output arguments of {target}() must be variable names, got "
                                 f"'{ast.unparse(out)}'", node)
        operands = [self.as_value(self.lower_expr(a), node) for a in inputs]
        results = self.emit("call", operands, node, nresults=n_out,
                            attrs={"name": target, "kwargs": [], "nresults": n_out})
        for out, value in zip(outputs, results):
            self.assign(out, value, node)
        return results[:1]

    def result_count(self, what, target, nargs, node) -> int:
        """How many values a call of a builtin, @func or type gives, before types are known: what the builtin
        table or the function's returns say; 1 when that depends on the arguments' types."""
        if what in ("grad", "grad_builtin"):
            n = nargs
        elif what == "func":
            n = target.result_count(nargs, self.src.loc(node), self.name, self.lower_callee)
        elif what == "builtin":
            n = _builtin_result_count(target, nargs)
        else:
            n = 1
        # a call that gives nothing asks for one value: type inference reports its use
        return n if n else 1

    def lower_starred(self, node):
        """`*x` in a call's arguments (Warp's unpacking): a `starred` value that type inference replaces by the
        elements of x, a vector's components, a quaternion's, a matrix's rows, or those picked by a slice with
        compile-time bounds (`*v[1:3]`, `*arr[0:4:2]`; an array is unpacked only through such a slice)."""
        bounds = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            bounds = tuple(self._slice_bound(b) for b in (node.slice.lower, node.slice.upper, node.slice.step))
            node = node.value
        base = self.lower_call_value(node) if isinstance(node, ast.Call) else self.lower_expr(node)
        return self.emit("starred", [self.as_value(base, node)], node, attrs={"bounds": bounds})[0]

    def _slice_bound(self, node):
        """A bound of an unpacked slice: an int known at compile time, or None where it is left out."""
        if node is None:
            return None
        value = self.lower_expr(node)
        if not isinstance(value, Static):
            raise self.error("Slice component must be a compile-time constant.", node, CompileValueError)
        if not isinstance(value.obj, int) or isinstance(value.obj, bool):
            raise self.error("Slice component must be an integer.", node, CompileTypeError)
        return value.obj

    def _static_result(self, value, nresults, node):
        why = _unsupported_static(value)
        if why is not None:  # Warp's wording
            raise self.error(f"Static expression returns an unsupported value: {why}", node)
        if nresults in (1, None):
            return [Static(value)]
        if isinstance(value, tuple) and len(value) == nresults:
            return [Static(v) for v in value]
        raise self.error(f"wp.static value cannot be unpacked into {nresults} names", node)

    # guards against stray ast node types
    def expr_JoinedStr(self, node):
        raise self.error("f-strings are not supported in kernels; use wp.printf('%f', x)", node)

    def expr_Lambda(self, node):
        raise self.error("lambdas are not supported in kernels; define a @wp.func", node)



def _type_length(t):
    """The length of a value of composite type or register pattern `t` (None when it has none or is unknown)."""
    from ..builtins import registry

    if isinstance(t, registry.X):
        return 7
    if isinstance(t, registry.Q):
        return 4
    if isinstance(t, registry.V):
        return t.n if isinstance(t.n, int) else None
    if isinstance(t, registry.M):
        return t.rows if isinstance(t.rows, int) else None
    if isinstance(t, type) and hasattr(t, "_shape_"):
        try:
            return len(t())
        except Exception:
            return None
    return None


def _static_length(value):
    """The length fixed by the type of run-time value `value` (a kernel variable), or None."""
    if not isinstance(value, ir.Value):
        return None
    if value.type is not None:
        return _type_length(value.type)
    op = value.owner
    if op is None:
        return None
    if op.opcode == "construct":
        return _type_length(op.attrs.get("type"))
    if op.opcode == "call" and isinstance(op.attrs.get("name"), str) and len(op.results) == 1:
        lengths = {_type_length(ov.ret) for ov in BUILTINS.get(op.attrs["name"], ())}
        return lengths.pop() if len(lengths) == 1 else None
    return None


def _mutated_args(name, nargs=None) -> tuple:
    """Positions of the arguments that builtin `name` updates in place (empty when none). With `nargs`, the
    overloads taking that many arguments decide when there are any: `mesh_query_ray(id, start, dir, max_t, root)`
    updates nothing, though its 10-argument form updates arguments 4 to 9."""
    overloads = BUILTINS.get(name, ())
    same_count = [ov for ov in overloads if nargs is not None and len(ov.args) == nargs]
    for ov in same_count or overloads:
        mutated = ov.mutated_args()
        if mutated:
            return mutated
    return ()


def _output_argument_count(name, nargs):
    """How many trailing arguments of a call of builtin `name` with `nargs` arguments are outputs (Warp's form
    `f(x, out1, out2)` of a builtin that returns (out1, out2)); 0 when the call is an ordinary one."""
    overloads = BUILTINS.get(name, ())
    if any(len(ov.args) == nargs for ov in overloads):
        return 0
    for ov in overloads:
        if isinstance(ov.ret, tuple) and len(ov.ret) > 1 and len(ov.args) + len(ov.ret) == nargs:
            return len(ov.ret)
    return 0


def _builtin_result_count(name, nargs=None):
    """How many values builtin `name` gives when all its overloads (those taking `nargs` arguments, if any do)
    agree, else None. The arity tells `U, s, V = wp.svd3(A)` from the out-parameter form `wp.svd3(A, U, s, V)`."""
    overloads = BUILTINS.get(name, ())
    if nargs is not None and any(len(ov.args) == nargs for ov in overloads):
        overloads = [ov for ov in overloads if len(ov.args) == nargs]
    counts = set()
    for ov in overloads:
        if callable(ov.ret) and not isinstance(ov.ret, type):
            return None  # a rule computed from the argument types
        counts.add(0 if ov.ret is None else len(ov.ret) if isinstance(ov.ret, tuple) else 1)
    return counts.pop() if len(counts) == 1 else None


def _unsupported_static(value, path=None):
    """Why the value of a `wp.static(...)` cannot be a kernel constant (an array, anywhere in a struct; None),
    or None when it can."""
    if value is None and path is None:
        return "None is returned"
    if _is_array_object(value):
        where = f" at {path}" if path else ""
        return f"a Warp array cannot be created inside Warp kernels{where}"
    info = getattr(type(value), "_wp_struct_", None)
    if info is not None and not isinstance(value, type):
        for name in info.fields:
            why = _unsupported_static(getattr(value, name, None), f"{path or type(value).__name__}.{name}")
            if why is not None:
                return why if path else ("the returned Warp struct contains a data type that cannot be "
                                         f"constructed inside Warp kernels: {why}")
        return None
    cls = type(value)
    # an instance of a user's own class (Warp accepts values, strings, functions and structs; Python's own objects
    # such as ranges, tuples and types and the package's stay usable here, as in kernels before)
    if not isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)) \
            and not any(base.__module__.partition(".")[0] in _STATIC_VALUE_PACKAGES
                        for base in cls.__mro__ if base is not object):
        return f"value of type {cls} cannot be constructed inside Warp kernels"
    return None


_STATIC_VALUE_PACKAGES = {"builtins", "kernels", "numpy", "autodiff", "warp_shim", "typing", "enum",
                          "functools", "math"}


def _is_array_object(obj) -> bool:
    """A toolkit or numpy array (not a numpy scalar, which is a constant like a Python number)."""
    import numpy as np
    return isinstance(obj, (ArrayValue, np.ndarray))


def _is_number(x):
    return isinstance(x, (bool, int, float))


def _fold_compare(name, a, b):
    """A comparison of compile-time objects: numbers as the native code compares literals, others in Python."""
    if _is_number(a) and _is_number(b):
        return scalar_semantics.fold_compare(name, a, b)
    import operator
    return {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
            "ge": operator.ge}[name](a, b)
