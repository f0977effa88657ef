"""Cloth self-contact and cloth-cloth contact: proximity pairs found through bounding volume hierarchies at the
steps that need a search, their geometry (closest points, normals, barycentric weights), and the displacement
bound that keeps cloth from passing through itself.

Primitives: the vertices, triangles and edges of every cloth built with `self_collision=True`; such cloths
collide with themselves and with each other. Two kinds of pairs, found at the search's positions X:
vertex-triangle (a vertex and a triangle not containing it) and edge-edge (two edges without a shared vertex),
of the same world or either shared (Model.particle_world: cloths of two different worlds never pair),
each kept when closer than the query radius r_q = QUERY_RADIUS thickness. Every vertex keeps up to VT_SLOTS
triangles, every edge up to EE_SLOTS other edges (more are counted in `overflow`, which `sim run` reports, and
dropped from the contact forces, never from the bound below). Once the bound is known, only the pairs that could
come within their thickness before the next search (closer than the thickness plus the farthest their two sides
may move) are kept. The broad phase: a bounding volume hierarchy over the triangles and one over the edges, each
built once from the initial positions and refitted at each search (sim/self_contact_tree.py), queried with
axis-aligned boxes (a vertex's grown by r_q against the triangles' own, the edges' each grown by r_q / 2) before
any closest-point computation: for thin primitives boxes pass 2.5 times fewer edge pairs than bounding spheres.
A search costs about n log n in the number of primitives n, with fixed arrays, so nothing waits for the device.

Anti-tunnelling (an offset-geometry bound in the manner of Chen et al. 2025, "Offset Geometric Contact"): each
vertex i gets bound_i = GAMMA * min(r_q, the distance of every pair it belongs to) at the search, and until the
next search the solvers keep its displacement since the search, less the drift c (the colliding vertices' mean
displacement, common to all of them), within bound_i. A common translation changes no distance, and every point
of a primitive moves relative to c at most as far as its farthest vertex: with GAMMA < 1/2 two primitives at
distance d approach by less than 2 GAMMA d < d, and pairs beyond r_q by less than 2 GAMMA r_q < r_q, so no new
intersection can form, whatever the step size. (A pair beyond r_q may come closer than its thickness before the
next search; see the skin below.) With a fixed colliding vertex (it does not drift), c = 0. In a model of many
worlds each world has its own drift (its colliding vertices' mean displacement; 0 with a fixed one among them,
and for shared vertices).

When to search: a step whose relative motion, repeated, would take a vertex past min(bound_i, skin) asks for a
search before the next step (skin = (r_q - h) / 2: pairs beyond r_q then stay beyond the thickness h), and so
does a step from positions other than the last step's output (a new or reset state). A cloth falling or sliding
as a whole, or resting, searches rarely; one folding fast searches every step. When only a few vertices ask,
only they are searched again (sim/self_contact_partial.py, which says why the bound still holds). A vertex
that would pass its bound within a step is clamped to it (it loses speed: a limit of bound_i / dt on its
relative speed), shortened along its own step when the step started within the bound. When one of a group
would be with the new drift (a vertex a collider stopped while the rest moved on), the group keeps the last
step's drift, under which every vertex started the step within its bound: a stopped vertex is not clamped, and
none is pulled along the drift into a collider; so a cloth falling as a whole needs no search until it lands
(a search at every step of the fall, once its step passed the skin, was the older rule). The bound, the drift
and the search are computed without a Tape (a safety net, inactive at the smooth points
where gradients are checked): when the bound clamps, gradients treat it as a constant.

Solvers keep the pair `thickness` (the mean of the two primitives' first vertices' thickness) between the
surfaces with friction (Model.soft_contact_mu): SolverXPBD by position corrections, SolverSemiImplicit by
penalty forces (sim.contact's ke, kd, kf). A pair's normal points from the other primitive to this one on the
side it was on at the search (no pair crosses before the next), so a pair that crossed within an iteration is
pushed back.
"""

import numpy as np

import kernels as wp


from .self_contact_tree import PrimitiveTree, TreeData, build_tree, tree_next_leaf
from .self_contact_active import ActiveLists
from .launch_replay import ReplayedLaunch, ReplayedSequence
from .self_contact_bound import (DRIFT_TILE, check_budget, drop_overrun_drift, find_drift_overrun,
                                 limit_and_check, limit_displacement, settle_world_drifts, sum_drift_tiled)
from .worlds import element_worlds

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

from .self_contact_partial import (PARTIAL_ATTEMPTS, PARTIAL_FRACTION, PartialSearch, begin_attempt, clear_counts,
                                   clear_marks, finish_attempt, grow_marked, search_marked)
from .self_contact_primitives import (DEFAULT_THICKNESS_FRACTION, EE_SLOTS, GAMMA,  # noqa: F401
                                    QUERY_RADIUS, VT_SLOTS, SelfContactData,
                                    boxes_overlap, edge_edge_candidate, edge_separation,
                                    order_free_module, triangle_separation, vertex_triangle_candidate)

# Every kernel here is order-free (order_free_module) and runs on every thread (until the trees, a list of the
# large primitives, filled by atomic slots in the pairs' order, ran serially): the searches' queries and the
# kernels that only read the lists. The queries are most of a search's time (the 64 x 64 drop with XPBD: 6.4 of
# its 22 s on one thread): a query thread writes its own primitive's list, lowers bounds by atomic minima and
# counts overflow.
ORDER_FREE = order_free_module(__name__)

