"""The contact law of the rigid-body solver: the force of one contact point from its depth, normal and relative
velocity, and the wrench it puts on one body of the pair.

Two forms of the normal force, per shape (docs/rigid_contact.md):
    time constant (the default): a spring-damper of the pair's effective mass m_eff at the contact point, stated
        as a time constant tau [s] and damping ratio zeta (MuJoCo's solref): stiffness m_eff / (tau zeta)^2,
        damping 2 m_eff / tau, treated implicitly along the normal. The depth at rest is then about
        g (tau + dt)^2 whatever the mass.
    penalty (a shape that states ke/kd): stiffness ke [N/m] and damping kd [N s/m], explicit.
A pair's force is the sum of both, each with the mean of the two shapes' coefficients (a shape in one form has
zero coefficients in the other), so a pair of one form is exactly that form.

Conventions as in kernels.py: body_qd is (angular velocity w [rad/s], linear velocity of the centre of mass v [m/s])
in world; wrenches are (torque about the centre of mass [N m], force [N]) in world.
"""

import kernels as wp

from ...geometry import body_point_velocity


#: the most candidate contact points of one shape pair (box-capsule; collide.feature_count)
MAX_PAIR_FEATURES = wp.constant(11)
#: steps by which a contact of restitution e stretches its time scale, per unit of e (see normal_force)
BOUNCE_STEPS = wp.constant(4.0)
#: the least time scale of a contact in steps (as MuJoCo keeps its time constant at least 2 steps)
SAFE_STEPS = wp.constant(2.0)


@wp.struct
class ContactRecord:
    """The time-constant contacts of each contact row (a body shape), as pass 0 evaluated them, for the coupled
    passes (kernels.coupled_pass), [rows, capacity]: the contact of feature f of the row's partner number p is
    in column p MAX_PAIR_FEATURES + f (a fixed place, which the backward pass finds again; partners beyond the
    capacity are not recorded and keep the law's force); a column whose effective mass is 0 holds none. Per
    contact: point x [m], normal n (from b to a), separating normal speed vn [m/s] and slip velocity vt [m/s] of a
    relative to b, the law's normal impulse over the step [N s], the pair's effective mass [kg], friction mu [-]
    and kf [N s/m], bodies a and b."""

    x: wp.array2d(dtype=wp.vec3)
    n: wp.array2d(dtype=wp.vec3)
    vt: wp.array2d(dtype=wp.vec3)
    vn: wp.array2d(dtype=float)
    impulse: wp.array2d(dtype=float)
    mass: wp.array2d(dtype=float)
    mu: wp.array2d(dtype=float)
    kf: wp.array2d(dtype=float)
    body_a: wp.array2d(dtype=wp.int32)
    body_b: wp.array2d(dtype=wp.int32)


@wp.struct
class ContactSettings:
    """Settings of the contact kernels."""

    margin: float  # candidate points closer than this are examined [m]
    restitution_velocity: float  # normal speed over which loading turns into unloading [m/s]
    smoothing: float  # depth over which the normal stiffness ramps up from 0 to full [m]; 0: none
    dt: float  # step the time-constant form is implicit over [s]; 0: the instantaneous (explicit) force
    record: int  # 1: contact_wrench writes every time-constant contact of row ctx.row into `contacts`
    contacts: ContactRecord
    # when not empty ([body_count]), the kernels that store a body's whole contact wrench (a body of one row) also
    # store the twist it predicts at the end of the step (kernels.predicted_twist), for the first coupled pass
    twist: wp.array(dtype=wp.spatial_vector)


@wp.struct
class PairContext:
    """What every contact point of one shape pair (a, b) shares: the two bodies (-1: static), the body whose wrench
    is wanted (a's when self_is_a is 1, b's when 0) and its world centre of mass [m], the pair's material (the
    means of the two shapes' ke [N/m], kd [N s/m], kf [N s/m], mu [-], restitution [-], and of the time-constant
    form's stiffness per unit mass k_hat = 1 / (tau zeta)^2 [1/s^2] and damping per unit mass c_hat = 2 / tau
    [1/s]), whether forces are wanted at all (forces 0: only whether the pair touches), and, for the time-constant
    form, both bodies' world centres of mass [m], inverse masses [1/kg] and world inverse inertias [1/(kg m^2)]
    (zero for static and kinematic bodies)."""

    body_a: int
    body_b: int
    self_is_a: int
    row: int  # the contact row (body shape) evaluating the pair, where ContactSettings.record writes,
    record_column: int  # from this column on (its partner number times MAX_PAIR_FEATURES)
    self_com: wp.vec3
    ke: float
    kd: float
    kf: float
    mu: float
    restitution: float
    k_hat: float
    c_hat: float
    forces: int
    com_a: wp.vec3
    com_b: wp.vec3
    inv_mass_a: float
    inv_mass_b: float
    inv_inertia_a: wp.mat33
    inv_inertia_b: wp.mat33


