"""Gradient accumulation when many threads of one launch add into the same gradient element.

Backward passes add a load's adjoint into the gradient array: atomically when the launch runs in parallel, with
plain adds when it runs on one thread. Both paths must give the exact sums. The seeds and weights are small
integers, so every partial sum is exact in float32 and any lost or doubled update shows.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape

SLOTS = 5  # gradient elements shared by all threads; odd, so vec3 elements sit at every alignment
PASSES = 50  # backward passes, accumulating: each is another chance for a lost update to show


@wp.kernel
def gather(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22),
           out: wp.array(dtype=float)):
    i = wp.tid()
    k = i % x.shape[0]
    w = float(i % 7)
    a = m[k]
    out[i] = x[k] * w + wp.dot(v[k], wp.vec3(1.0, 2.0, 3.0)) + a[0, 0] + 2.0 * a[0, 1] + 3.0 * a[1, 0] + 4.0 * a[1, 1]


@wp.kernel
def scatter(acc: wp.array(dtype=wp.vec3), old: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    old[i] = wp.atomic_add(acc, i % acc.shape[0], wp.vec3(1.0, 2.0, 3.0))


def _gather_gradients(count, device, passes=PASSES):
    x = wp.zeros(SLOTS, dtype=float, requires_grad=True, device=device)
    v = wp.zeros(SLOTS, dtype=wp.vec3, requires_grad=True, device=device)
    m = wp.zeros(SLOTS, dtype=wp.mat22, requires_grad=True, device=device)
    out = wp.zeros(count, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(gather, dim=count, inputs=[x, v, m], outputs=[out], device=device)
    for _ in range(passes):
        tape.backward(grads={out: np.ones(count, np.float32)})
    return x.grad.numpy(), v.grad.numpy(), m.grad.numpy()


def _expected(count, passes=PASSES):
    i = np.arange(count)
    per_slot = passes * np.bincount(i % SLOTS, minlength=SLOTS).astype(np.float64)
    x = passes * np.bincount(i % SLOTS, weights=i % 7, minlength=SLOTS)
    v = per_slot[:, None] * np.array([1.0, 2.0, 3.0])
    m = per_slot[:, None, None] * np.array([[1.0, 2.0], [3.0, 4.0]])
    return x, v, m


# 200000 threads run in parallel (above config.cpu_parallel_threshold); 100 run on one thread
@pytest.mark.parametrize("count", [100, 200000])
def test_shared_gradient_elements_get_every_contribution(device, count):
    got = _gather_gradients(count, device)
    for g, e in zip(got, _expected(count)):
        np.testing.assert_array_equal(g, e.astype(np.float32))


def test_small_launch_forced_parallel_gets_every_contribution(device, monkeypatch):
    """Many threads racing for five elements: the most contention per element."""
    monkeypatch.setattr(wp.config, "cpu_parallel_threshold", 1)
    got = _gather_gradients(1000, device)
    for g, e in zip(got, _expected(1000)):
        np.testing.assert_array_equal(g, e.astype(np.float32))


@pytest.mark.parametrize("count", [100, 200000])
def test_vec3_atomic_add_returns_each_old_value_once(device, count):
    """Forward atomics on vec3 float32 (added in pairs of components on the CPU): the sums and the old values."""
    acc = wp.zeros(SLOTS, dtype=wp.vec3, device=device)
    old = wp.zeros(count, dtype=wp.vec3, device=device)
    wp.launch(scatter, dim=count, inputs=[acc, old], device=device)
    per_slot = np.bincount(np.arange(count) % SLOTS, minlength=SLOTS)
    np.testing.assert_array_equal(acc.numpy(), (per_slot[:, None] * np.array([1.0, 2.0, 3.0])).astype(np.float32))
    old = old.numpy()
    for slot in range(SLOTS):
        mine = old[np.arange(count) % SLOTS == slot]
        for c, scale in enumerate((1.0, 2.0, 3.0)):
            np.testing.assert_array_equal(np.sort(mine[:, c]), scale * np.arange(per_slot[slot], dtype=np.float32))


@wp.kernel
def strided_gather(src: wp.array(dtype=float), stride: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = src[(i * stride) % src.shape[0]] * 2.0


@wp.struct
class GatherInputs:
    values: wp.array(dtype=wp.vec3)
    weights: wp.array(dtype=float)


@wp.kernel
def struct_gather(inputs: GatherInputs, out: wp.array(dtype=float)):
    i = wp.tid()
    k = i % inputs.values.shape[0]
    out[i] = wp.dot(inputs.values[k], wp.vec3(1.0, 2.0, 3.0)) * inputs.weights[k]


def test_gradients_much_larger_than_the_launch_use_atomics_and_stay_exact(device):
    # 40000 threads (parallel) scatter gradients into a 1e6-element array: per-thread copies would not pay off
    n, size, stride = 40000, 1_000_000, 7
    src = wp.zeros(size, dtype=float, requires_grad=True, device=device)
    out = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(strided_gather, dim=n, inputs=[src, stride], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(n, np.float32)})
    expected = np.zeros(size)
    np.add.at(expected, (np.arange(n) * stride) % size, 2.0)
    np.testing.assert_array_equal(src.grad.numpy(), expected)


def test_arrays_inside_structs_get_every_contribution_in_parallel(device):
    n, slots = 200000, 3
    inputs = GatherInputs()
    inputs.values = wp.array(np.ones((slots, 3), np.float32), dtype=wp.vec3, requires_grad=True, device=device)
    inputs.weights = wp.array(np.full(slots, 0.5, np.float32), requires_grad=True, device=device)
    out = wp.zeros(n, dtype=float, requires_grad=True, device=device)
    tape = Tape()
    with tape:
        wp.launch(struct_gather, dim=n, inputs=[inputs], outputs=[out], device=device)
    tape.backward(grads={out: np.ones(n, np.float32)})
    per_slot = np.bincount(np.arange(n) % slots, minlength=slots).astype(np.float64)
    np.testing.assert_allclose(inputs.values.grad.numpy(), per_slot[:, None] * 0.5 * np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(inputs.weights.grad.numpy(), per_slot * 6.0)
