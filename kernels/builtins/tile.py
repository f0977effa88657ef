"""Tile builtins: elementwise arithmetic, element access, memory, reductions, shape and matrix products.

Constructors with static shapes (tile_zeros, tile_ones, tile_arange, tile_load, tile_broadcast, tile_view) and the
higher-order tile_map / tile_reduce are special forms in type inference, which resolves them to the overloads
declared here. Native code: kernels/native/tile.h.
"""

from __future__ import annotations

from .. import types as T
from .registry import A, AnyType, M, S, Tl, TypeArg, V, add_builtin, declare_properties

F = S("T", "float")
N = S("T", "scalar")
I32 = T.int32

# Tile arithmetic (a + b, t * 2.0, v / t, -t, ...) is not declared here: type inference rewrites it into an
# elementwise tile_map of the scalar builtin over the element types (typeinfer_tiles.tile_elementwise).

add_builtin("extract", (Tl(AnyType("T")), S("I", "int")), "T", group="tile", doc="t[i] (1-d, or flat index)")
add_builtin("extract", (Tl(AnyType("T"), ndim=2), S("I", "int"), S("J", "int")), "T", group="tile", doc="t[i, j]")
add_builtin("assign", (Tl(AnyType("T")), S("I", "int"), AnyType("T")), Tl(AnyType("T")), group="tile",
            doc="t[i] = v: a new tile")
add_builtin("assign", (Tl(AnyType("T"), ndim=2), S("I", "int"), S("J", "int"), AnyType("T")),
            Tl(AnyType("T"), ndim=2), group="tile", doc="t[i, j] = v: a new tile")

# Memory. Offsets are (row, column) element offsets; elements outside the array read as 0 and are not written.
add_builtin("tile_load", (TypeArg(Tl(AnyType("T"))), A(AnyType("T")), I32, I32), Tl(AnyType("T")),
            template_ret=True, group="tile", doc="tile_load(a, shape=(m, n), offset=(i, j))")
add_builtin("tile_load_indexed", (TypeArg(Tl(AnyType("T"))), A(AnyType("T")), Tl(I32, "K", 1, ndim=1, nd="__idx_nd"),
                                  I32, I32, I32), Tl(AnyType("T")), template_ret=True, group="tile",
            arg_names=("a", "indices", "offset_i", "offset_j", "axis"),
            doc="tile_load_indexed(a, indices, shape, offset=(i, j), axis=0): a tile gathered along `axis` through "
                "the 1-d int32 tile `indices` (an index outside the array reads 0); differentiable w.r.t. a")
_IDX_TILE = Tl(I32, "K", 1, ndim=1, nd="__idx_nd")
add_builtin("tile_store_indexed", (A(AnyType("T")), _IDX_TILE, Tl(AnyType("T")), I32, I32, I32), None,
            side_effect=True, group="tile", arg_names=("a", "indices", "t", "offset_i", "offset_j", "axis"),
            doc="tile_store_indexed(a, indices, t, offset=(i, j), axis=0): t scattered along `axis` through the "
                "1-d int32 tile `indices` (elements landing outside the array are dropped); gradient to t")
add_builtin("tile_atomic_add_indexed", (A(AnyType("T")), _IDX_TILE, Tl(AnyType("T")), I32, I32, I32),
            Tl(AnyType("T")), side_effect=True, group="tile",
            arg_names=("a", "indices", "t", "offset_i", "offset_j", "axis"),
            doc="tile_atomic_add_indexed(a, indices, t, offset=(i, j), axis=0): t added into a along `axis` "
                "through `indices`; returns the old values; gradient to t")
add_builtin("tile_store", (A(AnyType("T")), Tl(AnyType("T")), I32, I32), None, side_effect=True, group="tile",
            doc="tile_store(a, t, offset=(i, j))")
declare_properties("tile_store", adjoint_without_result=True)
declare_properties("tile_store_indexed", adjoint_without_result=True)
add_builtin("tile_atomic_add", (A(AnyType("T")), Tl(AnyType("T")), I32, I32), Tl(AnyType("T")), side_effect=True,
            group="tile", doc="tile_atomic_add(a, t, offset=(i, j)): adds t into a; returns the old values")

# Construction.
add_builtin("tile_zeros", (TypeArg(Tl(AnyType("T"))),), Tl(AnyType("T")), template_ret=True, group="tile",
            doc="tile_zeros(shape, dtype=float)")
