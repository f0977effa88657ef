"""`@wp.func_native(snippet, adj_snippet, replay_snippet)`: Warp's functions written as C++ snippets.

The decorated Python function is a typed stub: its parameter names are the names the snippet uses, its return
annotation (if any) the type the snippet returns. A call compiles to an `ir.Function` with no body and attr
`native` (this module's NativeSpec); render_native.py prints the snippet as a C++ function for the CPU and for
CUDA alike. To the passes such a function is opaque: it has side effects (never removed nor merged), it may read
and write every array it is given (access.py, inplace.py), and its adjoint is the user's `adj_snippet`.

Semantics, as in Warp 1.19:
  - a `wp.ref[T]` parameter is a C++ reference `T&` in the snippet; here the call passes the argument's value and
    writes the final value back to it when the call returns (frontend_reference.py), as for a @wp.func.
  - the adjoint snippet sees the primal arguments, `adj_<name>` (a reference to each argument's adjoint) and
    `adj_ret`. For a reference parameter `adj_x` holds the adjoint of the storage after the call when the snippet
    starts, and what it holds when the snippet ends is the adjoint of the storage before the call. Its primal `x`
    is the value after the call (what Warp's storage holds when its backward runs).
  - the backward pass replays the forward snippet (side effects included), or `replay_snippet` when given.
  - without `adj_snippet`, a function that takes or returns a differentiable value has no adjoint: a kernel
    calling it has no backward (Warp's adjoint would be empty, a silent zero gradient).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

from . import ir
from .. import types as T
from ..errors import CompileError
from ..typesys import ArrayType, is_differentiable_type, is_struct
from .function import Func, _called_from, _matches, annotation_type, is_generic_type, reference_params

__all__ = ["NativeSnippet", "NativeSpec", "func_native", "is_native"]


@dataclass(frozen=True)
class NativeSpec:
    """The C++ text of one native function: forward snippet, adjoint snippet, replay snippet (None: absent), and
    the positions of its wp.ref[T] parameters."""

    snippet: str
    adj_snippet: str | None
    replay_snippet: str | None
    references: tuple


def is_native(fn) -> bool:
    """Whether the typed function `fn` is a @wp.func_native snippet (opaque to the passes)."""
    return getattr(fn, "native", None) is not None


class NativeSnippet(Func):
    """A function defined by `@wp.func_native(snippet, adj_snippet=..., replay_snippet=...)`."""

    def __init__(self, pyfunc, snippet: str, adj_snippet: str | None, replay_snippet: str | None):
        super().__init__(pyfunc)
        self.snippet, self.adj_snippet, self.replay_snippet = snippet, adj_snippet, replay_snippet
        self.__name__ = pyfunc.__name__

    @property
    def manual_reference_adjoint(self) -> bool:
        """Warp's rule: a wp.ref[T] call may be in a backward-enabled kernel when the user wrote the adjoint."""
        return self.adj_snippet is not None

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"'{self.__name__}' is a wp.func_native C++ snippet: it runs only inside kernels")

    def result_count(self, nargs: int, loc, caller: str, lower):
        """Values a call gives: the annotated result (if any), then one per wp.ref[T] parameter."""
        counts = {self._own_count(source) + len(reference_params(source))
                  for source, params in self.overloads if len(params) == nargs}
        return counts.pop() if len(counts) == 1 else None

    def _own_count(self, source) -> int:
        ann = source.pyfunc.__annotations__.get("return")
        return 0 if ann is None else 1

    def _own_type(self, source, where):
        ann = source.pyfunc.__annotations__.get("return")
        if ann is None:
            return []
        if isinstance(ann, str):
            ann = eval(ann, {**source.globals, **source.closure})  # noqa: S307  (the user's own annotation)
        if typing.get_origin(ann) is tuple:
            raise CompileError(f"wp.func_native '{self.name}' returns one value at most (a C++ function)", where,
                               self.name)
        try:
            return [annotation_type(ann, "return")]
        except TypeError as e:
            raise CompileError(str(e), where, self.name) from None

    def specialize(self, args, ti, op):
        """The bodiless typed function for these argument types (see the module docstring)."""
        self._no_overload()
        for source, params in self._by_preference(args):
            conv = [a if is_generic_type(p) or isinstance(p, ArrayType) else ti.convert_weak_to(a, p, op)
                    for a, p in zip(args, params)]
            if not all(_matches(p, a.type) for p, a in zip(params, conv)):
                continue
            types_ = tuple(a.type for a in conv)
            fn = self.specializations.get(types_)
            if fn is None:
                try:
                    fn = self._typed(source, list(types_))
                except CompileError as e:
                    raise _called_from(e, ti.fn.name, op.loc) from None
                self.specializations[types_] = fn
            return fn, conv
        got = ", ".join(T.type_repr(a.type) for a in args)
        raise CompileError(f"no overload of '{self.name}' accepts ({got})", op.loc, ti.fn.name)

    def _typed(self, source, types_: list) -> ir.Function:
        where = source.loc(source.fdef)
        names = [a.arg for a in source.fdef.args.args]
        for n, t in zip(names, types_):
            if is_generic_type(t) or t is Func:
                raise CompileError(f"wp.func_native '{self.name}': parameter '{n}' needs a concrete type (the "
                                   f"snippet is C++ text)", where, self.name)
        refs = reference_params(source)
        own = self._own_type(source, where)
        fn = ir.Function(self.name, "func", [ir.Value(t, n) for t, n in zip(types_, names)], names,
                         ir.Block(), where, own + [types_[i] for i in refs])
        fn.native = NativeSpec(self.snippet, self.adj_snippet, self.replay_snippet, refs)
        fn.func_object = self
        fn.custom_grad_ir = None
        fn.custom_replay_ir = None
        fn._side_effects = True  # passes/dce.py: a snippet may write through pointers or arrays
        fn.adjoint = ir.Adjoint(custom=True, pure=False)
        if self.adj_snippet is None and any(_differentiable(t) for t in types_ + own):
            fn.adjoint = ir.Adjoint(error=CompileError(
                f"wp.func_native '{self.name}' has no adj_snippet, so its gradient is unknown: give "
                f"adj_snippet=..., or launch the kernel with enable_backward=False", where, self.name))
        return fn


def _differentiable(t) -> bool:
    if isinstance(t, ArrayType):
        return _differentiable(t.dtype)
    if is_struct(t):
        return any(_differentiable(ft) for ft in t._wp_struct_.fields.values())
    return is_differentiable_type(t)


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None):
    """Decorator: Warp's C++-snippet function (see the module docstring)."""
    for what, text in (("snippet", snippet), ("adj_snippet", adj_snippet), ("replay_snippet", replay_snippet)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"wp.func_native takes {what} as a string of C++ source, got {type(text).__name__}")
    if snippet is None:
        raise TypeError("wp.func_native needs the snippet's C++ source")

    def decorate(pyfunc):
        return NativeSnippet(pyfunc, snippet, adj_snippet, replay_snippet)

    return decorate