#: vertices and edges a thread of the full search's queries (find_vertex_triangle_pairs, find_edge_edge_pairs) on
#: the CPU, where a walk shared by four neighbours saves 10-15 % (docs/cloth_contact.md, session 25); on a GPU one
#: a thread, which keeps four times the threads for a device that a 64 x 64 cloth's 12,000 edges leave mostly
#: idle (not yet measured on a device)
VERTEX_GROUP = 4
EDGE_GROUP = 4


# ---------------------------------------------------------------------------------------------------------------
# Geometry


@wp.func
def contact_normal(u: wp.vec3, u_start: wp.vec3):
    """Unit normal and signed distance [m] of a pair whose separation vector (this primitive's closest point
    minus the other's) is u now and was u_start at the search: the normal points to the side of the
    start, and the distance is negative once the pair crossed."""
    d = wp.length(u)
    n = u_start
    if d > 1.0e-12:
        n = u / d
    if wp.dot(n, u_start) < 0.0:
        return -n, -d
    return n, d


# ---------------------------------------------------------------------------------------------------------------
# Detection (integer data and the bound: not differentiated)


@wp.func
def vertex_triangle_pair(x: wp.array(dtype=wp.vec3), data: SelfContactData, v: int, k: int):
    """Slot k of vertex v: its triangle's corners (a, b, c), the closest point's weights w and the separation
    u = x_v - (w_a x_a + w_b x_b + w_c x_c) [m] at positions x."""
    t = data.vt_triangle[v * VT_SLOTS + k]
    a = data.tri_indices[t, 0]
    b = data.tri_indices[t, 1]
    c = data.tri_indices[t, 2]
    w, u = triangle_separation(x, v, a, b, c)
    return a, b, c, w, u


@wp.func
def edge_edge_pair(x: wp.array(dtype=wp.vec3), data: SelfContactData, e: int, k: int):
    """Slot k of edge e = (i0, i1): the other edge's ends (j0, j1), the closest points' parameters s (on e)
    and t, and the separation u = the closest point on e minus the one on the other edge [m] at positions x."""
    f = data.ee_edge[e * EE_SLOTS + k]
    j0 = data.edge_indices[f, 0]
    j1 = data.edge_indices[f, 1]
    s, t, u = edge_separation(x, data.edge_indices[e, 0], data.edge_indices[e, 1], j0, j1)
    return j0, j1, s, t, u


@wp.func
def reach(bound: wp.array(dtype=float), i: int, j: int, k: int):
    """The farthest any of vertices i, j, k may move relative to the drift before the next search [m]."""
    return wp.max(wp.max(bound[i], bound[j]), bound[k])


@wp.func
def lower_bound(bound: wp.array(dtype=float), i: int, j: int, k: int, l: int, d: float):
    """Lower the bound of the four vertices of a pair at distance d [m] to d."""
    wp.atomic_min(bound, i, d)
    wp.atomic_min(bound, j, d)
    wp.atomic_min(bound, k, d)
    wp.atomic_min(bound, l, d)


@wp.func
def store_pair(other: wp.array(dtype=wp.int32), start: wp.array(dtype=wp.vec3), base: int, count: int,
               slots: int, pair: int, u: wp.vec3, overflow: wp.array(dtype=wp.int32)):
    """Keep `pair` with separation u in slot base + count when count < slots (else count it in overflow);
    returns the new count."""
    if count < slots:
        other[base + count] = pair
        start[base + count] = u
        return count + 1
    wp.atomic_add(overflow, 0, 1)
    return count


@wp.func
def try_vertex_triangle(x: wp.array(dtype=wp.vec3), data: SelfContactData, v: int, t: int, query_radius: float,
                        bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32), count: int):
    """Vertex v against triangle t: when closer than query_radius, lower the bound of the four vertices to their
    distance and keep the pair with its separation now. Returns v's new pair count. The callers test first,
    inline, that t's box comes within query_radius of the vertex."""
    u, d = vertex_triangle_candidate(x, data, v, t)
    if d >= query_radius:
        return count
    lower_bound(bound, v, data.tri_indices[t, 0], data.tri_indices[t, 1], data.tri_indices[t, 2], d)
    return store_pair(data.vt_triangle, data.vt_start, v * VT_SLOTS, count, VT_SLOTS, t, u, overflow)


@wp.kernel(module=ORDER_FREE)
def find_vertex_triangle_pairs(x: wp.array(dtype=wp.vec3), tree: TreeData, data: SelfContactData,
                               query_radius: float, bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32),
                               order: wp.array(dtype=wp.int32), group: int):
    """Colliding vertices against the triangles within query_radius (try_vertex_triangle), through the triangle
    tree, `group` vertices a thread: order[group * tid:][:group] (the colliding vertices in the order of their
    first triangle, so that a group is a patch of the surface). The group's box (its vertices' boxes grown by
    query_radius) walks the tree once, and each leaf it reaches is tested against each vertex's own box: one
    walk for the group, where a walk per vertex tested the same upper nodes again for each."""
    first = wp.tid() * group
    last = wp.min(first + group, order.shape[0])
    grow = wp.vec3(query_radius, query_radius, query_radius)
    lower = x[order[first]]
    upper = lower
    for k in range(first, last):
        v = order[k]
        lower = wp.min(lower, x[v])
        upper = wp.max(upper, x[v])
        data.vt_count[v] = 0
    lower = lower - grow
    upper = upper + grow
    n = tree_next_leaf(tree, lower, upper, -1, 0)
    while n < tree.skip.shape[0]:
        for k in range(first, last):
            v = order[k]
            p_lower = x[v] - grow
            p_upper = x[v] + grow
            if boxes_overlap(p_lower, p_upper, tree.lower[n], tree.upper[n]):
                count = data.vt_count[v]
                for t in range(tree.start[n], tree.end[n]):
                    # the cheap box test inline, first (a call passes the struct of arrays)
                    if boxes_overlap(p_lower, p_upper, tree.item_lower[t], tree.item_upper[t]):
                        count = try_vertex_triangle(x, data, v, t, query_radius, bound, overflow, count)
                data.vt_count[v] = count
        n = tree_next_leaf(tree, lower, upper, -1, n + 1)


