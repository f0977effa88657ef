"""Many worlds in one Model: every world of a batched model steps as the same world alone (particles with
particle-particle contact, cloth with SolverXPBD and SolverSemiImplicit, free rigid bodies, articulations with
SolverFeatherstone), worlds overlapping in space never touch, per-world gradients equal the world's alone
(gradcheck), and the builder's world bookkeeping (ranges, views, refusals)."""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from _sim_rollout import rollout
from autodiff import Tape, gradcheck
from sim import sum_worlds, world_center_of_mass, world_kinetic_energy

HORIZONTAL = sim.quat_from_axis_angle((1.0, 0.0, 0.0), math.pi / 2)


def batched_and_alone(sources, device, *, shared=None, requires_grad=False, configure=None):
    """(one model holding every source builder as a world, [each source alone as a model]); `shared(builder)`
    adds the shared colliders (world -1) to each; `configure(model)` sets model settings on each."""
    batched = sim.ModelBuilder()
    if shared is not None:
        shared(batched)
    for src in sources:
        batched.begin_world()
        batched.add_builder(src)
        batched.end_world()
    models = [batched.finalize(device=device, requires_grad=requires_grad)]
    for src in sources:
        alone = sim.ModelBuilder()
        if shared is not None:
            shared(alone)
        alone.add_builder(src)
        models.append(alone.finalize(device=device, requires_grad=requires_grad))
    if configure is not None:
        for m in models:
            configure(m)
    return models[0], models[1:]


def compare_worlds(batched, alone_models, make_solver, steps, dt, *, exact, names=("particle_q", "particle_qd")):
    """Step the batched model and each model alone; each world's arrays must equal the alone ones (bit for bit
    with `exact`, else within float tolerance)."""
    end, _ = rollout(batched, make_solver(batched), steps, dt)
    for w, alone in enumerate(alone_models):
        ref, _ = rollout(alone, make_solver(alone), steps, dt)
        view = batched.world_state(end, w)
        for name in names:
            got, want = getattr(view, name).numpy(), getattr(ref, name).numpy()
            assert got.shape == want.shape and got.size > 0
            if exact:
                np.testing.assert_array_equal(got, want, err_msg=f"world {w} {name}")
            else:
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"world {w} {name}")


def cloth_source(height, vel, *, self_collision=False, springs=True):
    b = sim.ModelBuilder()
    b.add_cloth_grid(pos=(-0.2, height, -0.2), rot=HORIZONTAL, vel=vel, dim_x=4, dim_y=4, cell_x=0.1, cell_y=0.1,
                     mass=0.05, tri_ke=1e3, add_springs=springs, edge_ke=1.0, radius=0.02,
                     self_collision=self_collision)
    return b


def ground_and_sphere(b):
    b.add_ground_plane()
    b.add_shape_sphere(pos=(0.0, 0.25, 0.0), radius=0.15)


CLOTHS = [(0.5, (0.0, 0.0, 0.0)), (0.45, (0.3, -1.0, 0.0)), (0.6, (0.0, 0.5, -0.4))]


@pytest.mark.parametrize("solver", ["xpbd", "semi_implicit"])
def test_cloth_worlds_step_as_alone(device, solver):
    sources = [cloth_source(h, v) for h, v in CLOTHS]
    batched, alone = batched_and_alone(sources, device, shared=ground_and_sphere)
    if solver == "xpbd":
        make, steps, dt = (lambda m: sim.SolverXPBD(m, iterations=5)), 40, 1.0 / 120.0
    else:
        make, steps, dt = sim.SolverSemiImplicit, 120, 1.0e-3
    # XPBD gathers corrections without atomics: bit for bit; the force solver adds forces atomically
    compare_worlds(batched, alone, make, steps, dt, exact=solver == "xpbd")


