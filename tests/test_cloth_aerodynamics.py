"""SolverSemiImplicit's aerodynamic triangle force (drag along the normal, lift across the velocity): against the
formula in numpy, skipped where drag and lift are zero with the same forces and position/velocity gradients,
and evaluated everywhere when the materials want a gradient (d/d(drag) is not zero at drag = 0)."""

import types

import numpy as np

import kernels as wp
import sim
from autodiff import Tape, gradcheck
from sim.solvers.semi_implicit import kernels as k
from sim.solvers.semi_implicit.solver import _triangles


def cloth(requires_grad=False):
    b = sim.ModelBuilder(up_axis="y")
    b.add_cloth_grid(pos=(0.0, 1.0, 0.0), rot=sim.quat_identity(), vel=(0.0, 0.0, 0.0), dim_x=3, dim_y=2,
                     cell_x=0.1, cell_y=0.15, mass=0.01)
    return b.finalize("cpu", requires_grad=requires_grad)


def triangle_forces(model, x, v, materials, every=None):
    tris = _triangles(types.SimpleNamespace(tri_indices=model.tri_indices, tri_poses=model.tri_poses,
                                            tri_areas=model.tri_areas, tri_materials=materials))
    if every is not None:
        tris.every_aerodynamic_force = every
    f = wp.zeros(model.particle_count, dtype=wp.vec3, requires_grad=True)
    wp.launch(k.eval_triangle_forces, dim=model.tri_count, inputs=[x, v, tris, f])
    return f


def test_drag_and_lift_match_the_formula():
    model = cloth()
    drag, lift = 0.7, 0.4
    materials = model.tri_materials.numpy()
    materials[:, 2] = 0.0  # no strain-rate damping: at rest shape and uniform velocity only the air acts
    materials[:, 3], materials[:, 4] = drag, lift
    x = model.particle_q
    vel = np.array([0.3, -1.2, 0.5], np.float32)
    v = wp.array(np.tile(vel, (model.particle_count, 1)), dtype=wp.vec3)
    f = triangle_forces(model, x, v, wp.array(materials, dtype=float), every=0).numpy()
    materials[:, 3:] = 0.0
    f -= triangle_forces(model, x, v, wp.array(materials, dtype=float), every=1).numpy()  # the membrane's rounding
    q, expected = x.numpy().astype(np.float64), np.zeros((model.particle_count, 3))
    u = vel.astype(np.float64)
    for i, j, m in model.tri_indices.numpy():
        c = np.cross(q[j] - q[i], q[m] - q[i])
        n = c / np.linalg.norm(c)
        vn, speed = u @ n, np.linalg.norm(u)
        force = (-drag * abs(vn) * vn * n - lift * vn * (n * speed - u * vn / speed)) * 0.5 * np.linalg.norm(c)
        expected[[i, j, m]] += force / 3.0
    np.testing.assert_allclose(f, expected, rtol=1e-5, atol=1e-7)
    assert np.abs(expected).max() > 1e-3


def moving_state(model, seed=0):
    rng = np.random.default_rng(seed)
    x = wp.array(model.particle_q.numpy() + rng.normal(scale=0.01, size=(model.particle_count, 3)),
                 dtype=wp.vec3, requires_grad=True)
    v = wp.array(rng.normal(size=(model.particle_count, 3)), dtype=wp.vec3, requires_grad=True)
    return x, v


def test_still_air_is_skipped_with_the_same_forces_and_gradients():
    model = cloth()
    x, v = moving_state(model)
    seed = np.random.default_rng(1).normal(size=(model.particle_count, 3)).astype(np.float32)
    results = []
    for every in (0, 1):
        tape = Tape()
        with tape:
            f = triangle_forces(model, x, v, model.tri_materials, every)
        tape.backward(grads={f: wp.array(seed, dtype=wp.vec3)})
        results.append((f.numpy().copy(), x.grad.numpy().copy(), v.grad.numpy().copy()))
        tape.zero()
    for skipped, evaluated in zip(*results):
        np.testing.assert_array_equal(skipped, evaluated)
    assert np.abs(results[0][1]).max() > 0.0


@wp.kernel
def with_air(base: wp.array2d(dtype=float), air: wp.array2d(dtype=float), materials: wp.array2d(dtype=float)):
    """materials = base's (mu, lambda, damping) and air's (drag, lift), row by row."""
    t, c = wp.tid()
    if c < 3:
        materials[t, c] = base[t, c]
    else:
        materials[t, c] = air[t, c - 3]


def test_materials_gradient_at_zero_drag_and_lift():
    model = cloth()
    x, v = moving_state(model, seed=2)
    air = wp.zeros((model.tri_count, 2), dtype=float)  # drag = lift = 0 everywhere
    # no membrane: its float32 forces (N) would drown the finite differences of the air's (uN)
    still = wp.zeros((model.tri_count, 5), dtype=float)

    def fn(air):
        materials = wp.zeros((model.tri_count, 5), dtype=float, requires_grad=True)
        wp.launch(with_air, dim=materials.shape, inputs=[still, air], outputs=[materials])
        return triangle_forces(model, x, v, materials)  # the solver's choice: materials require grad

    gradcheck(fn, [air])
    tape = Tape()
    with tape:
        f = fn(air)
    tape.backward(grads={f: wp.array(np.ones((model.particle_count, 3), np.float32), dtype=wp.vec3)})
    grad = air.grad.numpy()
    assert np.abs(grad[:, 0]).max() > 1e-3 and np.abs(grad[:, 1]).max() > 1e-3  # d/d(drag), d/d(lift)
