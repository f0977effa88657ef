"""Rigid-body throughput for tools/bench.py: boxes falling on the ground, our SolverRigid against Newton's
SolverSemiImplicit on the CPU.

The scene is the rigid-body issue's: a lattice of boxes of 0.1 m half extent (1000 kg/m^3, so 8 kg each), 5 cm
apart, each turned by up to 0.2 rad about a random axis, its lowest layer 5 cm above a ground plane. Every run
starts from that lattice and steps `steps` steps of dt = 1/600 s, ping-ponging two States: the boxes fall, land,
and the columns settle onto the layers below. Rates count bodies x steps per second. Forward+backward runs write
one State per step on a Tape, take the loss as the sum of the bodies' heights in the final State and run
`tape.backward`.

The reference is Newton (on Warp, single-threaded on the CPU) with the same boxes built through its own
ModelBuilder (add_body + add_shape_box + add_ground_plane, one free joint per body), SolverSemiImplicit, and its
collision pipeline (unreduced contacts, which that solver needs) run every step as its examples do. Ours has its
default contacts (the time-constant form, docs/rigid_contact.md), Newton its penalty contacts (ke, kd); kf, mu,
density and dt are the same, angular damping is off on both sides; what cannot be the same is in `footnotes`.
How well each holds its contacts is measured beside the speed: the mean and worst penetration depth of the
contacts in the final state of a run (every box against the ground, every overlapping pair of boxes), measured in
numpy from the poses alone (sim.penetration), not by either solver's narrow phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import kernels as wp
import sim
from autodiff import Tape
from sim.penetration import box_pile_depths

from . import bench_rigid_baseline, bench_sim

DT = 1.0 / 600.0  # [s]; Newton's explicit penalty bound sqrt(m_eff / (n ke)) is about 4.5 ms for one box on 4 points


@dataclass(frozen=True)
class Boxes:
    """The benchmark scene: a lattice of `shape` = (nx, ny, nz) boxes (ny layers along the up axis y)."""

    shape: tuple
    half_extent: float = 0.1  # [m]
    density: float = 1000.0  # [kg/m^3]
    gap: float = 0.05  # between neighbouring boxes [m]
    lift: float = 0.05  # of the lowest layer above the ground [m]
    tilt: float = 0.2  # largest initial rotation [rad]
    seed: int = 0
    ke: float = 1.0e5  # Newton's contact stiffness [N/m] (our penalty form's default)
    kd: float = 100.0  # Newton's contact damping [N s/m] (its default; undamped Newton contacts bounce)
    kf: float = 100.0  # friction slope [N s/m]: our default
    mu: float = 0.5  # our default

    @property
    def count(self) -> int:
        return int(np.prod(self.shape))


def box_poses(boxes: Boxes) -> list:
    """(position [m] (3,), rotation (x, y, z, w)) of every box, the same for both simulators."""
    rng = np.random.default_rng(boxes.seed)
    pitch = 2.0 * boxes.half_extent + boxes.gap
    nx, ny, nz = boxes.shape
    poses = []
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                pos = np.array([(i - (nx - 1) / 2) * pitch, boxes.lift + boxes.half_extent + j * pitch,
                                (k - (nz - 1) / 2) * pitch])
                axis = rng.standard_normal(3)
                axis /= np.linalg.norm(axis)
                half_angle = 0.5 * rng.uniform(0.0, boxes.tilt)
                poses.append((pos, np.append(axis * math.sin(half_angle), math.cos(half_angle))))
    return poses


# ---------------------------------------------------------------------------------------------------------------
# Runs: {"forward": run, "forward_backward": run} (or only "forward"); a run simulates `steps` steps from the
# initial lattice and returns whether the final poses are finite.


def ours_builder(boxes: Boxes, *, ground: bool = True):
    """Our ModelBuilder of the boxes, and the ground unless `ground` is False."""
    builder = sim.ModelBuilder(up_axis="y")
    h = boxes.half_extent
    for pos, rot in box_poses(boxes):
        body = builder.add_body(pos=pos, rot=rot)
        builder.add_shape_box(hx=h, hy=h, hz=h, body=body, density=boxes.density, **ours_material(boxes))
    if ground:
        builder.add_ground_plane(**ours_material(boxes))
    return builder


def ours_material(boxes: Boxes) -> dict:
    """Contact material of every shape: the normal force in its default, time-constant form."""
    return dict(kf=boxes.kf, mu=boxes.mu)


def ours_model(boxes: Boxes, requires_grad: bool, device="cpu"):
    """Our Model of the boxes and the ground on `device`."""
    return ours_builder(boxes).finalize(device=device, requires_grad=requires_grad)


LOSS_SOURCE = '''
@wp.kernel
def sum_body_heights(q: wp.array(dtype=wp.transform), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.transform_get_translation(q[i])[1])
'''


def ours_forward_run(boxes: Boxes, steps: int, threads: int | None = None, final: dict | None = None):
    """Forward run of SolverRigid: `steps` steps ping-ponging two States, reset to the lattice first; on `threads`
    CPU threads (wp.config.cpu_threads, restored after the run) when given. The final poses (n, 7) go to
    final["poses"] when `final` is given."""
    model = ours_model(boxes, requires_grad=False)
    solver = sim.SolverRigid(model)
    pair = [model.state(), model.state()]

    def forward():
        previous = wp.config.cpu_threads
        if threads is not None:
            wp.config.cpu_threads = threads
        try:
            a, b = pair
            a.body_q.assign(model.body_q0)
            a.body_qd.assign(model.body_qd0)
            for _ in range(steps):
                solver.step(model, a, b, None, DT)
                a, b = b, a
            wp.synchronize()
        finally:
            wp.config.cpu_threads = previous
        poses = a.body_q.numpy()
        if final is not None:
            final["poses"] = poses.copy()
        return bool(np.isfinite(poses).all())

    return forward


def ours_forward_backward_run(boxes: Boxes, steps: int, load_kernels):
    """Forward on a Tape (one State per step) and `tape.backward` of the sum of the final heights."""
    loss_kernel = load_kernels(LOSS_SOURCE).sum_body_heights
    model = ours_model(boxes, requires_grad=True)
    solver = sim.SolverRigid(model)
    states = [model.state() for _ in range(steps + 1)]
    loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def forward_backward():
        tape = Tape()
        loss.zero_()
        with tape:
            for t in range(steps):
                solver.step(model, states[t], states[t + 1], None, DT)
            wp.launch(loss_kernel, dim=model.body_count, inputs=[states[-1].body_q, loss], device="cpu")
        tape.backward(loss=loss)
        wp.synchronize()
        finite = np.isfinite(states[0].body_qd.grad.numpy()).all()
        tape.zero()
        return bool(finite)

    return forward_backward


def newton_builder(newton, boxes: Boxes, *, ground: bool = True):
    """Newton's ModelBuilder of the same boxes, and the ground unless `ground` is False."""
    import warp
    builder = newton.ModelBuilder(up_axis=newton.Axis.Y)
    newton_material(builder, boxes)
    h = boxes.half_extent
    for pos, rot in box_poses(boxes):
        body = builder.add_body(xform=warp.transform(warp.vec3(*pos), warp.quat(*rot)))
        builder.add_shape_box(body, hx=h, hy=h, hz=h)
    if ground:
        builder.add_ground_plane()
    return builder


