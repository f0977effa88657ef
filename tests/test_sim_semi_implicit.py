"""SolverSemiImplicit: physics invariants (free fall, rest on the ground, hanging cloth, energy, momentum, no
tunnelling, forces as energy gradients) and gradients of rollouts checked against finite differences, with and
without contact."""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import Tape, gradcheck
from sim.bending import bending_energy
from sim.solvers.semi_implicit import kernels as semi_implicit_kernels
from sim.solvers.semi_implicit.solver import _shapes

HORIZONTAL = sim.quat_from_axis_angle((1.0, 0.0, 0.0), -math.pi / 2)  # cloth grid's local x-y plane -> world x-z


def finalize(b, device, requires_grad=False):
    return b.finalize(device, requires_grad=requires_grad)


def rollout(model, steps, dt, *, state=None, damping=None, every=0, control=None):
    """Run `steps` steps with a fresh State each step; returns the last state and every `every`-th state."""
    solver = sim.SolverSemiImplicit(model, damping=damping)
    s = state or model.state()
    kept = [s]
    for n in range(steps):
        s_next = model.state()
        solver.step(model, s, s_next, control, dt)
        s = s_next
        if every and (n + 1) % every == 0:
            kept.append(s)
    return s, kept


def masses(model):
    return model.particle_mass.numpy().astype(np.float64)


def kinetic_energy(model, state):
    v = state.particle_qd.numpy().astype(np.float64)
    return 0.5 * float(np.sum(masses(model) * np.sum(v * v, axis=1)))


def elastic_energy(model, x):
    """Spring, StVK membrane and bending energy [J] of positions x [particle_count, 3] (float64, numpy); bending
    by the model's bending model."""
    energy = 0.0
    for (i, j), rest, ke in zip(model.spring_indices.numpy(), model.spring_rest_length.numpy(),
                                model.spring_stiffness.numpy()):
        energy += 0.5 * ke * (np.linalg.norm(x[j] - x[i]) - rest) ** 2
    for (i, j, k), dm_inv, area, mat in zip(model.tri_indices.numpy(), model.tri_poses.numpy(),
                                            model.tri_areas.numpy(), model.tri_materials.numpy()):
        f = np.stack([x[j] - x[i], x[k] - x[i]], axis=1) @ dm_inv.astype(np.float64)
        e = 0.5 * (f.T @ f - np.eye(2))
        energy += area * (mat[0] * np.sum(e * e) + 0.5 * mat[1] * np.trace(e) ** 2)
    energy += bending_energy(model, x)
    return energy


def total_energy(model, state):
    x = state.particle_q.numpy().astype(np.float64)
    g = np.array(model.gravity, dtype=np.float64)
    potential = -float(np.sum(masses(model) * (x @ g)))
    return kinetic_energy(model, state) + potential + elastic_energy(model, x)


def cloth(device, *, height=0.5, dim=4, cell=0.1, mass=0.05, gravity=-9.81, ground=False, requires_grad=False,
          **kw):
    """A horizontal dim x dim cloth grid centred above the origin (x-z plane) at `height` [m]."""
    b = sim.ModelBuilder(gravity=gravity)
    args = dict(tri_ke=100.0, tri_ka=100.0, tri_kd=0.5, edge_ke=0.01, edge_kd=0.001, radius=0.01)
    args.update(kw)
    b.add_cloth_grid(pos=(-0.5 * dim * cell, height, 0.5 * dim * cell), rot=HORIZONTAL, vel=(0.0, 0.0, 0.0),
                     dim_x=dim, dim_y=dim, cell_x=cell, cell_y=cell, mass=mass, **args)
    if ground:
        b.add_ground_plane()
    return finalize(b, device, requires_grad)


# ---------------------------------------------------------------------------------------------------------------
# Physics invariants


