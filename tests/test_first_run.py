"""What a first-time user meets (issue 32): the cold compile says so, long runs say how far they are, `sim run`
ends with a physical summary checked against analytic free flight, a file given to the wrong command names the
right one, `sim optimize`'s final loss is the loss of the parameters it saves, Ray's token notice stays quiet, and a
machine without a system C++ compiler builds kernels with the ziglang wheel's clang."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

import kernels as wp
from kernels.compiler import build
from sim.cli import main
from sim.scene import Scene
from sim.scene import progress as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTICE = re.compile(r"^kernels: compiling \d+ kernels? of module \S+ for cpu \(first run; cached afterwards.*\)\.\.\.$")

TWO_MODULES = """
import numpy as np
import kernels as wp

@wp.kernel
def double(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 2.0 * x[i]

@wp.kernel(module="second_module")
def halve(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 0.5 * x[i]

x = wp.array(np.ones(4, np.float32))
wp.launch(double, dim=4, inputs=[x])
wp.launch(halve, dim=4, inputs=[x])
print(x.numpy().tolist())
"""


def _python(script: str, cache, env_extra=None):
    """Run `script` (kernels need a source file) with the compile cache `cache`; stderr is a pipe."""
    path = cache.parent / "script.py"
    path.write_text(script)
    env = dict(os.environ, PYTHONPATH=ROOT, KERNELS_CACHE_DIR=str(cache))
    env.pop("KERNELS_COMPILE_NOTICE", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)


def test_a_cold_compile_says_so_once_off_a_terminal_and_a_warm_run_says_nothing(tmp_path):
    cold = _python(TWO_MODULES, tmp_path / "cache")
    assert cold.returncode == 0, cold.stderr
    said = [ln for ln in cold.stderr.splitlines() if "compiling" in ln]
    assert len(said) == 1 and NOTICE.match(said[0]) and "of module __main__" in said[0], cold.stderr
    warm = _python(TWO_MODULES, tmp_path / "cache")
    assert warm.returncode == 0 and warm.stdout == cold.stdout == "[1.0, 1.0, 1.0, 1.0]\n"
    assert "compiling" not in warm.stderr, warm.stderr
    quiet = _python(TWO_MODULES, tmp_path / "other", {"KERNELS_COMPILE_NOTICE": "0"})
    assert quiet.returncode == 0 and "compiling" not in quiet.stderr, quiet.stderr


TINY_SCENE = """sim: {fps: 30, frames: 3, substeps: 2, solver: {type: semi_implicit}}
particles:
  - {name: ball, points: [[0, 0, 0]], pos: [0, 1, 0], mass: 1.0, radius: 0.1}
colliders:
  - {type: ground}
"""


def test_without_a_system_compiler_the_ziglang_wheels_clang_builds_and_runs_a_scene(tmp_path):
    """PATH holds only python (no c++, g++, clang++), $CXX is unset and the kernel cache is empty, so the scene's
    kernels really compile, with `zig c++` (unoptimised, to keep the test short)."""
    assert build.ziglang_binary() is not None, "ziglang is a dependency (pyproject.toml)"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python")
    scene = tmp_path / "tiny.yaml"
    scene.write_text(TINY_SCENE)
    script = ("import sys, kernels\nkernels.config.cxx_flags = ('-O0',)\nfrom sim.cli import main\n"
              f"sys.exit(main(['run', {str(scene)!r}, '--out', {str(tmp_path / 'tiny.usda')!r}]))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "KERNELS_COMPILE_NOTICE")}
    env.update(PATH=str(bin_dir), PYTHONPATH=ROOT, KERNELS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [ln for ln in proc.stderr.splitlines() if "compiling" in ln]
    assert len(said) == 1 and "ziglang wheel's clang" in said[0], proc.stderr
    assert "simulated 3 frames" in proc.stdout and "compile" in proc.stdout and "(cold)" in proc.stdout
    assert (tmp_path / "tiny.usda").exists()


def test_find_cxx_falls_back_to_zig_cxx_only_without_a_system_compiler(monkeypatch, tmp_path):
    monkeypatch.setattr(wp.config, "cxx", None)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    zig = build.find_cxx()
    assert zig == [build.ziglang_binary(), "c++"] and os.path.basename(zig[0]) == "zig"
    fake = tmp_path / "g++"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert build.find_cxx() == [str(fake)], "a system compiler comes first"


class _Stream:
    def __init__(self, tty: bool):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_off_a_terminal_is_a_line_every_tenth_after_two_seconds_and_one_a_minute_at_least(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(P.time, "perf_counter", lambda: clock[0])
    stream = _Stream(tty=False)
    bar = P.Progress(100, unit="frames", stream=stream)
    for done in range(1, 101):  # 0.5 s a frame: a line every 10 frames (5 s), none at the end
        clock[0] += 0.5
        bar.update(done, "note")
    bar.close()
    lines = stream.text.splitlines()
    assert lines == [f"{n}/100 frames ({n}%)  note" for n in range(10, 100, 10)], lines

    fast = _Stream(tty=False)
    bar = P.Progress(100, stream=fast)
    for done in range(1, 101):  # 0.01 s a frame: the run is over before a line is due
        clock[0] += 0.01
        bar.update(done)
    assert fast.text == ""

    slow = _Stream(tty=False)
    bar = P.Progress(1000, unit="iterations", stream=slow)
    for done in range(1, 5):  # 40 s an iteration: a line after every second one (60 s), though 0.4 % apart
        clock[0] += 40.0
        bar.update(done)
    assert slow.text.splitlines() == ["2/1000 iterations (0%)", "4/1000 iterations (0%)"]

    quiet = _Stream(tty=False)
    bar = P.Progress(10, stream=quiet, enabled=False)
    clock[0] += 100.0
    bar.update(5)
    assert quiet.text == ""


def test_progress_on_a_terminal_is_a_bar_redrawn_in_place(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(P.time, "perf_counter", lambda: clock[0])
    stream = _Stream(tty=True)
    bar = P.Progress(4, unit="frames", stream=stream, width=4)
    for done in range(1, 5):
        clock[0] += 1.0
        bar.update(done, "x")
    bar.close()
    assert stream.text.count("\r[") == 4 and stream.text.endswith("\r[####] 4/4 frames  x\033[K\n"), stream.text


def test_sim_run_prints_progress_lines_into_a_log(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(P, "LINE_MIN_S", 0.0)
    scene = tmp_path / "tiny.yaml"
    scene.write_text(TINY_SCENE.replace("frames: 3", "frames: 20"))
    assert main(["run", str(scene), "--out", str(tmp_path / "t.usda")]) == 0
    err = capsys.readouterr().err
    assert re.findall(r"^(\d+)/20 frames \(\d+%\)", err, re.M) == [str(n) for n in range(2, 20, 2)], err
    assert main(["run", str(scene), "--out", str(tmp_path / "t.usda"), "--quiet"]) == 0
    assert "frames (" not in capsys.readouterr().err


FREE_FLIGHT = """sim: {{fps: 30, frames: 10, substeps: 64, solver: {{type: semi_implicit}}}}
particles:
  - {{name: stone, points: [[0, 0, 0]], pos: [0, 1, 0], vel: [1.0, 2.0, 0.0], mass: 0.5, radius: 0.05}}
bodies:
  - name: brick
    pos: [0, 3, 0]
    vel: [0.0, {vy}, 0.5]
    angular_vel: [3.0, 0.0, 0.0]
    mass: 2.0
    shapes: [{{type: box, half_extents: [0.1, 0.2, 0.3]}}]
"""


def _summary_rows(out: str) -> dict:
    """object label -> its numbers, from the lines after the physics header."""
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("physics"))
    rows = {}
    for ln in lines[head + 2:]:
        label, *numbers = re.split(r"\s{2,}", ln.strip())
        rows[label] = [float(n) for n in numbers]
    return rows


def test_sim_run_ends_with_heights_speeds_and_energies_that_free_flight_predicts(tmp_path, capsys):
    """A particle and a spinning brick in free flight (no contact): heights, speeds and energies against the
    closed-form trajectory, the brick's spin energy with its box inertia m (b^2 + c^2) / 3 about x."""
    scene = tmp_path / "flight.yaml"
    scene.write_text(FREE_FLIGHT.format(vy=1.0))
    assert main(["run", str(scene), "--out", str(tmp_path / "f.usda")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^physics   frame 10; heights along y", out, re.M), out
    rows = _summary_rows(out)
    g, t = 9.81, np.arange(11) / 30.0  # frames 0..10
    stone_h, stone_v = 1.0 + 2.0 * t - 0.5 * g * t * t, np.hypot(1.0, 2.0 - g * t)
    brick_h, brick_v = 3.0 + 1.0 * t - 0.5 * g * t * t, np.hypot(0.5, 1.0 - g * t)
    spin = 0.5 * (2.0 * (0.2 ** 2 + 0.3 ** 2) / 3.0) * 3.0 ** 2
    expected = {
        "particles stone": [stone_h[-1], stone_h.min(), stone_v.max(), 0.5 * 0.5 * stone_v[-1] ** 2,
                            0.5 * g * stone_h[-1]],
        "body brick": [brick_h[-1], brick_h.min(), brick_v.max(), 0.5 * 2.0 * brick_v[-1] ** 2 + spin,
                       2.0 * g * brick_h[-1]],
    }
    for label, (height, lowest, speed, kinetic, potential) in expected.items():
        got = rows[label]
        assert got[:5] == pytest.approx([height, lowest, speed, kinetic, potential], rel=5e-3, abs=2e-3), \
            (label, got)
        assert got[5] == pytest.approx(got[3] + got[4], rel=1e-3)
    total = rows["total"]
    assert total[-1] == pytest.approx(rows["particles stone"][5] + rows["body brick"][5], rel=1e-3)


def test_the_summary_lists_a_few_objects_and_counts_the_rest(tmp_path):
    bodies = "".join(f"  - {{name: b{i}, pos: [{i}, 1, 0], shapes: [{{type: sphere, radius: 0.1}}]}}\n"
                     for i in range(11))
    scene = Scene.from_string(f"sim: {{frames: 2}}\nbodies:\n{bodies}", str(tmp_path / "many.yaml"))
    result = scene.run(write=False, summary=True)
    lines = result.physics.lines()
    assert len(lines) == 2 + 8 + 2 and lines[-2].lstrip().startswith("3 more") and lines[-1].lstrip().startswith(
        "total"), "\n".join(lines)
    assert len(result.physics.rows) == 11 and scene.run(write=False).physics is None


@pytest.mark.parametrize("command, path, right", [
    ("run", "configs/cloth_throw.yaml", "sim optimize"),
    ("validate", "configs/ball_bounce.yaml", "sim optimize"),
    ("run", "configs/sweeps/cloth_materials.yaml", "sim sweep"),
    ("optimize", "scenes/ball_bounce.yaml", "sim run"),
    ("sweep", "configs/ball_bounce.yaml", "sim optimize"),
])
def test_a_file_given_to_the_wrong_command_names_the_right_one(command, path, right, capsys):
    full = os.path.join(ROOT, path)
    assert main([command, full]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"error: {full} is ") and \
        f"run it with `{right} {full}`" in captured.err, captured.err
    assert captured.out == ""


def test_an_invalid_scene_still_gets_its_own_error(tmp_path, capsys):
    scene = tmp_path / "bad.yaml"
    scene.write_text("sim: {frames: -1}\n")
    assert main(["run", str(scene)]) == 2
    assert "sim.frames" in capsys.readouterr().err


def test_the_printed_and_saved_final_loss_is_the_loss_of_the_saved_parameters(tmp_path, capsys):
    """Re-simulate params.yaml's velocity with `sim.Scene` and evaluate the config's loss in numpy: it is the loss
    `sim optimize` printed, and params.yaml's, not the loss of the iteration before the last step."""
    config = os.path.join(ROOT, "configs", "ball_bounce.yaml")
    assert main(["optimize", config, "--iterations", "3", "--out-dir", str(tmp_path / "opt"), "--set", "frames=40",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    printed = float(re.search(r"loss \S+ -> (\S+)", out).group(1))
    text = (tmp_path / "opt" / "params.yaml").read_text()
    saved = float(re.search(r"loss (\S+) at these values", text).group(1))
    vel = np.array(yaml.safe_load(text)["particles"][0]["vel"], dtype=np.float64)
    learned = f"particles.0.vel={json.dumps(vel.tolist())}"
    scene = Scene.load(os.path.join(ROOT, "scenes", "ball_bounce.yaml"), [learned])
    final = scene.run(frames=40, write=False).state.particle_q.numpy()[0].astype(np.float64)
    loss = float(np.sum((final - [1.85, 0.98, 0.45]) ** 2) + 1.0e-6 * np.sum((vel - [1.0, 0.0, 0.0]) ** 2))
    assert printed == pytest.approx(loss, rel=1e-4) and saved == pytest.approx(loss, rel=1e-4), (printed, saved, loss)
    rows = (tmp_path / "opt" / "loss.csv").read_text().splitlines()[1:]
    assert float(rows[-1].split(",")[1]) != pytest.approx(loss, rel=1e-4), "the last row is one step before"


def test_rays_token_authentication_notice_is_filtered_and_its_other_warnings_are_not():
    """Ray's own functions log the notices; a handler on their logger sees what passes the filter."""
    pytest.importorskip("ray")
    from ray._private.authentication import authentication_token_setup as setup
    from sim.sweeps.executors import quiet_ray_token_notice
    quiet_ray_token_notice()
    quiet_ray_token_notice()  # a second call adds no second filter
    logger = logging.getLogger(setup.__name__)
    assert len(logger.filters) == len({type(f) for f in logger.filters})
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    try:
        setup._warn_token_auth_enabled()
        setup._warn_token_auth_disabled()
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 1 and seen[0].startswith("Token authentication is disabled"), seen
