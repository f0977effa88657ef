"""Rigid contacts in their default, time-constant form (docs/rigid_contact.md) hold bodies within a millimetre
whatever their mass, at the scenes' steps: resting boxes of 1 kg and 100 kg, a stack of five over 10 s (depths
against the law's analytic rest depth, and no drift), the rigid_stack scene's worst frame, a dropped box against
MuJoCo's resting height, bounces against their restitution, and gradients through a landing against finite
differences. Depths are measured from the poses (sim.penetration), not by the solver's narrow phase."""

import os

import numpy as np
import pytest

import kernels as wp
import sim
from _sim_rollout import rollout
from autodiff import Tape, gradcheck
from sim.penetration import box_box_depth, box_corners, ground_depth, sphere_box_depth
from sim.scene import Scene

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
G = 9.81
HALF = (0.1, 0.1, 0.1)
DT = 1.0 / 960.0  # [s]: the scenes' step (60 fps, 16 substeps)


def rest_depth_per_g(dt: float, timeconst: float = sim.model.DEFAULT_TIMECONST) -> float:
    """Rest depth [m] per unit of load acceleration [m/s^2] of a time-constant contact (critically damped, no
    restitution) whose contact points carry exactly their effective mass: tau^2 + 2 tau dt + 2 dt^2, tau the
    time constant kept above 2 dt (sqrt(tau^2 + (2 dt)^2)), from the implicit law's static balance
    k depth / (1 + c dt + 2 k dt^2) = load with k = 1 / tau^2, c = 2 / tau (the loading stiffness, 2 k at
    restitution 0, in the implicit divisor). The damping window, nearly 1 at rest, makes it a few % less."""
    tau = np.hypot(timeconst, 2.0 * dt)
    return tau * tau + 2.0 * tau * dt + 2.0 * dt * dt


@pytest.mark.parametrize("mass", [1.0, 100.0])
def test_a_box_rests_within_a_millimetre_whatever_its_mass(device, mass):
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body, density=mass / 0.008)
    b.add_ground_plane()
    model = b.finalize(device)
    _, states = rollout(model, sim.SolverRigid(model), 600, DT, every=20)
    depth = np.array([ground_depth(box_corners(s.body_q.numpy()[0], HALF)) for s in states[5:]])
    assert depth.max() < 1e-3
    # the depth is the law's, which does not depend on the mass (4 corners of m / 4 effective mass each)
    np.testing.assert_allclose(depth[-1], G * rest_depth_per_g(DT), rtol=0.05)
    assert np.ptp(depth) < 1e-6


def test_a_stack_of_five_holds_within_a_millimetre_for_ten_seconds(device):
    """Five 8 kg cubes stacked exactly: every contact (the bottom one carries all five) at most 1 mm deep,
    nothing moving from 1 s to 10 s."""
    b = sim.ModelBuilder()
    for i in range(5):
        body = b.add_body(pos=(0.0, 0.1 + 0.2 * i, 0.0))
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body)
    b.add_ground_plane()
    model = b.finalize(device)
    dt = 1e-3
    _, states = rollout(model, sim.SolverRigid(model), 10000, dt, every=1000)
    q = np.array([s.body_q.numpy() for s in states], np.float64)
    depths = np.array([[ground_depth(box_corners(p[0], HALF))] +
                       [box_box_depth(p[i], HALF, p[i + 1], HALF) for i in range(4)] for p in q[1:]])
    assert depths.max() < 1e-3 and depths.min() > 0.0
    assert np.abs(q[-1] - q[1]).max() < 1e-5  # no drift from 1 s to 10 s
    assert np.abs(states[-1].body_qd.numpy()).max() < 1e-4


