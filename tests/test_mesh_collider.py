"""Triangle-mesh colliders (ModelBuilder.add_shape_mesh, `type: mesh` in scenes): loading (OBJ, USD, scale,
refusals), cloth draped over a closed mesh with no vertex inside it and no edge crossing it (checked in numpy,
independently of the solvers), open meshes as two-sided surfaces, a mesh moving with its body, and rollout
gradients through mesh contact in both particle solvers (gradcheck)."""

import math

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import gradcheck
from sim.mesh_io import load_mesh
from sim.mesh_shape import checked_mesh, mesh_is_closed

from _intersections import count_edges_crossing_mesh, mesh_edges, winding_numbers
from _meshes import box, icosphere, square

HORIZONTAL = sim.quat_from_axis_angle((1.0, 0.0, 0.0), math.pi / 2)
SOLVERS = {"xpbd": (lambda m: sim.SolverXPBD(m, iterations=10), 1.0 / 480.0),
           "semi_implicit": (lambda m: sim.SolverSemiImplicit(m), 1.0 / 2000.0)}


def run(model, solver, steps, dt, state=None, *, fresh=False):
    """The state after `steps` steps; `fresh`: a new State every step (what a Tape needs), else two swapped."""
    a, b = state or model.state(), model.state()
    for _ in range(steps):
        solver.step(model, a, b, None, dt)
        a, b = (b, model.state()) if fresh else (b, a)
    return a


# ---------------------------------------------------------------------------------------------------------------
# Loading


def test_closed_and_open_meshes_are_told_apart():
    v, t = icosphere(1)
    assert mesh_is_closed(t)
    assert not mesh_is_closed(t[:-1])  # a hole
    flipped = t.copy()
    flipped[0] = flipped[0, ::-1]
    assert not mesh_is_closed(flipped)  # inconsistent orientation: used as a two-sided surface
    assert not mesh_is_closed(square()[1])


@pytest.mark.parametrize("vertices, triangles, message", [
    ([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]], "degenerate"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]], "out of range"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.zeros((0, 3)), "at least one triangle"),
])
def test_bad_meshes_are_refused(vertices, triangles, message):
    with pytest.raises(ValueError, match=message):
        sim.ModelBuilder().add_shape_mesh(vertices, triangles)


def test_obj_and_usd_meshes_load_with_scale(tmp_path):
    from pxr import Usd, UsdGeom
    v, t = icosphere(1)
    obj = tmp_path / "ball.obj"
    obj.write_text("".join(f"v {a} {b} {c}\n" for a, b, c in v) + "".join(f"f {a + 1} {b + 1} {c + 1}\n"
                                                                          for a, b, c in t))
    stage = Usd.Stage.CreateNew(str(tmp_path / "ball.usda"))
    mesh = UsdGeom.Mesh.Define(stage, "/ball")
    mesh.CreatePointsAttr([tuple(p) for p in v])
    mesh.CreateFaceVertexCountsAttr([3] * len(t))
    mesh.CreateFaceVertexIndicesAttr(t.reshape(-1).tolist())
    stage.Save()
    for path in (obj, tmp_path / "ball.usda"):
        vertices, triangles = checked_mesh(*load_mesh(path))
        b = sim.ModelBuilder()
        b.add_particle((0.0, 0.45, 0.0), mass=0.1, radius=0.02)  # inside the unscaled sphere, outside at 0.4
        b.add_shape_mesh(vertices, triangles, pos=(0.0, 0.0, 0.0), scale=0.4)
        model = b.finalize("cpu")
        assert model.shape_mesh_closed.numpy().tolist() == [1]
        assert model.shape_bounding_radius.numpy()[0] == pytest.approx(0.4, rel=1e-5)
        end = run(model, sim.SolverXPBD(model), 120, 1.0 / 240.0)  # falls onto the scaled sphere's top
        assert end.particle_q.numpy()[0, 1] == pytest.approx(0.4 + 0.02, abs=0.02)


# ---------------------------------------------------------------------------------------------------------------
# Physics, checked with numpy geometry


def draped_cloth(solver_name, steps):
    v, t = icosphere(2)
    b = sim.ModelBuilder()
    b.add_cloth_grid(pos=(-0.5, 0.45, -0.5), rot=HORIZONTAL, vel=(0.0, 0.0, 0.0), dim_x=12, dim_y=12, cell_x=1 / 12,
                     cell_y=1 / 12, mass=0.005, tri_ke=500.0, edge_ke=0.01, radius=0.015)
    b.add_shape_mesh(v, t, pos=(0.0, 0.0, 0.0), scale=0.3)
    model = b.finalize("cpu")
    model.soft_contact.mu = 0.3
    make, dt = SOLVERS[solver_name]
    return model, run(model, make(model), steps, dt), (v * 0.3, t)


