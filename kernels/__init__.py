"""kernels: a Warp-compatible kernel language. Python functions compiled to C++ (CPU) and CUDA C++ (GPU),
forward and adjoint. Port a Warp program by writing `import kernels as wp`.

The package in four parts, each importing only those below it (tests/test_architecture.py checks it, imports
inside functions included, and that no module imports another back):
- base: config, errors, types (values), typesys (compile-time types), halfbits, builtins/ (the builtin table),
  logger, reference (the wp.ref[T] annotation);
- compiler/: source -> IR -> passes -> C++/CUDA text -> built library (see compiler/__init__.py);
- runtime/: devices and streams, memory and arrays, launches, captures, modules of compiled kernels;
- this surface: the public names (below), mathlib, utils, tape_interface; it also wires the two that the
  layering keeps apart (`wp.sin(x)` from Python: the compiler's builtin objects call the runtime's host caller).
"""

from __future__ import annotations

from . import config
from .runtime.indexedarray import (indexedarray, indexedarray1d, indexedarray2d, indexedarray3d,  # noqa: F401
                                   indexedarray4d)
from .runtime.fixedarray import fixedarray  # noqa: F401  (Warp's stack array, in kernels)
from .runtime.fabricarray import (fabricarray, fabricarrayarray, indexedfabricarray,  # noqa: F401
                                  indexedfabricarrayarray)
from .config import LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARNING  # noqa: F401  (wp.config.log_level values)
from .logger import Logger, ScopedLogger, ScopedLogLevel, get_logger, set_logger  # noqa: F401  (wp.set_logger)
from .diagnostics import print_diagnostics  # noqa: F401  (wp.print_diagnostics)
from .config import DeterministicMode  # noqa: F401  (wp.config.deterministic, module option "deterministic")
from .runtime.capture import (CaptureError, Graph, ScopedCapture, capture_begin, capture_end, capture_launch,
                              is_capturing)
from .runtime.array import array, clone, empty, zeros
from .runtime.array_copy import copy
from .runtime.array_map import map  # noqa: A004  (Warp's wp.map)
from .runtime.array_create import (array1d, array2d, array3d, array4d, empty_like, from_numpy, full, full_like,
                                   ones, ones_like, zeros_like)
from .runtime.device import (Device, ScopedDevice, get_cuda_device_count, get_device, get_preferred_device,
                             get_cuda_devices, get_devices, is_cpu_available, is_cuda_available,
                             is_device_available, set_device, synchronize, synchronize_device)
from .errors import CompileError, KernelError, LaunchError, NativeCompileError
from .errors import WarpDeterminismError  # noqa: E402
from .errors import (CompileAttributeError, CompileIndexError, CompileKeyError, CompileTypeError,
                     CompileValueError)
from .compiler.function import Func as Function  # noqa: F401  (Warp's class of @wp.func objects)
from .compiler.function import func, func_grad, func_replay, grad
from .runtime.hash_grid import HashGrid, HashGridQuery
from .runtime.mesh import Mesh, MeshQueryAABB, MeshQueryPoint, MeshQueryRay, is_cubql_available
from .runtime.bvh_object import Bvh, BvhQuery
from .compiler.native_snippet import func_native
from . import utils
MeshQuery = MeshQueryAABB  # Warp's name for the state of any mesh box query
from .runtime.volume import Volume
from .runtime.interop import (device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch, from_dlpack,
                              from_torch, to_dlpack, to_torch)
from .runtime.cuda_memory import empty_cache
from .runtime.host_memory import keep_freed_memory as keep_freed_host_memory
from .runtime.launch import Launch, launch, launch_tiled
from .runtime.module import (Kernel, Module, build_stats, get_module, get_module_options, kernel, load_module,
                             overload, set_module_options)
from .runtime.module_load import force_load
from .runtime.module_aot import compile_aot_module, load_aot_module
from .runtime.cpu_target import get_cpu_kernel_cache_key
from .runtime.device import (Event, ScopedStream, Stream, get_event_elapsed_time, get_stream, record_event,
                             set_stream, synchronize_event, synchronize_stream, wait_event, wait_stream)
from .runtime.struct import struct
from .runtime.timer import ScopedTimer
from .runtime.memory_tracker import ScopedMemoryTracker, print_memory_report
from .types import (Any, bool_, float16, float32, float64, int8, int16, int32, int64, mat22, mat22d, mat22f,
                    mat22h, mat33, mat33d, mat33f, mat33h, mat44, mat44d, mat44f, mat44h, matrix, quat, quatd, quatf,
                    quath, spatial_matrix, spatial_matrixd, spatial_vector, spatial_vectord, spatial_vectorf,
                    transform, transformd, transformf, uint8, uint16, uint32, uint64, vec2, vec2b, vec2d, vec2f,
                    vec2h, vec2i, vec2l, vec2ub, vec2ui, vec3, vec3b, vec3d, vec3f, vec3h, vec3i, vec3l, vec3ub,
                    vec3ui, vec4, vec4b, vec4d, vec4f, vec4h, vec4i, vec4l, vec4ub, vec4ui, vector)
from .numpy_types import dtype_from_numpy, dtype_to_numpy  # noqa: E402
from .types import (bfloat16, spatial_matrixf, spatial_matrixh, spatial_vectorh,
                    transformh, vec2s, vec2ul, vec2us, vec3s, vec3ul, vec3us, vec4s, vec4ul, vec4us)
