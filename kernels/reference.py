"""`wp.ref[T]`: Warp 1.19's pass-by-reference parameter annotation for @wp.func (`def f(x: wp.ref[float])`).

The annotation object has Warp's API (`dtype`, `value_type`, equality by dtype, `repr` `wp.ref[int32]`). How a
reference parameter is compiled (returned and written back to the caller's argument) is in
compiler/function.py's `reference_params` and compiler/frontend_reference.py.
"""

from __future__ import annotations


class Reference:
    """The annotation `wp.ref[dtype]` (Warp's `warp._src.types.Reference`)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype

    @property
    def value_type(self):
        return self.dtype

    def __eq__(self, other):
        return isinstance(other, Reference) and other.dtype == self.dtype

    def __hash__(self):
        return hash((Reference, self.dtype))

    def __repr__(self):
        return f"wp.ref[{getattr(self.dtype, '__name__', self.dtype)}]"


class _RefFactory:
    """`wp.ref`: subscripted with a type, the annotation of a reference parameter."""

    def __getitem__(self, dtype) -> Reference:
        return Reference(dtype)

    def __repr__(self):
        return "wp.ref"


ref = _RefFactory()