@wp.func
def try_edge_edge(x: wp.array(dtype=wp.vec3), data: SelfContactData, e: int, f: int, query_radius: float,
                  bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32), count: int):
    """Edge e against an edge f without a shared vertex, as try_vertex_triangle. Returns e's new count. The
    callers test first, inline, that the edges' boxes come within query_radius (and visit each unordered pair
    once)."""
    u, d = edge_edge_candidate(x, data, e, f, query_radius)
    if d >= query_radius:
        return count
    lower_bound(bound, data.edge_indices[e, 0], data.edge_indices[e, 1], data.edge_indices[f, 0],
                data.edge_indices[f, 1], d)
    return store_pair(data.ee_edge, data.ee_start, e * EE_SLOTS, count, EE_SLOTS, f, u, overflow)


@wp.kernel(module=ORDER_FREE)
def find_edge_edge_pairs(x: wp.array(dtype=wp.vec3), tree: TreeData, data: SelfContactData,
                         query_radius: float, bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32),
                         group: int):
    """Collision edges against the edges without a shared vertex within query_radius (try_edge_edge), each
    unordered pair once, by its lower edge: through the edge tree (sim/self_contact_tree.py), whose boxes
    grown by half the query radius overlap for two edges within it, `group` consecutive edges (in the tree's
    order: a patch of the surface) a thread. The group's box walks the tree once, skipping every node whose
    edges all have indices up to the group's first, and each leaf it reaches is tested against each edge's
    box: one walk for the group, where a walk per edge tested the same upper nodes again for each."""
    first = wp.tid() * group
    last = wp.min(first + group, data.edge_indices.shape[0])
    lower = tree.item_lower[first]
    upper = tree.item_upper[first]
    for e in range(first, last):
        lower = wp.min(lower, tree.item_lower[e])
        upper = wp.max(upper, tree.item_upper[e])
        data.ee_count[e] = 0
    n = tree_next_leaf(tree, lower, upper, first, 0)
    while n < tree.skip.shape[0]:
        for e in range(first, wp.min(last, tree.end[n] - 1)):
            e_lower = tree.item_lower[e]
            e_upper = tree.item_upper[e]
            if boxes_overlap(e_lower, e_upper, tree.lower[n], tree.upper[n]):
                count = data.ee_count[e]
                for f in range(wp.max(tree.start[n], e + 1), tree.end[n]):
                    if boxes_overlap(e_lower, e_upper, tree.item_lower[f], tree.item_upper[f]):
                        count = try_edge_edge(x, data, e, f, query_radius, bound, overflow, count)
                data.ee_count[e] = count
        n = tree_next_leaf(tree, lower, upper, first, n + 1)


@wp.func
def count_touching(data: SelfContactData, i: int, j: int, k: int, l: int, d: float, h: float):
    """A pair of vertices i, j, k, l at distance d [m] touches at the search when d < h: count it at each."""
    if d < h:
        wp.atomic_add(data.degree, i, 1)
        wp.atomic_add(data.degree, j, 1)
        wp.atomic_add(data.degree, k, 1)
        wp.atomic_add(data.degree, l, 1)


@wp.kernel(module=ORDER_FREE)
def keep_reachable_pairs(data: SelfContactData, bound: wp.array(dtype=float), edges: int,
                         base: wp.array(dtype=wp.int32)):
    """With the final bound, keep (compacted, in order) only the pairs of vertex (edges = 0) or edge
    (edges = 1) i that could come within their thickness this step: d < h + the farthest each side may move.
    Each kept pair that touches at the search is counted in data.degree (zeroed before: count_degrees' sum,
    without its second pass over the lists). base[i] = the new count (PartialSearch.vt_base or ee_base)."""
    i = wp.tid()
    kept = int(0)
    if edges == 0:
        for k in range(data.vt_count[i]):
            t = data.vt_triangle[i * VT_SLOTS + k]
            a = data.tri_indices[t, 0]
            b = data.tri_indices[t, 1]
            c = data.tri_indices[t, 2]
            u = data.vt_start[i * VT_SLOTS + k]
            d = wp.length(u)
            h = 0.5 * (data.thickness[i] + data.thickness[a])
            if d < h + bound[i] + reach(bound, a, b, c):
                data.vt_triangle[i * VT_SLOTS + kept] = t
                data.vt_start[i * VT_SLOTS + kept] = u
                count_touching(data, i, a, b, c, d, h)
                kept = kept + 1
        data.vt_count[i] = kept
        base[i] = kept
    else:
        i0 = data.edge_indices[i, 0]
        i1 = data.edge_indices[i, 1]
        for k in range(data.ee_count[i]):
            f = data.ee_edge[i * EE_SLOTS + k]
            j0 = data.edge_indices[f, 0]
            j1 = data.edge_indices[f, 1]
            u = data.ee_start[i * EE_SLOTS + k]
            d = wp.length(u)
            h = 0.5 * (data.thickness[i0] + data.thickness[j0])
            if d < h + wp.max(bound[i0], bound[i1]) + wp.max(bound[j0], bound[j1]):
                data.ee_edge[i * EE_SLOTS + kept] = f
                data.ee_start[i * EE_SLOTS + kept] = u
                count_touching(data, i0, i1, j0, j1, d, h)
                kept = kept + 1
        data.ee_count[i] = kept
        base[i] = kept


