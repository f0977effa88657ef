"""Renderer, backward half: prints the adjoint (reverse-mode) body of kernels and user functions.

It prints the IR the adjoint pass made (passes/adjoint.py, adjoint_regions.py; `fn.adjoint`) and decides nothing:
  1. declarations: every primal value and its adjoint (zero), hoisted; loop counters and carried-value slots;
  2. the replay region (the forward body without side effects, counting loop iterations);
  3. the reverse region: `adj_call` in the form the pass chose, `adj_if` under the same condition, `adj_loop`
     running iterations backwards (restoring carried values from slots or by replaying, as its attr says).
Array values have no accumulator: their adjoint is the gradient array (an alias), set once.
"""

from __future__ import annotations

from . import ir
from .block_dim_source import block_dim_prologue
from .render import FunctionRenderer, _has_ctype, arg_field, ctype, function_qualifiers, member, param_decl
from .. import types as T
from ..typesys import ArrayType, StaticType, is_struct


def adj_zero(t) -> str:
    """C++ expression of an empty adjoint accumulator of type `t`: -0.0 in 32- and 64-bit float components (see
    `zero_adjoint` in native core.h), T() for everything else."""
    if (T.is_scalar(t) or T.is_composite(t)) and T.scalar_type(t) in (T.float32, T.float64):
        return f"wp::adj_zero<{ctype(t)}>()"
    return f"{ctype(t)}()"


