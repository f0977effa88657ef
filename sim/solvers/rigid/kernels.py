"""Kernels of the rigid-body solver: contact partners and wrenches, external wrenches, Newton-Euler integration.

Conventions (the same in Model, State and Control): body_q is the pose of the body frame in world; body_qd is a
spatial_vector (angular velocity w [rad/s], linear velocity v of the centre of mass [m/s]), both in world
coordinates; body_f is a spatial_vector (torque about the centre of mass [N m], force [N]) in world coordinates.
Inverse masses and inertias are computed here from Model.body_mass and Model.body_inertia, so that gradients
reach those arrays.
"""

import kernels as wp

from ...geometry import shape_bound
from ...hashgrid import HashGridData, hash_grid_cell_of, hash_grid_neighbor_cell
from ...model import SHAPE_BOX, SHAPE_PLANE, SHAPE_SPHERE
from ...worlds import worlds_interact
from .collide import pair_contacts
from .contact_law import (MAX_PAIR_FEATURES, ContactRecord, ContactSettings, PairContext,  # noqa: F401 (solver)
                          coupled_normal_impulse, friction_force, time_constant_rates)

# The narrow phase and contact law inline into a few large kernels, which spend GCC's default inlining budget: the
# vector builtins they call were left as ~1,250 out-of-line calls (40 % of the kernels' time, session 17's profile,
# docs/rigid_contact.md). A larger budget: 100 boxes 1.5x faster per step, the module's compile ~1.3x longer.
wp.set_module_options({"cpu_inline_unit_growth": 100000})


@wp.struct
class RigidShapeData:
    """The shapes as the contact kernels see them (see Model.shape_*): type [shape_count] int32, transform
    (body frame, or world for static shapes), scale [m] vec3, body int32 (-1: static), and the contact material
    ke [N/m], kd [N s/m], kf [N s/m], mu [-], restitution [-], timeconst [s] (0: penalty form), dampratio [-];
    with the bodies' mass [kg] and inertia about the centre of mass in body axes [kg m^2] ([body_count]; Model's
    body_mass and body_inertia), which give the time-constant form its effective mass. world: each shape's world
    [shape_count] int32 (Model.shape_world; -1: shared): shapes of two different worlds never touch."""

    type: wp.array(dtype=wp.int32)
    transform: wp.array(dtype=wp.transform)
    scale: wp.array(dtype=wp.vec3)
    body: wp.array(dtype=wp.int32)
    ke: wp.array(dtype=float)
    kd: wp.array(dtype=float)
    kf: wp.array(dtype=float)
    mu: wp.array(dtype=float)
    restitution: wp.array(dtype=float)
    timeconst: wp.array(dtype=float)
    dampratio: wp.array(dtype=float)
    body_mass: wp.array(dtype=float)
    body_inertia: wp.array(dtype=wp.mat33)
    world: wp.array(dtype=wp.int32)


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


@wp.func
def shape_bounds(shape_type: int, pose: wp.transform, scale: wp.vec3):
    """(lower, upper) corners [m] of the world axis-aligned box around a sphere, box or capsule at `pose`."""
    c = wp.transform_get_translation(pose)
    if shape_type == SHAPE_SPHERE:
        r = wp.vec3(scale[0], scale[0], scale[0])
        return c - r, c + r
    rot = wp.quat_to_matrix(wp.transform_get_rotation(pose))
    if shape_type == SHAPE_BOX:
        half = wp.vec3(0.0, 0.0, 0.0)
        for k in range(3):
            half[k] = wp.abs(rot[k, 0]) * scale[0] + wp.abs(rot[k, 1]) * scale[1] + wp.abs(rot[k, 2]) * scale[2]
        return c - half, c + half
    # capsule: its segment along local y, swept by the radius
    half = wp.vec3(0.0, 0.0, 0.0)
    for k in range(3):
        half[k] = wp.abs(rot[k, 1]) * scale[1] + scale[0]
    return c - half, c + half


@wp.func
def bounding_radius(shape_type: int, scale: wp.vec3):
    """Radius [m] of a sphere about the shape's origin that contains it (0 for planes, which are never bounded),
    from its current scale: sim optimize may have written a learned size there since Model.shape_bounding_radius
    was computed."""
    return wp.max(shape_bound(shape_type, scale), 0.0)  # planes and meshes: -1 there


