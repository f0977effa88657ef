"""Kernel builtins called from Python scope (`wp.abs(-1.0)`, `wp.length(v)`, `wp.quat_identity()`), as Warp allows.

Each call runs the builtin itself: a one-thread kernel is compiled for the builtin and the argument types (cached
per signature), launched on the CPU, and its result converted back (a numpy scalar of the result type, or a
vector/matrix/quaternion value). Its result type comes from the same type inference as inside kernels, so the
answer is the kernel's answer. Arguments: Python numbers (int -> int32, float -> float32, as in kernels' weak
literals they adapt to the builtin), numpy scalars, and vector/matrix/quat/transform values.
"""

from __future__ import annotations

import itertools
import linecache

import numpy as np

from .. import types as T
from ..compiler.frontend import FunctionSource
from ..compiler.driver import compile_ir
from ..errors import CompileError, LaunchError
from ..compiler import lang
from .array import array, zeros
from .launch import argument_type, launch
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
    """Run builtin `name` on `args` (Python scope) and return its result."""
    if kwargs:
        raise TypeError(f"wp.{name}() called from Python takes positional arguments only")
    try:
        types_ = tuple(argument_type(a, T.Any) for a in args)  # the launch rules: int -> int32, float -> float32
    except LaunchError as e:
        raise TypeError(f"wp.{name}() called from Python: {e}") from None
    key = (name, types_)
    entry = _cache.get(key)
    if entry is None:
        entry = _cache[key] = _build(name, types_)
    kernel, result_types = entry
    outs = [zeros(1, dtype=t, device="cpu") for t in result_types]
    launch(kernel, 1, inputs=list(args) + outs, device="cpu")
    values = [_value(t, out.numpy()[0]) for t, out in zip(result_types, outs)]
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _value(t, raw):
    if T.is_composite(t):
        return t(*np.asarray(raw).reshape(-1).tolist())
    return T.host_scalar(t, t._np_(raw) if t is not T.bfloat16 else raw)


def _build(name: str, types_: tuple):
    params = [f"a{i}" for i in range(len(types_))]
    call_args = ", ".join(params)
    namespace = {"wp": lang, "array": array, **{f"T{i}": t for i, t in enumerate(types_)}}
    sig = ", ".join(f"{p}: T{i}" for i, p in enumerate(params))
    # the probes give the builtin's result type(s) through the kernels' own type inference: first as a returned
    # value (one or several results), else as a statement (a builtin with no result, such as wp.expect_eq)
    probe = _source_function(f"def probe({sig}):\n    return wp.{name}({call_args})\n", namespace, "probe")
    statement = _source_function(f"def probe({sig}):\n    wp.{name}({call_args})\n", namespace, "probe")
    try:
        results = list(compile_ir(FunctionSource(probe), "func", f"wp.{name}", list(types_)).return_types)
    except CompileError as e:
        try:
            compile_ir(FunctionSource(statement), "func", f"wp.{name}", list(types_))
        except CompileError:
            raise TypeError(f"wp.{name}() called from Python with {', '.join(T.type_repr(t) for t in types_)}: "
                            f"{e.message if hasattr(e, 'message') else e}") from None
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
    return kernel, results
