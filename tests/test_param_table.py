"""Every learnable key (sim/optimization/learnable.py: LEARNABLE) with every solver that acts on it has a row
here, and the row holds: either the key is refused at config load with its reason (REFUSED), or the tape's
gradient through `sim optimize`'s own code path (config load, Problem, parameter kernels, rollout) matches
central finite differences within 5 % (or 1e-4 absolute) at a point where the loss is smooth. Smoothness is
checked, not assumed: the loss is swept over nine points around the evaluation point and must fit a quadratic,
with central differences over two step sizes agreeing, so a jump or kink nearby fails the row.

The scenes are tiny (a 3 x 3 cloth, two particles, one body) with contact all the way through, on a sphere,
box, capsule or the ground, so that each key matters where it is checked (the row also fails when the
difference is too small to mean anything).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest
import yaml

from sim.optimization import Problem, load_config
from sim.optimization.learnable import LEARNABLE, REFUSED, SOLVERS, solvers_of
from sim.scene import SceneError

RTOL, ATOL = 0.05, 1e-4
SWEEP = np.arange(-4, 5)  # evaluation points x0 + k h d
SMOOTH = 0.05  # the losses fit a quadratic to within this fraction of the slope (plus ATOL) times the step


# ---------------------------------------------------------------------------------------------------- scenes

HORIZONTAL = {"axis": [1, 0, 0], "angle": 90}
MATERIAL = {"tri_ke": 150.0, "tri_ka": 100.0, "tri_kd": 2.0, "edge_ke": 2000.0, "edge_kd": 20.0, "springs": True,
            "spring_ke": 150.0, "spring_kd": 0.5}
FRAMES = 4
FORCES = [[0.0, 0.0, 0.1], [0.1, 0.0, 0.0], [0.05, 0.0, 0.05], [0.0, 0.0, -0.05]]  # [N] per frame
RADIUS, MASS, CONTACT_KE = 0.02, 0.05, 300.0  # particle radius [m], mass [kg], contact stiffness [N/m]
# Each collider's top is at height 0; a sphere or capsule cap as (centre, radius) for resting on it.
COLLIDERS = {
    "sphere": ({"type": "sphere", "pos": [0.0, -1.0, 0.0], "radius": 1.0}, ((0.0, -1.0, 0.0), 1.0)),
    "box": ({"type": "box", "pos": [-0.45, -0.1, 0.0], "half_extents": [0.5, 0.1, 0.5]}, None),
    "capsule": ({"type": "capsule", "pos": [0.0, -0.4, 0.0], "radius": 0.2, "half_height": 0.2},
                ((0.0, -0.2, 0.0), 0.2)),
    "ground": ({"type": "ground"}, None),
}
DOTS_XZ = [(-0.03, -0.02), (0.03, 0.02)]  # where the two particles rest [m]
DOTS_VEL = [0.5, 0.0, -0.4]


def rest_depth(solver: str) -> float:
    """How deep [m] a particle starts in the surface: the penalty contact's rest depth m g / ke
    (semi-implicit), or touching (XPBD, whose contact projects it out: starting deeper would launch it)."""
    return MASS * 9.81 / CONTACT_KE if solver == "semi_implicit" else 0.0


def resting(collider: str, x: float, z: float, depth: float) -> list:
    """The position above (x, z) whose contact depth on `collider`'s top is `depth` [m]."""
    round_top = COLLIDERS[collider][1]
    if round_top is None:
        return [x, RADIUS - depth, z]
    centre, r = np.array(round_top[0]), round_top[1]
    up = np.array([x, 0.0, z]) - centre
    up[1] = np.sqrt(r * r - x * x - z * z)
    return (centre + up / np.linalg.norm(up) * (r + RADIUS - depth)).tolist()


def _cloth_velocities(motion: str) -> list:
    """Start velocities [m/s] of the 3 x 3 cloth's vertices (vertex (i, j) at x = 0.1 (i - 1), z = 0.1 (j - 1)):
    a slide along the box's edge, plus for "stretch" an in-plane stretch about the centre and random in-plane
    motion, for "fold" the free column (i = 2, over the edge) swinging down fast."""
    rng = np.random.default_rng(5)
    out = []
    for j in range(3):
        for i in range(3):
            v = np.array([0.0, 0.0, 0.6])
            if motion == "stretch":
                v += np.array([i - 1.0, 0.0, j - 1.0]) * 0.6 + rng.normal(scale=0.2, size=3) * [1, 0, 1]
            elif i == 2:
                v[1] = -2.0
            out.append(v.tolist())
    return out