@wp.kernel(enable_backward=False)
def movable_shape_bounds(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                         ids: wp.array(dtype=wp.int32), centers: wp.array(dtype=wp.vec3),
                         lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3)):
    """World origin [m] (the centre of its bounding sphere) and axis-aligned bounds [m] of shape ids[i]."""
    i = wp.tid()
    s = ids[i]
    pose = shape_world_pose(shapes, body_q, s)
    centers[i] = wp.transform_get_translation(pose)
    lo, hi = shape_bounds(shapes.type[s], pose, shapes.scale[s])
    lower[i] = lo
    upper[i] = hi


# ------------------------------------------------------------------------------------------------ contacts


@wp.func
def body_inverse_mass(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                      body_com: wp.array(dtype=wp.vec3), b: int):
    """(world centre of mass [m], inverse mass [1/kg], world inverse inertia R I^-1 R^T [1/(kg m^2)]) of body b;
    zero inverses for static shapes (b < 0) and kinematic bodies (mass 0)."""
    zero = wp.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if b < 0:
        return wp.vec3(0.0, 0.0, 0.0), 0.0, zero
    pose = body_q[b]
    com = wp.transform_point(pose, body_com[b])
    m = shapes.body_mass[b]
    if m <= 0.0:
        return com, 0.0, zero
    r = wp.quat_to_matrix(wp.transform_get_rotation(pose))
    return com, 1.0 / m, r * wp.inverse(shapes.body_inertia[b]) * wp.transpose(r)


@wp.func(inline=False)  # one out-of-line copy of the narrow phase and law per kernel (docs/rigid_contact.md)
def pair_wrench(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                settings: ContactSettings, s: int, other: int, forces: int, row: int, partner: int):
    """(touching, wrench on the body of shape s) of the pair of shapes s (on a body, contact row `row`, whose
    partner number `partner` it is) and `other`: whether any of
    its candidate points penetrates, and (when `forces` is 1) the sum of their contact wrenches on s's body
    (torque about its centre of mass [N m], force [N]). The pair is evaluated in canonical order (collide.py), so
    the two bodies of a pair compute exactly opposite forces. Shapes whose bounding spheres, grown by the margin,
    do not overlap (planes always do) do not touch."""
    sa = s
    sb = other
    if shapes.type[other] < shapes.type[s] or (shapes.type[other] == shapes.type[s] and other < s):
        sa = other
        sb = s
    pose_a = shape_world_pose(shapes, body_q, sa)
    pose_b = shape_world_pose(shapes, body_q, sb)
    type_a = shapes.type[sa]
    type_b = shapes.type[sb]
    if type_a != SHAPE_PLANE and type_b != SHAPE_PLANE:
        reach = bounding_radius(type_a, shapes.scale[sa]) + bounding_radius(type_b, shapes.scale[sb]) + \
            settings.margin
        gap = wp.transform_get_translation(pose_a) - wp.transform_get_translation(pose_b)
        if wp.length_sq(gap) >= reach * reach:
            return False, wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    ctx = PairContext()
    ctx.body_a = shapes.body[sa]
    ctx.body_b = shapes.body[sb]
    ctx.self_is_a = 0
    ctx.row = row
    ctx.record_column = partner * MAX_PAIR_FEATURES
    if sa == s:
        ctx.self_is_a = 1
    b = shapes.body[s]
    ctx.self_com = wp.transform_point(body_q[b], body_com[b])
    ctx.ke = 0.5 * (shapes.ke[sa] + shapes.ke[sb])
    ctx.kd = 0.5 * (shapes.kd[sa] + shapes.kd[sb])
    ctx.kf = 0.5 * (shapes.kf[sa] + shapes.kf[sb])
    ctx.mu = 0.5 * (shapes.mu[sa] + shapes.mu[sb])
    ctx.restitution = 0.5 * (shapes.restitution[sa] + shapes.restitution[sb])
    ctx.forces = forces
    k_a, c_a = time_constant_rates(shapes.timeconst[sa], shapes.dampratio[sa])
    k_b, c_b = time_constant_rates(shapes.timeconst[sb], shapes.dampratio[sb])
    ctx.k_hat = 0.5 * (k_a + k_b)
    ctx.c_hat = 0.5 * (c_a + c_b)
    if forces != 0 and ctx.k_hat > 0.0:
        com_a, inv_mass_a, inv_inertia_a = body_inverse_mass(shapes, body_q, body_com, ctx.body_a)
        com_b, inv_mass_b, inv_inertia_b = body_inverse_mass(shapes, body_q, body_com, ctx.body_b)
        ctx.com_a = com_a
        ctx.inv_mass_a = inv_mass_a
        ctx.inv_inertia_a = inv_inertia_a
        ctx.com_b = com_b
        ctx.inv_mass_b = inv_mass_b
        ctx.inv_inertia_b = inv_inertia_b
    touching, w = pair_contacts(ctx, body_q, body_qd, body_com, settings, type_a, pose_a, shapes.scale[sa], type_b,
                                pose_b, shapes.scale[sb])
    return touching, w


