"""Importers, D6 joints and visual meshes: an MJCF body with several joints becomes one D6 joint that follows
MuJoCo and equals the builder's; a URDF planar joint is a D6 joint that keeps its body in the plane; a USD
generic PhysicsJoint is a D6 joint with its free axes, limits and drives (and revolute/prismatic drives and
limits in stage units); URDF visual meshes reach the USD output of a scene under their moving link."""

import math
import warnings

import numpy as np
import pytest

import sim
from _sim_rollout import rollout
from sim import ImporterError, import_urdf, import_usd_physics
from sim.joints import JOINT_LIMIT_UNLIMITED, JointDofConfig


def joint_arrays_equal(a, b, names=("joint_type", "joint_parent", "joint_child", "joint_X_p", "joint_X_c",
                                    "joint_axis", "joint_dof_dim", "joint_q", "joint_limit_lower",
                                    "joint_limit_upper", "joint_damping", "joint_armature", "joint_friction",
                                    "joint_target_ke", "joint_target_kd", "joint_effort_limit", "body_mass",
                                    "body_com", "body_inertia")):
    for name in names:
        np.testing.assert_allclose(getattr(a, name).numpy(), getattr(b, name).numpy(), atol=1e-6, err_msg=name)


# ---------------------------------------------------------------------------------------------------------------
# MJCF: several joints on one body

GIMBAL = """<mujoco model="gimbal">
  <compiler angle="radian"/>
  <option timestep="0.001" integrator="Euler" gravity="0 0 -9.81">
    <flag contact="disable" eulerdamp="disable"/>
  </option>
  <worldbody>
    <body name="arm" pos="0 0 1" euler="0 0 0.5">
      <joint name="yaw" type="hinge" axis="0 0 1" pos="0 0 0.1" damping="0.02" armature="0.01" range="-3 3"/>
      <joint name="pitch" type="hinge" axis="0 1 0" pos="0 0 0.1" damping="0.01" frictionloss="0.5"/>
      <inertial pos="0.3 0.05 -0.1" mass="1" diaginertia="0.02 0.03 0.04"/>
      <body name="tip" pos="0.5 0 0">
        <joint name="slide" type="slide" axis="1 0 0" pos="0.2 0 0" armature="0.05" damping="0.1" range="-0.5 4"/>
        <joint name="roll" type="hinge" axis="1 0 0" pos="0 0 0.05"/>
        <inertial pos="0.05 0.02 -0.05" mass="0.3" diaginertia="0.002 0.003 0.004"/>
      </body>
    </body>
  </worldbody>
  {actuator}
</mujoco>"""
GIMBAL_Q0 = (0.3, 0.5, 0.05, 0.2)  # yaw, pitch [rad], slide [m], roll [rad]: MuJoCo's qpos order and ours
GIMBAL_QD0 = (1.0, 0.0, 0.0, 0.0)
HOLD_PITCH = '<actuator><position joint="pitch" kp="4" kv="0.5" forcerange="-2 2"/></actuator>'


def gimbal_by_hand():
    """The GIMBAL mechanism with the builder API: two D6 joints, axes in MJCF's order."""
    b = sim.ModelBuilder(up_axis="z")
    s, c = math.sin(0.25), math.cos(0.25)
    arm = b.add_body(mass=1.0, com=(0.3, 0.05, -0.1), inertia=np.diag([0.02, 0.03, 0.04]))
    tip = b.add_body(mass=0.3, com=(0.05, 0.02, -0.05), inertia=np.diag([0.002, 0.003, 0.004]))
    limits = dict(limit_ke=1.0e4, limit_kd=10.0)
    yaw = JointDofConfig(axis=(0, 0, 1), damping=0.02, armature=0.01, limit_lower=-3, limit_upper=3, **limits)
    pitch = JointDofConfig(axis=(0, 1, 0), damping=0.01, friction=0.5, target_ke=4.0, target_kd=0.5,
                           effort_limit=2.0, **limits)
    b.add_joint_d6(-1, arm, angular_axes=[yaw, pitch], parent_xform=(0, 0, 1.1, 0, 0, s, c),
                   child_xform=(0, 0, 0.1, 0, 0, 0, 1))
    slide = JointDofConfig(axis=(1, 0, 0), damping=0.1, armature=0.05, limit_lower=-0.5, limit_upper=4, **limits)
    b.add_joint_d6(arm, tip, linear_axes=[slide], angular_axes=[JointDofConfig(axis=(1, 0, 0), **limits)],
                   parent_xform=(0.5, 0, 0.05, 0, 0, 0, 1), child_xform=(0, 0, 0.05, 0, 0, 0, 1))
    return b


