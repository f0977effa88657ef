"""The population driver: PopulationProblem (one Problem whose scene is N worlds, one member per world) and
`optimize_population`, which iterates, snapshots and writes loss.csv (every member's loss), loss.png and
params.yaml (the best member's), population.yaml (each member's start, learned values and final loss) and the best
member's initial.usd / final.usd / progress video. See population.py for how members are kept apart."""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np

import kernels as wp

from .. import interrupts
from ..atomic_file import write_atomic
from ..scene.errors import SimulationError
from ..scene.progress import Progress
from .population import (MemberOptimizers, WorldView, add_member_loss, check_population_keys, member_starts)
from .run import (OptimizeResult, Problem, config_digest, in_output_folder, make_optimizer, params_yaml,
                  rebuild_scene, resumed, write_rollouts, write_text)
from .snapshot import save_snapshot


class PopulationProblem(Problem):
    """The config's problem for `size` members at once: the scene built as `size` worlds, member k's parameters
    and loss terms on world k, one optimiser per member."""

    def __init__(self, cfg, size: int, seed: int | None = None, device=None, capture: bool = True,
                 world_overrides=()):
        check_population_keys(cfg)
        self.size = size
        self.seed = cfg.spec.population.seed if seed is None else int(seed)
        # `worlds.K.KEY=VALUE` overrides (a batched sweep's runs): each member then starts from its world's scene
        self.draw_starts = not world_overrides
        self.scene = rebuild_scene(cfg, [f"sim.worlds={size}", *world_overrides])
        super().__init__(cfg, device, capture, scene=self.scene)

    def _learn(self):
        specs = self.scene.world_spec_list()
        self.views = [WorldView(self.built, k) for k in range(self.size)]
        self.members = [self.learned_parameters(view, specs[k]) for k, view in enumerate(self.views)]
        starts = member_starts(self.cfg, self.size, self.members[0], self.seed) if self.draw_starts else \
            [[None] * len(self.members[0])] * self.size
        device = self.built.model.device
        for k, (params, row) in enumerate(zip(self.members, starts)):
            for p, value in zip(params, row):
                if value is not None:
                    self._start(k, p, value)
                p.allocate(device)
        self.params = [p for member in self.members for p in member]
        self.member_terms = [self.loss_terms(view, params) for view, params in zip(self.views, self.members)]
        self.losses = [l for terms in self.member_terms for l in terms]
        self.optimizer = MemberOptimizers([make_optimizer(self.cfg.spec.optimizer, m) for m in self.members])
        self.member_loss_arrays = []
        self.start_values = [self.member_values(k) for k in range(self.size)]
        self.peak_memory = 0  # the largest traced allocation of a measured iteration [bytes]

    def _start(self, k: int, p, value):
        try:
            if p.log and np.any(np.asarray(value) <= 0):
                raise ValueError(f"log: true needs a positive start, got {np.min(value):g}")
            p.start_from(value)
        except ValueError as e:
            raise self.cfg.error(("population", "starts", k, p.path), str(e).split(": ", 1)[-1]) from None

    def loss_arrays(self, device) -> tuple:
        """The total (shape [1], differentiated) and, per term, its member's loss array (shape [1])."""
        loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        self.member_loss_arrays = [wp.zeros(1, dtype=float, device=device, requires_grad=True)
                                   for _ in range(self.size)]
        sinks = [self.member_loss_arrays[k] for k, terms in enumerate(self.member_terms) for _ in terms]
        return loss, sinks

    def sum_losses(self, loss):
        for part in self.member_loss_arrays:
            wp.launch(add_member_loss, dim=1, inputs=[part], outputs=[loss], device=loss.device)

    def member_losses(self) -> np.ndarray:
        """Each member's loss of the last rollout (or replay)."""
        return np.array([float(a.numpy()[0]) for a in self.member_loss_arrays])

    def member_values(self, k: int) -> dict:
        return {p.path: p.yaml_value() for p in self.members[k]}


