"""Earlier results are never replaced without a word: `sim optimize` into a folder holding a snapshot and `sim sweep`
into one holding results refuse without --resume or --overwrite (exit 2, naming both); a second run writing into a
folder that a live run holds is refused naming that run; the lock of a dead process is taken over."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sim.cli import main
from sim.output_folder import LOCK, folder_lock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BALL = os.path.join(ROOT, "configs", "ball_bounce.yaml")


def _optimize(folder, *flags) -> int:
    return main(["optimize", BALL, "--out-dir", str(folder), "--iterations", "1", "--quiet", *flags])


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_optimize_refuses_a_folder_with_a_snapshot_unless_told(tmp_path, capsys):
    folder = tmp_path / "opt"
    folder.mkdir()
    (folder / LOCK).write_text(f"pid {_dead_pid()} on a-host\n")  # left by a killed run: taken over
    assert _optimize(folder) == 0
    assert not (folder / LOCK).exists()
    snapshot = (folder / "snapshot.npz").read_bytes()
    capsys.readouterr()

    assert _optimize(folder) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(folder) in err and "snapshot.npz" in err, err
    assert "--resume" in err and "--overwrite" in err, err
    assert (folder / "snapshot.npz").read_bytes() == snapshot, "a refused run writes nothing"

    assert _optimize(folder, "--resume", "--overwrite") == 2
    assert "not both" in capsys.readouterr().err
    assert _optimize(folder, "--overwrite") == 0


def test_a_second_run_into_a_locked_folder_is_refused_naming_the_first(tmp_path, capsys):
    folder = tmp_path / "opt"
    folder.mkdir()
    (folder / "snapshot.npz").write_bytes(b"from a run still going")
    with folder_lock(str(folder)):
        assert _optimize(folder, "--resume") == 2
        err = capsys.readouterr().err
        assert f"another run (pid {os.getpid()} on " in err and "another --out-dir" in err, err
        sweep = tmp_path / "sweep.yaml"
        sweep.write_text(f"scene: {os.path.join(ROOT, 'scenes', 'cloth.yaml')}\naxes:\n  sim.substeps: [4, 8]\n"
                         "metrics: [sag]\n")
        assert main(["sweep", str(sweep), "--out-dir", str(folder), "--resume", "--quiet"]) == 2
        assert f"another run (pid {os.getpid()} on " in capsys.readouterr().err
    assert (folder / "snapshot.npz").read_bytes() == b"from a run still going"


@pytest.mark.parametrize("existing", ["results.csv", "results.parquet"])
def test_sweep_refuses_a_folder_with_results_unless_told(tmp_path, capsys, existing, monkeypatch):
    import sim.sweeps.driver as driver
    monkeypatch.setattr(driver, "ray_available", lambda: False)  # local processes: no Ray to start for two runs
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"scene: {os.path.join(ROOT, 'scenes', 'cloth.yaml')}\n"
                     "set: [sim.frames=2, cloth.0.grid.dim_x=4, cloth.0.grid.dim_y=4]\naxes:\n  sim.substeps: [2, 3]\n"
                     "metrics: [sag]\n")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / existing).write_text("a finished sweep's results\n")
    args = ["sweep", str(sweep), "--out-dir", str(folder), "--workers", "1", "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and existing in err and "--resume" in err and "--overwrite" in err, err
    assert (folder / existing).read_text() == "a finished sweep's results\n"
    if existing == "results.csv":
        return  # the run with --overwrite once is enough
    assert main(args + ["--overwrite"]) == 0
    assert len((folder / "results.csv").read_text().splitlines()) == 3
    assert (folder / "results.parquet").read_bytes() != b"a finished sweep's results\n"
