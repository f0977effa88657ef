"""Nothing crashes, nothing is lost (through the `sim` CLI, as a user meets it): resource bombs in YAML, empty
files, outputs that cannot be written (refused before simulating), interrupts before the first frame, and
temporaries left by killed runs."""

import os
import signal
import subprocess
import sys
import time

import pytest

from sim.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOTH = os.path.join(ROOT, "scenes", "cloth.yaml")
TINY = ("sim: {fps: 30, frames: 2, substeps: 1}\n"
        "cloth:\n  - name: sheet\n    grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}\n")


def _refused(capsys, argv, *words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    return err


BOMB = "\n".join([f"l0: &l0 [{', '.join(['lol'] * 9)}]"]
                 + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]) + "\n"


@pytest.mark.parametrize("command", ["validate", "optimize"])
def test_yaml_alias_bomb_is_refused_quickly(tmp_path, capsys, command):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    t0 = time.perf_counter()
    _refused(capsys, [command, str(path)], f"{path}:", "expands to more than", "aliases")
    assert time.perf_counter() - t0 < 10.0


def test_deep_nesting_is_refused_with_its_line(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text("sim:\n  frames: " + "[" * 20000 + "]" * 20000 + "\n")
    _refused(capsys, ["validate", str(path)], f"{path}:2:", "nested more than")


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n", "---\n"])
def test_empty_scene_is_refused_and_writes_nothing(tmp_path, capsys, text):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    out = tmp_path / "empty.usd"
    _refused(capsys, ["run", str(path), "--out", str(out), "--quiet"], "the file is empty")
    assert not out.exists()


@pytest.mark.parametrize("case", ["extension", "directory", "parent_is_file", "unwritable"])
def test_unwritable_output_is_refused_before_simulating(tmp_path, capsys, case):
    scene = tmp_path / "tiny.yaml"
    scene.write_text(TINY)
    (tmp_path / "afile").write_text("")
    (tmp_path / "adir").mkdir()
    out, reason = {"extension": (tmp_path / "x.txt", "unsupported output extension '.txt'"),
                   "directory": (tmp_path / "adir", "it is a directory"),
                   "parent_is_file": (tmp_path / "afile" / "c.usd", "is a file, not a directory"),
                   "unwritable": ("/proc/kernels-test/c.usd", "cannot create files in /proc")}[case]
    t0 = time.perf_counter()
    err = _refused(capsys, ["run", str(scene), "--out", str(out), "--quiet"], "--out:", str(out), reason)
    assert "simulated" not in capsys.readouterr().out
    assert time.perf_counter() - t0 < 5.0, "refused before building or simulating anything"
    assert err.count("\n") == 1


def test_output_path_from_the_scene_is_checked_too(tmp_path, capsys):
    scene = tmp_path / "tiny.yaml"
    scene.write_text(TINY + "output: {path: out.txt}\n")
    _refused(capsys, ["run", str(scene), "--quiet"], f"{scene}: output.path:", "unsupported output extension")


def test_interrupt_before_the_first_frame_leaves_the_existing_output(tmp_path):
    """SIGINT during the compile (a cold cache: several seconds) of a run whose output already exists."""
    out = tmp_path / "c.usd"
    out.write_bytes(b"#usda 1.0\n(\n    doc = \"a good earlier result\"\n)\n")
    before = out.read_bytes()
    env = dict(os.environ, KERNELS_CACHE_DIR=str(tmp_path / "cold-cache"))
    proc = subprocess.Popen([sys.executable, "-m", "sim", "run", CLOTH, "--out", str(out), "--quiet"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "cold-cache").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert out.read_bytes() == before, "an interrupted run that simulated nothing must not replace the output"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".c.")] == []


def test_temporaries_of_a_killed_run_are_removed_by_the_next(tmp_path, capsys):
    scene = tmp_path / "tiny.yaml"
    scene.write_text(TINY)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".c.simtmp-{dead.pid}-0123456789ab.usd"
    live = tmp_path / f".c.simtmp-{os.getppid()}-0123456789ab.usd"
    other = tmp_path / ".c.unrelated-hidden-file.usd"
    for p in (stale, live, other):
        p.write_text("partial")
    assert main(["run", str(scene), "--out", str(tmp_path / "c.usd"), "--quiet"]) == 0
    assert not stale.exists(), "a dead run's temporary is removed"
    assert live.exists() and other.exists(), "a live process's temporary, and other files, are never touched"
    assert (tmp_path / "c.usd").exists()


def test_degenerate_inline_triangle_is_refused_at_validation(tmp_path, capsys):
    path = tmp_path / "degenerate.yaml"
    path.write_text("sim: {frames: 2}\ncloth:\n  - name: c\n    inline:\n"
                    "      vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0]]\n"
                    "      triangles: [[0, 1, 2], [1, 1, 2], [0, 1, 3]]\n")
    err = _refused(capsys, ["validate", str(path)], f"{path}:6:", "cloth[0].inline.triangles[1]",
                   "(1, 1, 2) repeats a vertex", "1 more degenerate")
    assert err.count("\n") == 1


