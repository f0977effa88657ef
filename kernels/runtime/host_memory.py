"""Host allocation policy. CPU arrays are numpy buffers from malloc. By default glibc serves blocks above a
dynamic threshold (128 KiB at first) with mmap and unmaps them on free, so the next array of that size
page-faults every page in again. A taped rollout allocates fresh arrays every step and iteration, and there
the faults cost more than the kernels (about 2x on a 64x64 cloth's backward). Here malloc keeps such blocks
in its heap for reuse instead.

The policy changes malloc for the whole process, so importing `kernels` never applies it: a program asks for it
with `wp.keep_freed_host_memory()` (the toolkit's own entry points do: the `sim` CLI, sweep runs, the benchmarks
and the test suite). It cannot be undone in the process (glibc has no way back to its dynamic threshold).
Set KERNELS_KEEP_FREED_MEMORY=0 to make that call a no-op and leave malloc's defaults alone."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest allowed value on 64-bit: bigger blocks still use mmap
TRIM_THRESHOLD = 512 * 1024 * 1024  # free memory at the top of the heap kept before trimming [bytes]


_applied = False


def keep_freed_memory() -> bool:
    """Apply the policy (Linux with glibc only; once per process, later calls return the first answer); True when
    malloc accepted it."""
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux") or os.environ.get("KERNELS_KEEP_FREED_MEMORY", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _applied


def is_keeping_freed_memory() -> bool:
    """Whether keep_freed_memory() was applied in this process."""
    return _applied