@pytest.mark.parametrize("solver_name", list(SOLVERS))
def test_cloth_drapes_over_a_mesh_without_entering_it(solver_name):
    steps = 240 if solver_name == "xpbd" else 800  # 0.5 s and 0.4 s
    model, end, (mv, mt) = draped_cloth(solver_name, steps)
    x = end.particle_q.numpy().astype(np.float64)
    assert np.all(np.isfinite(x))
    assert x[:, 1].min() < 0.1, "the cloth's rim fell past the sphere's equator (it drapes)"
    assert np.abs(winding_numbers(x, mv, mt)).max() < 0.5, "no vertex inside the mesh"
    tris = model.tri_indices.numpy()
    assert count_edges_crossing_mesh(x, mesh_edges(tris), mv, mt) == 0, "no cloth edge crosses the mesh"
    top = x[np.argmin(np.linalg.norm(x[:, [0, 2]], axis=1))]
    assert top[1] == pytest.approx(0.3 + 0.015, abs=0.012), "the cloth rests on the mesh's top at its radius"


@pytest.mark.parametrize("solver_name", list(SOLVERS))
def test_open_mesh_is_a_two_sided_surface(solver_name):
    """A particle falling onto an open square from above stops on it; a particle thrown up at it from below
    is stopped under it (and falls back): both at their contact radius from the surface."""
    v, t = square(0.5)
    b = sim.ModelBuilder()
    b.add_particle((0.1, 0.04, 0.0), mass=0.01, radius=0.02)
    b.add_particle((-0.1, -0.05, 0.0), vel=(0.0, 2.0, 0.0), mass=0.01, radius=0.02)
    b.add_shape_mesh(v, t, pos=(0.0, 0.0, 0.0))
    model = b.finalize("cpu")
    make, dt = SOLVERS[solver_name]
    solver = make(model)
    state, scratch = model.state(), model.state()
    highest_below = -1.0
    for _ in range(int(0.15 / dt)):
        solver.step(model, state, scratch, None, dt)
        state, scratch = scratch, state
        highest_below = max(highest_below, float(state.particle_q.numpy()[1, 1]))
    assert state.particle_q.numpy()[0, 1] == pytest.approx(0.02, abs=0.012)
    assert -0.035 < highest_below < -0.005, "the lower particle reached the surface and stayed under it"


def test_a_mesh_on_a_moving_body_carries_the_cloth_resting_on_it():
    """A kinematic body (no mass) whose mesh is a square: moved up by 5 cm, the particle lying on it moves up
    with it and stays at its radius above the surface."""
    v, t = square(0.5)
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.0, 0.0))
    b.add_shape_mesh(v, t, body=body)
    b.add_particle((0.0, 0.02, 0.0), mass=0.01, radius=0.02)
    model = b.finalize("cpu")
    assert model.body_mass.numpy()[0] == 0.0, "a mesh adds no mass"
    solver, dt = sim.SolverXPBD(model), 1.0 / 240.0
    state, scratch = model.state(), model.state()
    for k in range(60):
        pose = np.array([0.0, 0.05 * min(k / 40, 1.0), 0.0, 0.0, 0.0, 0.0, 1.0], np.float32)
        state.body_q.assign(pose[None])
        scratch.body_q.assign(pose[None])
        solver.step(model, state, scratch, None, dt)
        state, scratch = scratch, state
    assert state.particle_q.numpy()[0, 1] == pytest.approx(0.05 + 0.02, abs=0.01)


def test_rigid_solvers_refuse_a_contact_with_a_mesh_naming_the_pair():
    """SolverRigid (and SolverFeatherstone, which collides through it) refuse at construction a body's mesh shape
    against the ground, and a body's box against a static mesh, naming both shapes; excluded pairs and a mesh
    body alone are accepted."""
    v, t = square(0.5)
    b = sim.ModelBuilder()
    body = b.add_body(pos=(0.0, 1.0, 0.0))
    b.add_shape_mesh(v, t, body=body)
    b.add_ground_plane()
    model = b.finalize("cpu")
    with pytest.raises(ValueError, match=r"shape 0 \(mesh, on body 0\) and shape 1 \(plane, static\)"):
        sim.SolverRigid(model)
    sim.SolverRigid(model, excluded_shape_pairs=[(0, 1)])

    b = sim.ModelBuilder()
    b.add_shape_mesh(v, t)
    body = b.add_body(pos=(0.0, 1.0, 0.0))
    b.add_shape_box(body=body, hx=0.1, hy=0.1, hz=0.1)
    model = b.finalize("cpu")
    with pytest.raises(ValueError, match=r"shape 1 \(box, on body 0\) and shape 0 \(mesh, static\)"):
        sim.SolverRigid(model)

    b = sim.ModelBuilder()
    b.add_shape_mesh(v, t, body=b.add_body(pos=(0.0, 1.0, 0.0)))
    sim.SolverRigid(b.finalize("cpu"))  # nothing to collide with


# ---------------------------------------------------------------------------------------------------------------
# Gradients


@wp.kernel
def place_shape(position: wp.array(dtype=wp.vec3), angle: wp.array(dtype=float), axis: wp.vec3,
                shape_transform: wp.array(dtype=wp.transform)):
    """shape_transform[0] = (position, rotation by angle about axis): a collider pose as differentiable inputs."""
    shape_transform[0] = wp.transform(position[0], wp.quat_from_axis_angle(axis, angle[0]))