class AdjointRenderer(FunctionRenderer):
    # template arguments of adj_index_load: "<Atomic>" in kernel backward threads (a template on whether the launch
    # runs in parallel); user functions' adjoints always add atomically
    accumulate_args = ""
    use_exclusive_loads = False  # CPU kernels: a load the pass marked exclusive adds without atomics

    def __init__(self, fn, dialect, debug, func_names):
        super().__init__(fn, dialect, debug, func_names)
        self.adj_names: dict = {}
        self.adj_ret_names: list = []

    def adj(self, v: ir.Value) -> str:
        n = self.adj_names.get(v)
        if n is None:
            n = "adj_" + self.name(v)
            self.adj_names[v] = n
        return n

    @staticmethod
    def counter(k: int) -> str:
        return f"count{k}_"

    def slots(self, loop, k: int):
        """(capacity name, [(carried result, slot array name)]) of a loop whose reverse restores from slots."""
        c = self.counter(k)
        carried = [r for r in loop.results if _has_ctype(r.type)]
        return f"cap_{c}", [(r, f"slot{j}_{c}") for j, r in enumerate(carried)]

    # ------------------------------------------------------------------------------------------ declarations

    def declare_adjoints(self, block: ir.Block):
        adjoint = self.fn.adjoint
        for op in ir.walk(block):
            vals = list(op.results) + [a for region in op.regions for a in region.args]
            for v in vals:
                if _has_ctype(v.type) and v not in self.adj_names:
                    self.emit(f"{ctype(v.type)} {self.adj(v)} = {adj_zero(v.type)};")
            if op in adjoint.counters:
                k = adjoint.counters[op]
                self.emit(f"wp::int64 {self.counter(k)} = 0;")
                if adjoint.restore.get(op) == "slots":
                    self.declare_slots(op, k)
        self.alias_loop_args(block)

    def declare_slots(self, op, k: int):
        """Slot arrays for the carried values of a loop whose reverse restores them (see wp::carry_slots)."""
        cap, names = self.slots(op, k)
        size = " + ".join(f"sizeof({ctype(r.type)})" for r, _ in names)
        self.emit(f"constexpr wp::int64 {cap} = wp::carry_slots({size});")
        for r, name in names:
            self.emit(f"{ctype(r.type)} {name}[{cap}];")

    def alias_loop_args(self, block):
        for op in ir.walk(block):
            if op.opcode == "for":
                self.bind_args(op.regions[0].args[1:], op.results)
            elif op.opcode == "while":
                self.bind_args(op.regions[0].args, op.results)
                self.bind_args(op.regions[1].args, op.results)

    # ------------------------------------------------------------------------------------------ replay ops

    def op_for(self, op, replay):
        if "counter" in op.attrs:
            self.emit(f"{self.counter(op.attrs['counter'])} = 0;")
        super().op_for(op, replay)

    def op_while(self, op, replay):
        if "counter" in op.attrs:
            self.emit(f"{self.counter(op.attrs['counter'])} = 0;")
        super().op_while(op, replay)

    def op_count_iteration(self, op, replay):
        self.emit(f"{self.counter(op.attrs['counter'])}++;")

    def op_store_carried(self, op, replay):
        # while counting (the replay before the reverse), keep the carried values of the first iterations
        k = op.attrs["counter"]
        cap, names = self.slots(self.loop_of_counter(k), k)
        count = self.counter(k)
        stores = " ".join(f"{slot}[{count}] = {self.name(v)};" for v, (_, slot) in zip(op.operands, names))
        self.emit(f"if ({count} < {cap}) {{ {stores} }}")

    def loop_of_counter(self, k: int):
        return next(loop for loop, n in self.fn.adjoint.counters.items() if n == k)

    def op_adj_field(self, op, replay):
        r, base = op.operands
        self.emit(f"{self.adj(r)} = {self.adj(base)}.{member(op.attrs['field'])};")

    def op_adj_view(self, op, replay):
        r, a, *idx = op.operands
        self.emit(f"{self.adj(r)} = wp::{op.attrs['view']}({self.adj(a)}, {self.args(idx)});")

    # ------------------------------------------------------------------------------------------ reverse ops

    def adj_args(self, values) -> str:
        return ", ".join(self.adj(v) for v in values if not isinstance(v.type, StaticType))

    def op_adj_add(self, op, replay):
        t, s = op.operands
        self.emit(f"{self.adj(t)} = wp::add({self.adj(t)}, {self.adj(s)});")

    def op_adj_set(self, op, replay):
        t, s = op.operands
        self.emit(f"{self.adj(t)} = {self.adj(s)};")

    def op_adj_zero(self, op, replay):
        for v in op.operands:
            self.emit(f"{self.adj(v)} = {adj_zero(v.type)};")

    def op_adj_return(self, op, replay):
        for v, k in zip(op.operands, op.attrs["index"]):
            self.emit(f"{self.adj(v)} = wp::add({self.adj(v)}, {self.adj_ret_names[k]});")

    def op_adj_if(self, op, replay):
        self.emit(f"if ({self.name(op.operands[0])}) {{")
        self.nested(op.regions[0])
        self.emit("} else {")
        self.nested(op.regions[1])
        self.emit("}")

    def nested(self, block):
        self.depth += 1
        self.block(block)
        self.depth -= 1

    def op_adj_loop(self, op, replay):
        loop = op.attrs["of"]
        k = op.attrs["counter"]
        count = self.counter(k)
        replay_region, reverse_region = op.regions
        it = f"it{count}"
        self.emit(f"for (wp::int64 {it} = {count} - 1; {it} >= 0; --{it}) {{")
        self.depth += 1
        restore = op.attrs.get("restore")
        if restore == "slots":
            # the carried values at the start of iteration `it`: stored in the replay for the first iterations,
            # else replayed from the last stored one
            cap, names = self.slots(loop, k)
            self.emit(f"if ({it} < {cap}) {{")
            self.emit("    " + " ".join(f"{self.name(r)} = {slot}[{it}];" for r, slot in names))
            self.emit("} else {")
            self.depth += 1
            self.emit(" ".join(f"{self.name(r)} = {slot}[{cap} - 1];" for r, slot in names))
            self.replay_iterations(loop, replay_region, f"{cap} - 1", it)
            self.depth -= 1
            self.emit("}")
        elif restore == "replay":
            # restore the carried values at the start of iteration `it` by replaying iterations 0..it-1
            self.assign_carried(loop.results, loop.operands[3:] if loop.opcode == "for" else loop.operands)
            self.replay_iterations(loop, replay_region, "0", it)
        self.set_index(loop, it)
        self.block(replay_region, True)
        self.block(reverse_region)
        self.depth -= 1
        self.emit("}")

    def set_index(self, loop, it: str):
        if loop.opcode == "for":
            start, _, step = loop.operands[:3]
            index = loop.regions[0].args[0]
            self.emit(f"{self.name(index)} = {ctype(index.type)}({self.name(start)} + {it} * {self.name(step)});")

    def replay_iterations(self, loop, replay_region, first: str, stop: str):
        """Replay iterations first..stop-1 of a loop, carrying its values along."""
        self.emit(f"for (wp::int64 j_ = {first}; j_ < {stop}; ++j_) {{")
        self.depth += 1
        self.set_index(loop, "j_")
        self.block(replay_region, True)
        self.assign_carried(loop.results, replay_region.yields)
        self.depth -= 1
        self.emit("}")

    def op_adj_call(self, op, replay):
        getattr(self, "adj_" + op.attrs["form"])(op.attrs["of"], op)

    def adj_callee(self, call, op):
        a = call.operands
        rets = [self.adj(r) for r in call.results if _has_ctype(r.type)]
        primal = list(a)
        native = getattr(call.attrs["callee"], "native", None)
        if native is not None and native.references:
            # a C++ snippet's adjoint sees a reference argument as its storage holds it after the call (as in Warp)
            first = len(call.results) - len(native.references)
            for j, k in enumerate(native.references):
                primal[k] = call.results[first + j]
        args = ", ".join(x for x in (self.args(primal), self.adj_args(a), ", ".join(rets)) if x)
        text = f"adj_{self.func_names[call.attrs['callee']]}({args});"
        if op.attrs.get("skip_if_zero"):
            text = f"if ({' || '.join(f'!wp::is_zero({n})' for n in rets)}) {text}"
        self.emit(text)

    def adj_index_load(self, call, op):
        a = call.operands
        exclusive = op.attrs.get("exclusive") and self.use_exclusive_loads
        template = "<false>" if exclusive else self.accumulate_args
        self.emit(f"wp::adj_index_load{template}({self.adj(a[0])}, {self.line_arg(call)}, {self.args(a[1:])}, "
                  f"{self.adj(call.results[0])});")

    def adj_index_overwrite(self, call, op):
        a = call.operands
        self.emit(f"wp::adj_index_overwrite({self.adj(a[0])}, {self.line_arg(call)}, {self.adj(a[-1])}, "
                  f"{self.args(a[1:-1])});")

    def adj_index_store(self, call, op):
        a = call.operands
        self.emit(f"wp::adj_index_store({self.adj(a[0])}, {self.line_arg(call)}, {self.args(a[1:-1])}, "
                  f"{self.adj(a[-1])});")

    def adj_index_accumulate(self, call, op):
        a = call.operands
        self.emit(f"wp::adj_index_accumulate({self.adj(a[0])}, {self.line_arg(call)}, {self.adj(a[-1])}, "
                  f"{self.args(a[1:-1])});")

    def adj_index_minmax(self, call, op):
        # the final a[i] (read in the backward, after every forward thread ran) names the winner(s)
        a = call.operands
        self.emit(f"wp::adj_index_minmax({self.name(a[0])}, {self.adj(a[0])}, {self.line_arg(call)}, "
                  f"{self.name(a[-1])}, {self.adj(a[-1])}, {self.args(a[1:-1])});")

    def adj_index_accumulate_neg(self, call, op):
        a = call.operands
        t = ctype(a[-1].type)
        self.emit(f"{{ {t} g_ = {t}(); wp::adj_index_accumulate({self.adj(a[0])}, {self.line_arg(call)}, g_, "
                  f"{self.args(a[1:-1])}); {self.adj(a[-1])} = wp::sub({self.adj(a[-1])}, g_); }}")

    def adj_tile_map(self, call, op):
        a = call.operands
        r = call.results[0]
        slots = [f"wp::tile_elem({self.name(v)}, k)" for v in a] + \
            [f"wp::tile_elem_ref({self.adj(v)}, k)" for v in a] + [f"wp::tile_elem({self.adj(r)}, k)"]
        size = r.type.rows * r.type.cols
        self.emit(f"wp::adj_tile_map<{size}>([&](int k) {{ "
                  f"{self.element_function_name(call, adjoint=True)}({', '.join(slots)}); }});")

    def adj_tile_reduce(self, call, op):
        a = call.operands
        axis = f"_axis<{call.attrs['axis']}>" if "axis" in call.attrs else ""
        if "lines" in call.attrs:  # along an axis of a 3-d/4-d tile
            axis = "_lines<{}, {}, {}>".format(*call.attrs["lines"])
        self.emit(f"wp::adj_tile_reduce{axis}({self.element_lambda(call, 2)}, "
                  f"{self.element_adjoint_lambda(call, 2)}, {self.args(a)}, {self.adj_args(a)}, "
                  f"{self.adj(call.results[0])});")

    def adj_field_get(self, call, op):
        a, f = call.operands, member(call.attrs["field"])
        self.emit(f"{self.adj(a[0])}.{f} = wp::add({self.adj(a[0])}.{f}, {self.adj(call.results[0])});")

    def adj_field_set(self, call, op):
        a, f = call.operands, member(call.attrs["field"])
        r = self.adj(call.results[0])
        if not isinstance(a[1].type, ArrayType):
            self.emit(f"{self.adj(a[1])} = wp::add({self.adj(a[1])}, {r}.{f});")
            self.emit(f"{{ {ctype(call.results[0].type)} t_ = {r}; t_.{f} = {ctype(a[1].type)}(); "
                      f"{self.adj(a[0])} = wp::add({self.adj(a[0])}, t_); }}")
        else:
            self.emit(f"{self.adj(a[0])} = wp::add({self.adj(a[0])}, {r});")

    def adj_cast(self, call, op):
        self.emit(f"wp::adj_cast<{ctype(call.results[0].type)}>({self.adjoint_call_args(call)});")

    def adj_native(self, call, op):
        ov = call.attrs["overload"]
        template = f"<{ctype(call.results[0].type)}>" if ov.template_ret else ""
        self.emit(f"wp::adj_{ov.native}{template}({self.adjoint_call_args(call)});")

    def adjoint_call_args(self, call) -> str:
        """Native adjoint convention: primal arguments, their adjoints, the results' adjoints."""
        a = call.operands
        rets = ", ".join(self.adj(r) for r in call.results if _has_ctype(r.type))
        return ", ".join(x for x in (self.args(a), self.adj_args(a), rets) if x)

    # ------------------------------------------------------------------------------------------ bodies

    def prepare(self):
        adjoint = self.fn.adjoint
        if adjoint.error is not None:
            raise adjoint.error

    def backward_body(self):
        self.declare_values(self.fn.body)
        self.declare_adjoints(self.fn.body)
        self.block(self.fn.adjoint.replay, replay=True)
        self.block(self.fn.adjoint.reverse)
        return "\n".join(self.lines)


