"""Graph colouring of Warp's `wp.utils`: colour the nodes of an undirected graph so that no edge joins two nodes
of one colour, then even out the colour groups' sizes. A solver that updates the nodes of one colour at a time in
parallel (vertex block descent, Gauss-Seidel cloth) never updates two neighbours at once.

`graph_coloring_assign` orders the nodes (maximum cardinality search, MCS, or by decreasing degree, GREEDY) and gives
each node the smallest colour none of its already coloured neighbours has. `graph_coloring_balance` then moves single
nodes from the largest (or another) group into the smallest one while the move keeps the colouring valid, until the
largest/smallest size ratio reaches a target, no move is left, or an iteration bound is hit; a move that makes the
ratio worse is undone. Both follow Warp 1.19's procedure step by step, so a Warp program gets the same colours
(GREEDY orders nodes of equal degree as GCC's std::sort does: stl_sort.py). They run on the host with the arrays'
memory (CPU arrays of int32, as in Warp).
"""

from __future__ import annotations

import enum
import operator

import numpy as np

from .. import types as T
from ..logger import log_warning
from .stl_sort import stl_sort

__all__ = ["GraphColoringAlgorithm", "graph_coloring_assign", "graph_coloring_balance", "graph_coloring_get_groups"]

_INT32_MAX = 2**31 - 1


class GraphColoringAlgorithm(enum.IntEnum):
    """How `graph_coloring_assign` orders the nodes before colouring them greedily."""

    MCS = 0  # maximum cardinality search: next, the node with the most already ordered neighbours (fewer colours)
    GREEDY = 1  # by decreasing degree


class _Graph:
    """Adjacency lists of an edge list [edge_count, 2] over `node_count` nodes, in the edges' order."""

    def __init__(self, node_count: int, edges: np.ndarray):
        for e, (a, b) in enumerate(edges):
            if not (0 <= a < node_count and 0 <= b < node_count):
                raise ValueError(f"Graph edge {e} has endpoints ({a}, {b}), but valid node indices are in the range "
                                 f"[0, {node_count}).")
        self.neighbors = [[] for _ in range(node_count)]
        for a, b in edges.tolist():
            self.neighbors[a].append(b)
            self.neighbors[b].append(a)


def _check_array(a, what: str, ndim: int) -> None:
    if not a.device.is_cpu:
        raise RuntimeError(f"{what} array must be on the CPU")
    if a.dtype != T.int32:
        raise RuntimeError(f"{what} array must have dtype int32, got {T.type_repr(a.dtype)}")
    if a.ndim != ndim:
        raise RuntimeError(f"{what} array must be {ndim}-dimensional, got {a.ndim} dimensions")


def _check_edges(edges) -> np.ndarray:
    _check_array(edges, "edges", 2)
    if edges.shape[1] != 2:
        raise RuntimeError(f"edges array must have shape (edge_count, 2), got shape {edges.shape}")
    return np.asarray(edges.numpy(), dtype=np.int64)


def _greedy_in_order(order, graph: _Graph, colors: list) -> int:
    """Colour the nodes in `order`, each with the smallest colour its coloured neighbours leave free; the count."""
    color_count = 0
    for node in order:
        taken = {colors[n] for n in graph.neighbors[node] if colors[n] >= 0}
        color = next(c for c in range(color_count + 1) if c not in taken)
        colors[node] = color
        color_count = max(color_count, color + 1)
    return color_count


class _WeightBuckets:
    """Unordered nodes by weight (the count of their already ordered neighbours) for MCS. The order nodes are taken
    in is Warp's: a bucket drops its first node by moving its last one to the front, and a node whose weight grows
    leaves its bucket the same way before it is appended to the next."""

    def __init__(self, node_count: int):
        self.weight = [0] * node_count  # -1 once ordered
        self.slot = [-1] * node_count  # position in its bucket
        self.buckets = [[]]
        self.max_weight = 0

    def add(self, weight: int, node: int) -> None:
        while len(self.buckets) <= weight:
            self.buckets.append([])
        self.slot[node] = len(self.buckets[weight])
        self.weight[node] = weight
        self.buckets[weight].append(node)
        self.max_weight = max(self.max_weight, weight)

    def _remove_at(self, bucket: list, index: int) -> None:
        last = bucket.pop()
        if index < len(bucket):
            bucket[index] = last
            self.slot[last] = index

    def pop_heaviest(self) -> int:
        bucket = self.buckets[self.max_weight]
        node = bucket[0]
        self._remove_at(bucket, 0)
        self.weight[node] = -1
        if not bucket:
            self.max_weight = next((w for w in range(self.max_weight - 1, -1, -1) if self.buckets[w]), 0)
        return node

    def increase(self, node: int) -> None:
        weight = self.weight[node]
        self._remove_at(self.buckets[weight], self.slot[node])
        self.add(weight + 1, node)

    def empty(self) -> bool:
        return self.max_weight <= 0 and not self.buckets[0]


