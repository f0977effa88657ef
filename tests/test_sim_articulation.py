"""Articulations: joints in ModelBuilder and Model, eval_fk / eval_ik, and SolverFeatherstone against analytic
results (pendulum period, a cart under a constant force), invariants (a double pendulum's energy), limits and
drives, agreement with SolverRigid for a free body, and gradients of rollouts checked against finite
differences."""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from _sim_rollout import quat_to_matrix, rollout
from autodiff import CheckpointedRollout, Tape, gradcheck

G = 9.81


def mechanical_energy(model, state):
    """Kinetic plus gravitational potential energy [J] of the bodies of `state` (float64)."""
    q = state.body_q.numpy().astype(np.float64)
    qd = state.body_qd.numpy().astype(np.float64)
    g = np.array(model.gravity, dtype=np.float64)
    energy = 0.0
    for b, (m, inertia, com) in enumerate(zip(model.body_mass.numpy(), model.body_inertia.numpy(),
                                              model.body_com.numpy())):
        R = quat_to_matrix(q[b, 3:])
        w, v = qd[b, :3], qd[b, 3:]
        energy += 0.5 * m * v @ v + 0.5 * w @ (R @ inertia @ R.T) @ w - m * g @ (q[b, :3] + R @ com)
    return energy


def pendulum(device, *, length=1.0, mass=1.0, inertia=1e-3, requires_grad=False, **joint):
    """A body of `mass` [kg] hanging `length` [m] below a revolute joint about z at (0, 2, 0)."""
    b = sim.ModelBuilder(up_axis="y")
    body = b.add_body(mass=mass, inertia=np.eye(3) * inertia)
    b.add_joint_revolute(-1, body, axis=(0, 0, 1), parent_xform=(0, 2, 0, 0, 0, 0, 1),
                         child_xform=(0, length, 0, 0, 0, 0, 1), **joint)
    return b.finalize(device, requires_grad=requires_grad)


def zero_crossings(values, dt):
    """Times [s] at which `values` (sampled every dt) changes sign, linearly interpolated."""
    v = np.asarray(values, dtype=np.float64)
    i = np.flatnonzero(np.sign(v[:-1]) != np.sign(v[1:]))
    return (i + v[i] / (v[i] - v[i + 1]) + 1) * dt


# ---------------------------------------------------------------------------------------------------------------
# Model building and kinematics


def test_joint_arrays_in_the_model():
    b = sim.ModelBuilder()
    bodies = [b.add_body(mass=1.0, inertia=np.eye(3) * 0.1) for _ in range(5)]
    b.add_joint_revolute(-1, bodies[0], axis=(0, 0, 2), limit_lower=-1.0, limit_upper=1.0, target_ke=5.0,
                         armature=0.1)
    b.add_joint_ball(bodies[0], bodies[1], parent_xform=(0, -1, 0, 0, 0, 0, 1), damping=0.5)
    b.add_joint_d6(bodies[1], bodies[2], linear_axes=[(1, 0, 0)],
                   angular_axes=[sim.JointDofConfig(axis=(0, 1, 0), target_pos=0.3), (0, 0, 1)])
    b.add_joint_fixed(bodies[2], bodies[3])
    free = b.add_joint_free(bodies[4])
    model = b.finalize("cpu")
    assert model.joint_count == 5 and model.articulation_count == 2
    assert model.joint_dof_count == 1 + 3 + 3 + 0 + 6 and model.joint_coord_count == 1 + 4 + 3 + 0 + 7
    np.testing.assert_array_equal(model.joint_type.numpy(), [sim.JOINT_REVOLUTE, sim.JOINT_BALL, sim.JOINT_D6,
                                                             sim.JOINT_FIXED, sim.JOINT_FREE])
    np.testing.assert_array_equal(model.joint_q_start.numpy(), [0, 1, 5, 8, 8, 15])
    np.testing.assert_array_equal(model.joint_qd_start.numpy(), [0, 1, 4, 7, 7, 13])
    np.testing.assert_array_equal(model.joint_dof_dim.numpy(), [[0, 1], [0, 3], [1, 2], [0, 0], [3, 3]])
    np.testing.assert_array_equal(model.joint_ancestor.numpy(), [-1, 0, 1, 2, -1])
    np.testing.assert_array_equal(model.articulation_start.numpy(), [0, free, 5])
    np.testing.assert_allclose(model.joint_axis.numpy()[0], [0, 0, 1])
    assert model.joint_limit_upper.numpy()[0] == 1.0 and model.joint_limit_upper.numpy()[1] == 1e10
    assert model.joint_target_pos.numpy()[5] == pytest.approx(0.3)
    np.testing.assert_allclose(model.joint_damping.numpy()[1:4], 0.5)
    np.testing.assert_allclose(model.joint_q.numpy()[1:5], [0, 0, 0, 1])  # identity quaternion
    state, control = model.state(), model.control()
    assert state.joint_q.shape == (15,) and state.joint_qd.shape == (13,)
    assert control.joint_f.shape == (13,) and control.joint_target_pos.numpy()[5] == pytest.approx(0.3)


