"""Atomic file writes: readers see the old file or the whole new one, never half of one.

A temporary is written next to its target as `.<name>.simtmp-<pid>-<random><ext>` and renamed over it. The pid
says whose it is: a process killed before the rename leaves its temporary behind, and the next write to the same
target removes those of dead processes (`remove_stale_temporaries`), never those of a live one.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid

from kernels.compiler.cache_integrity import process_alive


def temporary_path(path) -> str:
    """Where to write `path`'s new content before renaming it into place (same directory and extension)."""
    directory, filename = os.path.split(os.path.abspath(os.fspath(path)))
    stem, extension = os.path.splitext(filename)
    return os.path.join(directory, f".{stem}.simtmp-{os.getpid()}-{uuid.uuid4().hex[:12]}{extension}")


def remove_stale_temporaries(path) -> list:
    """Remove the temporaries of `path` left by processes that no longer run; returns the removed paths."""
    directory, filename = os.path.split(os.path.abspath(os.fspath(path)))
    stem, extension = os.path.splitext(filename)
    # anything after the marker: a writer may have made its own temporary from ours (USD's export writes
    # `<our temporary>.XXXXXX` and renames it), and a kill can leave that one too
    del extension
    pattern = re.compile(re.escape(f".{stem}.simtmp-") + r"(\d+)-[0-9a-f]{12}(\.|$)")
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = pattern.match(name)
        if m is None or int(m.group(1)) == os.getpid() or process_alive(int(m.group(1))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))
            removed.append(os.path.join(directory, name))
    return removed


class OutputWriteError(OSError):
    """An output file that could not be written (full disk, read-only file system, ...): str() is one line naming
    the file and the cause. The file's previous content, if any, is still in place."""

    def __init__(self, path, cause: str):
        self.path, self.cause = os.fspath(path), cause
        super().__init__(f"cannot write {self.path}: {cause}")

    def __str__(self) -> str:
        return self.args[0]


def write_failure(path, error: OSError) -> OutputWriteError:
    """`error`, raised while writing `path` (or its temporary), as an OutputWriteError naming `path`."""
    if isinstance(error, OutputWriteError):
        return error
    return OutputWriteError(path, error.strerror or str(error) or type(error).__name__)


def write_atomic(path, data: bytes):
    """Write `data` to a temporary file next to `path`, then rename it over `path`: readers never see half a
    file, and a failure leaves any previous file in place (OutputWriteError for an OSError)."""
    path = os.fspath(path)
    remove_stale_temporaries(path)
    tmp = temporary_path(path)
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # a full disk can surface only here; the rename is as durable as the data
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise write_failure(path, e) from None
        raise


def output_problem(path) -> str | None:
    """Why `path` cannot be written as an output file (checked before any work is done), or None.

    The nearest existing ancestor must be a directory in which a file can be created (it is tried: that also
    catches read-only file systems), and `path` itself must not be a directory."""
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path):
        return "it is a directory"
    parent = os.path.dirname(path)
    while not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    if not os.path.isdir(parent):
        return f"{parent} is a file, not a directory"
    probe = os.path.join(parent, f".simtmp-probe-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    try:
        with open(probe, "xb"):
            pass
    except OSError as e:
        return f"cannot create files in {parent} ({e.strerror})"
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def write_cause(directory, fallback: str) -> str:
    """Why files cannot be written in `directory` now, found by writing and syncing a small probe there (full disk,
    read-only file system, permissions), or `fallback` when the probe succeeds. For writers such as USD's that
    fail without an errno."""
    probe = os.path.join(os.fspath(directory) or ".", f".simtmp-probe-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    try:
        with open(probe, "xb") as f:
            f.write(b"\0" * 65536)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        return e.strerror or str(e)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
    lines = fallback.strip().splitlines()
    # USD's lines read "Error in 'Function' at line N in file F : 'message'": the message is what says why
    return lines[0].rsplit(" : ", 1)[-1].strip("'") if lines else "unknown cause"
