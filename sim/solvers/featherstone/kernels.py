"""Kernels of SolverFeatherstone: kinematics and bias forces (recursive Newton-Euler), joint forces, the
composite-rigid-body mass matrix, and the integration of joint coordinates.

One thread per articulation walks its joints in order (parents first) or in reverse. Spatial quantities are in
world coordinates referred to the world origin (see sim/articulation.py): twists (w, v_origin), wrenches
(torque about the origin, force). A spatial inertia about the origin is kept as (A, h, m): A the rotational
block (inertia about the origin) [kg m^2], h = m c the first moment [kg m] and m the mass [kg]; sums of
inertias (composite bodies) keep that form.
"""

import kernels as wp

from ...articulation import BALL, FREE, JointData, dof_motion, joint_offset, parent_pose


@wp.struct
class JointDrive:
    """Per-degree-of-freedom parameters of the joint forces (Model.joint_*, Control), shape [joint_dof_count]."""

    limit_lower: wp.array(dtype=float)
    limit_upper: wp.array(dtype=float)
    limit_ke: wp.array(dtype=float)
    limit_kd: wp.array(dtype=float)
    target_ke: wp.array(dtype=float)
    target_kd: wp.array(dtype=float)
    effort_limit: wp.array(dtype=float)
    damping: wp.array(dtype=float)
    target_pos: wp.array(dtype=float)
    target_vel: wp.array(dtype=float)
    joint_f: wp.array(dtype=float)


@wp.struct
class ArticulatedBodies:
    """Intermediates of a step (fresh arrays each step, so that a Tape can differentiate it). Per joint i
    [joint_count]: v_j, the twist of its child relative to its parent, and c, the apparent derivative of its
    motion subspace times qd. Per body [body_count]: its inertia (A, h) about the origin, and its subtree's
    composite inertia (cA, ch, cm) and bias wrench cf (inertial forces and gravity minus external wrenches, summed
    over the body and its descendants). Per dof [joint_dof_count]: the motion subspace S."""

    v_j: wp.array(dtype=wp.spatial_vector)
    c: wp.array(dtype=wp.spatial_vector)
    A: wp.array(dtype=wp.mat33)
    h: wp.array(dtype=wp.vec3)
    cA: wp.array(dtype=wp.mat33)
    ch: wp.array(dtype=wp.vec3)
    cm: wp.array(dtype=float)
    cf: wp.array(dtype=wp.spatial_vector)
    S: wp.array(dtype=wp.spatial_vector)


@wp.func
def inertia_times(A: wp.mat33, h: wp.vec3, m: float, v: wp.spatial_vector):
    """The momentum (angular about the origin, linear) of a twist v for the spatial inertia (A, h, m)."""
    w = wp.spatial_top(v)
    vo = wp.spatial_bottom(v)
    return wp.spatial_vector(A * w + wp.cross(h, vo), vo * m - wp.cross(h, w))


@wp.func
def joint_bias(joints: JointData, S: wp.array(dtype=wp.spatial_vector), joint_qd: wp.array(dtype=float),
               X_wc: wp.transform, i: int):
    """(v_j, c): joint i's twist S qd and the apparent derivative of its motion subspace, (dS/dt) qd, beyond
    the motion of the parent: angular axes turned by earlier ones (D6) and centres moved by linear axes."""
    ds = joints.qd_start[i]
    lin = joints.dof_dim[i, 0]
    v_j = wp.spatial_vector()
    v_lin = wp.vec3(0.0, 0.0, 0.0)
    w_ang = wp.vec3(0.0, 0.0, 0.0)
    c_ang = wp.vec3(0.0, 0.0, 0.0)
    for k in range(joints.qd_start[i + 1] - ds):
        s = S[ds + k] * joint_qd[ds + k]
        v_j = v_j + s
        if k < lin:
            v_lin = v_lin + wp.spatial_bottom(s)
        else:
            c_ang = c_ang + wp.cross(w_ang, wp.spatial_top(s))
            w_ang = w_ang + wp.spatial_top(s)
    if joints.type[i] == BALL or joints.type[i] == FREE:
        c_ang = wp.vec3(0.0, 0.0, 0.0)  # their axes do not turn each other
    # the centre of the angular axes (D6 and revolute: the displaced anchor; free: the centre of mass) moves
    # with v_lin
    center = wp.transform_get_translation(wp.transform_multiply(X_wc, joints.X_c[i]))
    return v_j, wp.spatial_vector(c_ang, wp.cross(v_lin, w_ang) + wp.cross(center, c_ang))


