"""Bounding volume hierarchy over triangles, built and refitted on the host with numpy (used by
kernels/runtime/mesh.py and kernels/runtime/bvh_object.py, which upload its nodes with `node_arrays`).

Nodes are stored flat (arrays indexed by node); a leaf has left = right = -1 and owns prims[start:end). Splits are
at the median centroid along the widest axis of the centroids' box, so the depth stays <= log2(n) + 2 (mesh.h's
traversal stack holds 64 entries). With groups, each group gets a subtree of its own and a tree over their roots.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import types as T
from ..compiler.build import load_native_library
from .array import array

_lib = None


def _native():
    """native/bvh_build.cpp's entry points, in the runtime library (with the thread pool)."""
    global _lib
    if _lib is None:
        lib = load_native_library("runtime")
        lib.wp_bvh_build.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * 4
        lib.wp_bvh_build.restype = ctypes.c_int64
        lib.wp_bvh_refit.argtypes = [ctypes.c_void_p, ctypes.c_int64] + [ctypes.c_void_p] * 5 + [ctypes.c_int32] + \
            [ctypes.c_void_p] * 2
        lib.wp_bvh_refit.restype = None
        lib.wp_corner_stats.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * 3
        lib.wp_corner_stats.restype = None
        lib.wp_face_corners.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64] + \
            [ctypes.c_void_p] * 5
        lib.wp_face_corners.restype = ctypes.c_int64
        _lib = lib
    return _lib


class Bvh:
    """BVH of `corners` ([items, k, 3] float32: k = 3 for triangles, 2 for boxes) with at most `leaf_size` items
    per leaf."""

    def __init__(self, corners: np.ndarray, leaf_size: int = 4, groups: np.ndarray | None = None,
                 stats: tuple | None = None):
        """`stats`: corner_stats(corners) when the caller has them (face_corners gives both)."""
        self.leaf_size = leaf_size
        self._nodes: list = []  # [4, k] int32 blocks of (left, right, start, end), in node order
        self._node_count = 0
        prims: list = []  # int32 blocks of face ids, in leaf order
        # the items' centroids (the builder's keys) and boxes (kept: a mesh's face BVH takes them as its items)
        centroids, self.item_lower, self.item_upper = corner_stats(corners) if stats is None else stats
        if len(corners) == 0:
            self.root = -1
            group_ids, group_roots = [], []
        elif groups is None:
            self.root = self._build(np.arange(len(corners)), centroids, prims)
            group_ids, group_roots = [], []
        else:
            if len(groups) != len(corners):
                raise RuntimeError(f"Mesh: {len(groups)} groups for {len(corners)} faces")
            group_ids = sorted(set(groups.tolist()))
            group_roots = [self._build(np.flatnonzero(groups == g), centroids, prims) for g in group_ids]
            self.root = self._join(list(group_roots))
        nodes = np.concatenate(self._nodes, axis=1) if self._nodes else np.zeros((4, 0), np.int32)
        self.left, self.right, self.start, self.end = (np.ascontiguousarray(row) for row in nodes)
        self.prims = np.concatenate(prims) if prims else np.zeros(0, np.int32)
        self.group_ids = np.array(group_ids, np.int32)
        self.group_roots = np.array(group_roots, np.int32)
        self.refit(corners)

    def _node(self, left, right, start, end) -> int:
        self._nodes.append(np.array([[left], [right], [start], [end]], np.int32))
        self._node_count += 1
        return self._node_count - 1

    def _build(self, faces: np.ndarray, centroids: np.ndarray, prims: list) -> int:
        """The subtree over `faces` (face ids in increasing order; appended to `prims` leaf by leaf); returns its
        root. Nodes are numbered level by level; a node of more than leaf_size faces sorts them stably by centroid
        along the widest axis of their centroids' box and splits at the half (native/bvh_build.cpp: the bunny of
        Warp's examples, 12,200 faces, in 2 ms, where numpy, a level at a time, took 11 and node by node 90)."""
        order = np.array(faces, dtype=np.int32)  # a copy: rearranged in place into leaf order
        n, first_node = len(order), self._node_count
        # left, right, start, end: room for the 2n - 1 nodes of a binary tree with n leaves, of which the build
        # writes (and so touches the pages of) only the count it returns (about n / 2 for 4 faces a leaf)
        nodes = np.empty((4, max(2 * n - 1, 1)), np.int32)
        points = np.ascontiguousarray(centroids, dtype=np.float32)  # held: the call reads it through a pointer
        base = sum(len(p) for p in prims)
        count = _native().wp_bvh_build(points.ctypes.data, order.ctypes.data, n, self.leaf_size, base,
                                       first_node, *(nodes[k].ctypes.data for k in range(4)))
        self._nodes.append(nodes[:, :count])
        self._node_count += count
        prims.append(order)
        return first_node

    def _join(self, roots: list) -> int:
        """A balanced tree over subtree roots (for groups); returns its root."""
        while len(roots) > 1:
            paired = [self._node(roots[i], roots[i + 1], 0, 0) for i in range(0, len(roots) - 1, 2)]
            roots = paired + ([roots[-1]] if len(roots) % 2 else [])
        return roots[0]

    def refit(self, corners: np.ndarray):
        """Recompute every node's box from `corners` ([items, corners per item, 3]: a triangle's three, a box's
        lower and upper), natively (native/bvh_build.cpp)."""
        n = len(self.left)
        self.lower = np.zeros((n, 3), np.float32)
        self.upper = np.zeros((n, 3), np.float32)
        if n == 0:
            return
        points = np.ascontiguousarray(corners, dtype=np.float32)  # held: the call reads it through a pointer
        _native().wp_bvh_refit(points.ctypes.data, points.shape[1], self.prims.ctypes.data, self.left.ctypes.data,
                               self.right.ctypes.data, self.start.ctypes.data, self.end.ctypes.data, self.root,
                               self.lower.ctypes.data, self.upper.ctypes.data)


