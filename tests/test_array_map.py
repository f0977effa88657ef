"""wp.map: builtins, @wp.func and lambdas over arrays with numpy broadcasting, several results, `out=`, Warp's
messages, the kernel cache, gradients through the generated launch (central finite differences), array operators
routed through it (vector arrays, `**`, `//`), and the numbers against real Warp."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck
from kernels.runtime.array_map import map_cache

import _warp_reference


@wp.func
def _two(a: float, b: float):
    return a * b + 1.0, wp.vec2(a, b)


def test_builtins_funcs_and_lambdas_broadcast_as_numpy():
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3, 1))
    b = wp.array(np.linspace(-1.0, 1.0, 4, dtype=np.float32))
    out = wp.map(wp.add, a, b)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.numpy(), a.numpy() + b.numpy())
    scale = 3.0
    np.testing.assert_allclose(wp.map(lambda x, y: x * scale - y, a, b).numpy(), a.numpy() * 3.0 - b.numpy())
    first, second = wp.map(_two, a, 2.0)
    np.testing.assert_array_equal(first.numpy(), a.numpy() * 2.0 + 1.0)
    assert second.dtype is wp.vec2 and second.shape == (2, 3, 1)
    np.testing.assert_array_equal(second.numpy()[..., 1], 2.0)
    target = wp.empty((2, 3, 4), dtype=float)
    assert wp.map(wp.clamp, out, -0.5, 0.5, out=target) is target
    np.testing.assert_array_equal(target.numpy(), np.clip(a.numpy() + b.numpy(), -0.5, 0.5))


def test_a_changed_closure_value_is_not_served_from_the_cache():
    a = wp.array([1.0, 2.0], dtype=float)
    results = [wp.map(lambda x: x + k, a).numpy() for k in (1.0, 10.0)]
    np.testing.assert_array_equal(results, [[2.0, 3.0], [11.0, 12.0]])


def test_kernels_are_cached_by_dtype_and_broadcast_pattern():
    map_cache.clear()
    a, b = wp.array([1.0, 2.0, 3.0], dtype=float), wp.array([4.0, 5.0], dtype=float)
    wp.map(wp.sin, a)
    wp.map(wp.sin, b)  # another size, same kernel
    assert len(map_cache) == 1
    wp.map(wp.sin, wp.array([1.0], dtype=wp.float64))
    wp.map(wp.sin, wp.array([1.0], dtype=float))  # a broadcast dimension: another kernel
    assert len(map_cache) == 3


@pytest.mark.parametrize("call, kind, words", [
    (lambda a: wp.map(_two, a), TypeError, r"Number of input arguments \(1\) does not match expected number of "
                                           r"function arguments \(2\)"),
    (lambda a: wp.map(wp.add, a, wp.zeros(4, dtype=float)), ValueError, r"Shapes \(3,\) and \(4,\) are not "
                                                                        "broadcastable"),
    (lambda a: wp.map(wp.add, 1.0, 2.0), ValueError, "map requires at least one warp.array input"),
    (lambda a: wp.map(wp.sin, a, out=wp.empty(3, dtype=int)), TypeError,
     "Output array dtype int32 does not match expected dtype float32"),
    (lambda a: wp.map(wp.length, a), TypeError, "Function length does not support the provided argument types "
                                                "float32"),
])
def test_what_map_refuses_it_says_in_warps_words(call, kind, words):
    with pytest.raises(kind, match=words):
        call(wp.zeros(3, dtype=float))


def test_gradients_flow_through_map():
    def fn(a, b):
        return wp.map(lambda x, y: wp.sin(x) * y + x * x, a, b)

    a = wp.array(np.linspace(-1.0, 1.0, 6, dtype=np.float64).reshape(2, 3), dtype=wp.float64)
    b = wp.array(np.linspace(0.5, 2.0, 3, dtype=np.float64), dtype=wp.float64)
    gradcheck(fn, [a, b])


def test_array_operators_through_map():
    a = wp.array(np.arange(1.0, 5.0, dtype=np.float32))
    b = wp.array(np.arange(2.0, 6.0, dtype=np.float32))
    np.testing.assert_allclose((a ** b).numpy(), a.numpy() ** b.numpy(), rtol=1e-6)
    np.testing.assert_array_equal((b // 2.0).numpy(), b.numpy() // 2.0)
    v = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=wp.vec3)
    np.testing.assert_array_equal((v + v).numpy(), 2.0 * v.numpy())
    np.testing.assert_array_equal((-v).numpy(), -v.numpy())
    np.testing.assert_array_equal((v * 2.0).numpy(), v.numpy() * 2.0)
    tape = Tape()
    x = wp.array([1.5, 2.0], dtype=float, requires_grad=True)
    with tape:
        y = x ** 2.0
    tape.backward(grads={y: wp.ones_like(y)})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


_PROGRAM = '''
import numpy as np


@wp.func
def blend(a: float, b: wp.vec3):
    return wp.length(b) * a, b * a


def run(wp, Tape):
    a = wp.array(np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3), requires_grad=True, device="cpu")
    v = wp.array(np.linspace(0.0, 1.0, 9, dtype=np.float32).reshape(3, 3), dtype=wp.vec3, requires_grad=True,
                 device="cpu")
    tf = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), -wp.half_pi))
    tape = Tape()
    with tape:
        s, w = wp.map(blend, a, v)
        c = wp.map(lambda x: wp.clamp(x * 2.0, -1.0, 1.5), a)
        p = wp.map(wp.transform_point, tf, v)
    tape.backward(grads={s: wp.ones_like(s), w: wp.ones_like(w)})
    return {"s": s.numpy(), "w": w.numpy(), "c": c.numpy(), "p": p.numpy(), "a_grad": a.grad.numpy(),
            "v_grad": v.grad.numpy(), "pow": (a ** 2.0).numpy(), "floordiv": (a // 0.5).numpy()}
'''


def test_map_is_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "array_map")
    assert set(warp) == set(ours)
    for key in warp:
        np.testing.assert_allclose(ours[key], warp[key], rtol=2e-6, atol=1e-6, err_msg=key)


@wp.func
def _block_size(_value: float):
    return float(wp.block_dim())


def test_block_dim_reaches_the_launch():
    # Warp 1.19 with wp.config.enable_cpu_blocks runs map's kernel in CPU blocks of block_dim lanes, so
    # wp.block_dim() is 2 there (and 1 with CPU blocks off, or with no block_dim asked)
    values = wp.ones(2, dtype=float)
    assert wp.map(_block_size, values, block_dim=2).numpy().tolist() == [1.0, 1.0]  # blocks off: one lane
    previous = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = True
    try:
        assert wp.map(_block_size, values).numpy().tolist() == [1.0, 1.0]  # no block_dim asked: Warp's 1
        assert wp.map(_block_size, values, block_dim=2).numpy().tolist() == [2.0, 2.0]
    finally:
        wp.config.enable_cpu_blocks = previous
