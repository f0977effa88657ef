"""Tile builtins (kernels/builtins/tile.py, kernels/native/tile.h): float32 values against numpy, float64 gradients
against finite differences (autodiff.gradcheck), for every tile operation and launch_tiled.

Every kernel is created at import time by a factory per dtype, so the whole file compiles into one native library.
On the CPU a block runs as one lane, so a lane-indexed write touches element 0 only there.
"""

import types

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

FLOAT_TYPES = {np.float32: wp.float32, np.float64: wp.float64}

TILE_1D = 4  # elements per block of the 1-d load/store kernels
TILE_ROWS, TILE_COLS = 2, 3  # tile of the 2-d load/store kernels
ELEMENTS = 8  # length of the element access tiles
MAP_SHAPE = (3, 4)
REDUCE_COUNT = 6


def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return wp.kernel(pyfunc)


# ------------------------------------------------------------------------------------------------------------
# Element functions for tile_map / tile_reduce: generic, so one @wp.func serves float32 and float64.


@wp.func
def square_plus_sin(x: wp.Any):
    return x * x + wp.sin(x)


@wp.func
def blend(a: wp.Any, b: wp.Any):
    return a * wp.cos(b) + b


@wp.func
def product(a: wp.Any, b: wp.Any):
    return a * b


# ------------------------------------------------------------------------------------------------------------
# Kernels shared by every dtype (integer results, no gradient)


@wp.kernel
def block_and_lane(block_of: wp.array(dtype=int), lane_max: wp.array(dtype=int)):
    i, lane = wp.tid()
    wp.atomic_max(lane_max, i, lane)
    if lane == 0:
        block_of[i] = i * 10


@wp.kernel
def integer_tiles(ar: wp.array(dtype=int), ar2: wp.array(dtype=int), arg: wp.array(dtype=int),
                  values: wp.array(dtype=float)):
    wp.tile_store(ar, wp.tile_arange(5, dtype=int))
    wp.tile_store(ar2, wp.tile_arange(2, 11, 3, dtype=int) * 2)
    t = wp.tile_load(values, shape=REDUCE_COUNT)
    wp.tile_store(arg, wp.tile_argmin(t), offset=0)
    wp.tile_store(arg, wp.tile_argmax(t), offset=1)


@wp.kernel
def constructors(z: wp.array(dtype=float), o: wp.array2d(dtype=float), r: wp.array(dtype=float),
                 d: wp.array(dtype=wp.float64)):
    wp.tile_store(z, wp.tile_zeros(shape=ELEMENTS, dtype=float) + wp.tile_ones(shape=(ELEMENTS,), dtype=float))
    wp.tile_store(z, wp.tile_zeros(shape=(2,), dtype=float), offset=1)
    wp.tile_store(o, wp.tile_ones(shape=(2, 3), dtype=float) * 4.0)
    wp.tile_store(r, wp.tile_arange(1.0, 3.0, 0.5, dtype=float))
    wp.tile_store(d, wp.tile_arange(3, dtype=wp.float64))


# ------------------------------------------------------------------------------------------------------------
# Kernels per float dtype


def _memory_kernels(dtype, tag):
    def load_store_1d(x: wp.array(dtype=dtype), y_long: wp.array(dtype=dtype), y_short: wp.array(dtype=dtype)):
        i = wp.tid()
        t = wp.tile_load(x, shape=TILE_1D, offset=i * TILE_1D)
        wp.tile_store(y_long, t * t, offset=i * TILE_1D)
        wp.tile_store(y_short, t, offset=(i * TILE_1D,))

    def load_store_2d(a: wp.array2d(dtype=dtype), padded: wp.array2d(dtype=dtype), cut: wp.array2d(dtype=dtype)):
        i, j = wp.tid()
        t = wp.tile_load(a, shape=(TILE_ROWS, TILE_COLS), offset=(i * TILE_ROWS, j * TILE_COLS))
        wp.tile_store(padded, t * t, offset=(i * TILE_ROWS, j * TILE_COLS))
        wp.tile_store(cut, t, offset=(i * TILE_ROWS, j * TILE_COLS))

    def atomic_add(a: wp.array2d(dtype=dtype), x: wp.array(dtype=dtype), acc: wp.array2d(dtype=dtype),
                   acc_1d: wp.array(dtype=dtype)):
        # every block adds its tile of a into the same tile of acc, and x's first 4 elements into acc_1d from
        # index 3, the last two past its end
        i, j = wp.tid()
        t = wp.tile_load(a, shape=(TILE_ROWS, TILE_COLS), offset=(i * TILE_ROWS, j * TILE_COLS))
        wp.tile_atomic_add(acc, t * t)
        wp.tile_atomic_add(acc_1d, wp.tile_load(x, shape=TILE_1D), offset=3)

    def atomic_add_old(a: wp.array2d(dtype=dtype), acc: wp.array2d(dtype=dtype), old: wp.array2d(dtype=dtype)):
        t = wp.tile_load(a, shape=(TILE_ROWS, TILE_COLS))
        previous = wp.tile_atomic_add(acc, t, offset=(1, 2))
        wp.tile_store(old, previous)

    return {f.__name__: _named(f, f"{f.__name__}_{tag}")
            for f in (load_store_1d, load_store_2d, atomic_add, atomic_add_old)}


