"""Tape scenarios: seeding, zeroing, foreign arrays as constants, recorded adjoint launches, overwrite checks."""

import warnings

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck
from autodiff.tape import OverwriteError


@wp.kernel
def copy_scaled(src: wp.array(dtype=float), scale: float, dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = src[i] * scale


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def increment(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def _chain(device):
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True, device=device)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    z = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    s = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(copy_scaled, dim=3, inputs=[x, 1.0, y], device=device)
        wp.launch(copy_scaled, dim=3, inputs=[y, 1.0, z], device=device)
        wp.launch(copy_scaled, dim=3, inputs=[z, 1.0, s], device=device)
    return tape, x, y, z, s


def test_repeated_backward_with_grads_and_zero_never_accumulates(device):
    tape, x, y, z, s = _chain(device)
    ones = np.ones(3, np.float32)
    for _ in range(2):
        for seeded in (y, z, s):
            tape.backward(grads={seeded: ones})
            np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])
            tape.zero()
            for a in (x, y, z, s):
                np.testing.assert_array_equal(a.grad.numpy(), [0, 0, 0])


def test_backward_marker_says_whether_gradients_may_be_non_zero(device):
    """Tape.backward_marker: [False] until a backward, [True] after it until zero() or reset(); the list stays
    the same object (a solver keeps it after the tape is gone)."""
    tape, x, y, z, s = _chain(device)
    marker = tape.backward_marker()
    assert marker == [False]
    tape.backward(grads={s: np.ones(3, np.float32)})
    assert marker == [True] and np.abs(x.grad.numpy()).max() > 0
    tape.zero()
    assert marker == [False] and tape.backward_marker() is marker
    tape.backward(grads={s: np.ones(3, np.float32)})
    tape.reset()
    assert marker == [False]


def test_filling_output_grad_by_hand_then_backward(device):
    tape, x, y, z, s = _chain(device)
    for _ in range(3):
        s.grad.fill_(1.0)
        tape.backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])
        tape.zero()


def test_backward_loss_seeds_one_and_reset_clears(device):
    x = wp.array(np.array([3.0], np.float32), requires_grad=True, device=device)
    y = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(square, dim=1, inputs=[x, y], device=device)
    tape.backward(loss=y)
    np.testing.assert_allclose(x.grad.numpy(), [6.0])
    tape.reset()
    assert tape.launches == []
    np.testing.assert_array_equal(x.grad.numpy(), [0.0])
    with pytest.raises(ValueError, match="one-element"):
        tape.backward(loss=wp.zeros(2, dtype=float, device=device))


def test_numpy_array_passed_to_taped_launch_is_a_constant(device):
    if device != "cpu":
        pytest.skip("numpy arrays live in host memory")
    x_np = np.array([1.0, 2.0, 3.0], np.float32)
    before = x_np.copy()
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[x_np, y], device=device)
    np.testing.assert_allclose(y.numpy(), before * before)
    tape.backward(grads={y: np.ones(3, np.float32)})
    np.testing.assert_array_equal(x_np, before)


def test_torch_tensor_passed_to_taped_launch_is_a_constant(device):
    torch = pytest.importorskip("torch")
    if device != "cpu":
        pytest.skip("CPU tensor")
    t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float32, requires_grad=False)
    before = t.clone()
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[t, y], device=device)
    tape.backward(grads={y: np.ones(3, np.float32)})
    assert torch.equal(t, before)


def test_recorded_adjoint_launch_replays_the_adjoint(device):
    x = wp.array(np.array([1.0, 2.0], np.float32), device=device)
    y = wp.zeros(2, dtype=float, device=device)
    adj_x = wp.zeros(2, dtype=float, device=device)
    adj_y = wp.array(np.ones(2, np.float32), device=device)
    cmd = wp.launch(square, dim=2, inputs=[x, y], device=device, adjoint=True, adj_inputs=[adj_x, adj_y],
                    record_cmd=True)
    np.testing.assert_array_equal(adj_x.numpy(), [0, 0])  # recording runs nothing
    cmd.launch()
    np.testing.assert_allclose(adj_x.numpy(), [2.0, 4.0])
    adj_x.zero_()
    cmd.launch()
    np.testing.assert_allclose(adj_x.numpy(), [2.0, 4.0])


