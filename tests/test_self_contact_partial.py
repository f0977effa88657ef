"""Partial pair searches of cloth self-contact (sim/self_contact_partial.py): after a search around a few
vertices, every vertex-triangle and edge-edge pair of the cloth (brute force) stays apart by its two sides'
largest bounds, and every pair of a searched vertex within the query radius is listed at its owner, once; the
touching counts a partial search leaves stale are made up when a solver asks."""

import numpy as np
import pytest

import kernels as wp
import sim

THICKNESS = 0.01
IDENTITY = (0.0, 0.0, 0.0, 1.0)


@wp.kernel
def all_pair_distances(x: wp.array(dtype=wp.vec3), tris: wp.array2d(dtype=wp.int32),
                       edges: wp.array2d(dtype=wp.int32), vt: wp.array2d(dtype=float),
                       ee: wp.array2d(dtype=float)):
    """Every vertex-triangle and edge-edge distance [m] (brute force; -1 for a pair sharing a vertex)."""
    i, j = wp.tid()
    if i < vt.shape[0] and j < vt.shape[1]:
        a = tris[j, 0]
        b = tris[j, 1]
        c = tris[j, 2]
        vt[i, j] = -1.0
        if i != a and i != b and i != c:
            w = sim.self_contact_primitives.closest_point_triangle(x[i], x[a], x[b], x[c])
            vt[i, j] = wp.length(x[i] - (x[a] * w[0] + x[b] * w[1] + x[c] * w[2]))
    if i < ee.shape[0] and j < ee.shape[1]:
        p0 = edges[i, 0]
        p1 = edges[i, 1]
        q0 = edges[j, 0]
        q1 = edges[j, 1]
        ee[i, j] = -1.0
        if p0 != q0 and p0 != q1 and p1 != q0 and p1 != q1:
            st = wp.closest_point_edge_edge(x[p0], x[p1], x[q0], x[q1], 1.0e-12)
            ee[i, j] = wp.length(x[p0] * (1.0 - st[0]) + x[p1] * st[0] - x[q0] * (1.0 - st[1]) - x[q1] * st[1])


def mark(contact, flags):
    """Vertices asking for a search (flags [particle_count]: 1 asks now, 2 about to), as the bound's kernels
    leave them: marked, counted and listed."""
    flags = np.asarray(flags, np.int32)
    listed = np.zeros(contact.particle_count, np.int32)
    listed[:np.count_nonzero(flags)] = np.nonzero(flags)[0]
    contact._marked.assign(flags)
    contact._partial.listed.assign(listed)
    contact._search_count.assign(np.array([(flags == 1).sum(), (flags == 2).sum(), np.count_nonzero(flags)],
                                          np.int32))