def test_version_and_info_of_a_rigid_only_scene(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("sim 0.")
    assert main(["info", os.path.join(ROOT, "scenes", "rigid_stack.yaml")]) == 0
    solver = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("solver")][0]
    assert solver.split()[1] == "rigid" and "xpbd" not in solver


# ---------------------------------------------------------------------------------------------- sim optimize

BALL = os.path.join(ROOT, "configs", "ball_bounce.yaml")


def _config(tmp_path, text, name="c.yaml"):
    path = tmp_path / name
    path.write_text(text.replace("SCENE", os.path.join(ROOT, "scenes", "ball_bounce.yaml")))
    return path


def test_optimize_reversed_bounds_are_refused_with_their_line(tmp_path, capsys):
    path = _config(tmp_path, "scene: SCENE\nparameters:\n  - path: particles.0.vel\n    bounds: [10, -10]\n"
                             "loss:\n  - {type: com_target, object: ball, target: [1, 1, 0]}\n")
    _refused(capsys, ["optimize", str(path), "--iterations", "1", "--quiet"], f"{path}:4: parameters[0].bounds:",
             "lower bound 10 exceeds upper bound -10")


def test_optimize_config_set_entries_are_reported_at_their_line(tmp_path, capsys):
    path = _config(tmp_path, "scene: SCENE\nset: [bogus]\nparameters:\n  - path: particles.0.vel\n"
                             "loss:\n  - {type: com_target, object: ball, target: [1, 1, 0]}\n")
    err = _refused(capsys, ["optimize", str(path), "--iterations", "1", "--quiet"], f"{path}:2: set[0]",
                   "expected KEY.PATH=VALUE")
    assert "--set" not in err


@pytest.mark.parametrize("content", [b"garbage\n", b"PK\x03\x04 truncated zip"])
def test_optimize_trajectory_that_is_not_an_npz_is_refused(tmp_path, capsys, content):
    (tmp_path / "bad.npz").write_bytes(content)
    path = _config(tmp_path, "scene: SCENE\nparameters:\n  - path: particles.0.vel\nloss:\n"
                             "  - {type: trajectory, object: ball, file: bad.npz}\n")
    _refused(capsys, ["optimize", str(path), "--iterations", "1", "--quiet"], f"{path}:5: loss[0].file:",
             "bad.npz is not a")


def test_optimize_trajectory_with_nan_is_refused_naming_the_frame(tmp_path, capsys):
    import numpy as np
    positions = np.zeros((4, 1, 3))
    positions[2, 0, 1] = np.nan
    np.savez(tmp_path / "nan.npz", positions=positions)
    path = _config(tmp_path, "scene: SCENE\nparameters:\n  - path: particles.0.vel\nloss:\n"
                             "  - {type: trajectory, object: ball, file: nan.npz}\n")
    _refused(capsys, ["optimize", str(path), "--iterations", "1", "--quiet"], "loss[0].file:",
             "frame 2 are not finite", "particle 0")


def test_optimize_resume_from_a_corrupt_snapshot_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["optimize", BALL, "--iterations", "1", "--quiet", "--out-dir", str(out)]) == 0
    capsys.readouterr()
    (out / "snapshot.npz").write_bytes(b"garbage")
    _refused(capsys, ["optimize", BALL, "--iterations", "2", "--quiet", "--out-dir", str(out), "--resume"],
             "--resume:", "snapshot.npz is damaged", "remove it")
    assert (out / "snapshot.npz").read_bytes() == b"garbage", "the snapshot is left for the user to inspect"


