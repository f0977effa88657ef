"""CUDA C++ -> PTX with NVRTC (through cuda-python's `cuda.bindings.nvrtc`); works on machines without a GPU.

`compile_ptx(kernel, arch=90)` renders the kernel's CUDA dialect (forward and backward entry points, every function
it calls) and compiles it, so the CUDA path of every kernel is checked even where no GPU is present.
"""

from __future__ import annotations


import os

from .build import NATIVE_DIR
from .errors import NativeCompileError
from .render import CUDA
from .render_module import ModuleSource


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


def render_cuda_source(kernels: list, debug: bool = False) -> str:
    """The CUDA C++ text of a module holding `kernels` (each compiled to typed IR first)."""
    from .module import _callees
    from .render_adjoint import render_adjoint_function, render_adjoint_kernel
    src = ModuleSource(CUDA, debug)
    parts = []
    for i, k in enumerate(kernels):
        k.compile_ir()
        for fn in _callees(k.ir):
            src.add_function(fn)
        parts.append(src.render_kernel(k.ir, f"k{i}_{k.name}", render_adjoint_kernel if k.enable_backward else None))
    return src.source(parts, render_adjoint_function)


def compile_source_to_ptx(source: str, arch: int = 90, name: str = "module.cu") -> str:
    """PTX for `source`, from the disk cache when this exact source was compiled before for `arch`."""
    import hashlib
    from . import config
    from .build import VERSION, native_hash
    nvrtc = _nvrtc()
    version = nvrtc.nvrtcVersion()[1:]
    key = hashlib.sha256("\0".join([source, str(arch), str(version), VERSION, native_hash()]).encode()).hexdigest()
    from .cache_integrity import damage, report_rebuild, sweep_dead_temporaries, write_manifest
    path = os.path.join(config.cache_dir, VERSION, "ptx", f"{key[:24]}.ptx")
    if os.path.exists(path):
        why = damage(path)
        if why is None:
            with open(path) as f:
                return f.read()
        report_rebuild(path, why)
    ptx = _compile(nvrtc, source, arch, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sweep_dead_temporaries(os.path.dirname(path))
    tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(ptx)
    write_manifest(tmp)
    os.replace(tmp + ".sha256", path + ".sha256")
    os.replace(tmp, path)  # atomic: readers see the old state or the whole file (checked against the manifest)
    return ptx


def _compile(nvrtc, source: str, arch: int, name: str) -> str:
    (program,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "create", nvrtc=nvrtc)
    try:
        options = [f"--gpu-architecture=compute_{arch}".encode(), f"-I{NATIVE_DIR}".encode(), b"--std=c++17",
                   b"--use_fast_math", b"-default-device"]
        result = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _check(result, "compilation", program, nvrtc)
        (size,) = _check(nvrtc.nvrtcGetPTXSize(program), "PTX size", nvrtc=nvrtc)
        buf = b" " * size
        _check(nvrtc.nvrtcGetPTX(program, buf), "PTX", nvrtc=nvrtc)
        return buf.rstrip(b"\0 ").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def compile_ptx(kernel, arch: int = 90) -> str:
    """PTX text of `kernel` (forward and, when enabled, backward entry points) for compute capability `arch`."""
    if kernel.error is not None:
        raise kernel.error
    return compile_source_to_ptx(render_cuda_source([kernel]), arch, f"{kernel.name}.cu")



