"""Partial pair searches of cloth self-contact (sim/self_contact.py): when only a few colliding vertices would
pass their displacement bound (a settling pile where a handful of vertices still move), only those vertices
are searched again, not the whole cloth.

Why it keeps the no-intersection guarantee. Let Y_i be vertex i's search position and bound_i its bound; the
solvers keep x_i - Y_i - c within bound_i for a common drift c. Whatever the search times of the vertices, two
primitives whose search positions Y are at distance d stay apart as long as the largest bound on one side plus
the largest on the other is below d (the drift is a common translation; every point of a primitive moves
relative to it at most as far as its farthest vertex). A full search makes every pair satisfy this (bound =
GAMMA min(r_q, d), GAMMA < 1/2). A partial search of a set S of vertices resets Y_i = x_i - c for i in S
(their displacement is then 0 and the drift goes on; it shifts by the mean of the reset vertices' relative
displacements, a few thousandths of a bound, which any common translation tolerates) and gives each a new
bound from every pair that includes a vertex of S, at its distance d in the new search positions: with F_A and
F_B the largest bounds of the pair's vertices outside S on each side (unchanged) and slack = d - F_A - F_B,
each vertex of S on side A gets at most F_A + GAMMA slack (side B alike), so the pair's sides move by at most
F_A + F_B + 2 GAMMA slack < d. A pair beyond r_q has sides bounded by GAMMA r_q each (every bound is). When a
slack is not positive (the bounds of the vertices outside S are too large for the pair's distance), those bounds
come down instead: a vertex i outside S is O_i = |x_i - c - Y_i| from its search position now, within its bound,
and any bound from O_i up to the present one keeps it valid and every pair it already satisfied; with O_A and O_B
the largest on each side and room = d - O_A - O_B > 0, side A's vertices outside S get at most F_A = O_A +
SHRINK_SHARE room (side B alike), the slack is then (1 - 2 SHRINK_SHARE) room, and the search goes on. (They will
ask for a search sooner.) The queries read the bounds outside S as they were at the attempt's start
(bound_before), so no pair's result depends on the order in which others lowered them. Only where the room is
not positive either (the vertices outside S have already come within d of each other's reach) do they join S and
the search is run again (up to PARTIAL_ATTEMPTS times; the lists and bounds a failed attempt wrote are rewritten
by the next, and pairs it added to lists outside S are real pairs); when S is not small, or stays blocked, the
whole cloth is searched instead. (Before session 24 every pair without slack blocked: a quarter of the 64 x 64
drop's attempts were such retries, each searching S again; with the lowering, none.)

Which pairs are found. The trees of the last full search (sim/self_contact_tree.py) are reused: before the
queries, every triangle and edge with a vertex of S gets its box at the new search positions, and its leaf and
the nodes above it grow to hold that box (PrimitiveTree.grow_moved: a few paths to the root, where a refit of
every box cost about as much as the queries it saved). Every box then holds its primitives at their search
positions, so the queries use the full search's reach and no margin. (Until session 23 the trees stayed at the
positions of their last refit and the queries grew by a margin of half a query radius, about 2.4 times the box
volume; a vertex reset beyond it refitted both trees.) The pairs of a vertex of S (as the vertex of a
vertex-triangle pair) and of an edge with a vertex in S (its edge-edge pairs) are searched again and replace
their lists; a pair with a triangle or edge of S stored at a vertex or edge outside S is added to that one's list
when missing, or has its separation set to the new one when listed (the list's pairs from before that are not
found again stay: they are still valid, only farther than they could be, and now beyond r_q, where their
separation was shorter).
"""

import kernels as wp

from .self_contact_tree import TreeData, tree_next_leaf
from .self_contact_primitives import (EE_SLOTS, GAMMA, VT_SLOTS, SelfContactData, boxes_overlap,
                                    edge_edge_candidate, order_free_module,
                                    vertex_triangle_candidate)

# Every kernel here is order-free (order_free_module) and runs on every thread: a pair added to another vertex's
# or edge's list takes a slot atomically, in whatever order the threads come, and finish_attempt then sorts
# the added pairs by their other primitive (each is added once, by one thread), so the lists are the same in any
# order. (Serial until session 20: with two threads the 64 x 64 drop's positions differed from run to run.) Only
# when a list overflows (more pairs than slots, which `sim run` warns about) may the pairs kept differ.
ORDER_FREE = order_free_module(__name__)

