"""kernels: a Warp-compatible kernel language. Python functions compiled to C++ (CPU) and CUDA C++ (GPU),
forward and adjoint. Port a Warp program by writing `import kernels as wp`."""

from __future__ import annotations

from . import builtins as _builtins
from . import host_memory as _host_memory
from . import config
from .capture import (CaptureError, Graph, ScopedCapture, capture_begin, capture_end, capture_launch,
                      is_capturing)
from .array import (array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like, from_numpy, full,
                    full_like, ones, ones_like, zeros, zeros_like)
from .device import (Device, ScopedDevice, get_cuda_device_count, get_device, get_preferred_device,
                     get_cuda_devices, get_devices, is_cpu_available, is_cuda_available,
                     is_device_available, set_device, synchronize, synchronize_device)
from .errors import CompileError, KernelError, LaunchError, NativeCompileError
from .errors import (CompileAttributeError, CompileIndexError, CompileKeyError, CompileTypeError,
                     CompileValueError)
from .function import func, func_grad, func_replay, grad
from .hash_grid import HashGrid, HashGridQuery
from .mesh import Mesh, MeshQueryAABB, MeshQueryPoint, MeshQueryRay, is_cubql_available
from .bvh_object import Bvh, BvhQuery
from .native_snippet import func_native
from . import utils
MeshQuery = MeshQueryAABB  # Warp's name for the state of any mesh box query
from .volume import Volume
from .interop import (device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch, from_dlpack, from_torch,
                      to_dlpack, to_torch)
from .cuda_memory import empty_cache
from .launch import Launch, launch, launch_tiled
from .module import (Kernel, Module, build_stats, get_module, get_module_options, kernel, load_module, overload,
                     set_module_options)
from .stream import (Event, ScopedStream, Stream, get_event_elapsed_time, get_stream, record_event, set_stream,
                     synchronize_event, synchronize_stream, wait_event, wait_stream)
from .struct import struct
from .timer import ScopedTimer
from .types import (Any, bool_, float16, float32, float64, int8, int16, int32, int64, mat22, mat22d, mat22f,
                    mat22h, mat33, mat33d, mat33f, mat33h, mat44, mat44d, mat44f, mat44h, matrix, quat, quatd, quatf,
                    quath, spatial_matrix, spatial_matrixd, spatial_vector, spatial_vectord, spatial_vectorf,
                    transform, transformd, transformf, uint8, uint16, uint32, uint64, vec2, vec2b, vec2d, vec2f,
                    vec2h, vec2i, vec2l, vec2ub, vec2ui, vec3, vec3b, vec3d, vec3f, vec3h, vec3i, vec3l, vec3ub,
                    vec3ui, vec4, vec4b, vec4d, vec4f, vec4h, vec4i, vec4l, vec4ub, vec4ui, vector)
from .types import (bfloat16, dtype_from_numpy, dtype_to_numpy, spatial_matrixf, spatial_matrixh, spatial_vectorh,
                    transformh, vec2s, vec2ul, vec2us, vec3s, vec3ul, vec3us, vec4s, vec4ul, vec4us)
from . import types  # noqa: E402  (wp.types.vector / wp.types.matrix as in Warp)

# Warp's names for compile errors
WarpCodegenError = CompileError
WarpCodegenTypeError = CompileTypeError
WarpCodegenAttributeError = CompileAttributeError
WarpCodegenIndexError = CompileIndexError
WarpCodegenKeyError = CompileKeyError
WarpCodegenValueError = CompileValueError

__version__ = "0.1.0"

# Warp's math constants (Python floats; kernels fold them at compile time)
E = e = 2.71828182845904523536
LOG2E = log2e = 1.44269504088896340736
LOG10E = log10e = 0.43429448190325182765
LN2 = ln2 = 0.69314718055994530942
LN10 = ln10 = 2.30258509299404568402
PHI = phi = 1.61803398874989484820
PI = pi = 3.14159265358979323846
HALF_PI = half_pi = 1.57079632679489661923
TAU = tau = 6.28318530717958647692
INF = inf = float("inf")
NAN = nan = float("nan")
bool = bool_  # noqa: A001  (Warp spells it wp.bool)
float = float32  # noqa: A001
int = int32  # noqa: A001


def compile_ptx(kernel, arch: int = 90) -> str:
    """PTX text of `kernel` (forward and backward entry points) for compute capability `arch`; needs no GPU."""
    from .nvrtc import compile_ptx as _compile_ptx
    return _compile_ptx(kernel, arch)


def init():
    """Warp's `wp.init()`: nothing to do here, the runtime starts on first use."""


def constant(value):
    """Mark a module-level value as a kernel constant (Warp's `wp.constant`); kernels capture it at compile time."""
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


# builtins that only make sense inside a kernel (thread index, tiles, atomics on arrays, printing, queries)
_KERNEL_ONLY = {"tid", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "block_dim", "static"}


class _BuiltinFunction:
    """A kernel builtin reachable as `wp.<name>`; callable only inside kernels."""

    def __init__(self, name):
        self._wp_builtin_ = name
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        """From Python scope, the builtin runs as a one-thread CPU kernel (kernels/host_call.py), as in Warp."""
        if self._wp_builtin_ in _KERNEL_ONLY:
            raise RuntimeError(f"wp.{self._wp_builtin_}() can only be called inside kernels and @wp.func")
        from .host_call import call
        return call(self._wp_builtin_, args, kwargs)

    def __repr__(self):
        return f"<builtin {self._wp_builtin_}>"


class _TileBuiltin(_BuiltinFunction):
    """`wp.tile(x)` inside kernels; `wp.tile[dtype, M, N]` (or `wp.tile[dtype]`, any shape) as an annotation."""

    def __getitem__(self, params):
        from .typesys import tile_annotation
        return tile_annotation(params)


_HIDDEN = {"add", "sub", "mul", "div", "mod", "floordiv", "neg", "pos", "eq", "ne", "lt", "le", "gt", "ge",
           "logical_and", "logical_or", "logical_not", "truthy", "bit_and", "bit_or", "bit_xor", "lshift", "rshift",
           "invert", "cast", "load", "store", "struct_get", "struct_set", "struct_new", "array_shape", "extract",
           "assign"}
for _name in list(_builtins.BUILTINS):
    if _name not in _HIDDEN and not _name.startswith("construct_") and _name not in globals():
        globals()[_name] = (_TileBuiltin if _name == "tile" else _BuiltinFunction)(_name)
# names Warp exposes for operators too
for _name in ("add", "sub", "mul", "div", "mod", "floordiv", "neg", "bit_and", "bit_or", "bit_xor", "lshift",
              "rshift", "invert"):
    globals()[_name] = _BuiltinFunction(_name)
del _name

from .mathlib import (norm_huber, norm_l1, norm_l2, norm_pseudo_huber, quat_from_euler, quat_to_euler,  # noqa: E402
                      quat_to_rpy, quat_twist, quat_twist_angle, quat_twist_angle_signed, smooth_normalize,
                      spatial_adjoint, transform_compose, transform_decompose, transform_twist, transform_wrench,
                      velocity_at_point)
from . import array_ops as _array_ops  # noqa: E402

_array_ops.install(array)

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

_host_memory.keep_freed_memory()
