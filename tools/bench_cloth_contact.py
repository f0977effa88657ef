"""Cloth self-contact throughput for tools/bench.py (`--only cloth_contact`): the issue's stress case, a square
cloth of N x N cells of 1.28 m / N standing on its edge 1 m above the ground, tipped 15 degrees, dropped: it
lands, folds over and piles up in layers.

For each particle solver, with and without self-collision (default thickness, a quarter edge), the rows give
frames per second at 60 fps with the substeps that solver needs (XPBD: 20, for the displacement bound to let
the cloth fold at the 4.4 m/s of the fall without losing speed; semi-implicit: 200, the stability limit of its
explicit membrane at 2 cm cells: 50 and 100 blow up to NaN within a frame), the largest count of intersecting
triangle pairs over the run (every 4th frame, tests/_intersections.py: an exact test independent of the
solvers) and, with self-collision, forward+backward / forward of 4 taped substeps of the pile. The drops with
and without self-collision run frame by frame in turn (drops), so that their ratio holds on a machine whose speed
changes during the run.

The reference (the Warp CPU column) is Newton 1.8's SolverVBD with its self-contact (margin = our thickness,
detection gap as much again, 10 iterations) on the same cloth, on Warp's CPU backend, at the fewest of
NEWTON_SUBSTEPS that keeps it free of intersections by the same count (checked every 2nd frame; a run stops at
its first intersecting frame) (`pip install -e '.[bench]'`); '-' when newton is not installed.
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
# tried in order: the first without intersections is reported (each stops at its first intersecting frame). On
# the 64 x 64 drop none is free of them (session 19: 40 and 80 substeps intersect from frame 30, at 0.158 and
# 0.079 frames/s); more substeps would take this section past an hour
NEWTON_SUBSTEPS = (10, 20, 40, 80)
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


def compile_self_contact():
    """Compile every kernel of the self-contact and particle-solver modules imported so far (with their order-free
    parts): a first step compiles only what it launches, and the first partial search, or the first pair pass,
    comes in the middle of the run (the bench's compile cache starts empty)."""
    names = [name for name in sys.modules if name.startswith(("sim.self_contact", "sim.solvers."))]
    modules = [wp.get_module(name) for name in names] + [wp.get_module(f"{name}.order_free") for name in names]
    wp.force_load("cpu", modules=[m for m in modules if m.kernels])


class Drop:
    """One drop (the stress-case model, a solver, two states), advanced a frame at a time: its timed seconds and
    the worst intersection count so far."""

    def __init__(self, cells: int, solver: str, self_collision: bool):
        self.model = build(cells, self_collision)
        self.step = make_solver(self.model, solver)
        self.substeps = SUBSTEPS[solver]
        self.dt = 1.0 / (FPS * self.substeps)
        state, scratch = self.model.state(), self.model.state()
        self.step.step(self.model, state, scratch, None, self.dt)  # compile outside the timing
        compile_self_contact()
        self.state, self.scratch = self.model.state(), self.model.state()
        self.tris = self.model.tri_indices.numpy()
        self.seconds, self.worst = 0.0, 0

    def frame(self, count: bool):
        """Advance a frame (timed); `count`: then count its intersecting triangle pairs (not timed)."""
        start = time.perf_counter()
        for _ in range(self.substeps):
            self.step.step(self.model, self.state, self.scratch, None, self.dt)
            self.state, self.scratch = self.scratch, self.state
        wp.synchronize()
        self.seconds += time.perf_counter() - start
        if count:
            self.worst = max(self.worst, count_triangle_intersections(self.state.particle_q.numpy(), self.tris))


def drops(cells: int, solver: str, frames: int) -> tuple:
    """The drop without and with self-collision, run frame by frame in turn (ABBA: the order alternates every
    frame), so that a change of the machine's speed during the run weighs on both alike (on shared cores run one
    after the other, the ratio moved by 5-25 %: docs/cloth_contact.md, session 27). Each: frames per second and
    the worst intersection count (every 4th frame); with self-collision also forward+backward / forward."""
    runs = (Drop(cells, solver, False), Drop(cells, solver, True))
    for frame in range(1, frames + 1):
        for run in (runs if frame % 2 else runs[::-1]):
            run.frame(frame % 4 == 0 or frame == frames)
    out = tuple({"fps": frames / run.seconds, "intersections": run.worst,
                 "height": float(run.state.particle_q.numpy()[:, 1].max())} for run in runs)
    out[1]["backward_ratio"] = backward_ratio(runs[1].model, runs[1].step, runs[1].state, runs[1].dt)
    return out


def taped_steps(model, step, start, dt: float, steps: int):
    """`steps` substeps from `start`'s positions and velocities on fresh states that require gradients; the last."""
    s = model.state(requires_grad=True)
    wp.copy(s.particle_q, start.particle_q)
    wp.copy(s.particle_qd, start.particle_qd)
    for _ in range(steps):
        nxt = model.state(requires_grad=True)
        step.step(model, s, nxt, None, dt)
        s = nxt
    return s


def backward_ratio(model, step, state, dt: float, steps: int = 4) -> float:
    """((forward + backward) - forward) / forward of `steps` taped substeps from `state` (the pile)."""
    def forward():
        return taped_steps(model, step, state, dt, steps)

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


def newton_drop(cells: int, substeps: int, frames: int) -> dict:
    """The same drop in Newton's SolverVBD with self-contact, on Warp's CPU backend: frames per second and the
    worst intersection count (every 4th frame)."""
    import newton
    import warp

    warp.config.quiet = True
    cell = SIDE / cells
    b = newton.ModelBuilder(up_axis=newton.Axis.Y)
    b.add_ground_plane()
    b.add_cloth_grid(pos=warp.vec3(-0.5 * SIDE, 1.0, 0.0),
                     rot=warp.quat_from_axis_angle(warp.vec3(1.0, 0.0, 0.0), math.radians(15)),
                     vel=warp.vec3(0.0, 0.0, 0.0), dim_x=cells, dim_y=cells, cell_x=cell, cell_y=cell,
                     mass=0.3 * cell * cell, tri_ke=1.0e3, tri_ka=1.0e3, tri_kd=1.0e-2, edge_ke=1.0e-3,
                     particle_radius=0.005)
    b.color(include_bending=True)
    model = b.finalize(device="cpu")
    model.soft_contact_mu = 0.5
    thickness = sim.self_contact.DEFAULT_THICKNESS_FRACTION * cell * (2.0 + math.sqrt(2.0)) / 3.0  # ours
    solver = newton.solvers.SolverVBD(model, iterations=XPBD_ITERATIONS, particle_enable_self_contact=True,
                                      particle_self_contact_margin=thickness, particle_self_contact_gap=thickness)
    states = [model.state(), model.state()]
    control = model.control()
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    dt = 1.0 / (FPS * substeps)

    def frame():
        for _ in range(substeps):
            states[0].clear_forces()
            pipeline.collide(states[0], contacts)
            solver.step(states[0], states[1], control, contacts, dt)
            states.reverse()

    frame()  # compile outside the timing (its frame counts in the intersections, not the rate)
    warp.synchronize()
    tris = model.tri_indices.numpy()
    worst, seconds, timed = 0, 0.0, 0
    for f in range(2, frames + 1):
        start = time.perf_counter()
        frame()
        warp.synchronize()
        seconds += time.perf_counter() - start
        timed += 1
        if f % 2 == 0 or f == frames:
            worst = max(worst, count_triangle_intersections(states[0].particle_q.numpy(), tris))
            if worst:
                break  # not free of intersections at these substeps: the rate so far, and the next substeps
    return {"fps": timed / seconds, "intersections": worst, "substeps": substeps, "frames": timed + 1}


def newton_reference(cells: int, frames: int) -> dict | None:
    """newton_drop at the fewest NEWTON_SUBSTEPS free of intersections (else the last tried); None without
    newton."""
    try:
        import newton  # noqa: F401
    except ImportError:
        return None
    for substeps in NEWTON_SUBSTEPS:
        result = newton_drop(cells, substeps, frames)
        if result["intersections"] == 0:
            break
    return result


def measure(cells: int, frames: int) -> dict:
    """{(solver, self_collision): the drops (drops)}, the sizes, and the reference (None: newton is not installed)."""
    results = {}
    for solver in ("xpbd", "semi_implicit"):
        results[(solver, False)], results[(solver, True)] = drops(cells, solver, frames)
    results["reference"] = newton_reference(cells, frames)
    results["cells"], results["frames"] = cells, frames
    return results


def rows(results: dict, row_type) -> list:
    """Table rows (tools/bench_report.Row): fps with and without self-collision, its cost, intersections."""
    cells, frames = results["cells"], results["frames"]
    reference = results["reference"]
    out = []
    for solver, label in (("xpbd", f"XPBD {XPBD_ITERATIONS} it"), ("semi_implicit", "semi-implicit")):
        name = f"cloth drop {cells}x{cells} {label}, {SUBSTEPS[solver]} substeps"
        without, with_ = results[(solver, False)], results[(solver, True)]
        out += [
            row_type(f"{name}, no self-collision ({frames} frames)", "frames/s", without["fps"]),
            row_type(f"{name}, self-collision", "frames/s", with_["fps"], warp=reference and reference["fps"]),
            row_type(f"{name}, self-collision cost (step time ratio)", "x", without["fps"] / with_["fps"]),
            row_type(f"{name}, intersecting pairs without / with", "pairs", float(without["intersections"]),
                     float(with_["intersections"])),
            row_type(f"{name}, self-collision forward+backward / forward", "x", 1.0 + with_["backward_ratio"]),
        ]
    if reference is not None:
        out.append(row_type(f"cloth drop {cells}x{cells} Newton SolverVBD {XPBD_ITERATIONS} it, "
                            f"{reference['substeps']} substeps, self-contact: intersecting pairs", "pairs",
                            warp=float(reference["intersections"])))
    return out


def footnotes(results: dict) -> list:
    reference = results["reference"]
    newton = ("'-': newton is not installed" if reference is None else
              f"at {reference['substeps']} substeps, the fewest of {NEWTON_SUBSTEPS} free of intersections"
              if reference["intersections"] == 0 else
              f"at {reference['substeps']} substeps, the most of {NEWTON_SUBSTEPS}, still intersecting by frame "
              f"{reference['frames']}: its rate up to there")
    return ["cloth drop: in the 'intersecting pairs' rows the ours column is the count without self-collision, "
            "the numpy column with it; the Warp CPU column of the self-collision rows is Newton 1.8 SolverVBD "
            f"with self-contact on Warp's CPU backend ({newton})."]