# no `from __future__ import annotations`: kernels/struct.py evaluates string annotations in the top-level
# package's namespace

#: a search is partial when at most this fraction of the colliding vertices asks for it
PARTIAL_FRACTION = 1.0 / 32.0
#: partial searches tried, S grown by the vertices that blocked the last, before the whole cloth is searched
PARTIAL_ATTEMPTS = 4
#: a pair that leaves no slack lowers the bounds of its vertices outside S to their offsets plus this share of the
#: room left (each side: the slack is then 1 - 2 SHRINK_SHARE of the room)
SHRINK_SHARE = 0.25


@wp.struct
class PartialSearch:
    """What the partial-search kernels share.

    marked: non-zero for the vertices of S (1: they ask for a search, 2: they would within a few steps)
        [particle_count] int32.
    vt_base, ee_base: the list lengths before the partial search [particle_count], [edge_count] int32 (pairs
        added to a list are checked for duplicates against these, which no thread changes). Equal to vt_count
        and ee_count outside an attempt: a full search sets them all, an attempt those of the lists it changed
        (finish_attempt).
    first_triangle: the lowest triangle (row of tri_indices) containing each vertex, -1 for none
        [particle_count] int32: a vertex near a triangle is visited through that triangle only.
    failed: [0] = 1 when a pair leaves neither slack nor room to lower the bounds outside S (constrain_pair: the
        caller grows S) [1] int32.
    blocked: 1 at the vertices outside S of such a pair: they join S at the next attempt [particle_count] int32.
    size: [0] = the number of vertices in S after grow_marked [1] int32.
    bound_before: every bound at the attempt's start [particle_count] float [m]: what the queries read for the
        vertices outside S, whose bounds they may only lower (so that no pair's result depends on another's).
        Equal to the bound outside an attempt, as vt_base.
    x_now: the positions the search is run at [particle_count] vec3 [m]; drift: the drift of the step that
        wrote them, per drift group [groups] vec3 [m]; group: each vertex's drift group [particle_count] int32.
        A vertex outside S is x_now - drift - x_search away from its search position: the least its bound
        can be lowered to (constrain_pair).
    members, member_count: the vertices of S, member_count[0] of them in any order (begin_attempt)
        [particle_count], [1] int32: search_marked's threads take them, not every vertex, triangle and edge.
    vertex_triangles, vertex_edges: each vertex's triangles (rows of tri_indices) and edges (rows of
        edge_indices) in increasing order, vertex v's at indices vertex_triangles_start[v] to
        vertex_triangles_start[v + 1] (vertex_edges_start alike) (CSR, int32).
    listed, search_count: the vertices marked since the marks were last cleared, search_count[2] of them
        (record_mark in sim/self_contact_bound.py; some may have left S since) [particle_count], [3] int32
        (search_count[0] and [1]: how many asked now and about to).
    touched_vt, touched_ee, lowered: the lists outside S that got pairs this attempt, and the vertices outside S
        whose bounds it lowered, attempt_count[0], [1] and [2] of each [particle_count], [edge_count],
        [particle_count] int32; lowered_flag: 1 at the lowered vertices [particle_count] int32. finish_attempt
        brings their vt_base, ee_base and bound_before up to date (see there).
    """

    marked: wp.array(dtype=wp.int32)
    vt_base: wp.array(dtype=wp.int32)
    ee_base: wp.array(dtype=wp.int32)
    first_triangle: wp.array(dtype=wp.int32)
    failed: wp.array(dtype=wp.int32)
    blocked: wp.array(dtype=wp.int32)
    size: wp.array(dtype=wp.int32)
    bound_before: wp.array(dtype=float)
    x_now: wp.array(dtype=wp.vec3)
    drift: wp.array(dtype=wp.vec3)
    group: wp.array(dtype=wp.int32)
    members: wp.array(dtype=wp.int32)
    member_count: wp.array(dtype=wp.int32)
    vertex_triangles_start: wp.array(dtype=wp.int32)
    vertex_triangles: wp.array(dtype=wp.int32)
    vertex_edges_start: wp.array(dtype=wp.int32)
    vertex_edges: wp.array(dtype=wp.int32)
    listed: wp.array(dtype=wp.int32)
    search_count: wp.array(dtype=wp.int32)
    touched_vt: wp.array(dtype=wp.int32)
    touched_ee: wp.array(dtype=wp.int32)
    lowered: wp.array(dtype=wp.int32)
    lowered_flag: wp.array(dtype=wp.int32)
    attempt_count: wp.array(dtype=wp.int32)


