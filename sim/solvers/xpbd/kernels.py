"""Kernels of the XPBD solver: prediction, Jacobi constraint projections, position update, velocities.

Every constraint kernel reads one iteration's positions and Lagrange multipliers and hands each of its particles'
corrections [m] to `emit_correction`: without a Tape into its own slot of a `corrections` array (no atomics:
deterministic, and cheaper than compare-and-swap on the CPU), summed per particle by `gather_corrections`; on a
Tape atomically into `delta` (a slot array per iteration would cost 4x the memory). Updated multipliers go into
new arrays. Jacobi iterations
are made consistent by scaling each constraint's multiplier update by 1 / (the largest constraint count of its
particles): positions move by exactly what the multipliers account for, so the converged state is the compliant
equilibrium (averaging positions by count while multipliers take full steps would make the cloth count times softer);
contacts add into `contact_delta` [m]; `apply_corrections` writes the next iteration's positions into a new
array. No kernel writes an array it (or an earlier launch of the step) reads, so the tape can
differentiate the whole iteration sequence. Inverse masses are computed here from the masses (not read from
`Model.particle_inv_mass`) so that gradients reach `Model.particle_mass`.
"""

import kernels as wp

from ...bending import bend_vector
from ...geometry import (ShapeData, collider_sdf, dihedral_angle_gradients, shape_of_slot,
                        shape_point_velocity)
from ...model import PARTICLE_ACTIVE

#: Lengths, squared lengths and denominators below this count as degenerate: the constraint is skipped.
EPSILON = wp.constant(1.0e-9)
PI = wp.constant(3.14159265358979)


@wp.struct
class XPBDSettings:
    """Per-step settings shared by the solver's kernels."""

    dt: float  # time step [s]
    relaxation: float  # scale of the averaged Jacobi correction [-]
    damping: float  # velocity damping rate [1/s] (solver damping + Model.particle_damping)
    gravity: wp.vec3  # acceleration [m/s^2]


@wp.func
def inverse_mass(mass: float, flags: int):
    """1 / mass [1/kg]; 0 for fixed (mass 0) or inactive particles, which never move."""
    if mass > 0.0 and (flags & PARTICLE_ACTIVE) != 0:
        return 1.0 / mass
    return 0.0


@wp.kernel
def inverse_masses(mass: wp.array(dtype=float), flags: wp.array(dtype=wp.int32), inv_mass: wp.array(dtype=float)):
    """inverse_mass of every particle, once per step: the constraint kernels of every iteration read it."""
    i = wp.tid()
    inv_mass[i] = inverse_mass(mass[i], flags[i])


@wp.func
def emit_correction(delta: wp.array(dtype=wp.vec3), corrections: wp.array(dtype=wp.vec3),
                    slot_of: wp.array(dtype=wp.int32), slot: int, i: int, dx: wp.vec3, use_slots: int):
    """Hand on particle i's correction dx [m]: into its own slot (gathered later; no atomics, used without a
    Tape), or atomically into delta[i] (on a Tape, where a slot array per iteration would cost memory)."""
    if use_slots != 0:
        corrections[slot_of[slot]] = dx
    else:
        wp.atomic_add(delta, i, dx)


@wp.func
def scaled_compliance(stiffness: float, dt: float):
    """XPBD's time-scaled compliance alpha / dt^2 [kg] of a constraint with `stiffness` (> 0)."""
    return 1.0 / (stiffness * dt * dt)


@wp.func
def jacobi_scale(degree: wp.array(dtype=float), i: int, j: int):
    """1 / the largest constraint count of particles i and j: the share of a Jacobi update a constraint takes."""
    return 1.0 / wp.max(wp.max(degree[i], degree[j]), 1.0)


# ---------------------------------------------------------------------------------------------------------------
# Prediction


@wp.kernel
def predict_positions(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
                      f_control: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
                      flags: wp.array(dtype=wp.int32), settings: XPBDSettings,
                      x_pred: wp.array(dtype=wp.vec3)):
    """x* = x + dt v + dt^2 (g + f / m) for movable particles; fixed ones stay. Shapes [particle_count]."""
    i = wp.tid()
    w = inverse_mass(mass[i], flags[i])
    xi = x[i]
    if w > 0.0:
        dt = settings.dt
        a = settings.gravity + (f[i] + f_control[i]) * w
        xi = xi + v[i] * dt + a * (dt * dt)
    x_pred[i] = xi