def particle_block(offset, vel):
    b = sim.ModelBuilder()
    b.add_particle_grid(pos=offset, rot=(0.0, 0.0, 0.0, 1.0), vel=vel, dim_x=3, dim_y=3, dim_z=3, cell_x=0.05,
                        cell_y=0.05, cell_z=0.05, mass=0.1, jitter=0.005, radius=0.024)
    return b


def enable_particle_contact(model):
    model.particle_grid_enabled = True


def test_particle_worlds_step_as_alone(device):
    sources = [particle_block((0.0, 0.1, 0.0), (0.0, 0.0, 0.0)), particle_block((0.02, 0.15, 0.0), (0.5, 0, 0)),
               particle_block((-0.01, 0.12, 0.03), (0.0, -1.0, 0.2))]
    batched, alone = batched_and_alone(sources, device, shared=lambda b: b.add_ground_plane(),
                                       configure=enable_particle_contact)
    compare_worlds(batched, alone, sim.SolverSemiImplicit, 150, 1.0e-3, exact=False)
    compare_worlds(batched, alone, lambda m: sim.SolverXPBD(m, iterations=4), 20, 1.0 / 120.0, exact=False)


def box_stack(offset, spin):
    b = sim.ModelBuilder()
    for k in range(3):
        body = b.add_body(pos=(offset[0] + 0.02 * k, 0.11 + 0.21 * k + offset[1], offset[2]),
                          rot=sim.quat_from_axis_angle((0.3, 1.0, 0.2), spin * k),
                          angular_velocity=(0.0, spin, 0.0))
        b.add_shape_box(hx=0.1, hy=0.1, hz=0.1, body=body)
    ball = b.add_body(pos=(offset[0] + 0.3, 0.5, offset[2]), linear_velocity=(-0.5, 0.0, 0.0))
    b.add_shape_sphere(radius=0.08, body=ball)
    return b


def test_rigid_worlds_step_as_alone(device):
    sources = [box_stack((0.0, 0.0, 0.0), 0.0), box_stack((0.05, 0.05, 0.0), 0.3), box_stack((0, 0.1, 0.02), -0.2)]
    batched, alone = batched_and_alone(sources, device, shared=lambda b: b.add_ground_plane())
    compare_worlds(batched, alone, sim.SolverRigid, 100, 2.0e-3, exact=False, names=("body_q", "body_qd"))


def arm(angle):
    """A 3-link chain hanging from a revolute joint in world, swinging down onto the ground."""
    b = sim.ModelBuilder()
    parent = -1
    for k in range(3):
        body = b.add_body(pos=(0.2 * (k + 0.5), 0.4, 0.0))
        b.add_shape_capsule(rot=sim.quat_from_axis_angle((0, 0, 1), math.pi / 2), radius=0.03, half_height=0.07,
                            body=body)
        b.add_joint_revolute(parent, body, axis=(0.0, 0.0, 1.0),
                             parent_xform=(0.0, 0.4, 0.0, 0, 0, 0, 1) if parent < 0 else (0.1, 0, 0, 0, 0, 0, 1),
                             child_xform=(-0.1, 0.0, 0.0, 0, 0, 0, 1), damping=0.01)
        parent = body
    b.joint_q[0] = angle
    return b


def test_articulation_worlds_step_as_alone(device):
    sources = [arm(0.0), arm(0.4), arm(-0.3)]
    batched, alone = batched_and_alone(sources, device, shared=lambda b: b.add_ground_plane())
    assert batched.articulation_count == 3
    compare_worlds(batched, alone, sim.SolverFeatherstone, 80, 4.0e-3, exact=False,
                   names=("joint_q", "joint_qd"))


# ---------------------------------------------------------------------------------------------------------------
# No contact across worlds


