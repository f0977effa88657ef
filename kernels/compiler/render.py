"""Renderer: typed IR -> C++ (CPU) or CUDA C++ source. The only place in the compiler that writes source text.

One renderer, two dialects: they differ only in the kernel entry points (an OpenMP loop over thread ids on the CPU,
a `__global__` function with a grid-stride loop on CUDA) and a few qualifiers. Every SSA value becomes a C++ local
declared at the top of its function, so that the adjoint section can read values computed in nested blocks.
Names are renumbered per function, so the output is deterministic (golden-source tests rely on this).
"""

from __future__ import annotations

import math

import numpy as np

from . import ir
from .. import types as T
from ..errors import CompileError
from ..typesys import ArrayType, StaticType, TileType, has_native_value, is_struct

CPU, CUDA = "cpu", "cuda"


#: C++ keywords that are valid Python names: a kernel parameter or struct field named like one (`default`,
#: `register`, `new`) is the C++ member `<name>_kw`, so that the generated source compiles
CPP_KEYWORDS = frozenset(
    "alignas alignof and_eq asm auto bitand bitor bool case catch char char8_t char16_t char32_t compl concept "
    "const consteval constexpr constinit const_cast co_await co_return co_yield decltype default delete do double "
    "dynamic_cast enum explicit export extern float friend goto inline int long mutable namespace new noexcept "
    "not_eq nullptr operator or_eq private protected public register reinterpret_cast requires short signed "
    "sizeof static static_assert static_cast struct switch template this thread_local throw typedef typeid "
    "typename union unsigned using virtual void volatile wchar_t xor xor_eq".split())


def member(name: str) -> str:
    """The C++ spelling of a kernel parameter or a struct field called `name` in Python."""
    return name + "_kw" if name in CPP_KEYWORDS else name


def arg_field(path: str) -> str:
    """The C++ spelling of a kernel parameter (or a path `param.field...` through its struct members) in the
    kernel's args struct."""
    return ".".join(member(part) for part in path.split("."))


def float_accumulable(t) -> bool:
    """Whether array elements of type `t` are floats (or vectors, matrices, quaternions, transforms of float32 or
    float64) whose atomic add a launch may replace by a plain add, or an add into a private copy, without changing
    what a run on one thread computes."""
    scalar = t if T.is_scalar(t) else getattr(t, "_wp_scalar_type_", None)
    return scalar in (T.float32, T.float64)


def param_decl(t, name: str, *, const: bool = False) -> str:
    """The C++ declaration of a read-only parameter `name` of type `t` (a function's, or a kernel's binding of its
    argument): a struct by const reference, anything else by value. A struct of arrays is hundreds of bytes (an
    array view is 64), and GCC copies an aggregate that large with a call to memcpy wherever it is passed by
    value, even into a force-inlined function: the particle-shape contact kernel copied its ShapeData (896
    bytes) four times per pair. Struct values are never written in place (a field assignment makes a new value,
    struct_set), so the reference reads the same fields the copy would. `const`: a value is const too."""
    if is_struct(t):
        return f"const {ctype(t)}& {name}"
    return f"{'const ' if const else ''}{ctype(t)} {name}"


def ctype(t) -> str:
    """C++ spelling of a kernel-language type."""
    if t is T.bool_:
        return "bool"
    if T.is_scalar(t):
        return f"wp::{t._cname_}"
    if T.is_vector(t):
        return f"wp::vec_t<{t._shape_[0]}, {ctype(t._wp_scalar_type_)}>"
    if T.is_matrix(t):
        return f"wp::mat_t<{t._shape_[0]}, {t._shape_[1]}, {ctype(t._wp_scalar_type_)}>"
    if T.is_quat(t):
        return f"wp::quat_t<{ctype(t._wp_scalar_type_)}>"
    if T.is_transform(t):
        return f"wp::transform_t<{ctype(t._wp_scalar_type_)}>"
    if isinstance(t, ArrayType) and t.fixed:
        return f"wp::fixedarray_t<{math.prod(t.fixed)}, {ctype(t.dtype)}>"
    if isinstance(t, ArrayType):
        return f"wp::{t.kind_name}_t<{ctype(t.dtype)}>"
    if is_struct(t):
        return f"wp::{t._wp_struct_.cname}"
    if isinstance(t, TileType):
        return f"wp::tile_t<{ctype(t.dtype)}, {t.rows}, {t.cols}>"
    raise TypeError(f"type {t!r} has no C++ form")


