"""How array elements sit in memory: the native array descriptor, the numpy layout of each element type
(storage dtype and trailing component shape), strides, host allocation (pageable or pinned), wrapping foreign
pointers, and reinterpreting a layout as another element type."""

from __future__ import annotations

import ctypes
import weakref

import numpy as np

from .. import types as T
from ..typesys import ArrayDescriptor, is_struct  # noqa: F401  (ArrayDescriptor: the runtime's name for it)
from . import memory_tracker
from . import cuda_driver  # its functions read at call time (the CUDA emulation of the tests replaces them)
from .device import get_cuda_device_count


_ELEMENT_INFO: dict = {}


# native/array.h: plain writes in the backward consume the elements of a gradient array with this flag
ARRAY_FLAG_CONSUME = 1
# native/array.h: the gradient array is its primal array's own .grad (in-kernel views of it consume, retain_grad or not)
ARRAY_FLAG_OWN_GRAD = 2


def element_info(dtype):
    """(numpy scalar dtype, trailing component shape) of an element type (memoised: arrays are made on hot
    paths)."""
    try:
        return _ELEMENT_INFO[dtype]
    except (KeyError, TypeError):
        pass
    info = element_info_of(dtype)
    try:
        _ELEMENT_INFO[dtype] = info
    except TypeError:
        pass
    return info


def element_info_of(dtype):
    if T.unsupported_reason(dtype):
        raise TypeError(T.unsupported_reason(dtype))
    if T.is_scalar(dtype):
        return np.dtype(dtype._np_), ()
    if T.is_composite(dtype):
        return np.dtype(dtype._wp_scalar_type_._np_), dtype._shape_
    if is_struct(dtype):
        return dtype._wp_struct_.numpy_dtype, ()
    raise TypeError(f"unsupported array dtype {dtype!r}")


def infer_dtype(data) -> object:
    """The kernel scalar type of `data`'s elements (numpy rules for Python sequences)."""
    a = np.asarray(data)
    try:
        return T.canonical_type(a.dtype.type)
    except KeyError:
        raise TypeError(f"no kernel scalar type for elements of type {a.dtype}") from None


def shape_arg(shape):
    if shape is None:
        return (0,)
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def check_array_shape(shape) -> None:
    """Refuse an extent the native array header cannot hold (its shape is int32, as in Warp), before allocating.

    Raises:
        ValueError: a negative extent, or one of 2**31 or more (Warp's messages).
    """
    for index, size in enumerate(shape):
        if size < 0:
            raise ValueError(f"Array shapes must be non-negative, got {size} in dimension {index}")
        if size >= 2**31:
            raise ValueError("Array shapes must not exceed the maximum representable value of a signed 32-bit "
                             f"integer, got {size} in dimension {index}.")


def contiguous_strides(shape, itemsize) -> tuple:
    """Row-major byte strides, as Warp computes them (a zero extent gives zero strides outside it, unlike numpy)."""
    strides, step = [], itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def allocate(shape: tuple, dtype) -> np.ndarray:
    """A zeroed buffer of `shape` elements of `dtype`, components trailing."""
    if any(s < 0 for s in shape):
        raise ValueError(f"Array shapes must be non-negative, got {shape}")
    sdt, inner = element_info(dtype)
    if 0 not in shape:
        return memory_tracker.note_host(np.zeros(shape + inner, dtype=sdt))
    # a zero-size array keeps a real (one element) allocation so that its memory address is valid
    backing = memory_tracker.note_host(np.zeros(inner or (1,), dtype=sdt))
    itemsize = sdt.itemsize * int(np.prod(inner))
    full = shape + inner
    return np.ndarray(full, dtype=sdt, buffer=backing, strides=contiguous_strides(full, sdt.itemsize)
                      if inner else contiguous_strides(shape, itemsize))


def pinned_available() -> bool:
    """Whether page-locked host memory can be had (a CUDA driver and device are present)."""
    return get_cuda_device_count() > 0


def allocate_pinned(shape: tuple, dtype) -> np.ndarray:
    """A zeroed page-locked host buffer (fast, truly asynchronous copies to and from CUDA devices), freed with the
    numpy array that views it."""
    sdt, inner = element_info(dtype)
    full = shape + inner
    nbytes = max(int(np.prod(full)) * sdt.itemsize, 1)
    ptr = cuda_driver.host_alloc_pinned(nbytes)
    raw = (ctypes.c_byte * nbytes).from_address(ptr)
    out = np.ndarray(full, dtype=sdt, buffer=raw)
    out.fill(0)
    weakref.finalize(raw, cuda_driver.host_free_pinned, ptr)
    if memory_tracker.is_enabled():
        memory_tracker.note(raw, nbytes, "cpu (pinned)")
    return out