add_builtin("tile_empty", (TypeArg(Tl(AnyType("T"))),), Tl(AnyType("T")), template_ret=True, group="tile",
            doc="tile_empty(shape, dtype=float): a tile whose contents Warp leaves undefined (np.empty's contract: "
                "write every element before reading); zeros here, so a read before a write is deterministic")
add_builtin("tile_ones", (TypeArg(Tl(AnyType("T"))),), Tl(AnyType("T")), template_ret=True, group="tile",
            doc="tile_ones(shape, dtype=float)")
add_builtin("tile_full", (TypeArg(Tl(AnyType("T"))), AnyType("T")), Tl(AnyType("T")), template_ret=True,
            group="tile", doc="tile_full(shape, value, dtype=type of value): every element `value`; differentiable "
                              "w.r.t. value (the sum of the tile's adjoint)")
add_builtin("tile_arange", (TypeArg(Tl(AnyType("T"), ndim=1)), S("S", "any"), S("S", "any")),
            Tl(AnyType("T"), ndim=1), template_ret=True, group="tile",
            doc="tile_arange(start, stop, step, dtype=float) (or (stop) or (start, stop))")
add_builtin("tile_from_value", (TypeArg(Tl(AnyType("T"), 1, 1, ndim=1)), AnyType("T")),
            Tl(AnyType("T"), 1, 1, ndim=1), template_ret=True, group="tile",
            doc="tile(x): the block's values as a tile (one lane on the CPU: shape (1,))")
add_builtin("untile", (Tl(AnyType("T"), 1, 1),), "T", group="tile", doc="this lane's element of a tile(x) tile")

# Random tiles: the block's generator rand_pcg(lane + rng) fills the tile in order (one lane on the CPU, as
# warp-lang's CPU backend does); rng itself is not advanced.
U32 = T.uint32
for _name, _dtype in (("tile_randi", I32), ("tile_randf", T.float32)):
    add_builtin(_name, (TypeArg(Tl(_dtype)), U32), Tl(_dtype), template_ret=True, differentiable=False, group="tile",
                doc=f"{_name}(shape, rng): random values (as {'randi' if _dtype is I32 else 'randf'})")
    add_builtin(_name, (TypeArg(Tl(_dtype)), U32, _dtype, _dtype), Tl(_dtype), template_ret=True,
                differentiable=False, group="tile", doc=f"{_name}(shape, rng, min, max): random values in [min, max)")

# Reductions: 1-element tiles.
add_builtin("tile_sum", (Tl(N),), Tl(N, 1, 1, ndim=1), group="tile", doc="sum of all elements")
add_builtin("tile_sum", (Tl(V("L", F)),), Tl(V("L", F), 1, 1, ndim=1), group="tile",
            doc="sum of all elements of a tile of vectors")
add_builtin("tile_min", (Tl(N),), Tl(N, 1, 1, ndim=1), group="tile", doc="smallest element")
add_builtin("tile_max", (Tl(N),), Tl(N, 1, 1, ndim=1), group="tile", doc="largest element")
add_builtin("tile_argmin", (Tl(N),), Tl(T.int32, 1, 1, ndim=1), differentiable=False, group="tile",
            doc="flat index of the smallest element")
add_builtin("tile_argmax", (Tl(N),), Tl(T.int32, 1, 1, ndim=1), differentiable=False, group="tile",
            doc="flat index of the largest element")

# Shape.
add_builtin("tile_transpose", (Tl(AnyType("T"), "M", "N", ndim=2),), Tl(AnyType("T"), "N", "M", ndim=2), group="tile",
            doc="transpose of a 2-d tile (of scalars, vectors or matrices)")
_OUT = Tl(AnyType("T"), "P", "Q", nd="__out_ndim")  # a result whose shape differs from the argument's
add_builtin("tile_broadcast", (TypeArg(_OUT), Tl(AnyType("T"))), _OUT, template_ret=True, group="tile",
            doc="tile_broadcast(t, shape=(m, n)): repeat dimensions of size 1 (numpy rules)")
add_builtin("tile_broadcast_row", (TypeArg(_OUT), Tl(AnyType("T"), ndim=1)), _OUT, template_ret=True,
            group="tile", doc="a 1-d tile broadcast as a row to a 2-d shape (numpy rules)")
add_builtin("tile_reshape", (TypeArg(_OUT), Tl(AnyType("T"))), _OUT, template_ret=True, group="tile",
            doc="tile_reshape(t, shape): the elements in row-major order with a new shape (-1: inferred)")
