"""Cloth self-contact (sim/self_contact.py) in both particle solvers: vertex-triangle and edge-edge contacts on
two-triangle cases (thickness kept, momentum conserved, Coulomb friction's stopping distance), no triangle pair
ever intersecting in a cloth that collapses into folds (an exact count in numpy, independent of the solvers),
the displacement bound against tunnelling at a large step, scene keys, and rollout gradients through
self-contact (gradcheck)."""

import os

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import gradcheck
from sim.scene import Scene

from _intersections import count_triangle_intersections, segments_cross_triangles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THICKNESS = 0.01
SOLVERS = {"xpbd": (lambda m: sim.SolverXPBD(m, iterations=10), 1.0 / 240.0),
           "semi_implicit": (lambda m: sim.SolverSemiImplicit(m), 1.0 / 3000.0)}
IDENTITY = (0.0, 0.0, 0.0, 1.0)


def run(model, solver, steps, dt, state=None, *, fresh=False, control=None):
    """The state after `steps` steps; `fresh`: a new State every step (what a Tape needs)."""
    a, b = state or model.state(), model.state()
    for _ in range(steps):
        solver.step(model, a, b, control, dt)
        a, b = (b, model.state()) if fresh else (b, a)
    return a


def two_triangles(lower, upper, *, gravity=0.0, fixed_lower=False, velocity=(0.0, 0.0, 0.0), density=1.0,
                  requires_grad=False):
    """Two one-triangle cloths with self-collision (they collide with each other): `lower` and `upper` are
    (3, 3) corner positions; the upper one moves at `velocity`."""
    b = sim.ModelBuilder(gravity=gravity)
    tri = [[0, 1, 2]]
    b.add_cloth_mesh((0, 0, 0), IDENTITY, 1.0, (0, 0, 0), lower, tri, density=density, tri_ke=100.0, tri_ka=100.0,
                     fixed=(0, 1, 2) if fixed_lower else (), self_collision=True, thickness=THICKNESS)
    b.add_cloth_mesh((0, 0, 0), IDENTITY, 1.0, velocity, upper, tri, density=density, tri_ke=100.0, tri_ka=100.0,
                     self_collision=True, thickness=THICKNESS)
    return b.finalize("cpu", requires_grad=requires_grad)


FLAT = np.array([[-0.5, 0.0, -0.5], [0.5, 0.0, -0.5], [0.0, 0.0, 0.6]])


