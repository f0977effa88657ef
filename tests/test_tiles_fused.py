"""tile_axpy and tile_dot (kernels/native/tile_fused.h): values against numpy for scalar, vector and matrix tiles,
gradients w.r.t. alpha, src, dest and both dot operands by central differences (autodiff.gradcheck), the refusal of
tile_axpy into a broadcast tile (Warp's accumulates through shared storage), and Warp's values on the same program.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck
from kernels.errors import CompileError

import _warp_reference

N = 8


@wp.kernel
def axpy_dot_f64(dest_in: wp.array(dtype=wp.float64), src_in: wp.array(dtype=wp.float64),
                 alpha_in: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64),
                 dots: wp.array(dtype=wp.float64)):
    dest = wp.tile_load(dest_in, shape=N)
    src = wp.tile_load(src_in, shape=N)
    alpha = wp.tile_extract(wp.tile_load(alpha_in, shape=1), 0)
    wp.tile_axpy(alpha, src, dest)
    wp.tile_store(out, dest)
    # the updated dest times src: a product of the two inputs of axpy, so every adjoint path is exercised
    wp.tile_store(dots, wp.tile_dot(dest, src))


@wp.kernel
def dot_vec3d(a_in: wp.array2d(dtype=wp.vec3d), b_in: wp.array2d(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    a = wp.tile_load(a_in, shape=(2, 3))
    b = wp.tile_load(b_in, shape=(2, 3))
    wp.tile_store(out, wp.tile_dot(a, b))


@wp.kernel
def axpy_mat33(dest_in: wp.array(dtype=wp.mat33), src_in: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.mat33),
               dots: wp.array(dtype=float)):
    dest = wp.tile_load(dest_in, shape=4)
    src = wp.tile_load(src_in, shape=4)
    wp.tile_axpy(-1.5, src, dest)
    wp.tile_store(out, dest)
    wp.tile_store(dots, wp.tile_dot(src, src))


def test_values_match_numpy(device):
    rng = np.random.default_rng(1)
    d, s = rng.normal(size=N), rng.normal(size=N)
    out = wp.zeros(N, dtype=wp.float64, device=device)
    dots = wp.zeros(1, dtype=wp.float64, device=device)
    inputs = [wp.array(d, dtype=wp.float64, device=device), wp.array(s, dtype=wp.float64, device=device),
              wp.array([0.75], dtype=wp.float64, device=device), out, dots]
    wp.launch_tiled(axpy_dot_f64, dim=[1], inputs=inputs, block_dim=64, device=device)
    np.testing.assert_allclose(out.numpy(), d + 0.75 * s, rtol=1e-14)
    np.testing.assert_allclose(dots.numpy()[0], np.dot(d + 0.75 * s, s), rtol=1e-13)

    m, n = rng.normal(size=(4, 3, 3)).astype(np.float32), rng.normal(size=(4, 3, 3)).astype(np.float32)
    out = wp.zeros(4, dtype=wp.mat33, device=device)
    dots = wp.zeros(1, dtype=float, device=device)
    wp.launch_tiled(axpy_mat33, dim=[1], inputs=[wp.array(m, dtype=wp.mat33, device=device),
                                                 wp.array(n, dtype=wp.mat33, device=device), out, dots],
                    block_dim=64, device=device)
    np.testing.assert_allclose(out.numpy(), m - 1.5 * n, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dots.numpy()[0], np.sum(n * n), rtol=1e-5)


def test_gradients_match_central_differences(device):
    rng = np.random.default_rng(2)

    def axpy_dot(dest, src, alpha):
        out = wp.zeros(N, dtype=wp.float64, device=device, requires_grad=True)
        dots = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
        wp.launch_tiled(axpy_dot_f64, dim=[1], inputs=[dest, src, alpha, out, dots], block_dim=64, device=device)
        return out, dots

    arrays = [wp.array(rng.normal(size=n), dtype=wp.float64, device=device) for n in (N, N, 1)]
    gradcheck(axpy_dot, arrays)

    def dot(a, b):
        out = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
        wp.launch_tiled(dot_vec3d, dim=[1], inputs=[a, b, out], block_dim=64, device=device)
        return out

    gradcheck(dot, [wp.array(rng.normal(size=(2, 3, 3)), dtype=wp.vec3d, device=device) for _ in range(2)])


def test_axpy_into_a_broadcast_tile_is_refused(device):
    @wp.kernel
    def into_broadcast(bias_in: wp.array(dtype=float), out: wp.array2d(dtype=float)):
        dest = wp.tile_broadcast(wp.tile_load(bias_in, shape=4), shape=(4, 4))
        wp.tile_axpy(1.0, wp.tile_ones(shape=(4, 4), dtype=float), dest)
        wp.tile_store(out, dest)

    with pytest.raises(CompileError, match="tile_axpy into a broadcast tile"):
        wp.launch_tiled(into_broadcast, dim=[1], inputs=[wp.zeros(4, dtype=float, device=device),
                                                          wp.zeros((4, 4), dtype=float, device=device)],
                        block_dim=64, device=device)


_PROGRAM = '''
import numpy as np


@wp.kernel
def fused(d: wp.array2d(dtype=float), s: wp.array2d(dtype=float), v: wp.array(dtype=wp.vec3), alpha: float,
          out: wp.array2d(dtype=float), dots: wp.array(dtype=float)):
    dest = wp.tile_load(d, shape=(4, 8))
    src = wp.tile_load(s, shape=(4, 8))
    wp.tile_axpy(alpha, src, dest)
    wp.tile_store(out, dest)
    wp.tile_store(dots, wp.tile_dot(dest, src), offset=0)
    vt = wp.tile_load(v, shape=6)
    wp.tile_store(dots, wp.tile_dot(vt, vt), offset=1)


def run(wp, Tape):
    rng = np.random.default_rng(7)
    d = wp.array(rng.normal(size=(4, 8)).astype(np.float32), requires_grad=True)
    s = wp.array(rng.normal(size=(4, 8)).astype(np.float32), requires_grad=True)
    v = wp.array(rng.normal(size=(6, 3)).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros((4, 8), dtype=float, requires_grad=True)
    dots = wp.zeros(2, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(fused, dim=[1], inputs=[d, s, v, 0.5, out, dots], block_dim=64)
    tape.backward(grads={out: wp.ones((4, 8), dtype=float), dots: wp.array([1.0, 2.0], dtype=float)})
    return {"out": out.numpy(), "dots": dots.numpy(), "d_grad": d.grad.numpy(), "s_grad": s.grad.numpy(),
            "v_grad": v.grad.numpy()}
'''


def test_values_and_gradients_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_fused")
    for key in warp:
        # sums of 32 products: the order of the additions may differ from Warp's
        np.testing.assert_allclose(ours[key], warp[key], rtol=2e-6, atol=1e-6, err_msg=key)


@wp.kernel
def reduce_vectors(x: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    t = wp.tile(x[i] * x[i][0], preserve_type=True)  # a tile of the thread's vector (one lane on the CPU)
    wp.tile_atomic_add(out, wp.tile_reduce(wp.add, wp.tile_map(wp.cw_mul, t, t)))
    whole = wp.tile_load(x, shape=4)
    wp.tile_atomic_add(out, wp.tile_reduce(wp.add, wp.tile_map(wp.cw_mul, whole, whole)))


def test_tile_reduce_of_vector_tiles_has_gradients(device):
    # the reverse of tile_reduce over vector elements starts each step's adjoint at a zero vector
    def fn(x):
        out = wp.zeros(1, dtype=wp.vec3d, device=device, requires_grad=True)
        wp.launch(reduce_vectors, dim=4, inputs=[x], outputs=[out], block_dim=4, device=device)
        return out

    gradcheck(fn, [wp.array(np.random.default_rng(6).normal(size=(4, 3)), dtype=wp.vec3d, device=device)])
    with pytest.raises(CompileError, match="preserve_type=False"):
        @wp.kernel
        def spread(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
            wp.tile_atomic_add(out, wp.tile_reduce(wp.add, wp.tile(x[0], preserve_type=False)))

        wp.launch(spread, dim=1, inputs=[wp.zeros(1, dtype=wp.vec3, device=device)],
                  outputs=[wp.zeros(1, dtype=wp.vec3, device=device)], device=device)
