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
