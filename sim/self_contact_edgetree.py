"""The edge-edge broad phase of cloth self-contact's searches (sim/self_contact.py, sim/self_contact_partial.py):
a bounding volume hierarchy over the collision edges, built once on the host from the initial positions and
refitted at every search.

The tree's shape is fixed at build: the edges are split at the median along the largest extent of their
midpoints (after splitting by world, so that a subtree holds one world where it can), down to leaves of at most
LEAF_SIZE edges, and the edges are renumbered in the leaves' order (SelfContact keeps its edges in that order), so
that every node holds a contiguous range [start, end) of edge indices. A cloth stretches little, so a subtree
stays a compact patch of the surface however the cloth moves and folds: refitting the boxes suffices, and costs
one pass over the edges and one over the inner nodes. Nodes are stored in preorder with skip links (the node
after a node's subtree), so a query walks the tree without a stack: from node n it goes on to n + 1 (the first
child) when the node's box overlaps, else to skip[n]; a leaf is a node with skip[n] == n + 1.

The full search visits each unordered pair once, from its lower edge: a node whose edges all have indices at or
below the querying edge's is skipped whole, so a query descends into about half the tree (measured on the 64 x
64 pile at its densest, both cores: 6.3 ms a query of every edge against 10.0 ms for the hash grid of edge boxes
it replaced, whose scan of crowded cells cost more than its box tests; refit 0.1 ms against the grid's 1.35 ms
build). Integer data and boxes only: nothing here is differentiated.
"""

import numpy as np

import kernels as wp

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

#: edges per leaf at most. Measured on the 64 x 64 pile (both cores, a query of every edge): 2: 7.0 ms, 4: 6.3 ms,
#: 8: 6.2 ms; 4 keeps the leaves' own tests few when edges stretch
LEAF_SIZE = 4


@wp.struct
class EdgeTreeData:
    """An edge tree as the queries see it.

    lower, upper: each node's box [m] (vec3 [node_count]): the union of its edges' grown boxes.
    start, end: the edges of each node, [start, end) in edge index (int32 [node_count]).
    skip: the node that follows each node's subtree in preorder (int32 [node_count]); node_count past the last.
    item_lower, item_upper: each edge's box at the refit positions, grown by `grow` (vec3 [edge_count]).
    grow: how much the edges' boxes are grown [m] (half the query radius: two edges within the query radius have
        overlapping grown boxes).
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
def edge_tree_is_leaf(tree: EdgeTreeData, n: int):
    """Whether node n is a leaf (its subtree is itself)."""
    return tree.skip[n] == n + 1


def _node_counts(count: int, leaf: int) -> dict:
    """Nodes of the subtree over each range length that the median splits of `count` edges produce."""
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


def build_edge_tree(midpoints: np.ndarray, worlds: np.ndarray, leaf: int = LEAF_SIZE) -> tuple:
    """The tree's shape over edges with these midpoints [m] (float [E, 3]) and worlds (int [E]).

    Returns (order, start, end, skip): `order` [E] the edges in leaf order (the edge of new index k is
    order[k]), and the nodes' ranges and skip links in preorder (int32 [node_count] each)."""
    count = len(midpoints)
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
            p = midpoints[idx]
            axis = int(np.argmax(p.max(axis=0) - p.min(axis=0)))
            part = np.argpartition(p[:, axis], mid)
        order[lo:hi] = idx[part]
        stack.append((lo + mid, hi))  # the right half after the left one's subtree
        stack.append((lo, lo + mid))
    return order, start, end, skip


@wp.kernel
def refit_leaves(x: wp.array(dtype=wp.vec3), edges: wp.array2d(dtype=wp.int32), tree: EdgeTreeData):
    """Each leaf's edges' grown boxes at positions x [m], and the leaf's box. dim = node_count."""
    n = wp.tid()
    if not edge_tree_is_leaf(tree, n):
        return
    g = wp.vec3(tree.grow, tree.grow, tree.grow)
    lower = wp.vec3(1.0e30, 1.0e30, 1.0e30)
    upper = wp.vec3(-1.0e30, -1.0e30, -1.0e30)
    for k in range(tree.start[n], tree.end[n]):
        p = x[edges[k, 0]]
        q = x[edges[k, 1]]
        a = wp.min(p, q) - g
        b = wp.max(p, q) + g
        tree.item_lower[k] = a
        tree.item_upper[k] = b
        lower = wp.min(lower, a)
        upper = wp.max(upper, b)
    tree.lower[n] = lower
    tree.upper[n] = upper


@wp.kernel
def refit_inner(tree: EdgeTreeData):
    """The inner nodes' boxes from their children's, children before parents (reverse preorder). dim = 1."""
    count = tree.skip.shape[0]
    for i in range(count):
        n = count - 1 - i
        if not edge_tree_is_leaf(tree, n):
            right = tree.skip[n + 1]
            tree.lower[n] = wp.min(tree.lower[n + 1], tree.lower[right])
            tree.upper[n] = wp.max(tree.upper[n + 1], tree.upper[right])


class EdgeTree:
    """An edge tree (module docstring) over `edges` (int [E, 2], already in the order of `order_edges`),
    refitted by `refit`; `data` is what the queries read.

    grow: half the query radius [m]."""

    def __init__(self, start: np.ndarray, end: np.ndarray, skip: np.ndarray, edge_count: int, grow: float, device):
        self.device = device
        nodes = max(len(start), 1)
        data = EdgeTreeData()
        ints = lambda a: wp.array(a.astype(np.int32), dtype=wp.int32, device=device)  # noqa: E731
        data.start, data.end = ints(start), ints(end)
        data.skip = ints(skip)
        data.lower = wp.zeros(nodes, dtype=wp.vec3, device=device)
        data.upper = wp.zeros(nodes, dtype=wp.vec3, device=device)
        data.item_lower = wp.zeros(max(edge_count, 1), dtype=wp.vec3, device=device)
        data.item_upper = wp.zeros(max(edge_count, 1), dtype=wp.vec3, device=device)
        data.grow = float(grow)
        self.data = data
        self.node_count = len(start)

    def refit(self, x, edges) -> EdgeTreeData:
        """Every box at positions x [m] (vec3 [particle_count]); edges: the collision edges (int32 [E, 2])."""
        if self.node_count:
            wp.launch(refit_leaves, dim=self.node_count, inputs=[x, edges, self.data], device=self.device,
                      record_tape=False)
            wp.launch(refit_inner, dim=1, inputs=[self.data], device=self.device, record_tape=False)
        return self.data
