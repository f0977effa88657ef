"""The CUDA runtime's host side, on machines without a GPU: the driver is replaced by an emulation whose "device
memory" is host memory and whose kernel launches run the kernels' CPU entry points on it. Everything above the
driver runs as it does on a GPU: device arrays and their views, copies, fills and reads through cuda_memory, the
caching allocator, launches through cuda_module with packed arguments, adjoints, the Tape, gradcheck and the
optimisers on device arrays, streams and events, and DLPack and __cuda_array_interface__ exchange.

What the emulation cannot show (NVRTC machine code running, real asynchrony, graphs) is tested on a GPU by
tests/test_cuda.py and the device-parameterised tests (tools/gpu_check.sh).
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import SGD, Tape, gradcheck
from kernels.runtime import cuda_memory
from _cuda_emulation import install

DEV = "cuda:0"


@pytest.fixture
def gpu(monkeypatch):
    """An emulated CUDA device 0 for the duration of a test."""
    emu = install(monkeypatch)
    yield emu
    import gc
    gc.collect()  # arrays of the test give their blocks back while the emulation is in place


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def vec_energy(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    wp.atomic_add(out, 0, wp.dot(v, v) * wp.sin(v[0]))


def test_device_arrays_views_and_element_access(gpu):
    rng = np.random.default_rng(0)
    host = rng.standard_normal((5, 6)).astype(np.float32)
    a = wp.array(host, device=DEV)
    assert a.is_cuda and a.device == DEV
    np.testing.assert_array_equal(a.numpy(), host)
    assert a.numpy() is not a.numpy()  # a copy each time, as in Warp
    for key in [(slice(1, 4), slice(0, 5, 2)), (2,), (slice(None), 3)]:
        np.testing.assert_array_equal(a[key].numpy(), host[key])
    assert a[2, 3] == host[2, 3] and a[-1, -1] == host[-1, -1]
    np.testing.assert_array_equal(a.transpose().numpy(), host.T)
    np.testing.assert_array_equal(a.reshape((30,)).numpy(), host.reshape(30))
    v = wp.array(rng.standard_normal((4, 3)).astype(np.float32), dtype=wp.vec3, device=DEV)
    np.testing.assert_array_equal(v.view(float).numpy(), v.numpy())
    assert v.list()[1] == wp.vec3(*v.numpy()[1])
    with pytest.raises(AttributeError, match="no __array_interface__"):
        a.__array_interface__
    with pytest.raises(RuntimeError, match="CPU memory"):
        a.cptr()
    assert "device=cuda:0" in repr(a)


def test_writes_fills_and_copies_touch_only_their_target(gpu):
    a = wp.zeros((4, 6), dtype=float, device=DEV)
    a[1:3, 2:4].fill_(5.0)
    a[0] = np.arange(6, dtype=np.float32)
    a[3, 5] = 9.0
    a[:, 0].fill_(wp.float32(-1.0))
    want = np.zeros((4, 6), np.float32)
    want[1:3, 2:4], want[0], want[3, 5], want[:, 0] = 5.0, np.arange(6), 9.0, -1.0
    np.testing.assert_array_equal(a.numpy(), want)
    a[1:3, 2:4].zero_()
    want[1:3, 2:4] = 0
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(wp.full(3, wp.vec3(1.0, 2.0, 3.0), device=DEV).numpy(), np.tile([1, 2, 3], (3, 1)))
    np.testing.assert_array_equal(wp.ones(3, dtype=wp.float16, device=DEV).numpy(), np.ones(3, np.float16))
    b = wp.zeros(10, dtype=float, device=DEV)
    wp.copy(b, wp.array(np.arange(10, dtype=np.float32)), dest_offset=2, src_offset=1, count=5)
    np.testing.assert_array_equal(b.numpy(), np.r_[0, 0, 1, 2, 3, 4, 5, 0, 0, 0])
    c = wp.clone(b)
    assert c.ptr != b.ptr
    np.testing.assert_array_equal(c.to("cpu").numpy(), b.numpy())
    d = wp.zeros((6, 4), dtype=float, device=DEV)
    d.assign(a.transpose())
    np.testing.assert_array_equal(d.numpy(), want.T)


def test_allocator_reuses_blocks_and_pinned_memory_is_host_memory(gpu):
    a = wp.zeros(1000, dtype=float, device=DEV)
    del a
    before = gpu.allocs
    for _ in range(5):
        b = wp.zeros(1000, dtype=float, device=DEV)
        del b
    assert gpu.allocs == before
    assert cuda_memory.memory_stats(0)["cached_bytes"] >= 4000
    p = wp.zeros(8, dtype=float, device="cpu", pinned=True)
    p.numpy()[:] = 3.0  # a host array: its numpy view writes through
    np.testing.assert_array_equal(wp.array(p, device=DEV).numpy(), 3.0)


def test_launch_tape_and_gradcheck_on_device_arrays(gpu):
    rng = np.random.default_rng(1)
    x = wp.array(rng.standard_normal(16).astype(np.float32), device=DEV, requires_grad=True)
    y = wp.array(rng.standard_normal(16).astype(np.float32), device=DEV, requires_grad=True)
    y0 = y.numpy()
    tape = Tape()
    with tape:
        wp.launch(saxpy, dim=16, inputs=[2.0, x, y], device=DEV)
    assert gpu.launches >= 1
    np.testing.assert_allclose(y.numpy(), 2.0 * x.numpy() + y0, rtol=1e-6)
    tape.backward(grads={y: np.ones(16, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0)

    v = wp.array(rng.standard_normal((8, 3)).astype(np.float32), dtype=wp.vec3, device=DEV, requires_grad=True)

    def energy(v):
        out = wp.zeros(1, dtype=float, device=DEV, requires_grad=True)
        wp.launch(vec_energy, dim=8, inputs=[v, out], device=DEV)
        return out

    gradcheck(energy, [v], eps=1e-2, atol=2e-2, rtol=2e-2)


def test_optimiser_updates_device_parameters_in_place(gpu):
    p = wp.array(np.ones(4, np.float32), device=DEV, requires_grad=True)
    p.grad.fill_(2.0)
    SGD([p], lr=0.25).step()
    np.testing.assert_allclose(p.numpy(), 0.5)


def test_copies_on_a_tape_carry_gradients_between_device_arrays(gpu):
    x = wp.array(np.arange(4, dtype=np.float32), device=DEV, requires_grad=True)
    y = wp.zeros(4, dtype=float, device=DEV, requires_grad=True)
    tape = Tape()
    with tape:
        wp.copy(y, x)
    tape.backward(grads={y: np.full(4, 3.0, np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), 3.0)
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)  # the copy overwrote y: its gradient was consumed


def test_streams_and_events_have_warps_api(gpu):
    s = wp.Stream(DEV)
    with wp.ScopedStream(s):
        assert wp.get_stream(DEV) is s
        e = wp.record_event()
    assert wp.get_stream(DEV) is not s
    wp.wait_event(e)
    assert wp.get_event_elapsed_time(e, e) == 0.5
    with pytest.raises(RuntimeError, match="CUDA devices only"):
        wp.Stream("cpu")


def test_dlpack_and_cuda_array_interface_share_device_memory(gpu):
    a = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), device=DEV)
    iface = a.__cuda_array_interface__
    assert iface["shape"] == (2, 3) and iface["data"][0] == a.ptr and iface["typestr"] == "<f4"
    shared = wp.from_dlpack(a.__dlpack__())
    assert shared.device == DEV and shared.ptr == a.ptr and shared.shape == (2, 3)
    shared[0, 0] = 42.0
    assert a[0, 0] == 42.0
    assert a.__dlpack_device__() == (2, 0)

    class Producer:  # a foreign library's device array (CuPy, Numba, torch)
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (a.ptr, False), "strides": None,
                                    "version": 3}

    vecs = wp.array(np.zeros((2, 3), np.float32), dtype=wp.vec3, device=DEV)
    v = wp.from_dlpack(vecs.__dlpack__(), dtype=wp.vec3)
    assert v.dtype is wp.vec3 and v.shape == (2,)
    foreign = wp.array(Producer(), copy=False)
    assert foreign.ptr == a.ptr and foreign[0] == 42.0
    copied = wp.array(Producer(), device=DEV)
    assert copied.ptr != a.ptr and copied[0] == 42.0


def test_fabric_arrays_on_a_cuda_device_are_refused(gpu):
    """A Fabric interface that names a CUDA device is refused in words (its bucket table would have to live in
    device memory), not read as host pointers."""
    data = wp.zeros(4, dtype=float, device="cpu")
    iface = {"version": 1, "device": DEV,
             "attribs": {"a": {"type": (True, "f4", 1, 0, ""), "access": 2, "pointers": [int(data.ptr)],
                               "counts": [4]}}}
    with pytest.raises(NotImplementedError, match="Fabric arrays on a CUDA device are not supported"):
        wp.fabricarray(iface, "a")
