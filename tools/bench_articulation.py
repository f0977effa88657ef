"""Articulation throughput for tools/bench.py: our SolverFeatherstone against Newton's SolverFeatherstone (on
Warp, single-threaded on the CPU) and MuJoCo (CPU) on the same chains.

Two scenes, both chains of revolute joints hanging from the world under gravity, released from a bent pose
(every joint at 0.3 rad) and swinging, with no contacts, limits or drives:
    arm: 7 links (an arm's mass distribution: 4 kg at the shoulder down to 0.5 kg at the hand, 0.25 m links),
        axes alternating z, y (turning and bending).
    chain: 20 links of 0.2 kg and 0.1 m, axes alternating z, x.
Rates count joints x steps per second (joint-steps/s). Forward runs ping-pong two States from the initial pose;
forward+backward runs write one State per step on a Tape and run `tape.backward` from the final joint
coordinates (seed 1). The captured rows run the same work recorded once with wp.ScopedCapture and replayed (no
Python per launch, as `sim optimize` runs its iterations); a launched taped step pays the tape's bookkeeping in
Python for each of its kernels, which the small chains' kernels (microseconds each) do not hide. A forward run
and the forward+backward run it is compared with are timed in turns, so that a busy moment of the machine falls
on both. MuJoCo steps the same chains (hinge joints, the same inertias, Euler integrator, no contacts) with
`mj_step`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

import kernels as wp
import sim
from autodiff import Tape

from . import bench_sim

DT = 1.0e-3  # [s]
GRAPH_REPEATS = 10  # timed replays of a captured run per timed launched run
ANGLE = 0.3  # initial angle of every joint [rad]
AXES = {"z": (0.0, 0.0, 1.0), "y": (0.0, 1.0, 0.0), "x": (1.0, 0.0, 0.0)}


@dataclass(frozen=True)
class Chain:
    """A chain of `len(masses)` links hanging along -y from (0, 2, 0): link k has mass masses[k] [kg], length
    `length` [m] (centre of mass halfway), a rod-like inertia, and its joint turns about axes[k % len(axes)]."""

    name: str
    masses: tuple
    length: float
    axes: tuple

    @property
    def joints(self) -> int:
        return len(self.masses)

    def inertia(self, k: int) -> np.ndarray:
        m, ell = self.masses[k], self.length
        side = m * ell ** 2 / 12.0 + 1e-4
        return np.diag([side, 0.01 * side + 1e-5, side])

    def axis(self, k: int) -> tuple:
        return AXES[self.axes[k % len(self.axes)]]

    def parent_offset(self, k: int) -> tuple:
        """Position [m] of joint k in its parent's frame (the world for k = 0)."""
        return (0.0, 2.0, 0.0) if k == 0 else (0.0, -self.length, 0.0)


ARM = Chain("7-dof arm", (4.0, 3.0, 2.5, 2.0, 1.5, 1.0, 0.5), 0.25, ("z", "y"))
CHAIN = Chain("20-link chain", (0.2,) * 20, 0.1, ("z", "x"))
SCENES = (ARM, CHAIN)


# ---------------------------------------------------------------------------------------------------------------
# Ours


def ours_builder(chain: Chain):
    """Our ModelBuilder of the chain."""
    b = sim.ModelBuilder(up_axis="y")
    parent = -1
    for k, mass in enumerate(chain.masses):
        body = b.add_body(mass=mass, inertia=chain.inertia(k), com=(0.0, -chain.length / 2, 0.0))
        b.add_joint_revolute(parent, body, axis=chain.axis(k), parent_xform=(*chain.parent_offset(k), 0, 0, 0, 1))
        b.joint_q[-1] = ANGLE
        parent = body
    return b


def ours_model(chain: Chain, requires_grad: bool):
    return ours_builder(chain).finalize("cpu", requires_grad=requires_grad)


def ping_pong_run(pair, initial, step, synchronize, steps: int):
    """A run of `steps` steps, step(a, b), alternating the two states of `pair`, from the joint coordinates and
    velocities of `initial`; whether the final coordinates are finite."""
    def forward():
        a, b = pair
        a.joint_q.assign(initial.joint_q)
        a.joint_qd.assign(initial.joint_qd)
        for _ in range(steps):
            step(a, b)
            a, b = b, a
        synchronize()
        return bool(np.isfinite(a.joint_q.numpy()).all())

    return forward


def ours_forward_run(chain: Chain, steps: int):
    model = ours_model(chain, requires_grad=False)
    solver = sim.SolverFeatherstone(model)
    return ping_pong_run([model.state(), model.state()], model, lambda a, b: solver.step(model, a, b, None, DT),
                         wp.synchronize, steps)