def test_rigid_stack_scene_holds_the_ball_and_the_boxes():
    """scenes/rigid_stack.yaml at its step: the 42 kg ball sinks at most 1 cm into the ground at its worst frame
    (7.1 cm with the penalty contacts it had), boxes overlap each other by at most 5 mm (1.7 cm with the penalty
    contacts, 8.6 mm with each time-constant contact alone, where the ball lands on a column of three light boxes;
    4.7 mm with the coupled passes), the ball and a box by at most 1 cm (the ball's side-on hit at 4 m/s)."""
    scene = Scene.load(os.path.join(ROOT, "scenes", "rigid_stack.yaml"))
    built = scene.build("cpu")
    names = [body.name for body in scene.spec.bodies]
    ball = names.index("ball")
    radius = scene.spec.bodies[ball].shapes[0].radius
    boxes = [i for i in range(len(names)) if i != ball]
    state, scratch = built.model.state(), built.model.state()
    worst = dict(ball=0.0, boxes=0.0, ball_box=0.0)
    for frame in range(1, scene.spec.sim.frames + 1):
        state, scratch = built.step_frame(state, scratch, frame)
        q = state.body_q.numpy().astype(np.float64)
        worst["ball"] = max(worst["ball"], radius - q[ball, 1])
        for k, i in enumerate(boxes):
            worst["ball_box"] = max(worst["ball_box"], sphere_box_depth(q[ball, :3], radius, q[i], HALF))
            for j in boxes[k + 1:]:
                worst["boxes"] = max(worst["boxes"], box_box_depth(q[i], HALF, q[j], HALF))
    assert worst["ball"] < 0.01 and worst["boxes"] < 0.005 and worst["ball_box"] < 0.01, worst


def heavy_on_light(device, *, lift: float = 0.2, requires_grad: bool = False):
    """A 40 kg cube (0.2 m) dropped from `lift` [m] onto a 1 kg cube resting on the ground (default contacts)."""
    b = sim.ModelBuilder()
    light = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=light, density=125.0)
    heavy = b.add_body(pos=(0.0, 0.3 + lift, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=heavy, density=5000.0)
    b.add_ground_plane()
    return b.finalize(device, requires_grad=requires_grad)


def test_a_heavy_box_on_a_light_one_is_held_by_the_coupled_passes(device):
    """A 40 kg box lands on a 1 kg box on the ground. Each contact alone (contact_iterations=0) holds the load
    with the light pair's effective mass: 2 to 4 mm deep and still chattering after 1 s; the coupled passes pass
    the load on to the ground: over the last half second the box-box contact is at most 1.5 mm deep (less than
    half the uncoupled worst) and both boxes are at rest. Depths measured from the poses."""
    worst, speed = {}, {}
    for iterations in (0, sim.solvers.rigid.solver.DEFAULT_CONTACT_ITERATIONS):
        model = heavy_on_light(device)
        final, states = rollout(model, sim.SolverRigid(model, contact_iterations=iterations), 1440, DT, every=24)
        q = [s.body_q.numpy().astype(np.float64) for s in states[-20:]]
        worst[iterations] = max(box_box_depth(p[0], HALF, p[1], HALF) for p in q)
        speed[iterations] = np.abs(final.body_qd.numpy()).max()
    coupled, alone = worst[sim.solvers.rigid.solver.DEFAULT_CONTACT_ITERATIONS], worst[0]
    assert coupled < 1.5e-3 and coupled < 0.5 * alone, worst
    assert speed[sim.solvers.rigid.solver.DEFAULT_CONTACT_ITERATIONS] < 1e-3 < speed[0], speed


def test_coupled_passes_leave_a_lone_contact_unchanged(device):
    """A ball bouncing on the ground has one contact: the coupled passes find nothing to correct, and the
    trajectory is the law's (contact_iterations=0) to rounding."""
    heights = []
    for iterations in (0, 3):
        b = sim.ModelBuilder()
        body = b.add_body(pos=(0.0, 0.6, 0.0))
        b.add_shape_sphere(radius=0.1, body=body, density=250.0, restitution=0.5)
        b.add_ground_plane(restitution=0.5)
        model = b.finalize(device)
        _, states = rollout(model, sim.SolverRigid(model, contact_iterations=iterations), 600, DT, every=10)
        heights.append(np.array([s.body_q.numpy()[0, 1] for s in states]))
    assert heights[0].min() < 0.1  # it did touch the ground
    np.testing.assert_allclose(heights[1], heights[0], atol=1e-6)


def test_a_dropped_box_rests_at_mujocos_height():
    """A 0.2 m cube of 8 kg dropped flat from 1 m onto the ground, in MuJoCo (its default contacts, step 2 ms)
    and here (default contacts, the scenes' step): the resting heights agree within 1 mm."""
    mujoco = pytest.importorskip("mujoco", reason="mujoco (a test extra) is not installed")
    xml = """<mujoco><option timestep="0.002" gravity="0 0 -9.81"/><worldbody>
      <geom type="plane" size="5 5 0.1"/>
      <body pos="0 0 1.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="8"/></body>
    </worldbody></mujoco>"""
    mj_model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(mj_model)
    mujoco.mj_step(mj_model, data, nstep=1500)
    reference = float(data.qpos[2])
    assert abs(float(data.qvel[2])) < 1e-3  # at rest
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 1.1, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body, density=1000.0)
    b.add_ground_plane()
    model = b.finalize("cpu")
    state, _ = rollout(model, sim.SolverRigid(model), int(3.0 / DT), DT)
    assert abs(float(state.body_q.numpy()[0, 1]) - reference) < 1e-3
    assert abs(float(state.body_qd.numpy()[0, 4])) < 1e-3


