"""Zero-copy exchange with other array libraries: DLPack both ways, and torch helpers (Warp's names).

`from_dlpack`/`from_torch` wrap the other library's memory (writes by kernels are seen there) and `to_dlpack`/
`to_torch` export ours the same way. Vector, matrix and quaternion arrays travel with their components as trailing
dimensions: a vec3 array of shape (n,) is a float32 tensor of shape (n, 3), and `from_torch(t, dtype=wp.vec3)`
reads an (n, 3) tensor as n vectors.

Unlike a foreign array passed straight to a launch (a constant for differentiation, see autodiff.Tape), an array
made by `from_torch` takes part in gradients when the tensor requires them: its `.grad` is the tensor's `.grad`
(created as zeros when missing), so gradients computed by a Tape land in torch.

CUDA memory travels the same ways: DLPack capsules of device memory (kernels/runtime/dlpack.py), and Numba's
`__cuda_array_interface__` (torch, CuPy, Numba). A CUDA tensor's memory is shared, never copied.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from .array import array
from .array_layout import element_info, infer_dtype
from .dlpack import import_capsule_args
from .foreign_memory import cuda_interface_args
from .device import get_device


def _wrap(view: np.ndarray, dtype, what: str) -> array:
    """An array of `dtype` over numpy view `view` (whose trailing dims are `dtype`'s components), no copy."""
    if dtype is None:
        dtype = infer_dtype(view)
    scalar, inner = element_info(dtype)
    if view.dtype != scalar:
        raise TypeError(f"{what} has elements of type {view.dtype}; {T.type_repr(dtype)} needs {scalar}: "
                        f"convert it first (a conversion would copy, and kernels' writes would not reach it)")
    if inner and tuple(view.shape[view.ndim - len(inner):]) != tuple(inner):
        raise ValueError(f"{what} has shape {tuple(view.shape)}; an array of {T.type_repr(dtype)} needs trailing "
                         f"dimensions {tuple(inner)}")
    if view.ndim - len(inner) < 1:
        view = view.reshape((1,) + view.shape)
    return array(view, dtype=dtype, copy=False)


def import_capsule(capsule, dtype=None) -> array:
    """An array over the memory of a DLPack capsule of CUDA (or CPU) memory, without a copy."""
    args, owner = import_capsule_args(capsule, dtype)
    out = array(**args)
    out._ref = owner  # frees the tensor with the array
    return out


def from_cuda_array_interface(obj, dtype=None) -> array:
    """An array sharing the device memory of `obj`, anything with `__cuda_array_interface__`; `obj` is kept alive
    with it. The producer's stream, when it names one, is waited for."""
    out = array(**cuda_interface_args(obj, dtype))
    out._foreign_owner = obj  # the producer owns the memory
    return out


def from_dlpack(source, dtype=None) -> array:
    """An array sharing the memory of `source`, any object with `__dlpack__` (or a DLPack capsule)."""
    if type(source).__name__ == "PyCapsule":
        return import_capsule(source, dtype)
    if not hasattr(source, "__dlpack__"):
        raise TypeError(f"wp.from_dlpack() needs an object with __dlpack__, got {type(source).__name__}")
    device = source.__dlpack_device__() if hasattr(source, "__dlpack_device__") else (1, 0)
    if int(device[0]) == 2:  # kDLCUDA
        return import_capsule(source.__dlpack__(), dtype)
    if int(device[0]) != 1:  # kDLCPU
        raise ValueError(f"wp.from_dlpack(): the data is on DLPack device {tuple(device)}; only CPU and CUDA "
                         f"memory can be shared")
    return _wrap(np.from_dlpack(source), dtype, type(source).__name__)


def to_dlpack(a: array):
    """A DLPack capsule of `a`'s memory (components of vector types as trailing dimensions)."""
    return a.__dlpack__()


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("wp.from_torch/wp.to_torch need PyTorch (pip install torch)") from e
    return torch


def dtype_from_torch(torch_dtype):
    """The kernel scalar type of a torch dtype."""
    torch = _torch()
    return infer_dtype(torch.empty(0, dtype=torch_dtype).numpy())


def dtype_to_torch(dtype):
    """The torch dtype of a kernel scalar type (of the scalar of a vector, matrix or quaternion type)."""
    torch = _torch()
    return torch.from_numpy(np.empty(0, dtype=element_info(dtype)[0])).dtype


def from_torch(t, dtype=None, requires_grad=None) -> array:
    """An array sharing the memory of CPU tensor `t`. With `requires_grad` (default: `t.requires_grad`), the array's
    gradient is `t.grad`, made zeros when the tensor has none."""
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"wp.from_torch() takes a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"wp.from_torch(): the tensor is on {t.device}; only CPU and CUDA tensors can be shared")
    requires_grad = t.requires_grad if requires_grad is None else bool(requires_grad)

    def share(tensor, what):
        if tensor.device.type == "cuda":
            return from_cuda_array_interface(tensor.detach(), dtype if dtype is not None else None)
        return _wrap(tensor.detach().numpy(), dtype, what)

    out = share(t, "the tensor")
    if requires_grad:
        if t.grad is None:
            t.grad = torch.zeros_like(t)
        out.grad = share(t.grad, "the tensor's grad")
        out._requires_grad = True
    out._torch_source = t  # the tensor owns the memory
    return out


def to_torch(a: array, requires_grad=None):
    """A CPU tensor sharing `a`'s memory. With `requires_grad` (default: `a.requires_grad`) it requires grad, and
    its `.grad` shares `a.grad`."""
    torch = _torch()
    requires_grad = a.requires_grad if requires_grad is None else bool(requires_grad)
    if T.is_scalar(a.dtype) or T.is_composite(a.dtype):
        if T.scalar_type(a.dtype) is T.bfloat16:
            a.__dlpack__()  # refuses, saying why (a uint16 tensor would hold bit patterns, not the numbers)
    if a.is_cuda:
        t = torch.from_dlpack(a)
        if requires_grad:
            t.requires_grad_(True)
            if a.grad is not None:
                t.grad = torch.from_dlpack(a.grad)
        return t
    t = torch.from_numpy(a.numpy())
    if requires_grad:
        t.requires_grad_(True)
        if a.grad is not None:
            t.grad = torch.from_numpy(a.grad.numpy())
    return t


def device_from_torch(torch_device) -> str:
    """Our device name for a torch device ("cpu" or "cuda:N")."""
    d = str(torch_device)
    return "cuda:0" if d == "cuda" else d


def device_to_torch(device) -> str:
    """The torch device name of one of ours."""
    return get_device(device).alias
