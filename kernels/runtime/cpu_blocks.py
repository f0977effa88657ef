"""Cooperative CPU blocks (Warp 1.19's `wp.config.enable_cpu_blocks`): which block_dim a launch takes effect with,
and the module variants (`Module.execs`) loaded for it.

Warp 1.19 runs a CPU launch whose effective block_dim B is above 1 as consecutive blocks of B lanes (the last one
holding what is left), each lane a thread of the launch that reads B from wp.block_dim(). Lanes of a kernel with
no tile operation share nothing and meet at no barrier, so running them as the ordinary CPU launch (each thread
id once, block_dim in the launch bounds) gives Warp's results; that is what kernels does. Kernels with tiles keep
their one-lane blocks and the refusals in launch.py where lanes would be told apart (docs/cpu_blocks.md).
"""

from __future__ import annotations

from .. import config

#: Warp's cap on a CPU block (the CUDA architectural maximum), whatever enable_cpu_blocks says.
CPU_BLOCK_DIM_MAX = 1024

#: Warp's CUDA default when a launch names no block_dim.
CUDA_DEFAULT_BLOCK_DIM = 256


class ResolvedBlockDim(int):
    """A block_dim already resolved (a Tape's or a recorded command's replay): taken as it is, whatever
    enable_cpu_blocks says now (Warp's `_ResolvedBlockDim`)."""


def resolve_launch_block_dim(device, block_dim) -> int:
    """The block_dim a launch on `device` asking for `block_dim` runs with (Warp 1.19's rule).

    CPU: None and values below 2 give 1; 2..1024 give themselves when `wp.config.enable_cpu_blocks` is True, else
    1; above 1024 is a ValueError (with either setting). CUDA: None and values below 1 give 256, others
    themselves.
    """
    if isinstance(block_dim, ResolvedBlockDim):
        return int(block_dim)
    if block_dim is None or block_dim <= 0:
        return 1 if device.is_cpu else CUDA_DEFAULT_BLOCK_DIM
    if not device.is_cpu:
        return int(block_dim)
    if block_dim > CPU_BLOCK_DIM_MAX:
        raise ValueError(f"block_dim must be at most {CPU_BLOCK_DIM_MAX} on CPU, got {block_dim}")
    if block_dim == 1 or not config.enable_cpu_blocks:
        return 1
    return int(block_dim)


class ModuleExec:
    """One loaded variant of a module (Warp's `ModuleExec`): the module on `device` with an effective
    `block_dim`. On the CPU every variant runs the module's one library (block_dim travels in the launch
    bounds); the variant records that the module was loaded for that block_dim."""

    __slots__ = ("module", "device", "block_dim")

    def __init__(self, module, device, block_dim: int):
        self.module, self.device, self.block_dim = module, device, block_dim

    def __repr__(self):
        return f"ModuleExec({self.module.name!r}, {self.device}, block_dim={self.block_dim})"


def note_variant(kernel, device, block_dim: int) -> ModuleExec:
    """Record that `kernel`'s module runs on `device` with `block_dim` (its `execs`); the variant."""
    execs = kernel.module.execs
    key = (device.context, block_dim)
    variant = execs.get(key)
    if variant is None:
        variant = execs[key] = ModuleExec(kernel.module, device, block_dim)
    kernel.variants.add((device.alias, block_dim))
    return variant


def load_module_variant(module, device, block_dim) -> ModuleExec:
    """Build (or load from the cache) every kernel of `module` for `device` and record the variant for the
    resolved `block_dim` (Warp's `Module.load(device, block_dim)`)."""
    resolved = resolve_launch_block_dim(device, block_dim)
    for k in list(module.kernels):
        if not k.is_generic:
            k.ensure_built(device)
    key = (device.context, resolved)
    variant = module.execs.get(key)
    if variant is None:
        variant = module.execs[key] = ModuleExec(module, device, resolved)
    return variant
