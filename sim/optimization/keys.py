"""The key table of `sim optimize`: every learnable scene key pattern (learnable.LEARNABLE) mapped to the model or
initial-state arrays it writes and how (assign.Target), by one resolver per kind of key. A key path is resolved
in two steps: its subject (the object, material, collider, body or joint it names, checked to exist), then the
table's entry for its pattern, which makes the Targets, the initial value and its shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import kernels as wp

from .assign import Target
from .learnable import (CLOTH_MATERIAL_KEYS, COLLIDER_KEYS, JOINT_KEYS, LEARNABLE, PARTICLE_KEYS,
                        RIGID_MATERIAL_KEYS, learnable_summary, pattern_of)

# cloth material key -> (model array, column or None)
MATERIAL_TARGETS = {"tri_ke": ("tri_materials", 0), "tri_ka": ("tri_materials", 1), "tri_kd": ("tri_materials", 2),
                    "edge_ke": ("edge_bending_properties", 0), "edge_kd": ("edge_bending_properties", 1),
                    "spring_ke": ("spring_stiffness", None), "spring_kd": ("spring_damping", None)}
RANGE_OF = {"tri_materials": "tri_range", "edge_bending_properties": "edge_range", "spring_stiffness": "spring_range",
            "spring_damping": "spring_range"}
#: drive key -> the model's per-axis array
DRIVE_TARGETS = {"target_pos": "joint_target_pos", "target_vel": "joint_target_vel", "ke": "joint_target_ke",
                 "kd": "joint_target_kd"}
#: rigid material keys of the time-constant normal force, not read in a shape given the penalty form (ke, kd)
TIME_CONSTANT_KEYS = ("timeconst", "dampratio")


@dataclass
class KeyContext:
    """One key being resolved: its path split at dots, the validated scene spec, the built scene, `fail` (raises
    the config error), the number of frames, and the subject the key names (see `subject`)."""

    parts: list
    scene: object
    built: object
    fail: Callable
    frames: int
    subject: object = None


@dataclass(frozen=True)
class Key:
    """A table entry: `resolve(ctx, *args)` -> (targets, initial value, shape); `args` say which array."""

    resolve: Callable
    args: tuple = ()


# ---------------------------------------------------------------------------------------------------- subjects


def subject(ctx: KeyContext):
    """What the key's leading parts name, checked to exist: (spec, SceneObject) of a cloth or particle object,
    the objects using a named material, a collider's index, a SceneBody, a SceneJoint; None for `sim.*`."""
    parts, scene, built, fail = ctx.parts, ctx.scene, ctx.built, ctx.fail
    head = parts[0]
    if head in ("cloth", "particles") and len(parts) >= 3:
        specs = scene.cloth if head == "cloth" else scene.particles
        i = parts[1]
        if not isinstance(i, int) or i >= len(specs):
            fail(f"no {head} object {i} (the scene has {len(specs)})")
        return specs[i], built.objects[(0 if head == "cloth" else len(scene.cloth)) + i]
    if head == "materials" and len(parts) == 3:
        name = parts[1]
        if name not in scene.materials:
            fail(f"no material named '{name}'")
        users = [built.objects[i] for i, c in enumerate(scene.cloth) if c.material == name]
        if not users:
            fail(f"no cloth uses material '{name}'")
        return users
    indexed = {"colliders": ("collider", scene.colliders, None), "bodies": ("body", scene.bodies, built.bodies),
               "joints": ("joint", scene.joints, built.joints)}
    if head in indexed and len(parts) >= 3:
        what, specs, built_items = indexed[head]
        i = parts[1]
        if not isinstance(i, int) or i >= len(specs):
            fail(f"no {what} {i} (the scene has {len(specs)})")
        return i if built_items is None else built_items[i]
    if parts[:2] == ["robot", "joints"] and len(parts) >= 4 and scene.robot is not None:
        joint = built.joint(str(parts[2]))
        if joint is None:
            fail(f"no joint named '{parts[2]}' in the robot")
        return joint
    return None


