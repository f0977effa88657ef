"""SolverRigid and rigid bodies in the Model: mass properties, free flight and free rotation (angular momentum and
energy), resting contact, a stack, friction and restitution against their analytic values, collisions between
bodies, the hash-grid broad phase, gradients of bounces checked against finite differences, and one-way coupling
of particles with shapes carried by bodies."""

import math
import re

import numpy as np
import pytest

import kernels as wp
import sim
from _sim_rollout import quat_to_matrix, rollout
from sim.penetration import box_box_depth, box_corners, ground_depth
from autodiff import Tape, gradcheck

G = 9.81


def poses(states):
    """Body poses of a list of states, shape [len(states), body_count, 7] (float64)."""
    return np.array([s.body_q.numpy() for s in states], dtype=np.float64)


def box_stack_builder(count, *, half=0.1, gap=0.0, jitter=0.0, kf=None, up_axis="y", seed=0):
    """`count` cubes of half extent `half` [m] stacked on a ground plane, each `gap` [m] above the one below and
    shifted and turned about the up axis by up to `jitter` [m] (and 3 * jitter [rad])."""
    b = sim.ModelBuilder(up_axis=up_axis)
    up = b.up_vector
    rng = np.random.default_rng(seed)
    for i in range(count):
        shift = rng.uniform(-jitter, jitter, 3) * (1.0 - up)
        body = b.add_body(pos=up * (half + i * (2 * half + gap)) + shift,
                          rot=sim.quat_from_axis_angle(up, rng.uniform(-3 * jitter, 3 * jitter)))
        b.add_shape_box(hx=half, hy=half, hz=half, body=body, kf=kf)
    b.add_ground_plane(kf=kf)
    return b


# ---------------------------------------------------------------------------------------------------------------
# Model building


def test_body_mass_properties_from_shapes():
    b = sim.ModelBuilder()
    sphere = b.add_body()
    b.add_shape_sphere(radius=0.2, body=sphere, density=500.0)
    box = b.add_body(pos=(1.0, 0.0, 0.0))
    b.add_shape_box(hx=0.1, hy=0.2, hz=0.3, body=box, density=1000.0)
    capsule = b.add_body()
    b.add_shape_capsule(radius=0.1, half_height=0.3, body=capsule, density=1000.0)
    # a dumbbell: two spheres off the body origin, and a turned box whose mass is given
    dumbbell = b.add_body()
    b.add_shape_sphere(pos=(0.0, 0.0, 0.5), radius=0.1, body=dumbbell)
    b.add_shape_sphere(pos=(0.0, 0.0, -0.3), radius=0.1, body=dumbbell)
    turned = b.add_body(mass=3.0)
    b.add_shape_box(rot=sim.quat_from_axis_angle((0, 0, 1), math.pi / 2), hx=0.1, hy=0.2, hz=0.3, body=turned)
    model = b.finalize("cpu")
    mass, com, inertia = model.body_mass.numpy(), model.body_com.numpy(), model.body_inertia.numpy()

    m = 500.0 * 4 / 3 * math.pi * 0.2 ** 3
    assert mass[sphere] == pytest.approx(m, rel=1e-6)
    np.testing.assert_allclose(inertia[sphere], np.eye(3) * 0.4 * m * 0.04, rtol=1e-6)
    m = 1000.0 * 0.2 * 0.4 * 0.6
    assert mass[box] == pytest.approx(m, rel=1e-6)
    np.testing.assert_allclose(np.diag(inertia[box]), m / 12 * np.array([0.16 + 0.36, 0.04 + 0.36, 0.04 + 0.16]),
                               rtol=1e-6)
    # the capsule against a numerical integral over a fine grid of its volume
    r, h = 0.1, 0.3
    g = np.linspace(-0.4, 0.4, 161)[:-1] + 0.0025
    x, y, z = np.meshgrid(g[g ** 2 < r * r + 1e-9], g, g[g ** 2 < r * r + 1e-9], indexing="ij")
    inside = x ** 2 + z ** 2 + np.maximum(np.abs(y) - h, 0.0) ** 2 <= r * r
    dv = 1000.0 * 0.005 ** 3
    assert mass[capsule] == pytest.approx(inside.sum() * dv, rel=2e-2)
    ixx = np.sum((y ** 2 + z ** 2)[inside]) * dv
    iyy = np.sum((x ** 2 + z ** 2)[inside]) * dv
    np.testing.assert_allclose(np.diag(inertia[capsule]), [ixx, iyy, ixx], rtol=3e-2)
    # parallel axes: the centre of mass between the spheres, each sphere 0.4 m from it
    ms = 1000.0 * 4 / 3 * math.pi * 0.001
    np.testing.assert_allclose(com[dumbbell], [0.0, 0.0, 0.1], atol=1e-6)
    expected = 2 * 0.4 * ms * 0.01 + 2 * ms * 0.4 ** 2
    np.testing.assert_allclose(np.diag(inertia[dumbbell]), [expected, expected, 2 * 0.4 * ms * 0.01], rtol=1e-5)
    # a given mass scales the shapes' tensor; the box turned by 90 degrees about z swaps x and y
    assert mass[turned] == pytest.approx(3.0)
    np.testing.assert_allclose(np.diag(inertia[turned]), 3.0 / 12 * np.array([0.04 + 0.36, 0.16 + 0.36, 0.2]),
                               rtol=1e-5)
    np.testing.assert_allclose(model.body_inv_inertia.numpy()[turned] @ inertia[turned], np.eye(3), atol=1e-5)


