"""Devices: "cpu" and "cuda:N", with Warp's selection API (get_device, set_device, ScopedDevice), and the streams
and events of CUDA devices with Warp's API: `wp.Stream`, `wp.Event`, `wp.get_stream`, `wp.set_stream`,
`wp.ScopedStream`, `wp.synchronize_stream`, `wp.record_event`, `wp.wait_event`, `wp.wait_stream`,
`wp.synchronize_event`, `wp.get_event_elapsed_time`. They live together: a device's current stream is device state
(`Device.stream`), and a stream belongs to its device.

Each CUDA device has a current stream (its own default stream until `set_stream`); launches, copies and fills on
the device go to it, in order. CPU work is synchronous and has no streams: asking for a CPU stream is an error."""

from __future__ import annotations

from . import cuda_driver as cu
from .recording import capturing


class Device:
    """A compute device. `alias` is its name: "cpu" or "cuda:N"."""

    def __init__(self, alias: str):
        self.alias = alias
        self.is_cpu = alias == "cpu"
        self.is_cuda = alias.startswith("cuda")
        self.ordinal = int(alias.split(":")[1]) if self.is_cuda else -1

    def __str__(self):
        return self.alias

    # ---- what Warp's Device tells of a GPU (the CPU answers too, as in Warp)

    def _info(self):
        return cu.info(self.ordinal)

    @property
    def name(self) -> str:
        """The GPU's model ("NVIDIA H100 80GB HBM3"), or the CPU's architecture."""
        if self.is_cpu:
            import platform
            return platform.processor() or platform.machine() or "CPU"
        return self._info().name

    @property
    def arch(self) -> int:
        """Compute capability as an int (90 for sm_90); 0 on the CPU."""
        return self._info().arch if self.is_cuda else 0

    @property
    def sm_count(self) -> int:
        return self._info().sm_count if self.is_cuda else 0

    @property
    def total_memory(self) -> int:
        """Device memory in bytes (the CPU: 0, as its memory is the host's)."""
        return self._info().total_memory if self.is_cuda else 0

    @property
    def free_memory(self) -> int:
        if not self.is_cuda:
            return 0
        return cu.mem_info(self.ordinal)[0]

    @property
    def is_uva(self) -> bool:
        return self.is_cuda

    @property
    def is_capturing(self) -> bool:
        return capturing(self.alias)

    @property
    def stream(self):
        """The device's current stream (CUDA devices only)."""
        return get_stream(self)

    def synchronize(self):
        synchronize_device(self)

    @property
    def context(self):
        """The primary CUDA context (a cuda-python CUcontext), None on the CPU."""
        return self._info().context if self.is_cuda else None

    def __repr__(self):
        return f'Device("{self.alias}")'

    def __eq__(self, other):
        if isinstance(other, str):
            return self.alias == other
        return isinstance(other, Device) and other.alias == self.alias

    def __hash__(self):
        return hash(self.alias)


_devices = {"cpu": Device("cpu")}
_default = _devices["cpu"]


def get_cuda_device_count() -> int:
    """Number of CUDA devices usable by this process (0 without a GPU or driver)."""
    return cu.device_count()


def get_device(ident=None) -> Device:
    """The device named by `ident` ("cpu", "cuda", "cuda:N", a Device), or the current default when None."""
    if ident is None:
        return _default
    if isinstance(ident, Device):
        return ident
    if not isinstance(ident, str):
        raise TypeError(f"a device is a name like 'cpu' or 'cuda:0', got {ident!r}")
    if ident == "cuda":
        ident = "cuda:0"
    dev = _devices.get(ident)
    if dev is None:
        if ident.startswith("cuda:") and ident[5:].isdigit():
            if int(ident[5:]) >= get_cuda_device_count():
                raise RuntimeError(f"device '{ident}' is not available: this machine has "
                                   f"{get_cuda_device_count()} CUDA device(s)")
            dev = _devices[ident] = Device(ident)
        else:
            raise ValueError(f"unknown device '{ident}': use 'cpu' or 'cuda:N'")
    return dev


def set_device(ident):
    """Make `ident` the default device for allocations and launches."""
    global _default
    _default = get_device(ident)


def get_preferred_device() -> Device:
    return get_device("cuda:0") if get_cuda_device_count() > 0 else _devices["cpu"]


def is_cuda_available() -> bool:
    return get_cuda_device_count() > 0


def get_cuda_devices() -> list:
    """The CUDA devices of this machine (cuda:0, cuda:1, ...); empty without one."""
    return [get_device(f"cuda:{i}") for i in range(get_cuda_device_count())]


def get_devices() -> list:
    """Every device of this machine: the CPU, then the CUDA devices."""
    return [_devices["cpu"]] + get_cuda_devices()


def is_device_available(device) -> bool:
    """Whether `device` (a Device or its name) is one of get_devices()."""
    name = str(device)
    return any(str(d) == name for d in get_devices())


def is_cpu_available() -> bool:
    """The CPU backend needs a C++ compiler, which the toolkit requires: always true."""
    return True


class ScopedDevice:
    """`with wp.ScopedDevice("cpu"):` sets the default device inside the block."""

    def __init__(self, ident):
        self.device = get_device(ident)

    def __enter__(self):
        global _default
        self.saved, _default = _default, self.device
        return self.device

    def __exit__(self, *exc):
        global _default
        _default = self.saved


def synchronize():
    """Wait for all work on all devices; CPU launches are synchronous, so this only waits for CUDA work."""
    cu.synchronize_all()


def synchronize_device(device=None):
    """Wait for all work queued on `device` (nothing to wait for on the CPU)."""
    dev = get_device(device)
    if dev.is_cuda:
        cu.synchronize_device(dev.ordinal)


