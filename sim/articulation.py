"""Joint kinematics of articulations: `eval_fk` (joint coordinates -> body poses and velocities), `eval_ik` (the
reverse), and the kernel functions they share with SolverFeatherstone.

Internally spatial quantities are in world coordinates referred to the world origin, angular part first: a
twist (w [rad/s], v [m/s]) where v is the velocity of the body point at the origin, and a wrench (torque about
the origin [N m], force [N]). State.body_qd keeps the toolkit's convention (w, velocity of the centre of mass).
"""

from __future__ import annotations

import kernels as wp

from .joints import JOINT_BALL, JOINT_FREE

FREE = wp.constant(JOINT_FREE)
BALL = wp.constant(JOINT_BALL)


@wp.struct
class JointData:
    """The model's joint arrays as kernels read them (see Model's joint section)."""

    type: wp.array(dtype=wp.int32)
    parent: wp.array(dtype=wp.int32)
    child: wp.array(dtype=wp.int32)
    X_p: wp.array(dtype=wp.transform)
    X_c: wp.array(dtype=wp.transform)
    axis: wp.array(dtype=wp.vec3)
    q_start: wp.array(dtype=wp.int32)
    qd_start: wp.array(dtype=wp.int32)
    dof_dim: wp.array2d(dtype=wp.int32)
    ancestor: wp.array(dtype=wp.int32)
    articulation_start: wp.array(dtype=wp.int32)


def joint_data(model) -> JointData:
    """The JointData of a model (rebuilt at each call, so replaced model arrays are seen)."""
    j = JointData()
    j.type, j.parent, j.child = model.joint_type, model.joint_parent, model.joint_child
    j.X_p, j.X_c, j.axis = model.joint_X_p, model.joint_X_c, model.joint_axis
    j.q_start, j.qd_start, j.dof_dim = model.joint_q_start, model.joint_qd_start, model.joint_dof_dim
    j.ancestor = model.joint_ancestor
    j.articulation_start = model.articulation_start
    return j


# ------------------------------------------------------------------------------------------------ joint functions


@wp.func
def parent_anchor(joints: JointData, body_q: wp.array(dtype=wp.transform), i: int):
    """World pose of joint i's parent anchor frame."""
    parent = joints.parent[i]
    if parent >= 0:
        return wp.transform_multiply(body_q[parent], joints.X_p[i])
    return joints.X_p[i]


@wp.func
def axis_displacement(joints: JointData, joint_q: wp.array(dtype=float), i: int):
    """Displacement [m] of joint i's child anchor along its linear axes, in the parent anchor frame."""
    qs = joints.q_start[i]
    ds = joints.qd_start[i]
    p = wp.vec3(0.0, 0.0, 0.0)
    for k in range(3):
        if k < joints.dof_dim[i, 0]:
            p = p + joints.axis[ds + k] * joint_q[qs + k]
    return p


@wp.func
def axis_rotation(joints: JointData, joint_q: wp.array(dtype=float), i: int, count: int):
    """Product of the rotations about the first `count` angular axes of joint i (each about its axis turned by
    the ones before it: intrinsic order), in the parent anchor frame."""
    lin = joints.dof_dim[i, 0]
    qs = joints.q_start[i] + lin
    ds = joints.qd_start[i] + lin
    r = wp.quat_identity()
    for k in range(3):
        if k < count:
            r = r * wp.quat_from_axis_angle(joints.axis[ds + k], joint_q[qs + k])
    return r


@wp.func
def joint_transform(joints: JointData, joint_q: wp.array(dtype=float), i: int):
    """Pose of joint i's child anchor in its parent anchor frame for the coordinates joint_q."""
    qs = joints.q_start[i]
    t = joints.type[i]
    if t == FREE:
        r = wp.quat(joint_q[qs + 3], joint_q[qs + 4], joint_q[qs + 5], joint_q[qs + 6])
        return wp.transform(wp.vec3(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2]), wp.normalize(r))
    if t == BALL:
        r = wp.quat(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2], joint_q[qs + 3])
        return wp.transform(wp.vec3(0.0, 0.0, 0.0), wp.normalize(r))
    return wp.transform(axis_displacement(joints, joint_q, i), axis_rotation(joints, joint_q, i, joints.dof_dim[i, 1]))


@wp.func
def dof_motion(joints: JointData, joint_q: wp.array(dtype=float), X_wpj: wp.transform, com: wp.vec3, i: int,
               k: int):
    """Motion subspace of joint i's k-th degree of freedom: the twist (world, origin-referred) of the child per
    unit velocity. Linear axes: (0, axis). Angular axes: a rotation about the axis through the joint centre (the
    parent anchor for ball joints, the displaced anchor for revolute and D6 joints) or, for a free joint, through
    the child's centre of mass `com` [m] (world)."""
    q_wpj = wp.transform_get_rotation(X_wpj)
    lin = joints.dof_dim[i, 0]
    local = joints.axis[joints.qd_start[i] + k]
    if k < lin:
        return wp.spatial_vector(wp.vec3(0.0, 0.0, 0.0), wp.quat_rotate(q_wpj, local))
    t = joints.type[i]
    center = com
    if t == BALL:
        center = wp.transform_get_translation(X_wpj)
    elif t != FREE:
        center = wp.transform_point(X_wpj, axis_displacement(joints, joint_q, i))
        local = wp.quat_rotate(axis_rotation(joints, joint_q, i, k - lin), local)
    a = wp.quat_rotate(q_wpj, local)
    return wp.spatial_vector(a, wp.cross(center, a))


