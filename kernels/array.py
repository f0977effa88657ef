"""Arrays: typed, strided views of device memory with 1-4 dimensions and an optional gradient array.

On the CPU an array wraps a numpy buffer (`_buf`) whose trailing dimensions are the components of the element type
(a vec3 array of shape (n,) has a buffer of shape (n, 3)); `.numpy()` returns that buffer without a copy. Strides
are in bytes, so slices and columns of larger arrays are arrays too and kernels launch over them directly.

On a CUDA device `_buf` has the same shape and strides but describes device memory (cuda_memory.device_layout):
views are computed on it as on the CPU, and every access to the elements goes through cuda_memory, so `.numpy()`
returns a copy, as in Warp.
`wp.array(dtype=..., ndim=...)` with no data is the annotation form used in kernel signatures.
"""

from __future__ import annotations

import ctypes
import math
import sys
import typing

import numpy as np

from . import capture as _capture
from . import types as T
from .device import get_device
from .typesys import ArrayType, is_struct


class ArrayDescriptor(ctypes.Structure):
    """Argument layout of `wp::array_t<T>` (native/array.h): keep in sync."""

    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int32 * 4), ("strides", ctypes.c_int64 * 4),
                ("ndim", ctypes.c_int32), ("flags", ctypes.c_int32)]


_ELEMENT_INFO: dict = {}


# native/array.h: plain writes in the backward consume the elements of a gradient array with this flag
ARRAY_FLAG_CONSUME = 1


def _element_info(dtype):
    """(numpy scalar dtype, trailing component shape) of an element type (memoised: arrays are made on hot
    paths)."""
    try:
        return _ELEMENT_INFO[dtype]
    except (KeyError, TypeError):
        pass
    info = _element_info_of(dtype)
    try:
        _ELEMENT_INFO[dtype] = info
    except TypeError:
        pass
    return info


def _element_info_of(dtype):
    if T.unsupported_reason(dtype):
        raise TypeError(T.unsupported_reason(dtype))
    if T.is_scalar(dtype):
        return np.dtype(dtype._np_), ()
    if T.is_composite(dtype):
        return np.dtype(dtype._wp_scalar_type_._np_), dtype._shape_
    if is_struct(dtype):
        return dtype._wp_struct_.numpy_dtype, ()
    raise TypeError(f"unsupported array dtype {dtype!r}")


def _infer_dtype(data) -> object:
    """The kernel scalar type of `data`'s elements (numpy rules for Python sequences)."""
    a = np.asarray(data)
    try:
        return T.canonical_type(a.dtype.type)
    except KeyError:
        raise TypeError(f"no kernel scalar type for elements of type {a.dtype}") from None


def _shape_arg(shape):
    if shape is None:
        return (0,)
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def _contiguous_strides(shape, itemsize) -> tuple:
    """Row-major byte strides, as Warp computes them (a zero extent gives zero strides outside it, unlike numpy)."""
    strides, step = [], itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def _allocate(shape: tuple, dtype) -> np.ndarray:
    """A zeroed buffer of `shape` elements of `dtype`, components trailing."""
    if any(s < 0 for s in shape):
        raise ValueError(f"Array shapes must be non-negative, got {shape}")
    sdt, inner = _element_info(dtype)
    if 0 not in shape:
        return np.zeros(shape + inner, dtype=sdt)
    # a zero-size array keeps a real (one element) allocation so that its memory address is valid
    backing = np.zeros(inner or (1,), dtype=sdt)
    itemsize = sdt.itemsize * int(np.prod(inner))
    full = shape + inner
    return np.ndarray(full, dtype=sdt, buffer=backing, strides=_contiguous_strides(full, sdt.itemsize)
                      if inner else _contiguous_strides(shape, itemsize))


def _pinned_available() -> bool:
    """Whether page-locked host memory can be had (a CUDA driver and device are present)."""
    from .device import get_cuda_device_count
    return get_cuda_device_count() > 0


def _allocate_pinned(shape: tuple, dtype) -> np.ndarray:
    """A zeroed page-locked host buffer (fast, truly asynchronous copies to and from CUDA devices), freed with the
    numpy array that views it."""
    from .cuda_driver import host_alloc_pinned, host_free_pinned
    sdt, inner = _element_info(dtype)
    full = shape + inner
    nbytes = max(int(np.prod(full)) * sdt.itemsize, 1)
    ptr = host_alloc_pinned(nbytes)
    raw = (ctypes.c_byte * nbytes).from_address(ptr)
    out = np.ndarray(full, dtype=sdt, buffer=raw)
    out.fill(0)
    import weakref
    weakref.finalize(raw, host_free_pinned, ptr)
    return out


def _wrap_pointer(ptr: int, dtype, shape: tuple, strides) -> np.ndarray:
    """A numpy view of memory at address `ptr` (Warp's `wp.array(ptr=...)`); nothing is read or copied."""
    sdt, inner = _element_info(dtype)
    itemsize = sdt.itemsize * int(np.prod(inner))
    strides = _contiguous_strides(shape, itemsize) if strides is None else tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} do not match shape {shape}")
    if any(s < 0 for s in strides):
        raise ValueError("arrays from a pointer need non-negative strides")
    extent = 0 if 0 in shape else sum((n - 1) * st for n, st in zip(shape, strides)) + itemsize
    raw = (ctypes.c_byte * max(extent, 1)).from_address(int(ptr))
    inner_strides = _contiguous_strides(inner, sdt.itemsize) if inner else ()
    return np.ndarray(shape + inner, dtype=sdt, buffer=raw, strides=strides + inner_strides)