def _mcs_order(graph: _Graph, node_count: int) -> list:
    buckets = _WeightBuckets(node_count)
    buckets.add(0, 0)
    order = []
    for _ in range(node_count):
        if buckets.empty():  # a new connected component: its first unordered node by index
            buckets.add(0, next(n for n in range(node_count) if buckets.weight[n] >= 0))
        node = buckets.pop_heaviest()
        order.append(node)
        for n in graph.neighbors[node]:
            w = buckets.weight[n]
            if w == 0:  # unordered and in no bucket yet
                buckets.add(1, n)
            elif w > 0:
                buckets.increase(n)
    return order


def graph_coloring_assign(edges, node_colors, algorithm: GraphColoringAlgorithm = GraphColoringAlgorithm.MCS) -> int:
    """Colour the graph's nodes so that no edge joins two nodes of one colour.

    Args:
        edges: node index pairs of the undirected edges, int32 CPU array of shape [edge_count, 2].
        node_colors: int32 CPU array of shape [node_count], filled with each node's colour in [0, colour count);
            its length is the graph's node count.
        algorithm: the node order (GraphColoringAlgorithm.MCS or GREEDY).

    Returns:
        The number of colours used.

    Raises:
        RuntimeError: a malformed array, an empty graph, an edge naming a node outside [0, node_count).
    """
    edge_list = _check_edges(edges)
    _check_array(node_colors, "node_colors", 1)
    node_count = node_colors.shape[0]
    if node_count == 0:
        raise RuntimeError("Cannot color an empty graph")
    if int(algorithm) not in (GraphColoringAlgorithm.MCS, GraphColoringAlgorithm.GREEDY):
        raise RuntimeError(f"Graph coloring failed: Unrecognized coloring algorithm number: {int(algorithm)}!")
    try:
        graph = _Graph(node_count, edge_list)
    except ValueError as e:
        raise RuntimeError(f"Graph coloring failed: {e}") from None
    if int(algorithm) == GraphColoringAlgorithm.MCS:
        order = _mcs_order(graph, node_count)
    else:
        degrees = [len(n) for n in graph.neighbors]
        order = list(range(node_count))
        # Warp sorts with std::sort, which orders nodes of equal degree its own way: the same order, same colours
        stl_sort(order, lambda a, b: degrees[a] > degrees[b])
    colors = [-1] * node_count
    color_count = _greedy_in_order(order, graph, colors)
    node_colors.assign(np.asarray(colors, dtype=np.int32))
    return color_count


def _ratio(groups: list) -> tuple:
    """(largest/smallest size ratio as float32, index of the first largest group, of the first smallest group)."""
    sizes = [len(g) for g in groups]
    big = max(range(len(sizes)), key=lambda c: (sizes[c], -c))
    small = min(range(len(sizes)), key=lambda c: (sizes[c], c))
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty group: an infinite ratio, as in Warp
        return np.float32(sizes[big]) / np.float32(sizes[small]), big, small


def _movable(graph: _Graph, colors: list, group: list, target: int) -> int:
    """Index in `group` of its first node with no neighbour of colour `target`, or -1."""
    for i, node in enumerate(group):
        if all(colors[n] != target for n in graph.neighbors[node]):
            return i
    return -1


