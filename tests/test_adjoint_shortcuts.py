"""The backward pass's shortcuts must not change a gradient: a pure function's adjoint skipped when its result
adjoints are zero, a function with side effects never skipped, and reads a[tid] accumulated without atomics
in a multithreaded backward."""

from __future__ import annotations

import numpy as np

import kernels as wp
from autodiff import Tape, gradcheck


@wp.func
def square(x: float):
    return x * x


@wp.func
def store_and_pass(a: wp.array(dtype=float), i: int, x: float):
    a[i] = 3.0 * x
    return x


@wp.kernel
def square_where_positive(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = square(x[i])  # its adjoint is zero (skipped) where the branch below does not use it
    if x[i] > 0.0:
        out[i] = s
    else:
        out[i] = 2.0 * x[i]


@wp.kernel
def result_unused(x: wp.array(dtype=float), a: wp.array(dtype=float)):
    i = wp.tid()
    y = store_and_pass(a, i, x[i])  # noqa: F841  the result is unused, the store's gradient is not


@wp.kernel
def scaled_by_own_element(x: wp.array(dtype=float), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.sin(x[i]) * w[i] + x[i] * x[i]


def test_skipped_pure_adjoint_keeps_the_gradient():
    x = wp.array(np.array([-1.5, -0.5, 0.25, 1.0, 2.0], np.float32), requires_grad=True)

    def fn(x):
        out = wp.zeros(x.shape[0], dtype=float, requires_grad=True)
        wp.launch(square_where_positive, dim=x.shape[0], inputs=[x], outputs=[out])
        return out

    gradcheck(fn, [x])


def test_function_with_a_store_is_never_skipped():
    x = wp.array(np.linspace(-1, 1, 6).astype(np.float32), requires_grad=True)

    def fn(x):
        a = wp.zeros(x.shape[0], dtype=float, requires_grad=True)
        wp.launch(result_unused, dim=x.shape[0], inputs=[x], outputs=[a])
        return a

    gradcheck(fn, [x])


def test_own_element_reads_in_a_multithreaded_backward():
    n = 50000  # above the parallel threshold: the backward runs on every core
    rng = np.random.default_rng(0)
    x = wp.array(rng.standard_normal(n).astype(np.float32), requires_grad=True)
    w = wp.array(rng.standard_normal(n).astype(np.float32), requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    from autodiff import Tape
    tape = Tape()
    with tape:
        wp.launch(scaled_by_own_element, dim=n, inputs=[x, w], outputs=[out])
    tape.backward(grads={out: np.ones(n, np.float32)})
    xs, ws = x.numpy().astype(np.float64), w.numpy().astype(np.float64)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * ws + 2 * xs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), np.sin(xs), rtol=1e-4, atol=1e-5)
    small = [wp.array(x.numpy()[:8], requires_grad=True), wp.array(w.numpy()[:8], requires_grad=True)]

    def fn(x, w):
        o = wp.zeros(8, dtype=float, requires_grad=True)
        wp.launch(scaled_by_own_element, dim=8, inputs=[x, w], outputs=[o])
        return o

    gradcheck(fn, small)


def test_generated_backward_uses_the_shortcuts():
    wp.load_module(__name__)
    text = square_where_positive.source_text
    assert "if (!wp::is_zero(" in text, "the pure function's adjoint is guarded"
    backward = result_unused.source_text.split("result_unused_backward_thread")[1]
    calls = [line.strip() for line in backward.splitlines() if "store_and_pass(" in line and "adj_" in line]
    assert calls and not any(c.startswith("if (") for c in calls), "a function with a store always runs its adjoint"
    backward = scaled_by_own_element.source_text.split("scaled_by_own_element_backward_thread")[1]
    assert backward.count("adj_index_load<false>") >= 2, "x[i] and w[i] need no atomics"


@wp.kernel
def _untaken_branch(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.where(x[i] > 10.0, x[i], 1.0)


def test_zero_gradients_are_positive_zero(device):
    # adjoint accumulators start at -0.0 (so the compiler can drop the first addition); what reaches a gradient
    # array must still be +0.0, as an untouched gradient is
    x = wp.array([1.0, 2.0], dtype=float, device=device, requires_grad=True)
    y = wp.zeros(2, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(_untaken_branch, 2, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.ones(2, device=device)})
    g = x.grad.numpy()
    assert g.tolist() == [0.0, 0.0] and not np.signbit(g).any()
