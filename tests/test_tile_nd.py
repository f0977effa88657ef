"""3-d and 4-d tiles (Warp's): loads and stores with 3-d/4-d arrays (offsets, partial tiles at the edge),
tile_atomic_add, numpy broadcasting, arithmetic, reductions whole and along every axis (tile_sum, tile_reduce),
tile_squeeze, tile_reshape, element access t[i, j, k], constructors, tile_fft/tile_ifft along the last axis.

Values against real Warp on the same program (bit for bit); gradients by the project's gradcheck (central
differences); the builtins that do not know the axes refuse these tiles with one line naming them."""

import importlib.util

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck
from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source


@wp.kernel
def _mixed(x: wp.array3d(dtype=wp.float64), b: wp.array4d(dtype=wp.float64), s0: wp.array2d(dtype=wp.float64),
           s2: wp.array2d(dtype=wp.float64), p4: wp.array3d(dtype=wp.float64), e: wp.array(dtype=wp.float64),
           acc: wp.array3d(dtype=wp.float64)):
    a = wp.tile_load(x, shape=(2, 3, 4), offset=(0, 1, 0))
    c = wp.tile_load(b, shape=(2, 1, 3, 1))
    big = wp.tile_broadcast(c, shape=(2, 2, 3, 4))
    d = wp.tile_reshape(big, shape=(4, 3, 4)) * wp.tile_broadcast(a, shape=(2, 2, 3, 4))[0, 0, 0, 0]
    wp.tile_store(s0, wp.tile_sum(a * a, axis=0))
    wp.tile_store(s2, wp.tile_sum(wp.tile_map(wp.sin, a), axis=2))
    q = wp.tile_broadcast(wp.tile_reduce(wp.mul, c, axis=2), shape=(2, 1, 4))
    wp.tile_store(p4, q + wp.tile_squeeze(wp.tile_load(b, shape=(2, 1, 3, 1)), axis=1)[1, 2, 0])
    a[1, 2, 3] = a[0, 0, 1] * 3.0
    e[0] = wp.tile_sum(a)[0] + wp.tile_max(d)[0]
    wp.tile_atomic_add(acc, a, offset=(0, 0, 1))


def test_gradients_by_central_differences():
    rng = np.random.default_rng(3)

    def run(x, b):
        outs = [wp.zeros(shape, dtype=wp.float64, requires_grad=True)
                for shape in ((3, 4), (2, 3), (2, 1, 4), 1, (2, 3, 5))]
        wp.launch_tiled(_mixed, [1], [x, b, *outs], block_dim=1)
        return outs

    x = wp.array(rng.uniform(0.5, 1.5, (2, 4, 4)), dtype=wp.float64, requires_grad=True)
    b = wp.array(rng.uniform(0.5, 1.5, (2, 1, 3, 1)), dtype=wp.float64, requires_grad=True)
    gradcheck(run, [x, b])


