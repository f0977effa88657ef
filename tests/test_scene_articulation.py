"""Articulated scenes (`joints`, `robot`): malformed ones refused with file:line: key and exit code 2, the
shipped scenes run and write their links as animated USD Xforms, joint control forces act as forces, and the
two articulation optimisation configs bring their loss down at a reduced size."""

from __future__ import annotations

import os

import numpy as np
import pytest

from sim.cli import main
from sim.optimization import load_config, optimize
from sim.scene import Scene, SceneError
from sim.spatial import quat_rotate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM = os.path.join(ROOT, "assets", "arm", "arm.urdf")

TWO_BODIES = """sim: {fps: 60, frames: 2}
bodies:
  - {name: a, shapes: [{type: box, half_extents: [0.1, 0.1, 0.1]}]}
  - {name: b, shapes: [{type: box, half_extents: [0.1, 0.1, 0.1]}]}
joints:
  - {type: revolute, child: a, axis: [0, 0, 1]}
"""
SECOND = "  - {type: fixed, parent: a, child: b}\n"

# (name, scene text, line, key path and message expected after "file:line: ")
MALFORMED = [
    ("no axis", TWO_BODIES.replace(", axis: [0, 0, 1]", "") + SECOND, 6,
     "joints[0]: missing required key 'axis'"),
    ("zero axis", TWO_BODIES.replace("[0, 0, 1]", "[0, 0, 0]") + SECOND, 6, "joints[0].axis: the axis must not be zero"),
    ("unknown type", TWO_BODIES + "  - {type: hinge, parent: a, child: b}\n", 7,
     "joints[1].type: expected one of revolute, prismatic, ball, fixed, free, d6, got 'hinge'"),
    ("unknown body", TWO_BODIES + "  - {type: fixed, parent: a, child: c}\n", 7,
     "joints[1].child: no body named 'c'"),
    ("unjointed body", TWO_BODIES, 4, "bodies[1]: body 'b' is the child of no joint"),
    ("key of another type", TWO_BODIES + "  - {type: ball, parent: a, child: b, axis: [1, 0, 0]}\n", 7,
     "joints[1].axis: a ball joint does not take `axis`"),
    ("ball q", TWO_BODIES + "  - {type: ball, parent: a, child: b, q: [1, 2]}\n", 7,
     "joints[1].q: expected a list of 4 numbers"),
    ("reversed limits", TWO_BODIES.replace("[0, 0, 1]}", "[0, 0, 1], limits: {lower: 1, upper: 0}}") + SECOND, 6,
     "joints[0].limits.upper: the upper limit 0 is below the lower limit 1"),
    ("force per axis", TWO_BODIES.replace("[0, 0, 1]}", "[0, 0, 1], forces: [1, [2, 3]]}") + SECOND, 6,
     "joints[0].forces[1]: expected a number, got [2, 3]"),
    ("d6 q", TWO_BODIES + "  - {type: d6, parent: a, child: b, angular_axes: [{axis: [1, 0, 0]}], q: [1, 2]}\n",
     7, "joints[1].q: expected a number, got [1, 2]"),
    ("loop", TWO_BODIES.replace("child: a,", "parent: b, child: a,") + SECOND, 6,
     "joints[0]: the joints holding a, b form a loop"),
    ("pose of a held body", TWO_BODIES.replace("{name: a,", "{name: a, pos: [0, 1, 0],") + SECOND, 3,
     "bodies[0].pos: body 'a' is held by the revolute joint joints[0]"),
    ("drive key", TWO_BODIES.replace("[0, 0, 1]}", "[0, 0, 1],\n     drive: {kp: 3}}") + SECOND, 7,
     "joints[0].drive.kp: unknown key"),
    ("robot file", "robot: {urdf: nowhere.urdf}\n", 1, "robot.urdf: file not found"),
    ("robot joint name", f"robot:\n  urdf: {ARM}\n  joints: {{elbo: {{q: 1}}}}\n", 3,
     "robot.joints.elbo: no joint named 'elbo' (did you mean 'elbow'?)"),
    ("robot option of the other format", f"robot: {{urdf: {ARM}, root_path: /arm}}\n", 1,
     "robot.root_path: `root_path` applies to USD files only"),
    ("rigid settings", f"sim:\n  rigid: {{linear_damping: 1}}\nrobot: {{urdf: {ARM}}}\n", 2,
     "sim.rigid: SolverRigid's settings, but a scene with joints or a robot moves its bodies with "
     "SolverFeatherstone"),
]


