"""Scenes with `sim.worlds: N`: each world steps as the scene alone (read back from the USD `sim run` writes),
a `--set worlds.K.` override changes that world only, `--split` writes a file per world, and bad values are
refused with the key and exit code 2."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cli import main
from sim.scene import Scene

FRAMES = 4

# a cloth falling onto a shared sphere, two free particles and a box falling onto the shared ground
SCENE = """\
sim:
  fps: 60
  frames: 4
  substeps: 4
  worlds: 3
cloth:
  - grid: {dim_x: 3, dim_y: 3, cell_x: 0.1, cell_y: 0.1}
    pos: [0.0, 0.32, 0.0]
    rot: {axis: [1, 0, 0], angle: -90}
particles:
  - points: [[0.5, 0.3, 0.0], [0.6, 0.3, 0.0]]
    vel: [0.5, 0.0, 0.0]
bodies:
  - pos: [1.0, 0.12, 0.0]
    vel: [0.0, -1.0, 0.0]
    shapes: [{type: box, half_extents: [0.1, 0.1, 0.1]}]
colliders:
  - type: ground
  - type: sphere
    pos: [0.15, 0.2, 0.15]
    radius: 0.1
"""


@pytest.fixture
def scene_file(tmp_path):
    path = tmp_path / "three.yaml"
    path.write_text(SCENE)
    return path


def _frames(path, prim: str) -> np.ndarray:
    """The time samples of a prim of a USD file, frames 0..FRAMES: points [frames, n, 3] of a mesh or points
    prim, or the translate [frames, 3] of a body."""
    from pxr import Usd
    stage = Usd.Stage.Open(str(path))
    p = stage.GetDefaultPrim().GetChild(prim)
    assert p.IsValid(), f"{path} has no prim {prim}"
    attr = p.GetAttribute("points") if p.HasAttribute("points") else p.GetAttribute("xformOp:translate")
    return np.array([np.asarray(attr.Get(t), np.float64) for t in range(FRAMES + 1)])


def _world_offsets(path) -> np.ndarray:
    from pxr import Usd
    stage = Usd.Stage.Open(str(path))  # kept alive while its layer is read
    return np.asarray(stage.GetRootLayer().customLayerData["sim:world_offsets"], np.float64)


PRIMS = ("cloth_0", "particles_0", "body_0")


def _run(scene_file, out, *extra) -> int:
    return main(["run", str(scene_file), "--out", str(out), "--quiet", *extra])


def test_three_worlds_each_step_as_the_scene_alone(scene_file, tmp_path, capsys):
    alone, many = tmp_path / "alone.usd", tmp_path / "many.usd"
    assert _run(scene_file, alone, "--set", "sim.worlds=1") == 0
    assert _run(scene_file, many) == 0
    text = capsys.readouterr().out
    assert "3 worlds side by side" in text and all(f"world {k}" in text for k in range(3))
    assert "(3 worlds: " in text and "world-steps/s)" in text
    offsets = _world_offsets(many)
    assert offsets.shape == (3, 3) and offsets[:, 1].tolist() == [0.0, 0.0, 0.0]  # across the up axis (y)
    assert min(np.linalg.norm(offsets[i] - offsets[j]) for i in range(3) for j in range(i)) >= 1.0
    for prim in PRIMS:
        reference = _frames(alone, prim)
        assert np.ptp(reference[:, ..., 1]) > 1e-3, f"{prim} should move in this test"
        for k in range(3):
            # float32 points written at an offset of about 1 m: the round trip costs ~1e-7 m
            np.testing.assert_allclose(_frames(many, f"{prim}_w{k}") - offsets[k], reference, rtol=0, atol=2e-6,
                                       err_msg=f"{prim} of world {k}")


def test_the_worlds_are_one_model_with_shared_colliders(scene_file):
    built = Scene.load(str(scene_file)).build("cpu")
    m = built.model
    assert m.world_count == 3 and m.particle_count == 3 * 18 and m.body_count == 3
    worlds = m.shape_world.numpy()
    assert worlds[built.collider_shapes].tolist() == [-1, -1]
    assert sorted(worlds[[r for b in built.bodies for r in b.shape_rows]].tolist()) == [0, 1, 2]
    assert [o.world for o in built.objects] == [0, 0, 1, 1, 2, 2]


def test_per_world_override_changes_only_that_world(scene_file, tmp_path):
    alone = tmp_path / "alone.usd"
    assert _run(scene_file, alone, "--set", "sim.worlds=1") == 0
    out = tmp_path / "w.usd"
    assert _run(scene_file, out, "--split", "--set", "worlds.1.cloth.0.vel=[0, 0, 1]",
                "--set", "worlds.2.particles.0.mass=0.5") == 0
    files = [tmp_path / f"w_w{k}.usd" for k in range(3)]
    for prim in PRIMS:
        np.testing.assert_array_equal(_frames(files[0], prim), _frames(alone, prim), err_msg=prim)
    cloth_moved = _frames(files[1], "cloth_0")[-1, :, 2] - _frames(alone, "cloth_0")[-1, :, 2]
    assert np.all(cloth_moved > 0.02)  # 1 m/s along z for 4 frames, less what the sphere held back
    for prim in ("particles_0", "body_0"):
        np.testing.assert_array_equal(_frames(files[1], prim), _frames(alone, prim), err_msg=prim)
    # world 2's heavier particles fall freely like the lighter ones: the same motion, and world 2 is otherwise
    # untouched; its summary energy differs (checked through the model's masses instead of the USD)
    for prim in ("cloth_0", "body_0"):
        np.testing.assert_array_equal(_frames(files[2], prim), _frames(alone, prim), err_msg=prim)
    scene = Scene.load(str(scene_file), ["worlds.2.particles.0.mass=0.5"])
    built = scene.build("cpu")
    masses = built.model.particle_mass.numpy()
    particles = [o for o in built.objects if o.kind == "particles"]
    assert [float(masses[o.start]) for o in particles] == pytest.approx([0.01, 0.01, 0.5])


def test_split_writes_one_file_per_world(scene_file, tmp_path, capsys):
    out = tmp_path / "s.usda"
    assert _run(scene_file, out, "--split") == 0
    assert "3 files, one per world" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.glob("s*.usda")) == ["s_w0.usda", "s_w1.usda", "s_w2.usda"]
    assert not out.exists()
    from pxr import Usd
    for k in range(3):
        stage = Usd.Stage.Open(str(tmp_path / f"s_w{k}.usda"))
        names = sorted(p.GetName() for p in stage.GetDefaultPrim().GetChildren())
        assert names == ["body_0", "cloth_0", "ground_0", "particles_0", "sphere_1"]
        assert stage.GetEndTimeCode() == FRAMES


@pytest.mark.parametrize("value, expected", [
    ("0", "expected an integer >= 1, got 0"),
    ("-2", "expected an integer >= 1, got -2"),
    ("2.5", "expected an integer >= 1, got 2.5"),
    ("many", "expected an integer >= 1, got 'many'"),
    ("1000000000000", "worlds need about"),
])
def test_bad_world_counts_exit_2_naming_the_line(value, expected, tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(SCENE.replace("worlds: 3", f"worlds: {value}"))
    out = tmp_path / "bad.usd"
    assert _run(path, out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:5: sim.worlds: ") and expected in err, err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_a_list_over_worlds_gives_each_world_its_value(scene_file):
    listed = Scene.load(str(scene_file), ["worlds.*.cloth.0.vel=[[0, 0, 1], [0, 0, 2], [0, 0, 3]]"])
    one_by_one = Scene.load(str(scene_file), [f"worlds.{k}.cloth.0.vel=[0, 0, {k + 1}]" for k in range(3)])
    assert [w.cloth[0].vel for w in listed.world_spec_list()] == [(0, 0, 1), (0, 0, 2), (0, 0, 3)]
    assert [w.cloth[0].vel for w in one_by_one.world_spec_list()] == [(0, 0, 1), (0, 0, 2), (0, 0, 3)]
    assert [w.particles[0].mass for w in listed.world_spec_list()] == [0.01] * 3  # the rest is the scene's


@pytest.mark.parametrize("override, expected", [
    ("worlds.3.cloth.0.vel=[0, 0, 1]", "worlds[3]: no world 3: the scene has 3 worlds"),
    ("worlds.1.sim.fps=30", "worlds[1].sim: cannot differ per world"),
    ("worlds.0.colliders.0.height=1", "worlds[0].colliders: cannot differ per world"),
    ("worlds.one.cloth.0.vel=[0, 0, 1]", "expected worlds.K.KEY.PATH=VALUE"),
    ("worlds.1.cloth.0.vel=[0, 1]", "worlds[1].cloth[0].vel: expected a list of 3 numbers"),
    ("worlds.1.cloth.2.vel=[0, 0, 1]", "worlds[1].cloth[2]: no item 2"),
    ("worlds.*.cloth.0.vel=[[0, 0, 1], [0, 0, 2]]", "worlds.*.cloth[0].vel: expected a list of 3 values, one per "
     "world"),
    ("worlds.*.sim.fps=[30, 30, 30]", "worlds.*.sim: cannot differ per world"),
])
def test_bad_per_world_overrides_exit_2(override, expected, scene_file, tmp_path, capsys):
    out = tmp_path / "bad.usd"
    assert _run(scene_file, out, "--set", override) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --set {override}: ") and expected in err, err
    assert not out.exists()


def test_articulation_worlds_step_as_the_scene_alone(tmp_path):
    """Joints (SolverFeatherstone) in worlds: each world's links as in the scene alone, to the bit."""
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenes",
                        "pendulum_double.yaml")
    alone, many = tmp_path / "alone.usd", tmp_path / "many.usd"
    Scene.load(path).run(frames=FRAMES, out=str(alone))
    built = Scene.load(path, ["sim.worlds=2"]).build("cpu")
    assert built.model.world_count == 2 and built.model.articulation_count == 2
    Scene.load(path, ["sim.worlds=2"]).run(frames=FRAMES, out=str(many), split=True)
    links = [b.name for b in built.bodies if b.world == 0]
    assert links
    references = {name: _frames(alone, name) for name in links}
    assert max(np.ptp(r, axis=0).max() for r in references.values()) > 1e-3  # the pendulum swings
    for k in range(2):
        for name, reference in references.items():
            np.testing.assert_array_equal(_frames(tmp_path / f"many_w{k}.usd", name), reference, err_msg=name)