def test_mjcf_body_with_several_joints_follows_mujoco():
    mujoco = pytest.importorskip("mujoco", reason="mujoco (a test extra) is not installed")
    # frictionloss is a constraint in MuJoCo; stored, not simulated, by SolverFeatherstone
    xml = GIMBAL.replace("{actuator}", "").replace(' frictionloss="0.5"', "")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = GIMBAL_Q0, GIMBAL_QD0
    dt, steps = 1e-3, 1000
    reference = [d.qpos.copy()]
    for _ in range(steps):
        mujoco.mj_step(m, d)
        reference.append(d.qpos.copy())
    reference = np.array(reference)

    b = sim.ModelBuilder(up_axis="z")
    with pytest.warns(sim.ImportWarning):
        result = sim.import_mjcf(xml, b)
    assert result.joint == {"yaw_pitch": 0, "slide_roll": 1}
    assert result.dof == {"yaw": 0, "pitch": 1, "slide": 2, "roll": 3}
    b.joint_q[:], b.joint_qd[:] = GIMBAL_Q0, GIMBAL_QD0
    model = b.finalize("cpu")
    assert list(model.joint_type.numpy()) == [sim.JOINT_D6, sim.JOINT_D6]
    _, states = rollout(model, sim.SolverFeatherstone(model, contacts=False), steps, dt, every=1)
    ours = np.array([s.joint_q.numpy() for s in states])
    error = np.abs(ours - reference).max(axis=0)
    print(f"gimbal: max |q - qpos| over 1 s per coordinate: {np.array2string(error, precision=1)}")
    assert (np.ptp(reference, axis=0) > 0.3).all()  # every axis moved
    assert error.max() < 1e-4


def test_mjcf_body_with_several_joints_equals_the_builder():
    pytest.importorskip("mujoco", reason="mujoco (a test extra) is not installed")
    b = sim.ModelBuilder(up_axis="z")
    with pytest.warns(sim.ImportWarning):
        sim.import_mjcf(GIMBAL.replace("{actuator}", HOLD_PITCH), b)
    joint_arrays_equal(b.finalize("cpu"), gimbal_by_hand().finalize("cpu"))


@pytest.mark.parametrize("joints, message", [
    ('<joint name="h" type="hinge" axis="0 0 1"/><joint name="s" type="slide" axis="1 0 0"/>',
     "<string>: joint 's' of body 'b': a slide after the hinge 'h' on one body moves along the turned axis, which "
     "a D6 joint (linear axes first, then angular ones) cannot express; write the slides before the hinges"),
    ('<joint name="h1" type="hinge" axis="0 0 1"/><joint name="h2" type="hinge" axis="0 1 0" pos="0 0 0.5"/>',
     "<string>: joint 'h2' of body 'b': hinges at different positions on one body ('h1' at (0.0, 0.0, 0.0), this "
     "one at (0.0, 0.0, 0.5)) are not supported: a D6 joint turns about one point"),
    ('<joint name="h" type="hinge"/><joint name="knob" type="ball"/>',
     "<string>: joint 'knob' of body 'b': a ball joint together with other joints on one body is not supported "
     "(joints ['h', 'knob']; several hinges and slides become one D6 joint)"),
    ('<joint name="s" type="slide" ref="0.1"/><joint name="h" type="hinge"/>',
     "<string>: joint 's' of body 'b': ref = 0.1 is not supported"),
    ("".join(f'<joint name="h{k}" type="hinge" axis="{k % 2} 1 0"/>' for k in range(4)),
     "<string>: body 'b': 0 slides and 4 hinges on one body: a D6 joint has at most 3 of each"),
])
def test_mjcf_joints_a_d6_joint_cannot_express_are_refused(joints, message):
    pytest.importorskip("mujoco", reason="mujoco (a test extra) is not installed")
    xml = f"""<mujoco><worldbody><body name="b" pos="0 0 1">{joints}
      <inertial pos="0 0 -0.1" mass="1" diaginertia="0.1 0.1 0.1"/></body></worldbody></mujoco>"""
    with pytest.raises(ImporterError) as caught:
        sim.import_mjcf(xml, sim.ModelBuilder(up_axis="z"))
    assert str(caught.value).startswith(message)