def test_recorded_forward_launch_parameters_and_dim(device):
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), device=device)
    y = wp.zeros(3, dtype=float, device=device)
    cmd = wp.launch(copy_scaled, dim=3, inputs=[x, 2.0, y], device=device, record_cmd=True)
    np.testing.assert_array_equal(y.numpy(), [0, 0, 0])
    cmd.launch()
    np.testing.assert_allclose(y.numpy(), [2, 4, 6])
    cmd.set_param_by_name("scale", 3.0)
    cmd.launch()
    np.testing.assert_allclose(y.numpy(), [3, 6, 9])
    cmd.set_param_at_index(1, 1.0)
    cmd.set_dim(1)
    y.zero_()
    cmd.launch()
    np.testing.assert_allclose(y.numpy(), [1, 0, 0])
    with pytest.raises(wp.LaunchError, match="no parameter"):
        cmd.set_param_by_name("nope", 1.0)


def test_record_func_runs_in_reverse_order(device):
    x = wp.array(np.array([2.0], np.float32), requires_grad=True, device=device)
    y = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    z = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(square, dim=1, inputs=[x, y], device=device)
        # a step done outside kernels (z = 3 y), with its gradient given by hand
        z.assign(3.0 * y.numpy())

        def backward():
            y.grad.assign(y.grad.numpy() + 3.0 * z.grad.numpy())

        tape.record_func(backward, [y, z])
    tape.backward(grads={z: np.ones(1, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [12.0])


def test_overwrite_of_an_array_read_earlier_is_reported(device):
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    y = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    saved = wp.config.overwrite_check
    try:
        wp.config.overwrite_check = "warn"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with Tape():
                wp.launch(square, dim=2, inputs=[x, y], device=device)
                wp.launch(increment, dim=2, inputs=[x], device=device)
        messages = [str(w.message) for w in caught]
        assert any("increment" in m and "square" in m and "'x'" in m for m in messages), messages
        wp.config.overwrite_check = "error"
        with pytest.raises(OverwriteError, match="increment"):
            with Tape():
                wp.launch(square, dim=2, inputs=[x, y], device=device)
                wp.launch(increment, dim=2, inputs=[x], device=device)
    finally:
        wp.config.overwrite_check = saved


def test_gradcheck_reports_a_wrong_gradient(device):
    """The checker itself must fail when the tape's gradient is wrong (here: a hand-written wrong backward)."""
    x = wp.array(np.array([0.5, 1.5], np.float64), dtype=wp.float64, device=device)

    def fn(x):
        y = wp.zeros(2, dtype=wp.float64, device=device)
        y.assign(x.numpy() ** 2)
        return y

    with pytest.raises(AssertionError, match="FAILED"):
        gradcheck(fn, [x])


@wp.struct
class Stage:
    source: wp.array(dtype=float)
    result: wp.array(dtype=float)


@wp.kernel
def stage_square(s: Stage):
    i = wp.tid()
    s.result[i] = s.source[i] * s.source[i]


def test_missing_gradient_buffer_in_a_struct_is_named(device):
    from autodiff import MissingGradientError
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    middle = wp.zeros(2, dtype=float, device=device)  # forgot requires_grad: the chain x -> middle -> out breaks
    out = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    first, second = Stage(), Stage()
    first.source, first.result = x, middle
    second.source, second.result = middle, out
    tape = Tape()
    with tape:
        wp.launch(stage_square, dim=2, inputs=[first], device=device)
        wp.launch(stage_square, dim=2, inputs=[second], device=device)
    with pytest.raises(MissingGradientError, match="field 'source' of struct argument 's'.*stage_square"):
        tape.backward(grads={out: np.ones(2, np.float32)})
    middle.requires_grad = True  # the struct holds the array by reference: fixing it afterwards works
    tape.backward(grads={out: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * x.numpy() ** 3)


def test_a_copy_into_an_array_without_gradient_buffer_is_refused(device):
    from autodiff import MissingGradientError
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    middle = wp.zeros(2, dtype=float, device=device)  # no gradient buffer: the copy would stop the gradient
    y = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.copy(middle, x)
        wp.launch(square, dim=2, inputs=[middle], outputs=[y], device=device)
    with pytest.raises(MissingGradientError, match="a copy .* writes an array without a gradient buffer"):
        tape.backward(grads={y: np.ones(2, np.float32)})


def test_a_gradient_set_by_hand_that_does_not_fit_the_parameter_is_refused(device):
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    y = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[x], outputs=[y], device=device)
    x.grad = wp.zeros(2, dtype=wp.float64, device=device)  # the shape fits, the element type does not
    with pytest.raises(wp.LaunchError, match="kernel 'square' argument 'x'"):
        tape.backward(grads={y: np.ones(2, np.float32)})


def test_a_struct_shared_by_two_tapes_follows_its_fields_and_their_gradient_buffers(device):
    """Tapes share their copy of a struct argument while its fields stay the same: a field assigned between two
    tapes, or a member given a new gradient buffer, must move the second tape's gradients there."""
    a, b = (wp.array(np.array(v, np.float32), requires_grad=True, device=device) for v in ([1.0, 2.0], [3.0, 5.0]))
    y = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    s = Stage()
    s.source, s.result = a, y

    def rollout():
        tape = Tape()
        with tape:
            wp.launch(stage_square, dim=2, inputs=[s], device=device)
        tape.backward(grads={y: np.ones(2, np.float32)})
        return tape

    rollout()
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * a.numpy())
    s.source = b  # a new field value: the next tape's copy holds b
    rollout()
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * b.numpy())
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * a.numpy())  # untouched by the second tape
    fresh = wp.zeros(2, dtype=float, device=device)
    b.grad = fresh  # a new gradient buffer, same fields
    rollout()
    np.testing.assert_allclose(fresh.numpy(), 2.0 * b.numpy())


