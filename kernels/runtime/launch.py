"""`wp.launch`: check and pack arguments, run a kernel's forward or adjoint entry point, record on a tape.

Packing is the hot path of small scenes, so each kernel gets a list of per-parameter packers once, and an array
caches its native descriptor. `record_cmd=True` returns a `Launch` whose `.launch()` replays with no checks.
"""

from __future__ import annotations

import ctypes
import operator
import warnings

import numpy as np

from . import recording as capture
from .. import config
from . import thread_pool as runtime
from .. import types as T
from .array import array
from .array_create import as_array
from .array_layout import ArrayDescriptor
from .array_subclass import overrides_descriptor, subclass_descriptor
from .device import get_device
from .error_slot import check_error
from .indexedarray import indexedarray, is_indexed
from ..errors import ConsumedAtomicError, LaunchError, WarpDeterminismError
from ..logger import log_info
from ..typesys import FIXEDARRAY_HOST_REFUSAL, ArrayType, ArrayValue, array_descriptor_type, describe, is_struct
from . import cuda_module
from .cpu_blocks import ResolvedBlockDim, note_variant, resolve_launch_block_dim

# Set by autodiff.Tape while recording: a callable(kernel, dim, inputs, outputs, device, launch) called after each
# launch; `inputs` and `outputs` are the caller's sequences (copy them to keep them), `launch.values` the Launch's
# own copy of both.
tape_hooks: list = []


class LaunchBounds(ctypes.Structure):
    """Layout of `wp::launch_bounds_t` (native/core.h), with Warp's view of a launch's bounds on the Python side.

    As in Warp 1.19, the bounds of a kernel whose `wp.tid()` has `k` coordinates keep `k` extents (`shape`): a
    launch with fewer dims is padded with 1, the extents of a launch with more are folded into `coord_mult`
    threads sharing each coordinate tuple. The native layout is `shape` followed by `coord_mult` when it is
    above 1 (`launch_dims`), so the C++ thread-index unravelling gives exactly those coordinates.
    """

    _fields_ = [("native_shape", ctypes.c_int64 * 4), ("ndim", ctypes.c_int32), ("size", ctypes.c_int64),
                ("block_dim", ctypes.c_int32)]

    @property
    def shape(self) -> tuple:
        """The extents the kernel's thread coordinates range over (one per coordinate of its wp.tid())."""
        return tuple(self.native_shape[:self.ndim - (self.coord_mult > 1)])

    @property
    def coord_mult(self) -> int:
        """Threads sharing each coordinate tuple (the product of the launch's folded trailing extents)."""
        return self.__dict__.get("_coord_mult", 1)

    @property
    def launch_dims(self) -> tuple:
        """Launch dims giving the same threads and coordinates as these bounds."""
        return tuple(self.native_shape[:self.ndim])


def canonical_dims(dim) -> tuple:
    """A launch's `dim` (an int, or a sequence of up to 4 ints) as a tuple of ints, checked as Warp does."""
    if isinstance(dim, int):
        dims = (dim,)
    elif isinstance(dim, tuple) and all(isinstance(d, int) for d in dim):
        dims = dim
    else:
        try:
            dims = tuple(operator.index(d) for d in dim)
        except TypeError:
            dims = (operator.index(dim),)
    if len(dims) > 4:
        raise ValueError("Launch dimensions must have at most 4 dimensions")
    if any(d < 0 for d in dims):
        raise ValueError("Launch dimensions must be non-negative")
    return dims


def make_bounds(dim, kernel_dim: int = 0, block_dim: int = 1) -> LaunchBounds:
    """Bounds of a launch over `dim` for a kernel whose wp.tid() has `kernel_dim` coordinates (0: it reads none,
    and the bounds keep every extent of `dim`); `block_dim`: the launch's effective lanes per block (what
    wp.block_dim() reads on the CPU, see cpu_blocks.resolve_launch_block_dim)."""
    dims = canonical_dims(dim)
    if not dims:
        dims = (1,)
    kept = dims if kernel_dim == 0 else (dims + (1,) * kernel_dim)[:kernel_dim]
    coord_mult = 1
    for d in dims[len(kept):]:
        coord_mult *= d
    native = kept + ((coord_mult,) if coord_mult > 1 else ())
    b = LaunchBounds()
    size = 1
    for k, d in enumerate(native):
        b.native_shape[k] = d
        size *= d
    for d in dims:  # a folded extent of 0 empties the launch even where coord_mult is not stored
        size *= 1 if d else 0
    b.ndim = len(native)
    b.size = size
    b.block_dim = block_dim
    if coord_mult > 1:
        b._coord_mult = coord_mult
    return b


