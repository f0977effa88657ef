"""Perlin noise builtins (noise, pnoise, curlnoise; kernels/native/noise.h) and the random draws Warp programs
seed with: Warp's values to the bit (real warp-lang runs the same program), gradients by central differences
(autodiff.gradcheck), and the fields' own properties (zero at lattice points, periods, divergence-free curl).
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

import _warp_reference

# ------------------------------------------------------------------------------------------------------------
# Kernels (module level: one native library for the file; the CUDA path is compiled to PTX by test_ptx.py)


@wp.kernel
def noise_all(points: wp.array(dtype=wp.vec4), seed: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(seed)
    p = points[i]
    y = wp.noise(s, p[0]) + 0.3 * wp.noise(s, wp.vec2(p[0], p[1])) + 0.7 * wp.noise(s, wp.vec3(p[0], p[1], p[2]))
    y += 1.3 * wp.noise(s, p) + wp.pnoise(s, p[0], 3) - wp.pnoise(s, wp.vec2(p[0], p[1]), 3, 5)
    y += wp.pnoise(s, wp.vec3(p[0], p[1], p[2]), 2, 3, 4) + 0.5 * wp.pnoise(s, p, 2, 3, 4, 5)
    out[i] = y


@wp.kernel
def curl_all(points: wp.array(dtype=wp.vec4), seed: int, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(seed)
    p = points[i]
    c2 = wp.curlnoise(s, wp.vec2(p[0], p[1]))
    out[3 * i] = wp.vec3(c2[0], c2[1], 0.0)
    out[3 * i + 1] = wp.curlnoise(s, wp.vec3(p[0], p[1], p[2]), wp.uint32(3), 2.0, 0.5)
    out[3 * i + 2] = wp.curlnoise(s, p, 2, 1.7, 0.6)


@wp.kernel
def noise_grid(seed: int, out: wp.array2d(dtype=float)):
    # lattice points (integers) and pnoise shifted by whole periods
    i, j = wp.tid()
    s = wp.rand_init(seed)
    x = float(i) - 3.0
    y = float(j) - 2.0
    out[i, j] = wp.noise(s, wp.vec2(x, y)) + wp.noise(s, wp.vec3(x, y, 1.0)) + wp.noise(s, x)


@wp.kernel
def periodic_pair(points: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(5)
    p = points[i]
    out[i, 0] = wp.pnoise(s, p, 2, 3, 4)
    out[i, 1] = wp.pnoise(s, p + wp.vec3(2.0, 6.0, 4.0), 2, 3, 4)
    out[i, 2] = wp.pnoise(s, wp.vec2(p[0], p[1]), 3, 5)
    out[i, 3] = wp.pnoise(s, wp.vec2(p[0] + 3.0, p[1] + 10.0), 3, 5)


def _points(n, seed=0, scale=6.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-scale, scale, size=(n, 4)).astype(np.float32)


# ------------------------------------------------------------------------------------------------------------
# Warp's values


_PROGRAM = '''
import numpy as np


@wp.kernel
def fields(points: wp.array(dtype=wp.vec4), out: wp.array2d(dtype=float), v: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(42)
    p = points[i]
    out[i, 0] = wp.noise(s, p[0])
    out[i, 1] = wp.noise(s, wp.vec2(p[0], p[1]))
    out[i, 2] = wp.noise(s, wp.vec3(p[0], p[1], p[2]))
    out[i, 3] = wp.noise(s, p)
    out[i, 4] = wp.pnoise(s, p[0], 3)
    out[i, 5] = wp.pnoise(s, wp.vec2(p[0], p[1]), 3, 5)
    out[i, 6] = wp.pnoise(s, wp.vec3(p[0], p[1], p[2]), 2, 3, 4)
    out[i, 7] = wp.pnoise(s, p, 2, 3, 4, 5)
    c2 = wp.curlnoise(s, wp.vec2(p[0], p[1]))
    v[i, 0] = wp.vec3(c2[0], c2[1], 0.0)
    v[i, 1] = wp.curlnoise(s, wp.vec3(p[0], p[1], p[2]), wp.uint32(3), 2.0, 0.5)
    v[i, 2] = wp.curlnoise(s, p, wp.uint32(2), 1.7, 0.6)


@wp.kernel
def draws(seed: int, out: wp.array2d(dtype=float), v: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    r = wp.rand_init(seed, i)
    out[i, 0] = wp.randn(r)
    out[i, 1] = wp.randf(r, -2.0, 3.0)
    t = wp.sample_triangle(r)
    out[i, 2] = t[0]
    out[i, 3] = t[1]
    ring = wp.sample_unit_ring(r)
    disk = wp.sample_unit_disk(r)
    square = wp.sample_unit_square(r)
    v[i, 0] = wp.vec3(ring[0], ring[1], disk[0])
    v[i, 1] = wp.vec3(disk[1], square[0], square[1])
    v[i, 2] = wp.sample_unit_sphere_surface(r)
    v[i, 3] = wp.sample_unit_sphere(r)
    v[i, 4] = wp.sample_unit_hemisphere_surface(r)
    v[i, 5] = wp.sample_unit_hemisphere(r)
    v[i, 6] = wp.sample_unit_cube(r)
    out[i, 4] = float(wp.poisson(r, 3.5))
    out[i, 5] = float(wp.poisson(r, 30.0))
    out[i, 6] = float(wp.poisson(r, 0.0))
    out[i, 7] = float(wp.poisson(r, 250.0))
    out[i, 8] = wp.randf(r)


@wp.kernel
def total(points: wp.array(dtype=wp.vec4), out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.rand_init(42)
    p = points[i]
    y = wp.noise(s, p[0]) + 0.7 * wp.noise(s, wp.vec3(p[0], p[1], p[2])) + 1.3 * wp.noise(s, p)
    y += wp.pnoise(s, wp.vec2(p[0], p[1]), 3, 5)
    c2 = wp.curlnoise(s, wp.vec2(p[0], p[1]))
    c3 = wp.curlnoise(s, wp.vec3(p[0], p[1], p[2]), wp.uint32(3), 2.0, 0.5)
    c4 = wp.curlnoise(s, p, wp.uint32(2), 1.7, 0.6)
    y += wp.dot(c2, wp.vec2(0.3, -0.8)) + wp.dot(c3, wp.vec3(0.2, 0.5, -0.4)) + wp.dot(c4, wp.vec3(-0.6, 0.1, 0.9))
    out[i] = y


def run(wp, Tape):
    rng = np.random.default_rng(0)
    xs = rng.uniform(-6, 6, size=(400, 4)).astype(np.float32)
    xs[:8] = np.array([0, 0.5, 1, -1, 2.25, -0.75, 3, 7], dtype=np.float32)[:, None]
    points = wp.array(xs, dtype=wp.vec4, requires_grad=True)
    out = wp.zeros((400, 8), dtype=float)
    v = wp.zeros((400, 3), dtype=wp.vec3)
    wp.launch(fields, dim=400, inputs=[points, out, v])
    d = wp.zeros((2000, 9), dtype=float)
    dv = wp.zeros((2000, 7), dtype=wp.vec3)
    wp.launch(draws, dim=2000, inputs=[123, d, dv])
    y = wp.zeros(400, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(total, dim=400, inputs=[points, y])
    tape.backward(grads={y: wp.array(np.ones(400, dtype=np.float32), dtype=float)})
    return {"noise": out.numpy(), "curl": v.numpy(), "draws": d.numpy(), "draw_vectors": dv.numpy(),
            "total": y.numpy(), "total_grad": points.grad.numpy()}
'''


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    return _warp_reference.both(_PROGRAM, str(tmp_path_factory.mktemp("noise_reference")), "noise")


@pytest.mark.parametrize("name", ["noise", "curl", "draws", "draw_vectors", "total"])
def test_values_are_warps_to_the_bit(reference, name):
    warp, ours = reference
    np.testing.assert_array_equal(ours[name], warp[name])


def test_gradients_agree_with_warps(reference):
    # the same analytic derivatives; only the adjoint's order of accumulation may differ
    warp, ours = reference
    np.testing.assert_allclose(ours["total_grad"], warp["total_grad"], rtol=0, atol=1e-5)


# ------------------------------------------------------------------------------------------------------------
# Gradients and properties


def test_noise_gradients_match_central_differences(device):
    points = wp.array(_points(24), dtype=wp.vec4, device=device)

    def fn(p):
        out = wp.zeros(p.shape[0], dtype=float, device=device)
        wp.launch(noise_all, dim=p.shape[0], inputs=[p, 7, out], device=device)
        return out

    gradcheck(fn, [points])


def test_curlnoise_gradients_match_central_differences(device):
    points = wp.array(_points(16, seed=1, scale=3.0), dtype=wp.vec4, device=device)

    def fn(p):
        out = wp.zeros(3 * p.shape[0], dtype=wp.vec3, device=device)
        wp.launch(curl_all, dim=p.shape[0], inputs=[p, 11, out], device=device)
        return out

    gradcheck(fn, [points])


def test_noise_is_zero_at_lattice_points(device):
    out = wp.zeros((7, 5), dtype=float, device=device)
    wp.launch(noise_grid, dim=(7, 5), inputs=[3, out], device=device)
    np.testing.assert_array_equal(out.numpy(), 0.0)


def test_pnoise_repeats_with_its_periods(device):
    # non-negative coordinates: Warp wraps lattice indices with C's %, so a negative cell is not wrapped (and
    # neither is ours, to give Warp's values)
    pts = np.abs(_points(64, seed=2, scale=2.0)[:, :3])
    out = wp.zeros((64, 4), dtype=float, device=device)
    wp.launch(periodic_pair, dim=64, inputs=[wp.array(pts, dtype=wp.vec3, device=device), out], device=device)
    got = out.numpy()
    # shifted by whole periods, only the fractional part's rounding differs
    np.testing.assert_allclose(got[:, 0], got[:, 1], atol=2e-6)
    np.testing.assert_allclose(got[:, 2], got[:, 3], atol=2e-6)
    assert np.abs(got[:, 0]).max() > 0.05


def test_curlnoise_is_divergence_free(device):
    # central differences over float32 samples, with the steps the float32 coordinates really took
    h = 2e-3
    base = _points(32, seed=3, scale=3.0)
    offsets = np.concatenate([np.zeros((1, 4))] + [s * h * np.eye(4)[k:k + 1] for k in range(3) for s in (1, -1)])
    pts = (base[:, None, :] + offsets[None, :, :].astype(np.float32)).astype(np.float32)
    out = wp.zeros(3 * pts.shape[0] * pts.shape[1], dtype=wp.vec3, device=device)
    flat = wp.array(pts.reshape(-1, 4), dtype=wp.vec4, device=device)
    wp.launch(curl_all, dim=flat.shape[0], inputs=[flat, 11, out], device=device)
    field = out.numpy().astype(np.float64).reshape(len(base), len(offsets), 3, 3)  # point, offset, kind, axis
    step = pts.astype(np.float64) - base[:, None, :].astype(np.float64)
    for kind, axes in ((0, 2), (1, 3)):  # the 2-d curl (x, y) and the 3-d curl (x, y, z)
        div = sum((field[:, 1 + 2 * k, kind, k] - field[:, 2 + 2 * k, kind, k])
                  / (step[:, 1 + 2 * k, k] - step[:, 2 + 2 * k, k]) for k in range(axes))
        scale = np.abs(field[:, 0, kind]).max()
        assert np.abs(div).max() < 1e-2 * scale, (kind, np.abs(div).max(), scale)