def test_a_broken_gradient_chain_is_refused_before_any_adjoint_runs(device):
    """The launches after the break (x -> middle without a gradient buffer -> y -> out) would run their adjoints
    first in reverse order: backward refuses before, so no gradient is half-computed."""
    from autodiff import MissingGradientError
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    middle = wp.zeros(2, dtype=float, device=device)
    y, out = (wp.zeros(2, dtype=float, requires_grad=True, device=device) for _ in range(2))
    tape = Tape()
    with tape:
        wp.launch(square, dim=2, inputs=[x], outputs=[middle], device=device)
        wp.launch(square, dim=2, inputs=[middle], outputs=[y], device=device)
        wp.launch(square, dim=2, inputs=[y], outputs=[out], device=device)
    with pytest.raises(MissingGradientError, match="array argument 'x' of kernel 'square'"):
        tape.backward(grads={out: np.ones(2, np.float32)})
    assert not y.grad.numpy().any() and not x.grad.numpy().any()


def test_a_struct_reused_with_new_arrays_between_taped_launches_keeps_each_launchs_arrays(device):
    """A struct whose array fields are reassigned between two taped launches: each launch's adjoint goes to the
    arrays that launch read and wrote, not to those the struct holds when backward runs."""
    a, b = (wp.array(np.array(v, np.float32), requires_grad=True, device=device) for v in ([1.0, 2.0], [3.0, 5.0]))
    ya, yb = (wp.zeros(2, dtype=float, requires_grad=True, device=device) for _ in range(2))
    s = Stage()
    tape = Tape()
    with tape:
        s.source, s.result = a, ya
        wp.launch(stage_square, dim=2, inputs=[s], device=device)
        s.source, s.result = b, yb
        wp.launch(stage_square, dim=2, inputs=[s], device=device)
    tape.backward(grads={ya: np.ones(2, np.float32), yb: np.full(2, 10.0, np.float32)})
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * a.numpy())
    np.testing.assert_allclose(b.grad.numpy(), 20.0 * b.numpy())
    tape.zero()
    assert not a.grad.numpy().any() and not b.grad.numpy().any()


@wp.kernel(enable_backward=False)
def square_forward_only(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_a_kernel_without_backward_is_refused_only_where_a_gradient_reaches_it(device):
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    y, z = (wp.zeros(2, dtype=float, requires_grad=True, device=device) for _ in range(2))
    tape = Tape()
    with tape:
        wp.launch(square_forward_only, dim=2, inputs=[x], outputs=[y], device=device)
        wp.launch(square, dim=2, inputs=[x], outputs=[z], device=device)
    tape.backward(grads={z: np.ones(2, np.float32)})  # nothing reaches y: its kernel's adjoint is not needed
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x.numpy())
    tape.zero()
    with pytest.raises(wp.LaunchError, match="'square_forward_only' was compiled with enable_backward=False"):
        tape.backward(grads={y: np.ones(2, np.float32)})


