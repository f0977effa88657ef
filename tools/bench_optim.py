"""Optimisation cost for tools/bench.py: seconds per iteration of configs/cloth_throw.yaml against a
diffsim_cloth-style iteration in Newton, and the peak memory of one loss + gradient with the full tape against the
checkpointed rollout.

Ours: `sim.optimization.Problem` of the config; an iteration is `loss_and_gradient()` (rollout on a Tape, one
State per step, and backward), `optimizer.step()` (Adam on the throw velocity) and `zero_gradients()`, as
`sim optimize` runs it.

The reference is Newton (on Warp, single-threaded on the CPU) with the cloth of the config's scene built through
its own ModelBuilder (grid, pose, throw velocity, masses, membrane and bending stiffnesses, contact radius, ground
contact material), read from the loaded scene so that both sides stay the same. An iteration is what Newton's
diffsim_cloth example does: the rollout on a wp.Tape with one State per step (its collision pipeline every step,
for the ground), the squared distance of the centre of mass to the config's target, `tape.backward`, a gradient
step on the initial particle velocities and `tape.zero()`.

Memory: tracemalloc's peak during one `loss_and_gradient` (our CPU arrays are numpy-backed, so it sees them),
once with the full tape and once with the checkpointed rollout (checkpoint.above_steps forces either), over a
rollout longer than the config's. Both must give the same loss and gradient; their largest relative difference is
reported.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from . import bench_sim

CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "cloth_throw.yaml")
NEWTON_LEARNING_RATE = 5.0  # per-particle velocity step [m/s per unit gradient], diffsim_cloth's


def load_problem(overrides=()):
    """Our Problem of configs/cloth_throw.yaml with config `overrides` ("key.path=value")."""
    from sim.optimization import Problem, load_config  # here: the other sections run without the scene stack
    return Problem(load_config(CONFIG, list(overrides)))


# ---------------------------------------------------------------------------------------------------------------
# Iterations: each run does one optimisation iteration and returns whether its loss was finite.


def ours_iteration_run(problem, losses: list):
    """One `sim optimize` iteration of `problem`; appends its loss to `losses`."""
    def iteration():
        loss, _ = problem.loss_and_gradient()
        problem.optimizer.step()
        problem.zero_gradients()
        losses.append(loss)
        return math.isfinite(loss)

    return iteration


@dataclass(frozen=True)
class ThrowScene:
    """What Newton needs of the config's scene (the first cloth, a grid) and loss (the first term, com_target)."""

    dims: tuple  # (dim_x, dim_y) cells
    cell: tuple  # (cell_x, cell_y) [m]
    pos: tuple  # [m]
    rot: tuple  # (x, y, z, w)
    vel: tuple  # [m/s]
    mass: float  # per vertex [kg]
    radius: float  # contact radius [m]
    material: object  # tri_ke, tri_ka, tri_kd, edge_ke, edge_kd
    contact: object  # ke, kd, kf, mu, margin
    dt: float  # [s]
    steps: int
    target: tuple  # [m]


def throw_scene(problem) -> ThrowScene:
    """The Newton-relevant settings of our loaded `problem`; raises if the config is not a gridded cloth with a
    ground and one com_target loss (what the reference rebuilds)."""
    spec = problem.cfg.scene.spec
    cloth, loss = spec.cloth[0], problem.cfg.spec.loss[0]
    if (cloth.grid is None or cloth.material is None or len(spec.cloth) != 1 or spec.particles
            or loss.type != "com_target" or [c.type for c in spec.colliders] != ["ground"]
            or spec.sim.solver.type != "semi_implicit"):
        raise ValueError(f"{CONFIG} is no longer one gridded cloth (with a material) over a ground with a "
                         f"com_target loss")
    material = spec.materials[cloth.material] if isinstance(cloth.material, str) else cloth.material
    return ThrowScene((cloth.grid.dim_x, cloth.grid.dim_y), (cloth.grid.cell_x, cloth.grid.cell_y),
                      tuple(cloth.pos), tuple(cloth.rot), tuple(cloth.vel), cloth.mass, cloth.radius, material,
                      spec.sim.contact, problem.built.dt, problem.steps, tuple(loss.target))


