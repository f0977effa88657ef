"""What a Tape (the `autodiff` package) needs from the runtime, in one public place: the hooks through which
launches, copies and host writes are reported, the adjoint launch, argument packing, kernel signatures, and
device-memory access for gradients. `autodiff` imports from `kernels` through this module only.

Hooks: each is a list of callables; the last one appended is called.
- `launch_hooks[-1](kernel, dims, inputs, outputs, device, launch)` after every taped `wp.launch` (`launch`: the
  Launch that ran, holding its own copy of the argument values and their packed form);
- `copy_hooks[-1](dest, src, dest_offset, src_offset, count)` after every copy between toolkit arrays
  (wp.copy, wp.clone, array.assign);
- `host_write_hooks[-1](array, operation)` before a write from the host (numpy views, fill_, assign from host
  data), which may raise to refuse it.
"""

from __future__ import annotations

from .runtime import cuda_memory
from .runtime.array_copy import copy_hooks, copy_plan, copy_window, host_write_hooks
from .runtime.recording import recorder
from .runtime.launch import args_ctype, check_backward, launch_adjoint, pack_array, pack_indexed
from .runtime.launch import tape_hooks as launch_hooks
from .runtime.mesh import ray_gradient_meshes
from .runtime.signature import ArrayPath, KernelSignature, Param, ParamKind, StructArrays, pick
from .runtime.struct import packed_derived
from .typesys import ArrayType, is_differentiable_type, is_struct

__all__ = [
    "ArrayPath", "ArrayType", "KernelSignature", "Param", "ParamKind", "StructArrays", "args_ctype",
    "check_backward", "copy_hooks", "copy_plan", "copy_window", "cuda_memory", "host_write_hooks",
    "is_differentiable_type", "is_struct", "launch_adjoint", "launch_hooks", "pack_array", "pack_indexed",
    "packed_derived", "pick",
    "ray_gradient_meshes", "recorder", "signature",
]


def signature(kernel) -> KernelSignature:
    """The signature of concrete kernel `kernel` (made once per kernel)."""
    return kernel.signature