def _balance(graph: _Graph, colors: list, groups: list, target: np.float32, max_iterations: int) -> tuple:
    """Move nodes into the smallest group until done; (ratio reached, whether the iteration bound stopped it)."""
    ratio = np.float32(-1.0)
    last_node = last_color = -1
    iteration = 0
    while True:
        previous = ratio
        ratio, big, small = _ratio(groups)
        if previous > 0 and previous < ratio:  # the last move made it worse: undo it
            colors[last_node] = last_color
            return previous, False
        if len(groups[big]) - len(groups[small]) <= 2 or ratio <= target:
            return ratio, False
        source = big
        index = _movable(graph, colors, groups[big], small)
        if index == -1:  # no node of the largest group can move: try the other groups, by colour
            for color in range(len(groups)):
                if color in (big, small):
                    continue
                index = _movable(graph, colors, groups[color], small)
                if index != -1:
                    source = color
                    break
        if index == -1:
            return ratio, False
        if iteration == max_iterations:
            return ratio, True
        group = groups[source]
        node = group[index]
        last_node, last_color = node, source
        colors[node] = small
        group[index] = group[-1]  # remove by moving the last node into its place (Warp's group order)
        group.pop()
        groups[small].append(node)
        iteration += 1


def graph_coloring_balance(edges, node_colors, color_count: int, target_max_min_ratio: float, *,
                           max_iterations: int | None = None) -> float:
    """Even out the colour groups' sizes of a valid colouring, in place, keeping it valid.

    Args:
        edges: int32 CPU array [edge_count, 2], the graph's edges.
        node_colors: int32 CPU array [node_count], each in [0, color_count); updated in place.
        color_count: the colouring's number of colours (graph_coloring_assign's result).
        target_max_min_ratio: stop once largest/smallest group size is at most this.
        max_iterations: at most this many single-node moves (None: the node count); a warning says when this
            bound stopped the balancing.

    Returns:
        The largest/smallest group size ratio reached (float32 precision).

    Raises:
        TypeError / ValueError: max_iterations is not an integer in [0, 2**31 - 1].
        RuntimeError: a malformed array, an edge naming a missing node, a colour outside [0, color_count).
    """
    edge_list = _check_edges(edges)
    _check_array(node_colors, "node_colors", 1)
    node_count = node_colors.shape[0]
    if max_iterations is None:
        max_iterations = node_count
    else:
        if isinstance(max_iterations, (bool, np.bool_)):
            raise TypeError(f"max_iterations must be an integer or None, got {type(max_iterations).__name__}")
        try:
            max_iterations = operator.index(max_iterations)
        except TypeError:
            raise TypeError(f"max_iterations must be an integer or None, got {type(max_iterations).__name__}") \
                from None
        if max_iterations < 0:
            raise ValueError(f"max_iterations must be non-negative, got {max_iterations}")
        if max_iterations > _INT32_MAX:
            raise ValueError(f"max_iterations must not exceed {_INT32_MAX}, got {max_iterations}")
    try:
        graph = _Graph(node_count, edge_list)
    except ValueError as e:
        raise RuntimeError(f"Graph coloring balance failed: {e}") from None
    if color_count <= 1:
        return 1.0
    colors = np.asarray(node_colors.numpy()).astype(np.int64).tolist()
    groups = [[] for _ in range(color_count)]
    for node, color in enumerate(colors):
        if not 0 <= color < color_count:
            raise RuntimeError(f"Graph coloring balance failed: Node {node} has color {color}, but valid colors are "
                               f"in the range [0, {color_count}).")
        groups[color].append(node)
    ratio, bounded = _balance(graph, colors, groups, np.float32(target_max_min_ratio), max_iterations)
    node_colors.assign(np.asarray(colors, dtype=np.int32))
    ratio = float(ratio)
    if bounded:
        log_warning(f"Graph coloring stopped because it reached the {max_iterations}-iteration limit "
                    f"(achieved ratio {ratio:g}, target {target_max_min_ratio:g}).", stacklevel=2)
    return ratio


def graph_coloring_get_groups(node_colors, color_count: int, return_wp_array: bool = True, device="cpu") -> tuple:
    """The node indices of each colour, in increasing order: a tuple of `color_count` int32 arrays (numpy arrays
    with return_wp_array=False, else toolkit arrays on `device`)."""
    if color_count < 0:
        raise RuntimeError("color_count must be non-negative")
    if color_count == 0:
        return ()
    _check_array(node_colors, "node_colors", 1)
    colors = np.asarray(node_colors.numpy())
    groups = tuple(np.flatnonzero(colors == c).astype(np.int32) for c in range(color_count))
    if not return_wp_array:
        return groups
    from .array import array  # the array class imports much of the runtime: only when arrays are asked for

    return tuple(array(g, dtype=T.int32, device=device) for g in groups)