def _element_kernels(dtype, tag):
    def elements(x: wp.array(dtype=dtype), m: wp.array2d(dtype=dtype), y: wp.array(dtype=dtype),
                 ym: wp.array2d(dtype=dtype), s: wp.array(dtype=dtype)):
        t = wp.tile_load(x, shape=ELEMENTS)
        a = wp.tile_zeros(shape=(ELEMENTS,), dtype=dtype)
        for j in range(ELEMENTS):
            a[j] = x[j] * x[j]
        for j in range(ELEMENTS):
            a[j] += t[j]
        wp.tile_store(y, a)
        tm = wp.tile_load(m, shape=(2, 3))
        b = wp.tile_ones(shape=(2, 3), dtype=dtype)
        for i in range(2):
            for j in range(3):
                b[i, j] = tm[i, j] * dtype(3.0)
        b[1, 2] += tm[0, 0]
        wp.tile_store(ym, b)
        s[0] = t[3] + tm[1, 2]

    def assign_lane(x: wp.array(dtype=dtype), y: wp.array(dtype=dtype)):
        # the case: each lane writes its element of a zero tile (Warp once lost this gradient); added
        # into y rather than stored, as in Warp's test, so that it checks the assignment alone
        i, j = wp.tid()
        a = wp.tile_zeros(shape=(ELEMENTS,), dtype=dtype)
        a[j] = x[j]
        wp.tile_atomic_add(y, a)

    def tile_roundtrip(x: wp.array(dtype=dtype), y: wp.array(dtype=dtype)):
        i, lane = wp.tid()
        t = wp.tile(x[i])
        u = wp.tile_map(wp.sin, t) * dtype(2.0)
        y[i] = wp.untile(u) + wp.tile_sum(t)[0]

    return {f.__name__: _named(f, f"{f.__name__}_{tag}") for f in (elements, assign_lane, tile_roundtrip)}


def _compute_kernels(dtype, tag):
    def maps(a: wp.array2d(dtype=dtype), b: wp.array2d(dtype=dtype), sin_a: wp.array2d(dtype=dtype),
             atan2_ab: wp.array2d(dtype=dtype), func_a: wp.array2d(dtype=dtype), func_ab: wp.array2d(dtype=dtype)):
        ta = wp.tile_load(a, shape=MAP_SHAPE)
        tb = wp.tile_load(b, shape=MAP_SHAPE)
        wp.tile_store(sin_a, wp.tile_map(wp.sin, ta))
        wp.tile_store(atan2_ab, wp.tile_map(wp.atan2, ta, tb))
        wp.tile_store(func_a, wp.tile_map(square_plus_sin, ta))
        wp.tile_store(func_ab, wp.tile_map(blend, ta, tb))

    def reductions(x: wp.array(dtype=dtype), m: wp.array2d(dtype=dtype), out: wp.array(dtype=dtype)):
        t = wp.tile_load(x, shape=REDUCE_COUNT)
        wp.tile_store(out, wp.tile_reduce(wp.add, t), offset=0)
        wp.tile_store(out, wp.tile_reduce(wp.max, t), offset=1)
        out[2] = wp.tile_reduce(wp.min, t)[0]
        out[3] = wp.tile_reduce(product, t)[0]
        out[4] = wp.tile_sum(t)[0]
        out[5] = wp.tile_min(t)[0]
        out[6] = wp.tile_max(t)[0]
        out[7] = wp.tile_sum(wp.tile_load(m, shape=MAP_SHAPE))[0]

    def arithmetic(a: wp.array(dtype=dtype), b: wp.array(dtype=dtype), s: wp.array(dtype=dtype),
                   out: wp.array(dtype=dtype)):
        # one result per block of ELEMENTS in out, in the order of ARITHMETIC
        ta = wp.tile_load(a, shape=ELEMENTS)
        tb = wp.tile_load(b, shape=ELEMENTS)
        k = s[0]
        wp.tile_store(out, ta + tb, offset=0 * ELEMENTS)
        wp.tile_store(out, ta - tb, offset=1 * ELEMENTS)
        wp.tile_store(out, ta * tb, offset=2 * ELEMENTS)
        wp.tile_store(out, ta / tb, offset=3 * ELEMENTS)
        wp.tile_store(out, ta * k, offset=4 * ELEMENTS)
        wp.tile_store(out, k * tb, offset=5 * ELEMENTS)
        wp.tile_store(out, ta / k, offset=6 * ELEMENTS)
        wp.tile_store(out, -ta, offset=7 * ELEMENTS)
        wp.tile_store(out, +tb, offset=8 * ELEMENTS)
        wp.tile_store(out, (ta - tb * k) * dtype(0.5) / (tb * tb), offset=9 * ELEMENTS)

    def shapes(a: wp.array2d(dtype=dtype), row: wp.array2d(dtype=dtype), col: wp.array2d(dtype=dtype),
               transposed: wp.array2d(dtype=dtype), from_row: wp.array2d(dtype=dtype),
               from_col: wp.array2d(dtype=dtype), inner: wp.array2d(dtype=dtype), edge: wp.array2d(dtype=dtype)):
        ta = wp.tile_load(a, shape=MAP_SHAPE)
        wp.tile_store(transposed, wp.tile_transpose(ta))
        wp.tile_store(from_row, wp.tile_broadcast(wp.tile_load(row, shape=(1, 4)), shape=MAP_SHAPE))
        wp.tile_store(from_col, wp.tile_broadcast(wp.tile_load(col, shape=(3, 1)), shape=MAP_SHAPE))
        wp.tile_store(inner, wp.tile_view(ta, offset=(1, 1), shape=(2, 2)))
        wp.tile_store(edge, wp.tile_view(ta, offset=(2, 2), shape=(2, 3)))

    def broadcast_one(a: wp.array2d(dtype=dtype), out: wp.array2d(dtype=dtype)):
        # a reduction's 1-element tile spread over a 2-d shape
        ta = wp.tile_load(a, shape=MAP_SHAPE)
        wp.tile_store(out, ta * wp.tile_broadcast(wp.tile_sum(ta), shape=MAP_SHAPE))

    def broadcast_1d(v: wp.array(dtype=dtype), out: wp.array2d(dtype=dtype)):
        # numpy's rule: a (4,) tile broadcasts along new leading rows to (3, 4)
        wp.tile_store(out, wp.tile_broadcast(wp.tile_load(v, shape=4), shape=MAP_SHAPE))

    return {f.__name__: _named(f, f"{f.__name__}_{tag}")
            for f in (maps, reductions, arithmetic, shapes, broadcast_one, broadcast_1d)}


