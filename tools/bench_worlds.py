"""Many worlds in one model for tools/bench.py (`--only worlds`): world-steps/s of N worlds stepped as one Model
(one launch per kernel for all of them) against the same N worlds as N Models stepped one after another.

Scenes (each world a copy; the ground is shared, world -1; worlds laid out on a grid with ModelBuilder.replicate):
    cloth 32x32 XPBD and semi-implicit: tools/bench_sim.py's cloth (hanging from its left edge, falling past a
        sphere), dt = 1/960 s; XPBD with bench_sim.XPBD_ITERATIONS iterations.
    100 boxes: tools/bench_rigid.py's lattice of 5 x 4 x 5 boxes falling onto the ground, SolverRigid, dt = 1/600 s.
    7-dof arm: tools/bench_articulation.py's arm swinging, SolverFeatherstone, dt = 1e-3 s.
Each count N (1, 8, 64 and 256; --quick: 1 and 8 worlds, an eighth of the steps, no Newton) runs four ways, forward
only, ping-ponging two States: the batched Model launched (Python per kernel launch) and captured (the steps
recorded once with wp.ScopedCapture, replayed with no Python per launch), and N Models one after another, launched
and captured. Rates are world-steps/s (N x steps / seconds), best of `repeats` rounds after a warm-up round that
compiles and captures. The Newton column runs the same worlds in Newton 1.8 (ModelBuilder.replicate, Warp's CPU
backend, its collision pipeline every step), '-' when it is not installed.

The arithmetic limit: a count of the floating-point operations of one step of a 32x32 cloth world (per element
of each kernel, by hand; the estimates are printed) against the machine's float32 GEMM rate measured with numpy
(its BLAS uses every core allowed: the most arithmetic these cores do), giving world-steps/s if a step were
nothing but that arithmetic at that rate.

The population row: seconds per iteration of `sim optimize configs/cloth_throw.yaml --population 64` against 64
times one start's (tools/bench_population.py).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

import kernels as wp
import sim

try:
    from . import bench_articulation, bench_population, bench_rigid, bench_sim
except ImportError:  # run as a script: tools/ is on sys.path, the repository root is not
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tools import bench_articulation, bench_population, bench_rigid, bench_sim

CLOTH = bench_sim.Cloth(cells=32)
BOXES = bench_rigid.Boxes(shape=(5, 4, 5))
CLOTH_DT = 1.0 / bench_sim.FRAMES_PER_SECOND / bench_sim.SUBSTEPS


@dataclass(frozen=True)
class Scene:
    """A benchmark scene: its name, one world's builder (no ground), the solver, dt [s], worlds' spacing [m]."""

    name: str
    builder: object  # () -> sim.ModelBuilder
    solver: object  # model -> solver
    dt: float
    spacing: tuple
    steps: int  # steps per timed run of the batched model (N models one after another: the same per model)
    configure: object = None  # model -> None: settings a Model does not take from its builder


SCENES = (
    Scene("cloth 32x32 XPBD", lambda: bench_sim.ours_builder(CLOTH, ground=False),
          lambda m: sim.SolverXPBD(m, iterations=bench_sim.XPBD_ITERATIONS), CLOTH_DT, (2.5, 0.0, 2.5), 8,
          lambda m: bench_sim.ours_contact(CLOTH, m)),
    Scene("cloth 32x32 semi-implicit", lambda: bench_sim.ours_builder(CLOTH, ground=False), sim.SolverSemiImplicit,
          CLOTH_DT, (2.5, 0.0, 2.5), 32, lambda m: bench_sim.ours_contact(CLOTH, m)),
    Scene("100 boxes", lambda: bench_rigid.ours_builder(BOXES, ground=False), sim.SolverRigid, bench_rigid.DT,
          (2.0, 0.0, 2.0), 16),
    Scene("7-dof arm", lambda: bench_articulation.ours_builder(bench_articulation.ARM), sim.SolverFeatherstone,
          bench_articulation.DT, (1.0, 0.0, 1.0), 64),
)


def batched_model(scene: Scene, count: int):
    """One Model of `count` copies of the scene's world, with the shared ground."""
    source = scene.builder()
    builder = sim.ModelBuilder(up_axis="y", bending=source.bending)
    builder.add_ground_plane(**(bench_rigid.ours_material(BOXES) if scene.name == "100 boxes" else {}))
    builder.replicate(source, count, spacing=scene.spacing)
    return _configured(scene, builder.finalize("cpu"))