def _element_ctype(dtype):
    if is_struct(dtype):
        return dtype._wp_struct_.ctype()
    return dtype._ctype() if T.is_composite(dtype) else dtype._ctype_


def _is_bf16(dtype) -> bool:
    """Whether `dtype`'s scalars are bfloat16 (stored as uint16 bit patterns: values convert on the way in)."""
    return (T.is_scalar(dtype) or T.is_composite(dtype)) and T.scalar_type(dtype) is T.bfloat16


def _fill_element(dtype, np_dtype, value) -> np.ndarray:
    """One element of `dtype` in the buffer's layout, from a fill value."""
    if is_struct(dtype):
        if not isinstance(value, dtype):
            raise TypeError(f"cannot fill an array of struct {dtype.__name__} with {type(value).__name__}")
        return value._to_numpy_record()
    if _is_bf16(dtype):
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


def _view_layout(a, dtype):
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
        return a.shape + inner, a.strides + _contiguous_strides(inner, dst_size)
    if T.is_scalar(a.dtype) and T.is_composite(dtype):
        scalar = T.scalar_type(dtype)
        if T.type_size_in_bytes(scalar) != src_size:
            raise TypeError(f"{prefix}: source dtype has size {src_size} bytes, but target scalar dtype "
                            f"{T.warp_type_name(scalar)} has size {T.type_size_in_bytes(scalar)} bytes")
        inner = dtype._shape_
        k = len(inner)
        if a.shape[a.ndim - k:] != inner or a.strides[a.ndim - k:] != _contiguous_strides(inner, src_size):
            raise TypeError(f"{prefix}: the array's trailing dimensions {a.shape[a.ndim - k:]} are not one "
                            f"contiguous {T.warp_type_name(dtype)}")
        if a.ndim == k:  # no 0-d arrays: a single element becomes a 1-element array
            return (1,), (dst_size,)
        return a.shape[:a.ndim - k], a.strides[:a.ndim - k]
    raise TypeError(f"{prefix}: source dtype has size {src_size} bytes, but target dtype has size {dst_size} bytes")


