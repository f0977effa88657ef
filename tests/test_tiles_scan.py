"""tile_scan_inclusive / tile_scan_exclusive / tile_scan_max_inclusive / tile_scan_min_inclusive
(kernels/native/tile_scan.h): row-major prefix scans against numpy (NaN and infinities as C's fmax/fmin, int32 and
uint32 extremes), the sums' gradients by central differences (autodiff.gradcheck), the min/max scans refused on a
gradient path, and Warp's values on the same program."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck
from kernels.errors import CompileError

import _warp_reference


def _scan_kernel(dtype, shape):
    @wp.kernel
    def scans(x: wp.array2d(dtype=dtype), inc: wp.array2d(dtype=dtype), exc: wp.array2d(dtype=dtype),
              hi: wp.array2d(dtype=dtype), lo: wp.array2d(dtype=dtype)):
        t = wp.tile_load(x, shape=shape)
        wp.tile_store(inc, wp.tile_scan_inclusive(t))
        wp.tile_store(exc, wp.tile_scan_exclusive(t))
        wp.tile_store(hi, wp.tile_scan_max_inclusive(t))
        wp.tile_store(lo, wp.tile_scan_min_inclusive(t))

    return scans


SHAPE = (3, 5)
KERNELS = {dtype: _scan_kernel(dtype, SHAPE) for dtype in (wp.float32, wp.int32, wp.uint32)}


def _run(dtype, data, device):
    x = wp.array(data, dtype=dtype, device=device)
    outs = [wp.zeros(SHAPE, dtype=dtype, device=device) for _ in range(4)]
    wp.launch_tiled(KERNELS[dtype], dim=[1], inputs=[x, *outs], block_dim=32, device=device)
    return [o.numpy() for o in outs]


def test_scans_match_numpy(device):
    rng = np.random.default_rng(3)
    data = rng.normal(size=SHAPE).astype(np.float32)
    data.flat[[2, 3, 9]] = [np.nan, np.inf, np.nan]
    inc, exc, hi, lo = _run(wp.float32, data, device)
    flat = data.reshape(-1)
    np.testing.assert_array_equal(inc.reshape(-1), np.cumsum(flat, dtype=np.float32))
    np.testing.assert_array_equal(exc.reshape(-1), np.concatenate([[0.0], np.cumsum(flat, dtype=np.float32)[:-1]]))
    np.testing.assert_array_equal(hi.reshape(-1), np.fmax.accumulate(flat))
    np.testing.assert_array_equal(lo.reshape(-1), np.fmin.accumulate(flat))
    for dtype, np_dtype in ((wp.int32, np.int32), (wp.uint32, np.uint32)):
        info = np.iinfo(np_dtype)
        ints = rng.integers(info.min, info.max, size=SHAPE, dtype=np_dtype, endpoint=True)
        inc, exc, hi, lo = _run(dtype, ints, device)
        np.testing.assert_array_equal(inc.reshape(-1), np.cumsum(ints.reshape(-1), dtype=np_dtype))
        np.testing.assert_array_equal(hi.reshape(-1), np.maximum.accumulate(ints.reshape(-1)))
        np.testing.assert_array_equal(lo.reshape(-1), np.minimum.accumulate(ints.reshape(-1)))


@wp.kernel
def sum_scans(x: wp.array2d(dtype=float), inc: wp.array2d(dtype=float), exc: wp.array2d(dtype=float)):
    t = wp.tile_load(x, shape=SHAPE)
    wp.tile_store(inc, wp.tile_scan_inclusive(t) * t)  # a product, so the adjoint meets a non-constant seed
    wp.tile_store(exc, wp.tile_scan_exclusive(t))


def test_sum_scan_gradients_match_central_differences(device):
    def fn(x):
        inc = wp.zeros(SHAPE, dtype=float, device=device, requires_grad=True)
        exc = wp.zeros(SHAPE, dtype=float, device=device, requires_grad=True)
        wp.launch_tiled(sum_scans, dim=[1], inputs=[x, inc, exc], block_dim=32, device=device)
        return inc, exc

    gradcheck(fn, [wp.array(np.random.default_rng(5).normal(size=SHAPE).astype(np.float32), device=device)])


@wp.kernel
def max_scan_on_a_gradient_path(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    wp.tile_store(y, wp.tile_scan_max_inclusive(wp.tile_load(x, shape=SHAPE)))


def test_min_max_scans_have_no_gradient(device):
    x = wp.zeros(SHAPE, dtype=float, device=device, requires_grad=True)
    y = wp.zeros(SHAPE, dtype=float, device=device, requires_grad=True)
    from autodiff import Tape
    with pytest.raises(CompileError, match="'tile_scan_max_inclusive' has no gradient"):
        tape = Tape()
        with tape:
            wp.launch_tiled(max_scan_on_a_gradient_path, dim=[1], inputs=[x, y], block_dim=32, device=device)
        tape.backward(grads={y: wp.ones(SHAPE, dtype=float, device=device)})


_PROGRAM = '''
import numpy as np


@wp.kernel
def scans(x: wp.array2d(dtype=float), out: wp.array3d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x[i], shape=37)
    wp.tile_store(out[i, 0], wp.tile_scan_inclusive(t))
    wp.tile_store(out[i, 1], wp.tile_scan_exclusive(t))
    wp.tile_store(out[i, 2], wp.tile_scan_max_inclusive(t))
    wp.tile_store(out[i, 3], wp.tile_scan_min_inclusive(t))


def run(wp, Tape):
    data = np.random.default_rng(9).normal(size=(3, 37)).astype(np.float32)
    data[1, 5:9] = np.nan
    out = wp.zeros((3, 4, 37), dtype=float)
    wp.launch_tiled(scans, dim=[3], inputs=[wp.array(data)], outputs=[out], block_dim=32)
    return {"scans": out.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_scan")
    # Warp's CPU scan sums in its own order: the sums agree to round-off, the min/max scans exactly
    np.testing.assert_allclose(ours["scans"][:, :2], warp["scans"][:, :2], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ours["scans"][:, 2:], warp["scans"][:, 2:])
