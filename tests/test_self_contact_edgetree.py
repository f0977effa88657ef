"""The edge tree of cloth self-contact's searches (sim/self_contact_edgetree.py): its shape (every node's edges a
range, split into its two children's, leaves of at most LEAF_SIZE edges, skip links past each subtree, a world
boundary inside at most one leaf), refitted boxes that hold every edge's grown box, and queries that find every
edge-edge pair a brute-force search finds (the completeness of the whole search is tests/test_self_contact.py's)."""

import numpy as np
import pytest

import kernels as wp
import sim
from sim.self_contact import SelfContact, find_edge_edge_pairs
from sim.self_contact_edgetree import LEAF_SIZE, build_edge_tree


@pytest.mark.parametrize("count", [1, 4, 5, 1000])
def test_the_tree_splits_every_range_into_two_and_skips_past_each_subtree(count):
    rng = np.random.default_rng(count)
    midpoints = rng.normal(size=(count, 3))
    worlds = (np.arange(count) >= 0.6 * count).astype(np.int32)  # two worlds, unevenly sized
    rng.shuffle(worlds)
    order, start, end, skip = build_edge_tree(midpoints, worlds)
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


def test_the_refitted_tree_holds_every_edge_and_its_queries_find_every_pair():
    """A crumpled cloth (random displacements much larger than its cells): each node's box holds its edges'
    boxes grown by r_q / 2, and the full search lists exactly the edge pairs within r_q that brute force finds."""
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), (0.0, 0.0, 0.0, 1.0), (0, 0, 0), 12, 12, 0.02, 0.02, mass=0.001,
                     self_collision=True, thickness=0.01)
    model = b.finalize("cpu")
    rng = np.random.default_rng(3)
    x = model.particle_q.numpy() + rng.normal(scale=0.03, size=(model.particle_count, 3))
    contact = SelfContact(model)
    contact.find(wp.array(x.astype(np.float32), dtype=wp.vec3))
    tree, r = contact._edge_tree.data, contact.query_radius
    edges = contact._edge_indices.numpy()
    lo, hi = tree.item_lower.numpy(), tree.item_upper.numpy()
    g = 0.5 * r
    assert np.allclose(lo, np.minimum(x[edges[:, 0]], x[edges[:, 1]]) - g, atol=1e-6)
    assert np.allclose(hi, np.maximum(x[edges[:, 0]], x[edges[:, 1]]) + g, atol=1e-6)
    start, end = tree.start.numpy(), tree.end.numpy()
    node_lo, node_hi = tree.lower.numpy(), tree.upper.numpy()
    for n in range(len(start)):
        assert np.all(node_lo[n] <= lo[start[n]:end[n]].min(axis=0))
        assert np.all(node_hi[n] >= hi[start[n]:end[n]].max(axis=0))

    # the query's own lists (find keeps only the pairs that can touch before the next search)
    bound = wp.full(model.particle_count, r, dtype=float)
    wp.launch(find_edge_edge_pairs, dim=len(edges), inputs=[contact.x_search, tree, contact.data, r, bound,
                                                             contact.overflow])
    assert contact.overflow.numpy()[0] == 0
    listed = set()
    count, listed_edge = contact.data.ee_count.numpy(), contact.data.ee_edge.numpy().reshape(len(edges), -1)
    for e in range(len(edges)):
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


def segment_distance(a0, a1, b0, b1, samples=401):
    """The distance between segments a0-a1 and b0-b1 [m]: the least exact point-segment distance over points
    sampled along a0-a1 (an overestimate by at most the sampling step's worth)."""
    points = a0 + np.linspace(0.0, 1.0, samples)[:, None] * (a1 - a0)
    d = b1 - b0
    t = np.clip((points - b0) @ d / max(float(d @ d), 1e-30), 0.0, 1.0)
    return float(np.linalg.norm(points - (b0 + t[:, None] * d), axis=1).min())
