"""Device memory: a caching allocator, and reads, writes and copies of strided arrays in device memory.

A CUDA array's layout is described by a numpy array whose data pointer is the *device* address (`device_layout`):
numpy then computes every view (slices, reshapes, transposes, dtype views) exactly as on the CPU, but such an array
is never read or written on the host: it is made read-only, and every data access goes through this module's
`read`/`write`/`copy`, which move bytes with the driver.

Allocation: freed blocks are kept per device in size classes (at most 1/8 larger than asked) and handed out
again, so a taped rollout that allocates fresh arrays every step costs no driver calls after the first steps.
Reuse is ordered on the device's streams: a block freed while other streams than the default exist on its device
carries an event recorded at the free, which the next user's stream waits for. When the driver is out of memory,
the cached blocks are released and the allocation tried once more.
"""

from __future__ import annotations

import numpy as np

from . import cuda_driver as cu
from . import memory_tracker
from .recording import cuda_capture, keep_alive
from .array_layout import contiguous_strides
from .device import current_stream_handle, get_device, multiple_streams


def _size_class(nbytes: int) -> int:
    """The block size served for a request of `nbytes`: a multiple of 512 bytes, at most 1/8 above the request."""
    n = max(int(nbytes), 1)
    step = max(512, 1 << max(n.bit_length() - 4, 0))
    return (n + step - 1) // step * step


class _Pool:
    """The free blocks of one device: size class -> list of (pointer, event or None)."""

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.free: dict = {}
        self.cached_bytes = 0
        self.used_bytes = 0
        self.driver_allocs = 0

    def take(self, nbytes: int) -> tuple:
        size = _size_class(nbytes)
        blocks = self.free.get(size)
        if blocks:
            ptr, event = blocks.pop()
            self.cached_bytes -= size
            if event is not None:
                cu.stream_wait_event(current_stream_handle(self.ordinal), event)
                cu.event_destroy(event)
            self.used_bytes += size
            return ptr, size
        try:
            ptr = cu.mem_alloc(self.ordinal, size)
        except cu.CudaError as e:
            if e.code != "CUDA_ERROR_OUT_OF_MEMORY" or not self.cached_bytes:
                raise
            self.release_cached()
            ptr = cu.mem_alloc(self.ordinal, size)
        self.driver_allocs += 1
        self.used_bytes += size
        return ptr, size

    def give(self, ptr: int, size: int):
        event = None
        if multiple_streams(self.ordinal):
            event = cu.event_create(self.ordinal)
            cu.event_record(event, current_stream_handle(self.ordinal))
        self.free.setdefault(size, []).append((ptr, event))
        self.cached_bytes += size
        self.used_bytes -= size

    def release_cached(self):
        """Return every cached block to the driver (after the device's work is done)."""
        cu.synchronize_device(self.ordinal)
        for blocks in self.free.values():
            for ptr, event in blocks:
                if event is not None:
                    cu.event_destroy(event)
                cu.mem_free(self.ordinal, ptr)
        self.free.clear()
        self.cached_bytes = 0


_pools: dict = {}


def pool(ordinal: int) -> _Pool:
    p = _pools.get(ordinal)
    if p is None:
        p = _pools[ordinal] = _Pool(ordinal)
    return p


class Allocation:
    """`nbytes` of device memory on device `ordinal` at address `ptr`, returned to the pool when collected."""

    __slots__ = ("ptr", "nbytes", "ordinal", "_size", "__weakref__")

    def __init__(self, ordinal: int, nbytes: int):
        self.ordinal = ordinal
        self.nbytes = int(nbytes)
        self.ptr, self._size = pool(ordinal).take(nbytes)
        if memory_tracker.is_enabled():
            memory_tracker.note(self, self.nbytes, f"cuda:{ordinal}")

    def __del__(self):
        try:
            pool(self.ordinal).give(self.ptr, self._size)
        except Exception:  # noqa: BLE001  interpreter shutdown: the driver may be gone; the process frees it all
            pass


def empty_cache(ordinal: int | None = None):
    """Give the cached free blocks of one device (all when None) back to the driver."""
    for o, p in list(_pools.items()):
        if ordinal is None or o == ordinal:
            p.release_cached()


def memory_stats(ordinal: int) -> dict:
    """Bytes in use by arrays, bytes cached for reuse, and how many blocks came from the driver."""
    p = pool(ordinal)
    return {"used_bytes": p.used_bytes, "cached_bytes": p.cached_bytes, "driver_allocations": p.driver_allocs}


