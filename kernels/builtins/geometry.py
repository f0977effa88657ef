"""Spatial queries (Warp's "Geometry" group): hash grid neighbour queries, triangle mesh queries, closest points.

Native code: kernels/native/hash_grid.h, kernels/native/mesh.h, kernels/native/geometry.h. Grids and meshes are
built on the host (kernels/runtime/hash_grid.py, kernels/runtime/mesh.py) and reach kernels as uint64 ids.
"""

from __future__ import annotations

from .. import types as T
from .query_types import BvhQuery, MeshQueryAABB, MeshQueryPoint, MeshQueryRay, MeshValue, hash_grid_query_type
from .registry import QUERY_NEXT, S, V, add_builtin

GROUP = "geometry"
U64, I32 = T.uint64, T.int32

# ---- hash grid -----------------------------------------------------------------------------------------------

_HF = S("T", "float")
_query = lambda b: hash_grid_query_type(b["T"])  # noqa: E731
add_builtin("hash_grid_query", (U64, V(3, _HF), _HF), _query, group=GROUP, differentiable=False,
            arg_names=("id", "point", "max_dist"),
            doc="query the points of grid `id` in the cells within `max_dist` of `point`; iterate it with "
                "`for index in ...` or `while wp.hash_grid_query_next(query, index)` and filter by distance")
add_builtin("hash_grid_query", (U64, V(3, _HF), _HF, I32), _query, group=GROUP, differentiable=False,
            arg_names=("id", "point", "max_dist", "group"),
            doc="as hash_grid_query, yielding only points of `group` when the grid was built with groups")
for _dtype in (T.float16, T.float32, T.float64):
    add_builtin("hash_grid_query_next", (hash_grid_query_type(_dtype), I32), T.bool_, group=GROUP,
                differentiable=False, mutates_arg=(0, 1), arg_names=("query", "index"),
                doc="advance the query: true with the next candidate point's index in `index`, false when done")
QUERY_NEXT["hash_grid_query"] = "hash_grid_query_next"
add_builtin("hash_grid_point_id", (U64, I32), I32, group=GROUP, differentiable=False, arg_names=("id", "index"),
            doc="index of the point at position `index` of the grid's cell order (-1 out of range): launching "
                "over points in this order makes neighbouring threads read neighbouring points")

# ---- triangle meshes -----------------------------------------------------------------------------------------

F32, V3 = T.float32, T.vec3
_ID_P_D = ("id", "point", "max_dist")
add_builtin("mesh_get", (U64,), MeshValue, group=GROUP, differentiable=False, arg_names=("id",),
            doc="the mesh `id` as a value whose points, velocities and indices arrays kernels can read")
add_builtin("mesh_query_point", (U64, V3, F32), MeshQueryPoint, group=GROUP, arg_names=_ID_P_D,
            doc="closest point of the mesh within max_dist; sign by a majority vote of three axis-aligned rays; "
                "differentiable: u, v w.r.t. point")
add_builtin("mesh_query_point_no_sign", (U64, V3, F32), MeshQueryPoint, group=GROUP, arg_names=_ID_P_D,
            doc="closest point of the mesh within max_dist, without a sign; differentiable: u, v w.r.t. point")
add_builtin("mesh_query_point_sign_normal", (U64, V3, F32), MeshQueryPoint, group=GROUP, arg_names=_ID_P_D,
            doc="closest point; sign from the closest face's normal (at shared edges and vertices, the face whose "
                "normal best faces the point); differentiable: u, v w.r.t. point")
add_builtin("mesh_query_point_sign_winding_number", (U64, V3, F32, F32, F32), MeshQueryPoint, group=GROUP,
            arg_names=_ID_P_D + ("accuracy", "threshold"), defaults={"accuracy": 2.0, "threshold": 0.5},
            doc="closest point; inside when the exact winding number exceeds threshold (`accuracy` is accepted "
                "and unused: the sum over faces is exact); differentiable: u, v w.r.t. point")
add_builtin("mesh_query_point_sign_winding_number", (U64, V3, F32), MeshQueryPoint, group=GROUP, arg_names=_ID_P_D,
            native="mesh_query_point_sign_winding_number_default",
            doc="mesh_query_point_sign_winding_number with accuracy 2 and threshold 0.5")
# Out-parameter forms: results are written into the caller's variables (left as they were when nothing is
# found); differentiable as the result forms (bary_u, bary_v w.r.t. point).
add_builtin("mesh_query_point", (U64, V3, F32, F32, I32, F32, F32), T.bool_, group=GROUP,
            mutates_arg=(3, 4, 5, 6), arg_names=_ID_P_D + ("inside", "face", "bary_u", "bary_v"),
            doc="closest point, written into sign, face, bary_u, bary_v; true if found")