def alone_model(scene: Scene):
    """The scene's world alone, with its ground."""
    source = scene.builder()
    builder = sim.ModelBuilder(up_axis="y", bending=source.bending)
    builder.add_ground_plane(**(bench_rigid.ours_material(BOXES) if scene.name == "100 boxes" else {}))
    builder.add_builder(source)
    return _configured(scene, builder.finalize("cpu"))


def _configured(scene: Scene, model):
    if scene.configure is not None:
        scene.configure(model)
    return model


class Runner:
    """A model, its solver and two States; `steps(n)` ping-pongs n steps from the initial state."""

    def __init__(self, scene: Scene, model):
        self.scene, self.model = scene, model
        self.solver = scene.solver(model)
        self.pair = [model.state(), model.state()]
        if model.joint_count:
            for s in self.pair:
                sim.eval_fk(model, s.joint_q, s.joint_qd, s)

    def steps(self, count: int):
        a, b = self.pair
        for _ in range(count):
            self.solver.step(self.model, a, b, None, self.scene.dt)
            a, b = b, a
        return a

    def capture(self, count: int):
        """The graph of `count` steps (after one launched step, which builds the solver's scratch arrays)."""
        self.steps(1)
        with wp.ScopedCapture("cpu") as capture:
            self.steps(count)
        return capture.graph


def measure_scene(scene: Scene, count: int, repeats: int, newton=None, warnings=None) -> dict:
    """{"batched", "batched_graph", "serial", "serial_graph", "newton"}: world-steps/s of `count` worlds
    ("newton": None without Newton, or when its run failed, with a line in `warnings`), `scene.steps` steps a run."""
    steps = scene.steps
    batched = Runner(scene, batched_model(scene, count))
    serial = [Runner(scene, alone_model(scene)) for _ in range(count)]
    batched_graph = batched.capture(steps)
    serial_graphs = [r.capture(steps) for r in serial]
    runs = {
        "batched": lambda: batched.steps(steps),
        "batched_graph": lambda: wp.capture_launch(batched_graph),
        "serial": lambda: [r.steps(steps) for r in serial],
        "serial_graph": lambda: [wp.capture_launch(g) for g in serial_graphs],
    }
    if newton is not None:
        try:
            runs["newton"] = newton_run(newton, scene, count)
        except Exception as e:  # Newton's API moves between releases: its column stays empty
            warnings.append(f"Newton {scene.name} x {count} did not build ({type(e).__name__}: {str(e)[:160]})")
    best = dict.fromkeys(runs, math.inf)
    for round_ in range(repeats + 1):  # round 0 warms up
        for key, run in runs.items():
            wp.synchronize()
            t0 = time.perf_counter()
            run()
            wp.synchronize()
            if round_:
                best[key] = min(best[key], time.perf_counter() - t0)
    finite = np.isfinite(batched.pair[0].particle_q.numpy()).all() and \
        np.isfinite(batched.pair[0].body_q.numpy()).all() and np.isfinite(batched.pair[0].joint_q.numpy()).all()
    out = {key: count * steps / t for key, t in best.items()}
    out.setdefault("newton", None)
    out["finite"] = bool(finite)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Newton 1.8's replicated worlds (on Warp's CPU backend, one thread), the same scenes