def check_tid_extents(kernel, dims: tuple) -> None:
    """Warp's bound on a launch's extents: wp.tid() coordinates are signed 32-bit ints, so a non-empty launch of a
    kernel reading them may not extend past 2**31 along a coordinate (folded extents are not coordinates)."""
    if not kernel.tid_ndim:
        return
    for axis, extent in enumerate(dims[:kernel.tid_ndim]):
        if extent > _TID_MAX_EXTENT and 0 not in dims:
            raise ValueError(f"Warp cannot launch a kernel using wp.tid() with extent {extent} in dimension {axis}. "
                             f"wp.tid() returns signed 32-bit coordinates and supports extents up to "
                             f"{_TID_MAX_EXTENT}.")


_SHARED_BOUNDS: dict = {}  # launch dims (a tuple) -> LaunchBounds, see shared_bounds


def shared_bounds(dims: tuple, kernel_dim: int = 0, block_dim: int = 1) -> LaunchBounds:
    """make_bounds(dims, kernel_dim, block_dim), one object per distinct triple, never changed (Launch.set_dim
    replaces its bounds): launches are made on the hot path, and a Tape keeps each one."""
    key = (dims, kernel_dim, block_dim)
    b = _SHARED_BOUNDS.get(key)
    if b is None:
        b = make_bounds(dims, kernel_dim, block_dim)
        if len(_SHARED_BOUNDS) >= 4096:  # launches over ever new sizes: keep the table small
            _SHARED_BOUNDS.clear()
        _SHARED_BOUNDS[key] = b
    return b


def args_ctype(kernel):
    """ctypes mirror of the kernel's `<entry>_args` struct (its signature's)."""
    return kernel.signature.args_ctype


def _arg_error(kernel, i, message):
    return LaunchError(f"kernel '{kernel.name}' argument '{kernel.arg_names[i]}' (#{i + 1}): {message}")


def _mismatch(t: ArrayType, value, kind: str) -> str:
    """What differs between parameter type `t` and array `value`, named as Warp names it ("dtype", "dimension"),
    dtype first."""
    if t.dtype != value.dtype:
        return (f"expects an array with dtype={T.warp_type_name(t.dtype)}, but the passed {kind} has "
                f"dtype={T.warp_type_name(value.dtype)}")
    return f"expects {describe(t)} with {t.ndim} dimension(s), but the passed {kind} has {value.ndim} dimension(s)"


def pack_array(kernel, i, t: ArrayType, value, device):
    """The native descriptor of array argument `value` for parameter `i` (type `t`) of `kernel`, checked."""
    if not t.plain:
        return pack_indexed(kernel, i, t, value, device)
    # the common case first (launches pack every array on their hot path): an array of the declared type on the
    # launch's device, whose descriptor is cached
    if value.__class__ is array and value.dtype is t.dtype and value.ndim == t.ndim and value.device is device \
            and value._desc is not None:
        return value._desc
    if value is None:
        return ArrayDescriptor()
    if value.__class__ is ArrayDescriptor:
        return value  # a native descriptor passed as it is (Warp's `a.__ctype__()`): it holds the array's pointers
    if not isinstance(value, array) or value.device is None:  # (no device: the annotation wp.array[float])
        if isinstance(value, ArrayValue) or not any(
                hasattr(value, k) for k in ("__array_interface__", "__array__", "__cuda_array_interface__",
                                            "__dlpack__")):
            # Warp takes arrays and array-interface objects (numpy, torch, ...), not lists or numbers
            raise LaunchError(f"Error launching kernel '{kernel.name}', argument '{kernel.arg_names[i]}' expects an "
                              f"array of type array(ndim={t.ndim}, dtype={T.warp_type_name(t.dtype)}), but passed value has type "
                              f"{type(value).__name__}.")
        try:
            value = as_array(value, t)
        except (TypeError, ValueError) as e:
            raise _arg_error(kernel, i, f"expected an array of {describe(t.dtype)}, got "
                                        f"{type(value).__name__} ({e})") from None
    if value.ndim != t.ndim or (t.dtype != value.dtype):
        raise _arg_error(kernel, i, _mismatch(t, value, "array"))
    if value.device != device:
        raise _arg_error(kernel, i, f"array is on {value.device}, the launch is on {device}")
    if value.__class__ is not array and overrides_descriptor(value):
        return _subclass_descriptor(kernel, i, value, t)
    return value._descriptor()


