"""Launch capture and replay: Warp's `capture_begin`, `capture_end`, `capture_launch` and `ScopedCapture`.

While a capture is open on a device, work on that device is recorded instead of run: kernel launches (forward and
adjoint, so a Tape's backward inside the capture is recorded too), `zero_()`, `fill_()`, `assign()`, `wp.copy`, and
the fills of arrays allocated by `zeros`/`ones`/`full`/`clone` inside the capture. `capture_launch(graph)` replays
the recorded commands in order from one native loop (native/command_list.cpp): no Python runs per launch.

Semantics are those of a CUDA graph:
- argument values are fixed at capture: a replay reads and writes the same arrays, whatever they hold by then;
- host data given to `assign()` (a numpy array, a list) is copied at capture and written again at each replay;
- arrays used by the recorded commands stay alive as long as the graph;
- reading an array on the host inside a capture (`.numpy()`) sees its contents at capture time, before any of
  the recorded work has run.
Work that has no native form (filling a strided view, a `Tape.record_func` callback) is replayed as a Python
callback, in order with the rest.

On a CUDA device the capture is a CUDA stream capture of the device's current stream (or the one given):
the driver records launches, copies and fills into a CUDA graph, `capture_launch` replays it with one
cuGraphLaunch, and the same semantics hold (arrays used inside stay alive with the graph). Reading an array on the
host inside a CUDA capture is an error (the driver refuses to synchronise a capturing stream).
"""

from __future__ import annotations

import ctypes

from .device import get_device
from ..errors import LaunchError
from .error_slot import check_error
from .recording import (CaptureError, CudaCapture, Graph, Recorder, capturing, cuda_capture,
                        keep_alive, open_cuda_captures, open_recorders, recorder)
from ..compiler.build import load_native_library
from . import cuda_driver
from .cuda_module import cuda_function
from .device import Stream, get_stream, set_stream
from .module import _modules

_replay_fn = None


def _replayer():
    """The native `wp_replay` entry point, compiled once and cached like kernel modules."""
    global _replay_fn
    if _replay_fn is None:
        fn = load_native_library("command_list").wp_replay
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        fn.restype = ctypes.c_int64
        _replay_fn = fn
    return _replay_fn


def is_capturing(device=None) -> bool:
    """Whether a capture is open on `device` (default: the current device)."""
    return capturing(get_device(device).alias)


class CudaGraph:
    """A CUDA graph captured on one device; run it with `capture_launch(graph)`."""

    def __init__(self, device, graph, exe, keep: list):
        self.device = device
        self.graph, self.exe = graph, exe
        self._keep = keep  # arrays and host buffers the graph's nodes point into
        self._launches = None

    @property
    def launch_count(self) -> int:
        """Kernel launches (forward and adjoint) in the graph, nested graphs included."""
        if self._launches is None:
            self._launches = cuda_driver.graph_kernel_count(self.graph)
        return self._launches

    def __len__(self):
        return cuda_driver.graph_node_count(self.graph)

    def __del__(self):
        try:
            cuda_driver.graph_destroy(self.graph, self.exe)
        except Exception:  # noqa: BLE001  interpreter shutdown
            pass


def _cuda_capture_begin(dev, stream, force_module_load):
    if dev.alias in open_cuda_captures:
        raise CaptureError(f"a capture is already open on {dev}: end it with wp.capture_end() first")
    if force_module_load:
        _build_loaded_modules(dev)
    if stream is not None:
        if not isinstance(stream, Stream) or stream.device != dev:
            raise CaptureError(f"wp.capture_begin(stream=...) takes a Stream of {dev}")
        set_stream(stream)
    s = get_stream(dev)
    cuda_driver.capture_begin(s.handle)
    open_cuda_captures[dev.alias] = CudaCapture(s)


