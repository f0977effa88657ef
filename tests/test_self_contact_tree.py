"""The triangle and edge trees of cloth self-contact's searches (sim/self_contact_tree.py): their shape (every
node's primitives a range, split into its two children's, leaves of at most LEAF_SIZE, skip links past each
subtree, a world boundary inside at most one leaf), refitted boxes that hold every primitive's grown box, and
queries that find every vertex-triangle and edge-edge pair a brute-force search finds (the bound's completeness
over a whole search, stretched primitives included, is tests/test_self_contact.py's)."""

import numpy as np
import pytest

import kernels as wp
import sim
from sim.self_contact import SelfContact, find_edge_edge_pairs, find_vertex_triangle_pairs
from kernels.runtime.bvh import internal_levels
from sim.self_contact_primitives import edges_apart_along_midline
from sim.self_contact_tree import LEAF_SIZE, PrimitiveTree, build_tree


@pytest.mark.parametrize("count", [1, 4, 5, 1000])
def test_the_tree_splits_every_range_into_two_and_skips_past_each_subtree(count):
    rng = np.random.default_rng(count)
    midpoints = rng.normal(size=(count, 3))
    worlds = (np.arange(count) >= 0.6 * count).astype(np.int32)  # two worlds, unevenly sized
    rng.shuffle(worlds)
    order, start, end, skip = build_tree(midpoints, worlds)
    assert np.array_equal(np.sort(order), np.arange(count))
    assert (start[0], end[0], skip[0]) == (0, count, len(start))
    mixed = 0
    for n in range(len(start)):
        if skip[n] == n + 1:  # a leaf
            assert 0 < end[n] - start[n] <= LEAF_SIZE
            mixed += len(set(worlds[order[start[n]:end[n]]])) > 1
            continue
        left, right = n + 1, skip[n + 1]
        assert (start[left], end[left], start[right], end[right]) == (start[n], start[right], end[left], end[n])
        assert skip[right] == skip[n]
        assert abs((end[left] - start[left]) - (end[right] - start[right])) <= 1
    assert mixed <= 1, "one world boundary lies inside at most one leaf"
    # every leaf's range together is every edge once, in order
    leaves = [n for n in range(len(start)) if skip[n] == n + 1]
    assert np.array_equal(np.concatenate([np.arange(start[n], end[n]) for n in leaves]), np.arange(count))


def test_a_refit_a_height_at_a_time_gives_the_serial_refits_boxes():
    """The GPU's refit (a launch per height, lowest first) against the CPU's one serial pass over the inner nodes,
    on the CPU: the same boxes to the bit, and heights that are 1 + the taller child's."""
    rng = np.random.default_rng(5)
    order, start, end, skip = build_tree(rng.random((1000, 3)), np.zeros(1000, np.int32))
    edges = wp.array(rng.integers(0, 600, (1000, 2)).astype(np.int32), dtype=wp.int32)
    serial = PrimitiveTree(start, end, skip, edges, 600, 0.01, "cpu")
    by_height = PrimitiveTree(start, end, skip, edges, 600, 0.01, "cpu", per_height=True)
    assert not serial._refit.per_height and by_height._refit.per_height
    heights = np.zeros(len(skip), np.int64)
    for h, level in enumerate(internal_levels(*serial.children), start=1):
        heights[level] = h
    for n in range(len(skip)):
        leaf = skip[n] == n + 1
        assert heights[n] == (0 if leaf else 1 + max(heights[n + 1], heights[skip[n + 1]]))
    x = wp.array(rng.random((600, 3)).astype(np.float32), dtype=wp.vec3)
    serial.refit(x)
    by_height.refit(x)
    assert np.array_equal(serial.data.lower.numpy(), by_height.data.lower.numpy())
    assert np.array_equal(serial.data.upper.numpy(), by_height.data.upper.numpy())
    used = x.numpy()[edges.numpy()].reshape(-1, 3)  # the root holds every edge's grown box
    assert np.allclose(serial.data.lower.numpy()[0], used.min(axis=0) - 0.01)
    assert np.allclose(serial.data.upper.numpy()[0], used.max(axis=0) + 0.01)


