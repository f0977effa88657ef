"""Recording into an open capture: the state below the runtime's arrays, copies, launches and memory.

While a capture is open on a device (capture.py: `capture_begin`), the work that would run there is recorded
instead: `recorder(device)` gives the open CPU capture (a Recorder of native commands, replayed by a Graph),
`cuda_capture(device)` the open CUDA stream capture. Arrays, copies, fills and launches ask these and record;
Device.is_capturing asks `capturing`. The public capture API (begin, end, replay, ScopedCapture) is capture.py,
above arrays, launches and modules; this module imports none of them.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import config
from ..typesys import ArrayValue


FORWARD, BACKWARD, ZERO, COPY, FILL, HOST = range(6)

_HOST_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)

_HOST_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64)


class Command(ctypes.Structure):
    """Layout of `command_t` (native/command_list.cpp): keep in sync."""

    _fields_ = [("kind", ctypes.c_int64), ("fn", ctypes.c_void_p), ("bounds", ctypes.c_void_p),
                ("args", ctypes.c_void_p), ("adj_args", ctypes.c_void_p), ("threshold", ctypes.c_int64),
                ("dst", ctypes.c_void_p), ("src", ctypes.c_void_p), ("bytes", ctypes.c_int64),
                ("pattern_bytes", ctypes.c_int64)]


class CaptureError(RuntimeError):
    """A capture was misused: begun twice, ended without a begin, or replayed on the wrong device."""


class Graph:
    """A captured sequence of commands on one device; run it with `capture_launch(graph)`."""

    def __init__(self, device, commands: list, keep: list, kernels: list, callbacks: list):
        self.device = device
        self.kernels = kernels  # distinct kernels launched, for the debug-mode error check after a replay
        self._keep = keep  # everything the native commands point into
        self._callbacks = callbacks  # Python callables of HOST commands, by id
        self._table = (Command * len(commands))(*commands)
        self._error = None
        self._host_fn = _HOST_FN(self._run_callback)
        for c in self._table:
            if c.kind == HOST:
                c.fn = ctypes.cast(self._host_fn, ctypes.c_void_p).value

    @property
    def launch_count(self) -> int:
        """Kernel launches (forward and adjoint) in the graph."""
        return sum(1 for c in self._table if c.kind in (FORWARD, BACKWARD))

    def __len__(self):
        return len(self._table)

    def _run_callback(self, index: int) -> int:
        try:
            self._callbacks[index]()
            return 0
        except BaseException as e:  # noqa: BLE001 (handed back to the caller of capture_launch)
            self._error = e
            return 1

    def _commands(self) -> list:
        """Copies of this graph's commands (to nest it in another capture)."""
        return [Command.from_buffer_copy(c) for c in self._table]


