"""sim.reductions: centre of mass, kinetic and gravitational potential energy against numpy (counts that fill
blocks exactly, end inside a block, or fit one block), and gradcheck w.r.t. positions, velocities and masses."""

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import gradcheck
from sim.reductions import TILE, center_of_mass, kinetic_energy, potential_energy_gravity


def _particles(count, device, seed=0):
    """A Model and State of `count` particles (built directly: ModelBuilder.finalize cannot yet allocate the
    empty arrays of a model without triangles or shapes)."""
    rng = np.random.default_rng(seed)
    model = sim.Model(device)
    model.particle_count = count
    model.particle_mass = wp.array(rng.uniform(0.5, 2.0, count).astype(np.float32), dtype=float, device=device)
    model.gravity = wp.vec3(0.5, -9.81, 1.0)
    state = sim.State()
    state.particle_count = count
    state.particle_q = wp.array(rng.uniform(-1, 1, (count, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    state.particle_qd = wp.array(rng.uniform(-1, 1, (count, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    return model, state


def _numpy(model, state):
    m = model.particle_mass.numpy().astype(np.float64)
    x = state.particle_q.numpy().astype(np.float64)
    v = state.particle_qd.numpy().astype(np.float64)
    g = np.array([model.gravity[0], model.gravity[1], model.gravity[2]], np.float64)
    return m, x, v, g


@pytest.mark.parametrize("count", [1, TILE - 3, 2 * TILE, 5 * TILE + 7])
def test_reductions_match_numpy(device, count):
    model, state = _particles(count, device)
    m, x, v, g = _numpy(model, state)
    np.testing.assert_allclose(center_of_mass(model, state).numpy()[0], (m[:, None] * x).sum(0) / m.sum(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kinetic_energy(model, state).numpy()[0], 0.5 * (m * (v * v).sum(1)).sum(), rtol=1e-5)
    np.testing.assert_allclose(potential_energy_gravity(model, state).numpy()[0], -(m * (x @ g)).sum(), rtol=1e-5,
                               atol=1e-4)


def test_center_of_mass_without_mass_is_zero(device):
    model, state = _particles(3, device)
    model.particle_mass.zero_()
    np.testing.assert_array_equal(center_of_mass(model, state).numpy(), 0.0)


# eps 1e-2: every quantity is at most quadratic in positions and velocities, so central differences are exact up
# to rounding, which a larger step keeps small in float32
GRAD_COUNT = TILE + 9  # two blocks, the second one partly past the end


def test_center_of_mass_gradient(device):
    model, state = _particles(GRAD_COUNT, device, seed=1)

    def run(mass, q):
        model.particle_mass, state.particle_q = mass, q
        return center_of_mass(model, state)

    gradcheck(run, [model.particle_mass, state.particle_q], eps=1e-2)


def test_kinetic_energy_gradient(device):
    model, state = _particles(GRAD_COUNT, device, seed=2)

    def run(mass, qd):
        model.particle_mass, state.particle_qd = mass, qd
        return kinetic_energy(model, state)

    gradcheck(run, [model.particle_mass, state.particle_qd], eps=1e-2)


def test_potential_energy_gradient(device):
    model, state = _particles(GRAD_COUNT, device, seed=3)

    def run(mass, q):
        model.particle_mass, state.particle_q = mass, q
        return potential_energy_gravity(model, state)

    gradcheck(run, [model.particle_mass, state.particle_q], eps=1e-2)