def _subclass_descriptor(kernel, i, value, t: ArrayType):
    try:
        return subclass_descriptor(value, t)
    except Exception as e:  # noqa: BLE001  (the user's __ctype__ may raise anything: named with the argument)
        raise LaunchError(f"Error launching kernel '{kernel.name}', argument '{kernel.arg_names[i]}': "
                          f"{type(e).__name__}: {e}") from e


def pack_indexed(kernel, i, t: ArrayType, value, device, consume: bool = False):
    """The native descriptor of indexed or Fabric array argument `value` for parameter `i` (type `t`),
    checked."""
    if value is None:
        return array_descriptor_type(t)()
    vt = getattr(value, "type", None)
    if not isinstance(vt, ArrayType) or (vt.indexed, vt.fabric) != (t.indexed, t.fabric) or value.device is None:
        raise LaunchError(f"Error launching kernel '{kernel.name}', argument '{kernel.arg_names[i]}' expects an "
                          f"array of type {describe(t)} (a wp.{t.kind_name}), but passed value has type "
                          f"{type(value).__name__}.")
    if value.ndim != t.ndim or value.dtype != t.dtype:
        raise _arg_error(kernel, i, _mismatch(t, value, t.kind_name))
    if value.device != device:
        raise _arg_error(kernel, i, f"array is on {value.device}, the launch is on {device}")
    if not consume and overrides_descriptor(value):
        return _subclass_descriptor(kernel, i, value, t)
    return value._descriptor(consume)


def pack_value(kernel, i, t, value):
    """The native form of non-array argument `i` of `kernel` (type `t`), checked against the signature."""
    if is_struct(t):
        if type(value) is not t:
            got = "None" if value is None else type(value).__name__
            raise _arg_error(kernel, i, f"argument '{kernel.arg_names[i]}' expects {t.__name__} but got {got}")
        return value._to_ctype()
    if T.is_composite(t):
        if not isinstance(value, t):
            value = _composite_argument(kernel, i, t, value)
        return value._to_ctype()
    if isinstance(value, array) or (hasattr(value, "__len__") and not isinstance(value, str)):
        raise _arg_error(kernel, i, f"expected a {describe(t)} scalar, got {type(value).__name__}")
    try:
        if t is T.float16:
            return int(np.float16(value).view(np.uint16))
        if t is T.bfloat16:
            return int(T.to_storage(t, float(value)))
        if T.is_int(t) and isinstance(value, (float, np.floating)):
            raise TypeError("a float")
        return t._np_(value).item()
    except (TypeError, ValueError, OverflowError) as e:
        raise _arg_error(kernel, i, f"expected a {describe(t)}, got {value!r} ({e})") from None


def _composite_argument(kernel, i, t, value):
    """A vector/matrix/quat/transform argument from a sequence. A single Python number is refused, as in Warp
    (it is most often a mistake); numpy scalars and bools still fill every component, with a DeprecationWarning."""
    name = T.warp_type_name(t)
    if value is None:
        raise ValueError(f"Failed to convert argument for param {kernel.arg_names[i]} to {name}: got None")
    single = isinstance(value, (int, float)) and not isinstance(value, bool)
    if single or (T.is_scalar_value(value) and not isinstance(value, np.bool_)):  # Warp scalar values too
        raise _arg_error(kernel, i, f"argument '{kernel.arg_names[i]}' expects {name} but got a single value "
                                    f"({value!r}); pass a {name}")
    if np.ndim(value) == 0:
        warnings.warn(f"passing a value of type `{type(value).__name__}` where `{name}` is expected for kernel "
                      f"parameter '{kernel.arg_names[i]}' fills every component; this promotion is deprecated",
                      DeprecationWarning, stacklevel=4)
        value = np.full(int(np.prod(t._shape_)), value)
    try:
        return t(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"Failed to convert argument for param {kernel.arg_names[i]} to {name}: {e}") from None