def _matmul_kernels(dtype, tag, tile_m, tile_k, tile_n):
    def matmul_loop(a: wp.array2d(dtype=dtype), b: wp.array2d(dtype=dtype), c: wp.array2d(dtype=dtype)):
        # c = a @ b over a grid of (tile_m, tile_n) blocks, accumulating over K in tiles of tile_k
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(tile_m, tile_n), dtype=dtype)
        count = (a.shape[1] + tile_k - 1) // tile_k
        for k in range(count):
            ta = wp.tile_load(a, shape=(tile_m, tile_k), offset=(i * tile_m, k * tile_k))
            tb = wp.tile_load(b, shape=(tile_k, tile_n), offset=(k * tile_k, j * tile_n))
            wp.tile_matmul(ta, tb, acc)
        wp.tile_store(c, acc, offset=(i * tile_m, j * tile_n))

    def matmul_single(a: wp.array2d(dtype=dtype), b: wp.array2d(dtype=dtype), bias: wp.array2d(dtype=dtype),
                      c: wp.array2d(dtype=dtype), d: wp.array2d(dtype=dtype)):
        # K fits one tile: c = a @ b (returning form), d = bias + a @ b (accumulating form)
        i, j = wp.tid()
        ta = wp.tile_load(a, shape=(tile_m, tile_k), offset=(i * tile_m, 0))
        tb = wp.tile_load(b, shape=(tile_k, tile_n), offset=(0, j * tile_n))
        wp.tile_store(c, wp.tile_matmul(ta, tb), offset=(i * tile_m, j * tile_n))
        out = wp.tile_load(bias, shape=(tile_m, tile_n), offset=(i * tile_m, j * tile_n))
        wp.tile_matmul(ta, tb, out)
        wp.tile_store(d, out, offset=(i * tile_m, j * tile_n))

    name = f"{tag}_{tile_m}x{tile_k}x{tile_n}"
    return {"loop": _named(matmul_loop, f"matmul_loop_{name}"),
            "single": _named(matmul_single, f"matmul_single_{name}")}


MATMUL_TILES = ((8, 16, 4), (4, 3, 5))
KERNELS = {}
MATMUL = {}
for _np_type, _wp_type in FLOAT_TYPES.items():
    _tag = _wp_type.__name__
    KERNELS[_np_type] = types.SimpleNamespace(**_memory_kernels(_wp_type, _tag), **_element_kernels(_wp_type, _tag),
                                              **_compute_kernels(_wp_type, _tag))
    for _tile in MATMUL_TILES:
        MATMUL[_np_type, _tile] = _matmul_kernels(_wp_type, _tag, *_tile)


# ------------------------------------------------------------------------------------------------------------
# Helpers


def _rng(seed=0):
    return np.random.default_rng(seed)


