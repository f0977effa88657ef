"""Scenes: every shipped scene runs (short test mode), the CLI's options and exit codes, the USD it writes, and
a table of malformed scenes that must each be refused with file, line and key path, writing nothing."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

from sim.cli import main
from sim.scene import Scene, SceneError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENES = sorted(glob.glob(os.path.join(ROOT, "scenes", "*.yaml")))


def test_shipped_scenes_exist():
    names = {os.path.basename(s) for s in SCENES}
    assert {"cloth.yaml", "cloth_pinned.yaml", "particles.yaml"} <= names


@pytest.mark.parametrize("path", SCENES, ids=lambda p: os.path.basename(p))
def test_shipped_scene_runs_in_test_mode(path, tmp_path):
    out = tmp_path / "scene.usd"
    result = Scene.load(path).run(frames=3, out=str(out))  # the run itself stops on any NaN/inf
    assert result.frames == 3 and os.path.isfile(out)
    assert np.isfinite(result.state.particle_q.numpy()).all()


def _stage(path):
    from pxr import Usd
    return Usd.Stage.Open(str(path))


def _simulated_frames(scene: Scene, frames: int) -> list:
    """Particle positions at frames 0..frames, stepping exactly as `Scene.run` does."""
    built = scene.build("cpu")
    s, scratch = built.model.state(), built.model.state()
    out = [s.particle_q.numpy().copy()]
    for frame in range(1, frames + 1):
        for _ in range(scene.spec.sim.substeps):
            built.solver.step(built.model, s, scratch, None, built.dt)
            s, scratch = scratch, s
        out.append(s.particle_q.numpy().copy())
    return out


def test_cloth_usd_matches_the_simulation(tmp_path, monkeypatch):
    from pxr import UsdGeom
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "c.usd"
    assert main(["run", os.path.join(ROOT, "scenes", "cloth.yaml"), "--frames", "10", "--out", str(out),
                 "--quiet"]) == 0
    stage = _stage(out)
    assert UsdGeom.GetStageUpAxis(stage) == "Y"
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == 60 and stage.GetFramesPerSecond() == 60
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0, 10)
    assert stage.GetDefaultPrim().IsValid()
    mesh = UsdGeom.Mesh(stage.GetDefaultPrim().GetChild("cloth"))
    assert mesh, "the cloth is a UsdGeom.Mesh named after the object"
    points_attr = mesh.GetPointsAttr()
    assert points_attr.GetTimeSamples() == [float(f) for f in range(11)]
    assert len(mesh.GetFaceVertexCountsAttr().Get()) == 2 * 32 * 32
    assert not mesh.GetFaceVertexIndicesAttr().GetTimeSamples(), "topology is written once"
    expected = _simulated_frames(Scene.load(os.path.join(ROOT, "scenes", "cloth.yaml")), 10)
    for frame in (0, 1, 5, 10):
        got = np.asarray(points_attr.Get(frame))
        np.testing.assert_allclose(got, expected[frame], atol=1e-5)
        lo, hi = np.asarray(mesh.GetExtentAttr().Get(frame))
        np.testing.assert_allclose(lo, expected[frame].min(axis=0), atol=1e-5)
        np.testing.assert_allclose(hi, expected[frame].max(axis=0), atol=1e-5)
    assert UsdGeom.Sphere(stage.GetDefaultPrim().GetChild("ball")).GetRadiusAttr().Get() == 0.5


@pytest.mark.parametrize("substeps", [2, 3])  # an odd count swaps the two states every frame: two graphs
def test_captured_frames_give_the_results_of_launching_every_step(substeps):
    scene = Scene.load(os.path.join(ROOT, "scenes", "cloth.yaml"), [f"sim.substeps={substeps}"])
    assert scene.build("cpu").capturable
    replayed = scene.run(frames=5, write=False, capture=True).state
    launched = scene.run(frames=5, write=False, capture=False).state
    np.testing.assert_array_equal(replayed.particle_q.numpy(), launched.particle_q.numpy())
    np.testing.assert_array_equal(replayed.particle_qd.numpy(), launched.particle_qd.numpy())


def test_a_captured_rigid_frame_replays_bit_identically_to_launching_every_step():
    """The contacts of rigid bodies stay on the device (no host read of a pair count) and are summed in a fixed
    order, so the replayed frames of the stack knocked over by the ball equal the launched ones bit for bit."""
    scene = Scene.load(os.path.join(ROOT, "scenes", "rigid_stack.yaml"))
    assert scene.build("cpu").capturable
    replayed = scene.run(frames=40, write=False, capture=True).state
    launched = scene.run(frames=40, write=False, capture=False).state
    np.testing.assert_array_equal(replayed.body_q.numpy(), launched.body_q.numpy())
    np.testing.assert_array_equal(replayed.body_qd.numpy(), launched.body_qd.numpy())
    assert replayed.body_q.numpy()[4, 0] > 0.5  # the ball knocked the top box off within the frames compared


def test_scenes_whose_frames_differ_are_not_captured():
    pushed = Scene.from_string("sim: {frames: 3, substeps: 2}\n"
                               "particles:\n  - points: [[0, 1, 0]]\n    forces: [[1, 0, 0], [0, 0, 1]]\n")
    assert not pushed.build("cpu").capturable
    q = pushed.run(write=False).state.particle_q.numpy()
    assert q[0, 0] > 0.0 and q[0, 2] > 0.0  # each frame's own force was applied


def test_usd_passes_the_compliance_checker(tmp_path):
    from sim.usd import validation_errors
    for name in ("particles", "cloth"):
        out = tmp_path / f"{name}.usd"
        Scene.load(os.path.join(ROOT, "scenes", f"{name}.yaml")).run(frames=2, out=str(out))
        assert validation_errors(out) == []


def test_particles_are_usd_points(tmp_path):
    from pxr import UsdGeom
    out = tmp_path / "p.usda"
    scene = Scene.load(os.path.join(ROOT, "scenes", "particles.yaml"))
    scene.run(frames=2, out=str(out))
    stage = _stage(out)
    points = UsdGeom.Points(stage.GetDefaultPrim().GetChild("sand"))
    assert len(points.GetPointsAttr().Get(2)) == 2000
    np.testing.assert_allclose(np.asarray(points.GetWidthsAttr().Get()), 0.05, rtol=1e-6)
    assert open(out).read(8) == "#usda 1."


def test_set_overrides_change_the_scene(tmp_path):
    path = os.path.join(ROOT, "scenes", "cloth.yaml")
    scene = Scene.load(path, ["sim.substeps=32", "cloth.0.mass=0.2", "colliders.0.pos=[0, 0.4, 0]",
                              "sim.solver.iterations=3"])
    assert scene.spec.sim.substeps == 32 and scene.spec.sim.solver.iterations == 3
    assert scene.spec.cloth[0].mass == 0.2 and scene.spec.colliders[0].pos == (0.0, 0.4, 0.0)
    mass = scene.build("cpu").model.particle_mass.numpy()
    assert mass.max() == pytest.approx(0.2)


def test_cli_run_options_and_summary(tmp_path, capsys):
    out = tmp_path / "sub" / "c.usd"
    code = main(["run", os.path.join(ROOT, "scenes", "cloth.yaml"), "--frames", "2", "--out", str(out),
                 "--device", "cpu", "--set", "sim.substeps=2", "--set", "cloth.0.mass=0.01", "--quiet"])
    assert code == 0
    text = capsys.readouterr().out
    assert "simulated 2 frames" in text and "steps/s" in text and str(out) in text and "compile" in text
    stage = _stage(out)
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0, 2)


def test_cli_validate_and_info(capsys):
    path = os.path.join(ROOT, "scenes", "cloth.yaml")
    assert main(["validate", path]) == 0
    assert "ok" in capsys.readouterr().out
    assert main(["info", path]) == 0
    text = capsys.readouterr().out
    for word in ("1089 particles", "2048 triangles", "xpbd", "120 at 60 fps", "8 substeps", "out/cloth.usd", "ball"):
        assert word in text, word


def test_python_dash_m_sim_is_the_same_cli(tmp_path):
    out = tmp_path / "c.usd"
    proc = subprocess.run([sys.executable, "-m", "sim", "run", os.path.join(ROOT, "scenes", "cloth_pinned.yaml"),
                           "--frames", "1", "--out", str(out), "--set", "sim.substeps=1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert os.path.isfile(out) and "simulated 1 frames" in proc.stdout
    assert "\r" not in proc.stderr, "no progress bar when stderr is not a terminal"


def test_blow_up_exits_3_and_keeps_the_frames_before(tmp_path, capsys):
    scene = tmp_path / "bad.yaml"
    scene.write_text("sim: {fps: 10, frames: 50, substeps: 1, solver: {type: semi_implicit}}\n"
                     "cloth:\n  - name: sheet\n    grid: {dim_x: 4, dim_y: 4, cell_x: 0.1, cell_y: 0.1}\n"
                     "    material: {tri_ke: 1.0e8, tri_ka: 1.0e8}\n    vel: [0, 0, 5]\n")
    out = tmp_path / "bad.usd"
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert ("not finite" in err or "beyond the bound" in err) and "cloth 'sheet'" in err and "frame" in err
    stage = _stage(out)
    last = int(stage.GetEndTimeCode())
    assert 1 <= last < 50, "frames before the blow-up are kept, in a valid file"
    from pxr import UsdGeom
    pts = np.asarray(UsdGeom.Mesh(stage.GetDefaultPrim().GetChild("sheet")).GetPointsAttr().Get(last))
    assert np.isfinite(pts).all()


@pytest.mark.parametrize("device", ["tpu", "cuda:7"])
def test_unknown_or_unusable_device_is_an_input_error(device, tmp_path, capsys):
    out = tmp_path / "c.usd"
    assert main(["run", os.path.join(ROOT, "scenes", "cloth.yaml"), "--device", device, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --device: ") and device.split(":")[0] in err and not out.exists()


def test_missing_scene_file_exits_2(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


GOOD = """\
sim:
  fps: 30
  frames: 2
  substeps: 2
