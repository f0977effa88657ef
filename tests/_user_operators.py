"""Kernels of a module that defines @wp.func `add` and `sub`: as in Warp, they replace the builtin operator in
`+=` / `-=` on array slots whose types they take (used by test_assignment_targets.py)."""

import kernels as wp


@wp.func
def add(x: wp.float32, y: wp.float32) -> wp.float32:  # noqa: A001  (replaces + on float32 array slots)
    return x - y


@wp.func
def sub(x: wp.float32, y: wp.float32) -> wp.float32:
    return x * y


@wp.kernel(enable_backward=False)
def update_with_user_operators(values: wp.array(dtype=wp.vec3), scalars: wp.array(dtype=float), rhs: float):
    values[0].x += rhs
    values[0][1] += rhs
    values[0].z -= rhs
    scalars[0] += rhs


@wp.kernel
def update_double_slots(values: wp.array(dtype=wp.vec3d), rhs: wp.float64):
    values[0].x += rhs
    values[0].z -= rhs


@wp.kernel
def user_operator_slot_update(values: wp.array(dtype=float), rhs: wp.array(dtype=float)):
    values[0] += rhs[0]


