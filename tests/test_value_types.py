"""Value types in ordinary Python and as annotations: scalar values (kernels/types.py), operators on vectors,
matrices, quaternions and transforms outside kernels (kernels/types.py), and generic composite annotations
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


# ---- Warp's output-argument form of builtins with several results ------------------------------------------------


@wp.kernel
def axis_angle_out_args_kernel(q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.vec4d)):
    i = wp.tid()
    axis = wp.vec3d()
    angle = wp.float64(0.0)
    wp.quat_to_axis_angle(q[i], axis, angle)  # the same as `axis, angle = wp.quat_to_axis_angle(q[i])`
    out[i] = wp.vec4d(axis[0], axis[1], axis[2], angle)


def test_output_arguments_and_zero_rotation_axis(device):
    from autodiff import gradcheck
    q_np = np.random.default_rng(0).standard_normal((5, 4))
    q_np[0] = (0.0, 0.0, 0.0, 2.0)  # a zero rotation: Warp gives a zero axis (it was (1, 0, 0))
    q = wp.array(q_np, dtype=wp.quatd, device=device)
    out = wp.zeros(5, dtype=wp.vec4d, device=device)
    wp.launch(axis_angle_out_args_kernel, dim=5, inputs=[q, out], device=device)
    n = q_np / np.linalg.norm(q_np, axis=1, keepdims=True) * np.sign(q_np[:, 3:])
    s = np.linalg.norm(n[:, :3], axis=1)
    np.testing.assert_allclose(out.numpy()[0], [0.0, 0.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(out.numpy()[1:, :3], n[1:, :3] / s[1:, None], rtol=1e-12)
    np.testing.assert_allclose(out.numpy()[1:, 3], 2 * np.arctan2(s[1:], n[1:, 3]), rtol=1e-12)

    def fn(q):
        o = wp.zeros(4, dtype=wp.vec4d, device=device)
        wp.launch(axis_angle_out_args_kernel, dim=4, inputs=[q, o], device=device)
        return o

    gradcheck(fn, [wp.array(q_np[1:], dtype=wp.quatd, device=device)])


# ---- array arithmetic in Python --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [wp.float32, wp.int16, wp.uint8])
def test_array_operators(dtype, device):
    a, s = wp.array((1, 2, 3), dtype=dtype, device=device), dtype(5)
    np_t = np.dtype(dtype._np_)
    for got, expected in ((a + s, [6, 7, 8]), (s - a, np.array([4, 3, 2])), (a * s, [5, 10, 15]),
                          (s % a, [0, 1, 2]), (a - s, np.array([-4, -3, -2]).astype(np_t)), (-a, -np.array([1, 2, 3]))):
        assert isinstance(got, wp.array) and got.dtype is dtype
        np.testing.assert_array_equal(got.numpy(), np.asarray(expected).astype(np_t))
    np.testing.assert_array_equal((s / a).numpy(), np.array([5, 2.5, 5 / 3]).astype(np_t))  # ints truncate
    with pytest.raises(TypeError, match="same dtype and shape"):
        a + wp.array((1, 2), dtype=dtype, device=device)


def test_array_operators_are_differentiable(device):
    from autodiff import gradcheck
    x = wp.array(np.array([[1.3, 2.7], [3.1, -0.6]]), dtype=wp.float64, device=device)
    y = wp.array(np.array([[0.5, -2.0], [4.0, 1.5]]), dtype=wp.float64, device=device)
    gradcheck(lambda x, y: -((x * y - 3.0 * x) / y) + 2.0 % x + (+y), [x, y])


def test_python_transform_defaults_to_the_identity_rotation():
    """As in Warp's Python scope: wp.transform() is (0, 0, 0, 0, 0, 0, 1); p and q may be given by keyword."""
    assert list(wp.transform()) == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert list(wp.transform(p=(1.0, 2.0, 3.0))) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    assert list(wp.transform(q=(4.0, 5.0, 6.0, 7.0))) == [0.0, 0.0, 0.0, 4.0, 5.0, 6.0, 7.0]
    assert list(wp.transform((1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    with pytest.raises(TypeError, match="unexpected keyword argument 'pos'"):
        wp.transform(pos=(1.0, 2.0, 3.0))
