"""Kernels and modules: compile the kernels of a Python module into one native library, on first launch.

Kernels registered after a module was built go into a further library (no rebuild of what exists). A kernel with
a compile error keeps its error and raises it when launched; the others of its module still build: when the C++
compiler rejects a module, its kernels are retried one library each.

Before compiling anything, a batch looks itself up in the cache index (cache_index.py) by a key computed from
the Python side; on a hit its library is loaded and no IR is compiled (`Kernel.compile_ir` still gives the IR
on request).
"""

from __future__ import annotations

import os
import time

from . import cache_index, config
from .build import build_cpu, load_library
from .errors import CompileError, NativeCompileError
from .frontend import FunctionSource
from .function import compile_ir, signature_types
from .passes.cost import estimate_work, parallel_threshold


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
        self.work = 0  # estimated IR ops per thread (passes/cost.py), sets the CPU parallel threshold
        self._threshold = None
        self.adjoint_error = None  # why this kernel has no backward (a CompileError), raised when one is asked for
        self._access = None
        self._source_text = None
        self._library_path = None
        self.__doc__ = pyfunc.__doc__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"kernel '{self.name}' is run with wp.launch({self.name}, dim=..., inputs=[...])")

    def parallel_threshold(self, base: int) -> int:
        """Launch size from which this kernel runs multithreaded on the CPU (`base` is for a trivial kernel)."""
        cached = self._threshold
        if cached is None or cached[0] != base or cached[1] != self.work:
            cached = self._threshold = (base, self.work, parallel_threshold(self.work, base))
        return cached[2]

    def ensure_built(self):
        if self.lib is None and self.error is None:
            self.module.build()
        if self.error is not None:
            raise self.error

    @property
    def source_text(self) -> str | None:
        """The generated C++ of the library this kernel is in (read from the cache when it was loaded from there)."""
        if self._source_text is None and self._library_path is not None:
            try:
                with open(os.path.join(os.path.dirname(self._library_path), "module.cpp")) as f:
                    self._source_text = f.read()
            except OSError:
                pass
        return self._source_text

    @source_text.setter
    def source_text(self, text: str):
        self._source_text = text

    def param_access(self) -> dict:
        """Array parameter path ("x", "p.output") -> (read, written), from the kernel's IR (tape checks)."""
        if self._access is None:
            from .access import array_access
            self.compile_ir()
            self._access = array_access(self.ir, self.arg_names)
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
        self.build_seconds = 0.0  # wall time in build(): IR, code generation, C++ compile or cache load
        self.cold_builds = 0
        self.index_hits = 0  # batches loaded through the cache index, with no IR compiled

    def register(self, kernel: Kernel):
        # every kernel object is its own kernel: factories and closures make several with one name
        self.kernels.append(kernel)
        self.pending.append(kernel)

    def build(self):
        batch, self.pending = self.pending, []
        if not batch:
            return
        t0 = time.perf_counter()
        try:
            self._build_batch(batch)
        finally:
            self.build_seconds += time.perf_counter() - t0

    def _build_batch(self, batch: list):
        debug = config.mode == "debug"
        prekey = cache_index.module_key(self.name, batch, debug)
        if prekey is not None and self._load_indexed(batch, prekey, debug):
            return
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
            self._build_library(ready, prekey if len(ready) == len(batch) else None)
        except NativeCompileError:
            if len(ready) == 1:
                ready[0].error = _last_native_error[0]
                return
            for k in ready:  # isolate the kernel the C++ compiler rejects
                try:
                    self._build_library([k])
                except NativeCompileError as e:
                    k.error = e

    def _load_indexed(self, kernels: list, prekey: str, debug: bool) -> bool:
        """Load `kernels` from the library the cache index names for `prekey`, compiling no IR. False when there
        is no usable entry (none, unreadable, not matching, library gone or broken): then build normally."""
        record = cache_index.lookup(prekey)
        if record is None:
            return False
        try:
            infos = record["kernels"]
            if [r["name"] for r in infos] != [k.name for k in kernels]:
                return False
            path = os.path.join(cache_index.library_root(), record["library"], "module.so")
        except (KeyError, TypeError):
            return False
        if not os.path.isfile(path):
            return False
        lib = load_library(path)
        if lib is None:
            return False
        try:
            fields = [_indexed_fields(k, r, lib, debug) for k, r in zip(kernels, infos)]
        except (AttributeError, KeyError, TypeError, ValueError):
            return False
        for k, f in zip(kernels, fields):
            k.__dict__.update(f)
            k._library_path = path
        self.index_hits += 1
        return True

    def _build_library(self, kernels: list, prekey: str | None = None):
        from .render import CPU
        from .render_adjoint import adjoint_error, render_adjoint_function, render_adjoint_kernel
        from .render_module import ModuleSource
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
        try:
            result = build_cpu(source, safe, debug)
            lib = load_library(result.path)
            if lib is None:  # corrupt cache entry: removed, build again
                result = build_cpu(source, safe, debug)
                lib = load_library(result.path)
        except NativeCompileError as e:
            _last_native_error[0] = e
            raise
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
            k._library_path = result.path
            k.work = estimate_work(k.ir)
            k.error_slot = _error_slot(lib) if debug else None
        if prekey is not None:
            self._store_index(prekey, kernels, result.path)

    @staticmethod
    def _store_index(prekey: str, kernels: list, library_path: str):
        try:
            records = [cache_index.kernel_record(k) for k in kernels]
        except Exception:  # noqa: BLE001  the index is only a shortcut; the launch reports a real problem itself
            return
        cache_index.store(prekey, {"library": os.path.basename(os.path.dirname(library_path)), "kernels": records})


