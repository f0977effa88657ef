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
import re
import time
from functools import cached_property

from ..compiler import cache_index
from .. import config
from ..compiler.build import build_cpu
from ..errors import CompileError, NativeCompileError
from ..compiler.frontend import FunctionSource
from ..compiler.driver import compile_ir
from ..compiler.function import annotation_type, is_generic_type, signature_types
from ..compiler.passes.cost import estimate_work, parallel_threshold
from .thread_pool import load_kernel_library
from .error_slot import ErrorSlot
from .signature import KernelSignature
from ..compiler import ir
from ..compiler.access import array_access
from ..compiler.passes.adjoint import adjoint_error
from ..compiler.render import CPU
from ..compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
from ..compiler.render_module import ModuleSource
from .launch import argument_type
from ..typesys import TileType, refuse_array_subclass_annotations
from ..compiler.tile_stack_type import is_tile_stack


class Kernel:
    """A compiled-on-demand kernel (Warp's `@wp.kernel`)."""

    def __init__(self, pyfunc=None, *, enable_backward: bool = True, module: str | None = None, arg_types=None,
                 source: FunctionSource | None = None, func=None, key=None, options=None):
        pyfunc = pyfunc if pyfunc is not None else func  # Warp spells it wp.Kernel(func=..., key=..., module=...)
        if options and "enable_backward" in options:
            enable_backward = options["enable_backward"]
        self.options = dict(options or {})  # Warp's per-kernel options (the module's apply where absent)
        self.func = pyfunc
        # Warp's key: the qualified name, "." as "__", other punctuation dropped ("outer.<locals>.k" -> "outer__locals__k")
        self.key = re.sub(r"[^0-9a-zA-Z_]+", "", pyfunc.__qualname__.replace(".", "__"))
        self.name = pyfunc.__name__
        self.enable_backward = enable_backward
        self.source = source or FunctionSource(pyfunc)
        annotation_error = None
        if arg_types is None:
            try:
                arg_types = signature_types(self.source, self.name, require=True)
            except CompileError as e:
                # as in Warp, a kernel's annotations are checked when it is built: a Python module defining a
                # kernel that cannot be built still imports, and each launch of that kernel raises this error
                annotation_error = e
                arg_types = [None] * len(self.source.fdef.args.args)
        self.arg_types = list(arg_types)
        self.arg_names = [a.arg for a in self.source.fdef.args.args]
        if isinstance(module, Module):
            module = module.name
        self.module = get_module(module or pyfunc.__module__)
        # A kernel with `Any` in its signature is generic: it is compiled once per concrete signature
        # (wp.overload, or the argument types of a launch), never itself.
        self.is_generic = annotation_error is None and any(is_generic_type(t) for t in self.arg_types)
        if self.is_generic:  # kept as Warp's module registry keeps it: by module, qualified name and key
            _generic_kernels[(pyfunc.__module__, pyfunc.__qualname__, key or self.key)] = self
        self.overloads: dict = {}
        if not self.is_generic and annotation_error is None:
            self.module.register(self)
        if key is not None:
            self.key = key
        self.ir = None
        self.error = annotation_error  # CompileError or NativeCompileError, raised at launch
        self.entry = None  # C symbol prefix in the library
        self.lib = None
        self.forward_fn = None
        self.backward_fn = None
        self.cuda: dict = {}  # device ordinal -> cuda_module.CudaKernel, once built for that device
        self.cuda_errors: dict = {}  # (device ordinal, adjoint) -> why that entry point could not be built
        self.cuda_taped = False  # launched on a CUDA device under a Tape: a capture builds its adjoint first
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

    def add_overload(self, arg_types) -> Kernel:
        """The concrete kernel of this generic kernel for `arg_types` (a list in parameter order, or a dict by
        parameter name), compiled with its module. Non-generic parameters may be left out of a dict."""
        if not self.is_generic:
            raise TypeError(f"kernel '{self.name}' is not generic (no Any in its signature): it needs no overload")
        if isinstance(arg_types, dict):
            unknown = set(arg_types) - set(self.arg_names)
            if unknown:
                raise TypeError(f"kernel '{self.name}' has no parameter {sorted(unknown)[0]!r}")
            arg_types = [arg_types.get(n, t) for n, t in zip(self.arg_names, self.arg_types)]
        if len(arg_types) != len(self.arg_types):
            raise TypeError(f"kernel '{self.name}' has {len(self.arg_types)} parameters, got {len(arg_types)} types")
        concrete = [annotation_type(t, f"kernel '{self.name}' overload parameter '{n}'")
                    for n, t in zip(self.arg_names, arg_types)]
        for n, t in zip(self.arg_names, concrete):
            if is_generic_type(t):
                raise TypeError(f"kernel '{self.name}' overload: parameter '{n}' is still generic ({t!r})")
        key = tuple(concrete)
        k = self.overloads.get(key)
        if k is None:
            k = self.overloads[key] = Kernel(self.func, enable_backward=self.enable_backward,
                                             module=self.module.name, arg_types=concrete, source=self.source)
            k.key = self.key
        return k

    def get_overload(self, arg_types):
        return self.add_overload(arg_types)

    def infer_argument_types(self, args) -> list:
        """Warp's `Kernel.infer_argument_types`: the kernel types of launch arguments `args`, in parameter order (a
        generic parameter takes its argument's type, an array subclass its family's; the others keep theirs), as
        `add_overload` takes them."""
        if len(args) != len(self.arg_types):
            raise RuntimeError(f"Invalid number of arguments for kernel {self.key}")
        return [argument_type(v, t) if is_generic_type(t) else t for v, t in zip(args, self.arg_types)]

    def specialize_for(self, values) -> Kernel:
        """The overload of a generic kernel for the types of launch arguments `values`."""
        if len(values) != len(self.arg_types):
            raise CompileError(f"kernel '{self.name}' takes {len(self.arg_types)} arguments, got {len(values)}",
                               None, self.name)
        types_ = [argument_type(v, t) if is_generic_type(t) else t for v, t in zip(values, self.arg_types)]
        return self.add_overload(types_)

    @property
    def uses_tiles(self) -> bool:
        """Whether the kernel has tile values (from its IR, compiled on request when loaded from the cache)."""
        if getattr(self, "_uses_tiles", None) is None:
            self._uses_tiles = any(isinstance(v.type, TileType) or is_tile_stack(v.type)
                                   for op in ir.walk(self.compile_ir().body) for v in op.results
                                   if hasattr(v, "type"))
        return self._uses_tiles

    def calls_any(self, names) -> bool:
        """Whether the kernel (or a function it calls) calls one of the builtins `names`."""
        seen, stack = set(), [self.compile_ir()]
        while stack:
            fn = stack.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            for op in ir.walk(fn.body):
                if op.opcode == "call":
                    if op.attrs.get("name") in names and "callee" not in op.attrs:
                        return True
                    if "callee" in op.attrs:
                        stack.append(op.attrs["callee"])
        return False

    def parallel_threshold(self, base: int) -> int:
        """Launch size from which this kernel runs multithreaded on the CPU (`base` is for a trivial kernel).
        A deterministic kernel (wp.config.deterministic or its module's option) never does: it runs thread index
        by thread index, so its atomic adds sum in one order, Warp's CPU order."""
        if config.deterministic or self.module.options.get("deterministic"):
            return 2**62
        cached = self._threshold
        if cached is None or cached[0] != base or cached[1] != self.work:
            cached = self._threshold = (base, self.work, parallel_threshold(self.work, base))
        return cached[2]

    def ensure_built(self, device=None):
        """Build the kernel for `device` (default: the CPU library; a CUDA device needs only the typed IR here,
        its machine code is built at the first launch there, see cuda_module)."""
        if device is not None and device.is_cuda:
            self.ensure_ir()
            return
        if self.lib is None and self.error is None:
            if self not in self.module.pending and self in self.module.kernels:
                self.module.pending.append(self)  # its batch was interrupted before reaching it
            self.module.build()
        if self.error is not None:
            raise self.error

    def ensure_ir(self):
        """Compile the typed IR and decide whether the kernel has an adjoint (what a CUDA launch needs before its
        device code is built); raise the kernel's compile error."""
        if self.error is None and self.ir is None:
            try:
                self.compile_ir()
            except Exception as e:  # noqa: BLE001  kept and raised at each launch, as for the CPU build
                self.error = e
        if self.error is not None:
            raise self.error
        if self.lib is None and not self._adjoint_decided:
            self.adjoint_error = adjoint_error(self.ir) if self.enable_backward else None
            self._adjoint_decided = True

    _adjoint_decided = False

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

    @cached_property
    def signature(self) -> KernelSignature:
        """Parameters, their packed layout and the arrays read and written (kernels/runtime/signature.py): made once,
        and what launch, capture and the Tape use."""
        if self.is_generic:
            raise TypeError(f"kernel '{self.name}' is generic: only its overloads have a signature")
        return KernelSignature(self)

    def param_access(self) -> dict:
        """Array parameter path ("x", "p.output") -> (read, written), from the kernel's IR (tape checks)."""
        if self._access is None:
            self.compile_ir()
            self._access = array_access(self.ir, self.arg_names)
        return self._access

    def compile_ir(self):
        if self.ir is None:
            self.ir = compile_ir(self.source, "kernel", self.name, list(self.arg_types))
            for op in ir.walk(self.ir.body):
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
        # Warp's module options (wp.set_module_options); the deterministic ones start as wp.config's
        self.options: dict = {"enable_backward": True, "deterministic": config.deterministic,
                              "deterministic_max_records": config.deterministic_max_records}

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
            except Exception as e:  # noqa: BLE001  kept and raised at its launch: it never poisons its neighbours
                k.error = e
        if not ready:
            return
        try:
            self._build_library(ready, prekey if len(ready) == len(batch) else None)
        except Exception as e:  # noqa: BLE001  code generation or the C++ compiler: as above
            self._build_isolating(ready, e)

    def _build_isolating(self, kernels: list, error: Exception):
        """After a library of `kernels` failed to build (`error`: the C++ compiler rejected it, or generating its
        source failed): build halves, recursively, so the kernels at fault get the error and the others still
        build. One bad kernel among n costs about 2*log2(n) builds."""
        if len(kernels) == 1:
            kernels[0].error = _last_native_error[0] if isinstance(error, NativeCompileError) else error
            return
        mid = len(kernels) // 2
        for half in (kernels[:mid], kernels[mid:]):
            try:
                self._build_library(half)
            except Exception as e:  # noqa: BLE001
                self._build_isolating(half, e)

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
        lib = load_kernel_library(path)
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
        debug = config.mode == "debug"
        src = ModuleSource(CPU, debug)
        parts = []
        for i, k in enumerate(kernels):
            k_entry = f"k{i}_{k.name}"
            src.add_callees(k.ir)
            parts.append(src.render_kernel(k.ir, k_entry, render_adjoint_kernel if k.enable_backward else None))
            k._pending_entry = k_entry
        source = src.source(parts, render_adjoint_function)
        safe = "".join(c if c.isalnum() else "_" for c in self.name)[-40:]
        what = f"{len(kernels)} kernel{'s' if len(kernels) > 1 else ''} of module {self.name}"
        try:
            result = build_cpu(source, safe, debug, what)
            lib = load_kernel_library(result.path)
            if lib is None:  # corrupt cache entry: removed, build again
                result = build_cpu(source, safe, debug, what)
                lib = load_kernel_library(result.path)
            if lib is None:
                raise NativeCompileError(f"the library of module '{self.name}' could not be loaded from "
                                         f"{result.path} (see the line above)")
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
    return ErrorSlot.in_dll(lib, "g_error")