def test_free_fall_matches_discrete_semi_implicit_euler(device):
    b = sim.ModelBuilder()
    v0 = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, -0.5], [-0.3, -1.0, 0.25]])
    x0 = np.array([[0.0, 1.0, 0.0], [0.5, 2.0, 0.0], [-0.5, 0.0, 1.0]])
    for x, v in zip(x0, v0):
        b.add_particle(x, v, mass=0.1)
    pinned = b.add_particle((0.0, 3.0, 0.0), (1.0, 1.0, 1.0), mass=0.0)
    model = finalize(b, device)
    n, dt = 50, 1.0e-2
    state, _ = rollout(model, n, dt)
    g = np.array(model.gravity, dtype=np.float64)
    # v_k = v0 + k dt g and x_n = x0 + dt (v_1 + ... + v_n)
    x_n = x0 + n * dt * v0 + dt * dt * g * n * (n + 1) / 2
    v_n = v0 + n * dt * g
    np.testing.assert_allclose(state.particle_q.numpy()[:3], x_n, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state.particle_qd.numpy()[:3], v_n, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(state.particle_q.numpy()[pinned], [0.0, 3.0, 0.0])


def test_velocity_damping_scales_velocity(device):
    b = sim.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), mass=1.0)
    model = finalize(b, device)
    state, _ = rollout(model, 10, 0.01, damping=5.0)
    assert state.particle_qd.numpy()[0, 0] == pytest.approx(0.95 ** 10, rel=1e-5)


def test_elastic_forces_are_minus_energy_gradient(device):
    model = cloth(device, dim=2, edge_ke=0.5, add_springs=True, spring_ke=50.0, spring_kd=0.1)
    rng = np.random.default_rng(3)
    x = model.particle_q.numpy().astype(np.float64) + rng.uniform(-0.02, 0.02, (model.particle_count, 3))
    state = model.state()
    state.particle_q = wp.array(x.astype(np.float32), dtype=wp.vec3, device=device)
    state.particle_qd.zero_()  # damping forces vanish at rest
    sim.SolverSemiImplicit(model).step(model, state, model.state(), None, 1.0e-3)
    forces = state.particle_f.numpy()
    x = state.particle_q.numpy().astype(np.float64)
    expected = np.zeros_like(x)
    h = 1.0e-6
    for i in range(model.particle_count):
        for c in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, c] += h
            xm[i, c] -= h
            expected[i, c] = -(elastic_energy(model, xp) - elastic_energy(model, xm)) / (2 * h)
    np.testing.assert_allclose(forces, expected, atol=2e-3 * np.abs(expected).max())


def test_flat_cloth_at_rest_has_no_force(device):
    model = cloth(device, dim=3, edge_ke=1.0, edge_kd=0.1, add_springs=True)
    state = model.state()
    sim.SolverSemiImplicit(model).step(model, state, model.state(), None, 1.0e-3)
    assert np.abs(state.particle_f.numpy()).max() < 1e-4  # the force of a 1e-5 strain: float32 rounding


def test_cloth_dropped_on_ground_stays_above_and_comes_to_rest(device):
    model = cloth(device, height=0.3, ground=True)
    model.soft_contact = sim.ContactParams(ke=1.0e4, kd=20.0, kf=10.0, mu=0.5, margin=0.0)
    _, states = rollout(model, 1500, 1.0e-3, every=20)
    lowest = min(float(s.particle_q.numpy()[:, 1].min()) for s in states)
    assert lowest >= 0.0  # the centres never get below the plane; the radius is 0.01
    final = states[-1]
    assert kinetic_energy(model, final) < 1e-6 * model.total_mass() * 9.81 * 0.3
    assert np.abs(final.particle_q.numpy()[:, 1] - 0.01).max() < 2e-3  # resting on the contact shell


def test_pinned_cloth_hangs_below_its_pinned_edge(device):
    model = cloth(device, fix_left=True)
    x0 = model.particle_q.numpy()
    state, _ = rollout(model, 1500, 1.0e-3, damping=3.0)  # damped swing: it hangs nearly at rest
    x = state.particle_q.numpy()
    pinned = masses(model) == 0
    free_edge = np.isclose(x0[:, 0], x0[:, 0].max())
    np.testing.assert_array_equal(x[pinned], x0[pinned])
    assert x[free_edge, 1].max() < x0[pinned, 1].min() - 0.3  # the cloth is 0.4 m wide
    assert np.abs(x[free_edge, 0] - x0[pinned, 0].mean()).max() < 0.1  # below the pinned edge
    assert kinetic_energy(model, state) < 0.01 * model.total_mass() * 9.81 * 0.4
    assert x[:, 1].mean() < x0[:, 1].mean()
    assert np.all(x[~pinned, 1] < x0[~pinned, 1])  # every free particle moved along gravity


