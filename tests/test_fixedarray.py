"""wp.fixedarray (Warp 1.19): `wp.zeros(shape=..., dtype=...)` in kernel code makes a fixed-size array on the
thread's stack. Checked against numpy and against real Warp on the same program: element reads and writes
(`a[i, j]` and `a[i][j]`), views and shapes, passing one to functions that take arrays (which write the caller's
elements), returning one from a function, arrays of structs; the host class; the refusals (a run-time shape, a
return annotation that is not a fixed array, a host value as a launch argument, the backward pass); and the CUDA
source compiled to PTX (no GPU needed)."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import Tape


@wp.func
def fill_rows(arr: wp.array2d(dtype=int)):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i][j] = i * arr.shape[1] + j


@wp.func
def squares(n: int) -> wp.fixedarray(shape=(4,), dtype=float):
    arr = wp.zeros(shape=(4,), dtype=float)
    for i in range(n):
        arr[i] = float(i * i)
    return arr


@wp.struct
class Sample:
    offset: int
    dist: float


@wp.kernel
def fixed_values(out: wp.array2d(dtype=int), views: wp.array(dtype=int), sq: wp.array(dtype=float),
                 samples: wp.array(dtype=float)):
    t = wp.tid()
    arr = wp.zeros(shape=(2, 3), dtype=int)
    fill_rows(arr)  # a function taking wp.array2d writes the fixed array's own elements
    arr[1, 2] = arr[1, 2] + t
    for i in range(2):
        for j in range(3):
            out[t * 2 + i, j] = arr[i, j]
    r1 = arr[1]  # a view of one row
    s = arr[:2, 1:]
    views[t * 6 + 0] = r1.shape[0]
    views[t * 6 + 1] = r1.shape[1]  # beyond its dims: 0, as in Warp
    views[t * 6 + 2] = r1[2]
    views[t * 6 + 3] = s.shape[0] * 10 + s.shape[1]
    views[t * 6 + 4] = s[1, 1]
    views[t * 6 + 5] = arr.shape[0] * 10 + arr.shape[1]
    q = squares(3 + t)
    for i in range(4):
        sq[t * 4 + i] = q[i]
    st = wp.zeros(shape=3, dtype=Sample)
    for i in range(3):
        st[i].offset = i + t
        st[i].dist = float(st[i].offset) * 0.5
    samples[t] = st[0].dist + st[1].dist + st[2].dist + float(st[2].offset)


def _run_fixed_values():
    out = wp.zeros((4, 3), dtype=int)
    views = wp.zeros(12, dtype=int)
    sq = wp.zeros(8, dtype=float)
    samples = wp.zeros(2, dtype=float)
    wp.launch(fixed_values, 2, inputs=[out, views, sq, samples])
    return out.numpy(), views.numpy(), sq.numpy(), samples.numpy()


def test_reads_writes_views_functions_and_structs():
    out, views, sq, samples = _run_fixed_values()
    base = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(out[:2], base)
    np.testing.assert_array_equal(out[2:], base + np.array([[0, 0, 0], [0, 0, 1]]))
    np.testing.assert_array_equal(views[:6], [3, 0, 5, 22, 5, 23])
    np.testing.assert_array_equal(views[6:], [3, 0, 6, 22, 6, 23])
    np.testing.assert_array_equal(sq, [0, 1, 4, 0, 0, 1, 4, 9])
    # thread t: offsets t, t+1, t+2; dists half of them
    np.testing.assert_allclose(samples, [1.5 + 2, 3.0 + 3])


_PROGRAM = '''
@wp.func
def fill(arr: wp.array2d[int]):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i][j] = i * arr.shape[1] + j * 7 - i


@wp.func
def made(n: int) -> wp.fixedarray(shape=(2, 3), dtype=float):
    a = wp.zeros(shape=(2, 3), dtype=float)
    for i in range(2):
        for j in range(3):
            a[i, j] = float(n) * 0.25 + float(j) - float(i)
    return a


@wp.func
def first(arr: wp.array[wp.vec2f]):
    return arr[0]


@wp.kernel(enable_backward=False)
def k(out: wp.array2d[int], f: wp.array2d[float], v: wp.array[wp.vec2f]):
    t = wp.tid()
    arr = wp.zeros(shape=(2, 3), dtype=int)
    fill(arr)
    arr[0][1] += t
    g = made(t)
    for i in range(2):
        for j in range(3):
            out[t * 2 + i, j] = arr[i, j]
            f[t * 2 + i, j] = g[i][j]
    vs = wp.zeros(shape=(3,), dtype=wp.vec2f)
    vs[0] = wp.vec2f(float(t), 2.0)
    v[t] = first(vs)


def run(wp, Tape):
    out = wp.zeros((6, 3), dtype=int)
    f = wp.zeros((6, 3), dtype=float)
    v = wp.zeros(3, dtype=wp.vec2f)
    wp.launch(k, 3, inputs=[out, f, v], device="cpu")
    return {"out": out.numpy(), "f": f.numpy(), "v": v.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "fixedarray")
    assert set(warp) == {"out", "f", "v"}
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_host_class_describes_and_is_refused_as_an_argument():
    a = wp.fixedarray(dtype=float, shape=(2, 3))
    assert (a.dtype, a.shape, a.ndim, a.size, a.strides) == (wp.float32, (2, 3), 2, 6, (12, 4))
    assert wp.fixedarray(dtype=int).shape == (0,) and wp.fixedarray(dtype=int).dtype is wp.int32

    class Child(wp.fixedarray):  # Warp's test_array_subclass.py subclasses it at import
        pass

    c = Child(dtype=wp.vec3, shape=4)
    assert isinstance(c, wp.array) and c.strides == (12,)

    @wp.kernel
    def read(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        out[0] = a[0]

    for value in (wp.fixedarray(dtype=float, shape=1), c):
        with pytest.raises(TypeError, match="wp.fixedarray as a host argument"):
            wp.launch(read, 1, inputs=[value, wp.zeros(1, dtype=float)])


def test_refusals():
    @wp.kernel
    def runtime_shape(out: wp.array(dtype=int)):
        t = wp.tid()
        a = wp.zeros(shape=(t,), dtype=int)
        out[0] = a.shape[0]

    with pytest.raises(RuntimeError, match="must be specified as a constant when zero-initializing an array"):
        wp.launch(runtime_shape, 1, inputs=[wp.zeros(1, dtype=int)])

    @wp.func
    def plain_annotation() -> wp.array2d(dtype=int):
        return wp.zeros(shape=(2, 3), dtype=int)

    @wp.kernel
    def calls_it(out: wp.array(dtype=int)):
        a = plain_annotation()
        out[0] = a[0, 0]

    with pytest.raises(RuntimeError, match="returns a fixed-size array whereas it has its return type annotated"):
        wp.launch(calls_it, 1, inputs=[wp.zeros(1, dtype=int)])

    @wp.func
    def wrong_shape() -> wp.fixedarray(shape=(3, 2), dtype=int):
        return wp.zeros(shape=(2, 3), dtype=int)

    @wp.kernel
    def calls_wrong(out: wp.array(dtype=int)):
        a = wrong_shape()
        out[0] = a[0, 0]

    with pytest.raises(RuntimeError, match=r"annotated as a fixed-size array of shape \(3, 2\)"):
        wp.launch(calls_wrong, 1, inputs=[wp.zeros(1, dtype=int)])


@wp.kernel
def through_fixed(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    idx = wp.zeros(shape=3, dtype=int)
    for i in range(3):
        idx[i] = 2 - i
    y[0] = x[idx[0]] * 3.0 + x[idx[2]]


def test_backward_is_refused_not_wrong():
    """The replay would read the index array as the forward pass left it (stores are not replayed): a wrong
    gradient. The forward pass runs; backward refuses, naming the line."""
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(through_fixed, 1, inputs=[x, y])
    assert y.numpy()[0] == 10.0
    with pytest.raises(RuntimeError, match=r"backward pass of a function with a fixed-size array"):
        tape.backward(loss=y)


def test_cuda_source_compiles_to_ptx():
    from kernels.compiler.nvrtc import compile_source, render_cuda_source

    source = render_cuda_source([fixed_values, through_fixed], adjoint=False)
    assert "wp::fixedarray_t<6, wp::int32>" in source
    compile_source(source, 90, "fixedarray.cu", "ptx")


@wp.kernel
def through_row_views(a: wp.array2d(dtype=float), v: wp.array2d(dtype=wp.vec3)):
    i, j = wp.tid()
    a[i][j] = float(i * 10 + j)  # a store through the view a[i] writes a's memory, as in Warp
    a[i][j] += 0.5
    v[i][j].y = float(j)


def test_stores_through_views_of_array_arguments():
    a = wp.zeros((2, 3), dtype=float)
    v = wp.zeros((2, 3), dtype=wp.vec3)
    wp.launch(through_row_views, (2, 3), inputs=[a, v])
    np.testing.assert_array_equal(a.numpy(), np.array([[0, 1, 2], [10, 11, 12]]) + 0.5)
    np.testing.assert_array_equal(v.numpy()[..., 1], [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(v.numpy()[..., [0, 2]], 0)
