"""Kernel builtins called from Python scope run the builtin itself (a one-thread CPU kernel) and return its value."""

import numpy as np
import pytest

import kernels as wp


def test_scalar_builtins_from_python_match_the_kernel_results():
    assert wp.abs(-1.5) == np.float32(1.5) and isinstance(wp.abs(-1.5), np.float32)
    assert wp.abs(wp.float64(-2.0)) == 2.0 and isinstance(wp.abs(wp.float64(-2.0)), np.float64)
    assert wp.min(3, 5) == 3
    np.testing.assert_allclose(wp.cos(0.5), np.cos(np.float32(0.5)), rtol=1e-6)


def test_composite_builtins_from_python():
    assert wp.length(wp.vec3(3.0, 4.0, 0.0)) == 5.0
    assert list(wp.normalize(wp.vec3(0.0, 2.0, 0.0))) == [0.0, 1.0, 0.0]
    assert isinstance(wp.quat_identity(), wp.quat) and list(wp.quat_identity()) == [0.0, 0.0, 0.0, 1.0]
    m = wp.matrix_from_cols(wp.vec2(1.0, 2.0), wp.vec2(3.0, 4.0))
    np.testing.assert_array_equal(np.array(m).reshape(2, 2), [[1.0, 3.0], [2.0, 4.0]])


def test_a_user_func_calling_builtins_runs_from_python():
    @wp.func
    def hypot(x: float, y: float):
        return wp.sqrt(x * x + y * y)

    assert hypot(3.0, 4.0) == 5.0


def test_kernel_only_builtins_and_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="only be called inside kernels"):
        wp.tid()
    with pytest.raises(TypeError, match="wp.length"):
        wp.length(1.0)


def test_builtins_with_several_results_return_a_tuple():
    axis, angle = wp.quat_to_axis_angle(wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), 0.5))
    np.testing.assert_allclose(list(axis), [0.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(angle, 0.5, atol=1e-6)


def test_arrays_from_outside_and_lists_are_refused_in_kernels():
    outside = wp.array([1.0, 2.0], dtype=float)

    def reads_outside(out: wp.array(dtype=float)):
        out[0] = outside[0]

    def builds_a_list(out: wp.array(dtype=float)):
        x = [1.0, 2.0]
        out[0] = 1.0

    out = wp.zeros(1, dtype=float)
    with pytest.raises(TypeError, match="Invalid external reference type.*pass it as a kernel argument"):
        wp.launch(wp.kernel(reads_outside, module="unique"), 1, inputs=[out])
    with pytest.raises(RuntimeError, match="List constructs are not supported in kernels"):
        wp.launch(wp.kernel(builds_a_list, module="unique"), 1, inputs=[out])


@wp.kernel
def _make_transforms(vs: wp.array(dtype=wp.vec3), qs: wp.array(dtype=wp.quat), out: wp.array(dtype=wp.transform)):
    out[0] = wp.transformation(p=vs[0], q=qs[0])
    out[1] = wp.transformation(vs[0], qs[0])
    out[2] = wp.transformation(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)


def test_transformation_constructor_in_kernels_and_python():
    vs = wp.array([[2.0, 3.0, 4.0]], dtype=wp.vec3)
    qs = wp.array([[5.0, 6.0, 7.0, 8.0]], dtype=wp.quat)
    out = wp.zeros(3, dtype=wp.transform)
    wp.launch(_make_transforms, 1, inputs=[vs, qs, out])
    np.testing.assert_array_equal(out.numpy(), np.tile(np.arange(2.0, 9.0), (3, 1)))
    t = wp.transformation(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat_identity(), dtype=wp.float64)
    assert isinstance(t, wp.transformd) and list(t) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
