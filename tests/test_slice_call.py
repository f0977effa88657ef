"""`slice(...)` called inside kernels (Python's forms: slice(stop), slice(start, stop[, step]), None for a bound
left out) makes the same selection as `start:stop:step`: in tile_view offsets (Warp 1.19) and tile subscripts.
Values against numpy, the gradient through a sliced view by central differences, Warp's refusal of a shape
together with a slice offset, and the same arrays as real Warp's."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.kernel
def _views(src: wp.array(dtype=float), a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float),
           d: wp.array2d(dtype=float)):
    t = wp.tile_load(src, shape=(16,))
    wp.tile_store(a, wp.tile_view(t, offset=(slice(0, -1, 1),)))
    wp.tile_store(b, wp.tile_view(t, offset=(slice(-3, None),)))
    wp.tile_store(c, t[slice(None, None, -4)])
    m = wp.tile_reshape(t, shape=(4, 4))
    wp.tile_store(d, m[slice(1, 3), slice(4)])


def test_values_match_python_slices():
    x = np.arange(16, dtype=np.float32)
    a, b, c = wp.zeros(15, dtype=float), wp.zeros(3, dtype=float), wp.zeros(4, dtype=float)
    d = wp.zeros((2, 4), dtype=float)
    wp.launch_tiled(_views, [1], [wp.array(x), a, b, c, d], block_dim=1)
    np.testing.assert_array_equal(a.numpy(), x[slice(0, -1, 1)])
    np.testing.assert_array_equal(b.numpy(), x[slice(-3, None)])
    np.testing.assert_array_equal(c.numpy(), x[slice(None, None, -4)])
    np.testing.assert_array_equal(d.numpy(), x.reshape(4, 4)[slice(1, 3), slice(4)])


@wp.kernel
def _square_view(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    t = wp.tile_load(x, shape=(6,))
    v = wp.tile_view(t, offset=(slice(1, 6, 2),))
    wp.tile_store(y, v * v)


def test_gradient_through_a_sliced_view():
    def run(x):
        y = wp.zeros(3, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_square_view, [1], [x, y], block_dim=1)
        return y

    gradcheck(run, [wp.array(np.linspace(-1.0, 2.0, 6), dtype=wp.float64, requires_grad=True)])


def test_shape_with_a_slice_offset_is_refused():
    @wp.kernel
    def both(out: wp.array2d(dtype=float)):
        t = wp.tile_ones(shape=(4, 4), dtype=float)
        wp.tile_store(out, wp.tile_view(t, offset=(slice(0, 2, 1), slice(0, 3, 1)), shape=(2, 3)))

    with pytest.raises(ValueError, match="'shape' together with a slice"):
        wp.launch_tiled(both, [1], [wp.zeros((2, 3), dtype=float)], block_dim=1)


def test_slice_takes_one_to_three_positional_arguments():
    @wp.kernel
    def bad(out: wp.array(dtype=float)):
        t = wp.tile_ones(shape=(4,), dtype=float)
        wp.tile_store(out, t[slice(0, 1, 1, 1)])

    with pytest.raises(wp.CompileError, match="slice\\(\\) takes 1 to 3"):
        wp.launch_tiled(bad, [1], [wp.zeros(1, dtype=float)], block_dim=1)


_PROGRAM = '''
import numpy as np


@wp.kernel
def views(src: wp.array(dtype=float), a: wp.array(dtype=float), b: wp.array(dtype=float)):
    t = wp.tile_load(src, shape=(16,))
    wp.tile_store(a, wp.tile_view(t, offset=(slice(0, -1, 1),)) * 2.0)
    wp.tile_store(b, wp.tile_view(t, offset=(slice(-3, 16, 1),)))


def run(wp, Tape):
    src = wp.array(np.linspace(-1.0, 2.0, 16).astype(np.float32), dtype=float, requires_grad=True)
    a = wp.zeros(15, dtype=float, requires_grad=True)
    b = wp.zeros(3, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(views, dim=[1], inputs=[src, a, b], block_dim=16)
    a.grad = wp.array(np.arange(15, dtype=np.float32), dtype=float)
    b.grad = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float)
    tape.backward()
    return {"a": a.numpy(), "b": b.numpy(), "src_grad": src.grad.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "slice_call")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
