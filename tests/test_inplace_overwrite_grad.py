"""Gradients of kernels that read an array element and then overwrite it (`x[i] = x[i] * x[i]`).

The backward kernel replays the forward without its stores, reading the arrays as the forward left them: a read
that came before a write of the same element would see the new value, so the adjoint would be evaluated at the
wrong point (Warp gives that wrong number silently). Such a kernel is refused when a gradient through it is asked
for, naming the kernel, the array and the lines of the read and the write; the forward keeps working. Reads whose
value the backward does not need (linear updates, reads only feeding a constant-gradient path) stay allowed, and
write-then-read of an element (the read sees the written value in the forward and in the replay) is right.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck
from kernels.errors import CompileError


@wp.kernel
def copy_float(src: wp.array(dtype=wp.float64), dst: wp.array(dtype=wp.float64)):
    i = wp.tid()
    dst[i] = src[i]


@wp.kernel
def square_in_place(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def accumulate_square_in_place(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] += x[i] * x[i]


@wp.kernel
def scale_in_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    i = wp.tid()
    for _k in range(n):
        x[i] = x[i] * y[i]


@wp.struct
class Particles:
    q: wp.array(dtype=wp.float64)


@wp.kernel
def square_member_in_place(p: Particles):
    i = wp.tid()
    p.q[i] = wp.sin(p.q[i])


@wp.func
def read_element(a: wp.array(dtype=wp.float64), i: int):
    return a[i]


@wp.func
def write_element(a: wp.array(dtype=wp.float64), i: int, v: wp.float64):
    a[i] = v


@wp.kernel
def square_through_functions(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = read_element(x, i)
    write_element(x, i, v * v)


def _in_place(kernel, x0, *extra):
    """Taped: copy `x0` into a fresh array and run `kernel` on it in place."""
    x = wp.zeros(x0.shape[0], dtype=wp.float64, requires_grad=True)
    wp.launch(copy_float, x0.shape[0], inputs=[x0, x])
    wp.launch(kernel, x0.shape[0], inputs=[x, *extra])
    return x


def _inputs(n=4):
    rng = np.random.default_rng(7)
    return wp.array(rng.uniform(0.5, 1.5, n), dtype=wp.float64, requires_grad=True)


@pytest.mark.parametrize("kernel", [square_in_place, accumulate_square_in_place, square_through_functions],
                         ids=["store", "augmented", "functions"])
def test_read_then_overwrite_refused_when_gradient_asked(kernel):
    x0 = _inputs()
    with pytest.raises(CompileError) as info:
        gradcheck(lambda x0: _in_place(kernel, x0), [x0])
    message = str(info.value)
    assert f"'{kernel.name}'" in message and "'x'" in message
    assert "read on line" in message and "written on line" in message


def test_refusal_names_lines_of_read_and_write():
    x0 = _inputs()
    tape = Tape()
    with tape:
        x = _in_place(square_in_place, x0)
    line = square_in_place.func.__code__.co_firstlineno + 3
    with pytest.raises(CompileError, match=f"read on line {line} and written on line {line}"):
        tape.backward(grads={x: np.ones(4)})


def test_read_then_overwrite_in_dynamic_loop_refused():
    x0, y = _inputs(), _inputs()
    with pytest.raises(CompileError, match="scale_in_loop"):
        gradcheck(lambda x0, y: _in_place(scale_in_loop, x0, y, 3), [x0, y])


def test_read_then_overwrite_struct_member_refused():
    x0 = _inputs()

    def fn(x0):
        p = Particles()
        p.q = wp.zeros(4, dtype=wp.float64, requires_grad=True)
        wp.launch(copy_float, 4, inputs=[x0, p.q])
        wp.launch(square_member_in_place, 4, inputs=[p])
        return p.q

    with pytest.raises(CompileError, match="'p.q'"):
        gradcheck(fn, [x0])


def test_in_place_forward_keeps_working():
    """Refusal is about gradients only: forward launches, also recorded on a tape, run and give the values."""
    x = wp.array([1.0, 2.0, 3.0], dtype=wp.float64, requires_grad=True)
    wp.launch(square_in_place, 3, inputs=[x])
    tape = Tape()
    with tape:
        wp.launch(square_in_place, 3, inputs=[x])
    np.testing.assert_array_equal(x.numpy(), [1.0, 16.0, 81.0])
    with pytest.raises(CompileError, match="square_in_place"):
        wp.launch(square_in_place, 3, inputs=[x], adj_inputs=[x.grad], adjoint=True)


@wp.kernel
def add_in_place(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = x[i] + y[i] * y[i]


@wp.kernel
def scale_by_constant_in_place(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = wp.float64(2.5) * x[i] - y[i]


@wp.kernel
def other_element_in_place(x: wp.array(dtype=wp.float64)):
    x[0] = x[1] * x[1] + x[2]


@wp.kernel
def write_then_read(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = y[i] * y[i]
    v = x[i]
    z[i] = v * v * y[i]


@pytest.mark.parametrize("kernel", [add_in_place, scale_by_constant_in_place], ids=["add", "scale"])
def test_linear_in_place_updates_gradcheck(kernel):
    """The adjoint of these updates never reads the overwritten value: allowed, and right."""
    gradcheck(lambda x0, y: _in_place(kernel, x0, y), [_inputs(), _inputs()])


def test_read_of_a_different_constant_element_gradcheck():
    def fn(x0):
        x = wp.zeros(3, dtype=wp.float64, requires_grad=True)
        wp.launch(copy_float, 3, inputs=[x0, x])
        wp.launch(other_element_in_place, 1, inputs=[x])
        return x

    gradcheck(fn, [_inputs(3)])


def test_write_then_read_of_same_element_gradcheck():
    """The reverse case: the read sees the value just written, in the forward and in the backward replay."""
    def fn(y):
        x = wp.zeros(4, dtype=wp.float64, requires_grad=True)
        z = wp.zeros(4, dtype=wp.float64, requires_grad=True)
        wp.launch(write_then_read, 4, inputs=[x, y, z])
        return [x, z]

    gradcheck(fn, [_inputs()])


@wp.kernel
def stop_gradient_in_place(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.stop_gradient(x[i])
    x[i] = s * s + y[i]


@wp.kernel
def count_and_record(counts: wp.array(dtype=wp.int32), table: wp.array(dtype=wp.int32),
                     slots: wp.array(dtype=wp.int32), x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    c = counts[i]
    counts[i] = c + 1
    slots[i] = table[c]
    y[i] = x[i] * x[i]


@wp.kernel
def count_and_scale(counts: wp.array(dtype=wp.int32), table: wp.array(dtype=wp.float64),
                    x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    c = counts[i]
    counts[i] = c + 1
    y[i] = x[i] * table[c]


def test_reads_not_needed_by_the_adjoint_are_allowed():
    """A read behind wp.stop_gradient whose value only meets constants, and an integer counter read and bumped
    whose value only indexes an integer table: the backward needs neither value, so both are allowed."""
    x = wp.array([2.0, 3.0], dtype=wp.float64, requires_grad=True)
    y = wp.array([1.0, 1.0], dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(stop_gradient_in_place, 2, inputs=[x, y])
    tape.backward(grads={x: np.ones(2)})
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])

    counts = wp.array([0, 1], dtype=wp.int32)
    table = wp.array([3, 5, 7], dtype=wp.int32)
    slots = wp.zeros(2, dtype=wp.int32)
    xs = wp.array([1.0, 2.0], dtype=wp.float64, requires_grad=True)
    ys = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(count_and_record, 2, inputs=[counts, table, slots, xs, ys])
    tape.backward(grads={ys: np.ones(2)})
    np.testing.assert_array_equal(xs.grad.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(slots.numpy(), [3, 5])


def test_overwritten_integer_read_feeding_the_gradient_refused():
    """The counter's old value picks the factor of x's gradient: the replay would pick the next one."""
    counts = wp.array([0, 1], dtype=wp.int32)
    table = wp.array([3.0, 5.0, 7.0], dtype=wp.float64)
    xs = wp.array([1.0, 2.0], dtype=wp.float64, requires_grad=True)
    ys = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(count_and_scale, 2, inputs=[counts, table, xs, ys])
    with pytest.raises(CompileError, match="'counts'"):
        tape.backward(grads={ys: np.ones(2)})


@wp.kernel
def relu_in_place(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if x[i] < wp.float64(0.0):
        x[i] = wp.float64(0.0)
    y[i] = x[i] * x[i]


def test_overwritten_read_deciding_a_branch_refused():
    """The replay would test the new value and take the other branch (skipping the write's adjoint)."""
    x0 = wp.array([-1.0, 2.0], dtype=wp.float64, requires_grad=True)

    def fn(x0):
        y = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        x = _in_place(relu_in_place, x0, y)
        return [x, y]

    with pytest.raises(CompileError, match="relu_in_place"):
        gradcheck(fn, [x0])


@wp.kernel
def sort_pairs_in_place(keys: wp.array(dtype=wp.int32)):
    i = wp.tid()
    a = keys[2 * i]
    b = keys[2 * i + 1]
    if a > b:
        keys[2 * i] = b
        keys[2 * i + 1] = a


def test_integer_only_in_place_kernel_has_a_backward():
    """Nothing differentiable is read or written: the (empty) backward is allowed, as for the hash grid's sort."""
    keys = wp.array([3, 1, 2, 4], dtype=wp.int32)
    tape = Tape()
    with tape:
        wp.launch(sort_pairs_in_place, 2, inputs=[keys])
    tape.backward()
    np.testing.assert_array_equal(keys.numpy(), [1, 3, 2, 4])