def newton_run(newton, scene: Scene, count: int):
    """A run of `scene.steps` steps of `count` worlds replicated with Newton's ModelBuilder.replicate (its
    collision pipeline every step where there are shapes), or None for a scene it has no counterpart of."""
    import warp
    up = newton.Axis.Y
    if scene.name.startswith("cloth"):
        solver_name = "xpbd" if "XPBD" in scene.name else "semi_implicit"
        source = bench_sim.newton_builder(newton, CLOTH, solver_name, ground=False)
    elif scene.name == "100 boxes":
        source = bench_rigid.newton_builder(newton, BOXES, ground=False)
    else:
        source = bench_articulation.newton_builder(newton, bench_articulation.ARM)
    builder = newton.ModelBuilder(up_axis=up)
    if scene.name == "100 boxes":
        bench_rigid.newton_material(builder, BOXES)
    builder.add_ground_plane()
    builder.replicate(source, count, spacing=scene.spacing)
    model = builder.finalize(device="cpu")
    if scene.name.startswith("cloth"):
        bench_sim.newton_contact(CLOTH, model)
        solver = newton.solvers.SolverXPBD(model, iterations=bench_sim.XPBD_ITERATIONS) if "XPBD" in scene.name \
            else newton.solvers.SolverSemiImplicit(model, enable_tri_contact=False)
        pipeline = newton.CollisionPipeline(model)
    elif scene.name == "100 boxes":
        solver = newton.solvers.SolverSemiImplicit(model, angular_damping=0.0)
        pipeline = newton.CollisionPipeline(model, reduce_contacts=False)
    else:
        solver, pipeline = newton.solvers.SolverFeatherstone(model), None
    contacts = pipeline.contacts() if pipeline is not None else None
    control = model.control()
    pair = [model.state(), model.state()]

    def run():
        a, b = pair
        for _ in range(scene.steps):
            a.clear_forces()
            if pipeline is not None:
                pipeline.collide(a, contacts)
            solver.step(a, b, control, contacts, scene.dt)
            a, b = b, a
        warp.synchronize()

    return run


# ---------------------------------------------------------------------------------------------------------------
# The arithmetic limit


def cloth_flops(solver: str, cloth: bench_sim.Cloth = CLOTH) -> float:
    """Floating-point operations of one step of one cloth world, estimated per element of each kernel (by
    counting the operations of the kernels' source): the membrane triangle (StVK stress and forces, about 150;
    XPBD: three edge constraints, about 120), the dihedral bending hinge (about 250 forces; 300 XPBD),
    particle-shape contact (about 40 per pair: the sphere and the ground) and integration (about 20 a particle)."""
    n = cloth.cells
    particles = (n + 1) ** 2
    triangles = 2 * n * n
    edges = 3 * n * n + 2 * n  # every mesh edge (boundary ones do no bending work, counted anyway)
    contacts = particles * 2 * 40
    if solver == "xpbd":
        per_iteration = triangles * 120 + edges * 300 + contacts + particles * 20
        return particles * 20 + bench_sim.XPBD_ITERATIONS * per_iteration + particles * 10
    return triangles * 150 + edges * 250 + contacts + particles * 20


def gemm_flops_per_second(size: int = 1024, repeats: int = 3) -> float:
    """The float32 GEMM rate of numpy's BLAS on this machine [FLOP/s] (best of `repeats`)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    a @ b
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size ** 3 / best


# ---------------------------------------------------------------------------------------------------------------


def measure(quick: bool, counts=None) -> dict:
    """{"rates": {(scene name, count): rates}, "counts": [...], "peak": FLOP/s, "flops": {scene: per world-step},
    ...}; `counts` overrides the world counts."""
    counts = counts or ((1, 8) if quick else (1, 8, 64, 256))
    repeats = 1 if quick else 2
    newton, reason = (None, "skipped in --quick") if quick else bench_sim.newton_available()
    warnings = [] if newton is not None else [f"Newton column: {reason}"]
    rates = {}
    for scene in SCENES:
        if quick:  # a smoke run (tests/test_bench_smoke.py runs every section): fewer steps
            scene = dataclasses.replace(scene, steps=max(1, scene.steps // 8))
        for count in counts:
            rates[(scene.name, count)] = measure_scene(scene, count, repeats, newton, warnings)
    peak = gemm_flops_per_second()
    flops = {"cloth 32x32 XPBD": cloth_flops("xpbd"), "cloth 32x32 semi-implicit": cloth_flops("semi_implicit")}
    # a 64-start population (--quick: 2 starts over 3 frames, a smoke run)
    population = bench_population.measure(2, 1, frames=3) if quick else bench_population.measure(64, 2)
    return {"rates": rates, "counts": counts, "peak": peak, "flops": flops, "warnings": warnings,
            "population": population,
            "newton": None if newton is None else newton.__version__,
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}


def render(results: dict) -> str:
    """The table: one row per scene and count, then the arithmetic limit and the issue's targets."""
    head = (f"{'worlds (world-steps/s)':34} {'N':>4} {'batched':>10} {'captured':>10} {'1-by-1':>10} "
            f"{'1-by-1 capt':>11} {'batched/1-by-1':>14} {'vs 1 world':>10} {'Newton':>10} {'capt/Newton':>11}")
    lines = [head, "-" * len(head)]
    rates = results["rates"]
    for (name, count), r in rates.items():
        one = rates.get((name, 1), r)
        lines.append(f"{name:34} {count:>4} {r['batched']:>10.0f} {r['batched_graph']:>10.0f} {r['serial']:>10.0f} "
                     f"{r['serial_graph']:>11.0f} {r['batched'] / r['serial']:>13.1f}x "
                     f"{r['batched'] / one['batched']:>9.1f}x" + _newton_cells(r) +
                     ("" if r["finite"] else "  (non-finite!)"))
    peak = results["peak"]
    lines.append(f"arithmetic limit: float32 GEMM (numpy BLAS) {peak / 1e9:.1f} GFLOP/s on {results['cores']} cores")
    for name, flops in results["flops"].items():
        limit = peak / flops
        r64 = rates.get((name, 64))
        share = "" if r64 is None else f"; captured 64 worlds reach {100.0 * r64['batched_graph'] / limit:.1f} %"
        lines.append(f"  {name}: ~{flops / 1e6:.2f} MFLOP per world-step (estimate, see tools/bench_worlds.py) -> "
                     f"limit {limit:.0f} world-steps/s{share}")
    if results.get("population"):
        lines.append(bench_population.render_row(results["population"]))
    if results["newton"]:
        lines.append(f"note: Newton column: Newton {results['newton']} on Warp's CPU backend (one thread), the same "
                     "worlds through its ModelBuilder.replicate, collision pipeline every step; its XPBD cloth has "
                     "one spring per edge instead of triangles (tools/bench_sim.py)")
    lines += [f"note: {w}" for w in results["warnings"]]
    lines.append(targets_line(results))
    return "\n".join(lines)