def argument_type(value, declared):
    """The kernel type of a launch argument for a generic (`Any`) parameter `declared`."""
    if getattr(value, "_wp_fixed_", False):
        raise TypeError(FIXEDARRAY_HOST_REFUSAL)
    if getattr(value, "_wp_indexed_", False) or getattr(value, "_wp_fabric_", False):
        return value.type
    if isinstance(declared, ArrayType) or isinstance(value, array):
        if not isinstance(value, array):
            value = as_array(value)
        return ArrayType(value.dtype, value.ndim)
    if isinstance(value, np.generic):
        return T.canonical_type(type(value))
    if isinstance(value, bool):
        return T.bool_
    if isinstance(value, int):
        return T.int32
    if isinstance(value, float):
        return T.float32
    t = type(value)
    if T.is_generic_composite(declared):
        if not declared.matches(t):
            raise LaunchError(f"a {T.type_repr(t)} argument does not match the generic parameter type "
                              f"{declared.__name__}")
        return t
    if T.is_composite(t) or is_struct(t):
        return t
    raise LaunchError(f"cannot infer a kernel type for a {t.__name__} argument of a generic kernel")


def pack_args(kernel, values, device):
    """Fill the kernel's ctypes args struct from Python values, checking each against the signature."""
    types_ = kernel.arg_types
    if len(values) != len(types_):
        names = ", ".join(kernel.arg_names)
        raise LaunchError(f"kernel '{kernel.name}' takes {len(types_)} arguments ({names}), got {len(values)}")
    packed = []
    for i, (t, v) in enumerate(zip(types_, values)):
        if getattr(v, "_wp_fixed_", False):  # describes a stack array; it has no memory to pass
            raise TypeError(FIXEDARRAY_HOST_REFUSAL)
        if isinstance(t, ArrayType):
            packed.append(pack_array(kernel, i, t, v, device))
        else:
            packed.append(pack_value(kernel, i, t, v))
    return args_ctype(kernel)(*packed)


def pack_adjoint_args(kernel, adj_values, device, values=None):
    """Adjoint args: arrays are the gradient arrays; an array's adjoint left None is the array's own `.grad`
    (none for arrays without one, and for foreign memory, which backward never writes); non-array adjoints start
    at zero. A gradient array that is its primal array's own `.grad` (in `values`) is consumed by plain writes,
    unless that array has `retain_grad`; writes through an in-kernel view of it consume it either way, as in Warp
    (see ARRAY_FLAG_CONSUME and ARRAY_FLAG_OWN_GRAD in native/array.h)."""
    count = len(kernel.arg_types)
    if adj_values is None:
        adj_values = [None] * count
    if len(adj_values) != count:
        raise LaunchError(f"kernel '{kernel.name}': {len(adj_values)} adjoint arguments for "
                          f"{count} parameters")
    c = args_ctype(kernel)()
    for i, (t, v) in enumerate(zip(kernel.arg_types, adj_values)):
        if v is None and values is not None and isinstance(t, ArrayType):
            primal = values[i]
            if (isinstance(primal, array) and not primal._foreign) or is_indexed(primal):
                v = primal.grad
        if v is None:
            continue
        if isinstance(t, ArrayType) and t.fabric:
            continue  # Fabric memory has no gradient (launch refuses an adjoint that would need one)
        if isinstance(t, ArrayType) and t.indexed:
            if isinstance(v, array):  # the gradient of the indexed elements themselves, in their own shape
                v = indexedarray(v)
            primal = values[i] if values is not None else None
            own = is_indexed(primal) and primal.data.grad is v.data and not primal.data.retain_grad
            setattr(c, kernel.arg_names[i], pack_indexed(kernel, i, t, v, device, consume=own))
        elif isinstance(t, ArrayType):
            d = pack_array(kernel, i, t, v, device)
            primal = values[i] if values is not None else None
            if isinstance(primal, array) and primal.grad is v:
                d = v._own_grad_descriptor(primal.retain_grad)
            setattr(c, kernel.arg_names[i], d)
        elif is_struct(t) and type(v) is t:
            setattr(c, kernel.arg_names[i], v._to_ctype())
    return c


def verify_finite(kernel, values, adj_values=None):
    """wp.config.verify_fp: raise when a float array argument (or gradient) of `kernel` holds NaN or inf."""
    checks = [(n, v) for n, v in zip(kernel.arg_names, values)]
    checks += [(f"adjoint of {n}", v) for n, v in zip(kernel.arg_names, adj_values or ())]
    for name, v in checks:
        if not hasattr(v, "numpy") or not hasattr(v, "dtype"):
            continue
        if not (T.is_scalar(v.dtype) or T.is_composite(v.dtype)) or not T.is_float(T.scalar_type(v.dtype)):
            continue
        data = v.numpy()
        if not np.all(np.isfinite(data)):
            raise LaunchError(f"kernel '{kernel.name}': argument '{name}' holds NaN or inf after the launch "
                              f"(wp.config.verify_fp)")