def test_state_without_bodies_and_bad_input():
    b = sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0))
    model = b.finalize("cpu")
    state = model.state()
    assert model.body_count == 0 and state.body_q.shape == (0,) and state.body_qd.shape == (0,)
    sim.SolverRigid(model).step(model, state, model.state(), None, 1e-3)  # nothing to do
    with pytest.raises(ValueError, match="body"):
        b.add_shape_sphere(radius=0.1, body=3)
    with pytest.raises(ValueError, match="either xform or pos"):
        b.add_body(xform=(0, 0, 0, 0, 0, 0, 1), pos=(1, 0, 0))
    with pytest.raises(ValueError, match="restitution"):
        b.add_shape_box(restitution=1.5)


# ---------------------------------------------------------------------------------------------------------------
# Free bodies


def test_free_flight_with_external_force_matches_semi_implicit_euler(device):
    b = sim.ModelBuilder()
    v0, x0 = np.array([1.0, 2.0, -0.5]), np.array([0.0, 1.0, 0.0])
    body = b.add_body(pos=x0, linear_velocity=v0)
    b.add_shape_sphere(radius=0.1, body=body)
    model = b.finalize(device)
    m = float(model.body_mass.numpy()[0])
    control = model.control()
    push = np.array([0.0, 0.0, 2.0 * m])  # 2 m/s^2 along z
    control.body_f = wp.array(np.concatenate([[0.0, 0.0, 0.0], push])[None].astype(np.float32),
                              dtype=wp.spatial_vector, device=device)
    n, dt = 50, 1e-2
    state, _ = rollout(model, sim.SolverRigid(model), n, dt, control=control)
    a = np.array(model.gravity, dtype=np.float64) + push / m
    np.testing.assert_allclose(state.body_q.numpy()[0, :3], x0 + n * dt * v0 + dt * dt * a * n * (n + 1) / 2,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state.body_qd.numpy()[0, 3:], v0 + n * dt * a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", [1e-3, 1e-2])
def test_free_rotation_conserves_angular_momentum_and_energy(device, dt):
    """A torque-free asymmetric box spinning about a non-principal axis (it tumbles): the world angular momentum
    stays constant, and the kinetic energy neither grows nor decays."""
    b = sim.ModelBuilder(gravity=0.0)
    # a box whose centre of mass is off the body origin, so the origin wobbles while the centre moves straight
    body = b.add_body(pos=(0.0, 1.0, 0.0), rot=sim.quat_from_axis_angle((1, 2, 3), 0.7),
                      angular_velocity=(2.0, 5.0, -3.0), linear_velocity=(0.1, 0.0, 0.0))
    b.add_shape_box(pos=(0.2, 0.0, 0.0), hx=0.3, hy=0.1, hz=0.05, body=body)
    model = b.finalize(device)
    inertia = model.body_inertia.numpy()[0].astype(np.float64)
    com = model.body_com.numpy()[0].astype(np.float64)

    def momentum_energy(state):
        q, qd = state.body_q.numpy()[0].astype(np.float64), state.body_qd.numpy()[0].astype(np.float64)
        r = quat_to_matrix(q[3:])
        momentum = r @ inertia @ r.T @ qd[:3]
        return momentum, 0.5 * qd[:3] @ momentum, q[:3] + r @ com

    _, states = rollout(model, sim.SolverRigid(model), 1000, dt, every=10)
    values = [momentum_energy(s) for s in states]
    l0, e0, c0 = values[0]
    w = [s.body_qd.numpy()[0, :3] for s in states]
    assert np.abs(w[-1] - w[0]).max() > 1.0  # the angular velocity really changed (tumbling)
    for k, (momentum, energy, centre) in enumerate(values):
        np.testing.assert_allclose(momentum, l0, atol=1e-3 * np.linalg.norm(l0))
        assert energy == pytest.approx(e0, rel=2e-3)
        np.testing.assert_allclose(centre, c0 + [0.1 * k * 10 * dt, 0.0, 0.0], atol=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# Contact


@pytest.mark.parametrize("up_axis", ["y", "z"])
def test_box_rests_on_ground_without_drift_or_jitter(device, up_axis):
    b = box_stack_builder(1, up_axis=up_axis)
    model = b.finalize(device)
    _, states = rollout(model, sim.SolverRigid(model), 1000, 1e-3, every=10)
    q = poses(states)
    up = b.up_vector.astype(bool)
    settled = q[30:]  # after 0.3 s
    height = settled[:, 0, :3][:, up]
    assert np.abs(height - 0.1).max() < 1e-3  # resting penetration, mg / (4 ke / 2) = 0.4 mm
    assert np.ptp(height) < 1e-5  # no vertical jitter
    assert np.abs(settled[:, 0, :3][:, ~up]).max() < 1e-6  # no sliding
    np.testing.assert_allclose(settled[:, 0, 3:], np.tile([0.0, 0.0, 0.0, 1.0], (len(settled), 1)), atol=1e-6)
    assert np.abs(states[-1].body_qd.numpy()).max() < 1e-4


def test_stack_of_five_boxes_stands(device):
    """Five equal cubes, each shifted by up to 1 cm and turned by up to 1.7 degrees, dropped from 2 mm: they stand,
    every contact (measured from the poses, sim.penetration) at most 1 mm deep."""
    b = box_stack_builder(5, gap=0.002, jitter=0.01, kf=300.0)
    model = b.finalize(device)
    start = model.body_q0.numpy().astype(np.float64)
    _, states = rollout(model, sim.SolverRigid(model), 2000, 1e-3, every=100)
    q = poses(states)
    final = q[-1]
    half = (0.1, 0.1, 0.1)
    depths = [ground_depth(box_corners(final[0], half))] + \
        [box_box_depth(final[i], half, final[i + 1], half) for i in range(4)]
    assert 0.0 < min(depths) and max(depths) < 1e-3
    # nothing slid off; regularised friction has no true static friction, so the boxes creep (~1 mm/s here, the
    # tangential load of contact normals tilted by ~0.2 degrees over 4 kf)
    assert np.abs(final[:, [0, 2]] - start[:, [0, 2]]).max() < 0.015
    tilt = np.array([quat_to_matrix(p[3:])[1, 1] for p in final])
    assert tilt.min() > math.cos(0.01)  # every box upright within 0.6 degrees
    assert np.abs(q[-1] - q[-5]).max() < 5e-3  # and nearly still over the last 0.4 s
    assert np.abs(states[-1].body_qd.numpy()).max() < 1e-2


@pytest.mark.parametrize("mu, v0", [(0.3, 3.0), (0.6, 2.0)])
def test_sliding_box_stops_where_friction_says(device, mu, v0):
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.05, 0.0), linear_velocity=(v0, 0.0, 0.0))
    b.add_shape_box(hx=0.1, hy=0.05, hz=0.1, body=body, mu=mu)
    b.add_ground_plane(mu=mu)
    model = b.finalize(device)
    stop = v0 / (mu * G)
    state, _ = rollout(model, sim.SolverRigid(model), int(1.2 * stop / 1e-3), 1e-3)
    q = state.body_q.numpy()[0]
    assert q[0] == pytest.approx(v0 * v0 / (2 * mu * G), rel=1e-2)
    assert abs(q[2]) < 1e-4 and np.abs(q[3:6]).max() < 1e-4  # straight, and it did not tip
    assert np.abs(state.body_qd.numpy()).max() < 1e-3  # stopped