cloth:
  - name: sheet
    grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}
    mass: 0.01
colliders:
  - {type: ground}
"""

# (name, scene text, line the message must name, text it must contain (the key path first))
MALFORMED = [
    ("negative mass", GOOD.replace("mass: 0.01", "mass: -1"), 8, "cloth[0].mass: expected a positive number, got -1"),
    ("zero substeps", GOOD.replace("substeps: 2", "substeps: 0"), 4, "sim.substeps: expected an integer >= 1"),
    ("zero fps", GOOD.replace("fps: 30", "fps: 0"), 2, "sim.fps: expected a positive number"),
    ("unknown top key", GOOD + "colider: []\n", 11, "colider: unknown key (did you mean 'colliders'?)"),
    ("unknown sim key", GOOD.replace("  fps: 30", "  fsp: 30"), 2, "sim.fsp: unknown key"),
    ("wrong type", GOOD.replace("frames: 2", "frames: many"), 3, "sim.frames: expected an integer >= 1, got 'many'"),
    ("float frames", GOOD.replace("frames: 2", "frames: 2.5"), 3, "sim.frames: expected an integer"),
    ("bad vector", GOOD.replace("mass: 0.01", "mass: 0.01\n    pos: [1, 2]"), 9,
     "cloth[0].pos: expected a list of 3 numbers"),
    ("bad solver type", GOOD.replace("substeps: 2", "substeps: 2\n  solver: {type: xpdb}"), 5,
     "sim.solver.type: expected one of xpbd, semi_implicit, got 'xpdb' (did you mean 'xpbd'?)"),
    ("setting of the other solver", GOOD.replace("substeps: 2", "substeps: 2\n  solver: {type: semi_implicit, "
                                                 "iterations: 3}"), 5, "sim.solver.iterations: unknown key"),
    ("unknown preset", GOOD.replace("substeps: 2", "substeps: 2\n  solver: {preset: nope}"), 5,
     "sim.solver.preset: no solver preset 'nope'"),
    ("missing grid and mesh", GOOD.replace("    grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}\n", ""), 6,
     "cloth[0]: give exactly one of grid, mesh, inline"),
    ("missing required key", GOOD.replace("cell_y: 0.1}", "}").replace(", }", "}"), 7,
     "cloth[0].grid: missing required key 'cell_y'"),
    ("missing mesh file", GOOD.replace("grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}",
                                       "mesh: {file: nothere.obj}").replace("mass: 0.01", "density: 0.1"), 7,
     "cloth[0].mesh.file: file not found"),
    ("malformed mesh file", GOOD.replace("grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}",
                                         "mesh: {file: broken.obj}").replace("mass: 0.01", "density: 0.1"), 7,
     "cloth[0].mesh.file: "),
    ("malformed yaml", GOOD.replace("frames: 2", "frames: [2"), 4, "malformed YAML"),
    ("duplicate key", GOOD.replace("  frames: 2\n", "  frames: 2\n  frames: 3\n"), 4, "sim.frames: duplicate key"),
    ("fix index out of range", GOOD.replace("mass: 0.01", "mass: 0.01\n    fix: [0, 99]"), 9,
     "cloth[0].fix[1]: vertex index 99 out of range (the cloth has 9 vertices)"),
    ("unknown fix name", GOOD.replace("mass: 0.01", "mass: 0.01\n    fix: [left]"), 9,
     "cloth[0].fix[0]: expected a vertex index or one of left_edge"),
    ("unknown collider type", GOOD.replace("{type: ground}", "{type: cone}"), 10,
     "colliders[0].type: expected one of ground, sphere, box, capsule, mesh, got 'cone'"),
    ("collider key of another type", GOOD.replace("{type: ground}", "{type: sphere, radius: 1, half_extents: "
                                                  "[1, 1, 1]}"), 10, "colliders[0].half_extents: unknown key"),
    ("negative radius", GOOD.replace("{type: ground}", "{type: sphere, radius: -0.5}"), 10,
     "colliders[0].radius: expected a positive number, got -0.5"),
    ("zero rotation", GOOD.replace("mass: 0.01", "mass: 0.01\n    rot: [0, 0, 0, 0]"), 9,
     "cloth[0].rot: a rotation quaternion must not be zero"),
    ("unknown material", GOOD.replace("mass: 0.01", "mass: 0.01\n    material: silk"), 9,
     "cloth[0].material: no material named 'silk'"),
    ("duplicate names", GOOD.replace("{type: ground}", "{type: ground, name: sheet}"), 10,
     "colliders[0].name: name 'sheet' is already used by cloth[0]"),
    ("density on a grid", GOOD.replace("mass: 0.01", "density: 0.1"), 8, "cloth[0].density: a grid takes `mass`"),
    ("not a mapping", "- 1\n- 2\n", 1, "expected a mapping of keys, got a list"),
    ("bad device", GOOD.replace("fps: 30", "fps: 30\n  device: gpu"), 3, "sim.device: expected cpu, cuda or cuda:N"),
    ("unknown bending model", GOOD.replace("substeps: 2", "substeps: 2\n  bending: dihedrel"), 5,
     "sim.bending: expected one of quadratic, dihedral, got 'dihedrel' (did you mean 'dihedral'?)"),
    ("nan", GOOD.replace("mass: 0.01", "mass: .nan"), 8, "cloth[0].mass: expected a positive number, got nan"),
    ("body without shapes", GOOD + "bodies:\n  - {name: b}\n", 12, "bodies[0]: missing required key 'shapes'"),
    ("restitution above 1", GOOD + "bodies:\n  - {shapes: [{type: sphere, radius: 0.1}], material: "
     "{restitution: 1.5}}\n", 12, "bodies[0].material.restitution: expected a number between 0 and 1, got 1.5"),
    ("both forms of the normal force", GOOD + "bodies:\n  - {shapes: [{type: sphere, radius: 0.1}], material: "
     "{ke: 1.0e4, timeconst: 0.002}}\n", 12, "bodies[0].material.timeconst: give the normal force either as "
     "timeconst/dampratio or as ke/kd (the penalty form), not both (ke is given too)"),
    ("plane as a body shape", GOOD + "bodies:\n  - {shapes: [{type: plane}]}\n", 12,
     "bodies[0].shapes[0].type: expected one of box, sphere, capsule, mesh, got 'plane'"),
    ("missing collider mesh file", GOOD.replace("{type: ground}", "{type: mesh, file: nothere.obj}"), 10,
     "colliders[0].file: file not found"),
    ("malformed collider mesh file", GOOD.replace("{type: ground}", "{type: mesh, file: broken.obj}"), 10,
     "colliders[0].file: "),
    ("degenerate collider mesh", GOOD.replace("{type: ground}", "{type: mesh, file: flat.obj}"), 10,
     "flat.obj: mesh collider triangle 0 (0, 1, 2) is degenerate"),
    ("negative thickness", GOOD.replace("mass: 0.01", "mass: 0.01\n    self_collision: true\n    thickness: -0.01"),
     10, "cloth[0].thickness: expected a positive number, got -0.01"),
    ("mesh in a rigid contact", GOOD + "bodies:\n  - {mass: 1, shapes: [{type: mesh, file: tri.obj}]}\n", 12,
     "bodies[0].shapes[0]: rigid contact between bodies[0].shapes[0] (mesh) and colliders[0] (ground) is not "
     "supported"),
]

MESH_FILES = {"broken.obj": "v 0 0 0\nv 1 0 0\nf 1 2 7\n", "flat.obj": "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n",
              "tri.obj": "v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 3\n"}


@pytest.mark.parametrize("name,text,line,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_scene_is_refused_naming_file_line_and_key(name, text, line, message, tmp_path, capsys):
    for file, text_of_file in MESH_FILES.items():
        (tmp_path / file).write_text(text_of_file)
    scene = tmp_path / "bad.yaml"
    scene.write_text(text)
    out = tmp_path / "out.usd"
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {scene}:{line}: "), err
    assert message in err, err
    assert sorted(os.listdir(tmp_path)) == sorted(["bad.yaml", *MESH_FILES]), "nothing may be written"


def test_override_errors_name_the_override(tmp_path, capsys):
    path = os.path.join(ROOT, "scenes", "cloth.yaml")
    with pytest.raises(SceneError, match=r"--set cloth.0.mass=-2: cloth\[0\]\.mass: expected a positive number"):
        Scene.load(path, ["cloth.0.mass=-2"])
    with pytest.raises(SceneError, match=r"--set cloth.3.mass=1: cloth\[3\]: no item 3"):
        Scene.load(path, ["cloth.3.mass=1"])
    with pytest.raises(SceneError, match="expected KEY.PATH=VALUE"):
        Scene.load(path, ["sim.frames"])
    out = tmp_path / "x.usd"
    assert main(["run", path, "--set", "sim.substeps=zero", "--out", str(out)]) == 2
    assert "--set sim.substeps=zero: sim.substeps: expected an integer >= 1" in capsys.readouterr().err
    assert not out.exists()


def test_mesh_cloth_from_obj_with_named_fixed_side(tmp_path):
    (tmp_path / "quad.obj").write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0.5 0.5 0\n"
                                       "f 1 2 5\nf 2 3 5\nf 3 4 5\nf 4 1 5\n")
    (tmp_path / "s.yaml").write_text("sim: {frames: 1, substeps: 1}\ncloth:\n  - mesh: {file: quad.obj, scale: 2}\n"
                                     "    density: 0.5\n    fix: [left_edge]\n    pos: [0, 1, 0]\n")
    built = Scene.load(str(tmp_path / "s.yaml")).build("cpu")
    m = built.model
    np.testing.assert_allclose(m.particle_q.numpy()[2], [2, 3, 0])
    mass = m.particle_mass.numpy()
    assert list(np.nonzero(mass == 0)[0]) == [0, 3]
    # 2 m x 2 m at 0.5 kg/m^2: four 0.5 kg triangles, a third of each to its vertices; the two fixed corners
    # (1/3 kg each) carry no mass
    assert mass.sum() == pytest.approx(2.0 - 2.0 / 3.0, rel=1e-5)
    assert built.objects[0].triangles.shape == (4, 3)


def test_scene_docs_are_generated_from_the_format():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_scene_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = open(os.path.join(ROOT, "docs", "scenes.md")).read()
    for key in ("`substeps`", "`half_extents`", "`fix`", "`tri_ke`", "N/m", "`meters_per_unit`"):
        assert key in text


def test_per_particle_velocities_and_control_forces():
    scene = Scene.from_string(
        "sim: {fps: 10, frames: 3, substeps: 4, gravity: 0, solver: {type: semi_implicit}}\n"
        "particles:\n  - points: [[0, 1, 0], [1, 1, 0]]\n    mass: 2.0\n    velocities: [[0, 0, 1], [0, 0, -1]]\n"
        "    forces: [[4, 0, 0], [0, 0, 0]]\n")
    result = scene.run(write=False)
    v = result.state.particle_qd.numpy()
    # 4 N on 2 kg during frame 1 (0.1 s): +0.2 m/s along x, nothing after the list's second (zero) entry
    np.testing.assert_allclose(v, [[0.2, 0, 1], [0.2, 0, -1]], atol=1e-5)
    with pytest.raises(SceneError, match=r"particles\[0\]\.velocities: expected one velocity per particle \(2\)"):
        Scene.from_string("particles:\n  - points: [[0, 1, 0], [1, 1, 0]]\n    velocities: [[0, 0, 1]]\n")


def test_bodies_are_usd_xforms_with_their_shapes(tmp_path):
    from pxr import Usd, UsdGeom
    out = tmp_path / "b.usd"
    path = os.path.join(ROOT, "scenes", "rigid_bounce.yaml")
    result = Scene.load(path).run(frames=30, out=str(out))
    stage = Usd.Stage.Open(str(out))
    body = stage.GetDefaultPrim().GetChild("ball_06")
    assert body.IsA(UsdGeom.Xform)
    assert any(UsdGeom.Sphere(c) for c in body.GetChildren()), "the body's shape is a child prim"
    xf = UsdGeom.Xformable(body)
    world = xf.ComputeLocalToWorldTransform(Usd.TimeCode(30))
    np.testing.assert_allclose(np.asarray(world.ExtractTranslation()), result.state.body_q.numpy()[1, :3],
                               atol=1e-5)
    assert xf.GetTimeSamples() or any(op.GetAttr().GetTimeSamples() for op in xf.GetOrderedXformOps())
    from sim.usd import validation_errors
    assert validation_errors(out) == []


class _Terminal:
    """A stream that says it is a terminal and keeps what was written."""

    def __init__(self, tty: bool):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_bar_only_on_a_terminal():
    from sim.scene.progress import Progress
    for tty, enabled in ((True, True), (False, True), (True, False)):
        stream = _Terminal(tty)
        bar = Progress(10, enabled=enabled, stream=stream)
        for i in range(1, 11):
            bar.update(i, "x steps/s", force=True)
        bar.close()
        if tty and enabled:
            assert "\r[" in stream.text and "10/10 frames" in stream.text and stream.text.endswith("\n")
        else:
            assert stream.text == ""


def test_ground_of_a_z_up_scene_faces_up_in_the_usd(tmp_path):
    from pxr import Gf, Usd, UsdGeom
    out = tmp_path / "z.usda"
    scene = Scene.from_string("sim: {frames: 1, substeps: 1, up_axis: z}\n"
                              "particles:\n  - points: [[0, 0, 1]]\ncolliders:\n  - {type: ground, height: 0.5}\n")
    scene.run(out=str(out))
    stage = Usd.Stage.Open(str(out))
    assert UsdGeom.GetStageUpAxis(stage) == "Z"
    ground = stage.GetDefaultPrim().GetChild("ground_0")
    world = UsdGeom.Xformable(ground).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    np.testing.assert_allclose(np.asarray(world.TransformDir(Gf.Vec3d(0, 1, 0))), [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(np.asarray(world.ExtractTranslation()), [0, 0, 0.5], atol=1e-6)
