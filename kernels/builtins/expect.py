"""In-kernel checks (Warp's "Utility" group): `expect_eq`, `expect_neq`, `expect_near`.

A failed check prints a report to stdout ("Error, expect_eq() failed: ...") and the kernel goes on, as in Warp.
Native code: kernels/native/expect.h. Like printing, a check yields nothing, so it is declared differentiable with
an empty adjoint (a kernel may check values that carry gradients) and is a side effect (not run again by the
backward pass).
"""

from __future__ import annotations

from .registry import M, Q, S, V, X, add_builtin

_ANY = S("T", "any")
_FLOAT = S("T", "float")

for _t in (_ANY, V("N", _ANY), M("R", "C", _ANY), Q(), X()):
    add_builtin("expect_eq", (_t, _t), None, group="utility", side_effect=True, arg_names=("a", "b"),
                doc="print an error to stdout if a != b")
    add_builtin("expect_neq", (_t, _t), None, group="utility", side_effect=True, arg_names=("a", "b"),
                doc="print an error to stdout if a == b")
for _t in (_FLOAT, V("N", _FLOAT), M("R", "C", _FLOAT), Q()):
    add_builtin("expect_near", (_t, _t, _FLOAT), None, group="utility", side_effect=True,
                arg_names=("a", "b", "tolerance"), defaults={"tolerance": 1.0e-6},
                doc="print an error to stdout if a and b differ by more than tolerance (largest component)")
