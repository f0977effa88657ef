"""Kernels of a module that defines @wp.func `add` and `sub`: as in Warp 1.19, they replace the builtin operator
where they take the operand types (`x - y` in the body of `add` calls the user `sub`), in `+=` / `-=` on parts of
array elements too, but `a[i] += v` on a whole element stays the builtin atomic add (used by
test_assignment_targets.py; the values are real Warp's)."""

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


@wp.kernel
def user_operator_slot_sum(values: wp.array(dtype=float), rhs: wp.array(dtype=float)):
    i = wp.tid()
    values[0] += rhs[i] * rhs[i]  # the atomic add of every thread, not the user add(float32, float32)


@wp.kernel
def user_operator_component_update(values: wp.array(dtype=wp.vec2), rhs: wp.array(dtype=float)):
    values[0].y += rhs[0]