# ---------------------------------------------------------------------------------------------------------------
# URDF: planar joints

PLANAR_URDF = """<robot name="puck">
  <link name="world"/>
  <joint name="slide_plane" type="planar">
    <parent link="world"/><child link="puck"/>
    <origin xyz="0 0.5 2"/><axis xyz="0 1 0"/>
    <limit effort="30" lower="-1" upper="1"/>
    <dynamics damping="{damping}"/>
  </joint>
  <link name="puck">
    <inertial><origin xyz="0.2 0 0.1"/><mass value="2"/><inertia ixx="0.01" iyy="0.02" izz="0.03"/></inertial>
  </link>
</robot>"""


def test_urdf_planar_joint_is_a_d6_joint_in_the_plane_normal_to_its_axis():
    b = sim.ModelBuilder(up_axis="z")
    with pytest.warns(sim.ImportWarning, match="lower/upper limits of a planar joint not imported"):
        result = import_urdf(PLANAR_URDF.format(damping=0.3), b)
    model = b.finalize("cpu")
    assert result.joint == {"slide_plane": 0} and list(model.joint_type.numpy()) == [sim.JOINT_D6]
    np.testing.assert_array_equal(model.joint_dof_dim.numpy(), [[2, 1]])
    # (u, v, axis) right-handed, u the coordinate axis least aligned with the axis (x before z)
    np.testing.assert_allclose(model.joint_axis.numpy(), [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-12)
    np.testing.assert_allclose(model.joint_damping.numpy(), [0.3] * 3, rtol=1e-6)
    np.testing.assert_allclose(model.joint_effort_limit.numpy(), [30] * 3)
    np.testing.assert_allclose(model.joint_limit_lower.numpy(), -JOINT_LIMIT_UNLIMITED, rtol=1e-6)
    np.testing.assert_allclose(model.joint_X_p.numpy(), [[0, 0.5, 2, 0, 0, 0, 1]])


def test_urdf_planar_joint_falls_freely_in_its_plane_and_never_leaves_it():
    """Gravity lies in the plane: the centre of mass falls as a free body's, the spin stays constant, and the
    body keeps its plane (y) and its orientation about the other axes."""
    b = sim.ModelBuilder(up_axis="z")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sim.ImportWarning)
        import_urdf(PLANAR_URDF.format(damping=0.0), b)
    b.joint_q[:] = [0.1, -0.2, 0.4]      # along x, along -z [m], about y [rad]
    b.joint_qd[:] = [0.5, -1.0, 2.0]
    model = b.finalize("cpu")
    start = model.state()
    sim.eval_fk(model, model.joint_q, model.joint_qd, start)
    com = model.body_com.numpy()[0]

    def world_com(state):
        q = state.body_q.numpy()[0]
        return q[:3] + sim.spatial.quat_rotate(q[3:], com)

    c0, v0, w0 = world_com(start), start.body_qd.numpy()[0, 3:], start.body_qd.numpy()[0, :3]
    np.testing.assert_allclose(w0, [0, 2.0, 0], atol=1e-6)
    dt, steps = 1e-3, 500
    _, states = rollout(model, sim.SolverFeatherstone(model), steps, dt, state=start, every=100)
    for k, s in enumerate(states):
        t = k * 100 * dt
        expected = c0 + v0 * t + 0.5 * np.array([0, 0, -9.81]) * t * t
        np.testing.assert_allclose(world_com(s), expected, atol=3e-3)  # semi-implicit Euler: O(g t dt)
        q = s.body_q.numpy()[0]
        assert abs(world_com(s)[1] - 0.5) < 1e-6                      # in the plane y = 0.5
        np.testing.assert_allclose(q[[3, 5]], 0.0, atol=1e-6)         # turned about y only
        np.testing.assert_allclose(s.joint_q.numpy()[2], 0.4 + 2.0 * t, atol=1e-4)
    assert c0[2] - world_com(states[-1])[2] > 0.9  # it fell


