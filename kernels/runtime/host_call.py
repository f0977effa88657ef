"""Kernel builtins called from Python scope (`wp.abs(-1.0)`, `wp.length(v)`, `wp.quat_identity()`), as Warp allows.

Each call runs the builtin itself: a one-thread kernel is compiled for the builtin and the argument types (cached
per signature), run on the CPU through its entry point, and its result converted back (a numpy scalar of the
result type, or a vector/matrix/quaternion value). Its result type comes from the same type inference as inside
kernels, so the answer is the kernel's answer. Arguments: Python numbers (int -> int32, float -> float32, as in
kernels' weak literals they adapt to the builtin), numpy scalars, and vector/matrix/quat/transform values.
"""

from __future__ import annotations

import ctypes
import itertools
import linecache
import threading

import numpy as np

from .. import halfbits
from .. import types as T
from ..compiler.frontend import FunctionSource
from ..compiler.driver import compile_ir
from ..errors import CompileError, LaunchError
from ..compiler import lang
from .array import array, zeros
from .error_slot import check_error
from .launch import argument_type, make_bounds, pack_args, pack_value
from .module import Kernel

_cache: dict = {}
_serial = itertools.count()


def _source_function(text: str, namespace: dict, name: str):
    """Define function `name` from `text` under a unique pseudo file name that `inspect` can read back."""
    filename = f"<kernels host call {next(_serial)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102  (our own generated text)
    return namespace[name]


def call(name: str, args: tuple, kwargs: dict):
    """Run builtin `name` on `args` and `kwargs` (Python scope) and return its result.

    Arguments match an overload exactly, as in Warp's Python scope: a Python float is a float32, an int an int32
    (wrapping as C does), a bool a bool; no other conversion (`wp.mul(wp.int16(2), 3)` is refused, with Warp's
    message). Types (`dtype=wp.float64`) are compile-time arguments."""
    # a keyword given as None leaves that parameter to the builtin's default (`quat_identity(dtype=None)`)
    items = [(None, a) for a in args] + [(k, v) for k, v in kwargs.items() if v is not None]
    runtime_values, kinds, statics = [], [], []
    for key, value in items:
        if value is None or isinstance(value, type):
            kinds.append((key, "static", len(statics)))
            statics.append(value)
            continue
        if isinstance(value, (list, tuple, np.ndarray)):
            raise TypeError("Built-in functions cannot be called with non-Warp array types, such as lists, tuples, "
                            "and NumPy arrays. Use a Warp type such as `wp.vec`, `wp.mat`, `wp.quat`, or "
                            "`wp.transform`.")
        try:
            t = argument_type(value, T.Any)  # int -> int32, float -> float32, numpy scalars -> their type
        except LaunchError:
            raise _no_match(name, items) from None
        if isinstance(value, int) and not isinstance(value, bool):
            value = ctypes.c_int32(value).value  # Warp packs a Python int as a C int32: it wraps
        kinds.append((key, t, len(runtime_values)))
        runtime_values.append(value)
    key = (name, tuple((k, t if t != "static" else ("static", _static_key(statics[i]))) for k, t, i in kinds))
    entry = _cache.get(key)
    if entry is None:
        entry = _cache[key] = _build(name, kinds, statics)
    if entry is _NO_MATCH:
        raise _no_match(name, items)
    values = entry.run(runtime_values)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


class _Runner:
    """A builtin's one-thread kernel, called straight through its CPU entry point: the arguments are packed into
    one args struct kept with it, the results read from one-element arrays kept with it (a lock serialises
    Python threads). A host call is immediate, as in Warp: never recorded by a Tape or a graph capture, never
    deferred. 6 to 16 us a call, where a full `wp.launch` (checks, a fresh Launch, fresh output arrays) took 27
    to 51 (4,500 calls in Warp's example_mesh_intersect; Warp's own take about 10)."""

    def __init__(self, kernel, result_types: list):
        self.kernel, self.result_types = kernel, result_types
        self.outs = [zeros(1, dtype=t, device="cpu") for t in result_types]
        self.views = [out.numpy() for out in self.outs]
        self.bounds = make_bounds(1, kernel.tid_ndim, 1)
        self.lock = threading.Lock()
        self.params = None

    def run(self, values: list) -> list:
        kernel = self.kernel
        with self.lock:
            kernel.ensure_built()
            if self.params is None:
                self.params = pack_args(kernel, list(values) + self.outs, "cpu")
            else:
                for i, (t, name, v) in enumerate(zip(kernel.arg_types, kernel.arg_names, values)):
                    setattr(self.params, name, pack_value(kernel, i, t, v))
            kernel.forward_fn(ctypes.byref(self.bounds), ctypes.byref(self.params), ctypes.c_int64(1 << 62))
            check_error(kernel)
            return [_value(t, view[0]) for t, view in zip(self.result_types, self.views)]