def test_bad_joints_are_refused():
    b = sim.ModelBuilder()
    a, c = b.add_body(mass=1.0, inertia=np.eye(3)), b.add_body(mass=1.0, inertia=np.eye(3))
    with pytest.raises(ValueError, match="not bodies"):
        b.add_joint_revolute(-1, 7)
    with pytest.raises(ValueError, match="limit_lower"):
        b.add_joint_revolute(-1, a, limit_lower=1.0, limit_upper=0.0)
    with pytest.raises(ValueError, match="non-zero"):
        b.add_joint_prismatic(-1, a, axis=(0, 0, 0))
    b.add_joint_revolute(-1, a)
    with pytest.raises(ValueError, match="already the child"):
        b.add_joint_revolute(-1, a)
    b2 = sim.ModelBuilder()
    a, c, d = (b2.add_body(mass=1.0, inertia=np.eye(3)) for _ in range(3))
    b2.add_joint_revolute(-1, a)
    b2.add_joint_revolute(c, d)  # c is the child of a later joint
    b2.add_joint_revolute(a, c)
    with pytest.raises(ValueError, match="earlier joint"):
        b2.finalize("cpu")


def test_free_joint_starts_at_the_body_pose_and_fk_ik_round_trip(device):
    """eval_fk of the builder's initial coordinates reproduces add_body's pose and velocity for a free joint;
    eval_ik inverts eval_fk for every joint type."""
    b = sim.ModelBuilder()
    inertia = np.diag([0.1, 0.2, 0.3])
    rot = sim.quat_from_axis_angle((1, 1, 0), 0.4)
    root = b.add_body(pos=(0.2, 1.0, -0.3), rot=rot, mass=2.0, inertia=inertia, com=(0.1, 0.0, 0.05),
                      linear_velocity=(1.0, -0.5, 0.2), angular_velocity=(0.3, 0.2, -0.6))
    links = [b.add_body(mass=1.0, inertia=inertia, com=(0.0, -0.2, 0.1)) for _ in range(4)]
    b.add_joint_free(root, parent_xform=(0, 0.5, 0, *sim.quat_from_axis_angle((0, 0, 1), 0.3)))
    b.add_joint_revolute(root, links[0], axis=(1, 0, 1), parent_xform=(0.3, 0, 0, 0, 0, 0, 1),
                         child_xform=(0, 0.2, 0, 0, 0, 0, 1))
    b.add_joint_ball(links[0], links[1], parent_xform=(0, -0.4, 0, 0, 0, 0, 1))
    b.add_joint_prismatic(links[1], links[2], axis=(0, 1, 0), parent_xform=(0, -0.4, 0, 0, 0, 0, 1))
    b.add_joint_d6(links[0], links[3], linear_axes=[(1, 0, 0), (0, 0, 1)], angular_axes=[(0, 1, 0)])
    model = b.finalize(device)
    state = model.state()
    sim.eval_fk(model, model.joint_q, model.joint_qd, state)
    np.testing.assert_allclose(state.body_q.numpy()[root], model.body_q0.numpy()[root], atol=1e-6)
    np.testing.assert_allclose(state.body_qd.numpy()[root], model.body_qd0.numpy()[root], atol=1e-6)

    rng = np.random.default_rng(3)
    q = model.joint_q.numpy().copy()
    q[7:15] = [0.7, *rng.normal(size=4), 0.3, 0.1, -0.2]
    q[8:12] /= np.linalg.norm(q[8:12])
    qd = rng.normal(size=model.joint_dof_count).astype(np.float32)
    joint_q = wp.array(q, dtype=float, device=device)
    joint_qd = wp.array(qd, dtype=float, device=device)
    sim.eval_fk(model, joint_q, joint_qd, state)
    q_back = wp.zeros_like(joint_q)
    qd_back = wp.zeros_like(joint_qd)
    sim.eval_ik(model, state, q_back, qd_back)
    q_back = q_back.numpy()
    if q_back[11] * q[11] < 0:  # the ball joint's quaternion, up to its sign
        q_back[8:12] *= -1
    np.testing.assert_allclose(q_back, q, atol=2e-5)
    np.testing.assert_allclose(qd_back.numpy(), qd, atol=2e-5)


# ---------------------------------------------------------------------------------------------------------------
# Dynamics against analytic results and invariants


