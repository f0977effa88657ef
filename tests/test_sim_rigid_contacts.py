"""SolverRigid's contact pipeline: results that do not depend on thread timing, differentiated steps that compute
the same forces as plain ones (including shapes with more partners than the first slots, and bodies of several
shapes), exactly opposite forces between bodies, excluded shape pairs, gradients through contacts between
bodies, and the refusal to capture a differentiated step."""

import numpy as np
import pytest

import kernels as wp
import sim
from _sim_rollout import rollout
from autodiff import Tape, gradcheck


def box_pile(count_x, count_z, layers, *, seed=0):
    """A loose lattice of tilted boxes above the ground (more than all_pairs_limit: the hash grid finds pairs)."""
    b = sim.ModelBuilder()
    rng = np.random.default_rng(seed)
    for i in range(count_x):
        for j in range(layers):
            for k in range(count_z):
                axis = rng.standard_normal(3)
                rot = sim.quat_from_axis_angle(axis / np.linalg.norm(axis), rng.uniform(0.0, 0.3))
                body = b.add_body(pos=(0.22 * i, 0.11 + 0.205 * j, 0.22 * k), rot=rot)
                b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body)
    b.add_ground_plane()
    return b


def crowded_scene():
    """A wide box under six spheres, and a body made of two boxes (a dumbbell) resting on it: the wide box has more
    contact partners than a differentiated step's first slots, the dumbbell has two shapes."""
    b = sim.ModelBuilder()
    base = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(hx=0.6, hy=0.1, hz=0.3, body=base, ke=1e4)
    for i in range(6):
        ball = b.add_body(pos=(-0.5 + 0.2 * i, 0.295, 0.15))
        b.add_shape_sphere(radius=0.1, body=ball, density=200.0, ke=1e4)
    dumbbell = b.add_body(pos=(0.0, 0.29, -0.15))
    b.add_shape_box(pos=(-0.2, 0.0, 0.0), hx=0.08, hy=0.09, hz=0.08, body=dumbbell, ke=1e4)
    b.add_shape_box(pos=(0.2, 0.0, 0.0), hx=0.08, hy=0.09, hz=0.08, body=dumbbell, ke=1e4)
    b.add_ground_plane(ke=1e4)
    return b


def test_a_pile_gives_the_same_bits_on_one_thread_and_on_two():
    """Contact wrenches are summed per body in a fixed order, never with float atomics."""
    model = box_pile(5, 5, 3).finalize("cpu")
    results = []
    previous = wp.config.cpu_threads
    try:
        for threads in (1, 2, 2):
            wp.config.cpu_threads = threads
            solver = sim.SolverRigid(model, all_pairs_limit=16)
            assert solver._grid is not None
            results.append(rollout(model, solver, 120, 2e-3)[0].body_q.numpy())
    finally:
        wp.config.cpu_threads = previous
    assert np.abs(results[0] - model.body_q0.numpy()).max() > 0.05  # the boxes fell and met
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[1], results[2])


@pytest.mark.parametrize("slots", [None, 4, 1])
def test_differentiated_steps_compute_the_forces_of_plain_steps(device, slots):
    """The same scene finalized with and without gradients (same contact smoothing) moves the same: the recorded
    partners (a slot for every possible partner, or, as in scenes of many shapes, slots grown on the host to the
    most partners of any shape), the gather of a body of two shapes. To rounding, not to the bit: the taped and
    plain steps are different kernels, and with user functions inlined on the CPU, multiply-add contraction
    (config.fp_contract, on by default as in Warp) fuses their arithmetic differently (bit for bit with
    WP_FORCE_INLINE empty; the differences were ~1e-10 m)."""
    plain = crowded_scene().finalize(device)
    taped = crowded_scene().finalize(device, requires_grad=True)
    final = []
    for model in (plain, taped):
        solver = sim.SolverRigid(model, contact_smoothing=1e-3)
        if slots is not None:  # sized on the host, starting narrower than the wide box's partners: they must grow
            solver._slots_fixed, solver._slots = False, slots
        final.append(rollout(model, solver, 80, 1e-3)[0])
        if model is taped:
            assert solver._slots >= 8  # six spheres, the dumbbell's two boxes and the ground on the wide box
    np.testing.assert_allclose(final[0].body_q.numpy(), final[1].body_q.numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(final[0].body_qd.numpy(), final[1].body_qd.numpy(), rtol=1e-6, atol=1e-8)


def test_steps_follow_changed_settings_though_their_structs_are_kept(device):
    """SolverRigid keeps its kernels' struct arguments from step to step while their fields stay the same (their
    packing is the host's largest cost of a small scene's step): a step after the step size, the gravity (changed
    in place) or the damping changed computes, to the bit, what a new solver computes from the same state."""
    model = box_pile(5, 5, 3).finalize(device)  # 75 boxes: the hash grid's broad phase too
    solver = sim.SolverRigid(model)
    state, nxt = model.state(), model.state()
    for _ in range(40):
        solver.step(model, state, nxt, None, 2e-3)
        state, nxt = nxt, state
    assert solver._grid is not None
    assert solver.integration_settings(2e-3) is solver.integration_settings(2e-3)

    def one_step(s, dt):
        out = model.state()
        s.step(model, state, out, None, dt)
        return np.concatenate([out.body_q.numpy().ravel(), out.body_qd.numpy().ravel()])

    model.gravity[1] = -4.0
    solver.linear_damping = 0.5
    for dt in (1e-3, 3e-3):
        kept = one_step(solver, dt)
        assert np.abs(kept - one_step(sim.SolverRigid(model), dt)).max() > 0.0  # the damping matters
        np.testing.assert_array_equal(kept, one_step(sim.SolverRigid(model, linear_damping=0.5), dt))


def test_bodies_receive_exactly_opposite_contact_forces(device):
    """Each body computes a pair on its own thread, in the pair's canonical order: the forces cancel to the bit."""
    b = sim.ModelBuilder(gravity=0.0)
    for x, v in ((-0.12, 1.0), (0.12, -1.0)):
        body = b.add_body(pos=(x, 1.0, 0.0), rot=sim.quat_from_axis_angle((0.3, 1.0, 0.2), 4.0 * x),
                          linear_velocity=(v, 0.0, 0.0))
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body)
    model = b.finalize(device)
    state = model.state()
    solver = sim.SolverRigid(model)
    forces = []
    for _ in range(40):
        nxt = model.state()
        solver.step(model, state, nxt, None, 1e-3)
        forces.append(state.body_f.numpy()[:, 3:].copy())
        state = nxt
    forces = np.array(forces)
    assert np.abs(forces).max() > 1.0  # they collided
    np.testing.assert_array_equal(forces[:, 0], -forces[:, 1])


