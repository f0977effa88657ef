"""`@wp.struct`: user-defined value types with scalar, vector, matrix, array and nested struct members.

A struct instance on the Python side holds its members live (arrays by reference): it is converted to its native
layout at each launch, so arrays put into it before or after `requires_grad` was set are seen as they are then.
"""

from __future__ import annotations

import re
import sys
import weakref

import numpy as np

from .. import types as T
from .array import array
from .array_create import as_array
from .array_subclass import overrides_descriptor, subclass_descriptor
from ..typesys import ArrayType, StructInfo, is_struct, refuse_array_subclass_annotations

# id(struct instance) -> (weak reference to it, its packed native form, data derived from it) (see _to_ctype): the
# entry goes with the instance, and a copy of an instance never shares it. Keyed by id, not by a
# WeakKeyDictionary, whose lookups make a weak reference each time: launches look their struct arguments up on the
# hot path.
_PACKED: dict = {}


def packed_form(s):
    """The native form of struct `s` cached since its last field assignment (the one its launches passed), or
    None. A new object after any assignment to one of its fields (not to a field of a struct member)."""
    entry = _PACKED.get(id(s))
    if entry is not None and entry[0]() is s:
        return entry[1]
    return None


def packed_derived(s) -> dict | None:
    """A dict that lives as long as the packed form of struct `s` (None when it has none): for data derived from
    the struct's field values as packed, which an assignment to one of its fields drops with the packed form (a
    Tape keeps its copy of the struct there). A nested struct's fields may change without a new packed form."""
    entry = _PACKED.get(id(s))
    if entry is not None and entry[0]() is s:
        return entry[2]
    return None


def _keep_packed(s, c):
    key = id(s)

    def forget(ref):
        if _PACKED.get(key, (None,))[0] is ref:
            del _PACKED[key]

    _PACKED[key] = (weakref.ref(s, forget), c, {})


def _field_type(name, ann, cls):
    t = T.canonical_type(ann)
    if isinstance(t, ArrayType):
        return t
    if isinstance(t, array):
        return ArrayType(T.canonical_type(t.dtype), t.ndim)
    if getattr(t, "_wp_indexed_", False) or getattr(t, "_wp_fabric_", False):  # wp.indexedarray(dtype=float)
        return t.type
    if is_struct(t):
        if t._wp_struct_.error is not None:
            raise TypeError(f"struct {cls.__name__}: field '{name}' is unusable: {t._wp_struct_.error}")
        return t
    if T.is_scalar(t) or T.is_composite(t):
        return t
    why = getattr(ann, "_unsupported_", None)  # a Warp type kernels does not have (wp.indexedarray[float])
    raise TypeError(f"struct {cls.__name__}: field '{name}' has unsupported type {ann!r}" + (f": {why}" if why else ""))


def struct(cls):
    """Decorator: turn an annotated class into a kernel struct type (Warp's `@wp.struct`)."""
    if any(getattr(base, "_wp_struct_", None) is not None for base in cls.__bases__):
        # its fields would be its own only (the struct's native layout has no base part); Warp's wording
        raise RuntimeError("Warp structs must be defined as base classes")
    # string annotations (from __future__ import annotations) evaluate in the defining module's namespace
    namespace = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    hints = {k: eval(v, dict(namespace)) if isinstance(v, str) else v for k, v in cls.__annotations__.items()}
    refuse_array_subclass_annotations(hints, f"struct '{cls.__name__}'")
    fields = {}
    error = None
    for name, ann in hints.items():
        try:
            fields[name] = _field_type(name, ann, cls)
        except TypeError as e:
            error = error or str(e)
    info = StructInfo(cls, fields)
    info.error = error
    ns = _value_methods(cls, info)
    ns.update({"_wp_struct_": info, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
               "__doc__": cls.__doc__})
    new_cls = type(cls.__name__, (), ns)
    info.cls = new_cls
    if "cls" not in fields:
        new_cls.cls = new_cls  # Warp's `Struct.cls`: the class of the struct's instances (here the struct itself)
    if "key" not in fields:
        # Warp's `Struct.key`: the qualified name, dots spelled "__" and other non-identifier characters dropped
        new_cls.key = re.sub("[^0-9a-zA-Z_]+", "", cls.__qualname__.replace(".", "__"))
    return new_cls