def optimize_population(cfg, size: int, seed: int | None = None, *, iterations=None, out_dir=None, resume: bool = False,
                        overwrite: bool = False, progress: bool = False, device=None, write: bool = True,
                        stop_after=None, capture: bool = True, world_overrides=()) -> OptimizeResult:
    """`optimize` (run.py, same arguments) for `size` members at once; the result's `params`, `losses` and
    `final_loss` are the best member's, `members` says every member's and `member_results` holds, per member, the
    OptimizeResult its start gives alone. `world_overrides` (`worlds.K.KEY=VALUE`) make the members' worlds
    differ (each then starts from its own world's values: no drawn starts)."""
    problem = PopulationProblem(cfg, size, seed, device, capture, world_overrides)
    out_dir = out_dir or cfg.spec.output.dir or os.path.join("out", cfg.name)
    return in_output_folder(lambda: _run(problem, iterations, out_dir, resume, progress, write, stop_after),
                            out_dir, write, resume, overwrite)


def _run(problem: PopulationProblem, iterations, out_dir, resume, progress, write, stop_after) -> OptimizeResult:
    cfg, n = problem.cfg, problem.size
    total = cfg.spec.iterations if iterations is None else int(iterations)
    digest = f"{config_digest(cfg)}-population-{n}"
    start, rows = resumed(problem, out_dir, digest) if write and resume else (0, [])
    bar = Progress(total, unit="iterations", enabled=progress)
    seconds, it = [], start
    try:
        it = _iterate(problem, it, total, rows, seconds, bar, out_dir, digest, write, stop_after)
    except KeyboardInterrupt:
        bar.close()
        if write:
            save_snapshot(out_dir, int(rows[-1][0]) + 1 if rows else start, problem.params, problem.optimizer,
                          rows, digest)
            _write_loss_csv(out_dir, n, rows)
        raise
    bar.close()
    final = _final_losses(problem, rows)
    best = int(np.nanargmin(np.where(np.isfinite(final), final, np.nan))) if np.isfinite(final).any() else None
    result = OptimizeResult(it, [r[3 + best] for r in rows] if best is not None else [],
                            problem.member_values(best) if best is not None else {}, out_dir if write else None,
                            bool(rows) and best is not None and _converged(cfg, rows[-1], best),
                            float(np.mean(seconds)) if seconds else 0.0, problem.checkpointed,
                            problem.peak_memory)
    result.final_loss = float(final[best]) if best is not None else math.nan
    result.best_member = best
    result.members = [{"member": k, "start": problem.start_values[k], "learned": problem.member_values(k),
                       "final_loss": float(final[k]), "status": _status(cfg, rows, k)} for k in range(n)]
    result.member_results = [_member_result(problem, rows, final, k, result) for k in range(n)]
    if best is not None:
        result.final_errors = problem.final_errors(problem.member_terms[best])
    if write:
        save_snapshot(out_dir, it, problem.params, problem.optimizer, rows, digest)
        result.files = _write_outputs(out_dir, problem, rows, result)
    return result


def _iterate(problem, it, total, rows, seconds, bar, out_dir, digest, write, stop_after) -> int:
    """Iterations `it`.. until `total`, every member converged or failed, or `stop_after`; appends to rows."""
    cfg, n = problem.cfg, problem.size
    first = it
    active = _active(cfg, rows[-1] if rows else None, n)
    while it < total and any(active) and (stop_after is None or it - first < stop_after):
        interrupts.raise_if_stopped()  # a stop a library swallowed is not lost: the snapshot is saved
        t0 = time.perf_counter()
        _, memory = problem.loss_and_gradient(measure_memory=(it == first))
        problem.peak_memory = max(problem.peak_memory, memory)
        losses = problem.member_losses()
        failed = ~np.isfinite(losses)
        if failed.all():
            _raise_blowup(problem, it)
        grad_norm = problem.optimizer.grad_norm() if not failed.any() else math.nan
        active = [a and np.isfinite(l) and l > cfg.spec.tolerance for a, l in zip(active, losses)]
        problem.optimizer.step(active)  # members that converged or blew up keep their parameters
        problem.zero_gradients()
        finite = losses[np.isfinite(losses)]
        rows.append([it, float(finite.min()), grad_norm] + losses.tolist())
        seconds.append(time.perf_counter() - t0)
        it += 1
        bar.update(it, f"best loss {finite.min():.4g}")
        if write and (it % cfg.spec.output.save_every == 0 or not any(active) or it == total):
            save_snapshot(out_dir, it, problem.params, problem.optimizer, rows, digest)
            _write_loss_csv(out_dir, n, rows)
    return it


