"""Core builtins: scalar operators, comparisons, logic, casts, thread index, array access, atomics, structs.

Native code: kernels/native/scalar_ops.h and kernels/native/array.h.
"""

from __future__ import annotations

from .. import types as T
from ..typesys import ArrayType
from .registry import A, AnyType, S, add_builtin, declare_properties

F = S("T", "float")
N = S("T", "scalar")
I = S("T", "int")
IDX = S("I", "int")

for _name, _doc in (("add", "a + b"), ("sub", "a - b"), ("mul", "a * b"), ("div", "a / b (C semantics for ints)")):
    add_builtin(_name, (N, N), "T", group="operators", doc=_doc, differentiable=True)
add_builtin("mod", (N, N), "T", group="operators", doc="a % b with the sign of a (C's % and fmod)")
add_builtin("floordiv", (N, N), "T", group="operators", doc="a // b, rounding down", differentiable=False)
add_builtin("div_approx", (F, F), "T", native="div", group="operators",
            doc="a / b for floats (Warp's fast approximate division; computed exactly here, so its gradient is div's)")
add_builtin("neg", (N,), "T", group="operators", doc="-a")
add_builtin("pos", (N,), "T", group="operators", doc="+a")
for _name in ("add", "sub", "neg", "pos"):  # also their vector, matrix, quaternion and transform overloads
    declare_properties(_name, linear=True, moves_components=True)
for _name in ("add", "sub", "mul", "div", "mod", "floordiv", "neg"):  # wp.add(a, b) as in Warp
    declare_properties(_name, operator=True)
declare_properties("pos", operator=True, exposed=False)

for _name in ("eq", "ne"):
    add_builtin(_name, (S("T", "any"), S("T", "any")), T.bool_, group="comparison", differentiable=False,
                doc="comparison")
for _name in ("lt", "le", "gt", "ge"):
    add_builtin(_name, (N, N), T.bool_, group="comparison", differentiable=False, doc="comparison")
add_builtin("logical_and", (T.bool_, T.bool_), T.bool_, group="logic", differentiable=False, doc="a and b")
add_builtin("logical_or", (T.bool_, T.bool_), T.bool_, group="logic", differentiable=False, doc="a or b")
add_builtin("logical_not", (T.bool_,), T.bool_, group="logic", differentiable=False, doc="not a")
add_builtin("truthy", (S("T", "any"),), T.bool_, group="logic", differentiable=False,
            doc="a != 0: the truth value of a number in `if x:`")
add_builtin("nonzero", (N,), "T", group="logic", doc="1 if a != 0 else 0, in the type of a (zero gradient)")
for _name in ("bit_and", "bit_or", "bit_xor", "lshift", "rshift"):
    add_builtin(_name, (I, I), "T", group="bitwise", differentiable=False, doc="integer bit operation")
add_builtin("invert", (I,), "T", group="bitwise", differentiable=False, doc="~a")
for _name in ("bit_and", "bit_or", "bit_xor", "lshift", "rshift", "invert"):
    declare_properties(_name, operator=True)
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not"):
    declare_properties(_name, operator=True, exposed=False)
declare_properties("truthy", exposed=False)

# Scalar conversions: the result type is a template argument (`cast<float64>(x)`); rendered specially.
add_builtin("cast", (S("A", "any"),), None, group="conversion", doc="convert a scalar to another scalar type")
declare_properties("cast", forward="cast", adjoint="cast", exposed=False)

add_builtin("tid", (), T.int32, group="launch", differentiable=False,
            doc="index of the current thread; `i, j = wp.tid()` in a 2-d launch")
declare_properties("tid", forward="tid", adjoint="none", kernel_only=True)
add_builtin("block_dim", (), T.int32, group="launch", differentiable=False,
            doc="threads per block of the launch: on the CPU its effective block_dim (above 1 only with "
                "wp.config.enable_cpu_blocks, docs/cpu_blocks.md); 1 on CUDA devices, where a block of "
                "launch_tiled runs as one lane (a launch that would tell is refused)")
declare_properties("block_dim", adjoint="none", kernel_only=True)