def test_pendulum_period_matches_small_angle_theory(device):
    length, mass, inertia = 1.0, 1.0, 1e-3
    model = pendulum(device, length=length, mass=mass, inertia=inertia)
    q = model.joint_q.numpy()  # a copy on a GPU: assigned back
    q[0] = 0.05
    model.joint_q.assign(q)
    dt, steps = 2e-3, 2300
    solver = sim.SolverFeatherstone(model)
    _, states = rollout(model, solver, steps, dt, every=1)
    angle = [s.joint_q.numpy()[0] for s in states]
    crossings = zero_crossings(angle, dt)
    assert len(crossings) >= 4
    period = 2.0 * np.mean(np.diff(crossings))
    expected = 2 * math.pi * math.sqrt((mass * length ** 2 + inertia) / (mass * G * length))
    assert abs(period / expected - 1.0) < 5e-3, (period, expected)
    # body poses follow the joint: the bob is `length` below the pivot
    x = states[-1].body_q.numpy()[0, :3]
    assert np.linalg.norm(x - np.array([0.0, 2.0, 0.0])) == pytest.approx(length, rel=1e-5)


def test_double_pendulum_conserves_energy(device):
    """No damping, 10 s: the energy above the hanging state (the measure that does not depend on where the
    potential's zero is) drifts by less than 1 %. Semi-implicit Euler in joint coordinates gains energy in
    proportion to dt: 1.6 % at 1 ms, 0.8 % at 0.5 ms, 0.41 % at dt = 0.25 ms, run here (40,000 steps, replayed
    from a captured pair of steps)."""
    b = sim.ModelBuilder(up_axis="y")
    inertia = np.diag([0.02, 0.01, 0.03])
    upper = b.add_body(mass=1.0, inertia=inertia, com=(0.0, -0.5, 0.0))
    lower = b.add_body(mass=0.7, inertia=2 * inertia, com=(0.1, -0.4, 0.05))
    b.add_joint_revolute(-1, upper, axis=(0, 0, 1), parent_xform=(0, 2, 0, 0, 0, 0, 1))
    b.add_joint_revolute(upper, lower, axis=(0, 0, 1), parent_xform=(0, -1, 0, 0, 0, 0, 1))
    model = b.finalize(device)
    rest = model.state()
    sim.eval_fk(model, rest.joint_q, rest.joint_qd, rest)
    resting_energy = mechanical_energy(model, rest)
    model.joint_q.assign([1.0, -0.5])
    solver = sim.SolverFeatherstone(model)
    dt = 2.5e-4
    state, scratch = model.state(), model.state()
    sim.eval_fk(model, state.joint_q, state.joint_qd, state)
    e0 = mechanical_energy(model, state)
    solver.step(model, state, scratch, None, dt)  # set up, then back to the start
    state.joint_q.assign(model.joint_q)
    state.joint_qd.assign(model.joint_qd)
    sim.eval_fk(model, state.joint_q, state.joint_qd, state)
    with wp.ScopedCapture(device) as capture:
        solver.step(model, state, scratch, None, dt)
        solver.step(model, scratch, state, None, dt)
    energy, lower_angle = [e0], []
    for n in range(int(round(10.0 / dt / 2))):
        wp.capture_launch(capture.graph)
        if n % 50 == 0:
            energy.append(mechanical_energy(model, state))
            lower_angle.append(state.joint_q.numpy()[1])
    assert e0 - resting_energy > 5.0  # a big swing
    drift = np.abs(np.array(energy) - e0).max()
    assert drift / (e0 - resting_energy) < 1e-2, drift / (e0 - resting_energy)
    assert np.ptp(lower_angle) > 1.0  # the lower link swung about


def test_ball_and_d6_chain_energy_error_shrinks_with_dt(device):
    """A ball joint carrying a D6 joint (one slide, two turning axes: the motion-subspace derivative terms of
    both) tumbling in 3D: the energy error of 0.3 s shrinks 4x when dt does, so what is left is the integrator's
    O(dt), not a wrong force."""
    b = sim.ModelBuilder(up_axis="y")
    inertia = np.diag([0.02, 0.01, 0.03])
    upper = b.add_body(mass=1.0, inertia=inertia, com=(0.0, -0.5, 0.0))
    lower = b.add_body(mass=0.7, inertia=2 * inertia, com=(0.1, -0.4, 0.05))
    b.add_joint_ball(-1, upper, parent_xform=(0, 2, 0, 0, 0, 0, 1))
    b.add_joint_d6(upper, lower, linear_axes=[(0, 1, 0)], angular_axes=[(1, 0, 0), (0, 0, 1)],
                   parent_xform=(0, -1, 0, 0, 0, 0, 1))
    model = b.finalize(device)
    r = np.array([0.2, 0.1, 0.3, 1.0])
    model.joint_q.assign([*(r / np.linalg.norm(r)), 0.1, 0.5, -0.4])
    model.joint_qd.assign([1.0, -0.5, 0.3, 0.2, 1.0, -1.0])
    solver = sim.SolverFeatherstone(model)
    errors = []
    for dt in (2e-3, 5e-4):
        state = model.state()
        sim.eval_fk(model, state.joint_q, state.joint_qd, state)
        e0 = mechanical_energy(model, state)
        _, states = rollout(model, solver, int(round(0.3 / dt)), dt, state=state, every=int(round(0.02 / dt)))
        errors.append(max(abs(mechanical_energy(model, s) - e0) for s in states))
    assert errors[0] < 0.05 and errors[1] < errors[0] / 3.0, errors  # measured: 0.0265 J, 0.0066 J


