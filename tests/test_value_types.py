"""Value types in ordinary Python and as annotations: scalar values (kernels/types.py), operators on vectors,
matrices, quaternions and transforms outside kernels (kernels/host_ops.py), and generic composite annotations
(`wp.types.vector(Any, float)`)."""

import typing

import numpy as np
import pytest

import kernels as wp
from kernels.errors import LaunchError

# ---- scalars ------------------------------------------------------------------------------------------------------


def test_scalar_values_wrap_like_cpp():
    assert wp.uint8(-1) == 255 and wp.int8(200) == -56 and wp.uint16(70000) == 70000 - 65536
    assert wp.int16._type_ is not None and wp.int16(5).value == 5 and isinstance(wp.int16(5).value, int)
    assert isinstance(wp.uint8(3), wp.uint8) and not isinstance(wp.uint8(3), wp.int8)
    assert np.dtype(type(wp.float16(1.5))) == np.float16


def test_integer_power_is_refused_like_warp():
    with pytest.raises(TypeError, match=r"\*\*"):
        wp.int32(2) ** wp.int32(3)
    with pytest.raises(TypeError):
        wp.uint8(3) ** wp.uint8(2)
    assert float(wp.float32(2) ** wp.float32(3)) == 8.0


# ---- composites on the host ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [wp.float32, wp.float64, wp.int32, wp.uint8])
def test_matrix_vector_products_on_the_host(dtype):
    mat, vec = wp.types.matrix((3, 3), dtype), wp.types.vector(3, dtype)
    m_np = np.array([[2, 4, 6], [8, 10, 12], [14, 16, 18]])
    m, v = mat(m_np), vec(5, 5, 5)
    for got, expected in ((m * v, m_np @ [5, 5, 5]), (m @ v, m_np @ [5, 5, 5]), (v * m, [5, 5, 5] @ m_np),
                          (v @ m, [5, 5, 5] @ m_np), (m @ m, m_np @ m_np)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected).astype(np.dtype(dtype._np_)))
    assert type(m * v) is vec and type(m @ m) is mat
    np.testing.assert_array_equal(np.asarray(m / dtype(2)), m_np // 2)
    np.testing.assert_array_equal(np.asarray(dtype(5040) / m), 5040 // m_np if dtype is not wp.uint8 else
                                  (5040 % 256) // m_np)
    np.testing.assert_array_equal(np.asarray(+m), m_np)


def test_integer_division_and_modulo_follow_cpp():
    v = wp.vec2i(-7, 7)
    assert list(v / wp.int32(2)) == [-3, 3]  # truncation toward zero
    assert list(v % wp.vec2i(3, -3)) == [-1, 1]  # sign of the dividend
    assert list(-wp.types.vector(2, wp.uint8)(1, 2)) == [255, 254]


def test_quaternion_and_transform_products_on_the_host():
    h = np.sqrt(0.5)
    rz = wp.quat(0.0, 0.0, h, h)  # 90 degrees about z
    rx = wp.quat(h, 0.0, 0.0, h)  # 90 degrees about x
    prod = rz * rx
    expected = [h * h, h * h, h * h, h * h]  # Hamilton product (x, y, z, w)
    np.testing.assert_allclose(np.asarray(prod), expected, atol=1e-7)
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), rz) * wp.transform(wp.vec3(1.0, 0.0, 0.0), rx)
    np.testing.assert_allclose(np.asarray(t)[:3], [1.0, 3.0, 3.0], atol=1e-6)  # p_a + rotate(q_a, p_b)
    np.testing.assert_allclose(np.asarray(t)[3:], expected, atol=1e-7)


def test_str_equality_and_rows_like_warp():
    v = wp.types.vector(5, float)(0.0, 1.0, 1.0, 1.0, 1.0)
    assert str(v) == "[0.0, 1.0, 1.0, 1.0, 1.0]"
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    assert str(m) == "[[1.0, 2.0],\n [3.0, 4.0]]"
    assert m[1] == [3.0, 4.0] and type(m[1]) is wp.vec2 and m[1, 0] == 3.0
    assert wp.vec3(0.0, 0.0, 0.0) != wp.vec2(0.0, 0.0) and wp.mat33(0.0) != wp.mat22(0.0)
    assert wp.vec3(1.0, 2.0, 3.0) == (1.0, 2.0, 3.0)


def test_constructors_wrap_integers():
    m = wp.types.matrix((2, 2), wp.uint8)(((-1, 2), (3, -4)))
    assert [list(r) for r in m] == [[255, 2], [3, 252]]


# ---- generic composite annotations --------------------------------------------------------------------------------


@wp.kernel
def generic_length_kernel(v: wp.types.vector(typing.Any, float), m: wp.types.matrix((typing.Any, typing.Any), float),
                          out: wp.array(dtype=int)):
    out[0] = len(v)
    out[1] = wp.static(len(m))
    out[2] = len(m[0])


def test_generic_composite_annotations_specialise_per_launch(device):
    out = wp.zeros(3, dtype=int, device=device)
    wp.launch(generic_length_kernel, dim=1, inputs=[wp.vec4(), wp.types.matrix((2, 3), float)()], outputs=[out],
              device=device)
    assert list(out.numpy()) == [4, 2, 3]
    wp.launch(generic_length_kernel, dim=1, inputs=[wp.vec2(), wp.mat44()], outputs=[out], device=device)
    assert list(out.numpy()) == [2, 4, 4]
    with pytest.raises(LaunchError, match="generic parameter"):
        wp.launch(generic_length_kernel, dim=1, inputs=[wp.vec2d(), wp.mat44()], outputs=[out], device=device)


def test_generic_composite_has_no_values():
    t = wp.types.vector(typing.Any, wp.float32)
    assert t is wp.types.vector(wp.types.Any, float)
    with pytest.raises(TypeError, match="generic"):
        t()
