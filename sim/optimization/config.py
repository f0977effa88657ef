"""The optimisation config format: which scene, which keys to learn, the loss terms, the optimiser, iterations
and outputs. Validated like scenes (`sim/scene/schema.py`): errors name file, line and key path."""

from __future__ import annotations

import os

from ..scene.errors import SceneError
from ..scene.schema import (DEFAULTS, REQUIRED, AnyOf, Boolean, Choice, Ctx, Field, FilePath, Integer, Kind, ListOf,
                            MappingOf, Number, Section, String, Variant, Vector)
from ..scene.source import Source, load_source


class SceneRef(Kind):
    """A scene file name (relative to the config) or a scene written inline as a mapping."""

    doc_type = "file or mapping"

    def convert(self, value, ctx):
        if isinstance(value, dict):
            return ("inline", ctx.path)
        return ("file", FilePath(".yaml", ".yml").convert(value, ctx))


PARAMETER = Section([
    Field("path", String(), REQUIRED, "", "scene key to learn, e.g. cloth.0.vel or cloth.0.material.tri_ke"),
    Field("bounds", Vector(2), None, "", "[lower, upper] applied to every component after each step"),
    Field("log", Boolean(), False, "", "optimise log(value): relative steps for positive scalars (stiffness)"),
    Field("init", Number(), None, "", "start from this value instead of the scene's (scalars only)"),
], doc="A learned parameter.", title="parameters[]", checks=[lambda spec, ctx: check_bounds(spec, ctx)])


def check_bounds(spec, ctx):
    if spec.bounds is not None and not spec.bounds[0] <= spec.bounds[1]:
        ctx.child("bounds").fail(f"lower bound {spec.bounds[0]:g} exceeds upper bound {spec.bounds[1]:g}: "
                                 "expected [lower, upper]")

_OBJECT = Field("object", String(), REQUIRED, "", "name of a cloth or particles object of the scene (com_target: "
                "or of a rigid body)")
_WEIGHT = Field("weight", Number(min=0), 1.0, "", "factor of this term")
_FRAME = Field("frame", Integer(min=1), None, "", "frame at which it is measured (default: the last)")
_DATA = Field("file", FilePath(".npz", ".usd", ".usda", ".usdc"), REQUIRED, "", "recorded positions: .npz or USD")
_KEY = Field("key", String(), None, "", "array name in the .npz (default: the object's name, else 'positions'), or "
             "USD prim path (default: the default prim's child named like the object)")

LOSSES = {
    "com_target": Section([_OBJECT, _FRAME, Field("target", Vector(3), REQUIRED, "m", "target centre of mass"),
                           _WEIGHT], doc="weight * |centre of mass - target|^2 at a frame [m^2].",
                          title="loss com_target"),
    "positions": Section([_OBJECT, _FRAME, _DATA, _KEY, _WEIGHT],
                         doc="weight * mean |x_i - target_i|^2 at a frame, the target shape read from the file's "
                             "frame (last frame of a trajectory) [m^2].", title="loss positions"),
    "trajectory": Section([_OBJECT, _DATA, _KEY, Field("frames", ListOf(Integer(min=1)), None, "",
                                                       "frames compared (default: every recorded frame >= 1 "
                                                       "that is simulated)"), _WEIGHT],
                          doc="weight * mean over frames and particles of |x_i - recorded_i|^2 [m^2].",
                          title="loss trajectory"),
    "joint_target": Section([Field("joint", String(), REQUIRED, "", "name of a joint of the scene (joints[].name) "
                                   "or of its robot (revolute, prismatic or d6)"), _FRAME,
                             Field("target", AnyOf(Number(), ListOf(Number(), min_len=1),
                                                   expected="a number or a list of numbers"), REQUIRED,
                                   "m or rad", "target coordinates (a number for one axis)"),
                             Field("velocity_weight", Number(min=0), 0.0, "s^2", "factor of |qd|^2 (at rest at "
                                   "the target)"), _WEIGHT],
                            doc="weight * (|q - target|^2 + velocity_weight |qd|^2) of a joint at a frame "
                                "[m^2 or rad^2].", title="loss joint_target"),
    "param_l2": Section([Field("param", String(), REQUIRED, "", "path of a learned parameter"), _WEIGHT],
                        doc="weight * |theta - theta_initial|^2 on the optimised variable (a regulariser).",
                        title="loss param_l2"),
}

OPTIMIZERS = {
    "adam": Section([Field("lr", Number(positive=True), 0.01, "", "learning rate"),
                     Field("betas", Vector(2, min=0), (0.9, 0.999), "", "moment decay rates"),
                     Field("eps", Number(positive=True), 1e-8, "", "denominator guard"),
                     Field("clip_grad_norm", Number(positive=True), None, "", "scale steps down to this "
                           "gradient norm")], doc="Adam.", title="optimizer adam"),
    "sgd": Section([Field("lr", Number(positive=True), 0.01, "", "learning rate"),
                    Field("momentum", Number(min=0), 0.0, "", "heavy-ball momentum"),
                    Field("clip_grad_norm", Number(positive=True), None, "", "scale steps down to this "
                          "gradient norm")], doc="Plain or momentum SGD.", title="optimizer sgd"),
}