def assert_pairs_apart_and_listed(contact, searched) -> int:
    """After a partial search of the vertices `searched`: every vertex-triangle and edge-edge pair of the cloth
    (brute force) has the largest bound on one side plus the largest on the other below its distance at the
    search positions, and every pair with a searched vertex closer than the query radius is listed at its owner,
    once, and every listed pair's separation at the search is no longer than its distance at the search
    positions. Returns how many such pairs there are."""
    # what the next partial search reads as the lengths and bounds at its start holds them, and no mark is left
    partial, data = contact._partial, contact.data
    assert np.array_equal(partial.vt_base.numpy(), data.vt_count.numpy())
    assert np.array_equal(partial.ee_base.numpy()[:contact.edge_count], data.ee_count.numpy()[:contact.edge_count])
    assert np.array_equal(partial.bound_before.numpy(), contact.bound.numpy())
    assert not partial.lowered_flag.numpy().any()
    assert not contact._marked.numpy().any() and not contact._search_count.numpy().any()
    y, bound = contact.x_search.numpy().astype(np.float64), contact.bound.numpy().astype(np.float64)
    tris, edges = contact._tri_indices.numpy(), contact._edge_indices.numpy()
    vt = wp.zeros((len(y), len(tris)), dtype=float)
    ee = wp.zeros((len(edges), len(edges)), dtype=float)
    wp.launch(all_pair_distances, dim=(max(len(y), len(edges)), max(len(tris), len(edges))),
              inputs=[contact.x_search, contact._tri_indices, contact._edge_indices, vt, ee])
    vt, ee = vt.numpy(), ee.numpy()
    reach_vt = bound[:, None] + bound[tris].max(axis=1)[None, :]
    reach_ee = bound[edges].max(axis=1)[:, None] + bound[edges].max(axis=1)[None, :]
    assert np.all((vt < 0) | (reach_vt < vt)), "a vertex-triangle pair may touch before the next search"
    assert np.all((ee < 0) | (reach_ee < ee)), "an edge-edge pair may touch before the next search"

    data, r = contact.data, contact.query_radius
    vt_count, vt_tri = data.vt_count.numpy(), data.vt_triangle.numpy().reshape(-1, sim.self_contact.VT_SLOTS)
    ee_count, ee_edge = data.ee_count.numpy(), data.ee_edge.numpy().reshape(-1, sim.self_contact.EE_SLOTS)
    touched_tri = np.isin(tris, searched).any(axis=1)
    touched_edge = np.isin(edges, searched).any(axis=1)
    new_pairs = 0
    for v, t in zip(*np.nonzero((vt >= 0) & (vt < 0.99 * r))):
        if v in searched or touched_tri[t]:
            assert t in vt_tri[v, :vt_count[v]], (v, t)
            assert (vt_tri[v, :vt_count[v]] == t).sum() == 1, f"pair {(v, t)} listed twice"
            new_pairs += 1
    for e, f in zip(*np.nonzero((ee >= 0) & (ee < 0.99 * r))):
        if e < f and (touched_edge[e] or touched_edge[f]):
            assert f in ee_edge[e, :ee_count[e]] or e in ee_edge[f, :ee_count[f]], (e, f)
            listed = np.concatenate([ee_edge[e, :ee_count[e]], ee_edge[f, :ee_count[f]]])
            assert (listed == f).sum() + (listed == e).sum() == 1, f"pair {(e, f)} listed twice"
            new_pairs += 1
    # a listed pair's separation at the search is known at most as far as its distance at the search positions
    # now: the pairs found again have it there, the others were closer when listed than r_q, which they now pass
    # (SolverSemiImplicit skips pairs by it: SelfContact.offsets_at)
    vt_start = np.linalg.norm(data.vt_start.numpy(), axis=1).reshape(vt_tri.shape)
    ee_start = np.linalg.norm(data.ee_start.numpy(), axis=1).reshape(ee_edge.shape)
    for v in range(len(y)):
        listed = vt_tri[v, :vt_count[v]]
        assert np.all(vt_start[v, :vt_count[v]] <= vt[v, listed] + 1e-6), f"vertex {v}: a pair's start is stale"
    for e in range(len(edges)):
        listed = ee_edge[e, :ee_count[e]]
        assert np.all(ee_start[e, :ee_count[e]] <= ee[e, listed] + 1e-6), f"edge {e}: a pair's start is stale"
    return new_pairs


def test_a_partial_search_around_vertices_of_many_triangles_keeps_and_lists_their_pairs():
    """Vertices of 40 triangles and 40 edges each (the centres of two stacked fans, 1.5 thicknesses apart: a
    vertex of a general mesh, where a grid's have 6), searched with a few of their rim neighbours (which share
    their triangles and edges, so that a triangle or edge has several vertices in S): every pair of the cloth
    stays apart and every pair of theirs within the query radius is listed once
    (assert_pairs_apart_and_listed)."""
    from sim.self_contact import SelfContact
    rng = np.random.default_rng(5)
    sides = 40
    angle = 2.0 * np.pi * np.arange(sides) / sides
    vertices = np.concatenate([[[0.0, 0.0, 0.0]], 0.1 * np.stack([np.cos(angle), np.sin(angle), 0 * angle], 1)])
    indices = [[0, 1 + k, 1 + (k + 1) % sides] for k in range(sides)]
    b = sim.ModelBuilder(gravity=0.0)
    for height in (0.0, 1.5 * THICKNESS):
        b.add_cloth_mesh((0.003, 0.002, height), IDENTITY, 1.0, (0, 0, 0), vertices, indices, density=0.1,
                         self_collision=True, thickness=THICKNESS)
    model = b.finalize("cpu")
    x0 = model.particle_q.numpy().astype(np.float64) + rng.normal(scale=0.001, size=(2 * (sides + 1), 3))
    contact = SelfContact(model)
    contact.find(wp.array(x0.astype(np.float32), dtype=wp.vec3))
    bound0 = contact.bound.numpy().astype(np.float64)
    marked = np.array([0, 3, 4, sides + 1, sides + 9])  # both centres, neighbours on the rims
    x1 = x0.copy()
    x1[marked] += np.array([0.0, 0.0, 1.0]) * (np.sign(x0[marked, 2] - 0.5 * THICKNESS)
                                               * -bound0[marked])[:, None]
    flags = np.zeros(model.particle_count, np.int32)
    flags[marked] = 1
    mark(contact, flags)
    contact._partial_limit = len(x0) // 4
    assert contact._search_partially(wp.array(x1.astype(np.float32), dtype=wp.vec3), with_soon=True)
    y = contact.x_search.numpy()
    searched = np.nonzero(np.any(np.abs(y - x0) > 1e-6, axis=1))[0]
    assert set(searched) == set(marked)
    assert assert_pairs_apart_and_listed(contact, searched) > 40