def render_adjoint_kernel(fn: ir.Function, src, entry: str) -> str:
    r = AdjointRenderer(fn, src.dialect, src.debug, src.func_names)
    r.accumulate_args = "<Atomic>"
    r.use_exclusive_loads = src.dialect == "cpu"
    r.prepare()
    for p, n in zip(fn.params, fn.param_names):
        r.emit(f"{param_decl(p.type, r.name(p), const=True)} = args.{arg_field(n)};")
        if isinstance(p.type, ArrayType) or is_struct(p.type):
            r.emit(f"{ctype(p.type)} {r.adj(p)} = adj_args.{arg_field(n)};")
        else:
            r.emit(f"{ctype(p.type)} {r.adj(p)} = {adj_zero(p.type)};")
    body = block_dim_prologue(fn) + r.backward_body()
    thread = (f"template <bool Atomic>\n"
              f"static CUDA_CALLABLE inline void {entry}_backward_thread(const wp::launch_bounds_t& lb, "
              f"wp::int64 task, const {entry}_args& args, const {entry}_args& adj_args) {{\n"
              f"    (void)lb; (void)task;\n{body}\n}}")
    if src.dialect == "cpu":
        return thread + "\n" + src.privatized_backward(entry, fn.adjoint.private_arrays)
    return thread + "\n" + src.entry_point(entry, "backward", f"const {entry}_args* args, const {entry}_args* adj_args",
                                           "*args, *adj_args", atomic_template=True)


def render_adjoint_function(fn: ir.Function, src, name: str, ret: str) -> str:
    r = AdjointRenderer(fn, src.dialect, src.debug, src.func_names)
    r.prepare()
    params = [param_decl(p.type, r.name(p)) for p in fn.params]
    adj_params = [f"{ctype(p.type)}& {r.adj(p)}" for p in fn.params]
    r.adj_ret_names = [f"adj_ret{k}" for k in range(len(fn.return_types))]
    ret_params = [f"const {ctype(t)}& adj_ret{k}" for k, t in enumerate(fn.return_types)]
    body = r.backward_body()
    sig = ", ".join(params + adj_params + ret_params)
    return f"static CUDA_CALLABLE {function_qualifiers(fn, adjoint=True)} void adj_{name}({sig}) {{\n{body}\n}}"

