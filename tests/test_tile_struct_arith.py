"""Arithmetic on tiles of structs (Warp 1.19): `t + u`, `t - u`, `t += u`, `t -= u`, `t[i] += s`, `t[i] -= s` and
tile_sum (whole and along an axis) field by field; fields without an atomic add (bool, int8) keep the left operand's
value, as Warp's.

The same arrays as real Warp's for the same program; gradients through every form by central differences; the
other operators refused (unary ones with Warp's wording)."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.struct
class _Body:
    m: wp.float64
    v: wp.vec3d


@wp.func
def _score(b: _Body) -> wp.float64:
    return b.m * b.v[0] + b.v[1] * b.v[1] - b.v[2]


@wp.func
def _body(a: wp.array(dtype=wp.float64), i: int) -> _Body:
    b = _Body()
    b.m = a[i]
    b.v = wp.vec3d(a[i + 1], a[i] * a[i + 2], wp.float64(0.5))
    return b


@wp.kernel
def _arith(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), whole: wp.array(dtype=wp.float64)):
    t = wp.tile_zeros(shape=6, dtype=_Body)
    u = wp.tile_zeros(shape=6, dtype=_Body)
    for i in range(6):
        t[i] = _body(a, i)
        u[i] = _body(a, 6 - i)
    s = (t + u) - (u - t)
    s += u
    s -= t
    s[2] += _body(a, 5)
    s[3] -= _body(a, 4)
    rows = wp.tile_sum(wp.tile_reshape(s, shape=(2, 3)), axis=1)
    wp.tile_store(out, wp.tile_map(_score, rows))
    wp.tile_store(whole, wp.tile_map(_score, wp.tile_sum(s)))


def test_gradients_by_central_differences():
    def run(a):
        out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        whole = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_arith, [1], [a, out, whole], block_dim=1)
        return out, whole

    gradcheck(run, [wp.array(np.linspace(-1.0, 1.5, 9), dtype=wp.float64)])


_PROGRAM = '''
import numpy as np


@wp.struct
class Item:
    x: wp.float32
    y: wp.vec3
    flag: wp.bool
    small: wp.int8


@wp.struct
class Nested:
    item: Item
    w: wp.float32


@wp.kernel
def ops(a: wp.array(dtype=Item), b: wp.array(dtype=Item), n: wp.array(dtype=Nested), add: wp.array(dtype=Item),
        sub: wp.array(dtype=Item), neg: wp.array(dtype=Item), inplace: wp.array(dtype=Item),
        total: wp.array(dtype=Item), rows: wp.array(dtype=Item), nested: wp.array(dtype=Nested)):
    t = wp.tile_load(a, shape=8)
    u = wp.tile_load(b, shape=8)
    wp.tile_store(add, t + u)
    wp.tile_store(sub, t - u)
    wp.tile_store(neg, u - t)
    v = wp.tile_load(a, shape=8)
    v += u
    v -= t
    v += t
    v[1] += b[3]
    v[2] -= b[4]
    wp.tile_store(inplace, v)
    wp.tile_store(total, wp.tile_sum(t))
    wp.tile_store(rows, wp.tile_sum(wp.tile_reshape(u, shape=(2, 4)), axis=1))
    wp.tile_store(nested, wp.tile_sum(wp.tile_load(n, shape=8)))


def items(wp, rng, Item):
    out = []
    for i in range(8):
        s = Item()
        s.x = float(rng.standard_normal())
        s.y = wp.vec3(*rng.standard_normal(3).astype(np.float32))
        s.flag = bool(i % 2)
        s.small = wp.int8(i + 1)
        out.append(s)
    return out


def run(wp, Tape):
    rng = np.random.default_rng(4)
    a = wp.array(items(wp, rng, Item), dtype=Item)
    b = wp.array(items(wp, rng, Item), dtype=Item)
    nested = []
    for s in items(wp, rng, Item):
        x = Nested()
        x.item = s
        x.w = float(rng.standard_normal())
        nested.append(x)
    n = wp.array(nested, dtype=Nested)
    outs = [wp.zeros(k, dtype=Item) for k in (8, 8, 8, 8, 1, 2)]
    nested_out = wp.zeros(1, dtype=Nested)
    wp.launch_tiled(ops, dim=[1], inputs=[a, b, n, *outs, nested_out], block_dim=32)
    result = {}
    for name, o in zip(("add", "sub", "neg", "inplace", "total", "rows"), outs):
        for field in ("x", "y", "flag", "small"):
            result[f"{name}_{field}"] = o.numpy()[field]
    nest = nested_out.numpy()
    result["nested_w"] = nest["w"]
    result["nested_x"] = nest["item"]["x"]
    result["nested_y"] = nest["item"]["y"]
    return result
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_struct_arith")
    assert set(warp) == set(ours)
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


@wp.kernel
def _product(a: wp.array(dtype=_Body), out: wp.array(dtype=_Body)):
    t = wp.tile_load(a, shape=4)
    wp.tile_store(out, t * t)


@wp.kernel
def _negated(a: wp.array(dtype=_Body), out: wp.array(dtype=_Body)):
    wp.tile_store(out, -wp.tile_load(a, shape=4))


@pytest.mark.parametrize("kernel, words", [(_product, "struct tiles take \\+ and - of two tiles"),
                                           (_negated, "Tile unary operators do not support Warp struct tile elements")])
def test_other_operators_are_refused(kernel, words):
    with pytest.raises(TypeError, match=words):
        wp.launch_tiled(kernel, [1], [wp.zeros(4, dtype=_Body), wp.zeros(4, dtype=_Body)], block_dim=1)