def _array(values, np_type, device):
    return wp.array(np.asarray(values, dtype=np_type), dtype=FLOAT_TYPES[np_type], device=device)


def _zeros(shape, np_type, device):
    return wp.zeros(shape, dtype=FLOAT_TYPES[np_type], device=device, requires_grad=True)


def _close(actual, expected):
    """float32 results against numpy."""
    np.testing.assert_allclose(actual.numpy(), expected, rtol=2e-5, atol=2e-5)


def _blocks(size, tile):
    return (size + tile - 1) // tile


# ------------------------------------------------------------------------------------------------------------
# launch_tiled and construction


@pytest.mark.cuda_gap("cooperative tiles: on CUDA a block runs as one lane, so lane-dependent kernels are refused")
def test_launch_tiled_gives_block_index_and_lane(device):
    block_of = wp.zeros(5, dtype=int, device=device)
    lane_max = wp.full(5, -1, dtype=int, device=device)
    wp.launch_tiled(block_and_lane, dim=[5], inputs=[block_of, lane_max], block_dim=16, device=device)
    np.testing.assert_array_equal(block_of.numpy(), [0, 10, 20, 30, 40])
    lanes = lane_max.numpy()
    assert (lanes >= 0).all() and (lanes < 16).all()
    if device == "cpu":
        np.testing.assert_array_equal(lanes, 0)  # one lane per block on the CPU
    else:
        np.testing.assert_array_equal(lanes, 15)


def test_launch_tiled_refuses_empty_block(device):
    with pytest.raises(wp.LaunchError, match="block_dim"):
        wp.launch_tiled(block_and_lane, dim=[1], inputs=[wp.zeros(1, dtype=int, device=device),
                                                         wp.zeros(1, dtype=int, device=device)],
                        block_dim=0, device=device)


