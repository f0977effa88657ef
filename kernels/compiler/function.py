"""`@wp.func` objects: parsed source, signature, overloads, and the typed IR of each specialisation.

A `Func` may have several overloads (same name, different annotations) and is specialised per argument types
(generic `Any` parameters take the caller's types). A `Kernel` has a concrete signature and belongs to the
`Module` of the Python module that defined it; modules are compiled to one native library each
(runtime/module.py). Compiling (frontend + passes) is driver.py's: a Func is compiled for a caller's argument
types by the caller's type inference (`ti.compile_callee`), and read by the caller's frontend (`lower`), so this
module imports neither the frontend's lowering nor the passes.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable

from . import ir
from .. import types as T
from ..errors import CompileError
from ..reference import Reference
from ..builtins import BUILTINS
from .frontend_source import FunctionSource
from ..typesys import (FIXEDARRAY_HOST_REFUSAL, ArrayType, ArrayValue, StaticType, TileType, describe, is_struct,
                       refuse_array_subclass_annotations)


def annotation_type(ann, where: str):
    """Type of a parameter annotation: scalars, composites, structs, arrays (as ArrayType), tiles, Any."""
    if ann is typing.Any or ann is T.Any:
        return T.Any
    if ann is Func:  # `g: wp.Function`: specialised on the function passed (see is_function_argument)
        return Func
    if isinstance(ann, (ArrayType, TileType)):
        return ann
    if getattr(ann, "_wp_fixed_", False):  # a wp.fixedarray instance: a function's result only (fixed_result)
        raise TypeError(FIXEDARRAY_HOST_REFUSAL)
    if isinstance(ann, Reference):  # a @func's wp.ref[T] parameter has T's type (see reference_params)
        return annotation_type(ann.dtype, where)
    reason = T.unsupported_reason(ann) or T.unsupported_reason(getattr(ann, "dtype", None))
    if reason:
        raise TypeError(f"{where}: {reason}")
    t = T.canonical_type(ann)
    if isinstance(t, ArrayValue):
        kind = t.type if getattr(t, "_wp_indexed_", False) or getattr(t, "_wp_fabric_", False) else ArrayType(None)
        return ArrayType(T.Any if t.dtype is typing.Any or t.dtype is None else T.canonical_type(t.dtype), t.ndim,
                         kind.indexed, kind.fabric)
    if T.is_scalar(t) or T.is_composite(t) or T.is_generic_composite(t) or is_struct(t):
        return t
    raise TypeError(f"{where}: unsupported annotation {ann!r}")


def is_generic_type(t) -> bool:
    """True for `Any`, generic composites (`vector(Any, float)`) and arrays of `Any` (types a generic kernel takes
    from its launch arguments)."""
    if t is T.Any or T.is_generic_composite(t) or t is Func:
        return True
    if isinstance(t, TileType):
        return t.dtype is T.Any or t.shape is None
    return isinstance(t, ArrayType) and t.dtype is T.Any


def signature_types(source: FunctionSource, name: str, require: bool):
    hints = source.pyfunc.__annotations__
    types_ = []
    for a in source.fdef.args.args:
        ann = hints.get(a.arg)
        if isinstance(ann, str):
            ann = eval(ann, {**source.globals, **source.closure})
        if ann is None:
            if require:
                raise CompileError(f"parameter '{a.arg}' needs a type annotation", source.loc(a), name)
            types_.append(T.Any)
            continue
        try:
            types_.append(annotation_type(ann, f"parameter '{a.arg}'"))
        except TypeError as e:
            raise CompileError(str(e), source.loc(a), name) from None
    return types_


def reference_params(source: FunctionSource) -> tuple:
    """Positions of the parameters annotated `wp.ref[T]` (T not an array). Functions take and return values
    here, so a reference parameter's final value is returned after the function's own results (frontend.lower)
    and the caller writes it back to the argument (frontend_reference.py)."""
    hints = source.pyfunc.__annotations__
    found = []
    for i, a in enumerate(source.fdef.args.args):
        ann = hints.get(a.arg)
        if isinstance(ann, str):
            try:
                ann = eval(ann, {**source.globals, **source.closure})  # noqa: S307  (an annotation of the user's own source)
            except Exception:  # noqa: BLE001  (signature_types reports it)
                continue
        if isinstance(ann, Reference) and not isinstance(annotation_type(ann.dtype, a.arg), ArrayType):
            found.append(i)  # an array is a handle already: wp.ref[array] is an ordinary array parameter
    return tuple(found)


def _check_return_annotation(source: FunctionSource, name: str, fn) -> None:
    """A @wp.func's return annotation, when it has one, must be what the body returns (as Warp checks): a
    CompileError otherwise, never a value of another type than declared."""
    ann = source.pyfunc.__annotations__.get("return", inspect_empty)
    if ann is inspect_empty or ann is None:
        return
    if isinstance(ann, str):
        try:
            ann = eval(ann, {**source.globals, **source.closure})  # noqa: S307  (an annotation of the user's own source)
        except Exception:  # noqa: BLE001  an annotation we cannot evaluate is not checked
            return
    got = list(fn.return_types)
    got = got[:len(got) - len(reference_params(source))]  # the written-back references are not results
    where = source.loc(source.fdef)

    def spell(t):
        return getattr(t, "__name__", None) or repr(t)

    if typing.get_origin(ann) is tuple:
        want = list(typing.get_args(ann))
        if len(want) != len(got):
            raise CompileError(f"The function `{name}` has its return type annotated as a tuple of {len(want)} "
                               f"elements but the code returns {len(got)} values.", where, name)
        if any(T.canonical_type(w) != g for w, g in zip(want, got)):
            raise CompileError(f"The function `{name}` has its return type annotated as "
                               f"`tuple[{', '.join(spell(w) for w in want)}]` but the code returns a tuple with "
                               f"types `({', '.join(T.type_repr(g) for g in got)})`.", where, name)
        return
    if len(got) != 1:
        raise CompileError(f"The function `{name}` has its return type annotated as `{spell(ann)}` but the code "
                           f"returns {len(got)} values.", where, name)
    fixed = isinstance(got[0], ArrayType) and bool(got[0].fixed)
    if getattr(ann, "_wp_fixed_", False):  # `-> wp.fixedarray(shape=..., dtype=...)`
        want = ArrayType(T.canonical_type(ann.dtype), ann.ndim, fixed=tuple(ann.shape))
        if want != got[0]:
            raise CompileError(f"The function `{name}` has its return type annotated as a fixed-size array of shape "
                               f"{tuple(ann.shape)} and dtype `{T.type_repr(want.dtype)}` but the code returns a "
                               f"value of type `{T.type_repr(got[0])}`.", where, name)
        return
    try:
        want = annotation_type(ann, "return")
    except TypeError:
        return
    if fixed and isinstance(want, ArrayType):  # Warp's wording
        raise CompileError(f"The function `{name}` returns a fixed-size array whereas it has its return type "
                           f"annotated as `Array[{T.type_repr(want.dtype)}]`.", where, name)
    if not is_generic_type(want) and want != got[0]:
        # the annotation as written (`int`), as Warp spells it
        written = ann.__name__ if ann in (int, float, bool) else T.type_repr(want)
        raise CompileError(f"The function `{name}` has its return type annotated as `{written}` but the "
                           f"code returns a value of type `{T.type_repr(got[0])}`.", where, name)


inspect_empty = object()


def resolve_static(obj):
    """How kernel code may call a compile-time object: ("builtin", name), ("func", Func), ("grad", Func: the
    gradient of the function), ("type", t) or None."""
    if isinstance(obj, Func):
        return ("func", obj)
    if isinstance(obj, FuncGradient):
        inner = obj.func
        return ("grad", inner) if isinstance(inner, Func) else ("grad_builtin", inner._wp_builtin_)
    obj = getattr(obj, "_wp_kernel_form_", obj)  # a Python-side helper whose kernel meaning is another object
    if T.unsupported_reason(obj):
        raise TypeError(T.unsupported_reason(obj))
    if obj is T.vector or obj is T.matrix or obj is T.quaternion or obj is T.transformation:
        return ("builtin", obj.__name__)  # special forms in type inference: the type depends on the arguments
    name = getattr(obj, "_wp_builtin_", None)
    if name is not None and name in BUILTINS:
        return ("builtin", name)
    if T.is_scalar(obj) or T.is_composite(obj) or is_struct(obj):
        return ("type", obj)
    return None


#: the value of a `wp.Function` parameter while the frontend counts a function's results before any call binds it
UNBOUND_FUNCTION = object()


def is_function_object(obj) -> bool:
    """Whether compile-time object `obj` is a function kernel code can call: a @wp.func or a builtin."""
    try:
        resolved = resolve_static(obj)
    except TypeError:
        return False
    return resolved is not None and resolved[0] in ("func", "builtin")


def is_function_argument(t) -> bool:
    """Whether `t` is the type of a function passed as an argument (a @wp.func or a builtin such as wp.sin, as a
    compile-time value): a `wp.Function` parameter binds it by name in the callee's body, which is compiled once
    per function passed; it is no run-time argument."""
    return isinstance(t, StaticType) and is_function_object(t.obj)


def _matches(param_t, arg_t) -> bool:
    if param_t is Func:
        return is_function_argument(arg_t)
    if param_t is T.Any:
        return True
    if T.is_generic_composite(param_t):
        return param_t.matches(arg_t)
    if isinstance(param_t, ArrayType):
        return isinstance(arg_t, ArrayType) and param_t.ndim == arg_t.ndim and \
            (param_t.dtype is T.Any or param_t.dtype == arg_t.dtype)
    if isinstance(param_t, TileType):
        return isinstance(arg_t, TileType) and (param_t.dtype is T.Any or param_t.dtype == arg_t.dtype) and \
            (param_t.shape is None or param_t.shape == arg_t.shape)
    return param_t == arg_t


def _host_value_matches(param_t, value) -> bool:
    """Whether a Python value may be passed for a parameter of type `param_t` in a call from Python."""
    if param_t is T.Any:
        return True
    if param_t is Func:  # a `wp.Function` parameter: a @wp.func or a builtin such as wp.sin
        return is_function_object(value)
    if isinstance(param_t, ArrayType):
        return isinstance(value, ArrayValue) and value.ndim == param_t.ndim and \
            (param_t.dtype is T.Any or value.dtype == param_t.dtype)
    if isinstance(value, bool):
        return param_t is T.bool_
    if isinstance(value, int):
        return param_t is T.int32
    if isinstance(value, float):
        return param_t is T.float32
    return type(value) is param_t or (T.is_scalar(param_t) and isinstance(value, param_t._np_))


class Func:
    """A user function callable from kernels (Warp's `@wp.func`)."""

    inline_hint = None  # Warp's @wp.func(inline=...) hint, set by `func`
    #: The runtime's `get_module` (set by runtime/module.py): `f.module` is the runtime's Module of the function,
    #: as in Warp, while this layer does not import the runtime.
    module_resolver = None

    @property
    def module(self):
        """The module the function belongs to (Warp's `f.module`): the runtime's Module, or its name before the
        runtime is loaded."""
        resolver = Func.module_resolver
        return self.module_name if resolver is None else resolver(self.module_name)

    def __init__(self, pyfunc):
        self.module_name = pyfunc.__module__  # Warp's @wp.func(module=...), set by `func`
        self.key = f"{pyfunc.__module__}.{pyfunc.__qualname__}"
        self.name = pyfunc.__name__
        self.overloads: list = []
        self.annotation_errors: list = []  # CompileErrors of definitions whose annotations kernels cannot take
        self.specializations: dict = {}
        self.result_counts: dict = {}  # overload source -> how many values it returns
        self.custom_grad = None  # the latest @wp.func_grad
        self.custom_grads: list = []  # every @wp.func_grad, in order: each is for the overload its signature names
        self.custom_replay = None
        self.add_overload(pyfunc)
        self.__doc__ = pyfunc.__doc__

    @property
    def func(self):
        """The Python function of the first definition (Warp's `Function.func`)."""
        return self.overloads[0][0].pyfunc if self.overloads else None

    def add_overload(self, pyfunc):
        source = FunctionSource(pyfunc)
        try:
            params = signature_types(source, self.name, require=False)
        except CompileError as e:
            # as in Warp, annotations are checked when a kernel calling the function is built: the Python module
            # defining it still imports, and a kernel calling this overload raises the error (see _no_overload)
            self.annotation_errors.append(e)
            return
        self.overloads.append((source, params))
        self.specializations.clear()

    def _no_overload(self):
        """Raise the annotation error of a definition kernels could not take, when no other overload exists."""
        if not self.overloads and self.annotation_errors:
            raise self.annotation_errors[0]

    def takes_exactly(self, types_) -> bool:
        """Whether an overload takes arguments of exactly these types (generic parameters take any)."""
        return any(len(params) == len(types_) and all(_matches(p, t) for p, t in zip(params, types_))
                   for _, params in self.overloads)

    def __call__(self, *args, **kwargs):
        """Called from Python (as Warp allows): runs the Python body of the overload whose annotations take the
        arguments (a Python int is an int32, a float a float32); kernel builtins it calls run on the host too."""
        import inspect
        for source, params in self.overloads:
            try:
                bound = inspect.signature(source.pyfunc).bind(*args, **kwargs)
            except TypeError:
                continue
            names = [a.arg for a in source.fdef.args.args]
            if all(_host_value_matches(p, bound.arguments[n]) for p, n in zip(params, names) if n in bound.arguments):
                return source.pyfunc(*args, **kwargs)
        self._no_overload()
        raise RuntimeError(f"Error calling function '{self.name}', no overload found for arguments {args!r}")

    def needs_defaults(self, count: int) -> bool:
        """Whether a call with `count` positional arguments leaves parameters to their default values."""
        self._no_overload()
        source, _ = self.overloads[0]
        return count < len(source.fdef.args.args) and bool(source.pyfunc.__defaults__)

    def order_arguments(self, args, kwargs_names, op, default=None):
        """Arguments in parameter order: positional, then keywords by name, then the Python defaults of the
        parameters left out (`default(value)` makes the IR value of a default)."""
        self._no_overload()
        source, _ = self.overloads[0]
        names = [a.arg for a in source.fdef.args.args]
        npos = len(args) - len(kwargs_names)
        out = list(args[:npos]) + [None] * (len(names) - npos)
        for k, v in zip(kwargs_names, args[npos:]):
            if k not in names:
                raise CompileError(f"'{self.name}' has no parameter '{k}'", op.loc, _caller(op))
            out[names.index(k)] = v
        defaults = source.pyfunc.__defaults__ or ()
        first_default = len(names) - len(defaults)
        for i, v in enumerate(out):
            if v is None and i >= first_default and default is not None:
                out[i] = default(defaults[i - first_default])
        missing = [n for n, v in zip(names, out) if v is None]
        if missing:
            raise CompileError(f"'{self.name}' is missing arguments: {', '.join(missing)}", op.loc, _caller(op))
        return out

    def specialize(self, args, ti, op):
        """The typed IR of the overload matching `args` (values of the caller); converts weak literals.

        As in Warp, an overload whose annotations are the arguments' own types wins over a generic one and over
        one reached by converting a literal (`f(17, 25)` calls `f(a: int, b: int)`, not `f(a: float, b: float)`
        nor `f(a: Any, b: Any)` declared before it)."""
        for source, params in self._by_preference(args):
            conv = [a if is_generic_type(p) or isinstance(p, (ArrayType, TileType)) else ti.convert_weak_to(a, p, op)
                    for a, p in zip(args, params)]
            if all(_matches(p, a.type) for p, a in zip(params, conv)):
                self._check_function_arguments(source, params, conv, ti, op)
                # a fixed-size array is passed as a plain array over its storage: the callee writes the caller's
                types_ = tuple(a.type.unfixed if isinstance(a.type, ArrayType) else a.type for a in conv)
                fn = self.specializations.get(types_)
                if fn is None:
                    key = (source, types_)  # this overload with these types: another function may share them
                    if key in _in_progress:
                        raise CompileError(f"'{self.name}' calls itself: recursion is not supported", op.loc,
                                           ti.fn.name)
                    _in_progress.add(key)
                    try:
                        fn = ti.compile_callee(source, "func", self.name, list(types_))
                        _check_return_annotation(source, self.name, fn)
                    except CompileError as e:
                        raise _called_from(e, ti.fn.name, op.loc) from None
                    finally:
                        _in_progress.discard(key)
                    fn.func_object = self
                    # registered first: a custom adjoint or replay may call this function itself
                    self.specializations[types_] = fn
                    try:
                        self._compile_custom(fn, list(types_), ti, params)
                    except CompileError:
                        del self.specializations[types_]
                        raise
                # function arguments are bound in the callee's body, not passed (see is_function_argument)
                return fn, [a for a, p in zip(conv, params) if p is not Func]
        if self.annotation_errors and not self.overloads:
            raise _called_from(self.annotation_errors[0], ti.fn.name, op.loc)
        got = ", ".join(describe(a.type) for a in args)
        raise CompileError(f"no overload of '{self.name}' accepts ({got})", op.loc, ti.fn.name)

    def _check_function_arguments(self, source, params, args, ti, op):
        """Warp's refusals for functions passed to `wp.Function` parameters: none on a function with a custom
        gradient or replay, and only builtins that compute a value (not wp.printf and other special forms)."""
        if Func not in params:
            return
        if self.custom_grad is not None or self.custom_replay is not None:
            raise CompileError("wp.Function parameters are not supported on functions with custom gradients or "
                               f"replay functions: '{self.name}'", op.loc, ti.fn.name)
        names = [a.arg for a in source.fdef.args.args]
        for name, p, a in zip(names, params, args):
            kind, target = resolve_static(a.type.obj) if p is Func else (None, None)
            if kind == "builtin" and all(ov.side_effect or ov.ret is None for ov in BUILTINS.get(target, ())):
                raise CompileError("wp.Function parameters support user-defined Warp functions and simple built-in "
                                   "Warp functions such as wp.sin() and wp.min(), but parameter "
                                   f"'{name}' of '{self.name}' received unsupported built-in function '{target}'.",
                                   op.loc, ti.fn.name)

    def _by_preference(self, args) -> list:
        """The overloads taking len(args) arguments: concrete ones matching the arguments' own types first, then
        those matching them with generic parameters, then the rest in declaration order."""
        candidates = [(s, p) for s, p in self.overloads if len(p) == len(args)]

        def rank(item):
            params = item[1]
            if not all(_matches(p, a.type) for p, a in zip(params, args)):
                return 2
            return 1 if any(is_generic_type(p) for p in params) else 0

        return sorted(candidates, key=rank)  # stable: declaration order within a rank

    def result_count(self, nargs: int, loc, caller: str, lower):
        """How many values a call with `nargs` arguments gives, read from the source before any types are known,
        so that a caller's frontend can lower `return f(x)` and `t = f(x)`. None when the overloads taking `nargs`
        arguments disagree (the call then asks for one value and type inference checks it). `lower(source, kind,
        name, params)` is the caller's frontend (lower_function), which reads the callee's source the same way."""
        counts = {self._source_result_count(source, params, loc, caller, lower)
                  for source, params in self.overloads if len(params) == nargs}
        return counts.pop() if len(counts) == 1 else None

    def reference_indices(self, nargs: int):
        """Positions of the wp.ref[T] parameters of the overloads taking `nargs` arguments: a tuple, or None when
        those overloads disagree (refused by the caller)."""
        found = {reference_params(source) for source, params in self.overloads if len(params) == nargs}
        if len(found) > 1:
            return None
        return found.pop() if found else ()

    def _source_result_count(self, source: FunctionSource, params: list, loc, caller: str, lower) -> int:
        n = self.result_counts.get(source)
        if n is not None:
            return n
        if source in _counting:
            raise CompileError(f"'{self.name}' calls itself: recursion is not supported", loc, caller)
        _counting.add(source)
        try:
            # the frontend does not look at parameter types: the annotations (or Any) give the same count
            fn = lower(source, "func", self.name, list(params))
        except CompileError as e:
            raise _called_from(e, caller, loc) from None
        finally:
            _counting.discard(source)
        n = len(next(op for op in reversed(fn.body.ops) if op.opcode == "return").operands)
        self.result_counts[source] = n
        return n

    def custom_grad_for(self, params: list):
        """The @wp.func_grad of the overload taking `params` (annotation types): as in Warp, the one whose first
        parameters are annotated with them; a gradient matching no overload's annotations is for every one."""
        def leading(grad):
            try:
                return signature_types(grad, self.name, require=False)
            except CompileError:
                return None

        heads = [(g, leading(g)) for g in reversed(self.custom_grads)]
        for g, types_ in heads:
            if types_ is not None and types_[:len(params)] == list(params):
                return g
        overloads = [list(p) for _, p in self.overloads]
        for g, types_ in heads:
            if types_ is None or not any(types_[:len(p)] == p for p in overloads):
                return g
        return None

    def _compile_custom(self, fn: ir.Function, types_: list, ti, params: list):
        """Typed IR of the user's custom adjoint and replay for this specialisation, attached to `fn`."""
        fn.custom_grad_ir = None
        fn.custom_replay_ir = None
        custom_grad = self.custom_grad_for(params)
        if custom_grad is not None:
            grad_types = types_ + list(fn.return_types)
            n = len(custom_grad.fdef.args.args)
            if n != len(grad_types):
                raise CompileError(f"@wp.func_grad of '{self.name}' must take the {len(types_)} arguments of "
                                   f"'{self.name}' and then the adjoint of each of its {len(fn.return_types)} "
                                   f"result(s); it takes {n}", custom_grad.loc(custom_grad.fdef))
            fn.custom_grad_ir = ti.compile_callee(custom_grad, "func", f"adj_{self.name}", grad_types)
        if self.custom_replay is not None:
            replay = ti.compile_callee(self.custom_replay, "func", f"replay_{self.name}", types_)
            if replay.return_types != fn.return_types:
                raise CompileError(f"@wp.func_replay of '{self.name}' must return what '{self.name}' returns",
                                   self.custom_replay.loc(self.custom_replay.fdef))
            fn.custom_replay_ir = replay
        if fn.custom_grad_ir is not None or fn.custom_replay_ir is not None:
            ti.derive_adjoint(fn)  # the adjoint pass's answer depends on them: the user's adjoint, purity


_in_progress: set = set()  # (overload source, argument types) being compiled: a repeat is recursion
_counting: set = set()  # overload sources whose result count is being read: a repeat is recursion


def _called_from(e: CompileError, caller: str, loc) -> CompileError:
    """`e` with a note saying which caller asked for the function that failed to compile."""
    if "called from" in e.message or e.loc == loc:
        return e
    # before the message, which ends the text as Warp's does (patterns anchored at the end still match)
    return type(e)(f"(called from '{caller}' at {loc})\n{e.message}", e.loc, e.function)


def _caller(op) -> str:
    return op.attrs.get("caller", "")


_FuncParams = typing.ParamSpec("_FuncParams")
_FuncReturn = typing.TypeVar("_FuncReturn")


# The two spellings of the decorator, for static type checkers (and typing.get_overloads, which Warp's test_func
# reads): a decorated function keeps its parameters and result type in an editor's hover and checks.
@typing.overload
def func(pyfunc: Callable[_FuncParams, _FuncReturn], /) -> Callable[_FuncParams, _FuncReturn]: ...


@typing.overload
def func(pyfunc: None = None, *, name: str | None = None, module: typing.Any = None, inline: bool | None = None
         ) -> Callable[[Callable[_FuncParams, _FuncReturn]], Callable[_FuncParams, _FuncReturn]]: ...


def func(pyfunc=None, *, name: str | None = None, module=None, inline: bool | None = None):
    """Decorator: a function callable from kernels.

    As in Warp, a definition is related to an earlier one only through the name it is bound to in the scope where
    the decorator runs (the caller's locals; module globals at the top level). There, a definition with other
    annotations adds an overload to the existing function (and returns it); one with the annotations of the
    existing function makes a new function that keeps the other overloads, so that references to the old one
    keep their old body. Anywhere else (each call of a factory function, each branch taken) the definition is a
    function of its own, with its own closure values, even when name and signature repeat.

    Warp's options, as `@wp.func(name=..., module=..., inline=...)`, apply to a new function:
        name: the function's key (default: its qualified name).
        module: the module it belongs to (a name, a Module, or "unique" for one of its own); kept as `f.module`
            so that `@wp.kernel(module=f.module)` groups a kernel with it. Functions are compiled into each kernel
            that calls them here, so the option changes where code is built, never a result.
        inline: Warp's hint to the C++ compiler (`True`: force inlining, `False`: keep out of line, `None`: the
            compiler's choice); kept as `f.inline_hint` ("forceinline"/"noinline"/None). Inlining never changes
            a result.
    """
    if inline is not None and not isinstance(inline, bool):
        raise TypeError(f"inline must be a bool or None, got {type(inline).__name__}: {inline!r}")
    scope = sys._getframe(1).f_locals  # where the decorator runs (also for `@wp.func(...)` with options)
    if pyfunc is None:
        return lambda f: _define(f, scope, name, module, inline)
    return _define(pyfunc, scope, name, module, inline)


def _define(pyfunc, scope, name, module, inline) -> Func:
    """The function `func` returns for `pyfunc` decorated in `scope` (see func)."""
    refuse_array_subclass_annotations(getattr(pyfunc, "__annotations__", {}), f"function '{pyfunc.__name__}'")
    existing = scope.get(pyfunc.__name__)
    f = _relate(existing, pyfunc) if isinstance(existing, Func) else Func(pyfunc)
    if f is not existing:
        if name:
            f.key = f"{pyfunc.__module__}.{name}"
        mod = getattr(module, "name", module)  # a Module: its name (this layer does not import the runtime)
        if mod == "unique":
            mod = f"{pyfunc.__module__}.{pyfunc.__qualname__}:{pyfunc.__code__.co_firstlineno}:{id(pyfunc):x}"
        f.module_name = mod or pyfunc.__module__
        f.inline_hint = None if inline is None else ("forceinline" if inline else "noinline")
    return f


def _relate(existing: Func, pyfunc) -> Func:
    """A redefinition of the function bound to the same name: an overload of `existing` (returned) when its
    annotations differ from the first overload's, else a new function keeping the other overloads."""
    source = FunctionSource(pyfunc)
    try:
        new_types = signature_types(source, pyfunc.__name__, require=False)
    except CompileError as e:
        existing.annotation_errors.append(e)  # raised when a kernel calling it is built, as add_overload does
        return existing
    for old_source, old_types in existing.overloads:
        if old_types == new_types and reference_params(old_source) != reference_params(source):
            raise RuntimeError(f"@wp.func '{pyfunc.__name__}': overloads may not differ only in which parameters "
                               f"are wp.ref[T] (a call could not tell them apart)")
    if existing.overloads and new_types == existing.overloads[0][1]:
        replacement = Func(pyfunc)
        replacement.overloads += [o for o in existing.overloads[1:] if o[1] != new_types]
        return replacement
    existing.overloads = [o for o in existing.overloads if o[1] != new_types]
    existing.overloads.append((source, new_types))
    existing.specializations.clear()
    return existing


def _attach(forward: Func, attr: str, decorator: str):
    if not isinstance(forward, Func):
        raise TypeError(f"@wp.{decorator}(f) needs a @wp.func f")

    def decorate(pyfunc):
        source = FunctionSource(pyfunc)
        setattr(forward, attr, source)
        if attr == "custom_grad":
            forward.custom_grads.append(source)
        forward.specializations.clear()
        return pyfunc

    return decorate


def func_grad(forward: Func):
    """Decorator: a custom adjoint for the @wp.func `forward` (Warp's `@wp.func_grad`).

    The decorated function takes `forward`'s arguments followed by the adjoint of each of its results, and adds
    to the arguments' adjoints with `wp.adjoint[x] += ...`. It replaces the derived adjoint of `forward`.
    """
    return _attach(forward, "custom_grad", "func_grad")


class FuncGradient:
    """`wp.grad(f)`: inside kernels and @wp.func bodies, `wp.grad(f)(x, y, ...)` gives the gradient of the scalar
    @wp.func or differentiable builtin `f` with respect to each argument at (x, y, ...): one value of the
    argument's type, or a tuple of them when `f` takes several. It runs f's adjoint (derived, @wp.func_grad or
    the builtin's) with a seed of 1. It can be bound to a local (`g = wp.grad(f)`), which cannot be rebound."""

    def __init__(self, func):
        self.func = func
        self.name = f"grad({getattr(func, 'name', None) or getattr(func, '_wp_builtin_', '?')})"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"wp.grad({self.func.name})(...) can only be called inside kernels and @wp.func bodies")


def grad(f):
    """The gradient of a scalar @wp.func or builtin, callable in kernels: `wp.grad(f)(x)` (see FuncGradient)."""
    if not isinstance(f, Func) and getattr(f, "_wp_builtin_", None) is None:
        raise TypeError(f"wp.grad takes a @wp.func or a kernel builtin, got {type(f).__name__}")
    return FuncGradient(f)


def func_replay(forward: Func):
    """Decorator: what the backward pass runs instead of `forward` when it replays the forward computation
    (Warp's `@wp.func_replay`), e.g. to skip side effects or use a cheaper equivalent. Same signature and results."""
    return _attach(forward, "custom_replay", "func_replay")