@wp.struct
class CandidateShapes:
    """Where a body shape (a row) looks for contact partners: every static shape (static_ids [static_count]
    int32); unless it is a plane, the other non-plane body shapes (movable_ids [movable_count] int32), all of
    them when use_grid is 0, else those in the 27 cells of `grid` (built on the movable shapes' centres, indexed
    like movable_ids) around its centre. lower, upper [movable_count]: the movable shapes' world axis-aligned
    bounds [m], a first test that spares the narrow phase of most candidates. Row t never pairs with the shapes
    excluded[excluded_start[t]:excluded_start[t + 1]] (e.g. the shapes of bodies joined by a joint)."""

    static_ids: wp.array(dtype=wp.int32)
    movable_ids: wp.array(dtype=wp.int32)
    excluded_start: wp.array(dtype=wp.int32)
    excluded: wp.array(dtype=wp.int32)
    lower: wp.array(dtype=wp.vec3)
    upper: wp.array(dtype=wp.vec3)
    use_grid: int
    grid: HashGridData


@wp.func
def bounds_may_touch(shapes: RigidShapeData, candidates: CandidateShapes, s: int, lower: wp.vec3, upper: wp.vec3,
                     j: int, other: int, margin: float):
    """Whether movable candidate j (shape `other`) is on another body than shape s and its bounds come within
    `margin` [m] of s's bounds (lower, upper) along every axis: shapes farther apart cannot touch."""
    if shapes.body[other] == shapes.body[s]:
        return False
    lo = candidates.lower[j]
    hi = candidates.upper[j]
    return lo[0] <= upper[0] + margin and lower[0] <= hi[0] + margin and lo[1] <= upper[1] + margin and \
        lower[1] <= hi[1] + margin and lo[2] <= upper[2] + margin and lower[2] <= hi[2] + margin


@wp.func
def is_excluded(candidates: CandidateShapes, t: int, other: int):
    """Whether row t must not pair with shape `other`."""
    for k in range(candidates.excluded_start[t], candidates.excluded_start[t + 1]):
        if candidates.excluded[k] == other:
            return True
    return False


@wp.func
def visit_partner(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                  body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                  candidates: CandidateShapes, settings: ContactSettings, s: int, other: int, t: int, slots: int,
                  forces: int,
                  record_into: wp.array2d(dtype=wp.int32), count: int, w: wp.spatial_vector):
    """scan_partners' step for one candidate `other` of row t (shape s): a touching pair is the row's partner
    number `count`; the first `slots` are the row's slots (recorded in record_into[t] as far as it has columns),
    the wrenches of the others add to w. Returns the new (count, w)."""
    if is_excluded(candidates, t, other) or not worlds_interact(shapes.world[s], shapes.world[other]):
        return count, w
    touching, pw = pair_wrench(shapes, body_q, body_qd, body_com, settings, s, other, forces, t, count)
    if touching:
        if count < slots:
            if count < record_into.shape[1]:
                record_into[t, count] = other
        else:
            w = w + pw
        count = count + 1
    return count, w


