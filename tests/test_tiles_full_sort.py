"""wp.tile_full, wp.tile_sort, wp.tile_load_indexed and wp.block_dim().

tile_full: values (dtype from the value or given, 1-d shape as an int), the gradient w.r.t. the value by
central differences, a mismatched composite refused, and the same tiles as real Warp's. (Warp 1.19 propagates
no gradient to the value, a silent 0; here it is the sum of the tile's adjoint, checked by central differences.)
tile_sort: keys of every supported type against numpy's sort, values following their keys, 2-d tiles as their
row-major sequence, and the same permutation as real Warp's for distinct keys.
tile_load_indexed, tile_store_indexed, tile_atomic_add_indexed: gathered/scattered rows and columns against numpy
(outside the array: reads 0, writes dropped), gradients by central differences, and Warp's values."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.kernel
def _full_sum(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    t = wp.tile_full(shape=(2, 3), value=x[i] * x[i])
    u = wp.tile_full(5, wp.sin(x[i]))
    y[i] = wp.tile_sum(t * t)[0] + wp.tile_sum(u)[0]


def test_values_and_dtypes():
    @wp.kernel
    def fill(out_f: wp.array2d(dtype=float), out_i: wp.array(dtype=wp.int64), out_v: wp.array(dtype=wp.vec3)):
        wp.tile_store(out_f, wp.tile_full((2, 3), 1.25))
        wp.tile_store(out_i, wp.tile_full(4, 7, dtype=wp.int64))
        wp.tile_store(out_v, wp.tile_full(3, wp.vec3(1.0, 2.0, 3.0)))

    f, i, v = wp.zeros((2, 3), dtype=float), wp.zeros(4, dtype=wp.int64), wp.zeros(3, dtype=wp.vec3)
    wp.launch_tiled(fill, [1], [f, i, v], block_dim=1)
    assert (f.numpy() == 1.25).all() and i.numpy().tolist() == [7] * 4
    assert (v.numpy() == [1.0, 2.0, 3.0]).all()


def test_gradient_matches_central_differences():
    def run(x):
        y = wp.zeros(3, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_full_sum, [3], [x, y], block_dim=1)
        return y

    x = wp.array(np.array([0.3, -1.2, 2.0]), dtype=wp.float64, requires_grad=True)
    gradcheck(run, [x])


def test_composite_of_another_type_is_refused():
    @wp.kernel
    def bad(out: wp.array(dtype=wp.vec3)):
        wp.tile_store(out, wp.tile_full(3, wp.vec2(1.0, 2.0), dtype=wp.vec3))

    with pytest.raises(wp.CompileError, match="tile_full"):
        wp.launch_tiled(bad, [1], [wp.zeros(3, dtype=wp.vec3)], block_dim=1)


@pytest.mark.parametrize("key_type", [wp.float32, wp.int32, wp.uint32, wp.int64, wp.uint64])
def test_sort_orders_keys_and_moves_values(key_type):
    @wp.kernel
    def sort(k: wp.array2d(dtype=key_type), v: wp.array2d(dtype=wp.vec2)):
        keys = wp.tile_load(k, shape=(8, 16))
        values = wp.tile_load(v, shape=(8, 16))
        wp.tile_sort(keys, values)
        wp.tile_store(k, keys)
        wp.tile_store(v, values)

    rng = np.random.default_rng(4)
    np_type = np.dtype(key_type._np_)
    raw = rng.permutation(1000)[:128].astype(np_type) if np_type.kind in "iu" else rng.normal(size=128).astype(np_type)
    values = np.stack([np.arange(128), -np.arange(128)], axis=1).astype(np.float32)
    k = wp.array(raw.reshape(8, 16), dtype=key_type)
    v = wp.array(values.reshape(8, 16, 2), dtype=wp.vec2)
    wp.launch_tiled(sort, [1], [k, v], block_dim=1)
    order = np.argsort(raw, kind="stable")
    np.testing.assert_array_equal(k.numpy().ravel(), raw[order])
    np.testing.assert_array_equal(v.numpy().reshape(128, 2), values[order])


@wp.kernel
def _gather(a: wp.array2d(dtype=wp.float64), rows: wp.array(dtype=int), cols: wp.array(dtype=int),
            y: wp.array2d(dtype=wp.float64)):
    r = wp.tile_load(rows, shape=3)
    c = wp.tile_load(cols, shape=2)
    by_rows = wp.tile_load_indexed(a, indices=r, shape=(3, 4), axis=0)
    by_cols = wp.tile_load_indexed(a, indices=c, shape=(3, 2), offset=(1, 0), axis=1)
    wp.tile_store(y, by_rows * by_rows, offset=(0, 0))
    wp.tile_store(y, wp.tile_map(wp.sin, by_cols), offset=(3, 0))


def _gather_run(a):
    y = wp.zeros((6, 4), dtype=wp.float64, requires_grad=True)
    rows, cols = wp.array([4, 0, -1], dtype=int), wp.array([3, 1], dtype=int)
    wp.launch_tiled(_gather, [1], [a, rows, cols, y], block_dim=1)
    return y


def test_load_indexed_gathers_and_its_gradient_matches_central_differences():
    a_np = np.random.default_rng(5).normal(size=(5, 4))
    y = _gather_run(wp.array(a_np, dtype=wp.float64)).numpy()
    np.testing.assert_allclose(y[:3], np.stack([a_np[4], a_np[0], np.zeros(4)]) ** 2)
    np.testing.assert_allclose(y[3:, :2], np.sin(a_np[1:4][:, [3, 1]]))
    gradcheck(_gather_run, [wp.array(a_np, dtype=wp.float64, requires_grad=True)])


@wp.kernel
def _scatter(x: wp.array2d(dtype=wp.float64), rows: wp.array(dtype=int), y: wp.array2d(dtype=wp.float64),
             z: wp.array2d(dtype=wp.float64)):
    r = wp.tile_load(rows, shape=3)
    t = wp.tile_load(x, shape=(3, 2))
    wp.tile_store_indexed(y, indices=r, t=wp.tile_map(wp.sin, t), axis=0)
    wp.tile_atomic_add_indexed(z, r, t * t, axis=0)
    wp.tile_atomic_add_indexed(z, r, t, axis=0)


def _scatter_run(x):
    y = wp.zeros((5, 2), dtype=wp.float64, requires_grad=True)
    z = wp.zeros((5, 2), dtype=wp.float64, requires_grad=True)
    wp.launch_tiled(_scatter, [1], [x, wp.array([3, 7, 0], dtype=int), y, z], block_dim=1)
    return y, z


def test_store_and_atomic_add_indexed_scatter_and_their_gradients_match_central_differences():
    x_np = np.random.default_rng(6).normal(size=(3, 2))
    y, z = (a.numpy() for a in _scatter_run(wp.array(x_np, dtype=wp.float64)))
    expect_y, expect_z = np.zeros((5, 2)), np.zeros((5, 2))
    expect_y[[3, 0]] = np.sin(x_np[[0, 2]])  # row 7 is outside: dropped
    expect_z[[3, 0]] = x_np[[0, 2]] ** 2 + x_np[[0, 2]]
    np.testing.assert_allclose(y, expect_y)
    np.testing.assert_allclose(z, expect_z)
    x = wp.array(x_np, dtype=wp.float64, requires_grad=True)
    gradcheck(lambda x: _scatter_run(x)[0], [x])
    gradcheck(lambda x: _scatter_run(x)[1], [x])


_PROGRAM = '''
import numpy as np


@wp.kernel
def full(x: wp.array(dtype=float), a: wp.array2d(dtype=float), b: wp.array(dtype=wp.int32), y: wp.array(dtype=float)):
    t = wp.tile_full(shape=(3, 4), value=x[0] * 0.5)
    wp.tile_store(a, t)
    wp.tile_store(b, wp.tile_full(6, 3, dtype=wp.int32))
    s = wp.tile_sum(t * t)
    wp.tile_store(y, s)


@wp.kernel
def sort(k: wp.array(dtype=float), v: wp.array(dtype=wp.int32)):
    keys = wp.tile_load(k, shape=96)
    values = wp.tile_load(v, shape=96)
    wp.tile_sort(keys, values)
    wp.tile_store(k, keys)
    wp.tile_store(v, values)


@wp.kernel
def gather(a: wp.array2d(dtype=float), idx: wp.array(dtype=wp.int32), y: wp.array2d(dtype=float)):
    i = wp.tile_load(idx, shape=4)
    wp.tile_store(y, wp.tile_load_indexed(a, indices=i, shape=(4, 3), axis=0))


@wp.kernel
def scatter(x: wp.array2d(dtype=float), idx: wp.array(dtype=wp.int32), y: wp.array2d(dtype=float),
            z: wp.array2d(dtype=float)):
    i = wp.tile_load(idx, shape=3)
    t = wp.tile_load(x, shape=(2, 3))
    wp.tile_store_indexed(y, indices=i, t=t, axis=1)
    wp.tile_atomic_add_indexed(z, i, t, axis=1)
    wp.tile_atomic_add_indexed(z, i, t, axis=1)


def run(wp, Tape):
    x = wp.array([1.3], dtype=float, requires_grad=True)
    a = wp.zeros((3, 4), dtype=float, requires_grad=True)
    b = wp.zeros(6, dtype=wp.int32)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    wp.launch_tiled(full, dim=[1], inputs=[x, a, b, y], block_dim=1)
    keys = np.random.default_rng(8).normal(size=96).astype(np.float32)
    k = wp.array(keys, dtype=float)
    v = wp.array(np.arange(96, dtype=np.int32), dtype=wp.int32)
    wp.launch_tiled(sort, dim=[1], inputs=[k, v], block_dim=1)
    src = wp.array(np.arange(18, dtype=np.float32).reshape(6, 3), dtype=float)
    g = wp.zeros((4, 3), dtype=float)
    wp.launch_tiled(gather, dim=[1], inputs=[src, wp.array([5, -1, 2, 9], dtype=wp.int32), g], block_dim=1)
    sy, sz = wp.zeros((2, 4), dtype=float), wp.zeros((2, 4), dtype=float)
    wp.launch_tiled(scatter, dim=[1], inputs=[wp.array(np.arange(6, dtype=np.float32).reshape(2, 3) + 1.0, dtype=float),
                                              wp.array([3, -2, 1], dtype=wp.int32), sy, sz], block_dim=1)
    return {"a": a.numpy(), "b": b.numpy(), "y": y.numpy(), "sorted_keys": k.numpy(), "sorted_values": v.numpy(),
            "gathered": g.numpy(), "scattered": sy.numpy(), "added": sz.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_full")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_block_dim_in_a_tile_kernel_under_cpu_blocks_is_refused():
    @wp.kernel
    def size(out: wp.array(dtype=int)):
        i = wp.tid()
        t = wp.tile_full(shape=2, value=wp.block_dim(), dtype=int)
        out[i] = t[0]

    out = wp.zeros(3, dtype=int)
    wp.launch_tiled(size, [3], [out], block_dim=64)
    assert out.numpy().tolist() == [1, 1, 1]  # CPU blocks off: a block of one lane, as in Warp
    previous = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = True
    try:
        # Warp's cooperative block would read 64; a block of a tile kernel runs as one lane here
        with pytest.raises(wp.LaunchError, match="block's size"):
            wp.launch_tiled(size, [3], [out], block_dim=64)
    finally:
        wp.config.enable_cpu_blocks = previous