def wrap_pointer(ptr: int, dtype, shape: tuple, strides) -> np.ndarray:
    """A numpy view of memory at address `ptr` (Warp's `wp.array(ptr=...)`); nothing is read or copied."""
    sdt, inner = element_info(dtype)
    itemsize = sdt.itemsize * int(np.prod(inner))
    strides = contiguous_strides(shape, itemsize) if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} do not match shape {shape}")
    if any(s < 0 for s in strides):
        raise ValueError("arrays from a pointer need non-negative strides")
    extent = 0 if 0 in shape else sum((n - 1) * st for n, st in zip(shape, strides)) + itemsize
    raw = (ctypes.c_byte * max(extent, 1)).from_address(int(ptr))
    inner_strides = contiguous_strides(inner, sdt.itemsize) if inner else ()
    return np.ndarray(shape + inner, dtype=sdt, buffer=raw, strides=strides + inner_strides)


def element_ctype(dtype):
    if is_struct(dtype):
        return dtype._wp_struct_.ctype()
    return dtype._ctype() if T.is_composite(dtype) else dtype._ctype_


def is_bf16(dtype) -> bool:
    """Whether `dtype`'s scalars are bfloat16 (stored as uint16 bit patterns: values convert on the way in)."""
    return (T.is_scalar(dtype) or T.is_composite(dtype)) and T.scalar_type(dtype) is T.bfloat16


def fill_element(dtype, np_dtype, value) -> np.ndarray:
    """One element of `dtype` in the buffer's layout, from a fill value."""
    if is_struct(dtype):
        if not isinstance(value, dtype):
            raise TypeError(f"cannot fill an array of struct {dtype.__name__} with {type(value).__name__}")
        return value._to_numpy_record()
    if is_bf16(dtype):
        value = T.to_storage(T.bfloat16, np.asarray(value, dtype=np.float32))  # then laid out as any element
    if T.is_composite(dtype):
        element = np.asarray(value, dtype=np_dtype)
        if element.ndim == 0:  # a scalar fills every component
            return np.full(dtype._shape_, element, dtype=np_dtype)
        if element.size != int(np.prod(dtype._shape_)):
            raise ValueError(f"cannot fill an array of {T.type_repr(dtype)} with a value of shape {element.shape}")
        return element.reshape(dtype._shape_)
    element = np.asarray(value, dtype=np_dtype)
    if element.ndim != 0:
        raise ValueError(f"cannot fill an array of {T.type_repr(dtype)} with a value of shape {element.shape}")
    return element


def view_layout(a, dtype):
    """(shape, byte strides) of `a` seen as elements of `dtype`; TypeError naming both sizes when impossible."""
    src_size, dst_size = T.type_size_in_bytes(a.dtype), T.type_size_in_bytes(dtype)
    prefix = (f"cannot create an array view with dtype {T.warp_type_name(dtype)} from source dtype "
              f"{T.warp_type_name(a.dtype)}")
    if src_size == dst_size:
        return a.shape, a.strides
    if T.is_scalar(dtype) and T.is_composite(a.dtype):
        scalar = T.scalar_type(a.dtype)
        if T.type_size_in_bytes(scalar) != dst_size:
            raise TypeError(f"{prefix}: source scalar dtype {T.warp_type_name(scalar)} has size {T.type_size_in_bytes(scalar)} "
                            f"bytes, but target dtype has size {dst_size} bytes")
        inner = a.dtype._shape_
        return a.shape + inner, a.strides + contiguous_strides(inner, dst_size)
    if T.is_scalar(a.dtype) and T.is_composite(dtype):
        scalar = T.scalar_type(dtype)
        if T.type_size_in_bytes(scalar) != src_size:
            raise TypeError(f"{prefix}: source dtype has size {src_size} bytes, but target scalar dtype "
                            f"{T.warp_type_name(scalar)} has size {T.type_size_in_bytes(scalar)} bytes")
        inner = dtype._shape_
        k = len(inner)
        if a.shape[a.ndim - k:] != inner or a.strides[a.ndim - k:] != contiguous_strides(inner, src_size):
            raise TypeError(f"{prefix}: the array's trailing dimensions {a.shape[a.ndim - k:]} are not one "
                            f"contiguous {T.warp_type_name(dtype)}")
        if a.ndim == k:  # no 0-d arrays: a single element becomes a 1-element array
            return (1,), (dst_size,)
        return a.shape[:a.ndim - k], a.strides[:a.ndim - k]
    raise TypeError(f"{prefix}: source dtype has size {src_size} bytes, but target dtype has size {dst_size} bytes")