class Launch:
    """A recorded launch (Warp's `wp.Launch`): runs nothing until `.launch()`; replays the adjoint kernel when it
    was recorded with `adjoint=True`.

    `wp.Launch(kernel, device, adjoint=False)` starts with every parameter zero and a zero launch size: set them
    with `set_param_*` and `set_dim`. Struct parameters are re-read at each `.launch()`, so changes to a struct's
    fields after recording are seen, as in Warp. Adjoint arrays left unset are the arrays' own `.grad`.
    """

    # slots: a Tape keeps one Launch per recorded launch, and a long tape should give the garbage collector few
    # objects to walk
    __slots__ = ("kernel", "device", "adjoint", "values", "_adj_values", "bounds", "params", "_struct_params",
                 "_structs_packed", "_adj_packed", "block_dim")

    def __init__(self, kernel, device=None, adjoint: bool = False, *, dim=0, inputs=None, adj_inputs=None,
                 block_dim=None):
        if kernel.is_generic:
            raise LaunchError(f"kernel '{kernel.name}' is generic: record it with wp.launch(..., record_cmd=True) "
                              "so that its argument types are known")
        self.device = device = get_device(device)
        # the effective block_dim, resolved once here (Warp's rule): a replay keeps it whatever
        # wp.config.enable_cpu_blocks says by then
        lanes = 1 if block_dim is None and device.is_cpu else resolve_launch_block_dim(device, block_dim)
        self.block_dim = lanes
        kernel.ensure_built(device)
        if (device.alias, lanes) not in kernel.variants:
            note_variant(kernel, device, lanes)
        self.kernel = kernel
        self.adjoint = adjoint
        count = len(kernel.arg_types)
        self.values = list(inputs) if inputs is not None else [None] * count
        self._adj_values = list(adj_inputs) if adj_inputs is not None else None  # None: all unset
        self.bounds = shared_bounds(dim, kernel.tid_ndim, lanes) if type(dim) is tuple else \
            make_bounds(dim, kernel.tid_ndim, lanes)
        if inputs is not None:
            self.params = pack_args(kernel, self.values, self.device)
        else:
            self.params = args_ctype(kernel)()
        self._struct_params = kernel.signature.struct_params
        self._structs_packed = inputs is not None  # pack_args just read them: launch() right away need not again
        self._adj_packed = None  # adjoint arguments packed by the caller (adjoint_of)

    @property
    def adj_values(self) -> list:
        """The adjoint arguments as set (None: the array's own `.grad`, or zero)."""
        if self._adj_values is None:
            self._adj_values = [None] * len(self.kernel.arg_types)
        return self._adj_values

    @classmethod
    def adjoint_of(cls, kernel, device, bounds, params, values: list, adj_values: list, adj_packed=None) -> "Launch":
        """The adjoint launch of a forward launch of `kernel` that ran (a Tape's record): its bounds and packed
        arguments `params` (an args struct or its bytes, copied; the values the forward read, struct members
        included), `adj_values` as adjoint arguments (`adj_packed`: already in their native form, as
        pack_adjoint_args would make them)."""
        b = cls.__new__(cls)
        b.kernel, b.device, b.adjoint = kernel, device, True
        b.block_dim = bounds.block_dim
        b.values, b._adj_values = values, list(adj_values)
        b.bounds = bounds
        b.params = args_ctype(kernel).from_buffer_copy(params)
        b._struct_params = kernel.signature.struct_params
        b._structs_packed = True
        b._adj_packed = adj_packed
        return b

    @property
    def adj_params(self):
        """The adjoint arguments, packed when read: unset adjoint arrays fall back to the arrays' `.grad`."""
        if not self.adjoint:
            return None
        if self._adj_packed is not None:
            return self._adj_packed
        return pack_adjoint_args(self.kernel, self.adj_values, self.device, self.values)

    def set_dim(self, dim):
        """New launch dims, checked as at launch (a refused one keeps the bounds as they were)."""
        dims = canonical_dims(dim)
        check_tid_extents(self.kernel, dims)
        self.bounds = make_bounds(dims, self.kernel.tid_ndim, self.block_dim)

    @property
    def module_exec(self):
        """The module variant this command runs (Warp's `Launch.module_exec`: its `block_dim`)."""
        return note_variant(self.kernel, self.device, self.block_dim)

    def set_param_at_index(self, index: int, value, adjoint: bool = False):
        """Set parameter `index` (its adjoint with `adjoint=True`), checked against the kernel's signature."""
        t = self.kernel.arg_types[index]
        if adjoint:
            self.adj_values[index] = value
            return
        packed = (pack_array(self.kernel, index, t, value, self.device) if isinstance(t, ArrayType)
                  else pack_value(self.kernel, index, t, value))
        setattr(self.params, self.kernel.arg_names[index], packed)
        self.values[index] = value

    def set_param_by_name(self, name: str, value, adjoint: bool = False):
        self.set_param_at_index(self._index(name), value, adjoint)

    def set_param_at_index_from_ctype(self, index: int, value):
        """Set parameter `index` from its native form (a ctypes value, or a value with `__ctype__()`)."""
        if hasattr(value, "__ctype__"):
            value = value.__ctype__()
        elif T.is_composite(type(value)):
            value = value._to_ctype()
        setattr(self.params, self.kernel.arg_names[index], value)
        # the native value is now the truth: no Python value to re-read at launch
        self.values[index] = None

    def set_param_by_name_from_ctype(self, name: str, value):
        self.set_param_at_index_from_ctype(self._index(name), value)

    def set_params(self, values):
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)

    def _index(self, name: str) -> int:
        try:
            return self.kernel.arg_names.index(name)
        except ValueError:
            raise LaunchError(f"kernel '{self.kernel.name}' has no parameter '{name}'") from None

    def _refresh_structs(self):
        for i in self._struct_params:
            v = self.values[i]
            if v is not None:
                setattr(self.params, self.kernel.arg_names[i], v._to_ctype())

    def launch(self, stream=None):
        if self._struct_params and not self._structs_packed:
            self._refresh_structs()
        self._structs_packed = False  # later launches re-read the structs (their fields may have changed)
        rec = capture.recorder(self.device)
        if rec is not None:  # inside wp.capture_begin()/capture_end(): recorded for replay, not run
            rec.launch(self)
            return
        if self.adjoint:
            _run(self.kernel, self.bounds, self.params, self.values, self.adj_params, self.adj_values, self.device)
        else:
            _run(self.kernel, self.bounds, self.params, self.values, device=self.device)


