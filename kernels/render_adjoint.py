"""Renderer, backward half: the adjoint (reverse-mode) body of kernels and user functions.

Structure of every backward function (see passes/adjoint.py for the decisions it follows):
  1. declarations: every primal value and its adjoint (zero), hoisted;
  2. replay: the forward body again, without side effects (stores, atomics, printing); loops count iterations;
  3. reverse: each op's adjoint in reverse order. Branches reverse under the same condition; dynamic loops run
     their iterations backwards, replaying the body of each iteration first (and, where the analysis says so,
     restoring the loop-carried values of that iteration by replaying the earlier ones).
Array values have no accumulator: their adjoint is the gradient array (an alias), set once.
"""

from __future__ import annotations

from . import ir
from .passes.adjoint import analyze, array_adjoint_source
from .errors import CompileError
from .render import FunctionRenderer, _has_ctype, ctype
from . import types as T
from .types import scalar_types
from .typesys import ARRAY_VIEWS, ArrayType, StaticType, is_differentiable_type, is_struct, is_tile


def adj_zero(t) -> str:
    """C++ expression of an empty adjoint accumulator of type `t`: -0.0 in 32- and 64-bit float components (see
    `zero_adjoint` in native core.h), T() for everything else."""
    if (T.is_scalar(t) or T.is_composite(t)) and T.scalar_type(t) in (T.float32, T.float64):
        return f"wp::adj_zero<{ctype(t)}>()"
    return f"{ctype(t)}()"


def _differentiable_value(t) -> bool:
    return _has_ctype(t) and is_differentiable_type(t) and not isinstance(t, ArrayType)


