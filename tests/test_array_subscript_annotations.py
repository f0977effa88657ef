"""`wp.array[dtype]` annotations compare and hash by element type and dimensions (Warp's subscript annotations),
so equal ones are one dictionary key, and a kernel annotated either way is the same kernel type."""

from typing import Literal

import numpy as np

import kernels as wp


def test_equal_annotations_are_one_key():
    assert wp.array[float] == wp.array[wp.float32] and hash(wp.array[float]) == hash(wp.array[wp.float32])
    assert wp.array2d[float] == wp.array[float, Literal[2]] == wp.array[wp.float32, 2]
    assert len({wp.array[float], wp.array[wp.float32], wp.array[wp.vec3]}) == 2
    assert wp.array[float] != wp.array[float, Literal[2]]
    assert wp.array[float] != wp.indexedarray[float]
    assert wp.array[float] != wp.array[wp.float64]
    factory = wp.array(dtype=float)  # the factory form compares by identity, as in Warp
    assert factory != wp.array[float] and factory == factory


@wp.kernel
def _scale(a: wp.array[float], out: wp.array2d[wp.float32]):
    i = wp.tid()
    out[i, 0] = a[i] * 3.0


def test_subscript_annotated_kernels_run():
    out = wp.zeros((2, 1), dtype=float)
    wp.launch(_scale, 2, inputs=[wp.array([1.0, 2.0], dtype=float)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [[3.0], [6.0]])
