"""Types that exist only at compile time: arrays as kernel parameters, compile-time constants, structs.

Value types (scalars, vectors, ...) live in types.py; this module adds what the compiler needs beyond them.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import types as T


class ArrayValue:
    """Base class of the runtime's array objects (kernels/runtime/array.py). The compiler sees arrays only
    through it: an annotation `wp.array(dtype=float)` is such an object with no memory, read for its `dtype` and
    `ndim`, and an array referenced from kernel code is refused. It lets the compiler recognise them without
    importing the runtime (the compiler sits below it)."""

    __slots__ = ()


@dataclass(frozen=True)
class ArrayType:
    """Type of an array parameter or value in a kernel: element type and number of dimensions (1-4)."""

    dtype: object
    ndim: int = 1

    @property
    def __name__(self):
        return f"array{'' if self.ndim == 1 else f'{self.ndim}d'}({T.type_repr(self.dtype)})"

    def __repr__(self):
        return self.__name__


@dataclass(frozen=True)
class StaticType:
    """Type of a compile-time Python object used as an operand (a format string, a shape tuple, a type)."""

    obj: object

    @property
    def __name__(self):
        return f"static({self.obj!r})"

    def __hash__(self):
        try:
            return hash(("static", self.obj))
        except TypeError:
            return hash(("static", id(self.obj)))


@dataclass(frozen=True)
class PackType:
    """A tuple of run-time values passed to a builtin that takes a tuple (tile offsets); never a C++ value."""

    types: tuple

    @property
    def __name__(self):
        return f"tuple({', '.join(T.type_repr(t) for t in self.types)})"


@dataclass(frozen=True)
class ShapeType:
    """The `.shape` of an array inside a kernel: indexable by a constant, `len` gives ndim."""

    ndim: int

    @property
    def __name__(self):
        return f"shape{self.ndim}"


#: The builtins that give a view of an array (no copy): a[i] of a 2-4-d array and slices inside kernels. The
#: gradient array of a view is the same view of the parent's gradient array (render_adjoint replays them).
ARRAY_VIEWS = ("view", "slice_view", "index_view")


@dataclass(frozen=True)
class SliceType:
    """A `start:stop:step` inside a subscript; never a C++ value (type inference turns the subscript into
    component reads and writes, or into an array view). Its bounds are the operands of the `slice` op."""

    @property
    def __name__(self):
        return "slice"


@dataclass(frozen=True)
class TileType:
    """A tile: a block of values with a static shape (1-d or 2-d), worked on by the whole block together.

    A value type: in C++ `wp::tile_t<T, rows, cols>` (a 1-d tile of length n is n x 1). On the CPU a block runs
    as one lane, so every tile operation is a loop over the tile in that lane.
    """

    dtype: object
    shape: tuple

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def cols(self) -> int:
        return self.shape[1] if len(self.shape) > 1 else 1

    @property
    def __name__(self):
        return f"tile({T.type_repr(self.dtype)}, {self.shape})"

    def __repr__(self):
        return self.__name__


def tile_annotation(params) -> TileType:
    """The type written `wp.tile[dtype]`, `wp.tile[dtype, M, N]` or `wp.tile[dtype, (M, N)]` in an annotation.

    A missing shape (or dtype `Any`) makes a generic parameter that takes the caller's tile; shape None."""
    params = params if isinstance(params, tuple) else (params,)
    if not params:
        raise TypeError("wp.tile[...] needs at least a dtype")
    dtype, rest = params[0], params[1:]
    if len(rest) == 1 and isinstance(rest[0], (tuple, list)):
        rest = tuple(rest[0])
    if not rest:
        shape = None
    else:
        shape = tuple(rest)
        if not 1 <= len(shape) <= 2 or not all(isinstance(n, int) and n > 0 for n in shape):
            raise TypeError(f"wp.tile[...]: a tile shape is 1 or 2 positive ints, got {shape!r}")
    return TileType(dtype if dtype is T.Any else T.canonical_type(dtype), shape)


def is_tile(t) -> bool:
    return isinstance(t, TileType)


def is_array(t) -> bool:
    return isinstance(t, ArrayType)


def is_struct(t) -> bool:
    return getattr(t, "_wp_struct_", None) is not None


def has_native_value(t) -> bool:
    """Whether values of type `t` exist at run time (a C++ variable): not compile-time values, shapes or packs."""
    return not isinstance(t, (StaticType, ShapeType, PackType)) and t is not None


def is_differentiable_type(t) -> bool:
    """Whether values of type `t` carry a gradient (floats, float composites, structs with such members)."""
    if T.is_scalar(t):
        return T.is_float(t)
    if T.is_composite(t):
        return T.is_float(t._wp_scalar_type_)
    if is_struct(t):
        return any(is_differentiable_type(f) or is_array(f) for f in t._wp_struct_.fields.values())
    if is_tile(t):
        return is_differentiable_type(t.dtype)
    return False


def describe(t) -> str:
    if is_struct(t):
        return t.__name__
    return T.type_repr(t)
