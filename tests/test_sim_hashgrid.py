"""sim.hashgrid and its user sim.particle_contact.

The grid's cells against numpy, and neighbour queries against brute force (random points with duplicates, points
on cell borders, negative coordinates, grids of 1 and 2 cells along an axis). Contact: two particles (equal and
opposite forces along the line of centres, XPBD corrections split by inverse mass), 200 random particles against
an O(n^2) kernel, gradcheck of forces and corrections.
"""

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import gradcheck
from sim.hashgrid import HashGrid, HashGridData, hash_grid_cell_of, hash_grid_dims_for, hash_grid_neighbor_cell
from sim.model import PARTICLE_ACTIVE, ContactParams
from sim.particle_contact import eval_particle_contacts, particle_pair_force, solve_particle_contacts


@wp.kernel
def grid_candidates(points: wp.array(dtype=wp.vec3), grid: HashGridData, radius: float,
                    visits: wp.array2d(dtype=wp.int32), near: wp.array2d(dtype=wp.int32)):
    # visits[i, j]: how often the query of i met j; near[i, j]: j met and within radius
    i = wp.tid()
    p = points[i]
    c = hash_grid_cell_of(grid, p)
    for n in range(27):
        cell = hash_grid_neighbor_cell(grid, c, n)
        if cell >= 0:
            for k in range(grid.cell_start[cell], grid.cell_end[cell]):
                j = grid.sorted_index[k]
                wp.atomic_add(visits, i, j, 1)
                if wp.length(p - points[j]) < radius:
                    wp.atomic_add(near, i, j, 1)


