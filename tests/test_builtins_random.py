"""Random-number and debug-print builtins (kernels/builtins/random.py): exact sequences against a Python model of the
PCG hash (which reproduces Warp 1.19's values), ranges, moments, per-thread streams, and printf/print output.

Every kernel is created at import time, so the whole file compiles into one native library.
"""

import ctypes

import numpy as np
import pytest

import kernels as wp

MASK = 0xFFFFFFFF


def pcg(v):
    state = (v * 747796405 + 2891336453) & MASK
    word = (((state >> ((state >> 28) + 4)) ^ state) * 277803737) & MASK
    return ((word >> 22) ^ word) & MASK


def py_rand_init(seed, offset=None):
    return pcg(seed & MASK) if offset is None else pcg((seed + pcg(offset & MASK)) & MASK)


def py_randf_sequence(state, n):
    out = []
    for _ in range(n):
        state = pcg(state)
        out.append((state >> 8) / 2.0**24)
    return out


# ------------------------------------------------------------------------------------------------------------
# Kernels


@wp.kernel
def sequence_kernel(seed: int, out: wp.array2d(dtype=float)):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    for j in range(out.shape[1]):
        out[tid, j] = wp.randf(state)


@wp.kernel
def two_draws_kernel(seed: int, out: wp.array2d(dtype=float)):
    tid = wp.tid()
    rng = wp.rand_init(seed, tid)
    a = wp.randf(rng)
    b = wp.randf(rng)
    out[tid, 0] = a
    out[tid, 1] = b


@wp.kernel
def ints_kernel(seed: int, ints: wp.array2d(dtype=int), uints: wp.array2d(dtype=wp.uint32)):
    tid = wp.tid()
    state = wp.rand_init(seed)
    ints[tid, 0] = wp.randi(state)
    ints[tid, 1] = wp.randi(state, -5, 10)
    uints[tid, 0] = wp.randu(state)
    uints[tid, 1] = wp.randu(state, wp.uint32(3), wp.uint32(9))
    uints[tid, 2] = state


@wp.kernel
def moments_kernel(seed: int, normal: wp.array(dtype=float), uniform: wp.array(dtype=float),
                   ranged: wp.array(dtype=float), ints: wp.array(dtype=int)):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    normal[tid] = wp.randn(state)
    uniform[tid] = wp.randf(state)
    ranged[tid] = wp.randf(state, -2.0, 3.0)
    ints[tid] = wp.randi(state, -3, 4)


@wp.kernel
def samples_kernel(seed: int, v2: wp.array2d(dtype=wp.vec2), v3: wp.array2d(dtype=wp.vec3)):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    v2[tid, 0] = wp.sample_unit_ring(state)
    v2[tid, 1] = wp.sample_unit_disk(state)
    v2[tid, 2] = wp.sample_unit_square(state)
    v2[tid, 3] = wp.sample_triangle(state)
    v3[tid, 0] = wp.sample_unit_sphere_surface(state)
    v3[tid, 1] = wp.sample_unit_sphere(state)
    v3[tid, 2] = wp.sample_unit_hemisphere_surface(state)
    v3[tid, 3] = wp.sample_unit_hemisphere(state)
    v3[tid, 4] = wp.sample_unit_cube(state)


@wp.kernel
def print_kernel(x: wp.array(dtype=float), q: wp.array(dtype=wp.quat)):
    wp.printf("printf %d %.3f %s\n", 7, x[0], "ok")
    print(x[0])
    print(q[0])


def _sequence(seed, threads, n, device):
    out = wp.zeros((threads, n), dtype=float, device=device)
    wp.launch(sequence_kernel, dim=threads, inputs=[seed, out], device=device)
    return out.numpy()


# ------------------------------------------------------------------------------------------------------------
# Exact values


def test_sequence_matches_pcg_model(device):
    """Draws in a dynamic loop: the state must be carried from one iteration to the next."""
    got = _sequence(1234, 8, 20, device)
    for tid in range(8):
        expect = py_randf_sequence(py_rand_init(1234, tid), 20)
        np.testing.assert_array_equal(got[tid], np.array(expect, dtype=np.float32))


def test_values_match_warp(device):
    """Values printed by Warp 1.19 for the same calls (Python scope): the streams are Warp-compatible."""
    got = _sequence(42, 2, 1, device)
    np.testing.assert_allclose(got[:, 0], [0.8659751415252686, 0.013862192630767822], rtol=0, atol=0)
    ints = wp.zeros((1, 2), dtype=int, device=device)
    uints = wp.zeros((1, 3), dtype=wp.uint32, device=device)
    wp.launch(ints_kernel, dim=1, inputs=[7, ints, uints], device=device)
    assert py_rand_init(7) == 2120684060
    assert ints.numpy()[0, 0] == -2136546659


