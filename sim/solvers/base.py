"""The Solver interface every solver derives from: one `step` signature, `notify_model_changed`, and the
capabilities a solver declares next to its code (what it simulates, which scene keys it acts on and which of
those it does not read), from which scene building, the learnable-key refusals and docs/gradients.md are derived.
"""

from __future__ import annotations

import enum
import fnmatch
from typing import ClassVar


class ModelChange(enum.IntFlag):
    """What changed in a Model after a solver was made (`Solver.notify_model_changed`'s `flags`)."""

    PARTICLES = enum.auto()  # particle masses, radii, flags
    CLOTH = enum.auto()  # springs, triangles, bending edges and their materials
    SHAPES = enum.auto()  # shape poses, sizes, bodies and contact materials
    BODIES = enum.auto()  # body masses, inertias, centres of mass
    JOINTS = enum.auto()  # joint topology, axes, drives, limits, armature
    ALL = PARTICLES | CLOTH | SHAPES | BODIES | JOINTS


#: the words `Solver.simulates` uses (docs/solvers.md explains each)
CAPABILITIES = ("particles", "cloth", "springs", "bending", "shape_contact", "mesh_contact", "particle_contact",
                "self_collision", "rigid_bodies", "body_contact", "articulations", "joint_drives",
                "joint_limits")

#: what the particle solvers have in common: the features they simulate, the scene keys they act on (their
#: objects, the objects' materials, the colliders they touch, the particle-shape contact) and what they ignore
PARTICLE_FEATURES = frozenset({"particles", "cloth", "springs", "bending", "shape_contact", "mesh_contact",
                               "particle_contact", "self_collision"})
PARTICLE_SCENE_KEYS = ("cloth.*", "particles.*", "materials.*", "colliders.*", "sim.contact.*")
PARTICLE_IGNORED_KEYS = {
    "colliders.*.material.*": "a collider's material acts on rigid-body contacts only; cloth and particles "
                              "touch colliders with sim.contact, whose mu is learnable as sim.contact.mu",
}


class Solver:
    """Advances a State of a Model by one time step. Subclasses declare their capabilities as class attributes:

    Attributes:
        name: the solver's name in scenes and in the registry (`sim.solver.type: NAME` for a particle solver).
        title: what it steps, in a few words (docs/gradients.md's headings).
        role: "particles" (cloth and particles, chosen by `sim.solver.type`) or "bodies" (rigid bodies).
        articulated: a "bodies" solver for scenes with joints or a robot (True) or for free bodies (False).
        simulates: the features it simulates, words of CAPABILITIES.
        scene_keys: the scene key patterns (learnable-key patterns as in sim/optimization/learnable.py, `*`
            matching anything) whose values this solver acts on: the objects it steps and what they touch.
        ignored_keys: pattern -> why: keys among `scene_keys` whose values it does not read, so that learning
            them could only give a zero gradient (they are refused with that reason).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    role: ClassVar[str] = ""
    articulated: ClassVar[bool] = False
    simulates: ClassVar[frozenset] = frozenset()
    scene_keys: ClassVar[tuple] = ()
    ignored_keys: ClassVar[dict] = {}

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance `state_in` by `dt` [s] into `state_out` under `control` (None: no inputs)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step")

    def notify_model_changed(self, flags: ModelChange):
        """Tell the solver that the Model's arrays of `flags` were replaced or edited after it was made, so that
        it rebuilds what it derived from them. The base solver reads the model at every step: nothing to do."""

    @classmethod
    def acts_on(cls, pattern: str) -> bool:
        """Whether a learnable-key pattern (`cloth.N.vel`) is among the keys this solver acts on."""
        return any(fnmatch.fnmatchcase(pattern, p) for p in cls.scene_keys)

    @classmethod
    def ignores(cls, pattern: str) -> str | None:
        """Why this solver does not read the key `pattern` (None: it reads it, or does not act on it)."""
        return next((why for p, why in cls.ignored_keys.items() if fnmatch.fnmatchcase(pattern, p)), None)
