"""Users' subclasses of the array classes that give their own native descriptor (Warp's protocol): a subclass may
override `__ctype__()`, and what it returns is what launches and struct fields pass to native code, once checked.

A descriptor is accepted when its class is the family's descriptor class or a subclass of it of the same size (a
copy of the native fields is passed, so a Python property of the subclass cannot change what native code reads),
and when its number of dimensions is the array's (plain and indexed arrays). The checks are about the layout; the
pointers are the subclass's responsibility, as in Warp. Instances of classes that do not override `__ctype__`
(the built-in classes, most subclasses) take the usual path and never come here.
"""

from __future__ import annotations

import ctypes

from ..typesys import ArrayDescriptor, ArrayType, IndexedArrayDescriptor, array_descriptor_type


def _native_class(cls):
    """The toolkit's array class `cls` derives from (its family)."""
    return next(c for c in cls.__mro__ if c.__module__.startswith("kernels.") and "__ctype__" in c.__dict__)


def overrides_descriptor(value) -> bool:
    """Whether `value`'s class is a user's subclass that overrides `__ctype__`."""
    cls = type(value)
    if cls.__module__.startswith("kernels."):
        return False
    return getattr(cls, "__ctype__", None) is not getattr(_native_class(cls), "__ctype__", None)


def subclass_descriptor(value, t: ArrayType):
    """The checked native descriptor `value.__ctype__()` returns, for an array parameter or field of type `t`.

    Raises:
        TypeError: the descriptor's class or size is not the family's.
        ValueError: it describes another number of dimensions than the array has.
        Whatever the subclass's `__ctype__` raises.
    """
    expected = array_descriptor_type(t)
    descriptor = value.__ctype__()
    name = type(value).__qualname__
    if not issubclass(type(descriptor), expected):  # type(), not isinstance: a class property cannot spoof it
        raise TypeError(f"Array subclass '{name}' must return {expected.__name__} from __ctype__(), got "
                        f"{type(descriptor).__name__}")
    if ctypes.sizeof(descriptor) != ctypes.sizeof(expected):
        raise TypeError(f"Array subclass '{name}' returned an incompatible {expected.__name__} size")
    if type(descriptor) is not expected:
        descriptor = expected.from_buffer_copy(descriptor)
    if expected is ArrayDescriptor or expected is IndexedArrayDescriptor:
        ndim = descriptor.ndim if expected is ArrayDescriptor else descriptor.data.ndim
        if ndim != value.ndim:
            raise ValueError(f"Array subclass '{name}' returned a descriptor with {ndim} dimension(s), expected "
                             f"{value.ndim}")
    return descriptor
