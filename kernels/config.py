"""Settings of the kernel compiler and runtime, in one place. Settings that change generated code are part of
the compile-cache key (they change the source text or the compiler flags)."""

from __future__ import annotations

import enum
import os
import sys
import types

#: The toolkit's version (pyproject.toml's); part of the compile-cache key, and what the native runtime libraries
#: must report when loaded (compiler/library_version.py).
version: str = "0.1.0"

#: "release" (default) or "debug": debug checks array bounds in kernels and raises with kernel, line and index.
mode: str = os.environ.get("KERNELS_MODE", "release")

#: Where compiled modules are cached. Environment variable: KERNELS_CACHE_DIR.
cache_dir: str = os.environ.get("KERNELS_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "kernels"))

#: Print each compile (source path, time) to stdout.
verbose: bool = bool(int(os.environ.get("KERNELS_VERBOSE", "0")))

#: Say on stderr, once per device and process, that a compile the cache cannot answer is starting (a cold compile
#: of the simulation's kernels takes 10-30 s, which would otherwise pass in silence). Environment variable:
#: KERNELS_COMPILE_NOTICE=0 turns it off.
compile_notice: bool = os.environ.get("KERNELS_COMPILE_NOTICE", "1") != "0"

#: Warp's log level (the `logging` module's numbers): messages below it are not shown. The cold-compile notice is
#: an INFO message (20), so a level of WARNING (30) or above silences it as `compile_notice = False` does.
log_level: int = 20
LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = 10, 20, 30, 40  # wp.LOG_*: the levels by name

#: Warnings (kernels.logger's default logger) name the file and line that caused them, with the source line.
verbose_warnings: bool = False

#: Record every allocation (size, device, scope, call site) process-wide, as an open wp.ScopedMemoryTracker does
#: (kernels/runtime/memory_tracker.py; scope "global"); wp.print_memory_report() prints what is recorded. Costs a
#: stack walk per allocation while on.
track_memory: bool = False

#: Debugging aid (Warp's switch): every launch sends an info message naming the kernel, its dim, arguments and
#: device to the active logger (kernels.logger).
print_launches: bool = False

#: Warp's `legacy_scalar_return_types`: True gives Python numbers for every scalar that host code reads (a vector's
#: component, a builtin called from Python), as Warp did before 1.10; False (Warp's default) gives Python numbers
#: for float32, int32 and bool only, and values of the scalar type (`wp.float64`, `wp.int8`, ...) for the others.
legacy_scalar_return_types: bool = False

#: Launches with at least this many threads run in parallel on the CPU (the runtime's thread pool); smaller ones run
#: on one core, where starting threads would cost more than it saves.
cpu_parallel_threshold: int = 16384

#: Threads for CPU launches, the launching thread included. None: $KERNELS_NUM_THREADS, else $OMP_NUM_THREADS, else
#: every core this process may use (affinity mask and cgroup CPU quota). Takes effect at the next launch.
cpu_threads: int | None = None

#: How CPU launches run in parallel: "pool" (the runtime's own thread pool: bounded spinning, no waiting for
#: descheduled threads; see README's performance notes) or "openmp" (the OpenMP runtime it replaced, kept for
#: comparison; OMP_* variables apply to it). Changes generated code. Environment variable: KERNELS_CPU_RUNTIME.
cpu_runtime: str = os.environ.get("KERNELS_CPU_RUNTIME", "pool")

#: Check the IR against its schema (ir_ops.SCHEMA, passes/verify.py) after every compiler pass; on in debug mode
#: and in the test suite. Slows compiling a little; does not change generated code, but is part of the cache index
#: key (cache_index.py), so that turning it on checks kernels an index hit would load unseen. Environment variable:
#: KERNELS_VERIFY_IR=1.
verify_ir: bool = os.environ.get("KERNELS_VERIFY_IR", "0") == "1"

#: Static `range` loops with constant bounds and at most this many iterations are unrolled.
max_unroll: int = 16

#: C++ compiler for the CPU backend; None: $CXX, else the first of c++, g++, clang++ found, else the clang of the
#: `ziglang` wheel (a dependency: a machine without a system compiler still builds kernels).
cxx: str | None = None

#: Extra flags for the C++ compiler.
cxx_flags: tuple = ()

#: Warp's optimization level of the CPU build (0-3; also a module option, `wp.set_module_options`). None: the
#: default, -O3 here (Warp's CPU default is -O2 of its own LLVM). Changes generated code (part of the cache key).
optimization_level: int | None = None

#: Warp's target flags of the CPU build, as one string of C++ compiler flags (also a module option). None: the
#: default, "-march=native"; "" builds for the generic target. Warp's default adds LLVM-only `-mllvm` options,
#: which the system C++ compiler does not take. Changes generated code (part of the cache key).
cpu_compiler_flags: str | None = None

#: Warp's switch for reusing compiled kernels between runs: False compiles every module again (the compile cache
#: index is not read and the C++ compiler runs; an entry of the same key already in the cache, the same code, is
#: the one loaded) and rebuilds AOT artifacts that exist.
cache_kernels: bool = True

#: Warp's default number of threads with which `wp.force_load` / `wp.load_module` build modules: 0 builds them
#: one after the other, None picks min(cpu_count, 4).
load_module_max_workers: int | None = 0

#: CPU backend: let the C++ compiler fuse `a * b + c` into one FMA instruction (one rounding instead of two;
#: faster). Warp's CPU backend does not fuse, so `warp_shim` sets this to False and a Warp program then computes
#: Warp's numbers to the bit. Changes generated code (it is one of the compiler flags in the cache key).
fp_contract: bool = True

#: Check that taped launches do not overwrite arrays read earlier on the same tape: "warn", "error" or "off".
overwrite_check: str = "warn"

#: Warp's switch: taped launches and copies mark the arrays they read (`array._is_read`), and writing a marked array
#: later prints a warning to stderr naming the writer; `Tape.backward()` and `Tape.reset()` clear the marks.
verify_autograd_array_access: bool = False

#: After every launch, check the floating-point arrays it was given (and, for an adjoint launch, their gradient
#: arrays) for NaN and inf, and raise a LaunchError naming the kernel and the argument. Costs a pass over the
#: arrays per launch; does not change generated code. (Warp's flag of the same name.)
verify_fp: bool = False

#: Warp's switch for running CPU blocks with block_dim cooperating lanes (a launch's block_dim takes effect on the
#: CPU only when True). Lanes of a kernel without tiles run as Warp's do, wp.block_dim() giving the block_dim; a
#: block of a kernel with tiles runs as one lane (tile operations loop over the whole tile in it), and a launch
#: where that would differ from Warp's cooperative lanes raises a LaunchError (docs/cpu_blocks.md).
enable_cpu_blocks: bool = False


class DeterministicMode(enum.IntEnum):
    """Warp's `wp.DeterministicMode`: what a kernel's floating-point atomics promise about their summation order."""

    NOT_GUARANTEED = 0  # any order (CPU launches above the parallel threshold run on the thread pool)
    RUN_TO_RUN = 1  # the same result on every run
    GPU_TO_GPU = 2  # the same result on any device (here: the CPU's serial order)


#: Warp's switch (also a module option, `module_options={"deterministic": ...}`): anything but NOT_GUARANTEED
#: makes the kernels of a module run serially on the CPU, thread index by thread index, so their atomic adds sum
#: in one fixed order, Warp's CPU order. Only DeterministicMode values are accepted.
deterministic: DeterministicMode = DeterministicMode.NOT_GUARANTEED

#: Warp's capacity of its deterministic GPU scatter records (module option of the same name; 0: Warp's automatic
#: size). Recorded in new modules' options; no effect on the CPU, where deterministic launches run serially.
deterministic_max_records: int = 0


def check_deterministic(value):
    """`value` if it is a DeterministicMode, else a ValueError (Warp rejects strings and bools alike)."""
    if not isinstance(value, DeterministicMode):
        raise ValueError(f"deterministic must be a wp.DeterministicMode value (NOT_GUARANTEED, RUN_TO_RUN or "
                         f"GPU_TO_GPU), got {value!r}")
    return value


class _ConfigModule(types.ModuleType):
    """This module, with its `deterministic` setting checked when assigned (`wp.config.deterministic = ...`)."""

    def __setattr__(self, name, value):
        if name == "deterministic":
            check_deterministic(value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ConfigModule
