"""Cloth simulation throughput for tools/bench.py: our `sim` solvers against Newton's on the CPU.

The scene is the performance issue's: a cloth grid of N x N cells of 5 cm, hanging from its left edge at y = 2 m,
falling past a sphere onto the ground plane, stepped 60 frames x 16 substeps (dt = 1/960 s). Forward-only runs
ping-pong two States; forward+backward runs write one State per step on a Tape, take the loss as the sum of the
particles' heights in the final State and run `tape.backward`. Steps/s count substeps.

The reference is Newton (built on Warp, single-threaded on the CPU) with the same cloth built through its own
ModelBuilder: same grid, masses, membrane stiffnesses, collider and contact material. Two things cannot be the
same and are noted under the table (bending uses the same edge_ke on both sides: ours is scaled to Newton's
meaning, see sim.Model.edge_rest_scale):
- XPBD: Newton's SolverXPBD has no membrane triangles, so its cloth gets one distance spring per mesh edge
  (add_springs) instead of our three edge constraints per triangle.
Newton also runs its collision pipeline every substep (as its examples do); our contact kernel tests every
particle against every shape inside the solver step. Newton's semi-implicit triangle-particle self-contact
(enable_tri_contact, O(triangles x particles), 95% of its step at 32x32) is switched off: we have none.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

import kernels as wp
import sim
from autodiff import Tape

FRAMES_PER_SECOND = 60
SUBSTEPS = 16
XPBD_ITERATIONS = 10


@dataclass(frozen=True)
class Cloth:
    """The benchmark cloth: a grid of `cells` x `cells` cells hanging from its left edge."""

    cells: int
    cell_size: float = 0.05  # [m]
    mass: float = 0.1  # per vertex [kg]
    tri_ke: float = 1.0e3  # membrane mu [N/m]
    tri_ka: float = 1.0e3  # membrane lambda [N/m]
    tri_kd: float = 1.0e-1  # membrane damping
    edge_ke: float = 10.0  # bending stiffness, Newton's meaning on both sides
    particle_radius: float = 0.01  # [m]
    sphere_center: tuple = (0.8, 1.2, 0.0)  # [m], below the middle of the cloth's fall
    sphere_radius: float = 0.3  # [m]
    contact_ke: float = 1.0e4  # our Model.soft_contact defaults, given to Newton too
    contact_kd: float = 10.0
    contact_kf: float = 10.0
    contact_mu: float = 0.5


# ---------------------------------------------------------------------------------------------------------------
# Runs. Each `*_runs` function returns {"forward": run, "forward_backward": run}, or only "forward"; a run
# simulates `steps` substeps and returns the final particle positions' finite-ness as a sanity check.


def ours_builder(cloth: Cloth, *, ground: bool = True):
    """Our ModelBuilder of the cloth and sphere, and the ground unless `ground` is False (tools/bench_worlds.py
    shares one ground among worlds)."""
    # Newton's bending is the dihedral model: ours too here, so both sides simulate the same cloth (the default,
    # quadratic bending, costs about the same; see docs/bending.md)
    builder = sim.ModelBuilder(up_axis="y", bending="dihedral")
    builder.add_cloth_grid(pos=(0.0, 2.0, 0.0), rot=sim.quat_identity(), vel=(0.0, 0.0, 0.0), dim_x=cloth.cells,
                           dim_y=cloth.cells, cell_x=cloth.cell_size, cell_y=cloth.cell_size, mass=cloth.mass,
                           tri_ke=cloth.tri_ke, tri_ka=cloth.tri_ka, tri_kd=cloth.tri_kd,
                           edge_ke=cloth.edge_ke, fix_left=True, radius=cloth.particle_radius)
    builder.add_shape_sphere(pos=cloth.sphere_center, radius=cloth.sphere_radius)
    if ground:
        builder.add_ground_plane()
    return builder


def ours_contact(cloth: Cloth, model):
    """Set the benchmark's particle-shape contact material on `model`."""
    model.soft_contact = sim.ContactParams(ke=cloth.contact_ke, kd=cloth.contact_kd, kf=cloth.contact_kf,
                                           mu=cloth.contact_mu, margin=0.01)
    return model


def ours_model(cloth: Cloth, requires_grad: bool, device="cpu"):
    """Our Model of the cloth, sphere and ground on `device`."""
    return ours_contact(cloth, ours_builder(cloth).finalize(device=device, requires_grad=requires_grad))


