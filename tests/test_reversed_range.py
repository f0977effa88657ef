"""`for i in reversed(range(...))` in kernels: the values of the range, last first, for any step sign; the
gradient through such a loop passes gradcheck."""

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck


@wp.kernel
def visit_reversed(x: wp.array(dtype=float), start: int, stop: int, step: int, order: wp.array(dtype=int),
                   y: wp.array(dtype=float)):
    c = int(0)
    acc = float(0.0)
    for i in reversed(range(start, stop, step)):
        order[c] = i
        c += 1
        acc = acc * 0.5 + x[i] * x[i]
    y[0] = acc


@wp.kernel
def visit_reversed_constant(order: wp.array(dtype=int)):
    c = int(0)
    for i in reversed(range(5)):
        order[c] = i
        c += 1


@pytest.mark.parametrize("bounds", [(0, 10, 3), (0, 5, 1), (0, 0, 2), (0, 7, -2), (7, 0, -2), (9, 2, -3)])
def test_reversed_range_visits_the_range_last_first(device, bounds):
    x = wp.array(np.arange(12, dtype=np.float32), dtype=float, device=device)
    order = wp.full(12, -1, dtype=int, device=device)
    y = wp.zeros(1, dtype=float, device=device)
    wp.launch(visit_reversed, 1, inputs=[x, *bounds, order, y], device=device)
    expected = list(reversed(range(*bounds)))
    assert order.numpy()[:len(expected)].tolist() == expected
    assert (order.numpy()[len(expected):] == -1).all()


def test_reversed_constant_range(device):
    order = wp.full(5, -1, dtype=int, device=device)
    wp.launch(visit_reversed_constant, 1, inputs=[order], device=device)
    assert order.numpy().tolist() == [4, 3, 2, 1, 0]


def test_gradient_through_a_reversed_loop(device):
    x = wp.array(np.linspace(-1.0, 1.0, 12).astype(np.float32), dtype=float, device=device, requires_grad=True)

    def f(x):
        y = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        order = wp.zeros(12, dtype=int, device=device)
        wp.launch(visit_reversed, 1, inputs=[x, 1, 11, 3, order, y], device=device)
        return y

    gradcheck(f, [x])


def test_reversed_kernel_compiles_to_ptx():
    pytest.importorskip("cuda.bindings.nvrtc")
    assert ".entry" in wp.compile_ptx(visit_reversed)
