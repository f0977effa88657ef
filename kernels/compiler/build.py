"""Build: compile generated source to a loadable library, with an on-disk cache shared between processes.

A cache entry is a directory named by the hash of everything that decides the binary (source text, compiler and
its version, flags, package version). It is built in a temporary directory and renamed into place, so a process
never sees a half-written entry; two processes building the same entry both succeed and one rename wins.
An entry whose library fails to load (corrupt, truncated) is deleted and rebuilt. The key needs the generated source;
cache_index.py finds an entry before code generation, for processes that load a module already built.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import shlex
import shutil
import time

from .. import config
from . import library_version
from .cache_integrity import damage, report_rebuild, sweep_dead_temporaries, temp_name, write_manifest
from ..errors import NativeCompileError
from .cache_trust import cache_dir, check_file, make_private_dirs, report_untrusted, write_failed

VERSION = config.version
NATIVE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native")  # kernels/native

_compiler_cache: dict = {}


def find_cxx() -> list:
    """The C++ compiler command (a list: program, then its leading arguments): config.cxx, $CXX, or the first of
    c++/g++/clang++ on PATH; without any of them the clang inside the `ziglang` wheel (`zig c++`, a dependency), so
    a machine with no system compiler (a slim Python image) still builds kernels. Searched again only when
    config.cxx, $CXX, $PATH or the modification time of a PATH folder (a compiler installed) changed: each load
    of a library asks, and the search of three names along PATH takes 0.2 ms."""
    path = os.environ.get("PATH", "")
    stamps = []
    for folder in path.split(os.pathsep):
        try:
            stamps.append(os.stat(folder).st_mtime_ns)
        except OSError:
            stamps.append(None)
    setting = (config.cxx, os.environ.get("CXX"), path, tuple(stamps))
    found = _found_cxx.get(setting)
    if found is None:
        found = _found_cxx[setting] = _search_cxx()
    return list(found)


_found_cxx: dict = {}


def _search_cxx() -> list:
    cand = [config.cxx] if config.cxx else ([os.environ["CXX"]] if os.environ.get("CXX") else [])
    cand += ["c++", "g++", "clang++"]
    for c in cand:
        path = shutil.which(c)
        if path:
            return [path]
    zig = ziglang_binary()
    if zig is not None:
        return [zig, "c++"]
    raise NativeCompileError("no C++ compiler found: install g++ or clang++, set $CXX, or pip install ziglang "
                             "(the CPU backend compiles kernels with it)")


def ziglang_binary() -> str | None:
    """The `zig` executable of the installed `ziglang` wheel (what `python -m ziglang` runs), or None. Found
    without importing the package."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("ziglang")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(folder, "zig")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def compiler_identity(cxx: list) -> str:
    """The first line of `cxx --version` (what diagnostics and Warp's CPU cache key name; a subprocess, so asked
    only when wanted: the compile cache keys on compiler_stamp)."""
    key = tuple(cxx)
    ident = _compiler_cache.get(key)
    if ident is None:
        import subprocess
        out = subprocess.run([*cxx, "--version"], capture_output=True, text=True)
        ident = (out.stdout.splitlines() or [""])[0]
        _compiler_cache[key] = ident
    return ident


def compiler_stamp(cxx: list) -> tuple:
    """The compiler command, the real path of the binary it runs, and that binary's size and mtime, once per
    process: another or an upgraded compiler builds other binaries. A stat, not `cxx --version` (a 2 ms
    subprocess at every process's first library)."""
    key = tuple(cxx)
    stamp = _compiler_stamps.get(key)
    if stamp is None:
        real = os.path.realpath(cxx[0])
        st = os.stat(real)
        stamp = _compiler_stamps[key] = (*key, real, st.st_size, st.st_mtime_ns)
    return stamp


_compiler_stamps: dict = {}


_announced: set = set()  # devices whose first cold compile this process has announced


def announce_compile(device: str, what: str, compiler: list | None = None):
    """One line on stderr when the first compile the cache cannot answer starts on `device` in this process
    (config.compile_notice): a cold compile of a simulation takes 10-30 s, which would otherwise pass in silence.
    `what` says what is compiled ("12 kernels of module 'sim.reductions'")."""
    if not config.compile_notice or config.log_level > 20 or device in _announced:
        return
    _announced.add(device)
    import sys
    using = ""
    if compiler is not None and len(compiler) > 1 and compiler[1] == "c++" and \
            os.path.basename(compiler[0]) == "zig":
        using = "; with the ziglang wheel's clang, as no system C++ compiler was found"
    print(f"kernels: compiling {what} for {device} (first run; cached afterwards{using})...", file=sys.stderr,
          flush=True)


