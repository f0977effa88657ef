"""The broad phase of cloth self-contact's searches (sim/self_contact.py, sim/self_contact_partial.py): a bounding
volume hierarchy over the collision triangles and one over the collision edges, each built once on the host from
the initial positions and refitted at every search.

A tree's shape is fixed at build: the primitives are split at the median along the largest extent of their
centres (after splitting by world, so that a subtree holds one world where it can), down to leaves of at most
LEAF_SIZE primitives, and the primitives are renumbered in the leaves' order (SelfContact keeps its triangles and
edges in that order), so that every node holds a contiguous range [start, end) of indices. A cloth stretches
little, so a subtree stays a compact patch of the surface however the cloth moves and folds: refitting the boxes
suffices (the runtime's BVH refit: one pass over the leaves, then the inner nodes lowest first). A primitive stretched far only grows its
leaf's boxes (no list of large primitives, no cell width to outgrow). Nodes are stored in preorder with skip
links (the node after a node's subtree), so a query walks the tree without a stack: from node n it goes on to n +
1 (the first child) when the node's box overlaps the query's, else to skip[n]; a leaf is a node with skip[n] == n
+ 1.

The full search's edge query visits each unordered pair once, from its lower edge: a node whose edges all have
indices at or below the querying edge's is skipped whole, so a query descends into about half the tree. Its
queries walk the tree once per group of four consecutive edges (and the vertex query once per four vertices):
sim/self_contact.py.
Measured on the 64 x 64 pile at its densest (XPBD, frame 40, both cores), against the hash grids they replaced:
edge query 6.3 ms against 10.0 (a grid of edge boxes, whose scan of crowded cells cost more than its box tests),
vertex query 1.9 ms against 3.2 (a grid of triangle centroids, 27 cells a vertex), and a refit of 0.1 ms a tree
against 1.35 and 0.43 ms for the grids' builds. Integer data and boxes only: nothing here is differentiated.
"""

import numpy as np

import kernels as wp
from kernels.runtime.bvh_refit import DeviceRefit

from .self_contact_primitives import boxes_overlap

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

#: primitives per leaf at most. Measured on the 64 x 64 pile (both cores, a query of every edge): 2: 7.0 ms, 4:
#: 6.3 ms, 8: 6.2 ms (of every vertex against the triangles: 4: 1.89, 8: 1.82 ms); 4 keeps a leaf's own tests few
#: when its primitives stretch
LEAF_SIZE = 4


@wp.struct
class TreeData:
    """A primitive tree as the queries see it.

    lower, upper: each node's box [m] (vec3 [node_count]): the union of its primitives' grown boxes.
    start, end: the primitives of each node, [start, end) in index (int32 [node_count]).
    skip: the node that follows each node's subtree in preorder (int32 [node_count]); node_count past the last.
    item_lower, item_upper: each primitive's box at the refit positions, grown by `grow` (vec3 [count]).
    grow: how much the primitives' boxes are grown [m] (edges: half the query radius, so that two edges within
        it have overlapping grown boxes; triangles: 0, the queries grow the vertex's box instead).
    """

    lower: wp.array(dtype=wp.vec3)
    upper: wp.array(dtype=wp.vec3)
    start: wp.array(dtype=wp.int32)
    end: wp.array(dtype=wp.int32)
    skip: wp.array(dtype=wp.int32)
    item_lower: wp.array(dtype=wp.vec3)
    item_upper: wp.array(dtype=wp.vec3)
    grow: float


@wp.func
def tree_is_leaf(tree: TreeData, n: int):
    """Whether node n is a leaf (its subtree is itself)."""
    return tree.skip[n] == n + 1


