"""The native struct types of the geometry builtins: query states and results (`wp.MeshQueryPoint`,
`wp.BvhQuery`, `wp.HashGridQuery[...]`, ...) and the mesh value of `wp.mesh_get`. Their C++ definitions live in
kernels/native/ (mesh.h, bvh.h, hash_grid.h); the builtin table (geometry.py) takes and returns them. They are
compile-time types here (typesys.native_struct); the runtime modules of the objects they query (runtime/mesh.py,
runtime/bvh_object.py, runtime/hash_grid.py) give them their Python values.
"""

from __future__ import annotations

from .. import types as T
from ..typesys import ArrayType, native_struct

MeshQueryPoint = native_struct(
    "MeshQueryPoint", "mesh_query_point_t",
    {"result": T.bool_, "sign": T.float32, "face": T.int32, "u": T.float32, "v": T.float32},
    doc="Result of mesh_query_point*: found, sign (< 0 inside), closest face and its barycentrics (u, v).")
MeshQueryRay = native_struct(
    "MeshQueryRay", "mesh_query_ray_t",
    {"result": T.bool_, "sign": T.float32, "face": T.int32, "t": T.float32, "u": T.float32, "v": T.float32,
     "normal": T.vec3},
    doc="Result of mesh_query_ray: hit, sign (> 0 front face), face, distance t [m], barycentrics, unit normal.")
MeshQueryAABB = native_struct(
    "MeshQueryAABB", "mesh_query_aabb_t", {"face": T.int32},
    doc="State of mesh_query_aabb: iterate it with `for face in query` or mesh_query_aabb_next; `face` is the "
        "face last yielded.")
MeshValue = native_struct(
    "Mesh", "mesh_t",
    {"points": ArrayType(T.vec3, 1), "velocities": ArrayType(T.vec3, 1), "indices": ArrayType(T.int32, 1),
     "num_points": T.int32, "num_tris": T.int32},
    doc="A mesh as seen in a kernel (wp.mesh_get): points [m], velocities [m/s], indices (3 per face).")

BvhQuery = native_struct(
    "BvhQuery", "bvh_query_t", {"bounds_nr": T.int32},
    doc="State of a BVH query (bvh_query_aabb, bvh_query_ray, bvh_query_sphere): iterate it with "
        "`for item in query` or `while wp.bvh_query_next(query, item)`.")

BvhQueryTiled = native_struct(
    "BvhQueryTiled", "bvh_query_tiled_t", {},
    doc="State of a block's BVH query (tile_bvh_query_aabb/ray): advance it with tile_bvh_query_next while "
        "tile_query_valid(query).")
MeshQueryAABBTiled = native_struct(
    "MeshQueryAABBTiled", "mesh_query_aabb_tiled_t", {},
    doc="State of a block's mesh box query (tile_mesh_query_aabb): advance it with tile_mesh_query_aabb_next "
        "while tile_query_valid(query).")


def _query_type(dtype, name):
    return native_struct(name, f"hash_grid_query_t<wp::{dtype._cname_}>", {},
                         doc=f"State of a hash grid query over {dtype.__name__} points (HashGridQuery).")


QUERY_TYPES = {T.float16: _query_type(T.float16, "HashGridQuery"),
               T.float32: _query_type(T.float32, "HashGridQuery"),
               T.float64: _query_type(T.float64, "HashGridQuery")}


def hash_grid_query_type(dtype):
    """The query type of a grid over `dtype` points (float16, float32 or float64)."""
    dtype = T.canonical_type(dtype)
    if dtype not in QUERY_TYPES:
        raise TypeError(f"HashGridQuery: unsupported precision {T.type_repr(dtype)}; use float16, float32 or float64")
    return QUERY_TYPES[dtype]


HashGridQuery = QUERY_TYPES[T.float32]
# `wp.HashGridQuery[wp.float16]` names the query type of a half-precision grid (in @wp.func annotations)
for _t in QUERY_TYPES.values():
    _t.__class_getitem__ = classmethod(lambda cls, dtype: hash_grid_query_type(dtype))
