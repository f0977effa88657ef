"""wp.tile_empty: a tile whose contents Warp leaves undefined (np.empty's contract), zeros here.

Shapes (int or tuple, 1-d and 2-d), dtypes (default float, int, vec3), both storage hints, inside a dynamic loop;
the gradient through a tile that replaces an empty one by central differences; and the same arrays as real
Warp's for programs that write every element before reading (the only reads Warp defines)."""

import numpy as np

import _warp_reference
import kernels as wp
from autodiff import gradcheck


def test_empty_is_zeros_of_its_shape_and_dtype():
    @wp.kernel
    def fill(f: wp.array(dtype=float), i: wp.array2d(dtype=int), v: wp.array(dtype=wp.vec3)):
        wp.tile_store(f, wp.tile_empty(shape=5))
        wp.tile_store(i, wp.tile_empty(shape=(2, 3), dtype=int, storage="shared"))
        wp.tile_store(v, wp.tile_empty(shape=(4,), dtype=wp.vec3, storage="register"))

    f = wp.full(5, 9.0, dtype=float)
    i = wp.full((2, 3), 9, dtype=int)
    v = wp.full(4, wp.vec3(9.0, 9.0, 9.0), dtype=wp.vec3)
    wp.launch_tiled(fill, [1], [f, i, v], block_dim=1)
    assert (f.numpy() == 0.0).all() and (i.numpy() == 0).all() and (v.numpy() == 0.0).all()


@wp.kernel
def _overwrite_in_loop(iters: int, x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    for k in range(iters):
        a = wp.tile_empty(shape=4, dtype=wp.float64)
        a = wp.tile_load(x, shape=4, offset=k * 4)
        wp.tile_store(y, a * a, offset=k * 4)


def test_gradient_through_an_overwritten_empty_tile():
    def run(x):
        y = wp.zeros(8, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_overwrite_in_loop, [1], [2, x, y], block_dim=1)
        return y

    x = wp.array(np.linspace(-1.0, 2.0, 8), dtype=wp.float64, requires_grad=True)
    gradcheck(run, [x])


_PROGRAM = '''
import numpy as np


@wp.kernel
def copy(iters: int, src: wp.array(dtype=float), dst: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),
         w: wp.array(dtype=wp.vec3)):
    for k in range(iters):
        a = wp.tile_empty(shape=(8,), dtype=float)
        a = wp.tile_load(src, shape=8, offset=k * 8)
        wp.tile_store(dst, a * 2.0, offset=k * 8)
    b = wp.tile_empty(shape=4, dtype=wp.vec3, storage="shared")
    b = wp.tile_load(v, shape=4)
    wp.tile_store(w, b)


def run(wp, Tape):
    src = wp.array(np.arange(16, dtype=np.float32) - 3.5, dtype=float, requires_grad=True)
    dst = wp.zeros(16, dtype=float, requires_grad=True)
    v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3)
    w = wp.zeros(4, dtype=wp.vec3)
    tape = Tape()
    with tape:
        wp.launch_tiled(copy, dim=[1], inputs=[2, src, dst, v, w], block_dim=16)
    dst.grad = wp.array(np.linspace(0.5, 2.0, 16).astype(np.float32), dtype=float)
    tape.backward()
    return {"dst": dst.numpy(), "w": w.numpy(), "src_grad": src.grad.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_empty")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