@wp.kernel(module=ORDER_FREE)
def begin_attempt(partial: PartialSearch, cap: float, asking_only: int, x_search: wp.array(dtype=wp.vec3),
                  bound: wp.array(dtype=float), offset: wp.array(dtype=float), threads: int):
    """An attempt's start over the listed vertices (partial.listed; dim = threads, thread i taking entries i, i +
    threads, ...): with asking_only, the vertices that only would ask within a few steps (marked 2) leave S;
    each vertex of S gets search position x_now - c (c: its group's drift of the last step), offset 0
    (SelfContact.offset) and bound = cap (lowered by the queries), and joins partial.members (member_count and
    attempt_count zeroed before); failed is cleared. The list lengths and bounds at the attempt's start need no
    copy: vt_base, ee_base and bound_before hold them (finish_attempt). (Over every vertex and edge, copying
    those, this launch and the clamp after the queries cost about 130 us of each attempt on the 64 x 64 cloth.)"""
    j = wp.tid()
    if j == 0:
        partial.failed[0] = 0
    while j < partial.search_count[2]:
        i = partial.listed[j]
        mark = partial.marked[i]
        if mark == 2 and asking_only != 0:
            partial.marked[i] = 0
        elif mark != 0:
            x_search[i] = partial.x_now[i] - partial.drift[partial.group[i]]
            offset[i] = 0.0
            bound[i] = cap
            partial.members[wp.atomic_add(partial.member_count, 0, 1)] = i
        j = j + threads


@wp.kernel(module=ORDER_FREE)
def grow_marked(partial: PartialSearch):
    """The vertices that blocked a partial search (partial.blocked) join S (marked 1) for the next attempt;
    partial.size[0] += the size of S, and S listed anew (partial.listed: size and search_count[2] zeroed
    before)."""
    i = wp.tid()
    if partial.blocked[i] != 0:
        partial.blocked[i] = 0
        if partial.marked[i] == 0:
            partial.marked[i] = 1
    if partial.marked[i] != 0:
        wp.atomic_add(partial.size, 0, 1)
        partial.listed[wp.atomic_add(partial.search_count, 2, 1)] = i


@wp.func
def sort_added(other: wp.array(dtype=wp.int32), start: wp.array(dtype=wp.vec3), base: int, first: int, count: int):
    """Slots first..count-1 of the list at `base` (the pairs other threads added) sorted by their other
    primitive, each pair's separation moving with it (insertion sort: a list holds a few dozen)."""
    for k in range(first + 1, count):
        key = other[base + k]
        u = start[base + k]
        j = k
        while j > first and other[base + j - 1] > key:
            other[base + j] = other[base + j - 1]
            start[base + j] = start[base + j - 1]
            j = j - 1
        other[base + j] = key
        start[base + j] = u


@wp.func
def settle_added(other: wp.array(dtype=wp.int32), start: wp.array(dtype=wp.vec3), count: wp.array(dtype=wp.int32),
                 base: wp.array(dtype=wp.int32), i: int, slots: int):
    """List i (outside S, with pairs added by other threads): its count cut to its slots (a pair added to a full
    list took a slot number past them: counted in overflow, not stored; every reader loops to the count), the
    added pairs sorted (sort_added), and its base set to the new count."""
    n = wp.min(count[i], slots)
    count[i] = n
    sort_added(other, start, i * slots, base[i], n)
    base[i] = n


@wp.kernel(module=ORDER_FREE)
def finish_attempt(partial: PartialSearch, data: SelfContactData, bound: wp.array(dtype=float), threads: int):
    """After an attempt's queries (dim = threads, each taking every threads-th entry of each list): the lists
    outside S that got pairs (touched_vt, touched_ee) settled (settle_added: in the order no thread's timing
    decides), and vt_base, ee_base and bound_before brought up to date where the attempt changed them (S's
    vertices and edges, the touched lists, the lowered bounds): the next attempt or partial search starts from
    them as they are then (a failed attempt's pairs added outside S are real pairs; its lowered bounds hold)."""
    t = wp.tid()
    j = t
    while j < partial.member_count[0]:
        v = partial.members[j]
        partial.vt_base[v] = data.vt_count[v]
        partial.bound_before[v] = bound[v]
        for k in range(partial.vertex_edges_start[v], partial.vertex_edges_start[v + 1]):
            e = partial.vertex_edges[k]
            partial.ee_base[e] = data.ee_count[e]  # (an edge of two members: the same value twice)
        j = j + threads
    j = t
    while j < partial.attempt_count[0]:
        settle_added(data.vt_triangle, data.vt_start, data.vt_count, partial.vt_base, partial.touched_vt[j],
                     VT_SLOTS)
        j = j + threads
    j = t
    while j < partial.attempt_count[1]:
        settle_added(data.ee_edge, data.ee_start, data.ee_count, partial.ee_base, partial.touched_ee[j], EE_SLOTS)
        j = j + threads
    j = t
    while j < partial.attempt_count[2]:
        i = partial.lowered[j]
        partial.bound_before[i] = bound[i]
        partial.lowered_flag[i] = 0
        j = j + threads


