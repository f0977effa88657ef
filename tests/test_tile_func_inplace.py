"""A tile changed in place inside a @wp.func (issue 34): Warp passes tiles by reference, tiles are values here.

Where the caller reads its tile after the call (it would see the change in Warp) the call is refused at compile
time with the way to write it; where it does not, the program runs, with Warp's numbers and gradients.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

N = 4


@wp.func
def add_five(t: wp.tile[float, N]):
    t += wp.tile_ones(dtype=float, shape=(N,)) * 5.0


@wp.func
def add_five_through(t: wp.tile[float, N]):
    add_five(t)  # passed on: the write reaches this function's caller too


@wp.func
def accumulate(a: wp.tile[wp.float64, N], b: wp.tile[wp.float64, N]):
    a += b * b
    return a


def _read_after(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=N)
    add_five(t)
    wp.tile_store(out, t)


def _read_after_through_a_func(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=N)
    add_five_through(t)
    wp.tile_store(out, t)


def _read_in_a_loop(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=N)
    for _ in range(2):
        add_five(t)
    wp.tile_store(out, wp.tile_ones(dtype=float, shape=N))


@pytest.mark.parametrize("body", [_read_after, _read_after_through_a_func, _read_in_a_loop])
def test_a_change_the_caller_would_see_in_warp_is_refused(body):
    kernel = wp.kernel(body)
    x, out = wp.ones(N, dtype=float), wp.zeros(N, dtype=float)
    with pytest.raises(wp.errors.CompileError,
                       match=r"changes its tile parameter 't' in place, and 't' is read after this call"):
        wp.launch_tiled(kernel, dim=[1], inputs=[x, out], block_dim=1)


@wp.kernel
def accumulate_kernel(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
                      out: wp.array(dtype=wp.float64)):
    ta = wp.tile_load(a, shape=N)
    tb = wp.tile_load(b, shape=N)
    r = accumulate(ta, tb)  # ta is not read again: the change is not observable
    wp.tile_store(out, r * tb)


def test_an_unobserved_change_runs_with_warps_values_and_gradients():
    a = wp.array(np.array([1.0, 2.0, 3.0, 4.0]), dtype=wp.float64)
    b = wp.array(np.array([0.5, -1.0, 2.0, 0.25]), dtype=wp.float64)
    out = wp.zeros(N, dtype=wp.float64)
    wp.launch_tiled(accumulate_kernel, dim=[1], inputs=[a, b, out], block_dim=1)
    an, bn = a.numpy(), b.numpy()
    np.testing.assert_allclose(out.numpy(), (an + bn * bn) * bn)

    def fn(a, b):
        out = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(accumulate_kernel, dim=[1], inputs=[a, b, out], block_dim=1)
        return out

    gradcheck(fn, [a, b])
