"""Where kernels' CPU launch and arrays end, refused with Warp's messages instead of a silently different number:
block_dim over 1024 on the CPU (cooperative CPU blocks themselves: test_cpu_blocks.py), array extents the native
int32 shape cannot hold, and a kernel annotation kernels cannot build (refused at launch, as Warp does: its module
still imports) (kernels/runtime/launch.py, array_layout.py, module.py)."""

import numpy as np
import pytest

import kernels as wp


@wp.kernel
def _stores(out: wp.array(dtype=wp.int32)):
    out[0] = 7


def test_block_dim_cap_on_cpu():
    out = wp.zeros(1, dtype=wp.int32)
    for launch in (lambda: wp.launch(_stores, 1, inputs=[out], block_dim=1025),
                   lambda: wp.launch_tiled(_stores, dim=[1], inputs=[out], block_dim=1025)):
        with pytest.raises(ValueError, match="block_dim must be at most 1024 on CPU, got 1025"):
            launch()
    wp.launch(_stores, 1, inputs=[out], block_dim=1024)


def test_array_extents_past_int32_are_refused_before_allocating():
    message = "Array shapes must not exceed the maximum representable value of a signed 32-bit integer"
    with pytest.raises(ValueError, match=message):
        wp.zeros(2**31, dtype=wp.int8)
    with pytest.raises(ValueError, match=message):  # a broadcast view: 1 byte of memory, 2**31 elements
        wp.array(np.broadcast_to(np.zeros(1, dtype=np.int8), (2**31,)), dtype=wp.int8)
    with pytest.raises(ValueError, match="Array shapes must be non-negative"):
        wp.empty((2, -1), dtype=float)
    assert wp.zeros((0, 2**31 - 1), dtype=wp.int8).shape == (0, 2**31 - 1)  # the largest extent, no memory


def test_kernel_with_an_unsupported_annotation_is_refused_at_launch_not_definition():
    # Warp checks annotations when it builds a kernel: a module defining one kernels cannot build still imports
    @wp.kernel
    def gathers(a: wp.Int, b: wp.array(dtype=float)):
        b[0] = 1.0

    with pytest.raises(wp.CompileError, match="parameter 'a': "):
        wp.launch(gathers, 1, inputs=[None, wp.zeros(1, dtype=float)])
    with pytest.raises(wp.CompileError, match="unsupported annotation"):  # every launch, not only the first
        wp.launch(gathers, 1, inputs=[None, wp.zeros(1, dtype=float)])
    wp.launch(_stores, 1, inputs=[wp.zeros(1, dtype=wp.int32)])  # its module's other kernels build and run


@wp.func
def _constrained(x: wp.Int) -> wp.Int:  # Warp's constrained generic: the name exists, kernels refuses it at build
    return x


@wp.func
def _constrained_vector(v: wp.types.vector(3, wp.Int)):
    return v[0]


def test_function_with_an_unsupported_annotation_is_refused_when_a_kernel_calls_it():
    @wp.kernel
    def calls(a: wp.array(dtype=wp.int32)):
        a[0] = _constrained(1)

    @wp.kernel
    def calls_vector(a: wp.array(dtype=wp.int32)):
        a[0] = _constrained_vector(wp.vec3i(1, 2, 3))

    with pytest.raises(wp.CompileError, match="parameter 'x': unsupported annotation ~Int"):
        wp.launch(calls, 1, inputs=[wp.zeros(1, dtype=wp.int32)])
    with pytest.raises(wp.CompileError, match="constrained generic ~Int is not supported"):
        wp.launch(calls_vector, 1, inputs=[wp.zeros(1, dtype=wp.int32)])


def test_thread_extents_past_int32_are_refused():
    @wp.kernel
    def reads_tid(out: wp.array2d(dtype=wp.int32)):
        i, j = wp.tid()
        out[i, j] = i + j

    out = wp.zeros((1, 1), dtype=wp.int32)
    with pytest.raises(ValueError, match="Warp cannot launch a kernel using wp.tid\\(\\) with extent 2147483649 in "
                                         "dimension 1"):
        wp.launch(reads_tid, dim=(1, 2**31 + 1), inputs=[out], record_cmd=True)
    wp.launch(reads_tid, dim=(1, 1), inputs=[out])
    assert out.numpy()[0, 0] == 0
