"""`wp.map(func, *inputs, out=None, return_kernel=False, block_dim=None, device=None)`: a function applied to the
elements of arrays by a generated kernel (Warp 1.19's `wp.map`).

`func` is a builtin (`wp.clamp`), a `@wp.func`, or a plain Python function or lambda (made a `@wp.func` of its
own; a lambda's expression is read back from its source file). Each input is an array, whose elements are passed,
or a value passed as it is; at least one must be an array. The arrays' shapes broadcast as numpy's do (trailing
dimensions equal or 1) to the output shape. The outputs, one per value the function returns, are `out` or new
arrays of the function's result types (requiring gradients when an input array does and the type is
differentiable). The launch is an ordinary one, so a Tape records it and gradients flow back to the inputs.

Generated kernels are kept in `map_cache`, keyed as Warp keys them: the function, each input's kind, dtype,
number of dimensions and which of them broadcast (size 1), so arrays of other sizes reuse a kernel.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib.util
import linecache
import os
import sys
import tempfile
import types

import numpy as np

from .. import types as T
from ..compiler.driver import compile_ir
from ..compiler.function import Func, _matches
from ..compiler.function import func
from ..compiler.lang import BUILTIN_FUNCTIONS, BuiltinFunction
from ..builtins import registry
from ..typesys import ArrayType, ArrayValue, is_differentiable_type, is_struct
from .array import array, empty
from .launch import launch
from .module import kernel

#: (function key, input descriptors) -> (output dtypes, kernel): Warp's `warp._src.utils.map_cache`.
map_cache: dict = {}

_made: dict = {}  # generated source digest -> how many modules of it this process made
_folder: list = []  # the folder of the generated sources (made on first use; they must stay readable)
_WP = "_kernels_map_wp_"  # the name the generated code reaches the kernels package's names by
# the names of the package (wp.func, wp.kernel, wp.array, wp.tid) the generated code uses, from the layers below it
_SURFACE = types.SimpleNamespace(func=func, kernel=kernel, array=array, tid=BUILTIN_FUNCTIONS["tid"])


def map(func, *inputs, out=None, return_kernel: bool = False, block_dim=None, device=None):  # noqa: A001  (Warp's)
    """Apply `func` to the elements of the array inputs (see the module docstring). Returns the output array, a
    list of them when `func` returns several values, or the kernel alone with `return_kernel=True`."""
    target, key, arg_count, kind = _target(func)
    if arg_count is not None and len(inputs) != arg_count:
        raise TypeError(f"Number of input arguments ({len(inputs)}) does not match expected number of function "
                        f"arguments ({arg_count})")
    arg_types, descriptors = [], []
    for x in inputs:
        if _is_array(x):
            arg_types.append(x.dtype)
            device = device if device is not None else x.device
            # the native family (array, indexedarray, fabricarray, indexedfabricarray), not the Python class:
            # a subclass shares its parent's kernel
            descriptors.append((True, _family(x).kind_name, x.dtype, x.ndim, tuple(d == 1 for d in x.shape)))
        else:
            t = _value_type(x)
            arg_types.append(t)
            descriptors.append((False, t))
    cache_key = (key, tuple(descriptors), _out_families(out))
    cached = map_cache.get(cache_key)
    out_dtypes = cached[0] if cached is not None else _result_types(target, kind, key, arg_types)

    shapes = [x.shape for x in inputs if _is_array(x)]
    if not shapes:
        raise ValueError("map requires at least one warp.array input")
    out_shape = _broadcast(shapes)
    outputs = _outputs(out, out_dtypes, out_shape, inputs, device)
    if cached is None:
        kernel = _generate_kernel(target, kind, inputs, arg_types, outputs, len(out_shape))
        map_cache[cache_key] = (out_dtypes, kernel)
    else:
        kernel = cached[1]
    if return_kernel:
        return kernel
    # block_dim goes to the launch, which refuses what a CPU block of one lane would compute differently from
    # Warp's (wp.block_dim() under wp.config.enable_cpu_blocks)
    launch(kernel, dim=out_shape, inputs=list(inputs), outputs=outputs, device=device, block_dim=block_dim)
    return outputs[0] if len(outputs) == 1 else outputs


# ---------------------------------------------------------------------------------------------------- function

def _target(func):
    """(what the kernel calls, cache key, argument count or None for a builtin, kind)."""
    if isinstance(func, BuiltinFunction):
        return func, f"builtin:{func.__name__}", None, "builtin"
    if isinstance(func, Func):
        counts = {len(params) for _, params in func.overloads}
        return func, func, counts.pop() if len(counts) == 1 else None, "func"
    if not callable(func):
        raise TypeError("func must be a callable function or a warp.Function")
    closure = {}
    if func.__closure__:
        closure = {n: c.cell_contents for n, c in zip(func.__code__.co_freevars, func.__closure__)}
    # the same expression over the same values makes the same function wherever it is written (Warp's cache
    # keys lambdas by their text); closure values are part of the key, so a changed one never reuses a kernel
    # built with the old
    text = ast.unparse(_lambda_node(func)) if func.__name__ == "<lambda>" else func.__code__
    key = ("python", text, id(func.__globals__), tuple((n, _key_of(v)) for n, v in sorted(closure.items())))
    wrapped = _PYTHON_FUNCS.get(key)
    if wrapped is None:
        wrapped = _PYTHON_FUNCS[key] = _as_func(func, closure)
    return wrapped, key, func.__code__.co_argcount, "func"


_PYTHON_FUNCS: dict = {}  # _target's key of a Python function or lambda -> its @wp.func


def _key_of(value):
    try:
        hash(value)
        return (type(value), value)
    except TypeError:
        return (type(value), id(value))


def _as_func(pyfunc, closure: dict) -> Func:
    """A Python function or lambda made a @wp.func; a lambda through a generated `def` returning its expression,
    whose module holds the lambda's globals and closure values."""
    from ..compiler.function import func as wp_func

    if pyfunc.__name__ != "<lambda>":
        return wp_func(pyfunc)
    node = _lambda_node(pyfunc)
    source = (f"@{_WP}.func\ndef map_lambda({ast.unparse(node.args)}):\n"
              f"    return {ast.unparse(node.body)}\n")
    return _load(source, {**pyfunc.__globals__, **closure}).map_lambda