@wp.func
def time_constant_rates(timeconst: float, dampratio: float):
    """(k_hat [1/s^2], c_hat [1/s]) of a shape's time-constant form: 1 / (tau zeta)^2 and 2 / tau (MuJoCo's
    solref with dmax = 1: natural frequency 1 / (tau zeta), damping ratio zeta); (0, 0) for a shape in the penalty
    form (timeconst 0)."""
    if timeconst <= 0.0:
        return 0.0, 0.0
    omega = 1.0 / (timeconst * dampratio)
    return omega * omega, 2.0 / timeconst


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
def normal_force(depth: float, vn: float, m_eff: float, ctx: PairContext, settings: ContactSettings):
    """Normal force [N] (>= 0) at `depth` [m] (smoothed) and separating normal speed vn [m/s], of a contact
    point whose effective mass along the normal is m_eff [kg] (0: both sides immovable).

    Restitution e: the stiffness is full while the bodies approach and e^2 of it while they separate, blended
    smoothly over |vn| ~ restitution_velocity, so the contact returns the fraction e^2 of the energy it stored
    and the normal speed leaves at e times the arrival speed. In the time-constant form the blend is scaled so
    that a contact at rest (vn = 0) has the stiffness m_eff k_hat; its time scale tau zeta is kept above 2 dt
    (smoothly) and stretched by 4 e dt (a bounce must last enough steps to return e^2 of its energy); the damping
    acts only on slow contacts (a window 1 - tanh(A^2 / restitution_velocity^2) on the oscillation amplitude
    A^2 = vn^2 + omega^2 depth^2): it settles resting contacts without taking energy from bounces, which
    restitution governs. The time-constant terms are implicit along the normal (the force at the end of the
    step, the point's motion linearised with m_eff): the force is divided by 1 + dt c + dt^2 k (per unit mass),
    and dt k joins the damping where it acts. Never pulling."""
    rv = settings.restitution_velocity
    approaching = 0.5 * (1.0 - wp.tanh(vn / rv))
    e2 = ctx.restitution * ctx.restitution
    blend = e2 + (1.0 - e2) * approaching
    fn = ctx.ke * depth * blend - ctx.kd * vn
    if m_eff > 0.0 and ctx.k_hat > 0.0:
        dt = settings.dt
        # the time scale tau zeta is kept above SAFE_STEPS dt (smoothly: a stiffer contact chatters), and a
        # bouncing contact's is stretched by BOUNCE_STEPS e dt, so that a bounce lasts enough steps for the
        # energy it returns to be e^2 of what it stored
        period = 1.0 / wp.sqrt(ctx.k_hat)
        floor = SAFE_STEPS * dt
        stretch = period / (wp.sqrt(period * period + floor * floor) + BOUNCE_STEPS * ctx.restitution * dt)
        k_hat = ctx.k_hat * stretch * stretch
        c_hat = ctx.c_hat * stretch
        k = k_hat * 2.0 / (1.0 + e2)  # loading stiffness: k_hat at rest, where blend = (1 + e^2) / 2
        # damped only while the contact's oscillation is slow: its amplitude in speed, vn^2 + omega^2 depth^2
        # (conserved through a bounce, ~ (g / omega)^2 at rest), well below restitution_velocity^2
        amplitude2 = vn * vn + k_hat / (1.0 + k_hat * dt * dt) * depth * depth
        slow = 1.0 - wp.tanh(amplitude2 / (rv * rv))
        c = (c_hat + k_hat * dt) * slow
        fn = fn + m_eff * (k * blend * depth - c * vn) / (1.0 + dt * c_hat * slow + dt * dt * k)
    return wp.max(fn, 0.0)


@wp.func
def body_response(inv_mass: float, inv_inertia: wp.mat33, r: wp.vec3, n: wp.vec3):
    """n . (velocity change of the body point at r [m] from the centre of mass per unit impulse along n) [1/kg]."""
    rn = wp.cross(r, n)
    return inv_mass + wp.dot(rn, inv_inertia * rn)


@wp.func
def effective_mass(ctx: PairContext, n: wp.vec3, x: wp.vec3):
    """The pair's effective mass [kg] along n at world point x: 1 / (sum of the two bodies' responses); 0 when
    neither can move."""
    response = body_response(ctx.inv_mass_a, ctx.inv_inertia_a, x - ctx.com_a, n) + \
        body_response(ctx.inv_mass_b, ctx.inv_inertia_b, x - ctx.com_b, n)
    if response <= 0.0:
        return 0.0
    return 1.0 / response