@wp.func
def tree_next_leaf(tree: TreeData, lower: wp.vec3, upper: wp.vec3, after: int, n: int):
    """The first leaf from node n on, in preorder, whose box overlaps [lower, upper] [m] and which holds a
    primitive of index above `after` (-1: any); the node count when there is none. A query's walk:
    `n = tree_next_leaf(tree, lo, hi, after, 0)`, then while n < node count, the leaf's primitives [start[n],
    end[n]) and `n = tree_next_leaf(tree, lo, hi, after, n + 1)`."""
    nodes = tree.skip.shape[0]
    while n < nodes:
        if tree.end[n] > after + 1 and boxes_overlap(lower, upper, tree.lower[n], tree.upper[n]):
            if tree_is_leaf(tree, n):
                return n
            n = n + 1  # the first child
        else:
            n = tree.skip[n]
    return n


def _node_counts(count: int, leaf: int) -> dict:
    """Nodes of the subtree over each range length that the median splits of `count` primitives produce."""
    sizes, todo = {}, [count]
    while todo:
        m = todo.pop()
        if m in sizes:
            continue
        if m <= leaf:
            sizes[m] = 1
            continue
        halves = (m // 2, m - m // 2)
        missing = [h for h in halves if h not in sizes]
        if missing:
            todo.append(m)
            todo.extend(missing)
            continue
        sizes[m] = 1 + sizes[halves[0]] + sizes[halves[1]]
    return sizes


def build_tree(centres: np.ndarray, worlds: np.ndarray, leaf: int = LEAF_SIZE) -> tuple:
    """The tree's shape over primitives with these centres [m] (float [n, 3]) and worlds (int [n]).

    Returns (order, start, end, skip): `order` [n] the primitives in leaf order (the primitive of new index k is
    order[k]), and the nodes' ranges and skip links in preorder (int32 [node_count] each)."""
    count = len(centres)
    order = np.arange(count)
    if count == 0:
        empty = np.zeros(0, np.int32)
        return order, empty, empty, empty
    sizes = _node_counts(count, leaf)
    nodes = sizes[count]
    start = np.zeros(nodes, np.int32)
    end = np.zeros(nodes, np.int32)
    skip = np.zeros(nodes, np.int32)
    stack = [(0, count)]
    n = 0
    while stack:
        lo, hi = stack.pop()
        start[n], end[n], skip[n] = lo, hi, n + sizes[hi - lo]
        n += 1
        if hi - lo <= leaf:
            continue
        mid = (hi - lo) // 2
        idx = order[lo:hi]
        w = worlds[idx]
        if w.min() != w.max():
            part = np.argsort(w, kind="stable")
        else:
            p = centres[idx]
            axis = int(np.argmax(p.max(axis=0) - p.min(axis=0)))
            part = np.argpartition(p[:, axis], mid)
        order[lo:hi] = idx[part]
        stack.append((lo + mid, hi))  # the right half after the left one's subtree
        stack.append((lo, lo + mid))
    return order, start, end, skip


@wp.func
def primitive_box(x: wp.array(dtype=wp.vec3), indices: wp.array2d(dtype=wp.int32), k: int, grow: float):
    """Primitive k's box (lower, upper) at positions x [m] (its vertices: row k of indices, 2 or 3 columns),
    grown by `grow` [m]."""
    a = x[indices[k, 0]]
    b = a
    for c in range(1, indices.shape[1]):
        p = x[indices[k, c]]
        a = wp.min(a, p)
        b = wp.max(b, p)
    g = wp.vec3(grow, grow, grow)
    return a - g, b + g


@wp.kernel
def primitive_boxes(x: wp.array(dtype=wp.vec3), indices: wp.array2d(dtype=wp.int32), grow: float,
                    lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3)):
    """Each primitive's box at positions x [m], grown by `grow` [m]. dim = primitive count."""
    k = wp.tid()
    a, b = primitive_box(x, indices, k, grow)
    lower[k] = a
    upper[k] = b