@wp.kernel
def eval_joint_motion(joints: JointData, joint_q: wp.array(dtype=float), joint_qd: wp.array(dtype=float),
                      X_local: wp.array(dtype=wp.transform), body_com: wp.array(dtype=wp.vec3),
                      body_mass: wp.array(dtype=float), body_inertia: wp.array(dtype=wp.mat33),
                      body_q: wp.array(dtype=wp.transform), bodies: ArticulatedBodies):
    """Joint i at the offsets X_local (sim.articulation.eval_joint_offsets): the pose body_q of its child, the
    motion subspaces S of its dofs, its twist v_j = S qd and the apparent derivative c, and the inertia (A, h)
    of its child about the origin."""
    i = wp.tid()
    child = joints.child[i]
    X_parent = parent_pose(joints, X_local, i)
    X_wc = wp.transform_multiply(X_parent, X_local[i])
    body_q[child] = X_wc
    X_wpj = wp.transform_multiply(X_parent, joints.X_p[i])
    com = wp.transform_point(X_wc, body_com[child])
    ds = joints.qd_start[i]
    for k in range(joints.qd_start[i + 1] - ds):
        bodies.S[ds + k] = dof_motion(joints, joint_q, X_wpj, com, i, k)
    v_j, c = joint_bias(joints, bodies.S, joint_qd, X_wc, i)
    bodies.v_j[i] = v_j
    bodies.c[i] = c
    m = body_mass[child]
    R = wp.quat_to_matrix(wp.transform_get_rotation(X_wc))
    C = wp.skew(com)
    bodies.A[child] = R * body_inertia[child] * wp.transpose(R) - C * C * m
    bodies.h[child] = com * m


@wp.kernel
def eval_bias_wrenches(joints: JointData, body_q: wp.array(dtype=wp.transform), body_com: wp.array(dtype=wp.vec3),
                       body_mass: wp.array(dtype=float), body_f_ext: wp.array(dtype=wp.spatial_vector),
                       body_f_contact: wp.array(dtype=wp.spatial_vector), gravity: wp.vec3, bodies: ArticulatedBodies):
    """Recursive Newton-Euler for joint i's child, walking its chain up: its twist v (the sum of the joint
    twists), its velocity-product acceleration a (the sum of c_k + v_k x v_j,k), its bias wrench
    I a + v x* I v - gravity - external (applied and contact wrenches, given about the centre of mass), which
    with its inertia is added to the subtree sums (cf, cA, ch, cm) of the body and of every ancestor."""
    i = wp.tid()
    child = joints.child[i]
    v = bodies.v_j[i]
    j = joints.ancestor[i]
    while j >= 0:
        v = v + bodies.v_j[j]
        j = joints.ancestor[j]
    # a = sum over the chain of c_k + v_k x v_j,k, with v_k the twist of joint k's child
    a = wp.spatial_vector()
    v_k = v
    j = i
    while j >= 0:
        a = a + bodies.c[j] + wp.spatial_cross(v_k, bodies.v_j[j])
        v_k = v_k - bodies.v_j[j]
        j = joints.ancestor[j]
    m = body_mass[child]
    A = bodies.A[child]
    h = bodies.h[child]
    com = wp.transform_point(body_q[child], body_com[child])
    f = inertia_times(A, h, m, a) + wp.spatial_cross_dual(v, inertia_times(A, h, m, v))
    g = gravity * m
    f = f - wp.spatial_vector(wp.cross(com, g), g)
    ext = wp.spatial_vector()
    if body_f_ext.shape[0] > 0:
        ext = ext + body_f_ext[child]
    if body_f_contact.shape[0] > 0:
        ext = ext + body_f_contact[child]
    force = wp.spatial_bottom(ext)
    f = f - wp.spatial_vector(wp.spatial_top(ext) + wp.cross(com, force), force)
    j = i
    while j >= 0:
        body = joints.child[j]
        wp.atomic_add(bodies.cf, body, f)
        wp.atomic_add(bodies.cA, body, A)
        wp.atomic_add(bodies.ch, body, h)
        wp.atomic_add(bodies.cm, body, m)
        j = joints.ancestor[j]