def test_zeros_ones_arange(device):
    z = wp.full(ELEMENTS, 7.0, dtype=float, device=device)
    o = wp.zeros((2, 3), dtype=float, device=device)
    r = wp.zeros(4, dtype=float, device=device)
    d = wp.zeros(3, dtype=wp.float64, device=device)
    wp.launch_tiled(constructors, dim=1, inputs=[z, o, r, d], block_dim=8, device=device)
    np.testing.assert_array_equal(z.numpy(), [1, 0, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(o.numpy(), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(r.numpy(), np.arange(1.0, 3.0, 0.5))
    np.testing.assert_array_equal(d.numpy(), np.arange(3.0))
    assert d.numpy().dtype == np.float64


def test_integer_arange_and_argmin_argmax(device):
    ar = wp.zeros(5, dtype=int, device=device)
    ar2 = wp.zeros(3, dtype=int, device=device)
    arg = wp.full(2, -1, dtype=int, device=device)
    values = np.array([0.5, -1.0, 3.0, 2.0, -4.0, 3.5], np.float32)
    wp.launch_tiled(integer_tiles, dim=1, inputs=[ar, ar2, arg, wp.array(values, device=device)], block_dim=8,
                    device=device)
    np.testing.assert_array_equal(ar.numpy(), np.arange(5))
    np.testing.assert_array_equal(ar2.numpy(), np.arange(2, 11, 3) * 2)
    np.testing.assert_array_equal(arg.numpy(), [np.argmin(values), np.argmax(values)])


def test_tile_and_untile(device):
    k = KERNELS[np.float32].tile_roundtrip
    x_np = _rng().uniform(-2, 2, 6).astype(np.float32)
    x, y = _array(x_np, np.float32, device), _zeros(6, np.float32, device)
    wp.launch_tiled(k, dim=[6], inputs=[x, y], block_dim=1, device=device)
    _close(y, 2 * np.sin(x_np) + x_np)


def test_tile_and_untile_gradient(device):
    k = KERNELS[np.float64].tile_roundtrip

    def run(x):
        y = _zeros(4, np.float64, device)
        wp.launch_tiled(k, dim=[4], inputs=[x, y], block_dim=1, device=device)
        return y

    gradcheck(run, [_array(_rng().uniform(-2, 2, 4), np.float64, device)])


# ------------------------------------------------------------------------------------------------------------
# Memory: load, store, atomic add, with offsets and array edges


def _run_load_store_1d(x, np_type, device):
    y_long, y_short = _zeros(12, np_type, device), _zeros(9, np_type, device)
    wp.launch_tiled(KERNELS[np_type].load_store_1d, dim=_blocks(10, TILE_1D), inputs=[x, y_long, y_short],
                    block_dim=8, device=device)
    return y_long, y_short


def test_load_store_1d_past_the_edge(device):
    x_np = _rng().uniform(-2, 2, 10).astype(np.float32)
    y_long, y_short = _run_load_store_1d(_array(x_np, np.float32, device), np.float32, device)
    _close(y_long, np.concatenate([x_np * x_np, [0, 0]]))  # loads past x's end read zeros
    _close(y_short, x_np[:9])  # stores past y_short's end are skipped


def test_load_store_1d_gradient(device):
    x = _array(_rng().uniform(-2, 2, 10), np.float64, device)
    gradcheck(lambda x: _run_load_store_1d(x, np.float64, device), [x])


def _run_load_store_2d(a, np_type, device):
    rows, cols = a.shape
    grid = [_blocks(rows, TILE_ROWS), _blocks(cols, TILE_COLS)]
    padded = _zeros((grid[0] * TILE_ROWS, grid[1] * TILE_COLS), np_type, device)
    cut = _zeros((rows - 1, cols - 2), np_type, device)
    wp.launch_tiled(KERNELS[np_type].load_store_2d, dim=grid, inputs=[a, padded, cut], block_dim=8, device=device)
    return padded, cut


def test_load_store_2d_past_the_edge(device):
    a_np = _rng().uniform(-2, 2, (5, 7)).astype(np.float32)
    padded, cut = _run_load_store_2d(_array(a_np, np.float32, device), np.float32, device)
    expected = np.zeros((6, 9), np.float32)
    expected[:5, :7] = a_np * a_np
    _close(padded, expected)
    _close(cut, a_np[:4, :5])


def test_load_store_2d_gradient(device):
    a = _array(_rng().uniform(-2, 2, (5, 7)), np.float64, device)
    gradcheck(lambda a: _run_load_store_2d(a, np.float64, device), [a])


def _run_atomic_add(a, x, np_type, device):
    acc, acc_1d = _zeros((TILE_ROWS, TILE_COLS), np_type, device), _zeros(5, np_type, device)
    grid = [_blocks(a.shape[0], TILE_ROWS), _blocks(a.shape[1], TILE_COLS)]
    wp.launch_tiled(KERNELS[np_type].atomic_add, dim=grid, inputs=[a, x, acc, acc_1d], block_dim=8, device=device)
    return acc, acc_1d


def test_atomic_add_from_every_block(device):
    a_np = _rng().uniform(-2, 2, (5, 7)).astype(np.float32)
    x_np = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    acc, acc_1d = _run_atomic_add(_array(a_np, np.float32, device), _array(x_np, np.float32, device), np.float32,
                                  device)
    padded = np.zeros((6, 9), np.float32)
    padded[:5, :7] = a_np * a_np
    expected = padded.reshape(3, TILE_ROWS, 3, TILE_COLS).sum(axis=(0, 2))
    np.testing.assert_allclose(acc.numpy(), expected, rtol=1e-5)
    blocks = 3 * 3
    np.testing.assert_allclose(acc_1d.numpy(), [0, 0, 0, blocks * 1.0, blocks * 2.0])  # 3, 4 land past the end


def test_atomic_add_gradient(device):
    a = _array(_rng().uniform(-2, 2, (3, 4)), np.float64, device)
    x = _array(_rng(1).uniform(-2, 2, 5), np.float64, device)
    gradcheck(lambda a, x: _run_atomic_add(a, x, np.float64, device), [a, x])


def test_atomic_add_returns_old_values_and_skips_the_edge(device):
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    acc_np = np.full((3, 4), 10.0, np.float32)
    acc, old = _array(acc_np, np.float32, device), _zeros((2, 3), np.float32, device)
    wp.launch_tiled(KERNELS[np.float32].atomic_add_old, dim=1, inputs=[_array(a_np, np.float32, device), acc, old],
                    block_dim=8, device=device)
    expected = acc_np.copy()
    expected[1:, 2:] += a_np[:, :2]  # the tile's last column falls past acc's edge
    _close(acc, expected)
    _close(old, [[10, 10, 0], [10, 10, 0]])  # elements not added read as zero


# ------------------------------------------------------------------------------------------------------------
# Element access: t[i], t[i, j], t[i] = v, t[i] += v


def _run_elements(x, m, np_type, device):
    y, ym, s = _zeros(ELEMENTS, np_type, device), _zeros((2, 3), np_type, device), _zeros(1, np_type, device)
    wp.launch_tiled(KERNELS[np_type].elements, dim=1, inputs=[x, m, y, ym, s], block_dim=8, device=device)
    return y, ym, s


def test_element_read_assign_and_add(device):
    x_np = _rng().uniform(-2, 2, ELEMENTS).astype(np.float32)
    m_np = _rng(1).uniform(-2, 2, (2, 3)).astype(np.float32)
    y, ym, s = _run_elements(_array(x_np, np.float32, device), _array(m_np, np.float32, device), np.float32, device)
    _close(y, x_np * x_np + x_np)
    expected = 3 * m_np
    expected[1, 2] += m_np[0, 0]
    _close(ym, expected)
    _close(s, [x_np[3] + m_np[1, 2]])


def test_element_read_assign_and_add_gradient(device):
    x = _array(_rng().uniform(-2, 2, ELEMENTS), np.float64, device)
    m = _array(_rng(1).uniform(-2, 2, (2, 3)), np.float64, device)
    gradcheck(lambda x, m: _run_elements(x, m, np.float64, device), [x, m])


def _run_assign_lane(x, np_type, device):
    y = _zeros(ELEMENTS, np_type, device)
    wp.launch_tiled(KERNELS[np_type].assign_lane, dim=[1], inputs=[x, y], block_dim=ELEMENTS, device=device)
    return y


@pytest.mark.cuda_gap("cooperative tiles: on CUDA a block runs as one lane, so lane-dependent kernels are refused")
def test_assign_by_lane(device):
    x_np = _rng().uniform(-2, 2, ELEMENTS).astype(np.float32)
    y = _run_assign_lane(_array(x_np, np.float32, device), np.float32, device)
    lanes = 1 if device == "cpu" else ELEMENTS  # one lane per block on the CPU
    _close(y, np.where(np.arange(ELEMENTS) < lanes, x_np, 0))


@pytest.mark.cuda_gap("cooperative tiles: on CUDA a block runs as one lane, so lane-dependent kernels are refused")
def test_assign_by_lane_gradient(device):
    """The issue's case: `a = wp.tile_zeros(shape=(8,), dtype=float); a[j] = x[j]` keeps x's gradient."""
    x = _array(_rng().uniform(-2, 2, ELEMENTS), np.float64, device)
    gradcheck(lambda x: _run_assign_lane(x, np.float64, device), [x])
    x.grad.zero_()
    tape = Tape()
    with tape:
        y = _run_assign_lane(x, np.float64, device)
    tape.backward(grads={y: np.ones(ELEMENTS)})
    assert x.grad.numpy()[0] == 1.0  # lane 0's element, whatever the device


# ------------------------------------------------------------------------------------------------------------
# tile_map and tile_reduce, with builtins and @wp.func


def _run_maps(a, b, np_type, device):
    outs = [_zeros(MAP_SHAPE, np_type, device) for _ in range(4)]
    wp.launch_tiled(KERNELS[np_type].maps, dim=1, inputs=[a, b, *outs], block_dim=8, device=device)
    return outs


def test_tile_map(device):
    a_np = _rng().uniform(-2, 2, MAP_SHAPE).astype(np.float32)
    b_np = _rng(1).uniform(-2, 2, MAP_SHAPE).astype(np.float32)
    sin_a, atan2_ab, func_a, func_ab = _run_maps(_array(a_np, np.float32, device), _array(b_np, np.float32, device),
                                                 np.float32, device)
    _close(sin_a, np.sin(a_np))
    _close(atan2_ab, np.arctan2(a_np, b_np))
    _close(func_a, a_np * a_np + np.sin(a_np))
    _close(func_ab, a_np * np.cos(b_np) + b_np)


def test_tile_map_gradient(device):
    a = _array(_rng().uniform(-2, 2, MAP_SHAPE), np.float64, device)
    b = _array(_rng(1).uniform(-2, 2, MAP_SHAPE), np.float64, device)
    gradcheck(lambda a, b: _run_maps(a, b, np.float64, device), [a, b])


REDUCE_VALUES = [0.7, -1.3, 2.1, 1.6, -0.4, 1.2]  # distinct, so min and max have one argument each


def _run_reductions(x, m, np_type, device):
    out = _zeros(8, np_type, device)
    wp.launch_tiled(KERNELS[np_type].reductions, dim=1, inputs=[x, m, out], block_dim=8, device=device)
    return out


def test_reductions(device):
    x_np = np.array(REDUCE_VALUES, np.float32)
    m_np = _rng().uniform(-2, 2, MAP_SHAPE).astype(np.float32)
    out = _run_reductions(_array(x_np, np.float32, device), _array(m_np, np.float32, device), np.float32, device)
    expected = [x_np.sum(), x_np.max(), x_np.min(), np.prod(x_np), x_np.sum(), x_np.min(), x_np.max(), m_np.sum()]
    _close(out, expected)


def test_reductions_gradient(device):
    x = _array(REDUCE_VALUES, np.float64, device)
    m = _array(_rng().uniform(-2, 2, MAP_SHAPE), np.float64, device)
    gradcheck(lambda x, m: _run_reductions(x, m, np.float64, device), [x, m])


# ------------------------------------------------------------------------------------------------------------
# Arithmetic operators


ARITHMETIC = (
    lambda a, b, k: a + b,
    lambda a, b, k: a - b,
    lambda a, b, k: a * b,
    lambda a, b, k: a / b,
    lambda a, b, k: a * k,
    lambda a, b, k: k * b,
    lambda a, b, k: a / k,
    lambda a, b, k: -a,
    lambda a, b, k: +b,
    lambda a, b, k: (a - b * k) * 0.5 / (b * b),
)


def _run_arithmetic(a, b, s, np_type, device):
    out = _zeros(len(ARITHMETIC) * ELEMENTS, np_type, device)
    wp.launch_tiled(KERNELS[np_type].arithmetic, dim=1, inputs=[a, b, s, out], block_dim=8, device=device)
    return out


def test_arithmetic(device):
    a_np = _rng().uniform(-2, 2, ELEMENTS).astype(np.float32)
    b_np = _rng(1).uniform(0.5, 2, ELEMENTS).astype(np.float32)
    k = np.float32(1.5)
    out = _run_arithmetic(_array(a_np, np.float32, device), _array(b_np, np.float32, device),
                          _array([k], np.float32, device), np.float32, device)
    expected = np.concatenate([op(a_np, b_np, k) for op in ARITHMETIC])
    _close(out, expected)


def test_arithmetic_gradient(device):
    a = _array(_rng().uniform(-2, 2, ELEMENTS), np.float64, device)
    b = _array(_rng(1).uniform(0.5, 2, ELEMENTS), np.float64, device)
    s = _array([1.5], np.float64, device)
    gradcheck(lambda a, b, s: _run_arithmetic(a, b, s, np_type=np.float64, device=device), [a, b, s])


# ------------------------------------------------------------------------------------------------------------
# Shape: transpose, broadcast, view


def _run_shapes(a, row, col, np_type, device):
    outs = [_zeros(shape, np_type, device) for shape in ((4, 3), MAP_SHAPE, MAP_SHAPE, (2, 2), (2, 3))]
    wp.launch_tiled(KERNELS[np_type].shapes, dim=1, inputs=[a, row, col, *outs], block_dim=8, device=device)
    return outs


def test_transpose_broadcast_view(device):
    a_np = _rng().uniform(-2, 2, MAP_SHAPE).astype(np.float32)
    row_np = _rng(1).uniform(-2, 2, (1, 4)).astype(np.float32)
    col_np = _rng(2).uniform(-2, 2, (3, 1)).astype(np.float32)
    transposed, from_row, from_col, inner, edge = _run_shapes(
        *(_array(v, np.float32, device) for v in (a_np, row_np, col_np)), np.float32, device)
    _close(transposed, a_np.T)
    _close(from_row, np.broadcast_to(row_np, MAP_SHAPE))
    _close(from_col, np.broadcast_to(col_np, MAP_SHAPE))
    _close(inner, a_np[1:3, 1:3])
    expected_edge = np.zeros((2, 3), np.float32)
    expected_edge[:1, :2] = a_np[2:, 2:]  # outside the source tile reads as zero
    _close(edge, expected_edge)


def test_transpose_broadcast_view_gradient(device):
    inputs = [_array(_rng(seed).uniform(-2, 2, shape), np.float64, device)
              for seed, shape in enumerate((MAP_SHAPE, (1, 4), (3, 1)))]
    gradcheck(lambda a, row, col: _run_shapes(a, row, col, np.float64, device), inputs)


def _run_broadcast_one(a, np_type, device):
    out = _zeros(MAP_SHAPE, np_type, device)
    wp.launch_tiled(KERNELS[np_type].broadcast_one, dim=1, inputs=[a, out], block_dim=8, device=device)
    return out


def test_broadcast_of_one_element_tile(device):
    a_np = _rng().uniform(-2, 2, MAP_SHAPE).astype(np.float32)
    _close(_run_broadcast_one(_array(a_np, np.float32, device), np.float32, device), a_np * a_np.sum())


def test_broadcast_of_one_element_tile_gradient(device):
    a = _array(_rng().uniform(-2, 2, MAP_SHAPE), np.float64, device)
    gradcheck(lambda a: _run_broadcast_one(a, np.float64, device), [a])


def _run_broadcast_1d(v, np_type, device):
    out = _zeros(MAP_SHAPE, np_type, device)
    wp.launch_tiled(KERNELS[np_type].broadcast_1d, dim=1, inputs=[v, out], block_dim=8, device=device)
    return out


def test_broadcast_1d_follows_numpy(device):
    v_np = _rng().uniform(-2, 2, 4).astype(np.float32)
    _close(_run_broadcast_1d(_array(v_np, np.float32, device), np.float32, device), np.broadcast_to(v_np, MAP_SHAPE))


def test_broadcast_1d_gradient(device):
    v = _array(_rng().uniform(-2, 2, 4), np.float64, device)
    gradcheck(lambda v: _run_broadcast_1d(v, np.float64, device), [v])


# ------------------------------------------------------------------------------------------------------------
# Matrix product: tiles that divide the matrices, tiles that do not (loads past the edges read zeros, stores
# past them are skipped), a matrix smaller than one tile; returning and accumulating forms.

MATMUL_SHAPES = ((8, 6, 10), (7, 5, 11), (3, 2, 4), (1, 1, 1), (16, 32, 8), (13, 20, 9))


def _run_matmul_loop(a, b, np_type, tile, device):
    (m, _), (_, n) = a.shape, b.shape
    c = _zeros((m, n), np_type, device)
    grid = [_blocks(m, tile[0]), _blocks(n, tile[2])]
    wp.launch_tiled(MATMUL[np_type, tile]["loop"], dim=grid, inputs=[a, b, c], block_dim=64, device=device)
    return c


def _matmul_inputs(m, k, n, np_type, device, seed=0):
    a = _rng(seed).uniform(-1, 1, (m, k)).astype(np_type)
    b = _rng(seed + 1).uniform(-1, 1, (k, n)).astype(np_type)
    return a, b, _array(a, np_type, device), _array(b, np_type, device)


@pytest.mark.parametrize("tile", MATMUL_TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_accumulating_over_k(device, shape, tile):
    a_np, b_np, a, b = _matmul_inputs(*shape, np.float32, device)
    c = _run_matmul_loop(a, b, np.float32, tile, device)
    np.testing.assert_allclose(c.numpy(), a_np @ b_np, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tile", MATMUL_TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("shape", ((7, 5, 6), (4, 3, 5)), ids=lambda s: "x".join(map(str, s)))
def test_matmul_accumulating_over_k_gradient(device, shape, tile):
    _, _, a, b = _matmul_inputs(*shape, np.float64, device)
    gradcheck(lambda a, b: _run_matmul_loop(a, b, np.float64, tile, device), [a, b])


def _run_matmul_single(a, b, bias, np_type, device):
    tile = MATMUL_TILES[1]
    (m, _), (_, n) = a.shape, b.shape
    c, d = _zeros((m, n), np_type, device), _zeros((m, n), np_type, device)
    grid = [_blocks(m, tile[0]), _blocks(n, tile[2])]
    wp.launch_tiled(MATMUL[np_type, tile]["single"], dim=grid, inputs=[a, b, bias, c, d], block_dim=64,
                    device=device)
    return c, d


@pytest.mark.parametrize("shape", ((8, 3, 10), (9, 2, 7)), ids=lambda s: "x".join(map(str, s)))
def test_matmul_returning_and_out_forms(device, shape):
    a_np, b_np, a, b = _matmul_inputs(*shape, np.float32, device)
    bias_np = _rng(5).uniform(-1, 1, (shape[0], shape[2])).astype(np.float32)
    c, d = _run_matmul_single(a, b, _array(bias_np, np.float32, device), np.float32, device)
    np.testing.assert_allclose(c.numpy(), a_np @ b_np, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d.numpy(), bias_np + a_np @ b_np, rtol=1e-5, atol=1e-6)


def test_matmul_returning_and_out_forms_gradient(device):
    _, _, a, b = _matmul_inputs(5, 3, 6, np.float64, device)
    bias = _array(_rng(5).uniform(-1, 1, (5, 6)), np.float64, device)
    gradcheck(lambda a, b, bias: _run_matmul_single(a, b, bias, np.float64, device), [a, b, bias])


@wp.kernel
def _whole_tile_double(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a[i], shape=4)
    wp.tile_store(out[i], t * 2.0)


@wp.kernel
def _lane_reader(out: wp.array2d(dtype=int)):
    i, lane = wp.tid()
    t = wp.tile_ones(shape=2, dtype=int)
    out[i, lane] = lane + t[0]


@wp.kernel
def _per_thread_tile_write(out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    t = wp.tile_zeros(shape=(4,), dtype=wp.vec3)
    t[i][1] = 17.0
    wp.tile_store(out, t)


def test_cooperative_cpu_blocks_are_refused_where_one_lane_would_differ(monkeypatch):
    """wp.config.enable_cpu_blocks asks for cooperative CPU blocks, which kernels runs as one lane for a kernel
    with tiles: whole-tile work gives the same result and runs; a tile kernel that reads its lane, or a plain
    launch whose threads would share a tile, is refused (never a different result). Kernels without tiles run
    their lanes (test_cpu_blocks.py)."""
    monkeypatch.setattr(wp.config, "enable_cpu_blocks", True)
    a = wp.array(np.arange(8, dtype=np.float32).reshape(2, 4), dtype=float, device="cpu")
    out = wp.zeros((2, 4), dtype=float, device="cpu")
    wp.launch_tiled(_whole_tile_double, dim=2, inputs=[a, out], block_dim=32, device="cpu")
    np.testing.assert_array_equal(out.numpy(), 2.0 * a.numpy())
    with pytest.raises(wp.LaunchError, match="reads its lane index"):
        wp.launch_tiled(_lane_reader, dim=2, inputs=[wp.zeros((2, 32), dtype=int, device="cpu")], block_dim=32,
                        device="cpu")
    with pytest.raises(wp.LaunchError, match="uses tiles and is launched with block_dim=4"):
        wp.launch(_per_thread_tile_write, dim=4, inputs=[wp.zeros(4, dtype=wp.vec3, device="cpu")], block_dim=4,
                  device="cpu")