@pytest.mark.parametrize("restitution", [0.5, 0.8])
def test_bounce_height_follows_restitution(device, restitution):
    """A ball dropped from h0 rises to e^2 h0. The contact gives back e^2 of the energy it stored; what gravity
    does while the ball is in the ground (penetration ~ 5 mm) leaves a bias of ~ (1 - e^2) / e^2 * 0.5 %."""
    h0, radius = 1.0, 0.1
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, radius + h0, 0.0))
    b.add_shape_sphere(radius=radius, body=body, density=250.0, ke=1e6, restitution=restitution)
    b.add_ground_plane(ke=1e6, restitution=restitution)
    model = b.finalize(device)
    _, states = rollout(model, sim.SolverRigid(model), 4000, 2e-4, every=5)
    height = poses(states)[:, 0, 1] - radius
    bottom = int(np.argmin(height))
    assert height[bottom] > -0.01
    assert height[bottom:].max() == pytest.approx(restitution ** 2 * h0, rel=3e-2)


def test_colliding_spheres_conserve_momentum(device):
    """Two spheres (different masses, off-centre, with spin) collide without gravity or friction: total linear
    and angular momentum are conserved, and with e = 1 the kinetic energy comes back."""
    b = sim.ModelBuilder(gravity=0.0)
    a = b.add_body(pos=(-0.5, 0.0, 0.0), linear_velocity=(2.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 3.0))
    b.add_shape_sphere(radius=0.1, body=a, restitution=1.0, mu=0.0, ke=1e5)
    c = b.add_body(pos=(0.5, 0.05, 0.0), linear_velocity=(-1.0, 0.0, 0.0))
    b.add_shape_sphere(radius=0.15, body=c, restitution=1.0, mu=0.0, ke=1e5)
    model = b.finalize(device)
    mass = model.body_mass.numpy().astype(np.float64)

    def totals(state):
        q, qd = state.body_q.numpy().astype(np.float64), state.body_qd.numpy().astype(np.float64)
        inertia = model.body_inertia.numpy().astype(np.float64)
        p = (mass[:, None] * qd[:, 3:]).sum(0)
        angular = sum(np.cross(q[i, :3], mass[i] * qd[i, 3:]) + inertia[i] @ qd[i, :3] for i in range(2))
        energy = 0.5 * sum(mass[i] * qd[i, 3:] @ qd[i, 3:] + qd[i, :3] @ inertia[i] @ qd[i, :3] for i in range(2))
        return p, angular, energy

    before = totals(model.state())
    state, _ = rollout(model, sim.SolverRigid(model, restitution_velocity=0.01), 600, 5e-4)
    after = totals(state)
    v = state.body_qd.numpy()
    assert v[0, 3] < 0.0 and v[1, 3] > 0.0 and abs(v[1, 4]) > 0.05  # they bounced, c deflected upward
    np.testing.assert_allclose(after[0], before[0], atol=1e-4 * np.abs(before[0]).max())
    np.testing.assert_allclose(after[1], before[1], atol=1e-4)
    assert after[2] == pytest.approx(before[2], rel=2e-3)


