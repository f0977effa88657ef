"""The names kernel code reaches as `wp.<name>` besides types and decorators: one callable object per builtin
(callable from Python too, as a one-thread CPU kernel, through the runtime's host caller), Warp's math constants,
and the types that kernel modules inside this package use. `kernels` re-exports them; the package's own kernel
modules (mathlib, runtime/array_ops) write `from .compiler import lang as wp`, so the package never imports a
module that imports it back. It imports only the builtin table and the types: the frontend resolves `wp.<name>`
through it."""

from __future__ import annotations

from .. import builtins as _builtins
from ..typesys import tile_annotation
from .tile_stack_type import tile_stack_type
from ..types import (float64, mat33, mat33d, mat44, mat44d, quat, quatd, spatial_matrix, spatial_matrixd,  # noqa: F401
                     spatial_vector, transform, vec3, vec3d)

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

CONSTANTS = ("E", "e", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10", "PHI", "phi", "PI", "pi",
             "HALF_PI", "half_pi", "TAU", "tau", "INF", "inf", "NAN", "nan")

# special forms of the frontend that only make sense inside a kernel (the table's builtins say so themselves)
KERNEL_ONLY_FORMS = frozenset({"block_dim", "static"})


#: call(name, args, kwargs) running a builtin from Python scope: the runtime's (kernels/runtime/host_call.py
#: compiles and launches a one-thread kernel), installed by it at import; the compiler below cannot call it
_host_caller = None


def set_host_caller(call) -> None:
    """Install the function that runs a builtin called from Python scope (the runtime does, at import)."""
    global _host_caller
    _host_caller = call


class BuiltinFunction:
    """A kernel builtin reachable as `wp.<name>`."""

    def __init__(self, name):
        self._wp_builtin_ = name
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        """From Python scope, the builtin runs as a one-thread CPU kernel (kernels/runtime/host_call.py), as in Warp."""
        props = _builtins.registry.PROPERTIES.get(self._wp_builtin_)
        if self._wp_builtin_ in KERNEL_ONLY_FORMS or (props is not None and props.kernel_only):
            raise RuntimeError(f"wp.{self._wp_builtin_}() can only be called inside kernels and @wp.func")
        if _host_caller is None:
            raise RuntimeError(f"wp.{self._wp_builtin_}() from Python needs the runtime: import kernels")
        return _host_caller(self._wp_builtin_, args, kwargs)

    def __repr__(self):
        return f"<builtin {self._wp_builtin_}>"


class TileBuiltin(BuiltinFunction):
    """`wp.tile(x)` inside kernels; `wp.tile[dtype, M, N]` (or `wp.tile[dtype]`, any shape) as an annotation."""

    def __getitem__(self, params):
        return tile_annotation(params)


class TileStackBuiltin(BuiltinFunction):
    """`wp.tile_stack(capacity, dtype)`: a stack inside kernels; from Python, the stack type (for @wp.func
    annotations)."""

    def __call__(self, capacity, dtype=float):
        return tile_stack_type(dtype, capacity)


_SPECIAL_OBJECTS = {"tile": TileBuiltin, "tile_stack": TileStackBuiltin}

#: name -> the object `wp.<name>` is for that builtin: every builtin the table marks exposed (operators Warp also
#: exposes by name, wp.add, wp.bit_and, included)
BUILTIN_FUNCTIONS: dict = {
    name: _SPECIAL_OBJECTS.get(name, BuiltinFunction)(name)
    for name, overloads in _builtins.BUILTINS.items()
    if overloads[0].props.exposed and not name.startswith("construct_")}
#: the operators among them: `kernels` binds these even where another object has the name
OPERATOR_NAMES = tuple(name for name in BUILTIN_FUNCTIONS if _builtins.BUILTINS[name][0].props.operator)

for _name, _obj in BUILTIN_FUNCTIONS.items():  # the types imported above keep their names
    if _name not in globals():
        globals()[_name] = _obj
del _name, _obj
