"""Swept volumes of rigidly moving meshes (Warp's `warp.geometry.swept_volume_*`): the signed distance to the union
of every mesh at every sampled pose, on a grid, and its iso-surface by marching cubes.

The field at a point is min over meshes m and poses s of the mesh's signed distance at the point carried back into
the mesh's rest frame (rigid maps keep distances). Inside/outside comes from the mesh query chosen by
SweptVolumeSignMode. Only the sampled instants count: motion between samples is not bounded. Not differentiable
(the field is a minimum of closest-point queries, built forward only; on a Tape, use the field as data).
"""

from __future__ import annotations

import enum

import numpy as np

from .. import types as T
from ..compiler import lang as wp
from ..compiler.function import func
from ..builtins.query_types import MeshQueryPoint
from ..runtime.array import array, zeros
from ..runtime.device import get_device
from ..runtime.launch import launch, tape_hooks
from ..runtime.module import kernel
from .marching_cubes import marching_cubes


class SweptVolumeSignMode(enum.IntEnum):
    """How a mesh's inside is told from its outside (an integer, passed to kernels as such)."""

    NORMAL = 0  #: the closest face's normal (mesh_query_point_sign_normal)
    WINDING_NUMBER = 1  #: the generalised winding number (robust on open shells); needs support_winding_number
    PARITY = 2  #: the parity of ray crossings (mesh_query_point's sign)
    NO_SIGN = 3  #: unsigned distance: positive everywhere, only a positive threshold gives a surface


@func
def _pose_distance(mesh_id: T.uint64, local: T.vec3, max_dist: T.float32, best: T.float32, sign_mode: T.int32,
                   maybe_inside: bool) -> T.float32:
    """The mesh's signed distance at `local` (rest frame) where it can lower `best`; else a value not below
    `best` (max_dist: no face within reach).

    With `maybe_inside` false (the point is outside the mesh's bounding box) the point counts as outside in every
    mode, and only a distance below `best` matters, so the closest-point search stops there (the cheap case, most
    of a grid). For WINDING_NUMBER that is what the query would say: there the winding number is at most 1/2 (a
    cap of the mesh's holes fits in the box and subtends at most a hemisphere); for a closed mesh every mode
    agrees."""
    d = max_dist
    if sign_mode == 3 or not maybe_inside:
        if best > 0.0:
            q = wp.mesh_query_point_no_sign(mesh_id, local, wp.min(best, max_dist))
            d = _closest(mesh_id, local, q, 1.0, max_dist)
    elif sign_mode == 1:
        d = _closest(mesh_id, local, wp.mesh_query_point_sign_winding_number(mesh_id, local, max_dist), -2.0,
                     max_dist)
    elif sign_mode == 2:
        d = _closest(mesh_id, local, wp.mesh_query_point(mesh_id, local, max_dist), -2.0, max_dist)  # ray parity
    else:
        d = _closest(mesh_id, local, wp.mesh_query_point_sign_normal(mesh_id, local, max_dist), -2.0, max_dist)
    return d


@func
def _closest(mesh_id: T.uint64, local: T.vec3, q: MeshQueryPoint, sign: T.float32, max_dist: T.float32) -> T.float32:
    """The distance to the query's closest point times `sign` (-2: the query's own sign), max_dist without a hit."""
    d = max_dist
    if sign == -2.0:
        sign = q.sign
    if q.result:
        d = sign * wp.length(local - wp.mesh_eval_position(mesh_id, q.face, q.u, q.v))
    return d


@func
def swept_volume_sdf(point: T.vec3, mesh_ids: array(dtype=T.uint64), transforms: array(dtype=T.transform, ndim=2),
                     max_dist: T.float32, sign_mode: T.int32) -> T.float32:
    """The swept-volume signed distance at `point` [world units]: min over meshes and poses (see the module
    docstring); `max_dist` bounds the closest-point search (a point farther than that from every surface gets
    +max_dist, inside or not). `sign_mode` is a SweptVolumeSignMode value."""
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        for s in range(transforms.shape[1]):
            local = wp.transform_point(wp.transform_inverse(transforms[m, s]), point)
            best = wp.min(best, _pose_distance(mesh_ids[m], local, max_dist, best, sign_mode, True))
    return best


