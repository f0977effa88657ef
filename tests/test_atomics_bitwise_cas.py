"""atomic_and/or/xor/exch/cas and componentwise integer bit operators on vectors and matrices: against numpy (an
independent route) and real Warp; a float atomic_exch on a gradient path is refused at compile time."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import Tape


def test_bitwise_atomics_against_numpy():
    @wp.kernel
    def bits(src: wp.array(dtype=wp.uint32), a: wp.array(dtype=wp.uint32), o: wp.array(dtype=wp.uint32),
             x: wp.array(dtype=wp.uint32), old: wp.array(dtype=wp.uint32)):
        i = wp.tid()
        old[i] = wp.atomic_and(a, i % 4, src[i])
        wp.atomic_or(o, i % 4, src[i])
        wp.atomic_xor(x, i % 4, src[i])

    rng = np.random.default_rng(1)
    src = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    a = wp.full(4, 0xFFFFFFFF, dtype=wp.uint32)
    o, x, old = wp.zeros(4, dtype=wp.uint32), wp.zeros(4, dtype=wp.uint32), wp.zeros(64, dtype=wp.uint32)
    wp.launch(bits, 64, [wp.array(src, dtype=wp.uint32), a, o, x, old])
    groups = src.reshape(16, 4)
    assert a.numpy().tolist() == np.bitwise_and.reduce(groups, axis=0).tolist()
    assert o.numpy().tolist() == np.bitwise_or.reduce(groups, axis=0).tolist()
    assert x.numpy().tolist() == np.bitwise_xor.reduce(groups, axis=0).tolist()


@pytest.mark.parametrize("dtype", [wp.int32, wp.uint64, wp.float32, wp.float64])
def test_cas_spinlock_counts_every_thread(dtype):
    @wp.kernel
    def count(counter: wp.array(dtype=dtype), lock: wp.array(dtype=wp.int32)):
        i = wp.tid()
        while wp.atomic_cas(lock, 0, 0, 1) == 1:
            pass
        # inside the lock: a plain read-modify-write, made visible by the exchanges around it
        wp.atomic_exch(counter, 0, counter[0] + dtype(1))
        wp.atomic_exch(lock, 0, 0)

    counter, lock = wp.zeros(1, dtype=dtype), wp.zeros(1, dtype=wp.int32)
    wp.launch(count, 2000, [counter, lock])
    assert counter.numpy()[0] == 2000 and lock.numpy()[0] == 0


def test_cas_returns_the_old_value():
    @wp.kernel
    def cas(a: wp.array(dtype=wp.int64), out: wp.array(dtype=wp.int64)):
        out[0] = wp.atomic_cas(a, 0, wp.int64(5), wp.int64(9))  # swaps: a[0] was 5
        out[1] = wp.atomic_cas(a, 1, wp.int64(5), wp.int64(9))  # does not: a[1] is 7

    a, out = wp.array([5, 7], dtype=wp.int64), wp.zeros(2, dtype=wp.int64)
    wp.launch(cas, 1, [a, out])
    assert out.numpy().tolist() == [5, 7] and a.numpy().tolist() == [9, 7]


def test_vector_and_matrix_bit_operators():
    @wp.kernel
    def ops(v: wp.array(dtype=wp.vec3ui), m: wp.array(dtype=wp.types.matrix((2, 2), wp.int32)),
            out_v: wp.array(dtype=wp.vec3ui), out_m: wp.array(dtype=wp.types.matrix((2, 2), wp.int32))):
        a, b = v[0], v[1]
        out_v[0] = (a & b) | (a << wp.vec3ui(wp.uint32(2)))
        out_v[1] = ~a ^ b
        out_m[0] = (m[0] >> m[1]) & ~m[1]

    v = np.array([[1, 2, 3], [7, 5, 6]], np.uint32)
    m = np.array([[[16, -32], [64, 7]], [[1, 2], [3, 0]]], np.int32)
    out_v, out_m = wp.zeros(2, dtype=wp.vec3ui), wp.zeros(1, dtype=wp.types.matrix((2, 2), wp.int32))
    wp.launch(ops, 1, [wp.array(v, dtype=wp.vec3ui), wp.array(m, dtype=wp.types.matrix((2, 2), wp.int32)),
                       out_v, out_m])
    np.testing.assert_array_equal(out_v.numpy()[0], (v[0] & v[1]) | (v[0] << np.uint32(2)))
    np.testing.assert_array_equal(out_v.numpy()[1], ~v[0] ^ v[1])
    np.testing.assert_array_equal(out_m.numpy()[0], (m[0] >> m[1]) & ~m[1])


def test_float_exchange_on_a_gradient_path_is_refused():
    @wp.kernel
    def swap(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        y[0] = wp.atomic_exch(x, 0, 2.0 * x[1])

    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(swap, 1, [x, y])
    with pytest.raises(wp.CompileError, match="atomic_exch"):
        tape.backward(loss=y)


_PROGRAM = '''
import numpy as np


@wp.kernel
def ops(src: wp.array(dtype=wp.int64), a: wp.array(dtype=wp.int64), o: wp.array(dtype=wp.int64),
        x: wp.array(dtype=wp.int64), e: wp.array(dtype=wp.int64), c: wp.array(dtype=wp.int64),
        v: wp.array(dtype=wp.vec4i), out_v: wp.array(dtype=wp.vec4i)):
    i = wp.tid()
    wp.atomic_and(a, i % 3, src[i])
    wp.atomic_or(o, i % 3, src[i])
    wp.atomic_xor(x, i % 3, src[i])
    wp.atomic_cas(c, i, src[i] % wp.int64(2), wp.int64(-1))
    if i == 0:
        e[0] = wp.atomic_exch(e, 1, wp.int64(42))
        out_v[0] = (v[0] << wp.vec4i(3)) ^ (v[1] >> wp.vec4i(1)) | ~v[0]


def run(wp, Tape):
    rng = np.random.default_rng(3)
    src = rng.integers(-2**40, 2**40, 30).astype(np.int64)
    arrays = {"a": wp.full(3, -1, dtype=wp.int64), "o": wp.zeros(3, dtype=wp.int64), "x": wp.zeros(3, dtype=wp.int64),
              "e": wp.array([0, 7], dtype=wp.int64), "c": wp.zeros(30, dtype=wp.int64)}
    v = wp.array(np.array([[1, -2, 3, 4], [100, 200, -300, 5]], np.int32), dtype=wp.vec4i)
    out_v = wp.zeros(1, dtype=wp.vec4i)
    wp.launch(ops, dim=30, inputs=[wp.array(src, dtype=wp.int64), arrays["a"], arrays["o"], arrays["x"],
                                   arrays["e"], arrays["c"], v, out_v])
    result = {k: a.numpy() for k, a in arrays.items()}
    result["v"] = out_v.numpy()
    return result
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "atomics_bitwise_cas")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