def mesh_contact_model(scene, solver_name, mesh):
    """Particles resting on the top face of a mesh (a closed box, or an open square: both signing modes),
    pressed on by gravity and moving along it: contacts hold for the whole rollout (a smooth point). static:
    slow tangential motion with friction (every contact sticks); sliding: no friction. XPBD keeps a particle at
    its radius; the penalty contact of the semi-implicit solver starts at radius + margin."""
    vertices, triangles = box((1.0, 0.5, 1.0)) if mesh == "closed" else square(1.0)
    b = sim.ModelBuilder()
    rng = np.random.default_rng(3)
    # semi-implicit: 1 kg particles sink about m g / ke = 1 mm into the contact band, far more than the finite
    # differences move them, so no contact ends
    mass = 0.1 if solver_name == "xpbd" else 1.0
    height = 0.05 if solver_name == "xpbd" else 0.06 - mass * 9.81 / 1.0e4
    for k in range(5):
        along = rng.normal(size=3) * np.array([1.0, 0.0, 1.0])
        along *= (0.05 if scene == "static" else 0.4) / np.linalg.norm(along)
        b.add_particle((rng.uniform(-0.5, 0.5), height, rng.uniform(-0.5, 0.5)), vel=along - np.array([0, 0.05, 0]),
                       mass=mass, radius=0.05)
    b.add_shape_mesh(vertices, triangles, pos=(0.0, -0.5 if mesh == "closed" else 0.0, 0.0))
    model = b.finalize("cpu", requires_grad=True)
    model.soft_contact.mu = 0.6 if scene == "static" else 0.0
    return model


@pytest.mark.parametrize("solver_name", list(SOLVERS))
@pytest.mark.parametrize("scene, mesh", [("sliding", "closed"), ("static", "open")])
def test_mesh_contact_gradients_pass_gradcheck(solver_name, scene, mesh):
    model = mesh_contact_model(scene, solver_name, mesh)
    make, dt = SOLVERS[solver_name]
    solver = make(model)
    # XPBD: steps long enough that gravity (g dt^2) presses harder than the finite-difference perturbation
    steps, dt = (10, 1.0 / 60.0) if solver_name == "xpbd" else (40, dt)

    position = wp.array(model.shape_transform.numpy()[:, :3].copy(), dtype=wp.vec3, requires_grad=True)
    angle = wp.array([0.0], dtype=float, requires_grad=True)  # a tilt about a horizontal axis

    def rollout():
        model.shape_transform = wp.zeros(1, dtype=wp.transform, requires_grad=True)
        wp.launch(place_shape, dim=1, inputs=[position, angle, wp.vec3(0.6, 0.0, 0.8)],
                  outputs=[model.shape_transform])
        state = model.state()
        state.particle_qd = model.particle_qd
        return run(model, solver, steps, dt, state, fresh=True).particle_q

    # not vacuous: every particle is still in contact at the end (below radius + margin)
    assert np.all(rollout().numpy()[:, 1] < 0.06)
    inputs = {"velocity": model.particle_qd, "mass": model.particle_mass, "mesh position": position,
              "mesh rotation": angle}
    if scene == "static":
        inputs["friction"] = model.soft_contact_mu
    for name, x in inputs.items():
        eps = 2e-4 if name == "mesh position" else 1e-3
        report = gradcheck(lambda _: rollout(), [x], eps=eps, atol=2e-3, raise_on_fail=False)
        assert report.passed, f"{solver_name} {scene}: gradient with respect to {name}\n{report}"


def test_shipped_scene_drapes_cloth_over_the_mesh_asset_without_entering_it_or_itself():
    """scenes/cloth_on_mesh.yaml at its settings (XPBD, self-collision on), the first 30 frames (it lands and
    drapes): at every 5th frame no vertex inside the cushion (winding number), no cloth edge crossing it, no
    pair of cloth triangles intersecting (exact tests in numpy)."""
    import os
    from sim.scene import Scene
    from _intersections import count_triangle_intersections
    scene = Scene.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenes",
                                    "cloth_on_mesh.yaml"))
    cushion = next(c for c in scene.spec.colliders if c.type == "mesh")
    mesh_vertices = cushion.vertices * cushion.scale + np.asarray(cushion.pos)
    built = scene.build("cpu")
    tris = built.model.tri_indices.numpy()
    edges = mesh_edges(tris)
    state, scratch = built.model.state(), built.model.state()
    for frame in range(1, 31):
        state, scratch = built.step_frame(state, scratch, frame)
        if frame % 5 == 0:
            x = state.particle_q.numpy().astype(np.float64)
            assert np.abs(winding_numbers(x, mesh_vertices, cushion.triangles)).max() < 0.5, frame
            assert count_edges_crossing_mesh(x, edges, mesh_vertices, cushion.triangles) == 0, frame
            assert count_triangle_intersections(x, tris) == 0, frame
    top = mesh_vertices[:, 1].max()
    assert x[:, 1].min() < top - 0.1, "the cloth drapes down the cushion's sides"