def _run(kernel, bounds, params, values, adj_params=None, adj_values=None, device=None):
    """Run a kernel's forward entry point (its adjoint with `adj_params`) on packed arguments (`params`: an args
    struct, or for an adjoint also its bytes, which the adjoint only reads), outside any capture; then report an
    out-of-bounds access, and NaN/inf with wp.config.verify_fp. On a CUDA `device` the launch is queued on the
    device's current stream."""
    if device is not None and device.is_cuda:
        cuda_module.run(kernel, device, bounds, params, adj_params)
        cap = capture.cuda_capture(device)
        if cap is not None:  # the graph's launch reads and writes these arrays at every replay
            cap.keep.append((values, adj_values))
        if config.verify_fp:
            verify_finite(kernel, values, adj_values)
        return
    if config.cpu_threads != runtime.applied_setting:  # wp.config.cpu_threads changed: resize the pool
        runtime.apply()
    threshold = ctypes.c_int64(kernel.parallel_threshold(config.cpu_parallel_threshold))
    if adj_params is not None:
        # bytes pass as a pointer to their buffer
        kernel.backward_fn(ctypes.byref(bounds), params if params.__class__ is bytes else ctypes.byref(params),
                           ctypes.byref(adj_params), threshold)
    else:
        kernel.forward_fn(ctypes.byref(bounds), ctypes.byref(params), threshold)
    check_error(kernel)
    if config.verify_fp:
        verify_finite(kernel, values, adj_values)


def launch_adjoint(kernel, device, bounds, params, values: list, adj_values: list, adj_packed):
    """Launch.adjoint_of(...).launch() with those arguments, without making the Launch outside a capture (which
    keeps it): a Tape's backward runs one per recorded launch."""
    if capture.recorder(device) is not None:
        Launch.adjoint_of(kernel, device, bounds, params, values, adj_values, adj_packed).launch()
    else:
        _run(kernel, bounds, params, values, adj_packed, adj_values, device)


