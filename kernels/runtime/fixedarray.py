"""`wp.fixedarray`: Warp's fixed-size array that lives on a kernel thread's stack (Warp 1.19).

In a kernel or @func, `wp.zeros(shape=(2, 3), dtype=int)` with a constant shape makes one; it is passed where a
`wp.array` is expected and returned from functions (`-> wp.fixedarray(shape=(2, 3), dtype=int)` annotates that).
On the host the class only describes such an array (dtype, shape, size): it owns no memory, so it is never a
launch argument nor a kernel parameter type (Warp refuses both with a TypeError naming fixedarray).
"""

from __future__ import annotations

import builtins
import typing

from .. import types as T
from .array import array



class fixedarray(array):  # noqa: N801  (Warp's name)
    """A fixed-size array of `dtype` with a compile-time `shape` (1-4 dims), allocated in a kernel.

    Args:
        dtype: element type (`int`, `float` and `bool` mean int32, float32 and bool, as in Warp).
        shape: int or tuple of 1-4 positive ints; None describes an empty 1-d array (shape (0,)).
    """

    _wp_fixed_ = True
    deleter = None  # owns no memory (array.__del__ reads it)
    _buf = None
    device = None

    def __class_getitem__(cls, params):
        raise TypeError("wp.fixedarray takes its shape as an argument: wp.fixedarray(shape=(2, 3), dtype=float)")

    def __init__(self, dtype: typing.Any = typing.Any, shape=None):
        if dtype is int:
            dtype = T.int32
        elif dtype is float:
            dtype = T.float32
        elif dtype is builtins.bool:
            dtype = T.bool_
        elif dtype is not typing.Any:
            dtype = T.canonical_type(dtype)
        self.dtype = dtype
        if shape is None:
            self.ndim, self.shape, self.strides = 1, (0,), (0,)
            return
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(shape)
        if not 1 <= len(shape) <= 4 or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ValueError(f"wp.fixedarray: shape must be 1 to 4 non-negative ints, got {shape!r}")
        self.ndim = len(shape)
        self.shape = shape  # `size` (array's property) is their product
        item = T.type_size_in_bytes(dtype) if dtype is not typing.Any else 0
        strides, stride = [], item
        for n in reversed(shape):
            strides.append(stride)
            stride *= n
        self.strides = tuple(reversed(strides))

    def __repr__(self):
        return f"fixedarray(shape={self.shape}, dtype={T.type_repr(self.dtype)})"


def is_fixed(value) -> bool:
    """True for a `wp.fixedarray` instance or subclass instance (a host description, never a launch value)."""
    return getattr(value, "_wp_fixed_", False)