@pytest.mark.parametrize("case", ["near", "far", "no_slack", "shrink"])
def test_a_partial_search_keeps_every_pair_apart_and_lists_the_new_pairs(case):
    """Two cloth grids in one plane (the xy plane), the second shifted 1.5 thicknesses along y so that its rows
    lie between the first's, every vertex moved within its bound, and a few vertices of the second pushed by
    their whole bound towards the first's rows (-y: they ask for a search): a search around those only
    (sim/self_contact_partial.py) leaves, for every vertex-triangle and edge-edge pair of the cloth (brute
    force, all pairs), the largest bound on one side plus the largest on the other below the pair's distance
    at the search positions (what keeps the cloth from passing through itself), resets only the vertices it
    searched, and lists every pair of theirs closer than the query radius at its owner, once.

    far: one marked vertex slid 1.2 thicknesses along its layer (past the margin of half a query radius that the
    queries had until session 23): the boxes of its triangles and edges, and the trees' nodes above them, grow to
    hold them at the search positions (every node's box holds its primitives there, in each case), and the
    search stays partial.
    no_slack: one marked vertex moved to 0.3 of its bound beside the unmarked vertex with the largest bound, which
    leaves their pairs no slack, and the unmarked vertex is already half its bound from its search position, past
    the pair's distance: that vertex (and its triangles' others) join the search, which stays partial.
    shrink: the same at 0.6 of the bound of an unmarked vertex that, like every unmarked vertex, moved only 0.2 of
    its bound: the pairs leave no slack, but room once the unmarked vertices' bounds come down towards how far
    they moved: their bounds are lowered instead (not below how far they moved), and only the marked vertices
    are searched.

    In every case a vertex that was not searched keeps a bound between how far it moved and its bound before."""
    from sim.self_contact import SelfContact
    rng = np.random.default_rng(3)
    b = sim.ModelBuilder(gravity=0.0)
    for height in (0.0, 1.5 * THICKNESS):
        b.add_cloth_grid((0, height, 0), IDENTITY, (0, 0, 0), 6, 6, 0.03, 0.03, mass=0.001, self_collision=True,
                         thickness=THICKNESS)
    model = b.finalize("cpu")
    x0 = model.particle_q.numpy().astype(np.float64)
    x0 += rng.normal(scale=0.001, size=x0.shape)
    contact = SelfContact(model)
    contact.find(wp.array(x0.astype(np.float32), dtype=wp.vec3))
    bound0 = contact.bound.numpy().astype(np.float64)
    direction = rng.normal(size=x0.shape)
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    x1 = x0 + direction * (0.5 * bound0)[:, None]
    marked = np.array([60, 66, 70, 74])  # upper layer (49 vertices a layer)
    x1[marked] = x0[marked] - np.array([0.0, 1.0, 0.0]) * bound0[marked, None]
    if case == "far":
        x1[66] = x0[66] + np.array([1.2 * THICKNESS, 0.0, 0.0])
    elif case in ("no_slack", "shrink"):
        # beside the unmarked vertex with the largest bound, closer than that bound
        unmarked = ~np.isin(np.arange(len(x0)), marked)
        w = int(np.argmax(np.where(unmarked, bound0, 0.0)))
        if case == "shrink":
            x1[unmarked] = x0[unmarked] + direction[unmarked] * (0.2 * bound0[unmarked])[:, None]
        x1[66] = x0[w] + np.array([0.0, 0.0, (0.3 if case == "no_slack" else 0.6) * bound0[w]])
    flags = np.zeros(model.particle_count, np.int32)
    flags[marked] = 1
    mark(contact, flags)
    contact._partial_limit = len(x0) // 4  # 24 vertices, not 1/32 of this small cloth's (begin_step's test)
    x = wp.array(x1.astype(np.float32), dtype=wp.vec3)
    assert contact._search_partially(x, with_soon=True)
    y, bound = contact.x_search.numpy().astype(np.float64), contact.bound.numpy().astype(np.float64)
    searched = np.nonzero(np.any(np.abs(y - x0) > 1e-6, axis=1))[0]
    assert np.allclose(y[searched], x1[searched], atol=1e-6)
    for tree, indices in ((contact._tri_tree, contact._tri_indices), (contact._edge_tree, contact._edge_indices)):
        corners = y[indices.numpy()]
        grow = tree.data.grow
        lo, hi = corners.min(axis=1) - grow, corners.max(axis=1) + grow
        lower, upper = tree.data.lower.numpy(), tree.data.upper.numpy()
        for n, (first, last) in enumerate(zip(tree.data.start.numpy(), tree.data.end.numpy())):
            assert np.all(lower[n] <= lo[first:last].min(axis=0) + 1e-6), f"node {n} misses a primitive"
            assert np.all(upper[n] >= hi[first:last].max(axis=0) - 1e-6), f"node {n} misses a primitive"
    if case == "no_slack":
        assert set(marked) < set(searched) and w in searched
    elif case == "shrink":  # the edges of the vertex moved across the cloth block a few vertices of their own
        assert set(marked) < set(searched) and w not in searched, (w, searched)
    else:
        assert set(searched) == set(marked)
    others = np.setdiff1d(np.arange(len(x0)), searched)
    moved = np.linalg.norm(x1[others] - x0[others], axis=1)  # the drift is zero after a full search
    assert np.all(moved <= bound[others] + 1e-9) and np.all(bound[others] <= bound0[others] + 1e-9)
    if case == "shrink":
        assert bound[w] < 0.5 * bound0[w], (bound[w], bound0[w])
    elif case != "no_slack":
        assert np.allclose(bound[others], bound0[others])
    assert np.all(bound[searched] > 0.0)
    assert assert_pairs_apart_and_listed(contact, searched) > 20


