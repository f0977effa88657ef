"""Arrays: typed, strided views of device memory with 1-4 dimensions and an optional gradient array.

On the CPU an array wraps a numpy buffer (`_buf`) whose trailing dimensions are the components of the element type
(a vec3 array of shape (n,) has a buffer of shape (n, 3)); `.numpy()` returns that buffer without a copy. Strides
are in bytes, so slices and columns of larger arrays are arrays too and kernels launch over them directly.
`wp.array(dtype=..., ndim=...)` with no data is the annotation form used in kernel signatures.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import capture as _capture
from . import types as T
from .device import get_device
from .typesys import ArrayType, is_struct


class ArrayDescriptor(ctypes.Structure):
    """Argument layout of `wp::array_t<T>` (native/array.h): keep in sync."""

    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int32 * 4), ("strides", ctypes.c_int64 * 4),
                ("ndim", ctypes.c_int32), ("pad", ctypes.c_int32)]


def _element_info(dtype):
    """(numpy scalar dtype, trailing component shape) of an element type."""
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

    def __class_getitem__(cls, params):
        """`wp.array[float]`, `wp.array[wp.vec3, 2]`: the annotation `wp.array(dtype=float, ndim=...)`."""
        if isinstance(params, tuple):
            dtype, ndim = params
            return array(dtype=dtype, ndim=int(ndim))
        return array(dtype=params, ndim=1)

    def __init__(self, data=None, dtype=T.Any, shape=None, strides=None, device=None, requires_grad=False,
                 copy=True, ndim=None, _buf=None, _owner=None):
        dtype = T.canonical_type(dtype)
        self._grad = None
        self._desc = None
        self.requires_grad = False
        self._owner = _owner
        if _buf is not None:
            self._init_from_buffer(_buf, dtype, device)
        elif data is None and shape is None:
            # annotation form: a type in a kernel signature, no memory
            self.dtype = dtype
            self.ndim = ndim or 1
            self.shape = None
            self._buf = None
            self.device = None
            return
        elif data is None:
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
            if dtype is T.Any:
                dtype = T.float32
            sdt, inner = _element_info(dtype)
            buf = np.zeros(shape + inner, dtype=sdt)
            self._init_from_buffer(buf, dtype, device)
        else:
            self._init_from_data(data, dtype, copy, device)
        if not 1 <= self.ndim <= 4:
            raise ValueError(f"arrays have 1 to 4 dimensions, got shape {self.shape}")
        if requires_grad:
            self.requires_grad = True

    def _init_from_data(self, data, dtype, copy, device):
        if isinstance(data, array):
            src = data.numpy()
            dtype = data.dtype if dtype is T.Any else dtype
        else:
            src = data
        if dtype is T.Any:
            dtype = _infer_dtype(src)
        sdt, inner = _element_info(dtype)
        if is_struct(dtype):
            buf = np.array(src, dtype=sdt, copy=True) if copy else np.asarray(src)
            if buf.dtype != sdt:
                raise TypeError(f"struct array data must have dtype {sdt}, got {buf.dtype}")
        else:
            a = np.asarray(src)
            if a.dtype.fields is not None:
                raise TypeError(f"cannot make an array of {T.type_repr(dtype)} from structured data")
            if inner and a.shape[a.ndim - len(inner):] != inner:
                if a.ndim >= 1 and a.shape[-1] == int(np.prod(inner)) and len(inner) == 2:
                    a = a.reshape(a.shape[:-1] + inner)
                else:
                    raise ValueError(f"data of shape {a.shape} does not end in the shape {inner} of "
                                     f"{T.type_repr(dtype)}")
            if copy or a.dtype != sdt:
                buf = np.array(a, dtype=sdt, copy=True, order="C")
            else:
                buf = a
            if buf.ndim == len(inner):  # a single element: make it a 1-element array
                buf = buf.reshape((1,) + inner)
        self._init_from_buffer(buf, dtype, device)

    def _init_from_buffer(self, buf, dtype, device):
        sdt, inner = _element_info(dtype)
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
        dev = get_device(device)
        if not dev.is_cpu:
            raise NotImplementedError(f"device {dev} is not available: the CUDA backend is not built yet")
        self.device = dev

    # ------------------------------------------------------------------------------------------------ basics

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape is not None else 0

    @property
    def ptr(self) -> int:
        return self._buf.ctypes.data if self._buf is not None else 0

    @property
    def is_contiguous(self) -> bool:
        return self._buf.flags.c_contiguous

    @property
    def type(self) -> ArrayType:
        return ArrayType(self.dtype, self.ndim)

    def __len__(self):
        return self.shape[0]

    def numpy(self) -> np.ndarray:
        """The array's memory as a numpy array (no copy on the CPU); vectors add trailing dimensions."""
        return self._buf

    def list(self) -> list:
        return self._buf.tolist()

    def __array__(self, dtype=None, copy=None):
        return self._buf if dtype is None else self._buf.astype(dtype)

    @property
    def __array_interface__(self):
        return self._buf.__array_interface__

    def __dlpack__(self, stream=None, **kwargs):
        return self._buf.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._buf.__dlpack_device__()

    def __repr__(self):
        if self._buf is None:
            return f"array(dtype={T.type_repr(self.dtype)}, ndim={self.ndim})"
        return f"array({self._buf!r}, dtype={T.type_repr(self.dtype)}, device={self.device})"

    def __str__(self):
        return str(self._buf) if self._buf is not None else repr(self)

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
        if value and self._grad is None and self._buf is not None:
            self._grad = zeros(self.shape, dtype=self.dtype, device=self.device)

    # ------------------------------------------------------------------------------------------------ filling

    # Inside a capture on this array's device (capture.py), these record their work for replay instead of running.

    def zero_(self):
        rec = _capture.recorder(self.device)
        if rec is not None:
            rec.zero(self)
        else:
            self._buf[...] = 0
        return self

    def fill_(self, value):
        if T.is_composite(self.dtype):
            element = np.asarray(value, dtype=self._buf.dtype).reshape(self.dtype._shape_)
        elif is_struct(self.dtype):
            element = value._to_numpy_record()
        else:
            element = np.asarray(value, dtype=self._buf.dtype)
        rec = _capture.recorder(self.device)
        if rec is not None:
            rec.fill(self, element)
        else:
            self._buf[...] = element
        return self

    def assign(self, src):
        """Copy `src` (an array, numpy array or sequence of the same shape) into this array."""
        rec = _capture.recorder(self.device)
        if isinstance(src, array):
            if rec is not None:
                rec.copy(self._buf, src.numpy().reshape(self._buf.shape) if src.is_contiguous else src.numpy(),
                         (self, src))
                return self
            data = src.numpy()
        else:
            data = np.asarray(src)
        data = np.asarray(data, dtype=self._buf.dtype).reshape(self._buf.shape)
        if rec is not None:
            rec.copy(self._buf, data.copy(), (self,))  # host data: taken now, written at each replay
        else:
            self._buf[...] = data
        return self

    # ------------------------------------------------------------------------------------------------ views

    def __getitem__(self, key):
        """Slicing gives a view; an integer index on a 1-d array gives the element (as a numpy value)."""
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > self.ndim:
            raise IndexError(f"{len(key)} indices for a {self.ndim}-d array")
        view = self._buf[key]
        inner = _element_info(self.dtype)[1]
        if view.ndim == len(inner):
            return view.copy() if inner else view[()]
        out = array(dtype=self.dtype, _buf=view, device=self.device, _owner=self)
        if self._grad is not None:
            out._grad = self._grad[key]
            out._requires_grad = self._requires_grad
        return out

    def __setitem__(self, key, value):
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
        out = array(dtype=self.dtype, _buf=self._buf.reshape(shape + inner), device=self.device, _owner=self)
        if self._grad is not None:
            out._grad = self._grad.reshape(shape)
        out._requires_grad = self._requires_grad  # a view of a differentiable array is differentiable
        return out

    def flatten(self):
        return self.reshape((self.size,))

    def contiguous(self):
        return self if self.is_contiguous else clone(self)

    def to(self, device):
        dev = get_device(device)
        return self if dev == self.device else array(self, device=dev)

    # ------------------------------------------------------------------------------------------------ launch

    def _descriptor(self) -> ArrayDescriptor:
        d = self._desc
        if d is None:
            d = ArrayDescriptor()
            d.data = self.ptr
            for k in range(self.ndim):
                d.shape[k] = self.shape[k]
                d.strides[k] = self.strides[k]
            d.ndim = self.ndim
            self._desc = d
        return d