# ---------------------------------------------------------------------------------------------------------------
# USD Physics: generic PhysicsJoint (D6), drives and limits in stage units

CM, HALF_KG = 0.01, 0.5  # the stage's metersPerUnit and kilogramsPerUnit
D6_POSE = (0.3, math.radians(20.0))  # [m], [rad]: the authored pose along transX and about rotZ


def _about(axis, angle):
    q = np.zeros(4)
    q["xyz".index(axis)], q[3] = math.sin(angle / 2), math.cos(angle / 2)
    return q


def usd_stage(body_pose=(0.0, 0.0, 1.0), body_rot=(0.0, 0.0, 0.0, 1.0)):
    """An in-memory z-up stage in centimetres and half kilograms with one rigid body `/World/body` (1 kg, in
    SI) at `body_pose` [m]; returns (stage, body prim)."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, CM)
    UsdPhysics.SetStageKilogramsPerUnit(stage, HALF_KG)
    UsdGeom.Xform.Define(stage, "/World")
    body = UsdGeom.Xform.Define(stage, "/World/body")
    body.AddTranslateOp().Set(Gf.Vec3d(*(np.asarray(body_pose) / CM)))
    x, y, z, w = (float(v) for v in body_rot)
    body.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, Gf.Vec3d(x, y, z)))
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    mass = UsdPhysics.MassAPI.Apply(body.GetPrim())
    mass.CreateMassAttr(1.0 / HALF_KG)
    mass.CreateCenterOfMassAttr(Gf.Vec3f(0.0, 10.0, 0.0))  # 0.1 m along y
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.02, 0.03) / (HALF_KG * CM * CM))
    return stage, body.GetPrim()


def world_joint(stage, schema, path="/World/joint"):
    """A joint of type `schema` from the world frame at (0, 0, 1) m to the body's origin."""
    from pxr import Gf
    joint = schema.Define(stage, path)
    joint.CreateBody1Rel().SetTargets(["/World/body"])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0.0, 0.0, 1.0 / CM))
    joint.CreateLocalPos1Attr(Gf.Vec3f(0.0))
    return joint


def limit(prim, token, low, high):
    from pxr import UsdPhysics
    api = UsdPhysics.LimitAPI.Apply(prim, token)
    api.CreateLowAttr(low)
    api.CreateHighAttr(high)


def drive(prim, token, **values):
    from pxr import UsdPhysics
    api = UsdPhysics.DriveAPI.Apply(prim, token)
    for name, value in values.items():
        getattr(api, f"Create{name[0].upper()}{name[1:]}Attr")(value)