def _lambda_node(pyfunc) -> ast.Lambda:
    """The lambda expression `pyfunc` was made from, found in its source file by line and argument names (and by
    column where several lambdas share the line)."""
    code = pyfunc.__code__
    lines = linecache.getlines(code.co_filename)
    if not lines:
        raise TypeError(f"wp.map: the source of the lambda ({code.co_filename}, line {code.co_firstlineno}) "
                        "cannot be read; pass a @wp.func")
    tree = ast.parse("".join(lines))
    params = list(code.co_varnames[:code.co_argcount])
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
             and [a.arg for a in n.args.args] == params]
    if len(found) > 1:
        positions = [p for p in code.co_positions() if p[0] is not None and p[2] is not None]
        if positions:
            line, _, col, _ = positions[0]
            found = [n for n in found if (n.body.lineno, n.body.col_offset) <= (line, col)
                     <= (n.body.end_lineno, n.body.end_col_offset)] or found
    if not found:
        raise TypeError(f"wp.map: the lambda at {code.co_filename}, line {code.co_firstlineno} was not found in "
                        "its source; pass a @wp.func")
    return found[0]


def _is_array(x) -> bool:
    """An array of any of Warp's families holding memory (not an annotation such as `wp.array(dtype=float)`)."""
    return isinstance(x, ArrayValue) and getattr(x, "device", None) is not None


