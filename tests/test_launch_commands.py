"""Recorded launches (`wp.Launch`, `wp.launch(..., record_cmd=True)`): construction the way Warp does it, setting
parameters and adjoints, structs re-read at each launch, and argument checks."""

import numpy as np
import pytest

import kernels as wp


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def fill_index(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


@wp.struct
class Offset:
    i: int


@wp.kernel
def add_offset(p: Offset, out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i + p.i


@wp.kernel
def take_vec3(v: wp.vec3, out: wp.array(dtype=float)):
    out[0] = v[0] + v[1] + v[2]


def test_recorded_adjoint_uses_the_arrays_gradients():
    # regression: adj_inputs=[None, None] gave zero gradients instead of falling back to the arrays' .grad
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = wp.empty_like(x)
    y.grad.fill_(1.0)
    cmd = wp.launch(square, dim=3, inputs=[x, y], adj_inputs=[None, None], adjoint=True, record_cmd=True)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_direct_adjoint_launch_uses_the_arrays_gradients():
    x = wp.array([1.0, -2.0], dtype=float, requires_grad=True)
    y = wp.zeros_like(x)
    y.grad.fill_(0.5)
    wp.launch(square, dim=2, inputs=[x, y], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, -2.0])


def test_empty_launch_then_parameters_and_adjoints():
    cmd = wp.Launch(fill_index, "cpu")
    out = wp.zeros(10, dtype=int)
    cmd.set_dim(5)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 3, 4, 0, 0, 0, 0, 0])

    adj = wp.Launch(square, wp.get_device("cpu"), adjoint=True)
    x = wp.array([4.0, 5.0], dtype=float)
    x_grad = wp.zeros_like(x)
    y = wp.zeros_like(x)
    adj.set_param_by_name("x", x)
    adj.set_param_by_name("y", y)
    adj.set_param_by_name("x", x_grad, adjoint=True)
    adj.set_param_by_name("y", wp.full_like(y, 1.0), adjoint=True)
    adj.set_dim(2)
    adj.launch()
    np.testing.assert_array_equal(x_grad.numpy(), [8.0, 10.0])


def test_struct_fields_are_read_at_each_launch():
    p = Offset()
    p.i = 3
    out = wp.zeros(2, dtype=int)
    cmd = wp.launch(add_offset, dim=2, inputs=[p, out], record_cmd=True)
    p.i = 10
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [10, 11])
    cmd.set_param_at_index_from_ctype(0, Offset(i=-1).__ctype__())
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [-1, 0])


def test_argument_checks():
    out = wp.zeros(1, dtype=float)
    with pytest.raises(RuntimeError, match="argument 'v' expects vec3f but got a single value"):
        wp.launch(take_vec3, dim=1, inputs=[1.5, out])
    with pytest.raises(ValueError, match="Failed to convert argument for param v to vec3f"):
        wp.launch(take_vec3, dim=1, inputs=[None, out])
    with pytest.raises(RuntimeError, match="argument 'p' expects Offset but got None"):
        wp.launch(add_offset, dim=1, inputs=[None, wp.zeros(1, dtype=int)])
    cmd = wp.Launch(take_vec3, "cpu")
    with pytest.raises(RuntimeError, match="expects vec3f but got a single value"):
        cmd.set_param_by_name("v", 2)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        wp.launch(take_vec3, dim=1, inputs=[np.float32(2.0), out])
    assert out.numpy()[0] == 6.0
    wp.launch(take_vec3, dim=1, inputs=[(1.0, 2.0, 3.0), out])
    assert out.numpy()[0] == 6.0


def test_warp_scalar_values_are_single_values_too():
    out = wp.zeros(1, dtype=float)
    for value in (wp.float32(1.5), wp.int32(2)):
        with pytest.raises(RuntimeError, match="expects vec3f but got a single value"):
            wp.launch(take_vec3, dim=1, inputs=[value, out])


def test_set_dim_changes_only_its_own_launch():
    """Launches of the same size share their native bounds; set_dim gives one launch its own."""
    a, b = wp.zeros(6, dtype=int), wp.zeros(6, dtype=int)
    first = wp.launch(fill_index, dim=3, outputs=[a], record_cmd=True)
    second = wp.launch(fill_index, dim=3, outputs=[b], record_cmd=True)
    first.set_dim(6)
    first.launch()
    second.launch()
    np.testing.assert_array_equal(a.numpy(), np.arange(6))
    np.testing.assert_array_equal(b.numpy(), [0, 1, 2, 0, 0, 0])
