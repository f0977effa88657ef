"""Particle-particle contact through a hash grid: penalty forces (`eval_particle_contacts`, for force-based
integrators) and position corrections (`solve_particle_contacts`, for XPBD).

Two active particles i and j touch when their distance d is below r_i + r_j + margin (`model.particle_contact`):
the margin widens every particle's contact shell. Both functions are differentiable with respect to positions,
velocities (forces) and inverse masses (corrections); the neighbour search (integer data) is not differentiated.
The model's grid is rebuilt on every call, with cells as wide as the largest contact distance. Particles of two
different worlds (Model.particle_world) never touch, even where they overlap in space.
"""

import kernels as wp

from .hashgrid import HashGrid, HashGridData, hash_grid_cell_of, hash_grid_dims_for, hash_grid_neighbor_cell
from .model import PARTICLE_ACTIVE, ContactParams
from .worlds import element_worlds, worlds_interact

# no `from __future__ import annotations` here: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

MIN_DISTANCE = 1.0e-9  # coincident centres [m] have no contact normal: such pairs are skipped


@wp.func
def particle_pair_force(n: wp.vec3, v: wp.vec3, c: float, params: ContactParams):
    """Force on a particle [N] from one contact: normal n (unit, from the other particle towards this one),
    relative velocity v [m/s] (this one's minus the other's), penetration c <= 0 [m]. A spring-dashpot along n
    (damping only while approaching) and friction that is viscous (kf) up to the Coulomb bound mu * |f_n|."""
    vn = wp.dot(n, v)
    fn = c * params.ke + wp.min(vn, 0.0) * params.kd  # <= 0: compressive
    f = -n * fn
    vt = v - n * vn
    vt_sq = wp.dot(vt, vt)
    if vt_sq > 0.0:
        vs = wp.sqrt(vt_sq)  # inside the branch: its derivative is infinite at vt = 0
        ft = wp.min(vs * params.kf, params.mu * -fn)
        f = f - vt * (ft / vs)
    return f


@wp.func
def particle_is_active(flags: wp.array(dtype=wp.int32), i: int):
    return (flags[i] & PARTICLE_ACTIVE) != 0


@wp.func
def particles_may_touch(flags: wp.array(dtype=wp.int32), world: wp.array(dtype=wp.int32), i: int, j: int):
    """Whether neighbour j of particle i is another active particle of a world that interacts with i's."""
    return j != i and particle_is_active(flags, j) and worlds_interact(world[i], world[j])


@wp.func
def position_friction(n: wp.vec3, move_i: wp.vec3, move_j: wp.vec3, depth: float, mu: float):
    """Correction [m] opposing the relative tangential motion over the step, capped by Coulomb's bound
    mu * depth (Macklin et al. 2014, "Unified particle physics", section 6.1)."""
    rel = move_i - move_j
    t = rel - n * wp.dot(n, rel)
    t_sq = wp.dot(t, t)
    out = wp.vec3(0.0, 0.0, 0.0)
    if t_sq > 0.0:
        t_len = wp.sqrt(t_sq)
        out = -t * (wp.min(mu * depth, t_len) / t_len)
    return out


