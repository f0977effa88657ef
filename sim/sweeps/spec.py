"""Read a sweep file into the list of runs it names.

    description: cloth stiffness against sag
    scene: ../../scenes/cloth.yaml        # or  optimize: ../cloth_throw.yaml
    set: [sim.frames=60]                  # overrides every run gets
    mode: grid                            # grid (every combination) or zip (the i-th value of every axis)
    axes:
      materials.cotton.tri_ke: {logrange: [1.0e2, 1.0e4], count: 3}
      materials.cotton.edge_ke: [0.01, 0.1]
    metrics: [sag, max_speed, wall_time, steps_per_second]
    keep: none                            # usd, npz or none
    batch: 8                              # runs stepped together as the worlds of one model (default 1)

Errors are SceneError with file, line and key (`sim sweep` exits with code 2 and runs nothing).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass

from ..scene.source import load_source
from ..scene.world_overrides import PER_WORLD_KEYS
from .axes import axis_values
from .metrics import metric_names

KEEP = ("none", "usd", "npz")
KEYS = ("description", "scene", "optimize", "set", "mode", "axes", "metrics", "keep", "batch")


@dataclass
class Run:
    """One run of a sweep: its axis values, the `--set` overrides they become, and the key that identifies it
    across invocations (a hash of the target file's content and the overrides)."""

    index: int
    values: dict  # axis key path -> value
    overrides: list  # "key.path=value" texts: the sweep's `set` then the axis values
    key: str


@dataclass
class SweepSpec:
    """A validated sweep: what to run (`kind` 'scene' or 'optimize', `target` path), its runs, what to record."""

    path: str
    description: str
    kind: str
    target: str
    mode: str
    axes: list  # axis key paths, in file order
    runs: list
    metrics: list  # column names; built-in names or dotted paths into the run's result
    keep: str
    batch: int = 1  # runs of one task, stepped together as the worlds of one model (each run's axis values its own)

    @property
    def name(self) -> str:
        return os.path.splitext(os.path.basename(self.path))[0]


def load_sweep(path: str, overrides=(), batch: int | None = None) -> SweepSpec:
    """Read and validate the sweep file at `path`; the target file must exist (its content keys the runs).
    `overrides` (KEY.PATH=VALUE) apply to every run after the file's `set`, and are part of each run's key;
    `batch` (--batch) replaces the file's `batch`."""
    source = load_source(str(path))
    data = source.data
    if not isinstance(data, dict):
        raise source.error((), "expected a mapping of sweep settings")
    for key in data:
        if key not in KEYS:
            raise source.error((key,), f"unknown key; a sweep file takes {', '.join(KEYS)}")
    kind, target = _target(data, source, path)
    fixed = _text_list(data.get("set", []), source, ("set",)) + list(overrides)
    mode = data.get("mode", "grid")
    if mode not in ("grid", "zip"):
        raise source.error(("mode",), f"expected grid or zip, got {mode!r}")
    axes = data.get("axes")
    if not isinstance(axes, dict) or not axes:
        raise source.error(("axes",), "expected a mapping of key paths to the values they take")
    columns = {key: axis_values(value, source, ("axes", key)) for key, value in axes.items()}
    combos = _combinations(columns, mode, source)
    metrics = metric_names(data.get("metrics", ["wall_time"]), source, ("metrics",), kind)
    keep = data.get("keep", "none")
    if keep not in KEEP:
        raise source.error(("keep",), f"expected one of {', '.join(KEEP)}, got {keep!r}")
    batch = _batch(data.get("batch", 1) if batch is None else batch, kind, list(columns), keep, source)
    content = _file_digest(target)
    runs = []
    for i, combo in enumerate(combos):
        values = dict(zip(columns, combo))
        overrides = fixed + [f"{k}={json.dumps(v)}" for k, v in values.items()]
        runs.append(Run(i, values, overrides, _run_key(kind, content, overrides)))
    return SweepSpec(source.file, str(data.get("description", "")), kind, target, mode, list(columns), runs,
                     metrics, keep, batch)


def _batch(value, kind: str, axes: list, keep: str, source) -> int:
    """The validated batch size: runs become worlds of one model only where what they vary can differ per world."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise source.error(("batch",), f"expected an integer >= 1 (runs stepped together as worlds), got {value!r}")
    if value == 1:
        return 1
    for key in axes:
        scene_key = key if kind == "scene" else (key[len("scene."):] if key.startswith("scene.") else None)
        if scene_key is None:
            raise source.error(("batch",), f"axis {key} sets the optimisation config itself, which every world "
                               "of one model shares: batch: 1 runs these one by one")
        if scene_key.split(".")[0] not in PER_WORLD_KEYS:
            raise source.error(("batch",), f"axis {key} cannot differ between the worlds of one model (per-world "
                               f"keys: {', '.join(PER_WORLD_KEYS)}): batch: 1 runs these one by one")
    if kind == "optimize" and keep == "usd":
        raise source.error(("batch",), "keep: usd writes each optimisation's own rollouts: batch: 1 with keep: usd")
    return value


def _target(data: dict, source, path: str) -> tuple:
    named = [k for k in ("scene", "optimize") if k in data]
    if len(named) != 1:
        raise source.error((), "name exactly one of scene (a scene file for `sim run`) or optimize "
                               "(a config for `sim optimize`)")
    kind = named[0]
    value = data[kind]
    if not isinstance(value, str) or not value:
        raise source.error((kind,), "expected a file name")
    target = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), value))
    if not os.path.isfile(target):
        raise source.error((kind,), f"no such file: {target}")
    return kind, target


def _text_list(value, source, path: tuple) -> list:
    if not isinstance(value, list) or not all(isinstance(v, str) and "=" in v for v in value):
        raise source.error(path, "expected a list of KEY.PATH=VALUE texts")
    return list(value)


def _combinations(columns: dict, mode: str, source) -> list:
    if mode == "grid":
        return list(itertools.product(*columns.values()))
    lengths = {key: len(values) for key, values in columns.items()}
    if len(set(lengths.values())) != 1:
        first = next(iter(lengths))
        other = next(k for k in lengths if lengths[k] != lengths[first])
        raise source.error(("axes", other), f"zip mode needs axes of equal length: {other} has "
                                            f"{lengths[other]} values, {first} has {lengths[first]}")
    return list(zip(*columns.values()))


def _file_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _run_key(kind: str, content: str, overrides: list) -> str:
    text = json.dumps([kind, content, overrides])
    return hashlib.sha256(text.encode()).hexdigest()[:16]