def test_ints_match_model(device):
    ints = wp.zeros((4, 2), dtype=int, device=device)
    uints = wp.zeros((4, 3), dtype=wp.uint32, device=device)
    wp.launch(ints_kernel, dim=4, inputs=[99, ints, uints], device=device)
    s = py_rand_init(99)
    s1 = pcg(s)
    s2 = pcg(s1)
    s3 = pcg(s2)
    s4 = pcg(s3)
    expect_i = [s1 - (1 << 32) if s1 >= 1 << 31 else s1, -5 + s2 % 15]
    for row in range(4):  # every thread starts from the same state (rand_init without offset)
        np.testing.assert_array_equal(ints.numpy()[row], expect_i)
        np.testing.assert_array_equal(uints.numpy()[row], [s3, 3 + s4 % 6, s4])


def test_successive_draws_differ(device):
    out = wp.zeros((256, 2), dtype=float, device=device)
    wp.launch(two_draws_kernel, dim=256, inputs=[5, out], device=device)
    a = out.numpy()
    assert np.mean(a[:, 0] != a[:, 1]) > 0.99
    expect = [py_randf_sequence(py_rand_init(5, tid), 2) for tid in range(256)]
    np.testing.assert_array_equal(a, np.array(expect, dtype=np.float32))


def test_deterministic_per_seed(device):
    a = _sequence(3, 64, 8, device)
    np.testing.assert_array_equal(a, _sequence(3, 64, 8, device))
    assert np.mean(a != _sequence(4, 64, 8, device)) > 0.99


def test_threads_get_distinct_streams(device):
    out = wp.zeros((4096, 2), dtype=float, device=device)
    wp.launch(two_draws_kernel, dim=4096, inputs=[11, out], device=device)
    a = out.numpy().astype(np.float64)
    assert len(np.unique(a[:, 0])) > 4000
    # the streams of neighbouring threads are uncorrelated
    for k in range(2):
        assert abs(np.corrcoef(a[:-1, k], a[1:, k])[0, 1]) < 0.05


# ------------------------------------------------------------------------------------------------------------
# Distributions


def test_ranges_and_moments(device):
    n = 100_000
    normal, uniform, ranged = (wp.zeros(n, dtype=float, device=device) for _ in range(3))
    ints = wp.zeros(n, dtype=int, device=device)
    wp.launch(moments_kernel, dim=n, inputs=[2024, normal, uniform, ranged, ints], device=device)
    z, u, r, k = (a.numpy().astype(np.float64) for a in (normal, uniform, ranged, ints))
    assert np.all(np.isfinite(z))
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1.0) < 0.03
    assert abs(np.mean(z**3)) < 0.05 and abs(np.mean(z**4) - 3.0) < 0.1  # symmetric, Gaussian tails
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert r.min() >= -2.0 and r.max() < 3.0 and abs(r.mean() - 0.5) < 0.05
    assert k.min() == -3 and k.max() == 3
    np.testing.assert_allclose(np.bincount((k + 3).astype(int)) / n, np.full(7, 1 / 7), atol=0.01)