@wp.func
def point_velocity(body_q: wp.array(dtype=wp.transform), body_qd: wp.array(dtype=wp.spatial_vector),
                   body_com: wp.array(dtype=wp.vec3), b: int, x: wp.vec3):
    """Velocity [m/s] of world point x moving with body b (zero for static shapes, b < 0)."""
    if b >= 0:
        return body_point_velocity(body_q[b], body_qd[b], body_com[b], x)
    return wp.vec3(0.0, 0.0, 0.0)


@wp.func
def coupled_normal_impulse(previous: float, impulse: float, vn: float, m_eff: float, vn_predicted: float,
                           relaxation: float):
    """The normal impulse [N s] of a time-constant contact after one more Jacobi pass that couples it to the other
    contacts of its two bodies. `impulse` is the law's (normal_force dt), which alone would bring the point's
    separating speed from vn to the target vn + impulse / m_eff [m/s] (the implicit law's end speed); `previous`
    is the contact's impulse after the passes before (the law's before the first), and vn_predicted [m/s] the
    point's separating speed at the end of the step predicted from every contact's impulse of those passes. The
    pass adds relaxation m_eff (target - vn_predicted), never letting the impulse pull: at the fixed point every
    contact ends the step at its target speed whatever pushes its bodies, so a light body between a heavy one and
    the ground passes the heavy one's load on instead of being squeezed by it (the contact's stiffness is then
    that of the mass it holds, not of the pair's own effective mass). A contact alone on its bodies, or contacts
    the law already serves exactly (a box flat on the ground), are unchanged."""
    target = vn + impulse / m_eff
    return wp.max(previous + relaxation * m_eff * (target - vn_predicted), 0.0)


@wp.func
def record_contact(ctx: PairContext, settings: ContactSettings, feature: int, x: wp.vec3, n: wp.vec3, vn: float,
                   vt: wp.vec3, fn: float, m_eff: float):
    """Write a time-constant contact (the pair's candidate point `feature`, normal force fn [N] of the law) into
    row ctx.row of settings.contacts, where the row has room."""
    record = settings.contacts
    slot = ctx.record_column + feature
    if slot < record.x.shape[1]:
        record.x[ctx.row, slot] = x
        record.n[ctx.row, slot] = n
        record.vt[ctx.row, slot] = vt
        record.vn[ctx.row, slot] = vn
        record.impulse[ctx.row, slot] = fn * settings.dt
        record.mass[ctx.row, slot] = m_eff
        record.mu[ctx.row, slot] = ctx.mu
        record.kf[ctx.row, slot] = ctx.kf
        record.body_a[ctx.row, slot] = ctx.body_a
        record.body_b[ctx.row, slot] = ctx.body_b


@wp.func
def contact_force(d: float, n: wp.vec3, v_rel: wp.vec3, x: wp.vec3, ctx: PairContext, settings: ContactSettings,
                  feature: int):
    """Force [N] on body a of a contact at penetration -d [m] with normal n (from b to a), at world point x [m],
    with velocity of a relative to b v_rel [m/s]: the normal force (normal_force) and regularised Coulomb
    friction (friction_force). A time-constant contact is recorded for the coupled passes when settings.record
    (as the pair's candidate point `feature`)."""
    vn = wp.dot(v_rel, n)
    m_eff = float(0.0)
    if ctx.k_hat > 0.0:
        m_eff = effective_mass(ctx, n, x)
    fn = normal_force(smoothed_depth(-d, settings.smoothing), vn, m_eff, ctx, settings)
    vt = v_rel - n * vn
    if settings.record != 0 and m_eff > 0.0:
        record_contact(ctx, settings, feature, x, n, vn, vt, fn, m_eff)
    return n * fn + friction_force(vt, fn, ctx.mu, ctx.kf)


@wp.func
def contact_wrench(ctx: PairContext, body_q: wp.array(dtype=wp.transform),
                   body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                   settings: ContactSettings, d: float, n: wp.vec3, x: wp.vec3, feature: int):
    """Wrench on the pair's `self` body of a candidate contact point at world x [m] with signed distance d [m]
    (a contact when negative) and normal n from b toward a; zero when not in contact or forces are not wanted."""
    if d >= 0.0 or ctx.forces == 0:
        return wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    v_rel = point_velocity(body_q, body_qd, body_com, ctx.body_a, x) - \
        point_velocity(body_q, body_qd, body_com, ctx.body_b, x)
    f = contact_force(d, n, v_rel, x, ctx, settings, feature)
    if ctx.self_is_a == 0:
        f = -f
    return wp.spatial_vector(wp.cross(x - ctx.self_com, f), f)