def particle_scene(solver: str, collider: str, *, named_material: bool = False, motion: str | None = None) -> dict:
    """Two particles resting on `collider`'s top at their rest depth, sliding with a push from their control
    forces, stepped by `solver` (xpbd or semi_implicit). On the box a 3 x 3 cloth (0.2 m square) as well,
    resting on it, its last column of vertices over the box's edge (so that it bends as it droops); with
    `motion` ("stretch" or "fold") its vertices start with velocities that stretch or fold it (so that its
    material matters within the few frames simulated). Contact damping is 0: with it, a penalty contact's force jumps as the contact starts
    (docs/gradients.md)."""
    depth = rest_depth(solver)
    dots = {"name": "dots", "points": [resting(collider, x, z, depth) for x, z in DOTS_XZ], "vel": DOTS_VEL,
            "mass": MASS, "radius": RADIUS, "forces": FORCES}
    scene = {"sim": {"fps": 60, "frames": FRAMES, "substeps": 4 if solver == "xpbd" else 16,
                     "solver": {"type": solver, **({"iterations": 4} if solver == "xpbd" else {})},
                     "contact": {"ke": CONTACT_KE, "kd": 0.0, "kf": 2.0, "mu": 0.4, "margin": 0.0}},
             "particles": [dots], "colliders": [dict(COLLIDERS[collider][0])]}
    if collider == "box":
        cloth = {"name": "cloth", "grid": {"dim_x": 2, "dim_y": 2, "cell_x": 0.1, "cell_y": 0.1},
                 "pos": [-0.1, RADIUS - depth, -0.1], "rot": HORIZONTAL, "mass": MASS, "radius": RADIUS,
                 "material": "silk" if named_material else dict(MATERIAL), "forces": FORCES}
        if motion is not None:
            cloth["velocities"] = _cloth_velocities(motion)
        else:
            cloth["vel"] = [0.0, 0.0, 0.6]
        scene["cloth"] = [cloth]
    if named_material:
        scene["materials"] = {"silk": dict(MATERIAL)}
    return scene


RIGID_MATERIAL = {"ke": 5.0e3, "kd": 250.0, "kf": 20.0, "mu": 0.4, "restitution": 0.5}


def rigid_scene(collider: str) -> dict:
    """A ball (radius 0.1 m, 0.84 kg) on `collider`'s top, sliding and spinning (friction slows it and turns it)
    and bobbing in its contact, 2.5 mm deep at the start (resting: 2.1 mm), never leaving it."""
    depth = 0.0025
    centre = resting(collider, 0.0, 0.0, depth + RADIUS - 0.1)  # resting() places a particle of RADIUS
    ball = {"name": "ball", "pos": centre, "vel": [0.3, -0.1, 0.1], "angular_vel": [0.5, 1.0, 0.0],
            "shapes": [{"type": "sphere", "radius": 0.1, "density": 200.0}], "material": dict(RIGID_MATERIAL)}
    target = dict(COLLIDERS[collider][0])
    target["material"] = dict(RIGID_MATERIAL)
    return {"sim": {"fps": 60, "frames": 4, "substeps": 8}, "bodies": [ball], "colliders": [target]}


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVE = {"target_pos": 0.4, "target_vel": 0.5, "ke": 20.0, "kd": 2.0}


def pendulum_scene() -> dict:
    """A double pendulum (SolverFeatherstone), swinging from 0.6 rad with the elbow driven towards 0.4 rad and
    both joints pushed by per-frame torques, so that every joint key matters within its few frames."""
    link = {"type": "capsule", "pos": [0.0, -0.25, 0.0], "radius": 0.04, "half_height": 0.2, "density": 100.0}
    torques = [0.2, -0.1, 0.3, 0.1]  # [N m] per frame
    return {"sim": {"fps": 60, "frames": 4, "substeps": 8},
            "bodies": [{"name": "upper", "shapes": [dict(link)]}, {"name": "lower", "shapes": [dict(link)]}],
            "joints": [{"type": "revolute", "child": "upper", "axis": [0, 0, 1], "q": 0.6, "qd": 0.5,
                        "parent_anchor": {"pos": [0.0, 1.0, 0.0]}, "forces": torques},
                       {"type": "revolute", "parent": "upper", "child": "lower", "axis": [0, 0, 1], "q": -0.3,
                        "qd": -1.0, "parent_anchor": {"pos": [0.0, -0.5, 0.0]}, "forces": torques,
                        "drive": dict(DRIVE)}]}


