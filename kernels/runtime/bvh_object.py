"""`wp.Bvh`: a bounding volume hierarchy over user boxes, queried from kernels by its uint64 `id`.

The tree is built on the host with numpy (kernels/runtime/bvh.py, the builder `wp.Mesh` uses) and copied to the BVH's
device next to a `bvh_t` header (kernels/native/bvh.h) whose address is the id. `refit()` re-reads the boxes.
Queries (bvh_query_aabb/ray/sphere + bvh_query_next) yield item indices; they have no gradient, as in Warp.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import types as T
from .bvh import Bvh as _Tree, node_arrays, publish_header
from .bvh_refit import DeviceRefit
from ..builtins.query_types import BvhQuery
from .struct import give_values
from .array import array
from .memory_tracker import native as _tracked_as

_MAGIC = 0x6276682D75736572  # BVH_MAGIC in bvh.h
CONSTRUCTORS = ("sah", "median", "lbvh")

give_values(BvhQuery)  # declared with the builtins that return it; its Python values here


class _BvhHeader(ctypes.Structure):
    """ctypes mirror of `wp::bvh_t`."""

    _fields_ = [("magic", ctypes.c_uint64), ("item_lower", ctypes.c_void_p), ("item_upper", ctypes.c_void_p),
                ("num_items", ctypes.c_int32),
                ("node_lower", ctypes.c_void_p), ("node_upper", ctypes.c_void_p), ("node_left", ctypes.c_void_p),
                ("node_right", ctypes.c_void_p), ("node_start", ctypes.c_void_p), ("node_end", ctypes.c_void_p),
                ("prims", ctypes.c_void_p), ("root", ctypes.c_int32), ("num_groups", ctypes.c_int32),
                ("group_ids", ctypes.c_void_p), ("group_roots", ctypes.c_void_p)]


class Bvh:
    """A BVH over boxes for box, ray and sphere queries in kernels.

    Args:
        lowers: lower corners of the items' boxes, contiguous array of vec3 (float32), shape [num_items].
        uppers: upper corners, like `lowers`.
        constructor: "sah", "median" or "lbvh" (or None): all build the same median-split tree on the host;
            queries give the same items whichever is chosen.
        groups: optional contiguous int32 array, one group id per item: each group gets a subtree of its own
            (bvh_get_group_root gives its root, which queries take as `root`).
        leaf_size: items per leaf (>= 1); it does not change what queries return.
    """

    @_tracked_as("bvh")  # buffers it allocates are the bvh's in memory reports
    def __init__(self, lowers, uppers, constructor=None, groups=None, leaf_size: int = 1):

        for name, arr in (("lowers", lowers), ("uppers", uppers)):
            if not isinstance(arr, array) or arr.dtype is not T.vec3 or not arr.is_contiguous:
                raise RuntimeError(f"{name} should be a contiguous array of type wp.vec3")
        if len(lowers) != len(uppers):
            raise RuntimeError("The same number of lower and upper bounds must be provided")
        if lowers.device != uppers.device:
            raise RuntimeError("Lower and upper bounds must live on the same device")
        if groups is not None:
            if not isinstance(groups, array) or groups.dtype is not T.int32 or not groups.is_contiguous:
                raise RuntimeError("groups should be a contiguous array of type wp.int32")
            if groups.device != lowers.device:
                raise RuntimeError("groups must live on the same device as lowers/uppers")
            if len(groups) != len(lowers):
                raise RuntimeError("groups must have the same length as lowers/uppers")
        constructor = "sah" if constructor is None else str(getattr(constructor, "value", constructor)).lower()
        if constructor == "cubql" and groups is not None:
            raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
        if constructor == "cubql":
            raise RuntimeError("Bvh: the cuBQL BVH constructor is not available in this toolkit")
        if constructor not in CONSTRUCTORS:
            raise ValueError(f"Bvh: unknown constructor {constructor!r}; use one of {CONSTRUCTORS}")
        if leaf_size < 1:
            raise ValueError(f"leaf_size must be greater than or equal to 1, current value: {leaf_size}")
        self.device = lowers.device
        self.lowers, self.uppers, self.groups = lowers, uppers, groups
        self.constructor = constructor
        self.leaf_size = int(leaf_size)
        group_ids = None if groups is None else groups.numpy().astype(np.int32)
        self._header_array = None
        self.id = 0
        self._build(group_ids)

    def _corners(self) -> np.ndarray:
        """[num_items, 2, 3] float32: each item's lower and upper corner (the builder's 'corners')."""
        return np.stack([self.lowers.numpy().reshape(-1, 3), self.uppers.numpy().reshape(-1, 3)], axis=1)

    @_tracked_as("bvh")  # buffers it allocates are the bvh's in memory reports
    def refit(self):
        """Recompute the node boxes from the current `lowers` and `uppers` (after they changed), on the device."""
        self._refitter.run(self.lowers, self.uppers)

    @_tracked_as("bvh")  # buffers it allocates are the bvh's in memory reports
    def rebuild(self, constructor=None):
        """Build the tree again from the current boxes (after items moved far)."""
        self._build(None if self.groups is None else self.groups.numpy().astype(np.int32))

    def _build(self, group_ids):
        """Build the tree on the host from the current boxes, upload its buffers and write the header."""
        self._tree = _Tree(self._corners(), leaf_size=self.leaf_size, groups=group_ids)
        self._buffers = node_arrays(self._tree, self.device)
        self._refitter = DeviceRefit(self._tree.left, self._tree.right, self._buffers, self.device)
        b, bufs = self._tree, self._buffers
        h = _BvhHeader(magic=_MAGIC, num_items=len(self.lowers), root=b.root, num_groups=len(b.group_ids))
        h.item_lower = self.lowers.ptr if self.lowers.size else None
        h.item_upper = self.uppers.ptr if self.uppers.size else None
        publish_header(self, h, bufs)

    def __del__(self):
        # buffers are freed with their arrays; safe on an instance that __init__ never ran on
        pass