# Array element access. `load`/`store`/atomics take the Python line (rendered in) for debug-mode bounds checks.
for _n in range(1, 5):
    _idx = (IDX,) * _n
    _arr = A(AnyType("T"), _n, indexed=True)  # element access takes Warp's indexed arrays too
    add_builtin("load", (_arr,) + _idx, "T", group="array", doc="a[i, ...]")
    add_builtin("store", (_arr,) + _idx + (AnyType("T"),), None, group="array", side_effect=True,
                differentiable=True, doc="a[i, ...] = v")
    for _op in ("add", "sub", "min", "max"):
        add_builtin(f"atomic_{_op}", (_arr,) + _idx + (AnyType("T"),), "T", group="atomic",
                    side_effect=True, differentiable=True,
                    doc=f"atomically {_op} v into a[i, ...]; returns the old value"
                    + ("" if _op in ("add", "sub") else "; the gradient of a[i, ...] goes to each v equal to its "
                       "final value (the winning thread; every tied one), per component, as in Warp; a[i, ...]'s own gradient "
                       "is left as it was"))
    for _op, _what in (("and", "bitwise and"), ("or", "bitwise or"), ("xor", "bitwise xor"),
                       ("exch", "store")):
        add_builtin(f"atomic_{_op}", (_arr,) + _idx + (AnyType("T"),), "T", group="atomic",
                    side_effect=True, differentiable=False,
                    doc=f"atomically {_what} v into a[i, ...]; returns the old value (no gradient)")
    add_builtin("atomic_cas", (_arr,) + _idx + (AnyType("T"), AnyType("T")), "T", group="atomic",
                side_effect=True, differentiable=False, arg_names=("arr",) + ("i", "j", "k", "l")[:_n]
                + ("compare", "value"),
                doc="atomically: if a[i, ...] == compare, store value; returns the old value (no gradient)")
declare_properties("load", forward="index_load", adjoint="index_load", moves_components=True, array_access="read",
                   exposed=False)
declare_properties("store", forward="index_store", adjoint="index_store", moves_components=True,
                   array_access="write", exposed=False)
declare_properties("atomic_add", forward="atomic_add", adjoint="index_accumulate", moves_components=True,
                   array_access="accumulate", kernel_only=True)
declare_properties("atomic_sub", forward="atomic_sub", adjoint="index_accumulate_neg", moves_components=True,
                   array_access="accumulate", kernel_only=True)
for _op in ("min", "max"):
    declare_properties(f"atomic_{_op}", forward=f"atomic_{_op}", adjoint="index_minmax", array_access="accumulate",
                       kernel_only=True)
for _op in ("and", "or", "xor", "exch", "cas"):  # no gradient: refused on a gradient path
    declare_properties(f"atomic_{_op}", forward=f"atomic_{_op}", adjoint="none", array_access="write",
                       kernel_only=True)
add_builtin("lower_bound", (A(N, 1), N), T.int32, group="array", differentiable=False,
            arg_names=("arr", "value"),
            doc="index of the first element of sorted 1-d arr that is >= value (the last index if none)")
add_builtin("lower_bound", (A(N, 1), T.int32, T.int32, N), T.int32, group="array", differentiable=False,
            arg_names=("arr", "arr_begin", "arr_end", "value"),
            doc="index of the first element of sorted arr[arr_begin:arr_end] that is >= value (arr_end - 1 if none)")
add_builtin("fabric_size", (A(indexed=True),), T.uint64, group="array", differentiable=False,
            doc="a.size of a Fabric array (Warp's fabricarray / indexedfabricarray): its number of elements")
declare_properties("fabric_size", adjoint="none", exposed=False)
add_builtin("array_shape", (A(indexed=True), T.int32), T.int32, group="array", differentiable=False, doc="a.shape[k]")
add_builtin("array_truthy", (A(),), T.bool_, group="array", differentiable=False,
            doc="the truth value of an array in `if a:` / `not a` (Warp's): whether it has memory (None has none)")