# ---------------------------------------------------------------------------------------------------------------
# Distance constraints: springs and triangle edges


@wp.func
def project_distance(xi: wp.vec3, xj: wp.vec3, wi: float, wj: float, rest: float, stiffness: float, dt: float,
                     lam: float):
    """XPBD step of C = |xi - xj| - rest with compliance 1 / stiffness. Returns (dlambda [N s^2], unit direction
    n from j to i, active); an inactive constraint (no stiffness, both ends fixed, or degenerate) has dlambda 0.
    Corrections: dxi = wi dlambda n, dxj = -wj dlambda n."""
    d = xi - xj
    l = wp.length(d)
    n = wp.vec3(0.0, 0.0, 0.0)
    dlam = float(0.0)
    active = False
    if stiffness > 0.0 and wi + wj > 0.0 and l > EPSILON:
        n = d / l
        alpha = scaled_compliance(stiffness, dt)
        dlam = (rest - l - alpha * lam) / (wi + wj + alpha)
        active = True
    return dlam, n, active


@wp.kernel
def solve_springs(x: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=float),
                  spring_indices: wp.array2d(dtype=wp.int32), rest_length: wp.array(dtype=float),
                  stiffness: wp.array(dtype=float), lambda_in: wp.array(dtype=float), settings: XPBDSettings,
                  degree: wp.array(dtype=float), slot_base: int, slot_of: wp.array(dtype=wp.int32), use_slots: int,
                  delta: wp.array(dtype=wp.vec3), corrections: wp.array(dtype=wp.vec3),
                  lambda_out: wp.array(dtype=float)):
    """One Jacobi pass over the springs (distance constraints, compliance 1 / stiffness). Shapes [spring_count];
    spring s hands the corrections of its two particles to emit_correction (slots slot_of[slot_base + 2 s (+ 1)])."""
    s = wp.tid()
    i = spring_indices[s, 0]
    j = spring_indices[s, 1]
    wi = inv_mass[i]
    wj = inv_mass[j]
    lam = lambda_in[s]
    dlam, n, active = project_distance(x[i], x[j], wi, wj, rest_length[s], stiffness[s], settings.dt, lam)
    dlam = dlam * jacobi_scale(degree, i, j)
    lambda_out[s] = lam + dlam
    emit_correction(delta, corrections, slot_of, slot_base + 2 * s, i, n * (wi * dlam), use_slots)
    emit_correction(delta, corrections, slot_of, slot_base + 2 * s + 1, j, n * (-wj * dlam), use_slots)


@wp.kernel
def triangle_edge_constants(tri_poses: wp.array(dtype=wp.mat22), tri_materials: wp.array2d(dtype=float),
                            rest_length: wp.array(dtype=float), stiffness: wp.array(dtype=float)):
    """Rest length L0 [m] and stiffness k = 2 mu A / L0^2 [N/m] of each triangle edge, launched over
    (tri_count, 3) once per step (the iterations read them); outputs [tri_count * 3], edge e of triangle t at
    3 t + e, from vertex e to vertex (e + 1) % 3."""
    t, e = wp.tid()
    rest_frame = wp.inverse(tri_poses[t])  # columns: rest edges x1 - x0, x2 - x0 in the triangle's plane
    e1 = wp.vec2(rest_frame[0, 0], rest_frame[1, 0])
    e2 = wp.vec2(rest_frame[0, 1], rest_frame[1, 1])
    edge = e1
    if e == 1:
        edge = e2 - e1
    elif e == 2:
        edge = e2
    rest = wp.length(edge)
    area = 0.5 * wp.abs(wp.determinant(rest_frame))
    rest_length[t * 3 + e] = rest
    stiffness[t * 3 + e] = 2.0 * tri_materials[t, 0] * area / wp.max(rest * rest, EPSILON)


