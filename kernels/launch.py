"""`wp.launch`: check and pack arguments, run a kernel's forward or adjoint entry point, record on a tape.

Packing is the hot path of small scenes, so each kernel gets a list of per-parameter packers once, and an array
caches its native descriptor. `record_cmd=True` returns a `Launch` whose `.launch()` replays with no checks.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import capture, config
from . import types as T
from .array import ArrayDescriptor, array, as_array
from .device import get_device
from .errors import LaunchError
from .typesys import ArrayType, describe, is_struct

# Set by autodiff.Tape while recording: a callable(kernel, dim, inputs, outputs, device, adjoint...).
tape_hooks: list = []


class LaunchBounds(ctypes.Structure):
    """Layout of `wp::launch_bounds_t` (native/core.h)."""

    _fields_ = [("shape", ctypes.c_int64 * 4), ("ndim", ctypes.c_int32), ("size", ctypes.c_int64)]


class ErrorSlot(ctypes.Structure):
    """Layout of `wp::error_t` (native/core.h)."""

    _fields_ = [("set", ctypes.c_int32), ("line", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("kind", ctypes.c_int32), ("index", ctypes.c_int64 * 4), ("shape", ctypes.c_int64 * 4)]


def make_bounds(dim) -> LaunchBounds:
    dims = (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)
    if not 1 <= len(dims) <= 4 or any(d < 0 for d in dims):
        raise LaunchError(f"launch dim must be 1 to 4 non-negative ints, got {dim!r}")
    b = LaunchBounds()
    size = 1
    for k, d in enumerate(dims):
        b.shape[k] = d
        size *= d
    b.ndim = len(dims)
    b.size = size
    return b


def _ctype_of(t):
    if isinstance(t, ArrayType):
        return ArrayDescriptor
    if is_struct(t):
        return t._wp_struct_.ctype()
    if T.is_composite(t):
        return t._ctype()
    return t._ctype_


def args_ctype(kernel):
    """ctypes mirror of the kernel's `<entry>_args` struct."""
    if kernel.args_ctype is None:
        fields = [(n, _ctype_of(t)) for n, t in zip(kernel.arg_names, kernel.arg_types)]
        kernel.args_ctype = type(f"{kernel.name}_args", (ctypes.Structure,), {"_fields_": fields})
    return kernel.args_ctype


def _arg_error(kernel, i, message):
    return LaunchError(f"kernel '{kernel.name}' argument '{kernel.arg_names[i]}' (#{i + 1}): {message}")


def _pack_array(kernel, i, t: ArrayType, value, device):
    if value is None:
        return ArrayDescriptor()
    if not isinstance(value, array):
        try:
            value = as_array(value, t)
        except (TypeError, ValueError) as e:
            raise _arg_error(kernel, i, f"expected an array of {describe(t.dtype)}, got "
                                        f"{type(value).__name__} ({e})") from None
    if value.ndim != t.ndim or (t.dtype != value.dtype):
        raise _arg_error(kernel, i, f"expected {describe(t)} with {t.ndim} dims, got an array of "
                                    f"{describe(value.dtype)} with {value.ndim} dims")
    if value.device != device:
        raise _arg_error(kernel, i, f"array is on {value.device}, the launch is on {device}")
    return value._descriptor()


def _pack_value(kernel, i, t, value):
    if is_struct(t):
        if type(value) is not t:
            raise _arg_error(kernel, i, f"expected struct {t.__name__}, got {type(value).__name__}")
        return value._to_ctype()
    if T.is_composite(t):
        if not isinstance(value, t):
            try:
                value = t(value)
            except (TypeError, ValueError) as e:
                raise _arg_error(kernel, i, f"expected {describe(t)}: {e}") from None
        return value._to_ctype()
    if isinstance(value, array) or (hasattr(value, "__len__") and not isinstance(value, str)):
        raise _arg_error(kernel, i, f"expected a {describe(t)} scalar, got {type(value).__name__}")
    try:
        if t is T.float16:
            return int(np.float16(value).view(np.uint16))
        if T.is_int(t) and isinstance(value, (float, np.floating)):
            raise TypeError("a float")
        return t._np_(value).item()
    except (TypeError, ValueError, OverflowError) as e:
        raise _arg_error(kernel, i, f"expected a {describe(t)}, got {value!r} ({e})") from None


def argument_type(value, declared):
    """The kernel type of a launch argument for a generic (`Any`) parameter `declared`."""
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
        if isinstance(t, ArrayType):
            packed.append(_pack_array(kernel, i, t, v, device))
        else:
            packed.append(_pack_value(kernel, i, t, v))
    return args_ctype(kernel)(*packed)


def pack_adjoint_args(kernel, adj_values, device):
    """Adjoint args: arrays are the gradient arrays (None: no gradient); non-array adjoints start at zero."""
    if adj_values is None:
        adj_values = [None] * len(kernel.arg_types)
    if len(adj_values) != len(kernel.arg_types):
        raise LaunchError(f"kernel '{kernel.name}': {len(adj_values)} adjoint arguments for "
                          f"{len(kernel.arg_types)} parameters")
    c = args_ctype(kernel)()
    for i, (t, v) in enumerate(zip(kernel.arg_types, adj_values)):
        if v is None:
            continue
        if isinstance(t, ArrayType):
            setattr(c, kernel.arg_names[i], _pack_array(kernel, i, t, v, device))
        elif is_struct(t) and type(v) is t:
            setattr(c, kernel.arg_names[i], v._to_ctype())
    return c


