"""SolverXPBD: free fall matches the discrete update, cloth rests on the ground, hangs from a pinned edge and does
not tunnel through a sphere, internal constraints conserve momentum, more iterations satisfy constraints better,
and rollout gradients (initial velocity, mass, stiffness, collider pose, friction coefficient; with and without
contact) pass gradcheck.
"""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import Tape, gradcheck

DT = 1.0 / 60.0
HORIZONTAL = sim.quat_from_axis_angle((1.0, 0.0, 0.0), math.pi / 2)  # the grid's local x-y plane -> world x-z


def rollout(model, solver, steps, state=None, dt=DT, control=None):
    """`steps` steps from `state` (default: the model's initial state), a fresh output state each step."""
    states = [state if state is not None else model.state()]
    for _ in range(steps):
        states.append(model.state())
        solver.step(model, states[-2], states[-1], control, dt)
    return states


def cloth(device, *, height=0.5, dim=3, cell=0.1, mass=0.1, tri_ke=1.0e3, spring_ke=1.0e3, edge_ke=0.0,
          springs=True, fix_left=False, radius=0.02, sphere=None, ground=False, requires_grad=False, mu=None):
    """A horizontal dim x dim cloth centred over the origin at `height` [m], with optional colliders."""
    b = sim.ModelBuilder()
    half = 0.5 * dim * cell
    b.add_cloth_grid(pos=(-half, height, -half), rot=HORIZONTAL, vel=(0.0, 0.0, 0.0), dim_x=dim, dim_y=dim,
                     cell_x=cell, cell_y=cell, mass=mass, tri_ke=tri_ke, edge_ke=edge_ke, add_springs=springs,
                     spring_ke=spring_ke, fix_left=fix_left, radius=radius)
    if sphere is not None:
        b.add_shape_sphere(pos=sphere[0], radius=sphere[1])
    if ground:
        b.add_ground_plane()
    model = b.finalize(device=device, requires_grad=requires_grad)
    if mu is not None:
        model.soft_contact.mu = mu
    return model


# ---------------------------------------------------------------------------------------------------------------
# Physics


def test_free_fall_matches_discrete_update(device):
    model = cloth(device, dim=2, tri_ke=0.0, springs=False)  # no active constraint, ground out of reach
    n = model.particle_count
    rng = np.random.default_rng(1)
    v0 = rng.normal(size=(n, 3)).astype(np.float32)
    model.particle_qd.assign(v0)
    force = rng.normal(size=(n, 3)).astype(np.float32)
    control = model.control()
    control.particle_f = wp.array(force, dtype=wp.vec3, device=device)
    steps = 20
    solver = sim.SolverXPBD(model, iterations=3)
    states = rollout(model, solver, steps, control=control)
    a = np.asarray(model.gravity, np.float64) + force / model.particle_mass.numpy()[:, None]
    x0 = model.particle_q.numpy()
    # x_{k+1} = x_k + dt v_k + dt^2 a and v_{k+1} = v_k + dt a, so x_N = x0 + N dt v0 + N (N + 1) / 2 dt^2 a
    expected_x = x0 + steps * DT * v0 + 0.5 * steps * (steps + 1) * DT * DT * a
    np.testing.assert_allclose(states[-1].particle_q.numpy(), expected_x, atol=2e-5)
    np.testing.assert_allclose(states[-1].particle_qd.numpy(), v0 + steps * DT * a, atol=2e-4)


def test_cloth_dropped_on_ground_stays_above_and_rests(device):
    model = cloth(device, height=0.3, dim=4, ground=True, edge_ke=0.01)
    solver = sim.SolverXPBD(model, iterations=10)
    states = rollout(model, solver, 120)
    lowest = min(float(s.particle_q.numpy()[:, 1].min()) for s in states)
    assert lowest >= -1e-3
    final = states[-1]
    np.testing.assert_allclose(final.particle_q.numpy()[:, 1], 0.02, atol=1e-3)  # resting at its radius
    assert np.abs(final.particle_qd.numpy()).max() < 1e-2


