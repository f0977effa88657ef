"""The builtin table: one declaration per builtin overload, with type patterns matched by a small unifier.

A declaration says: the Python name, argument patterns, a result rule, the C++ symbol in namespace `wp` (whose
adjoint is `adj_<symbol>` in the same native header), whether it is differentiable, and a doc line.

Native calling convention (see kernels/native/*.h):
    forward:  R symbol(A a, B b)
    adjoint:  void adj_symbol(A a, B b, A& adj_a, B& adj_b, const R& adj_ret)   # accumulates with +=
Arguments of integer type still get an adjoint slot (ignored), so every call renders the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import types as T
from ..typesys import ArrayType, StaticType, TileType

# ----------------------------------------------------------------------------------------------------------------
# Type patterns


@dataclass(frozen=True)
class S:
    """A scalar type variable named `name`, restricted to `kind`: "float", "int", "scalar" (numeric) or "any"."""

    name: str = "T"
    kind: str = "scalar"

    def admits(self, t) -> bool:
        if not T.is_scalar(t):
            return False
        if self.kind == "float":
            return T.is_float(t)
        if self.kind == "int":
            return T.is_int(t)
        if self.kind == "scalar":
            return t is not T.bool_
        return True


@dataclass(frozen=True)
class V:
    """A vector of length `n` (an int or a variable name) over scalar pattern `dtype`."""

    n: object = "N"
    dtype: S = S()


@dataclass(frozen=True)
class M:
    """A matrix of `rows` x `cols` (ints or variable names) over scalar pattern `dtype`."""

    rows: object = "R"
    cols: object = "C"
    dtype: S = S()


@dataclass(frozen=True)
class Q:
    """A quaternion over scalar pattern `dtype`."""

    dtype: S = S("T", "float")


@dataclass(frozen=True)
class X:
    """A transform over scalar pattern `dtype`."""

    dtype: S = S("T", "float")


@dataclass(frozen=True)
class A:
    """An array (any dtype unless `dtype` is a pattern), optionally of fixed `ndim`. `indexed`: also takes
    Warp's indexed and fabric arrays (binding `__kind` to the argument's (indexed, fabric), for a result rule that
    keeps the kind); a builtin whose native code reads only `wp::array_t` leaves it False."""

    dtype: object = None
    ndim: object = None
    indexed: bool = False


@dataclass(frozen=True)
class TypeArg:
    """A type passed as a compile-time argument (the target of a constructor such as `wp.vec3(...)`); matches a
    StaticType holding a type that unifies with `inner`. Not rendered as a C++ argument."""

    inner: object


@dataclass(frozen=True)
class Tl:
    """A tile with element pattern `dtype` and shape variables `rows`, `cols` (ints or names); `ndim` 1, 2 or
    None (either). A 1-d tile has cols == 1. `nd_max` 4 also admits 3-d and 4-d tiles (rows: the first extent,
    cols: the product of the others, their row-major storage): only builtins written for their axes say so."""

    dtype: object = S()
    rows: object = "M"
    cols: object = "N"
    ndim: object = None
    nd: str = "__tile_ndim"  # variable that ties the number of dimensions of several tile patterns together
    nd_max: int = 2


class AnyType:
    """Matches any type; binds it to `name`."""

    def __init__(self, name="A"):
        self.name = name


def _bind(bindings: dict, name, value) -> bool:
    if isinstance(name, int):
        return name == value
    if name in bindings:
        return bindings[name] == value
    bindings[name] = value
    return True


def unify(pattern, t, bindings: dict) -> bool:
    """Match type `t` against `pattern`, extending `bindings`; False if it does not match."""
    if isinstance(pattern, S):
        return pattern.admits(t) and _bind(bindings, pattern.name, t)
    if isinstance(pattern, V):
        return (T.is_vector(t) and _bind(bindings, pattern.n, t._shape_[0])
                and unify(pattern.dtype, t._wp_scalar_type_, bindings))
    if isinstance(pattern, M):
        return (T.is_matrix(t) and _bind(bindings, pattern.rows, t._shape_[0])
                and _bind(bindings, pattern.cols, t._shape_[1]) and unify(pattern.dtype, t._wp_scalar_type_, bindings))
    if isinstance(pattern, Q):
        return T.is_quat(t) and unify(pattern.dtype, t._wp_scalar_type_, bindings)
    if isinstance(pattern, X):
        return T.is_transform(t) and unify(pattern.dtype, t._wp_scalar_type_, bindings)
    if isinstance(pattern, A):
        if not isinstance(t, ArrayType) or (not t.plain and not pattern.indexed):
            return False
        if pattern.indexed and not _bind(bindings, "__kind", (t.indexed, t.fabric)):
            return False
        if pattern.ndim is not None and not _bind(bindings, pattern.ndim, t.ndim):
            return False
        return pattern.dtype is None or unify(pattern.dtype, t.dtype, bindings)
    if isinstance(pattern, Tl):
        if not isinstance(t, TileType) or (pattern.ndim is not None and len(t.shape) != pattern.ndim) \
                or len(t.shape) > pattern.nd_max:
            return False
        if len(t.shape) > 2 and not _bind(bindings, pattern.nd + "_shape", t.shape):
            return False
        return (_bind(bindings, pattern.rows, t.rows) and _bind(bindings, pattern.cols, t.cols)
                and _bind(bindings, pattern.nd, len(t.shape)) and unify(pattern.dtype, t.dtype, bindings))
    if isinstance(pattern, AnyType):
        return _bind(bindings, pattern.name, t)
    if isinstance(pattern, TypeArg):
        return isinstance(t, StaticType) and unify(pattern.inner, T.canonical_type(t.obj), bindings)
    return pattern == t


def instantiate(rule, bindings: dict):
    """Evaluate a result rule: a pattern (with bound variables), a concrete type, None, or a callable(bindings)."""
    if rule is None:
        return None
    if callable(rule) and not isinstance(rule, type):
        return rule(bindings)
    if isinstance(rule, str):
        return bindings[rule]
    if isinstance(rule, AnyType):
        return bindings[rule.name]
    if isinstance(rule, S):
        return bindings[rule.name]
    if isinstance(rule, V):
        n = rule.n if isinstance(rule.n, int) else bindings[rule.n]
        return T.vector(n, bindings[rule.dtype.name])
    if isinstance(rule, M):
        r = rule.rows if isinstance(rule.rows, int) else bindings[rule.rows]
        c = rule.cols if isinstance(rule.cols, int) else bindings[rule.cols]
        return T.matrix((r, c), bindings[rule.dtype.name])
    if isinstance(rule, Q):
        return T.quaternion(bindings[rule.dtype.name])
    if isinstance(rule, X):
        return T.transformation(bindings[rule.dtype.name])
    if isinstance(rule, Tl):
        rows = rule.rows if isinstance(rule.rows, int) else bindings[rule.rows]
        cols = rule.cols if isinstance(rule.cols, int) else bindings[rule.cols]
        dtype = instantiate(rule.dtype, bindings) if not T.is_scalar(rule.dtype) and not T.is_composite(rule.dtype) \
            else rule.dtype
        ndim = rule.ndim if rule.ndim is not None else bindings.get(rule.nd, 2)
        if ndim > 2:
            # the argument's full shape, when the result has its storage (rows x cols) and number of dimensions
            shape = bindings.get(rule.nd + "_shape")
            if rule.nd_max < ndim or shape is None or (shape[0], math.prod(shape[1:])) != (rows, cols):
                raise TypeError(f"internal: no {ndim}-d tile result for the pattern {rule!r}")
            return TileType(dtype, shape)
        return TileType(dtype, (rows,) if ndim == 1 else (rows, cols))
    if isinstance(rule, tuple):
        return tuple(instantiate(r, bindings) for r in rule)
    return rule


# ----------------------------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Properties:
    """How the compiler treats a builtin beyond its types: read by the adjoint pass and the renderer instead of
    testing builtin names. Declared per builtin name with `declare_properties`, next to its overloads.

    `forward`: how a call is written (render.FunctionRenderer.call_expr / op_call): "call" (`wp::native(args)`),
    "index_load", "index_store", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "cast", "array_shape", "field_get", "field_set", "struct_new", "tid",
    "tile_map", "tile_reduce".
    `adjoint`: how its reverse is written (an ir_ops.ADJOINT_FORMS name), or "none": it has no reverse (its
    operands get no gradient through it: thread indices, shapes, views, stop_gradient).
    `linear`: its adjoint reads none of its operands' primal values (a + b, -a): the replay need not be exact.
    `moves_components`: it only copies, adds or subtracts components (a component write may follow it).
    `array_view`: it makes a sub-array view; the gradient array is the same view of the parent's gradient.
    `array_access`: "read", "write" or "accumulate" for an element access of its first (array) argument.
    `stops_gradient`: its result carries no gradient, whatever its argument (wp.stop_gradient).
    `adjoint_without_result`: its reverse runs though it has no result (tile_store: the gradient comes from
    the array).
    `operator`: the frontend writes it for a Python operator (a + b, a < b, not a, ~a).
    `exposed`: `wp.<name>` exists (callable in kernels and, unless `kernel_only`, from Python); the compiler's
    internal forms (loads, stores, comparisons, struct fields, casts) are not.
    `kernel_only`: `wp.<name>(...)` from Python is an error (thread index, atomics on arrays), not a one-thread
    launch (host_call.py).
    """

    forward: str = "call"
    adjoint: str = "native"
    linear: bool = False
    moves_components: bool = False
    array_view: bool = False
    array_access: str = ""
    stops_gradient: bool = False
    adjoint_without_result: bool = False
    operator: bool = False
    exposed: bool = True
    kernel_only: bool = False


DEFAULT_PROPERTIES = Properties()


@dataclass
class Overload:
    """One overload of a builtin."""

    name: str
    args: tuple  # patterns, one per positional argument
    ret: object  # result rule; a tuple for several results; None for no result
    native: str  # C++ symbol in namespace wp
    differentiable: bool = True
    side_effect: bool = False  # stores, atomics, printing: never replayed in the adjoint
    doc: str = ""
    group: str = ""
    arg_names: tuple = ()
    defaults: dict = field(default_factory=dict)  # arg name -> default Python value
    # Arguments the renderer passes as compile-time template values, e.g. the result type of a cast.
    template_ret: bool = False
    # The native function updates its first argument in place (random states: `x = wp.randf(state)` advances
    # `state`); the compiler rebinds the caller's variable to the updated value.
    mutates_first: bool = False
    # Likewise for other arguments, by position: an int or a tuple of ints (`tile_matmul(a, b, out)` accumulates
    # into `out`; `hash_grid_query_next(query, index)` advances `query` and writes `index`).
    mutates_arg: object = None
    # Positions of arguments that get no gradient (tile_matmul's alpha, beta): the adjoint pass refuses a value
    # there that carries one, rather than dropping it.
    constant_args: tuple = ()
    # How the compiler treats it (forms of forward and reverse, linearity, ...): see Properties.
    props: Properties = DEFAULT_PROPERTIES

    def mutated_args(self) -> tuple:
        """Positions of the arguments the native function updates in place, in order."""
        if self.mutates_first:
            return (0,)
        if self.mutates_arg is None:
            return ()
        return tuple(self.mutates_arg) if isinstance(self.mutates_arg, (tuple, list)) else (self.mutates_arg,)


BUILTINS: dict[str, list[Overload]] = {}
PROPERTIES: dict[str, Properties] = {}  # builtin name -> what declare_properties said

# Builtins that make a query a `for` loop can iterate over, and the builtin that yields its next index:
# `for i in wp.hash_grid_query(...)` runs while `hash_grid_query_next(query, i)` gives true.
QUERY_NEXT: dict[str, str] = {}


def add_builtin(name, args, ret, native=None, *, differentiable=True, side_effect=False, doc="", group="",
                arg_names=None, defaults=None, template_ret=False, mutates_first=False, mutates_arg=None,
                constant_args=()):
    """Declare an overload of builtin `name`. See the module docstring for the native convention."""
    if arg_names is None:
        arg_names = tuple("abcdefghijklmnop"[: len(args)])
    ov = Overload(name=name, args=tuple(args), ret=ret, native=native or name, differentiable=differentiable,
                  side_effect=side_effect, doc=doc, group=group, arg_names=tuple(arg_names),
                  defaults=dict(defaults or {}), template_ret=template_ret,
                  mutates_first=mutates_first, mutates_arg=mutates_arg, constant_args=tuple(constant_args))
    ov.props = PROPERTIES.get(name, DEFAULT_PROPERTIES)
    BUILTINS.setdefault(name, []).append(ov)
    return ov


def declare_properties(name: str, **properties):
    """Declare how the compiler treats builtin `name` (see Properties), for its overloads declared so far and
    later ones."""
    props = Properties(**{**vars(PROPERTIES.get(name, DEFAULT_PROPERTIES)), **properties})
    PROPERTIES[name] = props
    for ov in BUILTINS.get(name, ()):
        ov.props = props


def resolve(name: str, arg_types: list):
    """Find the first overload of `name` matching `arg_types`. Returns (overload, result type) or (None, None)."""
    for ov in BUILTINS.get(name, ()):
        if len(ov.args) != len(arg_types):
            continue
        bindings: dict = {}
        if all(unify(p, t, bindings) for p, t in zip(ov.args, arg_types)):
            return ov, instantiate(ov.ret, bindings)
    return None, None


def signatures(name: str) -> list[str]:
    """Human-readable list of the overloads of `name`, for error messages."""
    out = []
    for ov in BUILTINS.get(name, ()):
        out.append(f"{name}({', '.join(_pattern_repr(p) for p in ov.args)})")
    return out


def _pattern_repr(p) -> str:
    if isinstance(p, S):
        return {"float": "Float", "int": "Int", "scalar": "Scalar", "any": "Any"}[p.kind]
    if isinstance(p, V):
        return f"vector({p.n}, {_pattern_repr(p.dtype)})"
    if isinstance(p, M):
        return f"matrix({p.rows}x{p.cols}, {_pattern_repr(p.dtype)})"
    if isinstance(p, Q):
        return "quat"
    if isinstance(p, X):
        return "transform"
    if isinstance(p, A):
        return "array"
    if isinstance(p, AnyType):
        return "Any"
    if isinstance(p, Tl):
        return "tile"
    return T.type_repr(p)
