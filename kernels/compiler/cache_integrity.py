"""Integrity of compile-cache entries: a manifest (size and SHA-256) is written with every cached library or PTX
file, and checked before the file is used, so a truncated or overwritten entry is rebuilt instead of crashing the
process inside the dynamic loader (a library cut short gives SIGBUS in `dlopen`, one overwritten inside SIGSEGV).

Also the cleanup of temporaries left by processes that were killed while building: their names carry the owner's
pid, and those of dead owners are removed on the next build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys

MANIFEST_SUFFIX = ".sha256"


def _digest(path: str) -> tuple:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def write_manifest(path: str) -> None:
    """Record the size and hash of `path` in `path.sha256` (written to a temp file and renamed)."""
    size, digest = _digest(path)
    tmp = f"{path}{MANIFEST_SUFFIX}.{os.getpid()}.tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(f"{size} {digest}\n")
    os.chmod(path, 0o600 if not path.endswith(".so") else 0o700)  # the user's alone, whatever the umask
    os.replace(tmp, path + MANIFEST_SUFFIX)


def damage(path: str) -> str | None:
    """Why the cached file `path` must not be used (missing manifest, size or hash differs), or None if intact."""
    try:
        with open(path + MANIFEST_SUFFIX) as f:
            size_text, digest = f.read().split()
        expected = (int(size_text), digest)
    except (OSError, ValueError):
        return "it has no valid manifest of its size and hash"
    try:
        actual = _digest(path)
    except OSError as e:
        return f"it cannot be read ({e.strerror})"
    if actual[0] != expected[0]:
        return f"its size is {actual[0]} bytes, {expected[0]} were written"
    if actual[1] != expected[1]:
        return "its content hash differs from the one written"
    return None


def report_rebuild(path: str, why: str) -> None:
    """One line on stderr: which cache entry was damaged and that it is being rebuilt."""
    print(f"kernels: cache entry {path} is damaged ({why}); rebuilding it", file=sys.stderr)


def temp_name(prefix: str) -> str:
    """A temporary's name prefix that records its owner: `.<prefix>.<pid>.`."""
    return f".{prefix}.{os.getpid()}."


def process_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this machine (one we may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_swept: set = set()


def sweep_dead_temporaries(directory: str) -> None:
    """Remove temporaries (`.<prefix>.<pid>.*`) in `directory` whose owner process is gone, once per directory and
    process. A reused pid only keeps a stale temporary longer; a live owner's temporary is never touched. (The
    cache directory is assumed to belong to one machine: pids of another host's processes cannot be checked.)"""
    if directory in _swept:
        return
    _swept.add(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if not name.startswith(".") or len(parts) < 4 or not parts[-2].isdigit():
            continue
        pid = int(parts[-2])
        path = os.path.join(directory, name)
        try:
            if pid == os.getpid() or process_alive(pid):
                continue
        except OSError:
            continue
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
