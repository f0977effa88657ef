"""Gradients through ray casts (mesh_query_ray): the hit distance t, barycentrics (u, v) and the face normal
w.r.t. the ray's origin and direction and the mesh's points, against central differences (autodiff.gradcheck);
the tape zeroes the points' gradient with the others.
"""

import numpy as np

import kernels as wp
from autodiff import Tape, gradcheck

import _meshes


@wp.kernel
def cast(mesh: wp.uint64, origins: wp.array(dtype=wp.vec3), directions: wp.array(dtype=wp.vec3),
         hits: wp.array(dtype=wp.vec3), normals: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, origins[i], directions[i], 100.0)
    if q.result:
        hits[i] = wp.vec3(q.t, q.u, q.v)
        normals[i] = q.normal


def _scene(device, n=6, seed=4):
    vertices, faces = _meshes.icosphere(1)
    points = wp.array(vertices.astype(np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(faces.reshape(-1).astype(np.int32), dtype=int, device=device))
    # rays from outside towards points near face centres (away from edges, where the hit face would switch)
    rng = np.random.default_rng(seed)
    tri = vertices[faces[rng.choice(len(faces), n, replace=False)]]
    weights = rng.dirichlet([8.0, 8.0, 8.0], size=n)
    targets = np.einsum("nk,nkd->nd", weights, tri)
    origins = targets * 3.0 + rng.normal(scale=0.3, size=(n, 3))
    directions = (targets - origins) * rng.uniform(0.5, 2.0, size=(n, 1))
    return mesh, points, origins.astype(np.float32), directions.astype(np.float32)


def _cast(mesh, device):
    def fn(origins, directions, points):
        mesh.refit()  # gradcheck moves the points in place: the BVH boxes follow
        n = origins.shape[0]
        hits = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=True)
        normals = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=True)
        wp.launch(cast, dim=n, inputs=[mesh.id, origins, directions, hits, normals], device=device)
        return hits, normals

    return fn


def test_ray_cast_gradients_match_central_differences(device):
    mesh, points, origins, directions = _scene(device)
    o = wp.array(origins, dtype=wp.vec3, device=device)
    d = wp.array(directions, dtype=wp.vec3, device=device)
    hits, _ = _cast(mesh, device)(o, d, points)
    assert np.all(hits.numpy()[:, 0] > 0)  # every ray hits
    gradcheck(_cast(mesh, device), [o, d, points], rtol=2e-2, atol=2e-3)


def test_tape_zeroes_the_points_gradient(device):
    mesh, points, origins, directions = _scene(device, n=3)
    o = wp.array(origins, dtype=wp.vec3, device=device, requires_grad=True)
    d = wp.array(directions, dtype=wp.vec3, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        hits, normals = _cast(mesh, device)(o, d, points)
    tape.backward(grads={hits: wp.array(np.ones((3, 3), np.float32), dtype=wp.vec3, device=device)})
    assert np.abs(points.grad.numpy()).max() > 0
    tape.zero()
    assert np.abs(points.grad.numpy()).max() == 0


@wp.kernel
def cast_out(mesh: wp.uint64, origins: wp.array(dtype=wp.vec3), directions: wp.array(dtype=wp.vec3),
             start: wp.array(dtype=wp.vec3), hits: wp.array(dtype=wp.vec3), normals: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    t = start[i][0]
    u = start[i][1]
    v = start[i][2]
    sign = float(0.0)
    normal = wp.vec3(start[i][0], 0.0, 0.0)
    face = int(0)
    # the out-parameter form (Warp's older signature); on a miss the outputs keep the values above
    wp.mesh_query_ray(mesh, origins[i], directions[i], 100.0, t, u, v, sign, normal, face)
    q = wp.mesh_query_ray(mesh, origins[i], directions[i], 100.0, -1)  # the form with a group root
    hits[i] = wp.vec3(t, u, v) + wp.vec3(q.t, q.u, q.v) * 0.5
    normals[i] = normal + q.normal * 0.5


def test_out_parameter_and_root_forms_match_central_differences(device):
    mesh, points, origins, directions = _scene(device)
    directions[-1] = -directions[-1]  # this ray points away from the sphere: a miss keeps the start values
    o = wp.array(origins, dtype=wp.vec3, device=device)
    d = wp.array(directions, dtype=wp.vec3, device=device)
    start = wp.array(np.random.default_rng(1).uniform(0.5, 1.0, size=(len(origins), 3)).astype(np.float32),
                     dtype=wp.vec3, device=device)

    def fn(origins, directions, start, points):
        mesh.refit()
        n = origins.shape[0]
        hits = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=True)
        normals = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=True)
        wp.launch(cast_out, dim=n, inputs=[mesh.id, origins, directions, start, hits, normals], device=device)
        return hits, normals

    hits, _ = fn(o, d, start, points)
    np.testing.assert_array_equal(hits.numpy()[-1], start.numpy()[-1])
    assert np.all(hits.numpy()[:-1, 0] > 0)
    gradcheck(fn, [o, d, start, points], rtol=2e-2, atol=2e-3)
