"""`wp.fabricarray` / `wp.indexedfabricarray`: Warp's views of attribute data stored in buckets (Omniverse Fabric).

A Fabric array is described by an interface dictionary (`data`, or an object's `__fabric_arrays_interface__`):
`{"version": 1, "device": "cpu", "attribs": {name: {"type": (True, "f4", count, depth, role), "access": ...,
"pointers": [...], "counts": [...], "array_lengths": [...]}}}`. Its elements are the buckets' elements one after
the other; kernels read and write them in place (native/fabricarray.h). Depth 1 makes an array of 1-d arrays
(`wp.fabricarrayarray`): a[i] is a plain array, a[i, j] its element. Nothing here owns the buckets' memory.

Fabric memory has no gradient storage (nor in Warp): kernels treat Fabric arrays as constants for
differentiation, and a taped or adjoint launch of a kernel that writes one is refused (launch.py).
Buckets live on the CPU here; a Fabric array on a CUDA device is refused.
"""

from __future__ import annotations

import ctypes
import math
import typing

import numpy as np

from .. import types as T
from ..typesys import (ArrayType, ArrayValue, FabricArrayDescriptor, FabricBucket, IndexedFabricArrayDescriptor)

_BASE_TYPES = {"b": T.bool_, "i1": T.int8, "i2": T.int16, "i4": T.int32, "i8": T.int64, "u1": T.uint8,
               "u2": T.uint16, "u4": T.uint32, "u8": T.uint64, "f2": T.float16, "f4": T.float32, "f8": T.float64}


def _annotation(params, indexed: bool) -> ArrayType:
    """`wp.fabricarray[dtype]` / `wp.fabricarray[dtype, Literal[ndim]]` (ndim 1, or 2 for an array of arrays)."""
    ndim = 1
    if isinstance(params, tuple):
        params, ndim = params
        if typing.get_origin(ndim) is typing.Literal:
            (ndim,) = typing.get_args(ndim)
    if ndim not in (1, 2):
        raise TypeError(f"a Fabric array has 1 dimension (2 for an array of arrays), got {ndim!r}")
    dtype = T.Any if params is typing.Any or params is T.Any else T.canonical_type(params)
    return ArrayType(dtype, ndim, indexed, True)


def fabric_dtype(type_info, attrib: str):
    """The element type of a Fabric attribute's type record (Warp's mapping and messages)."""
    if not type_info[0]:
        raise RuntimeError(f"Attribute '{attrib}' cannot be used in Warp")
    base = _BASE_TYPES.get(type_info[1])
    if base is None:
        raise RuntimeError(f"Attribute '{attrib}' base data type '{type_info[1]}' is not supported in Warp")
    count, role = type_info[2], type_info[4]
    if role in ("text", "path"):
        raise RuntimeError(f"Attribute '{attrib}' role '{role}' is not supported in Warp")
    if count <= 1:
        return base
    if role == "quat" and count == 4:
        return T.quaternion(base)
    if role in ("matrix", "transform", "frame"):
        n = int(math.sqrt(count))
        if n * n != count:
            raise ValueError(f"Fabric attribute '{attrib}' matrix metadata must have a square element count, "
                             f"got {count}")
        return T.matrix((n, n), base)
    return T.vector(count, base)


