"""`wp.Mesh`: a triangle mesh with a bounding volume hierarchy, queried from kernels by its uint64 `id`.

The BVH is built on the host with numpy (kernels/runtime/bvh.py) and copied to the mesh's device next to a `mesh_t`
header (kernels/native/mesh.h) whose address is the id. `refit()` recomputes the boxes from the current points on
the device, in place (kernels/runtime/bvh_refit.py).
"""

from __future__ import annotations

import ctypes
import weakref

import numpy as np

from .. import types as T
from .array import array
from .memory_tracker import native as _tracked_as
from .array_layout import ArrayDescriptor
from .bvh import Bvh, face_corners, node_arrays, publish_header
from .bvh_refit import DeviceRefit
from ..builtins.query_types import MeshQueryAABB, MeshQueryPoint, MeshQueryRay, MeshValue
from .struct import give_values

_MAGIC = 0x6D6573682D627668  # MESH_MAGIC in mesh.h
CONSTRUCTORS = ("sah", "median", "lbvh")

# the native query and value types are declared with the builtins that return them; values in Python here
for _t in (MeshQueryPoint, MeshQueryRay, MeshQueryAABB, MeshValue):
    give_values(_t)
del _t


class _MeshHeader(ctypes.Structure):
    """ctypes mirror of `wp::mesh_t`."""

    _fields_ = [("points", ArrayDescriptor), ("velocities", ArrayDescriptor), ("indices", ArrayDescriptor),
                ("num_points", ctypes.c_int32), ("num_tris", ctypes.c_int32), ("magic", ctypes.c_uint64),
                ("node_lower", ctypes.c_void_p), ("node_upper", ctypes.c_void_p), ("node_left", ctypes.c_void_p),
                ("node_right", ctypes.c_void_p), ("node_start", ctypes.c_void_p), ("node_end", ctypes.c_void_p),
                ("prims", ctypes.c_void_p), ("root", ctypes.c_int32), ("num_groups", ctypes.c_int32),
                ("group_ids", ctypes.c_void_p), ("group_roots", ctypes.c_void_p),
                ("point_grads", ArrayDescriptor), ("bvh", ctypes.c_uint64), ("average_edge_length", ctypes.c_float)]


class _FaceBvh:
    """The target of wp.mesh_get_bvh: a `bvh_t` header (kernels/native/bvh.h) over the mesh's faces, their boxes
    the items (`lowers`, `uppers`: [faces] vec3, refitted with the mesh's nodes), sharing the mesh's node
    buffers; republished with the mesh's header."""

    def __init__(self, device, lower: np.ndarray, upper: np.ndarray):
        self.device = device
        self._header_array = None
        self.id = 0
        self.lowers = array(lower, dtype=T.vec3, device=device)  # float32 [faces, 3] (corner_stats)
        self.uppers = array(upper, dtype=T.vec3, device=device)

    def publish(self, tree, buffers: dict) -> None:
        from .bvh_object import _MAGIC as bvh_magic, _BvhHeader

        h = _BvhHeader(magic=bvh_magic, num_items=self.lowers.shape[0], root=tree.root,
                       num_groups=len(tree.group_ids))
        h.item_lower = self.lowers.ptr if self.lowers.size else None
        h.item_upper = self.uppers.ptr if self.uppers.size else None
        publish_header(self, h, buffers)


def is_cubql_available() -> bool:
    """cuBQL BVH construction is not part of this toolkit."""
    return False


