"""wp.utils graph colouring: valid colourings (checked edge by edge), balanced groups, Warp's colours and errors."""

import numpy as np
import pytest

import _meshes
import _warp_reference
import kernels as wp


def _mesh_graph(faces: np.ndarray, bending: bool) -> np.ndarray:
    """Edges [n, 2] of a triangle mesh (each once), plus with `bending` the pairs of vertices opposite an edge."""
    opposite = {}
    for a, b, c in faces.reshape(-1, 3).tolist():
        for u, v, o in ((a, b, c), (b, c, a), (c, a, b)):
            opposite.setdefault((min(u, v), max(u, v)), []).append(o)
    edges = list(opposite)
    if bending:
        edges += [tuple(o) for o in opposite.values() if len(o) == 2]
    return np.asarray(edges, dtype=np.int32)


def _grid_faces(n: int) -> np.ndarray:
    faces = []
    for i in range(n - 1):
        for j in range(n - 1):
            v = i * n + j
            faces += [v, v + n, v + 1, v + n, v + n + 1, v + 1]
    return np.asarray(faces)


def _clashes(edges: np.ndarray, colors: np.ndarray) -> int:
    """Edges whose two ends share a colour (an independent check: plain numpy on the edge list)."""
    return int(np.sum(colors[edges[:, 0]] == colors[edges[:, 1]]))


@pytest.mark.parametrize("algorithm", [wp.utils.GraphColoringAlgorithm.MCS, wp.utils.GraphColoringAlgorithm.GREEDY])
def test_colorings_are_valid_and_balance_keeps_them_valid(algorithm):
    _, faces = _meshes.icosphere(2)
    for edges_np in (_mesh_graph(np.asarray(faces), False), _mesh_graph(_grid_faces(30), True)):
        node_count = int(edges_np.max()) + 1
        edges = wp.array(edges_np, dtype=wp.int32, device="cpu")
        colors = wp.empty(node_count, dtype=wp.int32, device="cpu")
        count = wp.utils.graph_coloring_assign(edges, colors, algorithm)
        c = colors.numpy()
        assert _clashes(edges_np, c) == 0
        assert set(np.unique(c)) == set(range(count))
        sizes = np.bincount(c, minlength=count)
        ratio = wp.utils.graph_coloring_balance(edges, colors, count, 1.1)
        c = colors.numpy()
        assert _clashes(edges_np, c) == 0
        balanced = np.bincount(c, minlength=count)
        assert balanced.max() / balanced.min() <= sizes.max() / sizes.min()
        assert ratio == pytest.approx(balanced.max() / balanced.min(), rel=1e-6)
        groups = wp.utils.graph_coloring_get_groups(colors, count, return_wp_array=False)
        np.testing.assert_array_equal(np.sort(np.concatenate(groups)), np.arange(node_count))
        assert all(np.all(c[g] == k) for k, g in enumerate(groups))


def test_known_color_counts():
    triangle = wp.array([[0, 1], [1, 2], [2, 0]], dtype=wp.int32)
    colors = wp.empty(3, dtype=wp.int32)
    assert wp.utils.graph_coloring_assign(triangle, colors) == 3
    # a grid without diagonals is bipartite: MCS finds the 2 colours
    n = 6
    grid = [(i * n + j, i * n + j + 1) for i in range(n) for j in range(n - 1)]
    grid += [(i * n + j, (i + 1) * n + j) for i in range(n - 1) for j in range(n)]
    colors = wp.empty(n * n, dtype=wp.int32)
    assert wp.utils.graph_coloring_assign(wp.array(grid, dtype=wp.int32), colors) == 2


def test_bad_input_is_refused(capsys):
    colors = wp.zeros(2, dtype=wp.int32)
    with pytest.raises(RuntimeError, match=r"Graph edge 0 has endpoints \(0, 2\), but valid node indices"):
        wp.utils.graph_coloring_assign(wp.array([[0, 2]], dtype=wp.int32), colors)
    with pytest.raises(RuntimeError, match="dtype int32"):
        wp.utils.graph_coloring_assign(wp.array([[0, 1]], dtype=wp.int64), colors)
    with pytest.raises(RuntimeError, match="Node 1 has color 5"):
        wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32), wp.array([0, 5], dtype=wp.int32), 2, 1.1)
    with pytest.raises(ValueError):
        wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32), colors, 2, 1.1, max_iterations=-1)
    with pytest.raises(TypeError):
        wp.utils.graph_coloring_balance(wp.array([[0, 1]], dtype=wp.int32), colors, 2, 1.1, max_iterations=1.5)
    # stopped by the iteration bound: said on stderr, the colours untouched
    star = wp.array([(0, 1), (0, 2), (0, 3), (0, 4), (0, 6), (1, 6), (2, 5), (4, 6)], dtype=wp.int32)
    colors = wp.array([0, 1, 1, 1, 1, 2, 2], dtype=wp.int32)
    assert wp.utils.graph_coloring_balance(star, colors, 3, 1.1, max_iterations=0) == 4.0
    assert "Graph coloring stopped because it reached the 0-iteration limit" in capsys.readouterr().err
    np.testing.assert_array_equal(colors.numpy(), [0, 1, 1, 1, 1, 2, 2])


_PROGRAM = '''
import numpy as np


def run(wp, Tape):
    out = {}
    rng = np.random.default_rng(3)
    n = 300
    edges = set()
    while len(edges) < 1500:
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if a != b:
            edges.add((min(a, b), max(a, b)))
    edges = wp.array(sorted(edges), dtype=wp.int32, device="cpu")
    colors = wp.empty(n, dtype=wp.int32, device="cpu")
    count = wp.utils.graph_coloring_assign(edges, colors, wp.utils.GraphColoringAlgorithm.MCS)
    out["mcs"] = colors.numpy().copy()
    ratio = wp.utils.graph_coloring_balance(edges, colors, count, 1.05)
    out["balanced"] = colors.numpy().copy()
    out["ratio"] = np.array([ratio])
    out["count"] = np.array([count])
    return out
'''


def test_colors_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "graph_coloring")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