def d6_stage():
    """A generic joint with transX (limited, driven) and rotZ (limited, driven) free, the others locked; the
    body at D6_POSE. Stage values: centimetres, degrees, half kilograms."""
    from pxr import UsdPhysics
    x, angle = D6_POSE
    stage, _ = usd_stage(body_pose=(x, 0.0, 1.0), body_rot=_about("z", angle))
    prim = world_joint(stage, UsdPhysics.Joint).GetPrim()
    limit(prim, "transX", -50.0, 80.0)
    for token in ("transY", "transZ", "rotX"):
        limit(prim, token, 1.0, -1.0)
    limit(prim, "rotY", math.inf, -math.inf)
    limit(prim, "rotZ", -90.0, 45.0)
    force = HALF_KG * CM  # N per stage force unit
    drive(prim, "transX", stiffness=20.0 * CM / force, damping=3.0 * CM / force, targetPosition=10.0,
          targetVelocity=5.0, maxForce=7.0 / force)
    torque_per_degree = force * CM * 180.0 / math.pi  # N m / rad per stage torque unit per degree
    drive(prim, "rotZ", stiffness=2.0 / torque_per_degree, damping=0.2 / torque_per_degree,
          targetPosition=30.0, maxForce=1.5 / (force * CM))
    return stage


def d6_by_hand():
    b = sim.ModelBuilder(up_axis="z")
    body = b.add_body(mass=1.0, com=(0, 0.1, 0), inertia=np.diag([0.01, 0.02, 0.03]))
    limits = dict(limit_ke=1.0e4, limit_kd=10.0)
    x = JointDofConfig(axis=(1, 0, 0), limit_lower=-0.5, limit_upper=0.8, target_ke=20.0, target_kd=3.0,
                       target_pos=0.1, target_vel=0.05, effort_limit=7.0, **limits)
    z = JointDofConfig(axis=(0, 0, 1), limit_lower=-math.pi / 2, limit_upper=math.pi / 4, target_ke=2.0,
                       target_kd=0.2, target_pos=math.radians(30.0), effort_limit=1.5, **limits)
    b.add_joint_d6(-1, body, linear_axes=[x], angular_axes=[z], parent_xform=(0, 0, 1, 0, 0, 0, 1))
    b.joint_q[:] = D6_POSE
    return b.finalize("cpu")


def test_usd_generic_joint_is_a_d6_joint_of_its_free_axes_with_limits_and_drives():
    pytest.importorskip("pxr", reason="usd-core is not installed")
    b = sim.ModelBuilder(up_axis="z")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every limit and drive was read
        result = import_usd_physics(d6_stage(), b)
    assert result.joint == {"/World/joint": 0}
    np.testing.assert_allclose(b.joint_q, D6_POSE, atol=1e-6)  # from the authored pose
    model, reference = b.finalize("cpu"), d6_by_hand()
    assert list(model.joint_type.numpy()) == [sim.JOINT_D6]
    joint_arrays_equal(model, reference, names=("joint_dof_dim", "joint_axis", "joint_X_p", "joint_X_c",
                                                "joint_limit_lower", "joint_limit_upper", "joint_target_ke",
                                                "joint_target_kd", "joint_target_pos", "joint_target_vel",
                                                "joint_effort_limit", "body_mass", "body_com", "body_inertia"))
    trajectories = []
    for m in (model, reference):
        _, states = rollout(m, sim.SolverFeatherstone(m), 300, 1e-3, every=50)
        trajectories.append(np.array([s.joint_q.numpy() for s in states]))
    assert np.ptp(trajectories[1], axis=0).min() > 0.01  # both axes moved
    np.testing.assert_allclose(trajectories[0], trajectories[1], atol=1e-5)