def check_backward(kernel):
    """Raise when `kernel` has no adjoint: compiled with enable_backward=False, or its gradient was refused."""
    if not kernel.enable_backward:
        raise LaunchError(f"kernel '{kernel.name}' was compiled with enable_backward=False")
    if kernel.adjoint_error is not None:
        if isinstance(kernel.adjoint_error, ConsumedAtomicError) and _deterministic(kernel):
            # Warp refuses this backward in deterministic mode, in these words
            raise WarpDeterminismError(
                f"Deterministic mode cannot differentiate kernel {kernel.key!r} automatically. Cause: the forward "
                "kernel uses the value returned by atomic_add() as a slot, but the counter has changed by the time "
                "the backward kernel runs. Fix: save the forward slot mapping and return it from @wp.func_replay, "
                "set enable_backward=False when the kernel is not differentiable, or disable deterministic mode "
                "for this kernel.") from kernel.adjoint_error
        raise kernel.adjoint_error


def _deterministic(kernel) -> bool:
    return bool(config.deterministic or kernel.module.options.get("deterministic"))


def _check_fabric_writes(kernel):
    """A kernel that writes a Fabric array cannot be differentiated: Fabric memory has no gradient storage, so
    the gradient through those elements would be lost (refused before a taped or adjoint launch)."""
    sig = kernel.signature
    for a in sig.access:
        t = sig.types[a.param]
        for f in a.fields:
            t = t._wp_struct_.fields[f]
        if a.written and isinstance(t, ArrayType) and t.fabric:
            raise LaunchError(f"kernel '{kernel.name}' writes Fabric array '{a.path}', which has no gradient "
                              "storage: it cannot be launched on a Tape or as an adjoint (launch it with "
                              "record_tape=False, or outside the Tape)")


def _own_gradient(value):
    if isinstance(value, array) and not value._foreign:
        return value.grad
    if is_indexed(value) and not value.data._foreign:
        return value.grad
    return None


def launch(kernel, dim, inputs=(), outputs=(), device=None, adjoint=False, adj_inputs=None, adj_outputs=None,
           record_cmd=False, record_tape=True, stream=None, block_dim=None, max_blocks=0):
    """Run `kernel` over `dim` threads (an int or a tuple of up to 4 ints). See Warp's `wp.launch`."""
    if kernel.is_generic:
        kernel = kernel.specialize_for(list(inputs) + list(outputs))
    device = get_device(device)
    if config.print_launches:  # Warp's debugging aid: one info line per launch, through the active logger
        log_info(f"kernel: {kernel.name} dim: {dim} inputs: {inputs} outputs: {outputs} device: {device}")
    kernel.ensure_built(device)
    values = list(inputs) + list(outputs)
    if adjoint or (record_tape and tape_hooks):
        _check_fabric_writes(kernel)
    if adjoint:
        check_backward(kernel)
    adj_values = None
    if adjoint:
        adj_values = list(adj_inputs or [None] * len(inputs)) + list(adj_outputs or [None] * len(outputs))
        # as in Warp, an array argument given no adjoint uses its own gradient array (when it has one)
        adj_values = [_own_gradient(v) if a is None else a for a, v in zip(adj_values, values)]
    dims = canonical_dims(dim)
    if block_dim is not None:
        tiled = isinstance(block_dim, _TiledBlockDim)  # launch_tiled checked its tile kernels' one-lane blocks
        block_dim = resolve_launch_block_dim(device, block_dim)
        if block_dim > 1 and device.is_cpu and not tiled and kernel.uses_tiles:
            # each thread of a plain launch would hold its own copy of the tiles that the block shares in Warp
            raise LaunchError(f"kernel '{kernel.name}' uses tiles and is launched with block_dim={block_dim} while "
                              "wp.config.enable_cpu_blocks asks for cooperative CPU blocks, which kernels does not "
                              "run for tiles (use wp.launch_tiled, or leave enable_cpu_blocks False)")
        block_dim = ResolvedBlockDim(block_dim)
    check_tid_extents(kernel, dims)
    cmd = Launch(kernel, device, adjoint, dim=dims, inputs=values, adj_inputs=adj_values, block_dim=block_dim)
    if record_cmd:
        cmd._structs_packed = False  # its structs may change before it first runs
        return cmd
    cmd.launch()
    if record_tape and not adjoint and tape_hooks:
        if device.is_cuda:
            kernel.cuda_taped = True
        tape_hooks[-1](kernel, dims, inputs, outputs, device, cmd)
    return None


