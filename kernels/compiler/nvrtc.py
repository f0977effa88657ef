"""CUDA C++ -> PTX with NVRTC (through cuda-python's `cuda.bindings.nvrtc`); works on machines without a GPU.

`compile_ptx(kernel, arch=90)` renders the kernel's CUDA dialect (forward and backward entry points, every function
it calls) and compiles it, so the CUDA path of every kernel is checked even where no GPU is present.
"""

from __future__ import annotations


import os
import re

from .build import NATIVE_DIR, announce_compile
from ..errors import NativeCompileError
from .render import CUDA
from .render_module import ModuleSource
from .build import VERSION, cache_root, native_hash
from .cache_integrity import damage, report_rebuild, sweep_dead_temporaries, write_manifest
from .cache_trust import check_file, make_private_dirs, report_untrusted, write_failed
from .render_adjoint import render_adjoint_function, render_adjoint_kernel


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NativeCompileError("compiling CUDA needs cuda-bindings and nvidia-cuda-nvrtc "
                                 "(dependencies of this package: reinstall it with pip)") from e
    return nvrtc


def _check(result, what: str, program=None, nvrtc=None):
    err = result[0]
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        log = ""
        if program is not None:
            _, size = nvrtc.nvrtcGetProgramLogSize(program)
            buf = b" " * size
            nvrtc.nvrtcGetProgramLog(program, buf)
            log = buf.decode(errors="replace")
        raise NativeCompileError(f"NVRTC {what} failed ({err.name}):\n{log[-6000:]}")
    return result[1:] if len(result) > 1 else None


def render_cuda_source(kernels: list, debug: bool = False, adjoint: bool = True) -> str:
    """The CUDA C++ text of a module holding `kernels` (each compiled to typed IR first); with `adjoint=False`
    the forward entry points alone (a fraction of the compile time of a module with its adjoints)."""
    src = ModuleSource(CUDA, debug)
    parts = []
    for i, k in enumerate(kernels):
        k.compile_ir()
        src.add_callees(k.ir)
        backward = render_adjoint_kernel if k.enable_backward and adjoint else None
        parts.append(src.render_kernel(k.ir, f"k{i}_{k.name}", backward))
    return src.source(parts, render_adjoint_function if adjoint else None)


def compile_source_to_ptx(source: str, arch: int = 90, name: str = "module.cu") -> str:
    """PTX for `source`, from the disk cache when this exact source was compiled before for `arch`."""
    return compile_source(source, arch, name, "ptx")[0].decode()


def compile_source(source: str, arch: int = 90, name: str = "module.cu", target: str = "cubin",
                   notice: str | None = None) -> tuple:
    """(image bytes, NVRTC log) of `source` compiled for compute capability `arch`: `target` "cubin" is machine
    code for that architecture (what a device loads; the log then holds ptxas's register and spill report),
    "ptx" the portable assembly. Cached on disk by source, architecture, target and NVRTC version. `notice` says
    what is compiled when a compile starts (build.announce_compile; default: `name`)."""
    import hashlib
    nvrtc = _nvrtc()
    version = nvrtc.nvrtcVersion()[1:]
    key = hashlib.sha256("\0".join([source, str(arch), target, str(version), VERSION, native_hash()]).encode())
    root = cache_root()
    path = os.path.join(root, target, f"{key.hexdigest()[:24]}.{target}")
    log_path = path + ".log"
    if os.path.exists(path):
        untrusted = check_file(path, root)
        if untrusted:
            report_untrusted(path, untrusted)
        why = untrusted or damage(path)
        if why is None:
            with open(path, "rb") as f:
                image = f.read()
            try:
                with open(log_path) as f:
                    log = f.read()
            except OSError:
                log = ""
            return image, log
        if not untrusted:
            report_rebuild(path, why)
    announce_compile(f"cuda (sm_{arch})", notice or name)
    image, log = _compile(nvrtc, source, arch, name, target)
    try:
        _store(path, image, log)
    except OSError as e:  # a full or read-only cache: the image is used all the same, kept in a private cache
        write_failed(os.path.dirname(root), e)
    return image, log


def _store(path: str, image: bytes, log: str):
    """Write a compiled image and its log into the cache atomically (manifest first, image last)."""
    make_private_dirs(os.path.dirname(path))
    sweep_dead_temporaries(os.path.dirname(path))
    log_path = path + ".log"
    tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(image)
    write_manifest(tmp)
    with open(os.open(tmp + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(log)
    os.replace(tmp + ".log", log_path)
    os.replace(tmp + ".sha256", path + ".sha256")
    os.replace(tmp, path)  # atomic: readers see the old state or the whole file (checked against the manifest)


def _log(nvrtc, program) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(program)
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(program, buf)
    return buf.rstrip(b"\0 ").decode(errors="replace")


def _compile(nvrtc, source: str, arch: int, name: str, target: str) -> tuple:
    (program,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "create", nvrtc=nvrtc)
    try:
        # no fast math: Warp's default, and the CPU build's results within float rounding rather than within the
        # approximate division, square root and denormal flushing of --use_fast_math
        gpu = f"sm_{arch}" if target == "cubin" else f"compute_{arch}"
        options = [f"--gpu-architecture={gpu}".encode(), f"-I{NATIVE_DIR}".encode(), b"--std=c++17",
                   b"-default-device", b"--diag-suppress=177,550"]
        if target == "cubin":
            options.append(b"--ptxas-options=-v")
        result = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _check(result, "compilation", program, nvrtc)
        log = _log(nvrtc, program)
        if target == "cubin":
            (size,) = _check(nvrtc.nvrtcGetCUBINSize(program), "CUBIN size", nvrtc=nvrtc)
            buf = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(program, buf), "CUBIN", nvrtc=nvrtc)
            return bytes(buf), log
        (size,) = _check(nvrtc.nvrtcGetPTXSize(program), "PTX size", nvrtc=nvrtc)
        buf = b" " * size
        _check(nvrtc.nvrtcGetPTX(program, buf), "PTX", nvrtc=nvrtc)
        return buf.rstrip(b"\0 "), log
    finally:
        nvrtc.nvrtcDestroyProgram(program)


_RESOURCE = re.compile(r"Compiling entry function '(\w+)'.*?Used (\d+) registers(.*?)(?=Compiling entry|\Z)", re.S)


def resource_report(log: str) -> dict:
    """Per entry point of a cubin's NVRTC log: registers per thread, stack frame bytes and spilled bytes
    (stores + loads), from ptxas's verbose report."""
    out = {}
    for m in _RESOURCE.finditer(log):
        frame = re.search(r"(\d+) bytes stack frame", log[m.start():m.end()])
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log[m.start():m.end()])
        out[m.group(1)] = {"registers": int(m.group(2)), "stack_bytes": int(frame.group(1)) if frame else 0,
                           "spill_bytes": int(spills.group(1)) + int(spills.group(2)) if spills else 0}
    return out


def compile_ptx(kernel, arch: int = 90) -> str:
    """PTX text of `kernel` (forward and, when enabled, backward entry points) for compute capability `arch`."""
    if kernel.error is not None:
        raise kernel.error
    return compile_source_to_ptx(render_cuda_source([kernel]), arch, f"{kernel.name}.cu")