def test_a_blow_up_names_its_world(scene_file, tmp_path, capsys):
    out = tmp_path / "b.usd"
    assert _run(scene_file, out, "--set", "sim.max_speed=5", "--set", "worlds.2.particles.0.vel=[10, 0, 0]") == 3
    assert "particles 'particles_0' of world 2, particle 0" in capsys.readouterr().err


def test_optimize_and_sweep_refuse_several_worlds(tmp_path, capsys):
    """Learnable keys name world 0's objects and losses would add every world's: `sim optimize` and a sweep's
    run refuse sim.worlds > 1 in one line (exit 2 / an invalid row) instead of solving a different problem."""
    import os

    from sim.sweeps.task import run_one

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config = tmp_path / "throw.yaml"
    config.write_text(f"scene: {os.path.join(root, 'scenes', 'cloth_throw.yaml')}\nset: ['sim.worlds=2']\n"
                      "parameters:\n  - path: cloth.0.vel\n"
                      "loss:\n  - {type: com_target, object: cloth, target: [2.0, 0.3, 1.0]}\n")
    assert main(["optimize", str(config), "--iterations", "1", "--quiet", "--out-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "sim.worlds: 2" in err and "one world" in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    scene = os.path.join(root, "scenes", "cloth.yaml")
    row = run_one({"index": 0, "key": "k", "kind": "scene", "target": scene, "overrides": ["sim.worlds=2"],
                   "values": {}, "metrics": [], "keep": "none", "run_dir": str(tmp_path / "r"), "threads": 1,
                   "cache_dir": None})
    assert row["status"] == "invalid" and "sim.worlds: 2" in row["error"], row