def _build_loaded_modules(dev):
    """Build for `dev` what its kernels launched so far may need inside the capture (no compile or module load
    while capturing)."""
    for m in list(_modules.values()):
        for k in list(m.kernels):
            # forward: the kernels of every module launched on this device so far; adjoint: the kernels launched
            # on a CUDA device under a Tape (a backward captured later needs them). Kernels only ever run on the
            # CPU are left alone: compiling them all could take minutes.
            if k.error is None and dev.ordinal in k.cuda:
                for adjoint in (False, True) if k.enable_backward and k.cuda_taped else (False,):
                    try:
                        cuda_function(k, dev, adjoint)
                    except Exception:  # noqa: BLE001  kept on the kernel, raised at its launch
                        pass


def capture_begin(device=None, stream=None, force_module_load=None, external=False):
    """Start recording the work issued on `device`. On the CPU, modules still build on first launch, inside a
    capture too, so `force_module_load` changes nothing there; `stream` and `external` concern CUDA streams.
    On a CUDA device, `force_module_load` (default True, as in Warp) builds every kernel loaded so far first."""
    dev = get_device(device)
    if dev.is_cuda and not external:
        _cuda_capture_begin(dev, stream, True if force_module_load is None else force_module_load)
        return
    if external:
        raise CaptureError("external=True continues a CUDA stream capture begun outside the toolkit; "
                           "the CPU has no such capture")
    if not dev.is_cpu:
        raise CaptureError(f"capture on {dev} needs the CUDA backend, which this build does not have")
    if dev.alias in open_recorders:
        raise CaptureError(f"a capture is already open on {dev}: end it with wp.capture_end() first")
    open_recorders[dev.alias] = Recorder(dev)


def capture_end(device=None, stream=None) -> Graph:
    """Stop recording on `device` and return the recorded work as a Graph."""
    dev = get_device(device)
    if dev.alias in open_cuda_captures:
        cap = open_cuda_captures.pop(dev.alias)
        graph, exe = cuda_driver.capture_end(cap.stream.handle)
        return CudaGraph(dev, graph, exe, cap.keep)
    rec = open_recorders.pop(dev.alias, None)
    if rec is None:
        raise CaptureError(f"wp.capture_end(): no capture is open on {dev}")
    return Graph(dev, rec.commands, rec.keep, list(rec.kernels.values()), rec.callbacks)


def capture_launch(graph: Graph, stream=None):
    """Run a captured graph: its commands in order, from native code. Inside another capture on the same device,
    the graph's commands are recorded into that capture instead."""
    if isinstance(graph, CudaGraph):
        s = stream if stream is not None else get_stream(graph.device)
        if cuda_capture(graph.device) is not None:  # nested: a child graph of the one being captured
            cuda_driver.graph_add_to_capture(graph.graph, s.handle)
            keep_alive(graph.device, graph)
            return
        cuda_driver.graph_launch(graph.exe, s.handle)
        return
    if not isinstance(graph, Graph):
        raise TypeError(f"wp.capture_launch() takes a Graph from wp.capture_end(), got {type(graph).__name__}")
    rec = recorder(graph.device)
    if rec is not None:
        rec.graph(graph)
        return
    if len(graph._table) == 0:
        return
    failed = _replayer()(ctypes.addressof(graph._table), len(graph._table))
    if failed >= 0:
        error, graph._error = graph._error, None
        if error is not None:
            raise error
        raise LaunchError(f"graph replay stopped at command {failed} (kind {graph._table[failed].kind})")
    for k in graph.kernels:
        check_error(k)


class ScopedCapture:
    """`with wp.ScopedCapture() as capture:` records the block's work; the graph is `capture.graph`. If the block
    raises, the capture is ended and dropped."""

    def __init__(self, device=None, stream=None, force_module_load=None, external=False):
        self.device = get_device(device)
        self.stream = stream
        self.force_module_load = force_module_load
        self.external = external
        self.graph = None

    def __enter__(self):
        capture_begin(self.device, self.stream, self.force_module_load, self.external)
        return self

    def __exit__(self, exc_type, exc, tb):
        graph = capture_end(self.device, self.stream)
        if exc_type is None:
            self.graph = graph
        return False
