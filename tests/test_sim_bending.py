"""Bending models (sim/bending.py, docs/bending.md).

The quadratic model's bend vector vanishes on flat and affinely deformed hinges and measures 2 sin(theta/2) of a
fold, through +-pi; it agrees with the dihedral model to second order at a flat hinge (same force for a small
bend); its force kernel (semi-implicit) and constraint kernel (XPBD) pass gradcheck and compile to PTX; and a
vertical cloth landing on its edge, whose dihedral rollout jumps between neighbouring initial velocities (hinges
folded flat to +-pi get their kick's direction from the sign of a rounding zero), gives a loss without jumps and
with tape gradients matching finite differences.
"""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import Tape, gradcheck
from sim.bending import bending_energy, bending_scale, dihedral_angle, hinge_weights
from sim.solvers.semi_implicit import kernels as semi_implicit_kernels
from sim.solvers.semi_implicit.solver import _bending_kernel, _edges
from sim.solvers.xpbd import kernels as xpbd_kernels

# An uneven flat hinge: edge v0-v1 along x, o0 below it, o1 above it with an obtuse angle at v1.
HINGE = np.array([(0.3, -0.5, 0.0), (1.4, 0.35, 0.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)])  # o0, o1, v0, v1


def fold(points, theta):
    """The hinge (o0, o1, v0, v1) with o1 rotated by `theta` [rad] about the edge (the x axis): a fold that
    stretches nothing, by dihedral angle theta."""
    c, s = math.cos(theta), math.sin(theta)
    out = np.array(points, dtype=np.float64)
    y, z = out[1, 1], out[1, 2]
    out[1, 1], out[1, 2] = c * y - s * z, s * y + c * z
    return out


def test_bend_vector_vanishes_on_flat_hinges_and_measures_folds():
    w = hinge_weights(*HINGE)
    assert abs(w.sum()) < 1e-12
    np.testing.assert_allclose(w @ HINGE, 0.0, atol=1e-12)
    affine = np.random.default_rng(0).normal(size=(3, 3))  # stretch, shear, rotation: no bend
    np.testing.assert_allclose(w @ (HINGE @ affine.T + 0.7), 0.0, atol=1e-12)
    for theta in (0.2, 2.0, 3.0, math.pi, 3.3, -2.5):
        bent = fold(HINGE, theta)
        assert np.linalg.norm(w @ bent) == pytest.approx(2.0 * abs(math.sin(theta / 2.0)), rel=1e-12)
        assert dihedral_angle(*bent) == pytest.approx(math.remainder(theta, 2.0 * math.pi), abs=1e-9)
    # through the fold at pi the dihedral angle wraps from +pi to -pi; the bend vector moves by O(step)
    before, after = fold(HINGE, math.pi - 1e-6), fold(HINGE, math.pi + 1e-6)
    assert dihedral_angle(*before) - dihedral_angle(*after) == pytest.approx(2.0 * math.pi, abs=1e-5)
    assert np.linalg.norm(w @ before - w @ after) < 1e-5


def hinge_model(device, bending, points, *, ke=2.0, kd=0.0, requires_grad=False):
    """One bending edge over the flat HINGE, its particles then moved to `points`."""
    b = sim.ModelBuilder(bending=bending)
    for p in HINGE:
        b.add_particle(p, mass=0.1)
    b.add_triangle(0, 2, 3, 0.0, 0.0, 0.0)
    b.add_triangle(1, 3, 2, 0.0, 0.0, 0.0)
    b.add_edge(0, 1, 2, 3, ke, kd)
    model = b.finalize(device, requires_grad=requires_grad)
    model.particle_q.assign(np.asarray(points, np.float32))
    return model


def bending_forces(model, x=None, v=None):
    """Forces [N] of the model's bending edges alone (semi-implicit force kernel of model.bending_model)."""
    x = model.particle_q if x is None else x
    v = model.particle_qd if v is None else v
    f = wp.zeros(model.particle_count, dtype=wp.vec3, device=model.device, requires_grad=model.requires_grad)
    wp.launch(_bending_kernel(model), dim=model.edge_count, inputs=[x, v, _edges(model), f], device=model.device)
    return f


