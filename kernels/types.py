"""The kernel language's value types: scalars, vectors, matrices, quaternions and transforms.

Each type is a Python class that is usable in three places: as an annotation in a kernel signature, as a
constructor inside a kernel, and as a constructor in ordinary Python (`wp.vec3(1, 2, 3)`). Composite types are
created by `vector()` / `matrix()` and cached, so `vector(3, float32) is vec3`.
"""

from __future__ import annotations

import builtins
import ctypes
import typing

import numpy as np

from . import halfbits
from .composite_math import c_divide as _divide
from .composite_math import quat_product as _quat_product, quat_rotate_vector as _quat_rotate_vector
from .composite_access import CompositeAccess

class _AnyType:
    """Placeholder for generic annotations (`typing.Any` or `wp.types.Any`): specialised per call site."""

    def __repr__(self):
        return "Any"


Any = _AnyType()


# --------------------------------------------------------------------------------------------------------------
# Scalars


class _ScalarMeta(type):
    """`isinstance(x, wp.float32)` holds for the values scalar types make (numpy scalars of that dtype)."""

    def __instancecheck__(cls, inst):
        if type.__instancecheck__(cls, inst):
            return True
        if cls._value_np_ is not None:  # bfloat16: only its own values (its storage dtype is uint16's)
            return type(inst) is _VALUE_CLASSES.get(cls)
        return cls._np_ is not None and isinstance(inst, np.generic) and inst.dtype == np.dtype(cls._np_)


class Scalar(metaclass=_ScalarMeta):
    """Base of the scalar type classes. Calling a scalar type returns a numpy scalar of that type.

    The value is of a numpy subclass (`_value_class`) that behaves as Warp's scalar values do where numpy's differ:
    Python ints wrap around (`uint8(-1)` is 255), `**` on integers is a TypeError, and `.value` is the Python number.
    """

    _np_ = None  # numpy dtype of the stored bits (arrays, components)
    _value_np_ = None  # numpy dtype of host values when it differs from `_np_` (bfloat16: float32)
    _ctype_ = None  # ctypes type
    _cname_ = ""  # C++ name in namespace wp
    _kind_ = ""  # "float", "int", "uint" or "bool"
    _length_ = 1  # components, as Warp's scalar types say (vectors and matrices: their count)

    def __new__(cls, value=0):
        if cls._kind_ in ("int", "uint") and isinstance(value, builtins.int):
            value = cls._ctype_(value).value
        if cls._value_np_ is not None:
            value = halfbits.round_to_bfloat16(float(value))
        return _value_class(cls)(value)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._type_ = cls._ctype_  # Warp's scalar classes are ctypes-backed: `wp.int8._type_` is c_int8
        if cls._np_ is not None and cls._value_np_ is None and "__numpy_dtype__" not in cls.__dict__:
            # NumPy 2.4's dtype protocol: `np.array(v, dtype=wp.float32)`, `np.dtype(wp.int8)` are numpy's dtype,
            # as in Warp (object arrays before). bfloat16 has none: its uint16 storage is not its numbers.
            cls.__numpy_dtype__ = np.dtype(cls._np_)


_VALUE_CLASSES: dict = {}


def _int_pow(self, other, mod=None):
    raise TypeError(f"'**' is not defined for integer values ({type(self).__name__}), as in Warp")


def host_scalar(t, raw):
    """The value host code gets for a scalar of type `t` read from native memory (`raw`: a numpy scalar): a
    vector's component, a builtin's result in Python scope. As in Warp: float32, int32 and bool give Python
    numbers; other types give values of the type (`wp.float64(...)`); every type gives Python numbers with
    `config.legacy_scalar_return_types`. `raw` holds the value, not its storage bits (a bfloat16 as a float32)."""
    from . import config

    if config.legacy_scalar_return_types or t is float32 or t is int32 or t is bool_:
        return raw.item()
    return t(raw)


def is_scalar_value(x) -> bool:
    """Whether `x` was made by a scalar type (`wp.float32(1.5)`), as opposed to a plain numpy scalar."""
    return type(x) in _VALUE_CLASSES.values()


