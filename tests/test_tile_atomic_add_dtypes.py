"""wp.tile_atomic_add and wp.tile_atomic_add_indexed refuse tiles whose scalar has no atomic add (bool, 8- and
16-bit integers), with Warp's wording ("tile_atomic_add() only supports ..."); 32-bit integers and floats add."""

import numpy as np
import pytest

import kernels as wp


def _adder(dtype, indexed):
    if indexed:
        @wp.kernel
        def k(src: wp.array(dtype=dtype), dst: wp.array(dtype=dtype)):
            wp.tile_atomic_add_indexed(dst, wp.tile_arange(0, 4, dtype=int), wp.tile_load(src, shape=4))
    else:
        @wp.kernel
        def k(src: wp.array(dtype=dtype), dst: wp.array(dtype=dtype)):
            wp.tile_atomic_add(dst, wp.tile_load(src, shape=4))
    return k


@pytest.mark.parametrize("indexed", [False, True])
@pytest.mark.parametrize("dtype", [wp.int8, wp.uint16, wp.bool])
def test_types_without_atomic_add_are_refused(dtype, indexed):
    src, dst = wp.zeros(4, dtype=dtype), wp.zeros(4, dtype=dtype)
    name = "tile_atomic_add_indexed" if indexed else "tile_atomic_add"
    with pytest.raises(RuntimeError, match=rf"{name}\(\) only supports tiles with \[u\]int32"):
        wp.launch_tiled(_adder(dtype, indexed), [1], [src, dst], block_dim=1)


@pytest.mark.parametrize("dtype", [wp.int32, wp.uint64, wp.float16, wp.float64])
def test_supported_types_add(dtype):
    src = wp.array(np.arange(4).astype(dtype._np_), dtype=dtype)
    dst = wp.array(np.full(4, 3).astype(dtype._np_), dtype=dtype)
    wp.launch_tiled(_adder(dtype, False), [2], [src, dst], block_dim=1)
    np.testing.assert_array_equal(dst.numpy(), (3 + 2 * np.arange(4)).astype(dtype._np_))