@wp.func
def scan_partners(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                  body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                  candidates: CandidateShapes, settings: ContactSettings, t: int, s: int, slots: int, forces: int,
                  record_into: wp.array2d(dtype=wp.int32)):
    """Every touching partner of body shape s (row t), in a fixed order: static shapes, then body shapes in the
    order of the candidates' scan. The first `slots` are the row's slots (written to record_into[t], as far as it
    has columns); the wrenches of the rest (when `forces`) are summed. Returns (partner count, that sum)."""
    count = int(0)
    w = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(candidates.static_ids.shape[0]):
        count, w = visit_partner(shapes, body_q, body_qd, body_com, candidates, settings, s,
                                 candidates.static_ids[k], t, slots, forces, record_into, count, w)
    if shapes.type[s] != SHAPE_PLANE and candidates.movable_ids.shape[0] > 0:
        pose = shape_world_pose(shapes, body_q, s)
        lower, upper = shape_bounds(shapes.type[s], pose, shapes.scale[s])
        if candidates.use_grid != 0:
            grid = candidates.grid
            c = hash_grid_cell_of(grid, wp.transform_get_translation(pose))
            for cell_offset in range(27):
                cell = hash_grid_neighbor_cell(grid, c, cell_offset)
                if cell >= 0:
                    for slot in range(grid.cell_start[cell], grid.cell_end[cell]):
                        j = grid.sorted_index[slot]
                        other = candidates.movable_ids[j]
                        if bounds_may_touch(shapes, candidates, s, lower, upper, j, other, settings.margin):
                            count, w = visit_partner(shapes, body_q, body_qd, body_com, candidates, settings, s,
                                                     other, t, slots, forces, record_into, count, w)
        else:
            for j in range(candidates.movable_ids.shape[0]):
                other = candidates.movable_ids[j]
                if bounds_may_touch(shapes, candidates, s, lower, upper, j, other, settings.margin):
                    count, w = visit_partner(shapes, body_q, body_qd, body_com, candidates, settings, s, other,
                                             t, slots, forces, record_into, count, w)
    return count, w


@wp.func
def predicted_twist(body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                    body_com: wp.array(dtype=wp.vec3), body_mass: wp.array(dtype=float),
                    body_inertia: wp.array(dtype=wp.mat33), w_f: wp.spatial_vector, b: int, dt: float):
    """Twist of body b at the end of a step of dt [s] under the contact wrench w_f alone (no gravity, external
    wrenches or damping: the contact law's prediction leaves them out), linearised at the current orientation;
    kinematic bodies keep their velocity: (w [rad/s], velocity [m/s] of the body point at the world origin,
    v_com - w x com), so that a point x moves at v + w x x."""
    pose = body_q[b]
    w = wp.spatial_top(body_qd[b])
    v = wp.spatial_bottom(body_qd[b])
    m = body_mass[b]
    if m > 0.0:
        w = w + world_inverse_inertia_times(wp.transform_get_rotation(pose), wp.inverse(body_inertia[b]),
                                            wp.spatial_top(w_f)) * dt
        v = v + wp.spatial_bottom(w_f) * (dt / m)
    return wp.spatial_vector(w, v - wp.cross(w, wp.transform_point(pose, body_com[b])))


@wp.func
def store_row_wrench(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                     body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                     settings: ContactSettings, rows: wp.array(dtype=wp.int32), t: int, w: wp.spatial_vector,
                     to_body: int, row_wrench: wp.array(dtype=wp.spatial_vector),
                     body_f: wp.array(dtype=wp.spatial_vector)):
    """The contact wrench w of row t: straight into its body's body_f when every body has at most one row
    (to_body 1; with the twist it predicts into settings.twist when that is not empty), else into row_wrench[t]
    for gather_body_wrenches."""
    if to_body != 0:
        b = shapes.body[rows[t]]
        body_f[b] = w
        if settings.twist.shape[0] > 0:
            settings.twist[b] = predicted_twist(body_q, body_qd, body_com, shapes.body_mass, shapes.body_inertia, w,
                                                b, settings.dt)
    else:
        row_wrench[t] = w