@pytest.mark.parametrize("name,text,line,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_articulation_is_refused_naming_file_line_and_key(name, text, line, message, tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = tmp_path / "never.usd"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:{line}: {message}"), err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_broken_robot_file_is_named_with_its_own_line(tmp_path):
    urdf = tmp_path / "bad.urdf"
    urdf.write_text('<robot name="x">\n<link name="a"/>\n<joint name="j" type="screw">\n<parent link="a"/>'
                    '<child link="b"/></joint><link name="b"/></robot>\n')
    with pytest.raises(SceneError, match=r"scene\.yaml:1: robot\.urdf: cannot import the robot: .*bad\.urdf:3: "
                                         r"joint 'j': unknown joint type 'screw'"):
        Scene.from_string("robot: {urdf: bad.urdf}\n", path=str(tmp_path / "scene.yaml"))


def _stage(path):
    from pxr import Usd
    return Usd.Stage.Open(str(path))


@pytest.mark.parametrize("name,links", [("pendulum_double", ["support", "upper", "lower"]),
                                        ("cartpole", ["rail", "cart", "pole"]),
                                        ("arm", ["base", "shoulder", "upper_arm", "forearm", "hand", "tool"])])
def test_shipped_scene_writes_links_as_animated_xforms_with_shapes(name, links, tmp_path):
    from pxr import Gf, UsdGeom
    out = tmp_path / f"{name}.usda"
    scene = Scene.load(os.path.join(ROOT, "scenes", f"{name}.yaml"))
    result = scene.run(frames=4, out=str(out))
    body_q = result.state.body_q.numpy()
    stage = _stage(out)
    root = stage.GetDefaultPrim().GetPath()
    built = scene.build()
    moved = 0
    for body in built.bodies:
        prim = stage.GetPrimAtPath(root.AppendChild(body.name))
        assert prim.IsA(UsdGeom.Xform), body.name
        assert [c.GetTypeName() for c in prim.GetChildren()], f"{body.name} has no shapes"
        translate = prim.GetAttribute("xformOp:translate")
        orient = prim.GetAttribute("xformOp:orient")
        assert translate.GetTimeSamples() == [0.0, 1.0, 2.0, 3.0, 4.0]
        np.testing.assert_allclose(np.array(translate.Get(4.0)), body_q[body.index, :3], atol=1e-6)
        q = orient.Get(4.0)
        np.testing.assert_allclose([*q.GetImaginary(), q.GetReal()], body_q[body.index, 3:], atol=1e-6)
        moved += not Gf.IsClose(translate.Get(0.0), translate.Get(4.0), 1e-6)
    assert [b.name for b in built.bodies] == links
    assert moved >= 1, "nothing moved"


def test_initial_coordinates_place_the_links_at_frame_0(tmp_path):
    """q sets frame 0 (forward kinematics of the initial coordinates); the hinge at 90 degrees puts the pole's
    far end level with the hinge."""
    scene = Scene.load(os.path.join(ROOT, "scenes", "cartpole.yaml"), ["joints.2.q=1.5707963", "joints.1.q=0.5"])
    built = scene.build()
    state = built.model.state()
    cart, pole = (b.index for b in built.bodies[1:])
    body_q = state.body_q.numpy()
    np.testing.assert_allclose(body_q[cart, :3], [0.5, 1.08, 0.0], atol=1e-6)
    tip = body_q[pole, :3] + quat_rotate(body_q[pole, 3:], [0.0, -0.5, 0.0])
    np.testing.assert_allclose(tip, [1.0, 1.08, 0.12], atol=1e-5)