def ours_forward_backward_run(chain: Chain, steps: int):
    model = ours_model(chain, requires_grad=True)
    solver = sim.SolverFeatherstone(model)
    states = [model.state() for _ in range(steps + 1)]
    seed = np.ones(model.joint_coord_count, np.float32)

    def forward_backward():
        tape = Tape()
        with tape:
            for t in range(steps):
                solver.step(model, states[t], states[t + 1], None, DT)
        tape.backward(grads={states[-1].joint_q: seed})
        wp.synchronize()
        finite = bool(np.isfinite(states[0].joint_qd.grad.numpy()).all())
        tape.zero()
        return finite

    return forward_backward


def ours_forward_graph_run(chain: Chain, steps: int):
    """The forward run captured once (on its first call) and replayed with no Python per launch."""
    model = ours_model(chain, requires_grad=False)
    solver = sim.SolverFeatherstone(model)
    pair = [model.state(), model.state()]
    solver.step(model, pair[0], pair[1], None, DT)  # builds the solver's reused intermediates outside the capture
    graphs = []

    def forward():
        if not graphs:
            with wp.ScopedCapture("cpu") as capture:
                a, b = pair
                a.joint_q.assign(model.joint_q)
                a.joint_qd.assign(model.joint_qd)
                for _ in range(steps):
                    solver.step(model, a, b, None, DT)
                    a, b = b, a
            graphs.append((capture.graph, a))
        graph, last = graphs[0]
        wp.capture_launch(graph)
        return bool(np.isfinite(last.joint_q.numpy()).all())

    return forward


def ours_forward_backward_graph_run(chain: Chain, steps: int):
    """The forward+backward run (a State per step, the Tape, its backward) captured once and replayed: the States
    and intermediates made inside the capture are zeroed, gradients included, at each replay."""
    model = ours_model(chain, requires_grad=True)
    solver = sim.SolverFeatherstone(model)
    seed = wp.array(np.ones(model.joint_coord_count, np.float32), device="cpu")
    graphs = []

    def forward_backward():
        if not graphs:
            tape = Tape()
            with wp.ScopedCapture("cpu") as capture:
                states = [model.state() for _ in range(steps + 1)]
                with tape:
                    for t in range(steps):
                        solver.step(model, states[t], states[t + 1], None, DT)
                tape.backward(grads={states[-1].joint_q: seed})
            graphs.append((capture.graph, states[0], tape))
        graph, first, _ = graphs[0]
        wp.capture_launch(graph)
        return bool(np.isfinite(first.joint_qd.grad.numpy()).all())

    return forward_backward


# ---------------------------------------------------------------------------------------------------------------
# References


def newton_forward_run(newton, chain: Chain, steps: int):
    """Newton's SolverFeatherstone on the same chain (add_link + add_joint_revolute + add_articulation)."""
    import warp
    model = newton_builder(newton, chain).finalize(device="cpu")
    solver = newton.solvers.SolverFeatherstone(model)
    control = model.control()
    return ping_pong_run([model.state(), model.state()], model.state(),
                         lambda a, b: solver.step(a, b, control, None, DT), warp.synchronize, steps)


def newton_builder(newton, chain: Chain):
    """Newton's ModelBuilder of the same chain."""
    import warp
    builder = newton.ModelBuilder(up_axis=newton.Axis.Y)
    parent, joints = -1, []
    for k, mass in enumerate(chain.masses):
        body = builder.add_link(mass=mass, inertia=warp.mat33(*chain.inertia(k).reshape(-1)),
                                com=warp.vec3(0.0, -chain.length / 2, 0.0))
        joints.append(builder.add_joint_revolute(parent, body, axis=warp.vec3(*chain.axis(k)),
                                                 parent_xform=warp.transform(warp.vec3(*chain.parent_offset(k)),
                                                                             warp.quat_identity())))
        parent = body
    builder.add_articulation(joints)
    builder.joint_q[:] = [ANGLE] * chain.joints
    return builder


def mujoco_xml(chain: Chain) -> str:
    """The chain as MJCF: nested bodies with hinge joints and explicit inertials, Euler integration, no contacts."""
    body = ""
    for k in reversed(range(chain.joints)):
        pos = " ".join(f"{v:g}" for v in chain.parent_offset(k))
        d = np.diag(chain.inertia(k))
        body = (f'<body pos="{pos}"><joint type="hinge" axis="{" ".join(f"{v:g}" for v in chain.axis(k))}"/>'
                f'<inertial pos="0 {-chain.length / 2:g} 0" mass="{chain.masses[k]:g}" '
                f'diaginertia="{d[0]:g} {d[1]:g} {d[2]:g}"/>{body}</body>')
    return (f'<mujoco><option timestep="{DT:g}" gravity="0 -9.81 0" integrator="Euler">'
            f'<flag contact="disable"/></option><worldbody>{body}</worldbody></mujoco>')


def mujoco_forward_run(mujoco, chain: Chain, steps: int):
    model = mujoco.MjModel.from_xml_string(mujoco_xml(chain))
    data = mujoco.MjData(model)

    def forward():
        mujoco.mj_resetData(model, data)
        data.qpos[:] = ANGLE
        for _ in range(steps):
            mujoco.mj_step(model, data)
        return bool(np.isfinite(data.qpos).all())

    return forward