class array:
    """A typed array (Warp's `wp.array`). See the module docstring.

    Args:
        data: numpy array, sequence, or anything with `__array_interface__`; None with `shape` allocates zeros.
        dtype: element type (scalar, vector, matrix, quat, transform or struct); default from `data`.
        shape: shape when allocating, int or tuple of 1-4 ints.
        device: "cpu" (default device when None).
        requires_grad: allocate a zeroed gradient array of the same shape.
        copy: copy `data` (default); False wraps compatible numpy memory without a copy.
        ndim: number of dimensions in the annotation form `wp.array(dtype=float, ndim=2)`.
    """

    _foreign = False  # wraps memory we do not own (numpy, torch): never written by backward passes
    _alloc = None  # the cuda_memory.Allocation a CUDA array owns (views keep their owner alive instead)
    _device_memory = False  # `_buf` describes device memory (set before _init_from_buffer for foreign pointers)
    retain_grad = False  # backward keeps this array's gradient where a copy adjoint would consume it

    def __class_getitem__(cls, params):
        """`wp.array[float]`, `wp.array[wp.vec3, 2]` (or `typing.Literal[2]`): the annotation
        `wp.array(dtype=float, ndim=...)`."""
        if isinstance(params, tuple):
            dtype, ndim = params
            if typing.get_origin(ndim) is typing.Literal:
                (ndim,) = typing.get_args(ndim)
            return array(dtype=dtype, ndim=int(ndim))
        return array(dtype=params, ndim=1)

    def __init__(self, data=None, dtype=T.Any, shape=None, strides=None, ptr=None, capacity=None, device=None,
                 pinned=False, copy=True, deleter=None, ndim=None, grad=None, requires_grad=False,
                 retain_grad=False, _buf=None, _owner=None):
        dtype = T.Any if dtype is typing.Any else T.canonical_type(dtype)
        self._grad = None
        self._desc = None
        self._desc_consume = None
        self._requires_grad = False
        self._retain_grad = False
        self._owner = _owner
        self._ref = None
        self.deleter = None
        self.pinned = bool(pinned)
        if _buf is not None:
            self._init_from_buffer(_buf, dtype, device)
        elif data is None and ptr is not None and get_device(device).is_cuda:
            from .cuda_memory import device_layout
            sdt, inner = _element_info(dtype)
            full = _shape_arg(shape) + inner
            item = sdt.itemsize * int(np.prod(inner))
            st = _contiguous_strides(_shape_arg(shape), item) if strides is None else tuple(int(v) for v in strides)
            self._device_memory = True
            self._init_from_buffer(device_layout(int(ptr), sdt, full, st + _contiguous_strides(inner, sdt.itemsize)),
                                   dtype, device)
            self.deleter = deleter
            self._capacity = capacity
        elif data is None and ptr is not None:
            self._init_from_buffer(_wrap_pointer(ptr, dtype, _shape_arg(shape), strides), dtype, device)
            self.deleter = deleter
            self._capacity = capacity
        elif data is None and shape is None:
            # annotation form: a type in a kernel signature, no memory
            self.dtype = dtype
            self.ndim = ndim or 1
            self.shape = None
            self._buf = None
            self.device = None
            return
        elif data is None:
            shape = _shape_arg(shape)
            if dtype is T.Any:
                dtype = T.float32
            if get_device(device).is_cuda:
                self._init_device_zeros(shape, dtype, get_device(device))
            elif pinned and get_device(device).is_cpu and _pinned_available():
                self._init_from_buffer(_allocate_pinned(shape, dtype), dtype, device)
            else:
                self._init_from_buffer(_allocate(shape, dtype), dtype, device)
        else:
            self._init_from_data(data, dtype, copy, device)
            if shape is not None and _shape_arg(shape) != self.shape:
                self._reshape_data(_shape_arg(shape))
        if not 1 <= self.ndim <= 4:
            raise ValueError(f"arrays have 1 to 4 dimensions, got shape {self.shape}")
        if grad is not None:
            self.grad = grad
            self._requires_grad = True
        elif requires_grad:
            self.requires_grad = True
        if retain_grad:
            self.retain_grad = True

    def __del__(self):
        # `deleter(ptr, capacity)` frees memory handed over by pointer (Warp's `deleter=`); an array whose
        # construction never ran has nothing to free
        deleter = getattr(self, "deleter", None)
        if deleter is not None:
            self.deleter = None
            deleter(self._buf.ctypes.data, self.capacity)

    def _reshape_data(self, shape):
        inner = _element_info(self.dtype)[1]
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"data of shape {self.shape} does not fit the array shape {shape}")
        self._init_from_buffer(self._buf.reshape(shape + inner), self.dtype, self.device)

    def _init_from_data(self, data, dtype, copy, device):
        if not isinstance(data, array) and hasattr(data, "__cuda_array_interface__"):
            from .interop import from_cuda_array_interface
            data = from_cuda_array_interface(data, None if dtype is T.Any else dtype)
            if not copy and get_device(device if device is not None else data.device) == data.device:
                self._share(data)
                return
        if isinstance(data, array):
            if data.device.is_cuda and get_device(device if device is not None else data.device).is_cuda:
                self._init_device_copy(data, dtype, get_device(device if device is not None else data.device))
                return
            src = data.numpy()
            dtype = data.dtype if dtype is T.Any else dtype
        else:
            src = data
        if dtype is T.Any:
            dtype = _infer_dtype(src)
        sdt, inner = _element_info(dtype)
        if is_struct(dtype):
            if isinstance(src, (list, tuple)) and any(isinstance(v, dtype) for v in src):
                src = [v._to_numpy_record() if isinstance(v, dtype) else v for v in src]
            buf = np.array(src, dtype=sdt, copy=True) if copy else np.asarray(src)
            if buf.dtype != sdt:
                raise TypeError(f"struct array data must have dtype {sdt}, got {buf.dtype}")
            if not copy:
                self._ref = src
        else:
            a = np.asarray(src)
            if a.size == 0 and inner and a.shape[a.ndim - len(inner):] != inner:
                a = a.reshape(a.shape[:-1] + (0,) + inner) if a.ndim else a.reshape((0,) + inner)
            if a.dtype.fields is not None:
                raise TypeError(f"cannot make an array of {T.type_repr(dtype)} from structured data")
            if inner and a.shape[a.ndim - len(inner):] != inner:
                n = int(np.prod(inner))
                if a.ndim >= 1 and a.shape[-1] > 0 and a.shape[-1] % n == 0:
                    # as Warp: the last dimension holds whole elements, packed
                    count = a.shape[-1] // n
                    outer = a.shape[:-1] if count == 1 and a.ndim > 1 else a.shape[:-1] + (count,)
                    a = a.reshape(outer + inner)
                else:
                    raise ValueError(f"data of shape {a.shape} does not end in the shape {inner} of "
                                     f"{T.type_repr(dtype)}")
            if _is_bf16(dtype) and a.dtype != sdt:
                # numbers round to bfloat16; uint16 data is taken as bit patterns already (as Warp does)
                buf = np.ascontiguousarray(T.to_storage(T.bfloat16, a))
            elif copy or a.dtype != sdt:
                buf = np.array(a, dtype=sdt, copy=True, order="C")
            else:
                buf = a
                self._ref = src
            if buf.ndim == len(inner):  # a single element: make it a 1-element array
                buf = buf.reshape((1,) + inner)
        self._init_from_buffer(buf, dtype, device)

    def _init_from_buffer(self, buf, dtype, device):
        sdt, inner = _element_info(dtype)
        dev = get_device(device)
        if dev.is_cuda and not self._device_memory and \
                not (isinstance(self._owner, array) and self._owner.device is dev):
            buf = self._upload(buf, dev)  # host data for a CUDA array
        self.dtype = dtype
        self._buf = buf
        self.ndim = buf.ndim - len(inner)
        self.shape = tuple(buf.shape[: self.ndim])
        self.strides = tuple(buf.strides[: self.ndim])
        # components of one element must be packed, as the native element type expects
        expect = sdt.itemsize
        for dim, st in zip(reversed(inner), reversed(buf.strides[self.ndim:])):
            if st != expect and buf.size > 0:  # an empty array has no elements to lay out
                raise ValueError("array elements must be contiguous in memory")
            expect *= dim
        self.device = dev
        self._device_memory = dev.is_cuda  # `_buf` describes device memory (views included)

    # ------------------------------------------------------------------------------------------------ device memory

    def _upload(self, buf: np.ndarray, dev) -> np.ndarray:
        """Copy host buffer `buf` into new device memory owned by this array; returns its layout."""
        from . import cuda_memory
        host = np.ascontiguousarray(buf)
        self._alloc = cuda_memory.Allocation(dev.ordinal, host.nbytes)
        layout = cuda_memory.device_layout(self._alloc.ptr, host.dtype, host.shape)
        cuda_memory.write(layout, dev.ordinal, host)
        self._device_memory = True
        return layout

    def _init_device_zeros(self, shape: tuple, dtype, dev):
        """New zeroed device memory for `shape` elements of `dtype`."""
        from . import cuda_memory
        if any(s < 0 for s in shape):
            raise ValueError(f"Array shapes must be non-negative, got {shape}")
        sdt, inner = _element_info(dtype)
        full = shape + inner
        nbytes = int(np.prod(full)) * sdt.itemsize
        self._alloc = cuda_memory.Allocation(dev.ordinal, nbytes)
        layout = cuda_memory.device_layout(self._alloc.ptr, sdt, full)
        self._device_memory = True
        self._init_from_buffer(layout, dtype, dev)
        self.zero_()

    def _init_device_copy(self, src: "array", dtype, dev):
        """A copy of CUDA array `src` in new memory on `dev` (elements reinterpreted as `dtype` when given)."""
        from . import cuda_memory
        dtype = src.dtype if dtype is T.Any else dtype
        if _element_info(dtype)[0] != _element_info(src.dtype)[0]:
            raise TypeError(f"cannot copy an array of {T.type_repr(src.dtype)} into one of {T.type_repr(dtype)}")
        sdt, inner = _element_info(dtype)
        full = src.shape + inner
        self._alloc = cuda_memory.Allocation(dev.ordinal, int(np.prod(full)) * sdt.itemsize)
        layout = cuda_memory.device_layout(self._alloc.ptr, sdt, full)
        cuda_memory.copy(layout, dev.ordinal, src._buf, src.device.ordinal)
        self._device_memory = True
        self._init_from_buffer(layout, dtype, dev)

    def _share(self, other: "array"):
        """Become another handle on `other`'s memory (same layout, same device)."""
        self._device_memory = other.device.is_cuda
        self._owner = other
        self._init_from_buffer(other._buf, other.dtype, other.device)
        self._foreign = other._foreign

    @property
    def _ordinal(self) -> int:
        """The CUDA device ordinal of this array's memory, -1 on the CPU."""
        return self.device.ordinal if self.device.is_cuda else -1

    @property
    def is_cuda(self) -> bool:
        return self._device_memory

    # ------------------------------------------------------------------------------------------------ basics

    @property
    def size(self) -> int:
        return math.prod(self.shape) if self.shape is not None else 0

    @property
    def ptr(self) -> int | None:
        """Address of the first element; None for an array with no elements (as in Warp)."""
        return self._buf.ctypes.data if self._buf is not None and self.size > 0 else None

    @property
    def capacity(self) -> int:
        """Bytes spanned by the elements, from the first to the end of the last."""
        given = getattr(self, "_capacity", None)
        if given is not None:
            return int(given)
        if self._buf is None or self.size == 0:
            return 0
        itemsize = T.type_size_in_bytes(self.dtype)
        return sum((n - 1) * abs(st) for n, st in zip(self.shape, self.strides)) + itemsize

    @property
    def is_contiguous(self) -> bool:
        """Warp's definition: the strides are the dense row-major ones (a strided view of one element is not,
        although numpy calls it contiguous)."""
        if not self._buf.flags.c_contiguous:
            return False
        if self.size == 0:
            return True
        dense = T.type_size_in_bytes(self.dtype)
        for n, stride in zip(reversed(self.shape), reversed(self.strides)):
            if stride != dense:
                return False
            dense *= n
        return True

    @property
    def retain_grad(self) -> bool:
        """Keep this array's gradient during the backward pass instead of zeroing it after it is read."""
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value: bool):
        if value and not self.requires_grad:
            raise ValueError("retain_grad=True requires requires_grad=True")
        self._retain_grad = bool(value)

    def __bool__(self):
        return self._buf is not None

    @property
    def type(self) -> ArrayType:
        return ArrayType(self.dtype, self.ndim)

    def __len__(self):
        return self.shape[0]

    def numpy(self) -> np.ndarray:
        """The array's memory as a numpy array (no copy on the CPU; on a CUDA device a copy, made after the device's
        work so far is done); vectors add trailing dimensions."""
        if self._device_memory:
            from .cuda_memory import read
            return read(self._buf, self.device.ordinal)
        return self._buf

    def list(self) -> list:
        """The elements as a flat Python list: Python scalars, vector/matrix instances or struct instances."""
        buf = self.numpy()
        flat = buf.reshape((self.size,) + buf.shape[self.ndim:])
        if T.is_composite(self.dtype):
            rows = T.from_storage(T.scalar_type(self.dtype), flat)
            return [self.dtype(row) for row in rows]
        if is_struct(self.dtype):
            return [self.dtype._from_numpy_record(rec) for rec in flat]
        if self.dtype is T.bfloat16:
            return [T.bfloat16(v) for v in T.from_storage(T.bfloat16, flat).tolist()]
        return flat.tolist()

    def cptr(self):
        """The elements as a ctypes array of the native element type (CPU memory, no copy)."""
        if self.is_cuda:
            raise RuntimeError("cptr() gives CPU memory as a ctypes array; this array is on " + str(self.device))
        return (_element_ctype(self.dtype) * self.size).from_address(self._buf.ctypes.data)

    def __array__(self, dtype=None, copy=None):
        buf = self.numpy()
        return buf if dtype is None else buf.astype(dtype)

    @property
    def __array_interface__(self):
        if self.is_cuda:
            raise AttributeError("a CUDA array has no __array_interface__ (its memory is on the device): use "
                                 "__cuda_array_interface__, DLPack or .numpy()")
        # explicit strides: numpy omits them for arrays it deems contiguous, and a zero-size array's strides
        # (Warp's, not numpy's) would be lost
        iface = dict(self._buf.__array_interface__)
        iface["strides"] = self._buf.strides
        iface["data"] = (self._buf.ctypes.data, False)
        return iface

    def __dlpack__(self, stream=None, **kwargs):
        if _is_bf16(self.dtype):
            # numpy has no bfloat16: the capsule would say uint16, and a consumer would read bit patterns as numbers
            raise TypeError("bfloat16 arrays cannot be exported through DLPack (or to torch) here: their memory "
                            "would be typed uint16; convert to float32 in a kernel first")
        if self.is_cuda:
            from .dlpack import export_cuda
            return export_cuda(self, stream)
        return self._buf.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if self.is_cuda:
            return (2, self.device.ordinal)  # kDLCUDA
        return self._buf.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        """Numba's CUDA array interface (version 3) of a CUDA array: torch, CuPy and others share the memory."""
        if not self.is_cuda:
            raise AttributeError("a CPU array has no __cuda_array_interface__: use __array_interface__ or DLPack")
        from .stream import current_stream_handle
        return {"shape": tuple(self._buf.shape), "typestr": self._buf.dtype.str,
                "descr": self._buf.dtype.descr if self._buf.dtype.fields else [("", self._buf.dtype.str)],
                "data": (self.ptr or 0, False), "strides": tuple(self._buf.strides), "version": 3,
                "stream": int(current_stream_handle(self.device.ordinal)) or None}

    def __repr__(self):
        if self._buf is None:
            return f"array(dtype={T.type_repr(self.dtype)}, ndim={self.ndim})"
        return f"array({self.numpy()!r}, dtype={T.type_repr(self.dtype)}, device={self.device})"

    def __str__(self):
        return str(self.numpy()) if self._buf is not None else repr(self)

    # ------------------------------------------------------------------------------------------------ gradients

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None and tuple(value.shape) != self.shape:
            raise ValueError(f"gradient shape {value.shape} does not match the array's {self.shape}")
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        self._requires_grad = bool(value)
        if not value:
            self._retain_grad = False
        if value and self._grad is None and self._buf is not None:
            self._grad = zeros(self.shape, dtype=self.dtype, device=self.device)

    # ------------------------------------------------------------------------------------------------ read flags

    # wp.config.verify_autograd_array_access (Warp's): taped launches and copies mark the arrays they read; a later
    # write to a marked array reports that the gradient through the earlier read would use the new values.
    _is_read = False

    def _parents(self):
        """The arrays this one views, nearest first (slices, reshapes, dtype views)."""
        a = self
        while True:
            a = a._owner if isinstance(a._owner, array) else a._ref if isinstance(a._ref, array) else None
            if a is None:
                return
            yield a

    def mark_init(self):
        """Forget that this array was read (Warp's name)."""
        self._is_read = False

    def mark_read(self):
        """Mark this array, and the arrays it is a view of, as read by a launch recorded on a tape."""
        self._is_read = True
        for parent in self._parents():
            parent._is_read = True

    def mark_write(self, **where):
        """Report on stderr when this array, read earlier on a tape, is written. `where` names the writer:
        arg_name, kernel_name, filename, lineno (a launch) or operation, filename, lineno (a copy)."""
        if not self._is_read:
            return
        if {"arg_name", "kernel_name", "filename", "lineno"} <= where.keys():
            who = (f" passed to argument {where['arg_name']} in kernel {where['kernel_name']} at "
                   f"{where['filename']}:{where['lineno']} is being written to")
        elif {"operation", "filename", "lineno"} <= where.keys():
            who = f" is being written to by {where['operation']} at {where['filename']}:{where['lineno']}"
        else:
            who = " is being written to"
        print(f"Warp Warning: Array {self}{who} but has already been read from in a previous launch. This may "
              f"corrupt gradient computation in the backward pass.", file=sys.stderr)

    # ------------------------------------------------------------------------------------------------ filling

    # Inside a capture on this array's device (capture.py), these record their work for replay instead of running.

    def zero_(self):
        if host_write_hooks:
            host_write_hooks[-1](self, "zero_()")
        rec = _capture.recorder(self.device)
        if rec is not None:
            rec.zero(self)
        elif self.is_cuda:
            from .cuda_memory import fill
            fill(self._buf, self.device.ordinal, np.zeros((), dtype=np.uint8))
        elif self._buf.dtype.fields is None:
            self._buf.fill(0)
        else:
            self._buf[...] = 0
        return self

    def fill_(self, value):
        """Set every element to `value`: an element, or a scalar that fills every component of one."""
        if host_write_hooks:
            host_write_hooks[-1](self, "fill_()")
        element = _fill_element(self.dtype, self._buf.dtype, value)
        rec = _capture.recorder(self.device)
        if rec is not None:
            rec.fill(self, element)
        elif self.is_cuda:
            from .cuda_memory import fill
            fill(self._buf, self.device.ordinal, element)
        else:
            self._buf[...] = element
        return self

    def assign(self, src):
        """Copy `src` (an array, numpy array or sequence of the same shape) into this array."""
        rec = _capture.recorder(self.device)
        if isinstance(src, array) and (self.is_cuda or src.is_cuda):
            if src.shape != self.shape:
                raise ValueError(f"assign: source shape {src.shape} does not match the array's {self.shape}")
            from . import cuda_memory
            cuda_memory.copy(self._buf, self._ordinal, src._buf, src._ordinal)
            if copy_hooks:
                copy_hooks[-1](self, src, 0, 0, self.size)
            return self
        if isinstance(src, array):
            if rec is not None:
                rec.copy(self._buf, src.numpy().reshape(self._buf.shape) if src.is_contiguous else src.numpy(),
                         (self, src))
            else:
                self._buf[...] = np.asarray(src.numpy(), dtype=self._buf.dtype).reshape(self._buf.shape)
            if copy_hooks:
                copy_hooks[-1](self, src, 0, 0, self.size)
            return self
        else:
            if host_write_hooks:
                host_write_hooks[-1](self, "assign() of host data")
            data = np.asarray(src)
        if _is_bf16(self.dtype) and data.dtype != self._buf.dtype:
            data = T.to_storage(T.bfloat16, data)
        data = np.asarray(data, dtype=self._buf.dtype).reshape(self._buf.shape)
        if self.is_cuda:
            from .cuda_memory import write
            write(self._buf, self.device.ordinal, data)
            return self
        if rec is not None:
            rec.copy(self._buf, data.copy(), (self,))  # host data: taken now, written at each replay
        else:
            self._buf[...] = data
        return self

    # ------------------------------------------------------------------------------------------------ views

    def __getitem__(self, key):
        """Slicing gives a view; an integer index on a 1-d array gives the element (as a numpy value)."""
        key = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, array) for k in key):
            # Warp's indexedarray (a view through index arrays) is not implemented; numpy's fancy indexing would
            # give a copy with other semantics
            raise TypeError("indexing an array with index arrays (Warp's indexedarray) is not supported")
        if len(key) > self.ndim:
            raise IndexError(f"{len(key)} indices for a {self.ndim}-d array")
        for k in key:
            if not isinstance(k, (int, np.integer, slice)):
                # Warp answers an index array with an indexed array (rows x columns), numpy with a gather:
                # neither is offered here, so refuse rather than give numpy's differently shaped result
                raise TypeError(f"arrays are indexed with ints and slices; an index of type {type(k).__name__} "
                                "would make an indexed array (wp.indexedarray), which kernels does not support")
        if self.is_cuda:
            from .cuda_memory import index
            view = index(self._buf, key)
        else:
            view = self._buf[key]
        inner = _element_info(self.dtype)[1]
        if view.ndim == len(inner):
            if self.is_cuda:
                from .cuda_memory import read
                value = read(view, self.device.ordinal)
                return value if inner else value[()]
            return view.copy() if inner else view[()]
        out = array(dtype=self.dtype, _buf=view, device=self.device, _owner=self)
        if self._grad is not None:
            out._grad = self._grad[key]
            out._requires_grad = self._requires_grad
        return out

    def __setitem__(self, key, value):
        if host_write_hooks:  # not a recorded copy, whatever the value: wp.copy or assign() are
            host_write_hooks[-1](self, "an item assignment (a[...] = value)")
        if self.is_cuda:
            from .cuda_memory import copy, index, write
            key = key if isinstance(key, tuple) else (key,)
            view = index(self._buf, key)
            if isinstance(value, array):
                copy(view, self._ordinal, value._buf, value._ordinal)
            else:
                write(view, self.device.ordinal, value)
            return
        rec = _capture.recorder(self.device)
        if rec is not None:
            buf = self._buf
            src = value.numpy() if isinstance(value, array) else np.array(value, dtype=buf.dtype)
            rec.host(lambda: buf.__setitem__(key, src))
            return
        self._buf[key] = value.numpy() if isinstance(value, array) else value

    def reshape(self, shape):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not self.is_contiguous:
            raise ValueError("reshape needs a contiguous array")
        inner = _element_info(self.dtype)[1]
        known = int(np.prod([d for d in shape if d != -1]))
        if list(shape).count(-1) == 1 and known > 0 and self.size % known == 0:
            shape = tuple(self.size // known if d == -1 else d for d in shape)
        if any(d < 0 for d in shape) or int(np.prod(shape)) != self.size:
            raise RuntimeError(f"cannot reshape array of shape {self.shape} (size {self.size}) into shape {shape} "
                               f"(size {int(np.prod(shape))})")
        out = array(dtype=self.dtype, _buf=self._buf.reshape(shape + inner), device=self.device, _owner=self)
        if self._grad is not None:
            out._grad = self._grad.reshape(shape)
        out._requires_grad = self._requires_grad  # a view of a differentiable array is differentiable
        return out

    def transpose(self, axes=None):
        """A view with the dimensions permuted (reversed by default); gradients are permuted alike."""
        axes = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} are not a permutation of the array's {self.ndim} dimensions")
        inner = tuple(range(self.ndim, self._buf.ndim))
        out = array(dtype=self.dtype, _buf=self._buf.transpose(axes + inner), device=self.device, _owner=self)
        if self._grad is not None:
            out._grad = self._grad.transpose(axes)
            out._requires_grad = self._requires_grad
        return out

    def view(self, dtype):
        """The same memory seen with element type `dtype` (Warp's `array.view`): same-size types keep the shape;
        a vector/matrix seen as its scalar adds its dimensions; a scalar array seen as vectors/matrices folds its
        trailing dimensions into elements."""
        dtype = T.canonical_type(dtype)
        shape, strides = _view_layout(self, dtype)
        if self.is_cuda:
            from .cuda_memory import device_layout
            sdt, inner = _element_info(dtype)
            layout = device_layout(self._buf.ctypes.data, sdt, tuple(shape) + inner,
                                   tuple(strides) + _contiguous_strides(inner, sdt.itemsize))
        else:
            layout = _wrap_pointer(self._buf.ctypes.data, dtype, shape, strides)
        out = array(dtype=dtype, _buf=layout, device=self.device, _owner=self)
        out._ref = self
        return out

    def flatten(self):
        return self.reshape((self.size,))

    def contiguous(self):
        return self if self.is_contiguous else clone(self)

    def to(self, device):
        dev = get_device(device)
        return self if dev == self.device else array(self, device=dev)

    # ------------------------------------------------------------------------------------------------ launch

    def __ctype__(self) -> ArrayDescriptor:
        """The native argument form of this array (Warp's `array.__ctype__`)."""
        return self._descriptor()

    def _descriptor(self) -> ArrayDescriptor:
        d = self._desc
        if d is None:
            d = ArrayDescriptor()
            d.data = self._buf.ctypes.data if self.size else 0
            for k in range(self.ndim):
                d.shape[k] = self.shape[k]
                d.strides[k] = self.strides[k]
            d.ndim = self.ndim
            self._desc = d
        return d

    def _consuming_descriptor(self) -> ArrayDescriptor:
        """This (gradient) array's descriptor with the consume flag (see launch.ARRAY_FLAG_CONSUME): a copy of
        the cached descriptor, itself cached."""
        d = self._desc_consume
        if d is None:
            d = self._desc_consume = ArrayDescriptor.from_buffer_copy(self._descriptor())
            d.flags = ARRAY_FLAG_CONSUME
        return d



