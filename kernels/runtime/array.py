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

import math
import sys
import typing

import numpy as np

from . import recording as _capture
from .. import types as T
from .array_copy import copy_hooks, host_write_hooks, index_view
from .array_layout import (ARRAY_FLAG_CONSUME, ARRAY_FLAG_OWN_GRAD, ArrayDescriptor, allocate, allocate_pinned, contiguous_strides,
                           element_ctype, element_info, fill_element, infer_dtype, is_bf16, pinned_available,
                           shape_arg, view_layout, wrap_pointer, check_array_shape)
from .device import get_device
from .foreign_memory import cuda_interface_args
from ..typesys import ArrayType, ArrayValue, is_struct
from . import cuda_memory
from . import memory_tracker
from .cuda_memory import copy, device_layout, fill, index, read, write
from .device import current_stream_handle
from .dlpack import export_cuda


class array(ArrayValue):
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
        `wp.array(dtype=float, ndim=...)`, equal to another subscript annotation of the same type (Warp's)."""
        if isinstance(params, tuple):
            dtype, ndim = params
            if typing.get_origin(ndim) is typing.Literal:
                (ndim,) = typing.get_args(ndim)
            return SubscriptAnnotation(dtype=dtype, ndim=int(ndim))
        return SubscriptAnnotation(dtype=params, ndim=1)

    def __init__(self, data=None, dtype=T.Any, shape=None, strides=None, ptr=None, capacity=None, device=None,
                 pinned=False, copy=True, deleter=None, ndim=None, grad=None, requires_grad=False,
                 retain_grad=False, _buf=None, _owner=None):
        dtype = T.Any if dtype is typing.Any else T.canonical_type(dtype)
        self._grad = None
        self._desc = None
        self._desc_consume = None  # _own_grad_descriptor's two cached copies
        self._desc_retain = None
        self._requires_grad = False
        self._retain_grad = False
        self._owner = _owner
        self._ref = None
        self.deleter = None
        self.pinned = bool(pinned)
        if _buf is not None:
            self._init_from_buffer(_buf, dtype, device)
        elif data is None and ptr is not None and get_device(device).is_cuda:
            sdt, inner = element_info(dtype)
            full = shape_arg(shape) + inner
            item = sdt.itemsize * int(np.prod(inner))
            st = contiguous_strides(shape_arg(shape), item) if strides is None else tuple(int(v) for v in strides)
            self._device_memory = True
            self._init_from_buffer(device_layout(int(ptr), sdt, full, st + contiguous_strides(inner, sdt.itemsize)),
                                   dtype, device)
            self.deleter = deleter
            self._capacity = capacity
        elif data is None and ptr is not None:
            self._init_from_buffer(wrap_pointer(ptr, dtype, shape_arg(shape), strides), dtype, device)
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
            shape = shape_arg(shape)
            check_array_shape(shape)
            if dtype is T.Any:
                dtype = T.float32
            if get_device(device).is_cuda:
                self._init_device_zeros(shape, dtype, get_device(device))
            elif pinned and get_device(device).is_cpu and pinned_available():
                self._init_from_buffer(allocate_pinned(shape, dtype), dtype, device)
            else:
                self._init_from_buffer(allocate(shape, dtype), dtype, device)
        else:
            # before any copy: a numpy view (a broadcast) may be far larger than its memory
            check_array_shape(getattr(data, "shape", None) or ())
            self._init_from_data(data, dtype, copy, device)
            if shape is not None and shape_arg(shape) != self.shape:
                self._reshape_data(shape_arg(shape))
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
        inner = element_info(self.dtype)[1]
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"data of shape {self.shape} does not fit the array shape {shape}")
        self._init_from_buffer(self._buf.reshape(shape + inner), self.dtype, self.device)

    def _init_from_data(self, data, dtype, copy, device):
        if not isinstance(data, array) and hasattr(data, "__cuda_array_interface__"):
            owner = data
            data = array(**cuda_interface_args(owner, None if dtype is T.Any else dtype))
            data._foreign_owner = owner  # the producer owns the memory
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
            dtype = infer_dtype(src)
        sdt, inner = element_info(dtype)
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
            if is_bf16(dtype) and a.dtype != sdt:
                # numbers round to bfloat16; uint16 data is taken as bit patterns already (as Warp does)
                buf = np.ascontiguousarray(T.to_storage(T.bfloat16, a))
            elif copy or a.dtype != sdt:
                buf = np.array(a, dtype=sdt, copy=True, order="C")
            else:
                buf = a
                self._ref = src
            if buf.ndim == len(inner):  # a single element: make it a 1-element array
                buf = buf.reshape((1,) + inner)
        if memory_tracker.is_enabled() and get_device(device).is_cpu:
            memory_tracker.note_copy(buf, src)
        self._init_from_buffer(buf, dtype, device)

    def _init_from_buffer(self, buf, dtype, device):
        sdt, inner = element_info(dtype)
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
        host = np.ascontiguousarray(buf)
        self._alloc = cuda_memory.Allocation(dev.ordinal, host.nbytes)
        layout = cuda_memory.device_layout(self._alloc.ptr, host.dtype, host.shape)
        cuda_memory.write(layout, dev.ordinal, host)
        self._device_memory = True
        return layout

    def _init_device_zeros(self, shape: tuple, dtype, dev):
        """New zeroed device memory for `shape` elements of `dtype`."""
        if any(s < 0 for s in shape):
            raise ValueError(f"Array shapes must be non-negative, got {shape}")
        sdt, inner = element_info(dtype)
        full = shape + inner
        nbytes = int(np.prod(full)) * sdt.itemsize
        self._alloc = cuda_memory.Allocation(dev.ordinal, nbytes)
        layout = cuda_memory.device_layout(self._alloc.ptr, sdt, full)
        self._device_memory = True
        self._init_from_buffer(layout, dtype, dev)
        self.zero_()

    def _init_device_copy(self, src: "array", dtype, dev):
        """A copy of CUDA array `src` in new memory on `dev` (elements reinterpreted as `dtype` when given)."""
        dtype = src.dtype if dtype is T.Any else dtype
        if element_info(dtype)[0] != element_info(src.dtype)[0]:
            raise TypeError(f"cannot copy an array of {T.type_repr(src.dtype)} into one of {T.type_repr(dtype)}")
        sdt, inner = element_info(dtype)
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
        return (element_ctype(self.dtype) * self.size).from_address(self._buf.ctypes.data)

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
        if is_bf16(self.dtype):
            # numpy has no bfloat16: the capsule would say uint16, and a consumer would read bit patterns as numbers
            raise TypeError("bfloat16 arrays cannot be exported through DLPack (or to torch) here: their memory "
                            "would be typed uint16; convert to float32 in a kernel first")
        if self.is_cuda:
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
        element = fill_element(self.dtype, self._buf.dtype, value)
        rec = _capture.recorder(self.device)
        if rec is not None:
            rec.fill(self, element)
        elif self.is_cuda:
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
        if is_bf16(self.dtype) and data.dtype != self._buf.dtype:
            data = T.to_storage(T.bfloat16, data)
        data = np.asarray(data, dtype=self._buf.dtype).reshape(self._buf.shape)
        if self.is_cuda:
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
            # Warp's rule: index arrays make an indexed array (no copy), not numpy's gather
            if len(key) > self.ndim:
                raise IndexError(f"{len(key)} indices for a {self.ndim}-d array")
            return index_view[-1](self, key)
        if len(key) > self.ndim:
            raise IndexError(f"{len(key)} indices for a {self.ndim}-d array")
        for k in key:
            if not isinstance(k, (int, np.integer, slice)):
                # Warp answers an index array with an indexed array (rows x columns), numpy with a gather:
                # neither is offered here, so refuse rather than give numpy's differently shaped result
                raise TypeError(f"arrays are indexed with ints, slices and int32 index arrays (wp.array), got an "
                                f"index of type {type(k).__name__}")
        if self.is_cuda:
            view = index(self._buf, key)
        else:
            view = self._buf[key]
        inner = element_info(self.dtype)[1]
        if view.ndim == len(inner):
            if self.is_cuda:
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
        inner = element_info(self.dtype)[1]
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
        shape, strides = view_layout(self, dtype)
        if self.is_cuda:
            sdt, inner = element_info(dtype)
            layout = device_layout(self._buf.ctypes.data, sdt, tuple(shape) + inner,
                                   tuple(strides) + contiguous_strides(inner, sdt.itemsize))
        else:
            layout = wrap_pointer(self._buf.ctypes.data, dtype, shape, strides)
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

    def _own_grad_descriptor(self, retain: bool) -> ArrayDescriptor:
        """This (gradient) array's descriptor as its primal array's own gradient (native/array.h's
        ARRAY_FLAG_OWN_GRAD), consumed by plain writes unless the primal array has `retain` (ARRAY_FLAG_CONSUME): a
        copy of the cached descriptor, itself cached."""
        d = self._desc_retain if retain else self._desc_consume
        if d is None:
            d = ArrayDescriptor.from_buffer_copy(self._descriptor())
            d.flags = ARRAY_FLAG_OWN_GRAD | (0 if retain else ARRAY_FLAG_CONSUME)
            if retain:
                self._desc_retain = d
            else:
                self._desc_consume = d
        return d


