"""wp.indexedarray: kernels reading and writing through index arrays (checked against numpy's np.ix_ gather and
against real Warp), host operations, gradients into the parent array (central differences), and a read after a
write through a struct member (which CSE used to merge with the read before it)."""

import typing
from typing import Literal

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import Tape, gradcheck


@wp.kernel
def double_1d(a: wp.indexedarray[float], out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i]
    a[i] = 2.0 * a[i]


@wp.kernel
def add_3d(a: wp.indexedarray[float, Literal[3]], dims: wp.array(dtype=int)):
    i, j, k = wp.tid()
    wp.atomic_add(a, i, j, k, 1.0)
    if i == 0 and j == 0 and k == 0:
        dims[0] = a.shape[0]
        dims[1] = a.shape[1]
        dims[2] = a.shape[2]


@wp.kernel
def rows_sum(a: wp.indexedarray2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = a[i]  # a view: the indexed row of the remaining dimension
    s = float(0.0)
    for j in range(row.shape[0]):
        s += row[j]
    out[i] = s


@wp.kernel
def smooth(a: wp.indexedarray[float], out: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i] + wp.sin(a[i])
    wp.atomic_add(total, 0, a[i])


@wp.kernel
def weighted_2d(a: wp.indexedarray[wp.vec2, Literal[2]], out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    v = a[i, j]
    out[i, j] = v[0] * v[1] + float(i + 1) * v[0]


@wp.kernel
def scatter_add(src: wp.array(dtype=float), a: wp.indexedarray[float]):
    i = wp.tid()
    wp.atomic_add(a, i, src[i] * src[i])


@wp.struct
class Holder:
    plain: wp.array(dtype=float)
    indexed: wp.indexedarray[float]


@wp.kernel
def read_write_read(h: Holder, out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[0, i] = h.plain[i]
    h.plain[i] = 2.0 * h.plain[i] + 1.0
    out[1, i] = h.plain[i]
    out[2, i] = h.indexed[i]
    h.indexed[i] = 2.0 * h.indexed[i] + 1.0
    out[3, i] = h.indexed[i]


def test_kernel_reads_and_writes_the_parent_through_the_indices():
    base = np.arange(10, dtype=np.float32)
    data = wp.array(base)
    idx = wp.array([7, 2, 5], dtype=wp.int32)
    out = wp.zeros(3, dtype=float)
    wp.launch(double_1d, dim=3, inputs=[wp.indexedarray(data, [idx]), out])
    np.testing.assert_array_equal(out.numpy(), base[[7, 2, 5]])
    expected = base.copy()
    expected[[7, 2, 5]] *= 2.0
    np.testing.assert_array_equal(data.numpy(), expected)


def test_3d_with_whole_dimensions_and_repeated_indices():
    data = wp.zeros((4, 3, 5), dtype=float)
    i0 = wp.array([3, 0, 3], dtype=wp.int32)  # 3 twice: two atomic adds into the same parent element
    i2 = wp.array([4, 1], dtype=wp.int32)
    ia = wp.indexedarray(data, [i0, None, i2])
    assert ia.shape == (3, 3, 2) and ia.size == 18
    dims = wp.zeros(3, dtype=int)
    wp.launch(add_3d, dim=ia.shape, inputs=[ia, dims])
    np.testing.assert_array_equal(dims.numpy(), [3, 3, 2])
    expected = np.zeros((4, 3, 5), np.float32)
    np.add.at(expected, np.ix_([3, 0, 3], [0, 1, 2], [4, 1]), 1.0)
    np.testing.assert_array_equal(data.numpy(), expected)


def test_row_views_of_an_indexed_2d_array():
    base = np.arange(20, dtype=np.float32).reshape(4, 5)
    data = wp.array(base)
    rows, cols = [2, 0], [4, 4, 1]
    ia = data[wp.array(rows, dtype=wp.int32), wp.array(cols, dtype=wp.int32)]
    assert type(ia) is wp.indexedarray
    out = wp.zeros(2, dtype=float)
    wp.launch(rows_sum, dim=2, inputs=[ia, out])
    np.testing.assert_array_equal(out.numpy(), base[np.ix_(rows, cols)].sum(axis=1))


def test_host_indexing_copy_fill_and_assign():
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    data = wp.array(base)
    idx = wp.array([2, 0], dtype=wp.int32)
    ia = data[1:, idx]  # the slice applies to the parent, the index array to the view's dimension 1
    np.testing.assert_array_equal(ia.numpy(), base[1:][:, [2, 0]])
    np.testing.assert_array_equal(wp.clone(ia).numpy(), ia.numpy())
    assert type(wp.clone(ia)) is wp.array
    ia.fill_(-1.0)
    expected = base.copy()
    expected[1:, [2, 0]] = -1.0
    np.testing.assert_array_equal(data.numpy(), expected)
    src = wp.array(np.full((2, 2, 5), 7.0, np.float32))
    wp.copy(ia, src)
    expected[1:, [2, 0]] = 7.0
    np.testing.assert_array_equal(data.numpy(), expected)
    with pytest.raises(ValueError, match="Index array must use int32"):
        wp.indexedarray(data, [wp.array([0], dtype=wp.int64)])
    with pytest.raises(ValueError, match="exceeds number of dimensions"):
        wp.indexedarray(data, [None, None, None, None])


def test_a_plain_array_is_refused_for_an_indexed_parameter():
    with pytest.raises(wp.LaunchError, match="expects an array of type indexedarray"):
        wp.launch(double_1d, dim=1, inputs=[wp.zeros(1, dtype=float), wp.zeros(1, dtype=float)])


def test_gradient_reaches_the_parent_elements_the_indices_select():
    x = wp.array(np.linspace(-1.0, 1.5, 6).astype(np.float64), dtype=wp.float64)
    idx = wp.array([4, 1, 2, 4, 0], dtype=wp.int32)  # 4 repeated: its gradient is the sum of both uses

    @wp.kernel
    def smooth64(a: wp.indexedarray[wp.float64], out: wp.array(dtype=wp.float64)):
        i = wp.tid()
        out[i] = a[i] * a[i] * a[i] + wp.cos(a[i])

    def fn(x):
        out = wp.zeros(5, dtype=wp.float64, requires_grad=True)
        wp.launch(smooth64, dim=5, inputs=[wp.indexedarray(x, [idx]), out])
        return out

    report = gradcheck(fn, [x])
    assert report.passed
    g = x.grad.numpy()
    assert g[3] == 0.0 and g[5] == 0.0  # elements no index selects get nothing


def test_gradient_float32_with_atomics_and_2d_vectors():
    x = wp.array(np.linspace(0.1, 0.9, 5).astype(np.float32))

    def fn(x):
        out = wp.zeros(3, dtype=float, requires_grad=True)
        total = wp.zeros(1, dtype=float, requires_grad=True)
        wp.launch(smooth, dim=3, inputs=[wp.indexedarray(x, wp.array([3, 3, 1], dtype=wp.int32)), out, total])
        return out, total

    gradcheck(fn, [x])
    v = wp.array(np.linspace(-1.0, 1.0, 24).reshape(4, 3, 2).astype(np.float32), dtype=wp.vec2)
    rows, cols = wp.array([3, 1], dtype=wp.int32), wp.array([2, 0, 2], dtype=wp.int32)

    def fn2d(v):
        out = wp.zeros((2, 3), dtype=float, requires_grad=True)
        wp.launch(weighted_2d, dim=(2, 3), inputs=[wp.indexedarray(v, [rows, cols]), out])
        return out

    gradcheck(fn2d, [v])


def test_gradient_of_writes_through_an_indexed_output():
    src = wp.array(np.array([0.5, -1.0, 2.0], np.float64), dtype=wp.float64)

    @wp.kernel
    def scatter64(src: wp.array(dtype=wp.float64), a: wp.indexedarray[wp.float64]):
        i = wp.tid()
        wp.atomic_add(a, i, src[i] * src[i])

    def fn(src):
        parent = wp.zeros(4, dtype=wp.float64, requires_grad=True)
        wp.launch(scatter64, dim=3, inputs=[src, wp.indexedarray(parent, [wp.array([2, 0, 2], dtype=wp.int32)])])
        return parent

    gradcheck(fn, [src])


def test_explicit_adjoint_launch_takes_a_plain_array_of_the_indexed_shape():
    data = wp.array(np.array([1.0, 2.0, 3.0, 4.0], np.float32), requires_grad=True)
    idx = wp.array([3, 1], dtype=wp.int32)
    out = wp.zeros(2, dtype=float)
    adj_a = wp.zeros(2, dtype=float)  # the gradient of the two indexed elements themselves
    wp.launch(double_1d, dim=2, inputs=[wp.indexedarray(data, [idx]), out], adjoint=True,
              adj_inputs=[adj_a, wp.array([1.0, 10.0], dtype=float)])
    np.testing.assert_array_equal(adj_a.numpy(), [1.0, 10.0])  # out[i] = a[i]; the later write a[i] = 2a[i] adds 0
    np.testing.assert_array_equal(data.grad.numpy(), np.zeros(4))  # the parent's own gradient was not used


def test_tape_follows_the_parent_array():
    data = wp.array(np.array([1.0, 2.0, 3.0, 4.0], np.float32), requires_grad=True)
    src = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(scatter_add, dim=2, inputs=[src, wp.indexedarray(data, [wp.array([0, 0], dtype=wp.int32)])])
    tape.backward(grads={data: np.array([5.0, 0.0, 0.0, 0.0], np.float32)})
    np.testing.assert_allclose(src.grad.numpy(), [10.0, 20.0])  # 2 * src * d(data[0])
    tape.zero()
    np.testing.assert_array_equal(data.grad.numpy(), np.zeros(4))


def test_a_read_after_a_write_through_a_struct_member_sees_the_write():
    base = np.arange(6, dtype=np.float32)
    h = Holder()
    h.plain = wp.array(base)
    parent = wp.array(base)
    h.indexed = wp.indexedarray(parent, [wp.array([5, 3, 1], dtype=wp.int32)])
    out = wp.zeros((4, 3), dtype=float)
    wp.launch(read_write_read, dim=3, inputs=[h, out])
    np.testing.assert_array_equal(out.numpy()[0], base[:3])
    np.testing.assert_array_equal(out.numpy()[1], 2.0 * base[:3] + 1.0)
    np.testing.assert_array_equal(out.numpy()[2], base[[5, 3, 1]])
    np.testing.assert_array_equal(out.numpy()[3], 2.0 * base[[5, 3, 1]] + 1.0)


_PROGRAM = '''
import numpy as np
from typing import Any, Literal


@wp.kernel
def mix(a: wp.indexedarray[float, Literal[2]], b: wp.indexedarray[wp.vec3], out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = a[i, j] * 3.0 + float(j)
    wp.atomic_add(a, i, j, 0.5)
    out[i, j] = a[i, j] + wp.length(b[j])


@wp.kernel
def inc(a: Any):
    i = wp.tid()
    a[i] = a[i] + 1


wp.overload(inc, [wp.indexedarray[wp.int32]])


def run(wp, Tape):
    data = wp.array(np.arange(20, dtype=np.float32).reshape(4, 5))
    vecs = wp.array(np.arange(18, dtype=np.float32).reshape(6, 3), dtype=wp.vec3)
    a = wp.indexedarray(data, [wp.array([3, 1], dtype=int), wp.array([4, 0, 2], dtype=int)])
    b = wp.indexedarray(vecs, [wp.array([5, 0, 3], dtype=int)])
    out = wp.zeros((2, 3), dtype=float)
    wp.launch(mix, dim=a.shape, inputs=[a, b, out])
    ints = wp.array(np.arange(6, dtype=np.int32))
    sub = ints[wp.array([4, 2, 0], dtype=int)]
    wp.launch(inc, dim=sub.shape, inputs=[sub])
    return {"data": data.numpy(), "out": out.numpy(), "view": a.numpy(), "ints": ints.numpy(),
            "sub": sub.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "indexedarray")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_copy_offsets_and_taped_copies_are_refused():
    base = wp.array(np.arange(6, dtype=np.float32), requires_grad=True)
    sub = base[wp.array([0, 2, 4], dtype=wp.int32)]
    with pytest.raises(RuntimeError, match="indexed or Fabric"):
        wp.copy(wp.zeros(3, dtype=float), sub, src_offset=1, count=1)
    with Tape():
        with pytest.raises(RuntimeError, match="not recorded by the Tape"):
            wp.copy(wp.zeros(3, dtype=float), sub)


@wp.kernel
def add_one_generic(a: typing.Any):
    i = wp.tid()
    a[i] = a[i] + 1.0


def test_a_generic_kernel_tells_array_kinds_apart():
    # regression: the cache index keyed an array parameter by dtype and ndim only, so the indexed specialization
    # of a generic kernel loaded the plain one's compiled code (it read a[i] without the indices)
    plain = wp.zeros(4, dtype=float)
    wp.launch(add_one_generic, dim=4, inputs=[plain])
    parent = wp.zeros(4, dtype=float)
    wp.launch(add_one_generic, dim=2, inputs=[parent[wp.array([3, 1], dtype=wp.int32)]])
    np.testing.assert_array_equal(plain.numpy(), np.ones(4))
    np.testing.assert_array_equal(parent.numpy(), [0.0, 1.0, 0.0, 1.0])


@wp.kernel
def read_into(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i]


def test_tape_sees_an_overwrite_through_an_indexed_array():
    data = wp.array(np.ones(4, np.float32), requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    src = wp.array(np.ones(2, np.float32), requires_grad=True)
    with Tape():
        wp.launch(read_into, dim=4, inputs=[data, out])
        with pytest.warns(UserWarning, match="writes array 'a', which kernel 'read_into' read earlier"):
            wp.launch(scatter_add, dim=2, inputs=[src, wp.indexedarray(data, [wp.array([0, 2], dtype=wp.int32)])])