def newton_material(builder, boxes: Boxes):
    """The boxes' contact material as Newton `builder`'s default shape settings."""
    cfg = builder.default_shape_cfg
    cfg.density, cfg.ke, cfg.kd, cfg.kf, cfg.mu = boxes.density, boxes.ke, boxes.kd, boxes.kf, boxes.mu


def newton_model(newton, boxes: Boxes):
    """Newton's Model of the same boxes and ground on the CPU."""
    return newton_builder(newton, boxes).finalize(device="cpu")


def newton_forward_run(newton, boxes: Boxes, steps: int, final: dict | None = None):
    """Forward run of Newton's SolverSemiImplicit with its collision pipeline every step, from the lattice; the
    final poses (n, 7) go to final["poses"] when `final` is given."""
    import warp
    model = newton_model(newton, boxes)
    solver = newton.solvers.SolverSemiImplicit(model, angular_damping=0.0)
    pipeline = newton.CollisionPipeline(model, reduce_contacts=False)  # the semi-implicit solver refuses reduced
    contacts = pipeline.contacts()
    control = model.control()
    initial = model.state()
    pair = [model.state(), model.state()]

    def forward():
        a, b = pair
        a.body_q.assign(initial.body_q)
        a.body_qd.assign(initial.body_qd)
        for _ in range(steps):
            a.clear_forces()
            pipeline.collide(a, contacts)
            solver.step(a, b, control, contacts, DT)
            a, b = b, a
        warp.synchronize()
        poses = a.body_q.numpy()
        if final is not None:
            final["poses"] = poses.copy()
        return bool(np.isfinite(poses).all())

    return forward


# ---------------------------------------------------------------------------------------------------------------
# Measurement


