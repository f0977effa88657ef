"""Launch capture and replay (wp.capture_begin / capture_end / capture_launch / ScopedCapture): what is recorded,
that nothing runs while recording, that replays equal the eager run (launches, fills, copies, a Tape's backward,
a simulation step), and the errors of misuse."""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import Tape


@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = y[i] + a * x[i]


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def total(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i])


@wp.kernel
def scale_vec(v: wp.array(dtype=wp.vec3), s: float):
    i = wp.tid()
    v[i] = v[i] * s


def test_launches_are_recorded_not_run_and_replay_in_order(device):
    x = wp.array(np.arange(4, dtype=np.float32), device=device)
    y = wp.zeros(4, device=device)
    with wp.ScopedCapture(device) as capture:
        wp.launch(axpy, 4, inputs=[x, y, 2.0], device=device)
        wp.launch(square, 4, inputs=[y, y], device=device)
    graph = capture.graph
    assert (len(graph), graph.launch_count) == (2, 2)
    np.testing.assert_array_equal(y.numpy(), 0.0)
    wp.capture_launch(graph)
    np.testing.assert_array_equal(y.numpy(), (2.0 * np.arange(4)) ** 2)
    wp.capture_launch(graph)
    np.testing.assert_array_equal(y.numpy(), ((2.0 * np.arange(4)) ** 2 + 2.0 * np.arange(4)) ** 2)


def test_fills_copies_and_allocations_replay_in_their_place(device):
    x = wp.array(np.arange(6, dtype=np.float32), device=device)
    y = wp.zeros(6, device=device)
    v = wp.array(np.ones((3, 3), np.float32), dtype=wp.vec3, device=device)
    host = np.full(6, 5.0, np.float32)
    with wp.ScopedCapture(device) as capture:
        y.fill_(3.0)
        wp.launch(axpy, 6, inputs=[x, y, 1.0], device=device)  # y = 3 + x
        scratch = wp.zeros(6, device=device)
        wp.launch(axpy, 6, inputs=[y, scratch, 1.0], device=device)  # scratch = y, zeroed at each replay
        ones = wp.ones(6, device=device)
        cloned = wp.clone(y)  # y as it is when the replay reaches this point
        wp.launch(axpy, 6, inputs=[ones, y, 10.0], device=device)  # y = 13 + x
        copied = wp.zeros(6, device=device)
        wp.copy(copied, y, dest_offset=2, src_offset=0, count=3)
        assigned = wp.zeros(6, device=device)
        assigned.assign(host)  # host data: taken at capture
        v.fill_(wp.vec3(1.0, 2.0, 3.0))
        wp.launch(scale_vec, 3, inputs=[v, 2.0], device=device)
        y[5:] = 0.0
    host[:] = -1.0  # changing the host source afterwards does not reach the graph
    for _ in range(2):
        wp.capture_launch(capture.graph)
        expected = 13.0 + np.arange(6)
        expected[5] = 0.0
        np.testing.assert_array_equal(y.numpy(), expected)
        np.testing.assert_array_equal(scratch.numpy(), 3.0 + np.arange(6))
        np.testing.assert_array_equal(cloned.numpy(), 3.0 + np.arange(6))
        np.testing.assert_array_equal(ones.numpy(), 1.0)
        np.testing.assert_array_equal(copied.numpy(), [0, 0, 13, 14, 15, 0])
        np.testing.assert_array_equal(assigned.numpy(), 5.0)
        np.testing.assert_array_equal(v.numpy(), np.tile([2.0, 4.0, 6.0], (3, 1)))


def test_strided_views_are_filled_at_replay(device):
    a = wp.zeros((4, 4), device=device)
    column = a[:, 1]
    assert not column.is_contiguous
    with wp.ScopedCapture(device) as capture:
        column.fill_(7.0)
        a[0, 0] = 1.0
    np.testing.assert_array_equal(a.numpy(), 0.0)
    wp.capture_launch(capture.graph)
    expected = np.zeros((4, 4), np.float32)
    expected[:, 1] = 7.0
    expected[0, 0] = 1.0
    np.testing.assert_array_equal(a.numpy(), expected)
    column.zero_()
    with wp.ScopedCapture(device) as capture:
        column.zero_()
    a.fill_(2.0)
    wp.capture_launch(capture.graph)
    assert a.numpy()[:, 1].tolist() == [0.0] * 4 and a.numpy()[:, 0].tolist() == [2.0] * 4


def test_tape_forward_and_backward_captured_give_the_eager_gradient_each_replay(device):
    x = wp.array(np.linspace(0.5, 2.0, 5, dtype=np.float32), device=device, requires_grad=True)
    y = wp.zeros(5, device=device, requires_grad=True)
    loss = wp.zeros(1, device=device, requires_grad=True)
    tape = Tape()
    with wp.ScopedCapture(device) as capture:
        loss.zero_()
        with tape:
            wp.launch(square, 5, inputs=[x, y], device=device)
            wp.launch(total, 5, inputs=[y, loss], device=device)
        tape.backward(loss=loss)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    for scale in (1.0, 3.0):
        x.assign(scale * np.linspace(0.5, 2.0, 5, dtype=np.float32))
        tape.zero()  # outside the capture: runs now
        wp.capture_launch(capture.graph)
        xs = x.numpy()
        np.testing.assert_allclose(loss.numpy()[0], np.sum(xs * xs), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), 2.0 * xs, rtol=1e-6)