def cpu_flags(debug: bool, optimization_level: int | None = None, cpu_compiler_flags: str | None = None) -> list:
    """The C++ compiler's flags. `optimization_level` and `cpu_compiler_flags` are a module's options (Warp's);
    None takes config's value, and a None there the default (-O3, or -O1 -g in debug mode; -march=native)."""
    level = optimization_level if optimization_level is not None else config.optimization_level
    target = cpu_compiler_flags if cpu_compiler_flags is not None else config.cpu_compiler_flags
    if level is None:
        opt = ["-O1", "-g"] if debug else ["-O3"]
    elif isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise ValueError(f"optimization_level must be an integer from 0 to 3 or None, got {level!r}")
    else:
        opt = [f"-O{level}"] + (["-g"] if debug else [])
    target_flags = ["-march=native"] if target is None else shlex.split(target)
    # parallel launches run on the process's own thread pool (native/thread_pool.cpp,
    # kernels/runtime/thread_pool.py); the OpenMP runtime it replaced stays selectable for comparison
    # (config.cpu_runtime)
    threads = ["-fopenmp", "-DWP_OPENMP_RUNTIME"] if config.cpu_runtime == "openmp" else ["-pthread"]
    contract = [] if config.fp_contract else ["-ffp-contract=off"]
    # GCC 12 miscompiles valid generated code: two variables given one stack slot are still told apart by type,
    # so a load of one is moved above a store into the other (a two-result builtin's second register lost; Warp's
    # test_quat_to_axis_angle_grad_float32_cpu). No type-based alias analysis, no such reordering: the code's
    # correctness never rests on it. docs/cpu_compiler_bug.md, tests/test_cpu_stack_slot_aliasing.py.
    return ["-std=c++17", "-shared", "-fPIC", *threads, "-fno-math-errno", "-fno-strict-aliasing", *target_flags,
            "-fvisibility=hidden", "-w", *opt, *contract, *config.cxx_flags]


def native_hash() -> str:
    """Hash of the native headers: a change to them invalidates every cached module. The headers are read again
    only when their names, sizes or modification times changed since the last call in this process."""
    global _native_hash
    names = sorted(n for n in os.listdir(NATIVE_DIR) if n.endswith(".h"))
    stamp = []
    for name in names:
        st = os.stat(os.path.join(NATIVE_DIR, name))
        stamp.append((name, st.st_size, st.st_mtime_ns))
    if _native_hash is None or _native_hash[0] != stamp:
        h = hashlib.sha256()
        for name in names:
            with open(os.path.join(NATIVE_DIR, name), "rb") as f:
                h.update(name.encode() + f.read())
        _native_hash = (stamp, h.hexdigest())
    return _native_hash[1]


_native_hash = None  # (stamp of the headers, their hash)