def test_overlapping_cloths_do_not_touch(device):
    """A cloth falls through the space of another world's resting cloth (both self-colliding, where they would
    collide if they were one world) exactly as it falls alone."""
    falling = cloth_source(0.5, (0.0, -1.0, 0.0), self_collision=True)
    resting = sim.ModelBuilder()
    resting.add_cloth_grid(pos=(-0.3, 0.3, -0.3), rot=HORIZONTAL, vel=(0.0, 0.0, 0.0), dim_x=6, dim_y=6,
                           cell_x=0.1, cell_y=0.1, mass=0.05, fix_left=True, fix_right=True, fix_top=True,
                           fix_bottom=True, self_collision=True)
    batched, alone = batched_and_alone([falling, resting], device, shared=lambda b: b.add_ground_plane())
    solver = lambda m: sim.SolverXPBD(m, iterations=5)  # noqa: E731
    # not bit for bit: a world's drift (sim/self_contact.py) is summed in another order than the model's alone
    compare_worlds(batched, alone, solver, 30, 1.0 / 120.0, exact=False)
    together = sim.ModelBuilder()
    together.add_builder(falling)
    together.add_builder(resting)
    one = together.finalize(device=device)
    end, _ = rollout(one, solver(one), 30, 1.0 / 120.0)
    caught = end.particle_q.numpy()[:falling.particle_count, 1].min()
    alone_end, _ = rollout(alone[0], solver(alone[0]), 30, 1.0 / 120.0)
    fell = alone_end.particle_q.numpy()[:, 1].min()
    assert caught > fell + 0.1, "sanity: in one world the falling cloth is caught by the resting one"


def test_overlapping_bodies_and_particles_do_not_touch(device):
    """Boxes and particle blocks of two worlds at the same place pass through each other."""
    first = box_stack((0.0, 0.0, 0.0), 0.0)
    second = sim.ModelBuilder()
    body = second.add_body(pos=(0.0, 0.6, 0.0), linear_velocity=(0.0, -2.0, 0.0))
    second.add_shape_box(hx=0.15, hy=0.1, hz=0.15, body=body)
    batched, alone = batched_and_alone([first, second], device, shared=lambda b: b.add_ground_plane())
    compare_worlds(batched, alone, sim.SolverRigid, 150, 2.0e-3, exact=False, names=("body_q", "body_qd"))
    blocks = [particle_block((0.0, 0.1, 0.0), (0.0, 0.0, 0.0)), particle_block((0.0, 0.3, 0.0), (0.0, -2.0, 0.0))]
    batched, alone = batched_and_alone(blocks, device, configure=enable_particle_contact)
    compare_worlds(batched, alone, sim.SolverSemiImplicit, 150, 1.0e-3, exact=False)


# ---------------------------------------------------------------------------------------------------------------
# Gradients per world


@wp.kernel
def copy_into(src: wp.array(dtype=wp.vec3), start: int, dst: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    dst[start + i] = src[i]


def test_per_world_gradients_equal_alone(device):
    """d(sum of the worlds' losses) / d(world 1's initial velocity) is world 1's gradient alone, and passes
    gradcheck."""
    sources = [cloth_source(h, v, springs=False) for h, v in CLOTHS]
    batched, alone = batched_and_alone(sources, device, shared=ground_and_sphere, requires_grad=True)
    target = wp.vec3(0.1, 0.2, -0.1)
    steps, dt = 12, 1.0 / 120.0

    def loss_fn(model, world):
        s = model.world_slice(world) if model.world_count else None
        start = s.particle.start if s else 0

        def run(v1):
            state = model.state()
            wp.launch(copy_into, dim=v1.shape[0], inputs=[v1, start], outputs=[state.particle_qd], device=device)
            end, _ = rollout(model, sim.SolverXPBD(model, iterations=3), steps, dt, state=state)
            com = world_center_of_mass(model, end) if model.world_count else sim.center_of_mass(model, end)
            return com
        return run

    v0 = np.asarray(CLOTHS[1][1], np.float32)
    n = sources[1].particle_count
    grads = []
    for model, world in ((batched, 1), (alone[1], 0)):
        v1 = wp.array(np.tile(v0, (n, 1)), dtype=wp.vec3, device=device, requires_grad=True)
        run = loss_fn(model, world)
        tape = Tape()
        with tape:
            com = run(v1)
            if model.world_count:
                per_world = wp.zeros(3, dtype=float, device=device, requires_grad=True)
                wp.launch(com_distance, dim=3, inputs=[com, target], outputs=[per_world], device=device)
                loss = sum_worlds(per_world)
            else:
                loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
                wp.launch(com_distance, dim=1, inputs=[com, target], outputs=[loss], device=device)
        tape.backward(loss=loss)
        grads.append(v1.grad.numpy().copy())
        if model.world_count:
            report = gradcheck(lambda v: run(v), [v1], eps=1e-3, atol=1e-3, raise_on_fail=False)
            assert report.passed, str(report)
    assert np.abs(grads[0]).max() > 1e-4
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6)