def moved_list(flags) -> tuple:
    """The vertices flagged in `flags` as PrimitiveTree.grow_moved takes them: a device list and its length."""
    moved = np.nonzero(flags)[0].astype(np.int32)
    return wp.array(moved, dtype=wp.int32), wp.array([len(moved)], dtype=wp.int32)


def test_growing_the_moved_primitives_boxes_holds_them_and_leaves_the_others(monkeypatch):
    """PrimitiveTree.grow_moved after some vertices moved: each primitive with a moved vertex gets its exact
    grown box at the new positions, every node's box holds all of its primitives' boxes at the new positions, the
    nodes on no moved primitive's path to the root and the other primitives keep their boxes to the bit, and
    the result does not depend on the thread order (two threads and one give the same bits)."""
    rng = np.random.default_rng(8)
    order, start, end, skip = build_tree(rng.random((1000, 3)), np.zeros(1000, np.int32))
    x0 = rng.random((600, 3))
    edges_np = rng.integers(0, 600, (1000, 2)).astype(np.int32)[order]
    moved = np.zeros(600, np.int32)
    moved[rng.choice(600, 12, replace=False)] = 1
    x1 = x0.copy()
    x1[moved != 0] += rng.normal(scale=0.3, size=(12, 3))
    results = []
    monkeypatch.setattr(wp.config, "cpu_parallel_threshold", 1)
    for threads in (2, 1):
        monkeypatch.setattr(wp.config, "cpu_threads", threads)
        tree = PrimitiveTree(start, end, skip, wp.array(edges_np, dtype=wp.int32), 600, 0.01, "cpu")
        tree.refit(wp.array(x0.astype(np.float32), dtype=wp.vec3))
        boxes = (tree.data.lower, tree.data.upper, tree.data.item_lower, tree.data.item_upper)
        before = [a.numpy().copy() for a in boxes]
        tree.grow_moved(wp.array(x1.astype(np.float32), dtype=wp.vec3), *moved_list(moved), threads=5)
        results.append((before, [a.numpy() for a in boxes]))
    (before, (lower, upper, item_lower, item_upper)), (_, other) = results
    assert all(np.array_equal(a, b) for a, b in zip((lower, upper, item_lower, item_upper), other))
    touched = np.any(moved[edges_np] != 0, axis=1)
    assert 0 < touched.sum() < 100
    corners = x1[edges_np].astype(np.float32)
    exact_lo, exact_hi = corners.min(axis=1) - np.float32(0.01), corners.max(axis=1) + np.float32(0.01)
    assert np.allclose(item_lower[touched], exact_lo[touched]) and np.allclose(item_upper[touched], exact_hi[touched])
    assert np.array_equal(item_lower[~touched], before[2][~touched])
    on_path = np.zeros(len(skip), bool)
    for n in range(len(skip)):
        holds_lo = lower[n] <= exact_lo[start[n]:end[n]].min(axis=0) + 1e-6
        holds_hi = upper[n] >= exact_hi[start[n]:end[n]].max(axis=0) - 1e-6
        assert np.all(holds_lo) and np.all(holds_hi), f"node {n} does not hold its primitives"
        on_path[n] = touched[start[n]:end[n]].any()
    assert np.array_equal(lower[~on_path], before[0][~on_path]) and np.array_equal(upper[~on_path],
                                                                                   before[1][~on_path])
    assert not np.array_equal(lower[on_path], before[0][on_path]), "the moved primitives' nodes grew"