def test_pinned_cloth_hangs_with_free_edge_lower(device):
    model = cloth(device, height=1.0, dim=4, fix_left=True)
    solver = sim.SolverXPBD(model, iterations=10)
    final = rollout(model, solver, 60)[-1]
    q0, q = model.particle_q.numpy(), final.particle_q.numpy()
    pinned = model.particle_mass.numpy() == 0.0
    assert pinned.sum() == 5
    np.testing.assert_array_equal(q[pinned], q0[pinned])  # fixed particles never move
    np.testing.assert_array_equal(final.particle_qd.numpy()[pinned], 0.0)
    free_edge = np.isclose(q0[:, 0], q0[:, 0].max())
    assert q[free_edge, 1].max() < q[pinned, 1].min() - 0.1
    assert np.all(np.isfinite(q))


def test_no_tunnelling_through_sphere(device):
    center, radius = np.array([0.0, 0.0, 0.0]), 0.25
    model = cloth(device, height=0.5, dim=4, sphere=(center, radius))
    model.particle_qd.assign(np.tile(np.float32([0.0, -6.0, 0.0]), (model.particle_count, 1)))  # 0.1 m a step
    solver = sim.SolverXPBD(model, iterations=10)
    states = rollout(model, solver, 60)
    for s in states[1:]:
        d = np.linalg.norm(s.particle_q.numpy() - center, axis=1)
        # never through the surface; at most half a particle radius into the 2 cm contact shell
        assert d.min() >= radius + 0.5 * 0.02
    q = states[-1].particle_q.numpy()
    assert q[:, 1].max() > radius  # draped over the top, not fallen through
    assert q[:, 1].min() > -radius


def tetrahedron(device, masses_equal=True, bending="dihedral"):
    """A tetrahedron of springs, membrane triangles and bending edges (a curved rest shape: the quadratic
    bending model, which takes rest shapes as flat, warns at finalize)."""
    b = sim.ModelBuilder(gravity=0.0, bending=bending)
    verts = [(1.0, 1.0, 1.0), (1.0, -1.0, -1.0), (-1.0, 1.0, -1.0), (-1.0, -1.0, 1.0)]
    tris = [(0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2)]
    b.add_cloth_mesh(pos=(0.0, 0.0, 0.0), rot=sim.quat_identity(), scale=0.2, vel=(0.0, 0.0, 0.0), vertices=verts,
                     indices=tris, density=1.0, tri_ke=100.0, edge_ke=0.1, add_springs=True, spring_ke=100.0)
    if not masses_equal:
        b.particle_mass = [0.5, 1.0, 1.5, 2.0]
    if bending == "quadratic":
        with pytest.warns(UserWarning, match="rest angles up to 1.91 rad.*flatten"):
            return b.finalize(device=device)
    return b.finalize(device=device)


@pytest.mark.parametrize("bending", ["dihedral", "quadratic"])
@pytest.mark.parametrize("masses_equal", [True, False])
def test_internal_constraints_conserve_momentum(device, masses_equal, bending):
    model = tetrahedron(device, masses_equal, bending)
    rng = np.random.default_rng(3)
    model.particle_q.assign(model.particle_q.numpy() + rng.normal(scale=0.05, size=(4, 3)).astype(np.float32))
    model.particle_qd.assign(rng.normal(size=(4, 3)).astype(np.float32))
    mass = model.particle_mass.numpy().astype(np.float64)
    solver = sim.SolverXPBD(model, iterations=5)
    states = rollout(model, solver, 50)
    p0 = mass @ model.particle_qd.numpy().astype(np.float64)
    moved = np.linalg.norm(states[-1].particle_q.numpy() - states[0].particle_q.numpy() - 50 * DT * p0 / mass.sum())
    assert moved > 1e-2  # the constraints did act (relative to the centre of mass)
    for s in states[1:]:
        np.testing.assert_allclose(mass @ s.particle_qd.numpy().astype(np.float64), p0, atol=1e-4)


def max_spring_strain(model, q):
    idx = model.spring_indices.numpy()
    length = np.linalg.norm(q[idx[:, 0]] - q[idx[:, 1]], axis=1)
    rest = model.spring_rest_length.numpy()
    return float(np.max(np.abs(length - rest) / rest))


