"""Refit of a BVH built on the host (kernels/runtime/bvh.py) on its device: the node boxes are recomputed from the
items' boxes by kernels, in place in the buffers the BVH's header points at, so a refit neither reads the points
back to the host nor uploads new buffers nor rewrites the header.

One launch fills the leaves (each the union of its items' boxes), then the internal nodes from their children,
lowest first: on a GPU one launch per height (the tree's median splits keep the height <= log2(n) + 2), on the CPU
one launch of one thread walking every internal node in that order (a launch per height cost more than the
nodes' arithmetic: some 10 us each, 15 heights for 10^4 triangles). For a mesh, a first launch computes each
triangle's box from the current points. Measured on a 100 x 100 grid mesh (19,602 triangles, CPU): 12.4 ms a
refit with numpy on the host and new buffers, 0.49 ms with these kernels and a launch per height, Warp 1.19
0.47 ms; 32 x 32 (1,922 triangles): 1.99 ms, 0.12 ms, Warp 0.06 ms (its refit is one native call). With the
internal nodes in one launch (best of 7 x 200 refits, a test suite running beside): 100 x 100 0.34-0.40 ms
against 0.46 ms with a launch per height and Warp's 0.39 ms in the same minutes; 32 x 32 0.05-0.09 ms against
0.21 ms and Warp's 0.04 ms.
"""

from __future__ import annotations

import numpy as np

from ..compiler import lang as wp
from .. import types as T
from .array import array
from .bvh import internal_levels
from .launch import launch
from .module import kernel


@kernel
def _triangle_boxes(points: array(dtype=T.vec3), indices: array(dtype=T.int32), lower: array(dtype=T.vec3),
                    upper: array(dtype=T.vec3)):
    """lower[f], upper[f] = the box of triangle f's three corners [m]."""
    f = wp.tid()
    a = points[indices[3 * f]]
    b = points[indices[3 * f + 1]]
    c = points[indices[3 * f + 2]]
    lower[f] = wp.min(wp.min(a, b), c)
    upper[f] = wp.max(wp.max(a, b), c)


@kernel
def _refit_leaves(item_lower: array(dtype=T.vec3), item_upper: array(dtype=T.vec3), prims: array(dtype=T.int32),
                  start: array(dtype=T.int32), end: array(dtype=T.int32), leaves: array(dtype=T.int32),
                  node_lower: array(dtype=T.vec3), node_upper: array(dtype=T.vec3)):
    """The box of leaf leaves[k]: the union of the boxes of its items prims[start:end] (never empty)."""
    node = leaves[wp.tid()]
    first = prims[start[node]]
    lo = item_lower[first]
    hi = item_upper[first]
    for p in range(start[node] + 1, end[node]):
        item = prims[p]
        lo = wp.min(lo, item_lower[item])
        hi = wp.max(hi, item_upper[item])
    node_lower[node] = lo
    node_upper[node] = hi


@kernel
def _refit_internal(order: array(dtype=T.int32), offset: int, left: array(dtype=T.int32),
                    right: array(dtype=T.int32), node_lower: array(dtype=T.vec3), node_upper: array(dtype=T.vec3)):
    """The box of internal node order[offset + k]: the union of its children's (one height lower, filled)."""
    node = order[offset + wp.tid()]
    node_lower[node] = wp.min(node_lower[left[node]], node_lower[right[node]])
    node_upper[node] = wp.max(node_upper[left[node]], node_upper[right[node]])


@kernel
def _refit_internal_in_order(order: array(dtype=T.int32), left: array(dtype=T.int32), right: array(dtype=T.int32),
                             node_lower: array(dtype=T.vec3), node_upper: array(dtype=T.vec3)):
    """One thread: the boxes of every internal node order[0], order[1], ... in turn, each the union of its
    children's (`order` lists the nodes by height, lowest first, so the children are filled before)."""
    for k in range(order.shape[0]):
        node = order[k]
        node_lower[node] = wp.min(node_lower[left[node]], node_lower[right[node]])
        node_upper[node] = wp.max(node_upper[left[node]], node_upper[right[node]])


class DeviceRefit:
    """The launches that refit a tree into `buffers` (node_arrays' keys: prims, node_start/end/left/right,
    node_lower/upper) on `device`. left, right: each node's children [nodes] (numpy int, -1 for a leaf).
    per_height: the internal nodes a launch per height (default: on a GPU; on the CPU one thread in order)."""

    def __init__(self, left: np.ndarray, right: np.ndarray, buffers: dict, device, per_height: bool | None = None):
        self.device = device
        self.buffers = buffers
        self.per_height = not device.is_cpu if per_height is None else bool(per_height)
        leaves = np.flatnonzero(np.asarray(left) < 0).astype(np.int32)
        self.leaves = array(leaves, dtype=T.int32, device=device)
        levels = [np.asarray(level, np.int32) for level in internal_levels(left, right)]
        self.order = array(np.concatenate(levels) if levels else np.zeros(0, np.int32), dtype=T.int32,
                           device=device)
        self.levels = [(int(offset), len(level)) for offset, level in
                       zip(np.cumsum([0] + [len(level) for level in levels[:-1]]), levels)]

    def triangle_boxes(self, points, indices, lower, upper) -> None:
        """lower/upper [faces] vec3 = each triangle's box from points [m] and indices (3 per face)."""
        if lower.shape[0]:
            launch(_triangle_boxes, dim=lower.shape[0], inputs=[points, indices, lower, upper], device=self.device,
                   record_tape=False)

    def run(self, item_lower, item_upper) -> None:
        """Every node's box from the items' boxes item_lower/item_upper [items] vec3 [m]."""
        b = self.buffers
        if self.leaves.shape[0] == 0:
            return
        launch(_refit_leaves, dim=self.leaves.shape[0], device=self.device, record_tape=False,
               inputs=[item_lower, item_upper, b["prims"], b["node_start"], b["node_end"], self.leaves,
                       b["node_lower"], b["node_upper"]])
        if not self.per_height:
            if self.order.shape[0]:
                launch(_refit_internal_in_order, dim=1, device=self.device, record_tape=False,
                       inputs=[self.order, b["node_left"], b["node_right"], b["node_lower"], b["node_upper"]])
            return
        for offset, count in self.levels:
            launch(_refit_internal, dim=count, device=self.device, record_tape=False,
                   inputs=[self.order, offset, b["node_left"], b["node_right"], b["node_lower"], b["node_upper"]])
