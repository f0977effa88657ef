"""Warp's other forms of the mesh point queries: the out-parameter forms (results written into the caller's
variables, differentiable as the result forms), the sign by the angle-weighted pseudo-normal and by ray parity,
and the furthest point; checked on a unit cube against its analytic inside test and brute force, and the out
form's gradient against central differences (autodiff.gradcheck)."""

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck
from test_geometry import cube


@wp.kernel
def signs_both_forms(mesh: wp.uint64, queries: wp.array[wp.vec3], kind: int, result_sign: wp.array[float],
                     out_sign: wp.array[float], same: wp.array[int]):
    """The result form's and the out form's sign of each query for kind 0 (normal), 1 (parity), 2 (winding number);
    same[i] = 1 when both forms give the same face and weights."""
    i = wp.tid()
    p = queries[i]
    sign = float(0.0)
    face = int(-1)
    u = float(0.0)
    v = float(0.0)
    q = wp.mesh_query_point_sign_normal(mesh, p, 10.0)
    if kind == 0:
        wp.mesh_query_point_sign_normal(mesh, p, 10.0, sign, face, u, v)
    elif kind == 1:
        q = wp.mesh_query_point_sign_parity(mesh, p, 10.0, 3, 0.1)
        wp.mesh_query_point_sign_parity(mesh, p, 10.0, sign, face, u, v, 3, 0.1)
    else:
        q = wp.mesh_query_point_sign_winding_number(mesh, p, 10.0)
        wp.mesh_query_point_sign_winding_number(mesh, p, 10.0, sign, face, u, v)
    result_sign[i] = q.sign
    out_sign[i] = sign
    same[i] = wp.where(q.face == face and q.u == u and q.v == v, 1, 0)


def test_every_sign_rule_tells_inside_from_outside_near_faces_edges_and_corners():
    rng = np.random.default_rng(4)
    # around the cube's surface, where the closest feature is a face, an edge or a corner
    q = rng.uniform(-0.8, 0.8, size=(600, 3)).astype(np.float32)
    q = q[np.abs(np.abs(q).max(axis=1) - 0.5) > 1e-3]  # off the surface
    inside = np.abs(q).max(axis=1) < 0.5
    mesh = cube()
    for kind in (0, 1, 2):
        result, out, same = (wp.zeros(len(q), dtype=float), wp.zeros(len(q), dtype=float),
                             wp.zeros(len(q), dtype=int))
        wp.launch(signs_both_forms, dim=len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3), kind, result, out, same])
        np.testing.assert_array_equal(result.numpy() < 0.0, inside, err_msg=f"kind {kind}")
        np.testing.assert_array_equal(out.numpy(), result.numpy())
        assert same.numpy().all()


@wp.kernel
def furthest(mesh: wp.uint64, queries: wp.array[wp.vec3], min_dist: float, dist: wp.array[float],
             found: wp.array[int]):
    i = wp.tid()
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    found[i] = 0
    if wp.mesh_query_furthest_point_no_sign(mesh, queries[i], min_dist, face, u, v):
        found[i] = 1
        dist[i] = wp.length(queries[i] - wp.mesh_eval_position(mesh, face, u, v))
    q = wp.mesh_query_furthest_point_no_sign(mesh, queries[i], min_dist)
    wp.expect_eq(q.face, face)


def test_the_furthest_point_is_the_furthest_vertex_beyond_min_dist():
    rng = np.random.default_rng(5)
    q = rng.uniform(-2.0, 2.0, size=(200, 3)).astype(np.float32)
    mesh = cube(bvh_leaf_size=1)
    points = mesh.points.numpy()
    expected = np.linalg.norm(q[:, None] - points[None], axis=-1).max(axis=1)
    dist, found = wp.zeros(len(q), dtype=float), wp.zeros(len(q), dtype=int)
    wp.launch(furthest, dim=len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3), 0.0, dist, found])
    assert found.numpy().all()
    np.testing.assert_allclose(dist.numpy(), expected, rtol=1e-6)
    # nothing farther than min_dist: not found, the outputs left alone
    wp.launch(furthest, dim=len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3), 10.0, dist, found])
    assert not found.numpy().any()


@wp.kernel
def closest_out_form(mesh: wp.uint64, queries: wp.array[wp.vec3], max_dist: float, out: wp.array[wp.vec3]):
    i = wp.tid()
    face = int(0)
    u = float(0.3)
    v = float(0.3)
    sign = float(0.0)
    wp.mesh_query_point(mesh, queries[i], max_dist, sign, face, u, v)
    out[i] = wp.mesh_eval_position(mesh, face, u, v)


@pytest.mark.parametrize("queries", [
    [[0.2, 0.1, 0.9], [-0.3, 0.2, -0.8]],       # face regions (outside)
    [[0.9, 0.1, 0.8], [-0.7, -0.75, 0.1]],      # edge regions
    [[0.1, 0.2, 0.35], [0.05, -0.1, -0.3]],     # inside, nearest face
])
def test_gradcheck_the_out_form_closest_point_wrt_query_point(queries):
    mesh = cube()

    def fn(q):
        out = wp.zeros(q.shape[0], dtype=wp.vec3)
        wp.launch(closest_out_form, dim=q.shape[0], inputs=[mesh.id, q, 10.0, out])
        return out

    gradcheck(fn, [wp.array(np.array(queries, np.float32), dtype=wp.vec3)])


def test_the_out_form_leaves_its_outputs_when_nothing_is_found():
    mesh = cube()
    out = wp.zeros(1, dtype=wp.vec3)
    wp.launch(closest_out_form, dim=1, inputs=[mesh.id, wp.array([[0.0, 3.0, 0.0]], dtype=wp.vec3), 0.1, out])
    # face 0 at the initial weights (0.3, 0.3)
    corners = mesh.points.numpy()[mesh.indices.numpy()[:3]]
    np.testing.assert_allclose(out.numpy()[0], 0.3 * corners[0] + 0.3 * corners[1] + 0.4 * corners[2], atol=1e-6)


def test_the_forms_compile_to_ptx_forward_and_adjoint():
    """The kernels above, with their adjoints, compile for CUDA (with or without a GPU)."""
    from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source

    ks = [signs_both_forms, furthest, closest_out_form]
    ptx = compile_source_to_ptx(render_cuda_source(ks), 90, "mesh_query_forms.cu")
    for i, k in enumerate(ks):
        assert f"k{i}_{k.name}_cuda_forward" in ptx
    assert "closest_out_form_cuda_backward" in ptx
