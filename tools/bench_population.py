"""The population row of tools/bench.py's worlds section: seconds per iteration of `sim optimize
configs/cloth_throw.yaml --population N` (N starts as N worlds of one model, one captured forward + backward per
iteration) against one start's seconds per iteration times N (the same starts run one by one).

Both are timed as `sim optimize` iterates (Problem.loss_and_gradient, the optimiser's step, zeroing the
gradients), after two warm-up iterations (the eager one and the one that captures), median of `repeats`.
"""

from __future__ import annotations

import os
import time

import numpy as np

from sim.optimization import Problem, load_config
from sim.optimization.population_run import PopulationProblem

CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "cloth_throw.yaml")


def seconds_per_iteration(problem, repeats: int) -> float:
    """Median seconds of one optimisation iteration of `problem` after two warm-up iterations."""
    times = []
    for k in range(2 + repeats):
        t0 = time.perf_counter()
        problem.loss_and_gradient()
        problem.optimizer.step()
        problem.zero_gradients()
        if k >= 2:
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure(size: int, repeats: int, frames: int | None = None) -> dict:
    """{"size", "population" [s/iteration], "one" [s/iteration of one start], "speedup"} for cloth_throw;
    `frames` shortens the rollout (a smoke run)."""
    overrides = [] if frames is None else [f"frames={frames}"]
    one = seconds_per_iteration(Problem(load_config(CONFIG, overrides)), repeats)
    many = seconds_per_iteration(PopulationProblem(load_config(CONFIG, overrides), size), repeats)
    return {"size": size, "population": many, "one": one, "speedup": size * one / many}


def render_row(r: dict) -> str:
    return (f"cloth_throw population of {r['size']}: {r['population']:.3f} s per iteration; one start "
            f"{r['one']:.3f} s, so {r['size']} one by one {r['size'] * r['one']:.3f} s: {r['speedup']:.1f}x")