class AdjointRenderer(FunctionRenderer):
    # template arguments of adj_index_load: "<Atomic>" in kernel backward threads (a template on whether the launch
    # runs in parallel); user functions' adjoints always add atomically
    accumulate_args = ""
    exclusive_loads: frozenset = frozenset()  # ids of loads whose gradient only this thread adds into

    def __init__(self, fn, dialect, debug, func_names):
        super().__init__(fn, dialect, debug, func_names)
        self.adj_names: dict = {}
        self.counters: dict = {}
        self.slots: dict = {}  # recomputing loop -> (slot count name, [(carried result, slot array name)])

    def adj(self, v: ir.Value) -> str:
        n = self.adj_names.get(v)
        if n is None:
            n = "adj_" + self.name(v)
            self.adj_names[v] = n
        return n

    # ------------------------------------------------------------------------------------------ declarations

    def declare_adjoints(self, block: ir.Block):
        for op in ir.walk(block):
            vals = list(op.results) + [a for region in op.regions for a in region.args]
            for v in vals:
                if _has_ctype(v.type) and v not in self.adj_names:
                    self.emit(f"{ctype(v.type)} {self.adj(v)} = {adj_zero(v.type)};")
            if op.opcode in ("for", "while"):
                c = f"count{len(self.counters)}_"
                self.counters[op] = c
                self.emit(f"wp::int64 {c} = 0;")
                self.declare_slots(op, c)
        self.alias_loop_args(block)

    def declare_slots(self, op, counter: str):
        """Slot arrays for the carried values of a loop whose reverse restores them (see wp::carry_slots)."""
        carried = [r for r in op.results if _has_ctype(r.type)]
        if not op.attrs.get("recompute") or not carried or any(is_tile(r.type) for r in carried):
            return
        cap = f"cap_{counter}"
        size = " + ".join(f"sizeof({ctype(r.type)})" for r in carried)
        self.emit(f"constexpr wp::int64 {cap} = wp::carry_slots({size});")
        names = []
        for k, r in enumerate(carried):
            name = f"slot{k}_{counter}"
            self.emit(f"{ctype(r.type)} {name}[{cap}];")
            names.append((r, name))
        self.slots[op] = (cap, names)

    def alias_loop_args(self, block):
        for op in ir.walk(block):
            if op.opcode == "for":
                self.bind_args(op.regions[0].args[1:], op.results)
            elif op.opcode == "while":
                self.bind_args(op.regions[0].args, op.results)
                self.bind_args(op.regions[1].args, op.results)

    def zero_adjoints(self, block: ir.Block):
        """Reset the adjoints of values defined in `block` (per reverse loop iteration)."""
        for op in ir.walk(block):
            for v in list(op.results) + [a for region in op.regions for a in region.args]:
                if _differentiable_value(v.type) and v in self.adj_names:
                    self.emit(f"{self.adj(v)} = {adj_zero(v.type)};")
        for a in block.args:
            if _differentiable_value(a.type):
                self.emit(f"{self.adj(a)} = {adj_zero(a.type)};")

    # ------------------------------------------------------------------------------------------ replay

    def op_for(self, op, replay):
        if replay and op in self.counters:
            self.emit(f"{self.counters[op]} = 0;")
        super().op_for(op, replay)

    def op_while(self, op, replay):
        if replay and op in self.counters:
            self.emit(f"{self.counters[op]} = 0;")
        super().op_while(op, replay)

    def block(self, block, replay=False):
        super().block(block, replay)
        # count loop iterations in replay: the counter of the loop that owns this body
        owner = getattr(block, "_loop_owner", None)
        if replay and owner is not None and owner in self.counters:
            self.emit(f"{self.counters[owner]}++;")

    def loop_top(self, op, replay):
        # while counting (the replay before the reverse), keep the carried values of the first iterations
        if not replay or op not in self.slots or getattr(op.regions[-1], "_loop_owner", None) is not op:
            return
        cap, names = self.slots[op]
        count = self.counters[op]
        stores = " ".join(f"{slot}[{count}] = {self.name(r)};" for r, slot in names)
        self.emit(f"if ({count} < {cap}) {{ {stores} }}")

    def op_call(self, op, replay):
        super().op_call(op, replay)
        if replay and op.attrs.get("name") == "struct_get" and op.results and \
                (isinstance(op.results[0].type, ArrayType) or is_struct(op.results[0].type)):
            # array members (also inside nested structs) take their gradient arrays from the adjoint struct
            r = op.results[0]
            self.emit(f"{self.adj(r)} = {self.adj(op.operands[0])}.{op.attrs['field']};")
        elif replay and op.attrs.get("name") in ARRAY_VIEWS:
            # the gradient of a sub-array is the same view of the parent's gradient array
            a = op.operands
            self.emit(f"{self.adj(op.results[0])} = wp::{op.attrs['name']}({self.adj(a[0])}, {self.args(a[1:])});")

    # ------------------------------------------------------------------------------------------ reverse

    def reverse(self, block: ir.Block):
        for op in reversed(block.ops):
            getattr(self, "rev_" + op.opcode, self.rev_nothing)(op)

    def rev_nothing(self, op):
        pass

    def adj_args(self, values) -> str:
        out = []
        for v in values:
            if isinstance(v.type, StaticType):
                continue
            out.append(self.adj(v))
        return ", ".join(out)

    def rev_call(self, op):
        name = op.attrs.get("name")
        a = op.operands
        callee = op.attrs.get("callee")
        if op.attrs.get("gradient"):
            return  # wp.grad(f)(x): the adjoint pass refused it where its arguments carry a gradient
        if callee is not None:
            results = [r for r in op.results if _has_ctype(r.type)]
            rets = [self.adj(r) for r in results]
            args = ", ".join(x for x in (self.args(a), self.adj_args(a), ", ".join(rets)) if x)
            call = f"adj_{self.func_names[callee]}({args});"
            if results and _pure(callee) and all(_zero_testable(r.type) for r in results):
                # a pure function's adjoint is linear in its results' adjoints: all zero, nothing to add
                test = " || ".join(f"!wp::is_zero({n})" for n in rets)
                call = f"if ({test}) {call}"
            self.emit(call)
            return
        ov = op.attrs["overload"]
        if name in ("tid", "array_shape", "struct_new", "stop_gradient") + ARRAY_VIEWS or not ov.differentiable:
            return
        line = self.line_arg(op)
        if name == "load":
            template = "<false>" if id(op) in self.exclusive_loads else self.accumulate_args
            self.emit(f"wp::adj_index_load{template}({self.adj(a[0])}, {line}, {self.args(a[1:])}, "
                      f"{self.adj(op.results[0])});")
            return
        if name == "store" and op.attrs.get("overwrite"):
            self.emit(f"wp::adj_index_overwrite({self.adj(a[0])}, {line}, {self.adj(a[-1])}, {self.args(a[1:-1])});")
            return
        if name == "store":
            self.emit(f"wp::adj_index_store({self.adj(a[0])}, {line}, {self.args(a[1:-1])}, {self.adj(a[-1])});")
            return
        if name == "atomic_add":
            self.emit(f"wp::adj_index_accumulate({self.adj(a[0])}, {line}, {self.adj(a[-1])}, {self.args(a[1:-1])});")
            return
        if name in ("atomic_min", "atomic_max"):
            # the final a[i] (read in the backward, after every forward thread ran) names the winner(s)
            self.emit(f"wp::adj_index_minmax({self.name(a[0])}, {self.adj(a[0])}, {line}, {self.name(a[-1])}, "
                      f"{self.adj(a[-1])}, {self.args(a[1:-1])});")
            return
        if name == "atomic_sub":
            t = ctype(a[-1].type)
            self.emit(f"{{ {t} g_ = {t}(); wp::adj_index_accumulate({self.adj(a[0])}, {line}, g_, "
                      f"{self.args(a[1:-1])}); {self.adj(a[-1])} = wp::sub({self.adj(a[-1])}, g_); }}")
            return
        if name == "tile_map":
            r = op.results[0]
            slots = [f"wp::tile_elem({self.name(v)}, k)" for v in a] + \
                [f"wp::tile_elem_ref({self.adj(v)}, k)" for v in a] + [f"wp::tile_elem({self.adj(r)}, k)"]
            size = r.type.rows * r.type.cols
            self.emit(f"wp::adj_tile_map<{size}>([&](int k) {{ "
                      f"{self.element_function_name(op, adjoint=True)}({', '.join(slots)}); }});")
            return
        if name == "tile_reduce":
            axis = f"_axis<{op.attrs['axis']}>" if "axis" in op.attrs else ""
            self.emit(f"wp::adj_tile_reduce{axis}({self.element_lambda(op, 2)}, {self.element_adjoint_lambda(op, 2)}, "
                      f"{self.args(a)}, {self.adj_args(a)}, {self.adj(op.results[0])});")
            return
        if name == "struct_get":
            if not isinstance(op.results[0].type, ArrayType):
                f = op.attrs["field"]
                self.emit(f"{self.adj(a[0])}.{f} = wp::add({self.adj(a[0])}.{f}, {self.adj(op.results[0])});")
            return
        if name == "struct_set":
            f = op.attrs["field"]
            r = self.adj(op.results[0])
            if not isinstance(a[1].type, ArrayType):
                self.emit(f"{self.adj(a[1])} = wp::add({self.adj(a[1])}, {r}.{f});")
                self.emit(f"{{ {ctype(op.results[0].type)} t_ = {r}; t_.{f} = {ctype(a[1].type)}(); "
                          f"{self.adj(a[0])} = wp::add({self.adj(a[0])}, t_); }}")
            else:
                self.emit(f"{self.adj(a[0])} = wp::add({self.adj(a[0])}, {r});")
            return
        rets = [self.adj(r) for r in op.results if _has_ctype(r.type)]
        if not rets and name not in ("tile_store", "tile_store_indexed"):  # from the array, not a result
            return
        args = ", ".join(x for x in (self.args(a), self.adj_args(a), ", ".join(rets)) if x)
        if name == "cast":
            self.emit(f"wp::adj_cast<{ctype(op.results[0].type)}>({args});")
        elif ov.template_ret:
            self.emit(f"wp::adj_{ov.native}<{ctype(op.results[0].type)}>({args});")
        else:
            self.emit(f"wp::adj_{ov.native}({args});")

    def rev_if(self, op):
        self.emit(f"if ({self.name(op.operands[0])}) {{")
        self.rev_branch(op, op.regions[0])
        self.emit("} else {")
        self.rev_branch(op, op.regions[1])
        self.emit("}")

    def rev_branch(self, op, block):
        self.depth += 1
        for r, y in zip(op.results, block.yields):
            if _differentiable_value(r.type):
                self.emit(f"{self.adj(y)} = wp::add({self.adj(y)}, {self.adj(r)});")
        self.reverse(block)
        self.depth -= 1

    def rev_for(self, op):
        start, stop, step, *inits = op.operands
        body = op.regions[0]
        index, *args = body.args
        self.rev_loop(op, body, args, inits,
                      set_index=lambda it: self.emit(f"{self.name(index)} = {ctype(index.type)}("
                                                     f"{self.name(start)} + {it} * {self.name(step)});"))

    def rev_while(self, op):
        cond_b, body = op.regions
        self.rev_loop(op, body, body.args, op.operands, set_index=lambda it: None)

    def rev_loop(self, op, body, args, inits, set_index):
        count = self.counters[op]
        it = f"it{count}"
        self.emit(f"for (wp::int64 {it} = {count} - 1; {it} >= 0; --{it}) {{")
        self.depth += 1
        if op.attrs.get("recompute") and args and op in self.slots:
            # the carried values at the start of iteration `it`: stored in the replay for the first iterations,
            # else replayed from the last stored one
            cap, names = self.slots[op]
            self.emit(f"if ({it} < {cap}) {{")
            self.emit("    " + " ".join(f"{self.name(r)} = {slot}[{it}];" for r, slot in names))
            self.emit("} else {")
            self.depth += 1
            self.emit(" ".join(f"{self.name(r)} = {slot}[{cap} - 1];" for r, slot in names))
            self.replay_iterations(op, body, f"{cap} - 1", it, set_index)
            self.depth -= 1
            self.emit("}")
        elif op.attrs.get("recompute") and args:
            # restore the carried values at the start of iteration `it` by replaying iterations 0..it-1
            self.assign_carried(op.results, inits)
            self.replay_iterations(op, body, "0", it, set_index)
        set_index(it)
        self.replay_body(op, body)
        self.zero_adjoints(body)
        for r, y in zip(op.results, body.yields):
            if _differentiable_value(r.type):
                self.emit(f"{self.adj(y)} = wp::add({self.adj(y)}, {self.adj(r)});")
        self.reverse(body)
        for r, a in zip(op.results, args):
            if _differentiable_value(r.type):
                self.emit(f"{self.adj(r)} = {self.adj(a)};")
        self.depth -= 1
        self.emit("}")
        for r, i in zip(op.results, inits):
            if _differentiable_value(r.type):
                self.emit(f"{self.adj(i)} = wp::add({self.adj(i)}, {self.adj(r)});")

    def replay_iterations(self, op, body, first: str, stop: str, set_index):
        """Replay iterations first..stop-1 of a loop, carrying its values along."""
        self.emit(f"for (wp::int64 j_ = {first}; j_ < {stop}; ++j_) {{")
        self.depth += 1
        set_index("j_")
        self.replay_body(op, body)
        self.assign_carried(op.results, body.yields)
        self.depth -= 1
        self.emit("}")

    def replay_body(self, op, body):
        owner = getattr(body, "_loop_owner", None)
        body._loop_owner = None  # no counting while replaying single iterations
        if op.opcode == "while":
            self.block(op.regions[0], True)
        self.block(body, True)
        body._loop_owner = owner

    def rev_return(self, op):
        for v, adj_ret in zip(op.operands, self.adj_ret_names):
            if _differentiable_value(v.type):
                self.emit(f"{self.adj(v)} = wp::add({self.adj(v)}, {adj_ret});")

    # ------------------------------------------------------------------------------------------ bodies

    def prepare(self):
        error = adjoint_error(self.fn)
        if error is not None:
            raise error
        for op in ir.walk(self.fn.body):
            if op.opcode in ("for", "while"):
                op.regions[-1]._loop_owner = op

    def backward_body(self):
        self.declare_values(self.fn.body)
        self.declare_adjoints(self.fn.body)
        self.block(self.fn.body, replay=True)
        self.reverse(self.fn.body)
        return "\n".join(self.lines)