def test_two_trees_grown_in_one_launch_get_the_bits_of_two_launches():
    """grow_moved(..., also=other): a second tree over the same vertices grown in the same launch gets the boxes
    that its own grow_moved gives, to the bit, and so does the first (a mutation that skips the second tree, or
    grows it with the first's paths, fails it)."""
    rng = np.random.default_rng(9)
    x0 = rng.random((300, 3)).astype(np.float32)
    x1 = x0 + rng.normal(scale=0.2, size=x0.shape).astype(np.float32)
    moved = (rng.random(300) < 0.05).astype(np.int32)
    shapes = [(2, 0.01), (3, 0.0)]  # an edge-like tree with grown boxes, a triangle-like one without

    def trees():
        made = []
        for corners, grow in shapes:
            rows = rng_rows.integers(0, 300, (500, corners)).astype(np.int32)
            order, start, end, skip = build_tree(x0[rows].mean(axis=1), np.zeros(500, np.int32))
            tree = PrimitiveTree(start, end, skip, wp.array(rows[order], dtype=wp.int32), 300, grow, "cpu")
            tree.refit(wp.array(x0, dtype=wp.vec3))
            made.append(tree)
        return made

    rng_rows = np.random.default_rng(10)
    apart = trees()
    rng_rows = np.random.default_rng(10)
    together = trees()
    x, m = wp.array(x1, dtype=wp.vec3), moved_list(moved)
    before = together[1].data.item_lower.numpy().copy()
    for tree in apart:
        tree.grow_moved(x, *m)
    together[0].grow_moved(x, *m, also=together[1])
    for a, b in zip(apart, together):
        for name in ("lower", "upper", "item_lower", "item_upper"):
            assert np.array_equal(getattr(a.data, name).numpy(), getattr(b.data, name).numpy()), name
    assert not np.array_equal(together[1].data.item_lower.numpy(), before), "the second tree grew"

def crumpled_cloth():
    """A cloth crumpled at random (displacements larger than its cells) and its SelfContact after a search."""
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), (0.0, 0.0, 0.0, 1.0), (0, 0, 0), 12, 12, 0.02, 0.02, mass=0.001,
                     self_collision=True, thickness=0.01)
    model = b.finalize("cpu")
    rng = np.random.default_rng(3)
    x = model.particle_q.numpy() + rng.normal(scale=0.03, size=(model.particle_count, 3))
    contact = SelfContact(model)
    contact.find(wp.array(x.astype(np.float32), dtype=wp.vec3))
    return model, contact, x


def check_boxes(tree, lower, upper):
    """Each primitive's box as expected and each node's box holding its primitives' boxes."""
    lo, hi = tree.item_lower.numpy(), tree.item_upper.numpy()
    assert np.allclose(lo, lower, atol=1e-6) and np.allclose(hi, upper, atol=1e-6)
    start, end = tree.start.numpy(), tree.end.numpy()
    node_lo, node_hi = tree.lower.numpy(), tree.upper.numpy()
    for n in range(len(start)):
        assert np.all(node_lo[n] <= lo[start[n]:end[n]].min(axis=0))
        assert np.all(node_hi[n] >= hi[start[n]:end[n]].max(axis=0))


@pytest.mark.parametrize("group", [1, 3, 4])
def test_the_edge_tree_holds_every_edge_and_its_query_finds_every_pair(group):
    """Each node's box holds its edges' boxes grown by r_q / 2, and the query (`group` edges a thread) lists
    exactly the edge pairs within r_q that brute force finds, each once, at its lower edge."""
    model, contact, x = crumpled_cloth()
    tree, r = contact._edge_tree.data, contact.query_radius
    edges = contact._edge_indices.numpy()
    check_boxes(tree, np.minimum(x[edges[:, 0]], x[edges[:, 1]]) - 0.5 * r,
                np.maximum(x[edges[:, 0]], x[edges[:, 1]]) + 0.5 * r)

    # the query's own lists (find keeps only the pairs that can touch before the next search)
    bound = wp.full(model.particle_count, r, dtype=float)
    wp.launch(find_edge_edge_pairs, dim=-(-len(edges) // group), inputs=[contact.x_search, tree, contact.data, r,
                                                                          bound, contact.overflow, group])
    assert contact.overflow.numpy()[0] == 0
    listed = set()
    count, listed_edge = contact.data.ee_count.numpy(), contact.data.ee_edge.numpy().reshape(len(edges), -1)
    for e in range(len(edges)):
        assert np.all(np.diff(listed_edge[e, :count[e]]) > 0), "each list in the tree's order"
        for f in listed_edge[e, :count[e]]:
            assert e < f, "a pair is listed at its lower edge"
            listed.add((e, int(f)))
    p0, p1 = x[edges[:, 0]].astype(np.float64), x[edges[:, 1]].astype(np.float64)
    expected, borderline = set(), set()
    for e in range(len(edges)):
        for f in range(e + 1, len(edges)):
            if len({*edges[e], *edges[f]}) < 4:
                continue
            d = segment_distance(p0[e], p1[e], p0[f], p1[f])
            if d < r * 0.99:
                expected.add((e, f))
            elif d < r * 1.01:
                borderline.add((e, f))
    assert len(expected) > 100
    assert expected <= listed <= expected | borderline