add_builtin("tile_extract", (Tl(AnyType("T")), S("I", "int")), "T", native="extract", group="tile",
            doc="tile_extract(t, i) (or (t, i, j)): one element, as t[i] / t[i, j]")
add_builtin("tile_view", (TypeArg(_OUT), Tl(AnyType("T")), I32, I32), _OUT, template_ret=True, group="tile",
            doc="tile_view(t, offset=(i, j), shape=(m, n)): a copy of a sub-tile")

# Matrix product.
add_builtin("tile_matmul", (Tl(F, "M", "K", ndim=2), Tl(F, "K", "N", ndim=2)), Tl(F, "M", "N", ndim=2),
            group="tile", doc="a @ b")
add_builtin("tile_matmul", (Tl(F, "M", "K", ndim=2), Tl(F, "K", "N", ndim=2), Tl(F, "M", "N", ndim=2)), None,
            native="tile_matmul_acc", mutates_arg=2, group="tile", doc="tile_matmul(a, b, out): out += a @ b")
# With scale factors (type inference fills in the defaults 1.0); no gradient flows to alpha or beta.
add_builtin("tile_matmul", (Tl(F, "M", "K", ndim=2), Tl(F, "K", "N", ndim=2), F), Tl(F, "M", "N", ndim=2),
            native="tile_matmul_scaled", arg_names=("a", "b", "alpha"), constant_args=(2,), group="tile",
            doc="tile_matmul(a, b, alpha=1.0): alpha * (a @ b)")
add_builtin("tile_matmul", (Tl(F, "M", "K", ndim=2), Tl(F, "K", "N", ndim=2), Tl(F, "M", "N", ndim=2), F, F), None,
            native="tile_matmul_acc", mutates_arg=2, arg_names=("a", "b", "out", "alpha", "beta"),
            constant_args=(3, 4), group="tile",
            doc="tile_matmul(a, b, out, alpha=1.0, beta=1.0): out = alpha * (a @ b) + beta * out (out is not read "
                "when beta is 0)")

# Higher-order forms: resolved by type inference, which renders the element function as a C++ lambda.
add_builtin("tile_map", (AnyType("F"), Tl(AnyType("T"))), None, group="tile",
            doc="tile_map(f, a, ...): f applied elementwise (a builtin or @wp.func); non-tile arguments broadcast")
add_builtin("tile_map", (AnyType("F"), Tl(AnyType("T"))), None, group="tile", differentiable=False,
            doc="tile_map(f, a, ...) of an element function without a gradient (wp.bit_and)")
add_builtin("tile_astype", (Tl(AnyType("T")), AnyType("D")), None, group="tile",
            doc="tile_astype(t, dtype): a tile of the elements converted to dtype (gradients flow for floats)")
add_builtin("tile_reduce", (AnyType("F"), Tl(AnyType("T"))), None, group="tile",
            doc="tile_reduce(f, t): left fold of the elements with binary f; a 1-element tile")
declare_properties("tile_map", forward="tile_map", adjoint="tile_map")
declare_properties("tile_reduce", forward="tile_reduce", adjoint="tile_reduce")
add_builtin("tile", (AnyType("T"),), None, group="tile", doc="tile(x): the block's values as a tile")

# Linear algebra (kernels/native/tile_linalg.h) on float32/float64 tiles. A square N x N matrix tile; a right-hand
# side of shape (N,) or (N, K), and the solution has its shape. Type inference (typeinfer_tiles) checks shapes and
# dtypes and turns fill_mode="lower"/"upper" into the `upper` flag. Each reads one triangle of its matrix; the
# gradient goes to that triangle only (the other is never read). Warp's in-place forms have no gradient.
_SQUARE = Tl(F, "M", "M", ndim=2, nd="__square_ndim")
_RHS = Tl(F, "M", "K")
B = T.bool_
add_builtin("tile_cholesky", (_SQUARE, B), _SQUARE, arg_names=("A", "upper"), constant_args=(1,), group="tile_linalg",
            doc="tile_cholesky(A, fill_mode='lower'): L with L L^T = A (or U with U^T U = A for 'upper'), the "
                "other triangle zero; A must be symmetric positive definite (else NaN)")
add_builtin("tile_cholesky_solve", (_SQUARE, _RHS, B), _RHS, arg_names=("L", "y", "upper"), constant_args=(2,),
            group="tile_linalg", doc="tile_cholesky_solve(L, y, fill_mode='lower'): x with A x = y, given A's Cholesky "
                              "factor L (A = L L^T; 'upper': L holds U, A = U^T U)")