@wp.func
def boxes_hold(lower: wp.vec3, upper: wp.vec3, a: wp.vec3, b: wp.vec3):
    """Whether box [lower, upper] holds box [a, b] [m]."""
    return (lower[0] <= a[0] and lower[1] <= a[1] and lower[2] <= a[2]
            and upper[0] >= b[0] and upper[1] >= b[1] and upper[2] >= b[2])


@wp.struct
class GrowthPaths:
    """What growing a tree's boxes for moved vertices reads besides the boxes (grow_vertex_boxes).

    indices: the primitives' vertices [count, 2 or 3] int32.
    first, incident: each vertex v's primitives, incident[first[v]:first[v + 1]] ([particle_count + 1], [3 or 2
        count]) int32.
    leaf_of: each primitive's leaf [count] int32; parent: each node's parent, -1 for the root [node_count] int32.
    """

    indices: wp.array2d(dtype=wp.int32)
    first: wp.array(dtype=wp.int32)
    incident: wp.array(dtype=wp.int32)
    leaf_of: wp.array(dtype=wp.int32)
    parent: wp.array(dtype=wp.int32)


@wp.func
def grow_vertex_boxes(x: wp.array(dtype=wp.vec3), paths: GrowthPaths, tree: TreeData, v: int):
    """Vertex v, which moved, gives its primitives their boxes at positions x [m] (grown by tree.grow), and
    grows their leaves and every node above to hold them (float atomic minima and maxima: the same boxes in any
    order; a primitive with two moved vertices is written twice with the same box). The other boxes stay as they
    were: every box still holds its primitives, only looser for the ones that moved away."""
    for j in range(paths.first[v], paths.first[v + 1]):
        k = paths.incident[j]
        a, b = primitive_box(x, paths.indices, k, tree.grow)
        tree.item_lower[k] = a
        tree.item_upper[k] = b
        n = paths.leaf_of[k]
        while n >= 0:
            if boxes_hold(tree.lower[n], tree.upper[n], a, b):
                # whoever grew this node to hold the box grows every node above with a box that holds it too
                # (and every node held its children's boxes before): the final boxes are the same without the
                # climb, whichever thread came first
                break
            wp.atomic_min(tree.lower, n, a)
            wp.atomic_max(tree.upper, n, b)
            n = paths.parent[n]


@wp.kernel
def grow_moved_boxes(x: wp.array(dtype=wp.vec3), moved: wp.array(dtype=wp.int32),
                     moved_count: wp.array(dtype=wp.int32), threads: int, paths: GrowthPaths, tree: TreeData,
                     other_paths: GrowthPaths, other_tree: TreeData, both: int):
    """grow_vertex_boxes for each moved vertex, moved[0] to moved[moved_count[0] - 1] (dim = threads, thread i
    taking entries i, i + threads, ...), in one tree, and with `both` in a second tree over the same vertices
    too."""
    j = wp.tid()
    while j < moved_count[0]:
        v = moved[j]
        grow_vertex_boxes(x, paths, tree, v)
        if both != 0:
            grow_vertex_boxes(x, other_paths, other_tree, v)
        j = j + threads