@kernel
def _swept_field(mesh_ids: array(dtype=T.uint64), transforms: array(dtype=T.transform, ndim=2),
                 mesh_lower: array(dtype=T.vec3), mesh_upper: array(dtype=T.vec3), lower: T.vec3, spacing: T.vec3,
                 max_dist: T.float32, sign_mode: T.int32, field: array(dtype=T.float32, ndim=3)):
    """swept_volume_sdf at every node, skipping the costly inside test where a pose's bounding box [rest frame,
    mesh_lower/upper per mesh] excludes the node."""
    i, j, k = wp.tid()
    point = lower + wp.cw_mul(spacing, wp.vec3(float(i), float(j), float(k)))
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        lo = mesh_lower[m]
        hi = mesh_upper[m]
        for s in range(transforms.shape[1]):
            local = wp.transform_point(wp.transform_inverse(transforms[m, s]), point)
            outside = wp.max(wp.max(lo - local, local - hi), wp.vec3(0.0))  # per axis, 0 inside the box
            inside_box = wp.max(outside) == 0.0
            # outside the box, every face of this pose is at least |outside| away, and the point is outside it
            if inside_box or wp.length(outside) < best:
                best = wp.min(best, _pose_distance(mesh_ids[m], local, max_dist, best, sign_mode, inside_box))
    field[i, j, k] = best


@kernel
def _posed_bounds(points: array(dtype=T.vec3), transforms: array(dtype=T.transform, ndim=2), m: T.int32,
                  lower: array(dtype=T.vec3), upper: array(dtype=T.vec3)):
    """Bounds of the mesh's vertices at every pose (the vertices' hull holds the mesh)."""
    s, i = wp.tid()
    p = wp.transform_point(transforms[m, s], points[i])
    wp.atomic_min(lower, 0, p)
    wp.atomic_max(upper, 0, p)


def _rest_box(mesh) -> tuple:
    """(lower, upper) of the mesh's rest-pose vertices, widened by 1e-4 of their extent (an empty mesh: an empty
    box)."""
    points = mesh.points.numpy().astype(np.float64)
    if len(points) == 0:
        return np.full(3, np.inf), np.full(3, -np.inf)
    low, high = points.min(axis=0), points.max(axis=0)
    pad = 1e-4 * float(np.max(high - low)) + 1e-6
    return low - pad, high + pad


def _transforms(transforms, device):
    """`transforms` as an array2d of transforms (num_meshes, num_samples) on `device`."""
    if isinstance(transforms, array):
        if transforms.ndim != 2 or transforms.dtype is not T.transform:
            raise ValueError("'transforms' must be a 2-d array of wp.transform (num_meshes, num_samples), got "
                             f"{transforms.ndim}-d {T.type_repr(transforms.dtype)}")
        return transforms.to(device)
    values = np.asarray(transforms, dtype=np.float32)
    if values.ndim != 3 or values.shape[2] != 7:
        raise ValueError("'transforms' must have shape (num_meshes, num_samples, 7) (translation xyz, quaternion "
                         f"xyzw), got {values.shape}")
    return array(values, dtype=T.transform, device=device)


def _prepare(meshes, transforms, device) -> tuple:
    if len(meshes) == 0:
        raise ValueError("'meshes' must contain at least one mesh.")
    device = get_device(device) if device is not None else meshes[0].device
    transforms = _transforms(transforms, device)
    if transforms.shape[0] != len(meshes):
        raise ValueError(f"'transforms' has {transforms.shape[0]} rows but there are {len(meshes)} meshes.")
    if transforms.shape[1] == 0:
        raise ValueError("'transforms' must hold at least one pose per mesh.")
    return device, transforms