def _newton_cells(r: dict) -> str:
    if r.get("newton") is None:
        return f" {'-':>10} {'-':>11}"
    return f" {r['newton']:>10.0f} {r['batched_graph'] / r['newton']:>10.1f}x"


def targets_line(results: dict) -> str:
    """The issue's targets that this section measures: 64 cloth worlds >= 15x one world's world-steps/s (launched),
    captured 64-world cloth >= 10 % of the arithmetic limit, every row (captured) at least Newton's."""
    rates, verdicts = results["rates"], []
    for name in ("cloth 32x32 XPBD", "cloth 32x32 semi-implicit"):
        if (name, 64) not in rates:
            continue
        gain = rates[(name, 64)]["batched"] / rates[(name, 1)]["batched"]
        verdicts.append(f"{name} 64 worlds / 1: {gain:.1f}x (>= 15x: {'PASS' if gain >= 15 else 'MISS'})")
        share = rates[(name, 64)]["batched_graph"] * results["flops"][name] / results["peak"]
        verdicts.append(f"{name} captured 64 worlds {100 * share:.1f} % of the limit "
                        f"(>= 10 %: {'PASS' if share >= 0.10 else 'MISS'})")
    population = results.get("population")
    if population and population["size"] >= 64:
        verdicts.append(f"cloth_throw population of {population['size']} {population['speedup']:.1f}x one by one "
                        f"(>= 10x: {'PASS' if population['speedup'] >= 10 else 'MISS'})")
    versus = [r["batched_graph"] >= r["newton"] for r in rates.values() if r.get("newton") is not None]
    if versus:
        verdicts.append(f"captured >= Newton in {sum(versus)} of {len(versus)} rows "
                        f"({'PASS' if all(versus) else 'MISS'})")
    return "worlds targets: " + (" | ".join(verdicts) if verdicts else "none measured (64 worlds and Newton: not in "
                                                                        "--quick)")


def main(argv=None) -> int:
    """`python -m tools.bench_worlds [--quick] [--counts N ...]`: this section alone."""
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 8 worlds, an eighth of the steps")
    parser.add_argument("--counts", type=int, nargs="+", default=None, metavar="N", help="world counts to run")
    args = parser.parse_args(argv)
    if args.counts and min(args.counts) < 1:
        parser.error("--counts: every count must be at least 1")
    print(render(measure(args.quick, tuple(args.counts) if args.counts else None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