def give_values(cls):
    """Give the native struct type `cls` (typesys.native_struct: declared with the builtin table, below the
    runtime) the Python side of a @struct: keyword constructor, checked field assignment, packing for launches
    and numpy records. Returns `cls`, changed in place: the builtin table keeps the same type object."""
    for name, method in _value_methods(cls, cls._wp_struct_).items():
        setattr(cls, name, method)
    return cls


def _value_methods(cls, info: StructInfo) -> dict:
    """The methods of a struct type's Python values, for the fields of `info` (`cls` names it in errors)."""
    fields = info.fields

    def __init__(self, **kwargs):
        for name, t in fields.items():
            object.__setattr__(self, name, _default(t))
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in fields:
            raise AttributeError(f"struct {cls.__name__} has no field '{name}'")
        object.__setattr__(self, name, _check_value(cls, name, fields[name], value))
        _PACKED.pop(id(self), None)

    # how each field is packed, decided once (launches pack structs on their hot path): 0 array, 1 struct or
    # composite (its own _to_ctype), 2 scalar
    kinds = [(name, t, 0 if isinstance(t, ArrayType) else 1 if is_struct(t) or T.is_composite(t) else 2)
             for name, t in fields.items()]
    # fields whose value may change without an assignment to the field (composites changed in place, nested
    # structs' own fields): packed again at every call
    mutable = [name for name, t, kind in kinds if kind == 1]

    def _to_ctype(self):
        """The native form. Kept between calls (a launch packs its struct arguments on the hot path) and made
        again after a field assignment; arrays and scalars are immutable here, composite and struct fields are
        packed again each time."""
        info.check_usable()
        c = packed_form(self)
        if c is not None:
            for name in mutable:
                setattr(c, name, getattr(self, name)._to_ctype())
            return c
        c = info.ctype()()
        for name, t, kind in kinds:
            v = getattr(self, name)
            if kind == 0:
                if v is not None:
                    setattr(c, name, subclass_descriptor(v, t) if overrides_descriptor(v) else v._descriptor())
            elif kind == 1:
                setattr(c, name, v._to_ctype())
            else:
                setattr(c, name, _scalar_bits(t, v))
        _keep_packed(self, c)
        return c

    def _to_numpy_record(self):
        return np.frombuffer(bytes(self._to_ctype()), dtype=info.numpy_dtype)[0]

    def numpy_value(self):
        """This value as one record of `numpy_dtype()` (for filling numpy structured arrays)."""
        return self._to_numpy_record()

    @classmethod
    def _from_numpy_record(cls_, record):
        return _from_ctype(cls_, info.ctype().from_buffer_copy(record.tobytes()))

    @staticmethod
    def numpy_dtype():
        """The numpy structured dtype of one element of an array of this struct (its native layout)."""
        return info.numpy_dtype

    def __repr__(self):
        return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in fields)})"

    return {"__init__": __init__, "__setattr__": __setattr__, "_to_ctype": _to_ctype,
            "_to_numpy_record": _to_numpy_record, "__ctype__": _to_ctype,
            "_from_numpy_record": _from_numpy_record, "numpy_dtype": numpy_dtype,
            "numpy_value": numpy_value, "__repr__": __repr__}


def _from_ctype(cls, c):
    """A struct instance with the values of its native form `c` (array members become views of their memory)."""
    out = cls()
    for name, t in cls._wp_struct_.fields.items():
        v = getattr(c, name)
        if isinstance(t, ArrayType) and t.fabric:
            raise TypeError(f"struct {cls.__name__}.{name}: a Fabric array cannot be read back from native memory "
                            "(its bucket table is the Python object's)")
        elif isinstance(t, ArrayType) and t.indexed:
            value = _indexed_from_ctype(t, v)
        elif isinstance(t, ArrayType):
            shape = tuple(v.shape[k] for k in range(v.ndim))
            strides = tuple(v.strides[k] for k in range(v.ndim))
            value = array(ptr=v.data, dtype=t.dtype, shape=shape, strides=strides) if v.data else None
        elif is_struct(t):
            value = _from_ctype(t, v)
        elif T.is_composite(t):
            raw = np.ctypeslib.as_array(v)
            value = t(raw.view(np.float16) if T.scalar_type(t) is T.float16 else T.from_storage(T.scalar_type(t), raw))
        elif t is T.float16:
            value = np.uint16(v).view(np.float16)
        elif t is T.bfloat16:
            value = t(T.from_storage(t, v))
        else:
            value = v
        object.__setattr__(out, name, t._np_(value) if T.is_scalar(t) and t not in (T.float16, T.bfloat16) else value)
    return out


