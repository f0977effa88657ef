"""Whole-system quantities of particles (centre of mass, kinetic and gravitational potential energy) as tile
reductions: each block loads TILE masses, positions or velocities, sums them with tile_sum and adds the block's
sum into a 1-element result. Differentiable (they are used in losses): every result is a wp.array of shape [1].

Every particle counts, weighted by its mass: fixed particles (mass 0) contribute nothing.
"""

import kernels as wp

# no `from __future__ import annotations` here: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

TILE = 64  # particles per block


@wp.func
def mass_weighted(m: float, x: wp.vec3):
    return m * x


@wp.func
def kinetic_energy_density(m: float, v: wp.vec3):
    return 0.5 * m * wp.dot(v, v)


@wp.kernel
def mass_moment_tiled(particle_mass: wp.array(dtype=float), particle_q: wp.array(dtype=wp.vec3),
                      moment: wp.array(dtype=wp.vec3), total_mass: wp.array(dtype=float)):
    block = wp.tid()
    m = wp.tile_load(particle_mass, shape=TILE, offset=block * TILE)
    x = wp.tile_load(particle_q, shape=TILE, offset=block * TILE)
    wp.tile_atomic_add(moment, wp.tile_sum(wp.tile_map(mass_weighted, m, x)))
    wp.tile_atomic_add(total_mass, wp.tile_sum(m))


@wp.kernel
def kinetic_energy_tiled(particle_mass: wp.array(dtype=float), particle_qd: wp.array(dtype=wp.vec3),
                         energy: wp.array(dtype=float)):
    block = wp.tid()
    m = wp.tile_load(particle_mass, shape=TILE, offset=block * TILE)
    v = wp.tile_load(particle_qd, shape=TILE, offset=block * TILE)
    wp.tile_atomic_add(energy, wp.tile_sum(wp.tile_map(kinetic_energy_density, m, v)))


@wp.kernel
def center_from_moment(moment: wp.array(dtype=wp.vec3), total_mass: wp.array(dtype=float),
                       center: wp.array(dtype=wp.vec3)):
    if total_mass[0] > 0.0:
        center[0] = moment[0] / total_mass[0]


@wp.kernel
def potential_from_moment(moment: wp.array(dtype=wp.vec3), gravity: wp.vec3, energy: wp.array(dtype=float)):
    energy[0] = -wp.dot(gravity, moment[0])


def _blocks(count: int) -> int:
    return max((count + TILE - 1) // TILE, 1)


def _result(model, dtype, *inputs):
    grad = any(a.requires_grad for a in inputs)
    return wp.zeros(1, dtype=dtype, device=model.device, requires_grad=grad)


def mass_moment(model, state):
    """First mass moment sum(m_i x_i) [kg m] (vec3, shape [1]) and total mass [kg] (shape [1])."""
    moment = _result(model, wp.vec3, model.particle_mass, state.particle_q)
    total = _result(model, float, model.particle_mass)
    wp.launch_tiled(mass_moment_tiled, dim=_blocks(model.particle_count),
                    inputs=[model.particle_mass, state.particle_q], outputs=[moment, total], block_dim=TILE,
                    device=model.device)
    return moment, total


def center_of_mass(model, state):
    """Centre of mass of the particles [m], vec3, shape [1]; zero when the total mass is zero."""
    moment, total = mass_moment(model, state)
    center = _result(model, wp.vec3, model.particle_mass, state.particle_q)
    wp.launch(center_from_moment, dim=1, inputs=[moment, total], outputs=[center], device=model.device)
    return center


def kinetic_energy(model, state):
    """Kinetic energy sum(m_i |v_i|^2) / 2 [J], shape [1]."""
    energy = _result(model, float, model.particle_mass, state.particle_qd)
    wp.launch_tiled(kinetic_energy_tiled, dim=_blocks(model.particle_count),
                    inputs=[model.particle_mass, state.particle_qd], outputs=[energy], block_dim=TILE,
                    device=model.device)
    return energy


def potential_energy_gravity(model, state):
    """Gravitational potential energy -sum(m_i g . x_i) [J] (zero at the origin), shape [1]."""
    moment, _ = mass_moment(model, state)
    energy = _result(model, float, model.particle_mass, state.particle_q)
    wp.launch(potential_from_moment, dim=1, inputs=[moment, model.gravity], outputs=[energy], device=model.device)
    return energy
