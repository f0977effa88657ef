"""Type inference, composite constructors called by type name (`wp.types.vector`, `wp.types.quaternion`,
`wp.types.transformation`, `wp.matrix`) and Warp's refusals of vector constructions.

Mixed into `typeinfer.TypeInference` (which provides `static_value`, `static_type_arg`, `construct_as`,
`is_weak` and `error`).
"""

from __future__ import annotations

from ... import types as T


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
        if "shape" not in named:
            raise self.error("wp.matrix(...) needs shape=(rows, cols)", op)
        shape = self.static_value(named["shape"], op, "shape")
        dtype = (self.static_type_arg(named["dtype"], op, "dtype") if "dtype" in named else
                 next((c.type for c in comps if T.is_scalar(c.type) and not self.is_weak(c)), T.float32))
        self.construct_as(op, T.matrix(tuple(shape), dtype), comps)