SOFT_MATERIAL = {"ke": 2.0e3, "kd": 10.0, "kf": 1.0, "mu": 0.5, "restitution": 0.5}
REACH = 0.98  # [m] from the pivot's vertical axis to the sliding sphere's centre, about
# Colliders whose top is at height 0 under the sliding sphere; the round ones centred on the pivot's vertical axis
# (so that the sphere, turning round it, stays on the same height).
ARM_COLLIDERS = {
    "ground": {"type": "ground"},
    "sphere": {"type": "sphere", "pos": [0.0, -float(np.sqrt(25.0 - REACH ** 2)), 0.0], "radius": 5.0},
    "box": {"type": "box", "pos": [0.0, -0.5, 0.0], "half_extents": [1.5, 0.5, 1.5]},
    "capsule": {"type": "capsule", "pos": [0.0, -float(np.sqrt(25.0 - REACH ** 2)) - 0.5, 0.0], "radius": 5.0,
                "half_height": 0.5},
}


def sliding_arm_scene(collider: str, landing: bool = False) -> dict:
    """A link (SolverFeatherstone) on a d6 joint 0.3 m above `collider`'s top, turning about the vertical at
    3 rad/s and free to pitch, its sphere (radius 0.1 m, 0.5 kg, 1 m out) sliding round on the top, 5 mm deep at
    the start (resting: ~4 mm) and pitching down at 0.15 m/s, so that it bobs in its contact, never leaving it;
    `landing`: 1 cm above the top at the start, pitching down at 0.5 m/s, so that it lands after ~20 ms (the
    materials do not move that moment, so damping's force jumping as the contact starts does not enter their
    rows) and bounces in its contact. The link and the collider have the soft SOFT_MATERIAL (a contact period of
    ~60 ms)."""
    arm = {"name": "arm", "mass": 0.5, "shapes": [{"type": "sphere", "pos": [1.0, 0.0, 0.0], "radius": 0.1}],
           "material": dict(SOFT_MATERIAL)}
    joint = {"type": "d6", "child": "arm", "parent_anchor": {"pos": [0.0, 0.3, 0.0]},
             "angular_axes": [{"axis": [0, 1, 0]}, {"axis": [0, 0, 1]}],
             "q": [0.0, -float(np.arcsin(0.19 if landing else 0.205))], "qd": [3.0, -0.5 if landing else -0.15]}
    target = dict(ARM_COLLIDERS[collider], material=dict(SOFT_MATERIAL))
    return {"sim": {"fps": 60, "frames": 4, "substeps": 8}, "bodies": [arm], "joints": [joint],
            "colliders": [target]}


def arm_scene() -> dict:
    """assets/arm/arm.urdf with its elbow driven and pushed (SolverFeatherstone)."""
    elbow = {"drive": dict(DRIVE), "forces": [0.5, -0.2, 0.3, 0.1], "q": 0.3, "qd": 1.0}
    return {"sim": {"fps": 60, "frames": 4, "substeps": 8, "up_axis": "z"},
            "robot": {"urdf": f"{ROOT}/assets/arm/arm.urdf", "armature": 0.01, "joints": {"elbow": elbow}}}


#: the time-constant form of the normal force (no ke/kd given), for the rows of timeconst and dampratio
TIME_CONSTANT_MATERIAL = {"timeconst": 0.03, "dampratio": 1.0, "kf": 20.0, "mu": 0.4, "restitution": 0.5}


def time_constant(scene: dict) -> dict:
    """`scene` with every body's and collider's material in the time-constant form (TIME_CONSTANT_MATERIAL)."""
    for item in scene.get("bodies", []) + scene.get("colliders", []):
        item["material"] = dict(TIME_CONSTANT_MATERIAL)
    return scene


# ---------------------------------------------------------------------------------------------------- rows

#: the collider of each collider key's row (a box's rotation tilts its top)
COLLIDER_ROWS = (("pos", "sphere"), ("rot", "box"), ("radius", "sphere"), ("half_extents", "box"),
                 ("half_height", "capsule"))


@dataclass
class Row:
    """A gradient check: `key` learned in `scene`, the loss measured on `object`. The sweep steps along a fixed
    unit direction by `step` (in the key's units), or by 1 % of the value for a scalar without one."""

    key: str
    scene: dict
    object: str
    step: float | None = None