def test_models_give_the_same_force_for_a_small_bend_of_a_flat_hinge(device):
    """Energies ke/2 scale theta^2 (dihedral) and ke scale (1 - cos theta) (quadratic, unstretched fold) agree to
    second order: forces differ by O(theta^2), relatively by O(theta); edge_ke means the same in both."""
    ke = 2.0
    differences = []
    for theta in (0.01, 0.02):
        bent = fold(HINGE, theta)
        forces = {m: bending_forces(hinge_model(device, m, bent, ke=ke)).numpy().astype(np.float64)
                  for m in ("quadratic", "dihedral")}
        quadratic, dihedral = forces["quadratic"], forces["dihedral"]
        scale, height0 = bending_scale(*HINGE), 0.5
        assert np.linalg.norm(dihedral[0]) == pytest.approx(ke * scale * theta / height0, rel=1e-4)
        differences.append(np.abs(quadratic - dihedral).max() / np.abs(dihedral).max())
        assert differences[-1] < 0.5 * theta, (theta, differences[-1])  # measured: 0.37 theta
        np.testing.assert_allclose(quadratic.sum(axis=0), 0.0, atol=1e-6 * np.abs(quadratic).max())
    assert differences[1] / differences[0] == pytest.approx(2.0, rel=0.1)  # O(theta), not a constant mismatch


@pytest.mark.parametrize("theta", [0.5, 2.0, 3.0])
def test_torque_about_the_hinge_of_each_model(device, theta):
    """Folding o1 about the edge, the generalised force dE/dtheta is ke scale theta (dihedral: right for any
    angle below pi) and ke scale sin(theta) (quadratic: E = ke scale (1 - cos theta), weaker at large folds and
    zero at the flat fold, where the dihedral torque jumps from +pi to -pi)."""
    ke = 2.0
    y = HINGE[1, 1]
    direction = np.array([0.0, -y * math.sin(theta), y * math.cos(theta)])  # d(o1)/d(theta) along the fold
    expected = {"dihedral": theta, "quadratic": math.sin(theta)}
    for bending, torque in expected.items():
        f = bending_forces(hinge_model(device, bending, fold(HINGE, theta), ke=ke)).numpy().astype(np.float64)
        assert -f[1] @ direction == pytest.approx(ke * bending_scale(*HINGE) * torque, rel=1e-4), bending