def _family(x) -> ArrayType:
    """The kernel type of array `x`: its family, dtype and number of dimensions."""
    return ArrayType(x.dtype, x.ndim) if isinstance(x, array) else x.type


def _out_families(out):
    """The part of the cache key that `out` decides: the families of outputs other than plain arrays (None for
    new arrays or plain ones, which share a kernel)."""
    def family(o):
        return None if not _is_array(o) or isinstance(o, array) else _family(o).kind_name

    if isinstance(out, (list, tuple)):
        kinds = tuple(family(o) for o in out)
        return kinds if any(kinds) else None
    return family(out)


def _value_type(x):
    """The kernel type of a non-array input: Python numbers as Warp types them (float32, int32, bool)."""
    if isinstance(x, builtins.bool) or isinstance(x, np.bool_):
        return T.bool_
    if isinstance(x, builtins.int):
        return T.int32
    if isinstance(x, builtins.float):
        return T.float32
    if isinstance(x, np.generic):
        return T.dtype_from_numpy(x.dtype)
    t = type(x)
    if T.is_composite(t) or is_struct(t):
        return t
    raise TypeError(f"wp.map: an input of type {t.__name__} is neither an array nor a kernel value")


def _type_name(t) -> str:
    return T.warp_type_name(t) if T.is_scalar(t) or T.is_composite(t) else getattr(t, "__name__", str(t))


def _func_name(f: Func) -> str:
    """Warp's key of a function in messages: its qualified name with `.<locals>.` spelled `__locals__`."""
    qual = f.overloads[0][0].pyfunc.__qualname__ if f.overloads else f.name
    return qual.replace(".<locals>.", "__locals__")


def _result_types(target, kind, key, arg_types) -> tuple:
    """The types of the values `target` returns for arguments of `arg_types`."""
    described = ", ".join(_type_name(t) for t in arg_types)
    if kind == "builtin":
        name = target.__name__
        ov, rtype = registry.resolve(name, list(arg_types))
        if ov is None:
            raise TypeError(f"Function {name} does not support the provided argument types {described}")
        results = () if rtype is None else tuple(rtype) if isinstance(rtype, tuple) else (rtype,)
    else:
        fake = [types.SimpleNamespace(type=t) for t in arg_types]
        choice = next(((s, p) for s, p in target._by_preference(fake)
                       if all(_matches(param, t) for param, t in zip(p, arg_types))), None)
        if choice is None:
            raise TypeError(f"Function {_func_name(target)} does not support the provided argument types "
                            f"{described}")
        fn = compile_ir(choice[0], "func", target.name, list(arg_types))
        results = tuple(fn.return_types)
    if not results:
        raise TypeError("The provided function must return a value")
    return results


# ---------------------------------------------------------------------------------------------------- shapes

def _broadcast(shapes) -> tuple:
    """numpy's broadcast of `shapes`, with Warp's message when they do not broadcast."""
    ref = tuple(shapes[0])
    for shape in shapes[1:]:
        shape = tuple(shape)
        merged = []
        for j in range(1, max(len(ref), len(shape)) + 1):
            r = ref[-j] if j <= len(ref) else 1
            s = shape[-j] if j <= len(shape) else 1
            if r != s and 1 not in (r, s):
                raise ValueError(f"Shapes {ref} and {shape} are not broadcastable")
            merged.append(max(r, s) if 1 in (r, s) else r)
        ref = tuple(reversed(merged))
    return ref