def point_triangle_distance(p, a, b, c):
    """Distance from p to triangle abc, by projection and the three edges (numpy, float64)."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    q = p - np.dot(p - a, n) * n
    inside = all(np.dot(np.cross(e1 - e0, q - e0), n) >= 0 for e0, e1 in ((a, b), (b, c), (c, a)))
    if inside:
        return abs(np.dot(p - a, n))
    return min(segment_distance(p, p, e0, e1) for e0, e1 in ((a, b), (b, c), (c, a)))


def segment_distance(p1, q1, p2, q2, samples=2001):
    """Distance between two segments by dense sampling of the first and exact projection onto the second."""
    s = np.linspace(0.0, 1.0, samples)[:, None]
    pts = p1 + s * (q1 - p1)
    d = q2 - p2
    t = np.clip(((pts - p2) @ d) / max(d @ d, 1e-30), 0.0, 1.0)[:, None]
    return float(np.linalg.norm(pts - (p2 + t * d), axis=1).min())


def closest_approach(model, solver, steps, dt, gap):
    """Run `steps` steps; returns the final state and the smallest gap(x) seen [m]."""
    state, scratch = model.state(), model.state()
    smallest = np.inf
    for _ in range(steps):
        solver.step(model, state, scratch, None, dt)
        state, scratch = scratch, state
        smallest = min(smallest, gap(state.particle_q.numpy().astype(np.float64)))
    return state, smallest


def momentum(model, state):
    return (model.particle_mass.numpy()[:, None] * state.particle_qd.numpy()).sum(axis=0)


# ---------------------------------------------------------------------------------------------------------------
# Two-triangle cases


@pytest.mark.parametrize("solver_name", list(SOLVERS))
def test_vertex_triangle_contact_keeps_thickness_and_momentum(solver_name):
    """A triangle falls corner first onto a free triangle (no gravity, nothing else): the corner comes no
    closer than about the thickness to the lower triangle's face and the pair's momentum is conserved."""
    upper = np.array([[0.0, 0.03, 0.0], [0.3, 0.25, 0.0], [-0.1, 0.25, 0.3]])
    model = two_triangles(FLAT, upper, velocity=(0.0, -0.5, 0.0))
    make, dt = SOLVERS[solver_name]
    start = model.state()
    p0 = momentum(model, start)
    end, gap = closest_approach(model, make(model), int(0.12 / dt), dt,
                                lambda x: point_triangle_distance(x[3], *x[:3]))
    assert gap == pytest.approx(THICKNESS, abs=0.25 * THICKNESS)
    # float32 positions: XPBD's velocities (x_end - x_start) / dt carry round-off of about 1e-7 m / dt
    np.testing.assert_allclose(momentum(model, end), p0, atol=5e-3 * np.abs(p0).max())
    lower = (model.particle_mass.numpy()[:3, None] * end.particle_qd.numpy()[:3]).sum(axis=0)
    assert lower[1] < 0.2 * p0[1], "the contact handed on a good part of the momentum"


@pytest.mark.parametrize("solver_name", list(SOLVERS))
def test_edge_edge_contact_keeps_thickness_and_momentum(solver_name):
    """Two triangles whose edges cross like an X, one falling onto the other edge first (no vertex is over the
    other's face): the edges come no closer than about the thickness, momentum is conserved."""
    lower = np.array([[-0.4, 0.0, 0.0], [0.4, 0.0, 0.0], [0.0, -0.3, 0.0]])  # top edge along x, hanging down
    upper = np.array([[0.0, 0.03, -0.4], [0.0, 0.03, 0.4], [0.0, 0.33, 0.0]])  # bottom edge along z
    model = two_triangles(lower, upper, velocity=(0.0, -0.5, 0.0))
    make, dt = SOLVERS[solver_name]
    p0 = momentum(model, model.state())
    end, gap = closest_approach(model, make(model), int(0.12 / dt), dt,
                                lambda x: segment_distance(x[0], x[1], x[3], x[4], samples=201))
    assert gap == pytest.approx(THICKNESS, abs=0.25 * THICKNESS)
    np.testing.assert_allclose(momentum(model, end), p0, atol=5e-3 * np.abs(p0).max())
    lower = (model.particle_mass.numpy()[:3, None] * end.particle_qd.numpy()[:3]).sum(axis=0)
    assert lower[1] < 0.2 * p0[1], "the contact handed on a good part of the momentum"


@pytest.mark.parametrize("solver_name", list(SOLVERS))
@pytest.mark.parametrize("mu", [0.0, 0.4])
def test_friction_stops_a_sliding_triangle_at_the_coulomb_distance(solver_name, mu):
    """A small triangle lying on a pinned one slides at 0.5 m/s under gravity: with mu it stops after
    v^2 / (2 mu g) (Coulomb friction, mu times the weight); without, it keeps its speed."""
    small = np.array([[-0.3, THICKNESS, -0.2], [-0.2, THICKNESS, -0.2], [-0.25, THICKNESS, -0.1]])
    model = two_triangles(FLAT, small, gravity=-9.81, fixed_lower=True, velocity=(0.5, 0.0, 0.0))
    model.soft_contact.mu = mu
    make, dt = SOLVERS[solver_name]
    end = run(model, make(model), int(0.15 / dt), dt)
    travelled = end.particle_q.numpy()[3:, 0].mean() - small[:, 0].mean()
    y = end.particle_q.numpy()[3:, 1]
    assert np.all(np.abs(y - THICKNESS) < 0.25 * THICKNESS), "it rests on the lower triangle at the thickness"
    if mu == 0.0:
        assert travelled == pytest.approx(0.5 * 0.15, rel=0.05)
    else:
        assert travelled == pytest.approx(0.5 ** 2 / (2 * mu * 9.81), rel=0.15)
        assert np.abs(end.particle_qd.numpy()[3:, 0]).max() < 0.02, "stopped (static friction holds it)"


# ---------------------------------------------------------------------------------------------------------------
# No interpenetration, counted independently


def test_folding_cloth_never_intersects_itself_in_either_solver(tmp_path):
    """scenes/cloth_fold.yaml (a cloth tipping over into folds) with both solvers: an exact triangle-triangle
    count is 0 at every third frame; with self-collision off the same cloth intersects itself (the count
    works). No vertex ever goes below the ground (y = 0): the displacement bound once pulled the vertices a
    collider had stopped along the cloth's drift, 5 cm into the ground."""
    text = open(os.path.join(ROOT, "scenes", "cloth_fold.yaml")).read()
    semi_implicit = text.replace("solver: {preset: xpbd_cloth}", "solver: {type: semi_implicit}")
    variants = {"xpbd": text, "semi_implicit": semi_implicit.replace("substeps: 8", "substeps: 50"),
                "xpbd without": text.replace("self_collision: true", "self_collision: false")}
    results = {}
    for name, variant in variants.items():
        path = tmp_path / "fold.yaml"
        path.write_text(variant)
        built = Scene.load(str(path)).build("cpu")
        tris = built.model.tri_indices.numpy()
        state, scratch = built.model.state(), built.model.state()
        worst, lowest = 0, np.inf
        for frame in range(1, 46):
            state, scratch = built.step_frame(state, scratch, frame)
            q = state.particle_q.numpy()
            lowest = min(lowest, float(q[:, 1].min()))
            if frame % 3 == 0:
                worst = max(worst, count_triangle_intersections(q, tris))
        results[name] = (worst, float(state.particle_q.numpy()[:, 1].max()), lowest)
    assert results["xpbd"][0] == 0 and results["semi_implicit"][0] == 0, results
    assert all(low >= 0.0 for _, _, low in results.values()), f"a vertex went below the ground: {results}"
    assert results["xpbd without"][0] > 50, results
    assert all(top < 0.3 for _, top, _ in results.values()), f"the cloth fell over into a heap: {results}"


@pytest.mark.parametrize("solver_name", list(SOLVERS))
@pytest.mark.parametrize("bounded", [True, False])
def test_a_large_step_does_not_tunnel(solver_name, bounded, monkeypatch):
    """A triangle thrown at 20 m/s at a pinned one from 5 cm away, at a step that moves it 3 cm (three times
    the thickness): with the displacement bound no vertex path ever crosses the lower face; with the bound
    lifted (GAMMA huge) it passes through."""
    if not bounded:
        monkeypatch.setattr(sim.self_contact, "GAMMA", 1.0e6)
    upper = np.array([[-0.1, 0.05, -0.1], [0.1, 0.05, -0.1], [0.0, 0.05, 0.1]])
    model = two_triangles(FLAT, upper, fixed_lower=True, velocity=(0.0, -20.0, 0.0))
    make, _ = SOLVERS[solver_name]
    dt = 1.5e-3
    solver = make(model)
    state, scratch = model.state(), model.state()
    corners = [np.repeat(FLAT[k][None].astype(np.float64), 3, axis=0) for k in range(3)]
    crossings = 0
    for _ in range(20):
        before = state.particle_q.numpy()[3:].astype(np.float64)
        solver.step(model, state, scratch, None, dt)
        state, scratch = scratch, state
        after = state.particle_q.numpy()[3:].astype(np.float64)
        crossings += int(segments_cross_triangles(before, after, *corners).sum())
    if bounded:
        assert crossings == 0 and state.particle_q.numpy()[3:, 1].min() > 0.0
    else:
        assert crossings > 0


# ---------------------------------------------------------------------------------------------------------------
# Gradients


def sliding_pair(solver_name, scene):
    """A small triangle resting on a pinned one, pressed by gravity and sliding (mu = 0) or sticking (slow, with
    friction): every contact holds for the whole rollout and the displacement bound never clamps (a smooth
    point: the bound is a constant to the Tape)."""
    small = np.array([[-0.3, THICKNESS, -0.2], [-0.2, THICKNESS, -0.2], [-0.25, THICKNESS, -0.1]])
    speed = 0.1 if scene == "sliding" else 0.02  # XPBD's 1/60 s steps stay within the displacement bound
    model = two_triangles(FLAT, small, gravity=-9.81, fixed_lower=True, velocity=(speed, -0.05, 0.1 * speed),
                          density=5.0 if solver_name == "semi_implicit" else 1.0, requires_grad=True)
    model.soft_contact.mu = 0.0 if scene == "sliding" else 0.8
    return model


@wp.kernel
def assemble_masses(pinned: wp.array(dtype=float), free: wp.array(dtype=float), mass: wp.array(dtype=float)):
    """mass = pinned (the lower triangle's zeros) followed by free (the upper triangle's masses) [kg]."""
    i = wp.tid()
    n = pinned.shape[0]
    if i < n:
        mass[i] = pinned[i]
    else:
        mass[i] = free[i - n]


@pytest.mark.parametrize("solver_name", list(SOLVERS))
@pytest.mark.parametrize("scene", ["sliding", "static"])
def test_self_contact_gradients_pass_gradcheck(solver_name, scene):
    model = sliding_pair(solver_name, scene)
    make, dt = SOLVERS[solver_name]
    steps, dt = (10, 1.0 / 60.0) if solver_name == "xpbd" else (60, dt)
    solver = make(model)
    pinned = wp.zeros(3, dtype=float)
    free_mass = wp.array(model.particle_mass.numpy()[3:], dtype=float, requires_grad=True)  # pinned: mass 0

    def rollout():
        model.particle_mass = wp.zeros(6, dtype=float, requires_grad=True)
        wp.launch(assemble_masses, dim=6, inputs=[pinned, free_mass], outputs=[model.particle_mass])
        state = model.state()
        state.particle_qd = model.particle_qd
        return run(model, solver, steps, dt, state, fresh=True).particle_q

    y = rollout().numpy()[3:, 1]
    assert np.all(np.abs(y - THICKNESS) < 0.2 * THICKNESS), f"still in contact at the end: {y}"
    inputs = {"velocity": model.particle_qd, "mass": free_mass}
    if scene == "static":
        inputs["friction"] = model.soft_contact_mu
    for name, x in inputs.items():
        eps = 1e-4 if name == "mass" else 1e-3  # the upper triangle's vertices weigh 8 g (semi-implicit)
        report = gradcheck(lambda _: rollout(), [x], eps=eps, atol=2e-3, raise_on_fail=False)
        assert report.passed, f"{solver_name} {scene}: gradient with respect to {name}\n{report}"


# ---------------------------------------------------------------------------------------------------------------
# Builder and scene keys


def test_thickness_defaults_to_a_quarter_edge_and_bad_values_are_refused():
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), IDENTITY, (0, 0, 0), 4, 4, 0.1, 0.1, mass=0.01, self_collision=True)
    model = b.finalize("cpu")
    h = model.particle_thickness.numpy()
    mean_edge = (4 * 5 * 2 * 0.1 + 16 * 0.1 * np.sqrt(2)) / (4 * 5 * 2 + 16)
    assert h.min() == h.max() == pytest.approx(0.25 * mean_edge, rel=1e-5)
    with pytest.raises(ValueError, match="thickness"):
        sim.ModelBuilder().add_cloth_grid((0, 0, 0), IDENTITY, (0, 0, 0), 2, 2, 0.1, 0.1, mass=0.01,
                                          self_collision=True, thickness=-0.01)


