"""`sim.sweep(path)`: expand a sweep file into runs, fan them out to an executor, stream the rows into the results
table, and return the table.

    table = sim.sweep("configs/sweeps/cloth_materials.yaml")               # a local Ray, or local processes
    table = sim.sweep("configs/sweeps/cloth_materials.yaml", address="auto")  # the Ray cluster this node is in
"""

from __future__ import annotations

import os
import sys
import time

from .. import interrupts
from ..output_folder import check_earlier_results, folder_lock
from .executors import LocalExecutor, RayExecutor, ray_available
from .report import SweepProgress, summary
from .spec import load_sweep
from .table import RESULTS_CSV, RESULTS_PARQUET, ResultsTable, columns
from .task import run_one


def sweep(path: str, address: str | None = None, *, workers: int | None = None, threads_per_run: int = 1,
          resume: bool = False, overwrite: bool = False, out_dir: str | None = None, progress: bool = False,
          say=None, run_fn=run_one, overrides=(), batch: int | None = None):
    """Run every run of the sweep file at `path` and return the results table, one row per run (a pandas
    DataFrame when pandas is importable, else a list of dicts in run order).

    Args:
        address: a Ray cluster ('auto', 'ray://host:port'); None starts a local Ray for this sweep (or uses the
            one this process is already connected to), or local processes when Ray is not installed.
        workers: runs in flight at once (default: local: cores / threads_per_run; Ray: as the cluster's CPUs allow).
        threads_per_run: kernel threads of each run, and the CPUs each Ray task asks for.
        resume: keep the complete rows already in out_dir and run only the others.
        overwrite: start over in an out_dir that holds results (without `resume` or `overwrite` such a folder is
            refused with SceneError). The folder is locked while the sweep writes into it.
        out_dir: where results.csv, results.parquet and kept outputs go (default out/sweeps/<sweep name>).
        progress: draw a progress bar on a terminal.
        say: where one-line notes go (default: stderr).
        run_fn: the function a worker runs per payload (tests wrap it to inject faults).
        overrides: extra KEY.PATH=VALUE overrides for every run, after the file's `set`.
        batch: runs per task, stepped together as the worlds of one model (default: the file's `batch`, else 1);
            each gives the row it gives alone (a batch with an invalid or blown-up run runs its runs one by one).
    Raises SceneError (file:line: key: message) for an invalid sweep file; failing runs are rows, never raised.
    An interrupt (KeyboardInterrupt, or SIGTERM/SIGHUP under `sim.interrupts`) stops the runs in flight, writes
    the finished rows, says the summary and is raised again.
    """
    say = say or (lambda text: print(text, file=sys.stderr))
    spec = load_sweep(path, overrides, batch)
    out_dir = out_dir or os.path.join("out", "sweeps", spec.name)
    check_earlier_results(out_dir, [RESULTS_CSV, RESULTS_PARQUET], resume=resume, overwrite=overwrite)
    with folder_lock(out_dir):
        table = ResultsTable(out_dir, columns(spec.axes, spec.metrics), resume=resume, say=say)
        todo = [r for r in spec.runs if r.key not in table.done_keys]
        executor = _executor(address, workers, threads_per_run, run_fn, say)
        interrupts.reinstall()  # ray.init replaces the SIGTERM handler with one that exits at once
        t0 = time.perf_counter()
        interrupted = None
        try:
            _drain(executor, spec, todo, table, out_dir, threads_per_run, workers, progress)
        except KeyboardInterrupt as e:
            interrupted = e
        finally:
            executor.shutdown(stop_running=interrupted is not None)
        rows = table.close()
    text = summary(rows, spec.axes, spec.metrics, spec.kind, time.perf_counter() - t0, executor.kind)
    if interrupted is not None:
        say(f"{text}\ninterrupted: {len(spec.runs) - len(rows)} of {len(spec.runs)} runs not done")
        raise interrupted
    say(text)
    return _as_table(rows, table.cols)


def _executor(address, workers, threads, run_fn, say):
    if ray_available():
        return RayExecutor(address, threads, workers, run_fn)
    if address is not None:
        from ..scene import SceneError
        raise SceneError("--address", (), "Ray is not installed: pip install -e '.[distributed]'")
    say("note: Ray is not installed (pip install -e '.[distributed]'); running the sweep in local processes")
    return LocalExecutor(workers or max(1, (os.cpu_count() or 1) // threads), run_fn)


def _drain(executor, spec, todo: list, table, out_dir: str, threads: int, workers, progress: bool):
    """Keep the executor busy until every run in `todo` has a row in `table`."""
    import kernels
    limit = workers or getattr(executor, "workers", None) or max(1, executor.cluster_cpus // threads)
    cache_dir = kernels.config.cache_dir if executor.shares_cache else None
    queue = [_payload(spec, run, out_dir, threads, cache_dir) for run in todo]
    if spec.batch > 1:  # consecutive runs together: one task each, its rows coming back at once
        queue = [batch_payload(queue[i:i + spec.batch], len(spec.axes)) for i in range(0, len(queue), spec.batch)]
    queue.reverse()
    bar = SweepProgress(len(todo), enabled=progress)
    done = failed = 0
    try:
        while queue or executor.pending:
            while queue and len(executor.pending) < limit:
                executor.submit(queue.pop())
            for row in executor.wait():
                table.add(row)
                done += 1
                failed += row["status"] != "ok"
            bar.update(done, failed, len(executor.pending))
        bar.update(done, failed, 0, force=True)
    finally:
        bar.close()


def _payload(spec, run, out_dir: str, threads: int, cache_dir) -> dict:
    return {"index": run.index, "key": run.key, "kind": spec.kind, "target": spec.target,
            "overrides": run.overrides, "values": run.values, "metrics": spec.metrics, "keep": spec.keep,
            "run_dir": os.path.abspath(os.path.join(out_dir, "runs", f"{run.index:04d}")), "threads": threads,
            "cache_dir": cache_dir, "gpus": 1 if _run_device(spec, run).startswith("cuda") else 0}


def batch_payload(payloads: list, axes: int) -> dict:
    """One task for the runs of `payloads`: their own payloads (each run's last `axes` overrides are its axis
    values, the rest the same for all), and what a task needs at its top level (device, threads, cache)."""
    first = payloads[0]
    if len(payloads) == 1:
        return first
    return {"batch": payloads, "axes": axes, "kind": first["kind"], "target": first["target"],
            "threads": first["threads"], "cache_dir": first["cache_dir"],
            "gpus": max(p["gpus"] for p in payloads), "index": first["index"], "key": first["key"],
            "values": first["values"]}


def _run_device(spec, run) -> str:
    """The device a run simulates on: its last `sim.device` override, else the scene's sim.device ("cpu" when the
    scene cannot be read here: the run itself reports why)."""
    key = "sim.device=" if spec.kind == "scene" else "scene.sim.device="
    for o in reversed(run.overrides):
        if o.startswith(key):
            return o[len(key):].strip().strip("'\"")  # axis values are written as YAML scalars ("cuda")
    try:
        if spec.kind == "scene":
            from ..scene import Scene
            return str(Scene.load(spec.target).spec.sim.device)
        from ..optimization import load_config
        return str(load_config(spec.target).scene.spec.sim.device)
    except Exception:  # an invalid target is the run's failure to report, as a row
        return "cpu"


def _as_table(rows: list, cols: list):
    try:
        import pandas as pd
    except ImportError:
        return [{c: r.get(c) for c in cols} for r in rows]
    return pd.DataFrame([{c: r.get(c) for c in cols} for r in rows], columns=cols)