@wp.kernel(enable_backward=False)
def find_contacts(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                  body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                  rows: wp.array(dtype=wp.int32), candidates: CandidateShapes, settings: ContactSettings,
                  partners: wp.array2d(dtype=wp.int32), partner_count: wp.array(dtype=wp.int32), to_body: int,
                  row_wrench: wp.array(dtype=wp.spatial_vector), body_f: wp.array(dtype=wp.spatial_vector)):
    """The contacts of body shape rows[t], not differentiated. With slots (K = partners.shape[1] > 0): its first
    K touching partners into partners[t] and its number of partners into partner_count[t] (no forces; the
    wrenches are eval_partner_wrenches'). Without (K = 0): the number of partners, and the sum of all their
    wrenches on the row's body (store_row_wrench)."""
    t = wp.tid()
    slots = partners.shape[1]
    forces = int(0)
    if slots == 0:
        forces = 1
    count, w = scan_partners(shapes, body_q, body_qd, body_com, candidates, settings, t, rows[t], slots, forces,
                             partners)
    partner_count[t] = count
    if forces != 0:
        store_row_wrench(shapes, body_q, body_qd, body_com, settings, rows, t, w, to_body, row_wrench, body_f)


@wp.kernel
def eval_partner_wrenches(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                          body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                          rows: wp.array(dtype=wp.int32), settings: ContactSettings,
                          partners: wp.array2d(dtype=wp.int32), partner_count: wp.array(dtype=wp.int32),
                          to_body: int, row_wrench: wp.array(dtype=wp.spatial_vector),
                          body_f: wp.array(dtype=wp.spatial_vector)):
    """The wrench on the body of shape rows[t] from the partners find_contacts recorded in its slots (all of
    them: the caller sized the slots to the largest count), summed in slot order (store_row_wrench)."""
    t = wp.tid()
    w = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(partner_count[t]):
        touching, pw = pair_wrench(shapes, body_q, body_qd, body_com, settings, rows[t], partners[t, k], 1, t, k)
        w = w + pw
    store_row_wrench(shapes, body_q, body_qd, body_com, settings, rows, t, w, to_body, row_wrench, body_f)


@wp.kernel
def gather_body_wrenches(body_row_start: wp.array(dtype=wp.int32), body_rows: wp.array(dtype=wp.int32),
                         row_wrench: wp.array(dtype=wp.spatial_vector), body_f: wp.array(dtype=wp.spatial_vector)):
    """body_f[b] = the contact wrenches of body b's shapes (the rows body_rows[body_row_start[b]:
    body_row_start[b + 1]]), summed in that order: no atomics, a sum that does not depend on thread timing."""
    b = wp.tid()
    w = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for r in range(body_row_start[b], body_row_start[b + 1]):
        w = w + row_wrench[body_rows[r]]
    body_f[b] = w


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


@wp.func
def integrate_body(pose: wp.transform, qd: wp.spatial_vector, f: wp.spatial_vector, m: float, inertia: wp.mat33,
                   com_local: wp.vec3, settings: IntegrationSettings):
    """(pose, velocity) of one body after one Newton-Euler step under the wrench f, semi-implicit (new velocities
    move the body).

    Linear: v' = (v + dt (f / m + g)) * linear_scale, x_com' = x_com + dt v'.
    Angular, on the world angular momentum L = R I R^T w: L' = L + dt torque. The orientation turns over dt by
    the angular velocity R_h I^-1 R_h^T L' of the orientation R_h half a step ahead (explicit midpoint), and
    w' = R' I^-1 R'^T L' at the new orientation R'. The gyroscopic term w x I w is thereby implicit: torque-free,
    L is conserved exactly (to rounding) and the kinetic energy 0.5 L . w drifts by O(dt^2) (1e-6 relative over
    1000 steps of a box tumbling at 6 rad/s with dt = 1 ms), where the explicit w += dt I^-1 (-w x I w) grows it,
    and turning at the start's angular velocity grows it by O(dt) (2% there).
    Kinematic bodies (mass 0) move with their velocity and ignore forces."""
    q = wp.transform_get_rotation(pose)
    x_com = wp.transform_point(pose, com_local)
    w = wp.spatial_top(qd)
    v = wp.spatial_bottom(qd)
    if m > 0.0:
        v = (v + (wp.spatial_bottom(f) / m + settings.gravity) * settings.dt) * settings.linear_scale
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
    return wp.transform(x_com - wp.quat_rotate(q_new, com_local), q_new), wp.spatial_vector(w, v)


