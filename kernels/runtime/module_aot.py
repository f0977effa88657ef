"""Warp's ahead-of-time modules: `wp.compile_aot_module` writes a module's kernels as one CPU library into a
folder, `wp.load_aot_module` loads them from there without compiling, and `Module.get_module_identifier()` names
the files.

An artifact is `<identifier>.cpu<target hash>.o` (named as Warp names its CPU artifact; the content is this
toolkit's shared library of the module's kernels, not Warp's object file), with `.meta` beside it (what a launch
and a tape need of each kernel: entry points, thread dimensions, backward or why there is none, array accesses,
as the cache index keeps them), `.cpp` (the generated source) and a manifest of the library's size and SHA-256,
which a load checks, as it checks that no other user can write the file or its folder. The identifier is
`wp_<module>_<7 hex digits of the module hash>`, or `wp_<module>` with the "strip_hash" option: then a load takes
whatever was compiled under that name, even from older code (Warp's rule). The target hash names the compiler and,
for -march=native, the host's instruction set (cpu_target.py). CUDA artifacts (cubin, PTX) are not written here.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import types
from pathlib import Path

from .. import config
from ..compiler import cache_index
from ..compiler.build import build_cpu, cache_root
from ..compiler.cache_integrity import damage, write_manifest
from ..compiler.cache_trust import make_private_dirs, untrusted_reason
from ..compiler.passes.cost import estimate_work
from ..compiler.passes.adjoint import adjoint_error
from ..logger import log_warning
from .cpu_target import compile_output_name
from .device import get_device
from .module import Module, _generic_kernels, _indexed_fields, get_module
from .thread_pool import load_kernel_library


def _resolve(module) -> Module:
    if isinstance(module, Module):
        return module
    if isinstance(module, types.ModuleType):
        return get_module(module.__name__)
    if isinstance(module, str):
        return get_module(module)
    raise TypeError(f"module must be a wp.Module, a Python module or a module name, got {type(module).__name__}")


def _cpu_only(device, arch, what: str) -> None:
    devices = device if isinstance(device, (list, tuple)) else [device]
    if arch or any(get_device(d).is_cuda for d in devices):
        raise NotImplementedError(f"{what}: CUDA ahead-of-time artifacts (cubin, PTX, arch=) are not provided by "
                                  "kernels; CUDA kernels are compiled with NVRTC when first launched")


def _check_generics(module: Module) -> None:
    """Warp's checks: no compilable kernel is an error, a generic kernel without overloads a warning, several
    overloads of one generic kernel under strip_hash an error."""
    generics = [k for k in list(_generic_kernels.values()) if k.module is module]
    no_overloads = [k.key for k in generics if not k.overloads]
    several = [k.key for k in generics if len(k.overloads) > 1]
    compilable = [k for k in module.kernels if not k.is_generic]
    if not compilable:
        raise RuntimeError("Cannot compile module: No compilable kernels found in the module. "
                           "The module must contain at least one non-generic kernel or a generic kernel with "
                           "overloads.")
    if no_overloads:
        log_warning("Generic kernels without overloads will be skipped during AOT compilation. "
                    "Add overloads using wp.overload() or the @wp.overload decorator to compile them. "
                    f"Kernels without overloads: {', '.join(no_overloads)}", category=UserWarning, stacklevel=3)
    if several and module.options.get("strip_hash"):
        raise RuntimeError("Cannot use strip_hash=True with generic kernels that have multiple overloads. "
                           "Generic kernel overloads require unique hash suffixes to avoid name collisions. "
                           "Use strip_hash=False or ensure each generic kernel has only one overload. "
                           f"Kernels: {', '.join(several)}")


def _folder(module: Module, module_dir) -> str:
    if module_dir is not None:
        return os.fspath(module_dir)
    return os.path.join(cache_root(), "aot", module.get_module_identifier())


def compile_aot_module(module, device=None, arch=None, module_dir=None, use_ptx=None, strip_hash=None) -> list:
    """Compile `module`'s kernels for the CPU into `module_dir` (default: a folder of the compile cache) and
    return the artifact's path in a list (Warp's signature; `use_ptx` concerns CUDA only). `strip_hash` True or
    False sets the module's "strip_hash" option. An artifact already there is kept unless
    config.cache_kernels is off.

    Raises:
        RuntimeError: no compilable kernel, or several overloads of a generic kernel under strip_hash.
        NotImplementedError: a CUDA device or `arch` (CUDA artifacts are not written here).
        the first kernel's compile error when a kernel cannot be built.
    """
    del use_ptx
    target = _resolve(module)
    if strip_hash is not None:
        target.options["strip_hash"] = bool(strip_hash)
    _check_generics(target)
    _cpu_only(device, arch, "compile_aot_module")
    folder = _folder(target, module_dir)
    library = Path(folder) / compile_output_name(target)
    if config.cache_kernels and library.exists() and damage(str(library)) is None:
        return [library]
    kernels = [k for k in target.kernels if not k.is_generic]
    for k in kernels:
        k.compile_ir()
    debug = target.resolve_options()["mode"] == "debug"
    source = Module.render_source(kernels, debug)
    resolved = target.resolve_options()
    built = build_cpu(source, "".join(c if c.isalnum() else "_" for c in target.name)[-40:], debug,
                      f"module {target.name} ahead of time", optimization_level=resolved["optimization_level"],
                      cpu_compiler_flags=resolved["cpu_compiler_flags"])
    make_private_dirs(folder) if module_dir is None else os.makedirs(folder, exist_ok=True)
    records = [_record(k, f"k{i}_{k.name}") for i, k in enumerate(kernels)]
    _write(library, lambda tmp: shutil.copyfile(built.path, tmp))
    write_manifest(str(library))
    _write(library.with_suffix(".meta"), lambda tmp: Path(tmp).write_text(repr({"kernels": records})))
    _write(library.with_suffix(".cpp"), lambda tmp: Path(tmp).write_text(source))
    return [library]


def _record(kernel, entry: str) -> dict:
    error = adjoint_error(kernel.ir) if kernel.enable_backward else None
    return {"name": kernel.name, "signature": _signature(kernel), "entry": entry, "tid_ndim": kernel.tid_ndim,
            "backward": kernel.enable_backward and error is None,
            "adjoint_error": None if error is None else cache_index.error_record(error),
            "access": {n: tuple(v) for n, v in kernel.param_access().items()}, "work": estimate_work(kernel.ir)}


def _private_copy(library: Path) -> str:
    """The artifact copied into the compile cache under its content's hash (the loader checks libraries there):
    a library compiled again under the same name is a new file to the dynamic loader, never the old one."""
    data = library.read_bytes()
    entry = os.path.join(cache_root(), "aot_loaded", hashlib.sha256(data).hexdigest()[:32])
    path = os.path.join(entry, "module.so")
    if not os.path.exists(path):
        make_private_dirs(entry)
        _write(Path(path), lambda tmp: Path(tmp).write_bytes(data))
        write_manifest(path)
    return path


def _signature(kernel) -> str:
    return repr([repr(t) for t in kernel.arg_types])


def _write(path: Path, fill) -> None:
    """Write `path` through a temporary file renamed into place: a reader sees the whole file or none."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fill(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_aot_module(module, device=None, arch=None, module_dir=None, use_ptx=None, strip_hash=None) -> None:
    """Load `module`'s kernels from the artifact `compile_aot_module` wrote (no compiling): each kernel of the
    module takes the entry points of the last compiled kernel of its name.

    Raises:
        FileNotFoundError: no artifact of the module's identifier in the folder (with the hash: the code or the
            options changed since it was compiled).
        RuntimeError: the artifact fails its integrity or ownership check, or lacks one of the module's kernels.
    """
    del use_ptx
    target = _resolve(module)
    if strip_hash is not None:
        target.options["strip_hash"] = bool(strip_hash)
    _cpu_only(device, arch, "load_aot_module")
    library = Path(_folder(target, module_dir)) / compile_output_name(target)
    if not library.exists():
        raise FileNotFoundError(f"Binary file not found. Tried: {library}")
    why = untrusted_reason(str(library)) or untrusted_reason(str(library.parent)) or damage(str(library))
    if why is not None:
        raise RuntimeError(f"the AOT module {library} is not loaded: {why}")
    try:
        records = ast.literal_eval(library.with_suffix(".meta").read_text())["kernels"]
    except (OSError, ValueError, SyntaxError, KeyError, TypeError) as e:
        raise RuntimeError(f"the AOT module {library} has no readable {library.with_suffix('.meta').name}: {e}")
    lib = load_kernel_library(_private_copy(library))
    if lib is None:
        raise RuntimeError(f"the AOT module {library} could not be loaded (see the line above)")
    # a kernel takes the record of its name and parameter types (the overloads of a generic kernel share a
    # name), else of its name (strip_hash: the code may have changed); the last of a name wins
    by_name = {r["name"]: r for r in records}
    by_signature = {(r["name"], r.get("signature")): r for r in records}
    debug = target.resolve_options()["mode"] == "debug"
    for k in target.kernels:
        record = by_signature.get((k.name, _signature(k)), by_name.get(k.name))
        if record is None:
            raise RuntimeError(f"the AOT module {library} has no kernel '{k.name}': compile it again")
        k.__dict__.update(_indexed_fields(k, record, lib, debug))
        k._library_path = str(library)
        k.error = None
    target.pending = [k for k in target.pending if k.lib is None]