def test_touching_counts_a_partial_search_skipped_are_made_up_when_a_solver_asks():
    """A partial search leaves data.degree (how many touching listed pairs each vertex is part of: SolverXPBD's
    share of a correction; SolverSemiImplicit never reads it) to be counted when asked: touching_counts() counts
    it first (here over counts wiped after the partial search), and gives each vertex's number of listed pairs
    closer than their thickness, counted here from the lists by hand."""
    from sim.self_contact import SelfContact
    rng = np.random.default_rng(4)
    b = sim.ModelBuilder(gravity=0.0)
    for height in (0.0, 0.8 * THICKNESS):  # grids in the xy plane, touching
        b.add_cloth_grid((0, 0, height), IDENTITY, (0, 0, 0), 6, 6, 0.03, 0.03, mass=0.001, self_collision=True,
                         thickness=THICKNESS)
    model = b.finalize("cpu")
    x0 = model.particle_q.numpy() + rng.normal(scale=0.0005, size=(model.particle_count, 3))
    marked = np.array([60, 66, 70, 74])  # upper layer (49 vertices a layer)
    contact = SelfContact(model)
    contact.find(wp.array(x0.astype(np.float32), dtype=wp.vec3))
    x1 = x0.copy()
    x1[marked, 2] -= 0.5 * contact.bound.numpy()[marked]
    flags = np.zeros(model.particle_count, np.int32)
    flags[marked] = 1
    mark(contact, flags)
    contact._partial_limit = model.particle_count // 4
    assert contact._search_partially(wp.array(x1.astype(np.float32), dtype=wp.vec3), with_soon=True)
    assert contact._degrees_stale
    contact.data.degree.zero_()
    counts = contact.touching_counts().numpy()
    assert not contact._degrees_stale and contact.searches == 1 and contact.partial_searches == 1

    data, slots = contact.data, sim.self_contact.VT_SLOTS
    tris, edges = data.tri_indices.numpy(), data.edge_indices.numpy()
    expected = np.zeros(model.particle_count, np.int64)
    vt_count, vt_tri = data.vt_count.numpy(), data.vt_triangle.numpy().reshape(-1, slots)
    vt_start = data.vt_start.numpy().reshape(-1, slots, 3)
    for v in range(model.particle_count):
        for k in range(vt_count[v]):
            if np.linalg.norm(vt_start[v, k]) < THICKNESS:
                np.add.at(expected, [v, *tris[vt_tri[v, k]]], 1)
    slots = sim.self_contact.EE_SLOTS
    ee_count, ee_edge = data.ee_count.numpy(), data.ee_edge.numpy().reshape(-1, slots)
    ee_start = data.ee_start.numpy().reshape(-1, slots, 3)
    for e in range(len(edges)):
        for k in range(ee_count[e]):
            if np.linalg.norm(ee_start[e, k]) < THICKNESS:
                np.add.at(expected, [*edges[e], *edges[ee_edge[e, k]]], 1)
    assert counts.sum() > 100
    assert np.array_equal(counts, expected)