def _creation_shape(shape, kwargs) -> tuple:
    """The shape argument of the creation functions; `n=` is Warp's older spelling of a 1-d shape."""
    if "n" in kwargs:
        shape = (kwargs.pop("n"),)
    if kwargs:
        raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")
    return shape_arg(shape)


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


def clone(src: array, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    rg = src.requires_grad if requires_grad is None else requires_grad
    if getattr(src, "_wp_indexed_", False) or getattr(src, "_wp_fabric_", False):  # a contiguous copy of the selected elements, as in Warp
        src = src.contiguous()
    out = array(src, dtype=src.dtype, device=device or src.device, copy=True)
    out.requires_grad = rg
    out.retain_grad = retain_grad
    rec = _capture.recorder(out.device)
    if rec is not None:
        rec.copy(out.numpy(), src.numpy(), (out, src))
    if copy_hooks:
        copy_hooks[-1](out, src, 0, 0, src.size)
    return out


class SubscriptAnnotation(array):
    """`wp.array[dtype]` and `wp.arrayNd[dtype]`: the annotation form of an array (no memory), which compares and
    hashes by element type and number of dimensions, as Warp's subscript annotations do: `wp.array[float] ==
    wp.array[wp.float32]`, usable as a dictionary key. (The factory form `wp.array(dtype=float)` is compared by
    identity, as in Warp.)"""

    def __eq__(self, other):
        return type(other) is SubscriptAnnotation and (self.dtype, self.ndim) == (other.dtype, other.ndim)

    def __hash__(self):
        return hash((SubscriptAnnotation, self.dtype, self.ndim))