def _unknown(ctx: KeyContext):
    """The error for a key whose subject exists but whose pattern is not in the table: what is learnable there."""
    pattern = pattern_of(ctx.parts)
    groups = {"cloth.N.material.": ("unknown material key", CLOTH_MATERIAL_KEYS),
              "materials.NAME.": ("unknown material key", CLOTH_MATERIAL_KEYS),
              "colliders.N.material.": ("unknown material key", RIGID_MATERIAL_KEYS),
              "bodies.N.material.": ("unknown material key", RIGID_MATERIAL_KEYS),
              "bodies.N.": ("not learnable for a body", [p[len("bodies.N."):] for p in LEARNABLE
                                                         if p.startswith("bodies.N.")]),
              "joints.N.": ("not learnable for a joint", JOINT_KEYS),
              "robot.joints.NAME.": ("not learnable for a joint", JOINT_KEYS),
              "colliders.N.": ("not learnable for a collider", COLLIDER_KEYS)}
    for prefix, (what, keys) in groups.items():
        if pattern.startswith(prefix) and ctx.subject is not None:
            ctx.fail(f"{what} (learnable: {', '.join(keys)})")
    ctx.fail(f"not a learnable parameter (learnable: {learnable_summary()}). The other contact settings, gravity, "
             "counts and time stepping are constants of the solvers' kernels and have no gradient")


# ---------------------------------------------------------------------------------------------------- resolvers


def _one(owner: str, array: str, how: str, row: int, initial, shape=(), **extra) -> tuple:
    """A single-row target reading variable entry 0."""
    return [Target(owner, array, how, np.array([row]), np.array([0]), **extra)], np.asarray(initial), shape


def _particle_velocity(ctx: KeyContext):
    spec, obj = ctx.subject
    if spec.velocities is not None:
        ctx.fail("the object sets per-particle `velocities`: learn those instead")
    rows = np.arange(obj.start, obj.stop)
    return [Target("state", "particle_qd", "vec3", rows, np.zeros(len(rows), int))], np.array(spec.vel), (3,)


def _particle_velocities(ctx: KeyContext):
    _, obj = ctx.subject
    init = ctx.built.model.particle_qd.numpy()[obj.start:obj.stop].astype(np.float64)
    rows = np.arange(obj.start, obj.stop)
    return [Target("state", "particle_qd", "vec3", rows, 3 * np.arange(len(rows)))], init, (obj.count, 3)


def _particle_mass(ctx: KeyContext):
    spec, obj = ctx.subject
    if ctx.parts[0] == "cloth" and spec.grid is None:
        ctx.fail("a mesh cloth's mass comes from its density, which is not learnable; use a grid")
    mass = ctx.built.model.particle_mass.numpy()[obj.start:obj.stop]
    free = np.arange(obj.start, obj.stop)[mass > 0]
    return [Target("model", "particle_mass", "float", free, np.zeros(len(free), int))], \
        np.array([mass[mass > 0][0]]), ()


def _object_forces(ctx: KeyContext):
    _, obj = ctx.subject
    if obj.forces is None:
        ctx.fail("the object has no `forces` list in the scene: add one (a force per frame) to learn it")
    frames = obj.forces.shape[0]
    init = obj.forces.numpy().astype(np.float64)
    return [Target("object", "forces", "vec3", np.arange(frames), 3 * np.arange(frames), obj=obj)], init, \
        (frames, 3)


def _cloth_material(ctx: KeyContext, array: str, column):
    """A material key of one cloth (`cloth.N.material.K`, its own material) or of every cloth using a named one
    (`materials.NAME.K`): the rows of its triangles, edges or springs."""
    if ctx.parts[0] == "cloth":
        spec, obj = ctx.subject
        if isinstance(spec.material, str):
            ctx.fail(f"the cloth uses the named material '{spec.material}': learn materials.{spec.material}."
                     f"{ctx.parts[3]}")
        objects = [obj]
    else:
        objects = ctx.subject
    rows = np.concatenate([np.arange(*getattr(o, RANGE_OF[array])) for o in objects])
    if len(rows) == 0:
        ctx.fail(f"the cloth has no {array.split('_')[0]} entries for {ctx.parts[-1]} to act on (is the term "
                 "enabled?)")
    data = getattr(ctx.built.model, array).numpy()
    initial = data[rows[0]] if column is None else data[rows[0], column]
    how = "float" if column is None else "column"
    return [Target("model", array, how, rows, np.zeros(len(rows), int), column or 0)], np.array([initial]), ()