CHECKPOINT = Section([
    Field("above_steps", Integer(min=1), 2000, "", "use a checkpointed rollout when a rollout has more steps"),
    Field("every", Integer(min=1), None, "", "steps per checkpoint segment (default: sqrt of the steps)"),
], doc="Memory of long rollouts.", title="checkpoint")

OUTPUT = Section([
    Field("dir", String(), None, "", "output folder (default: out/<config name>); --out-dir overrides"),
    Field("save_every", Integer(min=1), 5, "", "iterations between resumable snapshots"),
    Field("usd", Boolean(), True, "", "write initial.usd and final.usd rollouts"),
    Field("video", Choice("mp4", "gif", "none"), "mp4", "", "write progress.mp4 (or .gif): the initial and the "
          "learned rollout side by side, rendered like `sim render` (needs usd: true)"),
], doc="What is written.", title="output")

POPULATION = Section([
    Field("size", Integer(min=1), None, "", "members optimised at once as worlds of one model (default: the "
          "number of listed starts, else 1); --population overrides"),
    Field("seed", Integer(min=0), 0, "", "random starts: member 0 starts where the config says, the others "
          "uniformly within each parameter's bounds (log-uniformly with log: true)"),
    Field("starts", ListOf(MappingOf(AnyOf(Number(), ListOf(Number(), min_len=1),
                                           expected="a number or a list of numbers"))), None, "",
          "listed starts, member by member: learned key path -> start value (keys not named keep the config's)"),
], doc="Several starts optimised at once (docs/optimize.md, Populations).", title="population")

CONFIG = Section([
    Field("description", String(), None, "", "free text"),
    Field("scene", SceneRef(), REQUIRED, "", "scene file (relative to this file) or an inline scene"),
    Field("set", ListOf(String()), [], "", "overrides applied to the scene (key.path=value)"),
    Field("frames", Integer(min=1), None, "", "frames simulated per iteration (default: the scene's)"),
    Field("parameters", ListOf(PARAMETER, min_len=1), REQUIRED, "", "what to learn"),
    Field("loss", ListOf(Variant("type", LOSSES), min_len=1), REQUIRED, "", "loss terms, summed"),
    Field("optimizer", Variant("type", OPTIMIZERS, default="adam"), DEFAULTS, "", "adam or sgd and settings"),
    Field("iterations", Integer(min=1), 100, "", "optimisation steps"),
    Field("tolerance", Number(min=0), 0.0, "", "stop once the loss is at or below this"),
    Field("checkpoint", CHECKPOINT, DEFAULTS, "", "checkpointed rollouts"),
    Field("output", OUTPUT, DEFAULTS, "", "outputs"),
    Field("population", POPULATION, DEFAULTS, "", "several starts optimised at once"),
], doc="An optimisation config's top-level keys.", title="optimisation config")


class OptimizeConfig:
    """A validated config: `spec` (keys with defaults), the Scene it optimises, and where it came from."""

    def __init__(self, spec, scene, path: str, source: Source):
        self.spec, self.scene, self.path, self.source = spec, scene, path, source

    @property
    def name(self) -> str:
        return os.path.splitext(os.path.basename(self.path))[0]

    def error(self, path: tuple, message: str) -> SceneError:
        return self.source.error(path, message)


def load_config(path: str, overrides=(), *, text: str | None = None) -> OptimizeConfig:
    """Read and validate an optimisation config and its scene; `overrides` ("key.path=value") apply to the config
    (use `scene.`-free keys such as iterations=5, or set=[...])."""
    from ..scene import Scene
    source = load_source(str(path), text)
    for o in overrides:
        source.apply_override(o)
    base = os.path.dirname(os.path.abspath(source.file))
    spec = CONFIG.convert(source.data, Ctx(source, (), base))
    kind, where = spec.scene
    # the config's `set` entries are reported at their own lines, not as --set options
    labelled = [(text, source.where(("set", i)) + f": set[{i}]") for i, text in enumerate(spec.set)]
    if kind == "file":
        scene = Scene.load(where, labelled)
    else:  # an inline scene keeps the config's lines in its messages
        prefix = len(where)
        lines = {p[prefix:]: line for p, line in source.lines.items() if p[:prefix] == where}
        sub = Source(source.data["scene"], lines, source.file)
        scene = Scene.from_source(sub, labelled)
    refuse_worlds(scene, "sim optimize optimises the parameters of one world (several starts at once as worlds: "
                         "--population N)")
    return OptimizeConfig(spec, scene, source.file, source)


def refuse_worlds(scene, what: str) -> None:
    """SceneError for a scene of several worlds (sim.worlds > 1) where only one is meant: learnable keys name
    world 0's objects and losses would add every world's, a silently different problem. `sim optimize
    --population N` makes the worlds itself (population.py), one member per world."""
    from ..scene import SceneError
    n = int(getattr(scene.spec.sim, "worlds", 1) or 1)
    if n > 1:
        raise SceneError(scene.path, ("sim", "worlds"), f"{n}: {what}; several worlds are for `sim run`, "
                         "`sim view` and Python (docs/worlds.md) so far: set sim.worlds: 1")
