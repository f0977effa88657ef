"""Warp's module options and module hashes: the option table with its defaults, the checks of
`@wp.kernel(module_options=...)`, options resolved against `config`, and a module's content hash (Warp's
`Module.hash_module()` / `get_module_hash()`).

The content hash describes what decides a module's generated code, read off the Python objects as the cache
index reads it (compiler/cache_index.py: each kernel's text and signature, every function, struct and constant
it reaches, with the functions' inline hints), but without where the text lives (file, line, Python module
name): two modules with the same kernels hash the same, as in Warp. The resolved options and the code-shaping
settings of `config` (mode, verify_fp, optimization level, compiler flags, ...) are part of it.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .. import config
from ..compiler import cache_index


def default_options() -> dict:
    """A new module's options: Warp 1.19's table and defaults. Options about CUDA code generation (block_dim,
    fast_math, the MathDx switches, cuda_output, lineinfo, ...) have no effect on the CPU backend."""
    return {
        "max_unroll": config.max_unroll,
        "enable_backward": True,
        "enable_mathdx_gemm": None,
        "enable_mathdx_solver": None,
        "enable_mathdx_fft": None,
        "fast_math": False,
        "fuse_fp": True,
        "lineinfo": False,
        "cuda_output": None,
        "mode": None,  # None: config.mode
        "optimization_level": None,  # None: config.optimization_level, then the CPU default
        "cpu_compiler_flags": None,  # None: config.cpu_compiler_flags, then -march=native
        # this toolkit's: GCC's --param=inline-unit-growth for the module (None: GCC's default budget, 40 %)
        "cpu_inline_unit_growth": None,
        "block_dim": 256,
        "compile_time_trace": False,
        "strip_hash": False,
        "extra_build_options": None,
        "deterministic": config.deterministic,
        "deterministic_max_records": config.deterministic_max_records,
        "default_grid_stride": None,
    }


def resolve_options(options: dict, block_dim: int | None = None) -> dict:
    """A copy of `options` with the None sentinels that defer to `config` resolved (mode, optimization_level,
    cpu_compiler_flags) and `block_dim` overriding the module's when given (Warp's Module.resolve_options)."""
    resolved = dict(options)
    if resolved.get("mode") is None:
        resolved["mode"] = config.mode
    if resolved.get("optimization_level") is None:
        resolved["optimization_level"] = config.optimization_level
    if resolved.get("cpu_compiler_flags") is None:
        resolved["cpu_compiler_flags"] = config.cpu_compiler_flags
    growth = resolved.get("cpu_inline_unit_growth")
    if growth is not None:
        # GCC spends its inlining budget for a unit (inline-unit-growth, 40 % of its size by default) on the
        # force-inlined user functions first; in a large module the headers' one-line builtins (vector constructors,
        # component reads) are then left as calls. A module whose hot code is one large function can raise it.
        # clang accepts and ignores the flag. Part of the flags, so of every cache key and target hash.
        if isinstance(growth, bool) or not isinstance(growth, int) or growth < 0:
            raise ValueError(f"cpu_inline_unit_growth must be a non-negative integer (per cent) or None, "
                             f"got {growth!r}")
        base = "-march=native" if resolved["cpu_compiler_flags"] is None else resolved["cpu_compiler_flags"]
        resolved["cpu_compiler_flags"] = f"{base} --param=inline-unit-growth={growth}"
    if block_dim is not None:
        resolved["block_dim"] = block_dim
    return resolved


def check_kernel_module_options(function_name: str, module_options, unique: bool, known: dict) -> None:
    """Warp's checks of `@wp.kernel(module_options=...)`: a dict, only with module="unique", only known keys.

    Raises:
        TypeError: not a dict.
        ValueError: the kernel's module is not "unique", or a key is not an option (`known`: the option table).
    """
    if not isinstance(module_options, dict):
        raise TypeError(f"@wp.kernel for '{function_name}': module_options must be a dict, "
                        f"got {type(module_options).__name__}.")
    if not unique:
        raise ValueError(f"@wp.kernel for '{function_name}': module_options requires module=\"unique\". "
                         "Use wp.set_module_options() to set module-level options for a shared module.")
    unknown = sorted(set(module_options) - set(known))
    if unknown:
        raise ValueError(f"@wp.kernel for '{function_name}': unknown module_options: "
                         f"{', '.join(repr(k) for k in unknown)}. "
                         f"Valid options are: {', '.join(repr(k) for k in sorted(known))}.")
    if "deterministic" in module_options:
        config.check_deterministic(module_options["deterministic"])
    if "deterministic_max_records" in module_options:
        check_max_records(module_options["deterministic_max_records"])


def check_max_records(value) -> None:
    """Warp's check of `deterministic_max_records`: a TypeError for a bool or a non-integer, a ValueError for a
    negative integer (Warp's words)."""
    if isinstance(value, bool):
        raise TypeError("deterministic_max_records must be a non-negative integer, got bool")
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"deterministic_max_records must be a non-negative integer, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"deterministic_max_records must be non-negative, got {value}")


def kernel_options(*, enable_backward=None, launch_bounds=None, grid_stride=None, cuda_max_registers=None,
                   enable_cuda_smem_spilling=None) -> dict:
    """A kernel's own options (Warp's `kernel.options`): those set in `@wp.kernel(...)`, checked as Warp checks
    them; part of the kernel's content hash.

    Raises:
        TypeError, ValueError: Warp's refusals of a cuda_max_registers or enable_cuda_smem_spilling value, and of
            both cuda_max_registers and launch_bounds.
    """
    options = {}
    if enable_backward is not None:
        options["enable_backward"] = enable_backward
    if launch_bounds is not None:
        options["launch_bounds"] = launch_bounds
    if cuda_max_registers is not None:
        if launch_bounds is not None:
            raise ValueError("cuda_max_registers and launch_bounds cannot be specified together")
        if isinstance(cuda_max_registers, bool):
            raise TypeError(f"cuda_max_registers must be a positive int, got bool {cuda_max_registers!r}")
        if not isinstance(cuda_max_registers, int):
            raise TypeError(f"cuda_max_registers must be a positive int, got {type(cuda_max_registers).__name__}: "
                            f"{cuda_max_registers!r}")
        if cuda_max_registers < 1:
            raise ValueError(f"cuda_max_registers must be >= 1, got {cuda_max_registers!r}")
        options["cuda_max_registers"] = cuda_max_registers
    if enable_cuda_smem_spilling is not None:
        if not isinstance(enable_cuda_smem_spilling, bool):
            raise TypeError(f"enable_cuda_smem_spilling must be a bool, got "
                            f"{type(enable_cuda_smem_spilling).__name__}: {enable_cuda_smem_spilling!r}")
        if enable_cuda_smem_spilling:  # False is the default, recorded as nothing (same kernel, as in Warp)
            options["enable_cuda_smem_spilling"] = True
    if grid_stride is not None:
        options["grid_stride"] = bool(grid_stride)
    return options


class _ContentDescriber(cache_index.Describer):
    """The cache index's description without where the text lives: no file, line or Python module name."""

    def func(self, f):
        position = self._seen.setdefault(id(f), len(self._seen))
        token = ("func", position)
        if position == len(self.functions):
            entry = [token, None]
            self.functions.append(entry)
            overloads = tuple(self.source(src, params) for src, params in f.overloads)
            grad = self.source(f.custom_grad, None) if f.custom_grad is not None else None
            replay = self.source(f.custom_replay, None) if f.custom_replay is not None else None
            entry[1] = (overloads, grad, replay, getattr(f, "inline_hint", None))
        return token

    def source(self, src, param_types):
        described = super().source(src, param_types)
        return described[2:]  # text, parameter types, references, early statics


class _FunctionCollector(cache_index.Describer):
    """The description's walk, keeping the functions it reaches."""

    def __init__(self):
        super().__init__()
        self.reached: list = []

    def func(self, f):
        if id(f) not in self._seen:
            self.reached.append(f)
        return super().func(f)


def referenced_functions(kernels) -> list:
    """The `@wp.func` functions `kernels` reach (through calls, recursively), each once. A kernel whose
    references cannot all be described contributes those found before the one that could not."""
    collector = _FunctionCollector()
    for k in kernels:
        try:
            cache_index.kernel_description(k, collector)
        except (cache_index.Unkeyable, RecursionError):
            continue
    return collector.reached


def kernel_content(kernel) -> tuple:
    """What decides one kernel's generated code (its own description, then the functions it reaches), or, for
    a kernel whose references cannot be described (an arbitrary Python object), its text and identity."""
    describer = _ContentDescriber()
    try:
        options = tuple(sorted((k, repr(v)) for k, v in getattr(kernel, "options", {}).items()))
        # the annotations as evaluated when the function was defined (`-> Ret` of a local Ret the text cannot
        # resolve later): two kernels of one text with different annotations are different kernels
        annotations = tuple((k, repr(v)) for k, v in getattr(kernel.func, "__annotations__", {}).items())
        return (cache_index.kernel_description(kernel, describer), options, annotations,
                tuple(map(tuple, describer.functions)))
    except (cache_index.Unkeyable, RecursionError):
        return ("undescribed", kernel.key, "".join(kernel.source.lines), id(kernel))


def content_hash(kernels, options: dict, block_dim: int | None = None) -> bytes:
    """SHA-256 digest of `kernels` (in any order), the resolved `options` and config's code-shaping settings."""
    contents = sorted(repr(kernel_content(k)) for k in kernels)
    resolved = sorted((k, repr(v)) for k, v in resolve_options(options, block_dim).items())
    text = repr((cache_index.FORMAT, contents, resolved, cache_index._code_settings()))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
