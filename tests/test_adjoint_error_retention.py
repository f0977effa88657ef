"""A kernel whose adjoint is refused (an array read and overwritten) keeps the refusal for a later backward pass,
but not the traceback of the launch that built it: its frames would keep the caller's arrays alive."""

import gc
import weakref

import numpy as np

import kernels as wp


def test_the_refusal_kept_for_backward_does_not_keep_the_callers_arrays(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))  # a cold build: the adjoint pass runs

    @wp.kernel(module="unique")
    def clamp_in_place(p: wp.array(dtype=float), upper: float):
        i = wp.tid()
        p[i] = wp.min(p[i], upper)

    def step():
        values = wp.array([1.0, 3.0], dtype=float)
        wp.launch(clamp_in_place, 2, inputs=[values, 2.0])
        np.testing.assert_array_equal(values.numpy(), [1.0, 2.0])
        return weakref.ref(values)

    ref = step()
    gc.collect()
    assert ref() is None
    assert clamp_in_place.adjoint_error is not None  # still refused for a backward pass
