"""Importers: the shipped URDF arm's bodies, joints and limits; a URDF pendulum and a USD Physics double
pendulum simulated by SolverFeatherstone agree with the same mechanisms built with the builder API (in other
units and up axes too); errors name file, line and element; what is not imported is reported."""

import math
import os
import warnings

import numpy as np
import pytest

import sim
from _sim_rollout import rollout
from _usd_physics_files import DRIVE, HINGE, INERTIA, LENGTH, LIMIT, MASS, write_double_pendulum
from sim import ImporterError, ImportWarning, import_urdf, import_usd_physics

ARM = os.path.join(os.path.dirname(__file__), "..", "assets", "arm", "arm.urdf")

PENDULUM_URDF = """<robot name="pendulum">
  <link name="world"/>
  <joint name="hinge" type="continuous">
    <parent link="world"/><child link="bob"/>
    <origin xyz="0 0 2"/><axis xyz="0 1 0"/>
    <dynamics damping="0.05"/>
  </joint>
  <link name="bob">
    <inertial><origin xyz="0 0 -1"/><mass value="1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3"/></inertial>
  </link>
</robot>"""


def joint_trajectory(model, steps=300, dt=1e-3):
    _, states = rollout(model, sim.SolverFeatherstone(model), steps, dt, every=10)
    return np.array([s.joint_q.numpy() for s in states])


def urdf(tmp_path, body, name="robot.urdf"):
    path = tmp_path / name
    path.write_text(f'<robot name="r">\n{body}\n</robot>\n')
    return str(path)


# ---------------------------------------------------------------------------------------------------------------
# URDF