add_builtin("mesh_query_point_sign_normal", (U64, V3, F32, F32, I32, F32, F32), T.bool_, group=GROUP,
            mutates_arg=(3, 4, 5, 6), arg_names=_ID_P_D + ("inside", "face", "bary_u", "bary_v"),
            doc="closest point with the face normal's sign, written into sign, face, bary_u, bary_v; true if found")
add_builtin("mesh_query_point_sign_winding_number", (U64, V3, F32, F32, I32, F32, F32, F32, F32), T.bool_,
            group=GROUP, mutates_arg=(3, 4, 5, 6),
            arg_names=_ID_P_D + ("inside", "face", "bary_u", "bary_v", "accuracy", "threshold"),
            defaults={"accuracy": 2.0, "threshold": 0.5},
            doc="closest point with the winding number's sign, written into sign, face, bary_u, bary_v; true if "
                "found")
add_builtin("mesh_query_point_sign_parity", (U64, V3, F32, I32, F32), MeshQueryPoint, group=GROUP,
            arg_names=_ID_P_D + ("n_sample", "perturbation_scale"), defaults={"n_sample": 1, "perturbation_scale": 0.1},
            doc="closest point; inside when at least half of n_sample rays along (1, 1, 1), perturbed per axis by a "
                "fixed-seed uniform draw in [-perturbation_scale, perturbation_scale), cross the mesh an odd number "
                "of times; differentiable: u, v w.r.t. point")
add_builtin("mesh_query_point_sign_parity", (U64, V3, F32, F32, I32, F32, F32, I32, F32), T.bool_, group=GROUP,
            mutates_arg=(3, 4, 5, 6),
            arg_names=_ID_P_D + ("inside", "face", "bary_u", "bary_v", "n_sample", "perturbation_scale"),
            defaults={"n_sample": 1, "perturbation_scale": 0.1},
            doc="closest point with the ray parity's sign, written into sign, face, bary_u, bary_v; true if found")
add_builtin("mesh_query_point_no_sign", (U64, V3, F32, I32, F32, F32), T.bool_, group=GROUP,
            mutates_arg=(3, 4, 5), arg_names=_ID_P_D + ("face", "bary_u", "bary_v"),
            doc="closest point, written into face, bary_u, bary_v; true if found")
add_builtin("mesh_query_furthest_point_no_sign", (U64, V3, F32), MeshQueryPoint, group=GROUP, differentiable=False,
            arg_names=("id", "point", "min_dist"),
            doc="the mesh's point furthest from `point`, farther than min_dist (a corner of a face: u, v of that "
                "corner), without a sign")
add_builtin("mesh_query_furthest_point_no_sign", (U64, V3, F32, I32, F32, F32), T.bool_, group=GROUP,
            differentiable=False, mutates_arg=(3, 4, 5), arg_names=("id", "point", "min_dist", "face", "bary_u",
                                                                     "bary_v"),
            doc="furthest point, written into face, bary_u, bary_v; true if found")
add_builtin("mesh_query_ray", (U64, V3, V3, F32), MeshQueryRay, group=GROUP, arg_names=("id", "start", "dir", "max_t"),
            doc="closest hit of the ray start + t dir, t in [0, max_t); differentiable: t, u, v w.r.t. start and "
                "dir, and t, u, v, normal w.r.t. the hit face's points (into the mesh points' gradient array)")
add_builtin("mesh_query_ray", (U64, V3, V3, F32, I32), MeshQueryRay, group=GROUP,
            native="mesh_query_ray_root", arg_names=("id", "start", "dir", "max_t", "root"),
            doc="as mesh_query_ray, searching only the subtree `root` (mesh_get_group_root; -1: the whole mesh)")
_RAY_OUT = ("id", "start", "dir", "max_t", "t", "bary_u", "bary_v", "sign", "normal", "face")
add_builtin("mesh_query_ray", (U64, V3, V3, F32, F32, F32, F32, F32, V3, I32), T.bool_, group=GROUP,
            mutates_arg=(4, 5, 6, 7, 8, 9), arg_names=_RAY_OUT,
            doc="closest hit, written into t, bary_u, bary_v, sign, normal, face (left as they were on a miss); "
                "true if hit; differentiable as the result form")