def test_joint_forces_push_for_their_frames_only():
    """A 2 kg block on a frictionless prismatic joint (no gravity along it), pushed by 4 N during frame 1 only:
    0.2 m/s after it, and the same after frame 2."""
    scene = Scene.from_string(
        "sim: {fps: 10, frames: 2, substeps: 4}\n"
        "bodies: [{name: block, mass: 2.0, shapes: [{type: box, half_extents: [0.1, 0.1, 0.1]}]}]\n"
        "joints: [{type: prismatic, child: block, axis: [1, 0, 0], forces: [4.0, 0.0]}]\n")
    result = scene.run(write=False)
    np.testing.assert_allclose(result.state.joint_qd.numpy(), [0.2], atol=1e-5)
    # semi-implicit Euler over frame 1's four steps of 25 ms: 0.025 * 0.05 * (1 + 2 + 3 + 4), then 0.2 m/s coasting
    np.testing.assert_allclose(result.state.joint_q.numpy(), [0.0125 + 0.02], atol=1e-5)


def test_captured_frames_give_the_results_of_launching_every_step():
    scene = Scene.load(os.path.join(ROOT, "scenes", "pendulum_double.yaml"))
    captured = scene.run(frames=5, write=False).state.joint_q.numpy()
    launched = scene.run(frames=5, write=False, capture=False).state.joint_q.numpy()
    np.testing.assert_array_equal(captured, launched)


def test_cli_info_names_the_solver_and_joints(capsys):
    assert main(["info", os.path.join(ROOT, "scenes", "arm.yaml")]) == 0
    text = capsys.readouterr().out
    assert "featherstone (6 joints, 4 degrees of freedom, 1 articulations)" in text
    assert "joint     elbow: revolute, upper_arm -> forearm, 1 dof" in text


def test_cartpole_swingup_at_reduced_size_via_the_cli(tmp_path, capsys):
    config = os.path.join(ROOT, "configs", "cartpole_swingup.yaml")
    assert main(["optimize", config, "--set", "frames=60", "--iterations", "15", "--out-dir", str(tmp_path),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "final     joint 'hinge' [rad]:" in text
    losses = np.loadtxt(tmp_path / "loss.csv", delimiter=",", skiprows=1)[:, 1]
    assert losses[-1] < 0.3 * losses[0], losses


def test_arm_reach_at_reduced_size():
    result = optimize(load_config(os.path.join(ROOT, "configs", "arm_reach.yaml"), ["frames=45"]), iterations=10,
                      write=False)
    assert result.losses[-1] < 0.3 * result.losses[0], result.losses
    assert set(result.final_errors) == {"body 'tool' [m]"}
    assert result.final_errors["body 'tool' [m]"] < 0.5 * np.sqrt(result.losses[0])


def test_learnable_joint_keys_are_refused_where_they_do_not_apply(tmp_path):
    text = (TWO_BODIES + SECOND).replace("  - {type: fixed", "  - {name: weld, type: fixed")
    scene = tmp_path / "s.yaml"
    scene.write_text(text)
    for key, message in (("joints.1.forces", "'weld' is a fixed joint: it has no axes to push"),
                         ("joints.1.drive.ke", "drive keys are learnable for revolute and prismatic joints"),
                         ("joints.1.q", "q and qd are learnable for revolute and prismatic joints"),
                         ("joints.1.qd", "q and qd are learnable for revolute and prismatic joints"),
                         ("joints.0.drive.gain", "not learnable for a joint"),
                         ("bodies.0.vel", "its joint's qd (learn joints.N.qd)")):
        config = tmp_path / "c.yaml"
        config.write_text(f"scene: s.yaml\nparameters: [{{path: {key}}}]\n"
                          "loss: [{type: com_target, object: a, target: [0, 0, 0]}]\n")
        with pytest.raises(SceneError, match=r"parameters\[0\]\.path") as err:
            optimize(str(config), write=False, iterations=1)
        assert message in str(err.value)
