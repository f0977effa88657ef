"""DLPack for CUDA arrays: export an array's device memory as a DLPack capsule, and import a capsule of device
memory (torch CUDA tensors, CuPy, JAX) as an array, both without a copy.

CPU arrays use numpy's own DLPack support (array.py); numpy cannot describe device memory, so these structures are
laid out here, as the DLPack header (dlpack.h, version 0.8 ABI of `DLManagedTensor`) defines them.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .foreign_memory import layout_args
from .device import get_stream

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BOOL = 0, 1, 2, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# exported tensors alive until their consumer calls the deleter (or the unconsumed capsule is collected):
# address of the DLManagedTensor -> (the structure, its shape and strides, the array)
_exported: dict = {}


def _dl_dtype(np_dtype: np.dtype) -> DLDataType:
    code = {"i": _KDL_INT, "u": _KDL_UINT, "f": _KDL_FLOAT, "b": _KDL_BOOL}.get(np_dtype.kind)
    if code is None:
        raise TypeError(f"arrays of {np_dtype} (structs) cannot be exported through DLPack")
    return DLDataType(code, np_dtype.itemsize * 8, 1)


def _np_dtype(t: DLDataType) -> np.dtype:
    kind = {_KDL_INT: "i", _KDL_UINT: "u", _KDL_FLOAT: "f", _KDL_BOOL: "b"}.get(t.code)
    if kind is None or t.lanes != 1:
        raise TypeError(f"DLPack data type (code {t.code}, {t.bits} bits, {t.lanes} lanes) has no array type here")
    return np.dtype(f"{kind}{t.bits // 8}") if kind != "b" else np.dtype(np.bool_)


@_DELETER
def _delete(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule_ptr):
    # an exported capsule collected before a consumer took it: release what it holds. A consumer renames the
    # capsule to "used_dltensor" and calls the deleter itself.
    capsule = ctypes.cast(capsule_ptr, ctypes.py_object)
    if _api.PyCapsule_IsValid(capsule, b"dltensor"):
        address = _api.PyCapsule_GetPointer(capsule, b"dltensor")
        _exported.pop(address, None)


def export_cuda(a, stream=None):
    """A DLPack capsule of CUDA array `a` (vector components as trailing dimensions). The array's work queued so
    far is waited for, so the consumer's stream sees the finished values."""
    layout = a._buf
    get_stream(a.device).synchronize()
    managed = DLManagedTensor()
    ndim = layout.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*layout.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*[s // layout.itemsize for s in layout.strides])
    t = managed.dl_tensor
    t.data = a.ptr or 0
    t.device = DLDevice(KDL_CUDA, a.device.ordinal)
    t.ndim = ndim
    t.dtype = _dl_dtype(layout.dtype)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, strides, a)
    return _api.PyCapsule_New(address, b"dltensor", _capsule_destructor)


class _ImportedTensor:
    """Keeps an imported DLPack tensor's producer alive; calls its deleter when the arrays viewing it are gone."""

    def __init__(self, managed_ptr: int):
        self.managed = ctypes.cast(managed_ptr, ctypes.POINTER(DLManagedTensor))

    def __del__(self):
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(self.managed)


def import_capsule_args(capsule, dtype=None) -> tuple:
    """(array(...) keywords, owner) for the memory of a DLPack capsule of CUDA (or CPU) memory, without a copy:
    the caller makes the array (interop.py) and keeps `owner` with it (it frees the tensor with the array)."""
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise ValueError("not an unconsumed DLPack capsule (a capsule is consumed once)")
    address = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    owner = _ImportedTensor(address)
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    t = owner.managed.contents.dl_tensor
    np_dtype = _np_dtype(t.dtype)
    shape = tuple(t.shape[k] for k in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[k] * np_dtype.itemsize for k in range(t.ndim))
    else:
        strides = None
    ptr = (t.data or 0) + t.byte_offset
    if t.device.device_type == KDL_CUDA:
        args = layout_args(ptr, np_dtype, shape, strides, f"cuda:{t.device.device_id}", dtype, "the DLPack tensor")
    elif t.device.device_type in (KDL_CPU, KDL_CUDA_HOST):
        args = layout_args(ptr, np_dtype, shape, strides, "cpu", dtype, "the DLPack tensor")
    else:
        raise ValueError(f"DLPack device type {t.device.device_type} is neither the CPU nor CUDA")
    return args, owner