from .reference import address_of, ref  # noqa: E402,F401  (Warp's wp.ref[T] annotation, wp.address_of)
from .types import handle  # noqa: E402  (Warp's object-handle type: uint64)
from .types import Float, Int  # noqa: E402,F401  (Warp's constrained generics: names only, see types)
from .types import ScalarVar as Scalar  # noqa: E402,F401
from . import types  # noqa: E402  (wp.types.vector / wp.types.matrix as in Warp)
from . import tape_interface  # noqa: E402  (what the Tape in `autodiff` uses of the runtime)

# Warp's names for compile errors
WarpCodegenError = CompileError
WarpCodegenTypeError = CompileTypeError
WarpCodegenAttributeError = CompileAttributeError
WarpCodegenIndexError = CompileIndexError
WarpCodegenKeyError = CompileKeyError
WarpCodegenValueError = CompileValueError

__version__ = "0.1.0"

from .compiler import lang as _lang  # noqa: E402
from .compiler.lang import (E, HALF_PI, INF, LN2, LN10, LOG2E, LOG10E, NAN, PHI, PI, TAU, e,  # noqa: E402
                            half_pi, inf, ln2, ln10, log2e, log10e, nan, phi, pi, tau)
bool = bool_  # noqa: A001  (Warp spells it wp.bool)
float = float32  # noqa: A001
int = int32  # noqa: A001


def compile_ptx(kernel, arch: int = 90) -> str:
    """PTX text of `kernel` (forward and backward entry points) for compute capability `arch`; needs no GPU."""
    return _compile_ptx(kernel, arch)


def init():
    """Warp's `wp.init()`: loads the CPU runtime library (the thread pool and the BVH builder; compiled at the first
    run), as Warp's loads its native library. Without it the runtime loads at its first use (a launch, a Mesh)."""
    from .runtime import thread_pool
    thread_pool.load()


def constant(value):
    """Mark a module-level value as a kernel constant (Warp's `wp.constant`); kernels capture it at compile time.

    Raises:
        TypeError: `value` is not a value type (a Python or numpy scalar, a vector, matrix, quaternion or
            transform), with Warp's message.
    """
    import builtins as _builtins
    import numpy as _np
    if not isinstance(value, (_builtins.bool, _builtins.int, _builtins.float, _np.generic, types.Composite)):
        raise TypeError(f"Invalid constant type: {type(value)}")
    return value


def static(expr):
    """Inside a kernel, `wp.static(expr)` evaluates `expr` at compile time. Outside, it returns `expr`."""
    return expr


class _AdjointAccessor:
    """`wp.adjoint[x] += v` inside a @wp.func_grad adds v to the adjoint of argument x."""

    _wp_adjoint_ = True

    def __getitem__(self, key):
        raise RuntimeError("wp.adjoint[...] is only meaningful inside a @wp.func_grad function")


adjoint = _AdjointAccessor()


# wp.<builtin>: the objects of kernels/compiler/lang.py, where no other name is taken; the named operators always
for _name, _obj in _lang.BUILTIN_FUNCTIONS.items():
    if _name not in globals() or _name in _lang.OPERATOR_NAMES:
        globals()[_name] = _obj
del _name, _obj

from .mathlib import (norm_huber, norm_l1, norm_l2, norm_pseudo_huber, quat_from_euler, quat_to_euler,  # noqa: E402
                      quat_to_rpy, quat_twist, quat_twist_angle, quat_twist_angle_signed, smooth_normalize,
                      spatial_adjoint, transform_compose, transform_decompose, transform_from_matrix,
                      transform_to_matrix, transform_twist, transform_wrench, velocity_at_point)
from .runtime import array_ops as _array_ops  # noqa: E402

for _family in (array, indexedarray, fabricarray, indexedfabricarray):
    _array_ops.install(_family)
del _family

from .runtime.host_call import call as _host_call  # noqa: E402

from .compiler.nvrtc import compile_ptx as _compile_ptx
_lang.set_host_caller(_host_call)  # wp.sin(x) from Python: the compiler's builtin objects call the runtime

def transformation(*args, p=None, q=None, dtype=None):
    """Warp's `wp.transformation(p, q, dtype=...)` / `wp.transformation(px, py, pz, qx, qy, qz, qw)`: a transform
    value from Python; inside kernels the same constructor (`wp.types.transformation`'s special form)."""
    if p is not None or q is not None:
        args = (p, q) + args
    t = types.transformation(dtype if dtype is not None else types.float32)
    if len(args) == 2:
        return t(*list(args[0]), *list(args[1]))
    return t(*args)


transformation._wp_kernel_form_ = types.transformation
zeros._wp_builtin_ = "fixedarray_zeros"  # in kernel code, a fixed-size array (Warp's wp.fixedarray)


def cast(a, dtype):
    """Warp's `wp.cast(a, dtype)`, a kernel builtin: the bits of `a` read as a value of type `dtype` (not a
    conversion; both types of one size). Only in kernel code, as in Warp."""
    raise RuntimeError("wp.cast(a, dtype) reinterprets bits inside kernels and functions only; from Python, use "
                       "numpy's view (np.asarray(a).view(dtype))")


cast._wp_builtin_ = "bit_cast"


def transform_expand(t):
    """Warp's `wp.transform_expand`: a transformf from a flat sequence of 7 numbers, position (px, py, pz) then
    rotation quaternion (qx, qy, qz, qw)."""
    values = [float(v) for v in t]
    if len(values) != 7:
        raise ValueError(f"transform_expand takes 7 numbers (position, then quaternion x, y, z, w), got {len(values)}")
    return types.transformf(*values)

