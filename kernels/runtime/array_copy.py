"""Copies between toolkit arrays (wp.copy and the checks and memory windows behind it, which the Tape's copy
records reuse), and the hooks through which a recording Tape hears of copies and of writes from the host."""

from __future__ import annotations

import numpy as np

from . import recording as _capture
from .. import types as T
from .array_layout import element_info
from . import cuda_memory


# Set by autodiff.Tape while recording: callables(dest, src, dest_offset, src_offset, count) told of every copy
# between toolkit arrays (wp.copy, wp.clone, array.assign), so that backward can route gradients through it.
copy_hooks: list = []

# Set by autodiff.Tape while recording: callables(array, operation) told of every write from the host (zero_,
# fill_, assign of host data, item assignment) before it happens; the Tape refuses one into memory that a recorded
# launch or copy wrote, whose gradient would then go wrong.
host_write_hooks: list = []

# Array kinds that are not strided memory of their own (indexed and Fabric arrays, kernels/runtime/indexedarray.py)
# register here when their module is imported, so that this module and array.py import none of them:
# element_copy[-1](dest, src, dest_offset, src_offset, count) copies when either side is such an array, and
# index_view[-1](parent, key) is `parent[key]` with index arrays in `key` (Warp's indexed-array view).
element_copy: list = []
index_view: list = []


def _check_copy_args(dest, src, dest_offset, src_offset, count):
    for name, v in (("Source offset", src_offset), ("Destination offset", dest_offset), ("count", count)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise RuntimeError(f"wp.copy: offsets and count must be integers, got {name} {v!r}")
        if v < 0:
            raise RuntimeError(f"wp.copy: {name} must be non-negative, got {v}")
    if element_info(dest.dtype) != element_info(src.dtype):
        raise RuntimeError(f"wp.copy: incompatible array types: destination dtype={T.type_repr(dest.dtype)}, "
                           f"source dtype={T.type_repr(src.dtype)}")


def copy_window(a, offset: int, count: int, whole: bool) -> np.ndarray:
    """The numpy view of `a`'s memory that a copy of `count` elements at element `offset` touches: the flattened
    elements of a contiguous array, the elements of a 1-d view, or (`whole`) every element of any array. For a
    CUDA array, the view's layout (cuda_memory.device_layout)."""
    buf = a._buf
    if whole:
        return buf
    inner = buf.shape[a.ndim:]
    if a.is_contiguous:
        return buf.reshape((a.size,) + inner)[offset:offset + count]
    return buf[offset:offset + count]


def copy_plan(dest, src, dest_offset: int = 0, src_offset: int = 0, count: int = 0):
    """Check the arguments of a copy; returns (count, whole): the number of elements copied, and whether the copy
    covers every element of two same-shaped arrays (the only copy that a multi-dimensional strided view allows)."""
    _check_copy_args(dest, src, dest_offset, src_offset, count)
    flat = (dest.is_contiguous or dest.ndim == 1) and (src.is_contiguous or src.ndim == 1)
    if not flat:
        if dest_offset or src_offset or count not in (0, src.size) or dest.shape != src.shape:
            if dest_offset or src_offset or count:
                raise RuntimeError("wp.copy with offsets or a count is only supported for 1-D or contiguous arrays")
            raise RuntimeError(f"wp.copy: incompatible array shapes: destination shape={dest.shape}, "
                               f"source shape={src.shape}")
        return src.size, True
    n = count or min(src.size - src_offset, dest.size - dest_offset)
    if src_offset + n > src.size:
        raise RuntimeError(f"wp.copy: {n} elements from offset {src_offset} exceeds the source size {src.size}")
    if dest_offset + n > dest.size:
        raise RuntimeError(f"wp.copy: {n} elements at offset {dest_offset} exceeds the destination size "
                           f"{dest.size}")
    return max(n, 0), False


def copy(dest, src, dest_offset: int = 0, src_offset: int = 0, count: int = 0, stream=None):
    """Copy `count` elements (0: as many as fit) of `src` from element `src_offset` into `dest` at `dest_offset`.
    Offsets count flattened elements of contiguous arrays, or elements of 1-d views; other strided views are
    copied whole (same shapes, no offsets)."""
    if any(getattr(a, "_wp_indexed_", False) or getattr(a, "_wp_fabric_", False) for a in (dest, src)):
        return element_copy[-1](dest, src, dest_offset, src_offset, count)  # element by element, no offsets
    n, whole = copy_plan(dest, src, dest_offset, src_offset, count)
    d = copy_window(dest, dest_offset, n, whole)
    s = copy_window(src, src_offset, n, whole)
    rec = _capture.recorder(dest.device)
    if dest.is_cuda or src.is_cuda:
        cuda_memory.copy(d, dest._ordinal, s, src._ordinal)
    elif rec is None:
        d[...] = s
    else:
        rec.copy(d, s, (dest, src))
    if copy_hooks:
        copy_hooks[-1](dest, src, dest_offset, src_offset, n)
