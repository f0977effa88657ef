"""Kernels on CUDA devices: compile a module's kernels to machine code for the device's own architecture (NVRTC,
one program per batch, cached on disk), load it with the driver, and launch forward and adjoint entry points.

A kernel's forward entry point is built on its first CUDA launch, together with the forward entry points of every
other kernel of its Python module not yet built for that device: one NVRTC compile per module rather than one per
kernel. The adjoint entry points are built separately, at the first adjoint launch, one program per kernel compiled
side by side (build_units): adjoints cost most of a module's compile time (minutes for a large solver module), and
a forward run never pays it.
When NVRTC rejects a batch, its halves are compiled separately, so the kernel at fault keeps the error (raised at
its CUDA launch) and the others still run.
"""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor

from . import cuda_driver as cu
from ..errors import NativeCompileError
from .error_slot import ErrorSlot, check_error
from .. import config
from ..compiler.nvrtc import compile_source, render_cuda_source
from .device import current_stream_handle

BLOCK_DIM = 256  # threads per block of a plain launch (Warp's default)


class CudaKernel:
    """The loaded forward and (once built) adjoint entry points of one kernel on one device; `error_globals`:
    the device address of each module's debug-mode error record (native/array.h), by direction."""

    __slots__ = ("forward", "backward", "modules", "error_globals")

    def __init__(self):
        self.forward = None
        self.backward = None
        self.modules = []  # the loaded modules (kept: their functions are only valid while they are)
        self.error_globals = {}


def _slot(kernel, ordinal: int) -> CudaKernel:
    ck = kernel.cuda.get(ordinal)
    if ck is None:
        ck = kernel.cuda[ordinal] = CudaKernel()
    return ck


def _needs(k, ordinal: int, adjoint: bool) -> bool:
    """Whether kernel `k` lacks the entry point of that direction on device `ordinal` (and may have it)."""
    if k.error is not None or (ordinal, adjoint) in k.cuda_errors:
        return False
    ck = k.cuda.get(ordinal)
    if adjoint:
        return k.enable_backward and k.adjoint_error is None and (ck is None or ck.backward is None)
    return ck is None or ck.forward is None


def _batch(kernel, ordinal: int, adjoint: bool) -> list:
    """`kernel` and the other kernels of its module lacking that direction on device `ordinal`, in the module's
    order (their IR compiled now; a kernel whose IR fails keeps its error for its own launch). The same module
    state gives the same batch, hence the same source and cache entry, whichever kernel is launched first (see
    tools/cuda_report.py --precompile)."""
    out = []
    for k in kernel.module.kernels:
        if k is not kernel:
            if k.error is not None:
                continue
            try:
                k.ensure_ir()
            except Exception:  # noqa: BLE001  kept on the kernel (k.error)
                continue
            if not _needs(k, ordinal, adjoint):
                continue
        out.append(k)
    if kernel not in out:  # replaced in its module by a redefinition (Module.register): built on its own
        out.insert(0, kernel)
    return out


def module_batches(module) -> tuple:
    """(forward batch, adjoint batch) of a module none of whose kernels is built for a device yet: what the first
    launches there compile."""
    forward = []
    for k in module.kernels:
        try:
            k.ensure_ir()
        except Exception:  # noqa: BLE001
            continue
        forward.append(k)
    return forward, [k for k in forward if k.enable_backward and k.adjoint_error is None]


def cuda_function(kernel, device, adjoint: bool = False):
    """The loaded forward (or adjoint) entry point of `kernel` on CUDA `device`, compiling its module's batch on
    first use; raises the kernel's compile error."""
    ordinal = device.ordinal
    ck = kernel.cuda.get(ordinal)
    fn = None if ck is None else (ck.backward if adjoint else ck.forward)
    if fn is not None:
        return fn
    if (ordinal, adjoint) not in kernel.cuda_errors:
        _build(_batch(kernel, ordinal, adjoint), ordinal, adjoint)
        ck = kernel.cuda.get(ordinal)
        fn = None if ck is None else (ck.backward if adjoint else ck.forward)
        if fn is not None:
            return fn
    raise kernel.cuda_errors[(ordinal, adjoint)]


def cuda_kernel(kernel, device) -> CudaKernel:
    """The kernel's entry points on `device`, the forward one built."""
    cuda_function(kernel, device)
    return kernel.cuda[device.ordinal]


def build_units(kernels: list, adjoint: bool) -> list:
    """The NVRTC programs a batch of `kernels` is compiled as: the forward entry points in one program (they
    compile quickly); the adjoints one program per kernel, compiled side by side on the machine's cores (`_build`):
    a module's adjoints in one program take the sum of their compile times, one program each the longest of them
    (tests/test_tiles_linalg.py's adjoints, measured with NVRTC on 2 cores: 255 s in one program, 63 s for the
    slowest alone). tools/cuda_report.py --precompile compiles the same units, so the cache serves both."""
    if adjoint and len(kernels) > 1:
        return [[k] for k in kernels]
    return [kernels]


def unit_source(kernels: list, adjoint: bool, debug: bool = False) -> str:
    """The CUDA C++ of one build unit (see build_units)."""
    return render_cuda_source(kernels, debug=debug, adjoint=adjoint)