add_builtin("mesh_query_ray", (U64, V3, V3, F32, F32, F32, F32, F32, V3, I32, I32), T.bool_, group=GROUP,
            mutates_arg=(4, 5, 6, 7, 8, 9), arg_names=_RAY_OUT + ("root",),
            doc="as mesh_query_ray with outputs, searching only the subtree `root` (mesh_get_group_root; -1: all)")
add_builtin("mesh_query_ray_anyhit", (U64, V3, V3, F32, I32), T.bool_, group=GROUP, differentiable=False,
            arg_names=("id", "start", "dir", "max_t", "root"), defaults={"root": -1},
            doc="true if the ray start + t dir hits any face at 0 <= t < max_t (stops at the first found; no "
                "closest-hit search); `root`: subtree of mesh_get_group_root, -1 the whole mesh")
add_builtin("mesh_query_ray_count_intersections", (U64, V3, V3, I32), I32, group=GROUP, differentiable=False,
            arg_names=("id", "start", "dir", "root"), defaults={"root": -1},
            doc="number of faces the ray start + t dir (t >= 0) crosses (odd: start inside a closed mesh); "
                "`root`: subtree of mesh_get_group_root, -1 the whole mesh")
add_builtin("mesh_query_aabb", (U64, V3, V3), MeshQueryAABB, group=GROUP, differentiable=False,
            arg_names=("id", "low", "high"),
            doc="query the faces whose bounding boxes overlap the box [low, high]; iterate it with "
                "`for face in ...` or `while wp.mesh_query_aabb_next(query, face)`")
add_builtin("mesh_query_aabb_next", (MeshQueryAABB, I32), T.bool_, group=GROUP, differentiable=False,
            mutates_arg=(0, 1), arg_names=("query", "index"),
            doc="advance the query: true with the next overlapping face in `index`, false when done")
add_builtin("mesh_query_sphere", (U64, V3, F32), MeshQueryAABB, group=GROUP, differentiable=False,
            arg_names=("id", "center", "radius"),
            doc="query the faces whose closest point to `center` is within `radius` (touching counts; a "
                "degenerate face by its longest edge); iterate it like mesh_query_aabb")
add_builtin("mesh_query_next", (MeshQueryAABB, I32), T.bool_, group=GROUP, differentiable=False,
            mutates_arg=(0, 1), arg_names=("query", "index"), native="mesh_query_aabb_next",
            doc="advance a mesh box or sphere query: true with the next face in `index`, false when done")
QUERY_NEXT["mesh_query_aabb"] = "mesh_query_aabb_next"
QUERY_NEXT["mesh_query_sphere"] = "mesh_query_aabb_next"
for _v in (T.vec3, T.vec3d):
    add_builtin("intersect_tri_tri", (_v,) * 6, I32, group=GROUP, differentiable=False,
                arg_names=("v0", "v1", "v2", "u0", "u1", "u2"),
                doc="1 if triangles (v0, v1, v2) and (u0, u1, u2) share a point (coplanar overlap included), "
                    "else 0 (Moller's interval test)")
add_builtin("mesh_get_group_root", (U64, I32), I32, group=GROUP, differentiable=False, arg_names=("id", "group"),
            doc="BVH root of the faces of `group` (meshes built with groups), -1 if there is none")
add_builtin("mesh_get_bvh", (U64,), U64, group=GROUP, differentiable=False, arg_names=("id",),
            doc="id of the mesh's BVH for the bvh_query_* builtins: its items are the faces, with their boxes")
add_builtin("mesh_eval_position", (U64, I32, F32, F32), V3, group=GROUP, arg_names=("id", "face", "bary_u", "bary_v"),
            doc="u x_i + v x_j + (1 - u - v) x_k on face `face`; differentiable w.r.t. u, v")
add_builtin("mesh_eval_velocity", (U64, I32, F32, F32), V3, group=GROUP, arg_names=("id", "face", "bary_u", "bary_v"),
            doc="vertex velocities interpolated like mesh_eval_position; differentiable w.r.t. u, v")
add_builtin("mesh_eval_face_normal", (U64, I32), V3, group=GROUP, differentiable=False, arg_names=("id", "face"),
            doc="unit normal of face `face` (right-handed winding)")
add_builtin("mesh_get_point", (U64, I32), V3, group=GROUP, differentiable=False, arg_names=("id", "index"),
            doc="position of the vertex at entry `index` of the indices (3 * face + corner)")
add_builtin("mesh_get_velocity", (U64, I32), V3, group=GROUP, differentiable=False, arg_names=("id", "index"),
            doc="velocity of the vertex at entry `index` of the indices")
add_builtin("mesh_get_index", (U64, I32), I32, group=GROUP, differentiable=False, arg_names=("id", "index"),
            doc="entry `index` of the mesh's indices")