def _member_result(problem, rows: list, final, k: int, whole: OptimizeResult) -> OptimizeResult:
    """What member k's start gives run alone: its rows up to the one where it converged (alone it stops there)."""
    cfg = problem.cfg
    stop = next((i + 1 for i, r in enumerate(rows) if _converged(cfg, r, k)), len(rows))
    out = OptimizeResult(stop, [r[3 + k] for r in rows[:stop]], problem.member_values(k), None,
                         stop < len(rows) or (bool(rows) and _converged(cfg, rows[-1], k)),
                         whole.seconds_per_iteration, whole.checkpointed, whole.peak_memory_bytes)
    out.final_loss = float(final[k])
    return out


def _active(cfg, last_row, n: int) -> list:
    """Which members still step: all at the start; after a snapshot, those neither converged nor failed."""
    if last_row is None:
        return [True] * n
    return [bool(np.isfinite(l) and l > cfg.spec.tolerance) for l in last_row[3:3 + n]]


def _converged(cfg, row, k: int) -> bool:
    return bool(np.isfinite(row[3 + k]) and row[3 + k] <= cfg.spec.tolerance)


def _status(cfg, rows, k: int) -> str:
    if not rows:
        return "not run"
    failed = next((int(r[0]) for r in rows if not np.isfinite(r[3 + k])), None)
    if failed is not None:
        return f"blew up at iteration {failed}"
    return "converged" if _converged(cfg, rows[-1], k) else "done"


def _final_losses(problem: PopulationProblem, rows: list) -> np.ndarray:
    """Each member's loss at the parameters it ends with (one more rollout: stepped members moved past their
    last row)."""
    if not rows:
        return np.full(problem.size, np.nan)
    problem.loss()
    return problem.member_losses()


def _raise_blowup(problem, it: int):
    blowup = problem.find_blowup()
    if blowup is not None:
        raise SimulationError(blowup.frame, blowup.quantity, f"{blowup.detail}; every member's forward simulation "
                              f"blew up by iteration {it}")
    raise FloatingPointError(f"iteration {it}: every member's loss is non-finite although the simulation stayed "
                             "finite; lower the learning rate or check bounds")


def _write_loss_csv(out_dir: str, n: int, rows: list):
    lines = [",".join(["iteration", "best_loss", "grad_norm"] + [f"loss_{k}" for k in range(n)])]
    for r in rows:
        lines.append(",".join([str(int(r[0]))] + [repr(float(x)) for x in r[1:]]))
    write_text(os.path.join(out_dir, "loss.csv"), "\n".join(lines) + "\n")


def _write_outputs(out_dir: str, problem: PopulationProblem, rows: list, result: OptimizeResult) -> list:
    """loss.csv, loss.png (the best loss of each iteration), params.yaml (the best member's values),
    population.yaml, and the best member's initial.usd / final.usd / progress video as a single run writes them."""
    import yaml
    from ..plot import save_line_plot
    cfg, best = problem.cfg, result.best_member
    files = [os.path.join(out_dir, n) for n in ("loss.csv", "loss.png", "params.yaml", "population.yaml")]
    _write_loss_csv(out_dir, problem.size, rows)
    save_line_plot(files[1], [r[1] for r in rows], xs=[r[0] for r in rows],
                   title=f"{cfg.name}: best of {problem.size}", x_label="iteration", y_label="loss")
    if best is None:
        files.remove(files[2])
    else:
        head = f"# member {best} of a population of {problem.size}: the lowest final loss\n"
        write_text(files[2], head + params_yaml(cfg, problem.members[best], rows, result.final_loss))
    summary = {"best": best, "members": result.members}
    write_atomic(files[-1], ("# sim optimize --population: every member's start, learned values and final loss\n"
                             + yaml.safe_dump(json.loads(json.dumps(summary)), sort_keys=False,
                                              default_flow_style=None)).encode())
    if best is not None and cfg.spec.output.usd:
        files += write_rollouts(out_dir, cfg, problem.members[best], problem.frames)
    return files
