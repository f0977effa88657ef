"""Matrix constructors in kernels with Warp 1.19's rules and words (issue 34; Warp's test_mat_constructors.py):
a copy without `shape=` keeps the source's shape, a typed constructor accepts `shape=`/`dtype=` that repeat its
own, and the constructions Warp refuses are refused with its messages. A transform takes p= and q= in either
order."""

import numpy as np
import pytest

import kernels as wp

mat32d = wp.types.matrix(shape=(3, 2), dtype=wp.float64)


@wp.kernel
def copies(m: wp.array(dtype=mat32d), out: wp.array(dtype=mat32d)):
    i = wp.tid()
    a = wp.types.matrix(m[i])  # shape and dtype from the source
    out[i] = mat32d(a, shape=(3, 2), dtype=wp.float64) + a


def test_copy_constructors_keep_the_shape_and_accept_their_own_template_arguments():
    m = wp.array(np.arange(12, dtype=np.float64).reshape(2, 3, 2), dtype=mat32d)
    out = wp.zeros(2, dtype=mat32d)
    wp.launch(copies, dim=2, inputs=[m, out])
    np.testing.assert_array_equal(out.numpy(), 2 * m.numpy())


@wp.kernel(module="unique")
def refused_0(x: float):
    wp.mat22(1.0, 2.0, 3.0)


@wp.kernel(module="unique")
def refused_1(x: float):
    wp.types.matrix(1.0, 2.0, 3.0)


@wp.kernel(module="unique")
def refused_2(x: float):
    wp.mat33(wp.mat22(1.0, 2.0, 3.0, 4.0))


@wp.kernel(module="unique")
def refused_3(x: float):
    wp.types.matrix(x, shape=(3, 2), dtype=wp.float16)


@wp.kernel(module="unique")
def refused_4(x: float):
    wp.mat22d(1.0, x, 3.0, 4.0)


@wp.kernel(module="unique")
def refused_5(x: float):
    wp.mat22(wp.vec2(1.0), wp.vec2(2.0))


@wp.kernel(module="unique")
def refused_6(x: float):
    wp.mat22(x, shape=(3, 3))


@pytest.mark.parametrize("kernel, message", [
    (refused_0,
     r"incompatible number of values given \(3\) when constructing a matrix of shape \(2, 2\)$"),
    (refused_1,
     r"the `shape` argument must be specified when initializing a matrix by value$"),
    (refused_2,
     r"incompatible matrix of shape \(3, 3\) given when copy constructing a matrix of shape \(2, 2\)$"),
    (refused_3,
     r"the value used to fill this matrix is expected to be of the type `float16`$"),
    (refused_4,
     r"all values used to initialize this matrix are expected to be of the type `float64`$"),
    (refused_5,
     r"Passing vectors to `wp.matrix\(\)` isn\'t supported"),
    (refused_6,
     r"Remove the extraneous `shape` parameter when calling the templated version of `wp.matrix\(\)`$"),
])
def test_refusals_are_warps(kernel, message):
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(kernel, dim=1, inputs=[1.0])


@wp.kernel
def transforms_by_keyword(out: wp.array(dtype=wp.transform)):
    out[0] = wp.transform(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat(4.0, 5.0, 6.0, 7.0))
    out[1] = wp.transform(q=wp.quat(4.0, 5.0, 6.0, 7.0), p=wp.vec3(1.0, 2.0, 3.0))
    out[2] = wp.transform(wp.vec3(1.0, 2.0, 3.0), q=wp.quat(4.0, 5.0, 6.0, 7.0))


def test_transform_parts_by_keyword_in_any_order():
    out = wp.zeros(3, dtype=wp.transform)
    wp.launch(transforms_by_keyword, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.tile(np.arange(1.0, 8.0), (3, 1)))