def test_revolute_limit_holds(device):
    """A pendulum released horizontally swings into its lower limit and never passes it by more than 1 deg."""
    lower = -0.3
    model = pendulum(device, limit_lower=lower, limit_upper=2.0, limit_ke=1e5, limit_kd=10.0)
    q, qd = model.joint_q.numpy(), model.joint_qd.numpy()  # copies on a GPU: assigned back
    q[0], qd[0] = math.pi / 2, 0.0
    model.joint_q.assign(q)
    model.joint_qd.assign(qd)
    solver = sim.SolverFeatherstone(model)
    _, states = rollout(model, solver, 1500, 1e-3, every=1)
    angle = np.array([s.joint_q.numpy()[0] for s in states])
    assert angle.min() > lower - math.radians(1.0), angle.min()
    assert angle.min() < lower + 0.05  # it did reach the limit


def test_pd_drive_settles_at_its_target(device):
    """A drive about the vertical axis (gravity has no torque about it): critically damped gains settle the angle
    at the target; the effort limit caps the drive's torque."""
    b = sim.ModelBuilder(up_axis="y")
    body = b.add_body(mass=1.0, inertia=np.diag([0.5, 1.0, 0.5]), com=(0.5, 0.0, 0.0))
    b.add_joint_revolute(-1, body, axis=(0, 1, 0), target_pos=0.8, target_ke=100.0, target_kd=2 * math.sqrt(100 * 1.25))
    model = b.finalize(device)
    solver = sim.SolverFeatherstone(model)
    final, _ = rollout(model, solver, 1500, 2e-3)
    assert final.joint_q.numpy()[0] == pytest.approx(0.8, abs=1e-3)
    assert abs(final.joint_qd.numpy()[0]) < 1e-2
    # the same drive limited to 2 N m: the first acceleration is 2 N m / 1.25 kg m^2 (inertia about the axis)
    model.joint_effort_limit.fill_(2.0)
    qdd = solver.eval_joint_accelerations(model, model.state(), model.control())
    assert qdd.numpy()[0] == pytest.approx(2.0 / 1.25, rel=1e-4)
    # a new target through Control
    control = model.control()
    control.joint_target_pos.fill_(-0.4)
    model.joint_effort_limit.fill_(1e6)
    final, _ = rollout(model, solver, 1500, 2e-3, control=control)
    assert final.joint_q.numpy()[0] == pytest.approx(-0.4, abs=1e-3)


@pytest.mark.parametrize("armature", [0.0, 1.0])
def test_prismatic_cart_under_constant_force(device, armature):
    """x = F t^2 / (2 (m + armature)) for a cart on a horizontal rail pushed by joint_f."""
    mass, force = 2.0, 3.0
    b = sim.ModelBuilder(up_axis="y")
    cart = b.add_body(mass=mass, inertia=np.eye(3) * 0.1)
    b.add_joint_prismatic(-1, cart, axis=(1, 0, 0), armature=armature)
    model = b.finalize(device)
    control = model.control()
    control.joint_f.fill_(force)
    dt, steps = 1e-3, 1000
    final, _ = rollout(model, sim.SolverFeatherstone(model), steps, dt, control=control)
    t = steps * dt
    expected = force * t ** 2 / (2 * (mass + armature))
    assert final.joint_q.numpy()[0] == pytest.approx(expected, rel=2e-3)
    assert final.body_q.numpy()[0, 0] == pytest.approx(expected, rel=2e-3)
    assert final.joint_qd.numpy()[0] == pytest.approx(force * t / (mass + armature), rel=1e-4)


def test_joint_friction_is_not_simulated_and_says_so():
    b = sim.ModelBuilder()
    body = b.add_body(mass=1.0, inertia=np.eye(3))
    b.add_joint_ball(-1, body, friction=0.5)
    with pytest.warns(UserWarning, match="joint_friction"):
        sim.SolverFeatherstone(b.finalize("cpu"))