def _creation_shape(shape, kwargs) -> tuple:
    """The shape argument of the creation functions; `n=` is Warp's older spelling of a 1-d shape."""
    if "n" in kwargs:
        shape = (kwargs.pop("n"),)
    if kwargs:
        raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")
    return _shape_arg(shape)


def empty(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False,
          **kwargs) -> array:
    """An array of `shape`; zero-filled anyway (cheap on the CPU, and results are reproducible)."""
    a = array(shape=_creation_shape(shape, kwargs), dtype=dtype, device=device, requires_grad=requires_grad,
              pinned=pinned, retain_grad=retain_grad)
    rec = _capture.recorder(a.device)
    if rec is not None:  # as a CUDA graph would: the new memory is zeroed again at each replay
        rec.zero(a)
    return a


def zeros(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False,
          **kwargs) -> array:
    return empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kwargs)


def _full_dtype(value):
    """Element type Warp infers for `wp.full(shape, value)` without a dtype."""
    if isinstance(value, bool):
        return T.bool_
    if isinstance(value, int):
        return T.int32
    if isinstance(value, float):
        return T.float32
    if isinstance(value, np.generic):
        return T.canonical_type(type(value))
    if T.is_composite(type(value)) or is_struct(type(value)):
        return type(value)
    if hasattr(value, "__len__"):
        na = np.asarray(value)
        scalar = _infer_dtype(na)
        if na.ndim == 1:
            return T.vector(na.size, scalar)
        if na.ndim == 2:
            return T.matrix(na.shape, scalar)
        raise ValueError("fill values with more than two dimensions are not supported")
    raise ValueError(f"cannot infer an array type for a fill value of type {type(value).__name__}")


