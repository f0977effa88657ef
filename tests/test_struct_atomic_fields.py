"""Atomic adds of struct values (tile_atomic_add of a tile of structs; kernels/render_module.py): fields whose type
has no atomic add (bool, 8- and 16-bit integers) keep the destination's value, as in Warp; the others are summed."""

import numpy as np

import kernels as wp


@wp.struct
class Mixed:
    flag: wp.bool
    small: wp.int8
    count: wp.int32
    value: float


@wp.kernel
def accumulate(src: wp.array(dtype=Mixed), dst: wp.array(dtype=Mixed)):
    wp.tile_atomic_add(dst, wp.tile_load(src, shape=5))


def test_fields_without_atomic_add_are_not_accumulated(device):
    items = []
    for i in range(5):
        s = Mixed()
        s.flag, s.small, s.count, s.value = True, wp.int8(i + 1), i, float(i) * 0.5
        items.append(s)
    dst = wp.zeros(5, dtype=Mixed, device=device)
    src = wp.array(items, dtype=Mixed, device=device)
    for _ in range(2):
        wp.launch_tiled(accumulate, dim=[1], inputs=[src, dst], block_dim=8, device=device)
    out = dst.numpy()
    np.testing.assert_array_equal(out["flag"], np.zeros(5, dtype=bool))
    np.testing.assert_array_equal(out["small"], np.zeros(5, dtype=np.int8))
    np.testing.assert_array_equal(out["count"], 2 * np.arange(5))
    np.testing.assert_allclose(out["value"], np.arange(5) * 1.0)