_PROGRAM = '''
import numpy as np


@wp.kernel
def shapes(x: wp.array3d(dtype=float), b: wp.array3d(dtype=float), y: wp.array4d(dtype=float),
           out3: wp.array3d(dtype=float), out4: wp.array4d(dtype=float), sums: wp.array3d(dtype=float),
           sq: wp.array2d(dtype=float), el: wp.array(dtype=float), part: wp.array3d(dtype=float),
           rnd: wp.array3d(dtype=float), ints: wp.array3d(dtype=int)):
    a = wp.tile_load(x, shape=(4, 5, 6))
    c = wp.tile_broadcast(wp.tile_load(b, shape=(4, 5, 1)), shape=(4, 5, 6))
    wp.tile_store(out3, a * c - a)
    f = wp.tile_load(y, shape=(2, 3, 4, 5))
    g = wp.tile_broadcast(wp.tile_load(y, shape=(1, 3, 1, 5)), shape=(2, 3, 4, 5))
    wp.tile_store(out4, f / (g * g + wp.tile_ones(shape=(2, 3, 4, 5), dtype=float)))
    wp.tile_store(sums, wp.tile_sum(f, axis=0), offset=(0, 0, 0))
    wp.tile_store(sums, wp.tile_sum(f, axis=1), offset=(2, 0, 0))
    wp.tile_store(sums, wp.tile_reduce(wp.max, f, axis=3), offset=(4, 0, 0))
    wp.tile_store(sums, wp.tile_reduce(wp.add, f, axis=2), offset=(6, 0, 0))
    wp.tile_store(sq, wp.tile_squeeze(wp.tile_load(y, shape=(1, 3, 1, 5), offset=(1, 0, 2, 0))))
    el[0] = a[3, 4, 5] + f[1, 2, 3, 4]
    el[1] = wp.tile_sum(f)[0]
    el[2] = wp.tile_min(a)[0]
    el[3] = float(wp.tile_argmax(f)[0])
    wp.tile_store(part, wp.tile_load(x, shape=(3, 3, 3), offset=(2, 3, 4)), offset=(1, 2, 3))
    wp.tile_store(rnd, wp.tile_randf(shape=(2, 3, 4), rng=wp.uint32(7)))
    wp.tile_store(ints, wp.tile_randi(shape=(2, 3, 4), rng=wp.uint32(11), min=-5, max=9) + wp.tile_ones(shape=(2, 3, 4),
                                                                                          dtype=int))


@wp.kernel
def gradient(x: wp.array4d(dtype=float), y: wp.array3d(dtype=float), z: wp.array3d(dtype=float)):
    a = wp.tile_load(x, shape=(2, 3, 4, 5))
    wp.tile_store(y, wp.tile_sum(a * a, axis=2))
    s = wp.tile_squeeze(wp.tile_broadcast(wp.tile_sum(a, axis=3), shape=(1, 2, 3, 4)))
    wp.tile_atomic_add(z, s, offset=(0, 1, 0))


def run(wp, Tape):
    rng = np.random.default_rng(5)
    x = wp.array(rng.standard_normal((5, 6, 7)).astype(np.float32), dtype=float)
    b = wp.array(rng.standard_normal((4, 5, 1)).astype(np.float32), dtype=float)
    y = wp.array(rng.standard_normal((2, 3, 4, 5)).astype(np.float32), dtype=float)
    out3 = wp.zeros((4, 5, 6), dtype=float)
    out4 = wp.zeros((2, 3, 4, 5), dtype=float)
    sums = wp.zeros((8, 4, 5), dtype=float)
    sq = wp.zeros((3, 5), dtype=float)
    el = wp.zeros(4, dtype=float)
    part = wp.zeros((4, 4, 4), dtype=float)
    rnd = wp.zeros((2, 3, 4), dtype=float)
    ints = wp.zeros((2, 3, 4), dtype=int)
    wp.launch_tiled(shapes, dim=[1], inputs=[x, b, y, out3, out4, sums, sq, el, part, rnd, ints], block_dim=32)

    g = wp.array(rng.standard_normal((2, 3, 4, 5)).astype(np.float32), dtype=float, requires_grad=True)
    gy = wp.zeros((2, 3, 5), dtype=float, requires_grad=True)
    gz = wp.ones((2, 4, 4), dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(gradient, dim=[1], inputs=[g, gy, gz], block_dim=32)
    gy.grad = wp.array(rng.standard_normal((2, 3, 5)).astype(np.float32), dtype=float)
    gz.grad = wp.array(rng.standard_normal((2, 4, 4)).astype(np.float32), dtype=float)
    tape.backward()
    return {"out3": out3.numpy(), "out4": out4.numpy(), "sums": sums.numpy(), "sq": sq.numpy(), "el": el.numpy(),
            "part": part.numpy(), "rnd": rnd.numpy(), "ints": ints.numpy(), "gy": gy.numpy(), "gz": gz.numpy(),
            "g_grad": g.grad.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_nd")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def _refusal(folder, body, array=(2, 2, 2)):
    """The error launching a kernel `body` (of one array argument `x` of shape `array`) raises."""
    src = f"import kernels as wp\n\n\n@wp.kernel\ndef bad(x: wp.array{len(array)}d(dtype=float)):\n" + body
    path = folder / "tile_nd_refusal.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"tile_nd_refusal_{abs(hash(body))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(Exception) as info:
        wp.launch_tiled(module.bad, [1], [wp.zeros(array, dtype=float)], block_dim=1)
    return info.value


@pytest.mark.parametrize("body, kind, words", [
    ("    a = wp.tile_zeros(shape=(1, 2, 1), dtype=float)\n    wp.tile_squeeze(a, axis=(3,))\n", ValueError,
     "tile_squeeze() axis 3 is out of bounds for tile with 3 dimensions"),
    ("    a = wp.tile_zeros(shape=(1, 2, 1), dtype=float)\n    wp.tile_squeeze(a, axis=1)\n", ValueError,
     "Cannot select an axis to squeeze out which has size not equal to one, axis=1, size=2"),
    ("    a = wp.tile_zeros(shape=(2, 2, 2), dtype=float)\n    b = wp.tile_transpose(a)\n", Exception,
     "'tile_transpose' does not take 3-d tiles"),
    ("    a = wp.tile_zeros(shape=(2, 2, 2), dtype=float)\n    b = a[0]\n", Exception,
     "a subscript selecting part of a 3-d tile"),
    ("    a = wp.tile_load(x, shape=(2, 2, 2), offset=(0, 1))\n", ValueError,
     "offset argument must have the same number of dimensions as the array"),
    ("    a = wp.tile_zeros(shape=(2, 3, 2), dtype=float)\n    b = wp.tile_broadcast(a, shape=(2, 2, 2))\n",
     ValueError, "cannot broadcast"),
])
def test_refusals_name_the_problem(tmp_path, body, kind, words):
    err = _refusal(tmp_path, body)
    assert isinstance(err, kind) and words in str(err), str(err)


def test_load_dimensions_must_match_the_array(tmp_path):
    err = _refusal(tmp_path, "    a = wp.tile_load(x, shape=(2, 2, 2))\n", array=(2, 2))
    assert isinstance(err, ValueError)
    assert "same number of dimensions as the tile shape" in str(err)


@wp.kernel
def _fft3(x: wp.array3d(dtype=wp.vec2d), y: wp.array3d(dtype=wp.vec2d), z: wp.array4d(dtype=wp.vec2d)):
    a = wp.tile_load(x, shape=(2, 3, 8))
    wp.tile_fft(a)
    wp.tile_store(y, a)
    b = wp.tile_reshape(a, shape=(1, 2, 3, 8))
    wp.tile_ifft(b)
    wp.tile_store(z, b)


def test_fft_along_the_last_axis_and_its_gradient():
    rng = np.random.default_rng(8)
    values = rng.standard_normal((2, 3, 8, 2))

    def run(x):
        y = wp.zeros((2, 3, 8), dtype=wp.vec2d, requires_grad=True)
        z = wp.zeros((1, 2, 3, 8), dtype=wp.vec2d, requires_grad=True)
        wp.launch_tiled(_fft3, [1], [x, y, z], block_dim=1)
        return y, z

    x = wp.array(values, dtype=wp.vec2d, requires_grad=True)
    y, z = run(x)
    expect = np.fft.fft(values[..., 0] + 1j * values[..., 1], axis=-1)
    np.testing.assert_allclose(y.numpy()[..., 0] + 1j * y.numpy()[..., 1], expect, atol=1e-12)
    back = z.numpy()[0]
    np.testing.assert_allclose(back[..., 0] + 1j * back[..., 1], 8 * (values[..., 0] + 1j * values[..., 1]), atol=1e-12)
    gradcheck(run, [x])


_FFT_PROGRAM = '''
import numpy as np


