"""SolverFeatherstone's intermediates: one reused set for untaped steps, sets lent to a Tape for taped steps and
taken back when the tape is reset or freed. Reuse must never change a result or a gradient."""

import gc

import numpy as np

import kernels as wp
import sim
from autodiff import Tape


def two_link_arm(requires_grad):
    b = sim.ModelBuilder(up_axis="y")
    parent = -1
    for k in range(2):
        body = b.add_body(mass=1.0 + k, inertia=np.eye(3) * 0.01, com=(0.0, -0.25, 0.0))
        b.add_joint_revolute(parent, body, axis=(0, 0, 1), parent_xform=(0, -0.5 * (k > 0), 0, 0, 0, 0, 1),
                             target_ke=3.0, target_kd=0.3)
        b.joint_q[-1] = 0.4 - 0.3 * k
        parent = body
    return b.finalize("cpu", requires_grad=requires_grad)


def taped_gradient(model, solver, steps=30):
    """(the tape, d(sum of the final joint angles) / d(initial joint velocities))."""
    states = [model.state() for _ in range(steps + 1)]
    controls = [model.control() for _ in range(steps)]
    for c in controls:
        c.joint_target_pos.assign(np.array([0.1, -0.2], np.float32))
    tape = Tape()
    with tape:
        for t in range(steps):
            solver.step(model, states[t], states[t + 1], controls[t], 1e-3)
    tape.backward(grads={states[-1].joint_q: np.ones(2, np.float32)})
    return tape, states[0].joint_qd.grad.numpy().copy(), states[-1].joint_q.numpy().copy()


def test_taped_steps_reuse_the_sets_of_a_released_tape_with_the_same_gradient():
    model = two_link_arm(True)
    solver = sim.SolverFeatherstone(model)
    tape, first, q_first = taped_gradient(model, solver)
    assert np.abs(first).max() > 0.01  # ~ the 30 ms the rollout lasts
    # a second tape while the first is alive: new sets
    tape2, second, _ = taped_gradient(model, solver)
    np.testing.assert_array_equal(second, first)
    assert not solver._pool.get(id(model))
    for t in (tape, tape2):
        t.reset()  # lets go of its sets
    pooled = len(solver._pool[id(model)])
    assert pooled == 60
    del tape, tape2
    gc.collect()
    # later tapes take them back, zeroed: the same gradient and trajectory, bit for bit
    for _ in range(2):
        tape, again, q_again = taped_gradient(model, solver)
        np.testing.assert_array_equal(again, first)
        np.testing.assert_array_equal(q_again, q_first)
        assert len(solver._pool[id(model)]) == pooled - 30
        del tape  # freed: its sets go back
        gc.collect()
        assert len(solver._pool[id(model)]) == pooled


def test_untaped_steps_of_a_differentiable_model_match_the_taped_ones():
    model = two_link_arm(True)
    solver = sim.SolverFeatherstone(model)
    _, _, taped = taped_gradient(model, solver)
    a, b = model.state(), model.state()
    control = model.control()
    control.joint_target_pos.assign(np.array([0.1, -0.2], np.float32))
    for _ in range(30):
        solver.step(model, a, b, control, 1e-3)
        a, b = b, a
    np.testing.assert_array_equal(a.joint_q.numpy(), taped)
    # eval_joint_accelerations hands out its own array, not the reused one
    first = solver.eval_joint_accelerations(model, a, control)
    kept = first.numpy().copy()
    solver.eval_joint_accelerations(model, b, control)
    np.testing.assert_array_equal(first.numpy(), kept)