def test_free_joint_agrees_with_the_rigid_solver(device):
    """A body tumbling under gravity: on a free joint (SolverFeatherstone) and as a free body (SolverRigid), the
    centre of mass follows the same parabola and the orientations agree to the integrators' O(dt) difference."""
    b = sim.ModelBuilder(up_axis="y")
    body = b.add_body(pos=(0.0, 1.0, 0.0), mass=2.0, inertia=np.diag([0.05, 0.1, 0.15]), com=(0.05, 0.0, 0.0),
                      linear_velocity=(0.5, 2.0, 0.0), angular_velocity=(1.0, 0.2, 3.0))
    b.add_joint_free(body)
    model = b.finalize(device)
    dt, steps = 1e-3, 500
    reduced, _ = rollout(model, sim.SolverFeatherstone(model), steps, dt)
    maximal, _ = rollout(model, sim.SolverRigid(model), steps, dt)
    q_r, q_m = reduced.body_q.numpy()[0].astype(np.float64), maximal.body_q.numpy()[0].astype(np.float64)
    com = model.body_com.numpy()[0]
    x_r = q_r[:3] + quat_to_matrix(q_r[3:]) @ com
    x_m = q_m[:3] + quat_to_matrix(q_m[3:]) @ com
    np.testing.assert_allclose(x_r, x_m, atol=1e-4)
    assert abs(abs(q_r[3:] @ q_m[3:]) - 1.0) < 1e-4  # same orientation
    np.testing.assert_allclose(reduced.body_qd.numpy()[0], maximal.body_qd.numpy()[0], atol=2e-2)
    # the angular momentum: exact in SolverRigid (implicit gyroscopic term), within O(dt) in joint space
    # (semi-implicit Euler of the angular velocity: 1.7 % of one component after 500 steps)
    for state, rtol in ((reduced, 3e-2), (maximal, 2e-3)):
        R = quat_to_matrix(state.body_q.numpy()[0, 3:])
        momentum = R @ model.body_inertia.numpy()[0] @ R.T @ state.body_qd.numpy()[0, :3]
        w0 = model.body_qd0.numpy()[0, :3]
        np.testing.assert_allclose(momentum, model.body_inertia.numpy()[0] @ w0, rtol=rtol, atol=1e-4)


def test_solver_kernels_compile_to_ptx():
    """The CUDA path of the solver's kernels (forward and backward; they call every joint function of
    sim/articulation.py) and of the tiled mass-matrix solve compiles, with or without a GPU."""
    from kernels.runtime.module import get_module
    from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source

    from sim.solvers.featherstone import kernels as featherstone_kernels
    from sim.solvers.featherstone.mass_matrix import solve_kernel

    solver_kernels = list(get_module(featherstone_kernels.__name__).kernels) + [solve_kernel(3)]
    ptx = compile_source_to_ptx(render_cuda_source(solver_kernels), 90, "featherstone.cu")
    for i, k in enumerate(solver_kernels):
        assert f"k{i}_{k.name}_cuda_forward" in ptx and f"k{i}_{k.name}_cuda_backward" in ptx


# ---------------------------------------------------------------------------------------------------------------
# Gradients


def add_two_link_arm(b, *, origin=(0.0, 2.0, 0.0)):
    """A driven, damped two-link arm (revolute about z, then about a tilted axis) with offset centres of mass,
    hung at `origin`, starting at q = (0.3, -0.4), qd = (0.5, 1.0)."""
    inertia = np.diag([0.01, 0.02, 0.03])
    upper = b.add_body(mass=1.0, inertia=inertia, com=(0.1, 0.0, 0.0))
    lower = b.add_body(mass=0.5, inertia=inertia, com=(0.0, -0.2, 0.05))
    b.add_joint_revolute(-1, upper, axis=(0, 0, 1), parent_xform=(*origin, 0, 0, 0, 1),
                         child_xform=(0, 0.5, 0, 0, 0, 0, 1), target_pos=0.2, target_ke=5.0, target_kd=0.5,
                         damping=0.1)
    b.add_joint_revolute(upper, lower, axis=(1, 0, 1), parent_xform=(0, -0.5, 0, 0, 0, 0, 1), target_ke=2.0,
                         target_kd=0.2, damping=0.2, armature=0.01)
    b.joint_q[-2:] = [0.3, -0.4]
    b.joint_qd[-2:] = [0.5, 1.0]


def add_ball_pendulum(b):
    """A body hanging from a ball joint, tumbling (3 dofs)."""
    body = b.add_body(mass=0.8, inertia=np.diag([0.02, 0.03, 0.01]), com=(0.05, -0.3, 0.0))
    b.add_joint_ball(-1, body, parent_xform=(2, 2, 0, 0, 0, 0, 1), damping=0.05, armature=0.02)
    r = np.array([0.2, 0.1, -0.1, 1.0])
    b.joint_q[-4:] = r / np.linalg.norm(r)
    b.joint_qd[-3:] = [0.4, -0.6, 1.2]


def add_cart(b):
    """A cart on a rail along x (1 dof) pushed by a spring drive."""
    cart = b.add_body(mass=2.0, inertia=np.eye(3) * 0.1)
    b.add_joint_prismatic(-1, cart, axis=(1, 0, 0), parent_xform=(-2, 0, 0, 0, 0, 0, 1), target_pos=0.5,
                          target_ke=20.0, armature=0.1)
    b.joint_qd[-1] = -0.3


def two_link_arm(device):
    b = sim.ModelBuilder(up_axis="y")
    add_two_link_arm(b)
    return b.finalize(device, requires_grad=True)


def three_articulations(device, parts=(add_two_link_arm, add_ball_pendulum, add_cart)):
    """Articulations of 2, 3 and 1 dofs in one model: their mass matrices are padded to 3 x 3 tiles."""
    b = sim.ModelBuilder(up_axis="y")
    for add in parts:
        add(b)
    return b.finalize(device, requires_grad=True)