def geometry_step(solver: str) -> float:
    """Sweep step [m] of a collider's position or size: well below the contacts' depth (semi-implicit: the rest
    depth, 1.6 mm; XPBD: what gravity pushes in per step, 0.17 mm), so that no contact starts or ends."""
    return 1e-4 if solver == "semi_implicit" else 1e-5


def _cloth_rows(solver: str) -> dict:
    rows = {}
    for k in ("vel", "velocities", "mass", "forces"):
        step = None if k == "mass" else 1e-2  # [m/s], [N]
        rows[f"cloth.N.{k}"] = Row(f"cloth.0.{k}", particle_scene(solver, "box"), "cloth", step)
        rows[f"particles.N.{k}"] = Row(f"particles.0.{k}", particle_scene(solver, "ground"), "dots", step)
    for k in MATERIAL:
        if k != "springs":
            motion = "fold" if k.startswith("edge") else "stretch"
            scene = particle_scene(solver, "box", motion=motion)
            rows[f"cloth.N.material.{k}"] = Row(f"cloth.0.material.{k}", scene, "cloth")
            named = particle_scene(solver, "box", named_material=True, motion=motion)
            rows[f"materials.NAME.{k}"] = Row(f"materials.silk.{k}", named, "cloth")
    for k, collider in COLLIDER_ROWS:
        # a quaternion step of h turns the box by 2h: its top's far edge moves 0.9 h; XPBD's float32 positions
        # need a step well above their round-off, and 1e-4 stays below the contact depth
        step = 1e-4 if (k, solver) == ("rot", "xpbd") else geometry_step(solver)
        rows[f"colliders.N.{k}"] = Row(f"colliders.0.{k}", particle_scene(solver, collider), "dots", step)
    rows["sim.contact.mu"] = Row("sim.contact.mu", particle_scene(solver, "box"), "cloth")
    return {(solver, pattern): row for pattern, row in rows.items()}


def _rigid_rows() -> dict:
    rows = {"bodies.N.vel": Row("bodies.0.vel", rigid_scene("ground"), "ball", 1e-2),
            "bodies.N.angular_vel": Row("bodies.0.angular_vel", rigid_scene("ground"), "ball", 1e-2)}
    for k, collider in COLLIDER_ROWS:
        rows[f"colliders.N.{k}"] = Row(f"colliders.0.{k}", rigid_scene(collider), "ball", 1e-4)
    for k in ("ke", "kd", "kf", "mu", "restitution"):
        rows[f"bodies.N.material.{k}"] = Row(f"bodies.0.material.{k}", rigid_scene("ground"), "ball")
        rows[f"colliders.N.material.{k}"] = Row(f"colliders.0.material.{k}", rigid_scene("ground"), "ball")
    for k in ("timeconst", "dampratio"):
        rows[f"bodies.N.material.{k}"] = Row(f"bodies.0.material.{k}", time_constant(rigid_scene("ground")), "ball")
        rows[f"colliders.N.material.{k}"] = Row(f"colliders.0.material.{k}", time_constant(rigid_scene("ground")),
                                                "ball")
    return {("rigid", pattern): row for pattern, row in rows.items()}


def _featherstone_rows() -> dict:
    rows = {"joints.N.forces": Row("joints.1.forces", pendulum_scene(), "lower", 0.1),
            "robot.joints.NAME.forces": Row("robot.joints.elbow.forces", arm_scene(), "tool", 0.1),
            "bodies.N.mass": Row("bodies.0.mass", pendulum_scene(), "lower")}
    for k in ("q", "qd"):
        rows[f"joints.N.{k}"] = Row(f"joints.1.{k}", pendulum_scene(), "lower", 1e-2)
        rows[f"robot.joints.NAME.{k}"] = Row(f"robot.joints.elbow.{k}", arm_scene(), "tool", 1e-2)
    for k in DRIVE:
        rows[f"joints.N.drive.{k}"] = Row(f"joints.1.drive.{k}", pendulum_scene(), "lower")
        rows[f"robot.joints.NAME.drive.{k}"] = Row(f"robot.joints.elbow.drive.{k}", arm_scene(), "tool")
    for k, collider in COLLIDER_ROWS:
        rows[f"colliders.N.{k}"] = Row(f"colliders.0.{k}", sliding_arm_scene(collider), "arm", 1e-4)
    for k in SOFT_MATERIAL:
        landing = sliding_arm_scene("ground", landing=True)
        rows[f"bodies.N.material.{k}"] = Row(f"bodies.0.material.{k}", landing, "arm")
        rows[f"colliders.N.material.{k}"] = Row(f"colliders.0.material.{k}", landing, "arm")
    for k in ("timeconst", "dampratio"):
        landing = time_constant(sliding_arm_scene("ground", landing=True))
        rows[f"bodies.N.material.{k}"] = Row(f"bodies.0.material.{k}", landing, "arm")
        rows[f"colliders.N.material.{k}"] = Row(f"colliders.0.material.{k}", landing, "arm")
    return {("featherstone", pattern): row for pattern, row in rows.items()}