def test_kinematic_body_moves_with_its_velocity_and_pushes(device):
    """A body of mass 0 ignores gravity and contact forces and moves with its velocity; a ball in its way is
    pushed ahead of it."""
    b = sim.ModelBuilder()
    pusher = b.add_body(pos=(0.0, 0.2, 0.0), mass=0.0, linear_velocity=(1.0, 0.0, 0.0),
                        angular_velocity=(0.0, 2.0, 0.0))
    b.add_shape_box(hx=0.1, hy=0.2, hz=0.3, body=pusher, mu=0.0)
    ball = b.add_body(pos=(0.3, 0.1, 0.0))
    b.add_shape_sphere(radius=0.1, body=ball, mu=0.0)
    b.add_ground_plane(mu=0.0)
    model = b.finalize(device)
    state, _ = rollout(model, sim.SolverRigid(model), 500, 1e-3)
    q = state.body_q.numpy()
    np.testing.assert_allclose(q[pusher, :3], [0.5, 0.2, 0.0], atol=1e-4)
    np.testing.assert_allclose(q[pusher, 3:], sim.quat_from_axis_angle((0, 1, 0), 1.0), atol=1e-4)
    assert q[ball, 0] > 0.6  # pushed along x


def test_capsule_and_sphere_rest_on_a_box_and_capsule(device):
    """Shape pairs other than box-ground: a capsule lying across a static box, a sphere on that capsule, a box
    on a capsule body lying on the ground, a capsule across a static capsule; all come to rest where their
    surfaces touch."""
    b = sim.ModelBuilder()
    b.add_shape_box(pos=(0.0, 0.25, 0.0), hx=0.2, hy=0.25, hz=0.2)  # a static table, top at 0.5
    horizontal = sim.quat_from_axis_angle((0, 0, 1), math.pi / 2)
    capsule = b.add_body(pos=(0.0, 0.6, 0.0), rot=horizontal)  # longer than the table is wide
    b.add_shape_capsule(radius=0.05, half_height=0.4, body=capsule, kf=50.0)
    sphere = b.add_body(pos=(0.0, 0.75, 0.0))
    b.add_shape_sphere(radius=0.05, body=sphere, kf=50.0)
    roller = b.add_body(pos=(1.0, 0.1, 0.0), rot=sim.quat_from_axis_angle((1, 0, 0), math.pi / 2))
    b.add_shape_capsule(radius=0.1, half_height=0.3, body=roller, kf=50.0)
    top = b.add_body(pos=(1.0, 0.26, 0.0))
    b.add_shape_box(hx=0.05, hy=0.05, hz=0.05, body=top, kf=50.0)
    # a thin capsule across a static one: segment-segment closest points
    b.add_shape_capsule(pos=(2.0, 0.1, 0.0), rot=sim.quat_from_axis_angle((1, 0, 0), math.pi / 2), radius=0.1,
                        half_height=0.3)
    crossing = b.add_body(pos=(2.0, 0.25, 0.0), rot=horizontal)
    b.add_shape_capsule(radius=0.04, half_height=0.2, body=crossing, kf=50.0)
    b.add_ground_plane(kf=50.0)
    model = b.finalize(device)
    state, _ = rollout(model, sim.SolverRigid(model, angular_damping=1.0), 2000, 5e-4)
    q = state.body_q.numpy()
    np.testing.assert_allclose(q[capsule, :3], [0.0, 0.55, 0.0], atol=3e-3)
    np.testing.assert_allclose(q[sphere, :3], [0.0, 0.65, 0.0], atol=4e-3)
    # the roller rests on its two end points, the box on the roller's top line, each less than 0.5 mm deep
    assert 0.1 - 5e-4 < q[roller, 1] < 0.1
    assert q[roller, 1] + 0.15 - 5e-4 < q[top, 1] < q[roller, 1] + 0.15
    np.testing.assert_allclose(q[crossing, :3], [2.0, 0.24, 0.0], atol=1e-3)
    assert np.abs(state.body_qd.numpy()).max() < 0.05