def test_more_iterations_satisfy_constraints_better(device):
    model = cloth(device, height=1.0, dim=4, fix_left=True, spring_ke=1.0e6, tri_ke=1.0e4)
    strains = []
    for iterations in (2, 8, 32):
        final = rollout(model, sim.SolverXPBD(model, iterations=iterations), 30)[-1]
        strains.append(max_spring_strain(model, final.particle_q.numpy()))
    assert strains[0] > strains[1] > strains[2]
    assert strains[2] < 0.5 * strains[0]


def test_rejects_bad_arguments(device):
    model = cloth(device, dim=1)
    with pytest.raises(ValueError):
        sim.SolverXPBD(model, iterations=-1)
    with pytest.raises(ValueError):
        sim.SolverXPBD(model, relaxation=0.0)
    s = model.state()
    with pytest.raises(ValueError):
        sim.SolverXPBD(model).step(model, s, s, None, DT)


def test_solver_kernels_compile_to_ptx():
    """The CUDA path of the solver's kernels (forward and backward) compiles, with or without a GPU."""
    from kernels.runtime.module import get_module
    from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source

    from sim.solvers.xpbd import kernels as xpbd_kernels

    solver_kernels = get_module(xpbd_kernels.__name__).kernels
    ptx = compile_source_to_ptx(render_cuda_source(solver_kernels), 90, "xpbd.cu")
    for i, k in enumerate(solver_kernels):
        assert f"k{i}_{k.name}_cuda_forward" in ptx and f"k{i}_{k.name}_cuda_backward" in ptx


# ---------------------------------------------------------------------------------------------------------------
# Gradients


@pytest.fixture
def strict_tape(monkeypatch):
    """Any array overwritten after a taped read fails the test instead of warning."""
    monkeypatch.setattr(wp.config, "overwrite_check", "error")


@wp.kernel
def place_shapes(position: wp.array(dtype=wp.vec3), pose: wp.array(dtype=wp.transform),
                 shape_transform: wp.array(dtype=wp.transform)):
    """shape_transform = (position, rotation of pose): the colliders' positions as a differentiable input."""
    i = wp.tid()
    shape_transform[i] = wp.transform(position[i], wp.transform_get_rotation(pose[i]))


def gradient_scene(device, scene, seed=0):
    """A soft 3 x 3 particle cloth for gradchecks, with a big sphere (radius 1 m) collider.

    free: the sphere is far away. sliding: the cloth starts on the sphere's top moving into it and sideways, and
    slides without friction. static: the same with friction and little sideways motion, so every contact stays
    in static friction. Contacts start and end nowhere near the evaluation point: central differences across a
    contact's start or a static/sliding switch measure a kink, not the derivative.
    """
    radius = 1.0
    center = np.array([0.0, -radius, 0.0]) if scene != "free" else np.array([5.0, -radius, 0.0])
    model = cloth(device, height=0.0, dim=2, cell=0.2, mass=0.5, tri_ke=20.0, spring_ke=20.0, edge_ke=0.025,
                  radius=0.05, sphere=(center, radius), requires_grad=True, mu=0.5 if scene == "static" else 0.0)
    q = model.particle_q.numpy().astype(np.float64)
    normal = (q - center) / np.linalg.norm(q - center, axis=1, keepdims=True)
    if scene != "free":  # on the surface
        q = center + normal * (radius + 0.05)
        model.particle_q.assign(q.astype(np.float32))
    rng = np.random.default_rng(seed)
    v = rng.normal(scale=0.02 if scene == "static" else 0.3, size=q.shape)
    inward = 0.2 + np.abs(rng.normal(scale=0.1, size=(len(q), 1)))
    v -= normal * (np.sum(v * normal, axis=1, keepdims=True) + inward)
    model.particle_qd.assign(v.astype(np.float32))
    return model, center