def test_self_contact_kernels_compile_to_ptx():
    """The CUDA path of the search, full and partial (forward; it is never taped) and of the kernels on the Tape,
    both solvers' contact kernels and the displacement bound (forward and backward), compiles, with or without a
    GPU."""
    from kernels.runtime.module import get_module
    from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source

    import sim.self_contact
    import sim.self_contact_active
    import sim.self_contact_bound
    import sim.self_contact_partial
    import sim.self_contact_tree
    import sim.solvers.semi_implicit.self_contact
    import sim.solvers.xpbd.self_contact

    searching = (sim.self_contact, sim.self_contact_active, sim.self_contact_bound, sim.self_contact_partial,
                 sim.self_contact_tree)
    for module in (*searching, sim.solvers.xpbd.self_contact, sim.solvers.semi_implicit.self_contact):
        # each file's kernels, and its order-free ones (their own module: never taped)
        for name in (module.__name__, getattr(module, "ORDER_FREE", None)):
            if name is None:
                continue
            module_kernels = get_module(name).kernels
            ptx = compile_source_to_ptx(render_cuda_source(module_kernels), 90, "self_contact.cu")
            for i, k in enumerate(module_kernels):
                assert f"k{i}_{k.name}_cuda_forward" in ptx
                taped = module not in searching and name == module.__name__ or k.name == "limit_displacement"
                assert not taped or f"k{i}_{k.name}_cuda_backward" in ptx, k.name


