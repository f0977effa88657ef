"""Launch bounds as Warp 1.19 defines them: a launch whose dims differ in number from the kernel's wp.tid()
coordinates is padded with 1 (fewer dims) or has its trailing extents folded into threads sharing a coordinate
tuple (more dims); wp.tid() extents are bounded by 2**31 along each coordinate. Compared with real warp-lang."""

import numpy as np
import pytest

import kernels as wp

import _warp_reference

_PROGRAM = """
import numpy as np


@wp.kernel
def visits_1d(counts: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(counts, i, 1)


@wp.kernel
def visits_2d(counts: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    wp.atomic_add(counts, i, j, 1)


@wp.kernel
def visits_3d(counts: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    wp.atomic_add(counts, i, j, k, 1)


@wp.kernel
def no_tid(counts: wp.array(dtype=wp.int32)):
    wp.atomic_add(counts, 0, 1)


KERNELS = {1: visits_1d, 2: visits_2d, 3: visits_3d}
CASES = [((128,), 2), ((64,), 3), ((8, 16), 1), ((4, 8, 3), 2), ((4, 8, 3, 2), 2), ((2, 3), 3), ((37, 29), 2),
         ((5, 7, 3), 3), ((7, 3, 2), 1), ((2, 3, 4, 5), 1)]  # the last one's counts (1-D) are reused below


def run(wp, Tape):
    out = {}
    for n, (dims, kernel_dim) in enumerate(CASES):
        kept = (dims + (1,) * kernel_dim)[:kernel_dim]
        counts = wp.zeros(kept, dtype=wp.int32)
        wp.launch(KERNELS[kernel_dim], dim=dims, inputs=[counts])
        out[f"counts_{n}"] = counts.numpy()
        cmd = wp.launch(KERNELS[kernel_dim], dim=dims, inputs=[counts], record_cmd=True)
        out[f"bounds_{n}"] = np.array([*cmd.bounds.shape, cmd.bounds.size, cmd.bounds.coord_mult])
    total = wp.zeros(1, dtype=wp.int32)
    wp.launch(no_tid, dim=(2, 3, 4), inputs=[total])
    out["no_tid"] = total.numpy()
    big = 2**31
    cmd = wp.launch(visits_1d, dim=(big, 2), inputs=[counts], record_cmd=True)  # the 2 is folded: no coordinate
    out["folded"] = np.array([*cmd.bounds.shape, cmd.bounds.size, cmd.bounds.coord_mult], dtype=np.int64)
    refused = []
    for kernel, dims in ((visits_1d, (big + 1,)), (visits_2d, (1, big + 1)), (visits_1d, (1, big + 1)),
                         (visits_2d, (0, big + 1)), (no_tid, (big + 1,))):
        try:
            wp.launch(kernel, dim=dims, inputs=[counts if kernel is not visits_2d else wp.zeros((1, 1), dtype=wp.int32)],
                      record_cmd=True)
            refused.append(0)
        except ValueError:
            refused.append(1)
    out["refused"] = np.array(refused)
    return out
"""


def test_padding_folding_and_extent_bounds_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "launch_bounds")
    assert set(ours) == set(warp)
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


@wp.kernel
def _index_2d(out: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    out[i, j] = i * 10 + j


def test_refused_set_dim_keeps_the_recorded_bounds_and_bad_dims_are_value_errors():
    out = wp.zeros((2, 2), dtype=wp.int32)
    cmd = wp.launch(_index_2d, dim=(2, 2), inputs=[out], record_cmd=True)
    kept = cmd.bounds
    with pytest.raises(ValueError, match=r"extent 2147483649 in dimension 1"):
        cmd.set_dim((1, 2**31 + 1))
    assert cmd.bounds is kept
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [[0, 1], [10, 11]])
    with pytest.raises(ValueError, match="non-negative"):
        cmd.set_dim((1, -1))
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        wp.launch(_index_2d, dim=(1, 1, 1, 1, 1), inputs=[out])