@pytest.mark.parametrize("restitution", [0.5, 0.8])
def test_bounce_height_follows_restitution(device, restitution):
    """A ball dropped from 1 m onto the ground, both of restitution e, rises to e^2 of its fall at the scenes'
    step (the contact stretches its time scale by 4 e steps so that the bounce is resolved)."""
    h0, radius = 1.0, 0.1
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, radius + h0, 0.0))
    b.add_shape_sphere(radius=radius, body=body, density=250.0, restitution=restitution)
    b.add_ground_plane(restitution=restitution)
    model = b.finalize(device)
    _, states = rollout(model, sim.SolverRigid(model), 1100, DT, every=2)
    height = np.array([s.body_q.numpy()[0, 1] for s in states]) - radius
    bottom = int(np.argmin(height))
    assert height[bottom] > -0.03  # a bouncing contact is softer: 2 cm deep at 4.4 m/s
    assert height[bottom:].max() == pytest.approx(restitution ** 2 * h0, rel=3e-2)


def landing_scene(device):
    """A box thrown down and sideways onto the ground in the time-constant form: it lands after ~16 ms and
    slides with friction (mu = 0.4) in its contact to the end of the 32 ms rollout."""
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.105, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body, density=125.0, mu=0.4, timeconst=0.004, dampratio=0.8)
    b.add_ground_plane(mu=0.4, timeconst=0.004, dampratio=0.8)
    model = b.finalize(device, requires_grad=True)
    velocity = wp.array(np.array([[0.0, 0.0, 0.0, 0.5, -0.3, 0.2]], np.float32), dtype=wp.spatial_vector,
                        device=device, requires_grad=True)
    return model, velocity


@pytest.mark.parametrize("wrt", ["velocity", "mass", "timeconst", "dampratio"])
def test_landing_gradient(device, wrt):
    """Final pose after a landing in the time-constant form, differentiated with respect to the initial
    velocity, the body's mass and the shapes' time constant and damping ratio, against central differences."""
    model, velocity = landing_scene(device)
    solver = sim.SolverRigid(model)
    x = {"velocity": velocity, "mass": model.body_mass, "timeconst": model.shape_material_timeconst,
         "dampratio": model.shape_material_dampratio}[wrt]

    def fn(*_):
        state = model.state()
        state.body_qd = velocity
        final, _ = rollout(model, solver, 16, 2e-3, state=state)
        return final.body_q

    x.requires_grad = True
    tape = Tape()
    with tape:
        out = fn()
    tape.backward(grads={out: wp.full_like(out, 1.0)})
    # the key matters here (the mass least: the contacts' time scales do not depend on it, and the coupled passes
    # take the box's four corners together: 4e-4, 2e-3 with each corner alone)
    assert np.abs(x.grad.numpy()).max() > 1e-4
    tape.zero()
    gradcheck(fn, [x], eps=4e-5 if wrt == "timeconst" else 1e-3, atol=5e-4, rtol=5e-2)  # 1 % of tau


