"""`wp.Function`-typed parameters of @wp.func: a function (a @wp.func or a simple builtin) passed by name, the
callee compiled once per function passed; values against plain Python, gradients by central differences and
wp.grad, Warp's refusals, and real Warp's values."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.func
def double_it(x: float):
    return x * 2.0


@wp.func
def cube(x: float):
    return x * x * x


@wp.func
def apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def apply_twice(g: wp.Function, x: float):
    f = g  # a local alias of the function
    return f(f(x))


@wp.func
def apply_default(g: wp.Function = double_it, x: float = 3.0):
    return g(x)


@wp.func
def apply_binary(g: wp.Function, x: float, y: float):
    return g(x, y)


@wp.func
def nested(x: float):
    return apply(cube, x) + apply_twice(double_it, x)


@wp.kernel
def values(out: wp.array(dtype=float)):
    out[0] = apply(double_it, 3.0)
    out[1] = apply(cube, 2.0)
    out[2] = apply_twice(cube, 2.0)
    out[3] = apply_default()
    out[4] = apply(g=wp.sqrt, x=9.0)
    out[5] = apply_binary(wp.max, 7.0, 4.0)
    out[6] = nested(1.5)


@wp.kernel
def smooth(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = apply64(wp.sin, x[i]) * apply64(square64, x[i])


@wp.func
def square64(x: wp.float64):
    return x * x


@wp.func
def apply64(g: wp.Function, x: wp.float64):
    return g(x)


@wp.kernel
def grad_of_apply(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.grad(apply)(cube, x[i])


def test_functions_passed_by_name():
    out = wp.zeros(7, dtype=float)
    wp.launch(values, dim=1, inputs=[out])
    expected = [6.0, 8.0, 512.0, 6.0, 3.0, 7.0, 1.5 ** 3 + 6.0]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_gradients_through_function_parameters():
    x = wp.array(np.linspace(-1.0, 1.2, 5), dtype=wp.float64)

    def fn(x):
        out = wp.zeros(5, dtype=wp.float64, requires_grad=True)
        wp.launch(smooth, dim=5, inputs=[x, out])
        return out

    gradcheck(fn, [x])
    xs = np.array([0.5, -2.0], np.float32)
    out = wp.zeros(2, dtype=float)
    wp.launch(grad_of_apply, dim=2, inputs=[wp.array(xs), out])
    np.testing.assert_allclose(out.numpy(), 3.0 * xs ** 2, rtol=1e-6)  # d(x^3)/dx; g itself has no gradient


def test_refusals_in_warps_words():
    @wp.kernel(module="unique")
    def prints(out: wp.array(dtype=float)):
        out[0] = apply(wp.printf, 0.5)

    with pytest.raises(wp.CompileError, match="received unsupported built-in function 'printf'"):
        wp.launch(prints, dim=1, inputs=[wp.zeros(1, dtype=float)])

    @wp.func
    def with_grad(g: wp.Function, x: float):
        return g(x)

    @wp.func_grad(with_grad)
    def adj_with_grad(g: wp.Function, x: float, adj_ret: float):
        wp.adjoint[x] += adj_ret

    @wp.kernel(module="unique")
    def custom(out: wp.array(dtype=float)):
        out[0] = with_grad(double_it, 1.0)

    with pytest.raises(wp.CompileError, match="not supported on functions with custom gradients"):
        wp.launch(custom, dim=1, inputs=[wp.zeros(1, dtype=float)])

    @wp.kernel(module="unique")
    def not_a_function(out: wp.array(dtype=float)):
        out[0] = apply(1.0, 2.0)

    with pytest.raises(wp.CompileError, match="no overload of 'apply'"):
        wp.launch(not_a_function, dim=1, inputs=[wp.zeros(1, dtype=float)])


_PROGRAM = '''
import numpy as np


@wp.func
def half(x: float):
    return x * 0.5


@wp.func
def apply(g: wp.Function, x: float):
    return g(x)


@wp.func
def combine(g: wp.Function, h: wp.Function, x: float, y: float):
    return g(x) + h(x, y)


@wp.kernel
def run_kernel(x: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[0, i] = apply(half, x[i])
    out[1, i] = apply(wp.cos, x[i])
    out[2, i] = combine(wp.exp, wp.min, x[i], 0.25)
    out[3, i] = combine(half, wp.atan2, x[i], 2.0)


def run(wp, Tape):
    x = wp.array(np.linspace(-1.0, 1.0, 7).astype(np.float32))
    out = wp.zeros((4, 7), dtype=float)
    wp.launch(run_kernel, dim=7, inputs=[x, out])
    return {"out": out.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "function_parameters")
    np.testing.assert_array_equal(ours["out"], warp["out"])


def test_functions_are_passed_from_python_too():
    """As in Warp, a @wp.func with `wp.Function` parameters runs from Python with a @wp.func or a builtin."""
    assert apply(cube, 2.0) == 8.0
    assert apply(g=double_it, x=4.0) == 8.0
    assert apply_default() == 6.0
    assert abs(apply(wp.sin, 0.5) - np.sin(0.5)) < 1e-6
    with pytest.raises(RuntimeError, match="^Error calling function 'apply', no overload found"):
        apply(lambda x: x, 3.0)