def _bounds(meshes, transforms, device) -> tuple:
    lower = array(np.full((1, 3), np.inf, np.float32), dtype=T.vec3, device=device)
    upper = array(np.full((1, 3), -np.inf, np.float32), dtype=T.vec3, device=device)
    for m, mesh in enumerate(meshes):
        if mesh.points.shape[0]:
            launch(_posed_bounds, dim=(transforms.shape[1], mesh.points.shape[0]),
                   inputs=[mesh.points, transforms, m, lower, upper], device=device, record_tape=False)
    low, high = lower.numpy()[0].astype(np.float64), upper.numpy()[0].astype(np.float64)
    if not np.isfinite(low).all():
        raise ValueError("Could not compute swept-volume bounds: every mesh is empty.")
    return low, high


def swept_volume_bounds(meshes, transforms, padding: float = 0.0, device=None) -> tuple:
    """World bounds (lower, upper) of every mesh at every pose, widened by `padding` on every side, as vec3."""
    device, transforms = _prepare(meshes, transforms, device)
    low, high = _bounds(meshes, transforms, device)
    return T.vec3(*(low - padding).tolist()), T.vec3(*(high + padding).tolist())


def _grid(meshes, transforms, voxel_size, resolution, lower, upper, margin: float, device) -> tuple:
    """(lower, upper, node counts, tight lower, tight upper) of the sampling grid (numpy float64 corners)."""
    if (lower is None) != (upper is None):
        raise ValueError("Pass both 'lower' and 'upper', or neither.")
    if (voxel_size is None) == (resolution is None):
        raise ValueError("Pass exactly one of 'voxel_size' and 'resolution'.")
    if voxel_size is not None and not voxel_size > 0.0:
        raise ValueError(f"'voxel_size' must be positive, got {voxel_size}.")
    dims = None
    if resolution is not None:
        dims = tuple(int(n) for n in resolution)
        if len(dims) != 3 or min(dims) < 2:
            raise ValueError(f"'resolution' must be 3 node counts of at least 2, got {tuple(resolution)}.")
    tight_low, tight_high = _bounds(meshes, transforms, device)
    if lower is not None:
        if voxel_size is not None:
            raise ValueError("'voxel_size' cannot be combined with explicit 'lower'/'upper' (the domain cannot grow "
                             "to whole cells); pass 'resolution'.")
        low, high = np.array([float(x) for x in lower]), np.array([float(x) for x in upper])
        if (high <= low).any():
            raise ValueError(f"'upper' {tuple(high)} must exceed 'lower' {tuple(low)} on every axis.")
        return low, high, dims, tight_low, tight_high
    extent = tight_high - tight_low
    if voxel_size is not None:
        # two cells beyond the margin keep the extracted level off the border; whole cells keep the spacing exact
        dims = tuple(int(n) for n in np.maximum(2, np.ceil((extent + 2.0 * (margin + 2.0 * voxel_size))
                                                            / voxel_size) + 1))
        grow = 0.5 * ((np.array(dims) - 1) * voxel_size - extent)
    else:
        grow = margin + 2.0 * extent / (np.array(dims) - 1)
    return tight_low - grow, tight_high + grow, dims, tight_low, tight_high