class fabricarray(ArrayValue):  # noqa: N801  (Warp's name)
    """Warp's `wp.fabricarray(data, attrib)`: see the module docstring. Without `data`, the annotation form
    `wp.fabricarray(dtype=float, ndim=1)`."""

    _wp_fabric_ = True
    is_contiguous = False
    requires_grad = False
    grad = None

    def __class_getitem__(cls, params):
        return _annotation(params, False)

    def __init__(self, data=None, attrib=None, dtype=typing.Any, ndim=None):
        self.buckets, self.access = None, None
        if data is None:
            self.dtype = dtype if dtype is typing.Any else T.canonical_type(dtype)
            self.ndim, self.device, self.size, self.shape = ndim or 1, None, 0, (0,)
            return
        from .device import get_device

        if not isinstance(attrib, str):
            raise ValueError(f"Invalid attribute name: {attrib}")
        if isinstance(data, dict):
            iface = data
        elif hasattr(data, "__fabric_arrays_interface__"):
            iface = data.__fabric_arrays_interface__
        else:
            raise ValueError("Invalid data argument for fabricarray: expected dict or object with "
                             "__fabric_arrays_interface__")
        if iface.get("version") != 1:
            raise ValueError(f"Unsupported Fabric interface version: {iface.get('version')}")
        if not isinstance(iface.get("device"), str):
            raise ValueError(f"Invalid Fabric interface device: {iface.get('device')}")
        self.device = get_device(iface["device"])
        if not self.device.is_cpu:
            raise NotImplementedError("Fabric arrays on a CUDA device are not supported by kernels (their bucket "
                                      "table would live in device memory); use the CPU")
        attribs = iface.get("attribs")
        if not isinstance(attribs, dict):
            raise ValueError("Failed to get Fabric interface attributes")
        info = attribs.get(attrib)
        if not isinstance(info, dict):
            raise ValueError(f"Failed to get attribute '{attrib}'")
        type_info = info["type"]
        if len(type_info) != 5:
            raise ValueError(f"Fabric attribute '{attrib}' type metadata must contain five elements, "
                             f"got {len(type_info)}: {type_info!r}")
        self.dtype = fabric_dtype(type_info, attrib)
        self.access = info["access"]
        pointers, counts = info["pointers"], info["counts"]
        if not (hasattr(pointers, "__len__") and hasattr(counts, "__len__") and len(pointers) == len(counts)):
            raise RuntimeError("Attribute pointers and counts must be lists of the same size")
        depth = type_info[3]
        if depth not in (0, 1):
            raise ValueError(f"Invalid attribute array depth: {depth}")
        self.ndim = 1 + depth
        lengths = info.get("array_lengths") if depth else None
        if depth and (not hasattr(lengths, "__len__") or len(lengths) != len(pointers)):
            raise RuntimeError("Attribute `array_lengths` must be a list of the same size as `pointers` and `counts`")
        self.buckets = (FabricBucket * len(pointers))()
        size = 0
        for k, (p, n) in enumerate(zip(pointers, counts)):
            b = self.buckets[k]
            b.index_start, b.index_end, b.ptr = size, size + int(n), p
            b.lengths = lengths[k] if lengths else None
            size += int(n)
        self.size, self.shape = size, (size,)

    @property
    def type(self) -> ArrayType:
        return ArrayType(self.dtype, self.ndim, False, True)

    def __ctype__(self):
        return self._descriptor()

    def _descriptor(self, consume: bool = False) -> FabricArrayDescriptor:
        d = FabricArrayDescriptor()
        if self.buckets is not None and len(self.buckets):
            d.buckets = ctypes.addressof(self.buckets)
            d.nbuckets, d.size = len(self.buckets), self.size
        return d

    def __len__(self):
        return self.size

    def __bool__(self):
        return self.device is not None

    def __getitem__(self, key):
        from .array import array

        if isinstance(key, array):
            return indexedfabricarray(fa=self, indices=key)
        raise ValueError(f"Fabric arrays only support indexing using index arrays, got key of type {type(key)}")

    def _bucket_arrays(self):
        """Each bucket's elements as a `wp.array` over its memory (no copy)."""
        from .array import array

        if self.ndim > 1:
            raise RuntimeError("Fabric arrays of arrays are jagged: they have no dense host form")
        return [array(ptr=b.ptr, dtype=self.dtype, shape=(b.index_end - b.index_start,), device=self.device)
                for b in self.buckets if b.index_end > b.index_start]

    def numpy(self) -> np.ndarray:
        parts = [a.numpy() for a in self._bucket_arrays()]
        if parts:
            return np.concatenate(parts)
        from .array import array
        return array(np.zeros((0,)), dtype=self.dtype).numpy() if self.dtype is not typing.Any else np.zeros(0)

    def list(self):
        from .array import array

        return array(self.numpy(), dtype=self.dtype).list() if self.size else []

    def contiguous(self):
        from .array import array

        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def _scatter(self, values: np.ndarray):
        start = 0
        for a in self._bucket_arrays():
            a.assign(values[start:start + a.shape[0]])
            start += a.shape[0]

    def fill_(self, value):
        if self.ndim > 1:
            raise RuntimeError("Filling Fabric arrays of arrays is not supported")
        for a in self._bucket_arrays():
            try:
                a.fill_(value)
            except Exception as e:  # noqa: BLE001  Warp's one error for a value the dtype cannot take
                raise ValueError(f"Failed to convert the value to the array data type: {e}") from e

    def zero_(self):
        self.fill_(0)

    def assign(self, src):
        values = src.numpy() if hasattr(src, "numpy") else np.asarray(src)
        self._scatter(np.broadcast_to(values, self.numpy().shape))

    def __str__(self):
        return f"fabricarray{self.dtype}" if self.device is None else str(self.numpy())