@pytest.mark.parametrize("wrt", ["velocity", "timeconst"])
def test_stack_landing_gradient(device, wrt):
    """A 40 kg box thrown down and sideways onto an 8 kg box on the ground (both in the time-constant form, with
    the coupled passes): the final poses differentiated with respect to the initial velocities and the shapes'
    time constants, against central differences (the masses hardly matter here: 4e-5 m/kg, which the contacts'
    time scales do not depend on). (A 1 kg box under it would not do: its friction, kf dt / m_eff near 1
    per corner at this step, makes the rollout ill-conditioned with or without the coupled passes.)"""
    b = sim.ModelBuilder()
    material = dict(mu=0.4, timeconst=0.004, dampratio=0.8)
    light = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=light, density=1000.0, **material)
    heavy = b.add_body(pos=(0.0, 0.305, 0.0))
    b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=heavy, density=5000.0, **material)
    b.add_ground_plane(**material)
    model = b.finalize(device, requires_grad=True)
    solver = sim.SolverRigid(model)
    assert solver.contact_iterations > 0
    velocity = wp.array(np.array([[0.0] * 6, [0.0, 0.0, 0.0, 0.3, -0.3, 0.1]], np.float32), dtype=wp.spatial_vector,
                        device=device, requires_grad=True)
    x = {"velocity": velocity, "timeconst": model.shape_material_timeconst}[wrt]

    def fn(*_):
        state = model.state()
        state.body_qd = velocity
        final, _ = rollout(model, solver, 16, 2e-3, state=state)
        return final.body_q

    x.requires_grad = True
    tape = Tape()
    with tape:
        out = fn()
    tape.backward(grads={out: wp.full_like(out, 1.0)})
    assert np.abs(x.grad.numpy()).max() > 1e-2  # the key matters here
    tape.zero()
    gradcheck(fn, [x], eps=4e-5 if wrt == "timeconst" else 1e-3, atol=5e-4, rtol=5e-2)


def test_taped_rounds_over_the_same_states_reuse_the_solvers_arrays(device):
    """The coupled passes' arrays of a differentiated step belong to its input State: a second taped rollout over
    the same States (an optimisation's next round) allocates none and gives the same gradient to the bit, with
    or without tape.zero() in between (the solver zeroes its own arrays' gradients; the States' are the
    caller's), and the same as a rollout over fresh States."""
    model = heavy_on_light(device, lift=0.0, requires_grad=True)
    solver = sim.SolverRigid(model)
    velocity = wp.array(np.array([[0.0] * 6, [0.0, 0.0, 0.0, 0.2, -0.5, 0.1]], np.float32), dtype=wp.spatial_vector,
                        device=device, requires_grad=True)

    def gradient(states, zero: bool):
        states[0].body_qd = velocity
        tape = Tape()
        with tape:
            for t in range(len(states) - 1):
                solver.step(model, states[t], states[t + 1], None, DT)
        tape.backward(grads={states[-1].body_q: wp.full_like(states[-1].body_q, 1.0)})
        g = velocity.grad.numpy().copy()
        if zero:
            tape.zero()
        else:  # only what the caller owns
            for s in states:
                for a in (s.body_q, s.body_qd, s.body_f):
                    if a is not None and a.grad is not None:
                        a.grad.zero_()
        return g

    states = [model.state() for _ in range(31)]
    first = gradient(states, zero=True)
    arrays = dict(solver._taped_arrays[states[5]])
    assert np.abs(first).max() > 1e-3
    np.testing.assert_array_equal(gradient(states, zero=False), first)
    assert all(solver._taped_arrays[states[5]][key][1] is kept[1] for key, kept in arrays.items())
    np.testing.assert_array_equal(gradient(states, zero=True), first)
    np.testing.assert_allclose(gradient([model.state() for _ in range(31)], zero=True), first, rtol=1e-6)
