"""`wp.tile_stack(capacity, dtype)`: the type of a block-local last-in-first-out stack of at most `capacity` values.

A stack is a value type of the kernel language (native `wp::tile_stack_t<T, capacity>`, kernels/native/
tile_stack.h): push, pop, count and clear update the caller's variable in place. On the CPU a block runs as one lane,
as warp-lang's CPU backend does without cooperative blocks, so each push adds at most one value. Called from
Python with the same arguments, `wp.tile_stack(...)` is the type, for @wp.func annotations.
"""

from __future__ import annotations

from .. import types as T
from ..typesys import native_struct
from .render import ctype

_TYPES: dict = {}


def tile_stack_type(dtype, capacity: int):
    """The stack type holding up to `capacity` values of `dtype` (a scalar, vector or matrix type)."""
    dtype = T.canonical_type(dtype)
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"tile_stack: capacity must be an int, got {capacity!r}")
    if capacity <= 0:
        raise ValueError(f"tile_stack: capacity must be a positive integer, got {capacity}")
    if not (T.is_scalar(dtype) or T.is_composite(dtype)):
        raise TypeError(f"tile_stack: dtype must be a scalar, vector or matrix type, got {dtype!r}")
    key = (dtype, capacity)
    if key not in _TYPES:
        cls = native_struct(f"tile_stack_{T.type_repr(dtype)}_{capacity}",
                            f"tile_stack_t<{ctype(dtype)}, {capacity}>", {},
                            doc=f"A block-local stack of up to {capacity} {T.type_repr(dtype)} values.")
        cls._wp_stack_dtype_ = dtype
        cls._wp_stack_capacity_ = capacity
        _TYPES[key] = cls
    return _TYPES[key]


def is_tile_stack(t) -> bool:
    return getattr(t, "_wp_stack_dtype_", None) is not None