@pytest.mark.parametrize("wrt", ["joint_q", "joint_qd", "joint_f", "target_pos", "target_ke", "target_kd",
                                 "body_mass", "body_inertia", "joint_damping", "joint_armature"])
def test_rollout_gradient(device, wrt):
    """Final body poses and joint coordinates after 20 steps, differentiated with respect to the initial joint
    coordinates and velocities, per-step joint forces (Control), drive targets and gains, link masses and
    inertias, joint damping and armature."""
    model = two_link_arm(device)
    solver = sim.SolverFeatherstone(model)
    steps = 20
    controls = [model.control() for _ in range(steps)]
    x = {"joint_q": [model.joint_q], "joint_qd": [model.joint_qd],
         "joint_f": [controls[0].joint_f, controls[9].joint_f], "target_pos": [controls[5].joint_target_pos],
         "target_ke": [model.joint_target_ke], "target_kd": [model.joint_target_kd],
         "body_mass": [model.body_mass], "body_inertia": [model.body_inertia],
         "joint_damping": [model.joint_damping], "joint_armature": [model.joint_armature]}[wrt]

    def fn(*_):
        state = model.state()
        state.joint_q, state.joint_qd = model.joint_q, model.joint_qd  # read only: gradients reach them directly
        final, _ = rollout(model, solver, steps, 1e-2, state=state, control=controls)
        return final.body_q, final.joint_qd

    tape = Tape()
    with tape:
        out = fn()
    tape.backward(grads={out[0]: np.ones((2, 7), np.float32)})
    assert np.abs(x[0].grad.numpy()).max() > 1e-3  # the input matters
    tape.zero()
    gradcheck(fn, x, eps=1e-3, atol=5e-4, rtol=2e-2)


def test_fk_gradient(device):
    """eval_fk alone, differentiated with respect to the joint coordinates and velocities of a tree with a free
    root, a ball joint and a revolute joint."""
    b = sim.ModelBuilder()
    inertia = np.eye(3) * 0.1
    root = b.add_body(pos=(0.0, 1.0, 0.0), mass=1.0, inertia=inertia, angular_velocity=(0.3, 0.1, 0.2))
    arm = b.add_body(mass=1.0, inertia=inertia, com=(0.0, -0.2, 0.0))
    hand = b.add_body(mass=1.0, inertia=inertia, com=(0.1, 0.0, 0.0))
    b.add_joint_free(root)
    b.add_joint_ball(root, arm, parent_xform=(0.2, 0, 0, 0, 0, 0, 1))
    b.add_joint_revolute(arm, hand, axis=(0, 1, 1), parent_xform=(0, -0.4, 0, 0, 0, 0, 1))
    model = b.finalize(device, requires_grad=True)
    q = model.joint_q.numpy()
    q[7:11] = np.array([0.1, 0.2, -0.1, 0.9]) / np.linalg.norm([0.1, 0.2, -0.1, 0.9])
    q[11] = 0.4
    model.joint_qd.assign(np.linspace(-1.0, 1.0, model.joint_dof_count))

    def fn(joint_q, joint_qd):
        state = model.state()
        sim.eval_fk(model, joint_q, joint_qd, state)
        return state.body_q, state.body_qd

    gradcheck(fn, [model.joint_q, model.joint_qd], eps=1e-3, atol=5e-4, rtol=2e-2)


def test_articulations_of_different_sizes_step_as_if_alone(device):
    """Three articulations of 2, 3 and 1 dofs (tiles padded with the identity) in one model: the accelerations
    and 50 steps of each equal those of a model holding it alone."""
    parts = (add_two_link_arm, add_ball_pendulum, add_cart)
    model = three_articulations(device, parts)
    solver = sim.SolverFeatherstone(model)
    assert solver.max_articulation_dofs == 3
    qdd = solver.eval_joint_accelerations(model, model.state(), model.control()).numpy()
    final, _ = rollout(model, solver, 50, 2e-3)
    q_start, dof = 0, 0
    for add in parts:
        alone = three_articulations(device, (add,))
        alone_solver = sim.SolverFeatherstone(alone)
        n, nq = alone.joint_dof_count, alone.joint_coord_count
        np.testing.assert_allclose(
            qdd[dof:dof + n], alone_solver.eval_joint_accelerations(alone, alone.state(), alone.control()).numpy(),
            rtol=1e-5, atol=1e-5)
        alone_final, _ = rollout(alone, alone_solver, 50, 2e-3)
        np.testing.assert_allclose(final.joint_q.numpy()[q_start:q_start + nq], alone_final.joint_q.numpy(),
                                   rtol=1e-5, atol=1e-6)
        q_start, dof = q_start + nq, dof + n
    assert np.isfinite(final.body_q.numpy()).all()


