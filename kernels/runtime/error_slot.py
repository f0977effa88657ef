"""Out-of-bounds reports of debug builds: the `wp::error_t` slot a kernel library (or a CUDA launch) fills when
an array index is out of bounds, and the LaunchError raised from it with the kernel's file, line and source.
Below launch, module, capture and cuda_module, which all read it.
"""

from __future__ import annotations

import ctypes

from ..errors import LaunchError


class ErrorSlot(ctypes.Structure):
    """Layout of `wp::error_t` (native/core.h)."""

    _fields_ = [("set", ctypes.c_int32), ("line", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("kind", ctypes.c_int32), ("index", ctypes.c_int64 * 4), ("shape", ctypes.c_int64 * 4)]


def check_error(kernel, slot=None):
    """Debug mode: raise the out-of-bounds access recorded in `slot` (default: the kernel's CPU library's), and
    clear it."""
    if slot is None:
        slot = getattr(kernel, "error_slot", None)
    if slot is None or not slot.set:
        return
    index = ", ".join(str(slot.index[d]) for d in range(slot.ndim))
    shape = ", ".join(str(slot.shape[d]) for d in range(slot.ndim))
    line = slot.line
    src = ""
    try:
        src = kernel.source.lines[line - kernel.source.first_line].strip()
    except IndexError:
        pass
    ctypes.memset(ctypes.addressof(slot), 0, ctypes.sizeof(slot))
    raise LaunchError(f"{kernel.source.file}:{line}: index [{index}] out of bounds for an array of shape "
                      f"({shape}) in kernel '{kernel.name}'\n    {src}")
