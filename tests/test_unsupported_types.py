"""Types Warp has that kernels does not support yet (bfloat16) exist by name, so code mentioning them loads, and
every use raises a TypeError naming the type, never a silently different value."""

import pytest

import kernels as wp


def test_bfloat16_values_and_arrays_are_refused():
    with pytest.raises(TypeError, match="bfloat16 is not supported"):
        wp.bfloat16(1.0)
    with pytest.raises(TypeError, match="bfloat16 is not supported"):
        wp.zeros(3, dtype=wp.bfloat16)
    with pytest.raises(TypeError, match="bfloat16 is not supported"):
        wp.array([1.0, 2.0], dtype=wp.bfloat16)


def test_bfloat16_in_kernels_is_refused():
    with pytest.raises(Exception, match="bfloat16 is not supported"):
        @wp.kernel(module="unique")
        def takes_bf16(a: wp.array(dtype=wp.bfloat16)):
            pass

    @wp.kernel(module="unique")
    def makes_bf16(a: wp.array(dtype=float)):
        a[0] = float(wp.bfloat16(1.0))

    with pytest.raises(Exception, match="bfloat16 is not supported"):
        wp.launch(makes_bf16, 1, inputs=[wp.zeros(1, dtype=float)])
