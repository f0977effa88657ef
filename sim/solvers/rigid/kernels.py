"""Kernels of the rigid-body solver: broad phase, contact forces, external wrenches, Newton-Euler integration.

Conventions (the same in Model, State and Control): body_q is the pose of the body frame in world; body_qd is a
spatial_vector (angular velocity w [rad/s], linear velocity v of the centre of mass [m/s]), both in world
coordinates; body_f is a spatial_vector (torque about the centre of mass [N m], force [N]) in world coordinates.
Inverse masses and inertias are computed here from Model.body_mass and Model.body_inertia, so that gradients
reach those arrays.
"""

import kernels as wp

from ...geometry import body_point_velocity
from ...hashgrid import HashGridData, hash_grid_cell_of, hash_grid_neighbor_cell
from ...model import SHAPE_PLANE
from .collide import MAX_FEATURES, feature_count, pair_feature

#: candidate contact points per shape pair: the second launch dimension of eval_contact_forces
FEATURES = wp.constant(MAX_FEATURES)


@wp.struct
class RigidShapeData:
    """The shapes as the contact kernels see them (see Model.shape_*): type [shape_count] int32, transform
    (body frame, or world for static shapes), scale [m] vec3, body int32 (-1: static), bounding_radius [m], and
    the contact material ke [N/m], kd [N s/m], kf [N s/m], mu [-], restitution [-]."""

    type: wp.array(dtype=wp.int32)
    transform: wp.array(dtype=wp.transform)
    scale: wp.array(dtype=wp.vec3)
    body: wp.array(dtype=wp.int32)
    bounding_radius: wp.array(dtype=float)
    ke: wp.array(dtype=float)
    kd: wp.array(dtype=float)
    kf: wp.array(dtype=float)
    mu: wp.array(dtype=float)
    restitution: wp.array(dtype=float)


@wp.struct
class ContactSettings:
    """Settings of the contact kernels."""

    margin: float  # candidate points closer than this are examined [m]
    restitution_velocity: float  # normal speed over which loading turns into unloading [m/s]
    smoothing: float  # depth over which the normal stiffness ramps up from 0 to ke [m]; 0: none


@wp.struct
class IntegrationSettings:
    """Settings of one integration step."""

    gravity: wp.vec3  # [m/s^2]
    dt: float  # [s]
    linear_scale: float  # 1 - linear_damping dt, clamped at 0 [-]
    angular_scale: float  # 1 - angular_damping dt, clamped at 0 [-]


# ------------------------------------------------------------------------------------------------ shapes in world


@wp.func
def shape_world_pose(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform), s: int):
    """World pose of shape s."""
    b = shapes.body[s]
    if b >= 0:
        return wp.transform_multiply(body_q[b], shapes.transform[s])
    return shapes.transform[s]


@wp.kernel
def shape_centers(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform), ids: wp.array(dtype=wp.int32),
                  centers: wp.array(dtype=wp.vec3)):
    """World position [m] of the origin of shape ids[i] (the centre of its bounding sphere)."""
    i = wp.tid()
    centers[i] = wp.transform_get_translation(shape_world_pose(shapes, body_q, ids[i]))


# ------------------------------------------------------------------------------------------------ broad phase


@wp.func
def bounding_spheres_overlap(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform), sa: int, sb: int,
                             margin: float):
    """Whether the bounding spheres of shapes sa and sb, grown by `margin`, overlap (planes always do)."""
    if shapes.type[sa] == SHAPE_PLANE or shapes.type[sb] == SHAPE_PLANE:
        return True
    pa = wp.transform_get_translation(shape_world_pose(shapes, body_q, sa))
    pb = wp.transform_get_translation(shape_world_pose(shapes, body_q, sb))
    reach = shapes.bounding_radius[sa] + shapes.bounding_radius[sb] + margin
    return wp.length_sq(pa - pb) < reach * reach


@wp.kernel
def find_grid_pairs(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform), ids: wp.array(dtype=wp.int32),
                    centers: wp.array(dtype=wp.vec3), grid: HashGridData, settings: ContactSettings,
                    pairs: wp.array2d(dtype=wp.int32), pair_count: wp.array(dtype=wp.int32)):
    """Body-shape pairs (i < j, on different bodies) whose bounding spheres overlap, from the hash grid of the
    body shapes' centres; written to `pairs` up to its capacity, and counted in pair_count[0] (which may end
    larger than the capacity: the caller grows the list and searches again)."""
    i = wp.tid()
    sa = ids[i]
    c = hash_grid_cell_of(grid, centers[i])
    for cell_offset in range(27):
        cell = hash_grid_neighbor_cell(grid, c, cell_offset)
        if cell >= 0:
            for slot in range(grid.cell_start[cell], grid.cell_end[cell]):
                j = grid.sorted_index[slot]
                sb = ids[j]
                if j > i and shapes.body[sa] != shapes.body[sb]:
                    if bounding_spheres_overlap(shapes, body_q, sa, sb, settings.margin):
                        k = wp.atomic_add(pair_count, 0, 1)
                        if k < pairs.shape[0]:
                            pairs[k, 0] = sa
                            pairs[k, 1] = sb


