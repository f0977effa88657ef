"""wp.tanh on the CPU returns +-1 without calling tanhf beyond |x| = 9.02 (kernels/native/scalar_math.h): the same
floats as the C library's tanhf, which it calls everywhere else. Checked on every float32 of [8.9, 9.2] and its
negatives, and on larger, infinite and NaN inputs, against tanhf itself."""

import ctypes
import ctypes.util

import numpy as np
import pytest

import kernels as wp

pytestmark = pytest.mark.skipif(ctypes.util.find_library("m") is None, reason="no C math library to compare with")


@wp.kernel
def tanh_of(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.tanh(x[i])


def c_tanhf(values: np.ndarray) -> np.ndarray:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.tanhf.restype = ctypes.c_float
    libm.tanhf.argtypes = [ctypes.c_float]
    return np.array([libm.tanhf(float(v)) for v in values], dtype=np.float32)


def every_float_between(lo: float, hi: float) -> np.ndarray:
    bits = np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32) + 1, dtype=np.int32)
    return bits.view(np.float32)


def test_tanh_is_the_c_librarys_around_the_saturation_and_beyond():
    near = every_float_between(8.9, 9.2)
    far = np.array([9.02, 9.0200001, 10.0, 22.0, 1e3, 3.4e38, np.inf, 1.0, 0.5, 1e-30, 0.0], dtype=np.float32)
    x = np.concatenate([near, -near, far, -far])
    y = wp.zeros(len(x), dtype=float, device="cpu")
    wp.launch(tanh_of, dim=len(x), inputs=[wp.array(x, dtype=float, device="cpu"), y], device="cpu")
    ours, theirs = y.numpy(), c_tanhf(x)
    assert np.array_equal(ours.view(np.int32), theirs.view(np.int32))  # to the bit, -0.0 included
    assert ours[np.abs(x) > 9.02].tolist() == np.sign(x[np.abs(x) > 9.02]).tolist()


def test_tanh_of_nan_is_nan():
    y = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(tanh_of, dim=1, inputs=[wp.array([np.nan], dtype=float, device="cpu"), y], device="cpu")
    assert np.isnan(y.numpy()[0])