def test_excluded_shape_pairs_do_not_collide(device):
    b = sim.ModelBuilder(gravity=0.0)
    for x in (-0.05, 0.05):
        body = b.add_body(pos=(x, 1.0, 0.0))
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body)
    model = b.finalize(device)
    for excluded, touching in (((), True), ([(1, 0)], False)):
        solver = sim.SolverRigid(model, excluded_shape_pairs=excluded)
        f = wp.zeros(model.body_count, dtype=wp.spatial_vector, device=device)
        solver.eval_contact_forces(model, model.state(), f)
        assert (np.abs(f.numpy()).max() > 1.0) == touching
    with pytest.raises(ValueError, match="excluded_shape_pairs"):
        sim.SolverRigid(model, excluded_shape_pairs=[(0, 5)])


@pytest.mark.parametrize("scene", ["stack", "crowded"])
def test_gradient_through_contacts_between_bodies(device, scene):
    """Final poses of a box landing on another (one shape per body: the fused differentiated step) and of the
    crowded scene (slots grown, a body of two shapes: partner wrenches and the gather), differentiated with
    respect to the initial velocities."""
    if scene == "stack":
        b = sim.ModelBuilder()
        lower = b.add_body(pos=(0.0, 0.1, 0.0))
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=lower, ke=1e4, mu=0.4)
        upper = b.add_body(pos=(0.03, 0.32, 0.0), rot=sim.quat_from_axis_angle((0.0, 0.0, 1.0), 0.1))
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=upper, ke=1e4, mu=0.4)
        b.add_ground_plane(ke=1e4, mu=0.4)
        steps = 60
    else:
        b = crowded_scene()
        steps = 30
    model = b.finalize(device, requires_grad=True)
    solver = sim.SolverRigid(model)
    qd = np.zeros((model.body_count, 6), np.float32)
    qd[:, 3:] = np.random.default_rng(2).uniform(-0.3, 0.3, (model.body_count, 3))
    qd[:, 4] -= 0.5
    velocity = wp.array(qd, dtype=wp.spatial_vector, device=device, requires_grad=True)

    def fn(*_):
        state = model.state()
        state.body_qd = velocity
        return rollout(model, solver, steps, 2e-3, state=state)[0].body_q

    gradcheck(fn, [velocity], eps=2e-3, atol=5e-4, rtol=5e-2)


def test_gradient_of_an_external_wrench_through_a_contact(device):
    """A box pushed sideways along the ground by Control.body_f while it lands: one body, one shape, so contacts,
    the external wrench and integration run in one taped kernel; its final pose differentiated w.r.t. the wrench."""
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.105, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body, ke=1e4, mu=0.4)
    b.add_ground_plane(ke=1e4, mu=0.4)
    model = b.finalize(device, requires_grad=True)
    solver = sim.SolverRigid(model)
    control = model.control()
    control.body_f = wp.array([[0.0, 0.3, 0.0, 6.0, 0.0, 2.0]], dtype=wp.spatial_vector, device=device,
                              requires_grad=True)

    def fn(*_):
        return rollout(model, solver, 40, 2e-3, control=control)[0].body_q

    gradcheck(fn, [control.body_f], eps=1e-2, atol=5e-4, rtol=5e-2)


def test_a_differentiated_step_is_captured_when_few_shapes_else_refused(device):
    """Few shapes: a slot for every possible partner, nothing read on the host, the captured tape replays the
    gradient of launching. Many: the slots are sized on the host each step, and capturing is refused."""
    model = crowded_scene().finalize(device, requires_grad=True)
    solver = sim.SolverRigid(model)
    assert solver._slots_fixed
    states = [model.state() for _ in range(21)]

    def record():
        tape = Tape()
        with tape:
            for n in range(20):
                solver.step(model, states[n], states[n + 1], None, 1e-3)
        tape.backward(grads={states[-1].body_q: wp.full_like(states[-1].body_q, 1.0)})
        return tape

    tape = record()
    launched = states[0].body_qd.grad.numpy().copy()
    tape.zero()
    with wp.ScopedCapture(device) as capture:
        tape = record()
    for _ in range(2):
        tape.zero()
        wp.capture_launch(capture.graph)
        np.testing.assert_array_equal(states[0].body_qd.grad.numpy(), launched)
    assert np.abs(launched).max() > 0.0

    pile = box_pile(5, 5, 3).finalize(device, requires_grad=True)
    solver = sim.SolverRigid(pile)
    assert not solver._slots_fixed
    a, b = pile.state(), pile.state()
    with pytest.raises(RuntimeError, match="cannot be captured"):
        with wp.ScopedCapture(device):
            solver.step(pile, a, b, None, 1e-3)
