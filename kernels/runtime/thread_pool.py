"""The CPU runtime's thread pool (native/thread_pool.cpp): built and loaded once per process, bound to every compiled
module as it is loaded, and sized from `config.cpu_threads`.

Thread count, first that is set: `config.cpu_threads`, $KERNELS_NUM_THREADS, $OMP_NUM_THREADS (what Ray and other
schedulers set for a task), else every core this process may use: its CPU affinity mask, capped by the cgroup CPU
quota (containers, Ray/Kubernetes CPU limits), not `os.cpu_count()`. A change of `config.cpu_threads` takes effect at
the next launch.
"""

from __future__ import annotations

import ctypes
import math
import os

from .. import config
from ..compiler.build import load_library, load_native_library

#: How long an idle worker spins on its core [microseconds], then how long it keeps polling while yielding its core
#: at every turn (to threads of other processes) before it sleeps: long enough that the launches of a simulation
#: step find the workers awake, without taking cores from other processes. See README's performance notes for the
#: measurements behind them. Environment variables: KERNELS_SPIN_US, KERNELS_YIELD_US.
SPIN_US = 20
YIELD_US = 5000

_lib = None
_api = None
_UNSET = object()
applied_setting = _UNSET  # the config.cpu_threads value the pool was last sized for


def _library():
    global _lib, _api
    if _lib is None:
        lib = load_native_library("runtime")
        lib.wp_pool_set_threads.argtypes = [ctypes.c_int]
        lib.wp_pool_set_threads.restype = ctypes.c_int
        lib.wp_pool_threads.restype = ctypes.c_int
        lib.wp_pool_set_wait_ns.argtypes = [ctypes.c_int64, ctypes.c_int64]
        lib.wp_runtime_api.restype = ctypes.c_void_p
        lib.wp_pool_last_runners.restype = ctypes.c_uint64
        lib.wp_pool_set_wait_ns(int(float(os.environ.get("KERNELS_SPIN_US", SPIN_US)) * 1000),
                                int(float(os.environ.get("KERNELS_YIELD_US", YIELD_US)) * 1000))
        _api = lib.wp_runtime_api()
        _lib = lib
    return _lib


def load_kernel_library(path: str, *, checked: bool = False):
    """A compiled kernel module loaded (build.load_library: checked against its manifest unless `checked`, the
    path build_cpu just returned; None when it must be rebuilt) and bound to the pool."""
    lib = load_library(path, checked=checked)
    if lib is not None:
        bind(lib)
    return lib


def load() -> None:
    """Load the runtime library now (wp.init); the pool's threads start at the first parallel launch."""
    _library()


def bind(lib):
    """Give a freshly loaded module the pool's entry points (modules without parallel code have nothing to bind)."""
    try:
        bind_fn = lib.wp_bind_runtime
    except AttributeError:
        return
    _library()
    ensure()
    bind_fn.argtypes = [ctypes.c_void_p]
    bind_fn(_api)


def ensure():
    """Size the pool for the current `config.cpu_threads` if it changed since the last time (cheap otherwise)."""
    if config.cpu_threads != applied_setting:
        apply()


def apply() -> int:
    """Size the pool from the settings now; returns the thread count in use."""
    global applied_setting
    n = resolve_threads()
    used = _library().wp_pool_set_threads(n)
    applied_setting = config.cpu_threads
    return used


def threads() -> int:
    """Threads CPU launches use now (the launching thread included)."""
    ensure()
    return _library().wp_pool_threads()


def last_launch_threads() -> set:
    """The pool threads (0: the launching thread) that ran part of the last launch the pool ran in parallel."""
    mask = _library().wp_pool_last_runners()
    return {r for r in range(64) if mask >> r & 1}


def resolve_threads() -> int:
    """The thread count the settings ask for (see the module docstring)."""
    setting = config.cpu_threads
    if setting is not None:
        return _positive(setting, "wp.config.cpu_threads")
    for name in ("KERNELS_NUM_THREADS", "OMP_NUM_THREADS"):
        text = os.environ.get(name, "").strip()
        if text:
            # OMP_NUM_THREADS may list one count per nesting level ("4,2"): the first is ours
            return _positive(text.split(",")[0], f"${name}")
    return available_cpus()


def _positive(value, where) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be a positive integer (number of CPU threads), got {value!r}") from None
    if n < 1:
        raise ValueError(f"{where} must be a positive integer (number of CPU threads), got {value!r}")
    return n


def available_cpus() -> int:
    """Cores this process may run on: its affinity mask, capped by the cgroup CPU quota (rounded up)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> float | None:
    """CPUs the cgroup quota allows this process (quota / period), or None when there is no quota."""
    paths = []
    try:
        with open(proc_cgroup) as f:
            for line in f:
                parts = line.strip().split(":", 2)
                if len(parts) == 3 and parts[0] == "0":  # cgroup v2 unified hierarchy
                    paths.append(("v2", parts[2]))
                elif len(parts) == 3 and "cpu" in parts[1].split(","):
                    paths.append(("v1", parts[2]))
    except OSError:
        pass
    for kind, rel in paths + [("v2", "/"), ("v1", "/")]:
        rel = rel.lstrip("/")
        try:
            if kind == "v2":
                with open(os.path.join(root, rel, "cpu.max")) as f:
                    quota, period = f.read().split()[:2]
                if quota == "max":
                    return None
                return int(quota) / int(period)
            base = os.path.join(root, "cpu", rel)
            with open(os.path.join(base, "cpu.cfs_quota_us")) as f:
                quota = int(f.read())
            with open(os.path.join(base, "cpu.cfs_period_us")) as f:
                period = int(f.read())
            return None if quota <= 0 else quota / period
        except (OSError, ValueError):
            continue
    return None


def _after_fork_in_child():
    # the child has no workers (thread_pool.cpp forgets them): size the pool again at the next launch
    global applied_setting
    applied_setting = _UNSET


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