def test_hash_grid_broad_phase_matches_all_pairs(device):
    """A pile of spheres and boxes: the hash-grid broad phase finds the same contacts as testing every pair."""
    b = sim.ModelBuilder()
    rng = np.random.default_rng(2)
    for i in range(12):
        body = b.add_body(pos=(rng.uniform(-0.15, 0.15), 0.15 + 0.2 * i, rng.uniform(-0.15, 0.15)))
        if i % 2:
            b.add_shape_sphere(radius=0.08, body=body)
        else:
            b.add_shape_box(hx=0.08, hy=0.06, hz=0.07, body=body)
    b.add_ground_plane()
    model = b.finalize(device)
    states = {}
    for limit in (100, 0):
        solver = sim.SolverRigid(model, all_pairs_limit=limit)
        assert (solver._grid is None) == (limit == 100)
        if limit == 0:
            solver._pair_capacity = 2  # too small: the pair list must grow and the search run again
        states[limit], _ = rollout(model, solver, 600, 1e-3)
    q = states[100].body_q.numpy()
    assert q[:, 1].max() < 1.5  # the pile collapsed onto itself...
    assert np.abs(states[0].body_q.numpy() - q).max() < 1e-3  # ...the same way with both broad phases


def _solver_kernel_names():
    from kernels.runtime.module import get_module
    from sim.solvers.rigid import kernels as rigid_kernels
    return [k.name for k in get_module(rigid_kernels.__name__).kernels]


