"""The CUDA driver through cuda-python (`cuda.bindings.driver`): devices and their primary contexts, memory, copies,
streams, events, modules, launches and graphs.

Every driver call goes through `call(name, *args)`, which checks its result and raises `CudaError` naming the call
and the driver's description of the error. Loaded lazily: on a machine without the driver library or a GPU,
`device_count()` is 0 and nothing else here is called.

Pointers to device memory and to host memory are plain ints throughout (cuda-python accepts them for
`CUdeviceptr` and `void*` parameters); streams, events, modules and functions are cuda-python's handle objects.
"""

from __future__ import annotations

import ctypes
import threading

_count = None
_driver = None


class CudaError(RuntimeError):
    """A CUDA driver call failed: `call` is its name, `code` the driver's CUresult name."""

    def __init__(self, call: str, code: str, message: str):
        super().__init__(f"{call} failed: {code} ({message})")
        self.call = call
        self.code = code


def driver():
    """The `cuda.bindings.driver` module, initialised (cuInit) on first use."""
    global _driver
    if _driver is None:
        from cuda.bindings import driver as d
        (err,) = d.cuInit(0)
        if err != d.CUresult.CUDA_SUCCESS:
            raise CudaError("cuInit", err.name, _describe(d, err))
        _driver = d
    return _driver


def _describe(d, err) -> str:
    try:
        e, text = d.cuGetErrorString(err)
        return text.decode() if e == d.CUresult.CUDA_SUCCESS and text else "no description"
    except Exception:  # noqa: BLE001  an error while describing an error must not hide the first one
        return "no description"


def call(name: str, *args):
    """Call driver function `name`; raise CudaError naming it unless it succeeded. Returns its results after the
    status: None, the one value, or a tuple of them."""
    d = driver()
    result = getattr(d, name)(*args)
    err = result[0]
    if err != d.CUresult.CUDA_SUCCESS:
        raise CudaError(name, err.name, _describe(d, err))
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def device_count() -> int:
    """CUDA devices usable by this process (0 without cuda-python, the driver library or a GPU)."""
    global _count
    if _count is None:
        try:
            _count = int(call("cuDeviceGetCount"))
        except Exception:  # noqa: BLE001  no cuda-python, no libcuda, no device: a CPU-only machine
            _count = 0
    return _count


# ---------------------------------------------------------------------------------------------------- contexts


class DeviceInfo:
    """What the runtime needs to know of one GPU: its name, compute capability (`arch`, e.g. 90), multiprocessor
    count and memory."""

    def __init__(self, ordinal: int):
        d = driver()
        self.ordinal = ordinal
        self.handle = call("cuDeviceGet", ordinal)
        attr = d.CUdevice_attribute
        major = call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle)
        minor = call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle)
        self.arch = int(major) * 10 + int(minor)
        self.sm_count = int(call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                 self.handle))
        self.name = call("cuDeviceGetName", 256, self.handle).split(b"\0")[0].decode()
        self.total_memory = int(call("cuDeviceTotalMem", self.handle))
        self.context = call("cuDevicePrimaryCtxRetain", self.handle)


_infos: dict = {}
_tls = threading.local()  # the ordinal whose context is current on this thread


def info(ordinal: int) -> DeviceInfo:
    i = _infos.get(ordinal)
    if i is None:
        i = _infos[ordinal] = DeviceInfo(ordinal)
    return i


def make_current(ordinal: int):
    """Make device `ordinal`'s primary context current on this thread (a no-op when it already is)."""
    if getattr(_tls, "ordinal", None) != ordinal:
        call("cuCtxSetCurrent", info(ordinal).context)
        _tls.ordinal = ordinal


def synchronize_all():
    """Wait for all work of every device this process used (none used: nothing to wait for, and no driver to
    load: a CPU program's `wp.synchronize()` or ScopedTimer cost 47 ms the first time when it probed the driver)."""
    for ordinal in list(_infos):
        make_current(ordinal)
        call("cuCtxSynchronize")


def synchronize_device(ordinal: int):
    make_current(ordinal)
    call("cuCtxSynchronize")


# ---------------------------------------------------------------------------------------------------- memory