def test_tape_zero_inside_the_capture_keeps_rounds_apart(device):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(3, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(square, 3, inputs=[x, y], device=device)
    seed = wp.ones(3, device=device)
    with wp.ScopedCapture(device) as capture:
        tape.zero()
        tape.backward(grads={y: seed})
    for _ in range(3):
        wp.capture_launch(capture.graph)
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.cpu_only("a CUDA graph replays device work: as in Warp, a record_func callback runs once, when "
                      "captured (its launches are what replays)")
def test_record_func_callbacks_run_at_each_replay_in_order(device):
    x = wp.array([1.0, 2.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(2, device=device, requires_grad=True)
    calls = []
    tape = Tape()
    with tape:
        wp.launch(square, 2, inputs=[x, y], device=device)
        tape.record_func(lambda: (calls.append(y.grad.numpy().copy()), y.grad.fill_(1.0)), [y])
    with wp.ScopedCapture(device) as capture:
        tape.zero()
        tape.backward()
    assert calls == []
    wp.capture_launch(capture.graph)
    wp.capture_launch(capture.graph)
    assert len(calls) == 2 and all(np.array_equal(c, [0.0, 0.0]) for c in calls)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_recorded_launch_objects_and_adjoint_launches_are_captured(device):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, device=device)
    y = wp.zeros(3, device=device)
    cmd = wp.launch(axpy, 3, inputs=[x, y, 1.0], device=device, record_cmd=True)
    adj_x, adj_y = wp.zeros(3, device=device), wp.ones(3, device=device)
    with wp.ScopedCapture(device) as capture:
        cmd.launch()
        cmd.set_param_by_name("a", 2.0)  # the capture keeps the values it was given
        wp.launch(square, 3, inputs=[x, y], device=device, adjoint=True, adj_inputs=[adj_x, adj_y])
    np.testing.assert_array_equal(y.numpy(), 0.0)
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(adj_x.numpy(), [2.0, 4.0, 6.0])


def test_a_graph_launched_inside_a_capture_is_nested(device):
    x = wp.array([1.0, 1.0], dtype=float, device=device)
    y = wp.zeros(2, device=device)
    with wp.ScopedCapture(device) as inner:
        wp.launch(axpy, 2, inputs=[x, y, 1.0], device=device)
        y.__setitem__(0, 0.0)
    with wp.ScopedCapture(device) as outer:
        wp.capture_launch(inner.graph)
        wp.capture_launch(inner.graph)
    assert outer.graph.launch_count == 2
    wp.capture_launch(outer.graph)
    np.testing.assert_array_equal(y.numpy(), [0.0, 2.0])


def test_capture_misuse_is_reported(device):
    with pytest.raises(wp.CaptureError, match="no capture is open"):
        wp.capture_end(device)
    wp.capture_begin(device)
    try:
        assert wp.is_capturing(device)
        with pytest.raises(wp.CaptureError, match="already open"):
            wp.capture_begin(device)
    finally:
        wp.capture_end(device)
    assert not wp.is_capturing(device)
    with pytest.raises(TypeError, match="takes a Graph"):
        wp.capture_launch("graph")
    with pytest.raises(wp.CaptureError, match="external"):
        wp.capture_begin(device, external=True)


def test_an_error_inside_scoped_capture_ends_it_and_keeps_no_graph(device):
    y = wp.zeros(2, device=device)
    scope = wp.ScopedCapture(device)
    with pytest.raises(ZeroDivisionError):
        with scope:
            y.fill_(1.0)
            1 / 0
    assert scope.graph is None and not wp.is_capturing(device)
    np.testing.assert_array_equal(y.numpy(), 0.0)


@pytest.mark.cpu_only("a CUDA graph replays device work: as in Warp, a record_func callback runs once, when captured")
def test_an_error_in_a_replayed_callback_reaches_the_caller_and_stops_the_replay(device):
    y = wp.zeros(2, device=device)
    tape = Tape()

    def fail():
        raise ValueError("callback failed")

    tape.record_func(fail, [y])
    with wp.ScopedCapture(device) as capture:
        tape.backward()
        y.fill_(1.0)  # after the failing callback: not reached
    with pytest.raises(ValueError, match="callback failed"):
        wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(y.numpy(), 0.0)


def test_captured_cloth_substeps_equal_the_eager_run(device):
    def model():
        b = sim.ModelBuilder()
        rot = sim.quat_from_axis_angle((1.0, 0.0, 0.0), -math.pi / 2)
        b.add_cloth_grid(pos=(-0.2, 0.5, 0.2), rot=rot, vel=(0.3, 0.0, 0.0), dim_x=4, dim_y=4, cell_x=0.1,
                         cell_y=0.1, mass=0.05, tri_ke=100.0, tri_ka=100.0, tri_kd=0.5, edge_ke=0.01, radius=0.01)
        b.add_ground_plane()
        return b.finalize(device)

    def substeps(m, solver, a, b, n):
        for _ in range(n // 2):
            solver.step(m, a, b, None, 1.0e-3)
            solver.step(m, b, a, None, 1.0e-3)

    m1 = model()
    s1 = [m1.state(), m1.state()]
    solver1 = sim.SolverSemiImplicit(m1)
    substeps(m1, solver1, s1[0], s1[1], 40)

    m2 = model()
    s2 = [m2.state(), m2.state()]
    solver2 = sim.SolverSemiImplicit(m2)
    solver2.step(m2, s2[0], s2[1], None, 1.0e-3)  # build kernels and scratch outside the capture
    s2 = [m2.state(), m2.state()]
    with wp.ScopedCapture(device) as capture:
        substeps(m2, solver2, s2[0], s2[1], 10)
    for _ in range(4):
        wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(s2[0].particle_q.numpy(), s1[0].particle_q.numpy())
    np.testing.assert_array_equal(s2[0].particle_qd.numpy(), s1[0].particle_qd.numpy())