def body_steps_per_second(large: Boxes, large_steps: int, small: Boxes, small_steps: int, repeats: int, newton,
                          load_kernels, baseline=None) -> dict:
    """Bodies x steps per second: {"large": {"ours": rate, "ours_one_thread": rate, "reference": rate or None},
    "small": {"forward": rate, "forward_backward": rate}, "depth": {"ours": (mean, worst) [mm],
    "reference": (mean, worst) or None}, "warnings": [...]}. The reference runs the large scene only (on one
    thread: Warp's CPU backend); depths are those of the large scene's final state (penetration_mm). With
    `baseline` (a started bench_rigid_baseline.BaselineTree), the tree before issue 36 runs the large scene in the
    same rounds, on all cores and on one thread: "large" also holds "baseline" and "baseline_one_thread"."""
    warnings = []
    finals = {"ours": {}, "reference": {}}
    # keys (who, what), as bench_sim.best_steps_per_second expects: only "ours" must not fail
    runs = {("ours", "large"): ours_forward_run(large, large_steps, final=finals["ours"]),
            ("ours", "large_one_thread"): ours_forward_run(large, large_steps, threads=1),
            ("ours", "forward"): ours_forward_run(small, small_steps),
            ("ours", "forward_backward"): ours_forward_backward_run(small, small_steps, load_kernels)}
    if baseline is not None:
        runs[("baseline", "large")] = baseline.run_on("all")
        runs[("baseline", "large_one_thread")] = baseline.run_on("one")
    if newton is not None:
        try:
            runs[("reference", "large")] = newton_forward_run(newton, large, large_steps, final=finals["reference"])
        except Exception as e:  # Newton's API moves between releases: its cell stays empty
            warnings.append(f"Newton rigid scene did not build ({type(e).__name__}: {str(e)[:200]})")
    runs_per_second = bench_sim.best_steps_per_second(runs, 1, repeats, warnings, "rigid boxes")
    body_steps = {"large": large.count * large_steps, "large_one_thread": large.count * large_steps,
                  "forward": small.count * small_steps, "forward_backward": small.count * small_steps}
    rates = {key: rate * body_steps[key[1]] for key, rate in runs_per_second.items()}
    depth = {who: penetration_mm(final["poses"], large) if "poses" in final else None
             for who, final in finals.items()}
    return {"large": {"ours": rates[("ours", "large")], "ours_one_thread": rates[("ours", "large_one_thread")],
                      "reference": rates.get(("reference", "large")), "baseline": rates.get(("baseline", "large")),
                      "baseline_one_thread": rates.get(("baseline", "large_one_thread"))},
            "small": {"forward": rates[("ours", "forward")],
                      "forward_backward": rates[("ours", "forward_backward")]},
            "depth": depth, "warnings": warnings}


def penetration_mm(poses: np.ndarray, boxes: Boxes) -> tuple:
    """(mean, worst) penetration depth [mm] of the contacts of the boxes at `poses` (n, 7): each box against the
    ground and each overlapping pair (sim.penetration.box_pile_depths); (0, 0) when nothing touches."""
    depths = box_pile_depths(poses, (boxes.half_extent,) * 3)
    if len(depths) == 0:
        return 0.0, 0.0
    return 1e3 * float(depths.mean()), 1e3 * float(depths.max())


def backward_ratio(small: dict):
    """((forward+backward) - forward) / forward of the small scene; None when either is missing."""
    return bench_sim.cloth_backward_ratio(small)


def speedup(large: dict, who: str = "ours"):
    """Our body-steps/s (`who`: "ours" or "ours_one_thread") over Newton's on the large scene; None without
    Newton."""
    reference = large.get("reference")
    return None if not reference else large[who] / reference


def baseline_ratio(large: dict, who: str = "ours"):
    """Our body-steps/s (`who`: "ours" or "ours_one_thread") over the tree before issue 36's on the large scene,
    on as many threads; None when the baseline did not run."""
    before = large.get("baseline" if who == "ours" else "baseline_one_thread")
    return None if not before else large[who] / before


def footnotes(rigid: dict) -> list:
    """What the rigid rows' reference column is, how its contacts differ from ours, and anything that went wrong."""
    lines = list(rigid["notes"])
    if rigid["newton"] is not None:
        lines += [
            f"rigid rows, Warp CPU column: Newton {rigid['newton']} on Warp's CPU backend (one thread), "
            f"SolverSemiImplicit with its collision pipeline (GJK/MPR narrow phase, unreduced contacts) every step; "
            f"ours runs on all cores (the toolkit's thread pool; the '1 thread' row on one) with a hash-grid broad "
            f"phase, bounding-box culling, one narrow phase per touching pair and at most 4 contact points per box "
            f"pair",
            "rigid contacts differ in form: ours are the default time-constant form (a spring-damper of the "
            "pair's effective mass, tau = 1 ms kept above 2 steps, critically damped, implicit along the normal, "
            "contacts sharing a body coupled by 3 Jacobi passes on their normal impulses), unload with "
            "restitution 0 and regularise friction with tanh; Newton's are penalty springs (ke 1e5 N/m, kd 100 "
            "N s/m), elastic both ways, friction clamped at mu fn; kf, mu, density and dt are the same",
            "rigid depth rows: mean and worst penetration of the contacts in the final state of the 1000-box run "
            "(box-ground and box-box), measured in numpy from the poses (separating-axis test), not by either "
            "solver",
        ]
    if rigid["large"].get("baseline"):
        lines.append(
            f"rigid rows 'the tree before issue 36': this repository's commit {bench_rigid_baseline.BASELINE} "
            "(before the time-constant contacts: penalty contacts, no coupled passes), its own kernels, solver and "
            "bench scene (the same boxes, step and steps), exported from git history and run in a subprocess, "
            "interleaved with ours in the same rounds (tools/bench_rigid_baseline.py); issue 36 asks for at least "
            "0.8x of its rate")
    return [f"note: {line}" for line in lines + rigid["warnings"]]