def literal(value, t) -> str:
    """C++ literal of a constant of type `t`."""
    if t is T.bool_:
        return "true" if value else "false"
    if T.is_float(t):
        v = float(value)
        if t is T.float64:
            if math.isfinite(v):
                return repr(v) if ("e" in repr(v) or "." in repr(v)) else repr(v) + ".0"
            return f"wp::float64_from_bits({np.array(v, np.float64).view(np.uint64)}ull)"
        f32 = np.float32(v)
        if not math.isfinite(float(f32)):
            return f"wp::float32_from_bits({f32.view(np.uint32)}u)"
        text = repr(float(f32))
        text = text if ("e" in text or "." in text) else text + ".0"
        return f"{text}f" if t is T.float32 else f"wp::{t._cname_}({text}f)"
    if T.is_int(t):
        v = int(value)
        suffix = {T.int64: "ll", T.uint64: "ull", T.uint32: "u"}.get(t, "")
        if t is T.int32 and v == -(2**31):
            return "(-2147483647 - 1)"
        return f"{ctype(t)}({v}{suffix})" if t in (T.int8, T.uint8, T.int16, T.uint16) else f"{v}{suffix}"
    raise TypeError(f"no literal for {t!r}")


class Names:
    """Deterministic per-function names for SSA values."""

    def __init__(self):
        self.names: dict = {}

    def __call__(self, v: ir.Value) -> str:
        n = self.names.get(v)
        if n is None:
            hint = "".join(c for c in (v.name or "") if c.isalnum() or c == "_")[:24]
            n = f"v{len(self.names)}" + (f"_{hint}" if hint else "")
            self.names[v] = n
        return n

    def alias(self, v: ir.Value, name: str):
        self.names[v] = name


_has_ctype = has_native_value


