"""tile_fft / tile_ifft (kernels/native/tile_fft.h): row transforms of complex tiles against numpy.fft (power-of-two
and other lengths, float32 and float64), their gradients by central differences (autodiff.gradcheck), Warp's
values, and the gradient of a tile_store that overwrites an element an earlier launch wrote (consumed, as a plain
store's: Warp's example_navier_stokes_perturbation reuses its FFT scratch arrays on one tape).
"""

import importlib.util
import warnings

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

import _warp_reference

ROWS = 2


def _row_kernels(n, vec):
    @wp.kernel
    def forward(x: wp.array2d(dtype=vec), y: wp.array2d(dtype=vec)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(ROWS, n), offset=(i * ROWS, 0))
        wp.tile_fft(t)
        wp.tile_store(y, t, offset=(i * ROWS, 0))

    @wp.kernel
    def inverse(x: wp.array2d(dtype=vec), y: wp.array2d(dtype=vec)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(ROWS, n), offset=(i * ROWS, 0))
        wp.tile_ifft(t)
        wp.tile_store(y, t, offset=(i * ROWS, 0))

    return forward, inverse


KERNELS = {(n, vec): _row_kernels(n, vec) for n in (8, 6) for vec in (wp.vec2f, wp.vec2d)}


def _run(kernel, x, vec, device):
    y = wp.zeros(x.shape, dtype=vec, device=device, requires_grad=True)
    wp.launch_tiled(kernel, dim=[x.shape[0] // ROWS], inputs=[x, y], block_dim=1, device=device)
    return y


@pytest.mark.parametrize("n", [8, 6])
@pytest.mark.parametrize("vec", [wp.vec2f, wp.vec2d])
def test_rows_match_numpy(device, n, vec):
    rng = np.random.default_rng(n)
    data = rng.normal(size=(2 * ROWS, n, 2))
    dtype = np.float32 if vec is wp.vec2f else np.float64
    x = wp.array(data.astype(dtype), dtype=vec, device=device)
    forward, inverse = KERNELS[n, vec]
    z = data[..., 0] + 1j * data[..., 1]
    tol = 1e-5 if vec is wp.vec2f else 1e-12
    for kernel, expect in ((forward, np.fft.fft(z, axis=1)), (inverse, np.fft.ifft(z, axis=1) * n)):
        got = _run(kernel, x, vec, device).numpy()
        np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], expect, atol=tol * n, rtol=0)


@pytest.mark.parametrize("n", [8, 6])
def test_gradients_match_central_differences(device, n):
    rng = np.random.default_rng(n + 1)
    x = wp.array(rng.normal(size=(2 * ROWS, n, 2)), dtype=wp.vec2d, device=device)
    for kernel in KERNELS[n, wp.vec2d]:
        gradcheck(lambda a, k=kernel: _run(k, a, wp.vec2d, device), [x])


@wp.kernel
def store_scaled(x: wp.array2d(dtype=wp.vec2d), scale: wp.float64, y: wp.array2d(dtype=wp.vec2d)):
    i = wp.tid()
    t = wp.tile_load(x, shape=(ROWS, 4), offset=(i * ROWS, 0))
    wp.tile_store(y, t * scale, offset=(i * ROWS, 0))


@wp.kernel
def read_into(y: wp.array2d(dtype=wp.vec2d), out: wp.array2d(dtype=wp.vec2d)):
    # linear in y: its adjoint needs no value of y, so reading y before it is overwritten is fine
    i, j = wp.tid()
    v = y[i, j]
    out[i, j] = wp.vec2d(wp.float64(5.0) * v[0], -v[1])


def test_tile_store_over_an_earlier_write_consumes_its_gradient(device):
    # scratch = 2 x; a = L scratch; scratch = 3 x (overwrites); b = L scratch: d sum(w a + w b)/dx counts each
    # write's readers once (without the consumed gradient, the first write would also get the second's readers)
    def fn(x):
        scratch = wp.zeros(x.shape, dtype=wp.vec2d, device=device, requires_grad=True)
        a = wp.zeros(x.shape, dtype=wp.vec2d, device=device, requires_grad=True)
        b = wp.zeros(x.shape, dtype=wp.vec2d, device=device, requires_grad=True)
        dim = [x.shape[0] // ROWS]
        wp.launch_tiled(store_scaled, dim=dim, inputs=[x, wp.float64(2.0), scratch], block_dim=1, device=device)
        wp.launch(read_into, dim=x.shape, inputs=[scratch, a], device=device)
        wp.launch_tiled(store_scaled, dim=dim, inputs=[x, wp.float64(3.0), scratch], block_dim=1, device=device)
        wp.launch(read_into, dim=x.shape, inputs=[scratch, b], device=device)
        return a, b

    x = wp.array(np.random.default_rng(3).normal(size=(2 * ROWS, 4, 2)), dtype=wp.vec2d, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tape warns about the overwrite (its gradient is right here)
        gradcheck(fn, [x])


_PROGRAM = '''
import numpy as np

N = 16


@wp.kernel
def rows(x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f), z: wp.array2d(dtype=wp.vec2f)):
    i = wp.tid()
    t = wp.tile_load(x, shape=(4, N), offset=(i * 4, 0))
    wp.tile_fft(t)
    wp.tile_store(y, t, offset=(i * 4, 0))
    wp.tile_ifft(t)
    wp.tile_store(z, t, offset=(i * 4, 0))


def run(wp, Tape):
    x = wp.array(np.random.default_rng(5).normal(size=(8, N, 2)).astype(np.float32), dtype=wp.vec2f)
    y = wp.zeros((8, N), dtype=wp.vec2f)
    z = wp.zeros((8, N), dtype=wp.vec2f)
    wp.launch_tiled(rows, dim=[2], inputs=[x, y, z], block_dim=1)
    return {"fft": y.numpy(), "roundtrip": z.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_fft")
    for key in ("fft", "roundtrip"):
        np.testing.assert_array_equal(ours[key], warp[key])
