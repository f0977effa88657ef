"""Gradients of atomic_min/atomic_max: the element's gradient goes to the value that won (per component)."""

import numpy as np

import kernels as wp
from autodiff import gradcheck


@wp.kernel
def _extremes(x: wp.array(dtype=float), out_min: wp.array(dtype=float), out_max: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_min(out_min, 0, x[i] * 2.0)
    wp.atomic_max(out_max, 0, x[i] * 3.0)


@wp.kernel
def _extremes_vec(v: wp.array(dtype=wp.vec3), out_min: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.atomic_min(out_min, 0, v[i] * 1.5)


def test_atomic_min_max_gradient_goes_to_the_winner(device):
    x = wp.array(np.array([0.3, -0.5, 0.9, 0.1], np.float32), dtype=float, device=device, requires_grad=True)

    def f(x):
        lo = wp.full(1, 1e9, dtype=float, device=device, requires_grad=True)
        hi = wp.full(1, -1e9, dtype=float, device=device, requires_grad=True)
        wp.launch(_extremes, 4, inputs=[x, lo, hi], device=device)
        return [lo, hi]

    gradcheck(f, [x], eps=1e-3)


def test_atomic_min_of_vectors_is_per_component(device):
    v = wp.array(np.array([[0.3, 2.0, -1.0], [-0.5, 1.0, 4.0], [0.9, -3.0, 0.5]], np.float32), dtype=wp.vec3,
                 device=device, requires_grad=True)

    def f(v):
        lo = wp.full(1, wp.vec3(1e9, 1e9, 1e9), dtype=wp.vec3, device=device, requires_grad=True)
        wp.launch(_extremes_vec, 3, inputs=[v, lo], device=device)
        return lo

    gradcheck(f, [v], eps=1e-3)