@wp.kernel
def solve_triangle_edges(x: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=float),
                         tri_indices: wp.array2d(dtype=wp.int32),
                         rest_length: wp.array(dtype=float), stiffness: wp.array(dtype=float),
                         lambda_in: wp.array(dtype=float), settings: XPBDSettings, degree: wp.array(dtype=float),
                         slot_base: int, slot_of: wp.array(dtype=wp.int32), use_slots: int,
                         delta: wp.array(dtype=wp.vec3), corrections: wp.array(dtype=wp.vec3),
                         lambda_out: wp.array(dtype=float)):
    """One Jacobi pass over the triangles' edges, launched over (tri_count, 3); lambdas [tri_count * 3].

    The membrane is three distance constraints per triangle, edge e from vertex e to vertex (e + 1) % 3, of rest
    length L0 and stiffness k = 2 mu A / L0^2 [N/m] (A the rest area; `triangle_edge_constants`): the energy
    k/2 (l - L0)^2 of a stretch along the edge equals StVK's mu term, A mu eps^2. Lambda (area stiffness) is not
    modelled. Edge c = 3 t + e hands its particles' corrections to emit_correction (slots slot_base + 2 c (+ 1)).
    """
    t, e = wp.tid()
    a = tri_indices[t, e]
    b = tri_indices[t, (e + 1) % 3]
    wa = inv_mass[a]
    wb = inv_mass[b]
    c = t * 3 + e
    lam = lambda_in[c]
    dlam, n, active = project_distance(x[a], x[b], wa, wb, rest_length[c], stiffness[c], settings.dt, lam)
    dlam = dlam * jacobi_scale(degree, a, b)
    lambda_out[c] = lam + dlam
    emit_correction(delta, corrections, slot_of, slot_base + 2 * c, a, n * (wa * dlam), use_slots)
    emit_correction(delta, corrections, slot_of, slot_base + 2 * c + 1, b, n * (-wb * dlam), use_slots)


# ---------------------------------------------------------------------------------------------------------------
# Bending


@wp.func
def emit_hinge_corrections(delta: wp.array(dtype=wp.vec3), corrections: wp.array(dtype=wp.vec3),
                           slot_of: wp.array(dtype=wp.int32), base: int, o0: int, o1: int, v0: int, v1: int,
                           d1: wp.vec3, d2: wp.vec3, d3: wp.vec3, d4: wp.vec3, use_slots: int, active: bool):
    """Hand on a bending edge's corrections of (o0, o1, v0, v1) [m] (emit_correction, slots base + 0..3). A
    skipped edge (not `active`: an opposite vertex may be -1) writes only its zero slots. Gated on `active`,
    not on a nonzero multiplier update: at an exactly flat hinge with no multiplier the update is 0 but its
    derivative is not, and the adjoint must still run."""
    if use_slots != 0 or active:
        emit_correction(delta, corrections, slot_of, base, o0, d1, use_slots)
        emit_correction(delta, corrections, slot_of, base + 1, o1, d2, use_slots)
        emit_correction(delta, corrections, slot_of, base + 2, v0, d3, use_slots)
        emit_correction(delta, corrections, slot_of, base + 3, v1, d4, use_slots)


@wp.kernel
def solve_bending(x: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=float),
                  edge_indices: wp.array2d(dtype=wp.int32), rest_angle: wp.array(dtype=float),
                  rest_scale: wp.array(dtype=float), bending_properties: wp.array2d(dtype=float),
                  lambda_in: wp.array(dtype=float), settings: XPBDSettings, degree: wp.array(dtype=float),
                  slot_base: int, slot_of: wp.array(dtype=wp.int32), use_slots: int,
                  delta: wp.array(dtype=wp.vec3), corrections: wp.array(dtype=wp.vec3),
                  lambda_out: wp.array(dtype=float)):
    """One Jacobi pass over the bending edges of the dihedral model: C = theta - rest angle [rad], compliance
    1 / (ke scale) [rad/(N m)].

    theta is the signed dihedral angle of sim.bending.dihedral_angle: the angle between the normals of triangles
    (o0, v0, v1) and (o1, v1, v0), positive about v1 - v0. Shapes [edge_count]; edges with a missing opposite
    vertex (-1) or ke <= 0 are skipped. Edge k hands the corrections of (o0, o1, v0, v1) to emit_correction
    (slots slot_base + 4 k + (0, 1, 2, 3); zeros when skipped, and the atomic path skips them).
    """
    k = wp.tid()
    o0 = edge_indices[k, 0]
    o1 = edge_indices[k, 1]
    v0 = edge_indices[k, 2]
    v1 = edge_indices[k, 3]
    lam = lambda_in[k]
    dlam = float(0.0)
    zero = wp.vec3(0.0, 0.0, 0.0)
    d1 = zero
    d2 = zero
    d3 = zero
    d4 = zero
    active = False
    ke = bending_properties[k, 0] * rest_scale[k]  # Model.edge_rest_scale: warp.sim/Newton's meaning of ke
    if o0 >= 0 and o1 >= 0 and ke > 0.0:
        w1 = inv_mass[o0]
        w2 = inv_mass[o1]
        w3 = inv_mass[v0]
        w4 = inv_mass[v1]
        theta, g1, g2, g3, g4, ok = dihedral_angle_gradients(x[o0], x[o1], x[v0], x[v1])
        if ok:
            c = theta - rest_angle[k]
            if c > PI:
                c = c - 2.0 * PI
            elif c < -PI:
                c = c + 2.0 * PI
            alpha = scaled_compliance(ke, settings.dt)
            denom = w1 * wp.dot(g1, g1) + w2 * wp.dot(g2, g2) + w3 * wp.dot(g3, g3) + w4 * wp.dot(g4, g4)
            if denom > EPSILON:
                dlam = (-c - alpha * lam) / (denom + alpha)
                dlam = dlam * wp.min(jacobi_scale(degree, o0, o1), jacobi_scale(degree, v0, v1))
                d1 = g1 * (w1 * dlam)
                d2 = g2 * (w2 * dlam)
                d3 = g3 * (w3 * dlam)
                d4 = g4 * (w4 * dlam)
                active = True
    lambda_out[k] = lam + dlam
    emit_hinge_corrections(delta, corrections, slot_of, slot_base + 4 * k, o0, o1, v0, v1, d1, d2, d3, d4,
                           use_slots, active)