def ours_solver(model, solver_name: str):
    if solver_name == "xpbd":
        return sim.SolverXPBD(model, iterations=XPBD_ITERATIONS)
    return sim.SolverSemiImplicit(model)


LOSS_SOURCE = '''
@wp.kernel
def sum_heights(q: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, q[i][1])
'''


def ours_runs(cloth: Cloth, solver_name: str, steps: int, load_kernels) -> dict:
    """Forward and forward+backward runs of our solver `solver_name` ("semi_implicit" or "xpbd")."""
    dt = 1.0 / FRAMES_PER_SECOND / SUBSTEPS
    loss_kernel = load_kernels(LOSS_SOURCE).sum_heights
    forward_model = ours_model(cloth, requires_grad=False)
    forward_solver = ours_solver(forward_model, solver_name)
    pair = [forward_model.state(), forward_model.state()]

    def forward():
        a, b = pair
        for _ in range(steps):
            forward_solver.step(forward_model, a, b, None, dt)
            a, b = b, a
        wp.synchronize()
        return bool(np.isfinite(a.particle_q.numpy()).all())

    graph_model = ours_model(cloth, requires_grad=False)
    graph_solver = ours_solver(graph_model, solver_name)
    graph_pair = [graph_model.state(), graph_model.state()]
    graphs = []

    def forward_graph():
        # the same steps captured once (in the untimed warm-up round) and replayed with no Python per launch
        if not graphs:
            graph_solver.step(graph_model, graph_pair[0], graph_pair[1], None, dt)  # builds scratch buffers
            graph_pair[:] = [graph_model.state(), graph_model.state()]
            with wp.ScopedCapture("cpu") as capture:
                a, b = graph_pair
                for _ in range(steps):
                    graph_solver.step(graph_model, a, b, None, dt)
                    a, b = b, a
            graphs.append((capture.graph, a))
        graph, last = graphs[0]
        wp.capture_launch(graph)
        return bool(np.isfinite(last.particle_q.numpy()).all())

    grad_model = ours_model(cloth, requires_grad=True)
    grad_solver = ours_solver(grad_model, solver_name)
    states = [grad_model.state() for _ in range(steps + 1)]
    loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def forward_backward():
        tape = Tape()  # gradients accumulate over rounds; harmless for timing
        loss.zero_()
        with tape:
            for t in range(steps):
                grad_solver.step(grad_model, states[t], states[t + 1], None, dt)
            wp.launch(loss_kernel, dim=grad_model.particle_count, inputs=[states[-1].particle_q, loss], device="cpu")
        tape.backward(loss=loss)
        wp.synchronize()
        return bool(np.isfinite(states[0].particle_qd.grad.numpy()).all())

    return {"forward": forward, "forward_graph": forward_graph, "forward_backward": forward_backward}


def newton_available() -> tuple:
    """(newton module or None, reason it is missing)."""
    try:
        with _stderr_silenced():
            import newton
            import warp
            warp.config.log_level = warp.LOG_WARNING
            warp.init()
    except Exception as e:  # not installed, or it fails to import: its rows stay empty
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return newton, ""


def newton_model(newton, cloth: Cloth, solver_name: str, requires_grad: bool):
    """Newton's Model of the same cloth, sphere and ground on the CPU."""
    model = newton_builder(newton, cloth, solver_name).finalize(device="cpu", requires_grad=requires_grad)
    return newton_contact(cloth, model)


def newton_contact(cloth: Cloth, model):
    """Set the benchmark's particle contact material on Newton's `model`."""
    model.particle_ke, model.particle_kd = cloth.contact_ke, cloth.contact_kd
    model.particle_kf, model.particle_mu = cloth.contact_kf, cloth.contact_mu
    return model


def newton_builder(newton, cloth: Cloth, solver_name: str, *, ground: bool = True):
    """Newton's ModelBuilder of the same cloth and sphere, and the ground unless `ground` is False."""
    import warp
    builder = newton.ModelBuilder(up_axis=newton.Axis.Y)
    cfg = builder.default_shape_cfg
    cfg.ke, cfg.kd, cfg.kf, cfg.mu = cloth.contact_ke, cloth.contact_kd, cloth.contact_kf, cloth.contact_mu
    xpbd = solver_name == "xpbd"
    builder.add_cloth_grid(pos=warp.vec3(0.0, 2.0, 0.0), rot=warp.quat_identity(), vel=warp.vec3(0.0, 0.0, 0.0),
                           dim_x=cloth.cells, dim_y=cloth.cells, cell_x=cloth.cell_size, cell_y=cloth.cell_size,
                           mass=cloth.mass, fix_left=True, tri_ke=cloth.tri_ke, tri_ka=cloth.tri_ka,
                           tri_kd=cloth.tri_kd, edge_ke=cloth.edge_ke, particle_radius=cloth.particle_radius,
                           add_springs=xpbd, spring_ke=cloth.tri_ke)
    builder.add_shape_sphere(-1, xform=warp.transform(cloth.sphere_center, warp.quat_identity()),
                             radius=cloth.sphere_radius)
    if ground:
        builder.add_ground_plane()
    return builder


