"""Warp's `wp.force_load`: build (or load from the cache) the kernels of many modules now, on several threads.

Each module is loaded by `Module.load`; with more than one worker the modules go to a thread pool, where their IR
compiles and source renderings take turns (module.codegen_lock) and their C++ compiles run in parallel. As in
Warp, a module that fails to load fails the call, after the other modules finished loading.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from .. import config
from .cpu_blocks import ResolvedBlockDim, resolve_launch_block_dim
from .device import get_device, get_devices
from .module import Module, _modules


def worker_count(max_workers: int | None) -> int:
    """Warp's rule: the argument, else config.load_module_max_workers, and None there means min(cpu_count, 4)."""
    if max_workers is None:
        max_workers = config.load_module_max_workers
        if max_workers is None:
            max_workers = min(os.cpu_count() or 1, 4)
    return int(max_workers)


def _block_dims(module: Module, device, block_dim, loaded: tuple) -> list:
    """The block_dims to load `module` for on `device`, as Warp chooses them: the one asked for, resolved as a launch
    resolves it; without one, the variants already loaded on that device, else a launch's default (CPU 1)."""
    if block_dim is not None:
        return [ResolvedBlockDim(resolve_launch_block_dim(device, block_dim))]
    dims = [ResolvedBlockDim(dim) for ctx, dim in loaded if ctx == device.context]
    return dims or [None]


def force_load(device=None, modules: list | None = None, block_dim: int | None = None,
               max_workers: int | None = None) -> None:
    """Load `modules` (Module objects; default: every module with kernels) on `device` (a device, a name or a
    list of them; default: every device), with at most `max_workers` threads (0 or 1: one after the other), for
    `block_dim` (resolved per device as a launch resolves it; None: the variants already loaded on each device,
    or none yet: a launch's default, CPU 1, CUDA 256).

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
    loaded = {id(m): tuple(m.execs) for m in modules}  # the variants loaded before this call (the loads add some)
    jobs = [(m, d, dim) for d in devices for m in modules for dim in _block_dims(m, d, block_dim, loaded[id(m)])]
    if workers <= 1 or len(modules) <= 1:
        for m, d, dim in jobs:
            m.load(d, dim)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(m.load, d, dim) for m, d, dim in jobs]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]