def mem_alloc(ordinal: int, nbytes: int) -> int:
    make_current(ordinal)
    return int(call("cuMemAlloc", max(int(nbytes), 1)))


def mem_free(ordinal: int, ptr: int):
    make_current(ordinal)
    call("cuMemFree", ptr)


def host_alloc_pinned(nbytes: int) -> int:
    """Page-locked host memory (fast and truly asynchronous copies); free with host_free_pinned."""
    return int(call("cuMemAllocHost", max(int(nbytes), 1)))


def host_free_pinned(ptr: int):
    call("cuMemFreeHost", ptr)


def memcpy_htod(dst: int, src: int, nbytes: int, stream):
    if nbytes:
        call("cuMemcpyHtoDAsync", dst, src, nbytes, stream)


def memcpy_dtoh(dst: int, src: int, nbytes: int, stream):
    """Device to host, waited for: the host may read `dst` as soon as this returns."""
    if nbytes:
        call("cuMemcpyDtoHAsync", dst, src, nbytes, stream)
        call("cuStreamSynchronize", stream)


def memcpy_dtod(dst: int, src: int, nbytes: int, stream):
    if nbytes:
        call("cuMemcpyDtoDAsync", dst, src, nbytes, stream)


def memcpy_2d(dst: int, dst_pitch: int, src: int, src_pitch: int, width: int, height: int, stream,
              dst_host: bool = False, src_host: bool = False):
    """Queue a copy of `height` rows of `width` bytes between pitched memory (either side on the host or the
    device); the caller waits for the stream before reading host memory it wrote."""
    if not width or not height:
        return
    d = driver()
    p = d.CUDA_MEMCPY2D()
    mt = d.CUmemorytype
    p.srcMemoryType = mt.CU_MEMORYTYPE_HOST if src_host else mt.CU_MEMORYTYPE_DEVICE
    p.dstMemoryType = mt.CU_MEMORYTYPE_HOST if dst_host else mt.CU_MEMORYTYPE_DEVICE
    if src_host:
        p.srcHost = src
    else:
        p.srcDevice = src
    if dst_host:
        p.dstHost = dst
    else:
        p.dstDevice = dst
    p.srcPitch, p.dstPitch, p.WidthInBytes, p.Height = src_pitch, dst_pitch, width, height
    call("cuMemcpy2DAsync", p, stream)


def memset_d8(dst: int, value: int, nbytes: int, stream):
    if nbytes:
        call("cuMemsetD8Async", dst, value & 0xFF, nbytes, stream)


def memset_d32(dst: int, value: int, count: int, stream):
    if count:
        call("cuMemsetD32Async", dst, value & 0xFFFFFFFF, count, stream)


def pointer_ordinal(ptr: int) -> int:
    """The ordinal of the device whose memory `ptr` points into."""
    d = driver()
    return int(call("cuPointerGetAttribute", d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr))


def mem_info(ordinal: int) -> tuple:
    """(free, total) device memory in bytes."""
    make_current(ordinal)
    free, total = call("cuMemGetInfo")
    return int(free), int(total)


# ---------------------------------------------------------------------------------------------------- streams, events


def stream_create(ordinal: int, priority: int = 0):
    make_current(ordinal)
    d = driver()
    # blocking with respect to the legacy default stream, where torch and most libraries work by default: their
    # work and ours stay ordered without explicit events
    return call("cuStreamCreateWithPriority", int(d.CUstream_flags.CU_STREAM_DEFAULT), priority)


def stream_destroy(stream):
    call("cuStreamDestroy", stream)


def stream_synchronize(stream):
    call("cuStreamSynchronize", stream)


def stream_is_capturing(stream) -> bool:
    d = driver()
    status = call("cuStreamIsCapturing", stream)
    return status != d.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def event_create(ordinal: int, timing: bool = False):
    make_current(ordinal)
    d = driver()
    flags = d.CUevent_flags.CU_EVENT_DEFAULT if timing else d.CUevent_flags.CU_EVENT_DISABLE_TIMING
    return call("cuEventCreate", int(flags))


def event_destroy(event):
    call("cuEventDestroy", event)


def event_record(event, stream):
    call("cuEventRecord", event, stream)


def event_synchronize(event):
    call("cuEventSynchronize", event)