def test_usd_generic_joint_angles_of_a_rotated_pose_and_locked_and_distance_limits():
    pytest.importorskip("pxr", reason="usd-core is not installed")
    from pxr import UsdPhysics
    angles = (0.3, -0.5, 1.1)
    rot = sim.spatial.quat_multiply(_about("x", angles[0]), sim.spatial.quat_multiply(
        _about("y", angles[1]), _about("z", angles[2])))  # intrinsic X, then Y, then Z
    stage, _ = usd_stage(body_rot=rot)
    prim = world_joint(stage, UsdPhysics.Joint).GetPrim()
    for token in ("transX", "transY", "transZ"):
        limit(prim, token, 1.0, -1.0)
    limit(prim, "distance", 0.0, 10.0)
    b = sim.ModelBuilder(up_axis="z")
    with pytest.warns(sim.ImportWarning):
        result = import_usd_physics(stage, b)
    assert result.ignored == ["prim </World/joint>: applied schemas ['PhysicsLimitAPI:distance']; attributes "
                              "['limit:distance:physics:high', 'limit:distance:physics:low']"]
    assert b.joint_dof_dim == [(0, 3)]
    np.testing.assert_allclose(b.joint_axis, np.eye(3))
    np.testing.assert_allclose(b.joint_q, angles, atol=1e-6)
    stage, _ = usd_stage()
    prim = world_joint(stage, UsdPhysics.Joint).GetPrim()
    for token in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ"):
        limit(prim, token, 1.0, -1.0)
    b = sim.ModelBuilder(up_axis="z")
    import_usd_physics(stage, b)
    assert b.joint_type == [sim.JOINT_FIXED]  # every axis locked


def test_d6_coordinates_recover_intrinsic_angles_of_any_orthonormal_axes():
    from sim.importers.assembly import d6_coordinates
    axes = [(1, 0, 0), (0, 0, 1), (0, 1, 0)]  # a left-handed order
    angles = (0.4, -0.7, 1.2)
    rot = np.array([0.0, 0.0, 0.0, 1.0])
    for a, angle in zip(axes, angles):
        rot = sim.spatial.quat_multiply(rot, np.concatenate([np.sin(angle / 2) * np.asarray(a, float),
                                                                [np.cos(angle / 2)]]))
    rel = np.concatenate([[0.2, -0.1, 0.3], rot])
    q = d6_coordinates([(0, 1, 0), (1, 1, 0)], axes, rel)  # in the plane z = 0: the z offset is left out
    np.testing.assert_allclose(q, [-0.3, 0.2 * math.sqrt(2), *angles], atol=1e-9)  # along the unit axes
    with pytest.raises(ValueError, match="non-orthogonal angular axes"):
        d6_coordinates([], [(1, 0, 0), (1, 1, 0)], rel)


def test_usd_prismatic_and_revolute_drives_and_limits_in_stage_units():
    pytest.importorskip("pxr", reason="usd-core is not installed")
    from pxr import UsdPhysics
    force = HALF_KG * CM  # N per stage force unit
    for schema, instance, si in ((UsdPhysics.PrismaticJoint, "linear", CM),
                                 (UsdPhysics.RevoluteJoint, "angular", math.pi / 180.0)):
        stage, _ = usd_stage()
        joint = world_joint(stage, schema)
        joint.CreateAxisAttr("Y")
        joint.CreateLowerLimitAttr(-30.0)
        joint.CreateUpperLimitAttr(60.0)
        effort = force * (CM if instance == "angular" else 1.0)  # N or N m per stage unit
        drive(joint.GetPrim(), instance, stiffness=8.0, damping=0.5, targetPosition=12.0, targetVelocity=-4.0,
              maxForce=100.0, type="force")
        b = sim.ModelBuilder(up_axis="z")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            import_usd_physics(stage, b)
        (config,) = b.joint_dof_config
        assert config.axis == (0.0, 1.0, 0.0)
        expected = dict(limit_lower=-30.0 * si, limit_upper=60.0 * si, target_ke=8.0 * effort / si,
                        target_kd=0.5 * effort / si, target_pos=12.0 * si, target_vel=-4.0 * si,
                        effort_limit=100.0 * effort)
        for name, value in expected.items():
            assert getattr(config, name) == pytest.approx(value, rel=1e-6), (instance, name)


# ---------------------------------------------------------------------------------------------------------------
# URDF visual meshes in the USD output of a scene

# a unit cube's 8 corners and 6 quads
CUBE_OBJ = "\n".join(["# unit cube"] + [f"v {x} {y} {z}" for x in (0, 1) for y in (0, 1) for z in (0, 1)] +
                     ["f 1 2 4 3", "f 5 7 8 6", "f 1 5 6 2", "f 3 4 8 7", "f 1 3 7 5", "f 2 6 8 4"]) + "\n"

