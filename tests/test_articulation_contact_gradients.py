"""Gradients of SolverFeatherstone rollouts through the contacts of its links, against central finite differences:
with respect to the initial joint coordinates (in scenes where the finite differences are stable), the contact
materials of a link's shape and of the collider it touches, and the colliders' positions and sizes; and
`sim optimize` learning such a key for a jointed scene."""

import math

import numpy as np
import pytest
import yaml

import kernels as wp
import sim
from _sim_rollout import quat_to_matrix, rollout
from autodiff import gradcheck
from sim.cli import main
from sim.optimization.assign import assign_position, assign_vec3

# A soft contact: with the link's effective mass at the sphere (~0.26 kg) its frequency is sqrt(ke / m) ~ 90 rad/s
# (0.18 rad per step of 2 ms; the default ke = 1e5 gives 620 rad/s, 1.2 rad per step). kf is low enough that
# friction is neither purely viscous nor saturated at the sliding speeds here, so both kf and mu matter.
SOFT = {"ke": 2.0e3, "kd": 10.0, "kf": 1.0, "mu": 0.5, "restitution": 0.5}
# The soft contact without damping (kd 0: damping's force would jump as the contact starts, docs/gradients.md) and
# with friction saturated (kf 100: Coulomb at these speeds), for gradients in the initial joint coordinates.
GENTLE = {"ke": 2.0e3}
REACH = 0.98  # horizontal distance [m] of the link's sphere from the pivot's vertical axis, about
STEPS, DT = 100, 2e-3
# Static shapes whose top is at height 0 where the link's sphere touches it: (builder method, keywords). The round
# ones are centred on the pivot's vertical axis, so the sphere, sliding round it, stays on the same height.
COLLIDERS = {
    "ground": ("add_ground_plane", {}),
    "box": ("add_shape_box", {"pos": (0.0, -0.5, 0.0), "hx": 1.5, "hy": 0.5, "hz": 1.5}),
    "sphere": ("add_shape_sphere", {"pos": (0.0, -math.sqrt(25.0 - REACH ** 2), 0.0), "radius": 5.0}),
    "capsule": ("add_shape_capsule", {"pos": (0.0, -math.sqrt(25.0 - REACH ** 2) - 0.5, 0.0), "radius": 5.0,
                                      "half_height": 0.5}),
}
# how the arm starts: depth [m] of its sphere in the collider's top, pitch speed [rad/s] (negative: down)
STARTS = {"sliding": (0.005, -0.15), "landing": (-0.01, -0.5)}


def sliding_arm(device, collider="ground", start="sliding", material=SOFT):
    """A 1 kg link (centre of mass 0.5 m out) on a D6 joint 0.3 m above the top of `collider` turning about the
    vertical (yaw) and, in the turned frame, about z (pitch), a sphere of radius 0.1 m at its end 1 m from the
    pivot. It turns at 3 rad/s, so the sphere slides round the pivot at ~3 m/s; with `start` "sliding" it sits
    5 mm deep in the top (its rest depth is ~4 mm) and bobs there, "landing" it starts 1 cm above it and lands
    within 20 ms. Both shapes have `material` (the builder's defaults for the keys it does not give)."""
    b = sim.ModelBuilder(up_axis="y")
    link = b.add_body(mass=1.0, inertia=np.eye(3) * 0.01, com=(0.5, 0.0, 0.0))
    b.add_shape_sphere(pos=(1.0, 0.0, 0.0), radius=0.1, body=link, density=0.0, **material)
    b.add_joint_d6(-1, link, angular_axes=[(0, 1, 0), (0, 0, 1)], parent_xform=(0, 0.3, 0, 0, 0, 0, 1))
    method, shape = COLLIDERS[collider]
    getattr(b, method)(**shape, **material)
    depth, pitch_speed = STARTS[start]
    b.joint_q[:] = [0.0, -math.asin(0.2 + depth)]
    b.joint_qd[:] = [3.0, pitch_speed]
    return b.finalize(device, requires_grad=True)


def final_joint_state(model, solver, place=None):
    """The joint coordinates and velocities after STEPS steps from the model's; `place()` first (it writes
    learned values into the model's arrays on the tape)."""
    if place is not None:
        place()
    state = model.state()
    state.joint_q, state.joint_qd = model.joint_q, model.joint_qd
    final, _ = rollout(model, solver, STEPS, DT, state=state)
    return final.joint_q, final.joint_qd


def scalars(array):
    """One-element views of the entries of a float array: gradcheck reports each apart."""
    return [array[i:i + 1] for i in range(array.shape[0])]


