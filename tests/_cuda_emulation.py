"""An emulated CUDA driver for tests on machines without a GPU (tests/test_cuda_emulated.py): "device memory" is
host memory and kernel launches run the kernels' CPU entry points on it, so everything above the driver runs as it
does on a GPU. Set KERNELS_EMULATE_CUDA=1 to run the whole device-parameterised suite on the emulated cuda:0
(a check of the runtime's host side: graphs and real asynchrony are not emulated)."""

import ctypes


from kernels.runtime import cuda_driver, cuda_memory, cuda_module

class _Info:
    def __init__(self, ordinal):
        self.ordinal, self.arch, self.sm_count, self.name, self.total_memory = ordinal, 90, 4, "emulated", 1 << 30
        self.context = None


class _Emulation:
    """Host-memory stand-ins for the driver calls the runtime makes."""

    def __init__(self):
        self.blocks = {}  # address -> ctypes buffer
        self.allocs = 0
        self.launches = 0

    def mem_alloc(self, ordinal, nbytes):
        buf = ctypes.create_string_buffer(max(int(nbytes), 1))
        self.blocks[ctypes.addressof(buf)] = buf
        self.allocs += 1
        return ctypes.addressof(buf)

    def mem_free(self, ordinal, ptr):
        del self.blocks[ptr]

    def memset_d8(self, dst, value, nbytes, stream):
        ctypes.memset(dst, value, nbytes)

    def memset_d32(self, dst, value, count, stream):
        (ctypes.c_uint32 * count).from_address(dst)[:] = [value] * count

    def memcpy(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)

    def memcpy_2d(self, dst, dst_pitch, src, src_pitch, width, height, stream, dst_host=False, src_host=False):
        for r in range(height):
            ctypes.memmove(dst + r * dst_pitch, src + r * src_pitch, width)

    def pointer_ordinal(self, ptr):
        if not any(addr <= ptr < addr + ctypes.sizeof(b) for addr, b in self.blocks.items()):
            raise cuda_driver.CudaError("cuPointerGetAttribute", "CUDA_ERROR_INVALID_VALUE", "not device memory")
        return 0

    def run(self, kernel, device, bounds, params, adj_params=None):
        """A CUDA launch, run by the kernel's CPU entry point on the emulated device memory."""
        self.launches += 1
        kernel.ensure_built()
        if params.__class__ is bytes:
            params = ctypes.create_string_buffer(params, len(params))
        if adj_params is None:
            kernel.forward_fn(ctypes.byref(bounds), ctypes.byref(params), ctypes.c_int64(1 << 62))
        else:
            kernel.backward_fn(ctypes.byref(bounds), ctypes.byref(params), ctypes.byref(adj_params),
                               ctypes.c_int64(1 << 62))
        from kernels.runtime.error_slot import check_error
        check_error(kernel)


def install(monkeypatch) -> "_Emulation":
    """Replace the driver calls with the emulation (undone by the monkeypatch)."""
    from kernels.runtime import device as stream  # streams live in runtime/device.py
    emu = _Emulation()
    nothing = lambda *a, **k: None  # noqa: E731
    for name, fn in {"device_count": lambda: 1, "info": _Info, "make_current": nothing,
                     "mem_alloc": emu.mem_alloc, "mem_free": emu.mem_free, "memset_d8": emu.memset_d8,
                     "memset_d32": emu.memset_d32, "memcpy_htod": emu.memcpy, "memcpy_dtoh": emu.memcpy,
                     "memcpy_dtod": emu.memcpy, "memcpy_2d": emu.memcpy_2d, "pointer_ordinal": emu.pointer_ordinal,
                     "stream_create": lambda ordinal, priority=0: 7, "stream_destroy": nothing,
                     "stream_synchronize": nothing, "synchronize_device": nothing, "synchronize_all": nothing,
                     "event_create": lambda ordinal, timing=False: object(), "event_destroy": nothing,
                     "event_record": nothing, "event_synchronize": nothing, "stream_wait_event": nothing,
                     "event_elapsed_ms": lambda a, b: 0.5, "host_alloc_pinned": lambda nbytes: emu.mem_alloc(0, nbytes),
                     "host_free_pinned": lambda ptr: emu.blocks.pop(ptr)}.items():
        monkeypatch.setattr(cuda_driver, name, fn)
    monkeypatch.setattr(cuda_driver, "_count", 1)
    monkeypatch.setattr(cuda_module, "run", emu.run)
    monkeypatch.setattr(cuda_memory, "_pools", {})
    for table in ("_current_streams", "_default_streams", "_stream_count"):
        monkeypatch.setattr(stream, table, {})
    return emu
