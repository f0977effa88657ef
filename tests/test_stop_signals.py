"""SIGTERM and SIGHUP stop `sim run`, `sim optimize` and `sim sweep` as SIGINT does, each signal sent to a real
process: the frames so far stay in a valid USD file, the optimisation snapshot is saved, the sweep says its summary
and keeps its rows; the exit status is 128 + the signal (143, 129)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from pxr import Usd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_CLOTH = ["cloth.0.grid.dim_x=6", "cloth.0.grid.dim_y=6", "sim.substeps=4"]
SIGNALS = [(signal.SIGTERM, 143), (signal.SIGHUP, 129)]


def _start(args: list, tmp_path, *, prelude: str = "") -> subprocess.Popen:
    """`sim ARGS` in a new process (after `prelude`, Python run before the CLI)."""
    code = f"import sys\n{prelude}\nfrom sim.cli import main\nsys.exit(main({args!r}))"
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=ROOT))


def _stop_when(proc: subprocess.Popen, ready, signum: int, timeout: float = 60.0) -> tuple:
    """Send `signum` once `ready()` holds; returns (exit status, stdout, stderr)."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"never got ready (status {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.05)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.parametrize("signum,status", SIGNALS, ids=["SIGTERM", "SIGHUP"])
def test_sim_run_keeps_the_frames_so_far_in_a_valid_usd(tmp_path, signum, status):
    out = tmp_path / "cloth.usda"
    args = ["run", os.path.join(ROOT, "scenes", "cloth.yaml"), "--frames", "100000", "--out", str(out), "--quiet",
            "--set", "output.save_every=0.01"] + [a for o in TINY_CLOTH for a in ("--set", o)]
    code, stdout, stderr = _stop_when(_start(args, tmp_path), out.exists, signum)
    assert code == status, stderr
    assert f"stopped by {signal.Signals(signum).name}" in stderr and "Traceback" not in stderr, stderr
    frames = int(stdout.split("stopped after ")[1].split()[0])
    stage = Usd.Stage.Open(str(out))
    assert frames >= 1 and stage.GetEndTimeCode() == frames, (frames, stage.GetEndTimeCode())
    points = stage.GetPrimAtPath("/World/cloth").GetAttribute("points")
    assert np.isfinite(np.asarray(points.Get(frames))).all()


@pytest.mark.parametrize("signum,status", SIGNALS, ids=["SIGTERM", "SIGHUP"])
def test_sim_optimize_saves_its_snapshot(tmp_path, signum, status):
    folder = tmp_path / "opt"
    args = ["optimize", os.path.join(ROOT, "configs", "ball_bounce.yaml"), "--out-dir", str(folder), "--quiet",
            "--iterations", "100000", "--set", "output.save_every=1", "--set", "tolerance=1.0e-12"]
    code, _, stderr = _stop_when(_start(args, tmp_path), (folder / "snapshot.npz").exists, signum)
    assert code == status, stderr
    assert "continue with --resume" in stderr and "Traceback" not in stderr, stderr
    with np.load(folder / "snapshot.npz") as snapshot:
        iteration = json.loads(str(snapshot["meta"]))["iteration"]
        rows = len(snapshot["rows"])
    assert iteration >= 1 and rows == iteration, "the snapshot holds every completed iteration"
    with open(folder / "loss.csv") as f:
        assert len(f.read().splitlines()) == rows + 1
    assert not (folder / ".sim.lock").exists(), "the folder lock is released"


@pytest.mark.parametrize("signum,status,ray", [(signal.SIGTERM, 143, True), (signal.SIGHUP, 129, False)],
                         ids=["SIGTERM-ray", "SIGHUP-local"])
def test_sim_sweep_says_its_summary_and_keeps_its_rows(tmp_path, signum, status, ray):
    if ray:
        pytest.importorskip("ray")
    path = tmp_path / "sweep.yaml"
    path.write_text(f"scene: {os.path.join(ROOT, 'scenes', 'cloth.yaml')}\nset: {TINY_CLOTH + ['sim.frames=3']!r}\n"
                    "mode: grid\naxes:\n  materials.cotton.tri_ke: {logrange: [1.0e2, 1.0e5], count: 200}\n"
                    "metrics: [sag]\n")
    folder = tmp_path / "out"
    csv_path = folder / "results.csv"

    def some_rows() -> bool:
        return csv_path.exists() and len(csv_path.read_text().splitlines()) >= 3
    prelude = "" if ray else "import sim.sweeps.driver as d\nd.ray_available = lambda: False"
    args = ["sweep", str(path), "--out-dir", str(folder), "--workers", "1", "--quiet"]
    code, stdout, stderr = _stop_when(_start(args, tmp_path, prelude=prelude), some_rows, signum, timeout=120)
    assert code == status, stderr
    assert "finished rows are kept" in stderr and "Traceback" not in stderr, stderr
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert 2 <= len(rows) < 200 and all(r["status"] == "ok" for r in rows)
    assert f"{len(rows)} runs in " in stdout and f"interrupted: {200 - len(rows)} of 200 runs not done" in stdout