@pytest.mark.parametrize("group", [1, 3, 4])
def test_the_triangle_tree_holds_every_triangle_and_its_query_finds_every_pair(group):
    """Each node's box holds its triangles' own boxes, and the vertex query (`group` vertices a thread) lists
    exactly the vertex-triangle pairs within r_q that brute force finds."""
    model, contact, x = crumpled_cloth()
    tree, r = contact._tri_tree.data, contact.query_radius
    tris = contact._tri_indices.numpy()
    check_boxes(tree, x[tris].min(axis=1), x[tris].max(axis=1))

    bound = wp.full(model.particle_count, r, dtype=float)
    order = contact._vertex_order
    wp.launch(find_vertex_triangle_pairs, dim=-(-order.shape[0] // group),
              inputs=[contact.x_search, tree, contact.data, r, bound, contact.overflow, order, group])
    assert contact.overflow.numpy()[0] == 0
    count, listed_tri = contact.data.vt_count.numpy(), contact.data.vt_triangle.numpy().reshape(len(x), -1)
    listed = {(v, int(t)) for v in range(len(x)) for t in listed_tri[v, :count[v]]}
    assert all(np.all(np.diff(listed_tri[v, :count[v]]) > 0) for v in range(len(x))), "each list in the tree's order"
    expected, borderline = set(), set()
    x64 = x.astype(np.float64)
    for v in range(len(x)):
        for t, corners in enumerate(tris):
            if v in corners:
                continue
            d = point_triangle_distance(x64[v], *x64[corners])
            if d < r * 0.99:
                expected.add((v, t))
            elif d < r * 1.01:
                borderline.add((v, t))
    assert len(expected) > 100
    assert expected <= listed <= expected | borderline


def point_triangle_distance(p, a, b, c):
    """The exact distance from point p to triangle abc [m]: to its plane when p projects inside, else to the
    nearest of its edges."""
    n = np.cross(b - a, c - a)
    n = n / np.linalg.norm(n)
    q = p - np.dot(p - a, n) * n
    inside = all(np.dot(np.cross(v1 - v0, q - v0), n) >= 0.0 for v0, v1 in ((a, b), (b, c), (c, a)))
    if inside:
        return float(abs(np.dot(p - a, n)))
    return min(segment_distance(p, p, v0, v1, samples=1) for v0, v1 in ((a, b), (b, c), (c, a)))


def segment_distance(a0, a1, b0, b1, samples=401):
    """The distance between segments a0-a1 and b0-b1 [m]: the least exact point-segment distance over points
    sampled along a0-a1 (an overestimate by at most the sampling step's worth)."""
    points = a0 + np.linspace(0.0, 1.0, samples)[:, None] * (a1 - a0)
    d = b1 - b0
    t = np.clip((points - b0) @ d / max(float(d @ d), 1e-30), 0.0, 1.0)
    return float(np.linalg.norm(points - (b0 + t[:, None] * d), axis=1).min())


@pytest.mark.parametrize("serial", [True, False])
def test_the_active_lists_hold_every_listing_index_in_order(serial):
    """ActiveLists.build, by one thread (the CPU's) and blocked (a GPU's, run here on the CPU): vt_active and
    ee_active hold the vertices and edges whose counts are positive, in increasing order, and active_count how
    many, against numpy (lists longer than a block, empty blocks, and an empty edge list)."""
    from sim.self_contact_active import ACTIVE_CHUNK, ActiveLists
    from sim.self_contact_primitives import SelfContactData

    rng = np.random.default_rng(4)
    vertices, edges = 3 * ACTIVE_CHUNK + 17, 2 * ACTIVE_CHUNK + 5
    for vt_count, ee_count in (((rng.random(vertices) < 0.1) * rng.integers(1, 5, vertices),
                                (rng.random(edges) < 0.3) * 2),
                               (np.r_[np.zeros(2 * ACTIVE_CHUNK), np.ones(vertices - 2 * ACTIVE_CHUNK)],
                                np.zeros(edges))):
        data = SelfContactData()
        data.vt_count = wp.array(vt_count.astype(np.int32), dtype=wp.int32)
        data.ee_count = wp.array(ee_count.astype(np.int32), dtype=wp.int32)
        data.vt_active = wp.full(vertices, -1, dtype=wp.int32)
        data.ee_active = wp.full(edges, -1, dtype=wp.int32)
        data.active_count = wp.zeros(2, dtype=wp.int32)
        ActiveLists(vertices, edges, "cpu").build(data, serial=serial)
        listed = [np.nonzero(vt_count > 0)[0], np.nonzero(ee_count > 0)[0]]
        assert list(data.active_count.numpy()) == [len(a) for a in listed]
        for active, expected in zip((data.vt_active, data.ee_active), listed):
            assert np.array_equal(active.numpy()[:len(expected)], expected)


@wp.kernel
def midline_verdicts(p: wp.array(dtype=wp.vec3), radius: float, apart: wp.array(dtype=wp.int32),
                     distance: wp.array(dtype=float)):
    i = wp.tid()
    p0, p1, q0, q1 = p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]
    apart[i] = int(edges_apart_along_midline(p0, p1, q0, q1, radius))
    st = wp.closest_point_edge_edge(p0, p1, q0, q1, 1.0e-12)
    distance[i] = st[2]