_NO_MATCH = object()  # cache entry: no overload takes these argument types


def _static_key(value):
    return value if value is None or isinstance(value, type) else id(value)


def _type_name(value) -> str:
    """Warp's name of an argument's type in its resolution message ('vec3f', 'int16', 'int')."""
    t = type(value)
    if T.is_composite(t):
        return T.warp_type_name(t)
    return t.__name__


def _no_match(name: str, items) -> RuntimeError:
    names = ", ".join(_type_name(v) for _, v in items)
    return RuntimeError(f"Couldn't find a function '{name}' compatible with the arguments '{names}'")


def _value(t, raw):
    """The host value of a result of type `t` read from an array element `raw` (bfloat16s as their bits)."""
    if T.scalar_type(t) is T.bfloat16:
        raw = halfbits.bfloat16_bits_to_float32(np.asarray(raw, dtype=np.uint16))
    if T.is_composite(t):
        return t(*np.asarray(raw).reshape(-1).tolist())
    return T.host_scalar(t, np.asarray(raw, dtype=T.value_dtype(t))[()])


def _build(name: str, kinds: list, statics: list):
    """The one-thread kernel running builtin `name` on arguments `kinds` ((keyword or None, type or "static",
    index) each), and its result types; _NO_MATCH when type inference refuses the call."""
    types_ = [t for _, t, _ in kinds if t != "static"]
    params = [f"a{i}" for i in range(len(types_))]
    call_args = ", ".join((f"{k}=" if k else "") + (f"S{i}" if t == "static" else f"a{i}") for k, t, i in kinds)
    namespace = {"wp": lang, "array": array, **{f"T{i}": t for i, t in enumerate(types_)},
                 **{f"S{i}": v for i, v in enumerate(statics)}}
    sig = ", ".join(f"{p}: T{i}" for i, p in enumerate(params))
    # the probes give the builtin's result type(s) through the kernels' own type inference: first as a returned
    # value (one or several results), else as a statement (a builtin with no result, such as wp.expect_eq)
    probe = _source_function(f"def probe({sig}):\n    return wp.{name}({call_args})\n", namespace, "probe")
    statement = _source_function(f"def probe({sig}):\n    wp.{name}({call_args})\n", namespace, "probe")
    try:
        results = list(compile_ir(FunctionSource(probe), "func", f"wp.{name}", list(types_)).return_types)
    except CompileError:
        try:
            compile_ir(FunctionSource(statement), "func", f"wp.{name}", list(types_))
        except CompileError:
            return _NO_MATCH
        results = []
    namespace.update({f"R{k}": t for k, t in enumerate(results)})
    params_text = ", ".join([f"{p}: T{i}" for i, p in enumerate(params)]
                            + [f"out{k}: array(dtype=R{k})" for k in range(len(results))])
    if len(results) > 1:
        body = (f"def host_call({params_text}):\n    {', '.join(f'r{k}' for k in range(len(results)))} = "
                f"wp.{name}({call_args})\n" + "".join(f"    out{k}[0] = r{k}\n" for k in range(len(results))))
    elif results:
        body = f"def host_call({params_text}):\n    out0[0] = wp.{name}({call_args})\n"
    else:
        body = f"def host_call({params_text}):\n    wp.{name}({call_args})\n"
    pyfunc = _source_function(body, namespace, "host_call")
    kernel = Kernel(pyfunc, enable_backward=False, module=f"kernels.runtime.host_call.{name}")
    return _Runner(kernel, results)