def _value_class(cls):
    """The numpy subclass whose instances `cls(...)` returns (see `Scalar`)."""
    vc = _VALUE_CLASSES.get(cls)
    if vc is None:
        ns = {"value": property(lambda self: self.item()), "__module__": __name__}
        if cls._kind_ in ("int", "uint"):
            ns["__pow__"] = ns["__rpow__"] = _int_pow
        vc = _VALUE_CLASSES[cls] = type(cls.__name__, (value_dtype(cls).type,), ns)
    return vc


class float16(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.float16, ctypes.c_uint16, "float16", "float"


class bfloat16(Scalar):
    """Brain float: float32's sign and 8-bit exponent with a 7-bit mantissa; stored as 16 bits (uint16 patterns on
    the host, see halfbits.py); host values are float32 numbers rounded to the nearest bfloat16."""

    _np_, _ctype_, _cname_, _kind_ = np.uint16, ctypes.c_uint16, "bfloat16", "float"
    _value_np_ = np.float32


class float32(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.float32, ctypes.c_float, "float32", "float"


class float64(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.float64, ctypes.c_double, "float64", "float"


class int8(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.int8, ctypes.c_int8, "int8", "int"


class uint8(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.uint8, ctypes.c_uint8, "uint8", "uint"


class int16(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.int16, ctypes.c_int16, "int16", "int"


class uint16(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.uint16, ctypes.c_uint16, "uint16", "uint"


class int32(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.int32, ctypes.c_int32, "int32", "int"


class uint32(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.uint32, ctypes.c_uint32, "uint32", "uint"


class int64(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.int64, ctypes.c_int64, "int64", "int"


class uint64(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.uint64, ctypes.c_uint64, "uint64", "uint"


#: Warp's type for object handles (Mesh, Volume, BVH ids) in parameters, struct fields and arrays: uint64 itself
#: here. Warp keeps a subclass of uint64 only so that its graph capture (APIC) can tell which values to remap.
handle = uint64


class bool_(Scalar):
    _np_, _ctype_, _cname_, _kind_ = np.bool_, ctypes.c_bool, "bool", "bool"


def unsupported_reason(t) -> str | None:
    """Why type `t` cannot be used (a type Warp has that kernels does not support), or None."""
    return getattr(t, "_unsupported_", None) if isinstance(t, type) else None


float_types = (float16, bfloat16, float32, float64)

# Warp's constrained generics (`def f(x: wp.Int)`; wp.Scalar is ScalarVar here, `Scalar` being the base class of
# the scalar types): the names exist so that modules naming them import; kernels
# does not specialise on them yet, so a kernel or function annotated with one is refused when it is built
Int = typing.TypeVar("Int", builtins.int, int8, uint8, int16, uint16, int32, uint32, int64, uint64)
Float = typing.TypeVar("Float", builtins.float, float16, bfloat16, float32, float64)
ScalarVar = typing.TypeVar("Scalar", builtins.int, builtins.float, int8, uint8, int16, uint16, int32, uint32, int64,
                        uint64, float16, bfloat16, float32, float64)
int_types = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
scalar_types = float_types + int_types + (bool_,)

_python_to_scalar = {builtins.float: float32, builtins.int: int32, builtins.bool: bool_}
# bfloat16 has no numpy dtype (its uint16 storage dtype means uint16)
_numpy_to_scalar = {np.dtype(t._np_): t for t in scalar_types if t is not bfloat16}


def value_dtype(t) -> np.dtype:
    """numpy dtype of host values of scalar type `t` (float32 for bfloat16; otherwise its storage dtype)."""
    return np.dtype(t._value_np_ if t._value_np_ is not None else t._np_)


def to_storage(t, values) -> np.ndarray:
    """Host `values` of scalar type `t` as its stored numpy representation (bfloat16: rounded uint16 patterns)."""
    if t is bfloat16:
        return halfbits.float32_to_bfloat16_bits(values)
    return np.asarray(values, dtype=t._np_)


def from_storage(t, stored) -> np.ndarray:
    """Host values from the stored representation of scalar type `t` (inverse of `to_storage`)."""
    if t is bfloat16:
        return halfbits.bfloat16_bits_to_float32(stored)
    return np.asarray(stored)


def is_scalar(t) -> bool:
    return isinstance(t, type) and issubclass(t, Scalar) and t is not Scalar


def is_float(t) -> bool:
    return is_scalar(t) and t._kind_ == "float"


def is_int(t) -> bool:
    return is_scalar(t) and t._kind_ in ("int", "uint")


# --------------------------------------------------------------------------------------------------------------
# Composite value types (vectors, matrices, quaternions, transforms)


class Composite(CompositeAccess):
    """Base of fixed-size value types: a flat tuple of scalars with a shape.

    Instances hold their components in a numpy array `_data` of the scalar type, laid out row-major; this is also
    their memory layout in C++ (`wp::vec_t`, `wp::mat_t`, `wp::quat_t`, `wp::transform_t`).
    """

    _shape_: tuple = ()
    _wp_scalar_type_ = float32
    _category_ = ""  # "vector", "matrix", "quat", "transform"
    __array_priority__ = 100  # numpy scalars and arrays defer to our reflected operators (`2.0 / v`)

    def __init__(self, *args, **kwargs):
        # per class: component count, host dtype, whether plain Python numbers fill it directly (`wp.vec3(x, y,
        # z)`, the common Python-side form: 10x cheaper than the general path below)
        n, st, direct = type(self).__dict__.get("_layout_cache") or _layout(type(self))
        if direct and not kwargs and len(args) == n and all(type(a) in (builtins.float, int) for a in args):
            self._data = np.array(args, dtype=st)
            return
        if self._category_ == "transform" and (kwargs or not args):
            # Warp's Python-side transform: p defaults to zero and q to the identity rotation (inside kernels,
            # wp.transform() is all zeros there as here)
            unknown = [k for k in kwargs if k not in ("p", "q")]
            if unknown:
                raise TypeError(f"got an unexpected keyword argument '{unknown[0]}'")
            p = kwargs.get("p", args[0] if args else (0.0, 0.0, 0.0))
            q = kwargs.get("q", args[1] if len(args) > 1 else (0.0, 0.0, 0.0, 1.0))
            args = (p, q)
        elif kwargs:
            raise TypeError(f"{type(self).__name__}() takes no keyword arguments")
        if len(args) == 0:
            data = np.zeros(n, dtype=st)
        elif len(args) == 1 and np.ndim(args[0]) == 0 and self._category_ in ("vector", "matrix"):
            data = np.full(n, _components(args[0], st)[0], dtype=st)
        elif len(args) == 1:
            # a copy, as Warp's constructors make: `vec3(v)` must not share v's components
            data = np.array(_components(args[0], st))
        else:
            self._check_rows(args)
            data = np.concatenate([_components(a, st) for a in args])
        if data.size != n:
            raise ValueError(f"Invalid number of arguments in {self._category_} constructor, expected {n} elements, "
                             f"got {data.size}")  # Warp's wording
        self._data = halfbits.round_to_bfloat16(data) if self._wp_scalar_type_ is bfloat16 else data

    # Python-side conveniences; kernels never call these.
    def numpy(self) -> np.ndarray:
        return self._data.reshape(self._shape_).copy()

    def __array__(self, dtype=None, copy=None):
        a = self._data.reshape(self._shape_)
        return a.astype(dtype) if dtype is not None else a

    def __len__(self):
        return self._shape_[0]

    def __getitem__(self, key):
        self._check_key(key)
        item = self._data.reshape(self._shape_)[key]
        if not isinstance(item, np.ndarray):
            return host_scalar(self._wp_scalar_type_, item)
        if self._category_ == "transform":
            return item
        sliced = any(isinstance(k, slice) for k in (key if isinstance(key, tuple) else (key,)))
        if item.ndim == 1 and (sliced or self._category_ == "matrix"):
            # a row, or a slice: a new vector (a quaternion's slice too), as inside kernels
            return _wrap_components(self, item.copy(), vector(item.shape[0], self._wp_scalar_type_))
        if item.ndim == 2 and sliced:
            shape = item.shape if item.size else (0, 0)  # an empty selection is a 0x0 matrix, as in Warp
            return _wrap_components(self, item.reshape(-1).copy(), matrix(shape, self._wp_scalar_type_))
        return item

    def __setitem__(self, key, value):
        self._check_key(key)
        self._assign(key, value)  # composite_access.py: Warp's errors

    def __iter__(self):
        return (self[i] for i in range(self._shape_[0]))

    def __eq__(self, other):
        return _equal(self, other)

    def __hash__(self):
        return hash((type(self), self._data.tobytes()))

    def __repr__(self):
        # Warp's form for vectors, quaternions and transforms: `vec3f([1.0, 2.0, 3.0])`, components of a scalar
        # type other than float32 and int32 spelled with it (`vec4d([float64(1.0), ...])`); matrices keep this
        # toolkit's constructor form (Warp prints them as plain objects)
        values = self._data.tolist()
        if len(self._shape_) != 1:
            return f"{type(self).__name__}({', '.join(repr(x) for x in values)})"
        scalar = self._wp_scalar_type_
        if scalar is not float32 and scalar is not int32:
            values = [f"{scalar._cname_}({x!r})" for x in values]
        else:
            values = [repr(x) for x in values]
        return f"{warp_type_name(type(self))}([{', '.join(values)}])"

    def __bytes__(self):
        """The value's native bytes (its components in storage order), as `bytes()` of Warp's ctypes values."""
        if self._wp_scalar_type_ is bfloat16:
            return halfbits.float32_to_bfloat16_bits(self._data).tobytes()
        return np.ascontiguousarray(self._data, dtype=self._wp_scalar_type_._np_).tobytes()

    def __str__(self):
        return _to_str(self)

    # Python-side arithmetic follows the kernel operators (see the end of this module).
    def __add__(self, o):
        return _elementwise(self, o, "+")

    def __radd__(self, o):
        return _elementwise(self, o, "+", reverse=True)

    def __sub__(self, o):
        return _elementwise(self, o, "-")

    def __rsub__(self, o):
        return _elementwise(self, o, "-", reverse=True)

    def __mul__(self, o):
        return _product(self, o)

    def __rmul__(self, o):
        return _product(self, o, reverse=True)

    def __matmul__(self, o):
        return _matmul(self, o)

    def __rmatmul__(self, o):
        return _matmul(o, self)

    def __truediv__(self, o):
        return _elementwise(self, o, "/")

    def __rtruediv__(self, o):
        return _elementwise(self, o, "/", reverse=True)

    def __mod__(self, o):
        return _elementwise(self, o, "%")

    def __rmod__(self, o):
        return _elementwise(self, o, "%", reverse=True)

    def __neg__(self):
        return _wrap_components(self, -self._data)

    def __pos__(self):
        return _wrap_components(self, self._data.copy())

    def __getattr__(self, name):
        idx = _COMPONENT_INDEX.get(name)
        if idx is not None and self._category_ in ("vector", "quat") and idx < self._shape_[0]:
            return self._data[idx]
        if self._category_ == "transform" and name in ("p", "q"):
            # a transform's translation and rotation, as Warp's Python transforms give them (copies)
            scalar = self._wp_scalar_type_
            part = self._data[:3] if name == "p" else self._data[3:]
            return _wrap_components(self, part.copy(), vector(3, scalar) if name == "p" else quaternion(scalar))
        if name[:1] == "_":  # a probe such as getattr(v, "_wp_fixed_", False) on the launch path: no message
            raise AttributeError(name)
        raise AttributeError(f"'{warp_type_name(type(self))}' object has no attribute '{name}'")  # Warp's words

    def __setattr__(self, name, value):
        idx = _COMPONENT_INDEX.get(name)
        if idx is not None and self._category_ in ("vector", "quat"):
            self._data[idx] = value
        elif self._category_ == "transform" and name in ("p", "q"):
            part = slice(0, 3) if name == "p" else slice(3, 7)
            self._data[part] = np.asarray(value, dtype=self._data.dtype).reshape(-1)
        else:
            object.__setattr__(self, name, value)

    @classmethod
    def _ctype(cls):
        t = cls.__dict__.get("_ctype_cache")
        if t is None:  # built once per class: launches pack composites on their hot path
            t = cls._wp_scalar_type_._ctype_ * int(np.prod(cls._shape_))
            setattr(cls, "_ctype_cache", t)
        return t

    def _to_ctype(self):
        t = self._ctype()
        if self._wp_scalar_type_ is float16:
            return t(*self._data.view(np.uint16).tolist())
        if self._wp_scalar_type_ is bfloat16:
            return t(*halfbits.float32_to_bfloat16_bits(self._data).tolist())
        return t(*self._data.tolist())


def _layout(cls) -> tuple:
    st = value_dtype(cls._wp_scalar_type_)
    direct = st.kind == "f" and cls._wp_scalar_type_ is not bfloat16 and cls._category_ in ("vector", "quat")
    cls._layout_cache = (int(np.prod(cls._shape_)), st, direct)
    return cls._layout_cache


def _components(value, st: np.dtype) -> np.ndarray:
    """Flat components of a constructor argument in scalar dtype `st`; integers wrap like the C++ types."""
    a = np.asarray(value._data if isinstance(value, Composite) else value)
    if a.dtype != st:
        with np.errstate(over="ignore", invalid="ignore"):
            a = a.astype(st)
    return a.reshape(-1)


_COMPONENT_INDEX = {"x": 0, "y": 1, "z": 2, "w": 3}

_composite_cache: dict = {}
# Warp's name of each category's native template (`wp.types` introspection)
_GENERIC_NAME = {"vector": "vec_t", "matrix": "mat_t", "quat": "quat_t", "transform": "transform_t"}


def _make_composite(category: str, shape: tuple, dtype, name: str):
    dtype = scalar_type(dtype)
    key = (category, shape, dtype)
    t = _composite_cache.get(key)
    if t is None:
        t = type(name, (Composite,), {"_shape_": shape, "_wp_scalar_type_": dtype, "_category_": category,
                                      "_wp_generic_type_str_": _GENERIC_NAME[category]})
        t._length_ = shape[0] if len(shape) == 1 else shape[0] * shape[1]
        _composite_cache[key] = t
    return t


_SUFFIX = {float16: "h", bfloat16: "bf", float32: "", float64: "d", int8: "b", uint8: "ub", int16: "s", uint16: "us",
           int32: "i", uint32: "ui", int64: "l", uint64: "ul", bool_: "bool"}


def _is_any(x) -> bool:
    import typing
    return x is typing.Any or x is Any


def _constrained_composite(category: str, shape: tuple, dtype):
    """`vector(3, wp.Int)`: a type that exists (a module naming it imports) and is refused as an annotation."""
    why = (f"{category} of Warp's constrained generic {dtype} is not supported by kernels (use a concrete scalar "
           "type, or Any)")
    return type(f"{category}({shape}, {dtype})", (GenericComposite,),
                {"_shape_": tuple(shape), "_wp_scalar_type_": Any, "_category_": category, "_unsupported_": why})


def _generic_composite(category: str, shape: tuple, dtype):
    """A pattern type such as `vector(Any, float32)`: an annotation matching every vector of float32.

    Kernels and functions with such a parameter are generic (compiled per concrete argument type); the pattern
    itself has no layout and cannot be constructed.
    """
    dtype = Any if _is_any(dtype) else scalar_type(dtype)
    shape = tuple(Any if _is_any(d) else int(d) for d in shape)
    key = ("generic", category, shape, dtype)
    t = _composite_cache.get(key)
    if t is None:
        dims = ", ".join("Any" if d is Any else str(d) for d in shape)
        name = f"{category}(({dims}), {type_repr(dtype)})"
        t = type(name, (GenericComposite,), {"_shape_": shape, "_wp_scalar_type_": dtype, "_category_": category})
        _composite_cache[key] = t
    return t


class GenericComposite:
    """Base of generic composite annotations (see `_generic_composite`)."""

    _shape_: tuple = ()
    _wp_scalar_type_ = None
    _category_ = ""

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"{cls.__name__} is a generic annotation (it has Any in it) and has no values")

    @classmethod
    def matches(cls, t) -> bool:
        """Whether concrete type `t` is an instance of this pattern."""
        if not is_composite(t) or t._category_ != cls._category_ or len(t._shape_) != len(cls._shape_):
            return False
        if cls._wp_scalar_type_ is not Any and t._wp_scalar_type_ is not cls._wp_scalar_type_:
            return False
        return all(d is Any or d == e for d, e in zip(cls._shape_, t._shape_))


def is_generic_composite(t) -> bool:
    return isinstance(t, type) and issubclass(t, GenericComposite) and t is not GenericComposite


def vector(length: int, dtype=float32):
    """Vector type with `length` components of scalar `dtype` (Warp's `wp.types.vector`).

    `length` or `dtype` may be `Any`: the result is then a generic annotation (see `_generic_composite`).
    """
    if isinstance(dtype, typing.TypeVar):
        return _constrained_composite("vector", (length,), dtype)
    if _is_any(length) or _is_any(dtype):
        return _generic_composite("vector", (length,), dtype)
    dtype = scalar_type(dtype)
    return _make_composite("vector", (int(length),), dtype, f"vec{length}{_SUFFIX[dtype]}")


def matrix(shape, dtype=float32):
    """Matrix type of `shape` (rows, cols) with scalar `dtype` (Warp's `wp.types.matrix`).

    A dimension or `dtype` may be `Any`: the result is then a generic annotation (see `_generic_composite`).
    """
    if len(shape) != 2:  # Warp's wording
        raise ValueError(f"Matrix shape must have exactly two dimensions, got {len(shape)} dimension"
                         f"{'' if len(shape) == 1 else 's'} in shape {tuple(shape)}")
    if isinstance(dtype, typing.TypeVar):
        return _constrained_composite("matrix", tuple(shape), dtype)
    if _is_any(shape[0]) or _is_any(shape[1]) or _is_any(dtype):
        return _generic_composite("matrix", tuple(shape), dtype)
    dtype = scalar_type(dtype)
    rows, cols = int(shape[0]), int(shape[1])
    return _make_composite("matrix", (rows, cols), dtype, f"mat{rows}{cols}{_SUFFIX[dtype]}")


def quaternion(dtype=float32):
    dtype = scalar_type(dtype)
    return _make_composite("quat", (4,), dtype, f"quat{_SUFFIX[dtype]}")


def transformation(dtype=float32):
    dtype = scalar_type(dtype)
    return _make_composite("transform", (7,), dtype, f"transform{_SUFFIX[dtype]}")


def spatial_vector_type(dtype=float32):
    dtype = scalar_type(dtype)
    return _make_composite("vector", (6,), dtype, f"spatial_vector{_SUFFIX[dtype]}")


def is_composite(t) -> bool:
    return isinstance(t, type) and issubclass(t, Composite) and t is not Composite


def is_vector(t) -> bool:
    return is_composite(t) and t._category_ == "vector"


def is_matrix(t) -> bool:
    return is_composite(t) and t._category_ == "matrix"


def is_quat(t) -> bool:
    return is_composite(t) and t._category_ == "quat"


def is_transform(t) -> bool:
    return is_composite(t) and t._category_ == "transform"


def scalar_type(t):
    """The scalar type class for `t`, which may be a scalar class, a Python type, a numpy dtype or a composite."""
    if is_scalar(t):
        return t
    if is_composite(t):
        return t._wp_scalar_type_
    if t in _python_to_scalar:
        return _python_to_scalar[t]
    try:
        return _numpy_to_scalar[np.dtype(t)]
    except (TypeError, KeyError):
        raise TypeError(f"not a scalar type: {t!r}") from None


def canonical_type(t):
    """Map annotations users write (`float`, `int`, `bool`, numpy dtypes) to our type classes; others unchanged."""
    if t in _python_to_scalar:
        return _python_to_scalar[t]
    if isinstance(t, type) and issubclass(t, np.generic):
        if t is _VALUE_CLASSES.get(bfloat16):  # a float32 subclass that means bfloat16
            return bfloat16
        return _numpy_to_scalar[np.dtype(t)]
    return t


def type_size(t) -> int:
    """Number of scalar components of type `t` (1 for a scalar, 9 for mat33), as Warp's `types.type_size`."""
    if is_composite(t):
        return t._length_
    if is_scalar(t):
        return 1
    raise TypeError(f"type {t!r} has no size")


def type_size_in_bytes(t) -> int:
    """Size in bytes of one value of type `t` in memory."""
    if is_scalar(t):
        return ctypes.sizeof(t._ctype_)
    if is_composite(t):
        return ctypes.sizeof(t._ctype())
    if hasattr(t, "_ctype"):
        return ctypes.sizeof(t._ctype())
    info = getattr(t, "_wp_struct_", None)
    if info is not None:  # a @struct: its packed native layout
        return ctypes.sizeof(info.ctype())
    raise TypeError(f"type {t!r} has no size")


def type_repr(t) -> str:
    """Short human-readable name of a type for error messages."""
    if t is None:
        return "None"
    if is_scalar(t) and t is bool_:
        return "bool"
    return getattr(t, "__name__", None) or str(t)


def numpy_dtype(t):
    """numpy dtype of the scalars that make up `t`."""
    return np.dtype(scalar_type(t)._np_)


def type_shape(t) -> tuple:
    """Shape of one value of `t` as numpy sees it (() for scalars, (3,) for vec3, (3, 3) for mat33)."""
    return t._shape_ if is_composite(t) else ()


# Warp's public type names ------------------------------------------------------------------------------------

vec2h, vec3h, vec4h = (vector(n, float16) for n in (2, 3, 4))
vec2, vec3, vec4 = (vector(n, float32) for n in (2, 3, 4))
vec2f, vec3f, vec4f = vec2, vec3, vec4
vec2d, vec3d, vec4d = (vector(n, float64) for n in (2, 3, 4))
vec2i, vec3i, vec4i = (vector(n, int32) for n in (2, 3, 4))
vec2ui, vec3ui, vec4ui = (vector(n, uint32) for n in (2, 3, 4))
vec2l, vec3l, vec4l = (vector(n, int64) for n in (2, 3, 4))
vec2b, vec3b, vec4b = (vector(n, int8) for n in (2, 3, 4))
vec2ub, vec3ub, vec4ub = (vector(n, uint8) for n in (2, 3, 4))
vec2s, vec3s, vec4s = (vector(n, int16) for n in (2, 3, 4))
vec2us, vec3us, vec4us = (vector(n, uint16) for n in (2, 3, 4))
vec2ul, vec3ul, vec4ul = (vector(n, uint64) for n in (2, 3, 4))
mat22, mat33, mat44 = (matrix((n, n), float32) for n in (2, 3, 4))
mat22f, mat33f, mat44f = mat22, mat33, mat44
mat22d, mat33d, mat44d = (matrix((n, n), float64) for n in (2, 3, 4))
mat22h, mat33h, mat44h = (matrix((n, n), float16) for n in (2, 3, 4))
quat, quatf, quatd, quath = quaternion(float32), quaternion(float32), quaternion(float64), quaternion(float16)
transform, transformf, transformd = transformation(float32), transformation(float32), transformation(float64)
transformh = transformation(float16)
spatial_vector, spatial_vectorf, spatial_vectord = (spatial_vector_type(float32), spatial_vector_type(float32),
                                                    spatial_vector_type(float64))
spatial_vectorh = spatial_vector_type(float16)
spatial_matrix, spatial_matrixd = matrix((6, 6), float32), matrix((6, 6), float64)
spatial_matrixf, spatial_matrixh = spatial_matrix, matrix((6, 6), float16)


def warp_type_name(t) -> str:
    """Warp's spelling of a type in messages (`vec4f`, `mat22d`, `quatf`, `float32`)."""
    if is_scalar(t):
        return t._cname_
    name = type_repr(t)
    if is_composite(t) and t._wp_scalar_type_ is float32 and not name.endswith("f"):
        return name + "f"
    return name


def types_equal(a, b) -> bool:
    """Whether two annotations name the same type (`float` and `float32`, `vector(3, float)` and `vec3`)."""
    return canonical_type(a) == canonical_type(b)


# ---------------------------------------------------------------------------------------------------------------
# Python-side operators of vector, matrix, quaternion and transform values (outside kernels). They follow the
# kernel semantics of the same operators: `*` is the matrix/quaternion/transform product where the kernel has one
# (mat * vec, vec * mat, quat * quat, transform * transform), integer division truncates toward zero and `%` takes
# the sign of the dividend (C++), and integer results wrap around like the C++ types.


def _is_composite_value(x) -> bool:
    return isinstance(x, Composite)


def _operand_array(x, shape=None) -> np.ndarray:
    """Components of a composite (in its shape) or of a sequence/scalar operand as a numpy array."""
    if _is_composite_value(x):
        return x._data.reshape(x._shape_)
    a = np.asarray(x)
    return a.reshape(shape) if shape is not None and a.size == int(np.prod(shape)) else a


def _wrap_components(like, data, cls=None):
    """A value of `cls` (default: the type of `like`) holding `data`, converted to its scalar type (ints wrap)."""
    cls = cls or type(like)
    out = cls.__new__(cls)
    st = value_dtype(cls._wp_scalar_type_)
    a = np.asarray(data)
    if a.dtype != st:
        a = a.astype(st) if st.kind != "f" or a.dtype.kind != "O" else a.astype(np.float64).astype(st)
    a = np.array(a, dtype=st).reshape(-1)
    object.__setattr__(out, "_data", halfbits.round_to_bfloat16(a) if cls._wp_scalar_type_ is bfloat16 else a)
    return out


def _elementwise(x, y, op: str, reverse: bool = False):
    """`x op y` (or `y op x` when `reverse`) component by component. x is a composite; y a composite or sequence
    of the same shape, or for `/` a scalar."""
    a = _operand_array(x)
    b = _operand_array(y, x._shape_)
    if np.shape(b) != a.shape and not (op == "/" and np.ndim(b) == 0):
        raise TypeError(f"cannot apply '{op}' to {type(x).__name__} and {type(y).__name__}")
    if reverse:
        a, b = b, a
    is_int = x._wp_scalar_type_._kind_ in ("int", "uint")
    with np.errstate(over="ignore"):
        if op == "+":
            r = np.add(a, b)
        elif op == "-":
            r = np.subtract(a, b)
        elif op == "/":
            r = _divide(a, b, is_int)
        else:
            r = np.fmod(a, b)
    return _wrap_components(x, r)


def _product(x, y, reverse: bool = False):
    """`x * y` (or `y * x` when `reverse`) for a composite x: scaling by a scalar, else the kernel's product."""
    if not _is_composite_value(y) and np.ndim(y) == 0:
        with np.errstate(over="ignore"):
            a, b = _operand_array(x), _operand_array(y)
            return _wrap_components(x, np.multiply(b, a) if reverse else np.multiply(a, b))
    left, right = (y, x) if reverse else (x, y)
    return _matmul(left, right)


def _matmul(left, right):
    """The kernel's `mul` of two composites: mat @ mat, mat @ vec, vec @ mat, quat * quat, transform * transform."""
    lt, rt = type(left), type(right)
    if not _is_composite_value(left):
        left = _wrap_components(right, left, vector(len(left), rt._wp_scalar_type_)) if np.ndim(left) == 1 else left
        lt = type(left)
    if not _is_composite_value(right):
        right = _wrap_components(left, right, vector(len(right), lt._wp_scalar_type_)) if np.ndim(right) == 1 else right
        rt = type(right)
    a, b = _operand_array(left), _operand_array(right)
    with np.errstate(over="ignore"):
        if is_quat(lt) and is_quat(rt):
            return _wrap_components(left, _quat_product(a, b))
        if is_transform(lt) and is_transform(rt):
            p = a[:3] + _quat_rotate_vector(a[3:], b[:3])
            return _wrap_components(left, np.concatenate([p, _quat_product(a[3:], b[3:])]))
        if (is_matrix(lt) or is_vector(lt)) and (is_matrix(rt) or is_vector(rt)) and \
                not (is_vector(lt) and is_vector(rt)):
            if a.shape[-1] != b.shape[0]:
                raise TypeError(f"cannot multiply {lt.__name__} by {rt.__name__}: shapes {a.shape} and {b.shape}")
            r = np.matmul(a, b)
            st = lt._wp_scalar_type_
            cls = vector(r.shape[0], st) if r.ndim == 1 else matrix(r.shape, st)
            return _wrap_components(left, r, cls)
    raise TypeError(f"no product of {lt.__name__} and {rt.__name__}")


def _equal(x, other) -> bool:
    """Warp's `==` on values: same shape and equal components; never raises for another shape."""
    a = _operand_array(x)
    try:
        b = np.asarray(_operand_array(other))
    except (ValueError, TypeError):
        return False
    if b.shape != a.shape:
        if b.size != a.size or b.ndim != 1 or a.ndim == 1:
            return False
        b = b.reshape(a.shape)
    return bool(np.all(a == b))


def _to_str(x) -> str:
    """`str()` of a value as Warp prints it: `[1.0, 2.0]`, matrices one row per line."""
    a = _operand_array(x)
    if a.ndim == 1:
        return "[" + ", ".join(str(v) for v in a) + "]"
    return "[" + ",\n ".join("[" + ", ".join(str(v) for v in row) + "]" for row in a) + "]"
