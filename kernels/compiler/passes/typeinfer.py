"""Pass: type inference and overload resolution.

Expects: untyped IR from the frontend (parameters typed).
Guarantees: every value has a concrete type; every `call` has either attr "overload" (a builtin) or "callee" (a
typed user function); `getattr`, `getitem`, `setitem`, `setattr`, `setpath`, `augpath` and `construct` are rewritten
to calls of builtins; Python literals ("weak" constants) take the type their use requires; conditions are `bool`.
Raises CompileError naming the source line for any type error.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ir
from ... import types as T
from ...builtins import registry
from ...errors import (CompileAttributeError, CompileError, CompileTypeError, CompileValueError, KernelError,
                       UnsupportedAtomicError)
from ..scalar_semantics import ScalarSemanticsError
from ...typesys import ArrayType, PackType, ShapeType, StaticType, TileType, describe, is_struct
from .adjoint import derive_adjoint
from .typeinfer_constructors import ConstructorForms
from .typeinfer_control import ControlFlowForms
from .typeinfer_fixedarray import FixedArrayForms
from .typeinfer_gradient import GradientForms
from .typeinfer_bitcast import BitCastForms
from .typeinfer_paths import PathForms
from .typeinfer_scalars import ScalarForms
from .typeinfer_slices import SliceForms, is_slice
from .typeinfer_starred import StarredForms
from .typeinfer_tile_slices import TileSliceForms
from .typeinfer_tiles import TileForms
from .typeinfer_tiles_nd import ND_TILE_FORMS, TileNdForms, is_nd_tile
from .typeinfer_tiles_struct import TileStructForms
from .typeinfer_reference import ReferenceForms
from .typeinfer_volume import VolumeForms

_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}
_TILE_ELEMENTWISE = {"add", "sub", "mul", "div", "mod", "neg", "pos"}


_ATOMIC_INTS = (T.int32, T.uint32, T.int64, T.uint64)
_ADD_WORDING = "[u]int32, [u]int64, float16, bfloat16, float32, or float64"
_MINMAX_WORDING = "[u]int32, [u]int64, bfloat16, float32, or float64"
# builtin -> (scalar types with a native atomic form, Warp's wording of the list); bfloat16 joins when it exists
_ATOMIC_SCALARS = {
    "atomic_add": (_ATOMIC_INTS + (T.float16, T.float32, T.float64), _ADD_WORDING),
    "atomic_sub": (_ATOMIC_INTS + (T.float16, T.float32, T.float64), _ADD_WORDING),
    "atomic_min": (_ATOMIC_INTS + (T.float32, T.float64), _MINMAX_WORDING),
    "atomic_max": (_ATOMIC_INTS + (T.float32, T.float64), _MINMAX_WORDING),
}
if hasattr(T, "bfloat16"):
    _ATOMIC_SCALARS = {k: (v[0] + (T.bfloat16,), v[1]) for k, v in _ATOMIC_SCALARS.items()}
_ATOMIC_SCALARS.update({f"atomic_{op}": (_ATOMIC_INTS, "[u]int32 or [u]int64") for op in ("and", "or", "xor")})
_ATOMIC_SCALARS.update({name: (_ATOMIC_INTS + (T.float32, T.float64), "[u]int32, [u]int64, float32, or float64")
                        for name in ("atomic_exch", "atomic_cas")})


def _field_value(struct_value, field):
    """The value last set to `field` of a struct built in this function (struct_set chain), or None."""
    v = struct_value
    while v.owner is not None and v.owner.opcode == "call" and v.owner.attrs.get("name") == "struct_set":
        if v.owner.attrs.get("field") == field:
            return v.owner.operands[1]
        v = v.owner.operands[0]
    return None


_BITWISE = ("bit_and", "bit_or", "bit_xor", "lshift", "rshift")


def _holds_struct(t) -> bool:
    """A Warp struct, or a tile of structs."""
    return is_struct(t) or (isinstance(t, TileType) and is_struct(t.dtype))


class TypeInference(FixedArrayForms, GradientForms, BitCastForms, TileForms, TileNdForms, TileStructForms,
                    TileSliceForms, PathForms, SliceForms, ScalarForms, ControlFlowForms, StarredForms,
                    ConstructorForms, ReferenceForms, VolumeForms):
    def __init__(self, fn: ir.Function, compile_callee):
        self.fn = fn
        # (source, kind, name, param types) -> typed ir.Function: how a called @wp.func is compiled for the
        # types of a call (Func.specialize uses it); the driver's compile_ir, handed down by run_pipeline
        self.compile_callee = compile_callee or self._no_callee
        self.subst: dict = {}
        self.starred_items: dict = {}  # a `starred` value -> the values it unpacks to (typeinfer_starred.py)
        self.cur: ir.Block | None = None
        self.return_types = None

    def _no_callee(self, source, kind, name, param_types):
        raise CompileError(f"'{name}' is a @wp.func: type inference was given no way to compile it (the compiler "
                           f"driver, kernels/compiler/driver.py, gives one)", source.loc(source.fdef), self.fn.name)

    @staticmethod
    def derive_adjoint(fn: ir.Function) -> None:
        """The adjoint pass again on a callee whose custom adjoint or replay was attached after its pipeline ran
        (Func.specialize): the pass's answer depends on them."""
        derive_adjoint(fn)

    def error(self, message, op, kind=None):
        """A CompileError at `op`. `kind` TypeError or ValueError makes it also one of those (as Warp raises), or
        is a CompileError subclass to raise."""
        cls = {None: CompileError, TypeError: CompileTypeError, ValueError: CompileValueError}.get(kind, kind)
        return cls(message, op.loc, self.fn.name)

    # ---------------------------------------------------------------------------------------------- blocks

    def run(self):
        self.visit_block(self.fn.body)
        self.fn.return_types = list(self.return_types or [])
        # a return slot that every path assigns before it is read is never merged, so never typed: it is unused
        self.fn.body.ops = [op for op in self.fn.body.ops
                            if not (op.opcode == "undef" and op.results[0].type is None)]
        return self.fn

    def visit_block(self, block: ir.Block):
        outer = self.cur
        old_ops, block.ops = block.ops, []
        self.cur = block
        for op in old_ops:
            op.operands = [self.subst.get(v, v) for v in op.operands]
            if self.starred_items:
                self.expand_starred(op)
            handler = getattr(self, "op_" + op.opcode)
            try:
                handler(op)
            except KernelError:
                raise
            except ScalarSemanticsError as e:
                raise self.error(str(e), op, ValueError) from None
            except Exception as e:  # noqa: BLE001  (a compiler bug must still name the user's line)
                raise self.error(f"internal compiler error typing this line ({type(e).__name__}: {e})", op) from e
        block.yields = [self.subst.get(v, v) for v in block.yields]
        self.cur = outer

    def append(self, op):
        self.cur.ops.append(op)
        return op

    def new_op(self, opcode, operands, rtype, loc, attrs=None):
        v = ir.Value(type=rtype)
        op = ir.Op(opcode, list(operands), [v], dict(attrs or {}), [], loc)
        self.append(op)
        return v

    def replace(self, old: ir.Value, new: ir.Value):
        self.subst[old] = new
        if old.name and not new.name:
            new.name = old.name

    # ---------------------------------------------------------------------------------------------- leaves

    def op_const(self, op):
        value = op.attrs["value"]
        r = op.results[0]
        if isinstance(value, bool):
            r.type = T.bool_
        elif isinstance(value, int):
            r.type = T.int32 if -(2**31) <= value < 2**31 else T.int64
        elif isinstance(value, float):
            r.type = T.float32
        elif T.is_scalar(type(value)) or hasattr(value, "dtype") and getattr(value, "shape", None) == ():
            r.type = T.canonical_type(type(value))
            op.attrs["weak"] = False
        elif isinstance(value, T.Composite):
            r.type = type(value)
            op.attrs["weak"] = False
        elif is_struct(type(value)):  # a struct instance made at compile time (`wp.static(make_struct(...))`)
            self.replace(r, self.struct_constant(value, op))
            return
        else:
            r.type = StaticType(value)
            op.attrs["weak"] = False
        self.append(op)

    def op_undef(self, op):
        self.append(op)  # typed when a branch merges it with a defined value

    def typed_const(self, value, t, loc):
        return self.new_op("const", [], t, loc, {"value": value, "weak": False})

    def static_value(self, v: ir.Value, op, what):
        if isinstance(v.type, StaticType):
            return v.type.obj
        if v.owner is not None and v.owner.opcode == "const":
            return v.owner.attrs["value"]
        raise self.error(f"{what} must be a compile-time constant", op)

    # ---------------------------------------------------------------------------------------------- calls

    def op_call(self, op):
        name = op.attrs.pop("reference_update", None)
        self.typed_call(op)
        if name is not None and op.results and op.results[0].type is not None:
            self.check_reference_update(op, name)

    def typed_call(self, op):
        user = op.attrs.pop("user_op", None)
        if user is not None and user.takes_exactly([v.type for v in op.operands]):
            op.attrs = {"func": user}
        if "func" in op.attrs:
            return self.call_user(op)
        if op.attrs.get("gradient"):
            return self.builtin_gradient_call(op)
        name = op.attrs["name"]
        if name in _TILE_ELEMENTWISE and any(isinstance(v.type, TileType) for v in op.operands):
            return self.tile_elementwise(op, name)
        special = getattr(self, "builtin_" + name, None)
        if special is not None:
            return special(op)
        self.call_builtin(op, name)

    def order_args(self, op, name, overloads):
        """Map keyword arguments to positions using the first overload that names them and has a value (given or
        default) for each of its parameters (`max(a=v)` is the one-argument overload, as in Warp)."""
        kw = op.attrs.get("kwargs") or []
        if not kw:
            return self.fill_trailing_defaults(op, overloads)
        npos = len(op.operands) - len(kw)
        missing = None
        for ov in overloads:
            if all(k in ov.arg_names for k in kw) and npos <= len(ov.arg_names):
                args = list(op.operands[:npos]) + [None] * (len(ov.arg_names) - npos)
                for k, v in zip(kw, op.operands[npos:]):
                    args[ov.arg_names.index(k)] = v
                absent = [ov.arg_names[i] for i, a in enumerate(args) if a is None and ov.arg_names[i] not in ov.defaults]
                if absent:
                    missing = missing or absent[0]
                    continue
                return [a if a is not None else self.default_const(ov.defaults[ov.arg_names[i]], op.loc)
                        for i, a in enumerate(args)]
        if missing is not None:
            raise self.error(f"{name}() missing argument '{missing}'", op)
        raise self.error(f"{name}() got unexpected keyword arguments {kw}", op)

    def check_atomic(self, name, array_type, op):
        """Atomics exist natively for 32/64-bit ints and floats (and float16 for add/sub), as in Warp."""
        dtype = array_type.dtype
        scalar = T.scalar_type(dtype) if T.is_scalar(dtype) or T.is_composite(dtype) else None
        allowed, wording = _ATOMIC_SCALARS[name]
        if scalar is None or scalar not in allowed:
            got = T.type_repr(dtype)
            got_scalar = T.type_repr(scalar) if scalar is not None else got
            raise UnsupportedAtomicError(
                f"{name}() operations only work on arrays with {wording} as the underlying scalar types, "
                f"but got {got} (with scalar type {got_scalar})", op.loc, self.fn.name)

    def fill_trailing_defaults(self, op, overloads):
        """Positional arguments, completed with the defaults of the first overload that takes more arguments
        and has defaults for all of them (`expect_near(a, b)`), unless an overload takes exactly those given."""
        given = list(op.operands)
        if any(len(ov.args) == len(given) for ov in overloads):
            return given
        for ov in overloads:
            missing = ov.arg_names[len(given):]
            if len(ov.args) > len(given) and missing and all(n in ov.defaults for n in missing):
                return given + [self.default_const(ov.defaults[n], op.loc) for n in missing]
        return given

    def default_const(self, d, loc):
        """A builtin's default argument: a number is a Python literal (weak, it takes the type its use needs)."""
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            return self.new_op("const", [], T.int32 if isinstance(d, int) else T.float32, loc,
                               {"value": d, "weak": True})
        return self.typed_const(d, StaticType(d), loc)

    def call_builtin(self, op, name, args=None):
        overloads = registry.BUILTINS.get(name)
        if not overloads:
            raise self.error(f"'{name}' is not a builtin", op)
        args = list(args if args is not None else self.order_args(op, name, overloads))
        ov, rtype = self.resolve(name, args)
        if ov is None:
            got = ", ".join(describe(a.type) for a in args)
            cands = "\n      ".join(registry.signatures(name)[:12])
            if name in ("expect_eq", "expect_neq") and len(args) == 2 and args[0].type != args[1].type:
                raise self.error("Can't test equality for objects with different types", op)  # Warp's wording
            if name in _BITWISE and op.attrs.get("inplace") and any(_holds_struct(a.type) for a in args):
                raise self.error(f"bitwise inplace operation '{name}' is not supported on a Warp struct (or a tile "
                                 f"of structs): ({got})", op, kind=TypeError)
            nd = next((len(a.type.shape) for a in args if is_nd_tile(a.type)), None)
            if nd is not None:
                raise self.error(f"'{name}' does not take {nd}-d tiles ({got}); 3-d and 4-d tiles take "
                                 f"{ND_TILE_FORMS}", op)
            raise self.error(f"no overload of '{name}' accepts ({got}); candidates:\n      {cands}", op)
        args = self.coerce_weak(args, ov, op)
        if name in _ATOMIC_SCALARS:
            self.check_atomic(name, args[0].type, op)
        rtypes = list(rtype) if isinstance(rtype, tuple) else ([] if rtype is None else [rtype])
        results = op.results
        nwant = op.attrs.get("nresults", 1)
        attrs = {"name": name, "overload": ov}
        mutated = op.attrs.get("mutates") or ()
        if mutated:
            for r, idx in zip(results[len(results) - len(mutated):], mutated):
                r.type = args[idx].type
            rtypes = rtypes + [args[idx].type for idx in mutated]
            attrs["mutates"] = mutated
        if len(rtypes) != len(results):
            if len(rtypes) == 0 and len(results) == 1 or (mutated and len(rtypes) == len(results) - 1):
                results = results[1:] if mutated else []  # a call used as a statement
                op.results[0].type = None
            else:
                raise self.error(f"'{name}' gives {len(rtypes)} value(s), but {nwant} are expected here", op)
        for r, t in zip(results, rtypes):
            r.type = t
        new = ir.Op("call", args, results, attrs, [], op.loc)
        self.append(new)
        return new

    def resolve(self, name, args):
        types = [a.type for a in args]
        ov, rtype = registry.resolve(name, types)
        if ov is not None:
            return ov, rtype
        # Python literals adapt: retry with each weak literal typed like the strongest non-weak scalar present
        weak = [i for i, a in enumerate(args) if self.is_weak(a)]
        if not weak:
            return None, None
        for target in self.literal_targets(args):
            trial = list(types)
            for i in weak:
                if T.is_float(args[i].type) and not T.is_float(target):
                    break
                trial[i] = target
            else:
                ov, rtype = registry.resolve(name, trial)
                if ov is not None:
                    return ov, rtype
        return None, None

    def literal_targets(self, args):
        out = []
        for a in args:
            if self.is_weak(a):
                continue
            t = a.type
            s = t if T.is_scalar(t) else (t._wp_scalar_type_ if T.is_composite(t) else
                                           (t.dtype if isinstance(t, ArrayType) and T.is_scalar(t.dtype) else
                                            (t.dtype._wp_scalar_type_ if isinstance(t, ArrayType)
                                             and T.is_composite(t.dtype) else None)))
            if s is not None and s not in out and s is not T.bool_:
                out.append(s)
        for s in (T.float32, T.int32, T.int64, T.float64):
            if s not in out:
                out.append(s)
        return out

    @staticmethod
    def is_weak(v):
        return v.owner is not None and v.owner.opcode == "const" and v.owner.attrs.get("weak", False)

    def coerce_weak(self, args, ov, op):
        """Give each weak literal the scalar type its parameter pattern bound."""
        bindings: dict = {}
        for p, a in zip(ov.args, args):
            if not self.is_weak(a):
                registry.unify(p, a.type, bindings)
        out = []
        for p, a in zip(ov.args, args):
            if self.is_weak(a):
                want = a.type
                if isinstance(p, registry.S):
                    want = bindings.get(p.name)
                    if want is None:
                        registry.unify(p, a.type, bindings)
                        want = a.type
                elif T.is_scalar(p):
                    want = p
                if want is not a.type:
                    a = self.typed_const(_convert(a.owner.attrs["value"], want), want, op.loc)
            out.append(a)
        return out

    def convert_weak_to(self, v, t, op):
        """A weak literal used where type `t` is needed becomes a constant of `t`; others are unchanged."""
        if self.is_weak(v) and v.type is not t and T.is_scalar(t):
            if T.is_float(v.type) and not T.is_float(t):
                return v
            return self.typed_const(_convert(v.owner.attrs["value"], t), t, op.loc)
        return v

    def call_user(self, op):
        func = op.attrs["func"]
        args = op.operands
        if op.attrs.get("references"):
            self.check_reference_aliasing(op, op.attrs["references"])
        if op.attrs.get("kwargs") or func.needs_defaults(len(args)):
            op.attrs["caller"] = self.fn.name
            args = func.order_arguments(args, op.attrs.get("kwargs") or [], op,
                                        default=lambda d: self.default_const(d, op.loc))
        addresses = op.attrs.get("addresses") or ()
        held = list(args)
        if addresses:  # `wp.address_of(x)` arguments: the callee takes a uint64 there (frontend_reference.py)
            args = [ir.Value(T.uint64, "address") if k in addresses else v for k, v in enumerate(args)]
        callee, args = func.specialize(args, self, op)
        if addresses:
            args = [held[k] if k in addresses else v for k, v in enumerate(args)]
        if op.attrs.get("gradient"):
            self.gradient_call(op, callee, args)
            return
        rtypes = list(callee.return_types) + [held[k].type for k in addresses]
        nwant = op.attrs.get("nresults", 1)
        results = op.results
        if len(rtypes) != len(results):
            if len(rtypes) == 0 and len(results) == 1:
                results = []
            else:
                raise self.error(f"'{callee.name}' returns {len(rtypes)} value(s), but {nwant} are expected here",
                                 op)
        for r, t in zip(results, rtypes):
            r.type = t
        attrs = {"callee": callee, "name": callee.name}
        if addresses:
            attrs["addresses"] = tuple(addresses)
        if op.attrs.get("references"):
            attrs["references"] = op.attrs["references"]
        if op.attrs.get("refuse_adjoint"):  # a call writing wp.ref[T] arguments back (frontend_reference.py)
            attrs["refuse_adjoint"] = op.attrs["refuse_adjoint"]
        self.append(ir.Op("call", list(args), results, attrs, [], op.loc))

    # builtins that need more than a table lookup

    def builtin_bool(self, op):
        v = op.operands[0]
        if v.type is T.bool_:
            self.replace(op.results[0], v)
            return
        if T.is_scalar(v.type):
            self.call_builtin(op, "truthy", [v])
            return
        if isinstance(v.type, ArrayType) and v.type.plain and not v.type.fixed:
            self.call_builtin(op, "array_truthy", [v])  # Warp's: whether the array has memory
            return
        raise self.error(f"a {describe(v.type)} cannot be used as a condition", op)

    def builtin_tid(self, op):
        n = op.attrs.get("nresults", 1)
        if op.operands or not 1 <= n <= 4:
            raise self.error("wp.tid() takes no arguments and gives 1 to 4 indices", op)
        for r in op.results:
            r.type = T.int32
        op.attrs["overload"] = registry.BUILTINS["tid"][0]
        op.attrs["ndim"] = n
        self.append(op)

    def call_arguments(self, op, names):
        """Positional and keyword operands of a special form, by parameter name (missing ones absent)."""
        kw = op.attrs.get("kwargs") or []
        npos = len(op.operands) - len(kw)
        if npos > len(names):
            raise self.error(f"{op.attrs['name']}() takes at most {len(names)} arguments", op)
        out = dict(zip(names, op.operands[:npos]))
        for k, v in zip(kw, op.operands[npos:]):
            if k not in names:
                raise self.error(f"{op.attrs['name']}() has no argument '{k}'", op)
            out[k] = v
        return out

    def static_type_arg(self, v, op, what):
        t = T.canonical_type(self.static_value(v, op, what))
        if not T.is_scalar(t):
            raise self.error(f"{what} must be a scalar type, got {t!r}", op)
        return t

    def construct_as(self, op, t, args):
        """Emit the construction of composite type `t` from `args`, as calling `t(*args)` would."""
        op.attrs = {"type": t}
        op.operands = list(args)
        self.op_construct(op)

    def builtin_identity(self, op):
        """identity(n, dtype=float32): the n x n identity matrix; n is a compile-time int."""
        args = self.call_arguments(op, ("n", "dtype"))
        if "n" not in args:
            raise self.error("identity() needs n", op)
        n = self.static_value(args["n"], op, "identity's n")
        dtype = self.static_type_arg(args["dtype"], op, "identity's dtype") if "dtype" in args else T.float32
        t = T.matrix((int(n), int(n)), dtype)
        ov, rtype = registry.resolve("identity", [StaticType(t)])
        op.results[0].type = rtype
        self.append(ir.Op("call", [], op.results, {"name": "identity", "overload": ov, "type_arg": True}, [],
                          op.loc))

    def builtin_len(self, op):
        (v,) = op.operands
        if isinstance(v.type, ArrayType):
            zero = self.typed_const(0, T.int32, op.loc)
            self.call_builtin(op, "array_shape", [v, zero])
        elif T.is_composite(v.type):
            self.replace(op.results[0], self.typed_const(v.type._shape_[0], T.int32, op.loc))
        elif isinstance(v.type, ShapeType):
            self.replace(op.results[0], self.typed_const(v.type.ndim, T.int32, op.loc))
        elif isinstance(v.type, TileType):  # the length of the first axis, as numpy's len
            self.replace(op.results[0], self.typed_const(v.type.shape[0], T.int32, op.loc))
        else:
            raise self.error(f"len() of a {describe(v.type)}", op)

    # ---------------------------------------------------------------------------------------------- access

    def op_getattr(self, op):
        (base,) = op.operands
        attr = op.attrs["attr"]
        t = base.type
        if is_struct(t):
            fields = t._wp_struct_.fields
            if attr not in fields:  # ours, then Warp's wording
                where = op.attrs.get("base", base.name or "value")
                raise self.error(f"struct {t.__name__} has no field '{attr}': `{attr}` is not an attribute of "
                                 f"'{where}' ({t.__module__}.{t.__qualname__})", op, CompileAttributeError)
            known = _field_value(base, attr)
            if known is not None:
                # read back what was set: an array keeps its origin (a parameter's field), which its gradient needs
                self.replace(op.results[0], known)
                return
            op.results[0].type = fields[attr]
            self.append(ir.Op("call", [base], op.results, {"name": "struct_get", "field": attr,
                                                           "overload": registry.BUILTINS["struct_get"][0]},
                              [], op.loc))
            return
        if (T.is_vector(t) or T.is_quat(t)) and attr in _COMPONENTS and _COMPONENTS[attr] < t._shape_[0]:
            idx = self.typed_const(_COMPONENTS[attr], T.int32, op.loc)
            self.call_builtin(op, "extract", [base, idx])
            return
        if T.is_transform(t) and attr in ("p", "q"):
            self.call_builtin(op, "transform_get_translation" if attr == "p" else "transform_get_rotation", [base])
            return
        if isinstance(t, ArrayType) and t.fabric and attr in ("size", "shape"):  # Warp's one attribute: size
            if attr == "shape":
                raise self.error(f"a {describe(t)} has no attribute 'shape' in kernels (Warp's Fabric arrays have "
                                 "'size')", op)
            self.call_builtin(op, "fabric_size", [base])
            return
        if isinstance(t, ArrayType) and attr == "shape":
            # a compile-time handle; indexing it (a.shape[0]) reads the dimension
            op.results[0].type = ShapeType(t.ndim)
            self.append(ir.Op("shape_of", [base], op.results, {}, [], op.loc))
            return
        if isinstance(t, ArrayType) and attr == "dtype":
            # a compile-time type: `wp.tile_zeros(..., dtype=a.dtype)`
            self.replace(op.results[0], self.new_op("const", [], StaticType(t.dtype), op.loc,
                                                    {"value": t.dtype, "weak": False}))
            return
        if isinstance(t, ArrayType) and attr == "ndim":
            self.replace(op.results[0], self.typed_const(t.ndim, T.int32, op.loc))
            return
        raise self.error(f"a {describe(t)} has no attribute '{attr}'", op)

    def op_shape_of(self, op):
        self.append(op)

    def op_tuple(self, op):
        op.results[0].type = PackType(tuple(v.type for v in op.operands))
        if any(is_slice(v) for v in op.operands):
            return  # `offset=(slice(0, 2), ...)`: read at compile time through its operands, as the slices are
        self.append(op)

    def op_getitem(self, op):
        base, *idx = op.operands
        t = base.type
        if any(is_slice(i) for i in idx):
            return self.getitem_sliced(op, base, idx)
        if isinstance(t, ArrayType):
            if len(idx) > t.ndim:
                raise self.error(_index_count_error(len(idx), t.ndim), op)
            self.check_indices(idx, op)
            if len(idx) < t.ndim:
                self.call_builtin(op, "view", [base, *idx])
                return
            self.call_builtin(op, "load", [base, *idx])
            return
        if isinstance(t, ShapeType):
            k = self.static_value(idx[0], op, "an index into .shape")
            array_v = base.owner.operands[0]
            self.call_builtin(op, "array_shape", [array_v, self.typed_const(int(k), T.int32, op.loc)])
            return
        if isinstance(t, TileType) and (len(idx) < len(t.shape) or any(isinstance(i.type, TileType) for i in idx)):
            return self.tile_getitem(op, base, idx)  # a row of a 2-d tile (or an index tile, refused)
        if is_nd_tile(t) and len(idx) == len(t.shape):
            return self.tile_element_nd(op, base, idx)
        if T.is_composite(t) or isinstance(t, TileType):
            self.check_indices(idx, op)
            self.call_builtin(op, "extract", [base, *idx])
            return
        raise self.error(f"a {describe(t)} cannot be indexed", op)

    def check_indices(self, idx, op):
        for i in idx:
            if not T.is_int(i.type):
                raise self.error(f"indices must be integers, got {describe(i.type)}", op)

    def op_setitem(self, op):
        base, *idx, value = op.operands
        t = base.type
        if any(is_slice(i) for i in idx):
            return self.setitem_sliced(op, base, idx, value)
        if isinstance(t, ArrayType):
            if len(idx) != t.ndim:
                raise self.error(_index_count_error(len(idx), t.ndim), op)
            self.check_indices(idx, op)
            value = self.convert_weak_to(value, T.scalar_type(t.dtype) if T.is_scalar(t.dtype) else value.type, op)
            store = ir.Op("call", [base, *idx, value], [], {"name": "store"}, [], op.loc)
            new = self.call_builtin(store, "store", [base, *idx, value])
            if op.attrs.get("component_update"):
                # a[i].x = v stores the element read back with one component replaced: the adjoint of this store
                # takes the element's whole gradient, and the read of the old element gives back what it kept
                new.attrs["overwrite"] = True
            self.replace(op.results[0], base)
            return
        if T.is_composite(t):
            self.check_indices(idx, op)
            self.call_builtin(op, "assign", [base, *idx, self.convert_weak_to(value, t._wp_scalar_type_, op)])
            return
        if isinstance(t, TileType) and len(idx) < len(t.shape):
            return self.tile_setitem(op, base, idx, value)  # a row of a 2-d tile
        if is_nd_tile(t) and len(idx) == len(t.shape):
            return self.tile_element_nd(op, base, idx, value)
        if isinstance(t, TileType):
            self.check_indices(idx, op)
            self.call_builtin(op, "assign", [base, *idx, self.convert_weak_to(value, t.dtype, op)])
            return
        raise self.error(f"cannot assign into an element of a {describe(t)}", op)

    def op_setattr(self, op):
        base, value = op.operands
        attr = op.attrs["attr"]
        t = base.type
        if is_struct(t):
            fields = t._wp_struct_.fields
            if attr not in fields:
                raise self.error(f"struct {t.__name__} has no field '{attr}'", op, CompileAttributeError)
            owner = value.owner
            if owner is not None and owner.attrs.get("name") == "struct_get" and owner.operands[0] is base \
                    and owner.attrs.get("field") == attr:
                # writing a field back unchanged (after storing into an array member): the struct is the same
                self.replace(op.results[0], base)
                return
            value = self.convert_weak_to(value, fields[attr], op)
            if value.type != fields[attr]:
                raise self.error(f"field '{attr}' of {t.__name__} is {describe(fields[attr])}, "
                                 f"got {describe(value.type)}", op)
            op.results[0].type = t
            self.append(ir.Op("call", [base, value], op.results,
                              {"name": "struct_set", "field": attr, "overload": registry.BUILTINS["struct_set"][0]},
                              [], op.loc))
            return
        if (T.is_vector(t) or T.is_quat(t)) and attr in _COMPONENTS:
            idx = self.typed_const(_COMPONENTS[attr], T.int32, op.loc)
            self.call_builtin(op, "assign", [base, idx, self.convert_weak_to(value, t._wp_scalar_type_, op)])
            return
        if T.is_transform(t) and attr in ("p", "q"):
            # t.p = v / t.q = r (and t.p += v): the transform rebuilt from the new part and the kept one, so the
            # gradients are those of the getter and the constructor
            kept = "transform_get_rotation" if attr == "p" else "transform_get_translation"
            get = self.call_builtin(ir.Op("call", [base], [ir.Value()], {}, [], op.loc), kept, [base])
            parts = [value, get.results[0]] if attr == "p" else [get.results[0], value]
            self.construct_as(ir.Op("construct", parts, op.results, {"type": t}, [], op.loc), t, parts)
            return
        raise self.error(f"cannot assign attribute '{attr}' of a {describe(t)}", op)

    def type_of(self, t, steps, op):
        """`type(x).dtype...` in Warp's generic code: the type `t` of a value, then its attributes `steps`
        (`dtype`: an array's element type, a vector's, matrix's or quaternion's scalar type)."""
        for step in steps:
            if step == "dtype" and isinstance(t, ArrayType):
                t = t.dtype
            elif step == "dtype" and T.is_composite(t):
                t = t._wp_scalar_type_
            elif not isinstance(t, ArrayType) and hasattr(t, step) and isinstance(getattr(t, step), type):
                t = getattr(t, step)
            else:
                raise self.error(f"`{step}` is not an attribute of '{describe(t)}'", op, CompileAttributeError)
        return t

    def op_construct(self, op):
        if "type_of" in op.attrs:
            op.attrs["type"] = self.type_of(op.operands[0].type, op.attrs.pop("type_of"), op)
            op.operands = op.operands[1:]
        t = T.canonical_type(op.attrs["type"])
        args = op.operands
        if isinstance(t, ArrayType) or t is T.Any:
            raise self.error(f"cannot construct a {describe(t)} inside a kernel", op)
        if T.is_scalar(t):
            if len(args) != 1:
                raise self.error(f"{describe(t)}() takes one argument", op)
            (a,) = args
            if self.is_weak(a):
                self.replace(op.results[0], self.typed_const(_convert(a.owner.attrs["value"], t), t, op.loc))
                return
            if a.type is t:
                self.replace(op.results[0], a)
                return
            if not T.is_scalar(a.type):
                raise self.error(f"cannot convert a {describe(a.type)} to {describe(t)}", op)
            op.results[0].type = t
            self.append(ir.Op("call", [a], op.results, {"name": "cast", "overload": registry.BUILTINS["cast"][0],
                                                        "rtype": t}, [], op.loc))
            return
        if is_struct(t):
            fields = list(t._wp_struct_.fields)
            if len(args) > len(fields):
                raise self.error(f"struct {t.__name__}() takes at most {len(fields)} arguments (its fields in "
                                 f"order), got {len(args)}", op)
            value = ir.Value(type=t)
            self.append(ir.Op("call", [], [value], {"name": "struct_new",
                                                    "overload": registry.BUILTINS["struct_new"][0]}, [], op.loc))
            for name, a in zip(fields, args):  # positional arguments set the fields in declaration order
                put = ir.Op("setattr", [value, a], [ir.Value()], {"attr": name}, [], op.loc)
                self.op_setattr(put)
                value = self.subst.get(put.results[0], put.results[0])
            self.replace(op.results[0], value)
            return
        if T.is_composite(t):
            s = t._wp_scalar_type_
            args = self.drop_template_arguments(t, op)
            args = [self.convert_weak_to(a, s, op) for a in args]
            ov, rtype = registry.resolve("construct_" + t._category_, [StaticType(t)] + [a.type for a in args])
            if ov is None:
                if T.is_vector(t):
                    self.check_vector_components(t, args, op)
                if T.is_matrix(t):
                    self.check_matrix_components(t, args, op)
                got = ", ".join(describe(a.type) for a in args)
                raise self.error(f"cannot construct a {describe(t)} from ({got})", op)
            op.results[0].type = rtype
            # the target type is the first pattern (a TypeArg); it is rendered as the template argument
            self.append(ir.Op("call", args, op.results, {"name": ov.name, "overload": ov, "type_arg": True}, [],
                              op.loc))
            return
        raise self.error(f"'{describe(t)}' cannot be called in a kernel", op)

    def op_adj_param_get(self, op):
        op.results[0].type = self.fn.params[op.attrs["param"]].type
        self.append(op)

    def op_adj_param_set(self, op):
        param = self.fn.params[op.attrs["param"]]
        value = self.convert_weak_to(op.operands[0], param.type, op)
        if value.type != param.type:
            raise self.error(f"the adjoint of '{param.name}' is {describe(param.type)}, got {describe(value.type)}",
                             op)
        op.operands = [value]
        self.append(op)

    def op_return(self, op):
        types = [v.type for v in op.operands]
        for v in op.operands:
            if v.type is None:
                raise self.error("a return value's type cannot be determined", op)
        self.return_types = types
        self.append(op)


def _index_count_error(count, ndim) -> str:
    return (f"Incorrect number of indices specified for array indexing, got {count} indices for a {ndim} "
            f"dimensional array.")  # Warp's wording


def _convert(value, t):
    """A literal's value as a constant of scalar type t (an integer wraps in C; a float out of an integer type's
    range has no value there)."""
    if T.is_float(t):
        return float(value)
    if t is T.bool_:
        return bool(value)
    if isinstance(value, float):
        info = np.iinfo(t._np_)
        if not (math.isfinite(value) and info.min - 1 < value < info.max + 1):
            raise ScalarSemanticsError(f"the literal {value!r} is out of the range of {describe(t)}")
    return int(value)


def infer_types(fn: ir.Function, compile_callee=None) -> ir.Function:
    """Overload resolution and type inference of `fn` (untyped IR from the frontend) -> typed IR.
    `compile_callee` compiles the @wp.func it calls (see TypeInference); without it a body calling one is refused."""
    return TypeInference(fn, compile_callee).run()