@wp.kernel(module=ORDER_FREE)
def clear_marks(partial: PartialSearch, threads: int):
    """After a successful attempt (partial.failed[0] = 0), the listed vertices' marks cleared (dim = threads,
    each taking every threads-th entry); the counts are cleared after it (clear_counts)."""
    j = wp.tid()
    if partial.failed[0] != 0:
        return
    while j < partial.search_count[2]:
        partial.marked[partial.listed[j]] = 0
        j = j + threads


@wp.kernel(module=ORDER_FREE)
def clear_counts(partial: PartialSearch):
    """After clear_marks (dim = 1): no vertex asks or is listed, when the attempt succeeded."""
    if partial.failed[0] == 0:
        partial.search_count[0] = 0
        partial.search_count[1] = 0
        partial.search_count[2] = 0


@wp.func
def block_unmarked(partial: PartialSearch, a: int, b: int, c: int):
    """Vertices a, b, c that are outside S will join it at the next attempt."""
    if partial.marked[a] == 0:
        partial.blocked[a] = 1
    if partial.marked[b] == 0:
        partial.blocked[b] = 1
    if partial.marked[c] == 0:
        partial.blocked[c] = 1


@wp.func
def side_bound(partial: PartialSearch, i: int):
    """The bound of vertex i at the attempt's start when it is outside S (the queries only lower it), else 0."""
    if partial.marked[i] != 0:
        return 0.0
    return partial.bound_before[i]


@wp.func
def side_offset(partial: PartialSearch, x_search: wp.array(dtype=wp.vec3), i: int):
    """How far vertex i, when outside S, is from its search position relative to the drift [m] (within its
    bound), else 0."""
    if partial.marked[i] != 0:
        return 0.0
    return wp.length(partial.x_now[i] - partial.drift[partial.group[i]] - x_search[i])


@wp.func
def lower_marked(partial: PartialSearch, bound: wp.array(dtype=float), i: int, value: float):
    if partial.marked[i] != 0:
        wp.atomic_min(bound, i, value)


@wp.func
def lower_unmarked(partial: PartialSearch, bound: wp.array(dtype=float), i: int, value: float):
    """Lower the bound of vertex i, when outside S, to `value` [m]; the vertex is listed in partial.lowered
    once (finish_attempt updates its bound_before)."""
    if partial.marked[i] == 0:
        wp.atomic_min(bound, i, value)
        if wp.atomic_exch(partial.lowered_flag, i, 1) == 0:
            partial.lowered[wp.atomic_add(partial.attempt_count, 2, 1)] = i