# ---- streams and events of CUDA devices ----------------------------------------------------------------------

def _cuda_device(device) -> Device:
    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"streams and events exist on CUDA devices only; {dev} runs its work synchronously")
    return dev


class Stream:
    """A CUDA stream on `device` (default: the current device). `priority`: lower numbers run first."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.device = _cuda_device(device)
        self.priority = priority
        self.handle = cu.stream_create(self.device.ordinal, priority)
        self._owner = True
        _stream_count[self.device.ordinal] = _stream_count.get(self.device.ordinal, 0) + 1

    def __del__(self):
        if getattr(self, "_owner", False):
            try:
                cu.stream_destroy(self.handle)
            except Exception:  # noqa: BLE001  interpreter shutdown
                pass

    @property
    def cuda_stream(self) -> int:
        """The native stream handle (`CUstream`) as an int."""
        return int(self.handle)

    def __repr__(self):
        return f"Stream(device={self.device}, handle=0x{self.cuda_stream:x})"

    @property
    def is_capturing(self) -> bool:
        return cu.stream_is_capturing(self.handle)

    def synchronize(self):
        cu.stream_synchronize(self.handle)

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else Event(self.device)
        cu.event_record(event.handle, self.handle)
        return event

    def wait_event(self, event: "Event"):
        cu.stream_wait_event(self.handle, event.handle)

    def wait_stream(self, other: "Stream", event: "Event | None" = None):
        """Make this stream wait for the work submitted to `other` so far."""
        self.wait_event(other.record_event(event))


class Event:
    """A CUDA event on `device`; `enable_timing=True` for `get_event_elapsed_time`."""

    def __init__(self, device=None, enable_timing: bool = False, **kwargs):
        self.device = _cuda_device(device)
        self.enable_timing = enable_timing
        self.handle = cu.event_create(self.device.ordinal, enable_timing)

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None:
            try:
                cu.event_destroy(handle)
            except Exception:  # noqa: BLE001  interpreter shutdown
                pass

    @property
    def is_complete(self) -> bool:
        return cu.event_query(self.handle)


_current_streams: dict = {}  # ordinal -> the device's current Stream
_default_streams: dict = {}  # ordinal -> the device's own default Stream
_stream_count: dict = {}  # ordinal -> streams made on it (the allocator orders block reuse when more than one)


def default_stream(ordinal: int) -> Stream:
    s = _default_streams.get(ordinal)
    if s is None:
        s = _default_streams[ordinal] = Stream(f"cuda:{ordinal}")
    return s


def current_stream_handle(ordinal: int):
    """The native handle of the current stream of CUDA device `ordinal` (hot path of launches and copies)."""
    s = _current_streams.get(ordinal)
    if s is None:
        s = _current_streams[ordinal] = default_stream(ordinal)
    return s.handle


def multiple_streams(ordinal: int) -> bool:
    return _stream_count.get(ordinal, 0) > 1


def get_stream(device=None) -> Stream:
    """The current stream of a CUDA device."""
    dev = _cuda_device(device)
    current_stream_handle(dev.ordinal)
    return _current_streams[dev.ordinal]


def set_stream(stream: Stream, device=None, sync: bool = False):
    """Make `stream` the current stream of its device; with `sync`, it first waits for the previous one."""
    dev = stream.device if device is None else _cuda_device(device)
    if dev != stream.device:
        raise RuntimeError(f"stream {stream} belongs to {stream.device}, not {dev}")
    previous = get_stream(dev)
    if sync and previous is not stream:
        stream.wait_stream(previous)
    _current_streams[dev.ordinal] = stream


class ScopedStream:
    """`with wp.ScopedStream(stream):` makes `stream` (and its device) current inside the block. With `sync_enter`
    (default) the stream first waits for the device's previous stream; with `sync_exit` the previous one waits for
    it at the end."""

    def __init__(self, stream: Stream | None, sync_enter: bool = True, sync_exit: bool = False):
        self.stream = stream
        self.sync_enter = sync_enter
        self.sync_exit = sync_exit

    def __enter__(self):
        if self.stream is None:
            return None
        self._device = ScopedDevice(self.stream.device)
        self._device.__enter__()
        self._previous = get_stream(self.stream.device)
        set_stream(self.stream, sync=self.sync_enter)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return
        if self.sync_exit:
            self._previous.wait_stream(self.stream)
        _current_streams[self.stream.device.ordinal] = self._previous
        self._device.__exit__(*exc)


def synchronize_stream(stream_or_device=None):
    """Wait for the work of a stream (or of a device's current stream)."""
    stream = stream_or_device if isinstance(stream_or_device, Stream) else get_stream(stream_or_device)
    stream.synchronize()


def record_event(event: Event | None = None) -> Event:
    """Record an event on the current device's current stream."""
    return get_stream(event.device if event is not None else None).record_event(event)


def wait_event(event: Event):
    """Make the current stream of the event's device wait for it."""
    get_stream(event.device).wait_event(event)


def wait_stream(other: Stream, event: Event | None = None):
    """Make the current stream of `other`'s device wait for the work submitted to `other` so far."""
    get_stream(other.device).wait_stream(other, event)


def synchronize_event(event: Event):
    cu.event_synchronize(event.handle)


def get_event_elapsed_time(start: Event, end: Event, synchronize: bool = True) -> float:
    """Milliseconds between two timing events (waits for `end` first, unless `synchronize=False`)."""
    if synchronize:
        synchronize_event(end)
    return cu.event_elapsed_ms(start.handle, end.handle)
