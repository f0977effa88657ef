"""`wp.ref[T]`: Warp 1.19's pass-by-reference parameter annotation for @wp.func (`def f(x: wp.ref[float])`), and
`wp.address_of(x)`, the address of x's storage given to a function call.

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


def address_of(value):
    """`wp.address_of(x)` (Warp 1.19): in a kernel, as an argument of a function call, the address of x's storage as
    a uint64, for C++ snippets (@wp.func_native) that write through it; x is a variable, an array element, a struct
    field or a component. Here the callee gets the address of a copy of x that is written back to x when the call
    returns (compiler/frontend_reference.py). Not callable from Python."""
    raise RuntimeError("wp.address_of() is only meaningful inside kernels, as an argument of a function call")


address_of._wp_address_of_ = True
