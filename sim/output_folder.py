"""An output folder that one command owns while it writes: earlier results in it are never replaced without
`--resume` or `--overwrite`, and a lock refuses a second run writing into the same folder at the same time.

The lock is `flock` on `<folder>/.sim.lock`, which holds the owner's pid and host for the refusal message. The
kernel drops the lock when its process dies, however it dies, so the lock file of a dead process is simply taken
over by the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket

from .atomic_file import write_failure
from .scene.errors import SceneError

LOCK = ".sim.lock"


def check_earlier_results(folder: str, names, *, resume: bool, overwrite: bool):
    """SceneError (exit 2) when `folder` holds any of the files `names` and neither `resume` nor `overwrite` was
    asked for, or when both were."""
    if resume and overwrite:
        raise SceneError("--resume", (), "--resume continues the results in the output folder and --overwrite "
                         "replaces them: give one of them, not both")
    if resume or overwrite:
        return
    found = [n for n in names if os.path.exists(os.path.join(folder, n))]
    if found:
        raise SceneError(folder, (), f"holds the results of an earlier run ({', '.join(found)}); continue them "
                         "with --resume, or replace them with --overwrite (or use another --out-dir)")


@contextlib.contextmanager
def folder_lock(folder: str):
    """Hold the lock of `folder` (created if missing) for the block; SceneError (exit 2) naming the other run's pid
    and host when that run holds it."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd = _acquire(os.path.join(folder, LOCK))
    except OSError as e:  # a read-only or full file system: exit 4, as for any output
        raise write_failure(os.path.join(folder, LOCK), e) from None
    try:
        yield
    finally:
        path = os.path.join(folder, LOCK)
        with contextlib.suppress(OSError):
            os.unlink(path)  # while still locked: a run waiting on this file retries on the new one
        os.close(fd)


def _acquire(path: str) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "a process"
            os.close(fd)
            raise SceneError(os.path.dirname(path), (), f"another run ({holder}) is writing into this folder; "
                             "wait for it to end, or use another --out-dir") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # else the owner removed the file between our open and flock: lock the new one
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    return fd