# ---------------------------------------------------------------------------------------------------- layouts


class _Description:
    """Hands numpy a buffer description through the array interface (nothing is read at the address)."""

    def __init__(self, ptr: int, dtype: np.dtype, shape: tuple, strides: tuple):
        self.__array_interface__ = {"shape": tuple(shape), "typestr": dtype.str,
                                    "descr": dtype.descr if dtype.fields else [("", dtype.str)],
                                    "data": (int(ptr), False), "strides": tuple(strides), "version": 3}


def device_layout(ptr: int, dtype: np.dtype, shape: tuple, strides: tuple | None = None) -> np.ndarray:
    """A read-only numpy array describing memory at device address `ptr`: use its shape, strides and
    `.ctypes.data`, never its elements."""
    if strides is None:
        strides = contiguous_strides(tuple(shape), dtype.itemsize)
    a = np.asarray(_Description(ptr, dtype, shape, strides))
    a.flags.writeable = False
    return a


def index(layout: np.ndarray, key: tuple) -> np.ndarray:
    """`layout[key]` for ints and slices, without reading an element (numpy reads memory when every dimension is
    indexed by an int: each int here becomes a one-element slice whose dimension is then dropped)."""
    slices, drop = [], []
    for d, k in enumerate(key):
        if isinstance(k, slice):
            slices.append(k)
            continue
        n = layout.shape[d]
        i = int(k) + n if int(k) < 0 else int(k)
        if not 0 <= i < n:
            raise IndexError(f"index {int(k)} is out of bounds for axis {d} with size {n}")
        slices.append(slice(i, i + 1))
        drop.append(d)
    view = layout[tuple(slices)]
    keep = [d for d in range(view.ndim) if d not in drop]
    out = np.lib.stride_tricks.as_strided(view, shape=tuple(view.shape[d] for d in keep),
                                          strides=tuple(view.strides[d] for d in keep), writeable=False)
    return out


def _capturing(ordinal: int) -> bool:
    return cuda_capture(get_device(f"cuda:{ordinal}")) is not None


def _pinned_copy(host: np.ndarray) -> np.ndarray:
    """A copy of host array `host` in page-locked memory (freed with the returned array)."""
    import ctypes
    import weakref
    nbytes = max(host.nbytes, 1)
    ptr = cu.host_alloc_pinned(nbytes)
    raw = (ctypes.c_byte * nbytes).from_address(ptr)
    weakref.finalize(raw, cu.host_free_pinned, ptr)
    out = np.ndarray(host.shape, dtype=host.dtype, buffer=raw)
    out[...] = host
    return out


def _captured(ordinal: int, host_buffer) -> bool:
    """Inside a CUDA capture on device `ordinal`, keep `host_buffer` (read at every replay) with the graph."""
    return keep_alive(get_device(f"cuda:{ordinal}"), host_buffer)


def _stream(ordinal: int):
    return current_stream_handle(ordinal)


def _strided_copy(layout: np.ndarray, host: np.ndarray, stream, to_device: bool):
    """Copy between strided device layout `layout` and C-contiguous host array `host` (same shape), only the
    elements' bytes: the layout's innermost contiguous run of bytes is a row of a 2D copy whose rows step by the
    next dimension's stride; one 2D copy per index of the dimensions outside those."""
    if any(st < 0 for st in layout.strides):
        raise ValueError("CUDA array views with negative strides are not supported")
    shape, strides = list(layout.shape), list(layout.strides)
    row = layout.itemsize
    while shape and strides[-1] == row:  # merge the trailing contiguous dimensions into one row of bytes
        row *= shape.pop()
        strides.pop()
    if not shape:  # contiguous after all (numpy's flags can miss it for dimensions of extent 1)
        shape, strides = [1], [row]
    height, pitch = shape[-1], strides[-1]
    outer_shape, outer_strides = shape[:-1], strides[:-1]
    block = height * row  # host bytes of one 2D copy
    base, hbase = layout.ctypes.data, host.ctypes.data
    for k, idx in enumerate(np.ndindex(*outer_shape) if outer_shape else [()]):
        offset = sum(i * st for i, st in zip(idx, outer_strides))
        if to_device:
            cu.memcpy_2d(base + offset, pitch, hbase + k * block, row, row, height, stream, src_host=True)
        else:
            cu.memcpy_2d(hbase + k * block, row, base + offset, pitch, row, height, stream, dst_host=True)


