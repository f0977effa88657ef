"""Atomic file writes: readers see the old file or the whole new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_atomic(path, data: bytes):
    """Write `data` to a temporary file next to `path`, then rename it over `path`: readers never see half a
    file, and a failure leaves any previous file in place."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes the file private
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