def check(fn, inputs, *, eps, atol, rtol=2e-2):
    """gradcheck `fn` over one-element `inputs` and require some gradient well above `atol` (a check that
    compares zeros would pass whatever the tape did); returns the tape's gradients."""
    report = gradcheck(fn, inputs, eps=eps, atol=atol, rtol=rtol)
    tape = np.array([row[4] for row in report.rows])
    assert np.abs(tape).max() > 10 * atol, str(report)
    return tape


# ---------------------------------------------------------------------------------------------------------------
# Initial joint coordinates


@pytest.mark.parametrize("start", list(STARTS))
def test_initial_joint_q_gradient_with_ground_contact(device, start):
    """The final joint state differentiated with respect to the initial yaw and pitch of the arm sliding on (or
    landing on it after 16 ms and then sliding on) the ground. Well conditioned, unlike
    tests/test_sim_articulation.py's arm_over_the_ground on the default ke = 1e5, where a shift of the touchdown
    by eps / (0.6 rad/s), a step for eps = 1e-3, is a sixth of that contact's period, and the final state curves
    within eps: here the soft contact's period (>= 70 ms) spans 35 steps; once in, the sphere stays >= 5 mm deep
    (no contact starts or ends within the finite differences' steps, 0.3-1 mm at the sphere); it slides at
    1-3 m/s, far above friction's regularisation speed (mu fn / kf ~ 2.5 cm/s), without stopping. The finite
    differences at two steps agree to 1 % before they are compared with the tape."""
    model = sliding_arm(device, start=start, material=GENTLE)
    solver = sim.SolverFeatherstone(model)

    def fn(*_):
        return final_joint_state(model, solver)

    coordinates = scalars(model.joint_q)
    coarse, fine = (gradcheck(fn, coordinates, eps=eps, atol=1e-3, rtol=2e-2, raise_on_fail=False)
                    for eps in (1e-3, 3e-4))
    np.testing.assert_allclose([row[5] for row in coarse.rows], [row[5] for row in fine.rows], rtol=1e-2,
                               atol=1e-3, err_msg="the finite differences are not stable")
    assert fine.passed, str(fine)
    assert abs(fine.rows[1][4]) > 0.1, str(fine)  # the pitch matters (through the normal force, hence friction)


# ---------------------------------------------------------------------------------------------------------------
# Contact materials and collider geometry (sim optimize's bodies.N.material.*, colliders.N.*)


@pytest.mark.parametrize("key", list(SOFT))
def test_contact_material_gradient(device, key):
    """The arm landing on the ground and sliding on: the final joint state differentiated with respect to the
    link's shape's and the ground's material value `key` (a contact uses the mean of the two, so both get the
    same gradient). The materials do not move the moment of touchdown (the free fall before it decides that),
    so the contact damping's jump as it starts does not enter these finite differences."""
    model = sliding_arm(device, start="landing")
    solver = sim.SolverFeatherstone(model)
    values = getattr(model, f"shape_material_{key}")
    value = SOFT[key]

    def fn(*_):
        return final_joint_state(model, solver)

    # steps of 1 % of the value; atol 1e-4 per unit of relative change (ke's gradient is ~4e-6 per N/m)
    tape = check(fn, scalars(values), eps=1e-2 * value, atol=1e-4 / value)
    assert tape[0] == pytest.approx(tape[1], rel=1e-5)


def placed_collider(model):
    """(position [m], scale [m]) of the collider (shape 1) as float arrays of 3 with gradients, and place(),
    which writes them into Model.shape_transform and Model.shape_scale with the kernels that sim optimize's
    colliders.N.{pos,radius,half_extents,half_height} use."""
    device = model.device
    pose = model.shape_transform.numpy()[1]
    position = wp.array(pose[:3].copy(), dtype=float, device=device, requires_grad=True)
    scale = wp.array(model.shape_scale.numpy()[1].copy(), dtype=float, device=device, requires_grad=True)
    rotation = wp.array(pose[3:].reshape(1, 4).copy(), dtype=wp.quat, device=device)
    first = wp.zeros(1, dtype=wp.int32, device=device)
    row = wp.array(np.array([1], np.int32), dtype=wp.int32, device=device)

    def place():
        wp.launch(assign_position, dim=1, inputs=[position, first, row, rotation], outputs=[model.shape_transform],
                  device=device)
        wp.launch(assign_vec3, dim=1, inputs=[scale, first, row], outputs=[model.shape_scale], device=device)

    return position, scale, place