add_builtin("tile_lower_solve", (_SQUARE, _RHS), _RHS, arg_names=("L", "y"), group="tile_linalg",
            doc="tile_lower_solve(L, y): z with L z = y, reading L's lower triangle (forward substitution)")
add_builtin("tile_upper_solve", (_SQUARE, _RHS), _RHS, arg_names=("U", "z"), group="tile_linalg",
            doc="tile_upper_solve(U, z): x with U x = z, reading U's upper triangle (back substitution)")
add_builtin("tile_cholesky_inplace", (_SQUARE, B), None, arg_names=("A", "upper"), mutates_arg=0,
            differentiable=False, group="tile_linalg",
            doc="tile_cholesky_inplace(A, fill_mode='lower'): A = tile_cholesky(A)")
add_builtin("tile_cholesky_solve_inplace", (_SQUARE, _RHS, B), None, arg_names=("L", "y", "upper"), mutates_arg=1,
            differentiable=False, group="tile_linalg",
            doc="tile_cholesky_solve_inplace(L, y, fill_mode='lower'): y = tile_cholesky_solve(L, y)")
add_builtin("tile_lower_solve_inplace", (_SQUARE, _RHS), None, arg_names=("L", "y"), mutates_arg=1,
            differentiable=False, group="tile_linalg", doc="tile_lower_solve_inplace(L, y): y = tile_lower_solve(L, y)")
add_builtin("tile_upper_solve_inplace", (_SQUARE, _RHS), None, arg_names=("U", "z"), mutates_arg=1,
            differentiable=False, group="tile_linalg", doc="tile_upper_solve_inplace(U, z): z = tile_upper_solve(U, z)")

add_builtin("tile_diag_add", (Tl(AnyType("T"), "M", "M", ndim=2, nd="__a_ndim"), Tl(AnyType("T"), "M", 1, ndim=1,
                                                                                    nd="__d_ndim")),
            Tl(AnyType("T"), "M", "M", ndim=2, nd="__a_ndim"), arg_names=("a", "d"), group="tile_linalg",
            doc="tile_diag_add(a, d): a + diag(d), for a square tile a and a 1-d tile d of its size and dtype")

add_builtin("tile_sort", (Tl(AnyType("K")), Tl(AnyType("V"))), None, arg_names=("keys", "values"),
            mutates_arg=(0, 1), differentiable=False, group="tile",
            doc="tile_sort(keys, values): both tiles permuted in place in ascending order of keys (float32, int32, "
                "uint32, int64, uint64), as their row-major sequences; equal keys in no promised order")

# FFTs (kernels/native/tile_fft.h): in place along the last axis of a tile of complex numbers (vec2 of float32 or
# float64 as (re, im)), one transform per row, unnormalised as Warp's. The updated tile is rebound to the caller's
# variable; the gradient of each is the other direction's transform of the result's gradient.
_COMPLEX = Tl(V(2, F))
add_builtin("tile_fft", (_COMPLEX,), None, arg_names=("inout",), mutates_arg=0, group="tile",
            doc="tile_fft(t): t's rows replaced by their discrete Fourier transforms (sum x_j e^(-2 pi i jk/n))")
add_builtin("tile_ifft", (_COMPLEX,), None, arg_names=("inout",), mutates_arg=0, group="tile",
            doc="tile_ifft(t): t's rows replaced by their unnormalised inverse transforms (ifft(fft(x)) = n x)")

# Fused operations (Warp 1.19). tile_axpy updates `dest` in place (rebound to the caller's variable); the gradient
# flows to alpha (sum of src * the result's adjoint), src and the old dest. tile_dot contracts every element
# (vectors and matrices componentwise, as a tensordot) to a 1-element tile of the scalar type.
_SRC = Tl(AnyType("E"), "M", "N")
add_builtin("tile_axpy", (F, _SRC, _SRC), None, arg_names=("alpha", "src", "dest"), mutates_arg=2, group="tile",
            doc="tile_axpy(alpha, src, dest): dest += alpha * src (elements scalars, vectors or matrices of alpha's "
                "type)")
for _elem in (N, V("L", F), M("R", "C", F)):
    add_builtin("tile_dot", (Tl(_elem), Tl(_elem)), Tl(S("T", "scalar") if _elem is N else F, 1, 1, ndim=1),
                group="tile", doc="tile_dot(a, b): sum of a * b over every element (and component): a 1-element "
                                  "tile")