def _rigid_material(ctx: KeyContext, key: str):
    """A contact material key of a collider's shape or of a body's shapes (Model.shape_material_KEY)."""
    rows = np.asarray([ctx.built.collider_shapes[ctx.subject]] if ctx.parts[0] == "colliders" else
                      ctx.subject.shape_rows, int)
    model = ctx.built.model
    if key in TIME_CONSTANT_KEYS and np.any(model.shape_material_timeconst.numpy()[rows] <= 0):
        ctx.fail(f"the material gives ke/kd (the penalty form of the normal force), which does not read {key}; "
                 "give it timeconst/dampratio instead to learn them")
    array = f"shape_material_{key}"
    return [Target("model", array, "float", rows, np.zeros(len(rows), int))], \
        np.array([getattr(model, array).numpy()[rows[0]]]), ()


def _body_mass(ctx: KeyContext):
    """A body's mass, its inertia scaled with it (the shape stays)."""
    body, m = ctx.subject, ctx.built.model
    mass = float(m.body_mass.numpy()[body.index])
    if mass <= 0:
        ctx.fail("the body has no mass to scale")
    rows, inertia = np.array([body.index]), m.body_inertia.numpy()[body.index:body.index + 1]
    return [Target("model", "body_mass", "float", rows, np.array([0])),
            Target("model", "body_inertia", "scaled_matrix", rows, np.array([0]), base=inertia,
                   factor=1.0 / mass)], np.array([mass]), ()


def _body_velocity(ctx: KeyContext, part: int):
    """A body's initial angular (part 0) or linear (part 1) velocity: half of its spatial velocity."""
    index = ctx.subject.index
    qd = ctx.built.model.body_qd0.numpy()[index:index + 1].astype(np.float32)
    initial = qd[0, 3:] if part == 1 else qd[0, :3]
    return _one("state", "body_qd", "spatial_part", index, initial.astype(np.float64), (3,), column=part, base=qd)


def _revolute_or_prismatic(ctx: KeyContext, what: str):
    joint = ctx.subject
    if joint.kind not in ("revolute", "prismatic"):
        ctx.fail(f"'{joint.name}' is a {joint.kind} joint: {what} learnable for revolute and prismatic joints")
    return joint


def _joint_coordinate(ctx: KeyContext, array: str):
    """A joint's initial coordinate (`q` [m, rad]) or velocity (`qd` [m/s, rad/s])."""
    joint = _revolute_or_prismatic(ctx, "q and qd are")
    row = joint.coord_start if array == "joint_q" else joint.dof_start
    return _one("state", array, "float", row, [getattr(ctx.built.model, array).numpy()[row]])


def _joint_forces(ctx: KeyContext):
    """A joint's per-frame forces, shape [frames] for one axis, else [frames, axes]; learned from zero, one entry
    per simulated frame, when the scene gives none."""
    joint, built = ctx.subject, ctx.built
    if joint.dof_count == 0:
        ctx.fail(f"'{joint.name}' is a {joint.kind} joint: it has no axes to push")
    if joint.forces is None:
        joint.forces = wp.zeros(ctx.frames * joint.dof_count, dtype=float, device=built.model.device,
                                requires_grad=True)
        joint.force_frames = ctx.frames
    n = joint.forces.shape[0]
    shape = (joint.force_frames,) if joint.dof_count == 1 else (joint.force_frames, joint.dof_count)
    return [Target("object", "forces", "float", np.arange(n), np.arange(n), obj=joint)], \
        joint.forces.numpy().astype(np.float64), shape


