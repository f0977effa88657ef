"""One run of a sweep, executed where a worker runs it (a Ray task or a local process): load the scene or config
with the run's overrides, run it with K kernel threads, and return its row.

A run never raises for a bad run: invalid input, a blow-up or any other exception becomes a row with a status and
the reason, so one bad corner of the parameter space cannot stop a sweep.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback

#: Row statuses: ok; invalid (the overrides or the file failed validation, `sim run` exit 2); blowup (non-finite
#: values, exit 3); error (anything else, with the exception's last line).
STATUSES = ("ok", "invalid", "blowup", "error")


def run_one(payload: dict):
    """Execute the run described by `payload` (built by `sim.sweeps.driver._payload`) and return its row; a
    batch's payload (driver.batch_payload) returns the list of its runs' rows (run_batch).

    Keys: index, key, kind ('scene' or 'optimize'), target, overrides, values, metrics, keep, run_dir, threads,
    cache_dir (None: the node's default cache)."""
    if "batch" in payload:
        return run_batch(payload)
    _configure_kernels(payload)
    from ..scene import SceneError, SimulationError
    row = {"run": payload["index"], "key": payload["key"], **payload["values"], "status": "ok", "error": "",
           "seconds": 0.0, "host": socket.gethostname(), "node": _ray_node()}
    t0 = time.perf_counter()
    try:
        run = _run_scene if payload["kind"] == "scene" else _run_optimize
        row.update(run(payload, t0))
    except SceneError as e:
        row.update(status="invalid", error=str(e))
    except (SimulationError, FloatingPointError) as e:
        row.update(status="blowup", error=str(e))
    except Exception as e:  # a bug or an environment problem in one run must not stop the sweep
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        row.update(status="error", error=last)
    row["seconds"] = time.perf_counter() - t0
    return row


def _run_scene(payload: dict, t0: float) -> dict:
    from ..scene import Scene
    from .metrics import TrajectoryRecorder, collect
    from ..optimization.config import refuse_worlds
    scene = Scene.load(payload["target"], payload["overrides"])
    refuse_worlds(scene, "a sweep's metrics measure one world")
    keep = payload["keep"]
    recorder = TrajectoryRecorder(keep_positions=keep == "npz")
    out = None
    if keep == "usd":
        os.makedirs(payload["run_dir"], exist_ok=True)
        out = os.path.join(payload["run_dir"], f"{scene.name}.usd")
    result = scene.run(out=out, write=keep == "usd", observe=recorder)
    if keep == "npz":
        _save_npz(payload["run_dir"], positions=recorder.positions, fps=scene.spec.sim.fps)
    builtin = recorder.values()
    builtin.update(wall_time=time.perf_counter() - t0, steps_per_second=result.steps_per_second)
    return collect(payload["metrics"], builtin, result)


def _run_optimize(payload: dict, t0: float) -> dict:
    from ..optimization import load_config, optimize
    from .metrics import collect
    cfg = load_config(payload["target"], optimize_overrides(payload["target"], payload["overrides"]))
    keep = payload["keep"]
    # a retried or resumed run starts its own folder over: the sweep, not the run, owns what is kept there
    result = optimize(cfg, out_dir=payload["run_dir"], write=keep == "usd", overwrite=True)
    if keep == "npz":
        _save_npz(payload["run_dir"], losses=result.losses)
    builtin = {"final_loss": result.final_loss,
               "iterations": result.iterations, "wall_time": time.perf_counter() - t0}
    return collect(payload["metrics"], builtin, result)


def _configure_kernels(payload: dict):
    """The worker's kernel settings for a task: freed host blocks kept (as `sim run` does,
    kernels/runtime/host_memory.py), the sweep's compile cache, `threads` kernel threads."""
    import kernels
    kernels.keep_freed_host_memory()
    if payload.get("cache_dir"):
        kernels.config.cache_dir = payload["cache_dir"]
    kernels.config.cpu_threads = payload["threads"]


def run_batch(payload: dict) -> list:
    """The rows of a batch of runs stepped together as the worlds of one model: run k is world k, its axis
    overrides as `worlds.K.` overrides (a scene), or member k of a population (an optimisation). Each row is the
    one the run gives alone (within float rounding), its `seconds` and `wall_time` the batch's share. A batch
    that cannot give that, because one run is invalid or blows up (which would stop the others), runs its runs one
    by one instead."""
    members = payload["batch"]
    _configure_kernels(payload)
    t0 = time.perf_counter()
    try:
        batched = _batch_scene if payload["kind"] == "scene" else _batch_optimize
        metrics = batched(members, payload["axes"], t0)
    except Exception:  # noqa: BLE001  every run then reports for itself, as alone
        return [run_one(m) for m in members]
    share = (time.perf_counter() - t0) / len(members)
    rows = []
    for m, values in zip(members, metrics):
        row = {"run": m["index"], "key": m["key"], **m["values"], "status": "ok", "error": "", "seconds": share,
               "host": socket.gethostname(), "node": _ray_node()}
        row.update(values)
        if "wall_time" in row:
            row["wall_time"] = share
        rows.append(row)
    return rows


def _split(members: list, axes: int) -> tuple:
    """(the overrides every run of the batch shares, per run the `worlds.K.`-form of its axis overrides)."""
    shared = members[0]["overrides"][:-axes]
    own = [[f"worlds.{k}.{o}" for o in m["overrides"][-axes:]] for k, m in enumerate(members)]
    return shared, own


def _batch_scene(members: list, axes: int, t0: float) -> list:
    from ..scene import Scene
    from .metrics import WorldRecorders, collect
    shared, own = _split(members, axes)
    n, keep = len(members), members[0]["keep"]
    scene = Scene.load(members[0]["target"], shared + [f"sim.worlds={n}"] + [o for items in own for o in items])
    recorders = WorldRecorders(n, keep_positions=keep == "npz")
    out = None
    if keep == "usd":
        os.makedirs(members[0]["run_dir"], exist_ok=True)
        out = os.path.join(members[0]["run_dir"], f"{scene.name}.usd")
    result = scene.run(out=out, write=keep == "usd", observe=recorders, split=True)
    rows = []
    for k, (m, recorder) in enumerate(zip(members, recorders.recorders)):
        if keep == "usd":  # world k's file (<name>_wK.usd) becomes run k's <name>.usd
            os.makedirs(m["run_dir"], exist_ok=True)
            os.replace(result.outputs[k], os.path.join(m["run_dir"], f"{scene.name}.usd"))
        if keep == "npz":
            _save_npz(m["run_dir"], positions=recorder.positions, fps=scene.spec.sim.fps)
        builtin = recorder.values()
        builtin.update(wall_time=time.perf_counter() - t0, steps_per_second=result.steps_per_second)
        rows.append(collect(m["metrics"], builtin, result))
    return rows


def _batch_optimize(members: list, axes: int, t0: float) -> list:
    from ..optimization import load_config
    from ..optimization.population_run import optimize_population
    from .metrics import collect
    shared, own = _split(members, axes)
    cfg = load_config(members[0]["target"], optimize_overrides(members[0]["target"], shared))
    # the axes are `scene.` keys (sweeps/spec.py): world k's scene takes run k's values
    world = [o.replace(".scene.", ".", 1) for items in own for o in items]
    result = optimize_population(cfg, len(members), write=False, world_overrides=world)
    if any(m["status"].startswith("blew up") for m in result.members):
        raise FloatingPointError("a run of the batch blew up")  # alone it is a blowup row: run_batch re-runs them
    rows = []
    for m, one in zip(members, result.member_results):
        if m["keep"] == "npz":
            _save_npz(m["run_dir"], losses=one.losses)
        builtin = {"final_loss": one.final_loss, "iterations": one.iterations, "wall_time": time.perf_counter() - t0}
        rows.append(collect(m["metrics"], builtin, one))
    return rows


def optimize_overrides(config_path: str, overrides: list) -> list:
    """Overrides for an optimisation config: `scene.key=value` ones are added to the config's own `set` list (the
    scene overrides it applies), the others apply to the config's keys as they are."""
    from ..scene.source import load_source
    scene = [o[len("scene."):] for o in overrides if o.startswith("scene.")]
    rest = [o for o in overrides if not o.startswith("scene.")]
    if not scene:
        return rest
    existing = load_source(config_path).data.get("set", []) or []
    return rest + [f"set={json.dumps(list(existing) + scene)}"]


def _ray_node() -> str:
    """The Ray node id running this task (several nodes may share one host name), '' outside Ray."""
    import sys
    ray = sys.modules.get("ray")  # imported by the Ray worker itself; never imported here for local processes
    if ray is None or not ray.is_initialized():
        return ""
    return ray.get_runtime_context().get_node_id()[:12]


def _save_npz(run_dir: str, **arrays):
    import numpy as np
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, "trajectory.npz")
    tmp = path + ".tmp.npz"  # written then renamed: a killed worker never leaves half a file
    np.savez_compressed(tmp, **{k: np.asarray(v) for k, v in arrays.items()})
    os.replace(tmp, path)
