"""Force and integration kernels of the semi-implicit Euler solver.

Every force kernel reads positions [m] and velocities [m/s] of one state and atomically adds forces [N] into a
force array, shape [particle_count], vec3. Model data reaches the kernels through structs (one per force), so a
kernel signature stays short and the Tape finds the gradient of every array member.
"""

import kernels as wp

from ...bending import bend_vector
from ...geometry import (ShapeData, collider_sdf, dihedral_angle_gradients, shape_of_slot,
                        shape_point_velocity)
from ...model import PARTICLE_ACTIVE, ContactParams


@wp.struct
class SpringData:
    """Springs: indices [spring_count, 2] int32, rest_length [m], stiffness [N/m], damping [N s/m]."""

    indices: wp.array2d(dtype=wp.int32)
    rest_length: wp.array(dtype=float)
    stiffness: wp.array(dtype=float)
    damping: wp.array(dtype=float)


@wp.struct
class TriangleData:
    """Membrane triangles: indices [tri_count, 3] int32, poses (inverse rest matrices Dm^-1 [1/m], mat22),
    areas [m^2], materials [tri_count, 5] = (mu [N/m], lambda [N/m], damping [N s/m], drag, lift).
    every_aerodynamic_force: 1 evaluates the aerodynamic force of every triangle (needed when a gradient with
    respect to the materials is wanted: d/d(drag) is not zero where drag is); 0 skips it where drag and lift are
    both zero, where the force and its gradient with respect to positions and velocities are zero (a third of
    a triangle's arithmetic, with five divisions and two square roots)."""

    indices: wp.array2d(dtype=wp.int32)
    poses: wp.array(dtype=wp.mat22)
    areas: wp.array(dtype=float)
    materials: wp.array2d(dtype=float)
    every_aerodynamic_force: wp.int32


@wp.struct
class BendingData:
    """Bending edges: indices [edge_count, 4] = (o0, o1, v0, v1) int32, rest_angle [rad] (dihedral model),
    weights [edge_count, 4] [1/m] (quadratic model), properties [edge_count, 2] = (stiffness [N m/rad],
    damping [N m s/rad])."""

    indices: wp.array2d(dtype=wp.int32)
    rest_angle: wp.array(dtype=float)
    rest_scale: wp.array(dtype=float)  # [m^3], see Model.edge_rest_scale
    weights: wp.array2d(dtype=float)  # see Model.edge_bending_weights
    properties: wp.array2d(dtype=float)


@wp.struct
class IntegratorParams:
    """Settings of one integration step."""

    gravity: wp.vec3  # [m/s^2]
    dt: float  # [s]
    velocity_scale: float  # (1 - damping * dt) clamped at 0 [-]


# ------------------------------------------------------------------------------------------------ springs


@wp.kernel
def eval_spring_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), springs: SpringData,
                       f: wp.array(dtype=wp.vec3)):
    """Hooke's law plus damping of the relative velocity along the spring; one thread per spring."""
    s = wp.tid()
    i = springs.indices[s, 0]
    j = springs.indices[s, 1]
    d = x[j] - x[i]
    l = wp.length(d)
    if l < 1.0e-9:
        return
    n = d / l
    stretch_rate = wp.dot(v[j] - v[i], n)
    fs = n * (springs.stiffness[s] * (l - springs.rest_length[s]) + springs.damping[s] * stretch_rate)
    wp.atomic_add(f, i, fs)
    wp.atomic_sub(f, j, fs)


# ------------------------------------------------------------------------------------------------ triangles


@wp.func
def stvk_stress(f1: wp.vec3, f2: wp.vec3, mu: float, lam: float):
    """Columns of the first Piola stress P = F (2 mu E + lambda tr(E) I) of F = [f1 f2] (3x2) [N/m]."""
    e00 = 0.5 * (wp.dot(f1, f1) - 1.0)
    e11 = 0.5 * (wp.dot(f2, f2) - 1.0)
    e01 = 0.5 * wp.dot(f1, f2)
    tr = e00 + e11
    s00 = 2.0 * mu * e00 + lam * tr
    s11 = 2.0 * mu * e11 + lam * tr
    s01 = 2.0 * mu * e01
    return f1 * s00 + f2 * s01, f1 * s01 + f2 * s11


@wp.func
def strain_rate_stress(f1: wp.vec3, f2: wp.vec3, g1: wp.vec3, g2: wp.vec3, kd: float):
    """Columns of the damping stress P = F (kd dE/dt), dE/dt = (F^T Fdot + Fdot^T F) / 2, Fdot = [g1 g2].
    Zero for rigid motions, and it only removes energy."""
    r00 = wp.dot(f1, g1)
    r11 = wp.dot(f2, g2)
    r01 = 0.5 * (wp.dot(f1, g2) + wp.dot(f2, g1))
    return (f1 * r00 + f2 * r01) * kd, (f1 * r01 + f2 * r11) * kd


