"""Assignments into parts of values and array slots (`a[f(i)][1] += v`, `data[k].value += v`, `a[i].x = v`):
each target subexpression evaluated once, the target before the value of an augmented assignment, atomic and
differentiable `+=`/`-=` on array elements and their components, a user `add`/`sub` @wp.func taking the types of
a part of an element replacing the builtin (a whole element keeps the atomic add, as in Warp 1.19), and the
backward of read-modify-write slot updates refused."""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

from _user_operators import (update_double_slots, update_with_user_operators, user_operator_component_update,
                             user_operator_slot_sum, user_operator_slot_update)


@wp.func
def counted_index(counter: wp.array(dtype=int), i: int) -> int:
    wp.atomic_add(counter, 0, 1)
    return i


@wp.func
def counted_value(counter: wp.array(dtype=int), v: float) -> float:
    wp.atomic_add(counter, 0, 1)
    return v


@wp.struct
class Cell:
    value: float


@wp.kernel
def update_through_counted_indices(index_calls: wp.array(dtype=int), value_calls: wp.array(dtype=int),
                                   cells: wp.array(dtype=Cell), vecs: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    cells[counted_index(index_calls, i)].value += counted_value(value_calls, 5.0)
    vecs[counted_index(index_calls, i)][1] += 5.0
    vecs[counted_index(index_calls, i)].z = 2.0
    cells[counted_index(index_calls, i)].value *= 2.0


def test_each_target_subexpression_is_evaluated_once():
    index_calls, value_calls = wp.zeros(1, dtype=int), wp.zeros(1, dtype=int)
    cells = wp.zeros(1, dtype=Cell)
    vecs = wp.zeros(1, dtype=wp.vec3)
    wp.launch(update_through_counted_indices, dim=1, inputs=[index_calls, value_calls, cells, vecs])
    assert index_calls.numpy()[0] == 4 and value_calls.numpy()[0] == 1
    assert cells.numpy()[0][0] == 10.0
    np.testing.assert_array_equal(vecs.numpy(), [[0.0, 5.0, 2.0]])


@wp.func
def index_then_bump(state: wp.array(dtype=int)) -> int:
    i = state[0]
    state[0] = 1
    return i


@wp.func
def read_state(state: wp.array(dtype=int)) -> float:
    return float(state[0]) * 100.0


@wp.kernel
def target_before_value(dst: wp.array(dtype=wp.mat33), state: wp.array(dtype=int)):
    dst[index_then_bump(state)][1] += wp.vec3(read_state(state), 0.0, 0.0)


def test_an_augmented_target_is_evaluated_before_its_value():
    dst = wp.zeros(2, dtype=wp.mat33)
    state = wp.zeros(1, dtype=int)
    wp.launch(target_before_value, dim=1, inputs=[dst, state])
    expected = np.zeros((2, 3, 3), dtype=np.float32)
    expected[0, 1, 0] = 100.0  # row 1 of dst[0] (index read before the bump), value read after it
    np.testing.assert_array_equal(dst.numpy(), expected)


@wp.kernel
def copy_vecs(src: wp.array(dtype=wp.vec3d), dst: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    dst[i] = src[i]


@wp.kernel
def update_components(values: wp.array(dtype=wp.vec3d), rhs: wp.array(dtype=wp.float64)):
    i = wp.tid()
    values[i].x += rhs[i] * rhs[i]
    values[i][1] += rhs[i]
    values[i].z -= 3.0 * rhs[i]


@wp.kernel
def overwrite_component(values: wp.array(dtype=wp.vec3d), rhs: wp.array(dtype=wp.float64)):
    i = wp.tid()
    values[i].y = rhs[i] * 2.0


@wp.kernel
def update_matrix_rows(values: wp.array(dtype=wp.mat22d), rhs: wp.array(dtype=wp.float64)):
    i = wp.tid()
    values[i][1] += wp.vec2d(rhs[i], rhs[i] * rhs[i])
    values[i][0, 1] -= rhs[i]


def _updated_copy(kernel, dtype):
    def fn(src, rhs):
        out = wp.zeros(src.shape, dtype=dtype, requires_grad=True)
        wp.launch(copy_vecs if dtype is wp.vec3d else copy_mats, dim=src.shape[0], inputs=[src, out])
        wp.launch(kernel, dim=src.shape[0], inputs=[out, rhs])
        return out
    return fn


@wp.kernel
def copy_mats(src: wp.array(dtype=wp.mat22d), dst: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    dst[i] = src[i]


def test_component_updates_of_array_elements_have_correct_gradients():
    # before: the element was read and stored back, and its gradient counted twice per update
    rng = np.random.default_rng(1)
    src = wp.array(rng.uniform(-1, 1, (3, 3)), dtype=wp.vec3d)
    rhs = wp.array(rng.uniform(-1, 1, 3), dtype=wp.float64)
    gradcheck(_updated_copy(update_components, wp.vec3d), [src, rhs])


def test_a_component_store_passes_its_gradient_to_the_value_only():
    # before: the element read to rebuild it added the array's gradient to itself ([1, 2, 2] for a seed of ones)
    rhs = wp.array(np.array([0.5, -1.5]), dtype=wp.float64)

    def fn(rhs):
        out = wp.zeros(2, dtype=wp.vec3d, requires_grad=True)
        wp.launch(overwrite_component, dim=2, inputs=[out, rhs])
        return out

    gradcheck(fn, [rhs])
    out = wp.array(np.ones((1, 3)), dtype=wp.vec3d, requires_grad=True)
    one = wp.array([1.0], dtype=wp.float64, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(overwrite_component, dim=1, inputs=[out, one])
    tape.backward(grads={out: wp.array(np.ones((1, 3)), dtype=wp.vec3d)})
    # the overwritten component's gradient is consumed (the old value no longer reaches the output), the kept
    # components keep theirs, as in Warp 1.19
    np.testing.assert_array_equal(out.grad.numpy(), [[1.0, 0.0, 1.0]])
    np.testing.assert_array_equal(one.grad.numpy(), [2.0])


def test_matrix_row_and_entry_updates_have_correct_gradients():
    rng = np.random.default_rng(2)
    src = wp.array(rng.uniform(-1, 1, (2, 2, 2)), dtype=wp.mat22d)
    rhs = wp.array(rng.uniform(-1, 1, 2), dtype=wp.float64)
    gradcheck(_updated_copy(update_matrix_rows, wp.mat22d), [src, rhs])


def test_a_user_add_or_sub_taking_the_slot_types_replaces_the_builtin():
    # real Warp 1.19's numbers: x += 2 calls the user add(3, 2), whose `x - y` is the user sub: 3 * 2; the whole
    # element `scalars[0] += 2` stays the builtin atomic add
    values = wp.array([wp.vec3(3.0)], dtype=wp.vec3)
    scalars = wp.array([3.0], dtype=float)
    wp.launch(update_with_user_operators, dim=1, inputs=[values, scalars, 2.0])
    np.testing.assert_array_equal(values.numpy(), [[6.0, 6.0, 6.0]])
    np.testing.assert_array_equal(scalars.numpy(), [5.0])
    # float64 slots: the float32 user functions do not apply
    doubles = wp.array([wp.vec3d(3.0)], dtype=wp.vec3d)
    wp.launch(update_double_slots, dim=1, inputs=[doubles, 2.0])
    np.testing.assert_array_equal(doubles.numpy(), [[5.0, 3.0, 1.0]])


@wp.kernel
def scale_in_place(values: wp.array(dtype=float), rhs: wp.array(dtype=float)):
    i = wp.tid()
    values[i] *= rhs[i]


@wp.kernel
def scale_counts(counts: wp.array(dtype=int)):
    counts[0] *= 3


def test_a_user_operator_update_of_an_element_component_refuses_a_backward_kernel_when_built():
    """Warp 1.19 refuses building a backward-enabled kernel that updates a differentiable component of an array
    element with any operator but the builtin += / -= (a user `add` is one)."""
    values = wp.array([(0.0, 3.0)], dtype=wp.vec2, requires_grad=True)
    with pytest.raises(wp.CompileError, match="Differentiable composite slot augmented assignments"):
        wp.launch(user_operator_component_update, dim=1, inputs=[values, wp.array([2.0], dtype=float)])


@pytest.mark.parametrize("kernel, dtype, message", [(scale_in_place, float, "'\\*='")])
def test_read_modify_write_slot_updates_run_forward_and_refuse_backward(kernel, dtype, message):
    values = wp.array([3.0 if dtype is float else (0.0, 3.0)], dtype=dtype, requires_grad=True)
    rhs = wp.array([2.0], dtype=float, requires_grad=True)
    wp.launch(kernel, dim=1, inputs=[values, rhs])
    assert values.numpy().reshape(-1)[-1] == 6.0  # 3 * 2, also through the user add (whose x - y is the user sub)
    tape = Tape()
    with tape:
        wp.launch(kernel, dim=1, inputs=[values, rhs])
    with pytest.raises(wp.CompileError, match=message):
        tape.backward(grads={values: wp.ones(1, dtype=dtype)})


def test_a_user_add_leaves_a_whole_array_element_update_atomic_and_differentiable():
    values = wp.array([3.0], dtype=float, requires_grad=True)
    rhs = wp.array([2.0], dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(user_operator_slot_update, dim=1, inputs=[values, rhs])
    tape.backward(grads={values: wp.ones(1, dtype=float)})
    assert values.numpy()[0] == 5.0 and rhs.grad.numpy()[0] == 1.0  # real Warp 1.19's numbers
    gradcheck(_slot_sum, [wp.array([2.0, -1.0], dtype=float)])


def _slot_sum(rhs):
    out = wp.array([3.0], dtype=float, requires_grad=True)
    wp.launch(user_operator_slot_sum, dim=2, inputs=[out, rhs])
    return out


def test_integer_slot_updates_need_no_gradient():
    counts = wp.array([2], dtype=int)
    wp.launch(scale_counts, dim=1, inputs=[counts])
    assert counts.numpy()[0] == 6


@wp.kernel
def _small_int_updates(x: wp.array(dtype=wp.int8), y: wp.array(dtype=wp.int8), v: wp.array(dtype=wp.vec2s)):
    i = wp.tid()
    x[i] += y[i]
    x[i] -= wp.int8(3)
    v[i] += wp.vec2s(wp.int16(2), wp.int16(5))


def test_updates_of_slots_without_atomics_are_plain_read_modify_writes(device):
    """8- and 16-bit integer slots have no atomic add: += and -= read, update and store them, as in Warp (each
    thread updates its own slot here, so the result is exact)."""
    x = wp.full(3, 10, dtype=wp.int8, device=device)
    y = wp.full(3, 1, dtype=wp.int8, device=device)
    v = wp.zeros(3, dtype=wp.vec2s, device=device)
    wp.launch(_small_int_updates, 3, inputs=[x, y, v], device=device)
    assert x.numpy().tolist() == [8, 8, 8]
    assert v.numpy().tolist() == [[2, 5]] * 3