def full(shape=None, value=0, dtype=None, device=None, requires_grad=False, pinned=False, retain_grad=False,
         **kwargs) -> array:
    """An array of `shape` with every element `value` (a scalar fills every component of a vector/matrix)."""
    if dtype is None:
        dtype = _full_dtype(value)
    a = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kwargs)
    return a.fill_(value)


def ones(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, retain_grad=False,
         **kwargs) -> array:
    a = empty(shape, dtype, device, requires_grad, pinned, retain_grad, **kwargs)
    one = _fill_element(a.dtype, a._buf.dtype, 1) if _is_bf16(a.dtype) else 1  # bfloat16 1.0 is 0x3f80
    rec = _capture.recorder(a.device)
    if a.is_cuda:
        from .cuda_memory import fill
        fill(a._buf, a.device.ordinal, np.ones(_element_info(a.dtype)[1], dtype=a._buf.dtype) * one)
    elif rec is not None:
        rec.fill(a, np.ones(_element_info(a.dtype)[1], dtype=a._buf.dtype) * one)
    else:
        a._buf[...] = one
    return a


def _like_requires_grad(src, requires_grad):
    return src.requires_grad if requires_grad is None else requires_grad


def zeros_like(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    return zeros(src.shape, src.dtype, device or src.device, _like_requires_grad(src, requires_grad),
                 retain_grad=retain_grad)


def empty_like(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    return zeros_like(src, device, requires_grad, pinned, retain_grad)


def ones_like(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    return ones(src.shape, src.dtype, device or src.device, _like_requires_grad(src, requires_grad),
                retain_grad=retain_grad)


# Set by autodiff.Tape while recording: callables(dest, src, dest_offset, src_offset, count) told of every copy
# between toolkit arrays (wp.copy, wp.clone, array.assign), so that backward can route gradients through it.
copy_hooks: list = []

# Set by autodiff.Tape while recording: callables(array, operation) told of every write from the host (zero_,
# fill_, assign of host data, item assignment) before it happens; the Tape refuses one into memory that a recorded
# launch or copy wrote, whose gradient would then go wrong.
host_write_hooks: list = []


def full_like(src: array, value, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    return full(src.shape, value, src.dtype, device or src.device, _like_requires_grad(src, requires_grad),
                retain_grad=retain_grad)


def clone(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    rg = src.requires_grad if requires_grad is None else requires_grad
    out = array(src, dtype=src.dtype, device=device or src.device, copy=True)
    out.requires_grad = rg
    out.retain_grad = retain_grad
    rec = _capture.recorder(out.device)
    if rec is not None:
        rec.copy(out.numpy(), src.numpy(), (out, src))
    if copy_hooks:
        copy_hooks[-1](out, src, 0, 0, src.size)
    return out


def _check_copy_args(dest: array, src: array, dest_offset, src_offset, count):
    for name, v in (("Source offset", src_offset), ("Destination offset", dest_offset), ("count", count)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise RuntimeError(f"wp.copy: offsets and count must be integers, got {name} {v!r}")
        if v < 0:
            raise RuntimeError(f"wp.copy: {name} must be non-negative, got {v}")
    if _element_info(dest.dtype) != _element_info(src.dtype):
        raise RuntimeError(f"wp.copy: incompatible array types: destination dtype={T.type_repr(dest.dtype)}, "
                           f"source dtype={T.type_repr(src.dtype)}")


def copy_window(a: array, offset: int, count: int, whole: bool) -> np.ndarray:
    """The numpy view of `a`'s memory that a copy of `count` elements at element `offset` touches: the flattened
    elements of a contiguous array, the elements of a 1-d view, or (`whole`) every element of any array. For a
    CUDA array, the view's layout (cuda_memory.device_layout)."""
    buf = a._buf
    if whole:
        return buf
    inner = buf.shape[a.ndim:]
    if a.is_contiguous:
        return buf.reshape((a.size,) + inner)[offset:offset + count]
    return buf[offset:offset + count]


def copy_plan(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0):
    """Check the arguments of a copy; returns (count, whole): the number of elements copied, and whether the copy
    covers every element of two same-shaped arrays (the only copy that a multi-dimensional strided view allows)."""
    _check_copy_args(dest, src, dest_offset, src_offset, count)
    flat = (dest.is_contiguous or dest.ndim == 1) and (src.is_contiguous or src.ndim == 1)
    if not flat:
        if dest_offset or src_offset or count not in (0, src.size) or dest.shape != src.shape:
            if dest_offset or src_offset or count:
                raise RuntimeError("wp.copy with offsets or a count is only supported for 1-D or contiguous arrays")
            raise RuntimeError(f"wp.copy: incompatible array shapes: destination shape={dest.shape}, "
                               f"source shape={src.shape}")
        return src.size, True
    n = count or min(src.size - src_offset, dest.size - dest_offset)
    if src_offset + n > src.size:
        raise RuntimeError(f"wp.copy: {n} elements from offset {src_offset} exceeds the source size {src.size}")
    if dest_offset + n > dest.size:
        raise RuntimeError(f"wp.copy: {n} elements at offset {dest_offset} exceeds the destination size "
                           f"{dest.size}")
    return max(n, 0), False


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0, stream=None):
    """Copy `count` elements (0: as many as fit) of `src` from element `src_offset` into `dest` at `dest_offset`.
    Offsets count flattened elements of contiguous arrays, or elements of 1-d views; other strided views are
    copied whole (same shapes, no offsets)."""
    n, whole = copy_plan(dest, src, dest_offset, src_offset, count)
    d = copy_window(dest, dest_offset, n, whole)
    s = copy_window(src, src_offset, n, whole)
    rec = _capture.recorder(dest.device)
    if dest.is_cuda or src.is_cuda:
        from . import cuda_memory
        cuda_memory.copy(d, dest._ordinal, s, src._ordinal)
    elif rec is None:
        d[...] = s
    else:
        rec.copy(d, s, (dest, src))
    if copy_hooks:
        copy_hooks[-1](dest, src, dest_offset, src_offset, n)


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False, retain_grad=False) -> array:
    a = array(arr, dtype=dtype if dtype is not None else T.Any, device=device, requires_grad=requires_grad,
              retain_grad=retain_grad)
    return a.reshape(shape) if shape is not None else a


class _FixedDimArray(array):
    """`wp.array1d` ... `wp.array4d`: arrays (and annotations) with a fixed number of dimensions."""

    _fixed_ndim_ = 1

    def __init__(self, data=None, dtype=T.Any, shape=None, *args, **kwargs):
        kwargs.setdefault("ndim", self._fixed_ndim_)
        super().__init__(data, dtype, shape, *args, **kwargs)

    def __class_getitem__(cls, dtype):
        return array(dtype=dtype, ndim=cls._fixed_ndim_)


class array1d(_FixedDimArray):
    _fixed_ndim_ = 1


class array2d(_FixedDimArray):
    _fixed_ndim_ = 2


class array3d(_FixedDimArray):
    _fixed_ndim_ = 3


class array4d(_FixedDimArray):
    _fixed_ndim_ = 4


def as_array(obj, expected: ArrayType | None = None):
    """Wrap a foreign array (numpy, anything with `__array_interface__` or DLPack) without copying when the layout
    allows. The result is marked foreign: backward passes never write gradients into it."""
    if isinstance(obj, array):
        return obj
    if hasattr(obj, "__cuda_array_interface__"):
        from .interop import from_cuda_array_interface
        out = from_cuda_array_interface(obj, expected.dtype if expected is not None and expected.dtype is not T.Any
                                        else None)
        out._foreign = True
        return out
    if hasattr(obj, "__array_interface__") or isinstance(obj, np.ndarray):
        a = np.asarray(obj)
    elif hasattr(obj, "__dlpack__"):
        a = np.from_dlpack(obj)
    else:
        raise TypeError(f"expected an array, got {type(obj).__name__}")
    dtype = expected.dtype if expected is not None and expected.dtype is not T.Any else _infer_dtype(a)
    want = _element_info(dtype)[0]
    if a.dtype != want:
        # converting would make a copy, and the kernel's writes would be lost with it
        raise TypeError(f"its elements are {a.dtype}, expected {want}: convert it first")
    out = array(a, dtype=dtype, copy=False)
    out._foreign = True
    return out
