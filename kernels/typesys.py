"""Types that exist only at compile time: arrays as kernel parameters, compile-time constants, structs.

Value types (scalars, vectors, ...) live in types.py; this module adds what the compiler needs beyond them.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np

from . import types as T


class ArrayValue:
    """Base class of the runtime's array objects (kernels/runtime/array.py). The compiler sees arrays only
    through it: an annotation `wp.array(dtype=float)` is such an object with no memory, read for its `dtype` and
    `ndim`, and an array referenced from kernel code is refused. It lets the compiler recognise them without
    importing the runtime (the compiler sits below it)."""

    __slots__ = ()


@dataclass(frozen=True)
class ArrayType:
    """Type of an array parameter or value in a kernel: element type and number of dimensions (1-4).

    `indexed`: Warp's `indexedarray` (kernels/runtime/indexedarray.py), a strided array read through optional
    int32 index arrays per dimension; in C++ `wp::indexedarray_t<T>` (native/indexedarray.h). Element access,
    atomics, `.shape` and `a[i]` views take either kind; other builtins taking arrays take plain arrays only.
    `fabric`: Warp's `fabricarray` (kernels/runtime/fabricarray.py), elements spread over buckets of memory
    (`wp::fabricarray_t<T>`, native/fabricarray.h; with `indexed`, `indexedfabricarray`); ndim 2 is an array of
    1-d arrays (`fabricarrayarray`).
    `fixed`: the shape of Warp's `fixedarray` (kernels/runtime/fixedarray.py), an array allocated on a kernel
    thread's stack by `wp.zeros(shape=..., dtype=...)`; `wp::fixedarray_t<size, T>` (native/fixedarray.h) is a
    `wp::array_t<T>` over its own storage, so it is read, written and passed as a plain array. Empty: not fixed."""

    dtype: object
    ndim: int = 1
    indexed: bool = False
    fabric: bool = False
    fixed: tuple = ()

    @property
    def plain(self) -> bool:
        """A strided `wp::array_t` (not an indexed or fabric array)."""
        return not (self.indexed or self.fabric)

    @property
    def kind_name(self) -> str:
        """Warp's class name of this kind of array."""
        if self.fixed:
            return "fixedarray"
        return ("indexed" if self.indexed else "") + ("fabricarray" if self.fabric else "array")

    @property
    def unfixed(self) -> "ArrayType":
        """The plain array type a fixed array is passed as (a view of its storage); the type itself otherwise."""
        return ArrayType(self.dtype, self.ndim) if self.fixed else self

    @property
    def __name__(self):
        return f"{self.kind_name}{'' if self.ndim == 1 else f'{self.ndim}d'}({T.type_repr(self.dtype)})"

    def __repr__(self):
        return self.__name__


def refuse_array_subclass_annotations(annotations: dict, context: str) -> None:
    """Warp's refusal of an instance of a user's array subclass as an annotation (`def k(a: my_array)`, where
    `my_array` holds memory): a kernel type is written `wp.array[dtype]` (or the factory form), and the instance
    would stand for its class's native family. `annotations`: {parameter or field name (or "return"): annotation};
    string annotations are left to the compiler. Raises TypeError at decoration, as Warp does."""
    for name, annotation in annotations.items():
        cls = type(annotation)
        if not isinstance(annotation, ArrayValue) or cls.__module__.startswith("kernels."):
            continue
        native = next(c for c in cls.__mro__ if c.__module__.startswith("kernels.") and issubclass(c, ArrayValue))
        where = "Return annotation" if name == "return" else f"'{name}'"
        raise TypeError(f"{context}: {where} uses an array subclass instance ({cls.__name__}) as an annotation; "
                        f"use the native parent annotation wp.{native.__name__}[dtype] instead")


FIXEDARRAY_HOST_REFUSAL = ("Cannot use wp.fixedarray as a host argument or kernel overload type; it is a "
                           "compiler-only stack array")  # Warp's wording (kernels/runtime/fixedarray.py)


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
    """A tile: a block of values with a static shape (1 to 4 dimensions), worked on by the whole block together.

    A value type: in C++ `wp::tile_t<T, rows, cols>` (a 1-d tile of length n is n x 1). A 3-d or 4-d tile is stored
    row-major as shape[0] x (the product of the other extents): its storage type says nothing of its axes, so only
    the builtins declared for them (kernels/builtins/tile_nd.py) take it. On the CPU a block runs as one lane, so
    every tile operation is a loop over the tile in that lane.
    """

    dtype: object
    shape: tuple

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def cols(self) -> int:
        return math.prod(self.shape[1:])

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
        shape = tuple(_literal_int(n) for n in rest)
        if not 1 <= len(shape) <= 4 or not all(isinstance(n, int) and n > 0 for n in shape):
            raise TypeError(f"wp.tile[...]: a tile shape is 1 to 4 positive ints, got {shape!r}")
    return TileType(dtype if dtype is T.Any else T.canonical_type(dtype), shape)


def _literal_int(n):
    """`typing.Literal[8]` (Warp's spelling of a static extent) as 8; anything else unchanged."""
    import typing
    if typing.get_origin(n) is typing.Literal and len(typing.get_args(n)) == 1:
        return typing.get_args(n)[0]
    return n


def is_tile(t) -> bool:
    return isinstance(t, TileType)


def is_array(t) -> bool:
    return isinstance(t, ArrayType)


