"""Arithmetic operators on arrays in ordinary Python (Warp's `a + b`, `2.0 * a`, `a % 3`, `-a`): new arrays
computed by an element-wise kernel on the arrays' device.

Because they are kernel launches, a Tape records them and gradients flow through them. Operands: two arrays of
the same scalar dtype and shape, or an array and a scalar (converted to the array's dtype). Vector and matrix
arrays, `**` and `//` go through wp.map (array_map.py), as all of Warp's array operators do. Integer division
truncates and `%` takes the sign of the dividend, as in kernels.
"""

from __future__ import annotations

import numpy as np

from ..compiler import lang as wp

from .. import types as T
from .array import array, empty
from .launch import launch
from .module import kernel
from ..types import Any
from ..typesys import ArrayValue

_OPS = {"+": 0, "-": 1, "*": 2, "/": 3, "%": 4, "neg": 5, "pos": 6}


@kernel
def _elementwise(a: array(dtype=Any), b: array(dtype=Any), out: array(dtype=Any), op: int, a_step: int,
                 b_step: int):
    i = wp.tid()
    x = a[i * a_step]
    y = b[i * b_step]
    if op == 0:
        out[i] = x + y
    elif op == 1:
        out[i] = x - y
    elif op == 2:
        out[i] = x * y
    elif op == 3:
        out[i] = x / y
    elif op == 4:
        out[i] = x % y
    elif op == 5:
        out[i] = -x
    else:
        out[i] = x


def _flat(a: array) -> array:
    if not a.is_contiguous:
        raise TypeError("array arithmetic in Python needs contiguous arrays; call .contiguous() first")
    return a.flatten()


def _scalar_array(value, like: array) -> array:
    if isinstance(value, T.Composite) or np.ndim(value) != 0:
        raise TypeError(f"cannot combine a {T.type_repr(like.dtype)} array with {type(value).__name__}")
    return array(np.array([value]).astype(T.numpy_dtype(like.dtype)), dtype=like.dtype, device=like.device)


_MAPPED = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "neg": "neg", "pos": "pos", "**": "pow",
           "//": "floordiv"}


def _mapped(op: str, x, y, reverse: bool, out=None) -> array:
    """`x op y` through wp.map (Warp's route for every array operator): vector and matrix arrays, `**` and `//`,
    indexed and Fabric arrays, with the builtin's own types and numpy's broadcasting; into `out` when given."""
    from .array_map import map as wp_map  # (imported late: array_map imports this package's launch path)

    f = getattr(wp, _MAPPED[op])
    if y is None:
        return wp_map(f, x, out=out)
    return wp_map(f, y, x, out=out) if reverse else wp_map(f, x, y, out=out)


def apply(op: str, x, y=None, reverse: bool = False) -> array:
    """`x op y` (`y op x` when `reverse`) for an array x; y an array or a scalar; unary ops take no y."""
    if op in ("**", "//") or T.is_composite(x.dtype) or (isinstance(y, array) and T.is_composite(y.dtype)) \
            or not isinstance(x, array) or isinstance(y, ArrayValue) and not isinstance(y, array):
        return _mapped(op, x, y, reverse)
    if not T.is_scalar(x.dtype) or x.dtype is T.bool_:
        raise TypeError(f"array arithmetic in Python supports numeric scalar dtypes, not {T.type_repr(x.dtype)}; "
                        "write a kernel for it")
    if y is None:
        other, steps = x, (1, 1)
    elif isinstance(y, array):
        if y.dtype != x.dtype or y.shape != x.shape:
            raise TypeError(f"array operands of '{op}' need the same dtype and shape: {T.type_repr(x.dtype)} "
                            f"{x.shape} and {T.type_repr(y.dtype)} {y.shape}")
        other, steps = y, (1, 1)
    else:
        other, steps = _scalar_array(y, x), (1, 0)
    a, b = _flat(x), (_flat(other) if other.size == x.size else other)
    if reverse:
        a, b, steps = b, a, steps[::-1]
    requires_grad = x.requires_grad or (isinstance(y, array) and y.requires_grad)
    out = empty(x.size, dtype=x.dtype, device=x.device, requires_grad=requires_grad)
    launch(_elementwise, dim=x.size, inputs=[a, b, out, _OPS[op], steps[0], steps[1]], device=x.device)
    return out.reshape(x.shape)


def install(cls) -> None:
    """Give an array class (wp.array, indexedarray, fabricarray, indexedfabricarray) its arithmetic operators
    (kept here so that array.py stays about storage). In-place ones (`a += b`) write into the array itself and
    return it, as Warp's do (`wp.map(wp.add, a, b, out=a)`)."""
    def binary(op, reverse=False):
        return lambda self, other: apply(op, self, other, reverse)

    def in_place(op):
        def update(self, other):
            _mapped(op, self, other, False, out=self)
            return self
        return update

    for name, op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("mod", "%"), ("pow", "**"),
                     ("floordiv", "//")):
        setattr(cls, f"__{name}__", binary(op))
        setattr(cls, f"__r{name}__", binary(op, reverse=True))
        setattr(cls, f"__i{name}__", in_place(op))
    cls.__array_priority__ = 100  # numpy scalars defer to these operators (`np.float32(2) * a` is an array)
    cls.__neg__ = lambda self: apply("neg", self)
    cls.__pos__ = lambda self: apply("pos", self)