@wp.kernel
def copy_body_velocity(src: wp.array(dtype=wp.spatial_vector), start: int, dst: wp.array(dtype=wp.spatial_vector)):
    i = wp.tid()
    dst[start + i] = src[i]


@wp.kernel
def body_heights(body_q: wp.array(dtype=wp.transform), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.transform_get_translation(body_q[i])[1]


def test_per_world_rigid_gradients_equal_alone(device):
    """Bodies in contact with the shared ground and with each other: the gradient of every world's final heights
    with respect to world 1's initial ball velocity is world 1's alone (SolverRigid's differentiated step, its
    contact slots sized by the shapes one world sees), and passes gradcheck."""
    sources = [box_stack((0.0, 0.0, 0.0), 0.0), box_stack((0.05, 0.02, 0.0), 0.3), box_stack((0, 0.03, 0.02), -0.2)]
    batched, alone = batched_and_alone(sources, device, shared=lambda b: b.add_ground_plane(), requires_grad=True)
    assert sim.SolverRigid(batched)._slots == 5  # the ground and a world's 4 shapes, not all 13 shapes
    steps, dt = 20, 2.0e-3
    ball = 3  # each world's last body, rolling into its box stack
    v0 = batched.body_qd0.numpy()[batched.world_slice(1).body][ball:]

    def run_on(model, start):
        def run(v1):
            state = model.state()
            wp.launch(copy_body_velocity, dim=v1.shape[0], inputs=[v1, start], outputs=[state.body_qd], device=device)
            end, _ = rollout(model, sim.SolverRigid(model), steps, dt, state=state)
            out = wp.zeros(model.body_count, dtype=float, device=device, requires_grad=True)
            wp.launch(body_heights, dim=model.body_count, inputs=[end.body_q], outputs=[out], device=device)
            return out
        return run

    grads = []
    for model, start in ((batched, batched.world_slice(1).body.start + ball), (alone[1], ball)):
        v1 = wp.array(v0, dtype=wp.spatial_vector, device=device, requires_grad=True)
        run = run_on(model, start)
        tape = Tape()
        with tape:
            heights = run(v1)
        seed = np.zeros(model.body_count, np.float32)
        seed[start - ball:start + 1] = 1.0  # the world's four bodies
        tape.backward(grads={heights: seed})
        grads.append(v1.grad.numpy().copy())
    assert np.abs(grads[0]).max() > 1e-4
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-3, atol=1e-6)
    report = gradcheck(run_on(batched, batched.world_slice(1).body.start + ball),
                       [wp.array(v0, dtype=wp.spatial_vector, device=device)], eps=1e-3, atol=2e-3, raise_on_fail=False)
    assert report.passed, str(report)


@wp.kernel
def com_distance(com: wp.array(dtype=wp.vec3), target: wp.vec3, loss: wp.array(dtype=float)):
    w = wp.tid()
    d = com[w] - target
    loss[w] = wp.dot(d, d)


