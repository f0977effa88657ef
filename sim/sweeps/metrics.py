"""What a sweep records per run: built-in metrics of a scene's trajectory or an optimisation, and dotted paths into
the run's result object (`steps_per_second`, `losses.-1`, `params.cloth.0.vel`).

Trajectory metrics are over the particles (cloth vertices and free particles), observed every frame through
`Scene.run(observe=...)`; a scene without particles records them as empty (NaN) values.
"""

from __future__ import annotations

import math

import numpy as np

#: name -> (which targets it applies to, what it is). Centre of mass gives three columns: final_com_x/_y/_z.
BUILTIN_METRICS = {
    "final_com": ("scene", "centre of mass of the particles at the last frame [m] (columns _x, _y, _z)"),
    "max_speed": ("scene", "largest particle speed over all frames [m/s]"),
    "min_height": ("scene", "lowest particle height along the up axis over all frames [m]"),
    "sag": ("scene", "mean particle height at frame 0 minus the lowest height at the last frame [m]"),
    "energy": ("scene", "kinetic plus gravitational potential energy of the particles at the last frame [J]"),
    "penetration": ("scene", "deepest a particle went below the ground (height 0) over all frames [m]"),
    "final_loss": ("optimize", "loss at the learned parameters (those params.yaml holds)"),
    "iterations": ("optimize", "iterations the optimisation ran"),
    "wall_time": ("both", "seconds the run took, loading and compiling included [s]"),
    "steps_per_second": ("scene", "solver steps per second, compile time excluded"),
}


def metric_names(value, source, path: tuple, kind: str) -> list:
    """The validated `metrics` list: built-in names that apply to `kind`, or dotted paths into the result."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise source.error(path, "expected a list of metric names or dotted result paths")
    for i, name in enumerate(value):
        if name in BUILTIN_METRICS:
            applies = BUILTIN_METRICS[name][0]
            if applies not in (kind, "both"):
                raise source.error(path + (i,), f"{name} is a metric of {applies} runs, not of {kind} runs")
        elif "." not in name and not name.isidentifier():
            raise source.error(path + (i,), f"unknown metric {name!r}; built-ins: {', '.join(BUILTIN_METRICS)}")
    return list(value)


def metric_columns(names: list) -> list:
    """The table columns the metrics `names` fill (final_com is three)."""
    out = []
    for name in names:
        out += [f"final_com_{c}" for c in "xyz"] if name == "final_com" else [name]
    return out


class TrajectoryRecorder:
    """`Scene.run(observe=...)` callback: running extremes for the metrics, and the positions of every frame when
    a trajectory is kept (`keep_positions`). With `world`, only that world's particles count (a batch of runs
    stepped as the worlds of one model: WorldRecorders)."""

    def __init__(self, keep_positions: bool = False, world: int | None = None):
        self.world, self.rows = world, None
        self.up, self.gravity = 1, np.zeros(3)
        self.max_speed, self.min_height, self.start_height = 0.0, math.inf, math.nan
        self.positions = [] if keep_positions else None
        self.final = None  # (positions, velocities, masses) of the last frame

    def __call__(self, frame: int, state, model, q=None, qd=None):
        if getattr(model, "particle_count", 0) == 0:
            return
        if self.world is not None and self.rows is None:
            self.rows = np.nonzero(model.particle_world.numpy() == self.world)[0]
        if self.rows is not None and self.rows.size == 0:
            return  # a world without particles: its metrics stay empty (NaN)
        q = state.particle_q.numpy() if q is None else q
        qd = state.particle_qd.numpy() if qd is None else qd
        mass = model.particle_mass.numpy()
        if self.rows is not None:
            q, qd, mass = q[self.rows], qd[self.rows], mass[self.rows]
        q, qd = q.astype(np.float64), qd.astype(np.float64)
        if frame == 0:
            self.up, self.gravity = int(model.up_axis), np.asarray(list(model.gravity), dtype=np.float64)
            self.start_height = float(q[:, self.up].mean())
        self.max_speed = max(self.max_speed, float(np.linalg.norm(qd, axis=1).max()))
        self.min_height = min(self.min_height, float(q[:, self.up].min()))
        self.final = (q, qd, mass.astype(np.float64))
        if self.positions is not None:
            self.positions.append(q.astype(np.float32))

    def values(self) -> dict:
        """Every built-in scene metric by column (NaN where the scene has no particles)."""
        if self.final is None:
            return {c: math.nan for c in metric_columns(["final_com", "max_speed", "min_height", "sag", "energy",
                                                         "penetration"])}
        q, qd, m = self.final
        total = m.sum()
        com = (m[:, None] * q).sum(axis=0) / total if total > 0 else q.mean(axis=0)
        kinetic = 0.5 * float((m * (qd * qd).sum(axis=1)).sum())
        potential = -float((m[:, None] * q @ self.gravity).sum())
        return {"final_com_x": float(com[0]), "final_com_y": float(com[1]), "final_com_z": float(com[2]),
                "max_speed": self.max_speed, "min_height": self.min_height,
                "sag": self.start_height - float(q[:, self.up].min()),
                "energy": kinetic + potential, "penetration": max(0.0, -self.min_height)}


class WorldRecorders:
    """`Scene.run(observe=...)` callback of a batch: one TrajectoryRecorder per world, the state read once a
    frame."""

    def __init__(self, worlds: int, keep_positions: bool = False):
        self.recorders = [TrajectoryRecorder(keep_positions, world=k) for k in range(worlds)]

    def __call__(self, frame: int, state, model):
        if getattr(model, "particle_count", 0) == 0:
            return
        q, qd = state.particle_q.numpy(), state.particle_qd.numpy()
        for r in self.recorders:
            r(frame, state, model, q, qd)


def collect(names: list, builtin: dict, result) -> dict:
    """The row's metric columns: built-ins from `builtin` (column -> value), other names resolved in `result`."""
    row = {}
    for name in names:
        if name == "final_com":
            row.update({c: builtin.get(c, math.nan) for c in metric_columns([name])})
        elif name in BUILTIN_METRICS:
            row[name] = builtin.get(name, math.nan)
        else:
            row[name] = _plain(resolve_path(result, name))
    return row


def resolve_path(obj, dotted: str):
    """`obj` followed along `dotted`: attributes, dict keys (the longest key that matches, so `params.cloth.0.vel`
    finds the key 'cloth.0.vel'), and list indexes (negative ones too). Raises KeyError naming the missing part."""
    parts = dotted.split(".")
    i = 0
    while i < len(parts):
        if isinstance(obj, dict):
            for j in range(len(parts), i, -1):
                key = ".".join(parts[i:j])
                if key in obj:
                    obj, i = obj[key], j
                    break
            else:
                raise KeyError(f"{dotted}: no key {parts[i]!r} (keys: {', '.join(map(str, obj))})")
            continue
        part = parts[i]
        if isinstance(obj, (list, tuple)) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(obj) <= index < len(obj):
                raise KeyError(f"{dotted}: no item {index} (the list has {len(obj)})")
            obj = obj[index]
        elif hasattr(obj, part) and not part.startswith("_"):
            obj = getattr(obj, part)
        else:
            raise KeyError(f"{dotted}: the result has no {part!r}")
        i += 1
    return obj


def _plain(value):
    """A value a CSV cell and a parquet column can hold: numbers stay numbers, anything else becomes JSON text."""
    import json
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    try:
        return json.dumps(np.asarray(value).tolist())
    except (TypeError, ValueError):
        return str(value)
