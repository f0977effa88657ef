"""Spatial queries (Warp's "Geometry" group): hash grid neighbour queries, triangle mesh queries, closest points.

Native code: kernels/native/hash_grid.h, kernels/native/mesh.h, kernels/native/geometry.h. Grids and meshes are
built on the host (kernels/hash_grid.py, kernels/mesh.py) and reach kernels as uint64 ids.
"""

from __future__ import annotations

from .. import types as T
from ..hash_grid import hash_grid_query_type
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