_TID_MAX_EXTENT = 2**31  # wp.tid() is a signed 32-bit coordinate (as in Warp): a larger extent would wrap


_ATOMICS = frozenset({"atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
                      "atomic_exch", "atomic_cas"})

# builtins whose results depend on how a block's work is spread over its lanes
# (a tile_stack's pushes come from every lane of a block in Warp)
LANE_DEPENDENT_BUILTINS = frozenset({"tile_randi", "tile_randf", "tile_from_thread", "block_dim", "tile_stack_push"})


def launch_tiled(kernel, dim, inputs=(), outputs=(), device=None, block_dim: int = 256, adjoint=False,
                 adj_inputs=None, adj_outputs=None, record_cmd=False, record_tape=True, stream=None):
    """Launch `kernel` over a grid of `dim` blocks, each running tile operations together (Warp's
    `wp.launch_tiled`). `wp.tid()` gives the block's index; an extra trailing index gives the lane in the block.
    On the CPU, `block_dim` resolves as in Warp (cpu_blocks.resolve_launch_block_dim: 1 unless
    wp.config.enable_cpu_blocks); a kernel without tiles then runs block_dim lanes per block, each the whole body.
    A block of a kernel with tiles runs as one lane (lane 0), so tile operations cover the whole tile in that
    lane; launches where that would differ from Warp's cooperative lanes are refused."""
    if block_dim < 1:
        raise LaunchError(f"block_dim must be positive, got {block_dim}")
    dims = canonical_dims(dim)
    if kernel.is_generic:
        kernel = kernel.specialize_for(list(inputs) + list(outputs))
    dev = get_device(device)
    lanes = resolve_launch_block_dim(dev, block_dim)
    kernel.ensure_built(dev)
    if dev.is_cpu and lanes > 1 and not kernel.uses_tiles:
        # lanes without tiles share nothing and meet at no barrier: each is a thread of the launch (its atomics
        # and stores run once per lane, as in Warp), wp.tid() gives its block (and lane) index
        return launch(kernel, dims + (lanes,), inputs, outputs, dev, adjoint, adj_inputs, adj_outputs, record_cmd,
                      record_tape, stream, block_dim=ResolvedBlockDim(lanes))
    # a block runs as one lane, on the CPU and (tiles are not yet spread over a block's threads through shared
    # memory) on CUDA devices: whole-tile operations give the same result in one lane; a kernel that reads its
    # lane, or draws tile random numbers (which Warp spreads over the lanes), would silently differ from Warp's
    lanes_asked = block_dim > 1 and (dev.is_cuda or config.enable_cpu_blocks)
    why = None
    if lanes_asked:
        why = "reads its lane index (wp.tid())" if kernel.tid_ndim == len(dims) + 1 else \
            ("reads the block's size or draws tile random numbers" if kernel.calls_any(LANE_DEPENDENT_BUILTINS)
             else None)
        if why is None and kernel.calls_any(_ATOMICS):
            # each of Warp's lanes runs the statements outside tile operations, its atomics block_dim times (its
            # plain stores write the same value again); one lane would add once
            why = "does an atomic operation outside tile operations (each lane of a block runs it in Warp)"
    if why and dev.is_cuda:
        raise LaunchError(f"kernel '{kernel.name}' {why}, and on CUDA devices a block of launch_tiled runs as "
                          f"one lane here (cooperative tiles over block_dim={block_dim} threads are not built "
                          "yet): launch it with block_dim=1, or on the CPU")
    if why:
        raise LaunchError(f"kernel '{kernel.name}' {why} and wp.config.enable_cpu_blocks asks for cooperative "
                          "CPU blocks, which kernels does not run: a CPU block runs as one lane")
    if kernel.tid_ndim == len(dims) + 1:
        dims = dims + (1,)  # the lane index: one lane per block (on the CPU, and on CUDA devices for now)
    # the launch keeps the block_dim asked for (what a tape or a recorded command reports); wp.block_dim() reads it
    # only where it is 1, a kernel reading it with more lanes being refused above
    return launch(kernel, dims, inputs, outputs, device, adjoint, adj_inputs, adj_outputs, record_cmd,
                  record_tape, stream, block_dim=_TiledBlockDim(lanes))


class _TiledBlockDim(ResolvedBlockDim):
    """launch_tiled's resolved block_dim: its tile kernels' blocks run as one lane, checked by launch_tiled."""