# ------------------------------------------------------------------------------------------------ contact forces


@wp.func
def friction_force(vt: wp.vec3, fn: float, mu: float, kf: float):
    """Regularised Coulomb friction on the slip velocity vt [m/s]: -mu fn tanh(kf |vt| / (mu fn)) vt / |vt|,
    viscous (-kf vt) at small slip and mu fn at large slip, smooth everywhere (no division near zero slip)."""
    limit = mu * fn
    if limit <= 0.0 or kf <= 0.0:
        return wp.vec3(0.0, 0.0, 0.0)
    speed = wp.length(vt)
    a = kf * speed / limit
    if a < 1.0e-3:  # tanh(a) / a = 1 - a^2 / 3 + ...: below float32 resolution here
        return vt * (-kf)
    return vt * (-limit * wp.tanh(a) / speed)


@wp.func
def smoothed_depth(depth: float, width: float):
    """depth [m] (> 0), with the kink at contact's start rounded over `width` [m]: depth^2 / (2 width) below
    width, depth - width / 2 above (continuous slope, so the force's derivative does not jump as a contact
    starts or ends within a step)."""
    if depth < width:
        return depth * depth / (2.0 * width)
    return depth - 0.5 * width


@wp.func
def contact_force(d: float, n: wp.vec3, v_rel: wp.vec3, ke: float, kd: float, kf: float, mu: float,
                  restitution: float, settings: ContactSettings):
    """Force [N] on body a of a contact at penetration -d [m] with normal n (from b to a) and velocity of a
    relative to b v_rel [m/s].

    Normal: ke * depth at full stiffness while the bodies approach and at e^2 ke while they separate, blended
    smoothly over |v_n| ~ restitution_velocity: the contact returns the fraction e^2 of the energy it stored, so
    the normal speed leaves at e times the arrival speed whatever the masses; plus damping -kd v_n; never
    pulling. Tangential: regularised Coulomb friction (friction_force)."""
    vn = wp.dot(v_rel, n)
    approaching = 0.5 * (1.0 - wp.tanh(vn / settings.restitution_velocity))
    e2 = restitution * restitution
    depth = smoothed_depth(-d, settings.smoothing)
    fn = wp.max(ke * depth * (e2 + (1.0 - e2) * approaching) - kd * vn, 0.0)
    return n * fn + friction_force(v_rel - n * vn, fn, mu, kf)


@wp.func
def add_wrench(body_f: wp.array(dtype=wp.spatial_vector), body_q: wp.array(dtype=wp.transform),
               body_com: wp.array(dtype=wp.vec3), b: int, x: wp.vec3, f: wp.vec3):
    """Add force f [N] acting at world point x to body b (skipped for static shapes, b < 0)."""
    if b >= 0:
        r = x - wp.transform_point(body_q[b], body_com[b])
        wp.atomic_add(body_f, b, wp.spatial_vector(wp.cross(r, f), f))


@wp.func
def point_velocity(body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                   body_com: wp.array(dtype=wp.vec3), b: int, x: wp.vec3):
    """Velocity [m/s] of world point x moving with body b (zero for static shapes, b < 0)."""
    if b >= 0:
        return body_point_velocity(body_q[b], body_qd[b], body_com[b], x)
    return wp.vec3(0.0, 0.0, 0.0)


@wp.kernel
def eval_contact_forces(pairs: wp.array2d(dtype=wp.int32), shapes: RigidShapeData,
                        body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                        body_com: wp.array(dtype=wp.vec3), settings: ContactSettings,
                        body_f: wp.array(dtype=wp.spatial_vector)):
    """Penalty contact forces of candidate point k of pair p, launched over (pair_count, FEATURES): the force of
    contact_force at the contact point, with the material the mean of the two shapes', added to both bodies as
    wrenches about their centres of mass (body_f, (torque [N m], force [N]))."""
    p, k = wp.tid()
    sa = pairs[p, 0]
    sb = pairs[p, 1]
    if shapes.type[sa] > shapes.type[sb]:
        swap = sa
        sa = sb
        sb = swap
    type_a = shapes.type[sa]
    type_b = shapes.type[sb]
    if k >= feature_count(type_a, type_b):
        return
    if not bounding_spheres_overlap(shapes, body_q, sa, sb, settings.margin):
        return
    pose_a = shape_world_pose(shapes, body_q, sa)
    pose_b = shape_world_pose(shapes, body_q, sb)
    valid, d, n, x = pair_feature(type_a, pose_a, shapes.scale[sa], type_b, pose_b, shapes.scale[sb], k,
                                  settings.margin)
    if not valid or d >= 0.0:
        return
    ba = shapes.body[sa]
    bb = shapes.body[sb]
    v_rel = point_velocity(body_q, body_qd, body_com, ba, x) - point_velocity(body_q, body_qd, body_com, bb, x)
    f = contact_force(d, n, v_rel, 0.5 * (shapes.ke[sa] + shapes.ke[sb]), 0.5 * (shapes.kd[sa] + shapes.kd[sb]),
                      0.5 * (shapes.kf[sa] + shapes.kf[sb]), 0.5 * (shapes.mu[sa] + shapes.mu[sb]),
                      0.5 * (shapes.restitution[sa] + shapes.restitution[sb]), settings)
    add_wrench(body_f, body_q, body_com, ba, x, f)
    add_wrench(body_f, body_q, body_com, bb, x, -f)


