"""Tiles of vectors and matrices, elementwise tile arithmetic with broadcast operands, n-ary tile_map and
tile_astype: values against numpy, float64 gradients against finite differences (autodiff.gradcheck).

Kernels are module-level (float64, so gradcheck runs in double precision) and compile into one library.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

N = 4  # tile length


def _rng(seed=0):
    return np.random.default_rng(seed)


def _vec3(values, device):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.vec3d, device=device)


def _scalars(values, device):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, device=device)


# ------------------------------------------------------------------------------------------------------------
# Elementwise arithmetic: tile<vec3> with scalars, scalar tiles with vectors and matrices, tile op tile


@wp.kernel
def vector_arithmetic(v: wp.array(dtype=wp.vec3d), s: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.vec3d)):
    tv = wp.tile_load(v, shape=N)
    ts = wp.tile_load(s, shape=N)
    c = wp.vec3d(wp.float64(1.0), wp.float64(-2.0), wp.float64(0.5))
    wp.tile_store(out[0], tv * 2.0)
    wp.tile_store(out[1], 3.0 * tv)
    wp.tile_store(out[2], tv / 2.0)
    wp.tile_store(out[3], ts * c)
    wp.tile_store(out[4], c * ts)
    wp.tile_store(out[5], tv / ts)
    wp.tile_store(out[6], ts / tv)
    wp.tile_store(out[7], ts * tv + tv - c * ts)
    wp.tile_store(out[8], -tv)


def _run_vector_arithmetic(v, s, device):
    out = wp.zeros((9, N), dtype=wp.vec3d, device=device)
    wp.launch_tiled(vector_arithmetic, dim=1, inputs=[v, s, out], block_dim=8, device=device)
    return out


def test_vector_tile_arithmetic(device):
    v = _rng().uniform(0.5, 2.0, (N, 3))
    s = _rng(1).uniform(0.5, 2.0, N)
    c = np.array([1.0, -2.0, 0.5])
    out = _run_vector_arithmetic(_vec3(v, device), _scalars(s, device), device).numpy()
    sc = s[:, None]
    expected = [v * 2.0, 3.0 * v, v / 2.0, sc * c, c * sc, v / sc, sc / v, sc * v + v - c * sc, -v]
    np.testing.assert_allclose(out, np.stack(expected), rtol=1e-12)


def test_vector_tile_arithmetic_gradient(device):
    v = _vec3(_rng().uniform(0.5, 2.0, (N, 3)), device)
    s = _scalars(_rng(1).uniform(0.5, 2.0, N), device)
    gradcheck(lambda v, s: _run_vector_arithmetic(v, s, device), [v, s])


@wp.kernel
def matrix_arithmetic(m: wp.array(dtype=wp.mat22d), s: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.mat22d)):
    tm = wp.tile_load(m, shape=N)
    ts = wp.tile_load(s, shape=N)
    c = wp.mat22d(wp.float64(1.0), wp.float64(2.0), wp.float64(4.0), wp.float64(8.0))
    wp.tile_store(out[0], tm * 2.0)
    wp.tile_store(out[1], ts * c)
    wp.tile_store(out[2], c / ts)
    wp.tile_store(out[3], 1.0 / tm)
    wp.tile_store(out[4], tm + tm * ts)


def _run_matrix_arithmetic(m, s, device):
    out = wp.zeros((5, N), dtype=wp.mat22d, device=device)
    wp.launch_tiled(matrix_arithmetic, dim=1, inputs=[m, s, out], block_dim=8, device=device)
    return out


def test_matrix_tile_arithmetic(device):
    m = _rng().uniform(0.5, 2.0, (N, 2, 2))
    s = _rng(1).uniform(0.5, 2.0, N)
    c = np.array([[1.0, 2.0], [4.0, 8.0]])
    out = _run_matrix_arithmetic(wp.array(m, dtype=wp.mat22d, device=device), _scalars(s, device), device)
    sc = s[:, None, None]
    expected = [m * 2.0, sc * c, c / sc, 1.0 / m, m + m * sc]
    np.testing.assert_allclose(out.numpy(), np.stack(expected), rtol=1e-12)


def test_matrix_tile_arithmetic_gradient(device):
    m = wp.array(_rng().uniform(0.5, 2.0, (N, 2, 2)), dtype=wp.mat22d, device=device)
    s = _scalars(_rng(1).uniform(0.5, 2.0, N), device)
    gradcheck(lambda m, s: _run_matrix_arithmetic(m, s, device), [m, s])


@wp.kernel(module="unique")
def vector_times_vector(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    ta = wp.tile_load(a, shape=4)
    wp.tile_store(out, ta * wp.vec3(1.0, 2.0, 3.0))


@wp.kernel(module="unique")
def vector_over_vector(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    ta = wp.tile_load(a, shape=4)
    wp.tile_store(out, wp.vec3(1.0, 2.0, 3.0) / ta)


@wp.kernel(module="unique")
def vector_tile_squared(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    ta = wp.tile_load(a, shape=4)
    wp.tile_store(out, ta * ta)


@pytest.mark.parametrize("kernel, message", [
    (vector_times_vector, r"Cannot multiply tile<vec3> by vec3: at least one operand must be a scalar"),
    (vector_over_vector, r"Cannot divide vec3 by tile<vec3>: at least one operand must be a scalar"),
    (vector_tile_squared, r"element type must be scalar"),
])
def test_vector_by_vector_is_a_type_error(device, kernel, message):
    a = wp.zeros(4, dtype=wp.vec3, device=device)
    with pytest.raises(TypeError, match=message):
        wp.launch_tiled(kernel, dim=1, inputs=[a, a], block_dim=8, device=device)


# ------------------------------------------------------------------------------------------------------------
# tile_map: three tiles and a broadcast value; tile_astype


@wp.func
def fused(x: wp.float64, y: wp.vec3d, z: wp.float64, w: wp.vec3d):
    return y * (x * z) + wp.cross(y, w) * wp.sin(x)


@wp.kernel
def map_nary(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.vec3d), z: wp.array(dtype=wp.float64),
             w: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    tx = wp.tile_load(x, shape=N)
    ty = wp.tile_load(y, shape=N)
    tz = wp.tile_load(z, shape=N)
    wp.tile_store(out, wp.tile_map(fused, tx, ty, tz, w[0]) + wp.tile_map(wp.mul, tz, w[1]))


def _run_map_nary(x, y, z, w, device):
    out = wp.zeros(N, dtype=wp.vec3d, device=device)
    wp.launch_tiled(map_nary, dim=1, inputs=[x, y, z, w, out], block_dim=8, device=device)
    return out


def test_tile_map_nary_with_broadcast_value(device):
    x, z = _rng().uniform(-1, 1, N), _rng(1).uniform(-1, 1, N)
    y, w = _rng(2).uniform(-1, 1, (N, 3)), _rng(3).uniform(-1, 1, (2, 3))
    out = _run_map_nary(_scalars(x, device), _vec3(y, device), _scalars(z, device), _vec3(w, device), device)
    expected = y * (x * z)[:, None] + np.cross(y, w[0]) * np.sin(x)[:, None] + z[:, None] * w[1]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-14)


def test_tile_map_nary_with_broadcast_value_gradient(device):
    inputs = [_scalars(_rng().uniform(-1, 1, N), device), _vec3(_rng(2).uniform(-1, 1, (N, 3)), device),
              _scalars(_rng(1).uniform(-1, 1, N), device), _vec3(_rng(3).uniform(-1, 1, (2, 3)), device)]
    gradcheck(lambda x, y, z, w: _run_map_nary(x, y, z, w, device), inputs)


@wp.kernel
def astype(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float32), whole: wp.array(dtype=wp.int32)):
    t = wp.tile_load(x, shape=N)
    wp.tile_store(out, wp.tile_astype(t * t, dtype=wp.float32))
    wp.tile_store(whole, wp.tile_astype(t, dtype=wp.int32))


def test_tile_astype(device):
    x = np.array([1.5, -2.25, 3.0, 0.75])
    out = wp.zeros(N, dtype=wp.float32, device=device)
    whole = wp.zeros(N, dtype=wp.int32, device=device)
    wp.launch_tiled(astype, dim=1, inputs=[_scalars(x, device), out, whole], block_dim=8, device=device)
    np.testing.assert_array_equal(out.numpy(), (x * x).astype(np.float32))
    np.testing.assert_array_equal(whole.numpy(), x.astype(np.int32))


def test_tile_astype_gradient(device):
    x = _scalars(_rng().uniform(-2, 2, N), device)

    def run(x):
        out = wp.zeros(N, dtype=wp.float32, device=device)
        whole = wp.zeros(N, dtype=wp.int32, device=device)
        wp.launch_tiled(astype, dim=1, inputs=[x, out, whole], block_dim=8, device=device)
        return out

    # float32 output: compare at float32 precision
    gradcheck(run, [x], eps=1e-3, atol=1e-3, rtol=1e-3)


# ------------------------------------------------------------------------------------------------------------
# tile_matmul with alpha and beta; tile_load from a sub-array a[i]


@wp.kernel
def matmul_scaled(a: wp.array3d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
                  c: wp.array2d(dtype=wp.float64), out: wp.array3d(dtype=wp.float64)):
    i = wp.tid()
    ta = wp.tile_load(a[i], shape=(2, 3))
    tb = wp.tile_load(b, shape=(3, 2))
    tc = wp.tile_load(c, shape=(2, 2))
    wp.tile_matmul(ta, tb, tc, alpha=0.5, beta=-2.0)
    wp.tile_store(out[i], tc)
    wp.tile_store(out[i + 2], wp.tile_matmul(ta, tb, alpha=3.0))
    td = wp.tile_load(c, shape=(2, 2))
    wp.tile_matmul(ta, tb, td, beta=0.0)
    wp.tile_store(out[i + 4], td)


def _run_matmul_scaled(a, b, c, device):
    out = wp.zeros((6, 2, 2), dtype=wp.float64, device=device)
    wp.launch_tiled(matmul_scaled, dim=2, inputs=[a, b, c, out], block_dim=8, device=device)
    return out


def test_matmul_alpha_beta(device):
    a, b = _rng().uniform(-1, 1, (2, 2, 3)), _rng(1).uniform(-1, 1, (3, 2))
    c = _rng(2).uniform(-1, 1, (2, 2))
    out = _run_matmul_scaled(*(wp.array(x, dtype=wp.float64, device=device) for x in (a, b, c)), device).numpy()
    for i in range(2):
        np.testing.assert_allclose(out[i], 0.5 * a[i] @ b - 2.0 * c, rtol=1e-12)
        np.testing.assert_allclose(out[i + 2], 3.0 * a[i] @ b, rtol=1e-12)
        np.testing.assert_allclose(out[i + 4], a[i] @ b, rtol=1e-12)


def test_matmul_alpha_beta_gradient(device):
    inputs = [wp.array(x, dtype=wp.float64, device=device) for x in
              (_rng().uniform(-1, 1, (2, 2, 3)), _rng(1).uniform(-1, 1, (3, 2)), _rng(2).uniform(-1, 1, (2, 2)))]
    gradcheck(lambda a, b, c: _run_matmul_scaled(a, b, c, device), inputs)


@wp.kernel
def matmul_beta_zero(c: wp.array2d(dtype=float)):
    ones = wp.tile_ones(shape=(3, 3), dtype=float)
    tc = wp.tile_load(c, shape=(3, 3))
    wp.tile_matmul(ones, ones, tc, beta=0.0)
    wp.tile_store(c, tc)


def test_matmul_beta_zero_does_not_read_out(device):
    c = wp.array(np.full((3, 3), np.nan, dtype=np.float32), device=device)
    wp.launch_tiled(matmul_beta_zero, dim=1, inputs=[c], block_dim=8, device=device)
    np.testing.assert_array_equal(c.numpy(), np.full((3, 3), 3.0))


@wp.kernel(module="unique")
def matmul_learned_beta(a: wp.array2d(dtype=float), beta: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    ta = wp.tile_load(a, shape=(2, 2))
    tc = wp.tile_ones(shape=(2, 2), dtype=float)
    wp.tile_matmul(ta, ta, tc, beta=beta[0])
    wp.tile_store(out, tc)


def test_matmul_beta_with_a_gradient_is_refused(device):
    from autodiff import Tape
    a = wp.ones((2, 2), dtype=float, device=device, requires_grad=True)
    beta = wp.ones(1, dtype=float, device=device, requires_grad=True)
    out = wp.zeros((2, 2), dtype=float, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(matmul_learned_beta, dim=1, inputs=[a, beta, out], block_dim=8, device=device)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 3.0))
    with pytest.raises(wp.CompileError, match="no gradient with respect to its argument 'beta'"):
        tape.backward(grads={out: wp.ones_like(out)})


@wp.kernel
def matmul_half(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=wp.float16)):
    acc = wp.tile_zeros(shape=(4, 4), dtype=a.dtype)
    wp.tile_matmul(wp.tile_load(a, shape=(4, 8)), wp.tile_load(b, shape=(8, 4)), acc)
    wp.tile_store(c, acc)


def test_matmul_float16_rounds_every_step_as_warp(device):
    # Warp 1.19 (its CPU and its CUDA scalar GEMM): each product and partial sum rounded to float16, the sum from
    # zero added to out at the end; tests/test_tile_matmul_mixed.py compares with real Warp bit for bit
    a, b = _rng().uniform(-1, 1, (4, 8)).astype(np.float16), _rng(1).uniform(-1, 1, (8, 4)).astype(np.float16)
    c = wp.zeros((4, 4), dtype=wp.float16, device=device)
    wp.launch_tiled(matmul_half, dim=1, inputs=[wp.array(a, device=device), wp.array(b, device=device), c],
                    block_dim=8, device=device)
    expected = np.zeros((4, 4), dtype=np.float16)
    for i in range(4):
        for j in range(4):
            total = np.float16(0.0)
            for k in range(8):
                total = np.float16(np.float32(total) + np.float32(np.float16(np.float32(a[i, k]) * np.float32(b[k, j]))))
            expected[i, j] = np.float16(np.float32(total) + np.float32(0.0))
    np.testing.assert_array_equal(c.numpy(), expected)


# ------------------------------------------------------------------------------------------------------------
# wp.config.verify_fp


@wp.kernel
def reciprocal(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 1.0 / x[i]


def test_verify_fp_reports_non_finite_results(device):
    x = wp.array(np.array([1.0, 0.0], dtype=np.float32), device=device)
    y = wp.zeros(2, dtype=float, device=device)
    old = wp.config.verify_fp
    wp.config.verify_fp = True
    try:
        with pytest.raises(wp.LaunchError, match="argument 'y' holds NaN or inf"):
            wp.launch(reciprocal, dim=2, inputs=[x, y], device=device)
        wp.launch(reciprocal, dim=1, inputs=[x, wp.zeros(2, dtype=float, device=device)], device=device)  # finite
    finally:
        wp.config.verify_fp = old


# ------------------------------------------------------------------------------------------------------------
# tile_reduce / tile_sum along an axis (tile_reduce(wp.add, t, axis=1) used to fail in type inference)


@wp.func
def soft_max2(a: wp.float64, b: wp.float64):
    return wp.log(wp.exp(a) + wp.exp(b))


@wp.kernel
def reduce_axis(x: wp.array2d(dtype=wp.float64), v: wp.array(dtype=wp.float64), rows: wp.array2d(dtype=wp.float64),
                cols: wp.array2d(dtype=wp.float64), whole: wp.array(dtype=wp.float64)):
    t = wp.tile_load(x, shape=(3, 4))
    wp.tile_store(rows[0], wp.tile_reduce(wp.add, t, axis=1))
    wp.tile_store(rows[1], wp.tile_reduce(wp.mul, t, axis=1))
    wp.tile_store(rows[2], wp.tile_sum(t, axis=1))
    wp.tile_store(rows[3], wp.tile_reduce(soft_max2, t, axis=1))
    wp.tile_store(cols[0], wp.tile_reduce(wp.max, t, axis=0))
    wp.tile_store(cols[1], wp.tile_sum(t, axis=0))
    wp.tile_store(cols[2], wp.tile_reduce(soft_max2, t, axis=0))
    tv = wp.tile_load(v, shape=5)
    wp.tile_store(whole, wp.tile_sum(tv, axis=0))
    wp.tile_store(whole, wp.tile_reduce(wp.mul, tv, axis=0), offset=1)


def _run_reduce_axis(x, v, device):
    rows = wp.zeros((4, 3), dtype=wp.float64, device=device)
    cols = wp.zeros((3, 4), dtype=wp.float64, device=device)
    whole = wp.zeros(2, dtype=wp.float64, device=device)
    wp.launch_tiled(reduce_axis, dim=1, inputs=[x, v, rows, cols, whole], block_dim=8, device=device)
    return rows, cols, whole


def test_reduce_along_an_axis(device):
    x, v = _rng().uniform(0.5, 1.5, (3, 4)), _rng(1).uniform(0.5, 1.5, 5)
    rows, cols, whole = _run_reduce_axis(wp.array(x, dtype=wp.float64, device=device), _scalars(v, device), device)
    soft = np.logaddexp.reduce
    np.testing.assert_allclose(rows.numpy(), [x.sum(1), x.prod(1), x.sum(1), soft(x, axis=1)], rtol=1e-12)
    np.testing.assert_allclose(cols.numpy(), [x.max(0), x.sum(0), soft(x, axis=0)], rtol=1e-12)
    np.testing.assert_allclose(whole.numpy(), [v.sum(), v.prod()], rtol=1e-12)


def test_reduce_along_an_axis_gradient(device):
    x = wp.array(_rng().uniform(0.5, 1.5, (3, 4)), dtype=wp.float64, device=device)
    v = _scalars(_rng(1).uniform(0.5, 1.5, 5), device)
    gradcheck(lambda x, v: _run_reduce_axis(x, v, device), [x, v])


@wp.kernel(module="unique")
def reduce_bad_axis(x: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    wp.tile_store(out, wp.tile_sum(wp.tile_load(x, shape=(2, 2)), axis=2))


def test_reduce_axis_out_of_bounds_is_a_value_error(device):
    x = wp.zeros((2, 2), dtype=float, device=device)
    with pytest.raises(ValueError, match=r"tile_sum\(\) axis 2 is out of bounds for tile with 2 dimensions"):
        wp.launch_tiled(reduce_bad_axis, dim=1, inputs=[x, wp.zeros(2, dtype=float, device=device)], block_dim=8,
                        device=device)


# ------------------------------------------------------------------------------------------------------------
# tile_reshape, tile_extract, array.transpose


@wp.kernel
def reshape_extract(x: wp.array2d(dtype=wp.float64), col: wp.array2d(dtype=wp.float64),
                    picked: wp.array(dtype=wp.float64)):
    t = wp.tile_load(x, shape=(3, 4))
    flat = wp.tile_reshape(t, shape=(12, 1))
    wp.tile_store(col, wp.tile_reshape(flat * 2.0, shape=(-1, 1)))
    r = wp.tile_reshape(t, shape=(2, 6))
    picked[0] = wp.tile_extract(r, 1, 2) * wp.tile_extract(t, 0, 3)
    picked[1] = wp.tile_extract(wp.tile_reshape(t, shape=12), 7)


def _run_reshape_extract(x, device):
    col = wp.zeros((12, 1), dtype=wp.float64, device=device)
    picked = wp.zeros(2, dtype=wp.float64, device=device)
    wp.launch_tiled(reshape_extract, dim=1, inputs=[x, col, picked], block_dim=8, device=device)
    return col, picked


def test_reshape_and_extract(device):
    x = _rng().uniform(-1, 1, (3, 4))
    col, picked = _run_reshape_extract(wp.array(x, dtype=wp.float64, device=device), device)
    np.testing.assert_allclose(col.numpy(), 2.0 * x.reshape(12, 1), rtol=1e-12)
    np.testing.assert_allclose(picked.numpy(), [x.reshape(2, 6)[1, 2] * x[0, 3], x.reshape(-1)[7]], rtol=1e-12)


def test_reshape_and_extract_gradient(device):
    x = wp.array(_rng().uniform(-1, 1, (3, 4)), dtype=wp.float64, device=device)
    gradcheck(lambda x: _run_reshape_extract(x, device), [x])


def test_array_transpose_is_a_view():
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = a.transpose()
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3).T)
    a.fill_(1.0)
    np.testing.assert_array_equal(t.numpy(), np.ones((3, 2)))
    with pytest.raises(ValueError, match="not a permutation"):
        a.transpose((0, 0))


# ------------------------------------------------------------------------------------------------------------
# tile_randi / tile_randf: the lane's generator, seeded with rand_pcg(rng) (rand_init(rng)), fills the tile in order


@wp.kernel
def random_tiles(seed: int, ints: wp.array2d(dtype=int), floats: wp.array2d(dtype=float),
                 ref_ints: wp.array2d(dtype=int), ref_floats: wp.array2d(dtype=float)):
    rng = wp.rand_init(seed, 3)
    wp.tile_store(ints[0], wp.tile_randi(shape=4, rng=rng))
    wp.tile_store(ints[1], wp.tile_randi(shape=4, rng=rng, min=-5, max=5))
    wp.tile_store(floats[0], wp.tile_randf(shape=4, rng=rng))
    wp.tile_store(floats[1], wp.tile_randf(shape=4, rng=rng, min=-2.0, max=3.0))
    s0 = wp.rand_init(wp.int32(rng))
    s1 = wp.rand_init(wp.int32(rng))
    s2 = wp.rand_init(wp.int32(rng))
    s3 = wp.rand_init(wp.int32(rng))
    for k in range(4):
        ref_ints[0, k] = wp.randi(s0)
        ref_ints[1, k] = wp.randi(s1, -5, 5)
        ref_floats[0, k] = wp.randf(s2)
        ref_floats[1, k] = wp.randf(s3, -2.0, 3.0)


@pytest.mark.cuda_gap("cooperative tiles: on CUDA a block runs as one lane, so lane-dependent kernels are refused")
def test_random_tiles_follow_the_lane_generator(device):
    arrays = [wp.zeros((2, 4), dtype=t, device=device) for t in (int, float, int, float)]
    wp.launch_tiled(random_tiles, dim=1, inputs=[42, *arrays], block_dim=8, device=device)
    ints, floats, ref_ints, ref_floats = (a.numpy() for a in arrays)
    np.testing.assert_array_equal(ints, ref_ints)
    np.testing.assert_array_equal(floats, ref_floats)
    assert len(set(ints[0])) == 4 and np.all((ints[1] >= -5) & (ints[1] < 5))
    assert np.all((floats[1] >= -2.0) & (floats[1] < 3.0))