SWING_URDF = """<robot name="swing">
  <link name="world"/>
  <joint name="hinge" type="continuous">
    <parent link="world"/><child link="rod"/>
    <origin xyz="0 0 2"/><axis xyz="0 1 0"/>
  </joint>
  <link name="rod">
    <inertial><origin xyz="0.5 0 0"/><mass value="1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3"/></inertial>
    <visual>
      <origin xyz="0.5 0 0" rpy="0 0 1.5707963267948966"/>
      <geometry>
        <mesh filename="{mesh}" scale="0.2 0.1 0.05"/>
      </geometry>
    </visual>
    <visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual>
  </link>
</robot>
"""

SWING_SCENE = """sim: {fps: 30, frames: 6, up_axis: z}
robot: {urdf: swing.urdf}
"""


def swing_files(tmp_path, mesh="meshes/cube.obj"):
    (tmp_path / "meshes").mkdir(exist_ok=True)
    (tmp_path / "meshes" / "cube.obj").write_text(CUBE_OBJ)
    (tmp_path / "swing.urdf").write_text(SWING_URDF.replace("{mesh}", mesh))
    scene = tmp_path / "swing.yaml"
    scene.write_text(SWING_SCENE)
    return scene


def test_urdf_visual_mesh_is_written_under_its_moving_link(tmp_path, capsys):
    from pxr import Gf, Usd, UsdGeom
    from sim.cli import main
    scene, out = swing_files(tmp_path), tmp_path / "swing.usda"
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 0
    stage = Usd.Stage.Open(str(out))
    link = stage.GetPrimAtPath("/World/rod")
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/rod/visual_0"))
    assert link.IsA(UsdGeom.Xform) and mesh, [c.GetPath() for c in link.GetChildren()]
    assert len(mesh.GetPointsAttr().Get()) == 8 and list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * 12
    translate = link.GetAttribute("xformOp:translate")
    assert len(translate.GetTimeSamples()) == 7
    # the cube's far corner (1, 1, 1): scaled, turned 90 degrees about z, 0.5 m along the rod, rod at the hinge
    cache = UsdGeom.XformCache(Usd.TimeCode(0.0))
    corner = cache.GetLocalToWorldTransform(mesh.GetPrim()).Transform(Gf.Vec3d(1, 1, 1))
    np.testing.assert_allclose(corner, [0.5 - 0.1, 0.2, 2 + 0.05], atol=1e-5)
    moved = []
    for time in (0.0, 6.0):  # the mesh follows its link
        cache = UsdGeom.XformCache(Usd.TimeCode(time))
        to_link = cache.GetLocalToWorldTransform(link).GetInverse()
        local = to_link.Transform(cache.GetLocalToWorldTransform(mesh.GetPrim()).Transform(Gf.Vec3d(1, 1, 1)))
        np.testing.assert_allclose(local, [0.4, 0.2, 0.05], atol=1e-5)
        moved.append(np.array(cache.GetLocalToWorldTransform(mesh.GetPrim()).Transform(Gf.Vec3d(1, 1, 1))))
    assert np.linalg.norm(moved[1] - moved[0]) > 0.05  # the rod swung


def test_urdf_visual_usd_mesh_in_centimetres_is_written_in_metres(tmp_path):
    """A visual mesh from a USD file whose stage is in centimetres: its points come out in metres."""
    from pxr import Usd, UsdGeom
    from sim.cli import main
    from sim.mesh_io import load_mesh
    scene = swing_files(tmp_path, "meshes/cube.usda")
    cube, triangles = load_mesh(tmp_path / "meshes" / "cube.obj")
    source = Usd.Stage.CreateNew(str(tmp_path / "meshes" / "cube.usda"))
    UsdGeom.SetStageMetersPerUnit(source, 0.01)
    mesh = UsdGeom.Mesh.Define(source, "/cube")
    mesh.CreatePointsAttr([tuple(p) for p in cube * 100.0])  # 1 m as 100 cm
    mesh.CreateFaceVertexCountsAttr([3] * len(triangles))
    mesh.CreateFaceVertexIndicesAttr([int(i) for i in triangles.ravel()])
    source.Save()
    out = tmp_path / "swing.usda"
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 0
    stage = Usd.Stage.Open(str(out))
    written = UsdGeom.Mesh(stage.GetPrimAtPath("/World/rod/visual_0"))
    np.testing.assert_allclose(np.asarray(written.GetPointsAttr().Get()), cube, atol=1e-6)