@wp.func
def twist_at_origin(pose: wp.transform, com_local: wp.vec3, qd: wp.spatial_vector):
    """The origin-referred twist of a body from its body_qd (w, velocity of the centre of mass)."""
    w = wp.spatial_top(qd)
    c = wp.transform_point(pose, com_local)
    return wp.spatial_vector(w, wp.spatial_bottom(qd) - wp.cross(w, c))


@wp.func
def body_velocity(twist: wp.spatial_vector, com: wp.vec3):
    """body_qd (w, velocity of the centre of mass at world point com) of an origin-referred twist."""
    w = wp.spatial_top(twist)
    return wp.spatial_vector(w, wp.spatial_bottom(twist) + wp.cross(w, com))


# ------------------------------------------------------------------------------------------------ kernels


@wp.func
def joint_offset(joints: JointData, joint_q: wp.array(dtype=float), i: int):
    """Pose of joint i's child body frame in its parent body's frame (in world for a root joint)."""
    X = wp.transform_multiply(joints.X_p[i], joint_transform(joints, joint_q, i))
    return wp.transform_multiply(X, wp.transform_inverse(joints.X_c[i]))


@wp.kernel
def eval_joint_offsets(joints: JointData, joint_q: wp.array(dtype=float), X_local: wp.array(dtype=wp.transform)):
    """X_local[i]: pose of joint i's child body in its parent body's frame (in world for a root joint), shape
    [joint_count] (one thread per joint)."""
    i = wp.tid()
    X_local[i] = joint_offset(joints, joint_q, i)


@wp.func
def parent_pose(joints: JointData, X_local: wp.array(dtype=wp.transform), i: int):
    """World pose of joint i's parent body (identity for a root joint): the offsets of its ancestor joints
    composed. Kernels run one thread per joint and walk up the tree (work ~ depth) rather than down it, so that
    no kernel reads a pose it wrote; each step of the walk is one product of stored offsets."""
    X = wp.transform_identity()
    j = joints.ancestor[i]
    while j >= 0:
        X = wp.transform_multiply(X_local[j], X)
        j = joints.ancestor[j]
    return X


@wp.func
def joint_twist(joints: JointData, joint_q: wp.array(dtype=float), joint_qd: wp.array(dtype=float),
                X_parent: wp.transform, com: wp.vec3, i: int):
    """Twist (origin-referred) of joint i's child relative to its parent, S qd, for the parent body's world pose
    X_parent and the child's centre of mass com [m] (world)."""
    X_wpj = wp.transform_multiply(X_parent, joints.X_p[i])
    ds = joints.qd_start[i]
    v = wp.spatial_vector()
    for k in range(joints.qd_start[i + 1] - ds):
        v = v + dof_motion(joints, joint_q, X_wpj, com, i, k) * joint_qd[ds + k]
    return v


@wp.kernel
def eval_poses_and_twists(joints: JointData, joint_q: wp.array(dtype=float), joint_qd: wp.array(dtype=float),
                          X_local: wp.array(dtype=wp.transform), body_com: wp.array(dtype=wp.vec3),
                          body_q: wp.array(dtype=wp.transform), v_j: wp.array(dtype=wp.spatial_vector)):
    """body_q of joint i's child from the offsets (eval_joint_offsets), and v_j[i], its twist relative to its
    parent (one thread per joint)."""
    i = wp.tid()
    child = joints.child[i]
    X_parent = parent_pose(joints, X_local, i)
    X = wp.transform_multiply(X_parent, X_local[i])
    body_q[child] = X
    v_j[i] = joint_twist(joints, joint_q, joint_qd, X_parent, wp.transform_point(X, body_com[child]), i)


@wp.kernel
def eval_velocities(joints: JointData, v_j: wp.array(dtype=wp.spatial_vector), body_q: wp.array(dtype=wp.transform),
                    body_com: wp.array(dtype=wp.vec3), body_qd: wp.array(dtype=wp.spatial_vector)):
    """body_qd (w, velocity of the centre of mass) of joint i's child: the sum of the joint twists v_j along its
    chain (one thread per joint)."""
    i = wp.tid()
    child = joints.child[i]
    v = v_j[i]
    j = joints.ancestor[i]
    while j >= 0:
        v = v + v_j[j]
        j = joints.ancestor[j]
    body_qd[child] = body_velocity(v, wp.transform_point(body_q[child], body_com[child]))


