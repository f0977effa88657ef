"""Gradients of writes into one component of an array element (`y[i].x = v`, `y[i][j] = v`, `y[i][r, c] = v`,
`y[i].field = v`) and of augmented component writes (`y[i].x += v`).

Such a write reads the element, replaces a component and stores the element back. Its adjoint must give the stored
value the component's gradient once, and leave the element's gradient with only the components that were kept
(the overwritten one gets zero, as for any overwrite of an input). Every kernel is checked against central finite
differences with respect to both the written values and the array's initial contents.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck


@wp.kernel
def copy_vec3(src: wp.array(dtype=wp.vec3d), dst: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    dst[i] = src[i]


@wp.kernel
def vec3_component_subscript(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i][0] = wp.float64(1.0) * x[i]
    y[i][1] = wp.float64(2.0) * x[i]
    y[i][2] = wp.float64(3.0) * x[i] * x[i]


@wp.kernel
def vec3_component_attribute(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    y[i].x = wp.float64(1.0) * x[i]
    y[i].z = wp.float64(3.0) * x[i] * x[i]


@wp.kernel
def vec3_component_augmented(r: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3d)):
    v[0].x += r[0]
    v[0][1] += r[0] * r[0]
    v[0].z -= r[0]


def _vec3_check(kernel, device):
    rng = np.random.default_rng(3)
    x = wp.array(rng.uniform(0.5, 1.5, 4), dtype=wp.float64, device=device)
    y0 = wp.array(rng.uniform(-1.0, 1.0, (4, 3)), dtype=wp.vec3d, device=device)

    def fn(x, y0):
        y = wp.zeros(4, dtype=wp.vec3d, device=device, requires_grad=True)
        wp.launch(copy_vec3, 4, inputs=[y0, y], device=device)
        wp.launch(kernel, 4 if kernel is not vec3_component_augmented else 1, inputs=[x, y], device=device)
        return y

    gradcheck(fn, [x, y0])


@pytest.mark.parametrize("kernel", [vec3_component_subscript, vec3_component_attribute, vec3_component_augmented],
                         ids=["subscript", "attribute", "augmented"])
def test_vec3_component_write_gradcheck(kernel, device):
    _vec3_check(kernel, device)


def test_vec3_component_writes_seeded_gradient(device):
    """The confirmed case: y[i][k] = (k+1) x[i] with y.grad seeded to ones gives x.grad 6 (was 11), and the
    overwritten components' gradients are zero afterwards."""
    x = wp.array([1.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(1, dtype=wp.vec3, device=device, requires_grad=True)

    @wp.kernel
    def write(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        y[i][0] = 1.0 * x[i]
        y[i][1] = 2.0 * x[i]
        y[i][2] = 3.0 * x[i]

    tape = Tape()
    with tape:
        wp.launch(write, 1, inputs=[x, y], device=device)
    tape.backward(grads={y: np.ones((1, 3), dtype=np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), [6.0])
    np.testing.assert_array_equal(y.grad.numpy(), [[0.0, 0.0, 0.0]])


def test_vec3d_augmented_component_seeded_gradient(device):
    """The confirmed case: v[0].x += r; v[0][1] += r; v[0].z -= r with v.grad = (1, 1, 1) gives v.grad (1, 1, 1)
    and r.grad 1 (were (8, 8, 8) and 5)."""
    v = wp.zeros(1, dtype=wp.vec3d, device=device, requires_grad=True)
    r = wp.array([2.0], dtype=wp.float64, device=device, requires_grad=True)

    @wp.kernel
    def update(v: wp.array(dtype=wp.vec3d), r: wp.array(dtype=wp.float64)):
        v[0].x += r[0]
        v[0][1] += r[0]
        v[0].z -= r[0]

    tape = Tape()
    with tape:
        wp.launch(update, 1, inputs=[v, r], device=device)
    np.testing.assert_array_equal(v.numpy(), [[2.0, 2.0, -2.0]])
    tape.backward(grads={v: np.ones((1, 3))})
    np.testing.assert_array_equal(v.grad.numpy(), [[1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(r.grad.numpy(), [1.0])


@wp.kernel
def mat22_entries(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    y[i][0, 0] = wp.float64(1.0) * x[i]
    y[i][0, 1] = wp.float64(2.0) * x[i]
    y[i][1, 1] = wp.float64(4.0) * x[i] * x[i]


@wp.kernel
def mat22_row(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    y[i][1] = wp.vec2d(x[i], wp.float64(2.0) * x[i])


@wp.kernel
def quat_components(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    y[i][0] = x[i]
    y[i].y = wp.float64(2.0) * x[i]
    y[i][3] = x[i] * x[i]


@wp.kernel
def transform_components(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    y[i][1] = x[i]
    y[i][5] = wp.float64(3.0) * x[i] * x[i]


@wp.struct
class Pair:
    a: wp.float64
    b: wp.float64


@wp.kernel
def struct_field(x: wp.array(dtype=wp.float64), y: wp.array(dtype=Pair)):
    i = wp.tid()
    y[i].a = x[i] * x[i]


@pytest.mark.parametrize("kernel,dtype", [(mat22_entries, wp.mat22d), (mat22_row, wp.mat22d),
                                          (quat_components, wp.quatd), (transform_components, wp.transformd)],
                         ids=["mat22_entries", "mat22_row", "quat", "transform"])
def test_composite_component_write_gradcheck(kernel, dtype, device):
    rng = np.random.default_rng(5)
    n = 3
    x = wp.array(rng.uniform(0.5, 1.5, n), dtype=wp.float64, device=device)
    y0 = wp.array(rng.uniform(-1.0, 1.0, (n,) + dtype._shape_), dtype=dtype, device=device)

    @wp.kernel(module="unique")
    def copy_elements(src: wp.array(dtype=dtype), dst: wp.array(dtype=dtype)):
        i = wp.tid()
        dst[i] = src[i]

    def fn(x, y0):
        y = wp.zeros(n, dtype=dtype, device=device, requires_grad=True)
        wp.launch(copy_elements, n, inputs=[y0, y], device=device)
        wp.launch(kernel, n, inputs=[x, y], device=device)
        return y

    gradcheck(fn, [x, y0])


def test_struct_field_write_seeded_gradient(device):
    """y[i].a = x^2 with y.grad seeded (a=1, b=1): x.grad = 2x and the overwritten field's gradient is zero."""
    x = wp.array([3.0], dtype=wp.float64, device=device, requires_grad=True)
    y = wp.zeros(1, dtype=Pair, device=device, requires_grad=True)
    seed = Pair()
    seed.a = 1.0
    seed.b = 1.0
    y.grad.fill_(seed)
    tape = Tape()
    with tape:
        wp.launch(struct_field, 1, inputs=[x, y], device=device)
    tape.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0])
    g = y.grad.numpy()[0]
    assert (g["a"], g["b"]) == (0.0, 1.0)


def test_component_multiply_assign_is_refused_for_backward(device):
    """v[0].x *= r needs the old v[0].x in the backward pass, which the replay would read after the write: as in
    Warp 1.19, a kernel with a backward doing it is refused when built (its launch); without one it runs."""

    @wp.kernel
    def scale_component(v: wp.array(dtype=wp.vec3), r: wp.array(dtype=float)):
        v[0].x *= r[0]

    @wp.kernel(enable_backward=False)
    def scale_component_forward(v: wp.array(dtype=wp.vec3), r: wp.array(dtype=float)):
        v[0].x *= r[0]

    v = wp.array([[2.0, 1.0, 1.0]], dtype=wp.vec3, device=device, requires_grad=True)
    r = wp.array([3.0], dtype=float, device=device, requires_grad=True)
    with pytest.raises(wp.CompileError, match="Differentiable composite slot augmented assignments with this "
                                              "operator are not supported with backward code generation enabled"):
        wp.launch(scale_component, 1, inputs=[v, r], device=device)
    np.testing.assert_array_equal(v.numpy(), [[2.0, 1.0, 1.0]])
    wp.launch(scale_component_forward, 1, inputs=[v, r], device=device)
    np.testing.assert_array_equal(v.numpy(), [[6.0, 1.0, 1.0]])


def test_a_value_of_another_kind_than_the_slot_is_refused_in_warps_words(device):
    @wp.kernel
    def mismatch(y: wp.array(dtype=wp.vec3), src: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        y[i].y = src[i]  # a vector into a scalar component

    y = wp.zeros(1, dtype=wp.vec3, device=device)
    with pytest.raises(TypeError, match="Composite slot assignment expects value of type float32, got vec3f"):
        wp.launch(mismatch, 1, inputs=[y, wp.zeros(1, dtype=wp.vec3, device=device)], device=device)