# One test per kernel: the two differentiated contact kernels take the longest in NVRTC (about 80 s each on the
# loaded 2-core machine with pair_wrench out of line, 150 s or more when their adjoints inlined the whole narrow
# phase), so the suite's workers compile them side by side instead of one after the other.
@pytest.mark.parametrize("name", _solver_kernel_names())
def test_solver_kernels_compile_to_ptx(name):
    """The CUDA path of the solver's kernels (forward, and backward where enabled) compiles, with or without a
    GPU."""
    from kernels.runtime.module import get_module
    from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source

    from sim.solvers.rigid import kernels as rigid_kernels

    kernel = next(k for k in get_module(rigid_kernels.__name__).kernels if k.name == name)
    source = render_cuda_source([kernel])
    ptx = compile_source_to_ptx(source, 90, f"rigid_{name}.cu")
    assert f"k0_{name}_cuda_forward" in ptx
    assert (f"k0_{name}_cuda_backward" in ptx) == kernel.enable_backward
    if "pair_wrench(" in source:  # the narrow phase and law stay one callable function: inlined, NVRTC takes minutes
        assert re.search(r"\.func .*pair_wrench", ptx)


# ---------------------------------------------------------------------------------------------------------------
# Gradients


def bounce_scene(device, shape):
    """A ball or a flat box thrown down and sideways onto the ground: it hits after ~0.04 s, bounces (e = 0.5)
    with friction (mu = 0.4) and flies again by the end of the rollout."""
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.13, 0.0))
    if shape == "sphere":
        b.add_shape_sphere(radius=0.1, body=body, density=250.0, ke=1e4, restitution=0.5, mu=0.4)
    else:
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body, density=125.0, ke=1e4, restitution=0.5, mu=0.4)
    b.add_ground_plane(ke=1e4, restitution=0.5, mu=0.4)
    model = b.finalize(device, requires_grad=True)
    velocity = wp.array(np.array([[0.0, 0.0, 0.0, 0.5, -0.6, 0.2]], np.float32), dtype=wp.spatial_vector,
                        device=device, requires_grad=True)
    return model, velocity


def tape_gradient(fn, x):
    """d(w . fn())/dx with a Tape, for fixed random weights w."""
    tape = Tape()
    with tape:
        out = fn()
    weights = np.random.default_rng(1).standard_normal(out.numpy().shape).astype(np.float32)
    tape.backward(grads={out: weights})
    g = x.grad.numpy().copy()
    tape.zero()
    return g


