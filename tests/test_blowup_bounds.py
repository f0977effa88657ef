"""Finite blow-ups stop a run as NaNs do (exit 3, frame and object named, the frames before kept): a particle or
body farther from the scene's initial centre, or faster, than bounds derived from the scene (sim/scene/scene.py,
blowup_bounds), or than sim.max_distance / sim.max_speed when the scene sets them. And `sim validate` warns of the
other slow failure, particles crowded into one contact cell."""

import os

import numpy as np
import pytest

from sim.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BALL = os.path.join(ROOT, "scenes", "ball_bounce.yaml")


def _run(tmp_path, capsys, *sets, scene=BALL):
    out = tmp_path / "out.usd"
    argv = ["run", str(scene), "--out", str(out), "--quiet"]
    for s in sets:
        argv += ["--set", s]
    code = main(argv)
    return code, capsys.readouterr(), out


def _last_frame(out) -> int:
    from pxr import Usd
    return int(Usd.Stage.Open(str(out)).GetEndTimeCode())


def test_a_step_far_too_large_stops_with_exit_3_not_success(tmp_path, capsys):
    # one substep of 2 s: the ball falls through the ground and the contact flings it off (finite values)
    code, io, out = _run(tmp_path, capsys, "sim.fps=0.5", "sim.substeps=1", "sim.frames=20")
    assert code == 3, io.err
    assert "particles 'ball'" in io.err and "frame" in io.err
    assert "beyond the bound" in io.err or "not finite" in io.err
    assert "simulated" not in io.out


def test_a_ball_started_inside_a_stiff_ground_is_caught_while_finite(tmp_path, capsys):
    scene = tmp_path / "inside.yaml"
    scene.write_text("sim: {fps: 60, frames: 60, substeps: 4, solver: {type: semi_implicit},\n"
                     "      contact: {ke: 1.0e12, kd: 0.0, kf: 0.0, mu: 0.0, margin: 0.0}}\n"
                     "particles:\n  - {name: ball, points: [[0, 0, 0]], pos: [0, 0.02, 0], mass: 1.0, radius: 0.1}\n"
                     "colliders:\n  - {type: ground}\n")
    code, io, out = _run(tmp_path, capsys, scene=scene)
    assert code == 3, io.err
    assert "beyond the bound" in io.err and "particles 'ball'" in io.err, io.err
    assert 0 <= _last_frame(out) < 60  # the frames before the blow-up are kept in a valid file


def test_the_bounds_can_be_set_in_the_scene(tmp_path, capsys):
    code, io, out = _run(tmp_path, capsys, "sim.max_distance=0.3")  # the ball travels about 1 m
    assert code == 3 and "sim.max_distance" in io.err, io.err
    last = _last_frame(out)
    assert last >= 1
    code, io, _ = _run(tmp_path, capsys, "sim.max_speed=0.5")  # it is launched at 1 m/s
    assert code == 3 and "sim.max_speed" in io.err and "particle_qd" in io.err, io.err


def test_the_derived_bounds_leave_a_normal_run_alone(tmp_path, capsys):
    code, io, out = _run(tmp_path, capsys)
    assert code == 0, io.err
    from sim.scene import Scene
    from sim.scene.scene import blowup_bounds
    built = Scene.load(BALL, []).build("cpu")
    distance, speed, center = blowup_bounds(built, 60)
    # 100 x the 1 m floor of the extent, plus 1 m/s and gravity over 1 s
    assert distance == pytest.approx(100.0 + 1.0 + 0.5 * 9.81, rel=1e-6)
    assert speed == pytest.approx(100.0 * (1.0 + 9.81 + 1.0), rel=1e-6)
    np.testing.assert_allclose(center, [0.0, 1.0, 0.0])


def test_validate_warns_when_particles_crowd_one_contact_cell(tmp_path, capsys):
    crowded = tmp_path / "crowded.yaml"
    crowded.write_text("sim: {particle_contact: {enabled: true}}\n"
                       "particles:\n  - {name: heap, grid: {dim: [10, 10, 10], spacing: 0.001}, radius: 0.01}\n")
    assert main(["validate", str(crowded)]) == 0
    err = capsys.readouterr().err
    assert "1000 particles start in one particle-contact cell" in err, err
    assert main(["validate", os.path.join(ROOT, "scenes", "particles.yaml")]) == 0  # a poured box: no warning
    assert "particle-contact cell" not in capsys.readouterr().err