@wp.func
def aerodynamic_force(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, vmid: wp.vec3, drag: float, lift: float):
    """Force [N] on triangle (x0, x1, x2) moving at `vmid` [m/s] through still air, times its current area:
    drag along the normal, -drag |v_n| v_n n, and lift perpendicular to the velocity, of magnitude
    lift |v|^2 sin(a) cos(a) for the angle of attack a. `drag` and `lift` in [kg/m^3] (0.5 rho C)."""
    c = wp.cross(x1 - x0, x2 - x0)
    cl = wp.length(c)
    speed = wp.length(vmid)
    if cl < 1.0e-12 or speed < 1.0e-9:
        return wp.vec3(0.0, 0.0, 0.0)
    area = 0.5 * cl
    n = c / cl
    vn = wp.dot(vmid, n)
    f_drag = n * (-drag * wp.abs(vn) * vn)
    f_lift = (n * speed - vmid * (vn / speed)) * (-lift * vn)
    return (f_drag + f_lift) * area


@wp.kernel
def eval_triangle_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), tris: TriangleData,
                         f: wp.array(dtype=wp.vec3)):
    """StVK membrane on the 2x2 rest frame with strain-rate damping, and aerodynamics (a third of the
    triangle's force on each vertex); one thread per triangle."""
    t = wp.tid()
    i = tris.indices[t, 0]
    j = tris.indices[t, 1]
    k = tris.indices[t, 2]
    dm_inv = tris.poses[t]
    mu = tris.materials[t, 0]
    lam = tris.materials[t, 1]
    kd = tris.materials[t, 2]
    drag = tris.materials[t, 3]
    lift = tris.materials[t, 4]
    area = tris.areas[t]

    # F = [x1 - x0, x2 - x0] Dm^-1 column by column, and its rate from the velocities
    e1 = x[j] - x[i]
    e2 = x[k] - x[i]
    f1 = e1 * dm_inv[0, 0] + e2 * dm_inv[1, 0]
    f2 = e1 * dm_inv[0, 1] + e2 * dm_inv[1, 1]
    u1 = v[j] - v[i]
    u2 = v[k] - v[i]
    g1 = u1 * dm_inv[0, 0] + u2 * dm_inv[1, 0]
    g2 = u1 * dm_inv[0, 1] + u2 * dm_inv[1, 1]

    p1, p2 = stvk_stress(f1, f2, mu, lam)
    q1, q2 = strain_rate_stress(f1, f2, g1, g2, kd)
    p1 = p1 + q1
    p2 = p2 + q2
    # forces on vertices 1 and 2: -area * P Dm^-T, columns
    fj = (p1 * dm_inv[0, 0] + p2 * dm_inv[0, 1]) * (-area)
    fk = (p1 * dm_inv[1, 0] + p2 * dm_inv[1, 1]) * (-area)
    fi = -(fj + fk)
    if drag != 0.0 or lift != 0.0 or tris.every_aerodynamic_force != 0:
        fa = aerodynamic_force(x[i], x[j], x[k], (v[i] + v[j] + v[k]) / 3.0, drag, lift) / 3.0
        fi = fi + fa
        fj = fj + fa
        fk = fk + fa
    wp.atomic_add(f, i, fi)
    wp.atomic_add(f, j, fj)
    wp.atomic_add(f, k, fk)


# ------------------------------------------------------------------------------------------------ bending


@wp.kernel
def eval_bending_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), edges: BendingData,
                        f: wp.array(dtype=wp.vec3)):
    """Dihedral bending: energy ke/2 (angle - rest)^2 and damping kd d(angle)/dt, with the angle's gradient in
    Bridson's closed form; one thread per edge, boundary edges (an opposite vertex -1) skipped."""
    e = wp.tid()
    i0 = edges.indices[e, 0]
    i1 = edges.indices[e, 1]
    i2 = edges.indices[e, 2]
    i3 = edges.indices[e, 3]
    if i0 < 0 or i1 < 0:
        return
    angle, d0, d1, d2, d3, ok = dihedral_angle_gradients(x[i0], x[i1], x[i2], x[i3])
    if not ok:
        return
    angle_rate = wp.dot(d0, v[i0]) + wp.dot(d1, v[i1]) + wp.dot(d2, v[i2]) + wp.dot(d3, v[i3])
    torque = (edges.properties[e, 0] * (angle - edges.rest_angle[e]) + edges.properties[e, 1] * angle_rate) \
        * edges.rest_scale[e]
    wp.atomic_sub(f, i0, d0 * torque)
    wp.atomic_sub(f, i1, d1 * torque)
    wp.atomic_sub(f, i2, d2 * torque)
    wp.atomic_sub(f, i3, d3 * torque)


