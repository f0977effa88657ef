"""Which scene keys `sim optimize` can learn, which solver acts on each, and which (solver, key) pairs are refused
and why. docs/gradients.md is generated from these tables (`python tools/param_table.py`), and
tests/test_param_table.py checks every learnable key with every solver against them."""

from __future__ import annotations

PARTICLE_KEYS = ("vel", "velocities", "mass", "forces")
CLOTH_MATERIAL_KEYS = ("tri_ke", "tri_ka", "tri_kd", "edge_ke", "edge_kd", "spring_ke", "spring_kd")
RIGID_MATERIAL_KEYS = ("ke", "kd", "kf", "mu", "restitution")
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

#: The solvers: `sim.solver.type` of the scene steps cloth and particles; SolverRigid steps bodies, or
#: SolverFeatherstone when the scene has joints or a robot.
SOLVERS = ("semi_implicit", "xpbd", "rigid", "featherstone")
PARTICLE_SOLVERS = ("semi_implicit", "xpbd")

_XPBD_IGNORES = {
    "tri_ka": "SolverXPBD's membrane is one distance constraint per triangle edge, stiffened by tri_ke only; "
              "tri_ka (Lame lambda) is not read",
    "tri_kd": "SolverXPBD's membrane has no damping term; tri_kd is not read (use the solver's damping)",
    "edge_kd": "SolverXPBD's bending constraint has no damping term; edge_kd is not read",
    "spring_kd": "SolverXPBD's springs are compliant distance constraints without damping; spring_kd is not read",
}
_COLLIDER_MATERIAL = ("a collider's material acts on rigid-body contacts only; cloth and particles "
                      "touch colliders with sim.contact, whose mu is learnable as sim.contact.mu")

#: (solver, key pattern) -> why that solver cannot give the key a gradient (it does not read it). A key is refused
#: at config load when every solver acting on it in the scene refuses it.
REFUSED = {
    **{("xpbd", f"{group}.material.{k}" if group == "cloth.N" else f"{group}.{k}"): why
       for k, why in _XPBD_IGNORES.items() for group in ("cloth.N", "materials.NAME")},
    **{(solver, f"colliders.N.material.{k}"): _COLLIDER_MATERIAL
       for k in RIGID_MATERIAL_KEYS for solver in PARTICLE_SOLVERS},
    ("rigid", "bodies.N.mass"): "SolverRigid reads the inverse mass and inertia computed when the scene is built; "
                                "a body's mass is learnable when SolverFeatherstone moves it (a scene with joints)",
    **{("featherstone", f"bodies.N.{k}"): "SolverFeatherstone moves bodies by their joint coordinates: a jointed "
                                          "body's initial velocity is its joint's qd (learn joints.N.qd)"
       for k in ("vel", "angular_vel")},
}


def pattern_of(parts: list) -> str:
    """The LEARNABLE pattern of a key path split at dots: indices become N, a material's name NAME."""
    out = [("N" if isinstance(p, int) else p) for p in parts]
    if parts and parts[0] == "materials" and len(parts) > 1:
        out[1] = "NAME"
    if parts[:2] == ["robot", "joints"] and len(parts) > 2:
        out[2] = "NAME"
    return ".".join(str(p) for p in out)


def solvers_of(pattern: str) -> tuple:
    """The solvers that can act on what a key pattern sets: bodies are SolverRigid's or SolverFeatherstone's,
    joints and robots SolverFeatherstone's, colliders everyone's, everything else (cloth, particles, their
    materials, particle-shape contact) the particle solvers'."""
    head = pattern.split(".")[0]
    if head == "bodies":
        return ("rigid", "featherstone")
    if head in ("joints", "robot"):
        return ("featherstone",)
    if head == "colliders":
        return SOLVERS
    return PARTICLE_SOLVERS


def acting_solvers(pattern: str, scene) -> tuple:
    """The solvers of `solvers_of(pattern)` that step something in the validated `scene`."""
    present = []
    if scene.cloth or scene.particles:
        present.append(scene.sim.solver.type)
    if scene.joints or scene.robot is not None:
        present.append("featherstone")
    elif scene.bodies:
        present.append("rigid")
    return tuple(s for s in solvers_of(pattern) if s in present)


def learnable_summary() -> str:
    """LEARNABLE written compactly for messages: `cloth.N.{vel,velocities,...}; ...`."""
    groups: dict = {}
    for pattern in LEARNABLE:
        head, _, last = pattern.rpartition(".")
        groups.setdefault(head, []).append(last)
    return "; ".join(f"{head}.{{{','.join(keys)}}}" if len(keys) > 1 else f"{head}.{keys[0]}"
                     for head, keys in groups.items())