def _outputs(out, out_dtypes, out_shape, inputs, device) -> list:
    if out is None:
        grad = any(getattr(x, "requires_grad", False) for x in inputs if _is_array(x))
        return [empty(out_shape, dtype=t, device=device, requires_grad=grad and is_differentiable_type(t))
                for t in out_dtypes]
    names = ", ".join(_type_name(t) for t in out_dtypes)
    if len(out_dtypes) == 1 and _is_array(out):
        if not T.types_equal(out.dtype, out_dtypes[0]):
            raise TypeError(f"Output array dtype {_type_name(out.dtype)} does not match expected dtype "
                            f"{_type_name(out_dtypes[0])}")
        if tuple(out.shape) != out_shape:
            raise TypeError(f"Output array shape {tuple(out.shape)} does not match expected shape {out_shape}")
        return [out]
    if len(out_dtypes) > 1 and isinstance(out, (list, tuple)):
        if len(out) != len(out_dtypes):
            raise TypeError(f"Number of provided output arrays ({len(out)}) does not match expected number of "
                            f"function outputs ({len(out_dtypes)})")
        for i, (a, t) in enumerate(zip(out, out_dtypes)):
            if not T.types_equal(a.dtype, t):
                raise TypeError(f"Output array {i} dtype {_type_name(a.dtype)} does not match expected dtype "
                                f"{_type_name(t)}")
            if tuple(a.shape) != out_shape:
                raise TypeError(f"Output array {i} shape {tuple(a.shape)} does not match expected shape {out_shape}")
        return list(out)
    raise TypeError(f"Invalid output provided, expected {len(out_dtypes)} Warp arrays with shape {out_shape} and "
                    f"dtypes ({names})")


# ---------------------------------------------------------------------------------------------------- kernel

def _generate_kernel(target, kind, inputs, arg_types, outputs, ndim):
    """The kernel: one thread per output element, each input array read at the element's index (0 along the
    dimensions it broadcasts), the function called, its values stored. Array parameters have the families of
    the arrays passed (an indexed input is read through its indices, an indexed output written through them)."""
    tids = [f"tid_{d}" for d in range(ndim)]
    params, loads, names = [], [], {"_kernels_map_target_": target}
    for i, (x, t) in enumerate(zip(inputs, arg_types)):
        names[f"_map_in_type_{i}_"] = t
        if _is_array(x):
            names[f"_map_in_array_{i}_"] = _family(x)
            params.append(f"in_{i}_array: _map_in_array_{i}_")
            index = [("0" if x.shape[-j] == 1 else tids[-j]) for j in range(x.ndim, 0, -1)]
            loads.append(f"    in_{i} = in_{i}_array[{', '.join(index)}]\n")
        else:
            params.append(f"in_{i}: _map_in_type_{i}_")
    for k, o in enumerate(outputs):
        names[f"_map_out_array_{k}_"] = ArrayType(o.dtype, ndim) if isinstance(o, array) else o.type
        params.append(f"out_{k}: _map_out_array_{k}_")
    call = f"_kernels_map_target_({', '.join(f'in_{i}' for i in range(len(inputs)))})"
    results = ", ".join(f"r_{k}" for k in range(len(outputs)))
    stores = "".join(f"    out_{k}[{', '.join(tids)}] = r_{k}\n" for k in range(len(outputs)))
    source = (f"@{_WP}.kernel\ndef map_kernel({', '.join(params)}):\n"
              f"    {', '.join(tids)} = {_WP}.tid()\n" + "".join(loads) + f"    {results} = {call}\n" + stores)
    return _load(source, names).map_kernel


def _load(source: str, names: dict):
    """Import generated `source` as a module of its own whose globals start as `names` (and _SURFACE): the
    compiler reads a kernel's or function's source back from its file, so each is written to one."""
    if not _folder:
        folder = os.path.join(tempfile.gettempdir(), f"kernels-map-{os.getuid()}")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _folder.append(folder)
    # named by the source and how often this process made it: a later run names the same code alike, so the
    # compiled module cache serves it
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    _made[digest] = _made.get(digest, 0) + 1
    name = f"kernels_map_{digest}_{_made[digest]}"
    path = os.path.join(_folder[0], f"{name}.py")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(source)
    os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update({k: v for k, v in names.items() if not k.startswith("__")})
    module.__dict__[_WP] = _SURFACE
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
