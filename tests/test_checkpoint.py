"""Checkpointed rollouts (autodiff.checkpoint): the gradient of a spring chain simulation equals the full tape's
for every segment length (divisors, non-divisors, 1, all steps), with losses on the final state and on
intermediate states; gradcheck through a checkpointed rollout; states held grow like sqrt(steps)."""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import CheckpointedRollout, Tape, gradcheck

DT = 1e-3
STEPS = 100
INTERMEDIATE_WEIGHT = 0.01


@wp.kernel
def weighted_square(q: wp.array(dtype=wp.vec3), weight: float, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, weight * wp.dot(q[i], q[i]))


@wp.kernel
def scale_velocities(base: wp.array(dtype=wp.vec3), scale: wp.array(dtype=float), qd: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    qd[i] = base[i] * scale[0]


def spring_chain(device, *, ground=False, ke=200.0, stretch=1.0, mass=0.1):
    """Three particles hanging in a chain of springs from a fixed particle; rest lengths are the initial lengths
    divided by `stretch`. With `ground`, the chain starts just above the ground plane, falling."""
    b = sim.ModelBuilder()
    top = 0.25 if ground else 1.0
    b.add_particle((0.0, top, 0.0), mass=0.0)
    for k in range(1, 4):
        pos = np.array([0.1 * k, top - 0.07 * k, 0.05 * k])
        b.add_particle(pos, vel=(0.3, 0.1 * k - (2.0 if ground else 0.0), -0.2), mass=mass, radius=0.02)
        b.add_spring(k - 1, k, ke=ke, kd=0.5, rest_length=float(np.linalg.norm([0.1, -0.07, 0.05])) / stretch)
    if ground:
        b.add_ground_plane()
    return b.finalize(device, requires_grad=True)


def observe_loss(model, loss, kind):
    if kind == "final":
        return None
    return lambda n, state: wp.launch(weighted_square, dim=model.particle_count,
                                      inputs=[state.particle_q, INTERMEDIATE_WEIGHT, loss], device=model.device)


def final_loss(model, state, loss, kind):
    if kind != "observe":
        wp.launch(weighted_square, dim=model.particle_count, inputs=[state.particle_q, 1.0, loss],
                  device=model.device)


def full_tape_gradients(model, kind, steps=STEPS, solver=None):
    """(loss, d loss / d initial velocities, d loss / d spring stiffness) from a fully taped rollout."""
    solver = solver or sim.SolverSemiImplicit(model)
    loss = wp.zeros(1, dtype=float, device=model.device, requires_grad=True)
    observe = observe_loss(model, loss, kind)
    state0 = model.state()
    tape = Tape()
    with tape:
        s = state0
        for i in range(steps):
            s_next = model.state()
            solver.step(model, s, s_next, None, DT)
            s = s_next
            if observe is not None:
                observe(i + 1, s)
        final_loss(model, s, loss, kind)
    tape.backward(loss=loss)
    return float(loss.numpy()[0]), state0.particle_qd.grad.numpy().copy(), model.spring_stiffness.grad.numpy().copy()


def checkpointed(model, kind, checkpoint_every, steps=STEPS, state_arrays=None, solver=None):
    solver = solver or sim.SolverSemiImplicit(model)
    loss = wp.zeros(1, dtype=float, device=model.device, requires_grad=True)
    state0 = model.state()
    rollout = CheckpointedRollout(lambda i, a, b: solver.step(model, a, b, None, DT), None, steps, checkpoint_every,
                                  state_arrays=state_arrays)
    tape = Tape()
    with tape:
        final = rollout.run(state0, observe=observe_loss(model, loss, kind))
        final_loss(model, final, loss, kind)
    tape.backward(loss=loss)
    return rollout, tape, loss, state0


def assert_same_gradients(model, reference, loss, state0):
    ref_loss, ref_qd, ref_ke = reference
    assert float(loss.numpy()[0]) == pytest.approx(ref_loss, rel=1e-6)  # recomputation left the loss as it was
    assert np.abs(ref_qd).max() > 1e-3 and np.abs(ref_ke).max() > 1e-6  # gradients that mean something
    np.testing.assert_allclose(state0.particle_qd.grad.numpy(), ref_qd, rtol=1e-5, atol=1e-6 * np.abs(ref_qd).max())
    np.testing.assert_allclose(model.spring_stiffness.grad.numpy(), ref_ke, rtol=1e-5,
                               atol=1e-6 * np.abs(ref_ke).max())


@pytest.mark.parametrize("kind", ["final", "observe", "both"])
@pytest.mark.parametrize("checkpoint_every", [None, 10, 7, 1, STEPS])
def test_gradient_equals_full_tape(device, kind, checkpoint_every):
    reference = full_tape_gradients(spring_chain(device), kind)
    model = spring_chain(device)
    rollout, _, loss, state0 = checkpointed(model, kind, checkpoint_every)
    assert_same_gradients(model, reference, loss, state0)
    k = rollout.checkpoint_every
    assert rollout.segments[0] == (0, k) and rollout.segments[-1][1] == STEPS
    assert len(rollout.segments) == -(-STEPS // k)


SOLVERS = {"semi_implicit": sim.SolverSemiImplicit, "xpbd": lambda model: sim.SolverXPBD(model, iterations=4)}


@pytest.mark.parametrize("solver", SOLVERS)
def test_gradient_with_ground_contact_and_named_state_arrays(device, solver):
    """The chain falls onto the ground and bounces within the first 40 steps."""
    model = spring_chain(device, ground=True)
    reference = full_tape_gradients(model, "both", solver=SOLVERS[solver](model))
    model = spring_chain(device, ground=True)
    rollout, _, loss, state0 = checkpointed(model, "both", 7, state_arrays=("particle_q", "particle_qd"),
                                            solver=SOLVERS[solver](model))
    assert_same_gradients(model, reference, loss, state0)


def test_gradient_reaches_launches_taped_before_the_rollout(device):
    """state0's velocities come from a taped kernel: the rollout's adjoint must reach its input."""
    results = []
    for use_checkpoints in (False, True):
        model = spring_chain(device)
        solver = sim.SolverSemiImplicit(model)
        scale = wp.array(np.array([1.5], np.float32), device=device, requires_grad=True)
        loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        state0 = model.state()
        tape = Tape()
        with tape:
            wp.launch(scale_velocities, dim=model.particle_count, inputs=[model.particle_qd, scale, state0.particle_qd],
                      device=device)
            if use_checkpoints:
                rollout = CheckpointedRollout(lambda i, a, b: solver.step(model, a, b, None, DT), None, 30, 4)
                final = rollout.run(state0)
            else:
                final = state0
                for _ in range(30):
                    s = model.state()
                    solver.step(model, final, s, None, DT)
                    final = s
            final_loss(model, final, loss, "final")
        tape.backward(loss=loss)
        results.append(scale.grad.numpy()[0])
    assert abs(results[0]) > 1e-3
    assert results[1] == pytest.approx(results[0], rel=1e-5)


def test_repeated_backward_and_zero_reach_every_gradient(device):
    model = spring_chain(device)
    _, tape, loss, state0 = checkpointed(model, "both", 7)
    first = (state0.particle_qd.grad.numpy().copy(), model.spring_stiffness.grad.numpy().copy())
    value = float(loss.numpy()[0])
    tape.zero()  # the parameters' gradients were registered on the outer tape, so zero() reaches them
    assert not np.any(model.spring_stiffness.grad.numpy()) and not np.any(state0.particle_qd.grad.numpy())
    tape.backward(loss=loss)
    np.testing.assert_array_equal(state0.particle_qd.grad.numpy(), first[0])
    np.testing.assert_array_equal(model.spring_stiffness.grad.numpy(), first[1])
    assert float(loss.numpy()[0]) == value


def test_without_a_tape_it_only_simulates(device):
    model = spring_chain(device)
    solver = sim.SolverSemiImplicit(model)
    seen = []
    rollout = CheckpointedRollout(lambda i, a, b: solver.step(model, a, b, None, DT), None, 25, 4)
    final = rollout.run(model.state(), observe=lambda n, s: seen.append(n))
    reference = model.state()
    for _ in range(25):
        s = model.state()
        solver.step(model, reference, s, None, DT)
        reference = s
    np.testing.assert_array_equal(final.particle_q.numpy(), reference.particle_q.numpy())
    assert seen == list(range(1, 26))


@pytest.mark.parametrize("steps", [100, 400])
def test_states_held_grow_like_sqrt_of_steps(device, steps):
    model = spring_chain(device)
    rollout, _, _, state0 = checkpointed(model, "both", None, steps=steps)
    root = math.isqrt(steps)
    assert rollout.checkpoint_every == root
    # checkpoints + one segment + the carried adjoint + the final state, against one state per step
    assert rollout.peak_states <= 2 * root + 3
    full = CheckpointedRollout.full_tape_state_bytes(state0, steps)
    assert rollout.peak_state_bytes * root / 3 < full


def test_gradcheck_through_checkpointed_rollout(device):
    """Stretched soft springs and light particles, so that 40 steps move the chain measurably with stiffness."""
    model = spring_chain(device, ke=20.0, stretch=2.0, mass=0.005)
    solver = sim.SolverSemiImplicit(model)
    rollout = CheckpointedRollout(lambda i, a, b: solver.step(model, a, b, None, DT), None, 40, 7)
    velocity = wp.clone(model.particle_qd, requires_grad=True)
    stiffness = model.spring_stiffness

    def fn(qd, ke):
        state0 = model.state()
        state0.particle_qd = qd
        model.spring_stiffness = ke
        return rollout.run(state0).particle_q

    tape = Tape()
    with tape:
        q = fn(velocity, stiffness)
    tape.backward(grads={q: np.ones((model.particle_count, 3), np.float32)})
    atol = 2e-5
    assert np.abs(stiffness.grad.numpy()).min() > 10 * atol
    tape.zero()
    gradcheck(fn, [velocity, stiffness], eps=0.1, atol=atol, rtol=2e-2)


def test_bad_arguments_are_refused(device):
    model = spring_chain(device)
    with pytest.raises(ValueError, match="num_steps"):
        CheckpointedRollout(lambda i, a, b: None, None, 0)
    with pytest.raises(ValueError, match="checkpoint_every"):
        CheckpointedRollout(lambda i, a, b: None, None, 10, 0)
    with pytest.raises(ValueError, match="velocity"):
        CheckpointedRollout(lambda i, a, b: None, None, 10, state_arrays=("velocity",)).run(model.state())
