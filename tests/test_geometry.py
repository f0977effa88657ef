"""Spatial queries: wp.HashGrid neighbour queries, wp.Mesh closest points and ray casts, closest_point_edge_edge.

Results are checked against brute force in numpy; the differentiable ones (closest point of a mesh w.r.t. the query
point, edge-edge closest points) against central differences with autodiff.gradcheck. The kernels also compile to
PTX (tests/test_ptx.py compiles every module-level kernel of this file).
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck
from kernels.errors import CompileError

CUBE_POINTS = np.array([(0.5, -0.5, 0.5), (-0.5, -0.5, 0.5), (0.5, 0.5, 0.5), (-0.5, 0.5, 0.5), (-0.5, -0.5, -0.5),
                        (0.5, -0.5, -0.5), (-0.5, 0.5, -0.5), (0.5, 0.5, -0.5)])
CUBE_FACES = np.array([0, 3, 1, 0, 2, 3, 4, 7, 5, 4, 6, 7, 6, 2, 7, 6, 3, 2, 5, 1, 4, 5, 0, 1, 5, 2, 0, 5, 7, 2, 1, 6,
                       4, 1, 3, 6])  # right-handed: normals point out


def cube(flip=False, **kwargs):
    faces = CUBE_FACES.reshape(-1, 3)[:, ::-1].reshape(-1) if flip else CUBE_FACES
    return wp.Mesh(points=wp.array(CUBE_POINTS, dtype=wp.vec3), indices=wp.array(faces, dtype=int), **kwargs)


# ---- hash grid ---------------------------------------------------------------------------------------------------


@wp.kernel
def count_within(grid: wp.uint64, radius: float, points: wp.array[wp.vec3], counts: wp.array[int]):
    i = wp.hash_grid_point_id(grid, wp.tid())
    p = points[i]
    n = int(0)
    for j in wp.hash_grid_query(grid, p, radius):
        if wp.length(points[j] - p) <= radius:
            n += 1
    counts[i] = n


@wp.func
def nearest_in(query: wp.HashGridQuery[wp.float64], center: wp.vec3d, points: wp.array[wp.vec3d]):
    best = int(-1)
    best_d = wp.float64(1.0e30)
    j = int(0)
    while wp.hash_grid_query_next(query, j):
        d = wp.length(points[j] - center)
        if d < best_d:
            best = j
            best_d = d
    return best


@wp.kernel
def nearest_kernel(grid: wp.uint64, queries: wp.array[wp.vec3d], points: wp.array[wp.vec3d], out: wp.array[int]):
    i = wp.tid()
    out[i] = nearest_in(wp.hash_grid_query(grid, queries[i], wp.float64(0.5)), queries[i], points)


@wp.kernel
def count_group(grid: wp.uint64, radius: float, group: int, points: wp.array[wp.vec3], counts: wp.array[int]):
    i = wp.tid()
    n = int(0)
    for j in wp.hash_grid_query(grid, points[i], radius, group):
        if wp.length(points[j] - points[i]) <= radius:
            n += 1
    counts[i] = n


def brute_counts(p, radius):
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    return (d <= radius).sum(axis=1)


def test_hash_grid_counts_match_brute_force_with_negative_and_wrapping_coordinates():
    rng = np.random.default_rng(1)
    p = (rng.random((400, 3)) * 6.0 - 3.0).astype(np.float32)  # spans more than one period of the 4^3 grid
    points = wp.array(p, dtype=wp.vec3)
    grid = wp.HashGrid(4, 4, 4)
    grid.build(points, 0.4)
    counts = wp.zeros(len(p), dtype=int)
    wp.launch(count_within, dim=len(p), inputs=[grid.id, 0.4, points, counts])
    np.testing.assert_array_equal(counts.numpy(), brute_counts(p.astype(np.float64), 0.4))


def test_hash_grid_query_in_a_func_float64_nearest_neighbour():
    rng = np.random.default_rng(2)
    p = rng.random((200, 3)) * 2.0
    q = rng.random((50, 3)) * 2.0
    points, queries = wp.array(p, dtype=wp.vec3d), wp.array(q, dtype=wp.vec3d)
    grid = wp.HashGrid(8, 8, 8, dtype=wp.float64)
    grid.build(points, 0.5)
    out = wp.zeros(len(q), dtype=int)
    wp.launch(nearest_kernel, dim=len(q), inputs=[grid.id, queries, points, out])
    d = np.linalg.norm(q[:, None] - p[None], axis=-1)
    expected = np.where(d.min(axis=1) <= 0.5, d.argmin(axis=1), -1)  # within the queried cells at least
    found = out.numpy()
    np.testing.assert_array_equal(found[expected >= 0], expected[expected >= 0])


def test_hash_grid_groups_filter_and_unknown_group_gives_nothing():
    p = np.array([[0, 0, 0], [0.05, 0, 0], [0, 0, 0], [0.05, 0, 0], [1, 0, 0]], np.float32)
    points = wp.array(p, dtype=wp.vec3)
    grid = wp.HashGrid(16, 16, 16)
    grid.build(points, 0.2, groups=wp.array([0, 0, 1, 1, -7], dtype=int))
    counts = wp.zeros(5, dtype=int)
    wp.launch(count_group, dim=5, inputs=[grid.id, 0.2, 1, points, counts])
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 2, 2, 0])
    wp.launch(count_group, dim=5, inputs=[grid.id, 0.2, 99, points, counts])
    np.testing.assert_array_equal(counts.numpy(), [0, 0, 0, 0, 0])


def test_hash_grid_rejects_bad_arguments_and_a_null_id_yields_nothing():
    with pytest.raises(TypeError):
        wp.HashGrid(4, 4, 4, dtype=wp.int32)
    with pytest.raises(RuntimeError, match="cell count exceeds supported limit"):
        wp.HashGrid(2000, 2000, 2000)
    grid = wp.HashGrid(4, 4, 4)
    with pytest.raises(ValueError):
        grid.build(wp.zeros(3, dtype=wp.vec3), 0.0)
    with pytest.raises(TypeError):
        grid.build(wp.zeros(3, dtype=wp.vec3d), 1.0)
    points = wp.zeros(3, dtype=wp.vec3)
    counts = wp.full(3, 5, dtype=int)
    wp.launch(count_group, dim=3, inputs=[0, 1.0, 0, points, counts])  # id 0: not a grid
    np.testing.assert_array_equal(counts.numpy(), [0, 0, 0])


# ---- mesh ------------------------------------------------------------------------------------------------------


@wp.kernel
def closest_points(mesh: wp.uint64, queries: wp.array[wp.vec3], out: wp.array[wp.vec3], sign: wp.array[float]):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, queries[i], 10.0)
    out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
    sign[i] = q.sign


@wp.kernel
def closest_points_no_sign(mesh: wp.uint64, queries: wp.array[wp.vec3], out: wp.array[wp.vec3]):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, queries[i], 10.0)
    out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


@wp.kernel
def ray_hits(mesh: wp.uint64, starts: wp.array[wp.vec3], dirs: wp.array[wp.vec3], t: wp.array[float]):
    i = wp.tid()
    r = wp.mesh_query_ray(mesh, starts[i], dirs[i], 100.0)
    t[i] = wp.where(r.result, r.t, -1.0)


def test_mesh_closest_point_and_sign_on_a_cube():
    q = np.array([[0.1, 0.2, 0.3], [2.0, 0.1, -0.2], [1.0, 1.0, 1.0], [0.0, -3.0, 0.7]], np.float32)
    expected = np.clip(q, -0.5, 0.5)
    expected[0] = (0.1, 0.2, 0.5)  # inside: nearest face z = 0.5
    for flip, inside_sign in ((False, -1.0), (True, 1.0)):
        mesh = cube(flip)
        out, sign = wp.zeros(4, dtype=wp.vec3), wp.zeros(4, dtype=float)
        wp.launch(closest_points, dim=4, inputs=[mesh.id, wp.array(q, dtype=wp.vec3), out, sign])
        np.testing.assert_allclose(out.numpy(), expected, atol=1e-6)
        # inside, the winding decides; outside, the rays miss and every vote is "outside"
        assert sign.numpy()[0] == inside_sign and sign.numpy()[1] == 1.0


def test_mesh_ray_cast_and_refit_after_moving_points():
    mesh = cube(bvh_leaf_size=1)
    starts = wp.array([[0.0, 5.0, 0.0], [10.0, 5.0, 0.0]], dtype=wp.vec3)
    dirs = wp.array([[0.0, -1.0, 0.0], [0.0, -1.0, 0.0]], dtype=wp.vec3)
    t = wp.zeros(2, dtype=float)
    wp.launch(ray_hits, dim=2, inputs=[mesh.id, starts, dirs, t])
    np.testing.assert_allclose(t.numpy(), [4.5, -1.0], atol=1e-6)
    mesh.points.assign(CUBE_POINTS + np.array([10.0, 0.0, 0.0]))
    mesh.refit()
    wp.launch(ray_hits, dim=2, inputs=[mesh.id, starts, dirs, t])
    np.testing.assert_allclose(t.numpy(), [-1.0, 4.5], atol=1e-6)


def test_mesh_rejects_bad_input():
    with pytest.raises(RuntimeError):
        wp.Mesh(points=wp.array(CUBE_POINTS, dtype=wp.vec3d), indices=wp.array(CUBE_FACES, dtype=int))
    with pytest.raises(ValueError):
        cube(bvh_constructor="nonsense")


@pytest.mark.parametrize("queries", [
    [[0.2, 0.1, 0.9], [-0.3, 0.2, -0.8]],       # face regions (outside)
    [[0.9, 0.1, 0.8], [-0.7, -0.75, 0.1]],      # edge regions
    [[0.1, 0.2, 0.35], [0.05, -0.1, -0.3]],     # inside, nearest face
])
def test_gradcheck_mesh_closest_point_wrt_query_point(queries):
    mesh = cube()

    def fn(q):
        out = wp.zeros(q.shape[0], dtype=wp.vec3)
        wp.launch(closest_points_no_sign, dim=q.shape[0], inputs=[mesh.id, q, out])
        return out

    gradcheck(fn, [wp.array(np.array(queries, np.float32), dtype=wp.vec3)])


def test_gradient_through_a_ray_cast():
    # a ray straight down onto the cube's top face: t = start_y - top, so dt/dstart = (0, 1, 0)
    # (tests/test_mesh_ray_gradient.py checks the general case against central differences)
    @wp.kernel
    def ray_t(mesh: wp.uint64, starts: wp.array[wp.vec3], t: wp.array[float]):
        i = wp.tid()
        t[i] = wp.mesh_query_ray(mesh, starts[i], wp.vec3(0.0, -1.0, 0.0), 100.0).t

    mesh = cube()
    starts = wp.array([[0.1, 5.0, -0.2]], dtype=wp.vec3, requires_grad=True)
    t = wp.zeros(1, dtype=float, requires_grad=True)
    from autodiff import Tape
    tape = Tape()
    with tape:
        wp.launch(ray_t, dim=1, inputs=[mesh.id, starts, t])
    tape.backward(grads={t: wp.ones(1, dtype=float)})
    np.testing.assert_allclose(starts.grad.numpy(), [[0.0, 1.0, 0.0]], atol=1e-6)


# ---- closest points between edges ---------------------------------------------------------------------------


@wp.kernel
def edge_edge(p1: wp.array[wp.vec3], q1: wp.array[wp.vec3], p2: wp.array[wp.vec3], q2: wp.array[wp.vec3],
              out: wp.array[wp.vec3]):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], 1.0e-6)


def edge_edge_reference(p1, q1, p2, q2):
    """(s, t, d) by dense sampling refined with a local grid: the minimum distance over [0, 1]^2."""
    s = np.linspace(0, 1, 2001)
    best = None
    for a in (s,):
        c1 = p1 + a[:, None] * (q1 - p1)
        c2 = p2 + s[:, None] * (q2 - p2)
        d = np.linalg.norm(c1[:, None] - c2[None], axis=-1)
        k = np.unravel_index(d.argmin(), d.shape)
        best = (s[k[0]], s[k[1]], d[k])
    return best


EDGE_CASES = np.array([
    # p1, q1, p2, q2
    [[0, 0, 0], [1, 0, 0], [0.3, -1, 0.5], [0.6, 1, 0.4]],      # interior-interior
    [[0, 0, 0], [1, 0, 0], [1.5, -1, 0.5], [1.7, 1, 0.2]],      # s clamped to 1
    [[0, 0, 0], [1, 0.2, 0], [0.4, 0.5, 1.0], [0.5, 0.6, 2.0]],  # t clamped to 0
    [[0, 0, 0], [1, 0, 0.1], [0.2, 1, 0.3], [0.9, 1.2, 0.2]],   # nearly parallel, offset
], np.float32)


def test_closest_point_edge_edge_matches_sampling():
    arrays = [wp.array(EDGE_CASES[:, k], dtype=wp.vec3) for k in range(4)]
    out = wp.zeros(len(EDGE_CASES), dtype=wp.vec3)
    wp.launch(edge_edge, dim=len(EDGE_CASES), inputs=arrays + [out])
    for got, case in zip(out.numpy(), EDGE_CASES.astype(np.float64)):
        s, t, d = edge_edge_reference(*case)
        assert abs(got[2] - d) < 1e-4
        c1 = case[0] + got[0] * (case[1] - case[0])
        c2 = case[2] + got[1] * (case[3] - case[2])
        assert abs(np.linalg.norm(c1 - c2) - got[2]) < 1e-5


@pytest.mark.parametrize("case", range(len(EDGE_CASES)))
def test_gradcheck_closest_point_edge_edge(case):
    def fn(p1, q1, p2, q2):
        out = wp.zeros(1, dtype=wp.vec3)
        wp.launch(edge_edge, dim=1, inputs=[p1, q1, p2, q2, out])
        return out

    gradcheck(fn, [wp.array(EDGE_CASES[case:case + 1, k], dtype=wp.vec3) for k in range(4)])


def test_gradient_through_a_mesh_struct_is_refused_not_zero():
    """Points read through wp.mesh_get(id).points have no gradient array in the kernel: the backward is refused
    with a message (it was a silent zero gradient)."""
    pos = wp.array(np.eye(4, 3, dtype=np.float32), dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=pos, indices=wp.array([0, 1, 2, 0, 2, 3], dtype=wp.int32))

    @wp.kernel(module="unique")
    def area(mesh_id: wp.uint64, out: wp.array(dtype=float)):
        m = wp.mesh_get(mesh_id)
        t = wp.tid()
        a = m.points[m.indices[t * 3]]
        b = m.points[m.indices[t * 3 + 1]]
        c = m.points[m.indices[t * 3 + 2]]
        wp.atomic_add(out, 0, wp.length(wp.cross(b - a, c - a)))

    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(area, 2, inputs=[mesh.id, out])
    with pytest.raises(wp.CompileError, match="array field 'points' of a struct made in the kernel"):
        tape.backward(loss=out)
