"""wp.map and the array operators over every array family (indexedarray, fabricarray, indexedfabricarray, and
subclasses of them and of wp.array): inputs read through their indices or buckets, outputs written through them,
one kernel per native family, in-place operators that return the array itself; numbers against real Warp, the
gradient through an indexed input by central differences."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck
from kernels.runtime.array_map import map_cache

import _warp_reference


@wp.func
def _square(a: float) -> float:
    return a * a


class _Tagged(wp.array):
    """A user's subclass of wp.array with a constructor of its own (as Warp's test_array_subclass.py writes)."""

    def __init__(self, *args, tag, **kwargs):
        self.tag = tag
        super().__init__(*args, **kwargs)


class _TaggedIndexed(wp.indexedarray):
    pass


def _fabric(data, bucket_sizes):
    size = wp.types.type_size_in_bytes(data.dtype)
    pointers, p = [], int(data.ptr)
    for n in bucket_sizes:
        pointers.append(p)
        p += n * size
    return wp.fabricarray({"version": 1, "device": "cpu", "attribs": {"a": {
        "type": (True, "f4", 1, 0, ""), "access": 2, "pointers": pointers, "counts": list(bucket_sizes)}}}, "a")


def test_map_reads_and_writes_through_each_family():
    values = np.arange(1.0, 5.0, dtype=np.float32)
    data = wp.array(values)
    idx = wp.array([3, 1, 0, 2], dtype=wp.int32)
    fabric = _fabric(data, [1, 3])
    for source, expected in ((wp.indexedarray(data, idx), values[[3, 1, 0, 2]]), (fabric, values),
                             (wp.indexedfabricarray(fabric, idx), values[[3, 1, 0, 2]])):
        np.testing.assert_array_equal(wp.map(_square, source).numpy(), expected ** 2)
    out = wp.zeros(4, dtype=float)
    wp.map(_square, data, out=wp.indexedarray(out, idx))
    np.testing.assert_array_equal(out.numpy()[[3, 1, 0, 2]], values ** 2)


def test_one_kernel_per_native_family_not_per_class():
    map_cache.clear()
    data = _Tagged([1.0, 2.0], tag="t", dtype=float)
    plain = wp.clone(data)
    first = wp.map(_square, data, return_kernel=True)
    assert wp.map(_square, plain, out=_Tagged(shape=2, dtype=float, tag="o"), return_kernel=True) is first
    indexed = _TaggedIndexed(data, wp.array([1, 0], dtype=wp.int32))
    assert wp.map(_square, indexed, return_kernel=True) is not first
    np.testing.assert_array_equal(wp.map(_square, indexed).numpy(), [4.0, 1.0])


def test_operators_on_every_family_and_in_place_ones_keep_the_array():
    data = wp.array(np.arange(1.0, 5.0, dtype=np.float32))
    indexed = wp.indexedarray(data, wp.array([3, 1, 0, 2], dtype=wp.int32))
    np.testing.assert_array_equal((indexed - 2.0).numpy(), [2.0, 0.0, -1.0, 1.0])
    np.testing.assert_array_equal((12.0 / indexed).numpy(), [3.0, 6.0, 12.0, 4.0])
    np.testing.assert_array_equal((-indexed).numpy(), [-4.0, -2.0, -1.0, -3.0])
    same = indexed
    indexed += 1.0
    assert indexed is same
    np.testing.assert_array_equal(data.numpy(), [2.0, 3.0, 4.0, 5.0])
    tagged = _Tagged([1.0, 2.0], tag="t", dtype=float)
    same = tagged
    tagged *= 3.0
    tagged **= 2.0
    assert tagged is same and tagged.tag == "t"
    np.testing.assert_array_equal(tagged.numpy(), [9.0, 36.0])


def test_gradient_through_an_indexed_input():
    idx = wp.array([2, 0, 0, 1], dtype=wp.int32)

    def fn(a):
        return wp.map(lambda x: wp.sin(x) * x, wp.indexedarray(a, idx))

    gradcheck(fn, [wp.array(np.array([0.3, -0.7, 1.1]), dtype=wp.float64)])


_PROGRAM = '''
import numpy as np


@wp.func
def shift(a: float, b: float):
    return a * 2.0 + b


def fabric(data, bucket_sizes):
    size = wp.types.type_size_in_bytes(data.dtype)
    pointers, p = [], int(data.ptr)
    for n in bucket_sizes:
        pointers.append(p)
        p += n * size
    return wp.fabricarray({"version": 1, "device": "cpu", "attribs": {"a": {
        "type": (True, "f4", 1, 0, ""), "access": 2, "pointers": pointers, "counts": list(bucket_sizes)}}}, "a")


def run(wp, Tape):
    data = wp.array(np.linspace(-1.0, 2.0, 5, dtype=np.float32), device="cpu")
    idx = wp.array([4, 0, 2], dtype=wp.int32, device="cpu")
    indexed = wp.indexedarray(data, idx)
    storage = wp.array(np.linspace(3.0, 5.0, 5, dtype=np.float32), device="cpu")  # a Fabric array does not own it
    fa = fabric(storage, [2, 3])
    ifa = wp.indexedfabricarray(fa, idx)
    mapped = wp.map(shift, indexed, ifa)
    out = wp.zeros(5, dtype=float, device="cpu")
    wp.map(shift, ifa, indexed, out=wp.indexedarray(out, idx))
    ops = [(indexed - 2.0).numpy(), (3.0 / ifa).numpy(), (-fa).numpy(), (fa * fa).numpy()]
    indexed += 1.5
    fa -= 0.25
    return {"mapped": mapped.numpy(), "out": out.numpy(), "ops": np.concatenate(ops), "data": data.numpy(),
            "fa": fa.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "array_families_map")
    assert set(warp) == set(ours)
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
