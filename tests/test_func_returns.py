"""Functions that return what another function returns: `return f(x)` passes on every value f returns, and
`t = f(x)` keeps them together as a tuple (`t[i]`, `a, b = t`, `len(t)`, `return t`), as in Warp. Forward values
against NumPy, gradients with gradcheck, and the forms that are refused, each at its line.
"""

import os
import re

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

THIS_FILE = os.path.abspath(__file__)


def marker_line(name: str) -> int:
    """1-based number of the line of this file that carries the comment `# <- name`."""
    with open(THIS_FILE) as f:
        hits = [i + 1 for i, text in enumerate(f) if re.search(rf"# <- {re.escape(name)}$", text.rstrip())]
    assert len(hits) == 1, f"marker '{name}' found {len(hits)} times"
    return hits[0]


def assert_refused_at(error, marker: str, words: str):
    message = str(error)
    assert message.startswith(f"{THIS_FILE}:{marker_line(marker)}: "), message
    assert words in message, message


# Inputs away from every branch threshold below (0, and 1.5 or 2 for the loops), so finite differences are smooth.
X = np.array([-1.7, -0.6, 0.45, 1.3, 2.2])


def _run(kernel, x_np, device):
    x = wp.array(x_np, dtype=wp.float64, device=device)
    y = wp.zeros(len(x_np), dtype=wp.float64, device=device)
    wp.launch(kernel, dim=len(x_np), inputs=[x, y], device=device)
    return y.numpy()


def _gradcheck(kernel, x_np, device):
    def fn(x):
        y = wp.zeros(x.shape, dtype=wp.float64, device=device)
        wp.launch(kernel, dim=x.shape[0], inputs=[x, y], device=device)
        return y

    gradcheck(fn, [wp.array(x_np, dtype=wp.float64, device=device)])


# ---------------------------------------------------------------------------------------------------------------
# The forms, each with its reference in Python


@wp.func
def two_values(x: wp.float64):
    return x * x, 3.0 * x


def two_values_ref(x):
    return x * x, 3.0 * x


@wp.func
def passes_on(x: wp.float64):
    return two_values(x)


@wp.func
def passes_on_twice(x: wp.float64):
    return passes_on(x + 1.0)


@wp.func
def mixed_returns(x: wp.float64):
    if x > 0.0:
        return two_values(x)
    else:
        return x, -2.0 * x


def mixed_returns_ref(x):
    return two_values_ref(x) if x > 0.0 else (x, -2.0 * x)


@wp.func
def through_variable(x: wp.float64):
    t = two_values(x)
    return t


@wp.func
def rebound_in_if_and_loop(x: wp.float64):
    t = two_values(x)
    if x < 0.0:
        t = two_values(-x)
    for _k in range(2):
        a, b = t
        t = (a * 0.5, b + a)
    return t


def rebound_in_if_and_loop_ref(x):
    a, b = two_values_ref(-x if x < 0.0 else x)
    for _ in range(2):
        a, b = a * 0.5, b + a
    return a, b


@wp.func
def picks_items(x: wp.float64):
    t = two_values(x)
    first, _ = t
    return t[1] + two_values(x)[0] * wp.float64(len(t)), first * t[-1]


def picks_items_ref(x):
    a, b = two_values_ref(x)
    return b + 2.0 * a, a * b


@wp.func
def returns_call_from_loop(x: wp.float64, n: int):
    p = wp.float64(1.0)
    for _k in range(n):
        p = p * x
        if p > 1.5:
            return two_values(p)
    return p, x


def returns_call_from_loop_ref(x, n=3):
    p = 1.0
    for _ in range(n):
        p *= x
        if p > 1.5:
            return two_values_ref(p)
    return p, x


@wp.func
def returns_variable_from_loop(x: wp.float64, n: int):
    # the first `return` in the source gives a variable: its count is only known once lowered
    t = two_values(x)
    for _k in range(n):
        if t[0] > 2.0:
            return t
        t = two_values(t[1] * 0.5 + 0.25)
    return x, x