def _callees(fn):
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


def _caller_module_name(depth: int = 2) -> str:
    import inspect

    frame = inspect.currentframe()
    for _ in range(depth):
        frame = frame.f_back
    return frame.f_globals["__name__"]


def set_module_options(options: dict, module=None):
    """Warp's `wp.set_module_options`: options of the calling (or the named) module's kernels.

    Recorded per module and returned by `get_module_options`. `enable_backward` is the default of the module's
    kernels that do not set it themselves; options about CUDA code generation (`block_dim`, `fast_math`,
    `enable_mathdx_gemm`, ...) have no effect on the CPU backend.
    """
    name = module if isinstance(module, str) else getattr(module, "__name__", None) or _caller_module_name()
    if "deterministic" in options:
        config.check_deterministic(options["deterministic"])
    get_module(name).options.update(options)


def get_module_options(module=None) -> dict:
    """The options set with `set_module_options` for the calling (or the named) module."""
    name = module if isinstance(module, str) else getattr(module, "__name__", None) or _caller_module_name()
    return dict(get_module(name).options)


def kernel(f=None, *, enable_backward: bool | None = None, module=None, launch_bounds=None,
           module_options: dict | None = None, name: str | None = None, grid_stride: bool = True):
    """Decorator: compile a Python function as a kernel (Warp's `@wp.kernel`).

    Args:
        enable_backward: compile the adjoint (default: the module option, else True).
        module: the module (name or Module) the kernel is built with; "unique" gives it a module of its own.
        launch_bounds: CUDA `__launch_bounds__`; no effect on the CPU backend.
        module_options: options set on the kernel's module (see `set_module_options`).
        name: the kernel's key (Warp's explicit kernel name); must be a valid C++ identifier.
        grid_stride: Warp's switch for a grid-stride loop in the CUDA kernel. Accepted for Warp code and not
            used: the CUDA kernels here always loop with a grid stride, which gives the same result either way.
    """
    del grid_stride
    if name is not None and not (name.isidentifier() and name.isascii()):
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier")

    def make(g):
        refuse_array_subclass_annotations(getattr(g, "__annotations__", {}), f"kernel '{g.__name__}'")
        mod = module.name if isinstance(module, Module) else module
        if mod == "unique":
            mod = f"{g.__module__}.{g.__qualname__}:{g.__code__.co_firstlineno}:{name or ''}:{id(g):x}"
        if module_options:
            if "deterministic" in module_options:
                config.check_deterministic(module_options["deterministic"])
            get_module(mod or g.__module__).options.update(module_options)
        backward = enable_backward
        if backward is None:
            backward = get_module(mod or g.__module__).options.get("enable_backward", True)
        return Kernel(g, enable_backward=bool(backward), module=mod, key=name)

    return make if f is None else make(f)