def test_arm_urdf_imports_its_bodies_joints_and_limits():
    b = sim.ModelBuilder(up_axis="z")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = import_urdf(ARM, b)
    assert list(result.body) == ["base", "shoulder", "upper_arm", "forearm", "hand", "tool"]
    assert list(result.joint) == ["fixed_base", "shoulder_yaw", "shoulder_pitch", "elbow", "wrist", "tool_joint"]
    assert result.velocity_limit == {"shoulder_yaw": 2.0, "shoulder_pitch": 2.0, "elbow": 2.5, "wrist": 3.0}
    assert [v.kind for v in result.visuals] == ["box", "box", "capsule", "capsule", "box", "sphere"]
    model = b.finalize("cpu")
    assert model.articulation_count == 1 and model.joint_dof_count == 4
    assert list(model.joint_type.numpy()) == [sim.JOINT_FIXED] + [sim.JOINT_REVOLUTE] * 4 + [sim.JOINT_FIXED]
    np.testing.assert_allclose(model.joint_limit_lower.numpy(), [-2.9, -2.0, -2.5, -2.0], rtol=1e-6)
    np.testing.assert_allclose(model.joint_limit_upper.numpy(), [2.9, 2.0, 2.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(model.joint_effort_limit.numpy(), [40, 40, 25, 8])
    np.testing.assert_allclose(model.joint_damping.numpy(), [0.1, 0.1, 0.1, 0.05], rtol=1e-6)
    np.testing.assert_allclose(model.joint_axis.numpy(), [[0, 0, 1], [0, 1, 0], [0, 1, 0], [0, 1, 0]])
    np.testing.assert_allclose(model.body_mass.numpy(), [2.0, 1.0, 1.2, 0.8, 0.3, 0.05], rtol=1e-6)
    np.testing.assert_allclose(model.body_com.numpy()[2], [0, 0, 0.15], rtol=1e-6)
    state = model.state()
    sim.eval_fk(model, model.joint_q, model.joint_qd, state)
    np.testing.assert_allclose(state.body_q.numpy()[:, 2], [0, 0.1, 0.2, 0.5, 0.75, 0.87], atol=1e-6)
    assert model.shape_count == 6


def test_arm_urdf_collapses_the_tool_into_the_hand_and_turns_onto_y_up():
    b = sim.ModelBuilder(up_axis="y")
    result = import_urdf(ARM, b, collapse_fixed_joints=True, xform=(1, 0, 0, 0, 0, 0, 1))
    assert result.body["tool"] == result.body["hand"] == 4 and "tool_joint" not in result.joint
    model = b.finalize("cpu")
    assert model.body_mass.numpy()[4] == pytest.approx(0.35)
    np.testing.assert_allclose(model.body_com.numpy()[4], [0, 0, (0.3 * 0.05 + 0.05 * 0.12) / 0.35], atol=1e-7)
    state = model.state()
    sim.eval_fk(model, model.joint_q, model.joint_qd, state)
    np.testing.assert_allclose(state.body_q.numpy()[4, :3], [1, 0.75, 0], atol=1e-6)  # z up became y up


@pytest.mark.parametrize("up_axis", ["z", "y"])
def test_urdf_pendulum_matches_the_builder_api(up_axis):
    b = sim.ModelBuilder(up_axis=up_axis)
    import_urdf(PENDULUM_URDF, b)
    b.joint_q[0] = 0.8
    reference = sim.ModelBuilder(up_axis=up_axis)
    down = -reference.up_vector
    body = reference.add_body(mass=1.0, com=down if up_axis == "y" else (0, 0, -1), inertia=np.eye(3) * 1e-3)
    axis = (0, 1, 0) if up_axis == "z" else (0, 0, -1)  # URDF's y after turning z up onto y up
    reference.add_joint_revolute(-1, body, axis=axis, parent_xform=tuple(-2 * down) + (0, 0, 0, 1), damping=0.05)
    reference.joint_q[0] = 0.8
    imported, built = joint_trajectory(b.finalize("cpu")), joint_trajectory(reference.finalize("cpu"))
    assert abs(imported[-1, 0] - 0.8) > 0.1  # it swung
    np.testing.assert_allclose(imported, built, atol=1e-5)


def test_urdf_inertial_is_rotated_into_the_link_frame_and_missing_inertial_uses_the_shapes():
    b = sim.ModelBuilder(up_axis="z")
    import_urdf("""<robot name="r"><link name="a">
      <inertial><origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/><mass value="2"/>
        <inertia ixx="1" iyy="2" izz="3"/></inertial></link>
      <link name="b"><collision><geometry><box size="0.2 0.4 0.6"/></geometry></collision></link>
      <joint name="j" type="prismatic"><parent link="a"/><child link="b"/><limit lower="-1" upper="1"/></joint>
    </robot>""", b, density=500.0)
    model = b.finalize("cpu")
    np.testing.assert_allclose(model.body_inertia.numpy()[0], np.diag([2, 1, 3]), atol=1e-6)
    np.testing.assert_allclose(model.body_com.numpy()[0], [0.1, 0, 0])
    assert model.body_mass.numpy()[1] == pytest.approx(500.0 * 0.2 * 0.4 * 0.6)  # as Newton: from the shapes


def test_urdf_errors_name_the_file_line_and_element(tmp_path):
    with pytest.raises(FileNotFoundError, match="URDF file not found: 'nowhere.urdf'"):
        import_urdf("nowhere.urdf", sim.ModelBuilder())
    cases = [
        ('<link name="a">\n<inertial>\n</link>', "{path}:4: malformed XML: mismatched tag"),
        ('<link name="a"/><link name="b"/>\n<joint name="j" type="screw"><parent link="a"/><child link="b"/></joint>',
         "{path}:3: joint 'j': unknown joint type 'screw'; expected one of revolute, continuous, prismatic, fixed, "
         "floating, planar"),
        ('<link name="a">\n<collision><geometry>\n<mesh filename="meshes/a.stl"/></geometry></collision></link>',
         "{path}:4: link 'a': mesh collision geometry 'meshes/a.stl' is not supported (collision shapes: box, "
         "sphere, capsule); replace it by primitives"),
        ('<link name="a">\n<collision><geometry><cylinder radius="0.1" length="1"/></geometry></collision></link>',
         "{path}:3: link 'a': cylinder collision geometry is not supported (no cylinder shape); pass "
         "cylinder_as_capsule=True to approximate it by a capsule"),
        ('<link name="a"/>\n<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>',
         "{path}:3: joint 'j': child link 'b' does not exist"),
        ('<link name="a">\n<inertial><origin xyz="0 1"/><mass value="1"/></inertial></link>',
         "{path}:3: link 'a': <origin xyz=...>: expected 3 finite numbers, got '0 1'"),
    ]
    for body, expected in cases:
        path = urdf(tmp_path, body)
        with pytest.raises(ImporterError) as info:
            import_urdf(path, sim.ModelBuilder())
        assert str(info.value) == expected.format(path=path)


def test_urdf_cylinder_as_capsule_keeps_radius_and_overall_length():
    b = sim.ModelBuilder(up_axis="z")
    import_urdf('<robot name="r"><link name="a"><collision><geometry><cylinder radius="0.1" length="1"/>'
                '</geometry></collision></link></robot>', b, cylinder_as_capsule=True)
    assert b.shape_type == [sim.SHAPE_CAPSULE]
    np.testing.assert_allclose(b.shape_scale[0][:2], [0.1, 0.4])
    np.testing.assert_allclose(sim.spatial.quat_rotate(b.shape_transform[0][3:], (0, 1, 0)), [0, 0, 1], atol=1e-12)


def test_urdf_reports_mimic_transmission_and_gazebo(tmp_path):
    path = urdf(tmp_path, """<link name="a"/><link name="b"/><link name="c"/>
<joint name="j1" type="revolute"><parent link="a"/><child link="b"/><limit lower="-1" upper="1"/></joint>
<joint name="j2" type="revolute"><parent link="b"/><child link="c"/>
  <mimic joint="j1" multiplier="2"/></joint>
<transmission name="t1"><joint name="j1"/></transmission>
<gazebo reference="a"/>""")
    with pytest.warns(ImportWarning) as record:
        result = import_urdf(path, sim.ModelBuilder())
    assert result.ignored == ["line 5: joint 'j2': <mimic> (mimic of joint 'j1') not imported",
                              "line 6: robot 'r': <transmission> 't1' element (not imported) for joints ['j1']",
                              "line 7: robot 'r': <gazebo> element (not imported)"]
    assert str(record[0].message) == f"{path}: not imported:\n  " + "\n  ".join(result.ignored)


# ---------------------------------------------------------------------------------------------------------------
# USD Physics


def double_pendulum(angles, up_axis="z"):
    """The USD test file's double pendulum with the builder API."""
    b = sim.ModelBuilder(up_axis=up_axis)
    parent, anchor = -1, tuple(HINGE)
    for k in range(2):
        body = b.add_body(mass=MASS[k], com=(0, 0, 0), inertia=np.diag(INERTIA[k]))
        dof = dict(limit_lower=LIMIT[0], limit_upper=LIMIT[1], **DRIVE) if k == 1 else {}
        b.add_joint_revolute(parent, body, axis=(0, 1, 0), parent_xform=anchor + (0, 0, 0, 1),
                             child_xform=(0, 0, LENGTH[k] / 2, 0, 0, 0, 1), **dof)
        parent, anchor = body, (0, 0, -LENGTH[k] / 2)
    b.joint_q[:] = angles
    return b.finalize("cpu")


@pytest.mark.parametrize("meters_per_unit, up_axis", [(1.0, "Z"), (0.01, "Y")])
def test_usd_double_pendulum_matches_the_builder_api(tmp_path, meters_per_unit, up_axis):
    angles = (0.6, -0.3)
    path = write_double_pendulum(tmp_path / "pendulum.usda", angles=angles, meters_per_unit=meters_per_unit,
                                 up_axis=up_axis)
    b = sim.ModelBuilder(up_axis="z")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = import_usd_physics(path, b)
    assert list(result.joint) == ["/World/pendulum/hinge1", "/World/pendulum/hinge2"]
    np.testing.assert_allclose(b.joint_q, angles, atol=1e-12)  # from the authored poses
    model = b.finalize("cpu")
    reference = double_pendulum(angles)
    for name in ("joint_target_ke", "joint_target_kd", "joint_target_pos", "joint_limit_lower", "body_inertia"):
        np.testing.assert_allclose(getattr(model, name).numpy(), getattr(reference, name).numpy(), rtol=1e-5)
    assert model.shape_count == 2 and b.shape_type == [sim.SHAPE_CAPSULE] * 2
    np.testing.assert_allclose(b.shape_scale[0][:2], [0.05, 0.45], rtol=1e-6)
    imported, built = joint_trajectory(model), joint_trajectory(reference)
    np.testing.assert_allclose(imported, built, atol=1e-5)


def test_usd_reports_what_it_does_not_import(tmp_path):
    path = write_double_pendulum(tmp_path / "pendulum.usda", extras=True)
    with pytest.warns(ImportWarning) as record:
        result = import_usd_physics(str(path), sim.ModelBuilder(up_axis="z", gravity=-3.0))
    assert result.ignored == [
        "prim </World/PhysicsScene>: gravity [0.0, 0.0, -9.81] m/s^2 (the builder's [0.0, 0.0, -3.0] is used)",
        "prim </World/pendulum/link2>: applied schemas ['PhysicsMaterialAPI']; attributes "
        "['physxRigidBody:contactOffset']",
        "prim </World/pendulum/hinge1>: attributes ['physics:breakForce']"]
    assert str(record[0].message).endswith("\n  ".join(result.ignored))


def test_usd_errors_name_the_prim(tmp_path):
    from pxr import Usd, UsdGeom, UsdPhysics
    with pytest.raises(FileNotFoundError, match="USD file not found: 'nowhere.usda'"):
        import_usd_physics("nowhere.usda", sim.ModelBuilder())
    bad = tmp_path / "bad.usda"
    bad.write_text('#usda 1.0\ndef Xform "a" {\n  float x = \n}\n')
    with pytest.raises(ImporterError) as info:
        import_usd_physics(str(bad), sim.ModelBuilder())
    assert str(info.value) == f"{bad}:3: malformed USD: Expected }} at 'float x = ' in </a>"
    path = str(write_double_pendulum(tmp_path / "mesh.usda"))
    stage = Usd.Stage.Open(path)
    UsdPhysics.CollisionAPI.Apply(UsdGeom.Mesh.Define(stage, "/World/pendulum/link1/hull").GetPrim())
    with pytest.raises(ImporterError) as info:
        import_usd_physics(stage, sim.ModelBuilder())
    assert str(info.value) == (f"{stage.GetRootLayer().identifier}: prim </World/pendulum/link1/hull>: mesh "
                               "colliders are not supported (collision shapes: Cube, Sphere, Capsule); replace the "
                               "mesh by primitives or remove its PhysicsCollisionAPI")
    stage = Usd.Stage.Open(str(write_double_pendulum(tmp_path / "distance.usda")))
    UsdPhysics.DistanceJoint.Define(stage, "/World/pendulum/rope")
    with pytest.raises(ImporterError, match=r"prim </World/pendulum/rope>: PhysicsDistanceJoint is not supported"):
        import_usd_physics(stage, sim.ModelBuilder())
    stage = Usd.Stage.Open(str(write_double_pendulum(tmp_path / "swapped.usda")))
    hinge = UsdPhysics.RevoluteJoint.Get(stage, "/World/pendulum/hinge1")
    hinge.GetBody0Rel().SetTargets(hinge.GetBody1Rel().GetTargets())
    hinge.GetBody1Rel().ClearTargets(True)
    with pytest.raises(ImporterError, match=r"hinge1>: physics:body1 must be a rigid body \(the joint's child\); "
                                            "swap body0 and body1 if the child is body0"):
        import_usd_physics(stage, sim.ModelBuilder())


def test_usd_unjointed_body_is_free_and_static_colliders_stay(tmp_path):
    from pxr import Gf, Usd, UsdGeom, UsdPhysics
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    ball = UsdGeom.Sphere.Define(stage, "/ball")
    ball.CreateRadiusAttr(0.5)
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 0, 3))
    UsdPhysics.RigidBodyAPI.Apply(ball.GetPrim())
    UsdPhysics.CollisionAPI.Apply(ball.GetPrim())
    floor = UsdGeom.Cube.Define(stage, "/floor")
    floor.AddScaleOp().Set(Gf.Vec3f(5, 5, 0.1))
    UsdPhysics.CollisionAPI.Apply(floor.GetPrim())
    b = sim.ModelBuilder(up_axis="z")
    result = import_usd_physics(stage, b, density=100.0)
    assert result.joint == {"floating_base": 0} and b.joint_type == [sim.JOINT_FREE]
    np.testing.assert_allclose(b.joint_q, [0, 0, 3, 0, 0, 0, 1])
    assert b.shape_body == [0, -1]
    np.testing.assert_allclose(b.shape_scale[1], [5, 5, 0.1])
    assert b.finalize("cpu").body_mass.numpy()[0] == pytest.approx(100.0 * 4 / 3 * math.pi * 0.125, rel=1e-6)