def _build(kernels: list, ordinal: int, adjoint: bool):
    units = build_units(kernels, adjoint)
    if len(units) == 1:
        _build_unit(kernels, ordinal, adjoint)
        return
    arch, debug = cu.info(ordinal).arch, config.mode == "debug"
    sources = []
    for (k,) in units:  # rendered here, in order: code generation is not shared between threads
        try:
            sources.append(unit_source([k], adjoint, debug))
        except Exception as e:  # noqa: BLE001  the kernel keeps its error, the others build
            _fail(k, ordinal, adjoint, e)
            sources.append(None)

    def compile_one(item):
        (k,), source = item
        if source is None:
            return None
        try:  # NVRTC releases the GIL while it compiles: the threads run on separate cores
            return compile_source(source, arch, f"{k.module.name}.cu", "cubin", notice=f"the adjoint of {k.name}")[0]
        except Exception as e:  # noqa: BLE001
            return e

    with ThreadPoolExecutor(max(1, min(len(units), os.cpu_count() or 1))) as pool:
        images = list(pool.map(compile_one, zip(units, sources)))
    for (k,), image in zip(units, images):
        if isinstance(image, Exception):
            _fail(k, ordinal, adjoint, image)
        elif image is not None:
            _load([k], image, ordinal, adjoint, debug)


def _fail(k, ordinal: int, adjoint: bool, e: Exception):
    """Keep kernel `k`'s build error for its launches in that direction on device `ordinal`."""
    k.cuda_errors[(ordinal, adjoint)] = e if isinstance(e, NativeCompileError) else NativeCompileError(
        f"kernel '{k.name}' could not be compiled for CUDA: {e}")


def _build_unit(kernels: list, ordinal: int, adjoint: bool):
    """Compile `kernels` as one program and load it; when it fails, its halves separately (down to the kernel at
    fault, which keeps the error)."""
    arch = cu.info(ordinal).arch
    debug = config.mode == "debug"
    try:
        source = unit_source(kernels, adjoint, debug)
        what = f"{len(kernels)} kernel{'s' if len(kernels) > 1 else ''} of module {kernels[0].module.name}"
        image, _ = compile_source(source, arch, f"{kernels[0].module.name}.cu", "cubin", notice=what)
    except Exception as e:  # noqa: BLE001  code generation or NVRTC: isolate the kernel at fault, see module doc
        if len(kernels) == 1:
            _fail(kernels[0], ordinal, adjoint, e)
            return
        mid = len(kernels) // 2
        _build_unit(kernels[:mid], ordinal, adjoint)
        _build_unit(kernels[mid:], ordinal, adjoint)
        return
    _load(kernels, image, ordinal, adjoint, debug)


def _load(kernels: list, image: bytes, ordinal: int, adjoint: bool, debug: bool):
    """Load the cubin `image` of `kernels` (entry points k{i}_{name}_cuda_forward/_backward) on device `ordinal`."""
    module = cu.module_load(ordinal, image)
    # wp::g_error (native/array.h), by its C++ name
    error_global = cu.module_global(module, "_ZN2wp7g_errorE")[0] if debug else None
    for i, k in enumerate(kernels):
        ck = _slot(k, ordinal)
        ck.modules.append(module)
        entry = f"k{i}_{k.name}"
        if adjoint:
            if k.enable_backward and k.adjoint_error is None:
                ck.backward = cu.module_function(module, f"{entry}_cuda_backward")
        else:
            ck.forward = cu.module_function(module, f"{entry}_cuda_forward")
        ck.error_globals[adjoint] = error_global


def grid_size(n: int, block: int = BLOCK_DIM) -> int:
    """Blocks for `n` threads: one thread per task, up to the grid's limit (the kernels loop with a grid stride)."""
    return max(1, min((n + block - 1) // block, 2**31 - 1))


def run(kernel, device, bounds, params, adj_params=None):
    """Launch `kernel`'s forward entry point (its adjoint with `adj_params`) on `device`'s current stream. `params`
    is the args struct or its bytes."""
    n = bounds.size
    if n == 0:
        return
    adjoint = adj_params is not None
    fn = cuda_function(kernel, device, adjoint)
    if params.__class__ is bytes:
        params = ctypes.create_string_buffer(params, len(params))
    stream = current_stream_handle(device.ordinal)
    args = [bounds, params, adj_params] if adjoint else [bounds, params]
    cu.launch(fn, grid_size(n), BLOCK_DIM, stream, args)
    error_global = kernel.cuda[device.ordinal].error_globals.get(adjoint)
    if error_global is not None:
        _check_device_error(kernel, error_global, stream)


def _check_device_error(kernel, error_global: int, stream):
    """Debug mode: read the module's out-of-bounds record (waiting for the launch), clear it on the device and
    raise it as error_slot.check_error does for the CPU."""
    slot = ErrorSlot()
    cu.memcpy_dtoh(ctypes.addressof(slot), error_global, ctypes.sizeof(slot), stream)
    if slot.set:
        cu.memset_d8(error_global, 0, ctypes.sizeof(slot), stream)
        check_error(kernel, slot)


def resource_usage(kernel, device) -> dict:
    """Registers, local (stack and spill) bytes and static shared bytes per thread of the kernel's entry points
    as loaded on `device` (the adjoint's too when the kernel has one: it is built here if need be)."""
    out = {"forward": cu.function_attributes(cuda_function(kernel, device))}
    if kernel.enable_backward and kernel.adjoint_error is None:
        out["backward"] = cu.function_attributes(cuda_function(kernel, device, adjoint=True))
    return out