def newton_model(newton, scene: ThrowScene):
    """Newton's Model of the cloth over a ground plane, with gradients, on the CPU."""
    import warp
    builder = newton.ModelBuilder(up_axis=newton.Axis.Y)
    c, m = scene.contact, scene.material
    cfg = builder.default_shape_cfg
    cfg.ke, cfg.kd, cfg.kf, cfg.mu = c.ke, c.kd, c.kf, c.mu
    builder.add_cloth_grid(pos=warp.vec3(*scene.pos), rot=warp.quat(*scene.rot), vel=warp.vec3(*scene.vel),
                           dim_x=scene.dims[0], dim_y=scene.dims[1], cell_x=scene.cell[0], cell_y=scene.cell[1],
                           mass=scene.mass, tri_ke=m.tri_ke, tri_ka=m.tri_ka, tri_kd=m.tri_kd, edge_ke=m.edge_ke,
                           edge_kd=m.edge_kd, particle_radius=scene.radius)
    builder.add_ground_plane()
    model = builder.finalize(device="cpu", requires_grad=True)
    model.particle_ke, model.particle_kd, model.particle_kf, model.particle_mu = c.ke, c.kd, c.kf, c.mu
    model.particle_grid = None  # no particle-particle contact (the scene has none; Newton warns it spoils gradients)
    return model


def newton_iteration_run(newton, scene: ThrowScene, losses: list):
    """One diffsim_cloth-style iteration in Newton; appends its loss to `losses`."""
    import warp
    com_kernel, loss_kernel, descend_kernel = _warp_kernels()
    model = newton_model(newton, scene)
    solver = newton.solvers.SolverSemiImplicit(model, enable_tri_contact=False)  # we have no self-contact
    pipeline = newton.CollisionPipeline(model, soft_contact_margin=scene.contact.margin)
    contacts = pipeline.contacts()
    control = model.control()
    states = [model.state() for _ in range(scene.steps + 1)]
    com = warp.zeros(1, dtype=warp.vec3, device="cpu", requires_grad=True)
    loss = warp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    count, target = model.particle_count, warp.vec3(*scene.target)

    def iteration():
        com.zero_()
        tape = warp.Tape()
        with tape:
            for t in range(scene.steps):
                states[t].clear_forces()
                pipeline.collide(states[t], contacts)
                solver.step(states[t], states[t + 1], control, contacts, scene.dt)
            warp.launch(com_kernel, dim=count, inputs=[states[-1].particle_q, 1.0 / count, com], device="cpu")
            warp.launch(loss_kernel, dim=1, inputs=[com, target, loss], device="cpu")
        tape.backward(loss=loss)
        velocity = states[0].particle_qd
        warp.launch(descend_kernel, dim=count, inputs=[velocity, velocity.grad, NEWTON_LEARNING_RATE], device="cpu")
        tape.zero()
        value = float(loss.numpy()[0])
        losses.append(value)
        return math.isfinite(value)

    return iteration


_WARP_KERNELS = []


def _warp_kernels():
    """(centre of mass, squared distance, gradient step) compiled by Warp, defined when Newton is imported."""
    if not _WARP_KERNELS:
        import warp

        @warp.kernel
        def mean_position(q: warp.array(dtype=warp.vec3), weight: float, com: warp.array(dtype=warp.vec3)):
            warp.atomic_add(com, 0, q[warp.tid()] * weight)

        @warp.kernel
        def squared_distance(com: warp.array(dtype=warp.vec3), target: warp.vec3, loss: warp.array(dtype=float)):
            d = com[0] - target
            loss[0] = warp.dot(d, d)

        @warp.kernel
        def gradient_step(x: warp.array(dtype=warp.vec3), grad: warp.array(dtype=warp.vec3), rate: float):
            i = warp.tid()
            x[i] = x[i] - rate * grad[i]

        _WARP_KERNELS.extend([mean_position, squared_distance, gradient_step])
    return _WARP_KERNELS