def newton_runs(newton, cloth: Cloth, solver_name: str, steps: int) -> dict:
    """Forward and forward+backward runs of Newton's solver on the same cloth, collision pipeline every substep."""
    import warp
    dt = 1.0 / FRAMES_PER_SECOND / SUBSTEPS
    loss_kernel = _warp_loss_kernel()

    def setup(requires_grad):
        model = newton_model(newton, cloth, solver_name, requires_grad)
        if solver_name == "xpbd":
            solver = newton.solvers.SolverXPBD(model, iterations=XPBD_ITERATIONS)
        else:
            solver = newton.solvers.SolverSemiImplicit(model, enable_tri_contact=False)  # we have no self-contact
        pipeline = newton.CollisionPipeline(model)
        return model, solver, pipeline, pipeline.contacts()

    model, solver, pipeline, contacts = setup(False)
    control = model.control()
    pair = [model.state(), model.state()]

    def forward():
        a, b = pair
        for _ in range(steps):
            a.clear_forces()
            pipeline.collide(a, contacts)
            solver.step(a, b, control, contacts, dt)
            a, b = b, a
        warp.synchronize()
        return bool(np.isfinite(a.particle_q.numpy()).all())

    g_model, g_solver, g_pipeline, g_contacts = setup(True)
    g_control = g_model.control()
    states = [g_model.state() for _ in range(steps + 1)]
    loss = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def forward_backward():
        tape = warp.Tape()
        loss.zero_()
        with tape:
            for t in range(steps):
                g_pipeline.collide(states[t], g_contacts)
                g_solver.step(states[t], states[t + 1], g_control, g_contacts, dt)
            warp.launch(loss_kernel, dim=g_model.particle_count, inputs=[states[-1].particle_q, loss], device="cpu")
        tape.backward(loss=loss)
        warp.synchronize()
        return bool(np.isfinite(states[0].particle_qd.grad.numpy()).all())

    return {"forward": forward, "forward_backward": forward_backward}


_WARP_LOSS = []


def _warp_loss_kernel():
    """The loss kernel compiled by Warp (defined here so that Warp is imported only when Newton is)."""
    if not _WARP_LOSS:
        import warp

        @warp.kernel
        def sum_heights_warp(q: warp.array(dtype=warp.vec3), loss: warp.array(dtype=float)):
            i = warp.tid()
            warp.atomic_add(loss, 0, q[i][1])

        _WARP_LOSS.append(sum_heights_warp)
    return _WARP_LOSS[0]