def check_error(kernel):
    slot = getattr(kernel, "error_slot", None)
    if slot is None or not slot.set:
        return
    index = ", ".join(str(slot.index[d]) for d in range(slot.ndim))
    shape = ", ".join(str(slot.shape[d]) for d in range(slot.ndim))
    line = slot.line
    src = ""
    try:
        src = kernel.source.lines[line - kernel.source.first_line].strip()
    except IndexError:
        pass
    ctypes.memset(ctypes.addressof(slot), 0, ctypes.sizeof(slot))
    raise LaunchError(f"{kernel.source.file}:{line}: index [{index}] out of bounds for an array of shape "
                      f"({shape}) in kernel '{kernel.name}'\n    {src}")


class Launch:
    """A recorded launch (Warp's `wp.Launch`): runs nothing until `.launch()`; replays the adjoint kernel when it
    was recorded with `adjoint=True`."""

    def __init__(self, kernel, dim, inputs, device, adjoint=False, adj_inputs=None):
        self.kernel = kernel
        self.device = device
        self.adjoint = adjoint
        self.values = list(inputs)
        self.adj_values = list(adj_inputs) if adj_inputs is not None else None
        self.bounds = make_bounds(dim)
        self.params = pack_args(kernel, self.values, device)
        self.adj_params = pack_adjoint_args(kernel, self.adj_values, device) if adjoint else None

    def set_dim(self, dim):
        self.bounds = make_bounds(dim)

    def set_param_at_index(self, index: int, value):
        self.values[index] = value
        self.params = pack_args(self.kernel, self.values, self.device)

    def set_param_by_name(self, name: str, value):
        try:
            index = self.kernel.arg_names.index(name)
        except ValueError:
            raise LaunchError(f"kernel '{self.kernel.name}' has no parameter '{name}'") from None
        self.set_param_at_index(index, value)

    def launch(self, stream=None):
        rec = capture.recorder(self.device)
        if rec is not None:  # inside wp.capture_begin()/capture_end(): recorded for replay, not run
            rec.launch(self)
            return
        threshold = ctypes.c_int64(self.kernel.parallel_threshold(config.cpu_parallel_threshold))
        if self.adjoint:
            self.kernel.backward_fn(ctypes.byref(self.bounds), ctypes.byref(self.params),
                                    ctypes.byref(self.adj_params), threshold)
        else:
            self.kernel.forward_fn(ctypes.byref(self.bounds), ctypes.byref(self.params), threshold)
        check_error(self.kernel)


def launch(kernel, dim, inputs=(), outputs=(), device=None, adjoint=False, adj_inputs=None, adj_outputs=None,
           record_cmd=False, record_tape=True, stream=None, block_dim=None, max_blocks=0):
    """Run `kernel` over `dim` threads (an int or a tuple of up to 4 ints). See Warp's `wp.launch`."""
    if kernel.is_generic:
        kernel = kernel.specialize_for(list(inputs) + list(outputs))
    kernel.ensure_built()
    device = get_device(device)
    values = list(inputs) + list(outputs)
    if adjoint and not kernel.enable_backward:
        raise LaunchError(f"kernel '{kernel.name}' was compiled with enable_backward=False")
    if adjoint and kernel.adjoint_error is not None:
        raise kernel.adjoint_error
    adj_values = None
    if adjoint:
        adj_values = list(adj_inputs or [None] * len(inputs)) + list(adj_outputs or [None] * len(outputs))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if kernel.tid_ndim > 1 and len(dims) != kernel.tid_ndim:
        raise LaunchError(f"kernel '{kernel.name}' reads {kernel.tid_ndim} thread indices (wp.tid()) but was "
                          f"launched with dim={dim!r}")
    cmd = Launch(kernel, dims, values, device, adjoint, adj_values)
    if record_cmd:
        return cmd
    cmd.launch()
    if record_tape and not adjoint and tape_hooks:
        tape_hooks[-1](kernel, dims, list(inputs), list(outputs), device)
    return None


def launch_tiled(kernel, dim, inputs=(), outputs=(), device=None, block_dim: int = 256, adjoint=False,
                 adj_inputs=None, adj_outputs=None, record_cmd=False, record_tape=True, stream=None):
    """Launch `kernel` over a grid of `dim` blocks, each running tile operations together (Warp's
    `wp.launch_tiled`). `wp.tid()` gives the block's index; an extra trailing index gives the lane in the block.
    On the CPU a block runs as one lane (lane 0), so tile operations cover the whole tile in that lane."""
    if block_dim < 1:
        raise LaunchError(f"block_dim must be positive, got {block_dim}")
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if kernel.is_generic:
        kernel = kernel.specialize_for(list(inputs) + list(outputs))
    kernel.ensure_built()
    if kernel.tid_ndim == len(dims) + 1:
        dims = dims + (1,)  # the lane index: one lane per block on the CPU
    return launch(kernel, dims, inputs, outputs, device, adjoint, adj_inputs, adj_outputs, record_cmd,
                  record_tape, stream)
