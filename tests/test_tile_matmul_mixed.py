"""Mixed-precision wp.tile_matmul, float16 products as Warp computes them, and Warp's checks of its operands.

As in Warp 1.19: a and b are converted to out's dtype (a's for the returning form), where the products accumulate.
Values against numpy, the gradient w.r.t. a float64 operand by central differences, the same arrays (forward and
adjoints) as real Warp's, and Warp's refusals with its wording: complex tiles, a bfloat16 result, precision other
than the literals 'default' / 'tf32', tf32 on non-float32 tiles."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.kernel
def _return_form(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float32), c: wp.array2d(dtype=wp.float64)):
    ta = wp.tile_load(a, shape=(4, 3))
    tb = wp.tile_load(b, shape=(3, 5))
    wp.tile_store(c, wp.tile_matmul(ta, tb, precision="default"))


def test_values_follow_the_output_dtype():
    @wp.kernel
    def forms(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float32), c: wp.array2d(dtype=wp.float64),
              d: wp.array2d(dtype=wp.float16)):
        ta = wp.tile_load(a, shape=(4, 3))
        tb = wp.tile_load(b, shape=(3, 5))
        tc = wp.tile_zeros(shape=(4, 5), dtype=wp.float64)
        wp.tile_matmul(ta, tb, tc, alpha=0.5, beta=0.0)
        wp.tile_store(c, tc)
        wp.tile_store(d, wp.tile_matmul(ta, tb))

    rng = np.random.default_rng(3)
    a_np = rng.random((4, 3)).astype(np.float16)
    b_np = rng.random((3, 5)).astype(np.float32)
    c, d = wp.zeros((4, 5), dtype=wp.float64), wp.zeros((4, 5), dtype=wp.float16)
    wp.launch_tiled(forms, [1], [wp.array(a_np), wp.array(b_np), c, d], block_dim=1)
    exact = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), 0.5 * exact, rtol=1e-12)
    np.testing.assert_allclose(d.numpy().astype(np.float64), exact, rtol=2e-3)  # a float16 result


def test_gradient_matches_central_differences():
    b = wp.array(np.linspace(-1.0, 1.0, 15).reshape(3, 5).astype(np.float32))

    def run(a):
        c = wp.zeros((4, 5), dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_return_form, [1], [a, b, c], block_dim=1)
        return c

    gradcheck(run, [wp.array(np.linspace(0.2, 2.0, 12).reshape(4, 3), dtype=wp.float64, requires_grad=True)])


@wp.kernel
def _two_products(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float32), d: wp.array2d(dtype=wp.float64),
                  e: wp.array2d(dtype=wp.float32)):
    ta = wp.tile_load(a, shape=(8, 8))
    tb = wp.tile_load(b, shape=(8, 4))
    tc = wp.tile_zeros(shape=(8, 4), dtype=wp.float64)
    wp.tile_matmul(ta, tb, tc, alpha=0.5, beta=0.0)
    wp.tile_store(d, tc)
    wp.tile_store(e, wp.tile_matmul(tb, wp.tile_transpose(tb)))


def test_second_product_leaves_the_float16_adjoint_alone():
    from autodiff import Tape

    rng = np.random.default_rng(42)
    a_np, b_np = rng.random((8, 8)).astype(np.float16), rng.random((8, 4)).astype(np.float32)
    a, b = wp.array(a_np, requires_grad=True), wp.array(b_np, requires_grad=True)
    d = wp.zeros((8, 4), dtype=wp.float64, requires_grad=True)
    e = wp.zeros((8, 8), dtype=wp.float32, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(_two_products, [1], [a, b, d, e], block_dim=1)
    tape.backward(grads={d: wp.array(np.ones((8, 4)), dtype=wp.float64)})
    np.testing.assert_allclose(a.grad.numpy().astype(np.float64), 0.5 * np.ones((8, 4)) @ b_np.T.astype(np.float64),
                               rtol=2e-3)


def _kernel(case):
    if case == "complex":
        @wp.kernel
        def k(a: wp.array2d(dtype=wp.vec2f), c: wp.array2d(dtype=wp.vec2f)):
            t = wp.tile_load(a, shape=(2, 2))
            wp.tile_store(c, wp.tile_matmul(t, t))
    elif case == "bf16_out":
        @wp.kernel
        def k(a: wp.array2d(dtype=wp.bfloat16), c: wp.array2d(dtype=wp.bfloat16)):
            t = wp.tile_load(a, shape=(2, 2))
            wp.tile_store(c, wp.tile_matmul(t, t))
    elif case == "tf32":
        @wp.kernel
        def k(a: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64)):
            t = wp.tile_load(a, shape=(2, 2))
            wp.tile_store(c, wp.tile_matmul(t, t, precision="tf32"))
    else:
        @wp.kernel
        def k(a: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
            t = wp.tile_load(a, shape=(2, 2))
            wp.tile_store(c, wp.tile_matmul(t, t, precision="fp8"))
    return k


@pytest.mark.parametrize("case, dtype, kind, message", [
    ("complex", wp.vec2f, TypeError, "does not support complex tiles"),
    ("bf16_out", wp.bfloat16, TypeError, "does not support a bfloat16 'out' tile"),
    ("tf32", wp.float64, TypeError, "precision='tf32' requires float32 tiles"),
    ("precision", float, ValueError, "precision must be the string literal 'default' or 'tf32', got 'fp8'")])
def test_warps_refusals(case, dtype, kind, message):
    a = wp.zeros((2, 2), dtype=dtype)
    with pytest.raises(kind, match=message):
        wp.launch_tiled(_kernel(case), [1], [a, wp.zeros((2, 2), dtype=dtype)], block_dim=1)


_PROGRAM = '''
import numpy as np


@wp.kernel
def mixed(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float32), c: wp.array2d(dtype=wp.float64),
          d: wp.array2d(dtype=wp.float64)):
    ta = wp.tile_load(a, shape=(8, 8))
    tb = wp.tile_load(b, shape=(8, 4))
    tc = wp.tile_load(c, shape=(8, 4))
    wp.tile_matmul(ta, tb, tc, alpha=0.5, beta=-1.25)
    wp.tile_store(d, tc)


@wp.kernel
def returned(b: wp.array2d(dtype=wp.float32), a: wp.array2d(dtype=wp.float16), e: wp.array2d(dtype=wp.float32)):
    wp.tile_store(e, wp.tile_matmul(wp.tile_load(b, shape=(8, 4)), wp.tile_load(a, shape=(4, 8))))


def run(wp, Tape):
    rng = np.random.default_rng(42)
    a = wp.array(rng.random((8, 8)).astype(np.float16), requires_grad=True)
    b = wp.array(rng.random((8, 4)).astype(np.float32), requires_grad=True)
    c = wp.array(rng.random((8, 4)), dtype=wp.float64, requires_grad=True)
    d = wp.zeros((8, 4), dtype=wp.float64, requires_grad=True)
    e = wp.zeros((8, 8), dtype=wp.float32)
    tape = Tape()
    with tape:
        wp.launch_tiled(mixed, dim=[1], inputs=[a, b, c, d], block_dim=16)
    wp.launch_tiled(returned, dim=[1], inputs=[b, a, e], block_dim=16)
    tape.backward(grads={d: wp.array(np.ones((8, 4)), dtype=wp.float64)})
    return {"d": d.numpy(), "e": e.numpy(), "a_grad": a.grad.numpy().astype(np.float32), "b_grad": b.grad.numpy(),
            "c_grad": c.grad.numpy()}
'''


# Not compared: a second tile_matmul in the same kernel (tb @ tb^T into an unseeded output) doubles Warp 1.19's
# float16 adjoint of `a` on its CPU (measured: 2.053 where 0.5 * ones @ b^T is 1.026); kernels gives the analytic
# value, which test_second_product_leaves_the_float16_adjoint_alone checks.
def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_matmul_mixed")
    tolerance = {"a_grad": 2e-3}  # a float16 adjoint: Warp accumulates it in float16, kernels in float64 then rounds
    for key, value in warp.items():
        np.testing.assert_allclose(ours[key], value, rtol=tolerance.get(key, 1e-6), err_msg=key)


_FLOAT16_PROGRAM = '''
import numpy as np


@wp.kernel
def mm(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=wp.float16),
       d: wp.array2d(dtype=wp.float16), e: wp.array2d(dtype=wp.float16)):
    ta = wp.tile_load(a, shape=(16, 64))
    tb = wp.tile_load(b, shape=(64, 16))
    wp.tile_store(c, wp.tile_matmul(ta, tb))
    acc = wp.tile_load(d, shape=(16, 16))
    wp.tile_matmul(ta, tb, acc)
    wp.tile_store(e, acc)


def run(wp, Tape):
    rng = np.random.default_rng(1)
    a = wp.array(rng.random((16, 64)).astype(np.float16), requires_grad=True)
    b = wp.array(rng.random((64, 16)).astype(np.float16), requires_grad=True)
    c = wp.zeros((16, 16), dtype=wp.float16, requires_grad=True)
    d = wp.array(rng.random((16, 16)).astype(np.float16), requires_grad=True)
    e = wp.zeros((16, 16), dtype=wp.float16, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(mm, dim=[1], inputs=[a, b, c, d, e], block_dim=16)
    c.grad = wp.array(rng.random((16, 16)).astype(np.float16))
    tape.backward()
    return {"c": c.numpy(), "e": e.numpy(), "a_grad": a.grad.numpy(), "b_grad": b.grad.numpy(),
            "d_grad": d.grad.numpy()}
'''


def test_float16_products_are_warps_bit_for_bit(tmp_path):
    # Warp's CPU rounds every product and partial sum to float16 (sums from zero, then added to out); 64 terms
    # rounded once in float32 instead differ by up to 3e-3 relative (measured before this matched)
    warp, ours = _warp_reference.both(_FLOAT16_PROGRAM, str(tmp_path), "tile_matmul_float16")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