class PrimitiveTree:
    """A tree (module docstring) of the shape build_tree gave, over `count` primitives already in its leaf
    order, refitted by `refit`; `data` is what the queries read. indices: the primitives' vertices (a device
    int32 array [count, 2 or 3], in the tree's order), of particle_count vertices. grow: how much each
    primitive's box is grown [m]. The node boxes are refitted by the runtime's BVH refit (kernels.runtime.bvh_refit.DeviceRefit: the
    leaves, then the inner nodes lowest first, in one serial pass on the CPU and a launch per height on a GPU, or
    per_height as given)."""

    def __init__(self, start: np.ndarray, end: np.ndarray, skip: np.ndarray, indices, particle_count: int,
                 grow: float, device, per_height: bool | None = None):
        self.device = device
        self.indices = indices
        count = indices.shape[0]
        nodes = max(len(start), 1)
        data = TreeData()
        ints = self._ints
        data.start, data.end = ints(start), ints(end)
        data.skip = ints(skip)
        data.lower = wp.zeros(nodes, dtype=wp.vec3, device=device)
        data.upper = wp.zeros(nodes, dtype=wp.vec3, device=device)
        data.item_lower = wp.zeros(max(count, 1), dtype=wp.vec3, device=device)
        data.item_upper = wp.zeros(max(count, 1), dtype=wp.vec3, device=device)
        data.grow = float(grow)
        self.data = data
        self.count = count
        self.node_count = len(start)
        # the children of node n: n + 1 and the node after the first child's subtree; -1 for a leaf
        ids = np.arange(len(skip))
        inner = np.asarray(skip) != ids + 1
        left = np.where(inner, ids + 1, -1)
        right = np.where(inner, np.asarray(skip)[np.minimum(ids + 1, max(len(skip) - 1, 0))], -1)
        self.children = (left, right)
        # each primitive's leaf and each node's parent (-1 for the root): the path grow_moved updates
        parent = np.full(len(skip), -1, np.int32)
        for child in (left, right):
            parent[child[inner]] = ids[inner]
        leaves = np.nonzero(~inner)[0]  # in preorder their ranges cover the primitives in order
        leaf_of = np.repeat(leaves, np.asarray(end)[leaves] - np.asarray(start)[leaves]) if count else np.zeros(1)
        # each vertex's primitives, incident[first[v]:first[v + 1]] (grow_moved)
        rows = indices.numpy()
        vertex = rows.reshape(-1)
        by_vertex = np.argsort(vertex, kind="stable")
        first = np.searchsorted(vertex[by_vertex], np.arange(particle_count + 1))
        paths = GrowthPaths()
        paths.indices, paths.leaf_of, paths.parent = indices, ints(leaf_of), ints(parent)
        paths.first, paths.incident = ints(first), ints(by_vertex // max(rows.shape[1], 1))
        self._paths = paths
        buffers = {"prims": ints(np.arange(count)), "node_start": data.start, "node_end": data.end,
                   "node_left": ints(left), "node_right": ints(right), "node_lower": data.lower,
                   "node_upper": data.upper}
        self._refit = DeviceRefit(left, right, buffers, wp.get_device(device), per_height)

    def refit(self, x) -> TreeData:
        """Every box at positions x [m] (vec3 [particle_count])."""
        if self.count:
            wp.launch(primitive_boxes, dim=self.count, device=self.device, record_tape=False,
                      inputs=[x, self.indices, self.data.grow, self.data.item_lower, self.data.item_upper])
            self._refit.run(self.data.item_lower, self.data.item_upper)
        return self.data

    def _ints(self, values):
        """An int32 array of `values` on the tree's device."""
        return wp.array(np.asarray(values, np.int32), dtype=wp.int32, device=self.device)

    def grow_moved(self, x, moved, moved_count, *, also: "PrimitiveTree | None" = None, threads: int = 64):
        """The boxes of the primitives of the moved vertices (moved[:moved_count[0]], int32 device arrays, each
        vertex once) at positions x [m], and their leaves' and ancestors' boxes grown to hold them
        (grow_vertex_boxes): after it every box holds its primitives at x where they moved and where they were
        refitted elsewhere, so a query at x needs no margin. A handful of moved vertices costs a few paths to the
        root, not a refit. `also`: another tree over the same vertices, grown in the same launch. `threads`: the
        launch's threads (a fixed number, each taking every threads-th vertex: the launch replays whatever the
        count)."""
        if also is not None and not also.count:
            also = None
        if not self.count:
            if also is not None:
                also.grow_moved(x, moved, moved_count, threads=threads)
            return self.data
        other = also if also is not None else self
        wp.launch(grow_moved_boxes, dim=threads, device=self.device, record_tape=False,
                  inputs=[x, moved, moved_count, threads, self._paths, self.data, other._paths, other.data,
                          int(also is not None)])
        return self.data
