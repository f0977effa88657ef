"""The penalty contact law of the rigid-body solver: the force of one contact point from its depth, normal and
relative velocity, and the wrench it puts on one body of the pair.

Conventions as in kernels.py: body_qd is (angular velocity w [rad/s], linear velocity of the centre of mass v [m/s])
in world; wrenches are (torque about the centre of mass [N m], force [N]) in world.
"""

import kernels as wp

from ...geometry import body_point_velocity


@wp.struct
class ContactSettings:
    """Settings of the contact kernels."""

    margin: float  # candidate points closer than this are examined [m]
    restitution_velocity: float  # normal speed over which loading turns into unloading [m/s]
    smoothing: float  # depth over which the normal stiffness ramps up from 0 to ke [m]; 0: none


@wp.struct
class PairContext:
    """What every contact point of one shape pair (a, b) shares: the two bodies (-1: static), the body whose wrench
    is wanted (a's when self_is_a is 1, b's when 0) and its world centre of mass [m], the pair's material (the
    means of the two shapes' ke [N/m], kd [N s/m], kf [N s/m], mu [-], restitution [-]), and whether forces are
    wanted at all (forces 0: only whether the pair touches)."""

    body_a: int
    body_b: int
    self_is_a: int
    self_com: wp.vec3
    ke: float
    kd: float
    kf: float
    mu: float
    restitution: float
    forces: int


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
def point_velocity(body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                   body_com: wp.array(dtype=wp.vec3), b: int, x: wp.vec3):
    """Velocity [m/s] of world point x moving with body b (zero for static shapes, b < 0)."""
    if b >= 0:
        return body_point_velocity(body_q[b], body_qd[b], body_com[b], x)
    return wp.vec3(0.0, 0.0, 0.0)


@wp.func
def contact_wrench(ctx: PairContext, body_q: wp.array(dtype=wp.transform),
                   body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                   settings: ContactSettings, d: float, n: wp.vec3, x: wp.vec3):
    """Wrench on the pair's `self` body of a candidate contact point at world x [m] with signed distance d [m]
    (a contact when negative) and normal n from b toward a; zero when not in contact or forces are not wanted."""
    if d >= 0.0 or ctx.forces == 0:
        return wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    v_rel = point_velocity(body_q, body_qd, body_com, ctx.body_a, x) - \
        point_velocity(body_q, body_qd, body_com, ctx.body_b, x)
    f = contact_force(d, n, v_rel, ctx.ke, ctx.kd, ctx.kf, ctx.mu, ctx.restitution, settings)
    if ctx.self_is_a == 0:
        f = -f
    return wp.spatial_vector(wp.cross(x - ctx.self_com, f), f)