@wp.kernel(module=ORDER_FREE)
def count_degrees(data: SelfContactData, edges: int):
    """data.degree += 1 at the four vertices of every listed pair of vertex (edges = 0) or edge (edges = 1) i
    that touches at the search (closer than its thickness); after a partial search (a full one counts in
    keep_reachable_pairs)."""
    i = wp.tid()
    if edges == 0:
        for k in range(data.vt_count[i]):
            t = data.vt_triangle[i * VT_SLOTS + k]
            a = data.tri_indices[t, 0]
            count_touching(data, i, a, data.tri_indices[t, 1], data.tri_indices[t, 2],
                           wp.length(data.vt_start[i * VT_SLOTS + k]), 0.5 * (data.thickness[i] + data.thickness[a]))
    else:
        i0 = data.edge_indices[i, 0]
        for k in range(data.ee_count[i]):
            f = data.ee_edge[i * EE_SLOTS + k]
            j0 = data.edge_indices[f, 0]
            count_touching(data, i0, data.edge_indices[i, 1], j0, data.edge_indices[f, 1],
                           wp.length(data.ee_start[i * EE_SLOTS + k]), 0.5 * (data.thickness[i0] + data.thickness[j0]))


@wp.kernel(module=ORDER_FREE)
def scale_bound(bound: wp.array(dtype=float), gamma: float, before: wp.array(dtype=float)):
    """bound *= gamma, and the result in `before` too (PartialSearch.bound_before)."""
    i = wp.tid()
    b = bound[i] * gamma
    bound[i] = b
    before[i] = b


@wp.kernel(module=ORDER_FREE)
def copy_positions(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3), offset: wp.array(dtype=float)):
    """A full search's positions out = x; every vertex is then at its search position (offset 0)."""
    i = wp.tid()
    out[i] = x[i]
    offset[i] = 0.0


# ---------------------------------------------------------------------------------------------------------------
# Host side