def overload(kernel, arg_types=None):
    """Warp's `wp.overload`: a concrete overload of a generic kernel, `wp.overload(k, [types])` or
    `wp.overload(k, {"name": type})`; as a decorator on a function with concrete annotations, the overload of the
    generic kernel of the same name in the caller's scope. Returns the concrete kernel."""
    if isinstance(kernel, Kernel):
        if arg_types is None:
            raise TypeError("wp.overload(kernel, arg_types): arg_types is required")
        return kernel.add_overload(arg_types)
    import inspect
    import typing
    if callable(kernel) and arg_types is None:
        caller = inspect.currentframe().f_back
        generic = caller.f_locals.get(kernel.__name__, caller.f_globals.get(kernel.__name__))
        if not isinstance(generic, Kernel):
            generic = _generic_kernel_of(kernel)
        hints = typing.get_type_hints(kernel) if not any(isinstance(v, str) for v in
                                                         kernel.__annotations__.values()) else kernel.__annotations__
        if hints.get("return", None) not in (None, type(None)):
            raise TypeError("Return annotations are not allowed on @wp.overload stubs; omit the return annotation "
                            "or use `-> None`.")
        generic.add_overload({n: hints[n] for n in generic.arg_names if n in hints})
        return generic
    raise TypeError(f"wp.overload: expected a kernel, got {type(kernel).__name__}")