def mujoco_available():
    """(the mujoco module or None, why not)."""
    try:
        import mujoco
    except Exception as e:  # not installed, or a broken install: its column stays empty
        return None, f"{type(e).__name__}: {e}"
    return mujoco, ""


# ---------------------------------------------------------------------------------------------------------------
# Measurement


def best_rate(run, work: int, repeats: int) -> float:
    """work / (best seconds of `repeats` timed runs after one warm-up run); raises if a run is not finite."""
    if not run():
        raise RuntimeError("an articulation benchmark run produced non-finite coordinates")
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        if not run():
            raise RuntimeError("an articulation benchmark run produced non-finite coordinates")
        best = min(best, time.perf_counter() - start)
    return work / best


def interleaved_rates(runs: dict, repeats: int) -> dict:
    """{key: work / best seconds} of `runs` ({key: (run, work)}), timed in turns over `repeats` rounds after a
    warm-up round; raises if one of our runs ends with non-finite coordinates."""
    warnings: list = []
    per_second = bench_sim.best_steps_per_second({("ours", key): run for key, (run, _) in runs.items()}, 1, repeats,
                                                 warnings, "articulation")
    if warnings:
        raise RuntimeError(f"an articulation benchmark run produced non-finite coordinates: {warnings}")
    return {key: work * per_second[("ours", key)] for key, (_, work) in runs.items()}


def joint_steps_per_second(steps: int, grad_steps: int, repeats: int, newton) -> dict:
    """{scene name: {"forward", "forward_backward", "newton", "mujoco": joint-steps/s (None: not measured)}},
    plus "warnings", "notes", "newton" and "mujoco" (versions, None when not importable)."""
    mujoco, mujoco_reason = mujoco_available()
    out = {"warnings": [], "notes": [], "newton": None if newton is None else newton.__version__,
           "mujoco": None if mujoco is None else mujoco.__version__}
    if mujoco is None:
        out["notes"].append(f"mujoco is not importable ({mujoco_reason}); the MuJoCo CPU column is '-'")
    for chain in SCENES:
        rates = interleaved_rates({"forward": (ours_forward_run(chain, steps), chain.joints * steps),
                                   "forward_backward": (ours_forward_backward_run(chain, grad_steps),
                                                        chain.joints * grad_steps)}, repeats)
        # a replay lasts milliseconds: more of them, so that the best is not one disturbed by the machine
        rates.update(interleaved_rates({"forward_graph": (ours_forward_graph_run(chain, steps), chain.joints * steps),
                                        "forward_backward_graph": (ours_forward_backward_graph_run(chain, grad_steps),
                                                                   chain.joints * grad_steps)},
                                       GRAPH_REPEATS * repeats))
        rates.update(newton=None, mujoco=None)
        for key, module, make in (("newton", newton, newton_forward_run), ("mujoco", mujoco, mujoco_forward_run)):
            if module is None:
                continue
            try:
                rates[key] = best_rate(make(module, chain, steps), chain.joints * steps, repeats)
            except Exception as e:  # a reference's API moves between releases: its cell stays empty
                out["warnings"].append(f"{key} {chain.name} did not run ({type(e).__name__}: {str(e)[:200]})")
        out[chain.name] = rates
    return out


def backward_ratio(rates: dict, captured: bool = False):
    """((forward+backward) - forward) / forward in time per joint-step, of the launched runs or of the captured
    ones."""
    if captured:
        return rates["forward_graph"] / rates["forward_backward_graph"] - 1.0
    return rates["forward"] / rates["forward_backward"] - 1.0


def worst_speedup(results: dict):
    """Smallest ratio of our forward rate to Newton's over the scenes; None without Newton."""
    ratios = [results[c.name]["forward"] / results[c.name]["newton"] for c in SCENES
              if results[c.name]["newton"] is not None]
    return min(ratios) if len(ratios) == len(SCENES) else None


def worst_backward(results: dict, captured: bool = False) -> float:
    """Largest backward / forward ratio over the scenes (launched or captured runs)."""
    return max(backward_ratio(results[c.name], captured) for c in SCENES)


def footnotes(results: dict) -> list:
    """What the articulation rows' reference columns are, and anything that went wrong."""
    lines = list(results["notes"])
    if results["newton"] is not None:
        lines.append(f"articulation rows, Warp CPU column: Newton {results['newton']}'s SolverFeatherstone on "
                     f"Warp's CPU backend (one thread), the same chains, dt and initial pose; ours runs on all "
                     f"cores. Rates are joints x steps per second")
    if results["mujoco"] is not None:
        lines.append(f"articulation rows, MuJoCo CPU column: MuJoCo {results['mujoco']} mj_step (Euler, contacts "
                     f"disabled) of the same chains")
    return [f"note: {line}" for line in lines + results["warnings"]]