# ---- user BVHs (wp.Bvh; kernels/native/bvh.h) -----------------------------------------------------------------

for _name, _args, _names, _what in (
        ("bvh_query_aabb", (U64, V3, V3), ("id", "low", "high"), "whose boxes overlap the box [low, high]"),
        ("bvh_query_ray", (U64, V3, V3), ("id", "start", "dir"),
         "whose boxes the ray start + t dir (t >= 0; bvh_query_next's max_dist bounds t) enters"),
        ("bvh_query_sphere", (U64, V3, F32), ("id", "center", "radius"),
         "whose boxes lie within `radius` of `center` (touching counts)")):
    add_builtin(_name, _args, BvhQuery, group=GROUP, differentiable=False, arg_names=_names,
                doc=f"query the items of BVH `id` {_what}; iterate it with `for item in ...` or "
                    "`while wp.bvh_query_next(query, item)`")
    add_builtin(_name, _args + (I32,), BvhQuery, group=GROUP, differentiable=False, arg_names=_names + ("root",),
                doc=f"as {_name}, searching only the subtree `root` (bvh_get_group_root; -1: the whole tree)")
    QUERY_NEXT[_name] = "bvh_query_next"
add_builtin("bvh_query_capsule", (U64, V3, V3, F32, I32), BvhQuery, group=GROUP, differentiable=False,
            arg_names=("id", "start", "dir", "radius", "root"), defaults={"root": -1},
            doc="query the items of BVH `id` whose boxes, inflated by `radius` (< 0: 0), the segment start + t dir "
                "enters (t in [0, bvh_query_next's max_dist]; 1 for a capsule from start to start + dir); "
                "conservative near box corners")
add_builtin("bvh_query_next", (BvhQuery, I32), T.bool_, group=GROUP, differentiable=False, mutates_arg=(0, 1),
            arg_names=("query", "index"),
            doc="advance the query: true with the next item in `index`, false when done")
add_builtin("bvh_query_next", (BvhQuery, I32, F32), T.bool_, group=GROUP, differentiable=False, mutates_arg=(0, 1),
            arg_names=("query", "index", "max_dist"),
            doc="as bvh_query_next; a ray query only yields boxes entered at t <= max_dist (multiples of dir)")
add_builtin("bvh_get_group_root", (U64, I32), I32, group=GROUP, differentiable=False, arg_names=("id", "group"),
            doc="root node of the items of `group` (BVHs built with groups), -1 if there is none")

# ---- closest points ------------------------------------------------------------------------------------------

add_builtin("closest_point_edge_edge", (V3, V3, V3, V3, F32), V3, group=GROUP,
            arg_names=("p1", "q1", "p2", "q2", "epsilon"),
            doc="vec3(s, t, d): closest points p1 + s (q1 - p1) and p2 + t (q2 - p2) of two segments and their "
                "distance; a segment with squared length <= epsilon is a point (weight 0); differentiable")

# ---- sparse volumes (kernels/native/volume.h; float NanoVDB grids, kernels/runtime/volume.py) ----------------------

add_builtin("volume_sample_f", (U64, V3, I32), F32, group=GROUP, arg_names=("id", "uvw", "sampling_mode"),
            doc="the volume's value at index-space point uvw: wp.Volume.CLOSEST (nearest voxel) or LINEAR "
                "(trilinear); differentiable w.r.t. uvw (not the voxel values)")
add_builtin("volume_sample_grad_f", (U64, V3, I32, V3), F32, group=GROUP, mutates_arg=3,
            arg_names=("id", "uvw", "sampling_mode", "grad"),
            doc="volume_sample_f, writing its gradient w.r.t. uvw into `grad`; differentiable w.r.t. uvw through both "
                "(kernels/builtins/volume.py has the other value types)")
add_builtin("volume_lookup_f", (U64, I32, I32, I32), F32, group=GROUP, differentiable=False,
            arg_names=("id", "i", "j", "k"), doc="the value of voxel (i, j, k) (the background outside the grid)")
for _name, _what in (("volume_world_to_index", "world point to index space"),
                     ("volume_index_to_world", "index-space point to world space"),
                     ("volume_world_to_index_dir", "world direction to index space (no translation)"),
                     ("volume_index_to_world_dir", "index-space direction to world space (no translation)")):
    add_builtin(_name, (U64, V3), V3, group=GROUP, arg_names=("id", "xyz" if "world_to" in _name else "uvw"),
                doc=f"the grid's map: {_what}; differentiable")