def test_constants_without_gradient_buffers_are_fine(device):
    """An array that no differentiable input reaches is a constant: no gradient buffer needed."""
    x = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True, device=device)
    c = wp.array(np.array([3.0, 4.0], np.float32), device=device)
    d = wp.zeros(2, dtype=float, device=device)
    y = wp.zeros(2, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(copy_scaled, dim=2, inputs=[c, 2.0, d], device=device)  # d = 2c: constant
        wp.launch(copy_scaled, dim=2, inputs=[d, 1.0, y], device=device)
        wp.launch(square, dim=2, inputs=[x, y], device=device)
    tape.backward(grads={y: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x.numpy())


# ------------------------------------------------------------------------------------------------ copies on the tape


@wp.kernel
def double_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


def _squared(a, device):
    out = wp.zeros(a.shape, dtype=float, device=device, requires_grad=True)
    wp.launch(square, a.shape, inputs=[a, out], device=device)
    return out


def test_clone_copy_and_assign_are_differentiated(device):
    """wp.clone, wp.copy (with offsets, and from a strided view) and array.assign on a tape pass gradients to
    their source (they used to leave it at zero)."""
    rng = np.random.default_rng(1)
    x = wp.array(rng.uniform(0.5, 1.5, 6), dtype=float, device=device)

    def through_clone(x):
        return _squared(wp.clone(x), device)

    def through_window(x):
        w = wp.zeros(3, dtype=float, device=device, requires_grad=True)
        wp.copy(w, x, dest_offset=0, src_offset=2, count=3)
        return _squared(w, device)

    def through_assign(x):
        d = wp.zeros(6, dtype=float, device=device, requires_grad=True)
        d.assign(x)
        return _squared(d, device)

    def through_strided_view(x):
        base = wp.zeros((6, 2), dtype=float, device=device, requires_grad=True)
        wp.copy(base[:, 1], x)  # into a non-contiguous column
        col = wp.zeros(4, dtype=float, device=device, requires_grad=True)
        wp.copy(col, base[:, 1], src_offset=1, count=4)  # out of it, with an offset
        return _squared(col, device)

    for fn in (through_clone, through_window, through_assign, through_strided_view):
        gradcheck(fn, [x])


def test_copy_overwrite_consumes_earlier_gradient(device):
    """A copy (or a kernel's plain write) replaces what was there: gradients reach only the last writer. Cloning
    q and then overwriting the clone with 2 q three times gives dq0 = 8 (was 27: every dead write counted)."""
    x = wp.array([1.0, 2.0, 3.0], dtype=float, device=device)

    def fn(x):
        q = x
        for _ in range(3):
            out = wp.clone(q)
            wp.launch(double_into, 3, inputs=[q, out], device=device)
            q = out
        return q

    gradcheck(fn, [x])
    tape = Tape()
    with tape:
        q = fn(x)
    tape.backward(grads={q: np.ones(3, dtype=np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 8.0, 8.0])


def test_retain_grad_keeps_the_written_arrays_gradient(device):
    x = wp.array([1.0, 2.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(2, dtype=float, device=device, requires_grad=True, retain_grad=True)
    z = wp.zeros(n=2, dtype=float, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(double_into, 2, inputs=[x, y], device=device)
        wp.launch(double_into, 2, inputs=[x, z], device=device)
    tape.backward(grads={y: np.ones(2, dtype=np.float32), z: np.ones(2, dtype=np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])  # kept
    np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0])  # consumed by the write


def test_adjoint_launch_without_adj_inputs_uses_the_arrays_gradients(device):
    """launch(..., adjoint=True, adj_inputs=[None, None]) falls back to the arrays' .grad (was: no gradient)."""
    x = wp.array([1.0, 3.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(2, dtype=float, device=device, requires_grad=True)
    wp.launch(square, 2, inputs=[x, y], device=device)
    y.grad.fill_(1.0)
    wp.launch(square, 2, inputs=[x, y], device=device, adjoint=True, adj_inputs=[None, None])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 6.0])


def test_tape_gradients_scopes_and_nesting(device):
    x = wp.array([2.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = Tape()
    tape.record_scope_begin("outer")
    with tape:
        wp.launch(square, 1, inputs=[x, y], device=device)
        with pytest.raises(RuntimeError, match="nested"):
            with Tape():
                pass
    tape.record_scope_end()
    assert tape.scopes == [(0, "outer", {}), (1, None, None)]
    with pytest.raises(RuntimeError, match="scope not present"):
        tape.record_scope_end()
    tape.backward(grads={y: np.ones(1, dtype=np.float32)})
    assert tape.gradients[x] is x.grad
    np.testing.assert_array_equal(tape.gradients[x].numpy(), [4.0])


def test_second_kernel_write_makes_the_first_dead(device):
    """y written by one launch and then overwritten by another: only the second writer gets y's gradient (the
    first used to get it too)."""
    x = wp.array([1.0, 2.0], dtype=float, device=device)
    w = wp.array([3.0, 5.0], dtype=float, device=device)

    def fn(x, w):
        y = wp.zeros(2, dtype=float, device=device, requires_grad=True)
        wp.launch(double_into, 2, inputs=[x, y], device=device)
        wp.launch(double_into, 2, inputs=[w, y], device=device)
        return y

    gradcheck(fn, [x, w])


def test_tape_visualize_gives_dot_source(device):
    x = wp.array([2.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        tape.record_scope_begin("loop")
        for _ in range(3):
            wp.launch(square, 1, inputs=[x, y], device=device)
        tape.record_scope_end()
    dot = tape.visualize()
    assert dot.startswith("digraph") and "repeated 3x" in dot and 'label="loop"' in dot
    assert dot.count("square") == 1


# ---------------------------------------------------------------------------------------------------------------
# Adjoints of launches whose outputs carry no gradient are skipped


def _branches(device):
    """x -> y (read by the loss) and x -> z (read by nothing): the tape, x, y, z."""
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True, device=device)
    y = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    z = wp.zeros(3, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[x, y], device=device)
        wp.launch(copy_scaled, dim=3, inputs=[x, 3.0, z], device=device)
    return tape, x, y, z


def _adjoint_launches(monkeypatch) -> list:
    import importlib
    launch = importlib.import_module("kernels.runtime.launch")
    names = []
    original = launch._run  # what every launch, forward or adjoint, runs its kernel with

    def counting(kernel, bounds, params, values, adj_params=None, adj_values=None, device=None):
        if adj_params is not None:
            names.append(kernel.key)
        return original(kernel, bounds, params, values, adj_params, adj_values, device)

    monkeypatch.setattr(launch, "_run", counting)
    return names


def test_adjoint_of_a_launch_whose_outputs_carry_no_gradient_is_skipped(monkeypatch):
    names = _adjoint_launches(monkeypatch)
    tape, x, y, z = _branches("cpu")
    tape.backward(grads={y: np.ones(3, np.float32)})
    assert names == ["square"]
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    # a gradient set by hand before backward (not through grads=) is found and followed
    names.clear()
    tape.zero()
    z.grad.fill_(1.0)
    tape.backward()
    assert names == ["copy_scaled"]
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_captured_backward_skips_the_same_adjoints_and_replays_the_launched_gradient():
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    tape = Tape()
    with wp.ScopedCapture("cpu") as capture:
        y = wp.zeros(3, dtype=float, requires_grad=True)
        z = wp.zeros(3, dtype=float, requires_grad=True)  # zeroed by the capture at every replay: skipped
        with tape:
            wp.launch(square, dim=3, inputs=[x, y])
            wp.launch(copy_scaled, dim=3, inputs=[x, 3.0, z])
        tape.backward(grads={y: np.ones(3, np.float32)})
    assert capture.graph.launch_count == 3  # two forward launches, one adjoint
    for _ in range(2):
        x.grad.zero_()
        wp.capture_launch(capture.graph)
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_captured_backward_follows_a_gradient_the_capture_did_not_zero():
    # z is made outside the capture: its gradient may hold anything at a replay, so its adjoint is kept
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    z = wp.zeros(3, dtype=float, requires_grad=True)
    tape = Tape()
    with wp.ScopedCapture("cpu") as capture:
        y = wp.zeros(3, dtype=float, requires_grad=True)
        with tape:
            wp.launch(square, dim=3, inputs=[x, y])
            wp.launch(copy_scaled, dim=3, inputs=[x, 3.0, z])
        tape.backward(grads={y: np.ones(3, np.float32)})
    assert capture.graph.launch_count == 4
    x.grad.zero_()
    z.grad.fill_(1.0)
    wp.capture_launch(capture.graph)
    np.testing.assert_allclose(x.grad.numpy(), [2.0 + 3.0, 4.0 + 3.0, 6.0 + 3.0])