@wp.kernel
def fft3(x: wp.array3d(dtype=wp.vec2f), y: wp.array3d(dtype=wp.vec2f), z: wp.array3d(dtype=wp.vec2f)):
    a = wp.tile_load(x, shape=(2, 4, 16))
    wp.tile_fft(a)
    wp.tile_store(y, a)
    wp.tile_ifft(a)
    wp.tile_store(z, a)


def run(wp, Tape):
    rng = np.random.default_rng(2)
    x = wp.array(rng.standard_normal((2, 4, 16, 2)).astype(np.float32), dtype=wp.vec2f)
    y = wp.zeros((2, 4, 16), dtype=wp.vec2f)
    z = wp.zeros((2, 4, 16), dtype=wp.vec2f)
    wp.launch_tiled(fft3, dim=[1], inputs=[x, y, z], block_dim=32)
    return {"y": y.numpy(), "z": z.numpy()}
'''


def test_fft_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_FFT_PROGRAM, str(tmp_path), "tile_nd_fft")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


@wp.kernel
def _for_cuda(x: wp.array4d(dtype=float), y: wp.array3d(dtype=float), z: wp.array3d(dtype=wp.vec2f)):
    a = wp.tile_load(x, shape=(2, 3, 4, 5))
    b = wp.tile_broadcast(wp.tile_load(x, shape=(2, 1, 4, 1)), shape=(2, 3, 4, 5))
    wp.tile_store(y, wp.tile_sum(a * b, axis=2))
    wp.print(a)
    c = wp.tile_load(z, shape=(2, 2, 8))
    wp.tile_fft(c)
    wp.tile_atomic_add(z, c)


def test_cuda_source_compiles_to_ptx():
    ptx = compile_source_to_ptx(render_cuda_source([_for_cuda]), 90, "tile_nd.cu")
    assert "_for_cuda_cuda_forward" in ptx and "_for_cuda_cuda_backward" in ptx