def test_the_midline_test_refuses_only_edge_pairs_at_least_the_radius_apart():
    """edges_apart_along_midline (the edge-edge candidate test's shortcut): over random segment pairs, and over
    pairs placed at their radius exactly (parallel side by side, end to end, crossing above each other), every
    pair it calls apart is at least the radius apart (the exact closest-point distance), and it calls apart the
    sides of a flat grid one cell apart, side by side or in line, which the boxes pass."""
    rng = np.random.default_rng(12)
    radius = 0.01
    centres = rng.normal(scale=0.02, size=(20000, 2, 1, 3))  # two segments of 2 cm at random
    ends = centres + 0.01 * np.array([-1.0, 1.0])[None, None, :, None] * rng.normal(size=(20000, 2, 1, 3))
    random = ends.reshape(20000, 4, 3)
    along = np.array([1.0, 0.0, 0.0])
    placed = []
    for k in range(2000):
        r = radius * (1.0 + rng.uniform(-1e-5, 1e-5))
        offset = rng.normal(size=3) * 1e-3
        side = np.array([0.0, r, 0.0])
        placed.append([offset, offset + 0.02 * along, offset + side, offset + side + 0.02 * along])  # side by side
        placed.append([offset, offset + 0.02 * along, offset + (0.02 + r) * along, offset + (0.04 + r) * along])
        up = np.array([0.0, 0.0, r])
        cross = np.array([0.0, 0.01, 0.0])
        placed.append([offset - 0.01 * along, offset + 0.01 * along, offset + up - cross, offset + up + cross])
    cell = 0.02
    grid = [[[0, 0, 0], [cell, 0, 0], [0, cell, 0], [cell, cell, 0]],  # one cell's sides, opposite
            [[0, 0, 0], [0, cell, 0], [cell, 0, 0], [cell, cell, 0]],
            [[0, 0, 0], [cell, 0, 0], [2 * cell, 0, 0], [3 * cell, 0, 0]]]  # in line, a side between
    pts = np.concatenate([random, np.array(placed), np.array(grid, float)]).reshape(-1, 3).astype(np.float32)
    n = len(pts) // 4
    apart, distance = wp.zeros(n, dtype=wp.int32), wp.zeros(n, dtype=float)
    wp.launch(midline_verdicts, dim=n, inputs=[wp.array(pts, dtype=wp.vec3), radius, apart, distance])
    apart, distance = apart.numpy().astype(bool), distance.numpy()
    assert np.all(distance[apart] >= radius * (1.0 - 1e-6)), "a pair closer than the radius was refused"
    assert apart[:20000].mean() > 0.2, "the shortcut refuses too few random pairs to be worth its cost"
    assert apart[-3:].all(), "a flat grid's sides one cell apart, side by side or in line, are refused"