def swept_volume_field(meshes, transforms, voxel_size=None, *, resolution=None, lower=None, upper=None,
                       sign_mode=SweptVolumeSignMode.WINDING_NUMBER, device=None) -> tuple:
    """The swept volume's signed distance on a grid: negative inside (see the module docstring).

    Args:
        meshes: rest-pose wp.Mesh objects.
        transforms: poses, rest to world: array2d of wp.transform (num_meshes, num_samples), or an array of shape
            (num_meshes, num_samples, 7) (translation xyz, unit quaternion xyzw).
        voxel_size: cell edge [world units]; the domain (the posed bounds plus two cells) grows to whole cells.
        resolution: node counts (nx, ny, nz) instead of `voxel_size`.
        lower, upper: world positions of the first and last node (both or neither; not with `voxel_size`).
        sign_mode: a SweptVolumeSignMode (WINDING_NUMBER needs meshes built with support_winding_number=True).
        device: where to compute (default: the first mesh's device).

    Returns:
        (field, lower, upper): float32 array (nx, ny, nz) [world units] and the corner nodes' positions as vec3.
    """
    device, transforms = _prepare(meshes, transforms, device)
    for i, mesh in enumerate(meshes):
        if str(mesh.device) != str(device):
            raise ValueError(f"'meshes[{i}]' is on device '{mesh.device}' but the launch device is '{device}'.")
        if sign_mode == SweptVolumeSignMode.WINDING_NUMBER and not mesh.support_winding_number:
            raise ValueError(f"'meshes[{i}]' was not built with support_winding_number=True, which "
                             "SweptVolumeSignMode.WINDING_NUMBER needs; rebuild it so or pick another sign_mode.")
    if tape_hooks and (transforms.requires_grad or any(mesh.points.requires_grad for mesh in meshes)):
        raise ValueError("swept_volume_field is not differentiable (a minimum of closest-point queries, built "
                         "forward only): on a Tape its gradient with respect to the poses or the mesh points would "
                         "be zero; compute it outside the Tape, or from arrays that do not require gradients")
    low, high, dims, tight_low, tight_high = _grid(meshes, transforms, voxel_size, resolution, lower, upper, 0.0,
                                                   device)
    # the search must reach the surface from every node, also from a domain inside the solid or away from it
    max_dist = float(np.linalg.norm(np.maximum(high, tight_high) - np.minimum(low, tight_low)))
    spacing = (high - low) / (np.array(dims) - 1)
    field = zeros(dims, dtype=T.float32, device=device)
    mesh_ids = array(np.array([mesh.id for mesh in meshes], np.uint64), dtype=T.uint64, device=device)
    # rest-frame bounding boxes, widened a little so that rounding never moves a surface point outside its box
    boxes = np.array([_rest_box(mesh) for mesh in meshes], np.float32)
    mesh_lower = array(boxes[:, 0], dtype=T.vec3, device=device)
    mesh_upper = array(boxes[:, 1], dtype=T.vec3, device=device)
    launch(_swept_field, dim=dims, inputs=[mesh_ids, transforms, mesh_lower, mesh_upper, T.vec3(*low.tolist()),
                                           T.vec3(*spacing.tolist()), max_dist, int(sign_mode), field],
           device=device, record_tape=False)
    return field, T.vec3(*low.tolist()), T.vec3(*high.tolist())


def swept_volume_mesh(meshes, transforms, voxel_size=None, *, resolution=None, lower=None, upper=None,
                      threshold: float = 0.0, sign_mode=SweptVolumeSignMode.WINDING_NUMBER, device=None) -> tuple:
    """The swept volume's `threshold` level as a triangle mesh (verts vec3 [world units], int32 indices, three
    per triangle), by marching cubes on swept_volume_field (same arguments). The default domain is padded by
    `threshold` as well; a threshold above half a cell diagonal guarantees every sampled pose is enclosed.

    Raises:
        ValueError: NO_SIGN with threshold <= 0 (an unsigned field has no zero level), and bad arguments.
    """
    if sign_mode == SweptVolumeSignMode.NO_SIGN and not threshold > 0.0:
        raise ValueError(f"'threshold' must be positive with SweptVolumeSignMode.NO_SIGN (the unsigned field is "
                         f"positive everywhere), got {threshold}.")
    device, transforms = _prepare(meshes, transforms, device)
    low, high, dims, _, _ = _grid(meshes, transforms, voxel_size, resolution, lower, upper, max(threshold, 0.0),
                                  device)
    field, low, high = swept_volume_field(meshes, transforms, resolution=dims, lower=low, upper=high,
                                          sign_mode=sign_mode, device=device)
    return marching_cubes(field, threshold, low, high)