def cache_key(source: str, compiler: str, flags: list, headers: bool = True) -> str:
    """The cache entry's key: the source, compiler and flags, the toolkit's version and (`headers`: the source
    includes native/*.h) the native headers' hash."""
    h = hashlib.sha256()
    for part in (source, compiler, " ".join(flags), VERSION, native_hash() if headers else "-"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def cache_root() -> str:
    """The directory of this version's cache entries (and of the cache index, cache_index.py), in the cache folder
    this process trusts (cache_trust.py)."""
    return os.path.join(cache_dir(), VERSION)


class BuildResult:
    def __init__(self, path: str, cached: bool, seconds: float):
        self.path = path
        self.cached = cached
        self.seconds = seconds


def build_cpu(source: str, name: str, debug: bool, notice: str | None = None, *,
              optimization_level: int | None = None, cpu_compiler_flags: str | None = None,
              headers: bool = True) -> BuildResult:
    """Compile `source` to a shared library (or find it in the cache) and return its path. When the cache cannot
    be written (full, read-only), the build goes to a private temporary cache, said once (cache_trust.py).
    `notice` says what is compiled when a compile starts (announce_compile; default: the module's name);
    `optimization_level` and `cpu_compiler_flags`: the module's options (see cpu_flags); `headers`: whether the
    source includes the native headers (their hash is then part of the key)."""
    flags = cpu_flags(debug, optimization_level, cpu_compiler_flags)
    try:
        return _build_cpu(source, name, flags, notice, headers)
    except OSError as e:
        folder = os.path.dirname(cache_root())
        write_failed(folder, e)
        try:
            return _build_cpu(source, name, flags, notice, headers)
        except OSError as again:
            raise NativeCompileError(f"module '{name}' cannot be built: {e.strerror} in the compile cache {folder}, "
                                     f"and {again.strerror} in the private temporary cache "
                                     f"{os.path.dirname(cache_root())}") from None


def _build_cpu(source: str, name: str, flags: list, notice: str | None, headers: bool) -> BuildResult:
    cxx = find_cxx()
    key = cache_key(source, repr(compiler_stamp(cxx)), flags, headers)
    root = cache_root()
    entry = os.path.join(root, f"{name}_{key}")
    lib = os.path.join(entry, "module.so")
    if os.path.exists(lib) and config.cache_kernels:
        untrusted = check_file(lib, root)
        why = untrusted or damage(lib)
        if why is None:
            return BuildResult(lib, True, 0.0)
        (report_untrusted if untrusted else report_rebuild)(entry, why)
        shutil.rmtree(entry, ignore_errors=True)
        if os.path.exists(lib):
            raise OSError(13, f"cache entry {entry} cannot be replaced")
    import subprocess
    import tempfile
    make_private_dirs(root)
    sweep_dead_temporaries(root)
    announce_compile("cpu", notice or f"module '{name}'", cxx)
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix=temp_name(name), dir=os.path.dirname(entry))
    try:
        src_path = os.path.join(tmp, "module.cpp")
        with open(src_path, "w") as f:
            f.write(source)
        cmd = [*cxx, *flags, f"-I{NATIVE_DIR}", src_path, "-o", os.path.join(tmp, "module.so")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            for text, code in (("No space left on device", errno.ENOSPC), ("Read-only file system", errno.EROFS),
                               ("Disk quota exceeded", errno.EDQUOT)):
                if text in proc.stderr:  # the cache's disk, not the source: build_cpu moves to a private cache
                    raise OSError(code, f"{text} (the compiler, writing into {entry})")
            kept = os.path.join(root, "failed", f"{name}_{key}.cpp")
            try:
                make_private_dirs(os.path.dirname(kept))
                shutil.copy(src_path, kept)
                where = f"generated source kept at {kept}"
            except OSError as e:
                where = f"its generated source could not be kept: {e.strerror}"
            raise NativeCompileError(f"C++ compilation of module '{name}' failed ({where}):\n{proc.stderr[-6000:]}")
        write_manifest(os.path.join(tmp, "module.so"))  # also makes the library the user's alone (0700)
        os.chmod(src_path, 0o600)
        try:
            os.rename(tmp, entry)
        except OSError:
            # another process finished the same entry first: use theirs. An entry without its library was
            # damaged (entries appear whole, by rename): replace it.
            if not os.path.exists(lib):
                shutil.rmtree(entry, ignore_errors=True)
                try:
                    os.rename(tmp, entry)
                except OSError:
                    if not os.path.exists(lib):
                        raise
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.perf_counter() - t0
    if config.verbose:
        print(f"kernels: compiled module '{name}' in {seconds:.2f} s ({entry})")
    return BuildResult(lib, False, seconds)


#: The runtime's native libraries and the kernels/native sources each is compiled from, in order, as one
#: translation unit. The thread pool and the BVH builder share one: a Mesh built before the first launch loads
#: the library that launch needs anyway (each library costs about 1 ms to find, check and load).
NATIVE_LIBRARIES = {"runtime": ("thread_pool.cpp", "bvh_build.cpp"), "command_list": ("command_list.cpp",)}
_native_loaded: dict = {}  # name -> the loaded library, shared by its users (each sets its functions' types)


def load_native_library(name: str):
    """The runtime library `name` (a key of NATIVE_LIBRARIES), compiled once and cached like kernel modules,
    loaded once per process. These libraries include no native header (only the C++ library's): their key leaves
    the headers' hash out, which every process would otherwise compute at its first launch (1 ms)."""
    lib = _native_loaded.get(name)
    if lib is not None:
        return lib
    parts = []
    for file in NATIVE_LIBRARIES[name]:
        with open(os.path.join(NATIVE_DIR, file)) as f:
            parts.append(f.read())
    source = "\n".join(parts) + library_version.version_source(config.version)
    lib = load_library(build_cpu(source, name, False, headers=False).path, checked=True)
    if lib is None:  # the loader refused it and it was removed: build it again
        lib = load_library(build_cpu(source, name, False, headers=False).path, checked=True)
    library_version.verify_library_version(lib, name, library_version.SYMBOL, config.version)
    _native_loaded[name] = lib
    return lib


def load_library(path: str, *, checked: bool = False):
    """Load a compiled library after checking it against its manifest (size and hash written at build time).
    A damaged library, or one that fails to load, is removed from the cache with one line on stderr, and None
    returned: the caller rebuilds it. A damaged library is never handed to the dynamic loader, nor one that is not
    inside the cache or not the user's own (cache_trust.py). `checked`: `path` is what build_cpu just returned,
    which made those checks (of a cached library) or wrote it (1.4 ms a library not spent twice)."""
    if not checked:
        untrusted = check_file(path, cache_root())
        if untrusted:
            report_untrusted(path, untrusted)
            return None  # not removed: it may not even be inside the cache; the caller builds its own
    why = None if checked else damage(path)
    if why is None:
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            why = f"the loader refused it: {e}"
        else:
            return lib
    report_rebuild(os.path.dirname(path), why)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return None