def adjoint_error(fn: ir.Function):
    """The CompileError that makes `fn` (or a function it calls) non-differentiable, or None. Cached."""
    if not hasattr(fn, "_adjoint_error"):
        fn._adjoint_error = None
        if getattr(fn, "custom_grad_ir", None) is not None:
            return None  # the user wrote its adjoint
        try:
            analyze(fn)
            for op in ir.walk(fn.body):
                if op.opcode == "call" and op.operands and op.attrs.get("name") in (
                        "load", "store", "atomic_add", "atomic_sub"):
                    array_adjoint_source(op.operands[0], fn)
                callee = op.attrs.get("callee")
                if callee is not None and adjoint_error(callee) is not None:
                    fn._adjoint_error = adjoint_error(callee)
                    break
        except CompileError as e:
            fn._adjoint_error = e
    return fn._adjoint_error


def render_adjoint_kernel(fn: ir.Function, src, entry: str) -> str:
    r = AdjointRenderer(fn, src.dialect, src.debug, src.func_names)
    r.accumulate_args = "<Atomic>"
    exclusive = _exclusive_arrays(fn) if src.dialect == "cpu" else {}
    r.exclusive_loads = frozenset(id(op) for ops in exclusive.values() for op in ops)
    r.prepare()
    for p, n in zip(fn.params, fn.param_names):
        r.emit(f"const {ctype(p.type)} {r.name(p)} = args.{n};")
        if isinstance(p.type, ArrayType) or is_struct(p.type):
            r.emit(f"{ctype(p.type)} {r.adj(p)} = adj_args.{n};")
        else:
            r.emit(f"{ctype(p.type)} {r.adj(p)} = {adj_zero(p.type)};")
    body = r.backward_body()
    thread = (f"template <bool Atomic>\n"
              f"static CUDA_CALLABLE inline void {entry}_backward_thread(const wp::launch_bounds_t& lb, "
              f"wp::int64 task, const {entry}_args& args, const {entry}_args& adj_args) {{\n"
              f"    (void)lb; (void)task;\n{body}\n}}")
    if src.dialect == "cpu":
        private = _privatizable(fn)
        if private is not None:
            names = {fn.param_names[fn.params.index(p)] for p in exclusive}
            private = [(path, t) for path, t in private if path not in names]
        return thread + "\n" + src.privatized_backward(entry, private)
    return thread + "\n" + src.entry_point(entry, "backward", f"const {entry}_args* args, const {entry}_args* adj_args",
                                           "*args, *adj_args", atomic_template=True)