declare_properties("array_truthy", adjoint="none", exposed=False)
declare_properties("array_shape", forward="array_shape", adjoint="none", exposed=False)
def _view_type(bindings, n):
    """The type of a[i, ...] with n indices fewer than a's dims: an array of the same kind, except for an array
    of fabric arrays (Warp's fabricarrayarray), whose element is a plain 1-d array."""
    indexed, fabric = bindings["__kind"]
    if fabric:
        return ArrayType(bindings["T"], bindings["D"] - n)
    return ArrayType(bindings["T"], bindings["D"] - n, indexed)


# a[i] of a 2-4-d array with fewer indices than dimensions: the sub-array (no copy). Its gradient array is the same
# view of the parent's gradient, taken again in the backward replay (render_adjoint.op_call).
for _n in range(1, 4):
    add_builtin("view", (A(AnyType("T"), "D", indexed=True),) + (IDX,) * _n,
                lambda b, n=_n: _view_type(b, n), group="array", doc="a[i] (a[i, j], ...): the sub-array of the remaining dimensions")

# a[start:stop:step, i, ...] inside a kernel: views of the selected elements (no copy), one dimension at a time;
# bit k of `given` says whether start/stop/step was written. Gradient arrays are viewed the same way on replay.
add_builtin("slice_view", (A(AnyType("T"), "D"), T.int32, S("I1", "int"), S("I2", "int"), S("I3", "int"), T.int32),
            lambda b: ArrayType(b["T"], b["D"]), group="array", differentiable=False,
            arg_names=("a", "dim", "start", "stop", "step", "given"),
            doc="a[..., start:stop:step, ...] along dimension dim (Python's slice rules): a view")
add_builtin("index_view", (A(AnyType("T"), "D"), T.int32, IDX),
            lambda b: ArrayType(b["T"], b["D"] - 1), group="array", differentiable=False,
            arg_names=("a", "dim", "i"),
            doc="a[..., i, ...] inside a slicing subscript: dimension dim dropped at i (negative i counts from the end)")

# wp.zeros(shape=..., dtype=...) inside a kernel: a fixed-size array on the thread's stack (Warp's fixedarray);
# a special form in type inference (typeinfer_fixedarray), which gives the result type and the 4 dims (0: unused)
add_builtin("fixedarray_zeros", (T.int32,) * 4, None, group="array", differentiable=False, template_ret=True,
            doc="wp.zeros(shape, dtype=float) in a kernel: a fixed-size array of zeros")
declare_properties("fixedarray_zeros", adjoint="none", exposed=False)

# wp.cast(a, dtype) in a kernel: the bits of `a` as a `dtype` value (a special form, typeinfer_bitcast, gives the type
# and checks the sizes); no gradient: a use that needs one is refused
add_builtin("bit_cast", (AnyType("A"),), None, group="conversion", differentiable=False, template_ret=True,
            doc="wp.cast(a, dtype): the bits of a read as a value of type dtype (types of one size)")
declare_properties("bit_cast", exposed=False)

# Struct values: field read, functional field update, zero-initialised construction. Rendered specially.
add_builtin("struct_get", (AnyType("S"),), None, group="struct", doc="s.field")
add_builtin("struct_set", (AnyType("S"), AnyType("V")), None, group="struct", doc="s.field = v (new value)")
add_builtin("struct_new", (), None, group="struct", doc="S() with every field zero")
declare_properties("struct_get", forward="field_get", adjoint="field_get", moves_components=True, exposed=False)
declare_properties("struct_set", forward="field_set", adjoint="field_set", moves_components=True, exposed=False)
declare_properties("struct_new", forward="struct_new", adjoint="none", exposed=False)
for _name in ("view", "slice_view", "index_view"):
    declare_properties(_name, adjoint="none", array_view=True)

add_builtin("where", (T.bool_, AnyType("T"), AnyType("T")), "T", group="logic",
            doc="a if cond else b (both evaluated)")
add_builtin("select", (T.bool_, AnyType("T"), AnyType("T")), "T", native="select", group="logic",
            doc="Warp's select(cond, value_if_false, value_if_true)")

add_builtin("stop_gradient", (AnyType("T"),), "T", group="autodiff",
            doc="x, treated as a constant by the adjoint: no gradient flows back through it")
declare_properties("stop_gradient", adjoint="none", stops_gradient=True)
