"""`sim sweep`: a sweep on a local Ray gives the metrics of the same runs done one by one; failing runs become rows;
a killed worker is retried; --resume runs only the missing rows; local processes without Ray give the same table;
an invalid sweep file is refused with file, line and key (exit 2). One 2-CPU Ray serves the whole module."""

from __future__ import annotations

import csv
import json
import math
import os

import pytest

from sim.cli import main
from sim.scene import Scene
from sim.sweeps import load_sweep, sweep
from sim.sweeps.metrics import TrajectoryRecorder
from sim.scene.errors import SceneError

ray = pytest.importorskip("ray")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["sim.frames=5", "cloth.0.grid.dim_x=6", "cloth.0.grid.dim_y=6", "sim.substeps=4"]
METRICS = ["sag", "max_speed", "min_height", "final_com", "energy"]
COMPARED = ["sag", "max_speed", "min_height", "final_com_x", "final_com_y", "final_com_z", "energy"]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module; its workers import this tree's packages and the tests' fault helpers."""
    path = os.pathsep.join([ROOT, os.path.join(ROOT, "tests")])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield
    ray.shutdown()


def _write_sweep(tmp_path, axes: str, scene=os.path.join(ROOT, "scenes", "cloth.yaml"), extra="") -> str:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"scene: {scene}\nset: {TINY!r}\nmode: grid\naxes:\n{axes}\n"
                    f"metrics: {METRICS + ['wall_time']!r}\n{extra}")
    return str(path)


EIGHT = ("  materials.cotton.tri_ke: {logrange: [1.0e2, 1.0e5], count: 4}\n"
         "  cloth.0.vel: [[0, 0, 0], [0.5, 1.0, 0]]\n")


def _quiet(text):
    """Sweep notes and summaries are not what these tests check."""


def test_eight_runs_on_ray_match_the_same_runs_one_by_one(tmp_path):
    path = _write_sweep(tmp_path, EIGHT)
    table = sweep(path, out_dir=str(tmp_path / "out"), say=_quiet)
    assert len(table) == 8 and (table["status"] == "ok").all()
    assert table["node"].str.len().min() > 0, "every run ran as a Ray task"
    for run in load_sweep(path).runs:
        recorder = TrajectoryRecorder()
        Scene.load(os.path.join(ROOT, "scenes", "cloth.yaml"), run.overrides).run(write=False, observe=recorder)
        expected = recorder.values()
        row = table[table["run"] == run.index].iloc[0]
        for column in COMPARED:
            assert row[column] == pytest.approx(expected[column], rel=1e-6, abs=1e-9), (run.index, column)
    speeds = sorted(set(table["max_speed"].round(6)))
    assert len(speeds) > 1, "the axes change the runs"
    with open(tmp_path / "out" / "results.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 8
    import pandas as pd
    parquet = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert list(parquet["run"]) == list(range(8))
    assert parquet["sag"].tolist() == pytest.approx(table["sag"].tolist())


def test_bad_override_and_blow_up_are_failed_rows(tmp_path):
    scene = tmp_path / "stiff.yaml"
    scene.write_text("sim: {fps: 10, frames: 20, substeps: 1, solver: {type: semi_implicit}}\n"
                     "cloth:\n  - name: sheet\n    grid: {dim_x: 4, dim_y: 4, cell_x: 0.1, cell_y: 0.1}\n"
                     "    material: {tri_ke: 1.0e3, tri_ka: 1.0e3}\n    vel: [0, 0, 5]\n    mass: 0.01\n")
    path = tmp_path / "sweep.yaml"
    path.write_text(f"scene: {scene}\nmode: zip\naxes:\n  sim.fps: [100, 10, 100]\n"
                    "  sim.substeps: [10, 1, 10]\n  cloth.0.mass: [0.01, 0.01, -1]\nmetrics: [max_speed]\n")
    table = sweep(str(path), out_dir=str(tmp_path / "out"), say=_quiet)
    assert list(table["status"]) == ["ok", "blowup", "invalid"]
    assert "not finite" in table["error"][1] or "beyond the bound" in table["error"][1]
    assert "cloth[0].mass" in table["error"][2] and "--set cloth.0.mass=-1" in table["error"][2]
    assert math.isnan(table["max_speed"][2])


def test_a_killed_worker_is_retried_and_its_row_completes(tmp_path):
    from _sweep_faults import kill_first_attempt
    path = _write_sweep(tmp_path, "  materials.cotton.tri_ke: [100.0, 1000.0, 10000.0]\n")
    table = sweep(path, out_dir=str(tmp_path / "out"), say=_quiet, run_fn=kill_first_attempt)
    assert os.path.exists(tmp_path / "out" / "runs" / "0001.attempted"), "run 1 did kill its first worker"
    assert list(table["status"]) == ["ok"] * 3


def test_resume_runs_only_the_missing_rows_and_equals_an_uninterrupted_sweep(tmp_path):
    path = _write_sweep(tmp_path, EIGHT)
    full = sweep(path, out_dir=str(tmp_path / "full"), say=_quiet)
    out = tmp_path / "cut"
    sweep(path, out_dir=str(out), say=_quiet)
    # an interrupted sweep: three finished rows, and one row of a run that hit an unexpected error
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows[3]["status"] = "error"
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[:4])
    resumed = sweep(path, out_dir=str(out), resume=True, say=_quiet)
    kept = {r["run"]: r["seconds"] for r in rows[:3]}
    for run, seconds in kept.items():
        assert resumed["seconds"][int(run)] == pytest.approx(float(seconds)), "complete rows are not run again"
    assert resumed["seconds"][3] != pytest.approx(float(rows[3]["seconds"])), "the error row ran again"
    assert list(resumed["run"]) == list(range(8)) and (resumed["status"] == "ok").all()
    for column in ["key", "materials.cotton.tri_ke", "cloth.0.vel"] + COMPARED:
        assert resumed[column].tolist() == pytest.approx(full[column].tolist()) if column in COMPARED \
            else resumed[column].tolist() == full[column].tolist(), column


def test_local_processes_without_ray_give_the_same_table(tmp_path, monkeypatch):
    import sim.sweeps.driver as driver
    monkeypatch.setattr(driver, "ray_available", lambda: False)
    notes = []
    path = _write_sweep(tmp_path, "  materials.cotton.tri_ke: [100.0, 10000.0]\n")
    local = sweep(path, out_dir=str(tmp_path / "local"), workers=2, say=notes.append)
    assert sum("Ray is not installed" in n for n in notes) == 1
    assert (local["node"] == "").all() and (local["status"] == "ok").all()
    monkeypatch.undo()
    on_ray = sweep(path, out_dir=str(tmp_path / "ray"), say=_quiet)
    for column in COMPARED:
        assert local[column].tolist() == pytest.approx(on_ray[column].tolist(), rel=1e-6), column


@pytest.mark.parametrize("body, where, message", [
    ("scene: {scene}\naxes:\n  sim.frames: {{range: [1, 5]}}\n", ":3", "axes.sim.frames.count: expected a positive integer"),
    ("scene: {scene}\naxes: {{a.b: [1]}}\nmode: zip\nmetrics: [nonsense metric]\n", ":4", "metrics[0]"),
    ("scene: {scene}\naxes: {{a.b: [1], c.d: [1, 2]}}\nmode: zip\n", ":2", "zip mode needs axes of equal"),
    ("scene: {scene}\naxes: {{a: {{random: [0, 1], count: 3}}}}\n", ":2", "integer seed"),
    ("optimize: {scene}\naxes: {{a: [1]}}\nmetrics: [sag]\n", ":3", "sag is a metric of scene runs"),
    ("scene: missing.yaml\naxes: {{a: [1]}}\n", ":1", "scene: no such file"),
    ("scene: {scene}\naxis: {{a: [1]}}\n", ":2", "axis: unknown key"),
    ("scene: {scene}\naxes: {{sim.substeps: [2, 4]}}\nbatch: 2\n", ":3", "axis sim.substeps cannot differ between the "
     "worlds"),
    ("optimize: {config}\naxes: {{optimizer.lr: [0.1, 0.2]}}\nmetrics: [final_loss]\nbatch: 2\n", ":4",
     "axis optimizer.lr sets the optimisation config itself"),
    ("scene: {scene}\naxes: {{cloth.0.mass: [1, 2]}}\nbatch: 0\n", ":3", "batch: expected an integer >= 1"),
])
def test_invalid_sweep_files_are_refused_with_file_line_and_key(tmp_path, capsys, body, where, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body.format(scene=os.path.join(ROOT, "scenes", "cloth.yaml"),
                                config=os.path.join(ROOT, "configs", "cloth_throw.yaml")))
    assert main(["sweep", str(path), "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}{where}:" in err and message in err, err
    assert not os.path.exists(tmp_path / "out"), "nothing is written"


def test_shipped_sweeps_name_their_runs():
    materials = load_sweep(os.path.join(ROOT, "configs", "sweeps", "cloth_materials.yaml"))
    assert materials.kind == "scene" and len(materials.runs) == 12
    assert {"sag", "max_speed"} <= set(materials.metrics)
    restarts = load_sweep(os.path.join(ROOT, "configs", "sweeps", "throw_restarts.yaml"))
    assert restarts.kind == "optimize" and len(restarts.runs) == 16 and "final_loss" in restarts.metrics
    assert len({r.key for r in restarts.runs}) == 16, "16 different initial velocities"
    with pytest.raises(SceneError):
        load_sweep(os.path.join(ROOT, "configs", "cloth_throw.yaml"))


def test_an_optimisation_sweep_records_final_losses_and_names_the_best_run(tmp_path):
    # throw_restarts.yaml's form, cut to 2 starts of 2 iterations: each row is a `sim optimize` run
    path = tmp_path / "restarts.yaml"
    path.write_text(f"optimize: {os.path.join(ROOT, 'configs', 'cloth_throw.yaml')}\nset: [iterations=2]\nmode: zip\n"
                    "axes:\n  scene.cloth.0.vel: {random: [[-3.0, 1.0, -3.0], [3.0, 6.0, 3.0]], count: 2, seed: 7}\n"
                    "metrics: [final_loss, iterations, wall_time]\nkeep: none\n")
    lines = []
    table = sweep(str(path), out_dir=str(tmp_path / "out"), say=lines.append)
    assert len(table) == 2 and (table["status"] == "ok").all()
    assert (table["iterations"] == 2).all()
    losses = table["final_loss"].tolist()
    assert all(math.isfinite(x) and x > 0 for x in losses) and losses[0] != losses[1]
    best = int(table["run"][table["final_loss"].idxmin()])
    assert any(line.startswith(f"best run {best}:") for text in lines for line in str(text).splitlines()), lines


def test_runs_on_a_cuda_device_ask_ray_for_a_gpu(tmp_path):
    from sim.sweeps.driver import _payload
    path = _write_sweep(tmp_path, "  sim.device: [cpu, cuda]\n")
    spec = load_sweep(path)
    gpus = [_payload(spec, run, str(tmp_path), 1, None)["gpus"] for run in spec.runs]
    assert gpus == [0, 1]
    assert _payload(load_sweep(_write_sweep(tmp_path, EIGHT)), spec.runs[0], str(tmp_path), 1, None)["gpus"] == 0


@pytest.mark.parametrize("keep", ["usd", "npz", "none"])
def test_kept_outputs(tmp_path, keep):
    import numpy as np
    path = _write_sweep(tmp_path, "  cloth.0.vel: [[0, 0, 0], [0.5, 1.0, 0]]\n", extra=f"keep: {keep}\n")
    out = tmp_path / "out"
    table = sweep(path, out_dir=str(out), say=_quiet)
    assert (table["status"] == "ok").all()
    kept = sorted(p.relative_to(out / "runs").as_posix() for p in (out / "runs").rglob("*") if p.is_file()) \
        if (out / "runs").exists() else []
    if keep == "none":
        assert kept == []
    elif keep == "usd":
        assert len(kept) == 2 and all(k.endswith(".usd") for k in kept), kept
        from pxr import Usd
        assert Usd.Stage.Open(str(out / "runs" / kept[0])).GetEndTimeCode() > 0
    else:
        assert len(kept) == 2 and all(k.endswith(".npz") for k in kept), kept
        positions = np.load(out / "runs" / kept[1])["positions"]
        assert positions.ndim == 3 and positions.shape[2] == 3 and np.isfinite(positions).all()


def test_batched_runs_as_worlds_of_one_model_give_the_rows_of_the_runs_one_by_one(tmp_path):
    # 4 runs in tasks of 3 worlds (3 + 1); then a batch with an invalid run, which runs one by one
    path = _write_sweep(tmp_path, "  materials.cotton.tri_ke: [1.0e2, 1.0e4]\n  cloth.0.vel: [[0, 0, 0], [0.5, 1.0, 0]]\n",
                        extra="batch: 3\n")
    alone = sweep(path, out_dir=str(tmp_path / "alone"), say=_quiet, batch=1)
    batched = sweep(path, out_dir=str(tmp_path / "batched"), say=_quiet)
    assert (batched["status"] == "ok").all() and len(batched) == 4
    for column in COMPARED:  # the same float32 rollouts: only the order of atomic sums may differ
        assert batched[column].tolist() == pytest.approx(alone[column].tolist(), rel=1e-5, abs=1e-6), column
    shares = batched.groupby("wall_time").size().sort_values().tolist()
    assert shares == [1, 3], "each task's runs share its wall time"
    bad = _write_sweep(tmp_path, "  cloth.0.mass: [0.1, -1, 0.2]\n", extra="batch: 3\n")
    table = sweep(bad, out_dir=str(tmp_path / "bad"), say=_quiet)
    assert list(table["status"]) == ["ok", "invalid", "ok"]
    assert "--set cloth.0.mass=-1" in table["error"][1]


def test_a_batched_optimisation_sweep_is_a_population_with_the_rows_of_the_runs_one_by_one(tmp_path):
    path = tmp_path / "restarts.yaml"
    path.write_text(f"optimize: {os.path.join(ROOT, 'configs', 'cloth_throw.yaml')}\n"
                    "set: [iterations=2, frames=10]\nmode: zip\n"
                    "axes:\n  scene.cloth.0.vel: {random: [[-3.0, 1.0, -3.0], [3.0, 6.0, 3.0]], count: 2, seed: 7}\n"
                    "metrics: [final_loss, iterations, params.cloth.0.vel]\nbatch: 2\n")
    alone = sweep(str(path), out_dir=str(tmp_path / "alone"), say=_quiet, batch=1)
    batched = sweep(str(path), out_dir=str(tmp_path / "batched"), say=_quiet)
    assert (batched["status"] == "ok").all() and (batched["iterations"] == 2).all()
    assert batched["final_loss"].tolist() == pytest.approx(alone["final_loss"].tolist(), rel=1e-5)
    for got, want in zip(batched["params.cloth.0.vel"], alone["params.cloth.0.vel"]):
        assert json.loads(got) == pytest.approx(json.loads(want), rel=1e-5)