def test_optimize_forward_blow_up_names_frame_and_object(tmp_path, capsys):
    scene = tmp_path / "stiff.yaml"
    scene.write_text("sim: {fps: 10, frames: 20, substeps: 1, solver: {type: semi_implicit}}\n"
                     "cloth:\n  - name: sheet\n    grid: {dim_x: 4, dim_y: 4, cell_x: 0.1, cell_y: 0.1}\n"
                     "    material: {tri_ke: 1.0e8, tri_ka: 1.0e8}\n    vel: [0, 0, 5]\n")
    path = tmp_path / "blow.yaml"
    path.write_text(f"scene: {scene}\nparameters:\n  - path: cloth.0.vel\n"
                    "loss:\n  - {type: com_target, object: sheet, target: [1, 1, 0]}\n")
    assert main(["optimize", str(path), "--iterations", "2", "--quiet", "--out-dir", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert ("is not finite" in err or "beyond the bound" in err) and "cloth 'sheet'" in err and "frame" in err \
        and "blew up" in err, err
    assert "learning rate" not in err


@pytest.mark.parametrize("body, key", [
    ("cloth:\n  - name: c\n    grid: {dim_x: 100000, dim_y: 100000, cell_x: 0.01, cell_y: 0.01}\n", "cloth[0].grid"),
    ("particles:\n  - name: p\n    grid: {dim: [1000, 1000, 1000], spacing: 0.01}\n", "particles[0].grid")])
def test_scene_larger_than_memory_is_refused_at_validation(tmp_path, capsys, body, key):
    path = tmp_path / "huge.yaml"
    path.write_text("sim: {frames: 2}\n" + body)
    t0 = time.perf_counter()
    _refused(capsys, ["validate", str(path)], f"{path}:4: {key}:", "needs about", "available")
    _refused(capsys, ["run", str(path), "--out", str(tmp_path / "h.usd"), "--quiet"], key)
    assert time.perf_counter() - t0 < 10.0 and not (tmp_path / "h.usd").exists()


def test_validate_and_info_print_the_memory_estimate(capsys):
    assert main(["validate", CLOTH]) == 0
    assert "memory about" in capsys.readouterr().out
    assert main(["info", CLOTH]) == 0
    assert any(ln.startswith("memory    about") and "available" in ln for ln in capsys.readouterr().out.splitlines())


STIFF = ("sim: {fps: 120, frames: 60, substeps: SUB, solver: {type: semi_implicit}}\n"
         "cloth:\n  - name: sheet\n    grid: {dim_x: 4, dim_y: 4, cell_x: 0.1, cell_y: 0.1}\n    mass: 0.05\n"
         "    material: {tri_ke: 500, tri_ka: 500, tri_kd: 0.1, edge_ke: 1}\n    vel: [1, 0, 0]\n"
         "colliders:\n  - {type: ground}\n")


def test_semi_implicit_dt_above_the_stability_limit_warns_with_the_substeps(tmp_path, capsys):
    """A 4 x 4 cloth, tri_ke = tri_ka = 500 N/m, 0.05 kg vertices: measured stable up to ~4.1 ms. At 8.3 ms the
    validator warns (not refuses) with the estimate and the substeps; at 2.8 ms it says nothing."""
    path = tmp_path / "stiff.yaml"
    path.write_text(STIFF.replace("SUB", "1"))
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "exceeds the estimated stability limit" in err and "sim.substeps >= 3" in err, err
    path.write_text(STIFF.replace("SUB", "3"))
    assert main(["validate", str(path)]) == 0
    assert "stability" not in capsys.readouterr().err


def test_blow_up_message_repeats_the_stability_estimate(tmp_path, capsys):
    path = tmp_path / "stiff.yaml"
    path.write_text(STIFF.replace("SUB", "1").replace("tri_ke: 500, tri_ka: 500", "tri_ke: 5.0e4, tri_ka: 5.0e4"))
    assert main(["run", str(path), "--out", str(tmp_path / "s.usd"), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert ("not finite" in err or "beyond the bound" in err) and "note: dt" in err and "sim.substeps >=" in err, err


def test_estimated_limit_is_close_to_the_measured_one():
    """The estimate is below the measured limit (safe) but within a factor 1.5 of it (useful)."""
    from sim.scene import Scene
    from sim.scene.stability import stability_limit
    scene = Scene.from_string(STIFF.replace("SUB", "1"))
    limit, what = stability_limit(scene.spec)
    measured = 4.1e-3  # bisected largest stable dt of this cloth (see sim/scene/stability.py)
    assert measured / 1.5 < limit < measured and "membrane" in what


def test_run_killed_while_its_output_is_written_leaves_the_old_file_and_no_temporary(tmp_path):
    """SIGKILL the moment the USD temporary appears (while the stage is exported): the existing output is intact,
    and the next run removes the dead run's temporary."""
    out = tmp_path / "c.usda"
    out.write_text("#usda 1.0\n")
    before = out.read_bytes()
    proc = subprocess.Popen([sys.executable, "-m", "sim", "run", CLOTH, "--frames", "30", "--out", str(out),
                             "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    temporary = []
    deadline = time.monotonic() + 600
    while not temporary and proc.poll() is None and time.monotonic() < deadline:
        temporary = [p for p in tmp_path.iterdir() if p.name.startswith(".c.simtmp-")]  # not the probe file
    if not temporary:
        proc.wait()
        pytest.skip("the export finished before its temporary was seen")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".c.simtmp-")]
    if leftovers:  # killed during the export: the old output is untouched
        assert out.read_bytes() == before, "a killed export never replaces the output"
    else:  # the rename won the race with the kill: the output is the whole new file
        from pxr import Usd
        assert Usd.Stage.Open(str(out)).GetEndTimeCode() == 30
    scene = tmp_path / "tiny.yaml"
    scene.write_text(TINY)
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 0
    assert [p.name for p in tmp_path.iterdir() if ".simtmp-" in p.name] == []
