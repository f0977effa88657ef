"""Shared by the control-flow test modules: inputs, a launch that returns the output, and a gradcheck of a
kernel(x, *extra, y) over len(x) threads."""

import numpy as np

import kernels as wp
from autodiff import gradcheck

N = 16
SCALE = 2.5
LOOP_COUNT = 4


def _inputs(seed=0, n=N, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, n)


def _run(kernel, x_np, device, *extra, dtype=wp.float64):
    """Launch `kernel(x, *extra, y)` over len(x) threads and return y as numpy."""
    x = wp.array(x_np, dtype=dtype, device=device)
    y = wp.zeros(len(x_np), dtype=dtype, device=device)
    wp.launch(kernel, dim=len(x_np), inputs=[x, *extra], outputs=[y], device=device)
    return y.numpy()


def _gradcheck(kernel, x_np, device, *extra):
    x = wp.array(x_np, dtype=wp.float64, device=device)

    def fn(x):
        y = wp.zeros(x.shape, dtype=wp.float64, device=device)
        wp.launch(kernel, dim=x.shape[0], inputs=[x, *extra], outputs=[y], device=device)
        return y

    gradcheck(fn, [x])
