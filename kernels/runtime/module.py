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
import threading
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
from ..compiler.passes.backward_build import backward_build_refusal
from ..compiler.render import CPU
from ..compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
from ..compiler.render_module import ModuleSource
from .launch import argument_type
from ..typesys import TileType, refuse_array_subclass_annotations
from ..compiler.tile_stack_type import is_tile_stack
from ..compiler.function import Func
from . import module_options
from .cpu_target import compile_output_name


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
        self.variants: set = set()  # (device alias, effective block_dim) launched with (cpu_blocks.note_variant)
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
            if self not in self.module.pending:
                # its batch was interrupted before reaching it, or a redefinition replaced it in the module
                self.module.pending.append(self)
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
            fn = compile_ir(self.source, "kernel", self.name, list(self.arg_types))
            refusal = backward_build_refusal(fn) if self.enable_backward else None
            if refusal is not None:  # Warp refuses it when the module is built, not when backward runs
                raise refusal
            self.ir = fn
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
        # Warp's module options (wp.set_module_options), Warp's table (module_options.py); the deterministic ones
        # start as wp.config's
        self.options: dict = module_options.default_options()
        # Warp's loaded variants: (device.context, effective block_dim) -> cpu_blocks.ModuleExec
        self.execs: dict = {}

    def resolve_options(self, config_module=None, block_dim: int | None = None) -> dict:
        """Warp's `Module.resolve_options(config, block_dim)`: the options with the None sentinels that defer to
        config resolved (this toolkit's config; the argument is accepted for Warp's signature)."""
        return module_options.resolve_options(self.options, block_dim)

    def hash_module(self, block_dim: int | None = None) -> bytes:
        """Warp's module hash (SHA-256 digest): the content of the module's kernels and the functions, structs and
        constants they reach, the resolved options and config's code-shaping settings; not where the code lives,
        so two modules with the same kernels hash the same (module_options.content_hash)."""
        return module_options.content_hash(self.kernels, self.options, block_dim)

    def get_module_hash(self, block_dim: int | None = None) -> bytes:
        """Warp's name for `hash_module`."""
        return self.hash_module(block_dim)

    @property
    def references(self) -> set:
        """Warp's module dependencies: the other modules whose functions this module's kernels call."""
        return {f.module for f in module_options.referenced_functions(self.kernels)} - {self}

    @property
    def dependents(self) -> set:
        """Warp's reverse dependencies: the registered modules whose kernels call this module's functions (a
        module="unique" kernel made again and dropped for an existing one is not registered)."""
        return {m for m in list(_modules.values()) if m is not self and self in m.references}

    def get_module_identifier(self, block_dim: int | None = None) -> str:
        """Warp's name of the module's compiled files (AOT artifacts, module_aot.py): `wp_<name>_<7 hex digits
        of the module hash>`, or `wp_<name>` with the "strip_hash" option."""
        if self.options.get("strip_hash"):
            return f"wp_{self.name}"
        return f"wp_{self.name}_{self.hash_module(block_dim).hex()[:7]}"

    def _get_compile_output_name(self, device=None, output_arch=None, use_ptx=None) -> str:
        """Warp's file name of the module's CPU artifact, `<identifier>.cpu<target hash>.o` (cpu_target.py)."""
        return compile_output_name(self, device)

    def load(self, device=None, block_dim: int | None = None):
        """Warp's `Module.load`: build (or load from the cache) the module's kernels for `device` now, and record the
        variant for the resolved `block_dim` (the returned `ModuleExec`). Raises the error of the first kernel that
        cannot be built, as Warp's load of a module fails."""
        from .cpu_blocks import load_module_variant
        from .device import get_device

        target = get_device(device)
        self.build()
        for k in self.kernels:
            if target.is_cuda:
                k.ensure_ir()
            elif k.error is not None:
                raise k.error
        return load_module_variant(self, target, block_dim)

    def register(self, kernel: Kernel):
        # every kernel object is its own kernel: factories and closures make several with one name. A module-level
        # function defined again under the same key (the Python module reloaded, or the name redefined) replaces
        # the earlier kernel among the module's contents, as in Warp: its hash and AOT builds follow the code as it
        # is now. The earlier kernel object still builds on its own if it is launched (ensure_built).
        if "<locals>" not in kernel.func.__qualname__:
            self.kernels = [k for k in self.kernels if k.key != kernel.key or k.func is kernel.func
                            or "<locals>" in k.func.__qualname__]
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
        resolved = self.resolve_options()
        debug = resolved["mode"] == "debug"
        prekey = cache_index.module_key(self.name, batch, debug, resolved["optimization_level"],
                                        resolved["cpu_compiler_flags"])
        if prekey is not None and self._load_indexed(batch, prekey, debug):
            return
        ready = []
        with codegen_lock:
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

    @staticmethod
    def render_source(kernels: list, debug: bool) -> str:
        """The C++ of one library holding `kernels` (their IR compiled); kernel i's entry points are named
        `k<i>_<name>` (left in each kernel's `_pending_entry`)."""
        with codegen_lock:
            src = ModuleSource(CPU, debug)
            parts = []
            for i, k in enumerate(kernels):
                k_entry = f"k{i}_{k.name}"
                src.add_callees(k.ir)
                parts.append(src.render_kernel(k.ir, k_entry, render_adjoint_kernel if k.enable_backward else None))
                k._pending_entry = k_entry
            return src.source(parts, render_adjoint_function)

    def _build_library(self, kernels: list, prekey: str | None = None):
        resolved = self.resolve_options()
        debug = resolved["mode"] == "debug"
        source = self.render_source(kernels, debug)
        safe = "".join(c if c.isalnum() else "_" for c in self.name)[-40:]
        what = f"{len(kernels)} kernel{'s' if len(kernels) > 1 else ''} of module {self.name}"
        try:
            flags = {"optimization_level": resolved["optimization_level"],
                     "cpu_compiler_flags": resolved["cpu_compiler_flags"]}
            result = build_cpu(source, safe, debug, what, **flags)  # a cached library comes back checked
            lib = load_kernel_library(result.path, checked=True)
            if lib is None:  # the loader refused it and it was removed: build again
                result = build_cpu(source, safe, debug, what, **flags)
                lib = load_kernel_library(result.path, checked=True)
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