@pytest.mark.parametrize("wrt", ["joint_qd", "joint_armature"])
def test_rollout_gradient_with_padded_mass_matrices(device, wrt):
    """Gradients through the tiled solve of articulations of different sizes (the tiles' padding)."""
    model = three_articulations(device)
    solver = sim.SolverFeatherstone(model)

    def fn(*_):
        state = model.state()
        state.joint_q, state.joint_qd = model.joint_q, model.joint_qd
        final, _ = rollout(model, solver, 10, 1e-2, state=state)
        return final.joint_q, final.joint_qd

    gradcheck(fn, [getattr(model, wrt)], eps=1e-3, atol=5e-4, rtol=2e-2)


def test_checkpointed_rollout_gradient_equals_the_full_tape(device):
    """SolverFeatherstone inside autodiff.CheckpointedRollout: the gradients with respect to the initial joint
    coordinates and velocities and the link masses equal those of a fully taped rollout."""
    steps, dt = 24, 1e-2

    def gradients(checkpointed):
        model = three_articulations(device)
        solver = sim.SolverFeatherstone(model)
        state0 = model.state()
        tape = Tape()
        with tape:
            if checkpointed:
                run = CheckpointedRollout(lambda i, a, b: solver.step(model, a, b, None, dt), None, steps, 5)
                final = run.run(state0)
            else:
                final, _ = rollout(model, solver, steps, dt, state=state0)
        tape.backward(grads={final.body_q: np.ones(final.body_q.shape + (7,), np.float32),
                             final.joint_qd: np.ones(final.joint_qd.shape, np.float32)})
        return [a.grad.numpy().copy() for a in (state0.joint_q, state0.joint_qd, model.body_mass,
                                                model.joint_armature)]

    full, checkpointed = gradients(False), gradients(True)
    for ref, got in zip(full, checkpointed):
        assert np.abs(ref).max() > 1e-3
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6 * np.abs(ref).max())


# ---------------------------------------------------------------------------------------------------------------
# Contacts


def arm_over_the_ground(device, *, requires_grad=False, angle=0.0, speed=0.0, **dof):
    """A 1 kg link (centre of mass 0.5 m out) on a revolute joint 0.3 m above the ground, a sphere of radius
    0.1 m at its end 1 m from the pivot; `dof`: the joint's settings (drive, damping)."""
    b = sim.ModelBuilder(up_axis="y")
    link = b.add_body(mass=1.0, inertia=np.eye(3) * 0.01, com=(0.5, 0.0, 0.0))
    b.add_shape_sphere(pos=(1.0, 0.0, 0.0), radius=0.1, body=link, density=0.0)
    b.add_joint_revolute(-1, link, axis=(0, 0, 1), parent_xform=(0, 0.3, 0, 0, 0, 0, 1), **dof)
    b.add_ground_plane()
    b.joint_q[0], b.joint_qd[0] = angle, speed
    return b.finalize(device, requires_grad=requires_grad)


def cartpole(device, *, body_contacts=True, pole_angle=0.4, height=0.5):
    """A cart (box) free to move in x and y (a D6 joint) carrying a pole (capsule) on a revolute joint; the
    capsule overlaps the box at the joint."""
    b = sim.ModelBuilder(up_axis="y")
    cart = b.add_body(mass=2.0, inertia=np.eye(3) * 0.05)
    b.add_shape_box(hx=0.2, hy=0.1, hz=0.15, body=cart, density=0.0)
    pole = b.add_body(mass=0.5, inertia=np.diag([0.04, 0.001, 0.04]), com=(0.0, 0.4, 0.0))
    b.add_shape_capsule(pos=(0, 0.4, 0), radius=0.04, half_height=0.4, body=pole, density=0.0)
    b.add_joint_d6(-1, cart, linear_axes=[(1, 0, 0), (0, 1, 0)], parent_xform=(0, height, 0, 0, 0, 0, 1))
    b.add_joint_revolute(cart, pole, axis=(0, 0, 1))
    b.joint_q[-1] = pole_angle
    b.add_ground_plane()
    model = b.finalize(device)
    return model, sim.SolverFeatherstone(model, body_contacts=body_contacts)


def test_arm_link_rests_on_the_ground(device):
    """The link falls onto the ground and rests with its sphere on it: the angle where the sphere's centre is
    one radius up, less the contact's compression (under 1.5 mm: the time-constant contact takes the link's own
    effective mass at the sphere, 0.04 kg, not the 0.26 kg of the link turning about its pivot, so it sinks
    about 0.9 mm where a free body would sink 0.1 mm; docs/rigid_contact.md), no motion left."""
    model = arm_over_the_ground(device)
    final, _ = rollout(model, sim.SolverFeatherstone(model), 2000, 1e-3)
    depth = 0.1 - (0.3 + math.sin(float(final.joint_q.numpy()[0])))  # the sphere's centre below one radius up
    assert 0.0 < depth < 1.5e-3
    assert abs(final.joint_qd.numpy()[0]) < 1e-4
    assert final.body_q.numpy()[0, 1] == pytest.approx(0.3, abs=1e-6)  # the body frame stays on the pivot