CHECKS = {**_cloth_rows("semi_implicit"), **_cloth_rows("xpbd"), **_rigid_rows(), **_featherstone_rows()}
CHECKS = {k: v for k, v in CHECKS.items() if k not in REFUSED}
COMBINATIONS = [(solver, pattern) for pattern in LEARNABLE for solver in solvers_of(pattern)]


def _refused_scene(solver: str, pattern: str) -> tuple:
    """A scene where `solver` is the only one acting on `pattern`, and the concrete key."""
    named = pattern.startswith("materials.")
    key = pattern.replace(".N.", ".0.").replace("NAME", "silk")
    if solver == "rigid":
        return key, rigid_scene("sphere")
    if solver == "featherstone":
        collider = {"colliders.0.half_extents": "box", "colliders.0.half_height": "capsule",
                    "colliders.0.rot": "box"}.get(key, "sphere")
        scene = pendulum_scene()
        scene["colliders"] = [dict(COLLIDERS[collider][0])]
        return key, scene
    return key, particle_scene(solver, "box", named_material=named)


# ---------------------------------------------------------------------------------------------------- running


BODY_TARGETS = {"ball": [0.5, 0.3, 0.2], "lower": [0.3, 0.2, 0.1], "tool": [0.2, -0.3, 0.4],
                "arm": [0.92, 0.2, -0.35]}  # [m]


def _config(tmp_path, key: str, scene: dict, obj: str) -> str:
    """Write a config learning `key` in `scene`, the loss the mean squared distance of `obj`'s particles to
    scattered targets near them (so that the cloth's shape matters, not only where it goes), or the ball's
    centre's squared distance to a target; returns its path."""
    if obj in BODY_TARGETS:
        loss = {"type": "com_target", "object": obj, "target": BODY_TARGETS[obj], "weight": 30.0}
    else:
        count = 9 if obj == "cloth" else 2
        targets = np.random.default_rng(3).uniform(-0.15, 0.15, (1, count, 3)) + np.array([0.05, 0.05, 0.0])
        np.savez(tmp_path / "target.npz", **{obj: targets.astype(np.float32)})
        loss = {"type": "positions", "object": obj, "file": "target.npz", "weight": 30.0}
    config = {"scene": scene, "parameters": [{"path": key}], "loss": [loss], "iterations": 1}
    path = tmp_path / "row.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(path)


def sweep(path: str, step: float | None) -> dict:
    """The tape's directional derivative of the loss along a fixed unit direction d, and the loss at
    x0 + k h d for k in SWEEP (h = `step`, or 1 % of a scalar's value). A scalar swept by a relative step has
    its derivative and step given per unit of relative change (x0 dL/dx: the tolerances then mean the same for
    a stiffness of 100 N/m as for a mass of 0.05 kg)."""
    problem = Problem(load_config(path), capture=False)
    param = problem.params[0]
    x0 = param.variable.numpy().astype(np.float64).copy()
    d = np.ones(1) if x0.size == 1 else np.random.default_rng(7).standard_normal(x0.size)
    d /= np.linalg.norm(d)
    scale = 1.0 if step is not None else abs(float(x0[0]))
    h = step if step is not None else 1e-2 * scale
    problem.loss_and_gradient()
    tape = float(param.variable.grad.numpy().astype(np.float64) @ d)
    losses = []
    for k in SWEEP:
        param.variable.assign((x0 + k * h * d).astype(np.float32))
        losses.append(problem.loss())
    # derivatives are compared per `scale` units: per unit of a vector, per relative change of a scalar
    return {"tape": tape * scale, "losses": np.array(losses), "step": h / scale}