class SelfContact:
    """The collision primitives of a model, the pair search and the displacement bound (see the module
    docstring).

    Built by the solvers from Model.particle_thickness (> 0 for the vertices of colliding cloths),
    tri_indices and the cloths' edges. A solver calls `begin_step(x)` at each step's start (it searches the
    pairs again when needed and returns the SelfContactData of the current pairs) and `end_step(...)` with the
    step's unbounded result (it bounds the displacement and decides whether the next step searches again).

    Attributes:
        searches: full pair searches run so far (int).
        partial_searches: searches around a few vertices only (sim/self_contact_partial.py) so far (int).
        overflow: pairs dropped for want of slots, summed over every search so far, shape [1] (int32).
        has_pairs: whether the last search listed any pair (bool); a solver skips its pair passes without.
        active: how many vertices and edges list pairs (data.vt_active, ee_active), as read after the last
            search: the pair passes' launch sizes (tuple of two ints).
        offset: each colliding vertex's distance from its search position relative to the drift [m] (float
            [particle_count]), at the positions the last step wrote (0 after a search): see `offsets_at`.
    """

    def __init__(self, model):
        d = model.device
        self.device = d
        thickness = model.particle_thickness.numpy()
        tris = model.tri_indices.numpy().reshape(-1, 3)
        tris = tris[np.all(thickness[tris] > 0.0, axis=1)]
        q = model.particle_q.numpy()
        self._world = element_worlds(model, "particle", model.particle_count)
        world = self._world.numpy()
        # triangles and edges in their trees' leaf order: each node holds a range of indices
        tri_order, *tri_tree = build_tree(q[tris].mean(axis=1) if len(tris) else np.zeros((0, 3)), world[tris[:, 0]])
        tris = tris[tri_order]
        edges = np.unique(np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1),
                          axis=0) if len(tris) else np.zeros((0, 2), np.int32)
        self.tri_count, self.edge_count = len(tris), len(edges)
        self.particle_count = model.particle_count
        edge_order, *edge_tree = build_tree(0.5 * (q[edges[:, 0]] + q[edges[:, 1]]), world[edges[:, 0]])
        edges = edges[edge_order]
        self.max_thickness = float(thickness.max(initial=0.0))
        self.query_radius = QUERY_RADIUS * self.max_thickness
        # a pair beyond r_q at the search, whose sides each moved less than this, is still farther apart than
        # its thickness: the next search must come before any vertex moves farther
        self.skin = 0.5 * (self.query_radius - self.max_thickness)
        self._tri_indices = wp.array(tris.astype(np.int32).reshape(-1, 3), dtype=wp.int32, device=d)
        self._edge_indices = wp.array(edges.astype(np.int32).reshape(-1, 2), dtype=wp.int32, device=d)
        self._thickness = model.particle_thickness
        self.data, self.bound, self.x_search = self._new_pairs()
        self._active_lists = ActiveLists(self.particle_count, self.edge_count, d)
        self.active = (self.particle_count, self.edge_count)  # vertices and edges listing pairs, as last read
        # a triangle's box is its own (a vertex's query grows its box by r_q), an edge's is grown by r_q / 2
        n = self.particle_count
        self._tri_tree = PrimitiveTree(*tri_tree, self._tri_indices, n, 0.0, d)
        self._edge_tree = PrimitiveTree(*edge_tree, self._edge_indices, n, 0.5 * self.query_radius, d)
        self.overflow = wp.zeros(1, dtype=wp.int32, device=d)
        self.searches = 0
        self.has_pairs = True  # whether any pair is listed: a model without pairs skips its pair passes
        self._no_velocity = (wp.zeros(0, dtype=wp.vec3, device=d), wp.zeros(0, dtype=wp.vec3, device=d))
        self.offset = wp.zeros(self.particle_count, dtype=float, device=d)
        self._no_offset = wp.zeros(0, dtype=float, device=d)
        self._offset_x = None  # the positions `offset` holds for
        # the drift is each vertex's share of the colliding vertices' mean displacement; a fixed colliding
        # vertex does not drift with the others, so with one the bound is on the displacement itself
        colliding = thickness > 0.0
        fixed = (model.particle_mass.numpy() <= 0.0) | ((model.particle_flags.numpy() & 1) == 0)
        self._world_ranges = None
        if model.world_count:
            self._init_world_drifts(model, colliding, fixed)
        else:
            self.drifts = bool(colliding.any() and not (colliding & fixed).any())
            weight = np.where(colliding, 1.0 / max(int(colliding.sum()), 1), 0.0).astype(np.float32)
            self._drift_weight = wp.array(weight, dtype=float, device=d)
            self._drift_group = wp.zeros(self.particle_count, dtype=wp.int32, device=d)
        # the particle ranges whose drifts settle_world_drifts sums, a thread each: the worlds, or on the CPU
        # every particle as one (a launch there costs about what the sum does); None: the parallel sum of one
        # world (a GPU's)
        self._drift_ranges = self._world_ranges
        if self._drift_ranges is None and d.is_cpu:
            self._drift_ranges = (wp.array([0], dtype=wp.int32, device=d),
                                  wp.array([self.particle_count], dtype=wp.int32, device=d))
        groups = 1 + model.world_count
        self._zero_drift = wp.zeros(groups, dtype=wp.vec3, device=d)
        self._drifts = [wp.zeros(groups, dtype=wp.vec3, device=d) for _ in range(2)]
        self._drift_before = self._zero_drift
        # vertices asking for a search now, and about to (check_budget); which ones (1: now, 2: about to)
        self._search_count = wp.zeros(3, dtype=wp.int32, device=d)  # and [2]: how many are listed
        self._marked = wp.zeros(self.particle_count, dtype=wp.int32, device=d)
        # each vertex's lowest triangle (in the tree's order), -1 for none
        first = np.full(self.particle_count, len(tris), np.int64)
        for c in range(3):
            np.minimum.at(first, tris[:, c], np.arange(len(tris)))
        first[first == len(tris)] = -1
        # the full search's vertex query takes the colliding vertices in groups, in the order of their first
        # triangle (a group is a patch of the surface); any without a triangle last
        order = np.argsort(np.where(first >= 0, first, len(tris)), kind="stable")
        self._vertex_order = wp.array(order[colliding[order]].astype(np.int32), dtype=wp.int32, device=d)
        self._init_partial(first, colliding)
        self._overrun = wp.zeros(groups, dtype=wp.int32, device=d)  # per drift group, cleared after each use
        # the bound's kernels at every step without a Tape, replayed for the same arrays
        self._settle = ReplayedLaunch(settle_world_drifts, d)
        self._limit_and_check = ReplayedLaunch(limit_and_check, d)
        self._last_out = None  # the positions the last step wrote: a step from anything else searches first
        self._degrees_stale = False  # data.degree not counted since a partial search (touching_counts)

    def _init_world_drifts(self, model, colliding, fixed):
        """Drift groups of a model of many worlds: group w + 1 is world w, drifting when its colliding vertices
        include no fixed one; group 0 (shared vertices) never drifts."""
        world = model.particle_world.numpy()
        weight = np.zeros(self.particle_count, np.float32)
        for w in range(model.world_count):
            mine = colliding & (world == w)
            if mine.any() and not (mine & fixed).any():
                weight[mine] = 1.0 / int(mine.sum())
        self.drifts = bool(weight.any())
        ranges = model.world_ranges["particle"].astype(np.int32)
        d = self.device
        self._drift_weight = wp.array(weight, dtype=float, device=d)
        self._drift_group = wp.array((world + 1).astype(np.int32), dtype=wp.int32, device=d)
        self._world_ranges = (wp.array(ranges[:, 0].copy(), dtype=wp.int32, device=d),
                              wp.array(ranges[:, 1].copy(), dtype=wp.int32, device=d))

    def _init_partial(self, first, colliding):
        """The state of partial searches (sim/self_contact_partial.py); first: each vertex's lowest triangle, -1
        for none (int [particle_count])."""
        d, n = self.device, self.particle_count
        partial = PartialSearch()
        partial.marked = self._marked
        partial.vt_base = wp.zeros(n, dtype=wp.int32, device=d)
        partial.ee_base = wp.zeros(max(self.edge_count, 1), dtype=wp.int32, device=d)
        partial.first_triangle = wp.array(first.astype(np.int32), dtype=wp.int32, device=d)
        partial.failed = wp.zeros(1, dtype=wp.int32, device=d)
        partial.blocked = wp.zeros(n, dtype=wp.int32, device=d)
        partial.size = wp.zeros(1, dtype=wp.int32, device=d)
        partial.bound_before = wp.zeros(n, dtype=float, device=d)
        partial.group = self._drift_group
        partial.x_now, partial.drift = self.x_search, self._zero_drift  # each partial search sets its own
        partial.members = wp.zeros(n, dtype=wp.int32, device=d)
        partial.member_count = wp.zeros(1, dtype=wp.int32, device=d)
        partial.listed, partial.search_count = wp.zeros(n, dtype=wp.int32, device=d), self._search_count
        partial.touched_vt = wp.zeros(n, dtype=wp.int32, device=d)
        partial.touched_ee = wp.zeros(max(self.edge_count, 1), dtype=wp.int32, device=d)
        partial.lowered = wp.zeros(n, dtype=wp.int32, device=d)
        partial.lowered_flag = wp.zeros(n, dtype=wp.int32, device=d)
        partial.attempt_count = wp.zeros(3, dtype=wp.int32, device=d)
        # each vertex's triangles and edges: search_marked's threads go from the members of S to theirs
        most = []
        for name, items in (("triangles", self._tri_indices.numpy()), ("edges", self._edge_indices.numpy())):
            vertex, row = items.reshape(-1).astype(np.int64), np.repeat(np.arange(len(items)), items.shape[1])
            order = np.argsort(vertex, kind="stable")
            start = np.searchsorted(vertex[order], np.arange(n + 1)).astype(np.int32)
            setattr(partial, f"vertex_{name}_start", wp.array(start, dtype=wp.int32, device=d))
            setattr(partial, f"vertex_{name}", wp.array(row[order].astype(np.int32), dtype=wp.int32, device=d))
            most.append(int(np.diff(start).max(initial=0)))
        self._per_member = 1 + sum(most)  # search_marked's threads per member of S
        self._partial = partial
        # the searches' and the bound's launches, replayed per argument set: the states and drifts alternate
        # between two (and a zero drift after a full search), a partial search with or without the vertices
        # about to ask
        self._full_search = ReplayedSequence(self.device, keep=4)
        self._attempts = ReplayedSequence(self.device, keep=16)
        self._bounding = ReplayedSequence(self.device, keep=8)
        self._partial_limit = int(PARTIAL_FRACTION * int(colliding.sum()))
        self.partial_searches = 0

    @property
    def enabled(self) -> bool:
        return self.tri_count > 0

    def _new_pairs(self) -> tuple:
        """A SelfContactData with new pair arrays, a new bound array and new search positions."""
        d, n = self.device, self.particle_count
        data = SelfContactData()
        data.tri_indices, data.edge_indices, data.thickness = self._tri_indices, self._edge_indices, self._thickness
        data.vt_triangle = wp.zeros(n * VT_SLOTS, dtype=wp.int32, device=d)
        data.vt_start = wp.zeros(n * VT_SLOTS, dtype=wp.vec3, device=d)
        data.vt_count = wp.zeros(n, dtype=wp.int32, device=d)
        data.ee_edge = wp.zeros(max(self.edge_count, 1) * EE_SLOTS, dtype=wp.int32, device=d)
        data.ee_start = wp.zeros(max(self.edge_count, 1) * EE_SLOTS, dtype=wp.vec3, device=d)
        data.ee_count = wp.zeros(max(self.edge_count, 1), dtype=wp.int32, device=d)
        data.degree = wp.zeros(n, dtype=wp.int32, device=d)
        data.world = self._world
        data.vt_active = wp.zeros(n, dtype=wp.int32, device=d)
        data.ee_active = wp.zeros(max(self.edge_count, 1), dtype=wp.int32, device=d)
        data.active_count = wp.zeros(2, dtype=wp.int32, device=d)
        return data, wp.zeros(n, dtype=float, device=d), wp.zeros(n, dtype=wp.vec3, device=d)

    def begin_step(self, x, *, fresh: bool = False):
        """The pairs for a step from positions x [m] (vec3 [particle_count]): searched again when the last step
        asked for it (around the vertices that asked, when they are few and no Tape records: see
        sim/self_contact_partial.py), or when x is not what the last step wrote (a new or reset state); else
        the last search's. `fresh`: a search fills new arrays (on a Tape, each step's kernels must keep reading
        their own). Under a capture (kernels.runtime.capture) every step searches: a replay cannot take the host's
        decision again.

        After it, `has_pairs` says whether any pair is listed (False: the step's pair passes would do nothing,
        and may be skipped), and `active` how many vertices and edges list pairs (the passes' launch sizes over
        data.vt_active and ee_active)."""
        if x is not self._last_out or wp.is_capturing(self.device):
            self.find(x, fresh=fresh)
            return self.data
        asking, soon = (int(n) for n in self._search_count.numpy()[:2])
        if asking and (fresh or asking > self._partial_limit
                       or not self._search_partially(x, with_soon=asking + soon <= self._partial_limit)):
            self.find(x, fresh=fresh)
        return self.data

    def touching_counts(self):
        """data.degree: how many listed pairs closer than their thickness each vertex is part of (int32
        [particle_count], SolverXPBD's share of a correction), counted first when a partial search changed the
        lists since (a full search counts them as it keeps its pairs; a partial one leaves it to the solvers that
        read them: two launches over every vertex and edge)."""
        if self._degrees_stale:
            self._count_degrees()
        return self.data.degree

    def _run(self, kernel, dim: int, inputs: list) -> None:
        """Launch one of the search's kernels on the cloth's device, outside any tape."""
        wp.launch(kernel, dim=dim, inputs=inputs, device=self.device, record_tape=False)

    def _search_partially(self, x, *, with_soon: bool) -> bool:
        """Search again around the marked vertices only (`with_soon`: those about to ask too, else only those
        that ask now); False (with nothing to undo: a full search follows) when the set S of searched vertices,
        grown by the vertices of pairs that leave neither slack nor room to lower the bounds outside S
        (sim/self_contact_partial.py), stays blocked after PARTIAL_ATTEMPTS or grows past the partial limit.
        The trees' boxes grow to hold the primitives of S at their new search positions first."""
        data, partial, r = self.data, self._partial, self.query_radius
        partial.x_now, partial.drift = x, self._drift_before

        # threads for the most members S may have (more would each take a second turn)
        rows = max(1, self._partial_limit)

        def attempt_launches():
            partial.member_count.zero_()
            partial.attempt_count.zero_()
            self._run(begin_attempt, rows, [partial, GAMMA * r, int(not with_soon), self.x_search, self.bound,
                                            self.offset, rows])
            self._tri_tree.grow_moved(self.x_search, partial.members, partial.member_count, also=self._edge_tree,
                                      threads=rows)
            self._run(search_marked, rows * self._per_member,
                      [self.x_search, self._tri_tree.data, self._edge_tree.data, data, partial, r, self.bound,
                       self.overflow, self._per_member, rows])
            self._run(finish_attempt, rows, [partial, data, self.bound, rows])
            # the marks cleared when the attempt succeeded; the lists of active vertices and edges too: rebuilt
            # again by whatever follows a failed attempt
            self._run(clear_marks, rows, [partial, rows])
            self._run(clear_counts, 1, [partial])
            self._active_lists.build(data)

        key = (id(x), id(self._drift_before), with_soon, id(data), id(self.bound), id(self.x_search), id(self.offset),
               self._partial_limit)
        for attempt in range(PARTIAL_ATTEMPTS):
            self._attempts.run(key, attempt_launches)
            if not int(partial.failed.numpy()[0]):
                break
            partial.size.zero_()
            self._search_count[2:].zero_()  # grow_marked lists S anew
            self._run(grow_marked, self.particle_count, [partial])
            if attempt + 1 == PARTIAL_ATTEMPTS or int(partial.size.numpy()[0]) > self._partial_limit:
                partial.blocked.zero_()
                return False
        self._degrees_stale = True  # touching_counts counts them when asked
        self._offset_x = x
        self.partial_searches += 1
        self._read_active()
        return True

    def _refit_trees(self, x):
        """The triangle and edge trees' boxes at positions x [m] (vec3 [particle_count])."""
        self._tri_tree.refit(x)
        self._edge_tree.refit(x)

    def _read_active(self):
        """How many vertices and edges list pairs (data.active_count, after ActiveLists.build): `active` and
        `has_pairs` (the one read of a search: begin_step reads the step's flags anyway). Under a capture, which
        cannot read, the passes launch over every vertex and edge, and the kernels stop at active_count."""
        if wp.is_capturing(self.device):
            self.active, self.has_pairs = (self.particle_count, self.edge_count), True
            return
        vertices, edges = (int(n) for n in self.data.active_count.numpy())
        self.active, self.has_pairs = (vertices, edges), vertices + edges > 0

    def _count_degrees(self):
        """data.degree counted again over every listed pair (after a partial search)."""
        d, data = self.device, self.data
        self._degrees_stale = False
        data.degree.zero_()
        wp.launch(count_degrees, dim=self.particle_count, inputs=[data, 0], device=d, record_tape=False)
        if self.edge_count:
            wp.launch(count_degrees, dim=self.edge_count, inputs=[data, 1], device=d, record_tape=False)

    def find(self, x, *, fresh: bool = False) -> tuple:
        """Pairs and displacement bound at positions x [m] (vec3 [particle_count]); the search is not taped.
        `fresh`: new pair and bound arrays (on a Tape, each step's kernels must keep reading their own); else
        the previous search's are refilled."""
        if fresh:
            self.data, self.bound, self.x_search = self._new_pairs()
        data, bound, x_search, r = self.data, self.bound, self.x_search, self.query_radius

        def search_launches():
            self._run(copy_positions, self.particle_count, [x, x_search, self.offset])
            self._refit_trees(x)
            bound.fill_(r)
            vertex_group, edge_group = (VERTEX_GROUP, EDGE_GROUP) if self.device.is_cpu else (1, 1)
            self._run(find_vertex_triangle_pairs, -(-self._vertex_order.shape[0] // vertex_group),
                      [x, self._tri_tree.data, data, r, bound, self.overflow, self._vertex_order, vertex_group])
            if self.edge_count:
                self._run(find_edge_edge_pairs, -(-self.edge_count // edge_group),
                          [x, self._edge_tree.data, data, r, bound, self.overflow, edge_group])
            partial = self._partial  # its copies of the counts and bounds, as the next partial search reads them
            self._run(scale_bound, self.particle_count, [bound, GAMMA, partial.bound_before])
            data.degree.zero_()
            self._run(keep_reachable_pairs, self.particle_count, [data, bound, 0, partial.vt_base])
            if self.edge_count:
                self._run(keep_reachable_pairs, self.edge_count, [data, bound, 1, partial.ee_base])
            self._active_lists.build(data)
            self._marked.zero_()
            self._search_count.zero_()

        if fresh:  # new arrays at every search: nothing to replay
            search_launches()
        else:
            self._full_search.run((id(x), id(data), id(bound), id(x_search), id(self.offset)), search_launches)
        self._offset_x = x
        self._degrees_stale = False  # keep_reachable_pairs counted them
        self._read_active()
        self._drift_before = self._zero_drift
        self.searches += 1
        return data, self.bound

    def _settle_drift(self, x_end, drift):
        """This step's drift into `drift` (vec3 [drift groups]) from the step's free positions x_end [m]: the
        colliding vertices' mean displacement since the search per group, or the last step's drift where that
        would take a vertex past its bound (self_contact_bound). Nothing without drifts."""
        if not self.drifts:
            return
        d, ranges = self.device, self._drift_ranges
        if ranges is not None:
            # one thread a world sums and checks in one launch (group 0, shared vertices, never drifts: its
            # element stays 0)
            self._settle.launch(ranges[0].shape[0], [self.x_search, x_end, self._drift_weight, *ranges,
                                                     0 if self._world_ranges is None else 1, self.bound,
                                                     self._thickness, self._drift_before, drift])
            return
        drift.zero_()
        blocks = (self.particle_count + DRIFT_TILE - 1) // DRIFT_TILE
        wp.launch_tiled(sum_drift_tiled, dim=blocks, inputs=[x_end, self.x_search, self._drift_weight],
                        outputs=[drift], block_dim=DRIFT_TILE, device=d, record_tape=False)
        wp.launch(find_drift_overrun, dim=self.particle_count, device=d, record_tape=False,
                  inputs=[self.x_search, x_end, drift, self._drift_group, self.bound, self._thickness],
                  outputs=[self._overrun])
        wp.launch(drop_overrun_drift, dim=drift.shape[0], device=d, record_tape=False,
                  inputs=[self._overrun, self._drift_before], outputs=[drift])

    def end_step(self, x_start, x_end, v_end, dt: float, x_out, v_out, *, fresh: bool = False):
        """Bound the step: x_out = x_end where each vertex's displacement since the search, relative to the
        colliding vertices' mean displacement (the drift), is within its bound, else shortened to it; v_end
        corrected alike into v_out (both None: positions only). x_start: the step's start positions. The bound
        and the drift are constants to the Tape. `fresh`: a new drift array (on a Tape)."""
        d = self.device
        drift = self._zero_drift
        if self.drifts:
            drift = wp.zeros(self._zero_drift.shape[0], dtype=wp.vec3, device=d) if fresh else self._drifts[0]
            if not fresh:
                self._drifts.reverse()  # the other one keeps this step's drift for the next step's check
        if v_out is None:
            v_end, v_out = self._no_velocity
        if fresh:
            self._settle_drift(x_end, drift)
            # on a Tape: the bound is taped (its adjoint passes gradients through where it does not clamp), the
            # check is not
            wp.launch(limit_displacement, dim=self.particle_count, device=d,
                      inputs=[self.x_search, x_start, x_end, v_end, drift, self._drift_group, self.bound, float(dt)],
                      outputs=[x_out, v_out])
            wp.launch(check_budget, dim=self.particle_count, device=d, record_tape=False,
                      inputs=[x_start, x_out, self.x_search, drift, self._drift_before, self._drift_group,
                              self.bound, self._thickness, self.skin, self._marked, self._search_count,
                              self._partial.listed, self.offset])
        else:
            def bound_launches():
                self._settle_drift(x_end, drift)
                self._limit_and_check.launch(self.particle_count, [
                    self.x_search, x_start, x_end, v_end, drift, self._drift_before, self._drift_group, self.bound,
                    self._thickness, self.skin, float(dt), x_out, v_out, self._marked, self._search_count,
                    self._partial.listed, self.offset])

            # both launches in one host call: the arrays alternate between two states and two drifts
            self._bounding.run((id(self.x_search), id(self.bound), id(x_start), id(x_end), id(v_end), id(x_out),
                                id(v_out), id(drift), id(self._drift_before), id(self.offset), float(dt)),
                               bound_launches)
        self._drift_before = drift
        self._last_out = self._offset_x = x_out

    def offsets_at(self, x):
        """`offset` when it holds for positions x [m] (vec3 [particle_count]: the step's start, after
        begin_step) and the model has one drift, else an empty array. A pair at distance d at the search whose
        sides' vertices are at most m_A and m_B from their search positions relative to the drift is at least
        d - m_A - m_B apart now (a common translation changes no distance; every point of a primitive moves
        with its farthest vertex), so a solver may skip it, exactly, when that exceeds its thickness. (With a
        drift per world, a pair of shared and world vertices would have two.)"""
        if x is not self._offset_x or self._world_ranges is not None:
            return self._no_offset
        return self.offset


def self_contact_of(model):
    """The model's SelfContact (created on first use and kept as `model._self_contact`), or None when no
    cloth collides with itself."""
    if not getattr(model, "self_contact_enabled", False):
        return None
    contact = getattr(model, "_self_contact", None)
    if contact is None or contact.particle_count != model.particle_count:
        contact = SelfContact(model)
        model._self_contact = contact
    return contact if contact.enabled else None


def overflow_warning(model) -> str | None:
    """One line for the user when the model's self-contact searches dropped pairs for want of slots (more than
    VT_SLOTS triangles near a vertex or EE_SLOTS edges near an edge), else None."""
    contact = getattr(model, "_self_contact", None)
    if contact is None:
        return None
    dropped = int(contact.overflow.numpy()[0])
    if dropped == 0:
        return None
    return (f"self-contact: {dropped} vertex-triangle or edge-edge pairs were dropped over {contact.searches} pair "
            f"searches (more than {VT_SLOTS} triangles near a vertex or {EE_SLOTS} edges near an edge); their "
            f"contact forces were missing (the displacement bound still kept the cloth from passing through "
            f"itself): give the cloth a smaller thickness, or larger triangles")


def default_thickness(vertices, triangles) -> float:
    """Default self-contact thickness of a cloth [m]: DEFAULT_THICKNESS_FRACTION of its mean edge length."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    e = np.unique(np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1), axis=0)
    return DEFAULT_THICKNESS_FRACTION * float(np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1).mean())