def test_cartpole_drops_onto_the_ground_and_comes_to_rest(device):
    """The cart lands on its box, the pole tips over onto the ground: at rest, the box on the ground, the pole's
    tip one capsule radius up; the shapes of the cart and the pole (overlapping at their joint) exert no force
    on each other."""
    model, solver = cartpole(device)
    final, states = rollout(model, solver, 1500, 1e-3, every=100)
    q, qd = final.joint_q.numpy(), final.joint_qd.numpy()
    assert np.abs(qd).max() < 1e-3, qd
    assert q[1] == pytest.approx(0.1 - 0.5, abs=1e-3)  # the cart's centre one half-height up
    tip = 0.1 + 0.8 * math.cos(q[2])  # height of the centre of the pole's far cap (0.8 m out, radius 0.04 m)
    assert abs(q[2]) > math.pi / 2 and tip == pytest.approx(0.04, abs=2e-3), q
    assert all(np.isfinite(s.joint_q.numpy()).all() for s in states)
    # in the air, body contacts on or off: the same accelerations (the overlapping pair is excluded)
    airborne = cartpole(device, height=2.0)
    alone = cartpole(device, height=2.0, body_contacts=False)
    qdd = [m_s[1].eval_joint_accelerations(m_s[0], m_s[0].state(), None).numpy() for m_s in (airborne, alone)]
    np.testing.assert_allclose(qdd[0], qdd[1], atol=1e-6)
    assert qdd[0][1] == pytest.approx(-G, rel=1e-5)


def test_links_that_are_not_jointed_collide(device):
    """A three-link chain folded so that the first and the third link's spheres overlap: they push apart
    (body_contacts), while the spheres of jointed neighbours, which overlap too, do not."""
    def chain(body_contacts):
        b = sim.ModelBuilder(up_axis="y", gravity=0.0)
        bodies = [b.add_body(mass=1.0, inertia=np.eye(3) * 0.01) for _ in range(3)]
        for body in bodies:
            b.add_shape_sphere(radius=0.3, body=body, density=0.0)
        b.add_joint_revolute(-1, bodies[0], axis=(0, 0, 1))
        b.add_joint_revolute(bodies[0], bodies[1], axis=(0, 0, 1), parent_xform=(0.4, 0, 0, 0, 0, 0, 1))
        b.add_joint_revolute(bodies[1], bodies[2], axis=(0, 0, 1), parent_xform=(0.4, 0, 0, 0, 0, 0, 1))
        b.joint_q[:] = [0.0, 2.0, 2.0]  # the third body's centre 0.2 m from the first's
        model = b.finalize(device)
        return model, sim.SolverFeatherstone(model, body_contacts=body_contacts)

    qdd = {}
    for on in (True, False):
        model, solver = chain(on)
        qdd[on] = solver.eval_joint_accelerations(model, model.state(), None).numpy()
    np.testing.assert_allclose(qdd[False], 0.0, atol=1e-6)
    assert np.abs(qdd[True]).max() > 1.0
    excluded = sim.solvers.featherstone.contacts.jointed_shape_pairs(model)
    assert excluded == {(0, 1), (1, 2)}


# joint_q through contact: tests/test_articulation_contact_gradients.py (a better-conditioned scene)
@pytest.mark.parametrize("wrt", ["joint_qd", "joint_f", "body_mass", "target_pos", "target_ke", "target_kd",
                                 "joint_damping"])
def test_rollout_gradient_with_ground_contact(device, wrt):
    """The link swings down onto the ground within the rollout (contact smoothing on: requires_grad), against a
    weak drive towards a target below the ground and joint damping: gradients with respect to the initial joint
    velocity, per-step joint forces and drive targets, the link's mass, the drive's gains and the damping."""
    model = arm_over_the_ground(device, requires_grad=True, angle=-0.17, speed=-0.5, target_pos=-0.5,
                                target_ke=2.0, target_kd=0.2, damping=0.05)
    solver = sim.SolverFeatherstone(model)
    steps = 25
    controls = [model.control() for _ in range(steps)]
    x = {"joint_qd": [model.joint_qd],
         "joint_f": [controls[0].joint_f, controls[12].joint_f], "body_mass": [model.body_mass],
         "target_pos": [controls[3].joint_target_pos, controls[20].joint_target_pos],
         "target_ke": [model.joint_target_ke], "target_kd": [model.joint_target_kd],
         "joint_damping": [model.joint_damping]}[wrt]

    def fn(*_):
        state = model.state()
        state.joint_q, state.joint_qd = model.joint_q, model.joint_qd
        final, _ = rollout(model, solver, steps, 2e-3, state=state, control=controls)
        return final.joint_q, final.joint_qd

    final = fn()[0].numpy()[0]
    assert final < -math.asin(0.2) + 0.01  # the sphere reached the ground
    # the mass moves the final state little (d/dm ~ 0.02): a step of 1e-3 kg is lost in float32 rounding
    gradcheck(fn, x, eps=1e-2 if wrt == "body_mass" else 1e-3, atol=5e-4, rtol=2e-2)