def judge(result: dict) -> list:
    """What is wrong with a sweep (empty when the row holds): not smooth, negligible, or a gradient mismatch.

    Smooth: a quadratic fits the nine losses to within SMOOTH of the slope (a jump, or a kink where the slope
    changes, does not fit), and central differences over h and 2h agree. Negligible: a central difference below
    10 ATOL says the key hardly matters in the scene, so the row would check nothing."""
    losses, h, tape = result["losses"], result["step"], result["tape"]
    c = len(SWEEP) // 2
    fd = (losses[c + 1] - losses[c - 1]) / (2 * h)
    fd2 = (losses[c + 2] - losses[c - 2]) / (4 * h)
    fit = np.polyval(np.polyfit(SWEEP, losses, 2), SWEEP)
    misfit = np.abs(losses - fit).max() / h  # in slope units
    problems = []
    if misfit > SMOOTH * abs(fd) + ATOL or abs(fd2 - fd) > 2 * SMOOTH * abs(fd) + ATOL:
        problems.append(f"not smooth here: losses {np.array2string(losses, precision=7)} depart from a quadratic by "
                        f"{misfit * h:.3g}; central differences {fd:.5g} (h) and {fd2:.5g} (2h)")
    if abs(fd) < 10 * ATOL:
        problems.append(f"the key barely matters here: d(loss) = {fd:.3g}")
    if abs(tape - fd) > RTOL * abs(fd) + ATOL:
        problems.append(f"tape {tape:.6g} vs finite difference {fd:.6g}")
    return problems


# ---------------------------------------------------------------------------------------------------- tests


def test_every_learnable_key_with_every_solver_has_a_row():
    """A key added to LEARNABLE (or a solver to SOLVERS) without a check or a refusal fails here."""
    assert set(SOLVERS) == {"semi_implicit", "xpbd", "rigid", "featherstone"}
    missing = [c for c in COMBINATIONS if c not in CHECKS and c not in REFUSED]
    assert not missing, f"no gradient check and no refusal for: {missing}"
    stale = [c for c in list(CHECKS) + list(REFUSED) if c not in COMBINATIONS]
    assert not stale, f"rows for keys that are not learnable: {stale}"
    assert not set(CHECKS) & set(REFUSED)


@pytest.mark.parametrize("solver,pattern", sorted(CHECKS), ids=[f"{s}:{p}" for s, p in sorted(CHECKS)])
def test_gradient_matches_finite_differences(solver, pattern, tmp_path):
    row = CHECKS[(solver, pattern)]
    result = sweep(_config(tmp_path, row.key, row.scene, row.object), row.step)
    problems = judge(result)
    assert not problems, f"{solver} {row.key}: " + "; ".join(problems)


@pytest.mark.parametrize("solver,pattern", sorted(REFUSED), ids=[f"{s}:{p}" for s, p in sorted(REFUSED)])
def test_refused_key_is_refused_at_config_load_with_the_reason(solver, pattern, tmp_path):
    key, scene = _refused_scene(solver, pattern)
    path = _config(tmp_path, key, scene, "cloth")
    with pytest.raises(SceneError, match=r"parameters\[0\]\.path") as err:
        Problem(load_config(path))
    assert REFUSED[(solver, pattern)] in str(err.value) and key in str(err.value)


def test_judge_fails_at_a_jump_and_at_a_kink():
    """The smoothness check is not vacuous: a step in the loss or in its slope inside the sweep is caught."""
    x = SWEEP * 0.01
    smooth = {"losses": 1.0 + 0.5 * x + 0.1 * x ** 2, "step": 0.01, "tape": 0.5}
    assert judge(smooth) == []
    jump = dict(smooth, losses=smooth["losses"] + 0.01 * (x > 0.025))
    kink = dict(smooth, losses=smooth["losses"] + 0.4 * np.maximum(x - 0.015, 0.0))
    assert any("not smooth" in p for p in judge(jump)) and any("not smooth" in p for p in judge(kink))


def test_the_table_in_docs_gradients_md_is_up_to_date():
    from tools import param_table
    with open(param_table.DOC_PATH, encoding="utf-8") as f:
        text = f.read()
    assert param_table.updated(text) == text, "docs/gradients.md is out of date: run python tools/param_table.py"


def test_time_constant_keys_are_refused_for_a_material_in_the_penalty_form(tmp_path):
    """A material given as ke/kd stores timeconst 0, which the contact law does not read: learning it would give
    a zero gradient, so it is refused with the reason."""
    for key in ("bodies.0.material.timeconst", "colliders.0.material.dampratio"):
        path = _config(tmp_path, key, rigid_scene("ground"), "ball")
        with pytest.raises(SceneError, match=r"parameters\[0\]\.path") as err:
            Problem(load_config(path))
        assert "penalty form" in str(err.value) and key in str(err.value)