_last_native_error = [None]


def _indexed_fields(k: Kernel, r: dict, lib, debug: bool) -> dict:
    """The attributes a built kernel has, from its index record and library (raises on a record that does not fit)."""
    forward_fn = getattr(lib, f"{r['entry']}_forward")
    forward_fn.restype = None
    backward_fn = None
    adjoint_error = None
    if k.enable_backward:
        if r["backward"]:
            backward_fn = getattr(lib, f"{r['entry']}_backward")
            backward_fn.restype = None
        else:
            adjoint_error = cache_index.error_from_record(r["adjoint_error"])
    access = {str(n): (bool(read), bool(written)) for n, (read, written) in r["access"].items()}
    if any(n.split(".")[0] not in k.arg_names for n in access):
        raise ValueError("index record does not match the kernel's parameters")
    return {"lib": lib, "entry": r["entry"], "forward_fn": forward_fn, "backward_fn": backward_fn,
            "adjoint_error": adjoint_error, "tid_ndim": int(r["tid_ndim"]), "_access": access,
            "work": int(r.get("work", 0)),
            "error_slot": _error_slot(lib) if debug else None}


def _error_slot(lib):
    from .launch import ErrorSlot
    return ErrorSlot.in_dll(lib, "g_error")


def _callees(fn):
    from . import ir
    out = []
    for op in ir.walk(fn.body):
        c = op.attrs.get("callee")
        if c is None and op.attrs.get("elem") is not None and op.attrs["elem"][0] == "func":
            c = op.attrs["elem"][1]  # the element function of tile_map / tile_reduce
        if c is not None and c not in out:
            out.append(c)
    return out


_modules: dict = {}


def build_stats() -> dict:
    """Totals over every module so far: `seconds` spent building or loading kernels, `cold_builds` (native
    libraries compiled) and `index_hits` (batches loaded from the cache with no IR compiled)."""
    mods = list(_modules.values())
    return {"seconds": sum(m.build_seconds for m in mods), "cold_builds": sum(m.cold_builds for m in mods),
            "index_hits": sum(m.index_hits for m in mods)}


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