@wp.func
def constrain_pair(x_search: wp.array(dtype=wp.vec3), partial: PartialSearch, bound: wp.array(dtype=float),
                   a0: int, a1: int, a2: int, b0: int, b1: int, b2: int, d: float):
    """Lower the bounds of the S vertices of a pair at distance d [m] at the search positions x_search, with
    sides (a0, a1, a2) and (b0, b1, b2) (repeat a vertex for a side of fewer): F_side + GAMMA slack (module
    docstring). Without slack, the bounds of the pair's vertices outside S are lowered towards how far they are
    from their search positions now (O_side, the largest on each side) when that leaves room: each side's to
    O_side + SHRINK_SHARE room, room = d - O_A - O_B, so that the slack is 1 - 2 SHRINK_SHARE of the room; else
    the attempt fails and those vertices join S at the next."""
    fa = wp.max(wp.max(side_bound(partial, a0), side_bound(partial, a1)), side_bound(partial, a2))
    fb = wp.max(wp.max(side_bound(partial, b0), side_bound(partial, b1)), side_bound(partial, b2))
    slack = d - fa - fb
    shrunk = False
    if slack <= 0.0:
        oa = wp.max(wp.max(side_offset(partial, x_search, a0), side_offset(partial, x_search, a1)),
                    side_offset(partial, x_search, a2))
        ob = wp.max(wp.max(side_offset(partial, x_search, b0), side_offset(partial, x_search, b1)),
                    side_offset(partial, x_search, b2))
        room = d - oa - ob
        if room <= 0.0:
            partial.failed[0] = 1
            block_unmarked(partial, a0, a1, a2)
            block_unmarked(partial, b0, b1, b2)
            return
        fa = oa + SHRINK_SHARE * room
        fb = ob + SHRINK_SHARE * room
        slack = d - fa - fb
        shrunk = True
    for i in range(3):
        a = a0
        b = b0
        if i == 1:
            a = a1
            b = b1
        if i == 2:
            a = a2
            b = b2
        lower_marked(partial, bound, a, fa + GAMMA * slack)
        lower_marked(partial, bound, b, fb + GAMMA * slack)
        if shrunk:
            lower_unmarked(partial, bound, a, fa)
            lower_unmarked(partial, bound, b, fb)


@wp.func
def visit_vertex_triangle(x: wp.array(dtype=wp.vec3), data: SelfContactData, partial: PartialSearch,
                          bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32), v: int, t: int,
                          query_radius: float, count: int, own: bool):
    """Pair (v, t) at positions x: constrain the bounds; keep it in v's list (own: v rewrites its list, count
    is its length so far; else added when not among v's vt_base pairs). Returns the new count."""
    u, d = vertex_triangle_candidate(x, data, v, t)
    if d >= query_radius:
        return count
    constrain_pair(x, partial, bound, v, v, v, data.tri_indices[t, 0], data.tri_indices[t, 1],
                   data.tri_indices[t, 2], d)
    if own:
        if count < VT_SLOTS:
            data.vt_triangle[v * VT_SLOTS + count] = t
            data.vt_start[v * VT_SLOTS + count] = u
            return count + 1
        wp.atomic_add(overflow, 0, 1)
        return count
    for k in range(partial.vt_base[v]):
        if data.vt_triangle[v * VT_SLOTS + k] == t:
            # its separation at the new search positions (this thread is the pair's only visitor): a listed
            # pair's start is where its distance is known (SelfContact.offsets_at)
            data.vt_start[v * VT_SLOTS + k] = u
            return count
    slot = wp.atomic_add(data.vt_count, v, 1)
    if slot == partial.vt_base[v]:  # the list's first addition: finish_attempt settles it
        partial.touched_vt[wp.atomic_add(partial.attempt_count, 0, 1)] = v
    if slot < VT_SLOTS:
        data.vt_triangle[v * VT_SLOTS + slot] = t
        data.vt_start[v * VT_SLOTS + slot] = u
    else:
        wp.atomic_add(overflow, 0, 1)
    return count


@wp.func
def scan_vertex_triangles(x: wp.array(dtype=wp.vec3), tree: TreeData, data: SelfContactData, v: int,
                          query_radius: float, bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32),
                          partial: PartialSearch):
    """Vertex v of S against every triangle whose box (in the triangle tree: sim/self_contact_tree.py) comes
    within query_radius [m] of it, each tested within query_radius (visit_vertex_triangle); returns v's new pair
    count."""
    p = x[v]
    lower = p - wp.vec3(query_radius, query_radius, query_radius)
    upper = p + wp.vec3(query_radius, query_radius, query_radius)
    count = int(0)
    n = tree_next_leaf(tree, lower, upper, -1, 0)
    while n < tree.skip.shape[0]:
        for t in range(tree.start[n], tree.end[n]):
            # the cheap box test inline, first (a call passes the struct of arrays)
            if boxes_overlap(lower, upper, tree.item_lower[t], tree.item_upper[t]):
                count = visit_vertex_triangle(x, data, partial, bound, overflow, v, t, query_radius, count, True)
        n = tree_next_leaf(tree, lower, upper, -1, n + 1)
    return count


@wp.func
def search_marked_vertex(x: wp.array(dtype=wp.vec3), tree: TreeData, data: SelfContactData,
                         partial: PartialSearch, query_radius: float, bound: wp.array(dtype=float),
                         overflow: wp.array(dtype=wp.int32), v: int):
    """Vertex v, when in S, against every triangle within query_radius at positions x (the search positions),
    its list rewritten (scan_vertex_triangles)."""
    if partial.marked[v] == 0 or data.thickness[v] <= 0.0:
        return
    data.vt_count[v] = scan_vertex_triangles(x, tree, data, v, query_radius, bound, overflow, partial)


