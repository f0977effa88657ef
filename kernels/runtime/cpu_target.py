"""Warp's names of the CPU compile target: `wp.get_cpu_kernel_cache_key()` and the target hash in CPU artifact
file names (`Module._get_compile_output_name`).

The target hash covers the C++ compiler (its `--version` line) and, when the resolved flags build for the host
(`-march=native`), the host CPU's instruction-set features; flags that do not pick the instruction set leave it
alone, as in Warp (a module's own hash covers those). The key adds the toolkit's version, the operating system
and the machine architecture.
"""

from __future__ import annotations

import hashlib
import platform
import shlex

from .. import config
from ..compiler.build import compiler_identity, find_cxx


def _resolved_flags(cpu_compiler_flags: str | None) -> list:
    flags = cpu_compiler_flags if cpu_compiler_flags is not None else config.cpu_compiler_flags
    return ["-march=native"] if flags is None else shlex.split(flags)


def cpu_features() -> frozenset:
    """The host CPU's instruction-set features (Linux: /proc/cpuinfo's flags; elsewhere the processor name)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":")[0].strip() in ("flags", "Features"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset({platform.processor()})


def target_hash(cpu_compiler_flags: str | None = None) -> str:
    """8 hex digits naming the CPU target the flags build for (see the module docstring)."""
    flags = _resolved_flags(cpu_compiler_flags)
    isa = sorted(f for f in flags if f.startswith(("-march=", "-mcpu=")))
    parts = [compiler_identity(find_cxx()), repr(isa)]
    if "-march=native" in flags or "-mcpu=native" in flags:
        parts.append(repr(sorted(cpu_features())))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def get_cpu_kernel_cache_key(*, cpu_compiler_flags: str | None = None) -> str:
    """Warp's key of the CPU compile target, for naming caches kept outside this toolkit:
    `<version>-<OS>-<machine>-<target hash>`. `cpu_compiler_flags`: the flags to identify (None: config's,
    and -march=native when those are None; "" the generic target). Compiles nothing."""
    return f"{config.version}-{platform.system()}-{platform.machine()}-{target_hash(cpu_compiler_flags)}"


def compile_output_name(module, device=None) -> str:
    """Warp's file name of a module's CPU artifact: `<identifier>.cpu<target hash>.o`."""
    del device
    flags = module.resolve_options()["cpu_compiler_flags"]
    return f"{module.get_module_identifier()}.cpu{target_hash(flags)}.o"
