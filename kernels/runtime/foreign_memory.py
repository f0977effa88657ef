"""Arrays over foreign memory: the constructor arguments of a toolkit array viewing memory another library owns
(a `__cuda_array_interface__` object, a DLPack tensor), checked against the element type asked for. Below
array.py, whose constructor takes such objects, and interop.py / dlpack, which make arrays of them; it makes no
array itself.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from . import cuda_driver  # loads cuda-python (optional) at its first call only
from .array_layout import contiguous_strides, element_info


def layout_args(ptr: int, np_dtype, shape: tuple, strides, device: str, dtype, what: str) -> dict:
    """array(...) keywords for `shape` elements of numpy scalar type `np_dtype` at address `ptr` on `device`
    (strides in bytes, None for contiguous); with `dtype` a vector/matrix type, the trailing dimensions are its
    components. `what` names the source in errors."""
    if dtype is None:
        dtype = T.canonical_type(np.dtype(np_dtype).type)
    scalar, inner = element_info(dtype)
    if np.dtype(np_dtype) != scalar:
        raise TypeError(f"{what} has elements of type {np.dtype(np_dtype)}; {T.type_repr(dtype)} needs {scalar}: "
                        f"convert it first (a conversion would copy, and kernels' writes would not reach it)")
    if inner and tuple(shape[len(shape) - len(inner):]) != tuple(inner):
        raise ValueError(f"{what} has shape {tuple(shape)}; an array of {T.type_repr(dtype)} needs trailing "
                         f"dimensions {tuple(inner)}")
    if strides is None:
        strides = contiguous_strides(tuple(shape), scalar.itemsize)
    outer = len(shape) - len(inner)
    if outer < 1:
        return layout_args(ptr, np_dtype, (1,) + tuple(shape), (0,) + tuple(strides), device, dtype, what)
    if inner and tuple(strides[outer:]) != contiguous_strides(tuple(inner), scalar.itemsize):
        raise ValueError(f"{what}: the components of each {T.type_repr(dtype)} must be contiguous")
    return dict(ptr=ptr, dtype=dtype, shape=tuple(shape[:outer]), strides=tuple(strides[:outer]), device=device)


def cuda_interface_args(obj, dtype=None) -> dict:
    """array(...) keywords for the device memory of `obj`, anything with `__cuda_array_interface__` (the caller
    keeps `obj` alive with the array). The producer's stream, when it names one, is waited for."""
    iface = obj.__cuda_array_interface__
    np_dtype = np.dtype(iface["typestr"])
    shape = tuple(int(d) for d in iface["shape"])
    strides = iface.get("strides")
    ptr = int(iface["data"][0])
    stream = iface.get("stream")
    if stream is not None and stream != 0:  # the producer's stream: its work on the memory must be done
        cuda_driver.stream_synchronize(cuda_driver.driver().CUstream(int(stream)))
    device = f"cuda:{cuda_driver.pointer_ordinal(ptr)}" if ptr else "cuda:0"
    return layout_args(ptr, np_dtype, shape, tuple(strides) if strides is not None else None, device, dtype,
                       type(obj).__name__)