@pytest.mark.parametrize("shape", ["sphere", "box"])
@pytest.mark.parametrize("wrt", ["velocity", "restitution", "mass", "friction"])
def test_bounce_gradient(device, shape, wrt):
    """Final poses after a bounce with friction, differentiated with respect to the initial velocity, the
    restitution and friction coefficients of the two shapes and the body's mass. The poses only: the final angular
    velocity carries the float32 noise of the stiff rolling contact (~1e-5 rad/s) into the finite differences."""
    model, velocity = bounce_scene(device, shape)
    solver = sim.SolverRigid(model)
    assert solver.contact_smoothing > 0  # smoothed by default when gradients are requested
    x = {"velocity": velocity, "restitution": model.shape_material_restitution, "mass": model.body_mass,
         "friction": model.shape_material_mu}[wrt]

    def fn(*_):
        state = model.state()
        state.body_qd = velocity  # read only by the solver: the gradient reaches it directly
        final, _ = rollout(model, solver, 60, 2e-3, state=state)
        return final.body_q

    state = model.state()
    state.body_qd = velocity
    height = poses(rollout(model, solver, 60, 2e-3, state=state, every=1)[1])[:, 0, 1]
    assert height.min() < 0.1 - 0.002 and height[-1] > height.min() + 0.005  # into the ground and back up
    x.requires_grad = True
    assert np.abs(tape_gradient(fn, x)).max() > 5e-3  # well above the tolerance below
    gradcheck(fn, [x], eps=2e-3, atol=5e-4, rtol=5e-2)


# ---------------------------------------------------------------------------------------------------------------
# One-way coupling: particles on shapes carried by bodies


@pytest.mark.parametrize("particle_solver", ["semi_implicit", "xpbd"])
def test_particle_rests_on_a_box_carried_by_a_body(device, particle_solver):
    """A box body slides and turns to a stop; a particle dropped where the box ends up lands on it and rests on
    its top face, at the body's pose (at the shape's original place it would have fallen to the ground)."""
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.05, 0.0), linear_velocity=(2.0, 0.0, 1.0), angular_velocity=(0.0, 4.0, 0.0))
    b.add_shape_box(hx=0.1, hy=0.05, hz=0.1, body=body, mu=0.5)
    b.add_ground_plane(mu=0.5)
    radius = 0.01
    particle = b.add_particle((0.0, 0.4, 0.0), mass=0.01, radius=radius)
    model = b.finalize(device)
    model.soft_contact = sim.ContactParams(ke=1.0e3, kd=5.0, kf=1.0, mu=0.5, margin=0.0)
    rigid = sim.SolverRigid(model)
    particles = sim.SolverSemiImplicit(model) if particle_solver == "semi_implicit" else \
        sim.SolverXPBD(model, iterations=5)
    dt = 1e-3
    # where the box comes to rest (the particle does not act on it)
    resting, _ = rollout(model, rigid, 600, dt)
    pose = resting.body_q.numpy()[0].astype(np.float64)
    assert np.linalg.norm(pose[[0, 2]]) > 0.3 and abs(pose[4]) > 0.1  # it moved off the origin, and turned
    corner = quat_to_matrix(pose[3:]) @ np.array([0.07, 0.0, 0.07]) + pose[:3]  # over the box, not the origin
    state = resting
    state.particle_q = wp.array(np.array([[corner[0], 0.4, corner[2]]], np.float32), dtype=wp.vec3, device=device)
    for _ in range(1500):
        s_next = model.state()
        rigid.step(model, state, s_next, None, dt)
        particles.step(model, state, s_next, None, dt)
        state = s_next
    x = state.particle_q.numpy()[particle]
    np.testing.assert_allclose(x[[0, 2]], corner[[0, 2]], atol=2e-3)  # landed there and stayed with the box
    top = pose[1] + 0.05
    assert x[1] == pytest.approx(top + radius, abs=2e-3)  # on the box, not on the ground
    assert np.abs(state.particle_qd.numpy()[particle]).max() < 2e-2
    np.testing.assert_allclose(state.body_q.numpy()[0], pose, atol=1e-4)  # one-way: the box did not move