@pytest.mark.parametrize("scene", ["free", "sliding", "static"])
def test_rollout_gradients_pass_gradcheck(device, strict_tape, scene):
    model, center = gradient_scene(device, scene)
    solver = sim.SolverXPBD(model, iterations=4)
    pose = wp.clone(model.shape_transform)
    sphere_position = wp.array(pose.numpy()[:, :3].copy(), dtype=wp.vec3, device=device, requires_grad=True)

    def run():
        model.shape_transform = wp.zeros(1, dtype=wp.transform, device=device, requires_grad=True)
        wp.launch(place_shapes, dim=1, inputs=[sphere_position, pose], outputs=[model.shape_transform],
                  device=device)
        state = model.state()
        state.particle_qd = model.particle_qd
        return rollout(model, solver, 12, state=state)[-1].particle_q

    # one input at a time, the perturbation and absolute tolerance scaled to its magnitude (stiffness ~20 N/m):
    # float32 central differences need a perturbation well above round-off
    inputs = {"velocity": (model.particle_qd, 1.0), "mass": (model.particle_mass, 1.0),
              "spring stiffness": (model.spring_stiffness, 20.0), "triangle mu": (model.tri_materials, 20.0),
              "sphere position": (sphere_position, 1.0)}
    for name, (x, scale) in inputs.items():
        report = gradcheck(lambda _: run(), [x], eps=1e-3 * scale, atol=1e-3 / scale, raise_on_fail=False)
        assert report.passed, f"{scene}: gradient with respect to {name}\n{report}"

    # not vacuous: the gradients are nonzero except where physics says otherwise (an untouched sphere; static
    # friction and inelastic contact absorb the initial velocity), and the contacts lasted to the end
    vanishing = {"free": "sphere position", "sliding": None, "static": "velocity"}[scene]
    tape = Tape()
    with tape:
        final = run()
    # random weights: the plain sum of positions is fixed by momentum, which internal constraints conserve
    weights = np.random.default_rng(1).standard_normal((model.particle_count, 3)).astype(np.float32)
    tape.backward(grads={final: weights})
    for name, (x, scale) in inputs.items():
        assert (np.abs(x.grad.numpy()).max() * scale > 1e-4) == (name != vanishing), name
    gap = np.linalg.norm(final.numpy() - center, axis=1) - 1.0 - 0.05
    assert (np.abs(gap).max() < 1e-3) if scene != "free" else (gap.min() > 1.0)


def test_particles_do_not_overlap_with_particle_contact_enabled(device):
    """Two particles thrown at each other separate to at least the sum of their radii."""
    b = sim.ModelBuilder(gravity=0.0)
    b.add_particle((-0.2, 0.0, 0.0), vel=(1.0, 0.0, 0.0), mass=1.0, radius=0.05)
    b.add_particle((0.2, 0.0, 0.0), vel=(-1.0, 0.0, 0.0), mass=1.0, radius=0.05)
    model = b.finalize(device=device)
    model.particle_grid_enabled = True
    model.particle_contact.mu = 0.0
    solver = sim.SolverXPBD(model, iterations=4)
    s0, s1 = model.state(), model.state()
    closest = np.inf
    for _ in range(60):
        solver.step(model, s0, s1, None, 1.0 / 120.0)
        s0, s1 = s1, s0
        x = s0.particle_q.numpy()
        closest = min(closest, float(np.linalg.norm(x[0] - x[1])))
    assert closest >= 0.1 - 2e-3, closest
    np.testing.assert_allclose(s0.particle_qd.numpy().sum(axis=0), [0.0, 0.0, 0.0], atol=1e-5)  # momentum


def test_step_without_a_tape_matches_the_taped_step(device):
    """Without a Tape corrections go through per-particle slots and a gather; on a Tape, atomically into delta.
    Both must give the same motion (up to the order of float additions)."""
    def final_positions(requires_grad):
        model = cloth(device, dim=4, edge_ke=5.0, springs=True, fix_left=True, sphere=((0.0, 0.3, 0.0), 0.15),
                      ground=True, requires_grad=requires_grad)
        solver = sim.SolverXPBD(model, iterations=5)
        return rollout(model, solver, 30, dt=DT / 4)[-1].particle_q.numpy()

    np.testing.assert_allclose(final_positions(False), final_positions(True), atol=1e-5)


