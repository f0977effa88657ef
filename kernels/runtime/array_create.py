"""Array creation beyond `empty`/`zeros`/`clone` (kernels/runtime/array.py): `full`, `ones`, the `*_like` forms,
`from_numpy`, the fixed-dimension array types `array1d` ... `array4d`, and `as_array`, which wraps foreign memory
(numpy, `__array_interface__`, DLPack, `__cuda_array_interface__`) without a copy."""

from __future__ import annotations

import numpy as np

from . import recording as _capture
from .. import types as T
from .array import SubscriptAnnotation, array, empty, zeros
from .array_layout import element_info, fill_element, infer_dtype, is_bf16
from ..typesys import ArrayType, is_struct
from .cuda_memory import fill
from .interop import from_cuda_array_interface


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
        scalar = infer_dtype(na)
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
    one = fill_element(a.dtype, a._buf.dtype, 1) if is_bf16(a.dtype) else 1  # bfloat16 1.0 is 0x3f80
    rec = _capture.recorder(a.device)
    if a.is_cuda:
        fill(a._buf, a.device.ordinal, np.ones(element_info(a.dtype)[1], dtype=a._buf.dtype) * one)
    elif rec is not None:
        rec.fill(a, np.ones(element_info(a.dtype)[1], dtype=a._buf.dtype) * one)
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



def full_like(src: array, value, device=None, requires_grad=None, pinned=None, retain_grad=False) -> array:
    return full(src.shape, value, src.dtype, device or src.device, _like_requires_grad(src, requires_grad),
                retain_grad=retain_grad)



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
        return SubscriptAnnotation(dtype=dtype, ndim=cls._fixed_ndim_)


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
    dtype = expected.dtype if expected is not None and expected.dtype is not T.Any else infer_dtype(a)
    want = element_info(dtype)[0]
    if a.dtype != want:
        # converting would make a copy, and the kernel's writes would be lost with it
        raise TypeError(f"its elements are {a.dtype}, expected {want}: convert it first")
    out = array(a, dtype=dtype, copy=False)
    out._foreign = True
    return out
