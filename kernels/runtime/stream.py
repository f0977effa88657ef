"""CUDA streams and events with Warp's API: `wp.Stream`, `wp.Event`, `wp.get_stream`, `wp.set_stream`,
`wp.ScopedStream`, `wp.synchronize_stream`, `wp.record_event`, `wp.wait_event`, `wp.wait_stream`,
`wp.synchronize_event`, `wp.get_event_elapsed_time`.

Each CUDA device has a current stream (its own default stream until `set_stream`); launches, copies and fills on
the device go to it, in order. CPU work is synchronous and has no streams: asking for a CPU stream is an error.
"""

from __future__ import annotations

from . import cuda_driver as cu
from .device import Device, get_device


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


_current: dict = {}  # ordinal -> the device's current Stream
_default: dict = {}  # ordinal -> the device's own default Stream
_stream_count: dict = {}  # ordinal -> streams made on it (the allocator orders block reuse when more than one)


def default_stream(ordinal: int) -> Stream:
    s = _default.get(ordinal)
    if s is None:
        s = _default[ordinal] = Stream(f"cuda:{ordinal}")
    return s


def current_stream_handle(ordinal: int):
    """The native handle of the current stream of CUDA device `ordinal` (hot path of launches and copies)."""
    s = _current.get(ordinal)
    if s is None:
        s = _current[ordinal] = default_stream(ordinal)
    return s.handle


def multiple_streams(ordinal: int) -> bool:
    return _stream_count.get(ordinal, 0) > 1


def get_stream(device=None) -> Stream:
    """The current stream of a CUDA device."""
    dev = _cuda_device(device)
    current_stream_handle(dev.ordinal)
    return _current[dev.ordinal]


def set_stream(stream: Stream, device=None, sync: bool = False):
    """Make `stream` the current stream of its device; with `sync`, it first waits for the previous one."""
    dev = stream.device if device is None else _cuda_device(device)
    if dev != stream.device:
        raise RuntimeError(f"stream {stream} belongs to {stream.device}, not {dev}")
    previous = get_stream(dev)
    if sync and previous is not stream:
        stream.wait_stream(previous)
    _current[dev.ordinal] = stream


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
        from .device import ScopedDevice
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
        _current[self.stream.device.ordinal] = self._previous
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