@wp.func
def axis_force(d: int, q: float, qd: float, drive: JointDrive):
    """Generalized force [N or N m] on an axis: the PD drive (clamped to the effort limit), the limits'
    penalty springs and dampers, passive damping and the applied joint_f."""
    tau = drive.joint_f[d] - drive.damping[d] * qd
    pd = drive.target_ke[d] * (drive.target_pos[d] - q) + drive.target_kd[d] * (drive.target_vel[d] - qd)
    effort = drive.effort_limit[d]
    tau = tau + wp.clamp(pd, -effort, effort)
    if q < drive.limit_lower[d]:
        tau = tau + drive.limit_ke[d] * (drive.limit_lower[d] - q) - drive.limit_kd[d] * qd
    if q > drive.limit_upper[d]:
        tau = tau + drive.limit_ke[d] * (drive.limit_upper[d] - q) - drive.limit_kd[d] * qd
    return tau


@wp.kernel
def eval_joint_forces(joints: JointData, joint_q: wp.array(dtype=float), joint_qd: wp.array(dtype=float),
                      drive: JointDrive, bodies: ArticulatedBodies, tau: wp.array(dtype=float)):
    """tau = joint forces - S^T (bias wrench of the child's subtree) for the dofs of joint i."""
    i = wp.tid()
    f = bodies.cf[joints.child[i]]
    ds = joints.qd_start[i]
    qs = joints.q_start[i]
    t = joints.type[i]
    for k in range(joints.qd_start[i + 1] - ds):
        d = ds + k
        generalized = drive.joint_f[d] - drive.damping[d] * joint_qd[d]
        if t != FREE and t != BALL:
            generalized = axis_force(d, joint_q[qs + k], joint_qd[d], drive)
        tau[d] = generalized - wp.spatial_dot(bodies.S[d], f)


@wp.kernel
def eval_mass_matrix(joints: JointData, joint_articulation: wp.array(dtype=wp.int32),
                     armature: wp.array(dtype=float), bodies: ArticulatedBodies, H: wp.array3d(dtype=float)):
    """Composite-rigid-body algorithm, the rows of joint i: H[a, d] = S_d . (I_c S_a) for a dof a of joint i and
    d of i (d <= a) or of an ancestor (I_c: the composite inertia of i's subtree), mirrored, plus the armature on
    the diagonal. H[k] holds articulation k's matrix in its upper left n x n block (n its dof count); entries
    between unrelated branches, and the padding, stay 0."""
    i = wp.tid()
    art = joint_articulation[i]
    d0 = joints.qd_start[joints.articulation_start[art]]
    child = joints.child[i]
    for a in range(joints.qd_start[i], joints.qd_start[i + 1]):
        F = inertia_times(bodies.cA[child], bodies.ch[child], bodies.cm[child], bodies.S[a])
        H[art, a - d0, a - d0] = wp.spatial_dot(bodies.S[a], F) + armature[a]
        for d in range(joints.qd_start[i], a):
            value = wp.spatial_dot(bodies.S[d], F)
            H[art, a - d0, d - d0] = value
            H[art, d - d0, a - d0] = value
        j = joints.ancestor[i]
        while j >= 0:
            for d in range(joints.qd_start[j], joints.qd_start[j + 1]):
                value = wp.spatial_dot(bodies.S[d], F)
                H[art, a - d0, d - d0] = value
                H[art, d - d0, a - d0] = value
            j = joints.ancestor[j]


