"""Build the articulation part of a validated scene (`joints`, `robot`; sim/scene/format_joints.py) into a
ModelBuilder: joints in tree order, initial coordinates, the imported robot and its per-joint settings, and
the bookkeeping the runner, the losses and `sim optimize` need (which model rows belong to which joint)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

import kernels as wp

from ..joints import JOINT_NAMES, JointDofConfig
from ..model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE
from .format_joints import WORLD, import_robot, read_visual_meshes


@dataclass
class SceneJoint:
    """A joint of the scene (or of its robot): `index` into the model's joint arrays; its axes are
    joint_qd[dof_start:dof_start + dof_count], its coordinates joint_q[coord_start:coord_start + coord_count]."""

    name: str
    kind: str  # revolute, prismatic, ball, fixed, free, d6
    index: int
    dof_start: int
    dof_count: int
    coord_start: int
    coord_count: int
    # control: generalized forces [N or N m] per frame, float shape [frames * dof_count]; None: no control
    forces: object = None
    force_frames: int = 0
    spec: object = None  # the scene's joints[] entry or robot.joints entry (None: not configured)
    world: int = 0  # the scene world it belongs to (sim.worlds)


@wp.kernel
def spread_joint_force(forces: wp.array(dtype=float), frame: int, count: int, start: int,
                       joint_f: wp.array(dtype=float)):
    k = wp.tid()
    joint_f[start + k] = forces[frame * count + k]


def _dof(axis, spec) -> JointDofConfig:
    """The JointDofConfig of an axis spec (a revolute/prismatic joint or a d6 axis)."""
    out = dict(axis=tuple(axis), armature=spec.armature, damping=spec.damping, friction=spec.friction)
    if spec.limits is not None:
        lim = spec.limits
        out.update(limit_ke=lim.ke, limit_kd=lim.kd)
        if lim.lower is not None:
            out["limit_lower"] = lim.lower
        if lim.upper is not None:
            out["limit_upper"] = lim.upper
    if spec.drive is not None:
        out.update(_drive_settings(spec.drive))
    return JointDofConfig(**out)


def _drive_settings(drive) -> dict:
    return dict(target_pos=drive.target_pos, target_vel=drive.target_vel, target_ke=drive.ke, target_kd=drive.kd,
                effort_limit=drive.effort_limit)


def _tree_order(joints) -> list:
    """Indices of the joint specs, depth first from each joint whose parent is the world (the solver walks
    each articulation's joints parents first)."""
    children: dict = {}
    for i, j in enumerate(joints):
        children.setdefault(j.parent, []).append(i)
    order, stack = [], list(reversed(children.get(WORLD, [])))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children.get(joints[i].child, [])))
    return order


def _add_joint(b, j, parent: int, child: int) -> int:
    anchors = dict(parent_xform=tuple(j.parent_anchor.pos) + tuple(j.parent_anchor.rot),
                   child_xform=tuple(j.child_anchor.pos) + tuple(j.child_anchor.rot))
    if j.type == "revolute":
        return b.add_joint_revolute(parent, child, **anchors, **_dof_kwargs(_dof(j.axis, j)))
    if j.type == "prismatic":
        return b.add_joint_prismatic(parent, child, **anchors, **_dof_kwargs(_dof(j.axis, j)))
    if j.type == "ball":
        return b.add_joint_ball(parent, child, armature=j.armature, friction=j.friction, damping=j.damping,
                                **anchors)
    if j.type == "fixed":
        return b.add_joint_fixed(parent, child, **anchors)
    if j.type == "free":
        return b.add_joint_free(child, parent=parent, **anchors)
    return b.add_joint_d6(parent, child, linear_axes=[_dof(a.axis, a) for a in j.linear_axes or []],
                          angular_axes=[_dof(a.axis, a) for a in j.angular_axes or []], **anchors)


def _dof_kwargs(cfg: JointDofConfig) -> dict:
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}


def _scene_joint(b, name: str, index: int, spec) -> SceneJoint:
    coord_end = b.joint_q_start[index + 1] if index + 1 < b.joint_count else b.joint_coord_count
    dof_start = b.joint_qd_start[index]
    return SceneJoint(name, JOINT_NAMES[b.joint_type[index]], index, dof_start, sum(b.joint_dof_dim[index]),
                      b.joint_q_start[index], coord_end - b.joint_q_start[index], spec=spec)