# ---------------------------------------------------------------------------------------------------------------
# Measurement


def seconds_per_iteration(repeats: int, newton) -> dict:
    """{"ours": s, "reference": s or None, "steps": steps per rollout, "first_loss": {"ours": ..., "reference":
    ...} (the loss at the config's initial velocity, the same scene on both sides), "warnings": [...]}.
    Iterations of both run in turns, after one warm-up iteration each (which also compiles)."""
    problem = load_problem()
    losses = {"ours": [], "reference": []}
    runs = {("ours", "iteration"): ours_iteration_run(problem, losses["ours"])}
    warnings = []
    if newton is not None:
        try:
            scene = throw_scene(problem)
            runs[("reference", "iteration")] = newton_iteration_run(newton, scene, losses["reference"])
        except Exception as e:  # Newton's API moves between releases: its cell stays empty
            warnings.append(f"Newton cloth-throw iteration did not build ({type(e).__name__}: {str(e)[:200]})")
    per_second = bench_sim.best_steps_per_second(runs, 1, repeats, warnings, "cloth throw")
    seconds = {who: 1.0 / rate for (who, _), rate in per_second.items()}
    return {"ours": seconds["ours"], "reference": seconds.get("reference"), "steps": problem.steps,
            "first_loss": {who: values[0] if values else None for who, values in losses.items()},
            "warnings": warnings}


def tape_memory(frames: int) -> dict:
    """Peak traced bytes of one loss_and_gradient over `frames` frames with the full tape and checkpointed:
    {"full": bytes, "checkpointed": bytes, "steps": steps, "loss_difference": relative, "gradient_difference":
    largest relative difference of the gradient components (relative to the largest component)}."""
    out, results = {}, {}
    for kind, above in (("full", 10 ** 9), ("checkpointed", 1)):
        problem = load_problem([f"frames={frames}", f"checkpoint.above_steps={above}"])
        if problem.checkpointed != (kind == "checkpointed"):
            raise RuntimeError(f"checkpoint.above_steps={above} did not give a {kind} rollout")
        loss, out[kind] = problem.loss_and_gradient(measure_memory=True)
        gradient = np.concatenate([p.variable.grad.numpy().astype(np.float64).ravel() for p in problem.params])
        results[kind] = (loss, gradient)
        out["steps"] = problem.steps
    (loss_full, grad_full), (loss_ckpt, grad_ckpt) = results["full"], results["checkpointed"]
    out["loss_difference"] = abs(loss_ckpt - loss_full) / max(abs(loss_full), 1e-30)
    out["gradient_difference"] = float(np.abs(grad_ckpt - grad_full).max() / max(np.abs(grad_full).max(), 1e-30))
    return out


def footnotes(optim: dict) -> list:
    """What the optimisation rows' reference column is, and whether both sides simulate the same throw."""
    lines = []
    if optim["newton"] is not None:
        first = optim["iteration"]["first_loss"]
        agree = (f"loss at the initial throw: ours {first['ours']:.5g}, Newton {first['reference']:.5g}"
                 if first["reference"] is not None else "")
        lines.append(f"cloth-throw iteration, Warp CPU column: Newton {optim['newton']} (one thread), the config's "
                     f"cloth and ground through newton.ModelBuilder, a diffsim_cloth-style iteration (wp.Tape, one "
                     f"State per step, collision pipeline every step, SGD on the per-particle initial velocities; "
                     f"ours: Adam on the one throw velocity){'; ' + agree if agree else ''}")
    memory = optim["memory"]
    lines.append(f"tape memory: tracemalloc peak of one loss_and_gradient over {memory['steps']} steps; checkpointed "
                 f"vs full: loss differs by {memory['loss_difference']:.1e}, gradient by "
                 f"{memory['gradient_difference']:.1e} (relative)")
    return [f"note: {line}" for line in lines + optim["warnings"]]
