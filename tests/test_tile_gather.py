"""Advanced indexing of tiles: `t[indices, :]`, `t[:, indices]`, `t[indices]` with a 1-d integer index tile.

Values against numpy's fancy indexing (negative indices count from the end, repeats allowed, chained with slices
and integer keys), the gradient by central differences (repeated indices add), Warp's refusals (a float index
tile, a partial slice on another axis, two index tiles) with its wording, and the same arrays as real Warp's."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.kernel
def _gathers(src: wp.array2d(dtype=float), idx: wp.array(dtype=int), rows: wp.array2d(dtype=float),
             cols: wp.array2d(dtype=float), row_of: wp.array(dtype=float), chained: wp.array(dtype=float)):
    t = wp.tile_load(src, shape=(6, 5))
    i = wp.tile_load(idx, shape=4)
    wp.tile_store(rows, t[i, :])
    wp.tile_store(cols, t[:, i])
    wp.tile_store(row_of, t[2][i])
    wp.tile_store(chained, t[::2][wp.tile_arange(0, 3, dtype=int)][1])


def test_values_match_numpy_fancy_indexing():
    src_np = np.arange(30, dtype=np.float32).reshape(6, 5)
    idx_np = np.array([1, -1, 3, 3], dtype=np.int32)
    src, idx = wp.array(src_np, dtype=float), wp.array(idx_np, dtype=int)
    rows, cols = wp.zeros((4, 5), dtype=float), wp.zeros((6, 4), dtype=float)
    row_of, chained = wp.zeros(4, dtype=float), wp.zeros(5, dtype=float)
    wp.launch_tiled(_gathers, [1], [src, idx, rows, cols, row_of, chained], block_dim=1)
    np.testing.assert_array_equal(rows.numpy(), src_np[idx_np, :])
    np.testing.assert_array_equal(cols.numpy(), src_np[:, idx_np])
    np.testing.assert_array_equal(row_of.numpy(), src_np[2][idx_np])
    np.testing.assert_array_equal(chained.numpy(), src_np[::2][[0, 1, 2]][1])


@wp.kernel
def _gather_square(src: wp.array2d(dtype=wp.float64), idx: wp.array(dtype=int), out: wp.array2d(dtype=wp.float64)):
    t = wp.tile_load(src, shape=(3, 4))
    i = wp.tile_load(idx, shape=5)
    g = t[:, i]
    wp.tile_store(out, g * g)


def test_gradient_matches_central_differences_with_repeated_indices():
    idx = wp.array(np.array([0, 2, 2, -1, 1], dtype=np.int32), dtype=int)

    def run(src):
        out = wp.zeros((3, 5), dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_gather_square, [1], [src, idx, out], block_dim=1)
        return out

    src = wp.array(np.linspace(-1.0, 1.5, 12).reshape(3, 4), dtype=wp.float64, requires_grad=True)
    gradcheck(run, [src])


def _refused(body_index):
    if body_index == 0:
        @wp.kernel
        def bad(out: wp.array2d(dtype=float)):
            t = wp.tile_ones(shape=(8, 4), dtype=float)
            wp.tile_store(out, t[wp.tile_arange(0.0, 4.0, 1.0, dtype=float), :])
    elif body_index == 1:
        @wp.kernel
        def bad(out: wp.array2d(dtype=float)):
            t = wp.tile_ones(shape=(8, 4), dtype=float)
            wp.tile_store(out, t[wp.tile_arange(0, 4, dtype=int), 1:3])
    else:
        @wp.kernel
        def bad(out: wp.array2d(dtype=float)):
            t = wp.tile_ones(shape=(8, 4), dtype=float)
            i = wp.tile_arange(0, 4, dtype=int)
            wp.tile_store(out, t[i, i])
    return bad


@pytest.mark.parametrize("case, message", [(0, "integer index tile"), (1, "requires ':' on all other axes"),
                                           (2, "exactly one 1D integer index tile")])
def test_warps_refusals(case, message):
    with pytest.raises(ValueError, match=message):
        wp.launch_tiled(_refused(case), [1], [wp.zeros((4, 4), dtype=float)], block_dim=1)


_PROGRAM = '''
import numpy as np


@wp.kernel
def gather(src: wp.array2d(dtype=float), idx: wp.array(dtype=int), rows: wp.array2d(dtype=float),
           cols: wp.array2d(dtype=float), row_of: wp.array(dtype=float)):
    t = wp.tile_load(src, shape=(6, 5))
    i = wp.tile_load(idx, shape=4)
    wp.tile_store(rows, t[i, :] * 2.0)
    wp.tile_store(cols, t[:, i])
    wp.tile_store(row_of, t[2][i])


def run(wp, Tape):
    src = wp.array(np.linspace(-2.0, 3.0, 30).astype(np.float32).reshape(6, 5), dtype=float, requires_grad=True)
    idx = wp.array(np.array([1, -1, 3, 3], dtype=np.int32), dtype=int)
    rows = wp.zeros((4, 5), dtype=float, requires_grad=True)
    cols = wp.zeros((6, 4), dtype=float, requires_grad=True)
    row_of = wp.zeros(4, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(gather, dim=[1], inputs=[src, idx, rows, cols, row_of], block_dim=16)
    rows.grad = wp.array(np.arange(20, dtype=np.float32).reshape(4, 5), dtype=float)
    cols.grad = wp.array(np.arange(24, dtype=np.float32).reshape(6, 4) * 0.5, dtype=float)
    row_of.grad = wp.array(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32), dtype=float)
    tape.backward()
    return {"rows": rows.numpy(), "cols": cols.numpy(), "row_of": row_of.numpy(), "src_grad": src.grad.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_gather")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
