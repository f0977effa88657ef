"""tile_arange at the output type's quantization edges (issue 34): Warp's element count and values, or its refusal.

The bounds are rounded to the output type before counting (float32 `(0.0, 3.0000001, 0.99999999)` is `[0, 3)`
by 1), integer ranges are counted exactly past a double's mantissa, integer bounds round once to a float type,
and the values are filled at the output type. Checked against numpy's arange of the rounded bounds and, where
warp-lang is installed, against real Warp.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp

import _warp_reference

F32_STOP = wp.constant(wp.float32(3.0000001))
F32_STEP = wp.constant(wp.float32(0.99999999))
I64_START = wp.constant(wp.int64(2 ** 54))
I64_STOP = wp.constant(wp.int64(2 ** 54 + 3 * 2 ** 30 - 1))
I64_STEP = wp.constant(wp.int64(2 ** 31))


@wp.kernel(enable_backward=False)
def edges(f32: wp.array(dtype=wp.float32), i64: wp.array(dtype=wp.int64), i2f: wp.array(dtype=wp.float32),
          plain: wp.array(dtype=float)):
    wp.tile_store(f32, wp.tile_arange(0.0, F32_STOP, F32_STEP, dtype=wp.float32))
    wp.tile_store(i64, wp.tile_arange(0, 9007199254740993, 9007199254740992, dtype=wp.int64))
    wp.tile_store(i2f, wp.tile_arange(I64_START, I64_STOP, I64_STEP, dtype=wp.float32))
    wp.tile_store(plain, wp.tile_arange(0, 3))


def test_count_and_values_at_the_output_type():
    f32 = wp.full(4, -1.0, dtype=wp.float32)
    i64 = wp.full(3, -1, dtype=wp.int64)
    i2f = wp.full(3, -1.0, dtype=wp.float32)
    plain = wp.full(4, -1.0, dtype=float)
    wp.launch_tiled(edges, dim=[1], inputs=[f32, i64, i2f, plain], block_dim=1)
    # float32 bounds (0, 3, 1): three elements; counted from the doubles it would be four
    np.testing.assert_array_equal(f32.numpy(), [0.0, 1.0, 2.0, -1.0])
    # 2**53 + 1 over a step of 2**53: two elements, where a double quotient rounds to exactly 1
    np.testing.assert_array_equal(i64.numpy(), [0, 2 ** 53, -1])
    # int64 bounds rounded once to float32: the stop becomes 2**54 + 2**31, one step past the start: one element
    np.testing.assert_array_equal(i2f.numpy(), np.array([2.0 ** 54, -1.0, -1.0], dtype=np.float32))
    # without dtype, a float tile (Warp's default)
    np.testing.assert_array_equal(plain.numpy(), [0.0, 1.0, 2.0, -1.0])


def _zero_step(out: wp.array(dtype=float)):
    t = wp.tile_arange(0, 10, 0, dtype=int)


def _empty(out: wp.array(dtype=float)):
    t = wp.tile_arange(5, 5, dtype=int)


def _out_of_range(out: wp.array(dtype=float)):
    t = wp.tile_arange(0, 1099511627776, dtype=wp.int32)


def _fractional(out: wp.array(dtype=float)):
    t = wp.tile_arange(0.0, 3.5, dtype=wp.int32)


def _uncountable(out: wp.array(dtype=float)):
    t = wp.tile_arange(0.0, 1.0, 5.0e-324, dtype=wp.float64)


def _bool_dtype(out: wp.array(dtype=float)):
    t = wp.tile_arange(0, 6, dtype=wp.bool)


def _four_arguments(out: wp.array(dtype=float)):
    t = wp.tile_arange(1, 2, 3, 4, dtype=int)


@pytest.mark.parametrize("body, kind, message", [
    (_zero_step, ValueError, r"tile_arange\(\) step cannot be zero"),
    (_empty, ValueError, r"requires a non-empty range"),
    (_out_of_range, ValueError, r"stop=1099511627776 is out of range for the output type int32"),
    (_fractional, ValueError, r"stop=3.5 has a fractional part"),
    (_uncountable, ValueError, r"spans more elements than can be counted"),
    (_bool_dtype, TypeError, r"requires a numeric scalar dtype"),
    (_four_arguments, TypeError, r"accepts at most 3 positional arguments, got 4"),
])
def test_ranges_warp_refuses_are_refused(body, kind, message):
    kernel = wp.kernel(body)
    with pytest.raises(kind, match=message):
        wp.launch_tiled(kernel, dim=[1], inputs=[wp.zeros(1, dtype=float)], block_dim=1)


_PROGRAM = '''
STOP = wp.constant(wp.float32(3.0000001))
STEP = wp.constant(wp.float32(0.99999999))


@wp.kernel(enable_backward=False)
def k(a: wp.array(dtype=wp.float32), b: wp.array(dtype=wp.float32), c: wp.array(dtype=wp.int64),
      d: wp.array(dtype=wp.float32), e: wp.array(dtype=wp.float64)):
    wp.tile_store(a, wp.tile_arange(0.0, STOP, STEP, dtype=wp.float32))
    wp.tile_store(b, wp.tile_arange(0.0, 0.3, 0.1, dtype=wp.float32))
    wp.tile_store(c, wp.tile_arange(0, 2147483650, 2147483649, dtype=wp.int64))
    wp.tile_store(d, wp.tile_arange(-3.0e38, 3.0e38, 3.0e38, dtype=wp.float32))
    wp.tile_store(e, wp.tile_arange(0.1, 1.0, 0.1, dtype=wp.float64))


def run(wp, Tape):
    arrays = [wp.full(n, -1, dtype=t, device="cpu") for n, t in
              ((5, wp.float32), (5, wp.float32), (4, wp.int64), (4, wp.float32), (12, wp.float64))]
    wp.launch_tiled(k, dim=[1], inputs=arrays, block_dim=1, device="cpu")
    return {name: a.numpy() for name, a in zip("abcde", arrays)}
'''


def test_ranges_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_arange_range")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
