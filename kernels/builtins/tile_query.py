"""Block-cooperative spatial queries (Warp's "tile" BVH and mesh queries and their deprecated `*_tiled` names).

A block runs as one lane here, so `*_next` gives a tile of one index per step (-1 once the query is exhausted,
which clears tile_query_valid); `wp.untile` reads it. Native code: kernels/native/tile_query.h.
"""

from __future__ import annotations

from .. import types as T
from .query_types import BvhQueryTiled, MeshQueryAABBTiled
from .registry import Tl, add_builtin

GROUP = "tile"
U64, V3, I32 = T.uint64, T.vec3, T.int32
_INDEX_TILE = Tl(I32, 1, 1, ndim=1)

for _name, _native in (("tile_bvh_query_aabb", None), ("bvh_query_aabb_tiled", "tile_bvh_query_aabb")):
    add_builtin(_name, (U64, V3, V3), BvhQueryTiled, _native, group=GROUP, differentiable=False,
                arg_names=("id", "low", "high"),
                doc="the block's query of the items of BVH `id` whose boxes overlap [low, high]; advance it with "
                    "tile_bvh_query_next while tile_query_valid(query)")
for _name, _native in (("tile_bvh_query_ray", None), ("bvh_query_ray_tiled", "tile_bvh_query_ray")):
    add_builtin(_name, (U64, V3, V3), BvhQueryTiled, _native, group=GROUP, differentiable=False,
                arg_names=("id", "start", "dir"),
                doc="the block's query of the items of BVH `id` whose boxes the ray start + t dir (t >= 0, "
                    "unbounded) enters")
for _name in ("tile_bvh_query_next", "bvh_query_next_tiled"):
    add_builtin(_name, (BvhQueryTiled,), _INDEX_TILE, "tile_bvh_query_next", group=GROUP, differentiable=False,
                mutates_arg=(0,), arg_names=("query",),
                doc="advance the block's query: a tile with the next item (-1 when there is none); untile it")
for _name, _native in (("tile_mesh_query_aabb", None), ("mesh_query_aabb_tiled", "tile_mesh_query_aabb")):
    add_builtin(_name, (U64, V3, V3), MeshQueryAABBTiled, _native, group=GROUP, differentiable=False,
                arg_names=("id", "low", "high"),
                doc="the block's query of the faces of mesh `id` whose boxes overlap [low, high] (broad phase)")
for _name in ("tile_mesh_query_aabb_next", "mesh_query_aabb_next_tiled"):
    add_builtin(_name, (MeshQueryAABBTiled,), _INDEX_TILE, "tile_mesh_query_aabb_next", group=GROUP,
                differentiable=False, mutates_arg=(0,), arg_names=("query",),
                doc="advance the block's mesh query: a tile with the next face (-1 when there is none)")
for _query in (BvhQueryTiled, MeshQueryAABBTiled):
    add_builtin("tile_query_valid", (_query,), T.bool_, group=GROUP, differentiable=False, arg_names=("query",),
                doc="false once the block's query has handed out its last result")
