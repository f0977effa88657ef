"""Scalar types as numpy dtypes (NumPy 2.4's `__numpy_dtype__` protocol), issue 34's wrong number in test_types.py.

`np.array(values, dtype=wp.int8)` is an int8 array, as with Warp; before, numpy made an object array of it, and
`wp.array(that, dtype=wp.int8, copy=False)` silently copied instead of sharing the caller's memory (writes through
the Warp array did not reach the numpy one). Checked against real Warp: the arrays numpy builds, their dtypes, and
whether the kernel array shares their memory.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp

import _warp_reference

pytestmark = pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.4.0",
                                reason="numpy's dtype protocol needs NumPy 2.4 or later")

_PAIRS = "bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 float32 float64".split()

_PROGRAM = '''
import numpy as np

_PAIRS = "bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 float32 float64".split()


@wp.kernel
def bump(a: wp.array(dtype=wp.float32)):
    a[wp.tid()] += wp.float32(10.0)


def run(wp, Tape):
    out = {}
    for name in _PAIRS:
        t = getattr(wp, name)
        source = np.array([0, 1, 2], dtype=t)
        shared = wp.array(source, dtype=t, device="cpu", copy=False)
        view = shared.numpy()
        view[1] = 0
        out[name] = source
        out[name + "_dtype"] = np.array([str(np.dtype(t)), str(view.dtype)])
        out[name + "_shares"] = np.array([shared.ptr == source.ctypes.data, np.shares_memory(source, view)])
        out[name + "_inferred"] = wp.from_numpy(source, device="cpu").numpy()
    source = np.array([1.0, 2.0], dtype=wp.float32)
    wp.launch(bump, dim=2, inputs=[wp.array(source, dtype=wp.float32, device="cpu", copy=False)], device="cpu")
    out["kernel_write"] = source
    out["constructors"] = np.concatenate([np.zeros(2, dtype=wp.int16), np.full(2, 7, dtype=wp.int16)])
    return out
'''


def test_scalar_types_are_numpy_dtypes():
    for name in _PAIRS:
        t = getattr(wp, name)
        assert np.dtype(t) == np.dtype(t.__numpy_dtype__) == np.dtype(wp.dtype_to_numpy(t)), name
        source = np.array([0, 1, 2], dtype=t)
        assert source.dtype == np.dtype(wp.dtype_to_numpy(t)) and not source.dtype.hasobject
        shared = wp.array(source, dtype=t, device="cpu", copy=False)
        assert shared.dtype is t and shared.ptr == source.ctypes.data
        assert wp.from_numpy(source, device="cpu").dtype is t
    assert not hasattr(wp.bfloat16, "__numpy_dtype__")  # its uint16 storage is not its numbers
    assert np.dtype(wp.bfloat16) == np.dtype(object)


def test_a_kernel_writes_into_the_shared_numpy_array():
    source = np.array([1.0, 2.0], dtype=wp.float32)

    @wp.kernel
    def bump(a: wp.array(dtype=wp.float32)):
        a[wp.tid()] += wp.float32(10.0)

    wp.launch(bump, dim=2, inputs=[wp.array(source, dtype=wp.float32, device="cpu", copy=False)], device="cpu")
    np.testing.assert_array_equal(source, [11.0, 12.0])


def test_numpy_dtypes_of_scalar_types_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "numpy_dtype_protocol")
    assert set(warp) == set(ours)
    for key in warp:
        assert ours[key].dtype == warp[key].dtype, key
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
