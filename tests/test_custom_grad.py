"""@wp.func_grad (custom adjoints), @wp.func_replay, and user functions with side effects in backward passes."""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck


@wp.func
def safe_sqrt(x: wp.float64):
    return wp.sqrt(x)


@wp.func_grad(safe_sqrt)
def adj_safe_sqrt(x: wp.float64, adj_ret: wp.float64):
    # the derivative is infinite at 0: report 0 there instead
    if x > 0.0:
        wp.adjoint[x] += adj_ret / (2.0 * wp.sqrt(x))


@wp.func
def triple(x: wp.float64):
    return x * 3.0


@wp.func_grad(triple)
def adj_triple_damped(x: wp.float64, adj_ret: wp.float64):
    # deliberately not the true derivative (3): shows the custom adjoint replaces the derived one
    wp.adjoint[x] += 0.5 * adj_ret


@wp.func
def weighted(a: wp.float64, b: wp.float64):
    return a * b, a + b


@wp.func_grad(weighted)
def adj_weighted(a: wp.float64, b: wp.float64, adj_prod: wp.float64, adj_sum: wp.float64):
    wp.adjoint[a] += b * adj_prod + adj_sum
    wp.adjoint[b] += a * adj_prod + adj_sum


@wp.func
def counted_double(counter: wp.array(dtype=int), x: wp.float64):
    wp.atomic_add(counter, 0, 1)
    return x * 2.0


@wp.func
def noisy_square(counter: wp.array(dtype=int), x: wp.float64):
    wp.atomic_add(counter, 0, 1)
    return x * x


@wp.func_replay(noisy_square)
def replay_noisy_square(counter: wp.array(dtype=int), x: wp.float64):
    wp.atomic_add(counter, 1, 1)  # counts replays separately
    return x * x


@wp.kernel
def sqrt_kernel(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = safe_sqrt(x[i]) * 2.0


@wp.kernel
def triple_kernel(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = triple(x[i])


@wp.kernel
def weighted_kernel(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p, s = weighted(a[i], b[i])
    y[i] = p * 2.0 + s * s


@wp.kernel
def counted_kernel(counter: wp.array(dtype=int), x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = counted_double(counter, x[i])


@wp.kernel
def replay_kernel(counter: wp.array(dtype=int), x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = noisy_square(counter, x[i])


def test_custom_adjoint_matches_finite_differences_away_from_zero(device):
    x = wp.array(np.array([0.5, 2.0, 3.5]), dtype=wp.float64, device=device)

    def fn(x):
        y = wp.zeros(3, dtype=wp.float64, device=device)
        wp.launch(sqrt_kernel, dim=3, inputs=[x, y], device=device)
        return y

    gradcheck(fn, [x])


def test_custom_adjoint_gives_its_value_at_the_singular_point(device):
    x = wp.array(np.array([0.0, 4.0]), dtype=wp.float64, requires_grad=True, device=device)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(sqrt_kernel, dim=2, inputs=[x, y], device=device)
    tape.backward(grads={y: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5])


def test_custom_adjoint_replaces_the_derived_one(device):
    x = wp.array(np.array([1.0, -2.0]), dtype=wp.float64, requires_grad=True, device=device)
    y = wp.zeros(2, dtype=wp.float64, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(triple_kernel, dim=2, inputs=[x, y], device=device)
    np.testing.assert_allclose(y.numpy(), [3.0, -6.0])
    tape.backward(grads={y: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.5])


def test_custom_adjoint_of_a_function_with_two_results(device):
    a = wp.array(np.array([0.3, -1.2, 2.0]), dtype=wp.float64, device=device)
    b = wp.array(np.array([1.5, 0.4, -0.7]), dtype=wp.float64, device=device)

    def fn(a, b):
        y = wp.zeros(3, dtype=wp.float64, device=device)
        wp.launch(weighted_kernel, dim=3, inputs=[a, b, y], device=device)
        return y

    gradcheck(fn, [a, b])


def test_side_effects_of_user_functions_are_not_replayed_by_backward(device):
    counter = wp.zeros(1, dtype=int, device=device)
    x = wp.array(np.arange(4, dtype=np.float64), dtype=wp.float64, requires_grad=True, device=device)
    y = wp.zeros(4, dtype=wp.float64, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(counted_kernel, dim=4, inputs=[counter, x, y], device=device)
    tape.backward(grads={y: np.ones(4)})
    assert counter.numpy()[0] == 4
    np.testing.assert_allclose(x.grad.numpy(), [2.0] * 4)


def test_custom_replay_runs_in_the_backward_pass(device):
    counter = wp.zeros(2, dtype=int, device=device)
    x = wp.array(np.array([1.0, 2.0, 3.0]), dtype=wp.float64, requires_grad=True, device=device)
    y = wp.zeros(3, dtype=wp.float64, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(replay_kernel, dim=3, inputs=[counter, x, y], device=device)
    np.testing.assert_array_equal(counter.numpy(), [3, 0])
    tape.backward(grads={y: np.ones(3)})
    np.testing.assert_array_equal(counter.numpy(), [3, 3])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_custom_adjoint_with_a_wrong_signature_is_refused(device):
    @wp.func
    def cube(x: float):
        return x * x * x

    @wp.func_grad(cube)
    def adj_cube(x: float):
        wp.adjoint[x] += 3.0 * x * x

    @wp.kernel
    def cube_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = cube(x[i])

    with pytest.raises(wp.CompileError, match="func_grad of 'cube' must take"):
        wp.launch(cube_kernel, dim=1, inputs=[wp.zeros(1, device=device), wp.zeros(1, device=device)],
                  device=device)


def test_adjoint_accessor_needs_a_parameter_name(device):
    @wp.func
    def ident(x: float):
        return x

    @wp.func_grad(ident)
    def adj_ident(x: float, adj_ret: float):
        y = x
        wp.adjoint[y] += adj_ret

    @wp.kernel
    def ident_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = ident(x[i])

    with pytest.raises(wp.CompileError, match="parameter name"):
        wp.launch(ident_kernel, dim=1, inputs=[wp.zeros(1, device=device), wp.zeros(1, device=device)],
                  device=device)


@wp.func
def slope_of_cube(x: float):
    return 3.0 * x * x


@wp.func_native("return 0.5f * x;", adj_snippet="adj_x += 0.5f * adj_ret;")
def half_native(x: float) -> float: ...


@wp.func
def cube(x: float):
    return x * x * x


@wp.func_grad(cube)
def adj_cube(x: float, adj_ret: float):
    # helpers called only from the custom adjoint (a @wp.func and a C++ snippet) are declared before it
    wp.adjoint[x] += slope_of_cube(x) * adj_ret * half_native(2.0)


@wp.kernel
def cube_kernel(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = cube(x[i])


def test_a_custom_adjoint_calls_functions_the_forward_does_not():
    def fn(x):
        out = wp.zeros(3, dtype=float, requires_grad=True)
        wp.launch(cube_kernel, 3, [x, out])
        return out

    x = wp.array(np.array([0.5, -1.0, 1.5], dtype=np.float32))
    np.testing.assert_allclose(fn(x).numpy(), x.numpy() ** 3, rtol=1e-6)
    gradcheck(fn, [x])
