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
    for name in ("MCS", "GREEDY"):
        count = wp.utils.graph_coloring_assign(edges, colors, getattr(wp.utils.GraphColoringAlgorithm, name))
        out[name] = colors.numpy().copy()
        ratio = wp.utils.graph_coloring_balance(edges, colors, count, 1.05)
        out[name + "_balanced"] = colors.numpy().copy()
        out[name + "_ratio"] = np.array([ratio])
        out[name + "_count"] = np.array([count])
    return out
'''


def test_colors_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "graph_coloring")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_stl_sort_orders_like_a_sort_and_keeps_every_element():
    """The libstdc++ order (checked against Warp's GREEDY colours above) is still a correct, complete sort."""
    import random

    from kernels.runtime.stl_sort import stl_sort

    rng = random.Random(1)
    for n in (0, 1, 5, 16, 17, 100, 3000):
        keys = [rng.randrange(7) for _ in range(n)]
        order = list(range(n))
        stl_sort(order, lambda a, b: keys[a] > keys[b])
        assert sorted(order) == list(range(n))
        assert all(keys[order[i]] >= keys[order[i + 1]] for i in range(n - 1))


_STL_PROGRAM = r"""
#include <algorithm>
#include <cstdio>
#include <vector>
int main() {
#ifndef __GLIBCXX__
    std::printf("not libstdc++\n");
    return 0;
#endif
    int n;
    while (std::scanf("%d", &n) == 1) {
        std::vector<int> keys(n), a(n), b(n);
        for (int i = 0; i < n; i++) { std::scanf("%d", &keys[i]); a[i] = b[i] = i; }
        auto less = [&](int l, int r) { return keys[l] > keys[r]; };
        std::sort(a.begin(), a.end(), less);
        std::partial_sort(b.begin(), b.end(), b.end(), less);  // libstdc++'s heapsort, its introsort's fallback
        for (int v : a) std::printf("%d ", v);
        std::printf("\n");
        for (int v : b) std::printf("%d ", v);
        std::printf("\n");
    }
}
"""


def test_stl_sort_is_libstdcxx_order(tmp_path):
    """Equal keys end up exactly where GCC's std::sort (and its heapsort fallback) puts them."""
    import random
    import subprocess

    from kernels.compiler import build
    from kernels.runtime import stl_sort

    source, exe = tmp_path / "order.cpp", tmp_path / "order"
    source.write_text(_STL_PROGRAM)
    subprocess.run([*build.find_cxx(), "-O1", "-o", str(exe), str(source)], check=True)
    rng = random.Random(2)
    cases = [[rng.randrange(k) for _ in range(n)] for n, k in ((5, 2), (16, 3), (17, 3), (100, 4), (2000, 9))]
    text = "".join(f"{len(c)} {' '.join(map(str, c))}\n" for c in cases)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout
    if out.startswith("not libstdc++"):
        pytest.skip("the C++ compiler does not use libstdc++")
    lines = out.splitlines()
    for k, keys in enumerate(cases):
        less = (lambda a, b, keys=keys: keys[a] > keys[b])
        order = list(range(len(keys)))
        stl_sort.stl_sort(order, less)
        assert order == [int(v) for v in lines[2 * k].split()]
        heap = list(range(len(keys)))
        stl_sort._heap_sort(heap, 0, len(heap), less)
        assert heap == [int(v) for v in lines[2 * k + 1].split()]
