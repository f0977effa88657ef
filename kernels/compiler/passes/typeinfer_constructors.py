"""Type inference, composite constructors called by type name (`wp.types.vector`, `wp.types.quaternion`,
`wp.types.transformation`, `wp.matrix`) and Warp's refusals of vector constructions.

Mixed into `typeinfer.TypeInference` (which provides `static_value`, `static_type_arg`, `construct_as`,
`is_weak` and `error`).
"""

from __future__ import annotations

from ... import types as T
from ...builtins import registry
from ...errors import CompileTypeError
from ...typesys import describe, is_struct
from .. import ir


def _scalar(value, t):
    """A host field value as a Python number of scalar type t (a numpy scalar or a Warp scalar instance)."""
    value = getattr(value, "value", value)
    return float(value) if T.is_float(t) else bool(value) if t is T.bool_ else int(value)


class ConstructorForms:
    def builtin_vector(self, op):
        """wp.vector(*components, length=None, dtype=None): a vector type chosen at compile time, with Warp's rules:
        no component (zeros: length= needed), one vector (a copy, cast to dtype=), one scalar (a fill: length=
        needed), or one component per element (all of one type unless dtype= says it)."""
        kw = op.attrs.get("kwargs") or []
        comps = op.operands[: len(op.operands) - len(kw)]
        named = dict(zip(kw, op.operands[len(comps):]))
        length = int(self.static_value(named["length"], op, "length")) if "length" in named else None
        dtype = self.static_type_arg(named["dtype"], op, "dtype") if "dtype" in named else None
        if not comps:
            if length is None:
                raise self.error("the `length` argument must be specified when zero-initializing a vector", op)
        elif len(comps) == 1 and T.is_vector(comps[0].type):
            source = comps[0].type
            if length is None:
                length = source._length_
            elif length != source._length_:
                raise self.error(f"incompatible vector of length {length} given when copy constructing a vector of "
                                 f"length {source._length_}", op)
            dtype = dtype or source._wp_scalar_type_
        elif len(comps) == 1:
            if length is None:
                raise self.error("the `length` argument must be specified when filling a vector with a value", op)
            dtype = dtype or comps[0].type
        else:
            if length is None:
                length = len(comps)
            elif length != len(comps):
                raise self.error(f"incompatible number of values given ({len(comps)}) when constructing a vector of "
                                 f"length {length}", op)
            if dtype is None:
                if len({c.type for c in comps}) > 1:  # literals count with their own type here, as in Warp
                    raise self.error("all values given when constructing a vector must have the same type", op)
                dtype = comps[0].type
        self.construct_as(op, T.vector(length, dtype or T.float32), comps)

    def check_vector_components(self, t, args, op):
        """Warp's refusals of a vector construction `t(*args)` that no overload takes: a copy of another length,
        or variables (not literals) of another scalar type."""
        n, s = t._length_, t._wp_scalar_type_
        if len(args) == 1 and T.is_vector(args[0].type) and args[0].type._length_ != n:
            raise self.error(f"incompatible vector of length {n} given when copy constructing a vector of length "
                             f"{args[0].type._length_}", op)
        if len(args) in (1, n) and not any(T.is_composite(a.type) for a in args):
            if any(not self.is_weak(a) and a.type is not s for a in args):
                what = "the value used to fill this vector is" if len(args) == 1 and n != 1 else \
                    "all values used to initialize this vector are"
                raise self.error(f"{what} expected to be of the type `{s.__name__}`", op)
        if len(args) not in (0, 1, n):
            raise self.error(f"incompatible number of values given ({len(args)}) when constructing a vector of "
                             f"length {n}", op)

    def _composite_dtype(self, op, named, comps):
        """The scalar type of a composite built by wp.types.quaternion/transformation: dtype=, else that of the
        first non-literal component, else float32."""
        if "dtype" in named:
            return self.static_type_arg(named["dtype"], op, "dtype")
        for c in comps:
            if (T.is_scalar(c.type) and not self.is_weak(c)) or T.is_composite(c.type):
                return T.scalar_type(c.type)
        return T.float32

    def builtin_quaternion(self, op):
        """wp.types.quaternion(*components, dtype=None) in a kernel: `quat` of that scalar type."""
        kw = op.attrs.get("kwargs") or []
        comps = op.operands[: len(op.operands) - len(kw)]
        named = dict(zip(kw, op.operands[len(comps):]))
        if set(named) - {"dtype"}:
            raise self.error(f"wp.types.quaternion() has no argument '{sorted(set(named) - {'dtype'})[0]}'", op)
        self.construct_as(op, T.quaternion(self._composite_dtype(op, named, comps)), comps)

    def builtin_transformation(self, op):
        """wp.types.transformation(p, q, dtype=None) in a kernel (p and q may be named): `transform` of that
        scalar type."""
        kw = op.attrs.get("kwargs") or []
        comps = list(op.operands[: len(op.operands) - len(kw)])
        named = dict(zip(kw, op.operands[len(comps):]))
        if set(named) - {"dtype", "p", "q"}:
            raise self.error(f"wp.types.transformation() has no argument "
                             f"'{sorted(set(named) - {'dtype', 'p', 'q'})[0]}'", op)
        comps += [named[k] for k in ("p", "q") if k in named]
        self.construct_as(op, T.transformation(self._composite_dtype(op, named, comps)), comps)

    def builtin_matrix(self, op):
        """wp.matrix(*components, shape=(rows, cols), dtype=None): a matrix type chosen at compile time."""
        kw = op.attrs.get("kwargs") or []
        comps = op.operands[: len(op.operands) - len(kw)]
        named = dict(zip(kw, op.operands[len(comps):]))
        if "shape" in named:
            shape = tuple(self.static_value(named["shape"], op, "shape"))
        elif len(comps) == 1 and T.is_matrix(comps[0].type):  # a copy keeps the shape
            shape = comps[0].type._shape_
        else:  # Warp's wording
            how = ("zero-initializing a matrix", "filling a matrix with a value")[len(comps)] if len(comps) < 2 \
                else "initializing a matrix by value"
            raise self.error(f"the `shape` argument must be specified when {how}", op)
        if len(comps) == 1 and T.is_matrix(comps[0].type) and "dtype" not in named:
            dtype = comps[0].type._wp_scalar_type_
        else:
            # literals give float32, unless all are bools (a bool matrix, as in Warp)
            literal = T.bool_ if comps and all(c.type is T.bool_ for c in comps) else T.float32
            dtype = (self.static_type_arg(named["dtype"], op, "dtype") if "dtype" in named else
                     next((c.type for c in comps if T.is_scalar(c.type) and not self.is_weak(c)), literal))
        self.construct_as(op, T.matrix(tuple(shape), dtype), comps)

    def drop_template_arguments(self, t, op):
        """The arguments of a typed constructor `t(...)` without `shape=`, `length=` or `dtype=`, which Warp
        accepts where they repeat what the type says (`wp.mat32d(m, shape=(3, 2))`) and refuses otherwise."""
        kw = op.attrs.get("kwargs") or []
        if not kw:
            return list(op.operands)
        args = list(op.operands[: len(op.operands) - len(kw)])
        own = {"dtype": t._wp_scalar_type_}
        if T.is_matrix(t):
            own["shape"] = tuple(t._shape_)
        elif T.is_vector(t):
            own["length"] = t._length_
        parts = {}  # a transform's p= and q=, placed in that order after the positional ones
        for name, value in zip(kw, op.operands[len(args):]):
            if T.is_transform(t) and name in ("p", "q"):
                parts[name] = value
                continue
            if name not in own:
                raise self.error(f"{T.type_repr(t)}() got an unexpected keyword argument '{name}'", op)
            given = self.static_value(value, op, name)
            given = tuple(given) if name == "shape" else T.canonical_type(given) if name == "dtype" else given
            if given != own[name]:
                what = "matrix" if T.is_matrix(t) else "vector" if T.is_vector(t) else t._category_
                raise self.error(f"Remove the extraneous `{name}` parameter when calling the templated version of "
                                 f"`wp.{what}()`", op)
        return args + [parts[k] for k in ("p", "q") if k in parts]

    def struct_constant(self, value, op):
        """A struct value in the kernel with the fields of the host instance `value`, as Warp embeds one made at
        compile time (nested structs, composites and scalars; an array field cannot be a constant)."""
        t = type(value)
        result = self.new_op("call", [], t, op.loc, {"name": "struct_new",
                                                      "overload": registry.BUILTINS["struct_new"][0]})
        for name, ft in t._wp_struct_.fields.items():
            field = getattr(value, name)
            if is_struct(ft):
                part = self.struct_constant(field, op)
            elif T.is_scalar(ft) or T.is_composite(ft):
                const = ft(field) if T.is_composite(ft) and not isinstance(field, ft) else field
                part = self.typed_const(const if T.is_composite(ft) else _scalar(const, ft), ft, op.loc)
            else:
                raise self.error(f"struct {t.__name__}: field '{name}' ({describe(ft)}) cannot be part of a "
                                 f"compile-time constant", op)
            put = ir.Op("setattr", [result, part], [ir.Value()], {"attr": name}, [], op.loc)
            self.op_setattr(put)
            result = self.subst.get(put.results[0], put.results[0])
        return result

    def check_matrix_components(self, t, args, op):
        """Warp's refusals of a matrix construction `t(*args)` that no overload takes: a copy of another shape,
        vectors (Warp 1.19 takes rows only through matrix_from_rows), a count other than rows * cols, or
        variables (not literals) of another scalar type."""
        shape, s = tuple(t._shape_), t._wp_scalar_type_
        if len(args) == 1 and T.is_matrix(args[0].type) and tuple(args[0].type._shape_) != shape:
            raise self.error(f"incompatible matrix of shape {shape} given when copy constructing a matrix of shape "
                             f"{tuple(args[0].type._shape_)}", op)
        if len(args) > 1 and all(T.is_vector(a.type) for a in args):
            raise self.error("Passing vectors to `wp.matrix()` isn't supported, use `wp.matrix_from_rows()` or "
                             "`wp.matrix_from_cols()` instead.", op, CompileTypeError)
        if len(args) > 1 and len(args) != shape[0] * shape[1]:
            raise self.error(f"incompatible number of values given ({len(args)}) when constructing a matrix of "
                             f"shape {shape}", op)
        if args and all(T.is_scalar(a.type) for a in args) and any(not self.is_weak(a) and a.type is not s
                                                                     for a in args):
            what = "the value used to fill this matrix is" if len(args) == 1 else \
                "all values used to initialize this matrix are"
            raise self.error(f"{what} expected to be of the type `{s.__name__}`", op)
