"""`Scene`: a scene file loaded and validated, which builds its Model and runs itself into a USD file.

    scene = sim.Scene.load("scenes/cloth.yaml", overrides=["sim.frames=30"])
    result = scene.run(out="/tmp/cloth.usd")
    print(result.steps_per_second, result.output)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

import kernels as wp

from .. import interrupts
from ..atomic_file import OutputWriteError
from .build import BuiltScene, build_scene, collider_usd_shape
from .errors import SceneError, SimulationError
from .format import SCENE
from .progress import Progress
from .schema import Ctx
from .source import load_source
from .summary import PhysicalSummary


class _FrameGraphs:
    """`BuiltScene.step_frame` through captured graphs. Frame 1 runs as usual (solvers set up their buffers on
    their first step); then each frame replays the graph captured for its starting state: one graph, or two
    when an odd number of substeps swaps the two states every frame."""

    def __init__(self, built: BuiltScene):
        self.built = built
        self.graphs: dict = {}  # id(starting state) -> (graph, state after the frame, scratch after the frame)

    def __call__(self, state, scratch, frame: int):
        if frame == 1:
            return self.built.step_frame(state, scratch, frame)
        entry = self.graphs.get(id(state))
        if entry is None:
            with wp.ScopedCapture(self.built.model.device) as capture:
                after, spare = self.built.step_frame(state, scratch, frame)
            entry = self.graphs[id(state)] = (capture.graph, after, spare)
        graph, after, spare = entry
        wp.capture_launch(graph)
        return after, spare


class _SavingWriter:
    """A UsdWriter saved as the run goes: `save_when_due()` after each frame saves when `every_s` seconds have
    passed (or ten times the last save's duration, whichever is longer). A failed save or close raises
    OutputWriteError saying which frames the file keeps."""

    def __init__(self, writer, every_s: float):
        self.writer, self.every_s = writer, every_s
        self.interval, self.last = every_s, time.monotonic()

    def write_frame(self, frame, **samples):
        self.writer.write_frame(frame, **samples)

    def save_when_due(self):
        start = time.monotonic()
        if start - self.last < self.interval:
            return
        self._saved(self.writer.save)
        self.last = time.monotonic()
        self.interval = max(self.every_s, 10.0 * (self.last - start))

    @property
    def last_frame(self) -> float:
        return self.writer.last_frame

    def close(self) -> str:
        return self._saved(self.writer.close)

    def abort(self):
        self.writer.abort()

    def _saved(self, save) -> str:
        try:
            return save()
        except OutputWriteError as e:
            kept = self.writer.saved_frame
            note = (f"the file keeps frames 0-{kept:g} from an earlier save" if kept is not None
                    else "nothing of this run was saved")
            raise OutputWriteError(e.path, f"{e.cause}; {note}") from None


@dataclass
class RunResult:
    """What a run did. `compile_seconds` is the time spent building or loading kernels ('cold' when a native
    library was compiled, 'warm' when everything came from the cache); `steps_per_second` excludes it."""

    frames: int
    steps: int
    seconds: float
    steps_per_second: float
    compile_seconds: float
    compile_kind: str
    output: str | None
    state: object  # the final State
    physics: object = None  # summary.PhysicalSummary of the frames simulated, when the run was asked for one
    warnings: tuple = ()  # one line each, for the user (e.g. self-contact pairs dropped for want of slots)
    outputs: tuple = ()  # every file written: `output` alone, or one per world with `split`


class Scene:
    """A validated scene. `spec` holds every key (defaults filled in), see docs/scenes.md."""

    def __init__(self, spec, path: str, world_specs: dict | None = None):
        self.spec, self.path = spec, path
        #: {world K: its spec} for the worlds a `--set worlds.K.` override changed (the others are `spec`)
        self.world_specs = dict(world_specs or {})

    @classmethod
    def load(cls, path: str, overrides=()) -> "Scene":
        """Read and validate the YAML scene at `path`, after applying `overrides` ("key.path=value" strings).
        Raises SceneError (file, line, key path) for anything invalid."""
        return cls.from_source(load_source(str(path)), overrides)

    @classmethod
    def from_string(cls, text: str, path: str = "<string>", overrides=()) -> "Scene":
        """A scene from YAML text; relative file names resolve against `path`'s folder."""
        return cls.from_source(load_source(path, text), overrides)

    @classmethod
    def from_source(cls, source, overrides=()) -> "Scene":
        from .world_overrides import check_world_indices, expand_all_worlds, split_world_overrides, world_spec
        shared, per_world = split_world_overrides(overrides)
        for o in shared:
            source.apply_override(o)
        base = os.path.dirname(os.path.abspath(source.file))
        spec = SCENE.convert(source.data, Ctx(source, (), base))
        per_world = expand_all_worlds(per_world, spec.sim.worlds)
        check_world_indices(per_world, spec.sim.worlds)
        worlds = {k: world_spec(source, k, items, lambda src: SCENE.convert(src.data, Ctx(src, (), base)))
                  for k, items in sorted(per_world.items())}
        return cls(spec, source.file, worlds)

    # ------------------------------------------------------------------------------------------------ facts

    @property
    def name(self) -> str:
        return os.path.splitext(os.path.basename(self.path))[0]

    @property
    def dt(self) -> float:
        """Solver step [s]."""
        return 1.0 / (self.spec.sim.fps * self.spec.sim.substeps)

    def output_path(self, out: str | None = None) -> str:
        return out or self.spec.output.path or os.path.join("out", f"{self.name}.usd")

    def build(self, device=None, requires_grad: bool = False) -> BuiltScene:
        """The scene's Model, solver and object table on `device` (default: the scene's sim.device)."""
        return build_scene(self.spec, device, requires_grad, world_specs=self.world_spec_list())

    def world_spec_list(self) -> list:
        """The spec of each of the sim.worlds worlds: the scene's, or the one its `worlds.K.` overrides made."""
        return [self.world_specs.get(k, self.spec) for k in range(self.spec.sim.worlds)]

    # ------------------------------------------------------------------------------------------------ running

    def run(self, *, frames: int | None = None, out: str | None = None, device=None, progress: bool = False,
            write: bool = True, capture: bool = True, observe=None, summary: bool = False,
            record=None, split: bool = False) -> RunResult:
        """Simulate `frames` frames (default sim.frames) after the initial frame 0 and write them to the USD file
        `out` (default output.path). A non-finite position or velocity stops the run with SimulationError (its
        `result` says what was done); the frames written so far stay in a valid USD file.

        With `capture` (default), a scene whose frames all launch the same work (BuiltScene.capturable) records a
        frame's steps once and replays them natively each frame: the same results, without Python per launch.

        `observe(frame, state, model)`, when given, is called for frame 0 and after each simulated frame (once the
        state is known to be finite); sweeps use it to record metrics and trajectories without a loop of their own.
        With `summary`, the result's `physics` (a summary.PhysicalSummary, also on a stopped run's result) has the
        objects' heights, largest speeds and energies, as `sim run` prints them.

        `record(fps=..., up_axis=..., meters_per_unit=...)`, when given, makes the receiver of the frames in place of
        the USD file: an object with UsdWriter's add_mesh/add_points/add_body/add_collider/write_frame/save/close/
        abort methods and its `last_frame` and `saved_frame` (`sim view` passes sim.viewer's PlaybackRecorder, which
        shows each frame as it is computed); nothing is written to disk and `out` is ignored.

        The USD file is saved every `output.save_every` seconds or so as the run goes. A save that fails raises
        OutputWriteError (one line: the file, the cause, and which frames the file keeps from an earlier save).

        With sim.worlds > 1 the USD file has the worlds side by side (sim/scene/world_output.py); with `split`,
        one file per world instead, `out` with `_w<k>` before its extension (the result's `outputs`)."""
        s = self.spec.sim
        frames = s.frames if frames is None else int(frames)
        if frames < 1:
            raise ValueError(f"frames must be >= 1, got {frames}")
        path = self.output_path(out) if write and record is None else None
        paths = [path] if path is not None else []
        if path is not None and split and s.worlds > 1:
            from .world_output import split_paths
            paths = split_paths(path, s.worlds)
        for p in paths:
            self._check_output(p, from_option=out is not None)
        built = self.build(device)
        writer = None
        if write or record is not None:
            writer = _SavingWriter(self._writer(built, path, record, paths), self.spec.output.save_every)
        stats0 = wp.build_stats()
        state, scratch = built.model.state(), built.model.state()
        step = _FrameGraphs(built) if capture and built.capturable else built.step_frame
        bar = Progress(frames, enabled=progress)
        physics = PhysicalSummary(built) if summary else None

        def seen(frame: int, state):
            if observe is not None:
                observe(frame, state, built.model)
            if physics is not None:
                physics.observe(frame, state)

        t0 = time.perf_counter()
        done = 0
        try:
            if writer is not None:
                self._write_frame(writer, built, 0, state)
            seen(0, state)
            for frame in range(1, frames + 1):
                state, scratch = step(state, scratch, frame)
                check_finite(built, state, frame)
                seen(frame, state)
                if writer is not None:
                    self._write_frame(writer, built, frame, state)
                done = frame
                if writer is not None:
                    writer.save_when_due()
                bar.update(frame, _rate(done * s.substeps, t0, stats0))
                interrupts.raise_if_stopped()  # a stop a library swallowed (pxr's import does) is not lost
        except (SimulationError, KeyboardInterrupt) as e:
            bar.close()
            if writer is not None and writer.last_frame is not None:
                done = int(writer.last_frame)  # what the file will hold, wherever the signal struck
            if isinstance(e, KeyboardInterrupt) and done == 0 and writer is not None:
                writer.abort()  # nothing was simulated: an existing output stays as it was
                writer = None
            result = self._result(done, t0, stats0, writer.close() if writer else None, state, built)
            result.physics = physics
            result.outputs = _outputs(writer, result.output)
            e.result = result
            raise
        except BaseException:
            bar.close()
            if writer is not None:
                writer.abort()
            interrupts.raise_if_stopped()  # an error of a library half-imported when a stop came: the stop is the news
            raise
        bar.update(frames, _rate(done * s.substeps, t0, stats0), force=True)
        bar.close()
        result = self._result(done, t0, stats0, writer.close() if writer else None, state, built)
        result.physics = physics
        result.outputs = _outputs(writer, result.output)
        return result

    def stability_warning(self) -> str | None:
        """A warning when a semi-implicit scene's dt exceeds its estimated stability limit (scene/stability.py)."""
        from .stability import stability_warning
        return stability_warning(self.spec, self.dt)

    def crowding_warning(self) -> str | None:
        """A warning when particle-particle contact starts with many particles in one cell of its hash grid: each
        particle tests the particles of 27 cells, so the contact work grows with the square of that crowding
        (100,000 particles in one cell would take minutes a step). Builds the model on the CPU to see the initial
        positions; None without particle contact."""
        if not self.spec.sim.particle_contact.enabled:
            return None
        m = self.build("cpu").model
        if m.particle_count == 0:
            return None
        width = 2.0 * m.particle_max_radius + m.particle_contact.margin
        cells = np.floor(m.particle_q.numpy().reshape(-1, 3) / max(width, 1.0e-6)).astype(np.int64)
        _, counts = np.unique(cells, axis=0, return_counts=True)
        most = int(counts.max())
        if most <= CROWDED_CELL:
            return None
        return (f"{most} particles start in one particle-contact cell ({width:.3g} m: twice the largest particle "
                f"radius plus sim.particle_contact.margin); each tests the particles of its 27 neighbouring cells, "
                f"so contact work grows with the square of that number: spread the particles or give them a larger "
                f"radius")

    def memory_line(self) -> str:
        """Estimated memory of a run (sim/scene/memory.py) and what the machine has available."""
        from .memory import available_bytes, estimate_bytes, mib
        have = available_bytes()
        return f"about {mib(estimate_bytes(self.spec))} estimated" + (f" ({mib(have)} available)" if have else "")

    def _check_output(self, path: str, from_option: bool):
        """Refuse, before anything is simulated, an output path that cannot be written (SceneError: exit 2)."""
        from ..atomic_file import output_problem
        from ..usd import USD_FORMATS
        where, key = ("--out", ()) if from_option else (self.path, ("output", "path"))
        extension = os.path.splitext(path)[1].lower()
        if os.path.isdir(path):
            raise SceneError(where, key, f"{path} cannot be written: it is a directory")
        if extension not in USD_FORMATS:
            raise SceneError(where, key, f"{path}: unsupported output extension {extension or '(none)'!r}; use one "
                             f"of {', '.join(USD_FORMATS)}")
        problem = output_problem(path)
        if problem is not None:
            raise SceneError(where, key, f"{path} cannot be written: {problem}")

    def _result(self, frames: int, t0: float, stats0: dict, output, state, built) -> RunResult:
        seconds = time.perf_counter() - t0
        stats = wp.build_stats()
        compile_s = stats["seconds"] - stats0["seconds"]
        kind = "cold" if stats["cold_builds"] > stats0["cold_builds"] else ("warm" if compile_s > 0 else "none")
        steps = frames * self.spec.sim.substeps
        sim_s = max(seconds - compile_s, 1e-9)
        from ..self_contact import overflow_warning
        warnings = tuple(w for w in (overflow_warning(built.model),) if w)
        return RunResult(frames, steps, seconds, steps / sim_s, compile_s, kind, output, state, warnings=warnings)

    def _writer(self, built: BuiltScene, path: str | None, record=None, paths=()):
        """The scene's prims added to a UsdWriter at `path`, or to what `record` makes (see `run`); with several
        worlds, a world_output.WorldsWriter over one file (or recorder), or one file per world in `paths`."""
        from ..usd import UsdWriter
        o = self.spec.output
        settings = dict(fps=self.spec.sim.fps, up_axis=self.spec.sim.up_axis, meters_per_unit=o.meters_per_unit)
        if built.world_count > 1:
            from .world_output import worlds_writer
            make = (lambda _: record(**settings)) if record is not None else \
                (lambda p: UsdWriter(p, **settings))
            return worlds_writer(built, o, make=make, paths=list(paths) if record is None else [],
                                 spacing=self.spec.sim.world_spacing)
        make = record if record is not None else lambda **settings: UsdWriter(path, **settings)
        w = make(**settings)
        q = built.model.particle_q.numpy()
        for obj in built.objects:
            points = q[obj.start:obj.stop]
            if obj.kind == "cloth":
                w.add_mesh(obj.name, points, obj.triangles, normals=o.normals, color=obj.color)
            else:
                w.add_points(obj.name, points, obj.radius, color=obj.color)
        q0 = built.model.body_q0.numpy()
        for body in built.bodies:
            w.add_body(body.name, body.shapes, pos=q0[body.index, :3], rot=q0[body.index, 3:])
        if o.colliders:
            poses = built.model.shape_transform.numpy()
            for c, row in zip(built.colliders, built.collider_shapes):
                w.add_collider(c.name, **collider_usd_shape(c, poses[row]))
        return w

    @staticmethod
    def _write_frame(writer, built: BuiltScene, frame: int, state):
        q = state.particle_q.numpy()
        body_q = state.body_q.numpy() if built.bodies else None
        if built.world_count > 1:  # WorldsWriter routes by (world, name)
            writer.write_frame(frame, points={(o.world, o.name): q[o.start:o.stop] for o in built.objects},
                               bodies={(b.world, b.name): (body_q[b.index, :3], body_q[b.index, 3:])
                                       for b in built.bodies})
            return
        writer.write_frame(frame, points={o.name: q[o.start:o.stop] for o in built.objects},
                           bodies={b.name: (body_q[b.index, :3], body_q[b.index, 3:]) for b in built.bodies})

    # ------------------------------------------------------------------------------------------------ info

    def describe(self, built: BuiltScene | None = None) -> str:
        """What `sim info` prints: settings, each object with its counts, colliders, totals, output."""
        s = self.spec.sim
        built = built or self.build("cpu")
        m = built.model
        solver = ", ".join(f"{k} {getattr(s.solver, k)}" for k in s.solver.keys() if k != "type")
        rigid = ", ".join(f"{k} {getattr(s.rigid, k)}" for k in s.rigid.keys())
        bodies_solver = f"rigid ({rigid})"
        if built.joints:
            bodies_solver = (f"featherstone ({m.joint_count} joints, {m.joint_dof_count} degrees of freedom, "
                             f"{m.articulation_count} articulations)")
        if m.particle_count == 0 and m.body_count > 0:
            solver_line = bodies_solver  # the particle solver has nothing to move
        else:
            solver_line = s.solver.type + (f" ({solver})" if solver else "")
            if m.body_count > 0:
                solver_line += f", coupled with {bodies_solver}"
        lines = [f"scene     {self.path}" + (f"  ({self.spec.description})" if self.spec.description else ""),
                 f"frames    {s.frames} at {s.fps:g} fps ({s.frames / s.fps:.2f} s), {s.substeps} substeps, "
                 f"dt {self.dt:.4g} s",
                 f"solver    {solver_line}",
                 f"gravity   {s.gravity:g} m/s^2 along {s.up_axis}; device {s.device}"]
        if built.world_count > 1:
            changed = sorted(self.world_specs)
            lines.append(f"worlds    {built.world_count} worlds of one model, colliders shared; objects of world 0 "
                         f"below" + (f"; overrides in world{'s' if len(changed) > 1 else ''} "
                                                 f"{', '.join(map(str, changed))}" if changed else ""))
        mass = m.particle_mass.numpy()
        for obj in (o for o in built.objects if o.world == 0):
            n = obj.stop - obj.start
            fixed = int(np.sum(mass[obj.start:obj.stop] == 0))
            extra = f", {len(obj.triangles)} triangles" if obj.triangles is not None else ""
            lines.append(f"{obj.kind:<9} {obj.name}: {n} particles{extra}, {fixed} fixed")
        masses = m.body_mass.numpy() if built.bodies else None
        for body in (b for b in built.bodies if b.world == 0):
            kinds = ", ".join(sh["kind"] for sh in body.shapes)
            lines.append(f"body      {body.name}: {masses[body.index]:.4g} kg ({kinds})")
        parents = m.joint_parent.numpy() if built.joints else None
        names = {b.index: b.name for b in built.bodies}
        for j in built.joints[:len(built.joints) // built.world_count]:
            parent = names.get(int(parents[j.index]), "world")
            child = names.get(int(m.joint_child.numpy()[j.index]), "?")
            lines.append(f"joint     {j.name}: {j.kind}, {parent} -> {child}, {j.dof_count} dof")
        if self.spec.robot is not None and self.spec.robot.imported.ignored:
            lines += [f"ignored   {line}" for line in self.spec.robot.imported.ignored]
        for c in built.colliders:
            lines.append(f"collider  {c.name}: {c.type}")
        lines.append(f"totals    {m.particle_count} particles, {m.spring_count} springs, {m.tri_count} triangles, "
                     f"{m.edge_count} bending edges, {m.body_count} bodies, {m.shape_count} shapes")
        lines.append(f"memory    {self.memory_line()}")
        lines.append(f"output    {self.output_path()}")
        return "\n".join(lines)


# particles in one contact-grid cell above which `sim validate` warns (a dense packing of equal spheres puts about
# 6 in a cell twice their radius wide; 32 is far past any packing the contact could hold apart)
CROWDED_CELL = 32


def _outputs(writer, output) -> tuple:
    """The files a run wrote: one per world from a split WorldsWriter, else `output` (none for a recorder)."""
    paths = getattr(writer.writer, "paths", None) if writer is not None else None
    return tuple(p for p in (paths if paths is not None else [output]) if p)


def _rate(steps: int, t0: float, stats0: dict) -> str:
    sim_s = time.perf_counter() - t0 - (wp.build_stats()["seconds"] - stats0["seconds"])
    return f"{steps / sim_s:,.0f} steps/s" if sim_s > 0 and steps else ""


def check_finite(built: BuiltScene, state, frame: int):
    """Stop a run that blew up at `frame`: a non-finite position or velocity, or a finite blow-up, a particle or
    body farther from the scene's initial centre, or faster, than the bounds of blowup_bounds (a ball 6,000 km up
    is as wrong as a NaN)."""
    distance, speed, center = blowup_bounds(built, frame)
    checks = []
    if built.bodies:
        q, qd = state.body_q.numpy(), state.body_qd.numpy()
        checks += [("body_q", q, q[:, :3], distance, "m from the scene's centre"),
                   ("body_qd", qd, qd[:, 3:6], speed, "m/s")]
    if built.model.particle_count:
        q, qd = state.particle_q.numpy(), state.particle_qd.numpy()
        checks += [("particle_q", q, q, distance, "m from the scene's centre"), ("particle_qd", qd, qd, speed, "m/s")]
    for quantity, values, vectors, bound, unit in checks:
        bad = ~np.isfinite(values).all(axis=-1)
        why = "not finite"
        if not bad.any():
            size = np.linalg.norm(vectors - center if unit.startswith("m from") else vectors, axis=-1)
            bad = size > bound
            if bad.any():
                key = "max_distance" if quantity.endswith("_q") else "max_speed"
                why = (f"{float(size[bad].max()):.3g} {unit}, beyond the bound {bound:.3g} (sim.{key} sets it)")
        if bad.any():
            i = int(np.argmax(bad))
            if quantity.startswith("body"):
                body = next(b for b in built.bodies if b.index == i)
                world = f" of world {body.world}" if built.world_count > 1 else ""
                raise SimulationError(frame, quantity, f"body '{body.name}'{world} {why}; {int(bad.sum())} "
                                      "body(ies) affected; try more substeps or a softer contact material",
                                      finite=why != "not finite")
            obj = built.object_of_particle(i)
            world = f" of world {obj.world}" if obj and built.world_count > 1 else ""
            where = f"{obj.kind} '{obj.name}'{world}, particle {i - obj.start}" if obj else f"particle {i}"
            raise SimulationError(frame, quantity, f"{where} {why}; {int(bad.sum())} particle(s) affected; try "
                                  "more substeps or stiffer/softer materials", finite=why != "not finite")


def blowup_bounds(built: BuiltScene, frame: int) -> tuple:
    """(distance bound [m], speed bound [m/s], the scene's initial centre (3,)) at `frame`: sim.max_distance and
    sim.max_speed when set, else 100 times the scene's initial extent (at least 1 m) plus the distance the
    fastest initial speed and gravity cover by then, and 100 times (that speed + |g| t + 1 m/s). Loose enough
    for any motion the scene's forces could produce, tight enough to catch a solver that diverged to finite
    values."""
    init = built.__dict__.get("_blowup_initial")
    if init is None:
        m = built.model
        points = [m.particle_q.numpy().reshape(-1, 3)] if m.particle_count else []
        speeds = [np.linalg.norm(m.particle_qd.numpy().reshape(-1, 3), axis=-1)] if m.particle_count else []
        if built.bodies:
            points.append(m.body_q0.numpy()[:, :3])
            speeds.append(np.linalg.norm(m.body_qd0.numpy()[:, 3:6], axis=-1))
        pts = np.concatenate(points) if points else np.zeros((1, 3))
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        v0 = float(max((s.max() for s in speeds if s.size), default=0.0))
        init = built._blowup_initial = ((lo + hi) / 2, max(float(np.linalg.norm(hi - lo)), 1.0), v0)
    center, extent, v0 = init
    t = frame * built.substeps * built.dt
    g = abs(built.gravity)
    distance = built.max_distance or 100.0 * extent + v0 * t + 0.5 * g * t * t
    speed = built.max_speed or 100.0 * (v0 + g * t + 1.0)
    return distance, speed, center