@wp.func
def visit_corners(x: wp.array(dtype=wp.vec3), data: SelfContactData, partial: PartialSearch,
                  bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32), t: int, near: int,
                  query_radius: float, lower: wp.vec3, upper: wp.vec3):
    """The corners of triangle `near` that it is the first triangle of, outside S and inside the query box
    [lower, upper] (triangle t's box grown by query_radius [m]), against triangle t."""
    for c in range(3):
        w = data.tri_indices[near, c]
        if partial.marked[w] == 0 and partial.first_triangle[w] == near and data.thickness[w] > 0.0:
            # a corner outside the box is farther than query_radius from t: no exact test (that the box of
            # `near` overlaps the query's says nothing of each corner)
            if boxes_overlap(lower, upper, x[w], x[w]):
                visit_vertex_triangle(x, data, partial, bound, overflow, w, t, query_radius, 0, False)


@wp.func
def search_marked_triangle(x: wp.array(dtype=wp.vec3), tree: TreeData, data: SelfContactData,
                           partial: PartialSearch, query_radius: float, bound: wp.array(dtype=float),
                           overflow: wp.array(dtype=wp.int32), t: int):
    """Triangle t, when it has a vertex in S, against the vertices outside S within query_radius (found as
    corners of the triangles near it in the triangle tree, each through its first triangle): the pair is added
    to the vertex's list."""
    a = data.tri_indices[t, 0]
    b = data.tri_indices[t, 1]
    c = data.tri_indices[t, 2]
    if partial.marked[a] == 0 and partial.marked[b] == 0 and partial.marked[c] == 0:
        return
    grow = query_radius
    lower = wp.min(wp.min(x[a], x[b]), x[c]) - wp.vec3(grow, grow, grow)
    upper = wp.max(wp.max(x[a], x[b]), x[c]) + wp.vec3(grow, grow, grow)
    n = tree_next_leaf(tree, lower, upper, -1, 0)
    while n < tree.skip.shape[0]:
        for near in range(tree.start[n], tree.end[n]):
            if boxes_overlap(lower, upper, tree.item_lower[near], tree.item_upper[near]):
                visit_corners(x, data, partial, bound, overflow, t, near, query_radius, lower, upper)
        n = tree_next_leaf(tree, lower, upper, -1, n + 1)


@wp.func
def visit_edge_edge(x: wp.array(dtype=wp.vec3), data: SelfContactData, partial: PartialSearch,
                    bound: wp.array(dtype=float), overflow: wp.array(dtype=wp.int32), e: int, f: int,
                    query_radius: float, count: int):
    """Pair (e, f), e with a vertex in S: constrain the bounds; when e owns it (the lower index, as the full
    search stores it), keep it in e's rewritten list (count: its length so far); when f owns it and f has no
    vertex in S, add it to f's list if missing; when f owns it and has a vertex in S, leave it to f's own
    query (which finds e: their boxes overlap alike). Returns e's new count."""
    j0 = data.edge_indices[f, 0]
    j1 = data.edge_indices[f, 1]
    if f < e and (partial.marked[j0] != 0 or partial.marked[j1] != 0):
        return count
    u, d = edge_edge_candidate(x, data, e, f, query_radius)
    if d >= query_radius:
        return count
    i1 = data.edge_indices[e, 1]
    constrain_pair(x, partial, bound, data.edge_indices[e, 0], i1, i1, j0, j1, j1, d)
    if e < f:
        if count < EE_SLOTS:
            data.ee_edge[e * EE_SLOTS + count] = f
            data.ee_start[e * EE_SLOTS + count] = u
            return count + 1
        wp.atomic_add(overflow, 0, 1)
        return count
    for k in range(partial.ee_base[f]):
        if data.ee_edge[f * EE_SLOTS + k] == e:
            data.ee_start[f * EE_SLOTS + k] = -u
            return count
    slot = wp.atomic_add(data.ee_count, f, 1)
    if slot == partial.ee_base[f]:
        partial.touched_ee[wp.atomic_add(partial.attempt_count, 1, 1)] = f
    if slot < EE_SLOTS:
        data.ee_edge[f * EE_SLOTS + slot] = e
        data.ee_start[f * EE_SLOTS + slot] = -u
    else:
        wp.atomic_add(overflow, 0, 1)
    return count