class Mesh:
    """A triangle mesh for closest-point and ray queries in kernels.

    Args:
        points: vertex positions [m], array of vec3 (float32), shape [num_points].
        indices: vertex indices, int32 array of shape [3 * num_faces] (three per face, right-handed).
        velocities: optional vertex velocities [m/s], array of vec3 like `points`.
        support_winding_number: accepted for Warp compatibility; winding numbers are always computed exactly.
        bvh_constructor: "sah", "median" or "lbvh": all build the same median-split tree on the host (queries
            give identical results; only traversal speed could differ).
        bvh_leaf_size: faces per BVH leaf.
        groups: optional int32 array of one group id per face, for grouped ray queries (mesh_get_group_root).

    The faces' average edge length, the tolerance scale of mesh_query_point_sign_normal (1e-3 of it), is taken
    when the mesh is built and kept through refit() (Warp's refit measures it again).
    """

    @_tracked_as("mesh")  # buffers it allocates are the mesh's in memory reports
    def __init__(self, points, indices, velocities=None, support_winding_number=False, bvh_constructor=None,
                 bvh_leaf_size=4, groups=None):
        constructor = bvh_constructor or "sah"
        if constructor == "cubql":
            raise RuntimeError("Mesh: the cuBQL BVH constructor is not available in this toolkit")
        if constructor not in CONSTRUCTORS:
            raise ValueError(f"Mesh: unknown bvh_constructor {bvh_constructor!r}; use one of {CONSTRUCTORS}")
        _check_vec3(points, "points")
        if velocities is not None:
            _check_vec3(velocities, "velocities")
        if indices.dtype is not T.int32 or indices.ndim != 1:
            raise RuntimeError("Mesh: indices must be a 1-d array of int32")
        for name, arr in (("indices", indices), ("velocities", velocities), ("groups", groups)):
            if arr is not None and arr.device != points.device:
                raise RuntimeError(f"Mesh: {name} must live on the same device as points ({points.device})")
        if indices.size % 3:
            raise RuntimeError(f"Mesh: indices hold {indices.size} entries, not a multiple of 3")
        self.device = points.device
        self._points = points
        self.velocities = velocities
        self.indices = indices
        self.support_winding_number = bool(support_winding_number)
        self.bvh_constructor = constructor
        self._groups = None if groups is None else groups.numpy().reshape(-1).astype(np.int32)
        # the average edge length [m] is Warp's mesh field: the sign-by-normal query's tolerance scale
        corners, stats, self._average_edge_length = face_corners(points.numpy().reshape(-1, 3),
                                                                 indices.numpy().reshape(-1, 3))
        self._bvh = Bvh(corners, leaf_size=max(1, int(bvh_leaf_size)), groups=self._groups, stats=stats)
        self._buffers = node_arrays(self._bvh, self.device)
        self._refitter = None  # made at the first refit (its level lists cost 1 ms on a 12,000-face mesh)
        self._face_bvh = _FaceBvh(self.device, self._bvh.item_lower, self._bvh.item_upper)
        self._header_array = None
        self.id = 0
        self._upload()

    @property
    def points(self):
        return self._points

    @points.setter
    def points(self, value):
        _check_vec3(value, "points")
        if value.shape != self._points.shape:
            raise RuntimeError(f"Mesh: new points have shape {value.shape}, expected {self._points.shape}")
        self._points = value
        self.refit()
        self._upload()  # the header points at the new array

    @_tracked_as("mesh")  # buffers it allocates are the mesh's in memory reports
    def refit(self):
        """Recompute the BVH boxes from the current points (after they moved)."""
        if getattr(self, "_bvh", None) is None:
            raise RuntimeError("Mesh.refit: the mesh was not initialised")
        faces = self._face_bvh
        if self._refitter is None:
            self._refitter = DeviceRefit(self._bvh.left, self._bvh.right, self._buffers, self.device)
        self._refitter.triangle_boxes(self._points, self.indices, faces.lowers, faces.uppers)
        self._refitter.run(faces.lowers, faces.uppers)

    def _upload(self):
        """Write the headers (the mesh's and its face BVH's) pointing at the current arrays and node buffers."""
        b, bufs = self._bvh, self._buffers
        self._face_bvh.publish(b, bufs)
        h = _MeshHeader(num_points=self._points.size, num_tris=self.indices.size // 3, magic=_MAGIC, root=b.root,
                        num_groups=len(b.group_ids), bvh=self._face_bvh.id,
                        average_edge_length=self._average_edge_length)
        h.points = self._points._descriptor()
        h.indices = self.indices._descriptor()
        if self.velocities is not None:
            h.velocities = self.velocities._descriptor()
        self._point_grads = self._points._grad
        if self._point_grads is not None:
            h.point_grads = self._point_grads._descriptor()
        publish_header(self, h, bufs)
        _LIVE_MESHES[self.id] = self

    def _sync_point_gradient(self):
        """Point the header at the points' current gradient array (set or replaced after the mesh was built)."""
        if self._points._grad is not self._point_grads:
            self._upload()

    def __del__(self):
        # buffers are freed with their arrays; safe on an instance that __init__ never ran on
        pass


_LIVE_MESHES: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # id -> Mesh


def ray_gradient_meshes(values) -> list:
    """The meshes among a launch's arguments (uint64 ids) whose points have a gradient array: ray casts in the
    kernel's adjoint add into it, so the tape keeps the header pointing at it and zeroes it with the others."""
    if not _LIVE_MESHES:
        return []
    found = (_LIVE_MESHES.get(v) for v in values if type(v) is int)
    return [m for m in found if m is not None and m.points._grad is not None]


def _check_vec3(arr, name):
    if not isinstance(arr, array) or arr.dtype is not T.vec3:
        got = T.type_repr(getattr(arr, "dtype", type(arr)))
        raise RuntimeError(f"Mesh: {name} must be an array of vec3 (float32), got {got}")