def read(layout: np.ndarray, ordinal: int) -> np.ndarray:
    """The elements of device layout `layout` as a new C-contiguous host array (waits for the device's work)."""
    out = np.empty(layout.shape, dtype=layout.dtype)
    if layout.size == 0:
        return out
    if _capturing(ordinal):
        raise RuntimeError(f"a CUDA array on cuda:{ordinal} cannot be read on the host inside a capture on its "
                           "device: its values exist only when the graph runs (read it after capture_launch)")
    stream = _stream(ordinal)
    if layout.flags.c_contiguous:
        cu.memcpy_dtoh(out.ctypes.data, layout.ctypes.data, layout.nbytes, stream)
        return out
    _strided_copy(layout, out, stream, to_device=False)
    cu.stream_synchronize(stream)
    return out


def write(layout: np.ndarray, ordinal: int, data):
    """Write host data (broadcast to the layout's shape) into device layout `layout`. A strided layout is read,
    changed and written back whole over the bytes it spans (the bytes between its elements are written with what
    they held)."""
    if layout.size == 0:
        return
    src = np.ascontiguousarray(np.broadcast_to(np.asarray(data, dtype=layout.dtype), layout.shape))
    stream = _stream(ordinal)
    capturing = _capturing(ordinal)
    if capturing:
        src = _pinned_copy(src)  # copied now, written at every replay (graphs copy from page-locked memory)
        _captured(ordinal, src)
    if layout.flags.c_contiguous:
        cu.memcpy_htod(layout.ctypes.data, src.ctypes.data, layout.nbytes, stream)
    else:
        _strided_copy(layout, src, stream, to_device=True)
    if not capturing:
        cu.stream_synchronize(stream)  # `src` may be a temporary: the copy must be done before it is freed


def fill(layout: np.ndarray, ordinal: int, element: np.ndarray):
    """Set every element of device layout `layout` to `element` (one element in the layout's scalar layout):
    a driver memset when the element is one repeated byte or 32-bit word and the layout contiguous."""
    if layout.size == 0:
        return
    raw = np.ascontiguousarray(element).view(np.uint8).ravel()
    if layout.flags.c_contiguous:
        stream = _stream(ordinal)
        if np.all(raw == raw[0]):
            cu.memset_d8(layout.ctypes.data, int(raw[0]), layout.nbytes, stream)
            return
        if raw.size % 4 == 0 and layout.ctypes.data % 4 == 0:
            words = raw.view(np.uint32)
            if np.all(words == words[0]):
                cu.memset_d32(layout.ctypes.data, int(words[0]), layout.nbytes // 4, stream)
                return
    inner = element.shape
    full = np.broadcast_to(element, layout.shape[:layout.ndim - len(inner)] + inner) if inner else element
    write(layout, ordinal, full)


def copy(dst: np.ndarray, dst_ordinal: int, src: np.ndarray, src_ordinal: int):
    """Copy the elements of layout `src` into layout `dst` (same shape); an ordinal of -1 marks host memory.
    Contiguous layouts copy with one driver call; others through the host."""
    if dst.size == 0:
        return
    if dst.flags.c_contiguous and src.flags.c_contiguous and dst.dtype == src.dtype:
        if dst_ordinal >= 0 and src_ordinal >= 0:
            cu.memcpy_dtod(dst.ctypes.data, src.ctypes.data, dst.nbytes, _stream(dst_ordinal))
            if dst_ordinal != src_ordinal:
                cu.synchronize_device(dst_ordinal)
            return
        if dst_ordinal >= 0:
            if _capturing(dst_ordinal):
                src = _pinned_copy(src)
                _captured(dst_ordinal, src)
                cu.memcpy_htod(dst.ctypes.data, src.ctypes.data, dst.nbytes, _stream(dst_ordinal))
                return
            cu.memcpy_htod(dst.ctypes.data, src.ctypes.data, dst.nbytes, _stream(dst_ordinal))
            cu.stream_synchronize(_stream(dst_ordinal))
            return
        cu.memcpy_dtoh(dst.ctypes.data, src.ctypes.data, dst.nbytes, _stream(src_ordinal))
        return
    host = read(src, src_ordinal) if src_ordinal >= 0 else src
    if dst_ordinal >= 0:
        write(dst, dst_ordinal, host)
    else:
        dst[...] = host
