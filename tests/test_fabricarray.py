"""wp.fabricarray / wp.indexedfabricarray / wp.fabricarrayarray: kernels reading and writing bucketed memory
(checked against the same elements as one numpy array, and against real Warp), host operations, and the
refusals (a taped write, malformed interfaces)."""

from typing import Any

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import Tape


def interface(data, attrib, bucket_sizes, type_info):
    """A Fabric interface dict whose buckets are consecutive runs of 1-d array `data` (as Warp's tests build)."""
    size = wp.types.type_size_in_bytes(data.dtype)
    pointers, p = [], int(data.ptr)
    for n in bucket_sizes:
        pointers.append(p)
        p += n * size
    return {"version": 1, "device": "cpu",
            "attribs": {attrib: {"type": type_info, "access": 2, "pointers": pointers, "counts": list(bucket_sizes)}}}


@wp.kernel
def scale_and_read(a: wp.fabricarray[float], out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + float(a.size)
    a[i] = 2.0 * a[i]


@wp.kernel
def count_into(a: wp.indexedfabricarray[wp.int32], out: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    wp.atomic_add(a, i, 1)
    out[0] = a.size


@wp.kernel
def row_sums(a: wp.fabricarrayarray(dtype=Any), sums: wp.array(dtype=float)):
    i = wp.tid()
    row = a[i]
    s = float(0.0)
    for j in range(row.shape[0]):
        s += row[j] + a[i, j]
    sums[i] = s


@wp.struct
class FabricHolder:
    values: wp.fabricarray[wp.vec3]


@wp.kernel
def lift(h: FabricHolder, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = h.values[i] + wp.vec3(0.0, 0.0, 1.0)


def test_kernel_reads_and_writes_across_buckets():
    base = np.arange(7, dtype=np.float32)
    data = wp.array(base)
    fa = wp.fabricarray(interface(data, "a", [2, 4, 1], (True, "f4", 1, 0, "")), "a")
    assert fa.size == 7 and fa.shape == (7,) and fa.dtype is wp.float32
    out = wp.zeros(7, dtype=float)
    wp.launch(scale_and_read, dim=fa.size, inputs=[fa, out])
    np.testing.assert_array_equal(out.numpy(), base + 7.0)
    np.testing.assert_array_equal(data.numpy(), 2.0 * base)
    np.testing.assert_array_equal(fa.numpy(), 2.0 * base)


def test_indexed_fabric_atomics_with_repeated_indices():
    data = wp.zeros(6, dtype=wp.int32)
    fa = wp.fabricarray(interface(data, "n", [3, 3], (True, "i4", 1, 0, "")), "n")
    ifa = fa[wp.array([5, 0, 5, 2], dtype=wp.int32)]
    assert type(ifa) is wp.indexedfabricarray and ifa.shape == (4,)
    size = wp.zeros(1, dtype=wp.uint64)
    wp.launch(count_into, dim=4, inputs=[ifa, size])
    np.testing.assert_array_equal(data.numpy(), [1, 0, 1, 0, 0, 2])
    assert size.numpy()[0] == 4
    np.testing.assert_array_equal(ifa.numpy(), [2, 1, 2, 1])


def test_arrays_of_arrays():
    rows = [wp.array(np.arange(n, dtype=np.float32) + 10.0 * n) for n in (3, 1, 2)]
    pointers = wp.array([r.ptr for r in rows], dtype=wp.uint64)
    lengths = wp.array([r.size for r in rows], dtype=wp.uint64)
    iface = {"version": 1, "device": "cpu", "attribs": {"rows": {
        "type": (True, "f4", 1, 1, ""), "access": 2, "pointers": [pointers.ptr, pointers.ptr + 8],
        "counts": [1, 2], "array_lengths": [lengths.ptr, lengths.ptr + 8]}}}
    fa = wp.fabricarrayarray(data=iface, attrib="rows")
    assert fa.ndim == 2 and fa.size == 3
    sums = wp.zeros(3, dtype=float)
    wp.launch(row_sums, dim=3, inputs=[fa, sums])
    np.testing.assert_array_equal(sums.numpy(), [2.0 * r.numpy().sum() for r in rows])
    with pytest.raises(RuntimeError, match="Filling Fabric arrays of arrays"):
        fa.fill_(1.0)


def test_struct_member_and_host_operations():
    vecs = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3)
    h = FabricHolder()
    h.values = wp.fabricarray(interface(vecs, "p", [1, 3], (True, "f4", 3, 0, "vector")), "p")
    out = wp.zeros(4, dtype=wp.vec3)
    wp.launch(lift, dim=4, inputs=[h, out])
    np.testing.assert_array_equal(out.numpy(), vecs.numpy() + [0.0, 0.0, 1.0])
    h.values.fill_(wp.vec3(1.0, 2.0, 3.0))
    np.testing.assert_array_equal(vecs.numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))
    wp.copy(h.values, out)
    np.testing.assert_array_equal(vecs.numpy(), out.numpy())
    np.testing.assert_array_equal(wp.clone(h.values).numpy(), out.numpy())
    with pytest.raises(TypeError, match="expects a Warp Fabric array"):
        h.values = vecs


def test_refusals():
    data = wp.array(np.ones(4, np.float32), requires_grad=True)
    fa = wp.fabricarray(interface(data, "a", [4], (True, "f4", 1, 0, "")), "a")
    with Tape():
        with pytest.raises(wp.LaunchError, match="writes Fabric array 'a', which has no gradient"):
            wp.launch(scale_and_read, dim=4, inputs=[fa, wp.zeros(4, dtype=float)])
    bad = interface(data, "a", [4], (True, "f4", 1, 0, ""))
    bad["version"] = 2
    with pytest.raises(ValueError, match="Unsupported Fabric interface version: 2"):
        wp.fabricarray(bad, "a")
    with pytest.raises(RuntimeError, match="role 'text' is not supported"):
        wp.fabricarray(interface(data, "a", [4], (True, "u1", 1, 1, "text")), "a")
    with pytest.raises(ValueError, match="only support indexing using index arrays"):
        fa[0]
    with pytest.raises(wp.LaunchError, match="a wp.fabricarray"):
        wp.launch(scale_and_read, dim=4, inputs=[data, wp.zeros(4, dtype=float)], record_tape=False)


_PROGRAM = '''
import numpy as np
from typing import Any


def interface(data, attrib, bucket_sizes, type_info):
    size = wp.types.type_size_in_bytes(data.dtype)
    pointers, p = [], int(data.ptr)
    for n in bucket_sizes:
        pointers.append(p)
        p += n * size
    return {"version": 1, "device": "cpu",
            "attribs": {attrib: {"type": type_info, "access": 2, "pointers": pointers, "counts": list(bucket_sizes)}}}


@wp.kernel
def mix(a: wp.fabricarray[wp.vec2], b: wp.indexedfabricarray[float], out: wp.array(dtype=float)):
    i = wp.tid()
    v = a[i]
    out[i] = v[0] * b[i] - v[1]
    a[i] = wp.vec2(v[1], v[0] + b[i])


@wp.kernel
def generic_double(a: Any):
    i = wp.tid()
    a[i] = a[i] * 2.0


def run(wp, Tape):
    vecs = wp.array(np.arange(10, dtype=np.float32).reshape(5, 2), dtype=wp.vec2)
    scalars = wp.array(np.linspace(1.0, 3.0, 6).astype(np.float32))
    a = wp.fabricarray(interface(vecs, "a", [2, 1, 2], (True, "f4", 2, 0, "vector")), "a")
    fb = wp.fabricarray(interface(scalars, "b", [4, 2], (True, "f4", 1, 0, "")), "b")
    b = fb[wp.array([5, 1, 1, 0, 3], dtype=int)]
    out = wp.zeros(5, dtype=float)
    wp.launch(mix, dim=5, inputs=[a, b, out])
    wp.launch(generic_double, dim=6, inputs=[fb])
    return {"vecs": vecs.numpy(), "scalars": scalars.numpy(), "out": out.numpy(), "a": a.numpy(), "b": b.numpy()}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "fabricarray")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_shape_is_refused_in_kernels():
    @wp.kernel(module="unique")
    def uses_shape(a: wp.fabricarray[float], out: wp.array(dtype=int)):
        out[0] = a.shape[0]

    data = wp.zeros(2, dtype=float)
    fa = wp.fabricarray(interface(data, "a", [2], (True, "f4", 1, 0, "")), "a")
    with pytest.raises(wp.CompileError, match="has no attribute 'shape' in kernels"):
        wp.launch(uses_shape, dim=1, inputs=[fa, wp.zeros(1, dtype=int)])