@wp.kernel
def particle_contact_forces(grid: HashGridData, particle_q: wp.array(dtype=wp.vec3),
                            particle_qd: wp.array(dtype=wp.vec3), particle_radius: wp.array(dtype=float),
                            particle_flags: wp.array(dtype=wp.int32), particle_world: wp.array(dtype=wp.int32),
                            params: ContactParams, particle_f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    if not particle_is_active(particle_flags, i):
        return
    x = particle_q[i]
    v = particle_qd[i]
    reach = particle_radius[i] + params.margin
    center = hash_grid_cell_of(grid, x)
    for n in range(27):
        cell = hash_grid_neighbor_cell(grid, center, n)
        if cell >= 0:
            for k in range(grid.cell_start[cell], grid.cell_end[cell]):
                j = grid.sorted_index[k]
                if particles_may_touch(particle_flags, particle_world, i, j):
                    delta = x - particle_q[j]
                    d = wp.length(delta)
                    c = d - reach - particle_radius[j]
                    if c < 0.0 and d > MIN_DISTANCE:
                        f = particle_pair_force(delta / d, v - particle_qd[j], c, params)
                        wp.atomic_add(particle_f, i, f)


@wp.kernel
def particle_contact_corrections(grid: HashGridData, particle_q: wp.array(dtype=wp.vec3),
                                 particle_q_prev: wp.array(dtype=wp.vec3), particle_inv_mass: wp.array(dtype=float),
                                 particle_radius: wp.array(dtype=float), particle_flags: wp.array(dtype=wp.int32),
                                 particle_world: wp.array(dtype=wp.int32), params: ContactParams, friction: int,
                                 delta: wp.array(dtype=wp.vec3),
                                 count: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if not particle_is_active(particle_flags, i):
        return
    w_i = particle_inv_mass[i]
    if w_i == 0.0:
        return
    x = particle_q[i]
    reach = particle_radius[i] + params.margin
    center = hash_grid_cell_of(grid, x)
    for n in range(27):
        cell = hash_grid_neighbor_cell(grid, center, n)
        if cell >= 0:
            for k in range(grid.cell_start[cell], grid.cell_end[cell]):
                j = grid.sorted_index[k]
                if particles_may_touch(particle_flags, particle_world, i, j):
                    d_vec = x - particle_q[j]
                    d = wp.length(d_vec)
                    c = d - reach - particle_radius[j]
                    if c < 0.0 and d > MIN_DISTANCE:
                        share = w_i / (w_i + particle_inv_mass[j])
                        nrm = d_vec / d
                        dx = -nrm * (c * share)
                        if friction != 0:
                            dx = dx + position_friction(nrm, x - particle_q_prev[i], particle_q[j] -
                                                        particle_q_prev[j], -c, params.mu) * share
                        wp.atomic_add(delta, i, dx)
                        wp.atomic_add(count, i, 1)


def particle_grid(model, particle_q) -> HashGridData:
    """Build the model's particle hash grid (created on first use, kept as `model._particle_grid`) from
    positions `particle_q` [m]; cells are as wide as the largest contact distance, 2 * max radius + margin."""
    grid = getattr(model, "_particle_grid", None)
    if grid is None or grid.device != model.device:
        dim = hash_grid_dims_for(model.particle_count)
        grid = HashGrid(dim, dim, dim, device=model.device)
        model._particle_grid = grid
    width = 2.0 * model.particle_max_radius + model.particle_contact.margin
    return grid.build(particle_q, max(width, 1.0e-6))


def eval_particle_contacts(model, state, particle_f):
    """Add the particle-particle contact forces [N] of `state` (positions particle_q [m], velocities
    particle_qd [m/s]) into `particle_f` (vec3, shape [particle_count]), using `model.particle_contact`."""
    if model.particle_count == 0:
        return
    grid = particle_grid(model, state.particle_q)
    wp.launch(particle_contact_forces, dim=model.particle_count,
              inputs=[grid, state.particle_q, state.particle_qd, model.particle_radius, model.particle_flags,
                      element_worlds(model, "particle", model.particle_count), model.particle_contact],
              outputs=[particle_f], device=model.device)


def solve_particle_contacts(model, particle_q, particle_inv_mass, delta, count, *, particle_q_prev=None):
    """One Jacobi pass of particle-particle contact constraints for XPBD.

    Args:
        model: the Model (radii, flags, `particle_contact` parameters).
        particle_q: predicted positions [m], vec3, shape [particle_count].
        particle_inv_mass: inverse masses [1/kg], shape [particle_count]; 0 pins a particle.
        delta: position corrections [m], vec3, shape [particle_count]: each overlapping pair pushes its two
            particles apart along the line of centres, split by inverse mass; added to.
        count: constraints acting on each particle, int32, shape [particle_count]; added to (a solver averages
            delta by it).
        particle_q_prev: positions at the start of the step [m]; when given (and mu > 0), friction cancels the
            pair's relative tangential motion up to mu times the penetration.
    """
    if model.particle_count == 0:
        return
    grid = particle_grid(model, particle_q)
    friction = particle_q_prev is not None and model.particle_contact.mu > 0.0
    prev = particle_q_prev if particle_q_prev is not None else particle_q
    wp.launch(particle_contact_corrections, dim=model.particle_count,
              inputs=[grid, particle_q, prev, particle_inv_mass, model.particle_radius, model.particle_flags,
                      element_worlds(model, "particle", model.particle_count), model.particle_contact,
                      int(friction)],
              outputs=[delta, count], device=model.device)