def test_sample_domains(device):
    n = 20_000
    v2 = wp.zeros((n, 4), dtype=wp.vec2, device=device)
    v3 = wp.zeros((n, 5), dtype=wp.vec3, device=device)
    wp.launch(samples_kernel, dim=n, inputs=[8, v2, v3], device=device)
    a2, a3 = v2.numpy().astype(np.float64), v3.numpy().astype(np.float64)
    ring, disk, square, tri = (a2[:, k] for k in range(4))
    surf, ball, hsurf, hball, cube = (a3[:, k] for k in range(5))
    np.testing.assert_allclose(np.linalg.norm(ring, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(surf, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(hsurf, axis=1), 1.0, atol=1e-5)
    assert np.all(np.linalg.norm(disk, axis=1) <= 1.0 + 1e-6) and np.all(np.linalg.norm(ball, axis=1) <= 1.0 + 1e-6)
    assert np.all(hsurf[:, 2] >= 0) and np.all(hball[:, 2] >= 0)
    assert np.all((square >= -0.5) & (square < 0.5)) and np.all((cube >= -0.5) & (cube < 0.5))
    assert np.all(tri >= 0) and np.all(tri.sum(axis=1) <= 1.0 + 1e-6)
    # uniformity: centred means; the radius of a uniform disk (ball) has mean 2/3 (3/4)
    for pts in (ring, disk, square, surf, ball, cube):
        assert np.all(np.abs(pts.mean(axis=0)) < 0.02)
    assert abs(np.linalg.norm(disk, axis=1).mean() - 2 / 3) < 0.01
    assert abs(np.linalg.norm(ball, axis=1).mean() - 3 / 4) < 0.01
    assert abs(hsurf[:, 2].mean() - 0.5) < 0.01
    np.testing.assert_allclose(tri.mean(axis=0), [1 / 3, 1 / 3], atol=0.01)


# ------------------------------------------------------------------------------------------------------------
# Printing


def test_printf_and_print(device, capfd):
    if device != "cpu":
        pytest.skip("device printf goes to the CUDA printf buffer; checked on the CPU")
    x = wp.array(np.array([1.25], dtype=np.float32), device=device)
    q = wp.array(np.array([[0.0, 0.5, 0.0, 1.0]], dtype=np.float32), dtype=wp.quat, device=device)
    wp.launch(print_kernel, dim=1, inputs=[x, q], device=device)
    ctypes.CDLL(None).fflush(None)  # C stdio buffers when stdout is not a terminal
    out = capfd.readouterr().out
    assert "printf 7 1.250 ok\n" in out
    assert "1.25\n" in out
    assert "[0, 0.5, 0, 1]\n" in out


# ------------------------------------------------------------------------------------------------------------
# Discrete distributions and sorted search


@wp.kernel
def poisson_kernel(seed: int, lam: float, out: wp.array(dtype=wp.uint32)):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    out[tid] = wp.poisson(state, lam)


@wp.kernel
def sample_cdf_kernel(seed: int, cdf: wp.array(dtype=float), out: wp.array(dtype=int)):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    out[tid] = wp.sample_cdf(state, cdf)


@wp.kernel
def lower_bound_kernel(arr: wp.array(dtype=float), values: wp.array(dtype=float), out: wp.array(dtype=int),
                       out_range: wp.array(dtype=int)):
    tid = wp.tid()
    out[tid] = wp.lower_bound(arr, values[tid])
    out_range[tid] = wp.lower_bound(arr, 1, 4, values[tid])


@pytest.mark.parametrize("lam", [0.5, 3.0, 9.5, 10.0, 12.0, 42.0, 250.0])
def test_poisson_moments_and_zeros(device, lam):
    n = 200_000
    out = wp.zeros(n, dtype=wp.uint32, device=device)
    wp.launch(poisson_kernel, dim=n, inputs=[7, lam, out], device=device)
    x = out.numpy().astype(np.float64)
    # mean and variance are both lam: 6 standard errors
    assert abs(x.mean() - lam) < 6.0 * np.sqrt(lam / n)
    assert abs(x.var() - lam) < 6.0 * lam * np.sqrt(2.0 / n) + 6.0 * np.sqrt(lam / n)
    zeros = np.count_nonzero(x == 0)
    expected = n * np.exp(-lam)
    assert zeros <= expected + 6.0 * np.sqrt(expected) + 1


def test_sample_cdf_follows_the_table(device):
    pdf = np.array([0.1, 0.0, 0.6, 0.3], dtype=np.float32)
    cdf = wp.array(np.cumsum(pdf), dtype=float, device=device)
    n = 100_000
    out = wp.zeros(n, dtype=int, device=device)
    wp.launch(sample_cdf_kernel, dim=n, inputs=[3, cdf, out], device=device)
    counts = np.bincount(out.numpy(), minlength=4) / n
    np.testing.assert_allclose(counts, pdf, atol=0.01)
    assert counts[1] == 0.0


def test_lower_bound(device):
    arr = wp.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], dtype=float, device=device)
    values = wp.array([-0.1, 0.0, 2.5, 4.0, 5.0, 5.5], dtype=float, device=device)
    out = wp.zeros(6, dtype=int, device=device)
    out_range = wp.zeros(6, dtype=int, device=device)
    wp.launch(lower_bound_kernel, dim=6, inputs=[arr, values, out, out_range], device=device)
    # as Warp: no element >= value gives the last index of the range searched
    np.testing.assert_array_equal(out.numpy(), [0, 0, 3, 4, 5, 5])
    np.testing.assert_array_equal(out_range.numpy(), [1, 1, 3, 3, 3, 3])
