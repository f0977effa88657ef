"""wp.tile_full of a struct value (Warp 1.19): every element a copy of the struct; the same arrays as real Warp's,
the gradient to the struct's fields by central differences (Warp propagates none to tile_full's value: see
docs/warp_compat.md), and Warp's refusal of a value of another type."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.struct
class _Pair:
    x: wp.float64
    y: wp.vec3d


@wp.func
def _weighted(s: _Pair) -> wp.float64:
    return s.x * wp.float64(2.0) + s.y[1] * s.y[2]


@wp.kernel
def _fill(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    s = _Pair()
    s.x = a[0] * a[1]
    s.y = wp.vec3d(a[1], a[2], a[0])
    t = wp.tile_full(5, value=s, dtype=_Pair)
    wp.tile_store(out, wp.tile_map(_weighted, t) * wp.tile_arange(5, dtype=wp.float64))


def test_gradient_reaches_the_fields():
    def run(a):
        out = wp.zeros(5, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_fill, [1], [a, out], block_dim=1)
        return out

    gradcheck(run, [wp.array([1.5, -2.0, 0.75], dtype=wp.float64)])


_PROGRAM = '''
import numpy as np


@wp.struct
class Item:
    x: wp.float32
    y: wp.vec3
    n: wp.int32


@wp.kernel
def fill(a: wp.array(dtype=float), out: wp.array(dtype=Item), shared: wp.array2d(dtype=Item)):
    s = Item()
    s.x = a[0]
    s.y = wp.vec3(a[1], 2.0, 3.0)
    s.n = 7
    wp.tile_store(out, wp.tile_full(6, value=s, dtype=Item, storage="register"))
    wp.tile_store(shared, wp.tile_full((2, 3), value=s, storage="shared"))


def run(wp, Tape):
    a = wp.array([1.25, -0.5], dtype=float)
    out = wp.zeros(6, dtype=Item)
    shared = wp.zeros((2, 3), dtype=Item)
    wp.launch_tiled(fill, dim=[1], inputs=[a, out, shared], block_dim=32)
    o, s = out.numpy(), shared.numpy()
    return {"x": o["x"], "y": o["y"], "n": o["n"], "sx": s["x"], "sy": s["y"], "sn": s["n"]}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_full_struct")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


@wp.kernel
def _mismatch(out: wp.array(dtype=_Pair)):
    wp.tile_store(out, wp.tile_full(5, value=wp.float64(1.0), dtype=_Pair))


def test_a_value_of_another_type_is_refused():
    with pytest.raises(TypeError, match="tile_full\\(\\) value must have dtype .* when filling Warp struct tile"):
        wp.launch_tiled(_mismatch, [1], [wp.zeros(5, dtype=_Pair)], block_dim=1)
