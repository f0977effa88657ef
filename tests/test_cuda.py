"""The CUDA runtime on a GPU: device memory and views, copies, fills, the caching allocator, pinned host memory,
launches and adjoints against the CPU, streams and events, CUDA graphs of a forward and a Tape's backward, debug
bounds checks, and zero-copy exchange with torch (DLPack and __cuda_array_interface__) with gradients landing in
torch. Skipped, saying so, on machines without a usable GPU; the device-parameterised tests of the rest of the
suite cover kernels, builtins, tiles and the solvers on cuda:0.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

pytestmark = pytest.mark.skipif(wp.get_cuda_device_count() == 0, reason="no CUDA device on this machine")

DEV = "cuda:0"


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def square_sum(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    wp.atomic_add(out, 0, wp.dot(v, v) + wp.sin(v[0]))


@wp.kernel
def busy(x: wp.array(dtype=float), rounds: int):
    i = wp.tid()
    v = x[i]
    for _ in range(rounds):
        v = v * 0.999 + 0.001
    x[i] = v


@wp.kernel
def add_one(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


@wp.kernel
def out_of_bounds(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i + 1] = 1.0


def test_device_reports_the_gpu():
    d = wp.get_device(DEV)
    assert d.is_cuda and d.arch >= 50 and d.sm_count > 0 and d.total_memory > 0
    assert isinstance(d.name, str) and d.name
    print(f"{d.name}: sm_{d.arch}, {d.sm_count} SMs, {d.total_memory / 2**30:.0f} GiB")


def test_arrays_round_trip_with_views_like_numpy():
    rng = np.random.default_rng(1)
    host = rng.standard_normal((6, 5)).astype(np.float32)
    a = wp.array(host, dtype=float, device=DEV)
    assert a.device == DEV and a.ptr is not None
    np.testing.assert_array_equal(a.numpy(), host)
    np.testing.assert_array_equal(a[1:5:2, 1:].numpy(), host[1:5:2, 1:])
    np.testing.assert_array_equal(a.transpose().numpy(), host.T)
    np.testing.assert_array_equal(a.reshape((30,)).numpy(), host.reshape(30))
    assert a[2, 3] == host[2, 3]
    v = wp.array(rng.standard_normal((7, 3)).astype(np.float32), dtype=wp.vec3, device=DEV)
    assert v.shape == (7,)
    np.testing.assert_array_equal(v.view(float).numpy(), v.numpy())
    assert wp.zeros(0, dtype=float, device=DEV).numpy().shape == (0,)


def test_writes_into_views_touch_only_the_view():
    a = wp.zeros((4, 6), dtype=float, device=DEV)
    a[1:3, 2:4].fill_(5.0)
    a[0] = np.arange(6, dtype=np.float32)
    a[3, 5] = 9.0
    want = np.zeros((4, 6), np.float32)
    want[1:3, 2:4] = 5.0
    want[0] = np.arange(6)
    want[3, 5] = 9.0
    np.testing.assert_array_equal(a.numpy(), want)
    a[1:3, 2:4].zero_()
    want[1:3, 2:4] = 0
    np.testing.assert_array_equal(a.numpy(), want)
    vec = wp.full(5, wp.vec3(1.0, 2.0, 3.0), device=DEV)
    np.testing.assert_array_equal(vec.numpy(), np.tile([1, 2, 3], (5, 1)))
    np.testing.assert_array_equal(wp.ones(3, dtype=wp.float16, device=DEV).numpy(), np.ones(3, np.float16))


def test_copies_between_host_and_device_with_offsets():
    host = np.arange(10, dtype=np.float32)
    a = wp.array(host, device="cpu")
    b = wp.zeros(10, dtype=float, device=DEV)
    wp.copy(b, a, dest_offset=2, src_offset=1, count=5)
    np.testing.assert_array_equal(b.numpy(), np.r_[0, 0, host[1:6], 0, 0, 0])
    c = wp.clone(b)
    assert c.device == DEV and c.ptr != b.ptr
    np.testing.assert_array_equal(c.numpy(), b.numpy())
    back = c.to("cpu")
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), b.numpy())
    pinned = wp.zeros(10, dtype=float, device="cpu", pinned=True)
    wp.copy(pinned, b)
    np.testing.assert_array_equal(pinned.numpy(), b.numpy())


def test_caching_allocator_reuses_freed_blocks():
    from kernels.runtime.cuda_memory import memory_stats
    a = wp.zeros(1 << 20, dtype=float, device=DEV)
    del a
    before = memory_stats(0)["driver_allocations"]
    for _ in range(10):
        b = wp.zeros(1 << 20, dtype=float, device=DEV)
        del b
    assert memory_stats(0)["driver_allocations"] == before


def test_launch_and_adjoint_match_the_cpu():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    out = {}
    for dev in ("cpu", DEV):
        xs = wp.array(x, dtype=float, device=dev, requires_grad=True)
        ys = wp.array(y, dtype=float, device=dev, requires_grad=True)
        tape = Tape()
        with tape:
            wp.launch(saxpy, dim=1000, inputs=[2.5, xs, ys], device=dev)
        tape.backward(grads={ys: np.ones(1000, np.float32)})
        out[dev] = (ys.numpy(), xs.grad.numpy())
    np.testing.assert_allclose(out[DEV][0], out["cpu"][0], rtol=1e-6)
    np.testing.assert_allclose(out[DEV][1], out["cpu"][1], rtol=1e-6)


def test_atomic_gradient_on_the_gpu_matches_finite_differences():
    x = wp.array(np.random.default_rng(3).standard_normal((64, 3)).astype(np.float64).astype(np.float32),
                 dtype=wp.vec3, device=DEV, requires_grad=True)

    def f(x):
        out = wp.zeros(1, dtype=float, device=DEV, requires_grad=True)
        wp.launch(square_sum, dim=64, inputs=[x, out], device=DEV)
        return out

    gradcheck(f, [x], eps=1e-2, atol=5e-2, rtol=5e-2)


def test_streams_order_work_and_events_time_it():
    s1, s2 = wp.Stream(DEV), wp.Stream(DEV)
    x = wp.zeros(1 << 20, dtype=float, device=DEV)
    start, end = wp.Event(DEV, enable_timing=True), wp.Event(DEV, enable_timing=True)
    with wp.ScopedStream(s1):
        wp.record_event(start)
        wp.launch(busy, dim=x.size, inputs=[x, 2000], device=DEV)
        wp.record_event(end)
    s2.wait_stream(s1)
    with wp.ScopedStream(s2, sync_enter=False):
        wp.launch(add_one, dim=x.size, inputs=[x], device=DEV)
    wp.synchronize_stream(s2)
    want = 0.0
    for _ in range(2000):
        want = np.float32(want * np.float32(0.999) + np.float32(0.001))
    np.testing.assert_allclose(x.numpy()[:4], want + 1.0, rtol=1e-4)
    assert wp.get_event_elapsed_time(start, end) > 0.0


def test_graph_replays_a_forward_and_a_tapes_backward():
    n = 4096
    x = wp.array(np.linspace(-1, 1, n).astype(np.float32), dtype=float, device=DEV, requires_grad=True)
    y = wp.zeros(n, dtype=float, device=DEV, requires_grad=True)
    tape = Tape()
    wp.launch(saxpy, dim=n, inputs=[3.0, x, y], device=DEV)  # build before the capture
    y.zero_()
    with wp.ScopedCapture(DEV) as cap:
        with tape:
            wp.launch(saxpy, dim=n, inputs=[3.0, x, y], device=DEV)
        tape.backward(grads={y: wp.ones(n, dtype=float, device=DEV)})
    assert cap.graph.launch_count >= 2
    y.zero_()
    x.grad.zero_()
    for _ in range(3):
        wp.capture_launch(cap.graph)
    np.testing.assert_allclose(y.numpy(), 9.0 * x.numpy(), rtol=1e-6)  # three replays of y += 3x
    np.testing.assert_allclose(x.grad.numpy(), 9.0, rtol=1e-6)


def test_debug_mode_reports_an_out_of_bounds_index_on_the_gpu():
    saved = wp.config.mode
    wp.config.mode = "debug"
    try:
        @wp.kernel(module="unique")
        def oob(x: wp.array(dtype=float)):
            i = wp.tid()
            x[i + 1] = 1.0

        x = wp.zeros(4, dtype=float, device=DEV)
        with pytest.raises(wp.LaunchError, match=r"index \[4\] out of bounds"):
            wp.launch(oob, dim=4, inputs=[x], device=DEV)
    finally:
        wp.config.mode = saved


def test_torch_tensors_are_shared_both_ways_and_gradients_land_in_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    t = torch.arange(8, dtype=torch.float32, device="cuda")
    a = wp.from_torch(t)
    assert a.device == DEV and a.ptr == t.data_ptr()
    wp.launch(add_one, dim=8, inputs=[a], device=DEV)
    wp.synchronize()
    assert torch.equal(t.cpu(), torch.arange(8, dtype=torch.float32) + 1)
    back = wp.to_torch(a)
    assert back.data_ptr() == t.data_ptr()
    via_dlpack = torch.from_dlpack(wp.zeros(5, dtype=wp.vec3, device=DEV))
    assert via_dlpack.shape == (5, 3) and via_dlpack.is_cuda
    imported = wp.from_dlpack(torch.ones(4, device="cuda"))
    np.testing.assert_array_equal(imported.numpy(), np.ones(4, np.float32))
    assert wp.array(t, device=DEV).ptr != t.data_ptr()  # wp.array copies by default, as in Warp

    xt = torch.linspace(0, 1, 16, device="cuda", requires_grad=True)
    yt = torch.zeros(16, device="cuda", requires_grad=True)
    x, y = wp.from_torch(xt), wp.from_torch(yt)
    tape = Tape()
    with tape:
        wp.launch(saxpy, dim=16, inputs=[2.0, x, y], device=DEV)
    tape.backward(grads={y: wp.ones(16, dtype=float, device=DEV)})
    wp.synchronize()
    assert torch.allclose(xt.grad, torch.full((16,), 2.0, device="cuda"))


def test_resource_usage_is_reported():
    from kernels.runtime.cuda_module import resource_usage
    wp.launch(saxpy, dim=1, inputs=[1.0, wp.zeros(1, device=DEV), wp.zeros(1, device=DEV)], device=DEV)
    use = resource_usage(saxpy, wp.get_device(DEV))
    assert 0 < use["forward"]["registers"] <= 255
    assert use["backward"]["max_threads"] >= 256


def test_a_failing_driver_call_names_itself():
    from kernels.runtime import cuda_driver
    from kernels.runtime.cuda_module import cuda_kernel
    wp.launch(saxpy, dim=1, inputs=[1.0, wp.zeros(1, device=DEV), wp.zeros(1, device=DEV)], device=DEV)
    module = cuda_kernel(saxpy, wp.get_device(DEV)).modules[0]
    with pytest.raises(cuda_driver.CudaError, match="cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"):
        cuda_driver.module_function(module, "no_such_kernel")
