"""What this installation is made of, for bug reports: `print_diagnostics()` (Warp's `wp.print_diagnostics`) and
the version queries behind it, each asked of the component itself (a native library's exported version, the
compiler's `--version`, the NVRTC library), never copied from a constant of this package.

Warp's names map onto this toolkit as follows: Warp's native library ("warp") is the CPU runtime library
(kernels/native/thread_pool.cpp), its CPU compiler library ("warp-clang") the CPU launch-replay library
(kernels/native/command_list.cpp); both must report `config.version`. "llvm" is the LLVM (clang) of the `ziglang`
wheel, the compiler used where no system C++ compiler is installed; the host compiler is the one CPU kernels are
built with.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import subprocess
import sys

from . import config
from .compiler import build, library_version

__all__ = ["get_host_compiler_version", "get_libmathdx_version", "get_llvm_version", "get_nanovdb_version",
           "get_nvrtc_version", "get_warp_clang_version", "get_warp_version", "print_diagnostics"]

#: The newest NanoVDB file version wp.Volume is tested with (Warp's asset files: 32.3.3 to 32.6.1); any major-32
#: file is read (runtime/volume.py checks the major version).
NANOVDB_VERSION = "32.6.1"

_VERSION = re.compile(r"(\d+\.\d+\.\d+)")


def _native_version(name: str) -> str:
    lib = build.load_native_library(name)  # verifies it against config.version on load
    return library_version.read_library_version(lib, name, library_version.SYMBOL)


def get_warp_version() -> str:
    """The version the CPU runtime library reports (Warp's native library)."""
    return _native_version("runtime")


def get_warp_clang_version() -> str:
    """The version the CPU launch-replay library reports (in Warp's place of its CPU compiler library)."""
    return _native_version("command_list")


def get_host_compiler_version() -> str:
    """The first line of `--version` of the C++ compiler CPU kernels are built with."""
    return build.compiler_identity(build.find_cxx()) or "unknown"


def get_llvm_version() -> str | None:
    """The version of the LLVM clang shipped in the `ziglang` wheel, or None when it is not installed."""
    zig = build.ziglang_binary()
    if zig is None:
        return None
    out = subprocess.run([zig, "cc", "--version"], capture_output=True, text=True)
    match = _VERSION.search(out.stdout)
    return match.group(1) if match else None


def get_nanovdb_version() -> str:
    """The NanoVDB format version wp.Volume reads."""
    return NANOVDB_VERSION


def get_nvrtc_version() -> tuple | None:
    """(major, minor) of the NVRTC library CUDA kernels compile with, or None when it cannot be loaded."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001  (no NVRTC wheel: CUDA source cannot be compiled here)
        return None
    return (int(major), int(minor)) if int(err) == 0 else None


def get_libmathdx_version() -> str:
    """"": this toolkit links no MathDx library (tile matmuls and FFTs are its own code)."""
    return ""


def _cuda_driver_version() -> tuple | None:
    try:
        from cuda.bindings import driver

        err, version = driver.cuDriverGetVersion()
    except Exception:  # noqa: BLE001  (no driver library: a machine without a GPU)
        return None
    return (version // 1000, version % 1000 // 10) if int(err) == 0 and version else None


def _devices() -> list:
    from .runtime.device import get_devices

    rows = []
    for device in get_devices():
        row = {"alias": device.alias, "name": device.name}
        if device.is_cuda:
            row.update(arch=f"sm_{device.arch}", sm_count=int(device.sm_count),
                       memory_gb=round(device.total_memory / 1024**3, 3))
        rows.append(row)
    return rows


def _frameworks() -> dict:
    found = {}
    for package in ("torch", "jax", "jaxlib"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def _collect() -> dict:
    nvrtc = get_nvrtc_version()
    driver = _cuda_driver_version()
    from .runtime.device import is_cuda_available
    from .runtime.mesh import is_cubql_available

    info = {
        "warp_python": config.version, "warp_native": get_warp_version(), "warp_clang": get_warp_clang_version(),
        "llvm": get_llvm_version(), "numpy": importlib.metadata.version("numpy"), "python": sys.version.split()[0],
        "platform": platform.platform(), "cuda_enabled": nvrtc is not None, "cuda_toolkit": None,
        "cuda_driver": driver, "nvrtc": nvrtc, "cuda_compatibility": is_cuda_available(),
        "mathdx_enabled": False, "libmathdx": get_libmathdx_version(), "cubql_enabled": bool(is_cubql_available()),
        "nanovdb": get_nanovdb_version(), "host_compiler": get_host_compiler_version(),
        "debug": config.mode == "debug", "verify_fp": bool(config.verify_fp), "fast_math": False,
        "devices": _devices(),
    }
    info.update(_frameworks())
    return info


def _version_text(value) -> str:
    if value is None:
        return "not available"
    return ".".join(str(v) for v in value) if isinstance(value, tuple) else str(value)


def print_diagnostics() -> dict:
    """Print the installation's software, build settings and devices to stdout, and return them as a dict
    (Warp's keys: "warp_python", "warp_native", "warp_clang", "llvm", "numpy", "python", "platform",
    "cuda_enabled", "cuda_toolkit", "cuda_driver", "nvrtc", "cuda_compatibility", "mathdx_enabled", "libmathdx",
    "cubql_enabled", "nanovdb", "host_compiler", "debug", "verify_fp", "fast_math", "devices", and the version of
    torch/jax/jaxlib where installed)."""
    info = _collect()
    lines = ["Software", f"  kernels (Python)     {info['warp_python']}",
             f"  CPU runtime library  {info['warp_native']}", f"  replay library       {info['warp_clang']}",
             f"  host compiler        {info['host_compiler']}", f"  LLVM (ziglang)       {_version_text(info['llvm'])}",
             f"  NVRTC                {_version_text(info['nvrtc'])}",
             f"  CUDA driver          {_version_text(info['cuda_driver'])}",
             f"  NanoVDB              {info['nanovdb']}", f"  numpy                {info['numpy']}",
             f"  Python               {info['python']}", f"  platform             {info['platform']}"]
    lines += [f"  {name:20s} {info[name]}" for name in ("torch", "jax", "jaxlib") if name in info]
    lines += ["Build", f"  debug {info['debug']}  verify_fp {info['verify_fp']}  fast_math {info['fast_math']}",
              "Devices"]
    lines += [f"  {d['alias']:8s} {d['name']}" for d in info["devices"]]
    print("\n".join(lines))
    return info