def internal_levels(left: np.ndarray, right: np.ndarray) -> list:
    """The internal nodes of a tree grouped by height (1, 2, ...: int arrays), from each node's children (left,
    right [nodes] int, -1 for a leaf), so that a refit on a device fills a level from the ones below
    (bvh_refit.py)."""
    left, right = np.asarray(left), np.asarray(right)
    height = np.zeros(len(left), np.int64)
    internal = np.flatnonzero(left >= 0)
    # children always have a height below their parent: iterate to a fixed point (depth passes)
    changed = True
    while changed and len(internal):
        new = np.maximum(height[left[internal]], height[right[internal]]) + 1
        changed = bool(np.any(new != height[internal]))
        height[internal] = new
    return [internal[height[internal] == h] for h in range(1, int(height.max(initial=0)) + 1)]


def corner_stats(corners: np.ndarray) -> tuple:
    """(centroids, lower, upper), each [items, 3] float32, of [items, k, 3] corners: corners.mean(axis=1) to the
    bit, corners.min(axis=1) and corners.max(axis=1), in one native pass (three numpy reductions over the middle
    axis took 1.4 ms for 12,800 triangles)."""
    points = np.ascontiguousarray(corners, dtype=np.float32)  # held: the call reads it through a pointer
    items = len(points)
    out = [np.empty((items, 3), np.float32) for _ in range(3)]
    if items:
        _native().wp_corner_stats(points.ctypes.data, items, points.shape[1], *(a.ctypes.data for a in out))
    return tuple(out)


def face_corners(points: np.ndarray, indices: np.ndarray) -> tuple:
    """(corners, (centroids, lower, upper), average edge length [m]) of a triangle mesh: its faces' corners
    [faces, 3, 3] float32 gathered from `points` ([num_points, 3] float32) by `indices` ([faces, 3] int32),
    corner_stats of them, and the mean length of the faces' three edges (0 without faces), in one native pass
    (numpy's gather and check took 0.5 ms for 12,200 faces, its edge lengths 0.9 ms). Raises RuntimeError on an
    index outside the points."""
    points = np.ascontiguousarray(points, dtype=np.float32)
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    faces = len(indices)
    corners = np.empty((faces, 3, 3), np.float32)
    stats = tuple(np.empty((faces, 3), np.float32) for _ in range(3))
    edge_length = ctypes.c_float(0.0)
    bad = _native().wp_face_corners(points.ctypes.data, len(points), indices.ctypes.data, faces, corners.ctypes.data,
                                    *(a.ctypes.data for a in stats), ctypes.addressof(edge_length)) if faces else -1
    if bad >= 0:
        raise RuntimeError(f"Mesh: indices must lie in [0, {len(points)}) (index {bad} is {indices.flat[bad]})")
    return corners, stats, edge_length.value


def node_arrays(tree: Bvh, device) -> dict:
    """The tree's flat node and group buffers as device arrays, keyed by the native header's field names
    (node_lower/upper [nodes] vec3, node_left/right/start/end [nodes] int32, prims [items] int32,
    group_ids/group_roots [groups] int32). Shared by Mesh and wp.Bvh, whose headers both hold these fields."""
    vec = {"node_lower": tree.lower, "node_upper": tree.upper}
    ints = {"node_left": tree.left, "node_right": tree.right, "node_start": tree.start, "node_end": tree.end,
            "prims": tree.prims, "group_ids": tree.group_ids, "group_roots": tree.group_roots}
    out = {name: array(v, dtype=T.vec3, device=device) for name, v in vec.items()}
    out.update({name: array(v, dtype=T.int32, device=device) for name, v in ints.items()})
    return out


def publish_header(owner, header, buffers: dict) -> None:
    """Point `header`'s node fields at `buffers` (as node_arrays gives them) and write it into the device array
    owner._header_array: allocated on the first call, whose address is owner.id (the handle kernels hold), and
    overwritten in place afterwards so that the id stays valid. Keeps the buffers alive as owner._buffers."""
    for name, buf in buffers.items():
        setattr(header, name, buf.ptr if buf.size else None)
    raw = np.frombuffer(bytes(header), dtype=np.uint8)
    if owner._header_array is None:
        owner._header_array = array(raw, dtype=T.uint8, device=owner.device)
        owner.id = owner._header_array.ptr
    else:
        owner._header_array.assign(raw)
    owner._buffers = buffers
