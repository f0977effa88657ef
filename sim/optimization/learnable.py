"""Which scene keys `sim optimize` can learn, which solver acts on each, and which (solver, key) pairs are refused
and why: the last two derived from the capabilities each solver declares (sim/solvers/base.py). docs/gradients.md
is generated from these tables (`python tools/param_table.py`), and tests/test_param_table.py checks every
learnable key with every solver against them."""

from __future__ import annotations

from ..solvers.registry import SOLVERS as REGISTRY
from ..solvers.registry import particle_solver_names, scene_solver_names

PARTICLE_KEYS = ("vel", "velocities", "mass", "forces")
CLOTH_MATERIAL_KEYS = ("tri_ke", "tri_ka", "tri_kd", "edge_ke", "edge_kd", "spring_ke", "spring_kd")
RIGID_MATERIAL_KEYS = ("ke", "kd", "kf", "mu", "restitution", "timeconst", "dampratio")
COLLIDER_KEYS = ("pos", "rot", "radius", "half_extents", "half_height")
#: keys of a joint (joints.N) and of an imported robot's joint (robot.joints.NAME): its initial coordinate and
#: velocity, its per-frame control forces and its drive
JOINT_KEYS = ("q", "qd", "forces", "drive.target_pos", "drive.target_vel", "drive.ke", "drive.kd")

#: Every learnable scene key as a pattern (N: an object's index, NAME: a material's name). docs/gradients.md and
#: tests/test_param_table.py are generated from / checked against this list: a key added here needs a row there.
LEARNABLE = (*(f"cloth.N.{k}" for k in PARTICLE_KEYS), *(f"cloth.N.material.{k}" for k in CLOTH_MATERIAL_KEYS),
             *(f"materials.NAME.{k}" for k in CLOTH_MATERIAL_KEYS), *(f"particles.N.{k}" for k in PARTICLE_KEYS),
             "bodies.N.vel", "bodies.N.angular_vel", *(f"bodies.N.material.{k}" for k in RIGID_MATERIAL_KEYS),
             "bodies.N.mass", *(f"joints.N.{k}" for k in JOINT_KEYS), *(f"robot.joints.NAME.{k}" for k in JOINT_KEYS),
             *(f"colliders.N.{k}" for k in COLLIDER_KEYS), *(f"colliders.N.material.{k}" for k in RIGID_MATERIAL_KEYS),
             "sim.contact.mu")

#: The registered solvers' names (sim/solvers/registry.py): `sim.solver.type` of the scene steps cloth and
#: particles; the bodies' solver steps bodies (SolverFeatherstone when the scene has joints or a robot).
SOLVERS = tuple(REGISTRY)
PARTICLE_SOLVERS = particle_solver_names()

#: (solver, key pattern) -> why that solver cannot give the key a gradient (it does not read it), from the
#: solvers' declared `ignored_keys`. A key is refused at config load when every solver acting on it in the scene
#: refuses it.
REFUSED = {(name, pattern): cls.ignores(pattern) for pattern in LEARNABLE for name, cls in REGISTRY.items()
           if cls.acts_on(pattern) and cls.ignores(pattern)}


def pattern_of(parts: list) -> str:
    """The LEARNABLE pattern of a key path split at dots: indices become N, a material's name NAME."""
    out = [("N" if isinstance(p, int) else p) for p in parts]
    if parts and parts[0] == "materials" and len(parts) > 1:
        out[1] = "NAME"
    if parts[:2] == ["robot", "joints"] and len(parts) > 2:
        out[2] = "NAME"
    return ".".join(str(p) for p in out)


def solvers_of(pattern: str) -> tuple:
    """The solvers that can act on what a key pattern sets: those whose declared `scene_keys` match it."""
    return tuple(name for name, cls in REGISTRY.items() if cls.acts_on(pattern))


def acting_solvers(pattern: str, scene) -> tuple:
    """The solvers of `solvers_of(pattern)` that step something in the validated `scene`."""
    present = scene_solver_names(scene)
    return tuple(s for s in solvers_of(pattern) if s in present)


def learnable_summary() -> str:
    """LEARNABLE written compactly for messages: `cloth.N.{vel,velocities,...}; ...`."""
    groups: dict = {}
    for pattern in LEARNABLE:
        head, _, last = pattern.rpartition(".")
        groups.setdefault(head, []).append(last)
    return "; ".join(f"{head}.{{{','.join(keys)}}}" if len(keys) > 1 else f"{head}.{keys[0]}"
                     for head, keys in groups.items())