@wp.kernel
def brute_force_near(points: wp.array(dtype=wp.vec3), radius: float, near: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    if wp.length(points[i] - points[j]) < radius:
        near[i, j] = 1


def _points(seed=0, count=300, radius=0.1):
    rng = np.random.default_rng(seed)
    p = rng.uniform(-0.7, 0.5, (count, 3))
    p[:20] = p[20:40]  # duplicates
    p[40:60] = np.round(p[40:60] / radius) * radius  # on cell corners
    p[60:80, 0] = np.round(p[60:80, 0] / radius) * radius  # on cell faces
    p[80:90] = p[80] + rng.uniform(-1, 1, (10, 3)) * 0.2 * radius  # a dense cluster
    return p.astype(np.float32)


def _query(points_np, radius, dims, device):
    points = wp.array(points_np, dtype=wp.vec3, device=device)
    grid = HashGrid(*dims, device=device)
    grid.build(points, radius)
    n = len(points_np)
    visits = wp.zeros((n, n), dtype=wp.int32, device=device)
    near = wp.zeros((n, n), dtype=wp.int32, device=device)
    wp.launch(grid_candidates, dim=n, inputs=[points, grid.data, radius, visits, near], device=device)
    expected = wp.zeros((n, n), dtype=wp.int32, device=device)
    wp.launch(brute_force_near, dim=(n, n), inputs=[points, radius, expected], device=device)
    return grid, visits.numpy(), near.numpy(), expected.numpy()


@pytest.mark.parametrize("dims", [(16, 16, 16), (5, 7, 3), (1, 2, 4), (128, 128, 128)])
def test_neighbors_match_brute_force(device, dims):
    radius = 0.15
    pts = _points(radius=radius)
    _, visits, near, expected = _query(pts, radius, dims, device)
    assert visits.max() == 1, "a candidate was visited twice"
    np.testing.assert_array_equal(near, expected)
    # every pair within the radius (in float64, away from the boundary) is a candidate
    dist = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    assert (visits[dist < radius * (1 - 1e-5)] == 1).all()
    assert expected.sum() > 2 * len(pts)  # the scene has neighbours beyond the points themselves


def test_cells_match_numpy(device):
    radius, dims = 0.1, (5, 7, 3)
    pts = _points(seed=1, radius=radius)
    grid = HashGrid(*dims, device=device)
    grid.build(wp.array(pts, dtype=wp.vec3, device=device), radius)
    c = np.floor(pts.astype(np.float32) * np.float32(1.0 / radius)).astype(np.int64) % np.array(dims)
    cell = (c[:, 2] * dims[1] + c[:, 1]) * dims[0] + c[:, 0]
    start, end = grid.data.cell_start.numpy(), grid.data.cell_end.numpy()
    np.testing.assert_array_equal(end - start, np.bincount(cell, minlength=np.prod(dims)))
    np.testing.assert_array_equal(start[1:], end[:-1])
    assert start[0] == 0 and end[-1] == len(pts)
    # sorted by cell, then by point index: the result of a stable sort
    np.testing.assert_array_equal(grid.data.sorted_index.numpy(), np.argsort(cell, kind="stable"))


def test_rebuild_keeps_earlier_data(device):
    grid = HashGrid(4, 4, 4, device=device)
    first = grid.build(wp.array(_points(seed=2), dtype=wp.vec3, device=device), 0.1)
    kept = first.sorted_index.numpy().copy()
    second = grid.build(wp.array(_points(seed=3), dtype=wp.vec3, device=device), 0.1)
    assert second is grid.data and second is not first
    np.testing.assert_array_equal(first.sorted_index.numpy(), kept)


def test_empty(device):
    points = wp.zeros(0, dtype=wp.vec3, device=device)
    data = HashGrid(3, 3, 3, device=device).build(points, 0.5)
    assert (data.cell_end.numpy() == 0).all()


def test_invalid(device):
    grid = HashGrid(3, 3, 3, device=device)
    with pytest.raises(ValueError):
        grid.build(wp.zeros(1, dtype=wp.vec3, device=device), 0.0)
    with pytest.raises(ValueError):
        HashGrid(0, 3, 3, device=device)


def test_dims_for():
    assert hash_grid_dims_for(0) == 3
    assert hash_grid_dims_for(1000) == 10
    assert hash_grid_dims_for(10 ** 9) == 128


# ------------------------------------------------------------------------------------------------------------
# Particle contact


@wp.kernel
def brute_force_contact_forces(particle_q: wp.array(dtype=wp.vec3), particle_qd: wp.array(dtype=wp.vec3),
                               particle_radius: wp.array(dtype=float), params: ContactParams,
                               particle_f: wp.array(dtype=wp.vec3)):
    i, j = wp.tid()
    if i != j:
        delta = particle_q[i] - particle_q[j]
        d = wp.length(delta)
        c = d - particle_radius[i] - particle_radius[j] - params.margin
        if c < 0.0 and d > 0.0:
            wp.atomic_add(particle_f, i, particle_pair_force(delta / d, particle_qd[i] - particle_qd[j], c, params))


def _particle_model(q, qd, mass, radius, device, flags=None):
    """A Model holding particles only (built directly: ModelBuilder.finalize cannot yet allocate the empty
    vec3/mat22 arrays of a model without triangles or shapes)."""
    m = sim.Model(device)
    n = len(q)
    m.particle_count = n
    m.particle_q = wp.array(np.asarray(q, np.float32), dtype=wp.vec3, device=device)
    m.particle_qd = wp.array(np.asarray(qd, np.float32), dtype=wp.vec3, device=device)
    mass = np.asarray(mass, np.float32)
    inv_mass = np.where(mass > 0, 1.0 / np.where(mass > 0, mass, 1.0), 0.0).astype(np.float32)
    m.particle_mass = wp.array(mass, dtype=float, device=device)
    m.particle_inv_mass = wp.array(inv_mass, dtype=float, device=device)
    m.particle_radius = wp.array(np.asarray(radius, np.float32), dtype=float, device=device)
    flags = np.full(n, PARTICLE_ACTIVE) if flags is None else flags
    m.particle_flags = wp.array(np.asarray(flags, np.int32), dtype=wp.int32, device=device)
    m.particle_max_radius = float(np.max(radius))
    return m


def _forces(model, state):
    f = wp.zeros(model.particle_count, dtype=wp.vec3, device=model.device, requires_grad=True)
    eval_particle_contacts(model, state, f)
    return f


def test_two_particles_push_apart_along_centres(device):
    q = np.array([[0.1, -0.2, 0.3], [0.25, -0.1, 0.28]])
    model = _particle_model(q, np.zeros((2, 3)), [1.0, 2.0], [0.1, 0.12], device)
    f = _forces(model, model.state()).numpy()
    d = q[0] - q[1]
    dist = np.linalg.norm(d)
    depth = 0.1 + 0.12 + model.particle_contact.margin - dist
    np.testing.assert_allclose(f[0], model.particle_contact.ke * depth * d / dist, rtol=1e-4)
    np.testing.assert_allclose(f[1], -f[0], rtol=1e-6)


def test_contact_conserves_momentum_with_damping_and_friction(device):
    q = [[0.0, 0.0, 0.0], [0.15, 0.02, 0.0], [0.05, 0.12, 0.04]]
    qd = [[0.3, 0.0, 0.2], [-0.4, 0.1, 0.0], [0.0, -0.5, 0.1]]
    model = _particle_model(q, qd, [1.0, 2.0, 0.5], [0.1, 0.1, 0.1], device)
    f = _forces(model, model.state()).numpy()
    assert np.abs(f).max() > 10.0
    np.testing.assert_allclose(f.sum(axis=0), 0.0, atol=1e-4)


def test_separated_and_inactive_particles_feel_nothing(device):
    q = [[0.0, 0.0, 0.0], [0.15, 0.0, 0.0], [1.0, 0.0, 0.0]]
    model = _particle_model(q, np.zeros((3, 3)), [1.0] * 3, [0.1] * 3, device, flags=[PARTICLE_ACTIVE, 0, 1])
    np.testing.assert_array_equal(_forces(model, model.state()).numpy(), 0.0)


def test_contact_forces_match_brute_force(device):
    rng = np.random.default_rng(4)
    n = 200
    q = rng.uniform(-0.5, 0.5, (n, 3))
    q[:10] = q[10:20] + 1e-3  # near-duplicates
    model = _particle_model(q, rng.normal(0, 1, (n, 3)), rng.uniform(0.5, 2, n), rng.uniform(0.03, 0.08, n),
                            device)
    state = model.state()
    f = _forces(model, state).numpy()
    expected = wp.zeros(n, dtype=wp.vec3, device=device)
    wp.launch(brute_force_contact_forces, dim=(n, n),
              inputs=[state.particle_q, state.particle_qd, model.particle_radius, model.particle_contact, expected],
              device=device)
    assert (np.linalg.norm(f, axis=1) > 0).sum() > n // 2
    np.testing.assert_allclose(f, expected.numpy(), rtol=1e-4, atol=1e-3)


def _gradcheck_scene(device):
    # pairs clearly inside or outside the contact distance, relative normal speeds clearly nonzero, and one
    # sliding pair whose friction is at the Coulomb bound: no kink within eps of the configuration
    q = [[0.0, 0.0, 0.0], [0.17, 0.03, 0.0], [0.02, 0.16, 0.05], [0.6, 0.0, 0.0], [0.75, 0.01, -0.02]]
    qd = [[0.2, 0.0, 0.1], [-0.3, 0.1, 0.0], [0.0, -0.4, 0.1], [0.0, 0.0, 0.0], [-0.1, 3.0, 0.5]]
    model = _particle_model(q, qd, [1.0] * 5, [0.1] * 5, device)
    model.particle_contact = ContactParams(ke=200.0, kd=5.0, kf=20.0, mu=0.5, margin=0.01)
    return model


def test_contact_force_gradient(device):
    model = _gradcheck_scene(device)
    state = model.state(requires_grad=True)

    def forces(q, qd):
        state.particle_q, state.particle_qd = q, qd
        return _forces(model, state)

    gradcheck(forces, [state.particle_q, state.particle_qd], eps=1e-3)


def test_xpbd_corrections_separate_a_pair(device):
    q = np.array([[0.0, 0.0, 0.0], [0.12, 0.05, 0.0]])
    model = _particle_model(q, np.zeros((2, 3)), [1.0, 3.0], [0.1, 0.1], device)
    delta = wp.zeros(2, dtype=wp.vec3, device=device)
    count = wp.zeros(2, dtype=wp.int32, device=device)
    solve_particle_contacts(model, model.particle_q, model.particle_inv_mass, delta, count)
    moved = q + delta.numpy()
    np.testing.assert_allclose(np.linalg.norm(moved[0] - moved[1]), 0.2 + model.particle_contact.margin, rtol=1e-5)
    np.testing.assert_allclose(1.0 * delta.numpy()[0] + 3.0 * delta.numpy()[1], 0.0, atol=1e-6)  # momentum
    np.testing.assert_array_equal(count.numpy(), [1, 1])


def test_xpbd_pinned_particle_does_not_move(device):
    q = np.array([[0.0, 0.0, 0.0], [0.12, 0.05, 0.0]])
    model = _particle_model(q, np.zeros((2, 3)), [0.0, 3.0], [0.1, 0.1], device)
    delta = wp.zeros(2, dtype=wp.vec3, device=device)
    count = wp.zeros(2, dtype=wp.int32, device=device)
    solve_particle_contacts(model, model.particle_q, model.particle_inv_mass, delta, count)
    np.testing.assert_array_equal(delta.numpy()[0], 0.0)
    np.testing.assert_allclose(np.linalg.norm(q[0] - q[1] - delta.numpy()[1]), 0.21, rtol=1e-5)


def test_xpbd_friction_opposes_sliding(device):
    # particle 1 slid along x over the step while pressed into particle 0 (below it)
    prev = np.array([[0.0, 0.0, 0.0], [-0.01, 0.15, 0.0]])
    q = np.array([[0.0, 0.0, 0.0], [0.0, 0.15, 0.0]])
    model = _particle_model(q, np.zeros((2, 3)), [1.0, 1.0], [0.1, 0.1], device)
    prev_q = wp.array(prev.astype(np.float32), dtype=wp.vec3, device=device)
    delta = wp.zeros(2, dtype=wp.vec3, device=device)
    count = wp.zeros(2, dtype=wp.int32, device=device)
    solve_particle_contacts(model, model.particle_q, model.particle_inv_mass, delta, count, particle_q_prev=prev_q)
    d = delta.numpy()
    depth = 0.21 - 0.15
    # the Coulomb bound (mu * depth = 0.03) exceeds the slide: the pair's relative tangential motion is undone
    np.testing.assert_allclose(d[1], [-0.005, depth / 2, 0.0], atol=1e-6)
    np.testing.assert_allclose(d[0], -d[1], atol=1e-6)


def test_xpbd_correction_gradient(device):
    model = _gradcheck_scene(device)
    prev_np = model.particle_q.numpy() + np.random.default_rng(1).uniform(-0.01, 0.01, (5, 3)).astype(np.float32)
    prev = wp.array(prev_np, dtype=wp.vec3, device=device)

    def corrections(q):
        delta = wp.zeros(model.particle_count, dtype=wp.vec3, device=device, requires_grad=True)
        count = wp.zeros(model.particle_count, dtype=wp.int32, device=device)
        solve_particle_contacts(model, q, model.particle_inv_mass, delta, count, particle_q_prev=prev)
        return delta

    gradcheck(corrections, [wp.clone(model.particle_q)], eps=1e-3)


def test_gradient_through_two_grid_builds(device):
    # the second build (other positions, other neighbours) must not change what the first launch replays
    model = _gradcheck_scene(device)
    model._particle_grid = HashGrid(8, 8, 8, device=device)  # 3 cells per axis would make every cell a neighbour
    state = model.state(requires_grad=True)
    far = wp.array(state.particle_q.numpy()[::-1] * 3.0, dtype=wp.vec3, device=device)

    def forces(q, q_far):
        state.particle_q = q
        first = _forces(model, state)
        state.particle_q = q_far
        return first, _forces(model, state)

    gradcheck(forces, [state.particle_q, far], eps=1e-3)
