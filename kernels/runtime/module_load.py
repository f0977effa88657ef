"""Warp's `wp.force_load`: build (or load from the cache) the kernels of many modules now, on several threads.

Each module is loaded by `Module.load`; with more than one worker the modules go to a thread pool, where their IR
compiles and source renderings take turns (module.codegen_lock) and their C++ compiles run in parallel. As in
Warp, a module that fails to load fails the call, after the other modules finished loading.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from .. import config
from .device import get_device, get_devices
from .module import Module, _modules


def worker_count(max_workers: int | None) -> int:
    """Warp's rule: the argument, else config.load_module_max_workers, and None there means min(cpu_count, 4)."""
    if max_workers is None:
        max_workers = config.load_module_max_workers
        if max_workers is None:
            max_workers = min(os.cpu_count() or 1, 4)
    return int(max_workers)


def force_load(device=None, modules: list | None = None, block_dim: int | None = None,
               max_workers: int | None = None) -> None:
    """Load `modules` (Module objects; default: every module with kernels) on `device` (a device, a name or a
    list of them; default: every device), with at most `max_workers` threads (0 or 1: one after the other).

    Raises:
        the first error met while loading (a kernel that cannot be built), after every module was tried.
    """
    if device is None:
        devices = get_devices()
    elif isinstance(device, (list, tuple)):
        devices = [get_device(d) for d in device]
    else:
        devices = [get_device(device)]
    if modules is None:
        modules = [m for m in list(_modules.values()) if m.kernels]
    for m in modules:
        if not isinstance(m, Module):
            raise TypeError(f"force_load: modules must be wp.Module objects (wp.get_module(name)), got "
                            f"{type(m).__name__}")
    workers = worker_count(max_workers)
    jobs = [(m, d) for d in devices for m in modules]
    if workers <= 1 or len(modules) <= 1:
        for m, d in jobs:
            m.load(d, block_dim)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(m.load, d, block_dim) for m, d in jobs]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]