def test_per_world_reductions(device):
    sources = [particle_block((0.0, 0.1 * k, 0.0), (float(k), 0.0, 0.0)) for k in range(3)]
    b = sim.ModelBuilder()
    b.add_particle((5.0, 5.0, 5.0), mass=10.0)  # shared: in no world's sums
    for src in sources:
        b.begin_world()
        b.add_builder(src)
        b.end_world()
    model = b.finalize(device=device)
    state = model.state()
    com = world_center_of_mass(model, state).numpy()
    energy = world_kinetic_energy(model, state).numpy()
    q, v, m = state.particle_q.numpy(), state.particle_qd.numpy(), model.particle_mass.numpy()
    for w in range(3):
        s = model.world_slice(w).particle
        np.testing.assert_allclose(com[w], (q[s] * m[s, None]).sum(0) / m[s].sum(), rtol=1e-5)
        np.testing.assert_allclose(energy[w], 0.5 * (m[s] * (v[s] ** 2).sum(1)).sum(), rtol=1e-5)
    np.testing.assert_allclose(sum_worlds(world_kinetic_energy(model, state)).numpy()[0], energy.sum(), rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# Builder bookkeeping


def test_replicate_layout_and_ranges(device):
    src = arm(0.2)
    src.add_particle((0.0, 1.0, 0.0))
    b = sim.ModelBuilder()
    b.add_ground_plane()
    worlds = b.replicate(src, 4, spacing=(1.0, 0.0, 2.0))
    assert worlds == [0, 1, 2, 3]
    m = b.finalize(device=device)
    assert m.world_count == m.num_worlds == 4
    np.testing.assert_array_equal(m.shape_world.numpy(), [-1] + sum([[w] * 3 for w in range(4)], []))
    np.testing.assert_array_equal(m.joint_world.numpy(), np.repeat(np.arange(4), 3))
    np.testing.assert_array_equal(m.body_world.numpy(), np.repeat(np.arange(4), 3))
    q = m.particle_q.numpy()
    # a 2 x 2 grid in x-z, centred on the origin
    np.testing.assert_allclose(q[:, [0, 2]], [[-0.5, -1.0], [0.5, -1.0], [-0.5, 1.0], [0.5, 1.0]])
    s = m.world_slice(2)
    assert (s.body, s.shape, s.joint_coord, s.particle, s.articulation) == \
        (slice(6, 9), slice(7, 10), slice(6, 9), slice(2, 3), slice(2, 3))
    state = m.state()
    sim.eval_fk(m, state.joint_q, state.joint_qd, state)
    alone = src.finalize(device=device)
    alone_state = alone.state()
    sim.eval_fk(alone, alone_state.joint_q, alone_state.joint_qd, alone_state)
    body_q = m.world_state(state, 2).body_q.numpy()
    np.testing.assert_allclose(body_q[:, :3] - (-0.5, 0.0, 1.0), alone_state.body_q.numpy()[:, :3], atol=1e-6)
    with pytest.raises(IndexError):
        m.world_slice(4)


def test_world_refusals():
    b = sim.ModelBuilder()
    b.begin_world()
    with pytest.raises(RuntimeError, match="still open"):
        b.begin_world()
    i = b.add_particle((0.0, 0.0, 0.0))
    b.end_world()
    with pytest.raises(RuntimeError, match="no world is open"):
        b.end_world()
    b.begin_world()
    j = b.add_particle((1.0, 0.0, 0.0))
    b.end_world()
    b.add_spring(i, j, 1.0, 0.0)
    with pytest.raises(ValueError, match="spring 0 joins worlds"):
        b.finalize(device="cpu")
    other = sim.ModelBuilder(up_axis="z")
    with pytest.raises(ValueError, match="up_axis differs"):
        sim.ModelBuilder().add_builder(other)
    nested = sim.ModelBuilder()
    nested.replicate(sim.ModelBuilder(), 2)
    with pytest.raises(ValueError, match="worlds of its own"):
        sim.ModelBuilder().add_builder(nested)
    open_world = sim.ModelBuilder()
    open_world.begin_world()
    with pytest.raises(RuntimeError, match="still open"):
        open_world.finalize(device="cpu")