def test_visual_mesh_in_a_format_not_read_is_left_out_with_a_warning(tmp_path):
    from sim.importers.visual_meshes import load_visual_meshes
    scene = swing_files(tmp_path, "meshes/cube.stl")
    (tmp_path / "meshes" / "cube.stl").write_bytes(b"\0" * 84)
    result = import_urdf(str(tmp_path / "swing.urdf"), sim.ModelBuilder(up_axis="z"))
    with pytest.warns(ImportWarning, match=r"swing.urdf:12: link 'rod': visual mesh 'meshes/cube.stl' is not "
                                           r"carried to the output: format '.stl' is not read"):
        assert load_visual_meshes(result) == []
    assert scene.exists()


@pytest.mark.parametrize("mesh, reason", [
    ("meshes/nothing.obj", "no file at {dir}/meshes/nothing.obj"),
    ("package://swing_description/meshes/nothing.obj", "not found (looked for it next to {dir} and in the folders "
                                                       "above it)"),
])
def test_unreadable_visual_mesh_is_refused_naming_the_urdf_line(tmp_path, capsys, mesh, reason):
    from sim.cli import main
    scene = swing_files(tmp_path, mesh)
    (tmp_path / "meshes" / "cube.stl").write_bytes(b"\0" * 84)
    assert main(["run", str(scene), "--out", str(tmp_path / "never.usda"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    expected = (f"error: {scene}:2: robot.urdf: cannot read the robot's visual meshes: {tmp_path}/swing.urdf:12: "
                f"link 'rod': visual mesh '{mesh}': " + reason.format(dir=tmp_path))
    assert err.startswith(expected), err
    assert not (tmp_path / "never.usda").exists()


def test_visual_mesh_paths_resolve_ros_packages_and_follow_collapsed_links(tmp_path):
    from sim.importers.visual_meshes import load_visual_meshes, resolve_mesh_path
    package = tmp_path / "ws" / "swing_description"
    (package / "meshes").mkdir(parents=True)
    (package / "meshes" / "cube.obj").write_text(CUBE_OBJ)
    (package / "urdf").mkdir()
    base = str(package / "urdf")
    target = str(package / "meshes" / "cube.obj")
    assert resolve_mesh_path("package://swing_description/meshes/cube.obj", base) == target
    assert resolve_mesh_path("file://../meshes/cube.obj", base) == target
    assert resolve_mesh_path(target, "/elsewhere") == target
    urdf = package / "urdf" / "two.urdf"
    urdf.write_text("""<robot name="two">
  <link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>
  <joint name="weld" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0 0 1" rpy="0 0 0.5"/></joint>
  <link name="b"><visual><origin xyz="1 0 0"/>
    <geometry><mesh filename="package://swing_description/meshes/cube.obj"/></geometry></visual></link>
</robot>""")
    result = import_urdf(str(urdf), sim.ModelBuilder(up_axis="z"), collapse_fixed_joints=True)
    (mesh,) = load_visual_meshes(result)
    assert mesh.link == "a" and mesh.filename == target and mesh.points.shape == (8, 3)
    np.testing.assert_allclose(mesh.xform[:3], [math.cos(0.5), math.sin(0.5), 1.0], atol=1e-12)
    np.testing.assert_allclose(mesh.xform[3:], [0, 0, math.sin(0.25), math.cos(0.25)], atol=1e-12)