@wp.func
def search_marked_edge(x: wp.array(dtype=wp.vec3), tree: TreeData, data: SelfContactData,
                       partial: PartialSearch, query_radius: float, bound: wp.array(dtype=float),
                       overflow: wp.array(dtype=wp.int32), e: int):
    """Edge e, when it has a vertex in S, against every edge within query_radius: its own list rewritten, pairs
    owned by an edge outside S added to that edge's list.

    Through the full search's edge tree (sim/self_contact_tree.py), whose boxes hold the edges at the search
    positions x grown by r_q / 2: the query box is e's grown by r_q / 2, over every node whose box it
    overlaps."""
    i0 = data.edge_indices[e, 0]
    i1 = data.edge_indices[e, 1]
    if partial.marked[i0] == 0 and partial.marked[i1] == 0:
        return
    reach = tree.grow
    lower = wp.min(x[i0], x[i1]) - wp.vec3(reach, reach, reach)
    upper = wp.max(x[i0], x[i1]) + wp.vec3(reach, reach, reach)
    count = int(0)
    n = tree_next_leaf(tree, lower, upper, -1, 0)
    while n < tree.skip.shape[0]:
        for f in range(tree.start[n], tree.end[n]):
            if boxes_overlap(lower, upper, tree.item_lower[f], tree.item_upper[f]):
                count = visit_edge_edge(x, data, partial, bound, overflow, e, f, query_radius, count)
        n = tree_next_leaf(tree, lower, upper, -1, n + 1)
    data.ee_count[e] = count


@wp.func
def lowest_marked(partial: PartialSearch, v: int, a: int, b: int):
    """Whether v is the lowest-index vertex of S among v, a and b (v is in S): the one whose thread searches
    their triangle or edge (a repeated vertex for an edge)."""
    return not ((a < v and partial.marked[a] != 0) or (b < v and partial.marked[b] != 0))


@wp.kernel(module=ORDER_FREE)
def search_marked(x: wp.array(dtype=wp.vec3), tri_tree: TreeData, edge_tree: TreeData, data: SelfContactData,
                  partial: PartialSearch, query_radius: float, bound: wp.array(dtype=float),
                  overflow: wp.array(dtype=wp.int32), per_member: int, rows: int):
    """The three queries of an attempt in one launch over the members of S: dim = rows * per_member (1 + the
    most triangles + the most edges of a vertex), thread i taking slot i / rows of members i % rows, + rows,
    + 2 rows, ... while there are more (a slot's threads side by side: the threads' chunks share S's work
    whatever its size). Slot 0 searches the vertex (search_marked_vertex), the next slots its triangles
    (search_marked_triangle), then its edges (search_marked_edge), each triangle and edge by its lowest vertex
    in S. They write disjoint lists (a vertex of S rewrites its own, the others are added to
    lists outside S) and lower bounds by minima, so they need no order among them. (A thread per vertex,
    triangle and edge of the cloth, most of which found theirs outside S, cost 88 us of each attempt on the 64 x
    64 cloth with S empty.)"""
    i = wp.tid()
    slot = i / rows
    j = i % rows
    total = partial.member_count[0]
    while j < total:
        v = partial.members[j]
        if slot == 0:
            search_marked_vertex(x, tri_tree, data, partial, query_radius, bound, overflow, v)
        else:
            k = slot - 1
            first = partial.vertex_triangles_start[v]
            triangles = partial.vertex_triangles_start[v + 1] - first
            if k < triangles:
                t = partial.vertex_triangles[first + k]
                a = data.tri_indices[t, 0]
                b = data.tri_indices[t, 1]
                c = data.tri_indices[t, 2]
                if lowest_marked(partial, v, a, b) and lowest_marked(partial, v, c, c):
                    search_marked_triangle(x, tri_tree, data, partial, query_radius, bound, overflow, t)
            else:
                k = k - triangles
                first = partial.vertex_edges_start[v]
                if k < partial.vertex_edges_start[v + 1] - first:
                    e = partial.vertex_edges[first + k]
                    if lowest_marked(partial, v, data.edge_indices[e, 0], data.edge_indices[e, 1]):
                        search_marked_edge(x, edge_tree, data, partial, query_radius, bound, overflow, e)
        j = j + rows