# Block-local stacks (kernels/tile_stack_type.py, kernels/native/tile_stack.h): type inference checks that the argument
# is a stack and that a pushed value has its dtype; no gradient flows through a stack.
_STACK = AnyType("Stack")
add_builtin("tile_stack", (TypeArg(_STACK),), _STACK, template_ret=True, differentiable=False, group="tile",
            doc="tile_stack(capacity, dtype): an empty block-local stack of up to `capacity` values")
add_builtin("tile_stack_push", (_STACK, AnyType("T"), T.bool_), I32, mutates_arg=0, differentiable=False,
            arg_names=("stack", "value", "has_value"), group="tile",
            doc="tile_stack_push(stack, value, has_value): the slot the value went to, or -1 (has_value false, or "
                "the stack full)")
add_builtin("tile_stack_pop", (_STACK,), (lambda b: b["Stack"]._wp_stack_dtype_, I32), mutates_arg=0,
            differentiable=False, arg_names=("stack",), group="tile",
            doc="tile_stack_pop(stack): (value, slot) of the last value pushed, or (0, -1) when the stack is empty")
add_builtin("tile_stack_count", (_STACK,), I32, differentiable=False, arg_names=("stack",), group="tile",
            doc="tile_stack_count(stack): how many values the stack holds")
add_builtin("tile_stack_clear", (_STACK,), None, mutates_arg=0, differentiable=False, arg_names=("stack",),
            group="tile", doc="tile_stack_clear(stack): empties the stack")

# Prefix scans over a tile's row-major sequence (kernels/native/tile_scan.h), float32, int32 or uint32 as Warp's;
# the sums are differentiable (Warp's are not), the min/max scans not (as in Warp).
for _dtype in (T.float32, I32, U32):
    _SCANNED = Tl(_dtype, "M", "N")
    for _name, _what, _diff in (("tile_scan_inclusive", "sums of elements 0..i", True),
                                ("tile_scan_exclusive", "sums of elements 0..i-1 (0 first)", True),
                                ("tile_scan_max_inclusive", "maxima of elements 0..i (C's fmax for floats)", False),
                                ("tile_scan_min_inclusive", "minima of elements 0..i (C's fmin for floats)", False)):
        add_builtin(_name, (_SCANNED,), _SCANNED, arg_names=("a",), differentiable=_diff and _dtype is T.float32,
                    group="tile", doc=f"{_name}(a): the tile of prefix {_what}, in row-major order")

# Tile subscripts with slices (kernels/passes/tile_slices.py builds the selection; kernels/native/tile_slice.h).
add_builtin("tile_slice", (TypeArg(_OUT), Tl(AnyType("T")), I32, I32, I32, I32, I32), _OUT, template_ret=True,
            group="tile", doc="t[rows, cols] with slices: a copy of the selected elements")
add_builtin("tile_slice_assign", (Tl(AnyType("T")), Tl(AnyType("T"), "P", "Q", nd="__value_ndim"), I32, I32, I32, I32,
                                  I32), Tl(AnyType("T")), group="tile",
            doc="t[rows, cols] = v with slices: t with the selection replaced by v's elements")
add_builtin("tile_gather", (TypeArg(_OUT), Tl(AnyType("T")), Tl(S("I", "int"), "K", 1, ndim=1, nd="__idx_nd"), I32),
            _OUT, template_ret=True, group="tile", arg_names=("t", "indices", "axis"),
            doc="t[indices, :] (or t[:, indices], t[indices] of a 1-d tile): a copy of t gathered along `axis` through "
                "a 1-d integer tile; a negative index counts from the end, one outside the axis reads 0 (invalid in "
                "Warp); repeated indices add their adjoints")
declare_properties("tile_slice", exposed=False)
declare_properties("tile_gather", exposed=False)
declare_properties("tile_slice_assign", exposed=False)
add_builtin("tile_assign", (Tl(AnyType("T")), Tl(AnyType("S"), "P", "Q", nd="__src_ndim"), I32, I32), None,
            arg_names=("dst", "src", "offset_i", "offset_j"), mutates_arg=0, group="tile",
            doc="tile_assign(dst, src, offset=(i, j)): src written into dst from the offset, converted to dst's "
                "dtype; differentiable w.r.t. both (the overwritten part of dst gets no gradient)")