def _privatizable(fn: ir.Function):
    """Arrays whose gradients a parallel backward may accumulate in per-thread copies: those the kernel reads and
    never writes (a written array's gradient is read by the backward, so it must stay shared). None when an array
    is both read and written: then its gradient is read and accumulated, and only atomics are safe."""
    from .access import array_access
    access = array_access(fn, fn.param_names)
    if any(r and w for r, w in access.values()):
        return None
    return [(path, t) for path, t in _array_paths(zip(fn.param_names, (p.type for p in fn.params)))
            if access.get(path, (False, False))[0]]


def _zero_testable(t) -> bool:
    """Whether native `wp::is_zero` takes values of type `t` (scalars, vectors, matrices, quaternions,
    transforms)."""
    return isinstance(t, type) and (t in scalar_types or getattr(t, "_shape_", None) is not None)


def _pure(fn: ir.Function, _seen=None) -> bool:
    """A user function that touches no array, has no side effect and no custom adjoint, and calls only such
    functions: its adjoint adds nothing when every result adjoint is zero."""
    cached = getattr(fn, "_pure", None)
    if cached is not None:
        return cached
    seen = set() if _seen is None else _seen
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    ok = getattr(fn, "custom_grad_ir", None) is None and getattr(fn, "custom_replay_ir", None) is None
    ok = ok and not any(isinstance(p.type, ArrayType) or is_struct(p.type) for p in fn.params)
    for op in ir.walk(fn.body):
        if not ok:
            break
        ov = op.attrs.get("overload")
        callee = op.attrs.get("callee")
        if ov is not None and (ov.side_effect or op.attrs.get("name") in ("load", "store", "address")):
            ok = False
        elif callee is not None and not _pure(callee, seen):
            ok = False
        elif any(isinstance(v.type, ArrayType) for v in op.results):
            ok = False
    fn._pure = ok
    return ok


