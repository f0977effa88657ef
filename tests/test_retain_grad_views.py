"""retain_grad through views taken inside a kernel (issue 34's wrong number in test_array.py).

retain_grad belongs to the array the caller made. A plain write into it keeps the element's gradient in backward;
a plain write through a view the kernel takes of it (`y[0]`, `y[0:1, :]`) consumes the element's gradient, as a
write into an array without retain_grad does: Warp 1.19's in-kernel views carry no retain flag, and its own test
(test_retain_grad_slice_view_store) expects y.grad to be zero. The gradients that flow on (x.grad) are the same
either way; checked here against real Warp and against finite differences.
"""

import importlib.util
import os

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

import _warp_child
import _warp_reference

_PROGRAM = '''
@wp.kernel
def scale_direct(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    y[0, i] = 2.0 * x[i]


@wp.kernel
def scale_slice(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    s = y[0:1, :]
    s[0, i] = 2.0 * x[i]


@wp.kernel
def scale_row(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    row = y[0]
    row[i] = 3.0 * x[i]


@wp.kernel
def offset_row(y: wp.array2d(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    z[i] = y[0, i] * y[0, i] + 1.0


def run(wp, Tape):
    out = {}
    for name, kernel in (("direct", scale_direct), ("slice", scale_slice), ("row", scale_row)):
        for retain in (False, True):
            x = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, requires_grad=True, device="cpu")
            y = wp.zeros((1, 4), dtype=float, requires_grad=True, retain_grad=retain, device="cpu")
            z = wp.zeros(4, dtype=float, requires_grad=True, device="cpu")
            tape = Tape()
            with tape:
                wp.launch(kernel, dim=4, inputs=[x, y], device="cpu")
                wp.launch(offset_row, dim=4, inputs=[y, z], device="cpu")
            tape.backward(grads={z: wp.ones_like(z)})
            out[f"{name}_{retain}_x"] = x.grad.numpy()
            out[f"{name}_{retain}_y"] = y.grad.numpy()
    return out
'''


def _ours(folder):
    path = os.path.join(folder, "retain_grad_views_ours.py")
    with open(path, "w") as f:
        f.write("import kernels as wp\n\n\n" + _PROGRAM)
    return _warp_child.load_module(path, "retain_grad_views_ours")


def test_writes_through_in_kernel_views_consume_a_retained_gradient(tmp_path):
    out = _ours(str(tmp_path)).run(wp, Tape)
    np.testing.assert_array_equal(out["direct_True_y"], [[4.0, 8.0, 12.0, 16.0]])  # kept: dz/dy = 2 y = 4 x
    np.testing.assert_array_equal(out["slice_True_y"], np.zeros((1, 4)))  # consumed through the view
    np.testing.assert_array_equal(out["row_True_y"], np.zeros((1, 4)))
    for name, scale in (("direct", 2.0), ("slice", 2.0), ("row", 3.0)):
        for retain in (False, True):
            x = np.arange(1.0, 5.0)
            np.testing.assert_allclose(out[f"{name}_{retain}_x"], 2.0 * scale * scale * x, err_msg=name)


def test_the_gradient_through_a_retained_view_matches_finite_differences(tmp_path):
    program = _ours(str(tmp_path))

    def loss(x):
        y = wp.zeros((1, 4), dtype=float, requires_grad=True, retain_grad=True)
        z = wp.zeros(4, dtype=float, requires_grad=True)
        wp.launch(program.scale_slice, dim=4, inputs=[x, y])
        wp.launch(program.offset_row, dim=4, inputs=[y, z])
        return z

    x = wp.array([0.5, -1.0, 1.5, 2.0], dtype=float, requires_grad=True)
    gradcheck(loss, [x])


def test_retained_gradients_through_views_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "retain_grad_views")
    assert set(warp) == set(ours)
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