def returns_variable_from_loop_ref(x, n=3):
    t = two_values_ref(x)
    for _ in range(n):
        if t[0] > 2.0:
            return t
        t = two_values_ref(t[1] * 0.5 + 0.25)
    return x, x


@wp.struct
class Segment:
    start: wp.vec3d
    length: wp.float64


@wp.func
def segment_and_direction(x: wp.float64):
    s = Segment()
    s.start = wp.vec3d(x, 2.0 * x, 1.0)
    s.length = x * x
    return s, wp.vec3d(1.0, x, x * x)


@wp.func
def passes_on_struct_and_vector(x: wp.float64):
    return segment_and_direction(x)


@wp.func
def axis_angle_of(q: wp.quatd):
    return wp.quat_to_axis_angle(q)


def axis_angle_ref(x):
    """quat_from_axis_angle((0.6, 0, 0.8), 0.5 + 0.25 x) read back: the same axis and angle."""
    return np.array([0.6, 0.0, 0.8]), 0.5 + 0.25 * x


# One kernel per form: y = a + b * b of the form's two results (so both results reach the gradient).


@wp.kernel
def k_passes_on(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = passes_on(x[i])
    y[i] = a + b * b


@wp.kernel
def k_passes_on_twice(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = passes_on_twice(x[i])
    y[i] = a + b * b


@wp.kernel
def k_mixed_returns(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = mixed_returns(x[i])
    y[i] = a + b * b


@wp.kernel
def k_through_variable(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = through_variable(x[i])
    y[i] = a + b * b


@wp.kernel
def k_rebound_in_if_and_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = rebound_in_if_and_loop(x[i])
    y[i] = a + b * b


@wp.kernel
def k_picks_items(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = picks_items(x[i])
    y[i] = a + b * b


@wp.kernel
def k_returns_call_from_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = returns_call_from_loop(x[i], 3)
    y[i] = a + b * b


@wp.kernel
def k_returns_variable_from_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = returns_variable_from_loop(x[i], 3)
    y[i] = a + b * b


@wp.kernel
def k_struct_and_vector(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s, d = passes_on_struct_and_vector(x[i])
    y[i] = wp.dot(s.start, d) + s.length


@wp.kernel
def k_builtin_results(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    q = wp.quat_from_axis_angle(wp.vec3d(0.6, 0.0, 0.8), 0.5 + 0.25 * x[i])
    axis, angle = axis_angle_of(q)
    y[i] = axis[0] + 2.0 * axis[2] + angle * angle


def _combine(ref):
    return lambda x: (lambda a, b: a + b * b)(*ref(x))


FORMS = [
    (k_passes_on, _combine(two_values_ref)),
    (k_passes_on_twice, _combine(lambda x: two_values_ref(x + 1.0))),
    (k_mixed_returns, _combine(mixed_returns_ref)),
    (k_through_variable, _combine(two_values_ref)),
    (k_rebound_in_if_and_loop, _combine(rebound_in_if_and_loop_ref)),
    (k_picks_items, _combine(picks_items_ref)),
    (k_returns_call_from_loop, _combine(returns_call_from_loop_ref)),
    (k_returns_variable_from_loop, _combine(returns_variable_from_loop_ref)),
    (k_struct_and_vector, lambda x: x + 3.0 * x * x + x * x),  # start . d = x + 2x^2 + x^2, plus length x^2
    (k_builtin_results, lambda x: (lambda ax, ang: ax[0] + 2.0 * ax[2] + ang * ang)(*axis_angle_ref(x))),
]


@pytest.mark.parametrize("kernel, reference", FORMS, ids=[k.name for k, _ in FORMS])
def test_returned_results_forward_and_gradient(device, kernel, reference):
    expect = [reference(v) for v in X]
    np.testing.assert_allclose(_run(kernel, X, device), expect, rtol=1e-12, atol=1e-12)
    _gradcheck(kernel, X, device)


# ---------------------------------------------------------------------------------------------------------------
# The reported case, and a function calling another with the same argument types


@wp.func
def two_values_f32(x: float):
    return x, 2.0 * x


@wp.func
def forward_f32(x: float):
    return two_values_f32(x)


@wp.kernel
def k_reported(out: wp.array(dtype=float)):
    a, b = forward_f32(1.0)
    out[0] = a + b


def test_reported_case(device):
    out = wp.zeros(1, dtype=float, device=device)
    wp.launch(k_reported, dim=1, inputs=[out], device=device)
    assert out.numpy()[0] == 3.0


@wp.func
def halve(x: wp.float64):
    return 0.5 * x


@wp.func
def halve_squared(x: wp.float64):
    h = halve(x)  # same argument types as the caller: not recursion
    return h * h


@wp.kernel
def k_halve_squared(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = halve_squared(x[i])


def test_function_calling_another_with_the_same_argument_types(device):
    np.testing.assert_allclose(_run(k_halve_squared, X, device), 0.25 * X * X, rtol=1e-12)
    _gradcheck(k_halve_squared, X, device)


# ---------------------------------------------------------------------------------------------------------------
# Refused at compile time, each at its line


def _launch_expecting_error(kernel, device):
    out = wp.zeros(1, dtype=wp.float64, device=device)
    with pytest.raises(wp.CompileError) as info:
        wp.launch(kernel, dim=1, inputs=[out], device=device)
    return info.value


def test_other_return_with_another_count_is_refused(device):
    @wp.func
    def two_or_four(x: wp.float64):
        if x > 0.0:
            return two_values(x)
        return x, x, x, x  # <- four values

    @wp.kernel
    def k(out: wp.array(dtype=wp.float64)):
        a, b = two_or_four(wp.float64(1.0))
        out[0] = a

    assert_refused_at(_launch_expecting_error(k, device), "four values", "returns 4 values here but 2 elsewhere")


def test_tuple_inside_returned_tuple_is_refused(device):
    @wp.func
    def nested(x: wp.float64):
        t = two_values(x)
        return t, x  # <- nested tuple

    @wp.kernel
    def k(out: wp.array(dtype=wp.float64)):
        a, b = nested(wp.float64(1.0))
        out[0] = b

    assert_refused_at(_launch_expecting_error(k, device), "nested tuple", "tuple inside a tuple")


def test_tuple_and_single_value_merged_by_if_is_refused(device):
    @wp.func
    def tuple_or_value(x: wp.float64):
        t = two_values(x)
        if x > 0.0:  # <- if merges a tuple and a value
            t = x  # noqa: F841  (the kernel language sees the rebinding)
        return x

    @wp.kernel
    def k(out: wp.array(dtype=wp.float64)):
        out[0] = tuple_or_value(wp.float64(1.0))

    assert_refused_at(_launch_expecting_error(k, device), "if merges a tuple and a value",
                      "'t' is one value after one branch of this if and a tuple of 2 values after the other")


def test_tuple_becoming_single_value_in_loop_is_refused(device):
    @wp.func
    def tuple_then_value(x: wp.float64):
        t = two_values(x)
        for _k in range(3):  # <- loop turns a tuple into a value
            t = x  # noqa: F841  (the kernel language sees the rebinding)
        return x

    @wp.kernel
    def k(out: wp.array(dtype=wp.float64)):
        out[0] = tuple_then_value(wp.float64(1.0))

    assert_refused_at(_launch_expecting_error(k, device), "loop turns a tuple into a value",
                      "'t' is a tuple of 2 values before this loop and one value at the end of its body")


def test_recursion_through_a_returned_call_is_refused(device):
    @wp.func
    def countdown(x: wp.float64):
        if x > 0.0:
            return countdown(x - 1.0)  # <- recursive return
        return x

    @wp.kernel
    def k(out: wp.array(dtype=wp.float64)):
        out[0] = countdown(wp.float64(3.0))

    assert_refused_at(_launch_expecting_error(k, device), "recursive return", "recursion is not supported")


def test_tuple_index_out_of_range_is_refused(device):
    @wp.kernel
    def k(out: wp.array(dtype=wp.float64)):
        t = two_values(wp.float64(1.0))
        out[0] = t[2]  # <- index out of range

    assert_refused_at(_launch_expecting_error(k, device), "index out of range", "index 2 is out of range")