def _shape_arg(shape):
    return (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)


def zeros(shape, dtype=float, device=None, requires_grad=False) -> array:
    a = array(shape=_shape_arg(shape), dtype=dtype, device=device, requires_grad=requires_grad)
    rec = _capture.recorder(a.device)
    if rec is not None:  # as a CUDA graph would: the new memory is zeroed again at each replay
        rec.zero(a)
    return a


def empty(shape, dtype=float, device=None, requires_grad=False) -> array:
    # zero-filled anyway: the cost is small on the CPU and it makes results reproducible
    return zeros(shape, dtype, device, requires_grad)


def full(shape, value, dtype=None, device=None, requires_grad=False) -> array:
    if dtype is None:
        dtype = type(value) if isinstance(value, (T.Composite,)) else (float if isinstance(value, float) else
                                                                        (int if isinstance(value, int) else float))
    a = zeros(shape, dtype, device, requires_grad)
    return a.fill_(value)


def ones(shape, dtype=float, device=None, requires_grad=False) -> array:
    a = zeros(shape, dtype, device, requires_grad)
    rec = _capture.recorder(a.device)
    if rec is not None:
        rec.fill(a, np.ones(_element_info(a.dtype)[1], dtype=a._buf.dtype))
    else:
        a._buf[...] = 1
    return a