def test_sim_run_warns_once_when_pairs_overflow_their_slots(tmp_path, capsys):
    """A thickness of several edges puts every primitive of the small cloth near hundreds of others: more pairs
    than a vertex's or edge's slots. `sim run` finishes and says so once, with the count and what to do; the
    shipped scene says nothing."""
    from sim.cli import main
    scene = os.path.join(ROOT, "scenes", "cloth_fold.yaml")
    argv = ["run", scene, "--quiet", "--set", "sim.frames=2", "--out"]
    assert main(argv + [str(tmp_path / "thick.usd"), "--set", "cloth.0.thickness=0.2"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: self-contact:") == 1, err
    assert "pairs were dropped" in err and "smaller thickness" in err
    assert int(err.split("self-contact: ")[1].split()[0]) > 0
    assert main(argv + [str(tmp_path / "fold.usd")]) == 0
    assert "self-contact" not in capsys.readouterr().err


def test_the_search_finds_every_pair_within_its_radius_stretched_primitives_included():
    """A folded, noisy cloth with a few vertices pulled far (triangles and edges stretched to several times
    their size at rest, whose trees' boxes grow): every vertex-triangle and edge-edge pair closer than r_q, found
    by brute force in numpy, has lowered its vertices' bound to GAMMA times its distance (the bound is what keeps
    the cloth from passing through itself)."""
    from sim.self_contact import GAMMA, SelfContact
    rng = np.random.default_rng(1)
    b = sim.ModelBuilder()
    b.add_cloth_grid((0, 0, 0), IDENTITY, (0, 0, 0), 10, 10, 0.02, 0.02, mass=0.001, self_collision=True)
    model = b.finalize("cpu")
    x = model.particle_q.numpy().astype(np.float64)
    fold = x[:, 0] > 0.1
    x[fold, 0] = 0.2 - x[fold, 0]
    x[fold, 2] += 0.004
    x += rng.normal(scale=0.002, size=x.shape)
    x[[17, 60, 93]] += np.array([[0.05, 0.0, 0.01], [-0.04, 0.0, 0.03], [0.0, 0.0, -0.05]])  # stretched
    contact = SelfContact(model)
    _, bound = contact.find(wp.array(x.astype(np.float32), dtype=wp.vec3))
    bound, r = bound.numpy(), contact.query_radius
    tris, edges = contact._tri_indices.numpy(), contact._edge_indices.numpy()
    missed = []
    for v in range(len(x)):
        for a, b_, c in tris:
            if v not in (a, b_, c):
                d = point_triangle_distance(x[v], x[a], x[b_], x[c])
                if d < 0.99 * r and bound[v] > GAMMA * d * 1.01 + 1e-7:
                    missed.append(("vt", v, (a, b_, c), d))
    for i, (p0, p1) in enumerate(edges):
        for q0, q1 in edges[i + 1:]:
            if len({p0, p1, q0, q1}) == 4 and np.linalg.norm(x[[p0, p1]].mean(0) - x[[q0, q1]].mean(0)) < 0.15:
                d = segment_distance(x[p0], x[p1], x[q0], x[q1], samples=201)
                if d < 0.98 * r and min(bound[p0], bound[q0]) > GAMMA * d * 1.03 + 1e-7:
                    missed.append(("ee", (p0, p1), (q0, q1), d))
    assert not missed, missed[:5]


def test_an_edge_crossing_near_the_end_of_a_long_stretched_edge_is_found():
    """Edge-edge pairs between a stretched edge and a typical one are found, however the two edges are numbered
    (each pair is listed at its lower edge, and the tree skips the subtrees of lower indices): a 40 cm edge (10 times its rest length) crossed 2 mm away, 18 cm from its middle,
    by an edge of another cloth lowers both edges' bounds to GAMMA times 2 mm."""
    from sim.self_contact import GAMMA, SelfContact
    tri = [[0, 1, 2]]
    rest = np.array([[-0.02, 0.0, 0.0], [0.02, 0.0, 0.0], [0.0, 0.0, -0.03]])
    b = sim.ModelBuilder(gravity=0.0)
    for _ in range(2):
        b.add_cloth_mesh((0, 0, 0), IDENTITY, 1.0, (0, 0, 0), rest, tri, density=1.0, self_collision=True,
                         thickness=THICKNESS)
    model = b.finalize("cpu")
    x = np.array([[-0.2, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.0, -0.3],  # the long edge 0-1 along x
                  [0.18, 0.008, -0.01], [0.18, -0.004, 0.01], [0.18, 0.03, 0.05]])  # 3-4 passes it 2 mm away
    contact = SelfContact(model)
    _, bound = contact.find(wp.array(x.astype(np.float32), dtype=wp.vec3))
    d = segment_distance(x[0], x[1], x[3], x[4])
    assert 0.001 < d < 0.0025
    assert bound.numpy()[[0, 1, 3, 4]].max() <= GAMMA * d * 1.01, bound.numpy()


def test_the_bound_never_lengthens_a_step_of_a_cloth_that_drifted_far_since_its_search():
    """A cloth falling as a whole, 20 cm since its last search (the drift: no distance changed, so no search was
    due), whose lowest row stops dead on the ground while the rest falls on by more than its bound: the
    displacement bound may shorten a vertex's step but never lengthen it or turn it back. The rule before
    0b6f2f7 dropped the drift of such a step and clamped every vertex to its search position: the falling cloth
    jumped back up by the 20 cm, which XPBD turned into a velocity of some 100 m/s (the 64 x 64 drop at a query
    radius of 3 thicknesses, which searched once in its whole fall, left for 40 m within the second)."""
    from sim.self_contact import SelfContact
    b = sim.ModelBuilder(gravity=0.0)
    b.add_cloth_grid((0, 0.3, 0), IDENTITY, (0, 0, 0), 6, 6, 0.03, 0.03, mass=0.001, self_collision=True,
                     thickness=THICKNESS)  # standing on its edge
    model = b.finalize("cpu")
    x0 = model.particle_q.numpy().astype(np.float64)
    contact = SelfContact(model)
    contact.find(wp.array(x0.astype(np.float32), dtype=wp.vec3))
    bound = contact.bound.numpy()
    fall = np.array([0.0, -2.0 * bound.max(), 0.0])  # a step longer than any vertex's bound
    lowest = x0[:, 1] < x0[:, 1].min() + 1.0e-6
    assert 0 < lowest.sum() < len(x0) // 4
    out = wp.zeros(len(x0), dtype=wp.vec3)
    steps = int(np.ceil(0.2 / -fall[1]))
    for k in range(steps + 1):
        x_start = x0 + k * fall
        x_end = x_start + fall
        if k == steps:
            x_end[lowest] = x_start[lowest]  # landed
        contact.end_step(wp.array(x_start.astype(np.float32), dtype=wp.vec3),
                         wp.array(x_end.astype(np.float32), dtype=wp.vec3), None, 1.0e-3, out, None)
        step, taken = x_end - x_start, out.numpy() - x_start
        assert np.all(np.linalg.norm(taken, axis=1) <= np.linalg.norm(step, axis=1) + 1.0e-5), k
        assert np.all(np.sum(taken * step, axis=1) >= -1.0e-9), f"a vertex was turned back at step {k}"
        if k < steps:
            assert np.allclose(taken, step, atol=1.0e-5), "a common translation is never shortened"


def test_the_drift_and_the_bound_agree_in_their_one_launch_and_parallel_forms():
    """end_step's two forms give one result: on the CPU the drift is summed and checked by one thread
    (settle_world_drifts) and the bound and the search check run in one launch (limit_and_check) when no Tape
    records; a GPU sums one world's drift in parallel (sum_drift_tiled, find_drift_overrun,
    drop_overrun_drift), and a taped step bounds and checks in two launches. Over steps of a noisy drifting cloth,
    one of them with a vertex past its bound (the group keeps the last step's drift), the four combinations give
    the same drifts (to float rounding: the sums' orders differ), positions, velocities and marked vertices."""
    from sim.self_contact import SelfContact
    rng = np.random.default_rng(3)
    b = sim.ModelBuilder(gravity=0.0)
    b.add_cloth_grid((0, 0.3, 0), IDENTITY, (0, 0, 0), 9, 9, 0.03, 0.03, mass=0.001, self_collision=True,
                     thickness=THICKNESS)
    model = b.finalize("cpu")
    x0 = model.particle_q.numpy().astype(np.float64)
    n = len(x0)
    steps = []
    x = x0.copy()
    for k in range(4):
        x_end = x + np.array([0.0, -0.4 * THICKNESS, 0.0]) + rng.normal(scale=0.02 * THICKNESS, size=(n, 3))
        if k == 2:
            x_end[5] = x[5] + np.array([0.0, 0.0, 3.0 * THICKNESS])  # past its bound against the drift
        steps.append((x.copy(), x_end))
        x = x_end
    results = []
    for parallel_drift in (False, True):
        for fresh in (False, True):
            contact = SelfContact(model)
            if parallel_drift:
                contact._drift_ranges = None
            contact.find(wp.array(x0.astype(np.float32), dtype=wp.vec3))
            out, v_out = wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)
            trace = []
            for x_start, x_end in steps:
                contact.end_step(wp.array(x_start.astype(np.float32), dtype=wp.vec3),
                                 wp.array(x_end.astype(np.float32), dtype=wp.vec3),
                                 wp.array(np.ones((n, 3), np.float32), dtype=wp.vec3), 1.0e-3, out, v_out,
                                 fresh=fresh)
                trace.append((contact._drift_before.numpy()[0].copy(), out.numpy().copy(), v_out.numpy().copy(),
                              contact._marked.numpy().copy(), contact._search_count.numpy().copy()))
            results.append(trace)
    kept = results[0][2][0]
    assert np.array_equal(kept, results[0][1][0]), "the step with an overrun keeps the last step's drift"
    assert np.linalg.norm(results[0][1][0]) > 0.3 * THICKNESS
    for trace in results[1:]:
        for (d0, x0_, v0, m0, c0), (d1, x1, v1, m1, c1) in zip(results[0], trace):
            assert np.allclose(d0, d1, rtol=0.0, atol=1.0e-7)
            assert np.allclose(x0_, x1, rtol=0.0, atol=1.0e-6) and np.allclose(v0, v1, rtol=0.0, atol=1.0e-3)
            assert np.array_equal(m0, m1) and np.array_equal(c0, c1)
    assert results[0][-1][3].any(), "some vertex asks for a search"


def test_xpbd_skips_only_pairs_that_cannot_touch_and_none_without_pairs(monkeypatch):
    """SolverXPBD's pair passes skip a pair whose distance at the step's prediction, less how far each side
    moved since, stays above its thickness (sim/solvers/xpbd/self_contact.py). Two noisy layers 1.5 thicknesses
    apart, the upper one coming down by 0.8 thicknesses a step (so pairs apart at the step's start touch at its
    prediction): three steps give the same positions to the bit as with every pair's slack taken as 0 (no
    pair skipped), and the layers stay apart. A cloth far from itself lists no pair and launches no pair pass."""
    from sim.solvers.xpbd import solver as xpbd_solver
    rng = np.random.default_rng(5)
    b = sim.ModelBuilder(gravity=0.0)
    dt = 1.0 / 240.0
    for height, speed in ((0.0, 0.0), (1.5 * THICKNESS, -0.8 * THICKNESS / dt)):  # grids in the xy plane
        b.add_cloth_grid((0, 0, height), IDENTITY, (0, 0, speed), 6, 6, 0.03, 0.03, mass=0.001, self_collision=True,
                         thickness=THICKNESS)
    model = b.finalize("cpu")
    model.particle_q.assign(model.particle_q.numpy() + rng.normal(scale=0.001, size=(model.particle_count, 3)))
    skipping = run(model, sim.SolverXPBD(model, iterations=10), 3, dt).particle_q.numpy()
    gap = skipping[49:, 2].min() - skipping[:49, 2].max()

    def nothing_skipped(self, model, self_contact, x_predicted, scratch):
        return tuple(wp.zeros_like(a) for a in self_contact_distances(self, model, self_contact, x_predicted,
                                                                      scratch))

    self_contact_distances = xpbd_solver.SolverXPBD._pair_start_distances
    monkeypatch.setattr(xpbd_solver.SolverXPBD, "_pair_start_distances", nothing_skipped)
    model._self_contact = None
    solving_all = run(model, sim.SolverXPBD(model, iterations=10), 3, dt).particle_q.numpy()
    assert np.array_equal(skipping, solving_all)
    assert gap > 0.5 * THICKNESS

    launched = []
    monkeypatch.setattr(xpbd_solver.SolverXPBD, "_self_contacts", lambda *args: launched.append(1))
    far = sim.ModelBuilder(gravity=0.0)
    far.add_cloth_grid((0, 0, 0), IDENTITY, (0, 0, 0), 4, 4, 0.03, 0.03, mass=0.001, self_collision=True,
                       thickness=THICKNESS)
    far_model = far.finalize("cpu")
    run(far_model, sim.SolverXPBD(far_model, iterations=4), 2, dt)
    assert not far_model._self_contact.has_pairs and not launched


@wp.func
def count_pair(counts: wp.array(dtype=wp.int32), skipped: bool, touching: bool):
    if skipped:
        wp.atomic_add(counts, 0, 1)
    if touching:
        wp.atomic_add(counts, 1, 1)
    wp.atomic_add(counts, 2, 1)


@wp.kernel
def listed_pair_margins(x: wp.array(dtype=wp.vec3), data: sim.self_contact.SelfContactData,
                        offset: wp.array(dtype=float), excess: wp.array(dtype=float), counts: wp.array(dtype=wp.int32)):
    """For vertex i's and edge i's listed pairs at positions x: the most by which the skip test's lower bound on
    a pair's distance (its distance at the search less its sides' largest offsets) exceeds the distance now
    (excess[i], <= 0 when the bound holds), and counts[0] += pairs the test skips, counts[1] += pairs touching
    (closer than their thickness), counts[2] += pairs."""
    i = wp.tid()
    worst = float(-1.0)
    if i < data.vt_count.shape[0]:
        for k in range(data.vt_count[i]):
            a, b, c, w, u = sim.self_contact.vertex_triangle_pair(x, data, i, k)
            h = 0.5 * (data.thickness[i] + data.thickness[a])
            lower = (wp.length(data.vt_start[i * sim.self_contact.VT_SLOTS + k]) - offset[i]
                     - wp.max(wp.max(offset[a], offset[b]), offset[c]))
            worst = wp.max(worst, lower - wp.length(u))
            count_pair(counts, lower > h, wp.length(u) < h)
    if i < data.ee_count.shape[0]:
        i0 = data.edge_indices[i, 0]
        i1 = data.edge_indices[i, 1]
        for k in range(data.ee_count[i]):
            j0, j1, s, t, u = sim.self_contact.edge_edge_pair(x, data, i, k)
            h = 0.5 * (data.thickness[i0] + data.thickness[j0])
            lower = (wp.length(data.ee_start[i * sim.self_contact.EE_SLOTS + k]) - wp.max(offset[i0], offset[i1])
                     - wp.max(offset[j0], offset[j1]))
            worst = wp.max(worst, lower - wp.length(u))
            count_pair(counts, lower > h, wp.length(u) < h)
    excess[i] = worst


def test_semi_implicit_skips_only_pairs_that_cannot_touch(monkeypatch):
    """SolverSemiImplicit skips a listed pair whose distance at the search, less its sides' largest offsets from
    their search positions relative to the drift (SelfContact.offsets_at), exceeds its thickness. A 16 x 16
    cloth dropped on its edge folds onto itself, with full and partial searches: at the start of each of 700
    steps of the fold every listed pair is at least that lower bound apart (the offsets are reset by every
    search, and a partial search keeps the separations of the pairs it finds again), most pairs are skipped and
    some touch; the same steps without skipping give the same positions to the bit."""
    from sim.solvers.semi_implicit import solver as semi_solver

    def dropped():
        b = sim.ModelBuilder()
        b.add_cloth_grid(pos=(-0.16, 0.3, 0.0), rot=sim.quat_from_axis_angle((1.0, 0.0, 0.0), np.radians(15)),
                         vel=(0.0, 0.0, 0.0), dim_x=16, dim_y=16, cell_x=0.02, cell_y=0.02, mass=1.2e-4,
                         tri_ke=1.0e3, tri_ka=1.0e3, tri_kd=0.1, edge_ke=0.001, radius=0.005, self_collision=True)
        b.add_ground_plane()
        model = b.finalize("cpu")
        model.soft_contact.mu = 0.5
        return model, sim.SolverSemiImplicit(model)

    dt, start, steps = 1.0 / 12000.0, 5000, 700
    checked = {"steps": 0, "skippable": 0, "touching": 0, "listed": 0, "worst": -1.0}
    eval_forces = semi_solver.SolverSemiImplicit.eval_forces

    def checking(self, model, state, control, f):
        contact = model._self_contact
        offset = contact.offsets_at(state.particle_q)
        if offset.shape[0]:
            n = max(contact.particle_count, contact.edge_count)
            excess, counts = wp.zeros(n, dtype=float), wp.zeros(3, dtype=wp.int32)
            wp.launch(listed_pair_margins, dim=n, inputs=[state.particle_q, contact.data, offset, excess, counts])
            checked["worst"] = max(checked["worst"], float(excess.numpy().max()))
            checked["skippable"] += int(counts.numpy()[0])
            checked["touching"] += int(counts.numpy()[1])
            checked["listed"] += int(counts.numpy()[2])
            checked["steps"] += 1
        return eval_forces(self, model, state, control, f)

    results = []
    for skipping in (True, False):
        model, solver = dropped()
        state = run(model, solver, start, dt)
        contact = model._self_contact
        if skipping:
            monkeypatch.setattr(semi_solver.SolverSemiImplicit, "eval_forces", checking)
        else:
            monkeypatch.setattr(contact, "offsets_at", lambda x: contact._no_offset)
        searches = contact.searches, contact.partial_searches
        results.append(run(model, solver, steps, dt, state).particle_q.numpy())
        monkeypatch.undo()
        if skipping:
            full, partial = contact.searches - searches[0], contact.partial_searches - searches[1]
    assert full > 5 and partial > 100, (full, partial)
    assert checked["steps"] == steps, checked
    assert checked["worst"] <= 1.0e-6, checked
    assert checked["touching"] > 100 and checked["skippable"] > 0.5 * checked["listed"], checked
    assert np.array_equal(results[0], results[1])


def test_self_contact_is_the_same_to_the_bit_from_run_to_run_with_two_threads(monkeypatch):
    """The self-contact kernels whose results depend on the order of their atomics (float sums into shared
    vertices, list slots taken atomically, the drift's per-block sums) are run-to-run deterministic: they run
    thread index by thread index whatever the thread count; the order-free ones (the searches' queries, partial
    searches included, the slacks, the displacement bound's per-vertex kernels:
    sim.self_contact_primitives.order_free_module) run on every thread. With two threads and every
    launch parallel (the 64 x 64 drop's positions differed between two runs before), two runs of one layer
    thrown onto another give the same positions to the bit, and the same as one thread."""
    import sim.self_contact
    import sim.self_contact_bound
    import sim.self_contact_partial
    import sim.solvers.semi_implicit.self_contact
    import sim.solvers.xpbd.self_contact
    from kernels.runtime.module import get_module

    for module in (sim.self_contact, sim.self_contact_bound, sim.solvers.xpbd.self_contact,
                   sim.solvers.semi_implicit.self_contact):
        for k in get_module(module.__name__).kernels:
            assert k.parallel_threshold(1) >= 2 ** 62, f"{module.__name__}.{k.name} may run in parallel"
    order_free = {k.name for module in (sim.self_contact, sim.self_contact_partial, sim.solvers.xpbd.self_contact,
                                        sim.self_contact_bound)
                  for k in get_module(module.ORDER_FREE).kernels if k.parallel_threshold(1) < 2 ** 62}
    assert {"find_vertex_triangle_pairs", "find_edge_edge_pairs", "pair_start_distances", "search_marked",
            "begin_attempt", "finish_attempt", "clear_marks", "limit_displacement", "check_budget",
            "find_drift_overrun", "settle_world_drifts", "limit_and_check"} <= order_free

    monkeypatch.setattr(wp.config, "cpu_parallel_threshold", 1)
    results = []
    for threads in (2, 2, 1):
        monkeypatch.setattr(wp.config, "cpu_threads", threads)
        rng = np.random.default_rng(11)
        b = sim.ModelBuilder(gravity=0.0)
        for height, speed in ((0.0, 0.0), (1.5 * THICKNESS, -2.0)):  # grids in the xy plane
            b.add_cloth_grid((0, 0, height), IDENTITY, (0, 0, speed), 8, 8, 0.02, 0.02, mass=0.001,
                             self_collision=True, thickness=THICKNESS)
        model = b.finalize("cpu")
        model.particle_q.assign(model.particle_q.numpy() + rng.normal(scale=0.002, size=(model.particle_count, 3)))
        results.append(run(model, sim.SolverXPBD(model, iterations=10), 12, 1.0 / 240.0).particle_q.numpy())
    assert np.array_equal(results[0], results[1]) and np.array_equal(results[0], results[2])


@pytest.mark.parametrize("solver_name", list(SOLVERS))
def test_captured_self_contact_steps_replay_what_launching_them_with_a_search_each_gives(solver_name, monkeypatch):
    """Steps of a self-colliding pair captured by the caller (wp.ScopedCapture) and replayed: a capture cannot
    take the host's decisions, so each captured step searches, with the searches' and the bound's launches
    recorded into the caller's graph (not replayed as graphs of their own: sim/launch_replay.py); the replay
    gives, to the bit, what launching the same steps with a search at every step gives."""
    from sim.self_contact import SelfContact
    upper = np.array([[0.0, 0.03, 0.0], [0.3, 0.25, 0.0], [-0.1, 0.25, 0.3]])
    make, dt = SOLVERS[solver_name]

    model = two_triangles(FLAT, upper, velocity=(0.0, -0.5, 0.0))
    solver, a, b = make(model), model.state(), model.state()
    solver.step(model, a, b, None, dt)  # builds every kernel before the capture
    a, b = model.state(), model.state()
    with wp.ScopedCapture(device="cpu") as capture:  # four steps: their arrays come again inside the capture
        for _ in range(2):
            solver.step(model, a, b, None, dt)
            solver.step(model, b, a, None, dt)
    for _ in range(int(0.06 / dt) // 4):
        wp.capture_launch(capture.graph)
    replayed = a.particle_q.numpy()

    original = SelfContact.begin_step

    def search_every_step(self, x, *, fresh=False):
        self._last_out = None  # as if from a new state: a full search
        return original(self, x, fresh=fresh)

    monkeypatch.setattr(SelfContact, "begin_step", search_every_step)
    model = two_triangles(FLAT, upper, velocity=(0.0, -0.5, 0.0))
    launched = run(model, make(model), 4 * (int(0.06 / dt) // 4), dt).particle_q.numpy()
    assert np.array_equal(replayed, launched)
    gap = point_triangle_distance(replayed[3], *replayed[:3])
    assert 0.5 * THICKNESS < gap < 0.03, gap  # they came into contact and stayed apart
