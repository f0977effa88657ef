"""Arrays: construction, numpy interop, views, 1-4 dimensions, element types, atomics, launch argument checks and
debug-mode bounds checking."""

import numpy as np
import pytest

import kernels as wp


@wp.kernel
def scale_1d(a: wp.array(dtype=float), factor: float):
    i = wp.tid()
    a[i] = a[i] * factor


@wp.kernel
def scale_f64(a: wp.array(dtype=wp.float64), factor: wp.float64):
    i = wp.tid()
    a[i] = a[i] * factor


@wp.kernel
def index_2d(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = a[i, j] + float(i * 100 + j)


@wp.kernel
def index_3d(a: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    a[i, j, k] = i * 100 + j * 10 + k


@wp.kernel
def index_4d(a: wp.array4d(dtype=wp.int32)):
    i, j, k, m = wp.tid()
    a[i, j, k, m] = i * 1000 + j * 100 + k * 10 + m


@wp.kernel
def index_2d_ndim_form(a: wp.array(dtype=wp.int32, ndim=2)):
    i, j = wp.tid()
    a[i, j] = i - j


@wp.kernel
def shapes_inside(a: wp.array2d(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=wp.int32)):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = b.shape[0]
    out[3] = len(b)
    out[4] = len(a)


@wp.kernel
def sum_rows(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(a.shape[1]):
        s += a[i, j]
    out[i] = s


@wp.kernel
def vec3_norms(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


@wp.kernel
def vec3_write(v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = wp.vec3(float(i), 2.0 * float(i), -1.0)


# ---------------------------------------------------------------------------------------------------------------
# Construction and numpy interop


def test_from_numpy_copies_by_default(device):
    data = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    a = wp.array(data, dtype=float, device=device)
    wp.launch(scale_1d, dim=3, inputs=[a, 2.0], device=device)
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(data, [1.0, 2.0, 3.0])


@pytest.mark.cpu_only("a numpy array is host memory: an array on a GPU made from it is always a copy")
def test_from_numpy_zero_copy(device):
    data = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    a = wp.array(data, dtype=float, copy=False, device=device)
    wp.launch(scale_1d, dim=3, inputs=[a, 3.0], device=device)
    np.testing.assert_array_equal(data, [3.0, 6.0, 9.0])


@pytest.mark.parametrize("np_dtype, wp_dtype", [
    (np.float32, wp.float32), (np.float64, wp.float64), (np.int32, wp.int32), (np.int64, wp.int64),
    (np.uint8, wp.uint8), (np.int8, wp.int8), (np.uint32, wp.uint32), (np.float16, wp.float16),
    (np.bool_, wp.bool),
])
def test_dtype_inferred_from_numpy(np_dtype, wp_dtype):
    a = wp.array(np.zeros(4, dtype=np_dtype))
    assert a.dtype is wp_dtype
    assert a.numpy().dtype == np_dtype


def test_dtype_inferred_from_python_lists():
    assert wp.array([1.0, 2.0]).dtype in (wp.float32, wp.float64)
    assert wp.array([1, 2]).dtype in (wp.int32, wp.int64)
    np.testing.assert_array_equal(wp.array([1.0, 2.0], dtype=float).numpy(), [1.0, 2.0])


def test_properties(device):
    a = wp.zeros((3, 4), dtype=wp.float64, device=device)
    assert a.shape == (3, 4)
    assert a.strides == (32, 8)
    assert a.dtype is wp.float64
    assert a.size == 12
    assert a.ndim == 2
    assert len(a) == 3
    assert str(a.device) == str(wp.get_device(device))
    v = wp.zeros(5, dtype=wp.vec3, device=device)
    assert v.shape == (5,)
    assert v.strides == (12,)
    assert v.numpy().shape == (5, 3)


def test_allocation_functions(device):
    np.testing.assert_array_equal(wp.zeros(3, dtype=wp.int32, device=device).numpy(), [0, 0, 0])
    e = wp.empty((2, 2), dtype=float, device=device)
    assert e.shape == (2, 2) and e.dtype is wp.float32
    np.testing.assert_array_equal(wp.ones(2, dtype=wp.float64, device=device).numpy(), [1.0, 1.0])
    f = wp.full((2, 3), 7, dtype=wp.int32, device=device)
    np.testing.assert_array_equal(f.numpy(), np.full((2, 3), 7))
    fv = wp.full(2, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3, device=device)
    np.testing.assert_array_equal(fv.numpy(), [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])

    src = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    for like, expect in ((wp.zeros_like(src), 0.0), (wp.ones_like(src), 1.0), (wp.full_like(src, 2.5), 2.5)):
        assert like.shape == src.shape and like.dtype is src.dtype
        np.testing.assert_array_equal(like.numpy(), np.full((2, 3), expect, dtype=np.float32))

    c = wp.clone(src)
    np.testing.assert_array_equal(c.numpy(), src.numpy())
    c.numpy()[0, 0] = 100.0
    assert src.numpy()[0, 0] == 0.0


def test_requires_grad_allocates_zero_gradient(device):
    a = wp.zeros(4, dtype=wp.float64, device=device, requires_grad=True)
    assert a.grad is not None and a.grad.shape == (4,)
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(4))
    b = wp.zeros_like(a)
    assert b.requires_grad
    c = wp.clone(a, requires_grad=False)
    assert not c.requires_grad


def test_copy_with_offsets(device):
    src = wp.array(np.arange(10, dtype=np.float32), device=device)
    dest = wp.zeros(8, dtype=float, device=device)
    wp.copy(dest, src, dest_offset=2, src_offset=5, count=3)
    np.testing.assert_array_equal(dest.numpy(), [0, 0, 5, 6, 7, 0, 0, 0])
    wp.copy(dest, src)
    np.testing.assert_array_equal(dest.numpy(), np.arange(8))


def test_fill_zero_assign(device):
    a = wp.zeros(4, dtype=float, device=device)
    a.fill_(3.5)
    np.testing.assert_array_equal(a.numpy(), [3.5] * 4)
    a.zero_()
    np.testing.assert_array_equal(a.numpy(), [0.0] * 4)
    a.assign(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 3.0, 4.0])
    b = wp.zeros(4, dtype=float, device=device)
    b.assign(a)
    np.testing.assert_array_equal(b.numpy(), [1.0, 2.0, 3.0, 4.0])
    v = wp.zeros(2, dtype=wp.vec3, device=device)
    v.fill_(wp.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(v.numpy(), [[1.0, 2.0, 3.0]] * 2)


# ---------------------------------------------------------------------------------------------------------------
# Dimensions and multi-dimensional launches


def test_2d_launch(device):
    a = wp.zeros((3, 5), dtype=float, device=device)
    wp.launch(index_2d, dim=(3, 5), inputs=[a], device=device)
    i, j = np.meshgrid(np.arange(3), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(a.numpy(), i * 100 + j)


def test_3d_and_4d_launch(device):
    a = wp.zeros((2, 3, 4), dtype=wp.int32, device=device)
    wp.launch(index_3d, dim=a.shape, inputs=[a], device=device)
    i, j, k = np.meshgrid(*(np.arange(s) for s in a.shape), indexing="ij")
    np.testing.assert_array_equal(a.numpy(), i * 100 + j * 10 + k)

    b = wp.zeros((2, 3, 2, 4), dtype=wp.int32, device=device)
    wp.launch(index_4d, dim=b.shape, inputs=[b], device=device)
    i, j, k, m = np.meshgrid(*(np.arange(s) for s in b.shape), indexing="ij")
    np.testing.assert_array_equal(b.numpy(), i * 1000 + j * 100 + k * 10 + m)


def test_ndim_annotation_form(device):
    a = wp.zeros((4, 3), dtype=wp.int32, device=device)
    wp.launch(index_2d_ndim_form, dim=(4, 3), inputs=[a], device=device)
    np.testing.assert_array_equal(a.numpy(), np.subtract.outer(np.arange(4), np.arange(3)))


def test_shape_and_len_inside_kernels(device):
    a = wp.zeros((3, 7), dtype=float, device=device)
    b = wp.zeros(11, dtype=float, device=device)
    out = wp.zeros(5, dtype=wp.int32, device=device)
    wp.launch(shapes_inside, dim=1, inputs=[a, b, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [3, 7, 11, 11, 3])


def test_loop_bound_from_shape(device):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(sum_rows, dim=3, inputs=[wp.array(data, device=device), out], device=device)
    np.testing.assert_array_equal(out.numpy(), data.sum(axis=1))


# ---------------------------------------------------------------------------------------------------------------
# Views


def test_slice_views_write_through(device):
    base = wp.array(np.arange(10, dtype=np.float32), device=device)
    view = base[1:5]
    assert view.shape == (4,)
    wp.launch(scale_1d, dim=view.shape[0], inputs=[view, 10.0], device=device)
    np.testing.assert_array_equal(base.numpy(), [0, 10, 20, 30, 40, 5, 6, 7, 8, 9])

    strided = base[::2]
    assert strided.shape == (5,) and strided.strides == (8,)
    wp.launch(scale_1d, dim=5, inputs=[strided, -1.0], device=device)
    np.testing.assert_array_equal(base.numpy(), [0, 10, -20, 30, -40, 5, -6, 7, -8, 9])


def test_column_view_launched_as_1d(device):
    base = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), device=device)
    column = base[:, 1]
    assert column.ndim == 1 and column.shape == (4,) and column.strides == (12,)
    wp.launch(scale_1d, dim=4, inputs=[column, 2.0], device=device)
    expect = np.arange(12, dtype=np.float32).reshape(4, 3)
    expect[:, 1] *= 2.0
    np.testing.assert_array_equal(base.numpy(), expect)

    out = wp.zeros(2, dtype=float, device=device)
    wp.launch(sum_rows, dim=2, inputs=[base[1:3, 1:], out], device=device)
    np.testing.assert_array_equal(out.numpy(), expect[1:3, 1:].sum(axis=1))


def test_reshape_and_flatten(device):
    a = wp.array(np.arange(6, dtype=np.float32), device=device)
    b = a.reshape((2, 3))
    wp.launch(index_2d, dim=(2, 3), inputs=[b], device=device)
    np.testing.assert_array_equal(a.numpy(), np.arange(6) + [0, 1, 2, 100, 101, 102])
    assert b.flatten().shape == (6,)


# ---------------------------------------------------------------------------------------------------------------
# Vector arrays, numpy passed to launch


def test_vec3_array_from_n_by_3(device):
    data = np.array([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    v = wp.array(data, dtype=wp.vec3, device=device)
    assert v.shape == (3,) and v.dtype is wp.vec3
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(vec3_norms, dim=3, inputs=[v, out], device=device)
    np.testing.assert_allclose(out.numpy(), [5.0, 3.0, 0.0])
    wp.launch(vec3_write, dim=3, inputs=[v], device=device)
    np.testing.assert_array_equal(v.numpy(), [[0, 0, -1], [1, 2, -1], [2, 4, -1]])
    with pytest.raises(ValueError):
        wp.array(np.zeros((3, 2), dtype=np.float32), dtype=wp.vec3)


@pytest.mark.cpu_only("a numpy array is host memory: a GPU launch refuses it (the arrays must be on its device)")
def test_numpy_array_passed_to_launch_is_not_copied(device):
    data = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    wp.launch(scale_1d, dim=3, inputs=[data, 0.5], device=device)
    np.testing.assert_array_equal(data, [0.5, -1.0, 2.0])
    data2d = np.zeros((2, 3), dtype=np.float32)
    wp.launch(index_2d, dim=(2, 3), inputs=[data2d], device=device)
    np.testing.assert_array_equal(data2d, [[0, 1, 2], [100, 101, 102]])
    vecs = np.array([[3.0, 4.0, 0.0]], dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    wp.launch(vec3_norms, dim=1, inputs=[vecs, out], device=device)
    assert out[0] == 5.0


# ---------------------------------------------------------------------------------------------------------------
# Atomics and read-modify-write


@wp.kernel
def atomics_int(counts: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.int32),
                big: wp.array(dtype=wp.int64)):
    i = wp.tid()
    v = values[i]
    wp.atomic_add(counts, 0, 1)
    wp.atomic_sub(counts, 1, 2)
    wp.atomic_min(counts, 2, v)
    wp.atomic_max(counts, 3, v)
    counts[4] += v % 7
    counts[5] -= 1
    wp.atomic_add(big, 0, wp.int64(v) * wp.int64(100000))


@wp.kernel(enable_backward=False)
def atomics_float(acc: wp.array(dtype=float), acc64: wp.array(dtype=wp.float64), values: wp.array(dtype=float)):
    i = wp.tid()
    v = values[i]
    wp.atomic_add(acc, 0, v)
    wp.atomic_sub(acc, 1, v)
    wp.atomic_min(acc, 2, v)
    wp.atomic_max(acc, 3, v)
    acc[4] += 0.5
    acc[5] -= v
    acc64[0] += wp.float64(v)


@wp.kernel
def atomic_returns_old(counter: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32)):
    i = wp.tid()
    slot = wp.atomic_add(counter, 0, 1)
    slots[slot] = i


THREADS = 100_000


def test_atomics_many_threads_int(device):
    rng = np.random.default_rng(0)
    values_np = rng.integers(-1_000_000, 1_000_000, THREADS, dtype=np.int32)
    counts = wp.array(np.array([0, 0, 2**31 - 1, -2**31, 0, 0], dtype=np.int32), device=device)
    big = wp.zeros(1, dtype=wp.int64, device=device)
    wp.launch(atomics_int, dim=THREADS, inputs=[counts, wp.array(values_np, device=device), big], device=device)
    c = counts.numpy()
    assert c[0] == THREADS
    assert c[1] == -2 * THREADS
    assert c[2] == values_np.min()
    assert c[3] == values_np.max()
    assert c[4] == int(np.sum(np.fmod(values_np, 7)))  # C's % keeps the sign of the dividend
    assert c[5] == -THREADS
    assert big.numpy()[0] == int(np.sum(values_np.astype(np.int64))) * 100000


def test_atomics_many_threads_float(device):
    rng = np.random.default_rng(1)
    values_np = rng.uniform(-1.0, 1.0, THREADS).astype(np.float32)
    acc = wp.array(np.array([0, 0, np.inf, -np.inf, 0, 0], dtype=np.float32), device=device)
    acc64 = wp.zeros(1, dtype=wp.float64, device=device)
    wp.launch(atomics_float, dim=THREADS, inputs=[acc, acc64, wp.array(values_np, device=device)], device=device)
    a = acc.numpy()
    total = float(np.sum(values_np.astype(np.float64)))
    assert abs(a[0] - total) < 0.5
    assert abs(a[1] + total) < 0.5
    assert a[2] == values_np.min()
    assert a[3] == values_np.max()
    assert a[4] == 0.5 * THREADS  # exact: every partial sum is a multiple of 0.5 below 2^24
    assert abs(a[5] + total) < 0.5
    assert abs(acc64.numpy()[0] - total) < 1e-6


def test_float_atomic_min_max_in_differentiable_kernel(device):
    # Warp differentiates atomic_min/max (the gradient goes to the winning thread's value); a kernel using them must
    # at least build with its backward enabled. Defined here: a kernel refused at render time would take the rest
    # of its build batch down with it.
    @wp.kernel
    def bounds(values: wp.array(dtype=float), lo: wp.array(dtype=float), hi: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_min(lo, 0, values[i])
        wp.atomic_max(hi, 0, values[i])

    values = wp.array(np.array([0.5, -2.0, 3.0, 1.0], dtype=np.float32), device=device)
    lo = wp.full(1, np.inf, dtype=float, device=device)
    hi = wp.full(1, -np.inf, dtype=float, device=device)
    wp.launch(bounds, dim=4, inputs=[values, lo, hi], device=device)
    assert lo.numpy()[0] == -2.0 and hi.numpy()[0] == 3.0


def test_atomic_add_returns_distinct_old_values(device):
    n = 50_000
    counter = wp.zeros(1, dtype=wp.int32, device=device)
    slots = wp.full(n, -1, dtype=wp.int32, device=device)
    wp.launch(atomic_returns_old, dim=n, inputs=[counter, slots], device=device)
    assert counter.numpy()[0] == n
    np.testing.assert_array_equal(np.sort(slots.numpy()), np.arange(n))


# ---------------------------------------------------------------------------------------------------------------
# Element types


@wp.kernel
def roundtrip_small_ints(a8: wp.array(dtype=wp.int8), u8: wp.array(dtype=wp.uint8), i64: wp.array(dtype=wp.int64),
                         u32: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    a8[i] = a8[i] * wp.int8(-1)
    u8[i] = u8[i] + wp.uint8(1)
    i64[i] = i64[i] * wp.int64(3)
    u32[i] = u32[i] + wp.uint32(1)


@wp.kernel
def roundtrip_half_bool(h: wp.array(dtype=wp.float16), b: wp.array(dtype=wp.bool), out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    h[i] = h[i] * wp.float16(2.0)
    if b[i]:
        out[i] = 1
    else:
        out[i] = 0
    b[i] = not b[i]


def test_small_int_arrays_round_trip(device):
    a8 = wp.array(np.array([1, -5, 127, -127], dtype=np.int8), device=device)
    u8 = wp.array(np.array([0, 10, 254, 255], dtype=np.uint8), device=device)
    i64 = wp.array(np.array([1, -2, 3_000_000_000, -4_000_000_000], dtype=np.int64), device=device)
    u32 = wp.array(np.array([0, 1, 3_000_000_000, 4_294_967_295], dtype=np.uint32), device=device)
    wp.launch(roundtrip_small_ints, dim=4, inputs=[a8, u8, i64, u32], device=device)
    np.testing.assert_array_equal(a8.numpy(), [-1, 5, -127, 127])
    np.testing.assert_array_equal(u8.numpy(), [1, 11, 255, 0])  # wraps like C
    np.testing.assert_array_equal(i64.numpy(), [3, -6, 9_000_000_000, -12_000_000_000])
    np.testing.assert_array_equal(u32.numpy(), [1, 2, 3_000_000_001, 0])


def test_half_and_bool_arrays_round_trip(device):
    h = wp.array(np.array([0.5, -1.25, 1000.0, 0.0], dtype=np.float16), device=device)
    b = wp.array(np.array([True, False, False, True]), device=device)
    out = wp.zeros(4, dtype=wp.int32, device=device)
    wp.launch(roundtrip_half_bool, dim=4, inputs=[h, b, out], device=device)
    assert h.numpy().dtype == np.float16
    np.testing.assert_array_equal(h.numpy(), np.array([1.0, -2.5, 2000.0, 0.0], dtype=np.float16))
    np.testing.assert_array_equal(out.numpy(), [1, 0, 0, 1])
    np.testing.assert_array_equal(b.numpy(), [False, True, True, False])


def test_float64_array(device):
    a = wp.array(np.array([1e-300, 1e300, 1.0 / 3.0]), dtype=wp.float64, device=device)
    wp.launch(scale_f64, dim=3, inputs=[a, 3.0], device=device)
    np.testing.assert_array_equal(a.numpy(), np.array([1e-300, 1e300, 1.0 / 3.0]) * 3.0)


# ---------------------------------------------------------------------------------------------------------------
# Launch argument errors


def test_launch_wrong_argument_count(device):
    a = wp.zeros(3, dtype=float, device=device)
    with pytest.raises(wp.LaunchError, match="scale_1d") as info:
        wp.launch(scale_1d, dim=3, inputs=[a], device=device)
    assert "2" in str(info.value) and "1" in str(info.value)
    with pytest.raises(wp.LaunchError, match="scale_1d"):
        wp.launch(scale_1d, dim=3, inputs=[a, 1.0, 2.0], device=device)


def test_launch_wrong_dtype(device):
    a = wp.zeros(3, dtype=wp.float64, device=device)
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(scale_1d, dim=3, inputs=[a, 1.0], device=device)
    message = str(info.value)
    assert "scale_1d" in message and "'a'" in message
    with pytest.raises(wp.LaunchError, match="'factor'"):
        wp.launch(scale_1d, dim=3, inputs=[wp.zeros(3, dtype=float, device=device), "two"], device=device)
    # a numpy array of another dtype must be refused, not converted: the kernel's writes would go to a copy
    with pytest.raises(wp.LaunchError, match="'a'"):
        wp.launch(scale_1d, dim=3, inputs=[np.ones(3, dtype=np.float64), 1.0], device=device)


def test_launch_wrong_ndim(device):
    a = wp.zeros((3, 3), dtype=float, device=device)
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(scale_1d, dim=3, inputs=[a, 1.0], device=device)
    message = str(info.value)
    assert "scale_1d" in message and "'a'" in message
    with pytest.raises(wp.LaunchError, match="index_2d"):
        wp.launch(index_2d, dim=(3, 3), inputs=[wp.zeros(9, dtype=float, device=device)], device=device)


def test_launch_scalar_where_array_expected(device):
    with pytest.raises(wp.LaunchError, match="'a'"):
        wp.launch(scale_1d, dim=3, inputs=[1.0, 1.0], device=device)
    with pytest.raises(wp.LaunchError, match="'factor'"):
        wp.launch(scale_1d, dim=3, inputs=[wp.zeros(3, device=device), wp.zeros(3, device=device)], device=device)


def test_launch_with_fewer_dims_than_tid_pads_with_one(device):
    """As in Warp 1.19: a 1-d launch of a kernel reading two coordinates runs (i, 0) for each i (it was refused
    here before; tests/test_launch_bounds.py checks the padding and folding against real Warp)."""
    a = wp.zeros((3, 5), dtype=float, device=device)
    wp.launch(index_2d, dim=3, inputs=[a], device=device)
    expected = np.zeros((3, 5))
    expected[:, 0] = [0.0, 100.0, 200.0]
    np.testing.assert_array_equal(a.numpy(), expected)


def test_padded_launch_past_the_array_is_caught_in_debug_mode(device):
    """dim=15 pads to (15, 1): rows 3..14 are past a 3 x 5 array; release mode does not check (as Warp), debug
    mode stops with the kernel's name."""
    saved = wp.config.mode
    wp.config.mode = "debug"
    try:
        @wp.kernel  # defined here: a module already built in release mode stays so in this process
        def index_2d_debug(a: wp.array2d(dtype=float)):
            i, j = wp.tid()
            a[i, j] = a[i, j] + float(i * 100 + j)

        a = wp.zeros((3, 5), dtype=float, device=device)
        with pytest.raises(Exception, match="index_2d_debug"):
            wp.launch(index_2d_debug, dim=15, inputs=[a], device=device)
            wp.synchronize_device(device)
    finally:
        wp.config.mode = saved


# ---------------------------------------------------------------------------------------------------------------
# Debug mode


@pytest.fixture
def debug_mode():
    saved = wp.config.mode
    wp.config.mode = "debug"
    try:
        yield
    finally:
        wp.config.mode = saved


def test_debug_mode_bounds_check(device, debug_mode):
    @wp.kernel
    def read_past_end(a: wp.array(dtype=float), offset: int, out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i + offset]

    line = read_past_end.func.__code__.co_firstlineno + 3
    a = wp.zeros(4, dtype=float, device=device)
    out = wp.zeros(4, dtype=float, device=device)
    wp.launch(read_past_end, dim=4, inputs=[a, 0, out], device=device)  # in bounds: fine
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(read_past_end, dim=4, inputs=[a, 2, out], device=device)
    message = str(info.value)
    assert "read_past_end" in message
    assert f"{__file__}:{line}" in message
    assert "[4]" in message or "[5]" in message
    # the error does not stick: the next good launch passes
    wp.launch(read_past_end, dim=4, inputs=[a, 0, out], device=device)


def test_debug_mode_bounds_check_2d_store(device, debug_mode):
    @wp.kernel
    def write_transposed(a: wp.array2d(dtype=float)):
        i, j = wp.tid()
        a[j, i] = 1.0

    line = write_transposed.func.__code__.co_firstlineno + 3
    a = wp.zeros((2, 5), dtype=float, device=device)
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(write_transposed, dim=(2, 5), inputs=[a], device=device)
    message = str(info.value)
    assert "write_transposed" in message
    assert f"{__file__}:{line}" in message
    assert "(2, 5)" in message


def test_empty_arrays_of_vectors_and_matrices(device):
    for dtype in (wp.vec3, wp.mat22, wp.transform, float):
        a = wp.zeros(0, dtype=dtype, device=device)
        assert a.shape == (0,) and a.size == 0
    b = wp.array(np.zeros((0, 3), np.float32), dtype=wp.vec3, device=device)
    assert b.shape == (0,)


def test_struct_arrays_have_a_size_and_know_whether_they_are_contiguous():
    """wp.types.type_size_in_bytes of a @struct is its packed native size (as Warp's), which the strides of its
    arrays step by: a GPU gradient of structs is checked for non-zero words through it (tape_live)."""
    @wp.struct
    class Pair:
        a: wp.float16
        b: wp.vec3d

    size = wp.types.type_size_in_bytes(Pair)
    assert size == 32  # a half, padding to the vec3d's 8-byte alignment, 24 bytes of doubles
    a = wp.zeros(6, dtype=Pair)
    assert a.strides == (size,) and a.is_contiguous
    assert not a[::2].is_contiguous
