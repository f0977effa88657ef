"""`optimize(config)`: learn scene parameters by gradient descent through the simulation, writing loss.csv,
loss.png, params.yaml, initial.usd, final.usd, progress.mp4 and a resumable snapshot into the output folder."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

import kernels as wp
from autodiff import SGD, Adam, CheckpointedRollout, Tape

from .. import interrupts
from .. import losses as L
from ..articulation import eval_fk
from ..scene.errors import SceneError, SimulationError
from ..atomic_file import write_atomic
from ..output_folder import check_earlier_results, folder_lock
from ..scene.progress import Progress
from ..solvers.rigid.solver import contact_slots_fixed
from .config import OptimizeConfig, load_config
from .data import load_trajectory
from .params import LearnedParameter, resolve
from .snapshot import SNAPSHOT, load_snapshot, save_snapshot


@dataclass
class OptimizeResult:
    """What an optimisation did: the loss of each iteration, the learned values, where files went and the
    memory and time one iteration took."""

    iterations: int
    losses: list
    params: dict  # path -> learned value (number or nested lists)
    out_dir: str | None
    converged: bool
    seconds_per_iteration: float
    checkpointed: bool
    peak_memory_bytes: int  # peak traced allocations of one forward + backward
    files: list = field(default_factory=list)
    # how far the learned rollout ends from each joint_target and body com_target loss's target:
    # "joint 'hinge' [rad]" -> |q - target|, "body 'tool' [m]" -> |com - target|
    final_errors: dict = field(default_factory=dict)
    # the loss at the learned (saved) parameters: the last row's when it converged, else that of one more rollout
    # (the last iteration stepped past the parameters its row measured); NaN without any iteration
    final_loss: float = math.nan
    # a population (sim optimize --population): the member with the lowest final loss (whose values `params`,
    # `losses` and `final_loss` are), and per member {member, start, learned, final_loss, status}
    best_member: int | None = None
    members: list = field(default_factory=list)
    member_results: list = field(default_factory=list)  # per member, the OptimizeResult of its start alone


class Problem:
    """The pieces of one config: built scene, learned parameters, loss terms, how to roll out."""

    def __init__(self, cfg: OptimizeConfig, device=None, capture: bool = True, scene=None):
        self.cfg = cfg
        spec = cfg.spec
        self.built = (scene or cfg.scene).build(device, requires_grad=True)
        self.frames = spec.frames or cfg.scene.spec.sim.frames
        self.steps = self.frames * self.built.substeps
        self._learn()
        self.checkpointed = self.steps > spec.checkpoint.above_steps
        # Iterations after the first replay one captured forward + backward (kernels.runtime.capture): every iteration
        # launches the same work on the same arrays. Not with checkpointing (its backward re-runs segments from
        # Python) nor with many shapes on bodies (SolverRigid's contacts, also those of articulated links, then
        # size their slots on the host in a differentiated step).
        self.capture = capture and not self.checkpointed and contact_slots_fixed(self.built.model)
        self._graph = None  # (graph, loss array) once captured
        self._eager_runs = 0

    def _learn(self):
        """The learned parameters (allocated on the model's device), the loss terms and the optimiser."""
        self.params = self.learned_parameters(self.built, self.cfg.scene.spec)
        for p in self.params:
            p.allocate(self.built.model.device)
        self.losses = self.loss_terms(self.built, self.params)
        self.optimizer = make_optimizer(self.cfg.spec.optimizer, self.params)

    def learned_parameters(self, built, scene_spec) -> list:
        """The config's parameters resolved in `built` (the scene, or one world of it) of spec `scene_spec`."""
        params = []
        for i, p in enumerate(self.cfg.spec.parameters):
            params.append(self._param(i, p, built, scene_spec, params))
        return params

    def loss_terms(self, built, params: list) -> list:
        """The config's loss terms on `built` (the scene, or one world of it) and its learned `params`."""
        return [self._loss(i, l, built, params) for i, l in enumerate(self.cfg.spec.loss)]

    def _param(self, i: int, p, built, scene_spec, earlier: list) -> LearnedParameter:
        """Parameter i of the config; `earlier` holds the ones before it."""
        key = ("parameters", i, "path")
        if any(pp.path == p.path for pp in earlier):
            raise self.cfg.error(key, f"{p.path} is learned twice")
        param = resolve(p.path, scene_spec, built, log=p.log, bounds=p.bounds,
                        where=self.cfg.source.where(key), key=key, frames=self.frames)
        for other in earlier:  # a collider's pos and rot both write its pose: one would undo the other
            if any(t.array == u.array and t.owner == u.owner and np.intersect1d(t.rows, u.rows).size and
                   "rotation" in (t.how, u.how) for t in param.targets for u in other.targets):
                raise self.cfg.error(key, f"{p.path} and {other.path} set the same pose: learn one of them")
        if p.init is not None:
            if param.size != 1:
                raise self.cfg.error(("parameters", i, "init"), f"init is for scalar parameters; {p.path} has "
                                     f"{param.size} components")
            if p.log and p.init <= 0:
                raise self.cfg.error(("parameters", i, "init"), f"log: true needs a positive init, got {p.init:g}")
            param.start_from([p.init])
        return param

    def _object(self, i: int, name: str, built):
        for o in built.objects:
            if o.name == name:
                return o
        known = ", ".join([o.name for o in built.objects] + [b.name for b in built.bodies])
        raise self.cfg.error(("loss", i, "object"), f"no object named '{name}' in the scene (objects: {known})")

    def _frame(self, i: int, frame) -> int:
        if frame is None:
            return self.frames
        if frame > self.frames:
            raise self.cfg.error(("loss", i, "frame"), f"frame {frame} is past the last simulated frame "
                                 f"{self.frames}")
        return frame

    def _loss(self, i: int, l, built, params: list) -> L.Loss:
        if l.type == "param_l2":
            for p in params:
                if p.path == l.param:
                    return L.ParameterL2(p, l.weight)
            raise self.cfg.error(("loss", i, "param"), f"'{l.param}' is not one of the learned parameters")
        if l.type == "joint_target":
            return self._joint_loss(i, l, built)
        body = next((b for b in built.bodies if b.name == l.object), None)
        if body is not None:
            if l.type != "com_target":
                raise self.cfg.error(("loss", i, "object"), f"'{l.object}' is a rigid body: only com_target "
                                     "applies to bodies")
            return L.BodyCenterTarget(body, self._frame(i, l.frame), l.target, l.weight)
        obj = self._object(i, l.object, built)
        if l.type == "com_target":
            return L.CenterOfMassTarget(obj, self._frame(i, l.frame), l.target, l.weight)
        try:
            recorded = load_trajectory(l.file, l.key, obj.name)
            if l.type == "positions":
                return L.PositionsTarget(obj, self._frame(i, l.frame), recorded[max(recorded)], l.weight)
            frames = l.frames or [f for f in sorted(recorded) if 1 <= f <= self.frames]
            missing = [f for f in frames if f not in recorded]
            if missing or not frames:
                raise ValueError(f"no recorded positions for frame(s) {missing or 'any simulated frame'}")
            for f in frames:
                self._frame(i, f)
            return L.TrajectoryMatch(obj, {f: recorded[f] for f in frames}, l.weight)
        except (ValueError, OSError) as e:
            raise self.cfg.error(("loss", i, "file"), str(e)) from None

    def _joint_loss(self, i: int, l, built) -> L.JointTarget:
        joint = built.joint(l.joint)
        if joint is None:
            known = ", ".join(j.name for j in built.joints) or "none"
            raise self.cfg.error(("loss", i, "joint"), f"no joint named '{l.joint}' in the scene (joints: {known})")
        if joint.kind in ("ball", "free", "fixed"):
            raise self.cfg.error(("loss", i, "joint"), f"'{l.joint}' is a {joint.kind} joint: joint_target "
                                 "applies to revolute, prismatic and d6 joints")
        try:
            return L.JointTarget(joint, self._frame(i, l.frame), l.target, l.weight, l.velocity_weight)
        except ValueError as e:
            raise self.cfg.error(("loss", i, "target"), str(e)) from None

    # ------------------------------------------------------------------------------------------------ rollout

    def loss_and_gradient(self, measure_memory: bool = False) -> tuple:
        """Roll out from the current parameters on a Tape, back-propagate; returns (loss, peak bytes or 0). The
        variables' `.grad` hold the gradient until the next call."""
        if self.capture and self._eager_runs > 0 and not measure_memory:
            return self._replay(), 0
        self._eager_runs += 1
        if measure_memory:
            tracemalloc.start()
        tape = Tape()
        try:
            with tape:
                loss = self._rollout()
            tape.backward(loss=loss)
            value = float(loss.numpy()[0])
            peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
        finally:
            if measure_memory:
                tracemalloc.stop()
        self._tape = tape
        return value, peak

    def loss(self) -> float:
        """The loss at the current parameters, from a rollout without a Tape (for finite differences)."""
        return float(self._rollout().numpy()[0])

    def find_blowup(self):
        """Simulate the current parameters without a Tape, checking every frame; the SimulationError naming the
        first frame and object with a non-finite position or velocity, or None if the rollout stays finite."""
        from ..scene.scene import check_finite
        built, model = self.built, self.built.model
        state, scratch = model.state(), model.state()
        for p in self.params:
            p.apply(built, state)
        for frame in range(1, self.frames + 1):
            state, scratch = built.step_frame(state, scratch, frame)
            try:
                check_finite(built, state, frame)
            except SimulationError as e:
                return e
        return None

    def final_errors(self, losses=None) -> dict:
        """Simulate the current parameters without a Tape; the distance of each joint_target loss's joint [m or
        rad] and each rigid body's com_target loss's body [m] from its target at the loss's frame (of the terms
        `losses`, default all)."""
        terms = [l for l in (self.losses if losses is None else losses)
                 if isinstance(l, (L.JointTarget, L.BodyCenterTarget))]
        if not terms:
            return {}
        built, model = self.built, self.built.model
        state, scratch = model.state(requires_grad=False), model.state(requires_grad=False)
        for p in self.params:
            p.apply(built, state)
        out = {}
        for frame in range(1, max(l.frames[0] for l in terms) + 1):
            state, scratch = built.step_frame(state, scratch, frame)
            for l in terms:
                if l.frames[0] != frame:
                    continue
                if isinstance(l, L.JointTarget):
                    unit = "rad" if l.joint.kind == "revolute" else "m" if l.joint.kind == "prismatic" else "m, rad"
                    out[f"joint '{l.joint.name}' [{unit}]"] = l.error(state)
                else:
                    out[f"body '{l.body.name}' [m]"] = l.error(model, state)
        return out

    def _replay(self) -> float:
        """The loss of a replay of the captured forward + backward (captured on the first call)."""
        if self._graph is None:
            tape = Tape()
            with wp.ScopedCapture(self.built.model.device) as capture:
                with tape:
                    loss = self._rollout()
                tape.backward(loss=loss)
            self._graph, self._tape = (capture.graph, loss), tape
        graph, loss = self._graph
        wp.capture_launch(graph)
        return float(loss.numpy()[0])

    def _rollout(self):
        built, model = self.built, self.built.model
        state0 = model.state(requires_grad=True)
        for p in self.params:
            p.apply(built, state0)
        if any(t.owner == "state" and t.array in ("joint_q", "joint_qd") for p in self.params for t in p.targets):
            # learned initial joint coordinates: the links' initial poses follow them (what losses at frame 0
            # and the solver's unjointed contacts read)
            eval_fk(model, state0.joint_q, state0.joint_qd, state0)
        loss, sinks = self.loss_arrays(model.device)
        at_frame: dict = {}
        for l, sink in zip(self.losses, sinks):
            l.evaluate_parameters(sink)
            for f in l.frames:
                at_frame.setdefault(f, []).append((l, sink))

        def observe(frame, state):
            for l, sink in at_frame.get(frame, ()):
                l.evaluate(model, frame, state, sink)

        if self.checkpointed:
            self._checkpointed_rollout(state0, observe)
        else:
            state = state0
            fresh = lambda: model.state(requires_grad=True)  # noqa: E731  one State per step for the Tape
            for frame in range(1, self.frames + 1):
                state, _ = built.step_frame(state, None, frame, fresh_state=fresh)
                observe(frame, state)
        self.sum_losses(loss)
        return loss

    def loss_arrays(self, device) -> tuple:
        """(the loss, differentiated: shape [1]; the array each loss term adds into, one per term)."""
        loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        return loss, [loss] * len(self.losses)

    def sum_losses(self, loss):
        """Add what the terms wrote (elsewhere than into `loss`) into `loss`: nothing here, all wrote into it."""

    def _checkpointed_rollout(self, state0, observe):
        built, sub = self.built, self.built.substeps

        def step(i, state_in, state_out):
            built.solver.step(built.model, state_in, state_out, built.control(i // sub + 1), built.dt)

        def observe_step(n, state):
            if n % sub == 0:
                observe(n // sub, state)

        arrays = ("particle_q", "particle_qd") + (("body_q", "body_qd") if built.model.body_count else ()) + \
            (("joint_q", "joint_qd") if built.model.joint_count else ())
        rollout = CheckpointedRollout(step, None, self.steps, self.cfg.spec.checkpoint.every, state_arrays=arrays)
        rollout.run(state0, observe=observe_step)

    def zero_gradients(self):
        self._tape.zero()


def make_optimizer(spec, params: list):
    """The config's optimiser (`spec`: its `optimizer` section) over the LearnedParameters `params`."""
    variables = [p.variable for p in params]
    bounds = [p.bounds for p in params]
    if spec.type == "adam":
        return Adam(variables, spec.lr, betas=tuple(spec.betas), eps=spec.eps, clip_grad_norm=spec.clip_grad_norm,
                    bounds=bounds)
    return SGD(variables, spec.lr, momentum=spec.momentum, clip_grad_norm=spec.clip_grad_norm, bounds=bounds)


# ---------------------------------------------------------------------------------------------------- driver


def optimize(config, *, iterations: int | None = None, out_dir: str | None = None, resume: bool = False,
             overwrite: bool = False, progress: bool = False, device=None, write: bool = True,
             stop_after: int | None = None, capture: bool = True) -> OptimizeResult:
    """Run the optimisation described by `config` (a path or an OptimizeConfig).

    Args:
        iterations: overrides the config's `iterations`.
        out_dir: output folder (default: output.dir, else out/<config name>).
        resume: continue from the folder's snapshot (same config) instead of starting over.
        overwrite: start over in a folder that holds a snapshot (without `resume` or `overwrite` such a folder is
            refused with SceneError). The folder is locked while the optimisation writes into it.
        progress: draw a progress bar with the current loss on a terminal.
        device: overrides the scene's device.
        write: write the output files (False: only compute, e.g. for benchmarks).
        stop_after: stop (as if interrupted) after this many iterations of this call; the snapshot is saved.
        capture: replay a captured forward + backward from the second iteration on, where possible (the same
            results, less Python per launch).
    """
    cfg = config if isinstance(config, OptimizeConfig) else load_config(config)
    problem = Problem(cfg, device, capture)
    out_dir = out_dir or cfg.spec.output.dir or os.path.join("out", cfg.name)
    return in_output_folder(lambda: _optimize(problem, iterations, out_dir, resume, progress, write, stop_after),
                            out_dir, write, resume, overwrite)


def in_output_folder(work, out_dir: str, write: bool, resume: bool, overwrite: bool):
    """`work()` with the output folder checked (a snapshot there needs `resume` or `overwrite`) and locked while
    it runs; without `write`, just `work()`."""
    if not write:
        return work()
    check_earlier_results(out_dir, [SNAPSHOT], resume=resume, overwrite=overwrite)
    with folder_lock(out_dir):
        return work()


def resumed(problem, out_dir: str, digest: str) -> tuple:
    """(next iteration, rows so far) from the folder's snapshot, restoring `problem`'s variables and optimiser;
    SceneError when there is none or it is another config's."""
    if not os.path.exists(os.path.join(out_dir, SNAPSHOT)):
        raise SceneError(out_dir, (), f"nothing to resume: no {SNAPSHOT} in this folder")
    try:
        return load_snapshot(out_dir, problem.params, problem.optimizer, digest)
    except ValueError as e:
        raise SceneError("--resume", (), str(e)) from None


def _optimize(problem: Problem, iterations, out_dir: str, resume: bool, progress: bool, write: bool,
              stop_after) -> OptimizeResult:
    cfg = problem.cfg
    spec = cfg.spec
    total = spec.iterations if iterations is None else int(iterations)
    digest = config_digest(cfg)
    start, rows = resumed(problem, out_dir, digest) if write and resume else (0, [])
    bar = Progress(total, unit="iterations", enabled=progress)
    converged, seconds = bool(rows) and rows[-1][1] <= spec.tolerance, []
    it = start
    try:
        it, converged, peak = _iterate(problem, it, total, rows, seconds, bar, out_dir, digest, write, stop_after,
                                       converged)
    except KeyboardInterrupt:
        bar.close()
        if write:  # keep every completed iteration: --resume continues from here
            save_snapshot(out_dir, _next_iteration(rows, start), problem.params, problem.optimizer, rows, digest)
            write_loss_csv(out_dir, problem.params, rows)
        raise
    bar.close()

    result = OptimizeResult(it, [r[1] for r in rows], {p.path: p.yaml_value() for p in problem.params},
                            out_dir if write else None, converged,
                            float(np.mean(seconds)) if seconds else 0.0, problem.checkpointed, peak)
    result.final_errors = problem.final_errors()
    result.final_loss = _final_loss(problem, rows, converged, it)
    if write:
        save_snapshot(out_dir, it, problem.params, problem.optimizer, rows, digest)
        result.files = write_outputs(out_dir, cfg, problem, rows, result.final_loss)
    return result


def _iterate(problem: Problem, it: int, total: int, rows: list, seconds: list, bar, out_dir, digest, write: bool,
             stop_after, converged: bool) -> tuple:
    """Iterations `it`.. until `total`, convergence or `stop_after`; appends to rows/seconds as it goes."""
    spec, start, peak = problem.cfg.spec, it, 0
    while it < total and not converged and (stop_after is None or it - start < stop_after):
        interrupts.raise_if_stopped()  # a stop a library swallowed is not lost: the snapshot is saved
        t0 = time.perf_counter()
        loss, mem = problem.loss_and_gradient(measure_memory=(it == start))
        peak = max(peak, mem)
        _check_finite_loss(problem, loss, it)
        values = [p.value() for p in problem.params]
        converged = loss <= spec.tolerance
        grad_norm = problem.optimizer.grad_norm()
        if not converged:  # the row's parameters are those the loss was measured at
            problem.optimizer.step()
        problem.zero_gradients()
        rows.append([it, loss, grad_norm] + _flat_columns(values))
        seconds.append(time.perf_counter() - t0)
        it += 1
        bar.update(it, f"loss {loss:.4g}")
        if write and (it % spec.output.save_every == 0 or converged or it == total):
            save_snapshot(out_dir, it, problem.params, problem.optimizer, rows, digest)
            write_loss_csv(out_dir, problem.params, rows)
    return it, converged, peak


def _final_loss(problem: Problem, rows: list, converged: bool, it: int) -> float:
    """The loss at the parameters the optimisation ends with, which are saved (params.yaml, final.usd, the
    snapshot): a converged last row took no step, else the parameters moved past it and are measured again."""
    if not rows:
        return math.nan
    if converged:
        return float(rows[-1][1])
    loss = problem.loss()
    _check_finite_loss(problem, loss, it)
    return loss


def _check_finite_loss(problem: Problem, loss: float, it: int):
    """A non-finite loss at iteration `it` is a SimulationError naming the frame and object where the rollout blew
    up, or a FloatingPointError when it stayed finite."""
    if math.isfinite(loss):
        return
    blowup = problem.find_blowup()
    if blowup is not None:
        raise SimulationError(blowup.frame, blowup.quantity,
                              f"{blowup.detail}; the forward simulation blew up at iteration {it}, with "
                              f"parameters {_describe_values(problem)}")
    raise FloatingPointError(f"iteration {it}: the loss is {loss} although the simulation stayed finite; "
                             "lower the learning rate or check bounds")


def _describe_values(problem) -> str:
    parts = []
    for p in problem.params:
        v = p.value()
        parts.append(f"{p.path} = {v if not isinstance(v, list) or len(v) <= 4 else f'[{len(v)} values]'}")
    return ", ".join(parts)


def _next_iteration(rows: list, start: int) -> int:
    return int(rows[-1][0]) + 1 if rows else start


def config_digest(cfg: OptimizeConfig) -> str:
    text = json.dumps(cfg.source.data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def column_names(params: list) -> list:
    """loss.csv's columns: iteration, loss, grad_norm, then each parameter (components when it has <= 4,
    else its L2 norm)."""
    out = ["iteration", "loss", "grad_norm"]
    for p in params:
        if p.size == 1:
            out.append(p.path)
        elif p.size <= 4:
            out += [f"{p.path}[{k}]" for k in range(p.size)]
        else:
            out.append(f"{p.path}.norm")
    return out


def _flat_columns(values: list) -> list:
    out = []
    for v in values:
        v = np.asarray(v, np.float64).reshape(-1)
        out += v.tolist() if v.size <= 4 else [float(np.linalg.norm(v))]
    return out


def write_loss_csv(out_dir: str, params: list, rows: list):
    lines = [",".join(column_names(params))]
    for r in rows:
        lines.append(",".join([str(int(r[0]))] + [repr(float(x)) for x in r[1:]]))
    write_text(os.path.join(out_dir, "loss.csv"), "\n".join(lines) + "\n")


def write_outputs(out_dir: str, cfg: OptimizeConfig, problem: Problem, rows: list, final_loss: float) -> list:
    """loss.csv, loss.png, params.yaml and (output.usd) initial.usd / final.usd and (output.video) the progress
    video; returns the paths. `final_loss`: the loss at the parameters saved."""
    from ..plot import save_line_plot
    files = [os.path.join(out_dir, n) for n in ("loss.csv", "loss.png", "params.yaml")]
    write_loss_csv(out_dir, problem.params, rows)
    save_line_plot(files[1], [r[1] for r in rows], xs=[r[0] for r in rows], title=f"{cfg.name}: loss",
                   x_label="iteration", y_label="loss")
    write_text(files[2], params_yaml(cfg, problem.params, rows, final_loss))
    if cfg.spec.output.usd:
        files += write_rollouts(out_dir, cfg, problem.params, problem.frames)
    return files


def write_rollouts(out_dir: str, cfg: OptimizeConfig, params: list, frames: int) -> list:
    """initial.usd and final.usd: the scene run with the LearnedParameters' starting and current values; and
    (output.video) the two side by side. Returns the paths."""
    learned = [f"{p.path}={json.dumps(p.yaml_value())}" for p in params]
    files = []
    for name, extra in (("initial.usd", initial_overrides(params)), ("final.usd", learned)):
        out = os.path.join(out_dir, name)
        rebuild_scene(cfg, extra).run(frames=frames, out=out)
        files.append(out)
    if cfg.spec.output.video != "none":
        files.append(progress_video(out_dir, files[-2], files[-1], cfg.spec.output.video))
    return files


def progress_video(out_dir: str, initial: str, final: str, extension: str) -> str:
    """progress.<extension>: the initial and the learned rollout side by side, one camera on both."""
    from ..rendering.compare import side_by_side
    return side_by_side([initial, final], os.path.join(out_dir, f"progress.{extension}"),
                        labels=["initial", "learned"])


def initial_overrides(params: list) -> list:
    """Scene overrides for the LearnedParameters' starting values (those given by `init` differ from the
    scene's)."""
    out = []
    for p in params:
        x = p.initial_variable().astype(np.float64)
        v = (np.exp(x) if p.log else x).reshape(p.shape)
        out.append(f"{p.path}={json.dumps(float(v) if v.ndim == 0 else v.tolist())}")
    return out


def rebuild_scene(cfg: OptimizeConfig, extra: list):
    from ..scene import Scene
    from ..scene.source import Source
    kind, where = cfg.spec.scene
    overrides = list(cfg.spec.set) + extra
    if kind == "file":
        return Scene.load(where, overrides)
    prefix = len(where)
    lines = {p[prefix:]: line for p, line in cfg.source.lines.items() if p[:prefix] == where}
    data = json.loads(json.dumps(cfg.source.data["scene"]))  # a copy: overrides must not touch the config
    return Scene.from_source(Source(data, lines, cfg.source.file), overrides)


def params_yaml(cfg: OptimizeConfig, params: list, rows: list, final_loss: float) -> str:
    """The learned values as scene keys (nested like the scene, lists by index), with how they were found and the
    loss at these values (`final_loss`)."""
    import yaml
    tree: dict = {}
    for p in params:
        _put(tree, p.path.split("."), p.yaml_value())
    head = (f"# learned by `sim optimize {cfg.path}`: {len(rows)} iterations, loss {final_loss:.6g} at these "
            f"values\n" if rows else f"# initial values of {cfg.path}\n")
    head += "# paste into the scene, or pass each as --set key.path=value:\n"
    head += "".join(f"#   --set {p.path}={json.dumps(p.yaml_value())}\n" for p in params if p.size <= 4)
    return head + yaml.safe_dump(_listify(tree), sort_keys=False, default_flow_style=None)


def _put(tree: dict, parts: list, value):
    for p in parts[:-1]:
        tree = tree.setdefault(p, {})
    tree[parts[-1]] = value


def _listify(node):
    """{'cloth': {'0': {...}}} -> {'cloth': [{...}]} (list indices padded with empty mappings)."""
    if not isinstance(node, dict):
        return node
    if node and all(k.isdigit() for k in node):
        out = [{} for _ in range(max(int(k) for k in node) + 1)]
        for k, v in node.items():
            out[int(k)] = _listify(v)
        return out
    return {k: _listify(v) for k, v in node.items()}


def write_text(path: str, text: str):
    write_atomic(path, text.encode("utf-8"))
