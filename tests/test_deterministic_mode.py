"""wp.DeterministicMode (kernels/config.py, Kernel.parallel_threshold): a deterministic kernel runs serially on the
CPU, so its float atomic adds sum in thread order: bit for bit the sequential float32 sum (Warp's CPU order), on
every run; wp.config.deterministic and the module option take DeterministicMode values only."""

import numpy as np
import pytest

import kernels as wp

N, BINS = 200_000, 7  # above the parallel threshold: a plain launch would run on the thread pool


@wp.kernel(module="unique", module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN})
def scatter_deterministic(data: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, i % BINS, data[i])


def _sequential(data):
    out = np.zeros(BINS, dtype=np.float32)
    for b in range(BINS):
        acc = np.float32(0.0)
        for v in data[b::BINS]:
            acc = np.float32(acc + v)
        out[b] = acc
    return out


@wp.kernel(module="unique")
def scatter_plain(data: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, i % BINS, data[i])


def test_sums_in_thread_order():
    # the mechanism: a deterministic kernel never reaches the thread pool (a pool's order depends on timing, so
    # comparing results alone could pass by luck on a machine that happens to run the pool in order)
    scatter_deterministic.ensure_built()
    scatter_plain.ensure_built()
    assert scatter_deterministic.parallel_threshold(1) >= 2**62 > scatter_plain.parallel_threshold(1)
    data = np.random.default_rng(1).random(N, dtype=np.float32)
    expect = _sequential(data)
    for _ in range(2):
        out = wp.zeros(BINS, dtype=float, device="cpu")
        wp.launch(scatter_deterministic, dim=N, inputs=[wp.array(data, device="cpu"), out], device="cpu")
        np.testing.assert_array_equal(out.numpy(), expect)


def test_only_deterministic_mode_values_are_accepted():
    old = wp.config.deterministic
    try:
        wp.config.deterministic = wp.DeterministicMode.GPU_TO_GPU
        for bad in (True, "run_to_run", 1):
            with pytest.raises(ValueError, match="DeterministicMode"):
                wp.config.deterministic = bad
        with pytest.raises(ValueError, match="DeterministicMode"):
            wp.set_module_options({"deterministic": True})
    finally:
        wp.config.deterministic = old
    assert wp.get_module_options()["deterministic"] == wp.DeterministicMode.NOT_GUARANTEED
