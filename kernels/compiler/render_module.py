"""Assembles the source of one compiled module: structs, user functions, kernels and their entry points.

The body of each function is rendered by render.FunctionRenderer (forward) and adjoint.AdjointRenderer (backward);
this file adds the declarations around them and the dialect-specific kernel entry points.
"""

from __future__ import annotations

from . import ir
from .access import privatizable_accumulations
from .render import (CPU, FunctionRenderer, arg_field, ctype, float_accumulable, function_qualifiers, member,
                     param_decl)
from ..typesys import ArrayType, is_struct
from .render_adjoint import render_adjoint_function
from .native_snippet import is_native
from .render_native import render_native
from .block_dim_source import block_dim_prologue
from .. import types as T

_NO_ATOMIC_ADD = (T.bool_, T.int8, T.uint8, T.int16, T.uint16)

HEADER = '#include "builtin.h"\n'


class ModuleSource:
    """Collects the pieces of a module in dependency order and joins them into one source text."""

    def __init__(self, dialect: str, debug: bool):
        self.dialect = dialect
        self.debug = debug
        self.structs: list = []
        self.func_names: dict = {}  # typed ir.Function -> C++ name
        self.func_order: list = []
        self.gradient_targets: set = set()  # functions whose adjoint a forward computation calls (wp.grad)
        self._adding: set = set()  # functions whose callees are being registered (add_function)
        self.parts: list = []

    # ---- structs

    def add_struct(self, t):
        if t in self.structs or t._wp_struct_.native:
            return
        for ft in t._wp_struct_.fields.values():
            self.add_type(ft)
        self.structs.append(t)

    def add_type(self, t):
        if is_struct(t):
            self.add_struct(t)
        elif isinstance(t, ArrayType) and is_struct(t.dtype):
            self.add_struct(t.dtype)

    def render_struct(self, t) -> str:
        info = t._wp_struct_
        members = {member(name): ft for name, ft in info.fields.items()}
        fields = "\n".join(f"    {ctype(ft)} {name};" for name, ft in members.items())
        # Field-wise arithmetic (adjoint accumulation, and struct tiles' +, - and sums, as Warp 1.19's):
        # as Warp's, fields of a type without an atomic add (bool, 8- and 16-bit integers) and array members (views)
        # are not accumulated; they keep the left operand's value
        summed = [name for name, ft in members.items() if not isinstance(ft, ArrayType) and ft not in _NO_ATOMIC_ADD]
        name = info.cname

        def fieldwise(fn, args):
            return "\n".join(f"    r.{m} = wp::{fn}({', '.join(f'{x}.{m}' for x in args)});" for m in summed)
        atomics = "\n".join(f"    atomic_rmw_add(&p->{m}, v.{m});" for m in summed)
        return (f"struct {name} {{\n{fields}\n}};\n"
                f"CUDA_CALLABLE inline {name} add(const {name}& a, const {name}& b) {{\n"
                f"    {name} r = a;\n{fieldwise('add', 'ab')}\n    return r;\n}}\n"
                f"CUDA_CALLABLE inline {name} sub(const {name}& a, const {name}& b) {{\n"
                f"    {name} r = a;\n{fieldwise('sub', 'ab')}\n    return r;\n}}\n"
                f"CUDA_CALLABLE inline void adj_add(const {name}&, const {name}&, {name}& adj_a, {name}& adj_b, "
                f"const {name}& adj_ret) {{\n    adj_a = add(adj_a, adj_ret);\n    adj_b = add(adj_b, adj_ret);\n}}\n"
                f"CUDA_CALLABLE inline void adj_sub(const {name}&, const {name}&, {name}& adj_a, {name}& adj_b, "
                f"const {name}& adj_ret) {{\n    adj_a = add(adj_a, adj_ret);\n    adj_b = sub(adj_b, adj_ret);\n}}\n"
                f"CUDA_CALLABLE inline {name} atomic_rmw_add({name}* p, const {name}& v) {{\n"
                f"    {name} old = *p;\n{atomics}\n    return old;\n}}\n")

    # ---- functions

    def add_function(self, fn: ir.Function):
        """Register a typed user function and (first) everything it calls."""
        if fn in self.func_names or fn in self._adding:
            return
        self._adding.add(fn)  # a custom adjoint may call the function itself: its name comes after its callees
        for p in fn.params:
            self.add_type(p.type)
        self.add_callees(fn)
        for extra in (getattr(fn, "custom_grad_ir", None), getattr(fn, "custom_replay_ir", None)):
            if extra is not None:  # functions the user's adjoint or replay calls are declared before it
                self.add_callees(extra)
        self._adding.discard(fn)
        self.func_names[fn] = f"f{len(self.func_names)}_{fn.name}"
        self.func_order.append(fn)

    def add_callees(self, fn: ir.Function):
        """Register every function `fn` (a function or a kernel) calls, and mark those whose adjoint it calls
        through wp.grad: a forward-only build (CUDA) renders those adjoints too."""
        for op in ir.walk(fn.body):
            for r in op.results:
                self.add_type(r.type)
            callee = op.attrs.get("callee")
            if callee is not None:
                self.add_function(callee)
                if op.attrs.get("gradient"):
                    self.gradient_targets.add(callee)
            elem = op.attrs.get("elem")
            if elem is not None and elem[0] == "func":
                self.add_function(elem[1])

    def render_function(self, fn: ir.Function, adjoint_renderer=None) -> str:
        """A user function: forward, replay (no side effects, used by backward passes) and adjoint versions."""
        name = self.func_names[fn]
        if is_native(fn):
            return render_native(fn, name, backward=adjoint_renderer is not None)
        rts = fn.return_types
        out = []
        if len(rts) > 1:
            members = " ".join(f"{ctype(t)} v{k};" for k, t in enumerate(rts))
            out.append(f"struct {name}_ret {{ {members} }};")
            ret = f"{name}_ret"
        else:
            ret = ctype(rts[0]) if rts else "void"
        out.append(self.function_body(fn, name, ret, replay=False))
        if adjoint_renderer is not None:
            custom = getattr(fn, "custom_replay_ir", None)
            if custom is not None:  # the user's replay runs as written, side effects included
                out.append(self.function_body(custom, f"replay_{name}", ret, replay=False))
            else:
                out.append(self.function_body(fn, f"replay_{name}", ret, replay=True))
            if getattr(fn, "custom_grad_ir", None) is not None:
                out.append(self.custom_adjoint(fn, name))
            elif fn.adjoint.error is None:
                out.append(adjoint_renderer(fn, self, name, ret))
        return "\n".join(out) + "\n"

    def function_body(self, fn: ir.Function, name: str, ret: str, replay: bool) -> str:
        r = FunctionRenderer(fn, self.dialect, self.debug, self.func_names)
        r.keep_returns = True
        params = ", ".join(param_decl(p.type, r.name(p)) for p in fn.params)
        r.declare_values(fn.body)
        r.block(fn.body, replay)
        body = "\n".join(r.lines)
        return f"static CUDA_CALLABLE {function_qualifiers(fn)} {ret} {name}({params}) {{\n{body}\n}}"

    def custom_adjoint(self, fn: ir.Function, name: str) -> str:
        """`adj_<name>` from a @wp.func_grad body: its first parameters are the primal arguments, the rest the
        adjoints of the results; `wp.adjoint[x] += v` adds to the adjoint argument of x."""
        grad = fn.custom_grad_ir
        r = FunctionRenderer(grad, self.dialect, self.debug, self.func_names)
        n = len(fn.params)
        primal, adj_rets = grad.params[:n], grad.params[n:]
        r.custom_adjoints = [f"adj_{r.name(p)}" for p in primal]
        params = [f"{ctype(p.type)} {r.name(p)}" for p in primal]
        params += [f"{ctype(p.type)}& adj_{r.name(p)}" for p in primal]
        params += [f"const {ctype(p.type)}& {r.name(p)}" for p in adj_rets]
        r.declare_values(grad.body)
        r.block(grad.body)
        body = "\n".join(r.lines)
        quals = function_qualifiers(fn, adjoint=True)
        return f"static CUDA_CALLABLE {quals} void adj_{name}({', '.join(params)}) {{\n{body}\n}}"

    # ---- kernels

    def render_kernel(self, fn: ir.Function, entry: str, adjoint_renderer=None) -> str:
        """Args struct, per-thread forward function and the entry point named `{entry}_forward`."""
        for p in fn.params:
            self.add_type(p.type)
        for op in ir.walk(fn.body):
            for r in op.results:
                self.add_type(r.type)
        fields = "\n".join(f"    {ctype(p.type)} {arg_field(n)};" for p, n in zip(fn.params, fn.param_names))
        out = [f"struct {entry}_args {{\n{fields}\n}};"]
        r = FunctionRenderer(fn, self.dialect, self.debug, self.func_names)
        r.atomic_template = self.dialect == CPU
        for p, n in zip(fn.params, fn.param_names):
            r.emit(f"{param_decl(p.type, r.name(p), const=True)} = args.{arg_field(n)};")
        r.declare_values(fn.body)
        r.block(fn.body)
        body = block_dim_prologue(fn) + "\n".join(r.lines)
        template = "template <bool Atomic>\n" if r.atomic_template else ""
        out.append(f"{template}static CUDA_CALLABLE inline void {entry}_forward_thread(const wp::launch_bounds_t& lb, "
                   f"wp::int64 task, const {entry}_args& args) {{\n    (void)lb; (void)task;\n{body}\n}}")
        if r.atomic_template:
            out.append(self.privatized_forward(entry, privatizable_accumulations(fn, fn.param_names,
                                                                                 float_accumulable)))
        else:
            out.append(self.entry_point(entry, "forward", f"const {entry}_args* args", "*args"))
        if adjoint_renderer is not None and fn.adjoint.error is None:
            out.append(adjoint_renderer(fn, self, entry))
        return "\n".join(out) + "\n"

    def privatized_backward(self, entry: str, array_paths: list) -> str:
        """CPU backward entry point whose parallel path gives each thread private copies of the gradient arrays in
        `array_paths` (no atomics), summed afterwards; falls back to atomics when the gradients are much larger
        than the launch, or always when `array_paths` is None (an array both read and written)."""
        params = f"const {entry}_args* args, const {entry}_args* adj_args"
        if array_paths is None:
            return self.entry_point(entry, "backward", params, "*args, *adj_args", atomic_template=True)
        if not array_paths:  # every gradient a thread adds into is its own: no atomics, no copies
            return self.entry_point(entry, "backward", params, "*args, *adj_args", atomic_template=True,
                                    parallel_atomic=False)
        return self.privatized_entry(entry, "backward", params, "*args, *adj_args", "adj_args", array_paths)

    def privatized_forward(self, entry: str, array_paths: list | None) -> str:
        """CPU forward entry point: on one thread the kernel's float adds into arrays are plain adds; in parallel,
        each thread adds into private copies of the arrays in `array_paths` (access.privatizable_accumulations),
        summed afterwards, or (None, empty, or copies much larger than the launch) adds atomically."""
        params = f"const {entry}_args* args"
        if not array_paths:
            return self.entry_point(entry, "forward", params, "*args", atomic_template=True)
        return self.privatized_entry(entry, "forward", params, "*args", "args", array_paths)

    def privatized_entry(self, entry: str, kind: str, params: str, call_args: str, shadowed: str,
                         array_paths: list) -> str:
        """The exported `{entry}_{kind}` whose parallel path runs one chunk per thread, chunk t adding into copy t
        (wp::grad_shadow) of the arrays at `array_paths` in the argument struct `shadowed`, then sums the copies."""
        thread = f"{entry}_{kind}_thread"
        shadows = "\n".join(f"            wp::grad_shadow<{ctype(t.dtype)}> s{k}_({shadowed}->{arg_field(path)}, nt);"
                             for k, (path, t) in enumerate(array_paths))
        ok = " && ".join(f"s{k}_.ok()" for k in range(len(array_paths)))
        views = "\n".join(f"                    local.{arg_field(path)} = s{k}_.view(t);"
                          for k, (path, _) in enumerate(array_paths))
        reduces = "\n".join(f"            s{k}_.reduce();" for k in range(len(array_paths)))
        total = " + ".join(f"wp::gradient_elements({shadowed}->{arg_field(path)})" for path, _ in array_paths)
        local_args = call_args.replace(f"*{shadowed}", "local")
        return (f'extern "C" WP_EXPORT void {entry}_{kind}(const wp::launch_bounds_t* lb, {params}, '
                f"wp::int64 parallel_threshold) {{\n"
                f"    const wp::int64 n = lb->size;\n"
                f"    if (n >= parallel_threshold && wp::cpu_parallel()) {{\n"
                f"        if (wp::privatize_gradients(n, {total})) {{\n"
                f"            const int nt = wp::cpu_threads();\n"
                f"{shadows}\n"
                f"            if ({ok}) {{\n"
                f"                // one chunk per copy: chunk t adds into copy t, whichever thread runs it\n"
                f"                wp::parallel_for(n, nt, nt, [&](wp::int64 begin, wp::int64 end, int t) {{\n"
                f"                    {entry}_args local = *{shadowed};\n"
                f"{views}\n"
                f"                    for (wp::int64 task = begin; task < end; ++task) {thread}<false>(*lb, task, {local_args});\n"
                f"                }});\n"
                f"{reduces}\n"
                f"                return;\n"
                f"            }}\n"
                f"        }}\n"
                f"{_parallel_loop(f'{thread}<true>', call_args)}"
                f"    }} else {{\n"
                f"        for (wp::int64 task = 0; task < n; ++task) {thread}<false>(*lb, task, {call_args});\n"
                f"    }}\n}}")

    def entry_point(self, entry: str, kind: str, params: str, call_args: str, *, atomic_template=False,
                    parallel_atomic=True) -> str:
        """The exported function that runs `{entry}_{kind}_thread` over all threads of a launch.

        With `atomic_template`, the thread function is a template on whether other threads may add into the same
        memory: the parallel path instantiates it with `parallel_atomic` (true unless no two threads ever add into
        the same element), the path on one thread with false (no atomics).
        """
        thread = f"{entry}_{kind}_thread"
        parallel, serial = (thread, thread)
        if atomic_template:
            parallel, serial = f"{thread}<{'true' if parallel_atomic else 'false'}>", f"{thread}<false>"
        if self.dialect == CPU:
            return (f'extern "C" WP_EXPORT void {entry}_{kind}(const wp::launch_bounds_t* lb, {params}, '
                    f"wp::int64 parallel_threshold) {{\n"
                    f"    const wp::int64 n = lb->size;\n"
                    f"    if (n >= parallel_threshold && wp::cpu_parallel()) {{\n"
                    f"{_parallel_loop(parallel, call_args)}"
                    f"    }} else {{\n"
                    f"        for (wp::int64 task = 0; task < n; ++task) {serial}(*lb, task, {call_args});\n"
                    f"    }}\n}}")
        # CUDA: parameters by value, grid-stride loop over thread ids
        cuda_params = params.replace("const ", "").replace("* ", " ").replace("*", "")
        cuda_call = call_args.replace("*", "")
        return (f'extern "C" __global__ void {entry}_cuda_{kind}(wp::launch_bounds_t lb, {cuda_params}) {{\n'
                f"    for (wp::int64 task = wp::int64(blockDim.x) * blockIdx.x + threadIdx.x; task < lb.size;\n"
                f"         task += wp::int64(blockDim.x) * gridDim.x)\n"
                f"        {parallel}(lb, task, {cuda_call});\n}}")

    # ---- assembly

    def source(self, kernel_parts: list, adjoint_func_renderer=None) -> str:
        pieces = [f"// generated by kernels: {self.dialect}{' debug' if self.debug else ''}"]
        if self.debug:
            pieces.append("#define WP_DEBUG 1")
        if self.dialect == CPU:
            pieces.append('#define WP_EXPORT __attribute__((visibility("default")))')
        pieces.append(HEADER)
        if self.debug and self.dialect == CPU:
            pieces.append('extern "C" WP_EXPORT wp::error_t g_error = {};')
        for t in self.structs:
            pieces.append("namespace wp {\n" + self.render_struct(t) + "}  // namespace wp")
        for fn in self.func_order:
            renderer = adjoint_func_renderer
            if renderer is None and fn in self.gradient_targets:
                renderer = render_adjoint_function
            pieces.append(self.render_function(fn, renderer))
        pieces.extend(kernel_parts)
        return "\n".join(pieces) + "\n"


def _parallel_loop(thread: str, call_args: str) -> str:
    """C++ that runs `thread(*lb, task, call_args)` for every task of the launch on the process's thread pool."""
    return (f"        wp::parallel_for(n, wp::cpu_threads() * wp::kChunksPerThread, wp::cpu_threads(),\n"
            f"                         [&](wp::int64 begin, wp::int64 end, int) {{\n"
            f"            for (wp::int64 task = begin; task < end; ++task) {thread}(*lb, task, {call_args});\n"
            f"        }});\n")