@contextlib.contextmanager
def _stderr_silenced():
    """Send file descriptor 2 to /dev/null: Warp's native init warns about a missing CUDA driver there."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


# ---------------------------------------------------------------------------------------------------------------
# Measurement


def xpbd_works() -> tuple:
    """Whether `sim.SolverXPBD` imports and steps a tiny cloth to finite positions; (ok, reason)."""
    try:
        model = ours_model(Cloth(cells=2), requires_grad=False)
        solver = sim.SolverXPBD(model, iterations=2)
        a, b = model.state(), model.state()
        solver.step(model, a, b, None, 1.0 / FRAMES_PER_SECOND / SUBSTEPS)
        if not np.isfinite(b.particle_q.numpy()).all():
            return False, "non-finite positions after one step"
    except Exception as e:  # the solver is being written: a failure only drops its rows
        return False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return True, ""


#: who runs a key's run, for warnings (keys whose first item is not here are Newton's)
RUNNERS = {"ours": "ours", "baseline": "the tree before issue 36"}


def best_steps_per_second(runs: dict, steps: int, repeats: int, warnings: list, label: str) -> dict:
    """Steps/s of each run (best of `repeats` interleaved rounds, after one warm-up round that also compiles)."""
    runs = dict(runs)
    best = dict.fromkeys(runs, math.inf)
    for round_ in range(repeats + 1):
        for key, run in list(runs.items()):
            t0 = time.perf_counter()
            try:
                finite = run()
            except Exception as e:  # only the reference may fail (Newton's CPU path is optional); ours must run
                if key[0] == "ours":
                    raise
                warnings.append(f"{RUNNERS.get(key[0], 'Newton')} {label} {key[1]} failed "
                                f"({type(e).__name__}: {str(e)[:200]})")
                del runs[key], best[key]
                continue
            seconds = time.perf_counter() - t0
            if not finite and round_ == 0:
                who = RUNNERS.get(key[0], "Newton")
                warnings.append(f"{who} {label} {key[1].replace('_', '+')}: non-finite values at the end of the run")
            if round_ > 0:
                best[key] = min(best[key], seconds)
    return {key: steps / t for key, t in best.items()}


def cloth_steps_per_second(sizes: tuple, frames: dict, repeats: int, newton, load_kernels) -> dict:
    """{(solver, cells): {"ours": {"forward": steps/s, "forward_backward": steps/s}, "reference": {...} or None},
    "warnings": [...]}, for each solver of `frames` ({solver name: frames simulated per run}).

    Newton's XPBD gets no forward+backward run: its gradients come out non-finite on this scene and one run takes
    minutes."""
    out = {"warnings": []}
    for solver_name, solver_frames in frames.items():
        steps = solver_frames * SUBSTEPS
        for cells in sizes:
            cloth = Cloth(cells=cells)
            label = f"{solver_name} {cells}x{cells}"
            runs = {("ours", kind): run for kind, run in ours_runs(cloth, solver_name, steps, load_kernels).items()}
            if newton is not None:
                try:
                    runs.update({("reference", kind): run
                                 for kind, run in newton_runs(newton, cloth, solver_name, steps).items()
                                 if solver_name != "xpbd" or kind == "forward"})
                except Exception as e:  # Newton's API moves between releases: its rows stay empty
                    out["warnings"].append(f"Newton {label} did not build ({type(e).__name__}: {e})")
            rates = best_steps_per_second(runs, steps, repeats, out["warnings"], label)
            entry = {"ours": {}, "reference": None if newton is None else {}}
            for (who, kind), rate in rates.items():
                entry[who][kind] = rate
            out[(solver_name, cells)] = entry
    return out


# ---------------------------------------------------------------------------------------------------------------
# Summaries for the table and the targets line


def _ratio(a, b):
    return None if a is None or b is None else a / b


def cloth_entries(cloth: dict) -> list:
    """((solver, cells), {"ours": ..., "reference": ...}) of each measured cloth, in measurement order."""
    return [(key, entry) for key, entry in cloth.items() if isinstance(key, tuple)]


def cloth_backward_ratio(rates: dict):
    """((forward+backward) - forward) / forward from steps/s; None when either is missing."""
    if rates is None or "forward" not in rates or "forward_backward" not in rates:
        return None
    return rates["forward"] / rates["forward_backward"] - 1.0


def cloth_worst_speedup(cloth: dict):
    """Smallest ratio of our semi-implicit forward steps/s to Newton's over the cloth sizes (Newton's XPBD solves
    a different cloth model, springs instead of triangles, so it is shown but not judged)."""
    speedups = [_ratio(entry["ours"]["forward"], (entry["reference"] or {}).get("forward"))
                for (solver, _), entry in cloth_entries(cloth) if solver == "semi_implicit"]
    return None if not speedups or None in speedups else min(speedups)


def cloth_worst_backward(cloth: dict):
    """Largest backward/forward ratio of our solvers over every measured cloth."""
    ratios = [cloth_backward_ratio(entry["ours"]) for _, entry in cloth_entries(cloth)]
    return None if not ratios or None in ratios else max(ratios)


def cloth_footnotes(cloth: dict) -> list:
    """What the cloth rows' Warp CPU column is, how its cloth differs from ours, and anything that went wrong."""
    lines = list(cloth["notes"])
    if cloth["newton"] is not None:
        lines += [
            f"cloth rows, Warp CPU column: Newton {cloth['newton']} on Warp's CPU backend (one thread), the same "
            f"cloth through newton.ModelBuilder; its collision pipeline runs every substep, its triangle self-contact "
            f"is off (we have none)",
        ]
        if any(solver == "xpbd" for (solver, _), _ in cloth_entries(cloth)):
            lines.append("cloth XPBD, Warp CPU column: Newton's SolverXPBD has no triangles; its cloth has one spring "
                         "per edge (ke = tri_ke); its forward+backward is not run (non-finite gradients here, minutes "
                         "per run)")
    return [f"note: {line}" for line in lines + cloth["warnings"]]