#: Held while IR is compiled and source rendered: functions shared by modules keep their compiled IR on the
#: function object, so modules built on several threads (wp.force_load) take turns there and compile their C++
#: (the long part) in parallel.
codegen_lock = threading.RLock()


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


def all_modules() -> list:
    """Every module created so far (those holding kernels and the others)."""
    return list(_modules.values())


def get_module(name: str) -> Module:
    """The Module of Python module `name` (Warp's `wp.get_module`), made on first use."""
    m = _modules.get(name)
    if m is None:
        m = _modules[name] = Module(name)
    return m


Func.module_resolver = staticmethod(get_module)


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
    name = None if isinstance(module, Module) else (module if isinstance(module, str) else
                                                     getattr(module, "__name__", None) or _caller_module_name())
    if "deterministic" in options:  # checked before the module is made: a refused call leaves no trace
        config.check_deterministic(options["deterministic"])
    if "deterministic_max_records" in options:
        module_options.check_max_records(options["deterministic_max_records"])
    (module if name is None else get_module(name)).options.update(options)


def get_module_options(module=None) -> dict:
    """The options set with `set_module_options` for the calling (or the named) module."""
    if isinstance(module, Module):
        return dict(module.options)
    name = module if isinstance(module, str) else getattr(module, "__name__", None) or _caller_module_name()
    return dict(get_module(name).options)


def kernel(f=None, *, enable_backward: bool | None = None, module=None, launch_bounds=None,
           module_options: dict | None = None, name: str | None = None, grid_stride: bool | None = None,
           cuda_max_registers: int | None = None, enable_cuda_smem_spilling: bool | None = None):
    """Decorator: compile a Python function as a kernel (Warp's `@wp.kernel`).

    Args:
        enable_backward: compile the adjoint (default: the module option, else True).
        module: the module (name or Module) the kernel is built with; "unique" gives it a module of its own,
            named by the kernel's content (the same kernel made again is the same kernel object, as in Warp).
        launch_bounds: CUDA `__launch_bounds__`; no effect on the CPU backend.
        module_options: options of the kernel's module="unique" module (see `set_module_options`).
        name: the kernel's key (Warp's explicit kernel name); must be a valid C++ identifier.
        grid_stride: Warp's switch for a grid-stride loop in the CUDA kernel. Recorded (`kernel.options`) and
            not used: the CUDA kernels here always loop with a grid stride, which gives the same result either way.
        cuda_max_registers, enable_cuda_smem_spilling: Warp's CUDA register limit and shared-memory spilling,
            checked as Warp checks them and recorded in `kernel.options`; no effect on the CPU backend.
    """
    if name is not None and not (name.isidentifier() and name.isascii()):
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier")
    options = module_options_.kernel_options(enable_backward=enable_backward, launch_bounds=launch_bounds,
                                             grid_stride=grid_stride, cuda_max_registers=cuda_max_registers,
                                             enable_cuda_smem_spilling=enable_cuda_smem_spilling)

    def make(g):
        refuse_array_subclass_annotations(getattr(g, "__annotations__", {}), f"kernel '{g.__name__}'")
        mod = module.name if isinstance(module, Module) else module
        unique = mod == "unique"
        if module_options is not None:
            module_options_.check_kernel_module_options(g.__name__, module_options, unique,
                                                        module_options_.default_options())
        if unique:  # a temporary name; named by its content below
            mod = f"{g.__module__}.{g.__qualname__}:{g.__code__.co_firstlineno}:{name or ''}:{id(g):x}"
        if module_options:
            get_module(mod).options.update(module_options)
        backward = enable_backward
        if backward is None:
            backward = get_module(mod or g.__module__).options.get("enable_backward", True)
        k = Kernel(g, enable_backward=bool(backward), module=mod, key=name)
        k.options.update(options)
        return _unique_kernel(k) if unique else k

    return make if f is None else make(f)


module_options_ = module_options  # the module, under a name that kernel()'s `module_options` argument leaves free

#: module="unique" kernels by their content-named module: the same kernel made again (a factory called twice
#: with the same values) is the same kernel object, as in Warp
_unique_kernels: dict = {}


def _unique_kernel(k: Kernel) -> Kernel:
    """Warp's module="unique": the kernel's module is named `<key>_<first 8 hex digits of its hash>`; when a
    module of that name holds this kernel already, that kernel is returned and `k` dropped."""
    temporary = k.module
    # the kernel itself, not the module's list: a generic kernel is not in it (only its overloads will be)
    digest = module_options.content_hash([k], temporary.options).hex()[:8]
    name = f"{k.key}_{digest}"
    existing = _unique_kernels.get(name)
    _modules.pop(temporary.name, None)
    if existing is not None:
        return existing
    temporary.name = name
    _modules[name] = temporary
    _unique_kernels[name] = k
    return k


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