@wp.kernel
def eval_ik_kernel(joints: JointData, body_q: wp.array(dtype=wp.transform),
                   body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                   joint_q: wp.array(dtype=float), joint_qd: wp.array(dtype=float)):
    """Joint coordinates and velocities of joint i from the poses and velocities of its two bodies."""
    i = wp.tid()
    parent = joints.parent[i]
    child = joints.child[i]
    X_wpj = parent_anchor(joints, body_q, i)
    X_wcj = wp.transform_multiply(body_q[child], joints.X_c[i])
    X_j = wp.transform_multiply(wp.transform_inverse(X_wpj), X_wcj)
    com = wp.transform_point(body_q[child], body_com[child])
    v_rel = twist_at_origin(body_q[child], body_com[child], body_qd[child])
    if parent >= 0:
        v_rel = v_rel - twist_at_origin(body_q[parent], body_com[parent], body_qd[parent])
    w_rel = wp.spatial_top(v_rel)
    q_wpj = wp.transform_get_rotation(X_wpj)
    qs = joints.q_start[i]
    ds = joints.qd_start[i]
    t = joints.type[i]
    p = wp.transform_get_translation(X_j)
    r = wp.transform_get_rotation(X_j)
    if t == FREE or t == BALL:
        n = 0
        if t == FREE:
            n = 3
            v_com = wp.quat_rotate_inv(q_wpj, wp.spatial_bottom(v_rel) + wp.cross(w_rel, com))
            for k in range(3):
                joint_q[qs + k] = p[k]
                joint_qd[ds + k] = v_com[k]
        w_local = wp.quat_rotate_inv(q_wpj, w_rel)
        for k in range(4):
            joint_q[qs + n + k] = r[k]
        for k in range(3):
            joint_qd[ds + n + k] = w_local[k]
        return
    # axis joints (orthonormal linear axes; at most one angular axis is recovered exactly)
    lin = joints.dof_dim[i, 0]
    origin = wp.transform_get_translation(X_wcj)
    v_lin = wp.spatial_bottom(v_rel) - wp.cross(origin, w_rel)
    for k in range(joints.dof_dim[i, 0] + joints.dof_dim[i, 1]):
        axis = joints.axis[ds + k]
        if k < lin:
            joint_q[qs + k] = wp.dot(p, axis)
            joint_qd[ds + k] = wp.dot(v_lin, wp.quat_rotate(q_wpj, axis))
        else:
            s = wp.dot(wp.vec3(r[0], r[1], r[2]), axis)
            joint_q[qs + k] = 2.0 * wp.atan2(s, r[3])
            joint_qd[ds + k] = wp.dot(w_rel, wp.quat_rotate(q_wpj, axis))


def eval_fk(model, joint_q, joint_qd, state):
    """Body poses and velocities of `state` (State.body_q, State.body_qd in the toolkit's convention: angular
    velocity, then the centre of mass's velocity, world frame) from joint coordinates `joint_q` [m, rad,
    quaternions], shape [joint_coord_count], and velocities `joint_qd` [m/s, rad/s], shape [joint_dof_count].
    Bodies that are the child of no joint are left as they are. Differentiable (record it on a Tape)."""
    if model.joint_count == 0:
        return
    launch_fk(model, joint_data(model), joint_q, joint_qd, state, joint_scratch(model))


def joint_scratch(model):
    """(X_local, v_j): the per-joint intermediates of launch_fk, shape [joint_count] each."""
    return (wp.zeros(model.joint_count, dtype=wp.transform, device=model.device, requires_grad=model.requires_grad),
            wp.zeros(model.joint_count, dtype=wp.spatial_vector, device=model.device,
                     requires_grad=model.requires_grad))


def launch_fk(model, joints: JointData, joint_q, joint_qd, state, scratch, offsets_done: bool = False):
    """eval_fk with the model's JointData already built and the intermediates `scratch` (joint_scratch) given
    (solvers keep theirs); `offsets_done`: scratch's X_local already holds the offsets of joint_q."""
    if model.joint_count == 0:
        return
    X_local, v_j = scratch
    n, device = model.joint_count, model.device
    if not offsets_done:
        wp.launch(eval_joint_offsets, dim=n, inputs=[joints, joint_q], outputs=[X_local], device=device)
    wp.launch(eval_poses_and_twists, dim=n, inputs=[joints, joint_q, joint_qd, X_local, model.body_com],
              outputs=[state.body_q, v_j], device=device)
    wp.launch(eval_velocities, dim=n, inputs=[joints, v_j, state.body_q, model.body_com], outputs=[state.body_qd],
              device=device)


def eval_ik(model, state, joint_q, joint_qd):
    """Joint coordinates `joint_q` and velocities `joint_qd` (written) from the body poses and velocities of
    `state`: the inverse of eval_fk where the bodies satisfy the joints (angles as the rotation's angle about
    the axis, within +-2 pi; the quaternions of ball and free joints up to sign). D6 joints with
    more than one angular axis are recovered only when the angles are small (each angle from the rotation's
    component along its axis); linear axes are assumed orthonormal."""
    if model.joint_count == 0:
        return
    wp.launch(eval_ik_kernel, dim=model.joint_count,
              inputs=[joint_data(model), state.body_q, state.body_qd, model.body_com], outputs=[joint_q, joint_qd],
              device=model.device)
