"""Sparse volume builtins of every value type (Warp's `volume_sample/_grad/lookup/store` with `dtype=`).

Native code: kernels/native/volume.h (templates over the value type) and volume_index.h; volumes are wp.Volume
(kernels/runtime/volume.py), reaching kernels as uint64 ids. The float-only names (`volume_sample_f`, ...) and the
index/world maps are declared in geometry.py. A call `volume_sample(id, uvw, mode, dtype=T)` is resolved by
type inference (passes/typeinfer_volume.py) to the typed builtin `VOLUME_NAMES[T]` below.
"""

from __future__ import annotations

from .. import types as T
from .registry import A, add_builtin, declare_properties

GROUP = "geometry"
U64, I32, V3 = T.uint64, T.int32, T.vec3

#: value type -> suffix of its typed builtins; Warp's public names use f, v, i; the others are internal.
VOLUME_SUFFIXES = {T.float32: "f", T.vec3: "v", T.int32: "i", T.float64: "float64", T.int64: "int64",
                   T.uint32: "uint32", T.vec3d: "vec3d", T.vec4: "vec4f", T.vec4d: "vec4d"}
_PUBLIC = ("f", "v", "i")
_FLOATING = (T.float32, T.float64, T.vec3, T.vec3d, T.vec4, T.vec4d)


def gradient_type(dtype):
    """The type volume_sample_grad writes: vec3 of the scalar for a scalar value, an N x 3 matrix for a vector."""
    if T.is_vector(dtype):
        return T.matrix((dtype._shape_[0], 3), dtype._wp_scalar_type_)
    return T.vector(3, dtype)


for _dtype, _suffix in VOLUME_SUFFIXES.items():
    _float = _dtype in _FLOATING
    if _suffix != "f":  # volume_sample_f, volume_sample_grad_f and volume_lookup_f are in geometry.py
        add_builtin(f"volume_sample_{_suffix}", (U64, V3, I32), _dtype, native="volume_sample_t", template_ret=True,
                    group=GROUP, differentiable=_float, arg_names=("id", "uvw", "sampling_mode"),
                    doc=f"the {T.type_repr(_dtype)} volume's value at index-space point uvw (CLOSEST, or LINEAR for "
                        "floating types); differentiable w.r.t. uvw")
        add_builtin(f"volume_lookup_{_suffix}", (U64, I32, I32, I32), _dtype, native="volume_lookup_t",
                    template_ret=True, group=GROUP, differentiable=False, arg_names=("id", "i", "j", "k"),
                    doc=f"the value of voxel (i, j, k) of a {T.type_repr(_dtype)} volume (background outside)")
        if _float:
            add_builtin(f"volume_sample_grad_{_suffix}", (U64, V3, I32, gradient_type(_dtype)), _dtype,
                        native="volume_sample_grad_t", group=GROUP, mutates_arg=3,
                        arg_names=("id", "uvw", "sampling_mode", "grad"),
                        doc="the sampled value, writing d value / d uvw into `grad`; differentiable w.r.t. uvw "
                            "through both")
    add_builtin(f"volume_store_{_suffix}", (U64, I32, I32, I32, _dtype), None, native="volume_store_t",
                group=GROUP, differentiable=False, side_effect=True, arg_names=("id", "i", "j", "k", "value"),
                doc="write voxel (i, j, k) where an allocated leaf holds it (no effect elsewhere)")
    if _suffix not in _PUBLIC:
        for _kind in ("sample", "lookup", "sample_grad", "store"):
            declare_properties(f"volume_{_kind}_{_suffix}", exposed=False)

# Warp's int32 sampler takes no mode: the nearest voxel.
add_builtin("volume_sample_i", (U64, V3), I32, native="volume_sample_closest_i", group=GROUP, differentiable=False,
            arg_names=("id", "uvw"), doc="the int32 volume's value at the voxel nearest index-space point uvw")

# The dtype-generic forms: type inference picks the typed builtin (these declarations give the names and docs).
add_builtin("volume_sample", (U64, V3, I32), T.float32, native="volume_sample_f", group=GROUP,
            arg_names=("id", "uvw", "sampling_mode"),
            doc="volume_sample(id, uvw, sampling_mode, dtype): the value at index-space uvw, as dtype (float32, "
                "float64, int32, int64, uint32, vec3f/d, vec4f/d); differentiable w.r.t. uvw for floating types")
add_builtin("volume_sample_grad", (U64, V3, I32, V3), T.float32, native="volume_sample_grad_f", group=GROUP,
            mutates_arg=3, arg_names=("id", "uvw", "sampling_mode", "grad"),
            doc="volume_sample_grad(id, uvw, sampling_mode, grad, dtype): the value, and its gradient w.r.t. uvw "
                "written into grad (vec3 for a scalar dtype, N x 3 matrix for a vector)")
add_builtin("volume_lookup", (U64, I32, I32, I32), T.float32, native="volume_lookup_f", group=GROUP,
            differentiable=False, arg_names=("id", "i", "j", "k"),
            doc="volume_lookup(id, i, j, k, dtype): the value of voxel (i, j, k) as dtype")
add_builtin("volume_store", (U64, I32, I32, I32, T.float32), None, native="volume_store_t", group=GROUP,
            differentiable=False, side_effect=True, arg_names=("id", "i", "j", "k", "value"),
            doc="volume_store(id, i, j, k, value): write voxel (i, j, k) of an allocated volume of value's type")

# ---- index-based access (kernels/native/volume_index.h) --------------------------------------------------------

add_builtin("volume_lookup_index", (U64, I32, I32, I32), I32, group=GROUP, differentiable=False,
            arg_names=("id", "i", "j", "k"),
            doc="the linear index of voxel (i, j, k): an index grid's, or 512 per leaf for a value grid; -1 where "
                "no voxel is allocated or active")
add_builtin("volume_voxel_count", (U64,), I32, group=GROUP, differentiable=False, arg_names=("id",),
            doc="the number of indexable voxels (the bound of volume_lookup_index): 512 per tile of a value grid, "
                "an index grid's active voxels")
for _dtype in _FLOATING:
    add_builtin("volume_sample_index", (U64, V3, I32, A(_dtype), _dtype), _dtype, group=GROUP,
                arg_names=("id", "uvw", "sampling_mode", "voxel_data", "background"),
                doc="sample values stored per voxel index in voxel_data (background elsewhere) at index-space uvw; "
                    "differentiable w.r.t. uvw, voxel_data and background")
    add_builtin("volume_sample_grad_index", (U64, V3, I32, A(_dtype), _dtype, gradient_type(_dtype)), _dtype,
                group=GROUP, mutates_arg=5,
                arg_names=("id", "uvw", "sampling_mode", "voxel_data", "background", "grad"),
                doc="volume_sample_index, writing d value / d uvw into grad; differentiable through both outputs "
                    "w.r.t. uvw, voxel_data and background")
