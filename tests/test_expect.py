"""In-kernel checks `wp.expect_eq`, `wp.expect_neq`, `wp.expect_near`: silent when they hold, a report on stdout
when they fail (the kernel goes on); the tolerance of `expect_near` defaults to 1e-6; a check of a value that
carries a gradient does not stop the kernel from being differentiated."""

import numpy as np

import kernels as wp
from autodiff import gradcheck


@wp.kernel
def checks_that_hold(x: wp.array(dtype=float), q: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.expect_eq(123, 123)
    wp.expect_eq(i, 0)
    wp.expect_eq(x[i], 1.0)
    wp.expect_neq(x[i], 2.0)
    wp.expect_eq(wp.vec3(x[i]), wp.vec3(1.0, 1.0, 1.0))
    wp.expect_neq(wp.vec3(1.0), wp.vec3(2.0))
    wp.expect_eq(wp.mat22(1.0, 2.0, 3.0, 4.0), wp.mat22(1.0, 2.0, 3.0, 4.0))
    wp.expect_eq(wp.quat_identity(), wp.quat(0.0, 0.0, 0.0, 1.0))
    wp.expect_near(x[i], 1.0 + 1.0e-7)
    wp.expect_near(q[i], wp.float64(1.5) + wp.float64(1.0e-9))
    wp.expect_near(wp.vec3(x[i]), wp.vec3(1.05), 0.1)
    wp.expect_eq(True, True)


@wp.kernel
def checks_that_fail(x: wp.array(dtype=float)):
    i = wp.tid()
    wp.expect_eq(x[i], 2.0)
    wp.expect_neq(i, 0)
    wp.expect_near(x[i], 1.01)
    wp.expect_near(wp.vec2(x[i]), wp.vec2(1.0, 1.5), tolerance=0.25)
    x[i] = 7.0


def test_holding_checks_print_nothing(capfd):
    x = wp.array([1.0], dtype=float)
    q = wp.array([1.5], dtype=wp.float64)
    wp.launch(checks_that_hold, dim=1, inputs=[x, q])
    wp.synchronize()
    assert capfd.readouterr().out == ""


def test_failing_checks_report_and_the_kernel_goes_on(capfd):
    x = wp.array([1.0], dtype=float)
    wp.launch(checks_that_fail, dim=1, inputs=[x])
    wp.synchronize()
    out = capfd.readouterr().out
    assert out.count("Error, expect_eq() failed") == 1
    assert out.count("Error, expect_neq() failed") == 1
    assert out.count("Error, expect_near() failed") == 2
    assert "Expected: 2" in out and "Actual: 1" in out
    assert x.numpy()[0] == 7.0


@wp.kernel
def square_checked(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i] * x[i]
    wp.expect_near(v, x[i] * x[i])
    y[i] = v


def test_a_check_on_a_gradient_path_keeps_the_gradient():
    x = wp.array(np.array([0.5, -1.5, 2.0]), dtype=wp.float64, requires_grad=True)

    def fn(x):
        y = wp.zeros(x.shape, dtype=wp.float64, requires_grad=True)
        wp.launch(square_checked, dim=x.shape[0], inputs=[x, y])
        return y

    gradcheck(fn, [x])
