"""The kernels that write a learned variable into the model or the initial state inside a Tape, and `Target`:
where one learned parameter goes (which array, which rows, which kernel)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import kernels as wp


@wp.func
def decode(x: float, log: int):
    y = x
    if log != 0:
        y = wp.exp(x)
    return y


@wp.kernel
def assign_float(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                 rows: wp.array(dtype=wp.int32), dst: wp.array(dtype=float)):
    j = wp.tid()
    dst[rows[j]] = decode(var[src[j]], log)


@wp.kernel
def assign_column(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                  rows: wp.array(dtype=wp.int32), column: int, dst: wp.array2d(dtype=float)):
    j = wp.tid()
    dst[rows[j], column] = decode(var[src[j]], log)


@wp.kernel
def assign_vec3(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                dst: wp.array(dtype=wp.vec3)):
    j = wp.tid()
    s = src[j]
    dst[rows[j]] = wp.vec3(var[s], var[s + 1], var[s + 2])


@wp.kernel
def assign_vec3_component(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                          rows: wp.array(dtype=wp.int32), component: int, base: wp.array(dtype=wp.vec3),
                          dst: wp.array(dtype=wp.vec3)):
    j = wp.tid()
    x = decode(var[src[j]], log)
    b = base[j]
    dst[rows[j]] = wp.vec3(wp.where(component == 0, x, b[0]), wp.where(component == 1, x, b[1]),
                           wp.where(component == 2, x, b[2]))


@wp.kernel
def assign_position(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                    rotation: wp.array(dtype=wp.quat), dst: wp.array(dtype=wp.transform)):
    j = wp.tid()
    s = src[j]
    dst[rows[j]] = wp.transform(wp.vec3(var[s], var[s + 1], var[s + 2]), rotation[j])


@wp.kernel
def assign_rotation(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                    position: wp.array(dtype=wp.vec3), dst: wp.array(dtype=wp.transform)):
    """dst = (position, the variable's quaternion (x, y, z, w) normalised): a collider's learned rotation."""
    j = wp.tid()
    s = src[j]
    norm = wp.sqrt(var[s] * var[s] + var[s + 1] * var[s + 1] + var[s + 2] * var[s + 2] + var[s + 3] * var[s + 3])
    q = wp.quat(var[s] / norm, var[s + 1] / norm, var[s + 2] / norm, var[s + 3] / norm)
    dst[rows[j]] = wp.transform(position[j], q)


@wp.kernel
def assign_spatial_part(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                        part: int, base: wp.array(dtype=wp.spatial_vector), dst: wp.array(dtype=wp.spatial_vector)):
    """Set the angular (part 0) or linear (part 1) half of spatial vectors, keeping the other half of `base`."""
    j = wp.tid()
    s = src[j]
    v = wp.vec3(var[s], var[s + 1], var[s + 2])
    b = base[j]
    top = wp.where(part == 0, v, wp.spatial_top(b))
    bottom = wp.where(part == 1, v, wp.spatial_bottom(b))
    dst[rows[j]] = wp.spatial_vector(top, bottom)


@wp.kernel
def assign_scaled_matrix(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                         rows: wp.array(dtype=wp.int32), factor: float, base: wp.array(dtype=wp.mat33),
                         dst: wp.array(dtype=wp.mat33)):
    """dst = base * (value * factor): an inertia scaled with its body's mass (factor = 1 / the built mass)."""
    j = wp.tid()
    dst[rows[j]] = base[j] * (decode(var[src[j]], log) * factor)


@dataclass
class Target:
    """Where a parameter goes: `array` names an attribute of the model ('model') or initial state ('state');
    `rows` are the entries set, `src` the variable offset each reads; `how` picks the kernel."""

    owner: str  # "model", "state" or "object" (a SceneObject attribute)
    array: str
    how: str  # "float", "column", "vec3", "vec3_component", "spatial_part", "position", "rotation",
    # "scaled_matrix"
    rows: np.ndarray
    src: np.ndarray
    column: int = 0
    obj: object = None
    rotation: object = None  # "position": the shapes' fixed rotations (x, y, z, w), shape [len(rows), 4]
    base: object = None  # "vec3_component"/"spatial_part": the vectors whose other components stay; "rotation":
    # the shapes' fixed positions, shape [len(rows), 3];
    # "scaled_matrix": the matrices scaled
    factor: float = 1.0  # "scaled_matrix": the factor on the value
    arrays: tuple = ()  # rows, src and rotation/base on the device, made once by `upload`

    def upload(self, device):
        """Copy the index arrays (and rotation or base) to `device` once, for every later `apply`."""
        extra_dtype = ASSIGNERS[self.how].extra_dtype
        extra = None
        if extra_dtype is not None:
            extra = wp.array(self.rotation if self.how == "position" else self.base, dtype=extra_dtype,
                             device=device)
        self.arrays = (wp.array(self.rows.astype(np.int32), dtype=wp.int32, device=device),
                       wp.array(self.src.astype(np.int32), dtype=wp.int32, device=device), extra)

    def launch(self, variable, log: int, dst, device):
        """Write the variable's entries into `dst` (the target array) with the target's assign kernel."""
        rows, src, extra = self.arrays
        assigner = ASSIGNERS[self.how]
        wp.launch(assigner.kernel, dim=len(self.rows), inputs=assigner.inputs(self, variable, log, src, rows, extra),
                  outputs=[dst], device=device)


@dataclass(frozen=True)
class Assigner:
    """An assign kernel, the dtype of the per-row data it keeps from the built model (`Target.base` or
    `rotation`; None: none), and its inputs before the destination array."""

    kernel: object
    extra_dtype: object
    inputs: Callable  # (target, variable, log, src, rows, extra) -> the kernel's inputs


#: Target.how -> its kernel: scalars (optionally log-encoded), vectors, parts of vectors and transforms
ASSIGNERS = {
    "float": Assigner(assign_float, None, lambda t, var, log, src, rows, extra: [var, log, src, rows]),
    "column": Assigner(assign_column, None, lambda t, var, log, src, rows, extra: [var, log, src, rows, t.column]),
    "vec3": Assigner(assign_vec3, None, lambda t, var, log, src, rows, extra: [var, src, rows]),
    "vec3_component": Assigner(assign_vec3_component, wp.vec3,
                               lambda t, var, log, src, rows, extra: [var, log, src, rows, t.column, extra]),
    "spatial_part": Assigner(assign_spatial_part, wp.spatial_vector,
                             lambda t, var, log, src, rows, extra: [var, src, rows, t.column, extra]),
    "scaled_matrix": Assigner(assign_scaled_matrix, wp.mat33,
                              lambda t, var, log, src, rows, extra: [var, log, src, rows, t.factor, extra]),
    "rotation": Assigner(assign_rotation, wp.vec3, lambda t, var, log, src, rows, extra: [var, src, rows, extra]),
    "position": Assigner(assign_position, wp.quat, lambda t, var, log, src, rows, extra: [var, src, rows, extra]),
}
