"""Block-cooperative queries (tile_bvh_query_aabb/ray, tile_mesh_query_aabb, their *_next, tile_query_valid and
the deprecated *_tiled names): each item once, the same items as real Warp's and as a box test in numpy."""

import numpy as np

import _meshes
import _warp_reference

_PROGRAM = '''
import numpy as np


@wp.kernel
def bvh_boxes(bvh: wp.uint64, low: wp.vec3, high: wp.vec3, start: wp.vec3, dir: wp.vec3,
              by_box: wp.array(dtype=int), by_ray: wp.array(dtype=int), by_alias: wp.array(dtype=int)):
    query = wp.tile_bvh_query_aabb(bvh, low, high)
    while wp.tile_query_valid(query):
        item = wp.untile(wp.tile_bvh_query_next(query))
        if item >= 0:
            wp.atomic_add(by_box, item, 1)
    ray = wp.tile_bvh_query_ray(bvh, start, dir)
    while wp.tile_query_valid(ray):
        item = wp.untile(wp.tile_bvh_query_next(ray))
        if item >= 0:
            wp.atomic_add(by_ray, item, 1)
    alias = wp.bvh_query_ray_tiled(bvh, start, dir)
    while wp.tile_query_valid(alias):
        item = wp.untile(wp.bvh_query_next_tiled(alias))
        if item >= 0:
            wp.atomic_add(by_alias, item, 1)


@wp.kernel
def mesh_faces(mesh: wp.uint64, low: wp.vec3, high: wp.vec3, faces: wp.array(dtype=int),
               by_alias: wp.array(dtype=int)):
    query = wp.tile_mesh_query_aabb(mesh, low, high)
    while wp.tile_query_valid(query):
        face = wp.untile(wp.tile_mesh_query_aabb_next(query))
        if face >= 0:
            wp.atomic_add(faces, face, 1)
    alias = wp.mesh_query_aabb_tiled(mesh, low, high)
    while wp.tile_query_valid(alias):
        face = wp.untile(wp.mesh_query_aabb_next_tiled(alias))
        if face >= 0:
            wp.atomic_add(by_alias, face, 1)


def run(wp, Tape):
    data = np.load(DATA)
    bvh = wp.Bvh(wp.array(data["lower"], dtype=wp.vec3), wp.array(data["upper"], dtype=wp.vec3))
    n = len(data["lower"])
    box, ray, alias = (wp.zeros(n, dtype=int) for _ in range(3))
    wp.launch_tiled(bvh_boxes, dim=1, block_dim=64,
                    inputs=[bvh.id, wp.vec3(2.0, 2.0, 2.0), wp.vec3(6.0, 6.0, 6.0), wp.vec3(0.0, -1.0, 0.5),
                            wp.normalize(wp.vec3(1.0, 1.0, 0.7)), box, ray, alias])
    mesh = wp.Mesh(points=wp.array(data["points"], dtype=wp.vec3), indices=wp.array(data["indices"], dtype=int))
    m = len(data["indices"]) // 3
    faces, faces_alias = wp.zeros(m, dtype=int), wp.zeros(m, dtype=int)
    wp.launch_tiled(mesh_faces, dim=1, block_dim=64,
                    inputs=[mesh.id, wp.vec3(-0.3, 0.1, -0.5), wp.vec3(0.6, 1.2, 0.4), faces, faces_alias])
    return {"box": box.numpy(), "ray": ray.numpy(), "ray_alias": alias.numpy(), "faces": faces.numpy(),
            "faces_alias": faces_alias.numpy()}
'''


def test_tile_queries_match_warp_and_numpy(tmp_path):
    rng = np.random.default_rng(11)
    lower = (rng.random((120, 3)) * 8.0).astype(np.float32)
    upper = (lower + rng.random((120, 3)) * 2.0).astype(np.float32)
    v, f = _meshes.icosphere(2)
    points, indices = v.astype(np.float32), f.reshape(-1).astype(np.int32)
    data = tmp_path / "scene.npz"
    np.savez(data, lower=lower, upper=upper, points=points, indices=indices)
    warp, ours = _warp_reference.both(f"DATA = {str(data)!r}\n" + _PROGRAM, str(tmp_path), "tile_query")
    for name in warp:
        np.testing.assert_array_equal(ours[name], warp[name], err_msg=name)
    # each item at most once, and exactly the boxes a numpy overlap test finds
    box = np.all((lower <= 6.0) & (upper >= 2.0), axis=1)
    np.testing.assert_array_equal(ours["box"], box.astype(int))
    assert 0 < box.sum() < len(box) and ours["ray"].sum() > 0
    np.testing.assert_array_equal(ours["ray_alias"], ours["ray"])
    tri = points[f]
    face_box = np.all((tri.min(axis=1) <= [0.6, 1.2, 0.4]) & (tri.max(axis=1) >= [-0.3, 0.1, -0.5]), axis=1)
    np.testing.assert_array_equal(ours["faces"], face_box.astype(int))
    np.testing.assert_array_equal(ours["faces_alias"], ours["faces"])


def test_new_query_builtins_compile_to_ptx():
    """The CUDA source of this round's builtins compiles (NVRTC; no GPU needed): the block queries, capsule and
    mesh BVH queries, ray counts and any-hit, the differentiable out-parameter ray cast, and wp.cast."""
    import kernels as wp

    @wp.kernel
    def everything(bvh: wp.uint64, mesh: wp.uint64, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float),
                   counts: wp.array(dtype=int)):
        query = wp.tile_bvh_query_ray(bvh, x[0], x[1])
        while wp.tile_query_valid(query):
            item = wp.untile(wp.tile_bvh_query_next(query))
            if item >= 0:
                wp.atomic_add(counts, 0, 1)
        faces = wp.tile_mesh_query_aabb(mesh, x[0], x[1])
        while wp.tile_query_valid(faces):
            face = wp.untile(wp.tile_mesh_query_aabb_next(faces))
            if face >= 0:
                wp.atomic_add(counts, 1, 1)
        capsule = wp.bvh_query_capsule(wp.mesh_get_bvh(mesh), x[0], x[1], 0.1)
        item = int(0)
        while wp.bvh_query_next(capsule, item, 1.0):
            wp.atomic_add(counts, 2, 1)
        counts[3] = wp.mesh_query_ray_count_intersections(mesh, x[0], x[1])
        counts[4] = int(wp.mesh_query_ray_anyhit(mesh, x[0], x[1], 10.0))
        counts[5] = wp.cast(out[1], wp.int32)
        t = float(0.0)
        u = float(0.0)
        v = float(0.0)
        sign = float(0.0)
        normal = wp.vec3()
        f = int(0)
        wp.mesh_query_ray(mesh, x[0], x[1], 10.0, t, u, v, sign, normal, f)
        out[0] = t + u + normal[0]

    ptx = wp.compile_ptx(everything, arch=90)
    assert "everything" in ptx and "_backward" in ptx
