"""Scalar math builtins: trigonometry, exponentials, rounding, min/max/clamp, interpolation, classification.

Names, argument orders and semantics follow Warp 1.19's "Scalar Math" group (plus `lerp` and `smoothstep` from its
"Utility" group). Native code: kernels/native/scalar_math.h. Float overloads cover float16/float32/float64 (float16
computes in float32); abs, sign, step, min, max and clamp also take integers, where they have no derivative.

Gradient choices where the derivative is infinite or undefined (Warp would produce inf/nan or nothing):
    sqrt, cbrt at 0 and asin, acos at |x| >= 1 (where the input is clamped) contribute 0.
    pow(x, y) contributes 0 to dy where x <= 0 and 0 to dx where y == 0.
    floor, ceil, round, rint, trunc, sign, step contribute 0; frac contributes 1 (Warp: 0).
    min/max pass the gradient to the operand returned (b on ties); clamp to x strictly inside [low, high], else to
    the bound returned. abs uses sign(x), so d|x|/dx = 1 at 0.
"""

from __future__ import annotations

from .. import types as T
from .registry import M, Q, S, V, add_builtin

F = S("T", "float")
I = S("T", "int")
GROUP = "scalar_math"


def _float(name, nargs, doc, *, arg_names=None, differentiable=True, ret="T"):
    add_builtin(name, (F,) * nargs, ret, group=GROUP, doc=doc, arg_names=arg_names or ("x", "y", "z")[:nargs],
                differentiable=differentiable)


def _int(name, nargs, doc, *, arg_names=None):
    add_builtin(name, (I,) * nargs, "T", group=GROUP, doc=doc, arg_names=arg_names or ("x", "y", "z")[:nargs],
                differentiable=False)


for _name, _doc in (
    ("sin", "sine of x [rad]"),
    ("cos", "cosine of x [rad]"),
    ("tan", "tangent of x [rad]"),
    ("asin", "arcsine of x [rad]; x is clamped to [-1, 1]"),
    ("acos", "arccosine of x [rad]; x is clamped to [-1, 1]"),
    ("atan", "arctangent of x [rad]"),
    ("sinh", "hyperbolic sine of x"),
    ("cosh", "hyperbolic cosine of x"),
    ("tanh", "hyperbolic tangent of x"),
    ("exp", "e raised to the power x"),
    ("log", "natural logarithm of x > 0"),
    ("log2", "base-2 logarithm of x > 0"),
    ("log10", "base-10 logarithm of x > 0"),
    ("sqrt", "square root of x >= 0 (gradient 0 at x = 0)"),
    ("cbrt", "cube root of x (gradient 0 at x = 0)"),
    ("floor", "largest integer <= x"),
    ("ceil", "smallest integer >= x"),
    ("round", "nearest integer to x, halfway cases away from zero (C's round)"),
    ("rint", "nearest integer to x, halfway cases to even (numpy.rint)"),
    ("trunc", "x with its fractional part discarded (rounds toward zero)"),
    ("frac", "fractional part of x: x - trunc(x)"),
    ("degrees", "x converted from radians to degrees"),
    ("radians", "x converted from degrees to radians"),
    ("erf", "error function of x"),
    ("erfc", "complementary error function of x: 1 - erf(x)"),
    ("erfinv", "inverse error function of x in [-1, 1]"),
    ("erfcinv", "inverse complementary error function of x in [0, 2]"),
):
    _float(_name, 1, _doc)

_float("atan2", 2, "two-argument arctangent of the point (x, y) [rad], in [-pi, pi]; note the (y, x) order",
       arg_names=("y", "x"))
_float("pow", 2, "x raised to the power y", arg_names=("x", "y"))
_float("copysign", 2, "magnitude of x with the sign of y", arg_names=("x", "y"))

_float("abs", 1, "absolute value of x")
_int("abs", 1, "absolute value of x")
_float("sign", 1, "-1 if x < 0 else 1 (so sign(0) = 1)")
_int("sign", 1, "-1 if x < 0 else 1 (so sign(0) = 1)")
_float("step", 1, "1 if x < 0 else 0")
_int("step", 1, "1 if x < 0 else 0")

_float("min", 2, "smaller of a and b; a NaN operand is ignored unless both are NaN (C fmin)", arg_names=("a", "b"))
_int("min", 2, "smaller of a and b", arg_names=("a", "b"))
_float("max", 2, "larger of a and b; a NaN operand is ignored unless both are NaN (C fmax)", arg_names=("a", "b"))
_int("max", 2, "larger of a and b", arg_names=("a", "b"))
_float("clamp", 3, "x limited to [low, high]: min(max(low, x), high)", arg_names=("x", "low", "high"))
_int("clamp", 3, "x limited to [low, high]: min(max(low, x), high)", arg_names=("x", "low", "high"))

for _name, _doc in (("isfinite", "True if a is neither infinite nor NaN"), ("isnan", "True if a is NaN"),
                    ("isinf", "True if a is +inf or -inf")):
    _float(_name, 1, _doc, arg_names=("a",), differentiable=False, ret=T.bool_)
    # Warp 1.19's composite overloads (native/classify.h): isfinite asks it of every component, isnan and isinf of any
    _which = "every" if _name == "isfinite" else "some"
    for _pattern in (V("N", F), Q(F), M("R", "C", F)):
        add_builtin(_name, (_pattern,), T.bool_, group=GROUP, arg_names=("a",), differentiable=False,
                    doc=f"True if {_which} component of a is: {_doc[8:]}")

add_builtin("bit_count", (I,), T.int32, group=GROUP, arg_names=("x",), differentiable=False,
            doc="number of set bits of x (two's complement for signed types)")

_float("lerp", 3, "linear interpolation a (1 - t) + b t", arg_names=("a", "b", "t"))
_float("smoothstep", 3, "cubic Hermite step from 0 at x <= a to 1 at x >= b", arg_names=("a", "b", "x"))
