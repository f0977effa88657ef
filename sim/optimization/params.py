"""Learned parameters: a scene key path (`cloth.0.vel`, `cloth.0.material.tri_ke`, `colliders.1.pos`, ...)
mapped to a flat float variable and to the model or initial-state entries it sets (keys.py's table).

Each iteration `apply` launches kernels that copy the variable into those entries inside the Tape, so the
gradient reaches the variable. With `log: true` the variable holds log(value) (positive scalars such as
stiffness, where steps should be relative).
"""

from __future__ import annotations

import numpy as np

import kernels as wp

from ..scene.errors import SceneError
from .keys import KeyContext, targets_of
from .learnable import REFUSED, acting_solvers, pattern_of


class LearnedParameter:
    """One learned scene key. `variable` is the optimised float array (log of the value when `log`)."""

    def __init__(self, path: str, targets: list, initial: np.ndarray, *, log: bool = False, bounds=None,
                 shape=()):
        self.path, self.targets, self.log, self.shape = path, targets, bool(log), tuple(shape)
        initial = np.asarray(initial, np.float64).reshape(-1)
        if self.log and np.any(initial <= 0):
            raise ValueError(f"{path}: log: true needs a positive value, got {initial.min():g}")
        self._initial = np.log(initial) if self.log else initial
        self.bounds = None
        if bounds is not None:
            lo, hi = bounds
            self.bounds = (np.log(lo) if self.log else lo, np.log(hi) if self.log else hi)
        self.variable = None

    @property
    def size(self) -> int:
        return self._initial.size

    def initial_variable(self) -> np.ndarray:
        return self._initial.astype(np.float32)

    def start_from(self, values):
        """Start from `values` (in the scene's units) instead of the scene's own."""
        start = self.encode(values)
        if start.size != self.size:
            raise ValueError(f"{self.path}: expected {self.size} value(s), got {start.size}")
        self._initial = start

    def allocate(self, device, values=None):
        """Create the variable array (initial values, or `values` in value space) and put the targets' index
        arrays on `device`."""
        x = self._initial if values is None else self.encode(values)
        self.variable = wp.array(np.asarray(x, np.float32), dtype=float, device=device, requires_grad=True)
        for t in self.targets:
            t.upload(device)

    def encode(self, values) -> np.ndarray:
        v = np.asarray(values, np.float64).reshape(-1)
        return np.log(v) if self.log else v

    def value(self) -> np.ndarray:
        """Current value(s) in the scene's units, shape `shape` (a scalar as shape ())."""
        x = self.variable.numpy().astype(np.float64)
        return (np.exp(x) if self.log else x).reshape(self.shape)

    def yaml_value(self):
        """The value as a scene key takes it (a number or nested lists)."""
        v = self.value()
        return float(v) if v.ndim == 0 else v.tolist()

    def apply(self, built, state0):
        """Launch the kernels that write the variable into the model / initial state (record them on a Tape)."""
        for t in self.targets:
            owner = {"model": built.model, "state": state0, "object": t.obj}[t.owner]
            t.launch(self.variable, int(self.log), getattr(owner, t.array), built.model.device)


def resolve(path: str, scene, built, *, log: bool = False, bounds=None, where: str = "parameters",
            key: tuple = (), frames: int | None = None) -> LearnedParameter:
    """The LearnedParameter for scene key `path` of the validated `scene` (spec) built into `built`; `frames`
    (default sim.frames) sizes a joint's forces that the scene does not give.
    Raises SceneError (at `where`, config key path `key`) for a key that does not exist or cannot be learned."""
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]

    def fail(msg):
        raise SceneError(where, key, f"{path}: {msg}")

    try:
        targets, initial, shape = targets_of(KeyContext(parts, scene, built, fail, frames or scene.sim.frames))
    except (IndexError, KeyError, TypeError):
        fail("no such key in the scene")
    _check_acted_on(pattern_of(parts), scene, fail)
    if log and any(t.how in ("vec3", "position", "rotation", "spatial_part") or t.array == "forces"
                   for t in targets):
        fail("log: true applies to positive scalars (stiffness, mass, radius), not to vectors")
    try:
        return LearnedParameter(path, targets, initial, log=log, bounds=bounds, shape=shape)
    except ValueError as e:
        fail(str(e).split(": ", 1)[-1])


def _check_acted_on(pattern: str, scene, fail):
    """Refuse a key that no solver of the scene reads (its gradient would be a silent zero): see REFUSED."""
    acting = acting_solvers(pattern, scene)
    if not acting:
        fail("nothing in the scene is simulated by a solver that reads it")
    reasons = [REFUSED.get((solver, pattern)) for solver in acting]
    if all(reasons):
        fail(f"not learnable with the {' and '.join(acting)} solver: {'; '.join(dict.fromkeys(reasons))}")