def zeros_like(src: array, device=None, requires_grad=None) -> array:
    rg = src.requires_grad if requires_grad is None else requires_grad
    return zeros(src.shape, src.dtype, device or src.device, rg)


def empty_like(src: array, device=None, requires_grad=None) -> array:
    return zeros_like(src, device, requires_grad)


def ones_like(src: array, device=None, requires_grad=None) -> array:
    rg = src.requires_grad if requires_grad is None else requires_grad
    return ones(src.shape, src.dtype, device or src.device, rg)


def full_like(src: array, value, device=None, requires_grad=None) -> array:
    rg = src.requires_grad if requires_grad is None else requires_grad
    return full(src.shape, value, src.dtype, device or src.device, rg)


def clone(src: array, device=None, requires_grad=None) -> array:
    rg = src.requires_grad if requires_grad is None else requires_grad
    out = array(src.numpy(), dtype=src.dtype, device=device or src.device, copy=True)
    out.requires_grad = rg
    rec = _capture.recorder(out.device)
    if rec is not None:
        rec.copy(out.numpy(), src.numpy(), (out, src))
    return out


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0):
    """Copy `count` elements (all when 0) of flattened `src` from `src_offset` into `dest` at `dest_offset`."""
    s = src.numpy().reshape((src.size,) + src.numpy().shape[src.ndim:])
    d = dest.numpy().reshape((dest.size,) + dest.numpy().shape[dest.ndim:]) if dest.is_contiguous else None
    n = count or min(src.size - src_offset, dest.size - dest_offset)
    if d is None:
        raise ValueError("wp.copy into a non-contiguous array")
    rec = _capture.recorder(dest.device)
    if rec is None:
        d[dest_offset:dest_offset + n] = s[src_offset:src_offset + n]
    elif src.is_contiguous:
        rec.copy(d[dest_offset:dest_offset + n], s[src_offset:src_offset + n], (dest, src))
    else:  # a strided source: flatten it at replay, not now
        def run():
            flat = src.numpy().reshape((src.size,) + src.numpy().shape[src.ndim:])
            d[dest_offset:dest_offset + n] = flat[src_offset:src_offset + n]
        rec.host(run)


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    a = array(arr, dtype=dtype if dtype is not None else T.Any, device=device, requires_grad=requires_grad)
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