@wp.func
def integrate_joint(joints: JointData, body_com: wp.array(dtype=wp.vec3), joint_q: wp.array(dtype=float),
                    joint_qd: wp.array(dtype=float), joint_qdd: wp.array(dtype=float), dt: float,
                    joint_q_out: wp.array(dtype=float), joint_qd_out: wp.array(dtype=float), i: int):
    """integrate_joints' update of the coordinates and velocities of joint i."""
    qs = joints.q_start[i]
    ds = joints.qd_start[i]
    t = joints.type[i]
    for k in range(joints.qd_start[i + 1] - ds):
        joint_qd_out[ds + k] = joint_qd[ds + k] + joint_qdd[ds + k] * dt
    if t == FREE or t == BALL:
        n = 0
        if t == FREE:
            n = 3
        w = wp.vec3(joint_qd[ds + n], joint_qd[ds + n + 1], joint_qd[ds + n + 2])
        w = w + wp.vec3(joint_qdd[ds + n], joint_qdd[ds + n + 1], joint_qdd[ds + n + 2]) * dt
        r = wp.quat(joint_q[qs + n], joint_q[qs + n + 1], joint_q[qs + n + 2], joint_q[qs + n + 3])
        r_new = wp.normalize(r + wp.quat(w, 0.0) * r * (0.5 * dt))
        for k in range(4):
            joint_q_out[qs + n + k] = r_new[k]
        if t == FREE:
            v = wp.vec3(joint_qd[ds], joint_qd[ds + 1], joint_qd[ds + 2])
            v = v + wp.vec3(joint_qdd[ds], joint_qdd[ds + 1], joint_qdd[ds + 2]) * dt
            com_anchor = wp.transform_point(wp.transform_inverse(joints.X_c[i]), body_com[joints.child[i]])
            p = wp.vec3(joint_q[qs], joint_q[qs + 1], joint_q[qs + 2])
            x_com = p + wp.quat_rotate(r, com_anchor) + v * dt
            p_new = x_com - wp.quat_rotate(r_new, com_anchor)
            for k in range(3):
                joint_q_out[qs + k] = p_new[k]
    else:
        for k in range(joints.qd_start[i + 1] - ds):
            joint_q_out[qs + k] = joint_q[qs + k] + (joint_qd[ds + k] + joint_qdd[ds + k] * dt) * dt


@wp.kernel
def integrate_joints(joints: JointData, body_com: wp.array(dtype=wp.vec3), joint_q: wp.array(dtype=float),
                     joint_qd: wp.array(dtype=float), joint_qdd: wp.array(dtype=float), dt: float,
                     joint_q_out: wp.array(dtype=float), joint_qd_out: wp.array(dtype=float),
                     X_local_out: wp.array(dtype=wp.transform)):
    """Semi-implicit Euler of joint i: qd' = qd + dt qdd, then q' from qd'. Axes: q' = q + dt qd'. Ball: the
    quaternion turned by the angular velocity (parent anchor frame) and normalised. Free: the centre of mass
    moves with the new velocity and the orientation turns about it. Also the joint's offset at q'
    (sim.articulation.eval_joint_offsets), which the forward kinematics of the new state start from."""
    i = wp.tid()
    integrate_joint(joints, body_com, joint_q, joint_qd, joint_qdd, dt, joint_q_out, joint_qd_out, i)
    X_local_out[i] = joint_offset(joints, joint_q_out, i)
