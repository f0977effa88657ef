"""Kernels and modules: compile the kernels of a Python module into one native library, on first launch.

Kernels registered after a module was built go into a further library (no rebuild of what exists). A kernel with
a compile error keeps its error and raises it when launched; the others of its module still build: when the C++
compiler rejects a module, its kernels are retried one library each.
"""

from __future__ import annotations

import ctypes
import time

from . import config
from .build import build_cpu, load_library
from .errors import CompileError, NativeCompileError
from .frontend import FunctionSource
from .function import compile_ir, signature_types
from .render import CPU
from .render_module import ModuleSource


class Kernel:
    """A compiled-on-demand kernel (Warp's `@wp.kernel`)."""

    def __init__(self, pyfunc, *, enable_backward: bool = True, module: str | None = None):
        self.func = pyfunc
        self.key = f"{pyfunc.__module__}.{pyfunc.__qualname__}"
        self.name = pyfunc.__name__
        self.enable_backward = enable_backward
        self.source = FunctionSource(pyfunc)
        self.arg_types = signature_types(self.source, self.name, require=True)
        self.arg_names = [a.arg for a in self.source.fdef.args.args]
        self.module = get_module(module or pyfunc.__module__)
        self.module.register(self)
        self.ir = None
        self.error = None  # CompileError or NativeCompileError, raised at launch
        self.entry = None  # C symbol prefix in the library
        self.lib = None
        self.forward_fn = None
        self.backward_fn = None
        self.args_ctype = None
        self.tid_ndim = 0
        self.adjoint_error = None  # why this kernel has no backward (a CompileError), raised when one is asked for
        self.__doc__ = pyfunc.__doc__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"kernel '{self.name}' is run with wp.launch({self.name}, dim=..., inputs=[...])")

    def ensure_built(self):
        if self.lib is None and self.error is None:
            self.module.build()
        if self.error is not None:
            raise self.error

    def param_access(self) -> dict:
        """Parameter name -> (read, written) for array parameters, from the kernel's IR (overwrite checks)."""
        if getattr(self, "_access", None) is None:
            from . import ir as _ir
            access = {n: [False, False] for n in self.arg_names}
            names = dict(zip(self.ir.params, self.arg_names))
            for op in _ir.walk(self.ir.body):
                name = op.attrs.get("name")
                if op.opcode == "call" and op.operands and op.operands[0] in names:
                    slot = access[names[op.operands[0]]]
                    if name == "load":
                        slot[0] = True
                    elif name == "store":
                        slot[1] = True
            self._access = {k: tuple(v) for k, v in access.items()}
        return self._access

    def compile_ir(self):
        if self.ir is None:
            self.ir = compile_ir(self.source, "kernel", self.name, list(self.arg_types))
            from . import ir as _ir
            for op in _ir.walk(self.ir.body):
                if op.opcode == "call" and op.attrs.get("name") == "tid" and "callee" not in op.attrs:
                    self.tid_ndim = max(self.tid_ndim, op.attrs["ndim"])
        return self.ir


class Module:
    """The kernels of one Python module, built into native libraries in batches."""

    def __init__(self, name: str):
        self.name = name
        self.kernels: list = []
        self.pending: list = []
        self.build_seconds = 0.0
        self.cold_builds = 0

    def register(self, kernel: Kernel):
        # every kernel object is its own kernel: factories and closures make several with one name
        self.kernels.append(kernel)
        self.pending.append(kernel)

    def build(self):
        batch, self.pending = self.pending, []
        ready = []
        for k in batch:
            try:
                k.compile_ir()
                ready.append(k)
            except CompileError as e:
                k.error = e
        if not ready:
            return
        try:
            self._build_library(ready)
        except NativeCompileError:
            if len(ready) == 1:
                ready[0].error = _last_native_error[0]
                return
            for k in ready:  # isolate the kernel the C++ compiler rejects
                try:
                    self._build_library([k])
                except NativeCompileError as e:
                    k.error = e

    def _build_library(self, kernels: list):
        from .render_adjoint import adjoint_error, render_adjoint_function, render_adjoint_kernel
        debug = config.mode == "debug"
        src = ModuleSource(CPU, debug)
        parts = []
        for i, k in enumerate(kernels):
            k_entry = f"k{i}_{k.name}"
            for op_fn in _callees(k.ir):
                src.add_function(op_fn)
            parts.append(src.render_kernel(k.ir, k_entry, render_adjoint_kernel if k.enable_backward else None))
            k._pending_entry = k_entry
        source = src.source(parts, render_adjoint_function)
        safe = "".join(c if c.isalnum() else "_" for c in self.name)[-40:]
        t0 = time.perf_counter()
        try:
            result = build_cpu(source, safe, debug)
            lib = load_library(result.path)
            if lib is None:  # corrupt cache entry: removed, build again
                result = build_cpu(source, safe, debug)
                lib = load_library(result.path)
        except NativeCompileError as e:
            _last_native_error[0] = e
            raise
        self.build_seconds += time.perf_counter() - t0
        self.cold_builds += 0 if result.cached else 1
        for k in kernels:
            k.lib = lib
            k.entry = k._pending_entry
            k.forward_fn = getattr(lib, f"{k.entry}_forward")
            k.forward_fn.restype = None
            k.adjoint_error = adjoint_error(k.ir) if k.enable_backward else None
            if k.enable_backward and k.adjoint_error is None:
                k.backward_fn = getattr(lib, f"{k.entry}_backward")
                k.backward_fn.restype = None
            k.source_text = source
            k.error_slot = _error_slot(lib) if debug else None


_last_native_error = [None]


def _error_slot(lib):
    from .launch import ErrorSlot
    return ErrorSlot.in_dll(lib, "g_error")


def _callees(fn):
    from . import ir
    out = []
    for op in ir.walk(fn.body):
        c = op.attrs.get("callee")
        if c is not None and c not in out:
            out.append(c)
    return out


_modules: dict = {}


def get_module(name: str) -> Module:
    m = _modules.get(name)
    if m is None:
        m = _modules[name] = Module(name)
    return m


def kernel(f=None, *, enable_backward: bool = True, module: str | None = None):
    """Decorator: compile a Python function as a kernel (Warp's `@wp.kernel`)."""
    if f is None:
        return lambda g: Kernel(g, enable_backward=enable_backward, module=module)
    return Kernel(f, enable_backward=enable_backward, module=module)


def load_module(module=None, device=None):
    """Compile (or load from cache) every kernel of a Python module now rather than on first launch."""
    name = module if isinstance(module, str) else getattr(module, "__name__", None)
    if name is None:
        import inspect
        name = inspect.currentframe().f_back.f_globals["__name__"]
    get_module(name).build()


__all__ = ["Kernel", "Module", "kernel", "get_module", "load_module", "ctypes"]
