"""Cloth self-contact throughput for tools/bench.py (`--only cloth_contact`): the issue's stress case, a square
cloth of N x N cells of 1.28 m / N standing on its edge 1 m above the ground, tipped 15 degrees, dropped: it
lands, folds over and piles up in layers.

For each particle solver, with and without self-collision (default thickness, a quarter edge), the rows give
frames per second at 60 fps with the substeps that solver needs to stay free of intersections (XPBD: the
displacement bound lets a flat cloth move 0.2 edge lengths per substep, so 20 substeps carry the 4.4 m/s of the
fall; semi-implicit: 50 substeps for its explicit membrane and contact stiffness), the largest count of
intersecting triangle pairs over the run (every 4th frame, tests/_intersections.py: an exact test independent of
the solvers) and, with self-collision, forward+backward / forward of 4 taped substeps of the pile.

The reference column is meant for Newton 1.8's SolverVBD with its self-contact on the same cloth; newton is not
a dependency and is not installed where this was written, so it shows '-'.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

import kernels as wp
import sim
from autodiff import Tape

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from _intersections import count_triangle_intersections  # noqa: E402

SIDE = 1.28  # cloth side [m]
FPS = 60
SUBSTEPS = {"xpbd": 20, "semi_implicit": 200}
XPBD_ITERATIONS = 10


def build(cells: int, self_collision: bool):
    """The stress-case model: an N x N cloth on its edge at 1 m, tipped 15 degrees, and the ground."""
    b = sim.ModelBuilder()
    cell = SIDE / cells
    b.add_cloth_grid(pos=(-0.5 * SIDE, 1.0, 0.0), rot=sim.quat_from_axis_angle((1.0, 0.0, 0.0), math.radians(15)),
                     vel=(0.0, 0.0, 0.0), dim_x=cells, dim_y=cells, cell_x=cell, cell_y=cell,
                     mass=0.3 * cell * cell, tri_ke=1.0e3, tri_ka=1.0e3, tri_kd=0.1, edge_ke=0.001, radius=0.005,
                     self_collision=self_collision)
    b.add_ground_plane()
    model = b.finalize("cpu")
    model.soft_contact.mu = 0.5
    return model


def make_solver(model, solver: str):
    if solver == "xpbd":
        return sim.SolverXPBD(model, iterations=XPBD_ITERATIONS, damping=0.1)
    return sim.SolverSemiImplicit(model)


def drop(cells: int, solver: str, self_collision: bool, frames: int) -> dict:
    """Frames per second of the drop and the worst intersection count (every 4th frame)."""
    model = build(cells, self_collision)
    step = make_solver(model, solver)
    substeps = SUBSTEPS[solver]
    dt = 1.0 / (FPS * substeps)
    state, scratch = model.state(), model.state()
    step.step(model, state, scratch, None, dt)  # compile outside the timing
    state, scratch = model.state(), model.state()
    tris = model.tri_indices.numpy()
    worst, seconds = 0, 0.0
    for frame in range(1, frames + 1):
        start = time.perf_counter()
        for _ in range(substeps):
            step.step(model, state, scratch, None, dt)
            state, scratch = scratch, state
        wp.synchronize()
        seconds += time.perf_counter() - start
        if frame % 4 == 0 or frame == frames:
            worst = max(worst, count_triangle_intersections(state.particle_q.numpy(), tris))
    out = {"fps": frames / seconds, "intersections": worst, "height": float(state.particle_q.numpy()[:, 1].max())}
    if self_collision:
        out["backward_ratio"] = backward_ratio(model, step, state, dt)
    return out


def backward_ratio(model, step, state, dt: float, steps: int = 4) -> float:
    """((forward + backward) - forward) / forward of `steps` taped substeps from `state` (the pile)."""
    def forward():
        s = model.state(requires_grad=True)
        wp.copy(s.particle_q, state.particle_q)
        wp.copy(s.particle_qd, state.particle_qd)
        for _ in range(steps):
            nxt = model.state(requires_grad=True)
            step.step(model, s, nxt, None, dt)
            s = nxt
        return s

    best_f, best_fb = math.inf, math.inf
    for _ in range(2):
        t0 = time.perf_counter()
        forward()
        wp.synchronize()
        best_f = min(best_f, time.perf_counter() - t0)
        t0 = time.perf_counter()
        tape = Tape()
        with tape:
            end = forward()
        tape.backward(grads={end.particle_q: np.ones((model.particle_count, 3), np.float32)})
        wp.synchronize()
        best_fb = min(best_fb, time.perf_counter() - t0)
    return (best_fb - best_f) / best_f


def measure(cells: int, frames: int) -> dict:
    """{(solver, self_collision): drop(...)}, the sizes, and the reference (None: newton is not installed)."""
    results = {(solver, collide): drop(cells, solver, collide, frames)
               for solver in ("xpbd", "semi_implicit") for collide in (False, True)}
    results["reference"] = None
    results["cells"], results["frames"] = cells, frames
    return results


def rows(results: dict, row_type) -> list:
    """Table rows (tools/bench_report.Row): fps with and without self-collision, its cost, intersections."""
    cells, frames = results["cells"], results["frames"]
    out = []
    for solver, label in (("xpbd", f"XPBD {XPBD_ITERATIONS} it"), ("semi_implicit", "semi-implicit")):
        name = f"cloth drop {cells}x{cells} {label}, {SUBSTEPS[solver]} substeps"
        without, with_ = results[(solver, False)], results[(solver, True)]
        out += [
            row_type(f"{name}, no self-collision ({frames} frames)", "frames/s", without["fps"]),
            row_type(f"{name}, self-collision", "frames/s", with_["fps"], warp=results["reference"]),
            row_type(f"{name}, self-collision cost (step time ratio)", "x", without["fps"] / with_["fps"]),
            row_type(f"{name}, intersecting pairs without / with", "pairs", float(without["intersections"]),
                     float(with_["intersections"])),
            row_type(f"{name}, self-collision forward+backward / forward", "x", 1.0 + with_["backward_ratio"]),
        ]
    return out


def footnotes(results: dict) -> list:
    return ["cloth drop: in the 'intersecting pairs' rows the ours column is the count without self-collision, "
            "the numpy column with it; the Warp CPU column of the self-collision rows is for Newton 1.8 "
            "SolverVBD with self-contact ('-': newton is not installed)."]