@wp.kernel
def solve_bending_quadratic(x: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=float),
                            edge_indices: wp.array2d(dtype=wp.int32), edge_weights: wp.array2d(dtype=float),
                            rest_scale: wp.array(dtype=float), bending_properties: wp.array2d(dtype=float),
                            lambda_in: wp.array(dtype=wp.vec3), settings: XPBDSettings,
                            degree: wp.array(dtype=float), slot_base: int, slot_of: wp.array(dtype=wp.int32),
                            use_slots: int, delta: wp.array(dtype=wp.vec3), corrections: wp.array(dtype=wp.vec3),
                            lambda_out: wp.array(dtype=wp.vec3)):
    """One Jacobi pass over the bending edges of the quadratic model: the vector constraint C = b, the bend
    vector sum_i w_i x_i [-] (Model.edge_bending_weights), compliance 1 / (ke scale); multipliers vec3
    [edge_count].

    dC/dx_i = w_i I, so the XPBD system is a multiple of the identity, sum_i inv_mass_i w_i^2, and the update is
    exact and linear in the positions: no angle, no wrap at +-pi. Slots and skipped edges as in solve_bending.
    """
    k = wp.tid()
    o0 = edge_indices[k, 0]
    o1 = edge_indices[k, 1]
    v0 = edge_indices[k, 2]
    v1 = edge_indices[k, 3]
    lam = lambda_in[k]
    dlam = wp.vec3(0.0, 0.0, 0.0)
    d1 = dlam
    d2 = dlam
    d3 = dlam
    d4 = dlam
    active = False
    ke = bending_properties[k, 0] * rest_scale[k]
    if o0 >= 0 and o1 >= 0 and ke > 0.0:
        g1 = edge_weights[k, 0]
        g2 = edge_weights[k, 1]
        g3 = edge_weights[k, 2]
        g4 = edge_weights[k, 3]
        w1 = inv_mass[o0]
        w2 = inv_mass[o1]
        w3 = inv_mass[v0]
        w4 = inv_mass[v1]
        denom = w1 * g1 * g1 + w2 * g2 * g2 + w3 * g3 * g3 + w4 * g4 * g4
        if denom > EPSILON:
            c = bend_vector(x[o0], x[o1], x[v0], x[v1], g1, g2, g3, g4)
            alpha = scaled_compliance(ke, settings.dt)
            dlam = (c + lam * alpha) * (-1.0 / (denom + alpha))
            dlam = dlam * wp.min(jacobi_scale(degree, o0, o1), jacobi_scale(degree, v0, v1))
            d1 = dlam * (w1 * g1)
            d2 = dlam * (w2 * g2)
            d3 = dlam * (w3 * g3)
            d4 = dlam * (w4 * g4)
            active = True
    lambda_out[k] = lam + dlam
    emit_hinge_corrections(delta, corrections, slot_of, slot_base + 4 * k, o0, o1, v0, v1, d1, d2, d3, d4,
                           use_slots, active)


# ---------------------------------------------------------------------------------------------------------------
# Particle-shape contact