class indexedfabricarray(ArrayValue):  # noqa: N801  (Warp's name)
    """Warp's `wp.indexedfabricarray(fa, indices)`: element i is fa[indices[i]] (int32 indices)."""

    _wp_fabric_ = True
    is_contiguous = False
    requires_grad = False
    grad = None

    def __class_getitem__(cls, params):
        return _annotation(params, True)

    def __init__(self, fa=None, indices=None, dtype=None, ndim=None):
        from .indexedarray import _check_index_array

        if fa is None:
            self.fa = self.indices = None
            self.dtype = dtype if dtype in (None, typing.Any) else T.canonical_type(dtype)
            self.ndim, self.device, self.size, self.shape = ndim or 1, None, 0, (0,)
            return
        _check_index_array(indices, fa.device)
        self.fa, self.indices = fa, indices
        self.dtype, self.ndim, self.device = fa.dtype, fa.ndim, fa.device
        self.size = indices.size
        self.shape = (self.size,)

    @property
    def type(self) -> ArrayType:
        return ArrayType(self.dtype, self.ndim, True, True)

    def __ctype__(self):
        return self._descriptor()

    def _descriptor(self, consume: bool = False) -> IndexedFabricArrayDescriptor:
        d = IndexedFabricArrayDescriptor()
        if self.fa is not None:
            d.fa = self.fa._descriptor()
            d.indices = self.indices._descriptor().data or None
            d.size = self.size
        return d

    def __len__(self):
        return self.size

    def __bool__(self):
        return self.device is not None

    def numpy(self) -> np.ndarray:
        return np.ascontiguousarray(self.fa.numpy()[self.indices.numpy().astype(np.intp)])

    def list(self):
        from .array import array

        return array(self.numpy(), dtype=self.dtype).list() if self.size else []

    def contiguous(self):
        from .array import array

        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def _scatter(self, values: np.ndarray):
        full = self.fa.numpy().copy()
        full[self.indices.numpy().astype(np.intp)] = values
        self.fa._scatter(full)

    def fill_(self, value):
        if self.ndim > 1:
            raise RuntimeError("Filling indexed Fabric arrays of arrays is not supported")
        if self.size == 0:
            return
        from .array_create import full

        try:
            filled = full(self.shape, value, dtype=self.dtype, device="cpu")
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"Failed to convert the value to the array data type: {e}") from e
        self._scatter(filled.numpy())

    def zero_(self):
        self.fill_(0)

    def assign(self, src):
        values = src.numpy() if hasattr(src, "numpy") else np.asarray(src)
        self._scatter(np.broadcast_to(values, self.numpy().shape))

    def __str__(self):
        return f"indexedfabricarray{self.dtype}" if self.device is None else str(self.numpy())


def fabricarrayarray(**kwargs):
    """Warp's `fabricarray(..., ndim=2)`: a Fabric array of 1-d arrays."""
    kwargs["ndim"] = 2
    return fabricarray(**kwargs)


def indexedfabricarrayarray(**kwargs):
    """Warp's `indexedfabricarray(..., ndim=2)`."""
    kwargs["ndim"] = 2
    return indexedfabricarray(**kwargs)


def is_fabric(value) -> bool:
    return getattr(value, "_wp_fabric_", False)