class Recorder:
    """The commands of an open capture."""

    def __init__(self, device):
        self.device = device
        self.commands: list = []
        self.keep: list = []
        self.kernels: dict = {}
        self.callbacks: list = []
        # root numpy buffers zeroed whole by this capture and written by no command since (id -> buffer): zero at
        # that point of every replay (Tape.backward skips adjoints whose outputs' gradients are known zero)
        self.fresh: dict = {}

    def launch(self, cmd):
        """Record a `Launch` (forward or adjoint) with copies of its packed arguments."""
        k = cmd.kernel
        bounds = type(cmd.bounds).from_buffer_copy(cmd.bounds)
        params = type(cmd.params).from_buffer_copy(cmd.params)
        adj = type(cmd.adj_params).from_buffer_copy(cmd.adj_params) if cmd.adjoint else None
        fn = k.backward_fn if cmd.adjoint else k.forward_fn
        c = Command(kind=BACKWARD if cmd.adjoint else FORWARD, fn=ctypes.cast(fn, ctypes.c_void_p).value,
                    bounds=ctypes.addressof(bounds), args=ctypes.addressof(params),
                    adj_args=ctypes.addressof(adj) if adj is not None else None,
                    threshold=k.parallel_threshold(config.cpu_parallel_threshold))
        self.keep.append((bounds, params, adj, list(cmd.values), list(cmd.adj_values or ())))
        self.kernels[id(k)] = k
        self.commands.append(c)
        if self.fresh:
            for v in list(cmd.values) + list(cmd.adj_values or ()):
                self._written_value(v)

    def _written_value(self, v):
        """A launch argument may be written: its arrays (also struct members) are no longer known zero."""
        if isinstance(v, ArrayValue):
            if v._buf is not None:
                self.fresh.pop(id(_root(v._buf)), None)
        elif getattr(type(v), "_wp_struct_", None) is not None:
            for name in type(v)._wp_struct_.fields:
                self._written_value(getattr(v, name))

    def is_fresh(self, a) -> bool:
        """Whether array `a` is zero at this point of every replay: zeroed whole by this capture and written by
        no command since."""
        buf = a.numpy()
        root = _root(buf)
        return buf is root and self.fresh.get(id(root)) is root

    def zero(self, a):
        buf = a.numpy()
        if a.is_contiguous:
            self.commands.append(Command(kind=ZERO, dst=buf.ctypes.data, bytes=buf.nbytes))
            self.keep.append(a)
        else:
            self.host(lambda: a.numpy().__setitem__(Ellipsis, 0))
        root = _root(buf)
        if buf is root:
            self.fresh[id(root)] = root
        else:
            self.fresh.pop(id(root), None)

    def fill(self, a, element: np.ndarray):
        """Fill `a` with one element's bytes (`element`, already in the array's layout)."""
        self.fresh.pop(id(_root(a.numpy())), None)
        pattern = np.ascontiguousarray(element).copy()
        if a.is_contiguous:
            self.commands.append(Command(kind=FILL, dst=a.numpy().ctypes.data, src=pattern.ctypes.data,
                                         bytes=a.numpy().nbytes,
                                         pattern_bytes=pattern.nbytes))
            self.keep.append((a, pattern))
        else:
            self.host(lambda: a.numpy().__setitem__(Ellipsis, pattern))

    def copy(self, dst: np.ndarray, src: np.ndarray, owners=()):
        """Copy numpy view `src` into numpy view `dst` (same shape) at replay: natively when both are contiguous."""
        self.fresh.pop(id(_root(dst)), None)
        if dst.flags.c_contiguous and src.flags.c_contiguous and dst.dtype == src.dtype:
            self.commands.append(Command(kind=COPY, dst=dst.ctypes.data, src=src.ctypes.data, bytes=dst.nbytes))
            self.keep.append((dst, src, owners))
        else:
            self.host(lambda: dst.__setitem__(Ellipsis, src))

    def host(self, fn):
        """Record a Python callable, run at its place in the sequence on each replay (it may write anything)."""
        self.fresh.clear()
        self.commands.append(Command(kind=HOST, threshold=len(self.callbacks)))
        self.callbacks.append(fn)

    def graph(self, g: Graph):
        """Record a whole graph (a capture_launch inside a capture)."""
        self.fresh.clear()
        base = len(self.callbacks)
        for c in g._commands():
            if c.kind == HOST:
                c.threshold += base
            self.commands.append(c)
        self.callbacks.extend(g._callbacks)
        self.keep.append(g)
        self.kernels.update((id(k), k) for k in g.kernels)


def _root(buf: np.ndarray) -> np.ndarray:
    """The numpy array that owns the memory `buf` views."""
    while isinstance(buf.base, np.ndarray):
        buf = buf.base
    return buf


open_recorders: dict = {}  # device alias -> Recorder of the capture open on it


def recorder(device):
    """The open capture on `device` (a Device), or None: callers record their work into it instead of running it."""
    return open_recorders.get(device.alias) if open_recorders else None


def capturing(alias: str) -> bool:
    """Whether a capture (CPU or CUDA) is open on the device named `alias`."""
    return alias in open_recorders or alias in open_cuda_captures


class CudaCapture:
    def __init__(self, stream):
        self.stream = stream
        self.keep: list = []


open_cuda_captures: dict = {}  # device alias -> CudaCapture open on it


def cuda_capture(device):
    """The CUDA capture open on `device`, or None."""
    return open_cuda_captures.get(device.alias) if open_cuda_captures else None


def keep_alive(device, *objects) -> bool:
    """Inside a CUDA capture on `device`: keep `objects` alive as long as the graph (what its nodes point into);
    returns whether a capture is open."""
    cap = open_cuda_captures.get(device.alias) if open_cuda_captures else None
    if cap is None:
        return False
    cap.keep.extend(objects)
    return True