@wp.kernel
def solve_shape_contacts(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3),
                         mass: wp.array(dtype=float), flags: wp.array(dtype=wp.int32),
                         radius: wp.array(dtype=float), shapes: ShapeData, friction: wp.array(dtype=float),
                         settings: XPBDSettings, contact_delta: wp.array(dtype=wp.vec3)):
    """One pass over particle-shape pairs.

    A particle closer than its radius to a shape's surface is pushed out along the shape's normal to distance
    radius. Positional Coulomb friction then removes the tangential displacement since the start of the step
    (`x_start`) relative to the shape's surface (a shape on a body carries the particle along), by at most
    friction[0] * (normal correction) [m]: static friction below that limit, sliding above (the coefficient is
    an array, Model.soft_contact_mu, so that its gradient is computed). Shapes attached to a body sit at the
    body's pose of the step's start (one-way coupling: the body feels nothing).
    Contact corrections are summed into `contact_delta` [m], not averaged: each one vanishes as its contact
    starts, so the step stays continuous in the inputs (a contact count in the Jacobi average would jump).
    Launched over (particle, slot): slot k of particle i is a shape of its world or a shared one (shape_of_slot),
    so particles and shapes of two different worlds never touch.
    """
    i, k = wp.tid()
    s = shape_of_slot(shapes, i, k)
    w = inverse_mass(mass[i], flags[i])
    if w > 0.0 and s >= 0:
        xi = x[i]
        d, n = collider_sdf(shapes, s, xi, radius[i])
        penetration = radius[i] - d
        if penetration > 0.0:
            dx = n * penetration
            moved = xi + dx - x_start[i] - shape_point_velocity(shapes, s, xi) * settings.dt
            tangential = moved - n * wp.dot(moved, n)
            # static: remove all the slip (no division, so its derivative holds down to zero slip);
            # sliding: remove `limit` of it
            limit = friction[0] * penetration
            if limit > 0.0:
                slip = wp.length(tangential)
                if slip > limit:
                    dx = dx - tangential * (limit / slip)
                else:
                    dx = dx - tangential
            wp.atomic_add(contact_delta, i, dx)


# ---------------------------------------------------------------------------------------------------------------
# Position update and velocities


@wp.kernel
def gather_corrections(slot_start: wp.array(dtype=wp.int32), corrections: wp.array(dtype=wp.vec3),
                       delta: wp.array(dtype=wp.vec3)):
    """delta[i] = the sum of particle i's correction slots, which are contiguous (slot_start[i] to
    slot_start[i + 1]) [m]: each thread reads (and in the backward pass, adds into) its own stretch of memory."""
    i = wp.tid()
    total = wp.vec3(0.0, 0.0, 0.0)
    for j in range(slot_start[i], slot_start[i + 1]):
        total = total + corrections[j]
    delta[i] = total


@wp.kernel
def apply_corrections(x: wp.array(dtype=wp.vec3), delta: wp.array(dtype=wp.vec3),
                      contact_delta: wp.array(dtype=wp.vec3), settings: XPBDSettings,
                      x_new: wp.array(dtype=wp.vec3)):
    """x_new = x + relaxation * (delta + contact_delta). Constraint corrections arrive already scaled by their
    Jacobi share (see jacobi_scale), consistently with their multipliers. Shapes [particle_count]."""
    i = wp.tid()
    x_new[i] = x[i] + (delta[i] + contact_delta[i]) * settings.relaxation


@wp.kernel
def update_velocities(x_start: wp.array(dtype=wp.vec3), x_end: wp.array(dtype=wp.vec3), settings: XPBDSettings,
                      v_out: wp.array(dtype=wp.vec3)):
    """v = (x_end - x_start) / dt, scaled by max(1 - damping dt, 0). Shapes [particle_count]."""
    i = wp.tid()
    scale = wp.max(1.0 - settings.damping * settings.dt, 0.0) / settings.dt
    v_out[i] = (x_end[i] - x_start[i]) * scale


@wp.kernel
def add_averaged_corrections(pair_delta: wp.array(dtype=wp.vec3), pair_count: wp.array(dtype=wp.int32),
                             contact_delta: wp.array(dtype=wp.vec3)):
    """contact_delta[i] += pair_delta[i] / count[i]: one particle's particle-contact corrections, averaged [m].
    An atomic add, not a read and a write, so that the gradient of contact_delta passes through unchanged."""
    i = wp.tid()
    c = pair_count[i]
    if c > 0:
        wp.atomic_add(contact_delta, i, pair_delta[i] / float(c))
