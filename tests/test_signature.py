"""The signature object of a kernel (kernels/runtime/signature.py): parameter kinds, the packed layout, and which arrays
(parameters and struct members, by path) the kernel reads and writes, as launch, capture and the Tape see them."""

import ctypes

import kernels as wp
from kernels.tape_interface import ParamKind, signature


@wp.struct
class Body:
    x: wp.array(dtype=float)
    ids: wp.array(dtype=int)
    out: wp.array(dtype=float)
    scale: float


@wp.kernel
def step(a: wp.array(dtype=float), b: Body, n: int, flags: wp.array(dtype=int), c: wp.array(dtype=float)):
    i = wp.tid()
    k = b.ids[i] + flags[i]
    b.out[i] = b.x[k] * b.scale + a[i]
    c[i] = a[i] * float(n)


def test_parameters_and_layout():
    sig = signature(step)
    assert sig is signature(step)  # made once per kernel
    assert sig.names == ("a", "b", "n", "flags", "c")
    assert [p.kind for p in sig.params] == [ParamKind.ARRAY, ParamKind.STRUCT, ParamKind.VALUE, ParamKind.ARRAY,
                                            ParamKind.ARRAY]
    assert sig.struct_params == (1,)
    assert [p.name for p in sig.adjoint_params] == ["a", "b", "flags", "c"]
    assert issubclass(sig.args_ctype, ctypes.Structure)
    assert [name for name, _ in sig.args_ctype._fields_] == list(sig.names)


def test_arrays_read_and_written_by_path():
    sig = signature(step)
    access = {a.path: (a.read, a.written) for a in sig.access}
    assert access == {"a": (True, False), "b.x": (True, False), "b.ids": (True, False), "b.out": (False, True),
                      "flags": (True, False), "c": (False, True)}
    # tracked: arrays with gradients only (not the int arrays), array parameters first, then struct members
    assert [a.path for a in sig.tracked] == ["a", "c", "b.x", "b.out"]
    assert sig.tracked_array_params == (0, 4)
    assert [(s.param, [a.path for a in s.paths], s.nested) for s in sig.tracked_structs] == \
        [(1, ["b.x", "b.out"], False)]
    assert sig.tracked_reads == (0, 2) and sig.tracked_writes == (1, 3)
    values = ["A", "B", 3, "F", "C"]
    assert sig.pick_written_array_params(values) == ("C",)
    assert sig.pick_read_array_params(values) == ("A", "F")
    assert sig.pick_tracked_writes(["a", "c", "bx", "bout"]) == ("c", "bout")