def _set_coordinates(b, joint: SceneJoint, spec):
    """Initial q and qd of a joint from its spec (validated for the joint's type)."""
    if spec is None:
        return
    if spec.q is not None:
        values = [float(v) for v in spec.q]
        b.joint_q[joint.coord_start:joint.coord_start + len(values)] = values
    if spec.qd is not None:
        b.joint_qd[joint.dof_start:joint.dof_start + joint.dof_count] = [float(v) for v in spec.qd]


def add_scene_joints(b, scene, body_index: dict) -> list:
    """Add the scene's `joints` (tree order, one articulation per root) to builder `b`; body_index maps body
    names to builder indices. Returns SceneJoints in the order of the scene's list."""
    out = [None] * len(scene.joints)
    for i in _tree_order(scene.joints):
        j = scene.joints[i]
        if j.parent == WORLD:
            b.add_articulation()
        parent = -1 if j.parent == WORLD else body_index[j.parent]
        index = _add_joint(b, j, parent, body_index[j.child])
        out[i] = _scene_joint(b, j.name, index, j)
        _set_coordinates(b, out[i], j)
    return out


def add_robot(b, scene) -> tuple:
    """Import the scene's robot into `b` and apply its per-joint settings; (SceneJoints of every imported joint
    by name, [(link name, body index)] one per body, {body index: its visual meshes as UsdWriter shapes})."""
    spec = scene.robot
    result, _ = import_robot(spec, scene.sim.up_axis, None, builder=b, gravity=scene.sim.gravity)
    meshes = spec.__dict__.get("visual_meshes")
    visuals = {}
    for k, mesh in enumerate(meshes if meshes is not None else read_visual_meshes(spec, result, None)):
        t = [float(v) for v in mesh.xform]
        visuals.setdefault(result.body[mesh.link], []).append(
            dict(kind="mesh", name=f"visual_{k}", pos=tuple(t[:3]), rot=tuple(t[3:]), points=mesh.points,
                 faces=mesh.triangles, scale=mesh.scale))
    joints = {}
    for name, index in result.joint.items():
        joint = _scene_joint(b, name, index, spec.joints.get(name))
        joints[name] = joint
        settings = spec.joints.get(name)
        if settings is None:
            continue
        if settings.drive is not None:
            k = joint.dof_start
            b.joint_dof_config[k] = dataclasses.replace(b.joint_dof_config[k], **_drive_settings(settings.drive))
        _set_coordinates(b, joint, settings)
    links, seen = [], set()
    for name, index in result.body.items():
        if index not in seen:  # links merged by collapse_fixed_joints share a body: the first name shows it
            seen.add(index)
            links.append((name, index))
    return joints, links, visuals


def body_shapes(b, body: int) -> list:
    """The shapes of builder body `body` as UsdWriter describes them (body frame)."""
    out = []
    for s, owner in enumerate(b.shape_body):
        if owner != body:
            continue
        t = [float(v) for v in b.shape_transform[s]]
        scale = [float(v) for v in b.shape_scale[s]]
        shape = dict(pos=tuple(t[:3]), rot=tuple(t[3:]))
        kind = b.shape_type[s]
        if kind == SHAPE_BOX:
            shape.update(kind="box", half_extents=tuple(scale))
        elif kind == SHAPE_SPHERE:
            shape.update(kind="sphere", radius=scale[0])
        elif kind == SHAPE_CAPSULE:
            shape.update(kind="capsule", radius=scale[0], half_height=scale[1])
        else:
            continue
        out.append(shape)
    return out


def upload_forces(joints: list, device, requires_grad: bool):
    """Put each joint's per-frame `forces` (from its spec) on `device`."""
    for j in joints:
        if j.spec is not None and j.spec.forces is not None:
            values = np.asarray(j.spec.forces, np.float32).reshape(-1)
            j.forces = wp.array(values, dtype=float, device=device, requires_grad=requires_grad)
            j.force_frames = len(j.spec.forces)


def initial_body_state(model):
    """Set the model's initial body poses and velocities from its initial joint coordinates (forward
    kinematics), so that frame 0 and every State agree with the joints."""
    from ..articulation import eval_fk

    class _Bodies:
        body_q, body_qd = model.body_q0, model.body_qd0

    eval_fk(model, model.joint_q, model.joint_qd, _Bodies)