def _indexed_from_ctype(t, v):
    """An indexed array viewing the memory native form `v` (an IndexedArrayDescriptor) points to, or None."""
    from .indexedarray import indexedarray

    d = v.data
    if not d.data:
        return None
    parent = array(ptr=d.data, dtype=t.dtype, shape=tuple(d.shape[k] for k in range(d.ndim)),
                   strides=tuple(d.strides[k] for k in range(d.ndim)))
    indices = [array(ptr=v.indices[k], dtype=T.int32, shape=(v.shape[k],)) if v.indices[k] else None
               for k in range(d.ndim)]
    return indexedarray(parent, indices)


def _scalar_bits(t, v):
    """The ctypes field value of scalar `v` of type `t` (16-bit floats as their bit patterns)."""
    if t is T.float16:
        return int(np.float16(v).view(np.uint16))
    if t is T.bfloat16:
        return int(T.to_storage(t, float(v)))
    return t._np_(v).item()


def _default(t):
    if isinstance(t, ArrayType):
        return None
    if is_struct(t):
        return t()
    if T.is_composite(t):
        return t()
    return t(0) if t is T.bfloat16 else t._np_(0)


def _check_value(cls, name, t, value):
    if isinstance(t, ArrayType):
        if value is None:
            return None
        if not t.plain:  # Warp's checks and wording
            if getattr(value, "type", None) is None or not isinstance(value.type, ArrayType) or \
                    (value.type.indexed, value.type.fabric) != (t.indexed, t.fabric):
                what = {(True, False): "indexed array", (False, True): "Fabric array",
                        (True, True): "indexed Fabric array"}[(t.indexed, t.fabric)]
                raise TypeError(f"Struct field '{name}' expects a Warp {what}, got {type(value).__name__}")
        elif not isinstance(value, array):
            try:
                value = as_array(value, t)
            except TypeError:
                raise TypeError(f"Struct field '{name}' expects a Warp array, got {type(value).__name__}") from None
        if value.dtype != t.dtype and t.dtype is not T.Any:  # Warp's wording
            raise TypeError(f"Struct field '{name}' expects dtype {T.type_repr(t.dtype)}, got "
                            f"{T.type_repr(value.dtype)}")
        if value.ndim != t.ndim:
            raise TypeError(f"Struct field '{name}' expects an array with {t.ndim} dimension(s), got "
                            f"{value.ndim} dimension(s)")
        if overrides_descriptor(value):
            try:  # a user's subclass with a descriptor of its own: checked now, so the field keeps its old value
                subclass_descriptor(value, t)
            except Exception as e:  # noqa: BLE001  (the user's __ctype__ may raise anything)
                raise TypeError(f"Struct field '{name}': {type(e).__name__}: {e}") from e
        return value
    if is_struct(t):
        if type(value) is not t:
            raise TypeError(f"struct {cls.__name__}.{name}: expected {t.__name__}, got {type(value).__name__}")
        return value
    if T.is_composite(t):
        if value is None:
            return t()  # zero, as at construction
        if isinstance(value, (int, float, np.number)) or T.is_scalar_value(value):
            # one number would fill every component silently; Warp refuses it too
            raise TypeError(f"Struct field '{name}' expects {T.warp_type_name(t)} but got a single value "
                            f"({value!r}) in struct {cls.__name__}")
        return value if isinstance(value, t) else t(value)
    return t(value) if t is T.bfloat16 else t._np_(value)