def bent_cloth(device, bending, *, ke=10.0, kd=0.5, seed=0):
    """A 2 x 2-cell cloth (cell 0.5 m, 0.1 kg per vertex) with random out-of-plane offsets and velocities, for
    gradchecks of the bending terms alone; returns the model, positions and velocities (with gradients)."""
    b = sim.ModelBuilder(bending=bending)
    b.add_cloth_grid(pos=(0.0, 0.0, 0.0), rot=sim.quat_identity(), vel=(0.0, 0.0, 0.0), dim_x=2, dim_y=2,
                     cell_x=0.5, cell_y=0.5, mass=0.1, edge_ke=ke, edge_kd=kd)
    model = b.finalize(device, requires_grad=True)
    rng = np.random.default_rng(seed)
    n = model.particle_count
    q = model.particle_q.numpy() + np.column_stack([rng.normal(scale=0.02, size=(n, 2)),
                                                    rng.normal(scale=0.1, size=n)])
    x = wp.array(q.astype(np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    v = wp.array(rng.normal(scale=0.5, size=(n, 3)).astype(np.float32), dtype=wp.vec3, device=device,
                 requires_grad=True)
    return model, x, v


@pytest.mark.parametrize("bending", ["quadratic", "dihedral"])
def test_bending_forces_are_minus_the_energy_gradient(device, bending):
    """Each model's force kernel is the exact gradient of its energy (sim.bending.bending_energy, float64)."""
    model, x, _ = bent_cloth(device, bending, kd=0.0)
    forces = bending_forces(model, x).numpy().astype(np.float64)
    q = x.numpy().astype(np.float64)
    expected = np.zeros_like(q)
    h = 1.0e-6
    for i in range(model.particle_count):
        for c in range(3):
            plus, minus = q.copy(), q.copy()
            plus[i, c] += h
            minus[i, c] -= h
            expected[i, c] = -(bending_energy(model, plus) - bending_energy(model, minus)) / (2.0 * h)
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(forces, expected, atol=1e-4 * np.abs(expected).max())


def test_quadratic_bending_force_passes_gradcheck(device):
    model, x, v = bent_cloth(device, "quadratic")
    assert model.edge_count and np.abs(bending_forces(model, x, v).numpy()).max() > 0.1
    for inputs in ([x, v], [model.edge_bending_properties]):
        gradcheck(lambda *_: bending_forces(model, x, v), inputs, eps=1e-3, atol=1e-4)


def xpbd_bending_pass(model, solver, x, lambda_in, dt):
    """One Jacobi pass of the bending constraints of model.bending_model alone (atomic path, as on a Tape): the
    position corrections [m] and the updated multipliers (vec3 for the quadratic model)."""
    device = model.device
    n = model.particle_count
    mass = model.particle_mass.numpy()
    inv_mass = wp.array((1.0 / mass).astype(np.float32), dtype=float, device=device)
    delta = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=True)
    lambda_out = wp.zeros(model.edge_count, dtype=lambda_in.dtype, device=device, requires_grad=True)
    if model.bending_model == "quadratic":
        kernel, geometry = xpbd_kernels.solve_bending_quadratic, [model.edge_bending_weights]
    else:
        kernel, geometry = xpbd_kernels.solve_bending, [model.edge_rest_angle]
    wp.launch(kernel, dim=model.edge_count, device=device,
              inputs=[x, inv_mass, model.edge_indices] + geometry + [
                  model.edge_rest_scale, model.edge_bending_properties, lambda_in, solver.settings(model, dt),
                  solver.degree, solver.slots.edge_base, solver.slots.slot_of, 0],
              outputs=[delta, solver.slots.corrections(None), lambda_out])
    return delta, lambda_out


def test_quadratic_bending_constraint_passes_gradcheck(device):
    model, x, _ = bent_cloth(device, "quadratic", ke=100.0)
    solver = sim.SolverXPBD(model, iterations=1)
    rng = np.random.default_rng(1)
    lambda_in = wp.array(rng.normal(scale=1e-3, size=(model.edge_count, 3)).astype(np.float32), dtype=wp.vec3,
                         device=device, requires_grad=True)
    dt = 1.0 / 30.0
    delta, _ = xpbd_bending_pass(model, solver, x, lambda_in, dt)
    assert np.abs(delta.numpy()).max() > 1e-3  # corrections well above the tolerance below

    def run(*_):
        return xpbd_bending_pass(model, solver, x, lambda_in, dt)

    gradcheck(run, [x, lambda_in], eps=1e-3, atol=1e-4)
    gradcheck(run, [model.edge_bending_properties], eps=1.0, atol=1e-4)


@pytest.mark.parametrize("bending", ["quadratic", "dihedral"])
def test_xpbd_bending_gradient_at_an_exactly_flat_hinge(device, bending):
    """The first iteration of a step from a flat cloth: C = 0 and no multiplier, so the update is 0 but its
    derivative is not. (The dihedral kernel used to skip its corrections, and with them their adjoint, when
    the update was 0: a zero gradient where central differences give 0.06.)"""
    model, _, _ = bent_cloth(device, bending, ke=100.0)
    x = wp.clone(model.particle_q, requires_grad=True)
    solver = sim.SolverXPBD(model, iterations=1)
    lambda_in = wp.zeros(model.edge_count, dtype=wp.vec3 if bending == "quadratic" else float, device=device,
                         requires_grad=True)

    def run(*_):
        return xpbd_bending_pass(model, solver, x, lambda_in, 1.0 / 30.0)[0]

    tape = Tape()
    with tape:
        delta = run()
    weights = np.random.default_rng(2).standard_normal((model.particle_count, 3)).astype(np.float32)
    tape.backward(grads={delta: wp.array(weights, dtype=wp.vec3, device=device)})
    assert np.abs(x.grad.numpy()).max() > 1e-2  # well above the tolerance below
    tape.zero()
    gradcheck(run, [x], eps=1e-3, atol=1e-4)


def test_new_bending_kernels_compile_to_ptx():
    pytest.importorskip("cuda.bindings.nvrtc")
    for kernel in (semi_implicit_kernels.eval_quadratic_bending_forces, xpbd_kernels.solve_bending_quadratic):
        assert ".entry" in wp.compile_ptx(kernel)


@pytest.mark.parametrize("solver_name", ["semi_implicit", "xpbd"])
def test_models_agree_on_a_gently_sagging_strip(device, solver_name):
    """A 3 x 1-cell strip clamped at its left end sags under gravity against bending (a few centimetres, bends
    of about 0.3 rad): with either solver, both models settle to the same shape within 1 % of the sag."""
    def settle(bending):
        b = sim.ModelBuilder(bending=bending)
        b.add_cloth_grid(pos=(0.0, 1.0, 0.0), rot=sim.quat_from_axis_angle((1.0, 0.0, 0.0), -math.pi / 2),
                         vel=(0.0, 0.0, 0.0), dim_x=3, dim_y=1, cell_x=0.1, cell_y=0.1, mass=0.01,
                         tri_ke=2.0e3, tri_ka=2.0e3, tri_kd=0.5, edge_ke=500.0)
        for i in (0, 4):  # the first two columns pinned: a clamp, which holds the strip's slope
            b.particle_mass[i] = b.particle_mass[i + 1] = 0.0
        model = b.finalize(device)
        model.particle_damping = 10.0
        if solver_name == "xpbd":
            solver, dt, steps = sim.SolverXPBD(model, iterations=20), 1.0 / 240.0, 240
        else:
            solver, dt, steps = sim.SolverSemiImplicit(model), 5.0e-4, 2000
        s0, s1 = model.state(), model.state()
        for _ in range(steps):
            solver.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0
        assert np.abs(s0.particle_qd.numpy()).max() < 1e-2  # settled
        return s0.particle_q.numpy()

    quadratic, dihedral = settle("quadratic"), settle("dihedral")
    sag = 1.0 - dihedral[:, 1].min()
    assert 0.01 < sag < 0.1, sag
    np.testing.assert_allclose(quadratic, dihedral, atol=0.01 * sag)


# ---------------------------------------------------------------------------------------------------------------
# A vertical 4 x 4 cloth landing on its edge (issue 16): it stays in its plane, so crushed triangles fold flat,
# to a dihedral angle of exactly +-pi, where atan2 picks the sign from a rounding zero.


@wp.kernel
def set_velocity_x(vx: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = wp.vec3(vx[0], 0.0, 0.0)


@wp.kernel
def first_coordinate(c: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    out[0] = c[0][0]


class Landing:
    """The loss of the landing cloth: its centre of mass x [m] after 60 XPBD steps (4 iterations, dt 1/120 s),
    as a function of the initial velocity vx [m/s] of every vertex, through kernels (so a Tape records it when
    `requires_grad`; without, the solver takes its faster path for plain rollouts)."""

    def __init__(self, device, bending, requires_grad=False):
        b = sim.ModelBuilder(bending=bending)
        b.add_cloth_grid(pos=(0.0, 0.15, 0.0), rot=sim.quat_identity(), vel=(0.0, 0.0, 0.0), dim_x=4, dim_y=4,
                         cell_x=0.1, cell_y=0.1, mass=0.05, tri_ke=500.0, tri_ka=500.0, tri_kd=0.1, edge_ke=1.0)
        b.add_ground_plane()
        self.model = b.finalize(device, requires_grad=requires_grad)
        self.solver = sim.SolverXPBD(self.model, iterations=4)
        self.vx = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    def __call__(self, vx):
        """Centre of mass x [m], shape [1], of the rollout from the velocity in the array `vx` [m/s], shape [1]."""
        m = self.model
        state = m.state()
        wp.launch(set_velocity_x, dim=m.particle_count, inputs=[vx], outputs=[state.particle_qd], device=m.device)
        for _ in range(60):
            out = m.state()
            self.solver.step(m, state, out, None, 1.0 / 120.0)
            state = out
        loss = wp.zeros(1, dtype=float, device=m.device, requires_grad=True)
        wp.launch(first_coordinate, dim=1, inputs=[sim.center_of_mass(m, state)], outputs=[loss], device=m.device)
        return loss

    def at(self, vx: float) -> float:
        self.vx.assign(np.array([vx], np.float32))
        return float(self(self.vx).numpy()[0])


def jumps(loss, v, values, depth=5):
    """Yield (v_a, v_b, jump, departure) for each interval of a sweep (`values` of `loss` at points `v`) across
    which the loss jumps.

    An increment is suspect when it departs from the local slope (the median of its 6 neighbours' increments)
    by more than half the sweep's median increment. A jump keeps its size as its interval shrinks, a continuous
    loss does not, however steep: `depth` times the half with the larger increment is kept, and the interval
    is a jump when that last increment still exceeds half the departure. (Continuous with slope s: the last
    increment is at most |s| h / 2^depth.)
    """
    steps = np.diff(values)
    typical = np.median(np.abs(steps))
    for i, step in enumerate(steps):
        near = np.delete(steps[max(i - 3, 0):i + 4], min(i, 3))
        departure = abs(step - np.median(near))
        if departure <= 0.5 * typical:
            continue
        a, b, fa, fb = v[i], v[i + 1], values[i], values[i + 1]
        for _ in range(depth):
            m = 0.5 * (a + b)
            fm = loss(m)
            if abs(fm - fa) >= abs(fb - fm):
                b, fb = m, fm
            else:
                a, fa = m, fm
        if abs(fb - fa) > 0.5 * departure:
            yield v[i], v[i + 1], abs(fb - fa), departure


SWEEP = np.linspace(0.9, 1.1, 41)


def test_landing_loss_has_no_jumps_with_the_quadratic_model(device):
    landing = Landing(device, "quadratic")
    values = np.array([landing.at(vx) for vx in SWEEP])
    assert np.all(np.diff(values[:20]) > 0)  # the cloth moves on: faster throws land further
    found = list(jumps(landing.at, SWEEP, values))
    assert not found, found


def test_the_jump_check_catches_the_dihedral_model():
    """The same sweep with the dihedral model (float rounding picks the fold's side) fails the check: the check
    is not vacuous. CPU only: the rounding that decides is the CPU's."""
    landing = Landing("cpu", "dihedral")
    values = np.array([landing.at(vx) for vx in SWEEP])
    found = next(jumps(landing.at, SWEEP, values), None)
    assert found is not None
    _, _, jump, _ = found
    assert jump > 1e-3  # millimetres of the centre of mass, between inputs 0.3 mm/s apart


def test_landing_gradient_matches_finite_differences(device):
    landing = Landing(device, "quadratic", requires_grad=True)
    landing.vx.assign(np.array([1.0], np.float32))
    gradcheck(landing, [landing.vx], eps=1e-2)


def test_scene_key_sim_bending_picks_the_model():
    from sim.scene import Scene
    text = "sim: {frames: 1}\ncloth:\n  - grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}\n" \
           "    material: {edge_ke: 1.0}\n"
    assert Scene.from_string(text).build("cpu").model.bending_model == "quadratic"  # the default
    for bending in ("quadratic", "dihedral"):
        scene = Scene.from_string(text, overrides=[f"sim.bending={bending}"])
        model = scene.build("cpu").model
        assert model.bending_model == bending and model.edge_count == 16
        assert np.abs(model.edge_bending_weights.numpy()).max() > 0


def test_a_built_model_can_switch_its_bending_model(device):
    """Model.bending_model is read at every step: a model built with one model and switched to the other steps
    as one built with it, also through XPBD's buffers reused from an earlier step (vec3 multipliers for the
    quadratic constraint, scalars for the dihedral one)."""
    def rollout(model, solver, steps=5):
        s0, s1 = model.state(), model.state()
        for _ in range(steps):
            solver.step(model, s0, s1, None, 1.0 / 60.0)
            s0, s1 = s1, s0
        return s0.particle_q.numpy()

    built = {}
    for bending in ("quadratic", "dihedral"):
        model, x, _ = bent_cloth(device, bending)
        model.particle_q.assign(x.numpy())
        model.requires_grad = False  # the solver's plain path, with buffers reused between steps
        built[bending] = model
    dihedral = rollout(built["dihedral"], sim.SolverXPBD(built["dihedral"], iterations=3))
    switched = built["quadratic"]
    solver = sim.SolverXPBD(switched, iterations=3)
    quadratic = rollout(switched, solver)
    assert np.abs(quadratic - dihedral).max() > 1e-4  # the two models do differ on this bent cloth
    switched.bending_model = "dihedral"
    np.testing.assert_array_equal(rollout(switched, solver), dihedral)

    message = "bending model must be one of quadratic, dihedral, got 'cotangent'"
    switched.bending_model = "cotangent"
    with pytest.raises(ValueError, match=message):
        rollout(switched, solver, steps=1)
    with pytest.raises(ValueError, match=message):
        sim.ModelBuilder(bending="cotangent")