class ArrayDescriptor(ctypes.Structure):
    """Argument layout of `wp::array_t<T>` (native/array.h): keep in sync."""

    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int32 * 4), ("strides", ctypes.c_int64 * 4),
                ("ndim", ctypes.c_int32), ("flags", ctypes.c_int32)]


class IndexedArrayDescriptor(ctypes.Structure):
    """Argument layout of `wp::indexedarray_t<T>` (native/indexedarray.h): keep in sync. `indices[d]`: the int32
    index array of dimension d, or null (the dimension is taken whole); `shape`: the indexed array's shape."""

    _fields_ = [("data", ArrayDescriptor), ("indices", ctypes.c_void_p * 4), ("shape", ctypes.c_int32 * 4)]


class FabricArrayDescriptor(ctypes.Structure):
    """Argument layout of `wp::fabricarray_t<T>` (native/fabricarray.h): keep in sync. `buckets` points to
    `nbuckets` FabricBucket records; `size` is the element count over all buckets."""

    _fields_ = [("buckets", ctypes.c_void_p), ("nbuckets", ctypes.c_size_t), ("size", ctypes.c_size_t)]


class FabricBucket(ctypes.Structure):
    """`wp::fabricbucket_t`: elements [index_start, index_end) at `ptr` (contiguous); `lengths`: for an array of
    arrays, the length of each element's array (`ptr` then holds one pointer per element)."""

    _fields_ = [("index_start", ctypes.c_size_t), ("index_end", ctypes.c_size_t), ("ptr", ctypes.c_void_p),
                ("lengths", ctypes.c_void_p)]


class IndexedFabricArrayDescriptor(ctypes.Structure):
    """Argument layout of `wp::indexedfabricarray_t<T>`: a fabric array read through one int32 index array."""

    _fields_ = [("fa", FabricArrayDescriptor), ("indices", ctypes.c_void_p), ("size", ctypes.c_size_t)]


def array_descriptor_type(t: ArrayType):
    """The ctypes structure an array of kernel type `t` is packed as."""
    if t.fabric:
        return IndexedFabricArrayDescriptor if t.indexed else FabricArrayDescriptor
    return IndexedArrayDescriptor if t.indexed else ArrayDescriptor


class StructInfo:
    """Compile-time description of a struct type: ordered fields, C++ name, native layout."""

    def __init__(self, cls, fields: dict):
        self.cls = cls
        self.fields = fields
        # named by where it is defined, so generated source is the same in every process
        qual = f"{cls.__module__}_{cls.__qualname__}".replace("<locals>", "L")
        self.cname = "S_" + "".join(c if c.isalnum() else "_" for c in qual)
        self.native = False  # defined by a native header (native_struct), not by generated code
        self._ctype = None
        self._numpy_dtype = None
        # Why the struct cannot be used (a field of a type kernels do not have), raised at first use rather
        # than at definition, so that a module defining such a struct still imports.
        self.error: str | None = None

    def check_usable(self):
        """Raises TypeError when a field of the struct (or of a nested struct) has an unsupported type."""
        if self.error is not None:
            raise TypeError(self.error)

    def ctype(self):
        if self._ctype is None:
            members = []
            for name, t in self.fields.items():
                if isinstance(t, ArrayType):
                    members.append((name, array_descriptor_type(t)))
                elif is_struct(t):
                    members.append((name, t._wp_struct_.ctype()))
                elif T.is_composite(t):
                    members.append((name, t._ctype()))
                else:
                    members.append((name, t._ctype_))
            if not members:
                members.append(("_empty", ctypes.c_uint8))  # a C++ struct with no members still has size 1
            self._ctype = type(f"{self.cname}_c", (ctypes.Structure,), {"_fields_": members})
        return self._ctype

    @property
    def numpy_dtype(self):
        """The native layout as a numpy structured dtype, vector and matrix fields shaped as Warp's (a mat33 field
        is a (3, 3) subarray, not 9 values in a row)."""
        if self._numpy_dtype is None:
            flat = np.dtype(self.ctype())
            formats = []
            for name in flat.names:
                fmt, t = flat.fields[name][0], self.fields.get(name)
                if is_struct(t):
                    fmt = t._wp_struct_.numpy_dtype
                elif t is not None and T.is_composite(t) and fmt.subdtype is not None:
                    fmt = np.dtype((fmt.subdtype[0], tuple(t._shape_)))
                formats.append(fmt)
            self._numpy_dtype = np.dtype({"names": list(flat.names), "formats": formats, "itemsize": flat.itemsize,
                                          "offsets": [flat.fields[n][1] for n in flat.names]}, align=flat.isalignedstruct)
        return self._numpy_dtype


def native_struct(name: str, cname: str, fields: dict, doc: str = "", module: str = "kernels"):
    """A struct type whose C++ definition lives in a native header (`wp::<cname>`, with the same fields in the
    same order, plus `add`): the value a builtin returns, such as `wp.MeshQueryPoint`. Kernels read its fields;
    generated modules do not define it again. Declared here, with the builtin table that uses it, as a
    compile-time type; the runtime gives it Python values (kernels/runtime/struct.py, `give_values`)."""
    cls = type(name, (), {"__annotations__": dict(fields), "__module__": module, "__qualname__": name,
                          "__doc__": doc})
    info = StructInfo(cls, dict(fields))
    info.cname = cname
    info.native = True
    cls._wp_struct_ = info
    return cls


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
