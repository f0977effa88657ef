"""A write that fails late keeps what was saved before and says so in one line (exit 4, no traceback): a disk that
fills up during `sim run` (the USD is saved as the run goes), an output gone read-only during `sim optimize`; a
sweep whose parquet mirror cannot be written warns once and goes on with the CSV. Faults are injected in-process
(the tests run as root, so permissions cannot make a folder unwritable)."""

from __future__ import annotations

import errno
import json
import os
import re

import numpy as np
import pytest
from pxr import Usd

import sim.atomic_file as atomic_file
from sim.atomic_file import OutputWriteError
from sim.cli import main
from sim.sweeps.table import ResultsTable
from sim.usd import UsdWriter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _failing_after(real, successes: int, error: OSError):
    """`real`, until it has been called `successes` times; then it raises `error`."""
    calls = []

    def call(*args, **kwargs):
        calls.append(args)
        if len(calls) > successes:
            raise error
        return real(*args, **kwargs)
    return call


def test_a_disk_that_fills_up_during_a_run_keeps_the_frames_saved_before(tmp_path, capsys, monkeypatch):
    out = tmp_path / "cloth.usda"
    # a full disk shows when the data is flushed: the third save (and the cause probe after it) meets ENOSPC
    monkeypatch.setattr(os, "fsync", _failing_after(os.fsync, 2, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    code = main(["run", os.path.join(ROOT, "scenes", "cloth.yaml"), "--out", str(out), "--quiet", "--frames", "400",
                 "--set", "output.save_every=1.0e-9", "--set", "cloth.0.grid.dim_x=6", "--set", "cloth.0.grid.dim_y=6"])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 4, err
    match = re.fullmatch(f"error: cannot write {re.escape(str(out))}: No space left on device; the file keeps "
                         r"frames 0-(\d+) from an earlier save\n", err)
    assert match, err
    kept = int(match.group(1))
    stage = Usd.Stage.Open(str(out))
    assert 2 <= kept < 400 and stage.GetEndTimeCode() == kept
    assert np.isfinite(np.asarray(stage.GetPrimAtPath("/World/cloth").GetAttribute("points").Get(kept))).all()
    assert [n for n in os.listdir(tmp_path) if n != "cloth.usda"] == [], "no temporary is left behind"


def test_a_usd_that_cannot_be_exported_is_one_line_naming_the_file():
    writer = UsdWriter("/proc/self/sim-output.usda")  # not even root can create files under /proc
    writer.write_frame(0, points={})
    with pytest.raises(OutputWriteError) as caught:
        writer.close()
    assert str(caught.value).startswith("cannot write /proc/self/sim-output.usda: ")
    assert "\n" not in str(caught.value)


def test_an_output_gone_read_only_during_an_optimisation_keeps_the_last_snapshot(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "opt"
    read_only = OSError(errno.EROFS, os.strerror(errno.EROFS))

    def snapshot_writes_fail_after_two(real=open, seen=[]):
        def fake(path, *args, **kwargs):
            if "snapshot" in os.path.basename(path):
                seen.append(path)
                if len(seen) > 2:
                    raise read_only
            return real(path, *args, **kwargs)
        return fake
    monkeypatch.setattr(atomic_file, "open", snapshot_writes_fail_after_two(), raising=False)
    code = main(["optimize", os.path.join(ROOT, "configs", "ball_bounce.yaml"), "--out-dir", str(folder),
                 "--iterations", "3", "--set", "output.save_every=1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 4, err
    assert err == f"error: cannot write {folder / 'snapshot.npz'}: Read-only file system\n", err
    with np.load(folder / "snapshot.npz") as snapshot:
        assert json.loads(str(snapshot["meta"]))["iteration"] == 2, "the snapshot before the failure is kept"
    assert not (folder / ".sim.lock").exists()


def test_a_parquet_mirror_that_fails_warns_once_and_the_csv_goes_on(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    notes = []
    table = ResultsTable(str(tmp_path), ["run", "key", "sag", "status"], say=notes.append)
    table.add({"run": 0, "key": "a", "sag": 0.5, "status": "ok"})
    assert (tmp_path / "results.parquet").exists()
    table.PARQUET_EVERY_S = 0.0
    monkeypatch.setattr(pq, "write_table", _failing_after(pq.write_table, 0, OSError(errno.ENOSPC, "No space left "
                                                                                     "on device")))
    for run in (1, 2, 3):
        table.add({"run": run, "key": str(run), "sag": 0.1 * run, "status": "ok"})
    rows = table.close()
    assert len(rows) == 4 and len((tmp_path / "results.csv").read_text().splitlines()) == 5
    warnings = [n for n in notes if n.startswith("warning:")]
    assert len(warnings) == 1 and "results.parquet" in warnings[0] and "No space left on device" in warnings[0]
    assert not (tmp_path / "results.parquet").exists(), "a stale mirror that disagrees with the CSV is removed"


def test_a_results_csv_that_cannot_be_written_is_one_line_naming_it(tmp_path, monkeypatch):
    import sim.sweeps.table as table_module
    table = ResultsTable(str(tmp_path), ["run", "key", "status"], say=lambda text: None)
    monkeypatch.setattr(table_module, "open", _failing_after(open, 0, OSError(errno.EROFS, "Read-only file system")),
                        raising=False)
    with pytest.raises(OutputWriteError, match="cannot write .*results.csv: Read-only file system"):
        table.add({"run": 0, "key": "a", "status": "ok"})