def _exclusive_arrays(fn: ir.Function) -> dict:
    """Array parameters read only as a[i] with i = wp.tid() of a one-dimensional index (the flat thread index,
    unique per thread on the CPU, where a tiled block is one lane) and never written or passed on: in the backward
    each thread alone adds into its gradient element, so neither atomics nor per-thread copies are needed.
    Maps each such parameter to its loads."""
    tids = {op.results[0] for op in ir.walk(fn.body)
            if op.opcode == "call" and op.attrs.get("name") == "tid" and op.attrs.get("ndim") == 1
            and len(op.results) == 1}
    if not tids:
        return {}
    loads = {p: [] for p in fn.params if isinstance(p.type, ArrayType)}
    for op in ir.walk(fn.body):
        for k, v in enumerate(op.operands):
            if v not in loads:
                continue
            exclusive_load = (op.opcode == "call" and op.attrs.get("name") == "load" and "callee" not in op.attrs
                              and k == 0 and len(op.operands) == 2 and op.operands[1] in tids)
            if exclusive_load and loads[v] is not None:
                loads[v].append(op)
            else:
                loads[v] = None
        for block in op.regions:
            if any(v in loads for v in block.yields):
                for v in block.yields:
                    if v in loads:
                        loads[v] = None
    return {p: ops for p, ops in loads.items() if ops}


def _array_paths(named_types, prefix: str = "") -> list:
    """(C++ member path, ArrayType) of every array reachable from kernel parameters, through struct members."""
    out = []
    for name, t in named_types:
        if isinstance(t, ArrayType):
            out.append((prefix + name, t))
        elif is_struct(t):
            out.extend(_array_paths(t._wp_struct_.fields.items(), f"{prefix}{name}."))
    return out


def render_adjoint_function(fn: ir.Function, src, name: str, ret: str) -> str:
    r = AdjointRenderer(fn, src.dialect, src.debug, src.func_names)
    r.prepare()
    params = [f"{ctype(p.type)} {r.name(p)}" for p in fn.params]
    adj_params = [f"{ctype(p.type)}& {r.adj(p)}" for p in fn.params]
    r.adj_ret_names = [f"adj_ret{k}" for k in range(len(fn.return_types))]
    ret_params = [f"const {ctype(t)}& adj_ret{k}" for k, t in enumerate(fn.return_types)]
    body = r.backward_body()
    sig = ", ".join(params + adj_params + ret_params)
    return f"static CUDA_CALLABLE inline void adj_{name}({sig}) {{\n{body}\n}}"