def test_gather_corrections_gradient(device):
    from sim.solvers.xpbd import kernels as xk
    start = wp.array(np.array([0, 2, 2, 5], np.int32), dtype=wp.int32, device=device)
    corrections = wp.array(np.random.default_rng(3).standard_normal((5, 3)), dtype=wp.vec3, device=device,
                           requires_grad=True)

    def fn(corrections):
        delta = wp.zeros(3, dtype=wp.vec3, device=device, requires_grad=True)
        wp.launch(xk.gather_corrections, dim=3, inputs=[start, corrections], outputs=[delta], device=device)
        return delta

    gradcheck(fn, [corrections])


def test_particle_contact_uses_the_masses_and_their_gradient(device):
    """Two particles collide head-on (XPBD particle contact) after their masses were set to 1 and 3 kg on the
    finalized model (as `sim optimize` does): momentum with those masses is conserved, and d(final positions)/
    d(mass) matches central differences. Both failed when contacts read the model's stored inverse masses (from
    finalize) instead of this step's."""
    b = sim.ModelBuilder(gravity=0.0)
    b.add_particle((-0.2, 0.0, 0.0), vel=(1.0, 0.0, 0.0), mass=1.0, radius=0.05)
    b.add_particle((0.2, 0.0, 0.0), vel=(-1.0, 0.0, 0.0), mass=1.0, radius=0.05)
    model = b.finalize(device=device, requires_grad=True)
    model.particle_mass.assign(np.array([1.0, 3.0], dtype=np.float32))
    model.particle_grid_enabled = True
    model.particle_contact.mu = 0.0
    solver = sim.SolverXPBD(model, iterations=4)

    def final_state():
        return rollout(model, solver, 30, dt=1.0 / 120.0)[-1]

    v = final_state().particle_qd.numpy()
    np.testing.assert_allclose(1.0 * v[0] + 3.0 * v[1], [-2.0, 0.0, 0.0], atol=1e-3)
    gradcheck(lambda _: final_state().particle_q, [model.particle_mass], eps=1e-2, atol=2e-3)
    tape = Tape()
    with tape:
        final = final_state().particle_q
    tape.backward(grads={final: wp.array(np.tile([1.0, 0.0, 0.0], (2, 1)).astype(np.float32), dtype=wp.vec3,
                                           device=device)})
    assert np.abs(model.particle_mass.grad.numpy()).max() > 1e-3


def test_friction_coefficient_gradient_while_sliding_on_the_ground(device):
    """A 3 x 3 cloth slides over the ground (XPBD positional friction, sliding the whole time): d(final
    positions)/d(Model.soft_contact_mu) matches central differences and is not zero. It was zero when the kernels
    read the coefficient as a float setting. The point is smooth: differences over 1e-2 and 5e-2 agree."""
    model = cloth(device, height=0.02, dim=2, cell=0.2, mass=0.1, ground=True, mu=0.5, requires_grad=True)
    model.particle_qd.assign(np.tile([2.0, 0.0, 0.5], (model.particle_count, 1)).astype(np.float32))
    solver = sim.SolverXPBD(model, iterations=4)
    mu = model.soft_contact_mu

    def final_x(value=None):
        if value is not None:
            mu.assign(np.array([value], dtype=np.float32))
        return rollout(model, solver, 12)[-1].particle_q

    def mean_x(value):
        return float(final_x(value).numpy()[:, 0].mean())

    slopes = [(mean_x(0.5 + h) - mean_x(0.5 - h)) / (2 * h) for h in (1e-2, 5e-2)]
    assert slopes[0] == pytest.approx(slopes[1], rel=1e-2) and slopes[0] < -0.1, slopes  # friction slows it
    mu.assign(np.array([0.5], dtype=np.float32))
    gradcheck(lambda _: final_x(), [mu], eps=1e-2, atol=1e-4)
    final_v = rollout(model, solver, 12)[-1].particle_qd.numpy()
    assert np.all(final_v[:, 0] > 0.5), final_v  # still sliding at the end: the slope is the sliding regime's
