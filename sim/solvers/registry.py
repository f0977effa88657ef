"""The solver registry: every solver by name, in one list. Scene building, the learnable-key table and its
refusals, and docs/gradients.md read the solvers from here; adding a solver is its folder (a package exporting
its `Solver` subclass) and one line in REGISTERED (docs/solvers.md)."""

from __future__ import annotations

import importlib

from .base import Solver

#: (folder under sim/solvers, class name), one line per solver; the order is the order of the docs' tables
REGISTERED = (
    ("semi_implicit", "SolverSemiImplicit"),
    ("xpbd", "SolverXPBD"),
    ("rigid", "SolverRigid"),
    ("featherstone", "SolverFeatherstone"),
)


def _load(folder: str, class_name: str) -> type:
    cls = getattr(importlib.import_module(f"{__package__}.{folder}"), class_name)
    if not (isinstance(cls, type) and issubclass(cls, Solver) and cls.name):
        raise TypeError(f"sim/solvers/{folder}: {class_name} must derive from Solver and declare its name")
    return cls


#: solver name -> class, in REGISTERED's order
SOLVERS = {cls.name: cls for cls in (_load(folder, name) for folder, name in REGISTERED)}


def solver_class(name: str) -> type:
    """The registered solver called `name` (KeyError naming the known ones otherwise)."""
    if name not in SOLVERS:
        raise KeyError(f"no solver named '{name}' (registered: {', '.join(SOLVERS)})")
    return SOLVERS[name]


def particle_solver_names() -> tuple:
    """The names `sim.solver.type` may take: the solvers that step cloth and particles."""
    return tuple(name for name, cls in SOLVERS.items() if cls.role == "particles")


def body_solver_name(articulated: bool) -> str:
    """The solver that moves a scene's bodies: the articulated one for a scene with joints or a robot."""
    return next(name for name, cls in SOLVERS.items() if cls.role == "bodies" and cls.articulated == articulated)


def scene_solver_names(scene) -> tuple:
    """The names of the solvers that step something in the validated scene spec `scene`: `sim.solver.type` for
    its cloth and particles, the bodies' solver for its bodies, joints or robot."""
    names = []
    if scene.cloth or scene.particles:
        names.append(scene.sim.solver.type)
    articulated = bool(scene.joints) or scene.robot is not None
    if articulated or scene.bodies:
        names.append(body_solver_name(articulated))
    return tuple(names)
