"""Type inference of the tile special forms: builtins whose result type depends on compile-time arguments
(shapes, dtypes) or that take a function (tile_map, tile_reduce). Mixed into TypeInference."""

from __future__ import annotations

import math

import numpy as np

from .. import ir
from ... import types as T
from ...builtins import registry
from ...typesys import ArrayType, PackType, StaticType, TileType, describe, is_struct
from ..function import Func
from .tile_arange_range import arange_range
from .typeinfer_slices import is_slice
from ..tile_stack_type import is_tile_stack, tile_stack_type


class TileForms:
    # ------------------------------------------------------------------------------------------ argument helpers

    def static_shape(self, v, op, what="a tile") -> tuple:
        shape = self.static_value(v, op, "a tile shape")
        return self.check_shape((shape,) if isinstance(shape, int) else tuple(shape), op, what)

    def check_shape(self, shape, op, what) -> tuple:
        """`shape` if a tile can have it; else a ValueError naming `what` ("tile_broadcast()")."""
        if not all(isinstance(s, int) and s > 0 for s in shape):
            raise self.error(f"a tile shape is positive ints, got {shape!r}", op, kind=ValueError)
        if not 1 <= len(shape) <= 4:
            raise self.error(f"{what} output must have between one and four dimensions, got {len(shape)}", op,
                             kind=ValueError)
        return shape

    def offset_items(self, v, op) -> list:
        """The components of an offset argument as values (constants for a compile-time tuple), unconverted."""
        if v is None:
            return []
        if isinstance(v.type, PackType):
            return list(v.owner.operands)
        if isinstance(v.type, StaticType) and isinstance(v.type.obj, tuple):
            return [self.typed_const(x, T.float32 if isinstance(x, float) else T.int32, op.loc)
                    if isinstance(x, (int, float)) else self.error(f"a tile offset component {x!r}", op)
                    for x in v.type.obj]
        return [v]

    def builtin_tile_assign(self, op):
        """tile_assign(dst, src, offset): refused into a view (tile_view, a slice, a broadcast), which in Warp shares
        its parent's storage: here it is a copy, so the parent would not change."""
        args = self.call_arguments(op, ("dst", "src", "offset"))
        dst = args["dst"]
        self.need_tile(dst, op, "tile_assign's dst")
        st = self.need_tile(args["src"], op, "tile_assign's src")
        owner = dst.owner
        if owner is not None and owner.opcode == "call" and owner.attrs.get("name") in (
                "tile_view", "tile_slice", "tile_broadcast", "tile_broadcast_row", "tile_reshape"):
            raise self.error("tile_assign into a view of another tile is not supported: in Warp the view shares "
                             "its parent's storage, here it is a copy; assign into the parent with an offset", op)
        if not (T.is_float(st.dtype) or st.dtype == dst.type.dtype):
            raise self.error(f"tile_assign of a {describe(st)} into a {describe(dst.type)}", op, TypeError)
        oi, oj = self.offsets(args.get("offset"), op)
        self.call_builtin(op, "tile_assign", [dst, args["src"], oi, oj])

    def offsets(self, v, op) -> list:
        """(row, column) offsets as int32 values, from a pack, a constant tuple, an int or nothing."""
        if v is None:
            items = []
        elif isinstance(v.type, PackType):
            items = list(v.owner.operands)
        elif isinstance(v.type, StaticType) and isinstance(v.type.obj, tuple):
            items = [self.typed_const(int(x), T.int32, op.loc) for x in v.type.obj]
        else:
            items = [v]
        if len(items) > 2:
            raise self.error("a tile offset has at most 2 components", op)
        out = []
        for x in items:
            x = self.convert_weak_to(x, T.int32, op)
            if not T.is_int(x.type):
                raise self.error(f"tile offsets must be integers, got {describe(x.type)}", op)
            if x.type is not T.int32:
                x = self.cast_to(x, T.int32, op)
            out.append(x)
        while len(out) < 2:
            out.append(self.typed_const(0, T.int32, op.loc))
        return out

    def cast_to(self, v, t, op):
        r = ir.Value(type=t)
        self.append(ir.Op("call", [v], [r], {"name": "cast", "overload": registry.BUILTINS["cast"][0]}, [], op.loc))
        return r

    def emit_typed(self, op, name, out_type, args):
        """A call of the overload of `name` whose first pattern is the result type (rendered as a template)."""
        ov, rtype = registry.resolve(name, [StaticType(out_type)] + [a.type for a in args])
        if ov is None:
            got = ", ".join(describe(a.type) for a in args)
            raise self.error(f"{name}() cannot make a {describe(out_type)} from ({got})", op)
        results = op.results if rtype is not None else []
        for r in results:
            r.type = rtype
        attrs = {"name": name, "overload": ov, "type_arg": True}
        storage = self.declared_storage(op, name)
        if storage is not None:
            attrs["storage"] = storage
        self.append(ir.Op("call", list(args), results, attrs, [], op.loc))

    def declared_storage(self, op, name):
        """The storage a tile constructor's call names (Warp's default "register"), which print(t) shows as Warp
        does; None for other operations (kernels has one kind of tile)."""
        if name not in ("tile_load", "tile_zeros", "tile_ones", "tile_full", "tile_empty"):
            return None
        kw = op.attrs.get("kwargs") or []
        if "storage" not in kw:
            return "register"
        v = op.operands[len(op.operands) - len(kw) + kw.index("storage")]
        storage = v.type.obj if isinstance(v.type, StaticType) else None
        return storage if storage in ("register", "shared") else None

    def tile_dtype(self, args, op):
        """The element type of a tile constructor: a scalar, vector or matrix type (default float32)."""
        if "dtype" not in args:
            return T.float32
        t = T.canonical_type(self.static_value(args["dtype"], op, "dtype"))
        if is_struct(t) and op.attrs.get("name") == "tile_ones":
            raise self.error(f"tile_ones() does not support a Warp struct dtype ({t.__name__}): a struct has no "
                             "value for one; use tile_zeros or tile_full", op, kind=TypeError)
        # tiles of structs hold what an array of them loads; zeros (value-initialised) or copies of a given struct
        if is_struct(t) and op.attrs.get("name") in ("tile_zeros", "tile_empty", "tile_full"):
            return t
        if not (T.is_scalar(t) or T.is_composite(t)):
            raise self.error(f"a tile's dtype must be a scalar, vector or matrix type, got {t!r}", op, kind=TypeError)
        return t

    def need_tile(self, v, op, what):
        if not isinstance(v.type, TileType):
            raise self.error(f"{what} must be a tile, got {describe(v.type)}", op)
        return v.type

    # ------------------------------------------------------------------------------------------ constructors

    def builtin_tile_zeros(self, op):
        args = self.call_arguments(op, ("shape", "dtype", "storage"))
        self.emit_typed(op, "tile_zeros", TileType(self.tile_dtype(args, op), self.static_shape(args["shape"], op)),
                        [])

    def builtin_tile_empty(self, op):
        args = self.call_arguments(op, ("shape", "dtype", "storage"))
        self.emit_typed(op, "tile_empty", TileType(self.tile_dtype(args, op), self.static_shape(args["shape"], op)),
                        [])

    def builtin_tile_ones(self, op):
        args = self.call_arguments(op, ("shape", "dtype", "storage"))
        self.emit_typed(op, "tile_ones", TileType(self.tile_dtype(args, op), self.static_shape(args["shape"], op)),
                        [])

    def builtin_tile_full(self, op):
        args = self.call_arguments(op, ("shape", "value", "dtype", "storage"))
        if "value" not in args or "shape" not in args:
            raise self.error("tile_full(shape, value, dtype=...) needs shape and value", op)
        value = args["value"]
        dtype = self.tile_dtype(args, op) if "dtype" in args else value.type
        if value.type is not dtype:
            if is_struct(dtype) or is_struct(value.type):
                raise self.error(f"tile_full() value must have dtype {describe(dtype)} when filling Warp struct tile "
                                 f"elements, got {describe(value.type)}", op, kind=TypeError)
            if not (T.is_scalar(dtype) and T.is_scalar(value.type)):
                raise self.error(f"tile_full: the value is a {describe(value.type)}, not the tile's dtype "
                                 f"{describe(dtype)}", op, kind=TypeError)
            value = self.cast_to(value, dtype, op)
        self.emit_typed(op, "tile_full", TileType(dtype, self.static_shape(args["shape"], op)), [value])

    def builtin_tile_arange(self, op):
        kw = op.attrs.get("kwargs") or []
        pos = op.operands[: len(op.operands) - len(kw)]
        named = dict(zip(kw, op.operands[len(pos):]))
        vals = [self.static_value(v, op, "tile_arange's bounds") for v in pos]
        # Warp's default element type is float whatever the bounds are
        dtype = T.canonical_type(self.static_value(named["dtype"], op, "dtype")) if "dtype" in named else T.float32
        try:
            start, step, count = arange_range(vals, dtype)
        except (TypeError, ValueError) as e:
            raise self.error(str(e), op, kind=type(e)) from None
        # the fill runs at the output type as Warp's does (float16: in float32, 8/16/32-bit integers: in int64,
        # whose results equal the narrow type's wherever the bounds fit it)
        if dtype in (T.float32, T.float64, T.int64, T.uint64):
            fill = dtype
        else:
            fill = T.float32 if T.is_float(dtype) else T.int64
        self.emit_typed(op, "tile_arange", TileType(dtype, (count,)),
                        [self.typed_const(start, fill, op.loc), self.typed_const(step, fill, op.loc)])

    def builtin_tile_randi(self, op):
        self.random_tile(op, "tile_randi", T.int32)

    def builtin_tile_randf(self, op):
        self.random_tile(op, "tile_randf", T.float32)

    def random_tile(self, op, name, dtype):
        args = self.call_arguments(op, ("shape", "rng", "min", "max", "storage"))
        if "rng" not in args or "shape" not in args:
            raise self.error(f"{name}(shape, rng, min=..., max=...) needs shape and rng", op)
        if ("min" in args) != ("max" in args):
            raise self.error(f"{name}() takes both min and max, or neither", op)
        bounds = [self.convert_weak_to(args[k], dtype, op) for k in ("min", "max") if k in args]
        rng = self.convert_weak_to(args["rng"], T.uint32, op)
        self.emit_typed(op, name, TileType(dtype, self.static_shape(args["shape"], op)), [rng, *bounds])

    def builtin_tile(self, op):
        args = self.call_arguments(op, ("x", "preserve_type"))
        x = args["x"]
        # preserve_type=True: a tile of the vectors or matrices themselves, as this form makes; Warp's False
        # spreads their components over a 2-d tile of scalars, which kernels does not build
        if "preserve_type" in args and not self.static_value(args["preserve_type"], op, "tile's preserve_type") \
                and T.is_composite(x.type):
            raise self.error("tile(x, preserve_type=False) of a vector or matrix (a 2-d tile of its components) is "
                             "not supported; use preserve_type=True for a tile of the values", op)
        self.emit_typed(op, "tile_from_value", TileType(x.type, (1,)), [x])

    # ------------------------------------------------------------------------------------------ memory

    def tile_array(self, v, op):
        if not isinstance(v.type, ArrayType) or v.type.ndim > 2:
            raise self.error(f"tiles load from and store to 1-d or 2-d arrays, got {describe(v.type)}", op)
        return v.type

    def builtin_tile_load(self, op):
        # bounds_check and aligned are hints in Warp: here every access is checked (outside: zeros, not stored)
        args = self.call_arguments(op, ("a", "shape", "offset", "storage", "bounds_check", "aligned"))
        shape = self.static_shape(args["shape"], op)
        if len(shape) > 2 or getattr(args["a"].type, "ndim", 0) > 2:
            return self.tile_load_nd(op, args, shape)
        at = self.tile_array(args["a"], op)
        if at.ndim == 2 and len(shape) != 2:
            raise self.error("tile_load from a 2-d array needs a 2-d shape", op)
        oi, oj = self.offsets(args.get("offset"), op)
        self.emit_typed(op, "tile_load", TileType(at.dtype, shape), [args["a"], oi, oj])

    def builtin_tile_load_indexed(self, op):
        args = self.call_arguments(op, ("a", "indices", "shape", "offset", "axis", "storage"))
        if not all(k in args for k in ("a", "indices", "shape")):
            raise self.error("tile_load_indexed(a, indices, shape, offset=..., axis=0) needs a, indices and shape",
                             op)
        at = self.tile_array(args["a"], op)
        shape = self.static_shape(args["shape"], op)
        if len(shape) != at.ndim:
            raise self.error(f"tile_load_indexed: the shape {shape} must have one entry per dimension of the "
                             f"{at.ndim}-d array", op)
        axis = self.static_value(args["axis"], op, "axis") if "axis" in args else 0
        if not isinstance(axis, int) or not -at.ndim <= axis < at.ndim:
            raise self.error(f"tile_load_indexed: axis must be a constant in [0, {at.ndim}), got {axis!r}", op)
        axis %= at.ndim
        it = self.need_tile(args["indices"], op, "tile_load_indexed's indices")
        if it.dtype is not T.int32 or len(it.shape) != 1 or it.shape[0] != shape[axis]:
            raise self.error(f"tile_load_indexed: indices must be a 1-d int32 tile of {shape[axis]} elements "
                             f"(the shape along axis {axis}), got {describe(args['indices'].type)}", op)
        oi, oj = self.offsets(args.get("offset"), op)
        self.emit_typed(op, "tile_load_indexed", TileType(at.dtype, shape),
                        [args["a"], args["indices"], oi, oj, self.typed_const(axis, T.int32, op.loc)])

    def indexed_layout(self, name, args, shape, op):
        """(axis as a constant value, offset values) of an indexed tile load/store, after checking `indices`."""
        at = self.tile_array(args["a"], op)
        if len(shape) != at.ndim:
            raise self.error(f"{name}: the tile's shape {shape} must have one entry per dimension of the "
                             f"{at.ndim}-d array", op)
        axis = self.static_value(args["axis"], op, "axis") if "axis" in args else 0
        if not isinstance(axis, int) or not -at.ndim <= axis < at.ndim:
            raise self.error(f"{name}: axis must be a constant in [0, {at.ndim}), got {axis!r}", op)
        axis %= at.ndim
        it = self.need_tile(args["indices"], op, f"{name}'s indices")
        if it.dtype is not T.int32 or len(it.shape) != 1 or it.shape[0] != shape[axis]:
            raise self.error(f"{name}: indices must be a 1-d int32 tile of {shape[axis]} elements (the tile's "
                             f"extent along axis {axis}), got {describe(args['indices'].type)}", op)
        oi, oj = self.offsets(args.get("offset"), op)
        return self.typed_const(axis, T.int32, op.loc), oi, oj

    def builtin_tile_store_indexed(self, op):
        self.scatter_indexed(op, "tile_store_indexed")

    def builtin_tile_atomic_add_indexed(self, op):
        self.scatter_indexed(op, "tile_atomic_add_indexed")

    def scatter_indexed(self, op, name):
        args = self.call_arguments(op, ("a", "indices", "t", "offset", "axis"))
        if not all(k in args for k in ("a", "indices", "t")):
            raise self.error(f"{name}(a, indices, t, offset=..., axis=0) needs a, indices and t", op)
        tt = self.need_tile(args["t"], op, f"{name}'s value")
        if name == "tile_atomic_add_indexed":
            self.check_atomic_tile(tt, name, op)
        axis, oi, oj = self.indexed_layout(name, args, tt.shape, op)
        self.call_builtin(op, name, [args["a"], args["indices"], args["t"], oi, oj, axis])

    def builtin_tile_store(self, op):
        args = self.call_arguments(op, ("a", "t", "offset", "bounds_check", "aligned"))
        if len(self.need_tile(args["t"], op, "tile_store's value").shape) > 2 or \
                getattr(args["a"].type, "ndim", 0) > 2:
            return self.tile_store_nd(op, "tile_store", args)
        self.tile_array(args["a"], op)
        oi, oj = self.offsets(args.get("offset"), op)
        self.call_builtin(op, "tile_store", [args["a"], args["t"], oi, oj])

    def check_atomic_tile(self, tt, name, op):
        """Warp's rule: atomic tile adds of 32/64-bit integers and of floats (16 bits included) only; bool and
        8/16-bit integers have no atomic add (their update would not be atomic). Struct tiles are not checked here."""
        if is_struct(tt.dtype):
            return
        scalar = T.scalar_type(tt.dtype)
        if scalar is T.bool_ or (T.is_int(scalar) and np.dtype(scalar._np_).itemsize < 4):
            raise self.error(f"{name}() only supports tiles with [u]int32, [u]int64, float16, bfloat16, float32, or "
                             f"float64 as the underlying scalar type, but got {describe(tt.dtype)}", op)

    def builtin_tile_atomic_add(self, op):
        args = self.call_arguments(op, ("a", "t", "offset", "bounds_check"))
        tt = self.need_tile(args["t"], op, "tile_atomic_add's value")
        self.check_atomic_tile(tt, "tile_atomic_add", op)
        if len(tt.shape) > 2 or getattr(args["a"].type, "ndim", 0) > 2:
            return self.tile_store_nd(op, "tile_atomic_add", args)
        self.tile_array(args["a"], op)
        oi, oj = self.offsets(args.get("offset"), op)
        self.call_builtin(op, "tile_atomic_add", [args["a"], args["t"], oi, oj])

    # ------------------------------------------------------------------------------------------ shape

    def builtin_tile_broadcast(self, op):
        args = self.call_arguments(op, ("t", "shape"))
        tt = self.need_tile(args["t"], op, "tile_broadcast's argument")
        shape = self.static_shape(args["shape"], op, "tile_broadcast()")
        if len(shape) > 2 or len(tt.shape) > 2:
            return self.tile_broadcast_nd(op, args["t"], shape)
        out = TileType(tt.dtype, shape)
        if len(tt.shape) == 1 and len(shape) == 2:
            # numpy rules: a 1-d tile is a row, (n,) -> (1, n)
            if tt.rows not in (1, out.cols):
                raise self.error(f"cannot broadcast a {describe(tt)} to shape {shape}", op)
            self.emit_typed(op, "tile_broadcast_row", out, [args["t"]])
            return
        for have, want in zip((tt.rows, tt.cols), (out.rows, out.cols)):
            if have not in (1, want):
                raise self.error(f"cannot broadcast a {describe(tt)} to shape {shape}", op)
        self.emit_typed(op, "tile_broadcast", out, [args["t"]])

    def builtin_tile_view(self, op):
        args = self.call_arguments(op, ("t", "offset", "shape"))
        tt = self.need_tile(args["t"], op, "tile_view's argument")
        items = self.offset_items(args.get("offset"), op)
        if "shape" in args and any(is_slice(k) for k in items):
            raise self.error("tile_view takes 'shape' together with a slice offset: give one or the other", op,
                             ValueError)
        for d, k in enumerate(items):
            if is_slice(k):
                continue
            if not T.is_int(k.type):
                raise self.error(f"tile_view offsets must be integers or slices, got {describe(k.type)}", op,
                                 ValueError)
            if k.owner is not None and k.owner.opcode == "const" and d < len(tt.shape) \
                    and not 0 <= int(k.owner.attrs["value"]) < tt.shape[d]:
                raise self.error(f"tile_view offset {k.owner.attrs['value']} is out of bounds for axis {d} of "
                                 f"length {tt.shape[d]}", op, ValueError)
        if any(is_slice(k) for k in items) or ("shape" not in args and 0 < len(items) < len(tt.shape)):
            # Warp's view of the remaining axes, t[i] for offset=(i,): the subscript form
            return self.tile_getitem(op, args["t"], items)
        shape = self.static_shape(args["shape"], op) if "shape" in args else tt.shape
        oi, oj = self.offsets(args.get("offset"), op)
        self.emit_typed(op, "tile_view", TileType(tt.dtype, shape), [args["t"], oi, oj])

    # ------------------------------------------------------------------------------------------ matrix product

    def builtin_tile_matmul(self, op):
        """tile_matmul(a, b, alpha=1.0) returns alpha * a @ b; tile_matmul(a, b, out, alpha=1.0, beta=1.0) updates
        out. Without scale factors the plain overloads are used."""
        args = self.call_arguments(op, ("a", "b", "out", "alpha", "beta", "precision"))
        if "a" not in args or "b" not in args:
            raise self.error("tile_matmul(a, b[, out], alpha=..., beta=...) needs a and b", op)
        self.matmul_operand_types(args, op)
        dtype = self.need_tile(args["a"], op, "tile_matmul's a").dtype
        # mixed precision (Warp 1.19): a and b are converted to out's dtype (a's for the returning form), in which
        # the products accumulate; their adjoints convert back through the same casts
        for k in ("a", "b"):
            target = args["out"].type.dtype if "out" in args else dtype
            if args[k].type.dtype != target:
                args[k] = self.tile_cast(args[k], target, op)
        dtype = args["a"].type.dtype
        if "beta" in args and "out" not in args:
            raise self.error("tile_matmul's beta scales `out`; the returning form takes only alpha", op)
        scales = [k for k in ("alpha", "beta") if k in args]
        if not scales:
            self.call_builtin(op, "tile_matmul", [args[k] for k in ("a", "b", "out") if k in args])
            return
        values = {}
        for k in ("alpha", "beta") if "out" in args else ("alpha",):
            v = args.get(k)
            values[k] = self.typed_const(1.0, dtype, op.loc) if v is None else self.convert_weak_to(v, dtype, op)
        names = ("a", "b", "out", "alpha", "beta") if "out" in args else ("a", "b", "alpha")
        self.call_builtin(op, "tile_matmul", [values.get(k, args.get(k)) for k in names])

    def matmul_operand_types(self, args, op):
        """Warp's checks of tile_matmul's operands and precision (its wording): float tiles, no bfloat16 result,
        precision the literal 'default' or 'tf32' (tf32 only for float32 tiles; on the CPU it computes in full
        float32, as Warp's CPU fallback does)."""
        tiles = {k: self.need_tile(args[k], op, f"tile_matmul's {k}") for k in ("a", "b", "out") if k in args}
        if any(T.is_vector(t.dtype) and t.dtype._shape_ == (2,) and T.is_float(T.scalar_type(t.dtype))
               for t in tiles.values()):
            raise self.error("tile_matmul() does not support complex tiles (tiles of 2-vectors of floats)", op,
                             kind=TypeError)
        floats = (T.float16, T.bfloat16, T.float32, T.float64)
        if any(t.dtype not in floats for t in tiles.values()):
            raise self.error("tile_matmul() arguments must be tiles of float16, bfloat16, float32, or float64 "
                             "entries", op, kind=TypeError)
        out = tiles.get("out", tiles["a"]).dtype
        if "precision" in args:
            v = args["precision"]
            literal = isinstance(v.type, StaticType) or (v.owner is not None and v.owner.opcode == "const")
            precision = self.static_value(v, op, "precision") if literal else None
            if precision not in ("default", "tf32"):
                got = repr(precision) if literal else "a non-literal argument"
                raise self.error(f"tile_matmul() precision must be the string literal 'default' or 'tf32', got {got}",
                                 op, kind=ValueError)
            if precision == "tf32" and any(t is not T.float32 for t in (tiles["a"].dtype, tiles["b"].dtype, out)):
                raise self.error("tile_matmul() precision='tf32' requires float32 tiles for a, b, and out", op,
                                 kind=TypeError)
        if out is T.bfloat16:
            raise self.error("tile_matmul() does not support a bfloat16 'out' tile. Allowed 'out' dtypes are "
                             "float16, float32, and float64.", op, kind=TypeError)

    def tile_cast(self, v, dtype, op):
        """Tile `v` with its elements converted to `dtype` (tile_astype), a new value."""
        cast = ir.Op("call", [v], [ir.Value()], {"name": "tile_astype"}, [], op.loc)
        self.emit_tile_map(cast, ("cast", dtype), [v], TileType(dtype, v.type.shape))
        return cast.results[0]

    def builtin_tile_axpy(self, op):
        """tile_axpy(alpha, src, dest): dest += alpha * src. Refused onto a broadcast tile: in Warp that is a view
        whose repeated elements share storage, so each receives the sum of its copies' updates; a broadcast tile here
        is a copy, and updating it would give a different number."""
        args = self.call_arguments(op, ("alpha", "src", "dest"))
        dest = args["dest"]
        tt = self.need_tile(dest, op, "tile_axpy's dest")
        self.need_tile(args["src"], op, "tile_axpy's src")
        owner = dest.owner
        if owner is not None and owner.opcode == "call" and owner.attrs.get("name") in (
                "tile_broadcast", "tile_broadcast_row") and owner.operands[0].type.shape != tt.shape:
            raise self.error("tile_axpy into a broadcast tile is not supported: in Warp its repeated elements share "
                             "storage and accumulate every copy's update; here a broadcast tile is a copy (update "
                             "the source tile, or tile_broadcast after tile_axpy)", op)
        scalar = getattr(tt.dtype, "_wp_scalar_type_", tt.dtype)
        alpha = self.convert_weak_to(args["alpha"], scalar, op)
        self.call_builtin(op, "tile_axpy", [alpha, args["src"], dest])

    # ------------------------------------------------------------------------------------------ stacks

    def builtin_tile_stack(self, op):

        args = self.call_arguments(op, ("capacity", "dtype"))
        if "capacity" not in args:
            raise self.error("tile_stack(capacity, dtype=float) needs a capacity", op)
        capacity = self.static_value(args["capacity"], op, "tile_stack's capacity")
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise self.error(f"tile_stack: no overload takes a capacity of {capacity!r} (an int)", op)
        if capacity <= 0:
            raise self.error(f"tile_stack: capacity must be a positive integer, got {capacity}", op, kind=ValueError)
        stack = tile_stack_type(self.tile_dtype(args, op), capacity)
        self.emit_typed(op, "tile_stack", stack, [])

    def need_stack(self, op, what):
        """The stack operand of a stack builtin. Refused where it is a @wp.func's parameter and the builtin updates
        it: Warp passes stacks by reference, kernels by value, so the caller would not see the update."""

        stack = op.operands[0] if op.operands else None
        if stack is None or not is_tile_stack(stack.type):
            got = describe(stack.type) if stack is not None else "nothing"
            raise self.error(f"{what}'s first argument must be a tile_stack, got {got}", op)
        if op.attrs.get("mutates") and stack in self.fn.params:
            raise self.error(f"{what} on a tile_stack passed into a @wp.func is not supported: the update would not "
                             "reach the caller (push and pop in the kernel, or return the values to push)", op)
        return stack.type

    def builtin_tile_stack_push(self, op):
        stack = self.need_stack(op, "tile_stack_push")
        args = self.call_arguments(op, ("stack", "value", "has_value"))
        if "value" not in args or "has_value" not in args:
            raise self.error("tile_stack_push(stack, value, has_value) needs all three arguments", op)
        value = self.convert_weak_to(args["value"], stack._wp_stack_dtype_, op)
        if value.type != stack._wp_stack_dtype_:
            raise self.error(f"tile_stack_push: the value's type {describe(value.type)} does not match the stack's "
                             f"dtype {describe(stack._wp_stack_dtype_)}", op, kind=TypeError)
        self.call_builtin(op, "tile_stack_push", [args["stack"], value, args["has_value"]])

    def builtin_tile_stack_pop(self, op):
        self.need_stack(op, "tile_stack_pop")
        self.call_builtin(op, "tile_stack_pop")

    def builtin_tile_stack_count(self, op):
        self.need_stack(op, "tile_stack_count")
        self.call_builtin(op, "tile_stack_count")

    def builtin_tile_stack_clear(self, op):
        self.need_stack(op, "tile_stack_clear")
        self.call_builtin(op, "tile_stack_clear")

    def builtin_tile_reshape(self, op):
        """tile_reshape(t, shape): the same elements in row-major order with a new shape (one entry may be -1)."""
        args = self.call_arguments(op, ("t", "shape", "storage"))
        tt = self.need_tile(args["t"], op, "tile_reshape's argument")
        self.refuse_strided_reshape(args["t"], op)
        want = self.static_value(args["shape"], op, "tile_reshape's shape")
        want = [want] if isinstance(want, int) else list(want)
        size = tt.rows * tt.cols
        if want.count(-1) == 1:
            known = math.prod(n for n in want if n != -1)
            if known <= 0 or size % known:
                raise self.error(f"cannot reshape a tile of {size} elements to {tuple(want)}", op, kind=ValueError)
            want[want.index(-1)] = size // known
        shape = self.check_shape(tuple(want), op, "tile_reshape()")
        if math.prod(shape) != size:
            raise self.error(f"cannot reshape a tile of {size} elements to {shape}", op, kind=ValueError)
        self.emit_typed(op, "tile_reshape", TileType(tt.dtype, shape), [args["t"]])

    def refuse_strided_reshape(self, v, op):
        """Warp's refusal of tile_reshape of a subscripted view whose strides are not the dense ones of its shape
        (`t[::2, :]`, `t[::-1]`, `t[:, 1:3]`): in Warp the reshape would reinterpret the parent's storage. Here the
        view is a copy and the reshape would work; refused so that a program runs here only if it runs in Warp."""
        owner = v.owner
        if owner is None or owner.opcode != "call" or owner.attrs.get("name") != "tile_slice":
            return
        base, _, rs, _, cs, _ = owner.operands
        steps = [int(x.owner.attrs["value"]) if x.owner is not None and x.owner.opcode == "const" else None
                 for x in (rs, cs)]
        parent_cols = base.type.cols if len(base.type.shape) == 2 else 1
        strides = [st * (parent_cols if axis == 0 else 1) for axis, st in enumerate(steps) if st != 0]
        shape = v.type.shape
        dense = [shape[1], 1] if len(shape) == 2 else [1]
        if None in steps or len(strides) != len(shape) or strides != dense:
            raise self.error(f"tile_reshape() requires a contiguous tile; a tile view with shape {tuple(shape)} and "
                             f"strides {tuple(strides)} is not (copy it first, e.g. with tile_astype or t * 1)", op,
                             kind=ValueError)

    def builtin_tile_extract(self, op):
        """tile_extract(t, i) / tile_extract(t, i, j): one element, as t[i] / t[i, j]."""
        tile, *idx = op.operands
        self.need_tile(tile, op, "tile_extract's argument")
        self.check_indices(idx, op)
        self.call_builtin(op, "extract", [tile, *idx])

    # ------------------------------------------------------------------------------------------ higher order

    def element_function(self, fv, elem_types, op):
        """Resolve the function given to tile_map/tile_reduce for element types: ("builtin", overload) or
        ("func", typed ir.Function), and its result type."""
        obj = self.static_value(fv, op, "the function given to a tile operation")
        name = getattr(obj, "_wp_builtin_", None)
        if name is not None:
            ov, rtype = registry.resolve(name, list(elem_types))
            if ov is None or ov.template_ret or ov.mutates_first:
                got = ", ".join(describe(t) for t in elem_types)
                raise self.error(f"'{name}' cannot be applied to tile elements of type ({got})", op)
            return ("builtin", ov), rtype
        if isinstance(obj, Func):
            dummies = [ir.Value(type=t) for t in elem_types]
            fn, _ = obj.specialize(dummies, self, op)
            if len(fn.return_types) != 1:
                raise self.error(f"'{obj.name}' must return one value to be used on tile elements", op)
            return ("func", fn), fn.return_types[0]
        raise self.error("tile_map and tile_reduce take a builtin (wp.sin) or a @wp.func", op)

    def builtin_tile_map(self, op):
        fv, *args = op.operands
        tiles = [a.type for a in args if isinstance(a.type, TileType)]
        if not tiles:
            raise self.error("tile_map(f, a, ...) needs at least one tile argument", op)
        shape = self.common_shape(tiles, op, "tile_map")
        elem_types = [a.type.dtype if isinstance(a.type, TileType) else a.type for a in args]
        elem, rtype = self.element_function(fv, elem_types, op)
        self.emit_tile_map(op, elem, args, TileType(rtype, shape))

    def common_shape(self, tiles, op, what):
        for t in tiles[1:]:
            if t.shape != tiles[0].shape:
                raise self.error(f"{what} over tiles of different shapes {tiles[0].shape} and {t.shape}", op,
                                 kind=ValueError)
        return tiles[0].shape

    def emit_tile_map(self, op, elem, args, out):
        """The elementwise call `elem` over `args` (tiles of one shape, or broadcast values) giving tile `out`."""
        differentiable = elem[0] != "builtin" or elem[1].differentiable
        op.results[0].type = out
        ov = registry.BUILTINS["tile_map"][0 if differentiable else 1]
        self.append(ir.Op("call", list(args), op.results[:1], {"name": "tile_map", "elem": elem, "overload": ov},
                          [], op.loc))

    def tile_elementwise(self, op, name):
        """`a + b`, `t * 2.0`, `v / t`, `-t` with a tile operand: the scalar builtin mapped over the elements.
        Non-tile operands broadcast; Python literals take the tile's scalar type."""
        args = list(op.operands)
        tiles = [a.type for a in args if isinstance(a.type, TileType)]
        if any(is_struct(t.dtype) for t in tiles):
            return self.struct_tile_arithmetic(op, name)
        shape = self.common_shape(tiles, op, f"'{name}'")
        scalar = T.scalar_type(tiles[0].dtype)
        args = [self.convert_weak_to(a, scalar, op) for a in args]
        elem_types = [a.type.dtype if isinstance(a.type, TileType) else a.type for a in args]
        if name in ("mul", "div") and len(args) == 2 and not any(T.is_scalar(t) for t in elem_types):
            verb = "multiply" if name == "mul" else "divide"
            if len(tiles) == 2:
                raise self.error(f"Cannot {verb} tile<{describe(elem_types[0])}> by tile<{describe(elem_types[1])}> "
                                 f"element-wise: the element type must be scalar on at least one side", op,
                                 kind=TypeError)
            left, right = (f"tile<{describe(t.dtype)}>" if isinstance(t, TileType) else describe(t)
                           for t in (args[0].type, args[1].type))
            raise self.error(f"Cannot {verb} {left} by {right}: at least one operand must be a scalar type", op,
                             kind=TypeError)
        ov, rtype = registry.resolve(name, elem_types)
        if ov is None:
            got = ", ".join(describe(a.type) for a in args)
            raise self.error(f"'{name}' is not defined for the elements of ({got})", op, kind=TypeError)
        self.emit_tile_map(op, ("builtin", ov), args, TileType(rtype, shape))

    def builtin_tile_astype(self, op):
        args = self.call_arguments(op, ("t", "dtype"))
        tt = self.need_tile(args["t"], op, "tile_astype's argument")
        dtype = T.canonical_type(self.static_value(args["dtype"], op, "dtype"))
        if not (T.is_scalar(dtype) or T.is_composite(dtype)):
            raise self.error(f"tile_astype's dtype must be a value type, got {dtype!r}", op, kind=TypeError)
        if T.is_composite(dtype) != T.is_composite(tt.dtype) or \
                T.is_composite(dtype) and dtype._shape_ != tt.dtype._shape_:
            raise self.error(f"tile_astype cannot convert {describe(tt.dtype)} elements to {describe(dtype)}", op,
                             kind=TypeError)
        self.emit_tile_map(op, ("cast", dtype), [args["t"]], TileType(dtype, tt.shape))

    def builtin_tile_reduce(self, op):
        args = self.call_arguments(op, ("op", "a", "axis"))
        if "op" not in args or "a" not in args:
            raise self.error("tile_reduce(op, a, axis=None) needs op and a", op)
        tt = self.need_tile(args["a"], op, "tile_reduce's argument")
        elem, rtype = self.element_function(args["op"], [tt.dtype, tt.dtype], op)
        if rtype != tt.dtype:
            raise self.error(f"tile_reduce's function must return {describe(tt.dtype)}, got {describe(rtype)}", op)
        self.emit_reduce(op, "tile_reduce", elem, args["a"], args.get("axis"))

    def builtin_tile_sum(self, op):
        args = self.call_arguments(op, ("a", "axis"))
        if isinstance(args["a"].type, TileType) and is_struct(args["a"].type.dtype):
            return self.struct_tile_sum(op, args["a"], args.get("axis"))
        if "axis" not in args:
            self.call_builtin(op, "tile_sum", [args["a"]])
            return
        tt = self.need_tile(args["a"], op, "tile_sum's argument")
        ov, _ = registry.resolve("add", [tt.dtype, tt.dtype])
        if ov is None:
            raise self.error(f"tile_sum cannot add elements of type {describe(tt.dtype)}", op, kind=TypeError)
        self.emit_reduce(op, "tile_sum", ("builtin", ov), args["a"], args["axis"])

    def emit_reduce(self, op, what, elem, tile, axis_value):
        """A left fold of `elem` over the whole tile (a 1-element tile), or along `axis` (that dimension
        removed; a 1-d tile gives shape (1,))."""
        tt = tile.type
        attrs = {"name": "tile_reduce", "elem": elem, "overload": registry.BUILTINS["tile_reduce"][0]}
        shape = (1,)
        if axis_value is not None:
            axis = self.static_value(axis_value, op, f"{what}'s axis")
            if not isinstance(axis, int) or not 0 <= axis < len(tt.shape):
                raise self.error(f"{what}() axis {axis} is out of bounds for tile with {len(tt.shape)} dimensions",
                                 op, kind=ValueError)
            attrs["axis"] = axis
            if len(tt.shape) == 2:
                shape = (tt.shape[1 - axis],)
            elif len(tt.shape) > 2:
                outer, n, inner, shape = self.reduce_lines(tt, axis)
                attrs["lines"] = (outer, n, inner)
        op.results[0].type = TileType(tt.dtype, shape)
        self.append(ir.Op("call", [tile], op.results[:1], attrs, [], op.loc))

    # ------------------------------------------------------------------------------------------ linear algebra

    def tile_linalg(self, op, name, names, fill_mode):
        """tile_cholesky / tile_*_solve (and their _inplace forms): a square float32/float64 matrix tile named
        names[0], a right-hand side names[1] (if any) of as many rows and the same dtype, and for the Cholesky
        forms fill_mode ("lower" or "upper", a compile-time constant) passed on as the `upper` flag."""
        args = self.call_arguments(op, names + (("fill_mode",) if fill_mode else ()))
        for n in names:
            if n not in args:
                raise self.error(f"{name}() missing argument '{n}'", op)
        matrix = args[names[0]]
        mt = self.need_tile(matrix, op, f"{name}() argument '{names[0]}'")
        if len(mt.shape) != 2 or mt.rows != mt.cols:
            raise self.error(f"{name}() argument '{names[0]}' must be a square 2-d tile, got shape {mt.shape}", op,
                             kind=ValueError)
        if mt.dtype not in (T.float32, T.float64):
            raise self.error(f"{name}() takes tiles of float32 or float64, got {describe(mt.dtype)}", op,
                             kind=TypeError)
        operands = [matrix]
        if len(names) > 1:
            rhs = args[names[1]]
            rt = self.need_tile(rhs, op, f"{name}() argument '{names[1]}'")
            if rt.dtype != mt.dtype:
                raise self.error(f"{name}() arguments must have the same dtype, got {describe(mt.dtype)} and "
                                 f"{describe(rt.dtype)}", op, kind=TypeError)
            if rt.rows != mt.rows:
                raise self.error(f"{name}() argument '{names[1]}' must have {mt.rows} rows, as '{names[0]}' has, "
                                 f"got shape {rt.shape}", op, kind=ValueError)
            operands.append(rhs)
        if fill_mode:
            operands.append(self.typed_const(self.fill_mode_is_upper(args, op, name), T.bool_, op.loc))
        self.call_builtin(op, name, operands)

    def fill_mode_is_upper(self, args, op, name) -> bool:
        if "fill_mode" not in args:
            return False
        mode = self.static_value(args["fill_mode"], op, f"{name}() fill_mode")
        if mode not in ("lower", "upper"):
            raise self.error(f'{name}() fill_mode must be "lower" or "upper", got {mode!r}', op, kind=ValueError)
        return mode == "upper"


def _linalg_form(name, names, fill_mode):
    def form(self, op):
        self.tile_linalg(op, name, names, fill_mode)
    form.__name__ = "builtin_" + name
    form.__doc__ = f"{name}({', '.join(names)}{', fill_mode' if fill_mode else ''}): see TileForms.tile_linalg."
    return form


# The special forms TileForms.builtin_<name> and builtin_<name>_inplace, by name: (argument names, whether it takes
# fill_mode). The builtins are declared in kernels/builtins/tile.py.
_LINALG_FORMS = {
    "tile_cholesky": (("A",), True), "tile_cholesky_solve": (("L", "y"), True),
    "tile_lower_solve": (("L", "y"), False), "tile_upper_solve": (("U", "z"), False),
}
for _name, (_names, _fill) in _LINALG_FORMS.items():
    for _variant in (_name, _name + "_inplace"):
        setattr(TileForms, "builtin_" + _variant, _linalg_form(_variant, _names, _fill))
del _name, _names, _fill, _variant
