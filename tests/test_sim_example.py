"""The issue's example scene runs as written with both solvers: finite, above the ground, draped on the sphere."""

import numpy as np
import pytest

import sim


def _example_model(device):
    b = sim.ModelBuilder(up_axis="y")
    b.add_cloth_grid(pos=(0, 2, 0), rot=sim.quat_identity(), vel=(0, 0, 0), dim_x=32, dim_y=32, cell_x=0.05,
                     cell_y=0.05, mass=0.1, tri_ke=1e3, tri_ka=1e3, tri_kd=1e-1, edge_ke=10.0, fix_left=True)
    b.add_shape_sphere(pos=(0.8, 1.0, 0.8), radius=0.4)
    b.add_ground_plane()
    return b.finalize(device=device, requires_grad=False)


@pytest.mark.parametrize("solver_name, steps", [("semi_implicit", 960), ("xpbd", 48)])
def test_example_cloth_scene_runs(device, solver_name, steps):
    model = _example_model(device)
    solver = sim.SolverXPBD(model, iterations=10) if solver_name == "xpbd" else sim.SolverSemiImplicit(model)
    s0, s1 = model.state(), model.state()
    dt = 1.0 / 60.0 / 16.0
    for _ in range(steps):
        solver.step(model, s0, s1, control=None, dt=dt)
        s0, s1 = s1, s0
    q = s0.particle_q.numpy()
    assert np.isfinite(q).all()
    assert q[:, 1].min() > -0.02  # above the ground
    pinned = model.particle_mass.numpy() == 0.0
    np.testing.assert_allclose(q[pinned], model.particle_q.numpy()[pinned])  # the left edge stays put
    start = model.particle_q.numpy()
    assert q[~pinned, 1].mean() < start[~pinned, 1].mean() - 0.005  # the free cloth moved down under gravity