def event_query(event) -> bool:
    """Whether all work recorded before `event` has completed."""
    d = driver()
    (err,) = d.cuEventQuery(event)
    if err == d.CUresult.CUDA_SUCCESS:
        return True
    if err == d.CUresult.CUDA_ERROR_NOT_READY:
        return False
    raise CudaError("cuEventQuery", err.name, _describe(d, err))


def event_elapsed_ms(start, end) -> float:
    return float(call("cuEventElapsedTime", start, end))


def stream_wait_event(stream, event):
    call("cuStreamWaitEvent", stream, event, 0)


# ---------------------------------------------------------------------------------------------------- modules, launches


def module_load(ordinal: int, image: bytes):
    make_current(ordinal)
    return call("cuModuleLoadData", image)


def module_function(module, name: str):
    return call("cuModuleGetFunction", module, name.encode())


def module_global(module, name: str) -> tuple:
    """(device address, bytes) of a `__device__` variable of a loaded module."""
    ptr, size = call("cuModuleGetGlobal", module, name.encode())
    return int(ptr), int(size)


def function_attributes(fn) -> dict:
    """Registers per thread, local (stack/spill) bytes per thread, static shared bytes, max threads per block."""
    a = driver().CUfunction_attribute
    return {"registers": int(call("cuFuncGetAttribute", a.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)),
            "local_bytes": int(call("cuFuncGetAttribute", a.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)),
            "shared_bytes": int(call("cuFuncGetAttribute", a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)),
            "max_threads": int(call("cuFuncGetAttribute", a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn))}


def launch(fn, grid: int, block: int, stream, params: list, shared_bytes: int = 0):
    """Launch `fn` on `grid` x `block` threads; `params` are ctypes objects, one per kernel parameter, whose
    memory the driver copies at the launch (they need not outlive this call)."""
    ptrs = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
    call("cuLaunchKernel", fn, grid, 1, 1, block, 1, 1, shared_bytes, stream, ctypes.addressof(ptrs), 0)


# ---------------------------------------------------------------------------------------------------- graphs


def capture_begin(stream):
    """Start recording the work submitted to `stream` into a graph. Relaxed mode: memory may be allocated while
    capturing (the caching allocator hands out blocks it holds, or calls cuMemAlloc)."""
    d = driver()
    call("cuStreamBeginCapture", stream, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)


def capture_end(stream):
    """The recorded graph, instantiated: (graph, executable graph)."""
    graph = call("cuStreamEndCapture", stream)
    try:
        exe = call("cuGraphInstantiate", graph, 0)
    except CudaError:
        call("cuGraphDestroy", graph)
        raise
    return graph, exe


def graph_launch(exe, stream):
    call("cuGraphLaunch", exe, stream)


def graph_add_to_capture(graph, stream):
    """Inside a capture of `stream`: add `graph` as a child graph node after the work captured so far (a graph
    cannot be launched into a capturing stream)."""
    d = driver()
    _, _, captured, deps, _, count = call("cuStreamGetCaptureInfo", stream)
    deps = list(deps)[:count] if count else None
    node = call("cuGraphAddChildGraphNode", captured, deps, count, graph)
    call("cuStreamUpdateCaptureDependencies", stream, [node], None, 1,
         int(d.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES))


def graph_destroy(graph, exe):
    call("cuGraphExecDestroy", exe)
    call("cuGraphDestroy", graph)


def graph_nodes(graph) -> list:
    _, n = call("cuGraphGetNodes", graph, 0)
    if not n:
        return []
    nodes, _ = call("cuGraphGetNodes", graph, int(n))
    return list(nodes)


def graph_node_count(graph) -> int:
    return len(graph_nodes(graph))


def graph_kernel_count(graph) -> int:
    """Kernel launches in a graph, those of its child graphs (nested captures) included."""
    t = driver().CUgraphNodeType
    count = 0
    for node in graph_nodes(graph):
        kind = call("cuGraphNodeGetType", node)
        if kind == t.CU_GRAPH_NODE_TYPE_KERNEL:
            count += 1
        elif kind == t.CU_GRAPH_NODE_TYPE_GRAPH:
            count += graph_kernel_count(call("cuGraphChildGraphNodeGetGraph", node))
    return count