@wp.kernel
def eval_quadratic_bending_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), edges: BendingData,
                                  f: wp.array(dtype=wp.vec3)):
    """Quadratic bending (Bergou et al. 2006): energy ke/2 scale |b|^2 of the bend vector b = sum_i w_i x_i and
    damping kd scale db/dt with db/dt = sum_i w_i v_i; the force on vertex i is -w_i (ke b + kd db/dt) scale.
    Linear in the positions, so smooth through any fold. One thread per edge, boundary edges skipped."""
    e = wp.tid()
    i0 = edges.indices[e, 0]
    i1 = edges.indices[e, 1]
    i2 = edges.indices[e, 2]
    i3 = edges.indices[e, 3]
    if i0 < 0 or i1 < 0:
        return
    w0 = edges.weights[e, 0]
    w1 = edges.weights[e, 1]
    w2 = edges.weights[e, 2]
    w3 = edges.weights[e, 3]
    bend = bend_vector(x[i0], x[i1], x[i2], x[i3], w0, w1, w2, w3)
    bend_rate = bend_vector(v[i0], v[i1], v[i2], v[i3], w0, w1, w2, w3)
    load = (bend * edges.properties[e, 0] + bend_rate * edges.properties[e, 1]) * edges.rest_scale[e]
    wp.atomic_sub(f, i0, load * w0)
    wp.atomic_sub(f, i1, load * w1)
    wp.atomic_sub(f, i2, load * w2)
    wp.atomic_sub(f, i3, load * w3)


# ------------------------------------------------------------------------------------------------ contact


@wp.func
def friction_force(vt: wp.vec3, fn: float, kf: float, mu: float):
    """Regularised Coulomb friction opposing the tangential velocity `vt` [m/s]: -min(kf |vt|, mu fn) vt/|vt|.
    The viscous branch needs no division, so it is smooth through |vt| = 0."""
    speed = wp.length(vt)
    if kf * speed <= mu * fn:
        return vt * (-kf)
    return vt * (-mu * fn / speed)


@wp.kernel
def eval_shape_contact_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                              radius: wp.array(dtype=float), flags: wp.array(dtype=wp.int32), shapes: ShapeData,
                              params: ContactParams, mu: wp.array(dtype=float), f: wp.array(dtype=wp.vec3)):
    """Penalty contact of particle p with shape s (one thread per pair): the contact begins when the
    particle's surface is within `margin` of the shape; normal force ke * depth plus damping kd of the
    approaching normal velocity, and regularised Coulomb friction of coefficient mu[0] (Model.soft_contact_mu:
    an array, so that its gradient is computed; params.mu is not read). Shapes attached to a body sit at the
    body's pose and damping and friction act on the velocity relative to the body's surface (one-way coupling:
    the body feels nothing). Launched over (particle, slot): slot k of particle p is a shape of its world or a
    shared one (shape_of_slot), so particles and shapes of two different worlds never touch."""
    p, k = wp.tid()
    s = shape_of_slot(shapes, p, k)
    if (flags[p] & PARTICLE_ACTIVE) == 0 or s < 0:
        return
    d, n = collider_sdf(shapes, s, x[p], radius[p] + params.margin)
    c = d - radius[p] - params.margin
    if c >= 0.0:
        return
    vp = v[p] - shape_point_velocity(shapes, s, x[p])
    vn = wp.dot(vp, n)
    fn = -params.ke * c
    fd = -params.kd * wp.min(vn, 0.0)
    ft = friction_force(vp - n * vn, fn, params.kf, mu[0])
    wp.atomic_add(f, p, n * (fn + fd) + ft)


# ------------------------------------------------------------------------------------------------ inputs, integration


@wp.kernel
def add_external_forces(f_ext: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3)):
    """f += f_ext (Control.particle_f) [N]."""
    i = wp.tid()
    wp.atomic_add(f, i, f_ext[i])


@wp.func
def inverse_mass(m: float):
    """1/m [1/kg], and 0 for a fixed particle (m = 0)."""
    if m > 0.0:
        return 1.0 / m
    return 0.0


@wp.kernel
def integrate_particles(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
                        mass: wp.array(dtype=float), flags: wp.array(dtype=wp.int32), params: IntegratorParams,
                        x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    """Semi-implicit Euler: v' = (v + dt (f / m + g)) * velocity_scale, x' = x + dt v'. Fixed (m = 0) and
    inactive particles keep their position, and fixed ones get zero velocity."""
    i = wp.tid()
    inv_m = inverse_mass(mass[i])
    if inv_m == 0.0:
        x_out[i] = x[i]
        v_out[i] = wp.vec3(0.0, 0.0, 0.0)
        return
    if (flags[i] & PARTICLE_ACTIVE) == 0:
        x_out[i] = x[i]
        v_out[i] = v[i]
        return
    v_new = (v[i] + (f[i] * inv_m + params.gravity) * params.dt) * params.velocity_scale
    v_out[i] = v_new
    x_out[i] = x[i] + v_new * params.dt