@wp.kernel
def integrate_bodies(body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                     body_f: wp.array(dtype=wp.spatial_vector), body_mass: wp.array(dtype=float),
                     body_inertia: wp.array(dtype=wp.mat33), body_com: wp.array(dtype=wp.vec3),
                     settings: IntegrationSettings, body_q_out: wp.array(dtype=wp.transform),
                     body_qd_out: wp.array(dtype=wp.spatial_vector)):
    """One Newton-Euler step per body (integrate_body) under the wrenches body_f."""
    i = wp.tid()
    pose, qd = integrate_body(body_q[i], body_qd[i], body_f[i], body_mass[i], body_inertia[i], body_com[i],
                              settings)
    body_q_out[i] = pose
    body_qd_out[i] = qd


@wp.kernel
def step_bodies(shapes: RigidShapeData, body_q: wp.array(dtype=wp.transform),
                body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                body_mass: wp.array(dtype=float), body_inertia: wp.array(dtype=wp.mat33),
                rows: wp.array(dtype=wp.int32), body_row: wp.array(dtype=wp.int32), contact: ContactSettings,
                partners: wp.array2d(dtype=wp.int32), partner_count: wp.array(dtype=wp.int32),
                external: wp.array(dtype=wp.spatial_vector), has_external: int, settings: IntegrationSettings,
                body_f: wp.array(dtype=wp.spatial_vector), body_q_out: wp.array(dtype=wp.transform),
                body_qd_out: wp.array(dtype=wp.spatial_vector)):
    """A whole differentiated step of body b when every body has at most one shape (row body_row[b], -1: none):
    the wrenches of the contact partners find_contacts recorded for its row, in slot order, plus external[b]
    (when has_external), into body_f[b]; then integrate_body. One kernel, so the backward pass runs one adjoint
    per step."""
    b = wp.tid()
    w = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    t = body_row[b]
    if t >= 0:
        for k in range(partner_count[t]):
            touching, pw = pair_wrench(shapes, body_q, body_qd, body_com, contact, rows[t], partners[t, k], 1, t,
                                       k)
            w = w + pw
    if has_external != 0:
        w = w + external[b]
    body_f[b] = w
    pose, qd = integrate_body(body_q[b], body_qd[b], w, body_mass[b], body_inertia[b], body_com[b], settings)
    body_q_out[b] = pose
    body_qd_out[b] = qd


@wp.func
def twist_point_velocity(twists: wp.array(dtype=wp.spatial_vector), b: int, x: wp.vec3):
    """Velocity [m/s] of world point x moving with body b of twist twists[b] (zero for static shapes, b < 0)."""
    if b >= 0:
        t = twists[b]
        return wp.spatial_bottom(t) + wp.cross(wp.spatial_top(t), x)
    return wp.vec3(0.0, 0.0, 0.0)


@wp.struct
class BodyArrays:
    """The bodies as a coupled pass reads them: pose q, twist qd (w [rad/s], v_com [m/s]), centre of mass in the
    body frame com [m], mass [kg] and inertia about the centre of mass in body axes [kg m^2], [body_count]."""

    q: wp.array(dtype=wp.transform)
    qd: wp.array(dtype=wp.spatial_vector)
    com: wp.array(dtype=wp.vec3)
    mass: wp.array(dtype=float)
    inertia: wp.array(dtype=wp.mat33)


@wp.func
def coupled_contact(record: ContactRecord, t: int, c: int, b: int, com: wp.vec3,
                    previous_twist: wp.array(dtype=wp.spatial_vector), previous: float, dt: float,
                    relaxation: float):
    """(normal impulse [N s], change of the wrench on body b) of recorded contact c of row t after one more
    coupled pass (coupled_normal_impulse): its impulse goes from `previous` (the passes before) to the returned
    one, both bodies moving at the end of the step with the twists `previous_twist` that the passes before
    predict (predicted_twist); the wrench change on body b (centre of mass com [m]) is from the law's impulse to
    the new one, friction following the normal force."""
    a = record.body_a[t, c]
    n = record.n[t, c]
    x = record.x[t, c]
    vt = record.vt[t, c]
    impulse = record.impulse[t, c]
    vn_predicted = wp.dot(twist_point_velocity(previous_twist, a, x) -
                          twist_point_velocity(previous_twist, record.body_b[t, c], x), n)
    coupled = coupled_normal_impulse(previous, impulse, record.vn[t, c], record.mass[t, c], vn_predicted,
                                     relaxation)
    fn = impulse / dt
    fn_coupled = coupled / dt
    mu = record.mu[t, c]
    kf = record.kf[t, c]
    f = n * (fn_coupled - fn) + friction_force(vt, fn_coupled, mu, kf) - friction_force(vt, fn, mu, kf)
    if a != b:
        f = -f
    return coupled, wp.spatial_vector(wp.cross(x - com, f), f)


