"""Allocation tracking (Warp's `wp.ScopedMemoryTracker`, `wp.config.track_memory`, `wp.print_memory_report`):
while tracking is on, every buffer the runtime allocates (array storage on the host, pinned host memory, device
memory) is recorded with its size, device, the scope it was made in and where it was made; its release is
recorded when the buffer is freed (a finalizer on the object that owns the memory).

A buffer made by a Python call is tagged with the array it is for and the first caller outside the toolkit
("array[float32, 32] : sim.py:12 : step()"); buffers made while a runtime structure builds itself (HashGrid, Mesh,
Bvh: `native(...)`) are tagged with the structure instead ("(native:hashgrid)"). Scope stacks are per thread,
totals and the report are process-wide. Tracking is on while a ScopedMemoryTracker is open or while
`config.track_memory` is True (scope "global"); off, each allocation pays one flag test.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .. import config

__all__ = ["ScopedMemoryTracker", "print_memory_report", "report_text", "stats", "is_enabled", "reset"]


@dataclass
class _Record:
    seq: int  # allocation order
    nbytes: int
    device: str
    scope: str
    tag: str


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.scoped_enable = False  # switched on by a ScopedMemoryTracker
        self.ids = itertools.count()
        self.clear()

    def clear(self):
        self.live = {}  # id -> _Record
        self.total_count = {}  # device -> count
        self.total_bytes = {}
        self.peak_bytes = {}
        self.current_bytes = {}
        self.scopes = {}  # scope path -> {device: [count, bytes]}


_state = _State()
_local = threading.local()  # .scopes: this thread's scope names; .native: structure labels being built


def is_enabled() -> bool:
    """Whether allocations are being recorded now."""
    return _state.scoped_enable or config.track_memory


def _scope_stack() -> list:
    stack = getattr(_local, "scopes", None)
    if stack is None:
        stack = _local.scopes = []
    return stack


def _caller_tag() -> str:
    """The array being made and the first caller outside the toolkit, as "array[dtype, shape] : file:line : f()"."""
    from .. import types as T

    toolkit = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../kernels
    array_info = ""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if not array_info and code.co_name == "__init__" and type(frame.f_locals.get("self")).__name__ == "array":
            dtype, shape = frame.f_locals.get("dtype"), frame.f_locals.get("shape")
            this = frame.f_locals.get("self")
            dtype = getattr(this, "dtype", None) or dtype
            shape = getattr(this, "shape", None) or shape
            if dtype is not None and dtype is not T.Any:
                dims = list(shape) if hasattr(shape, "__iter__") else ([shape] if shape is not None else [])
                inner = f", {dims[0]}" if len(dims) == 1 else (f", {tuple(dims)}" if dims else "")
                array_info = f"array[{T.type_repr(dtype)}{inner}]"
        if not os.path.abspath(code.co_filename).startswith(toolkit + os.sep):
            parts = [array_info] if array_info else []
            parts += [f"{os.path.basename(code.co_filename)}:{frame.f_lineno}", f"{code.co_name}()"]
            return " : ".join(parts)
        frame = frame.f_back
    return "(python)"


def note(owner, nbytes: int, device: str) -> None:
    """Record an allocation of `nbytes` on `device` ("cpu", "cpu (pinned)", "cuda:0") whose memory lives as long
    as `owner`; call only when is_enabled()."""
    labels = getattr(_local, "native", None)
    tag = f"(native:{labels[0]})" if labels else _caller_tag()
    stack = _scope_stack()
    scope = "/".join(stack) if stack else "global"
    nbytes = int(nbytes)
    with _state.lock:
        key = next(_state.ids)
        _state.live[key] = _Record(key, nbytes, device, scope, tag)
        s = _state
        s.total_count[device] = s.total_count.get(device, 0) + 1
        s.total_bytes[device] = s.total_bytes.get(device, 0) + nbytes
        s.current_bytes[device] = s.current_bytes.get(device, 0) + nbytes
        s.peak_bytes[device] = max(s.peak_bytes.get(device, 0), s.current_bytes[device])
        per_scope = s.scopes.setdefault(scope, {}).setdefault(device, [0, 0])
        per_scope[0] += 1
        per_scope[1] += nbytes
    weakref.finalize(owner, _released, key)


def note_host(buffer):
    """Record a freshly allocated numpy buffer (memory owned by `buffer` or its base) if tracking; returns it."""
    if is_enabled():
        owner = _root(buffer)
        note(owner, owner.nbytes, "cpu")
    return buffer


def _root(x):
    while isinstance(getattr(x, "base", None), np.ndarray):
        x = x.base
    return x


def note_copy(buffer, source) -> None:
    """Record `buffer` (an array's storage made from `source`) if it is new memory, not a view of `source`."""
    root = _root(buffer)
    if root is not _root(source) and getattr(root, "flags", None) is not None and root.flags.owndata:
        note(root, root.nbytes, "cpu")


def _released(key: int) -> None:
    with _state.lock:
        record = _state.live.pop(key, None)  # None: made before a reset()
        if record is not None:
            _state.current_bytes[record.device] -= record.nbytes


def native(label: str):
    """Decorator for a runtime structure's building method: buffers it allocates are tagged "(native:label)"."""
    def wrap(method):
        @functools.wraps(method)
        def tagged(*args, **kwargs):
            if not is_enabled():
                return method(*args, **kwargs)
            labels = getattr(_local, "native", None)
            if labels is None:
                labels = _local.native = []
            labels.append(label)
            try:
                return method(*args, **kwargs)
            finally:
                labels.pop()
        return tagged
    return wrap


def reset() -> None:
    """Forget every record (totals, peaks, live allocations); tracking stays as it is."""
    with _state.lock:
        _state.clear()


def stats() -> dict:
    """Process-wide totals over all devices: total_count, total_bytes (allocated since the last reset),
    live_count, current_bytes (still allocated), peak_bytes (the largest current_bytes of any device)."""
    with _state.lock:
        s = _state
        return {"total_count": sum(s.total_count.values()), "total_bytes": sum(s.total_bytes.values()),
                "live_count": len(s.live), "current_bytes": sum(s.current_bytes.values()),
                "peak_bytes": max(s.peak_bytes.values(), default=0)}


def _size(n: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def report_text(sort: str = "size", max_items: int = 10) -> str:
    """The report: totals, peak and live allocations per device, a breakdown by scope, and the live allocations
    of each device, largest first (sort="size") or oldest first ("chronological"), at most `max_items` each."""
    if sort not in ("size", "chronological"):
        raise ValueError(f"Invalid sort order {sort!r}; expected 'size' or 'chronological'")
    with _state.lock:
        s = _state
        live = sorted(s.live.values(), key=(lambda r: -r.nbytes) if sort == "size" else (lambda r: r.seq))
        devices = sorted(s.total_count)
        lines = ["Allocation Tracking Report", "  Total allocations:"]
        lines += [f"    {d:16s} {s.total_count[d]} ({_size(s.total_bytes[d])})" for d in devices]
        lines += ["  Peak usage:"] + [f"    {d:16s} {_size(s.peak_bytes[d])}" for d in devices]
        lines += ["  Live allocations:"]
        for d in devices:
            mine = [r for r in live if r.device == d]
            lines.append(f"    {d:16s} {len(mine)} ({_size(sum(r.nbytes for r in mine))})")
        lines += ["", "  Scope breakdown:"]
        for scope in sorted(s.scopes):
            lines.append(f"    {scope}:")
            lines += [f"      {d}: {c} allocs, {_size(b)}" for d, (c, b) in sorted(s.scopes[scope].items())]
        order = "largest first" if sort == "size" else "oldest first"
        for d in devices:
            mine = [r for r in live if r.device == d][:max_items]
            if mine:
                lines += ["", f"  Live {d} allocations by {sort} ({order}) (up to {max_items}):"]
                lines += [f"    {_size(r.nbytes)} : {d} : {r.scope} : {r.tag}" for r in mine]
    return "\n".join(lines) + "\n"


def print_memory_report(file=None, sort: str = "size", max_items: int = 10) -> None:
    """Print report_text() to `file` (stdout).

    Raises:
        RuntimeError: tracking is off (no ScopedMemoryTracker open and config.track_memory False).
        ValueError: `sort` is neither "size" nor "chronological".
    """
    if sort not in ("size", "chronological"):
        raise ValueError(f"Invalid sort order {sort!r}; expected 'size' or 'chronological'")
    if not is_enabled():
        raise RuntimeError("Allocation tracking is not active: set wp.config.track_memory = True, or use "
                           "wp.ScopedMemoryTracker as a context manager.")
    print(report_text(sort, max_items), file=file or sys.stdout, end="")


def _enable(on: bool) -> None:
    _state.scoped_enable = bool(on)


class ScopedMemoryTracker:
    """`with ScopedMemoryTracker("name") as tracker:` records allocations made inside the block under scope
    "name" (nested trackers: "outer/inner"), and prints the report on exit (print=True).

    Args:
        name: the scope's name.
        active: False makes the tracker do nothing (keep it in code, switch it off).
        print: print the report when the block ends.
        report_func: called with the report text instead of printing it.
    """

    def __init__(self, name: str = "root", active: bool = True, print: bool = True, report_func=None):
        self.name = name
        self.active = active
        self.print = print
        self.report_func = report_func
        self._did_enable = False

    def __enter__(self):
        if self.active:
            _scope_stack().append(self.name)
            if not _state.scoped_enable:
                _enable(True)
                self._did_enable = True
        return self

    def __exit__(self, *exc):
        if not self.active:
            return False
        _scope_stack().pop()
        try:
            if self.print:
                self.report()
        finally:
            if self._did_enable:
                _enable(False)
                self._did_enable = False
        return False

    def report(self, file=None, sort: str = "size", max_items: int = 10) -> None:
        """Print the report as it stands now (also after the block ended)."""
        text = report_text(sort, max_items)
        if self.report_func is not None:
            self.report_func(text)
        else:
            print(text, file=file or sys.stdout, end="")

    def clear(self) -> None:
        """Forget what was recorded so far; tracking goes on."""
        reset()