def _joint_drive(ctx: KeyContext, array: str):
    joint = _revolute_or_prismatic(ctx, "drive keys are")
    return _one("model", array, "float", joint.dof_start, [getattr(ctx.built.model, array).numpy()[joint.dof_start]])


def _collider_geometry(ctx: KeyContext, key: str):
    """A collider's position, rotation (a quaternion (x, y, z, w), normalised when applied) or size."""
    c = ctx.scene.colliders[ctx.subject]
    m = ctx.built.model
    i = ctx.built.collider_shapes[ctx.subject]  # the collider's row of the model's shape arrays
    if key == "pos" and c.type != "ground":
        rotation = np.asarray(m.shape_transform.numpy()[i, 3:], np.float32).reshape(1, 4)
        return _one("model", "shape_transform", "position", i, c.pos, (3,), rotation=rotation)
    if key == "rot" and c.type not in ("ground", "sphere"):
        position = np.asarray(m.shape_transform.numpy()[i, :3], np.float32).reshape(1, 3)
        return _one("model", "shape_transform", "rotation", i, c.rot, (4,), base=position)
    scale = m.shape_scale.numpy()
    component = {("sphere", "radius"): 0, ("capsule", "radius"): 0, ("capsule", "half_height"): 1}.get((c.type, key))
    if component is not None:
        return _one("model", "shape_scale", "vec3_component", i, [scale[i, component]], column=component,
                    base=scale[i:i + 1].astype(np.float32))
    if c.type == "box" and key == "half_extents":
        return _one("model", "shape_scale", "vec3", i, scale[i].astype(np.float64), (3,))
    ctx.fail(f"not learnable for a {c.type} collider")


def _soft_contact_mu(ctx: KeyContext):
    # Model.soft_contact_mu is the array the particle solvers read (the struct's float has no gradient)
    return _one("model", "soft_contact_mu", "float", 0, [ctx.scene.sim.contact.mu])


#: learnable key pattern -> its resolver and the array it writes
KEYS = {
    **{f"{group}.N.{key}": Key(resolver) for group in ("cloth", "particles") for key, resolver in
       zip(PARTICLE_KEYS, (_particle_velocity, _particle_velocities, _particle_mass, _object_forces))},
    **{f"{prefix}.{k}": Key(_cloth_material, MATERIAL_TARGETS[k]) for k in CLOTH_MATERIAL_KEYS
       for prefix in ("cloth.N.material", "materials.NAME")},
    **{f"{group}.N.material.{k}": Key(_rigid_material, (k,)) for k in RIGID_MATERIAL_KEYS
       for group in ("bodies", "colliders")},
    "bodies.N.mass": Key(_body_mass),
    "bodies.N.vel": Key(_body_velocity, (1,)),
    "bodies.N.angular_vel": Key(_body_velocity, (0,)),
    **{f"{group}.q": Key(_joint_coordinate, ("joint_q",)) for group in ("joints.N", "robot.joints.NAME")},
    **{f"{group}.qd": Key(_joint_coordinate, ("joint_qd",)) for group in ("joints.N", "robot.joints.NAME")},
    **{f"{group}.forces": Key(_joint_forces) for group in ("joints.N", "robot.joints.NAME")},
    **{f"{group}.drive.{k}": Key(_joint_drive, (array,)) for k, array in DRIVE_TARGETS.items()
       for group in ("joints.N", "robot.joints.NAME")},
    **{f"colliders.N.{k}": Key(_collider_geometry, (k,)) for k in COLLIDER_KEYS},
    "sim.contact.mu": Key(_soft_contact_mu),
}


def targets_of(ctx: KeyContext) -> tuple:
    """(targets, initial value, shape) of the key in `ctx` (its subject checked first, then its pattern)."""
    ctx.subject = subject(ctx)
    entry = KEYS.get(pattern_of(ctx.parts))
    if entry is None or (ctx.subject is None and not ctx.parts[0] == "sim"):
        _unknown(ctx)
    return entry.resolve(ctx, *entry.args)