@wp.kernel
def add_external_wrenches(f_ext: wp.array(dtype=wp.spatial_vector), body_f: wp.array(dtype=wp.spatial_vector)):
    """body_f += f_ext (Control.body_f): (torque about the centre of mass [N m], force [N]), world frame."""
    i = wp.tid()
    wp.atomic_add(body_f, i, f_ext[i])


# ------------------------------------------------------------------------------------------------ integration


@wp.func
def rotate_quat(q: wp.quat, w: wp.vec3, dt: float):
    """q advanced by the world angular velocity w [rad/s] over dt [s]: normalize(q + dt/2 (w, 0) q)."""
    return wp.normalize(q + wp.quat(w, 0.0) * q * (0.5 * dt))


@wp.func
def world_inverse_inertia_times(q: wp.quat, inertia_inv: wp.mat33, x: wp.vec3):
    """R I^-1 R^T x: the world-frame inverse inertia of a body at orientation q applied to x."""
    return wp.quat_rotate(q, inertia_inv * wp.quat_rotate_inv(q, x))


@wp.kernel
def integrate_bodies(body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                     body_f: wp.array(dtype=wp.spatial_vector), body_mass: wp.array(dtype=float),
                     body_inertia: wp.array(dtype=wp.mat33), body_com: wp.array(dtype=wp.vec3),
                     settings: IntegrationSettings, body_q_out: wp.array(dtype=wp.transform),
                     body_qd_out: wp.array(dtype=wp.spatial_vector)):
    """One Newton-Euler step per body, semi-implicit (new velocities move the body).

    Linear: v' = (v + dt (f / m + g)) * linear_scale, x_com' = x_com + dt v'.
    Angular, on the world angular momentum L = R I R^T w: L' = L + dt torque. The orientation turns over dt by
    the angular velocity R_h I^-1 R_h^T L' of the orientation R_h half a step ahead (explicit midpoint), and
    w' = R' I^-1 R'^T L' at the new orientation R'. The gyroscopic term w x I w is thereby implicit: torque-free,
    L is conserved exactly (to rounding) and the kinetic energy 0.5 L . w drifts by O(dt^2) (1e-6 relative over
    1000 steps of a box tumbling at 6 rad/s with dt = 1 ms), where the explicit w += dt I^-1 (-w x I w) grows it,
    and turning at the start's angular velocity grows it by O(dt) (2% there).
    Kinematic bodies (mass 0) move with their velocity and ignore forces."""
    i = wp.tid()
    pose = body_q[i]
    qd = body_qd[i]
    q = wp.transform_get_rotation(pose)
    com_local = body_com[i]
    x_com = wp.transform_point(pose, com_local)
    w = wp.spatial_top(qd)
    v = wp.spatial_bottom(qd)
    m = body_mass[i]
    if m > 0.0:
        f = body_f[i]
        v = (v + (wp.spatial_bottom(f) / m + settings.gravity) * settings.dt) * settings.linear_scale
        inertia = body_inertia[i]
        inertia_inv = wp.inverse(inertia)
        momentum = wp.quat_rotate(q, inertia * wp.quat_rotate_inv(q, w)) + wp.spatial_top(f) * settings.dt
        momentum = momentum * settings.angular_scale
        # midpoint rule: turn at the angular velocity of the half-step orientation
        q_half = rotate_quat(q, world_inverse_inertia_times(q, inertia_inv, momentum), 0.5 * settings.dt)
        q_new = rotate_quat(q, world_inverse_inertia_times(q_half, inertia_inv, momentum), settings.dt)
        w = world_inverse_inertia_times(q_new, inertia_inv, momentum)
    else:
        q_new = rotate_quat(q, w, settings.dt)
    x_com = x_com + v * settings.dt
    body_q_out[i] = wp.transform(x_com - wp.quat_rotate(q_new, com_local), q_new)
    body_qd_out[i] = wp.spatial_vector(w, v)
