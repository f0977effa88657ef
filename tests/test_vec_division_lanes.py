"""Vector-scalar and componentwise divisions (v / s, s / v, wp.cw_div) divide each component on its own (kernels/native/vec.h WP_SCALAR_LANE,
issue 37): the quotients stay IEEE's, bit for bit as numpy divides, for float32 and float64, 2 to 4 components,
with denormal, zero, infinite and NaN operands."""

import numpy as np
import pytest

import kernels as wp

SPECIAL = [1.0, -3.0, 7.0e-39, 1.0e-45, 0.0, -0.0, np.inf, np.nan, 3.0e38, 1.0e-30]


@wp.kernel
def divide_f32(a: wp.array(dtype=wp.vec3), s: wp.array(dtype=wp.float32), q: wp.array(dtype=wp.vec3),
               r: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q[i] = a[i] / s[i]
    r[i] = s[i] / a[i]


@wp.kernel
def divide_f64(a: wp.array(dtype=wp.vec4d), s: wp.array(dtype=wp.float64), q: wp.array(dtype=wp.vec4d),
               r: wp.array(dtype=wp.vec4d)):
    i = wp.tid()
    q[i] = a[i] / s[i]
    r[i] = s[i] / a[i]


@wp.kernel
def divide_vec2(a: wp.array(dtype=wp.vec2), s: wp.array(dtype=wp.float32), q: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    q[i] = a[i] / s[i]


def operands(dtype, width, count=400):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((count, width)) * 10.0 ** rng.integers(-40, 38, (count, width))
    s = rng.standard_normal(count) * 10.0 ** rng.integers(-40, 38, count)
    a[: len(SPECIAL), 0] = SPECIAL
    s[len(SPECIAL): 2 * len(SPECIAL)] = SPECIAL
    return a.astype(dtype), s.astype(dtype)


@pytest.mark.parametrize("kernel, dtype, vec, width", [(divide_f32, np.float32, wp.vec3, 3),
                                                      (divide_f64, np.float64, wp.vec4d, 4)])
def test_vector_scalar_division_is_ieee_per_component(kernel, dtype, vec, width):
    a, s = operands(dtype, width)
    q = wp.zeros(len(s), dtype=vec, device="cpu")
    r = wp.zeros(len(s), dtype=vec, device="cpu")
    wp.launch(kernel, dim=len(s), inputs=[wp.array(a, dtype=vec, device="cpu"), wp.array(s, device="cpu")],
              outputs=[q, r], device="cpu")
    with np.errstate(all="ignore"):
        want_q, want_r = a / s[:, None], s[:, None] / a
    np.testing.assert_array_equal(q.numpy().view(f"u{a.itemsize}"), want_q.view(f"u{a.itemsize}"))
    np.testing.assert_array_equal(r.numpy().view(f"u{a.itemsize}"), want_r.view(f"u{a.itemsize}"))


def test_two_component_division():
    a, s = operands(np.float32, 2)
    q = wp.zeros(len(s), dtype=wp.vec2, device="cpu")
    wp.launch(divide_vec2, dim=len(s), inputs=[wp.array(a, dtype=wp.vec2, device="cpu"), wp.array(s, device="cpu")],
              outputs=[q], device="cpu")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q.numpy().view("u4"), (a / s[:, None]).view("u4"))


@wp.kernel
def divide_componentwise(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q[i] = wp.cw_div(a[i], b[i])


def test_componentwise_division():
    a, _ = operands(np.float32, 3)
    b = np.roll(a, 1, axis=0)[:, ::-1].copy()
    q = wp.zeros(len(a), dtype=wp.vec3, device="cpu")
    wp.launch(divide_componentwise, dim=len(a), inputs=[wp.array(a, dtype=wp.vec3, device="cpu"),
                                                       wp.array(b, dtype=wp.vec3, device="cpu")],
              outputs=[q], device="cpu")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q.numpy().view("u4"), (a / b).view("u4"))