class FunctionRenderer:
    """Renders the forward body of one typed function or kernel (and, via `adjoint.py`, its backward body)."""

    def __init__(self, fn: ir.Function, dialect: str, debug: bool, func_names: dict):
        self.fn = fn
        self.dialect = dialect
        self.debug = debug
        self.func_names = func_names  # typed ir.Function -> C++ name
        self.name = Names()
        self.lines: list = []
        self.depth = 1
        self.keep_returns = False  # a function's replay version returns its values; inline replays do not
        self.custom_adjoints: list = []  # adjoint variables that `wp.adjoint[x] += v` adds to (custom grads)
        # a CPU kernel's forward body is a template on `Atomic` (whether another thread may add into the same
        # memory): its float atomic adds are plain adds where no other thread can interfere
        self.atomic_template = False
        self._uses = None  # value -> use count, counted on first need (use_count)

    def emit(self, text: str):
        self.lines.append("    " * self.depth + text)

    def error(self, message, op):
        return CompileError(message, op.loc, self.fn.name)

    # ------------------------------------------------------------------------------------------ declarations

    def declare_values(self, block: ir.Block, skip=()):
        """Declare every value defined in `block` and nested blocks (hoisted so that any later code can read it)."""
        for op in ir.walk(block):
            for r in op.results:
                if r in skip or not _has_ctype(r.type):
                    continue
                self.emit(f"{ctype(r.type)} {self.name(r)};")
            for region in op.regions:
                for a in region.args:
                    if _has_ctype(a.type) and a not in self.name.names:
                        self.emit(f"{ctype(a.type)} {self.name(a)};")

    # ------------------------------------------------------------------------------------------ forward ops

    def block(self, block: ir.Block, replay=False):
        for op in block.ops:
            if replay and op.attrs.get("overload") is not None and op.attrs["overload"].side_effect:
                continue  # stores, atomics and printing are not replayed in the adjoint
            getattr(self, "op_" + op.opcode)(op, replay)

    def op_const(self, op, replay):
        r = op.results[0]
        value = op.attrs["value"]
        if isinstance(r.type, StaticType):
            return
        if T.is_composite(r.type):
            comps = ", ".join(literal(c, r.type._wp_scalar_type_) for c in value._data.tolist())
            s = ctype(r.type._wp_scalar_type_)
            self.emit(f"{{ const {s} c_[] = {{{comps}}}; "
                      f"{self.name(r)} = wp::load_components<{ctype(r.type)}>(c_); }}")
            return
        self.emit(f"{self.name(r)} = {literal(value, r.type)};")

    def op_undef(self, op, replay):
        r = op.results[0]
        if r.type is None:
            raise self.error("a value is used without being assigned on every path", op)
        self.emit(f"{self.name(r)} = {ctype(r.type)}();")

    def op_shape_of(self, op, replay):
        pass

    def op_tuple(self, op, replay):
        pass  # read apart by the builtin that takes it

    def args(self, values) -> str:
        out = []
        for v in values:
            if isinstance(v.type, StaticType):
                obj = v.type.obj
                if isinstance(obj, str):
                    out.append('"' + obj.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"')
                    continue
                if isinstance(obj, type) or T.is_scalar(T.canonical_type(obj)):
                    continue  # a type argument (dtype=...): already part of the overload's C++ types
                raise CompileError(f"compile-time value {obj!r} cannot be passed here", None, self.fn.name)
            out.append(self.name(v))
        return ", ".join(out)

    def use_count(self, v: ir.Value) -> int:
        """How many times `v` is used as an operand or yielded, anywhere in the function."""
        if self._uses is None:
            uses: dict = {}
            for o in ir.walk(self.fn.body):
                for x in o.operands:
                    uses[x] = uses.get(x, 0) + 1
                for region in o.regions:
                    for x in region.yields:
                        uses[x] = uses.get(x, 0) + 1
            for x in self.fn.body.yields:
                uses[x] = uses.get(x, 0) + 1
            self._uses = uses
        return self._uses.get(v, 0)

    def line_arg(self, op) -> str:
        return str(op.loc.line if op.loc else 0)

    def call_expr(self, op, replay=False) -> str:
        """The C++ expression for a builtin or user call (forward; in replay, user functions' replay versions)."""
        if "callee" in op.attrs:
            prefix = "replay_" if replay else ""
            return f"{prefix}{self.func_names[op.attrs['callee']]}({self.args(op.operands)})"
        ov = op.attrs["overload"]
        form = ov.props.forward
        a = op.operands
        if form == "index_load":
            return f"wp::index({self.name(a[0])}, {self.line_arg(op)}, {self.args(a[1:])})"
        if form == "cast":
            return f"wp::cast<{ctype(op.results[0].type)}>({self.name(a[0])})"
        if form == "array_shape":
            return f"{self.name(a[0])}.shape[{self.name(a[1])}]"
        if form == "field_get":
            return f"{self.name(a[0])}.{member(op.attrs['field'])}"
        if form == "struct_new":
            return f"{ctype(op.results[0].type)}()"
        if form == "tile_map":
            elems = ", ".join(f"wp::tile_elem({self.name(v)}, k)" for v in a)
            fn = self.element_function_name(op)
            return f"wp::tile_map<{ctype(op.results[0].type)}>([&](int k) {{ return {fn}({elems}); }})"
        if form == "tile_reduce" and "lines" in op.attrs:  # along an axis of a 3-d/4-d tile (native/tile_nd.h)
            outer, n, inner = op.attrs["lines"]
            return (f"wp::tile_reduce_lines<{ctype(op.results[0].type)}, {outer}, {n}, {inner}>"
                    f"({self.element_lambda(op, 2)}, {self.args(a)})")
        if form == "tile_reduce" and "axis" in op.attrs:
            return f"wp::tile_reduce_axis<{op.attrs['axis']}>({self.element_lambda(op, 2)}, {self.args(a)})"
        if form == "tile_reduce":
            return f"wp::tile_reduce({self.element_lambda(op, 2)}, {self.args(a)})"
        if ov.template_ret:
            return f"wp::{ov.native}<{ctype(op.results[0].type)}>({self.args(a)})"
        return f"wp::{ov.native}({self.args(a)})"

    def element_function_name(self, op, adjoint=False) -> str:
        kind, target = op.attrs["elem"]
        prefix = "adj_" if adjoint else ""
        if kind == "cast":
            return f"wp::{prefix}cast<{ctype(target)}>"
        if kind == "builtin":
            return f"wp::{prefix}{target.native}"
        return prefix + self.func_names[target]

    def element_lambda(self, op, arity: int) -> str:
        """The element function of tile_map/tile_reduce as a C++ lambda."""
        params = ", ".join(f"auto x{k}" for k in range(arity))
        args = ", ".join(f"x{k}" for k in range(arity))
        return f"[&]({params}) {{ return {self.element_function_name(op)}({args}); }}"

    def element_adjoint_lambda(self, op, arity: int) -> str:
        params = ", ".join([f"auto x{k}" for k in range(arity)] + [f"auto& adj_x{k}" for k in range(arity)]
                           + ["auto adj_r"])
        args = ", ".join([f"x{k}" for k in range(arity)] + [f"adj_x{k}" for k in range(arity)] + ["adj_r"])
        return f"[&]({params}) {{ {self.element_function_name(op, adjoint=True)}({args}); }}"

    def op_call(self, op, replay):
        a = op.operands
        if "callee" not in op.attrs:
            form = op.attrs["overload"].props.forward
            if form == "tid":
                n = op.attrs["ndim"]
                for k, r in enumerate(op.results):
                    if n == 1:
                        # a scalar wp.tid() of a multi-dimensional launch is the first coordinate (Warp 1.19)
                        self.emit(f"{self.name(r)} = lb.ndim == 1 ? wp::int32(task) : wp::tid_component(task, lb, 0);")
                    else:
                        self.emit(f"{self.name(r)} = wp::tid_component(task, lb, {k});")
                return
            if form == "index_store":
                self.emit(f"wp::index({self.name(a[0])}, {self.line_arg(op)}, {self.args(a[1:-1])}) = "
                          f"{self.name(a[-1])};")
                return
            if form.startswith("atomic_"):
                value = self.name(a[-1])
                fn = "add" if form == "atomic_sub" else form[7:]  # add, min, max, and, or, xor, exch, cas
                if form == "atomic_sub":
                    value = f"wp::neg({value})"  # a[i] -= v adds -v
                if form == "atomic_cas":
                    value = f"{self.name(a[-2])}, {value}"  # compare, value
                    a = a[:-1]
                call = f"wp::atomic_rmw_{fn}"
                if fn == "add" and self.atomic_template and float_accumulable(a[0].type.dtype):
                    call = "wp::atomic_add_maybe<Atomic>"
                expr = f"{call}(&wp::index({self.name(a[0])}, {self.line_arg(op)}, " \
                       f"{self.args(a[1:-1])}), {value})"
                self.emit(f"{self.name(op.results[0])} = {expr};" if op.results else f"{expr};")
                return
            if form == "field_set":
                r = op.results[0]
                self.emit(f"{self.name(r)} = {self.name(a[0])}; {self.name(r)}.{member(op.attrs['field'])} = {self.name(a[1])};")
                return
        mutated = op.attrs.get("mutates") or ()
        if mutated:
            # the native function updates those arguments in place: give it copies, then bind the copies; when
            # this call is an argument's only use, update its variable directly (no copy of e.g. a whole tile)
            outs, updated = op.results[:len(op.results) - len(mutated)], op.results[len(op.results) - len(mutated):]
            names = {}
            for idx, r in zip(mutated, updated):
                if self.use_count(a[idx]) == 1 and a[idx] not in self.fn.params:
                    self.name.alias(r, self.name(a[idx]))
                else:
                    self.emit(f"{self.name(r)} = {self.name(a[idx])};")
                names[idx] = self.name(r)
            args = [names.get(k) or self.name(v) for k, v in enumerate(a)]
            call = f"wp::{op.attrs['overload'].native}({', '.join(args)})"
            if len(outs) > 1:  # several values, as fields v0, v1, ... of the native result
                self.emit("{")
                self.emit(f"    auto r_ = {call};")
                for k, r in enumerate(outs):
                    self.emit(f"    {self.name(r)} = r_.v{k};")
                self.emit("}")
                return
            self.emit(f"{self.name(outs[0])} = {call};" if outs else f"{call};")
            return
        if op.attrs.get("gradient"):
            self.gradient_call(op)
            return
        if op.attrs.get("addresses"):
            self.address_call(op, replay)
            return
        expr = self.call_expr(op, replay)
        results = [r for r in op.results if _has_ctype(r.type)]
        if not results:
            self.emit(f"{expr};")
        elif len(results) == 1:
            self.emit(f"{self.name(results[0])} = {expr};")
        else:
            self.emit("{")
            self.emit(f"    auto r_ = {expr};")
            for k, r in enumerate(results):
                self.emit(f"    {self.name(r)} = r_.v{k};")
            self.emit("}")

    def address_call(self, op, replay):
        """A user call given `wp.address_of(x)` arguments (attr "addresses"): each passes the address of a copy of
        x's value (`pinK_`), and the call's last results take the copies' values when it returns."""
        addresses = op.attrs["addresses"]
        outs = op.results[:len(op.results) - len(addresses)]
        self.emit("{")
        args = []
        for k, v in enumerate(op.operands):
            if k in addresses:
                j = addresses.index(k)
                self.emit(f"    {ctype(v.type)} pin{j}_ = {self.name(v)};")
                args.append(f"(wp::uint64)(&pin{j}_)")
            elif self.args([v]):
                args.append(self.args([v]))
        prefix = "replay_" if replay else ""
        call = f"{prefix}{self.func_names[op.attrs['callee']]}({', '.join(args)})"
        results = [r for r in outs if _has_ctype(r.type)]
        if not results:
            self.emit(f"    {call};")
        elif len(results) == 1:
            self.emit(f"    {self.name(results[0])} = {call};")
        else:
            self.emit(f"    auto r_ = {call};")
            for k, r in enumerate(results):
                self.emit(f"    {self.name(r)} = r_.v{k};")
        for j, r in enumerate(op.results[len(outs):]):
            self.emit(f"    {self.name(r)} = pin{j}_;")
        self.emit("}")

    def gradient_call(self, op):
        """`wp.grad(f)(args)`: f's adjoint (a user function's or a builtin's), seeded with 1, adds d f / d arg into
        each (zeroed) result."""
        callee = op.attrs.get("callee")
        for r in op.results:
            self.emit(f"{self.name(r)} = {ctype(r.type)}();")
        if callee is not None:
            seed, adjoint = f"{ctype(callee.return_types[0])}(1)", f"adj_{self.func_names[callee]}"
        else:
            ov = op.attrs["overload"]
            seed, adjoint = f"{ctype(op.attrs['seed'])}(1)", f"wp::adj_{ov.native}"
        args = ", ".join(x for x in (self.args(op.operands), ", ".join(self.name(r) for r in op.results), seed) if x)
        self.emit(f"{adjoint}({args});")

    def op_if(self, op, replay):
        then_b, else_b = op.regions
        self.emit(f"if ({self.name(op.operands[0])}) {{")
        self.branch(then_b, op.results, replay)
        # a replay's copy says whether the forward has an else (its own ops may all be left out)
        if op.attrs.get("has_else", bool(else_b.ops) or any(y is not None for y in else_b.yields)):
            self.emit("} else {")
            self.branch(else_b, op.results, replay)
        self.emit("}")

    def branch(self, block, results, replay):
        self.depth += 1
        self.block(block, replay)
        for r, y in zip(results, block.yields):
            if _has_ctype(r.type):
                self.emit(f"{self.name(r)} = {self.name(y)};")
        self.depth -= 1

    def assign_carried(self, targets, values):
        """Parallel assignment of loop-carried values (yields may refer to other carried values)."""
        pairs = [(t, v) for t, v in zip(targets, values) if _has_ctype(t.type) and t is not v]
        if not pairs:
            return
        if len(pairs) == 1:
            self.emit(f"{self.name(pairs[0][0])} = {self.name(pairs[0][1])};")
            return
        self.emit("{")
        for k, (t, v) in enumerate(pairs):
            self.emit(f"    {ctype(t.type)} carry{k}_ = {self.name(v)};")
        for k, (t, v) in enumerate(pairs):
            self.emit(f"    {self.name(t)} = carry{k}_;")
        self.emit("}")

    def bind_args(self, args, results):
        """Loop block arguments share the C++ variable of the loop result they carry."""
        for a, r in zip(args, results):
            self.name.alias(a, self.name(r))

    def op_for(self, op, replay):
        start, stop, step, *inits = op.operands
        body = op.regions[0]
        index, *args = body.args
        self.bind_args(args, op.results)
        self.assign_carried(op.results, inits)
        i = self.name(index)
        s = self.name(step)
        step_const = step.owner.attrs["value"] if step.owner is not None and step.owner.opcode == "const" else None
        if step_const is not None:
            cmp = "<" if step_const > 0 else ">"
            self.emit(f"for ({i} = {self.name(start)}; {i} {cmp} {self.name(stop)}; {i} += {s}) {{")
        else:
            self.emit(f"for ({i} = {self.name(start)}; ({s} > 0) ? ({i} < {self.name(stop)}) : "
                      f"({i} > {self.name(stop)}); {i} += {s}) {{")
        self.depth += 1
        self.block(body, replay)
        self.assign_carried(op.results, body.yields)
        if "break_flag" in op.attrs:
            self.emit(f"if ({self.name(op.results[op.attrs['break_flag']])}) break;")
        self.depth -= 1
        self.emit("}")

    def op_while(self, op, replay):
        cond_b, body = op.regions
        self.bind_args(cond_b.args, op.results)
        self.bind_args(body.args, op.results)
        self.assign_carried(op.results, op.operands)
        self.emit("while (true) {")
        self.depth += 1
        self.block(cond_b, replay)
        self.emit(f"if (!{self.name(cond_b.yields[0])}) break;")
        self.block(body, replay)
        self.assign_carried(op.results, body.yields)
        self.depth -= 1
        self.emit("}")

    def op_adj_param_get(self, op, replay):
        self.emit(f"{self.name(op.results[0])} = {self.custom_adjoint(op)};")

    def op_adj_param_set(self, op, replay):
        self.emit(f"{self.custom_adjoint(op)} = {self.name(op.operands[0])};")

    def custom_adjoint(self, op) -> str:
        """The adjoint variable of the parameter that `wp.adjoint[x]` names (in a @wp.func_grad body)."""
        k = op.attrs["param"]
        if k >= len(self.custom_adjoints):
            raise self.error("wp.adjoint[x] names a parameter of the function the custom adjoint is for, not an "
                             "adjoint of a result", op)
        return self.custom_adjoints[k]

    def op_return(self, op, replay):
        if replay and not self.keep_returns:
            return
        vals = [self.name(v) for v in op.operands]
        if len(vals) == 1:
            self.emit(f"return {vals[0]};")
        elif vals:
            self.emit(f"return {{{', '.join(vals)}}};")
        else:
            self.emit("return;")


def function_qualifiers(fn, adjoint: bool = False) -> str:
    """The C++ qualifiers of a user function's forward/replay (`adjoint` False) or adjoint: `@wp.func(inline=False)`
    keeps it out of line on both devices (a large function called from several places, whose inlined copies make
    the compile slow or the kernel slower), `inline=True` inlines it on both; by default forward and replay are
    force-inlined on the CPU (WP_FORCE_INLINE, native/core.h) and the compiler decides for the rest."""
    hint = getattr(getattr(fn, "func_object", None), "inline_hint", None)
    if hint == "noinline":
        return "WP_INLINE_NEVER"
    if hint == "forceinline":
        return "WP_INLINE_ALWAYS"
    return "inline" if adjoint else "inline WP_FORCE_INLINE"