@wp.kernel
def predict_twists(bodies: BodyArrays, body_f: wp.array(dtype=wp.spatial_vector), dt: float,
                   twist: wp.array(dtype=wp.spatial_vector)):
    """twist[b]: body b's twist at the end of a step of dt [s] under the contact wrench body_f[b] alone
    (predicted_twist), for the first coupled pass."""
    b = wp.tid()
    twist[b] = predicted_twist(bodies.q, bodies.qd, bodies.com, bodies.mass, bodies.inertia, body_f[b], b, dt)


@wp.struct
class PassEnd:
    """What a coupled pass does after storing the bodies' contact wrenches: when integrate is 1 (the step's last
    pass), add the external wrenches (coupled_pass's `external`, when has_external is 1: Control.body_f) and
    integrate the bodies (integrate_body with `settings`) into coupled_pass's body_q_out, body_qd_out, so that
    the step needs no separate launch; else store the end twist the new wrenches predict, for the next pass."""

    integrate: int
    has_external: int
    settings: IntegrationSettings


@wp.kernel
def coupled_pass(bodies: BodyArrays, body_row_start: wp.array(dtype=wp.int32), body_rows: wp.array(dtype=wp.int32),
                 partner_count: wp.array(dtype=wp.int32), record: ContactRecord, dt: float, relaxation: float,
                 law_f: wp.array(dtype=wp.spatial_vector), previous_twist: wp.array(dtype=wp.spatial_vector),
                 previous_impulse: wp.array2d(dtype=float), end: PassEnd,
                 external: wp.array(dtype=wp.spatial_vector), impulse: wp.array2d(dtype=float),
                 body_f: wp.array(dtype=wp.spatial_vector), twist: wp.array(dtype=wp.spatial_vector),
                 body_q_out: wp.array(dtype=wp.transform), body_qd_out: wp.array(dtype=wp.spatial_vector)):
    """One Jacobi pass of the coupled contacts, for body b: each of its recorded contacts (its rows
    body_rows[body_row_start[b]:body_row_start[b + 1]], in that order, each with partner_count partners) goes
    from its impulse previous_impulse (the passes before; the law's, record.impulse, before the first) to
    impulse (coupled_contact), reading the bodies' end twists previous_twist that the passes before predict;
    body_f[b] = law_f[b] (pass 0's wrench) plus the changes of body b's contacts from the law's impulses to the
    new ones; then `end` (PassEnd): the end twist it predicts into twist[b] (predicted_twist), or the step's
    integration. Every contact is recorded in the rows of both its bodies and each row updates its own copy (the
    same numbers): a pass needs nothing from another body's thread but previous_twist, and sums in a fixed order
    (no atomics)."""
    b = wp.tid()
    w = law_f[b]
    com = wp.transform_point(bodies.q[b], bodies.com[b])
    for r in range(body_row_start[b], body_row_start[b + 1]):
        t = body_rows[r]
        for c in range(wp.min(partner_count[t] * MAX_PAIR_FEATURES, record.x.shape[1])):
            if record.mass[t, c] > 0.0:
                p, dw = coupled_contact(record, t, c, b, com, previous_twist, previous_impulse[t, c], dt,
                                        relaxation)
                impulse[t, c] = p
                w = w + dw
    if end.integrate != 0:
        if end.has_external != 0:
            w = w + external[b]
        pose, qd = integrate_body(bodies.q[b], bodies.qd[b], w, bodies.mass[b], bodies.inertia[b], bodies.com[b],
                                  end.settings)
        body_q_out[b] = pose
        body_qd_out[b] = qd
    else:
        twist[b] = predicted_twist(bodies.q, bodies.qd, bodies.com, bodies.mass, bodies.inertia, w, b, dt)
    body_f[b] = w
