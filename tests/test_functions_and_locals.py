"""Kernel functions and locals: several results, overloads, generics, recursion refused, casts, compile-time
values, and non-differentiable builtins on a gradient path; forward results and gradients."""


import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

from _kernel_checks import LOOP_COUNT, SCALE, _gradcheck, _inputs, _run


# ---------------------------------------------------------------------------------------------------------------
# Functions: several results, overloads, generics, recursion


@wp.func
def sincos_scaled(v: wp.float64, k: wp.float64):
    return wp.sin(v) * k, wp.cos(v) * k


@wp.func
def min_max(a: wp.float64, b: wp.float64):
    if a < b:
        return a, b
    return b, a


@wp.kernel
def call_multi_return(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s, c = sincos_scaled(x[i], 2.0)
    lo, hi = min_max(x[i], 0.25)
    y[i] = s * c + lo - 3.0 * hi


def test_func_multiple_results(device):
    x = _inputs(seed=7)
    expect = 4.0 * np.sin(x) * np.cos(x) + np.minimum(x, 0.25) - 3.0 * np.maximum(x, 0.25)
    np.testing.assert_allclose(_run(call_multi_return, x, device), expect, rtol=1e-12)
    _gradcheck(call_multi_return, x, device)


@wp.func
def describe_value(v: wp.float64):
    return v * 2.0


@wp.func
def describe_value(v: wp.int32):  # noqa: F811  (an overload by annotation, as in Warp)
    return wp.float64(v) + 1000.0


@wp.func
def generic_square(v: wp.Any):
    return v * v


@wp.kernel
def call_overloads(x: wp.array(dtype=wp.float64), k: wp.array(dtype=wp.int32), y: wp.array(dtype=wp.float64),
                   ki: wp.array(dtype=wp.int32), f32: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = describe_value(x[i]) + describe_value(k[i])
    ki[i] = generic_square(k[i])
    f32[i] = generic_square(wp.float32(x[i]))


def test_func_overloads_and_generic_any(device):
    x_np = _inputs(seed=8, n=5)
    k_np = np.array([-2, 0, 3, 7, 11], dtype=np.int32)
    x = wp.array(x_np, dtype=wp.float64, device=device)
    k = wp.array(k_np, dtype=wp.int32, device=device)
    y = wp.zeros(5, dtype=wp.float64, device=device)
    ki = wp.zeros(5, dtype=wp.int32, device=device)
    f32 = wp.zeros(5, dtype=wp.float32, device=device)
    wp.launch(call_overloads, dim=5, inputs=[x, k, y, ki, f32], device=device)
    np.testing.assert_allclose(y.numpy(), 2.0 * x_np + k_np + 1000.0, rtol=1e-12)
    np.testing.assert_array_equal(ki.numpy(), k_np * k_np)
    np.testing.assert_allclose(f32.numpy(), (x_np.astype(np.float32)) ** 2, rtol=1e-6)


@wp.func
def factorial(n: int):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


@wp.kernel
def call_factorial(out: wp.array(dtype=wp.int32)):
    out[0] = factorial(5)


def test_recursion_is_refused(device):
    out = wp.zeros(1, dtype=wp.int32, device=device)
    with pytest.raises(wp.CompileError, match="recursion"):
        wp.launch(call_factorial, dim=1, inputs=[out], device=device)


# ---------------------------------------------------------------------------------------------------------------
# Locals, casts, compile-time values


@wp.kernel
def augmented_assign(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = x[i]
    a += 1.0
    a *= x[i]
    a -= 0.5
    a /= 2.0
    k = 7
    k //= 2
    k %= 2
    k *= 5
    k -= 1
    y[i] = a + wp.float64(k)


def test_augmented_assignment(device):
    x = _inputs(seed=9)
    expect = ((x + 1.0) * x - 0.5) / 2.0 + 4.0
    np.testing.assert_allclose(_run(augmented_assign, x, device), expect, rtol=1e-12)
    _gradcheck(augmented_assign, x, device)


@wp.kernel
def casts(x: wp.array(dtype=wp.float64), k: wp.array(dtype=wp.int32), xi: wp.array(dtype=wp.int32),
          kf: wp.array(dtype=wp.float32), f32: wp.array(dtype=wp.float32)):
    i = wp.tid()
    xi[i] = int(x[i])
    kf[i] = float(k[i]) * 0.5 + float(i)
    f32[i] = float(x[i])


def test_int_float_casts(device):
    x_np = np.array([-2.7, -0.5, 0.0, 0.4, 3.99, 12.5])
    k_np = np.array([-3, -1, 0, 1, 2, 9], dtype=np.int32)
    x = wp.array(x_np, dtype=wp.float64, device=device)
    k = wp.array(k_np, dtype=wp.int32, device=device)
    xi = wp.zeros(6, dtype=wp.int32, device=device)
    kf = wp.zeros(6, dtype=wp.float32, device=device)
    f32 = wp.zeros(6, dtype=wp.float32, device=device)
    wp.launch(casts, dim=6, inputs=[x, k, xi, kf, f32], device=device)
    np.testing.assert_array_equal(xi.numpy(), np.trunc(x_np).astype(np.int32))
    np.testing.assert_allclose(kf.numpy(), k_np * 0.5 + np.arange(6), rtol=1e-12)
    np.testing.assert_allclose(f32.numpy(), x_np.astype(np.float32))


@wp.kernel
def module_constants(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * SCALE + wp.static(SCALE * 2.0 + float(LOOP_COUNT))


def test_static_expression_and_module_constants(device):
    x = _inputs(seed=10)
    np.testing.assert_allclose(_run(module_constants, x, device), x * SCALE + SCALE * 2.0 + LOOP_COUNT, rtol=1e-12)
    _gradcheck(module_constants, x, device)


def _make_scaled_kernel(factor, power):
    @wp.kernel
    def scaled_power(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        p = wp.float64(factor)
        for k in range(power):
            p = p * x[i]
        y[i] = p

    return scaled_power


def test_closure_over_enclosing_locals(device):
    x = _inputs(seed=11)
    k_cube = _make_scaled_kernel(0.5, 3)
    k_square = _make_scaled_kernel(4.0, 2)
    np.testing.assert_allclose(_run(k_cube, x, device), 0.5 * x ** 3, rtol=1e-12)
    np.testing.assert_allclose(_run(k_square, x, device), 4.0 * x ** 2, rtol=1e-12)
    _gradcheck(k_cube, x, device)


# ---------------------------------------------------------------------------------------------------------------
# Non-differentiable builtins on a gradient path


def test_nondifferentiable_builtin_on_gradient_path_is_refused(device):
    # the forward runs (as in Warp); asking for the adjoint raises, naming the builtin and the line
    @wp.kernel
    def floordiv_on_path(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = x[i] // 1.0

    line = floordiv_on_path.func.__code__.co_firstlineno + 3
    x = wp.array(np.array([-1.5, -0.5, 0.5, 2.5]), dtype=wp.float64, device=device, requires_grad=True)
    y = wp.zeros(4, dtype=wp.float64, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(floordiv_on_path, dim=4, inputs=[x, y], device=device)
    np.testing.assert_array_equal(y.numpy(), [-2.0, -1.0, 0.0, 2.0])
    with pytest.raises(wp.CompileError) as info:
        tape.backward(grads={y: np.ones(4)})
    message = str(info.value)
    assert "floordiv" in message
    assert f":{line}:" in message
    assert "floordiv_on_path" in message


def test_nondifferentiable_builtin_allowed_without_backward(device):
    @wp.kernel(enable_backward=False)
    def floordiv_forward_only(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = x[i] // 1.0

    x_np = np.array([-1.5, -0.5, 0.5, 2.5])
    np.testing.assert_array_equal(_run(floordiv_forward_only, x_np, device), np.floor(x_np))


def test_other_kernels_still_build_beside_a_non_differentiable_one(device):
    @wp.kernel
    def bad_floordiv(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = x[i] // 2.0

    @wp.kernel
    def good_double(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = x[i] * 2.0

    x = np.array([1.0, 3.0])
    for _ in range(2):  # a second launch must work too, not find a half-built kernel
        np.testing.assert_allclose(_run(good_double, x, device), 2.0 * x)
        np.testing.assert_allclose(_run(bad_floordiv, x, device), [0.0, 1.0])
    _gradcheck(good_double, x, device)


@wp.kernel
def stop_gradient_paths(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    y[i] = v * wp.stop_gradient(v) + v * (wp.stop_gradient(v) // 1.0)


def test_stop_gradient(device):
    # d/dx [x * c1 + x * c2] with c1 = x and c2 = floor(x) held constant: c1 + c2, and floordiv is allowed
    x_np = np.array([-1.5, -0.25, 0.5, 2.75])
    np.testing.assert_allclose(_run(stop_gradient_paths, x_np, device), x_np * x_np + x_np * np.floor(x_np))
    x = wp.array(x_np, dtype=wp.float64, device=device, requires_grad=True)
    y = wp.zeros(4, dtype=wp.float64, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(stop_gradient_paths, dim=4, inputs=[x, y], device=device)
    tape.backward(grads={y: np.ones(4)})
    np.testing.assert_allclose(x.grad.numpy(), x_np + np.floor(x_np), rtol=1e-12)


@wp.func
def first_above(x: wp.array(dtype=wp.float64), n: int, threshold: wp.float64):
    # returns from inside a loop, with two values
    for j in range(n):
        if x[j] > threshold:
            return x[j] * 2.0, j
    return wp.float64(-1.0), -1


@wp.kernel
def search_kernel(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64),
                  idx: wp.array(dtype=int)):
    v, j = first_above(x, n, wp.float64(0.5))
    y[0] = v
    idx[0] = j


def test_func_returns_values_from_inside_a_loop(device):
    y = wp.zeros(1, dtype=wp.float64, device=device)
    idx = wp.zeros(1, dtype=int, device=device)
    found = wp.array(np.array([0.1, 0.7, 0.9]), dtype=wp.float64, device=device)
    wp.launch(search_kernel, dim=1, inputs=[found, 3, y, idx], device=device)
    assert (y.numpy()[0], idx.numpy()[0]) == (1.4, 1)
    missing = wp.array(np.array([0.1, 0.2, 0.3]), dtype=wp.float64, device=device)
    wp.launch(search_kernel, dim=1, inputs=[missing, 3, y, idx], device=device)
    assert (y.numpy()[0], idx.numpy()[0]) == (-1.0, -1)

    def fn(x):
        out = wp.zeros(1, dtype=wp.float64, device=device)
        wp.launch(search_kernel, dim=1, inputs=[x, 3, out, wp.zeros(1, dtype=int, device=device)], device=device)
        return out

    gradcheck(fn, [found])


@wp.kernel
def where_select_kernel(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64),
                        out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    w = wp.where(a[i] > b[i], a[i] * a[i], b[i] * 3.0)
    s = wp.select(a[i] > 0.0, b[i] * b[i], a[i] * 2.0)  # Warp's order: value if false, value if true
    out[i] = w + s


def test_where_and_select_values_and_gradients(device):
    a = wp.array(np.array([0.5, -1.0, 2.0, 0.1]), dtype=wp.float64, device=device)
    b = wp.array(np.array([0.2, 0.3, 2.5, -0.4]), dtype=wp.float64, device=device)

    def fn(a, b):
        out = wp.zeros(4, dtype=wp.float64, device=device)
        wp.launch(where_select_kernel, dim=4, inputs=[a, b, out], device=device)
        return out

    an, bn = a.numpy(), b.numpy()
    expected = np.where(an > bn, an * an, bn * 3.0) + np.where(an > 0.0, an * 2.0, bn * bn)
    np.testing.assert_allclose(fn(a, b).numpy(), expected)
    gradcheck(fn, [a, b])


@wp.func
def _with_defaults(a: int = 123, b: int = 234) -> int:
    return a + b


@wp.func
def _scaled(x: float, s: float = 2.0):
    return x * s


@wp.kernel
def _call_with_defaults(out: wp.array(dtype=float)):
    out[0] = float(_with_defaults())
    out[1] = float(_with_defaults(111))
    out[2] = float(_with_defaults(b=111))
    out[3] = _scaled(1.5)
    out[4] = _scaled(1.5, 3.0)


def test_func_parameters_with_default_values(device):
    out = wp.zeros(5, dtype=float, device=device)
    wp.launch(_call_with_defaults, 1, inputs=[out], device=device)
    assert out.numpy().tolist() == [357.0, 345.0, 234.0, 3.0, 4.5]
    assert _with_defaults() == 357 and _scaled(1.5) == 3.0


def test_func_return_annotation_must_match_what_it_returns():
    @wp.func
    def narrow(x: wp.int32) -> wp.int16:
        return wp.int8(x)

    @wp.func
    def pair(x: int) -> tuple[int, int, int]:
        return (x + x, x * x)

    def use_narrow(out: wp.array(dtype=int)):
        out[0] = int(narrow(123))

    def use_pair(out: wp.array(dtype=int)):
        a, b, c = pair(3)
        out[0] = a

    out = wp.zeros(1, dtype=int)
    with pytest.raises(wp.CompileError, match="annotated as `int16` but the code returns a value of type `int8`"):
        wp.launch(wp.kernel(use_narrow, module="unique"), 1, inputs=[out])
    with pytest.raises(wp.CompileError, match="annotated as a tuple of 3 elements but the code returns 2 values"):
        wp.launch(wp.kernel(use_pair, module="unique"), 1, inputs=[out])
