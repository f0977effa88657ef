"""Type inference, calls with wp.ref[T] arguments (see frontend_reference.py): refuse what could alias.

Here a reference argument is written back when the call returns, where Warp updates its storage in place. The
two agree unless the callee can reach the same storage another way: an array element passed by reference while
the call also gets an array (or a struct holding arrays), which may be that array, or two array elements passed
by reference (they may be the same element). Such calls are refused rather than computed differently.
"""

from __future__ import annotations

from ...errors import CompileTypeError
from ...typesys import ArrayType, describe, is_struct


def _holds_arrays(t, depth: int = 0) -> bool:
    if isinstance(t, ArrayType):
        return True
    if is_struct(t) and depth < 8:
        return any(_holds_arrays(ft, depth + 1) for ft in t._wp_struct_.fields.values())
    return False


def _array_rooted(v) -> bool:
    """Whether value `v` was read from an array element (through components and fields)."""
    seen = 0
    while v is not None and v.owner is not None and v.owner.opcode == "call" and v.owner.operands and seen < 64:
        base = v.owner.operands[0]
        if isinstance(base.type, ArrayType):
            return True
        v, seen = base, seen + 1
    return False


class ReferenceForms:
    """Mixed into typeinfer's TypeInference (uses `error`)."""

    def check_reference_update(self, op, name):
        """`x <op>= v` of wp.ref[T] parameter x must give a T (a user-defined operator may give another type): the
        caller's storage keeps its type, as Warp requires."""
        param = next((p for p in self.fn.params if p.name == name), None)
        got = op.results[0].type
        if param is not None and got != param.type:
            raise self.error(f"augmented assignment to ref parameter '{name}' gives {describe(got)}, but the "
                             f"parameter is wp.ref[{describe(param.type)}]", op, CompileTypeError)

    def check_reference_aliasing(self, op, references):
        name = op.attrs["func"].name
        rooted = [i for i in references if i < len(op.operands) and _array_rooted(op.operands[i])]
        if len(rooted) > 1:
            raise self.error(f"arguments {rooted[0] + 1} and {rooted[1] + 1} of '{name}' are wp.ref[T] array "
                             f"elements that may be the same element: here references are written back when the "
                             f"call returns (Warp updates them in place), so pass at most one array element by "
                             f"reference per call", op)
        for r in rooted:
            for i, v in enumerate(op.operands):
                if i != r and _holds_arrays(v.type):
                    raise self.error(f"argument {r + 1} of '{name}' is a wp.ref[T] array element and argument "
                                     f"{i + 1} an array (or holds arrays) that may contain it: here references are "
                                     f"written back when the call returns (Warp updates them in place), so the "
                                     f"callee would read the old value; read the element into a local, pass that, "
                                     f"and store it back", op)