# the scale components each collider reads: sphere radius; box half extents (the top: y); capsule radius, half height
SIZES = {"sphere": [0], "box": [1], "capsule": [0, 1]}


@pytest.mark.parametrize("collider", list(SIZES))
def test_collider_geometry_gradient(device, collider):
    """The arm sliding on a collider's top: the final joint state differentiated with respect to the collider's
    position and size. Steps of 0.3 mm, well inside the contact's depth (>= 4 mm while it slides): no contact
    starts or ends within them."""
    model = sliding_arm(device, collider)
    solver = sim.SolverFeatherstone(model)
    position, scale, place = placed_collider(model)

    def fn(*_):
        return final_joint_state(model, solver, place)

    tape = check(fn, scalars(position) + scalars(scale), eps=3e-4, atol=1e-3)
    assert abs(tape[1]) > 0.1  # raising the collider matters
    assert all(abs(tape[3 + i]) > 0.1 for i in SIZES[collider])  # and so do its sizes


@pytest.mark.parametrize("collider", list(SIZES))
def test_a_collider_grown_after_building_collides_as_if_built_so(device, collider):
    """sim optimize writes a learned size into Model.shape_scale: the contacts see it, not the bounding sphere of
    the shape as built (Model.shape_bounding_radius, which stays). The arm's sphere 3 cm above the top (out of
    reach of the built collider's bounding sphere and the contact margin), the collider grown by 5 cm: the joint
    accelerations equal those of a model built with the grown collider (the sphere 2 cm deep)."""
    def arm(grow):
        method, shape = COLLIDERS[collider]
        keys = {"sphere": ["radius"], "box": ["hy"], "capsule": ["radius", "half_height"]}[collider]
        COLLIDERS[collider] = (method, {**shape, **{key: shape[key] + grow for key in keys}})
        try:
            model = sliding_arm(device, collider)
        finally:
            COLLIDERS[collider] = (method, shape)
        q = model.joint_q.numpy()  # a copy on a GPU: assigned back
        q[1] = -math.asin(0.2 - 0.03)
        model.joint_q.assign(q)
        return model

    def accelerations(model):
        return sim.SolverFeatherstone(model).eval_joint_accelerations(model, model.state(), None).numpy()

    built, grown = arm(0.05), arm(0.0)
    scale = grown.shape_scale.numpy()
    scale[1, SIZES[collider]] += 0.05
    grown.shape_scale.assign(scale)  # on the CPU `scale` is the array's memory; on a GPU a copy
    np.testing.assert_allclose(scale[1], built.shape_scale.numpy()[1], rtol=1e-6)
    assert grown.shape_bounding_radius.numpy()[1] < built.shape_bounding_radius.numpy()[1]
    assert accelerations(built)[1] > 100.0  # pushed up hard: 2 cm deep
    np.testing.assert_allclose(accelerations(grown), accelerations(built), rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# sim optimize


def test_sim_optimize_learns_a_collider_friction_under_featherstone(tmp_path):
    """`sim optimize` on a jointed scene (SolverFeatherstone): the arm sliding round on a sphere collider for
    4 frames ends where friction mu = 0.5 puts it; learning the collider's mu from 0.3 against that end point
    brings it back to 0.5."""
    from test_param_table import sliding_arm_scene

    from sim.scene import Scene
    scene = sliding_arm_scene("sphere")
    built = Scene.from_string(yaml.safe_dump(scene)).build("cpu", requires_grad=True)  # as sim optimize does
    state, scratch = built.model.state(), built.model.state()
    for frame in range(1, scene["sim"]["frames"] + 1):
        state, scratch = built.step_frame(state, scratch, frame)
    pose = state.body_q.numpy()[0].astype(float)
    target = (pose[:3] + quat_to_matrix(pose[3:]) @ built.model.body_com.numpy()[0]).tolist()
    config = {"scene": scene, "parameters": [{"path": "colliders.0.material.mu", "init": 0.3, "log": True}],
              "loss": [{"type": "com_target", "object": "arm", "target": target, "weight": 1e4}],
              "optimizer": {"type": "sgd", "lr": 10.0}, "iterations": 8}
    path = tmp_path / "friction.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["optimize", str(path), "--out-dir", str(tmp_path / "out"), "--quiet"]) == 0
    learned = yaml.safe_load((tmp_path / "out" / "params.yaml").read_text())
    assert learned["colliders"][0]["material"]["mu"] == pytest.approx(0.5, rel=0.05)
