"""The two cloth solvers agree where physics says they must: the static equilibrium of a stretched cloth."""

import numpy as np

import sim


def _hanging_cloth(device):
    """A 4 x 4-cell springs-only cloth pinned along its top edge, hanging in the x-y plane under gravity."""
    b = sim.ModelBuilder(up_axis="y")
    b.add_cloth_grid(pos=(0.0, 1.0, 0.0), rot=sim.quat_identity(), vel=(0.0, 0.0, 0.0), dim_x=4, dim_y=4,
                     cell_x=0.1, cell_y=0.1, mass=0.05, tri_ke=0.0, tri_ka=0.0, tri_kd=0.0, add_springs=True,
                     spring_ke=50.0, spring_kd=0.0, fix_top=True)
    return b.finalize(device=device)


def _settle(model, solver, dt, steps):
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


def test_semi_implicit_and_xpbd_agree_on_a_hanging_cloth_equilibrium(device):
    model = _hanging_cloth(device)
    explicit = _settle(model, sim.SolverSemiImplicit(model, damping=8.0), 1.0e-3, 4000)
    xpbd = _settle(model, sim.SolverXPBD(model, iterations=100, damping=8.0), 1.0 / 120.0, 300)
    a, b = explicit.particle_q.numpy(), xpbd.particle_q.numpy()
    rest = model.particle_q.numpy()
    sag = np.abs(a[:, 1] - rest[:, 1]).max()
    assert sag > 0.02, "the cloth must stretch noticeably for the comparison to mean something"
    # both at rest, at the same equilibrium
    assert np.abs(explicit.particle_qd.numpy()).max() < 1e-2
    assert np.abs(xpbd.particle_qd.numpy()).max() < 1e-2
    print(f"sag {sag:.4f} m, largest difference {np.abs(a - b).max():.5f} m")
    np.testing.assert_allclose(a, b, atol=0.1 * sag)