_generic_kernels: dict = {}  # (module, qualified name, key) -> generic kernel, for wp.overload's decorator form


def _generic_kernel_of(stub):
    """The generic kernel an `@wp.overload` stub names when its name no longer refers to the kernel (the stub,
    defined after it, rebinds the name): the one whose Python function has the stub's module and qualified name,
    as Warp finds it."""
    matches = [k for (module, qualname, _), k in list(_generic_kernels.items())
               if module == stub.__module__ and qualname == stub.__qualname__]
    if not matches:
        raise RuntimeError(f"Failed to find a kernel named '{stub.__name__}' in module {stub.__module__}")
    if len(matches) == 1:
        return matches[0]
    keys = ", ".join(sorted(repr(k.key) for k in matches))
    raise RuntimeError(f"Ambiguous kernel lookup for '{stub.__module__}.{stub.__qualname__}': it matches several "
                       f"custom-named kernels ({keys}). Pass the kernel object to wp.overload() instead of using "
                       "the decorator form.")


def load_module(module=None, device=None):
    """Compile (or load from cache) every kernel of a Python module now rather than on first launch."""
    name = module if isinstance(module, str) else getattr(module, "__name__", None)
    if name is None:
        import inspect
        name = inspect.currentframe().f_back.f_globals["__name__"]
    get_module(name).build()

