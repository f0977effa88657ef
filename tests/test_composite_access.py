"""Host-side access to vectors and matrices with Warp 1.19's API and errors (issue 34; Warp's test_types.py and
test_mat_constructors.py): component and slice assignment, matrix rows and columns, rows given to a matrix
constructor, and `from_ptr` reading a value from native memory."""

import numpy as np
import pytest

import kernels as wp


def test_assignment_errors_are_warps():
    v = wp.vec3i(1, 2, 3)
    with pytest.raises(TypeError, match=r"Expected to assign a `int32` value but got `str` instead"):
        v[0] = "123.0"
    with pytest.raises(TypeError, match=r"Expected to assign a slice from a sequence of `int32` values but got "
                                        r"`vec3i` instead"):
        v[:1] = (v,)
    with pytest.raises(ValueError, match="Can only assign sequence of same size"):
        v[:1] = (1, 2)
    m = wp.mat22h(1, 2, 3, 4)
    with pytest.raises(TypeError, match=r"Expected to assign a `float16` value but got `str` instead"):
        m[0, 0] = "123.0"
    with pytest.raises(TypeError, match=r"sequence of `float16` values but got `mat22h` instead"):
        m[0] = (m,)
    with pytest.raises(TypeError, match=r"expected row of length 2, got \(1, 2, 3\)$"):
        wp.mat22((1, 2, 3), (3, 4, 5))
    with pytest.raises(IndexError, match="Invalid row index$"):
        m.set_row(2, (0, 0))
    with pytest.raises(RuntimeError, match="NULL pointer exception"):
        wp.vec3.from_ptr(0)


def test_rows_columns_and_slices_assign_in_place():
    v = wp.vec3i(1, 2, 3)
    v[0] = -5
    v[1:] = (7, 8)
    np.testing.assert_array_equal(v.numpy(), [-5, 7, 8])
    m = wp.mat33d(np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(m.get_row(-1).numpy(), [6.0, 7.0, 8.0])
    np.testing.assert_array_equal(m.get_col(1).numpy(), [1.0, 4.0, 7.0])
    assert type(m.get_row(0)) is wp.vec3d
    m.set_row(0, wp.vec3d(9.0, 9.0, 9.0))
    m.set_col(2, 0.5)
    m[1] = (1.0, 1.0, 1.0)
    np.testing.assert_array_equal(m.numpy(), [[9.0, 9.0, 0.5], [1.0, 1.0, 1.0], [6.0, 7.0, 0.5]])


def test_from_ptr_reads_the_native_value():
    a = wp.array([wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0)], dtype=wp.vec3)
    np.testing.assert_array_equal(wp.vec3.from_ptr(a.ptr + 12).numpy(), [4.0, 5.0, 6.0])
    h = wp.array([wp.mat22h(1.5, 2.0, 3.0, 4.0)], dtype=wp.mat22h)
    np.testing.assert_array_equal(wp.mat22h.from_ptr(h.ptr).numpy(), [[1.5, 2.0], [3.0, 4.0]])


def test_a_matrix_type_needs_two_dimensions():
    with pytest.raises(ValueError, match=r"Matrix shape must have exactly two dimensions, got 1 dimension in shape "
                                         r"\(2,\)"):
        wp.types.matrix((2,), wp.float32)


def test_a_missing_attribute_names_warps_type():
    with pytest.raises(AttributeError, match=r"'vec3f' object has no attribute 'foo'$"):
        wp.vec3(1.0, 2.0, 3.0).foo  # noqa: B018
    assert not hasattr(wp.vec2(1.0, 2.0), "w")
