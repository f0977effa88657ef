"""Bounding volume hierarchy over triangles, built and refitted on the host with numpy (used by
kernels/runtime/mesh.py and kernels/runtime/bvh_object.py, which upload its nodes with `node_arrays`).

Nodes are stored flat (arrays indexed by node); a leaf has left = right = -1 and owns prims[start:end). Splits are
at the median centroid along the widest axis of the centroids' box, so the depth stays <= log2(n) + 2 (mesh.h's
traversal stack holds 64 entries). With groups, each group gets a subtree of its own and a tree over their roots.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from .array import array


class Bvh:
    """BVH of `corners` ([faces, 3, 3] float32) with at most `leaf_size` faces per leaf."""

    def __init__(self, corners: np.ndarray, leaf_size: int = 4, groups: np.ndarray | None = None):
        self.leaf_size = leaf_size
        self._left, self._right, self._start, self._end = [], [], [], []
        prims: list = []
        centroids = corners.mean(axis=1) if len(corners) else np.zeros((0, 3), np.float32)
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
        self.left = np.array(self._left, np.int32)
        self.right = np.array(self._right, np.int32)
        self.start = np.array(self._start, np.int32)
        self.end = np.array(self._end, np.int32)
        self.prims = np.array(prims, np.int32)
        self.group_ids = np.array(group_ids, np.int32)
        self.group_roots = np.array(group_roots, np.int32)
        self._levels = self._bottom_up_levels()
        self.refit(corners)

    def _node(self, left, right, start, end) -> int:
        self._left.append(left)
        self._right.append(right)
        self._start.append(start)
        self._end.append(end)
        return len(self._left) - 1

    def _build(self, faces: np.ndarray, centroids: np.ndarray, prims: list) -> int:
        """The subtree over `faces` (appended to `prims` leaf by leaf); returns its root. Built a level at a time
        in numpy: the faces of every node of a level that splits are sorted by centroid along the widest axis of
        their centroids' box in one stable sort, and split at the half (the same tree as sorting node by node,
        recursively, which took 0.09 s for 16,000 faces in numpy calls per node; 21 ms for Warp's 12,200-face
        bunny with a lexsort of every level, 12 ms now)."""
        order = np.asarray(faces, dtype=np.int64).copy()
        n, first_node, base = len(order), len(self._left), len(prims)
        ranks = _sortable_bits(centroids)  # (faces, 3) uint64: sorting by them sorts by centroid coordinate
        cap = max(2 * n - 1, 1)  # nodes of a binary tree with at most n leaves
        left, right = np.full(cap, -1, np.int64), np.full(cap, -1, np.int64)
        start, end = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        count = 1
        nodes, lo, hi = np.zeros(1, np.int64), np.zeros(1, np.int64), np.full(1, n, np.int64)
        sorted_along = np.full(1, -1, np.int64)  # the axis a node's faces are already sorted by (-1: none)
        while len(nodes):
            leaf = hi - lo <= self.leaf_size
            start[nodes[leaf]], end[nodes[leaf]] = base + lo[leaf], base + hi[leaf]
            nodes, lo, hi, sorted_along = nodes[~leaf], lo[~leaf], hi[~leaf], sorted_along[~leaf]
            if not len(nodes):
                break
            lengths = hi - lo
            offsets = np.cumsum(lengths) - lengths
            segment = np.repeat(np.arange(len(nodes)), lengths)
            index = np.arange(int(lengths.sum())) - offsets[segment] + lo[segment]  # positions in `order`
            members = order[index]
            c = centroids[members]
            axis = np.argmax(np.maximum.reduceat(c, offsets, axis=0) - np.minimum.reduceat(c, offsets, axis=0),
                             axis=1)
            # a node whose parent sorted its faces along the same axis is in that order already (a stable sort
            # of a sorted run keeps it): only the others are sorted, in one stable sort by (node, coordinate
            # along the node's axis) packed in one 64-bit key, the order of np.lexsort((coordinate, node))
            unsorted = (axis != sorted_along)[segment]
            if unsorted.any():
                picked, seg = members[unsorted], segment[unsorted]
                key = (seg.astype(np.uint64) << np.uint64(32)) | ranks[picked, axis[seg]]
                order[index[unsorted]] = picked[np.argsort(key, kind="stable")]
            half = lo + lengths // 2
            children = count + 2 * np.arange(len(nodes))
            count += 2 * len(nodes)
            left[nodes], right[nodes] = first_node + children, first_node + children + 1
            nodes = np.stack([children, children + 1], axis=1).reshape(-1)
            lo, hi = np.stack([lo, half], axis=1).reshape(-1), np.stack([half, hi], axis=1).reshape(-1)
            sorted_along = np.repeat(axis, 2)
        self._left.extend(left[:count].tolist())
        self._right.extend(right[:count].tolist())
        self._start.extend(start[:count].tolist())
        self._end.extend(end[:count].tolist())
        prims.extend(order.tolist())
        return first_node

    def _join(self, roots: list) -> int:
        """A balanced tree over subtree roots (for groups); returns its root."""
        while len(roots) > 1:
            paired = [self._node(roots[i], roots[i + 1], 0, 0) for i in range(0, len(roots) - 1, 2)]
            roots = paired + ([roots[-1]] if len(roots) % 2 else [])
        return roots[0]

    def _bottom_up_levels(self) -> list:
        """Internal nodes grouped by height (1, 2, ...), so refit can fill a level from the one below."""
        n = len(self.left)
        height = np.zeros(n, np.int64)
        internal = np.flatnonzero(self.left >= 0)
        # children always have a height below their parent: iterate to a fixed point (depth passes)
        changed = True
        while changed and len(internal):
            new = np.maximum(height[self.left[internal]], height[self.right[internal]]) + 1
            changed = bool(np.any(new != height[internal]))
            height[internal] = new
        return [internal[height[internal] == h] for h in range(1, int(height.max(initial=0)) + 1)]

    def refit(self, corners: np.ndarray):
        """Recompute every node's box from `corners` ([faces, 3, 3])."""
        n = len(self.left)
        self.lower = np.zeros((n, 3), np.float32)
        self.upper = np.zeros((n, 3), np.float32)
        if n == 0:
            return
        face_lo, face_hi = corners.min(axis=1), corners.max(axis=1)
        leaves = np.flatnonzero(self.left < 0)
        leaves = leaves[np.argsort(self.start[leaves], kind="stable")]  # reduceat needs the leaves in prims' order
        starts = self.start[leaves]
        self.lower[leaves] = np.minimum.reduceat(face_lo[self.prims], starts, axis=0)
        self.upper[leaves] = np.maximum.reduceat(face_hi[self.prims], starts, axis=0)
        for level in self._levels:
            lc, rc = self.left[level], self.right[level]
            self.lower[level] = np.minimum(self.lower[lc], self.lower[rc])
            self.upper[level] = np.maximum(self.upper[lc], self.upper[rc])


def _sortable_bits(values: np.ndarray) -> np.ndarray:
    """float32 values as uint64 keys in the same order (their IEEE bits, negatives flipped; -0.0 as 0.0, equal to
    it as in a float comparison)."""
    bits = (np.asarray(values, np.float32) + np.float32(0.0)).view(np.uint32).astype(np.uint64)
    negative = bits >= np.uint64(1 << 31)
    return np.where(negative, np.uint64(0xFFFFFFFF) - bits, bits | np.uint64(1 << 31))


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
