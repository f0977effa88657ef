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
