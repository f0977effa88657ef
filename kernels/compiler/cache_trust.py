"""Trust in the compile cache: nobody else's code is loaded from it.

The cache holds native libraries (and GPU machine code) that this process loads and runs, so every folder of it
must be writable by its owner alone, the owner being the user running the process. Folders are created 0700
whatever the umask. A cache folder that another user owns, that group or others may write, or whose parent lets
others replace it (writable by others without the sticky bit) is refused with one line naming it: raised as a
CacheTrustError when the user chose the folder (KERNELS_CACHE_DIR, wp.config.cache_dir); for the default location a
private temporary cache is used instead, said once on stderr. A cache that cannot be created or written (read-only,
full) falls back to a private temporary cache the same way, said once, naming the folder and KERNELS_CACHE_DIR.

Before a cached file is used, `check_file` requires it inside the cache root (index records name libraries by
relative path; an absolute path or `..` points elsewhere) and owned by the user, in folders only the user can
write: a file another user planted, even with a matching manifest, is never loaded.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from .. import config

DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "kernels")


class CacheTrustError(RuntimeError):
    """The compile cache folder chosen by the user could be written by someone else."""


_effective: dict = {}  # configured cache folder -> the folder used
_fallback: list = []  # the private temporary cache, once made


def _uid():
    return os.getuid() if hasattr(os, "getuid") else None


def untrusted_reason(path: str) -> str | None:
    """Why folder or file `path` must not be trusted (another owner, group/other write, a replaceable parent), or
    None."""
    uid = _uid()
    if uid is None:  # no POSIX ownership (Windows): the user's profile folder is trusted as the OS protects it
        return None
    real = os.path.realpath(path)
    st = os.stat(real)
    if st.st_uid != uid:
        return f"it belongs to uid {st.st_uid}, not to this user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"group or other users may write it (mode {stat.S_IMODE(st.st_mode):o})"
    parent = os.path.dirname(real)
    while parent and parent != os.path.dirname(parent):
        pst = os.stat(parent)
        if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
            return f"its parent folder {parent} lets other users replace it (writable by all, not sticky)"
        if pst.st_uid not in (uid, 0) and pst.st_mode & stat.S_IWGRP and not pst.st_mode & stat.S_ISVTX:
            return f"its parent folder {parent} belongs to another user and its group may write it"
        parent = os.path.dirname(parent)
    return None


def make_private_dirs(path: str) -> None:
    """Create folder `path` and its missing parents with mode 0700 whatever the umask."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
        os.chmod(d, 0o700)  # the umask may have taken bits away, never added: set exactly


def _say(message: str) -> None:
    print(f"kernels: {message}", file=sys.stderr)


def _private_fallback(reason: str) -> str:
    if not _fallback:
        _fallback.append(tempfile.mkdtemp(prefix="kernels-cache-"))  # 0700, ours
        _say(f"{reason}; compiling into a private temporary cache ({_fallback[0]}) for this process. Set "
             f"KERNELS_CACHE_DIR to a folder only you can write to keep compiled kernels between runs.")
    return _fallback[0]


def cache_dir() -> str:
    """The cache folder to use for the configured one (wp.config.cache_dir), checked once per folder."""
    configured = config.cache_dir
    used = _effective.get(configured)
    if used is None:
        used = _effective[configured] = _establish(configured)
    return used


def _establish(folder: str) -> str:
    try:
        make_private_dirs(folder)
        why = untrusted_reason(folder)
    except OSError as e:
        return _private_fallback(f"the compile cache {folder} cannot be created ({e.strerror})")
    if why is None:
        if not os.access(folder, os.W_OK | os.X_OK):
            return _private_fallback(f"the compile cache {folder} is not writable")
        return folder
    if os.path.abspath(folder) == os.path.abspath(DEFAULT_CACHE_DIR) and "KERNELS_CACHE_DIR" not in os.environ:
        return _private_fallback(f"the compile cache {folder} is not safe ({why})")
    raise CacheTrustError(f"refusing the compile cache {folder}: {why}. Use a folder only you can write "
                          f"(KERNELS_CACHE_DIR or wp.config.cache_dir).")


def write_failed(folder: str, error: OSError) -> str:
    """After writing into the cache failed (full, read-only): the private temporary cache to use instead,
    said once; the configured folder is not tried again by this process."""
    fallback = _private_fallback(f"writing into the compile cache {folder} failed ({error.strerror}); "
                                 f"KERNELS_CACHE_DIR chooses another folder")
    _effective[config.cache_dir] = fallback
    return fallback


def report_untrusted(path: str, why: str) -> None:
    """One line on stderr: a cached file or entry is not used, and why."""
    _say(f"cache entry {path} is not used ({why}); building it again")


def check_file(path: str, root: str) -> str | None:
    """Why cached file `path` must not be used (outside the cache root `root`, or not the user's own in folders
    only the user writes), or None."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, real_root]) != real_root:
        return f"it lies outside the cache folder {root}"
    try:
        for p in (real, os.path.dirname(real)):
            why = untrusted_reason(p)
            if why is not None:
                return why
    except OSError as e:
        return f"it cannot be checked ({e.strerror})"
    return None