def test_damped_cloth_energy_does_not_grow(device):
    model = cloth(device, fix_left=True, add_springs=True, spring_ke=100.0, spring_kd=0.05)
    _, states = rollout(model, 1000, 1.0e-3, every=10)
    energy = np.array([total_energy(model, s) for s in states])
    scale = 9.81 * model.total_mass() * 0.4  # energy released falling 0.4 m
    assert np.all(energy[1:] <= energy[0] + 1e-3 * scale)
    assert np.all(np.diff(energy) <= 1e-3 * scale)
    assert energy[-1] < energy[0] - 0.03 * scale  # and damping really removes energy


def test_momentum_is_conserved_without_external_forces(device):
    model = cloth(device, gravity=0.0, add_springs=True, spring_ke=200.0, spring_kd=0.1, edge_ke=0.1)
    rng = np.random.default_rng(7)
    state = model.state()
    state.particle_qd = wp.array(rng.uniform(-1, 1, (model.particle_count, 3)).astype(np.float32), dtype=wp.vec3,
                                 device=device)
    m = masses(model)[:, None]
    p0 = np.sum(m * state.particle_qd.numpy(), axis=0)
    _, states = rollout(model, 300, 1.0e-3, state=state, every=50)
    for s in states[1:]:
        p = np.sum(m * s.particle_qd.numpy(), axis=0)
        np.testing.assert_allclose(p, p0, atol=1e-5 * float(np.sum(m)))
    assert not np.allclose(states[-1].particle_qd.numpy(), states[0].particle_qd.numpy())  # the cloth deformed


def test_particles_do_not_tunnel_through_a_sphere(device):
    b = sim.ModelBuilder()
    radius, centre = 0.2, np.array([0.0, 0.0, 0.0])
    for x in np.linspace(-0.1, 0.1, 3):
        for z in np.linspace(-0.1, 0.1, 3):
            b.add_particle((x, 0.6, z), (0.0, -4.0, 0.0), mass=0.05, radius=0.01)
    b.add_shape_sphere(pos=centre, radius=radius)
    model = finalize(b, device)
    model.soft_contact = sim.ContactParams(ke=1.0e4, kd=10.0, kf=10.0, mu=0.5, margin=0.0)
    _, states = rollout(model, 600, 1.0e-3, every=5)
    active = masses(model) > 0
    distance = np.stack([np.linalg.norm(s.particle_q.numpy()[active] - centre, axis=1) for s in states])
    assert distance.min() >= radius - 0.005
    assert np.all(distance.min(axis=0) < radius + 0.01)  # every particle hit the sphere


def test_external_forces_and_force_buffer_reset(device):
    b = sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), mass=2.0)
    model = finalize(b, device)
    control = model.control()
    f = np.zeros((model.particle_count, 3), np.float32)
    f[0] = (1.0, 2.0 * 9.81, 0.0)  # cancels gravity, pushes along x
    control.particle_f = wp.array(f, dtype=wp.vec3, device=device)
    solver = sim.SolverSemiImplicit(model)
    state_in = model.state()
    for _ in range(2):  # the same input state twice: its force buffer must be reset, not accumulated
        out = model.state()
        solver.step(model, state_in, out, control, 0.1)
        np.testing.assert_allclose(out.particle_qd.numpy()[0], [0.05, 0.0, 0.0], atol=1e-6)
        np.testing.assert_allclose(state_in.particle_f.numpy()[0], f[0], atol=1e-6)


