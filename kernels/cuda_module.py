"""Kernels on CUDA devices: compile a module's kernels to machine code for the device's own architecture (NVRTC,
one program per batch, cached on disk), load it with the driver, and launch forward and adjoint entry points.

A kernel is built for CUDA on its first CUDA launch, together with every other kernel of its Python module that is
built for the CPU side and not yet for this device: one NVRTC compile per module rather than one per kernel. When
NVRTC rejects a batch, its halves are compiled separately, so the kernel at fault keeps the error (raised at its
CUDA launch) and the others still run.
"""

from __future__ import annotations

import ctypes

from . import cuda_driver as cu
from .errors import NativeCompileError

BLOCK_DIM = 256  # threads per block of a plain launch (Warp's default)


class CudaKernel:
    """The loaded entry points of one kernel on one device, with their resource use."""

    __slots__ = ("module", "forward", "backward", "error_global")

    def __init__(self, module, forward, backward, error_global):
        self.module = module
        self.forward = forward
        self.backward = backward
        self.error_global = error_global


def _batch(kernel, ordinal: int) -> list:
    """`kernel` and the other kernels of its module not yet built for device `ordinal` (their IR compiled now;
    a kernel whose IR fails keeps its error for its own launch)."""
    out = [kernel]
    for k in kernel.module.kernels:
        if k is kernel or k.error is not None or ordinal in k.cuda or ordinal in k.cuda_errors:
            continue
        try:
            k.ensure_ir()
        except Exception:  # noqa: BLE001  kept on the kernel (k.error)
            continue
        out.append(k)
    return out


def cuda_kernel(kernel, device) -> CudaKernel:
    """The loaded entry points of `kernel` on CUDA `device`, compiling its module's batch on first use."""
    ordinal = device.ordinal
    ck = kernel.cuda.get(ordinal)
    if ck is not None:
        return ck
    err = kernel.cuda_errors.get(ordinal)
    if err is None:
        _build(_batch(kernel, ordinal), ordinal)
        ck = kernel.cuda.get(ordinal)
        if ck is not None:
            return ck
        err = kernel.cuda_errors[ordinal]
    raise err


def _build(kernels: list, ordinal: int):
    from . import config
    from .nvrtc import compile_source, render_cuda_source
    arch = cu.info(ordinal).arch
    try:
        source = render_cuda_source(kernels, debug=config.mode == "debug")
        image, _ = compile_source(source, arch, f"{kernels[0].module.name}.cu", "cubin")
    except Exception as e:  # noqa: BLE001  code generation or NVRTC: isolate the kernel at fault, see module doc
        if len(kernels) == 1:
            k = kernels[0]
            k.cuda_errors[ordinal] = e if isinstance(e, NativeCompileError) else NativeCompileError(
                f"kernel '{k.name}' could not be compiled for CUDA: {e}")
            return
        mid = len(kernels) // 2
        _build(kernels[:mid], ordinal)
        _build(kernels[mid:], ordinal)
        return
    module = cu.module_load(ordinal, image)
    # wp::g_error (native/array.h), by its C++ name
    error_global = cu.module_global(module, "_ZN2wp7g_errorE")[0] if config.mode == "debug" else None
    for i, k in enumerate(kernels):
        entry = f"k{i}_{k.name}"
        forward = cu.module_function(module, f"{entry}_cuda_forward")
        backward = None
        if k.enable_backward and k.adjoint_error is None:
            backward = cu.module_function(module, f"{entry}_cuda_backward")
        k.cuda[ordinal] = CudaKernel(module, forward, backward, error_global)


def grid_size(n: int, block: int = BLOCK_DIM) -> int:
    """Blocks for `n` threads: one thread per task, up to the grid's limit (the kernels loop with a grid stride)."""
    return max(1, min((n + block - 1) // block, 2**31 - 1))


def run(kernel, device, bounds, params, adj_params=None):
    """Launch `kernel`'s forward entry point (its adjoint with `adj_params`) on `device`'s current stream. `params`
    is the args struct or its bytes."""
    from .stream import current_stream_handle
    n = bounds.size
    if n == 0:
        return
    ck = cuda_kernel(kernel, device)
    if params.__class__ is bytes:
        params = ctypes.create_string_buffer(params, len(params))
    stream = current_stream_handle(device.ordinal)
    if adj_params is None:
        cu.launch(ck.forward, grid_size(n), BLOCK_DIM, stream, [bounds, params])
    else:
        cu.launch(ck.backward, grid_size(n), BLOCK_DIM, stream, [bounds, params, adj_params])
    if ck.error_global is not None:
        _check_device_error(kernel, ck, device, stream)


def _check_device_error(kernel, ck, device, stream):
    """Debug mode: read the module's out-of-bounds record (waiting for the launch), clear it on the device and
    raise it as launch.check_error does for the CPU."""
    from .launch import ErrorSlot, check_error
    slot = ErrorSlot()
    cu.memcpy_dtoh(ctypes.addressof(slot), ck.error_global, ctypes.sizeof(slot), stream)
    if slot.set:
        cu.memset_d8(ck.error_global, 0, ctypes.sizeof(slot), stream)
        check_error(kernel, slot)


def resource_usage(kernel, device) -> dict:
    """Registers, local (stack and spill) bytes and static shared bytes per thread of the kernel's entry points
    as loaded on `device`."""
    ck = cuda_kernel(kernel, device)
    out = {"forward": cu.function_attributes(ck.forward)}
    if ck.backward is not None:
        out["backward"] = cu.function_attributes(ck.backward)
    return out