def test_particle_contact_hook(device):
    b = sim.ModelBuilder(gravity=0.0)
    b.add_particle((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), mass=0.1, radius=0.05)
    b.add_particle((0.2, 0.0, 0.0), (-1.0, 0.0, 0.0), mass=0.1, radius=0.05)
    model = finalize(b, device)
    model.particle_grid_enabled = True
    model.particle_contact = sim.ContactParams(ke=1.0e4, kd=0.0, kf=0.0, mu=0.0, margin=0.0)
    state, _ = rollout(model, 300, 1.0e-3)
    v = state.particle_qd.numpy()
    assert v[0, 0] < 0 < v[1, 0]  # they bounced off each other
    assert v[0, 0] + v[1, 0] == pytest.approx(0.0, abs=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# Gradients of rollouts


@wp.kernel
def place_shape(transforms: wp.array(dtype=wp.transform), index: int, position: wp.array(dtype=wp.vec3),
                out: wp.array(dtype=wp.transform)):
    i = wp.tid()
    t = transforms[i]
    if i == index:
        t = wp.transform(position[0], wp.transform_get_rotation(t))
    out[i] = t


GRAD_RADIUS, GRAD_CELL, GRAD_MASS, GRAD_KE = 0.02, 0.05, 0.05, 200.0
GRAD_STEPS, GRAD_DT = 20, 4.0e-3


def gradient_scene(device, scene):
    """A 3x3-cell cloth (16 particles): "free" in the air, or resting on the "ground" or on top of a "sphere"
    (radius 1) for the whole rollout, pressed in by its weight. Contact stays closed and friction viscous (small
    tangential speeds), so the rollout is smooth in its inputs and finite differences are meaningful."""
    b = sim.ModelBuilder()
    penetration = GRAD_MASS * 9.81 / GRAD_KE
    height = {"free": 0.5, "ground": GRAD_RADIUS - penetration, "sphere": 0.0}[scene]
    ids = b.add_cloth_grid(pos=(-1.5 * GRAD_CELL, height, 1.5 * GRAD_CELL), rot=HORIZONTAL, vel=(0.0, 0.0, 0.0),
                           dim_x=3, dim_y=3, cell_x=GRAD_CELL, cell_y=GRAD_CELL, mass=GRAD_MASS, tri_ke=20.0,
                           tri_ka=20.0, tri_kd=0.05, edge_ke=0.01, edge_kd=0.001, add_springs=True, spring_ke=20.0,
                           spring_kd=0.01, radius=GRAD_RADIUS)
    b.add_ground_plane(height=-0.5 if scene == "sphere" else 0.0)
    centre = np.array([0.0, -1.0 if scene == "sphere" else -5.0, 0.0])
    if scene == "sphere":  # drape the particles over the sphere, each pressed in by `penetration`
        for i in ids:
            d = b.particle_q[i] * [1.0, 0.0, 1.0] - centre
            b.particle_q[i] = centre + d / np.linalg.norm(d) * (1.0 + GRAD_RADIUS - penetration)
    b.add_shape_sphere(pos=centre, radius=1.0)
    model = b.finalize(device, requires_grad=True)
    model.soft_contact = sim.ContactParams(ke=GRAD_KE, kd=0.0, kf=1.0, mu=0.5, margin=0.0)
    rng = np.random.default_rng(0)
    v = rng.uniform(-0.1, 0.1, (model.particle_count, 3))
    v[:, 1] *= 1.0 if scene == "free" else 0.1
    velocity = wp.array(v.astype(np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    shape = 1 if scene != "ground" else 0
    position = wp.array(model.shape_transform.numpy()[shape:shape + 1, :3], dtype=wp.vec3, device=device,
                        requires_grad=True)
    return model, velocity, shape, position


def gradient_rollout(model, base_transforms, velocity, shape, position):
    """Final positions after GRAD_STEPS steps from the model's positions with initial `velocity`, with shape
    `shape` of `base_transforms` moved to `position` (through a kernel, so the gradient reaches `position`)."""
    model.shape_transform = wp.zeros(model.shape_count, dtype=wp.transform, device=model.device,
                                     requires_grad=True)
    wp.launch(place_shape, dim=model.shape_count, inputs=[base_transforms, shape, position],
              outputs=[model.shape_transform], device=model.device)
    state = model.state()
    state.particle_qd = velocity  # read only by the solver: the gradient reaches it directly
    final, _ = rollout(model, GRAD_STEPS, GRAD_DT, state=state)
    return final.particle_q


def tape_gradient(fn, x):
    """d(w . fn())/dx with a Tape, for fixed random weights w (plain sums cancel: internal forces sum to 0)."""
    tape = Tape()
    with tape:
        out = fn()
    weights = np.random.default_rng(1).standard_normal(out.numpy().shape).astype(np.float32)
    tape.backward(grads={out: weights})
    g = x.grad.numpy().copy()
    tape.zero()
    return g


# input: (eps, atol), sized to the float32 rounding noise of the loss (~1e-7 / eps) and to its curvature
GRAD_INPUTS = {"velocity": (1e-2, 5e-5), "mass": (1e-3, 5e-4), "stiffness": (1e-1, 3e-6), "collider": (1e-3, 5e-4)}


@pytest.mark.parametrize("scene", ["free", "ground", "sphere"])
@pytest.mark.parametrize("wrt", list(GRAD_INPUTS))
def test_rollout_gradient(device, scene, wrt):
    model, velocity, shape, position = gradient_scene(device, scene)
    base = model.shape_transform
    x = {"velocity": velocity, "mass": model.particle_mass, "stiffness": model.tri_materials,
         "collider": position}[wrt]
    eps, atol = GRAD_INPUTS[wrt]

    def fn(*_):
        return gradient_rollout(model, base, velocity, shape, position)

    q = fn().numpy()
    if scene != "free":  # the cloth stays in contact
        ground, sphere = q[:, 1] - GRAD_RADIUS, np.linalg.norm(q - [0.0, -1.0, 0.0], axis=1) - 1.0 - GRAD_RADIUS
        assert np.all((ground if scene == "ground" else sphere) < 0)
    x.requires_grad = True
    g = np.abs(tape_gradient(fn, x)).max()
    if wrt == "collider" and scene == "free":
        assert g == 0.0
    else:
        assert g > 10 * atol  # a gradient well above the tolerance, so the check below means something
    gradcheck(fn, [x], eps=eps, atol=atol, rtol=2e-2)


def test_contact_force_gradient_in_every_regime(device):
    """One launch of the contact kernel: sliding, sticking, approaching (damped), separating and no contact;
    gradients with respect to positions, velocities and the friction coefficient (Model.soft_contact_mu)."""
    b = sim.ModelBuilder()
    cases = [((0.0, 0.005, 0.0), (1.0, -0.2, 0.0)),  # sliding on the ground, approaching
             ((0.3, 0.008, 0.0), (0.01, 0.1, 0.02)),  # sticking (viscous friction), separating
             ((0.6, 0.05, 0.0), (0.0, -1.0, 0.0)),  # above the ground, no contact
             ((1.0, 0.395, 1.0), (0.2, -0.3, 0.5))]  # on the sphere's top
    for x, v in cases:
        b.add_particle(x, v, mass=0.1, radius=0.01)
    b.add_triangle(0, 1, 2, 0.0, 0.0, 0.0)
    b.add_ground_plane()
    b.add_shape_sphere(pos=(1.0, 0.0, 1.0), radius=0.4)
    model = b.finalize(device, requires_grad=True)
    model.soft_contact = sim.ContactParams(ke=1.0e3, kd=5.0, kf=10.0, mu=0.5, margin=0.0)
    x, v, mu = model.particle_q, model.particle_qd, model.soft_contact_mu

    def forces(*_):
        f = wp.zeros(model.particle_count, dtype=wp.vec3, device=device, requires_grad=True)
        wp.launch(semi_implicit_kernels.eval_shape_contact_forces, dim=(model.particle_count, model.shape_count),
                  inputs=[x, v, model.particle_radius, model.particle_flags, _shapes(model), model.soft_contact, mu,
                          f], device=device)
        return f

    f = forces().numpy()
    assert np.all(f[:2, 1] > 0) and np.all(f[2] == 0) and f[3, 1] > 0
    gradcheck(forces, [x, v, mu], eps=1e-4, atol=2e-2, rtol=1e-2)
