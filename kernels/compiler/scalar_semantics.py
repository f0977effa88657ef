"""Warp's scalar semantics where the compiler computes them itself: the one home of C division and remainder,
of arithmetic on compile-time numbers and of the conversions that mixed comparisons make.

A Python literal in a Warp kernel is an `int32` (an `int64` when it does not fit) or a `float32`, so folding
`7 / 2` must give 3, `-7 % 3` -1, `-7.5 % 2.0` -1.5 and `0.1 + 0.2` the float32 sum, as the native code would.
Used by the frontend (expressions of literals and `wp.constant`s) and by constant folding (typed constants).
"""

from __future__ import annotations

import operator

import numpy as np
from .. import types as T

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class ScalarSemanticsError(ValueError):
    """An operation on compile-time numbers with no value (integer division by zero, a negative shift, a bit
    operation on a float); the frontend reports it as a CompileError at the expression."""


def c_div(a: int, b: int) -> int:
    """C's integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    """C's integer remainder: takes the sign of the dividend."""
    return a - c_div(a, b) * b


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) or isinstance(x, bool)


def _wrap_int32(r: int, a: int, b: int) -> int:
    """Operands that are int32 literals give an int32 result, wrapped as the native code would."""
    if INT32_MIN <= a <= INT32_MAX and INT32_MIN <= b <= INT32_MAX:
        return (r - INT32_MIN) % 2**32 + INT32_MIN
    if not INT64_MIN <= r <= INT64_MAX:
        raise ScalarSemanticsError(f"the integer result {r} does not fit in 64 bits")
    return r


_INT_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": c_div, "floordiv": operator.floordiv,
            "mod": c_mod, "bit_and": operator.and_, "bit_or": operator.or_, "bit_xor": operator.xor,
            "lshift": operator.lshift, "rshift": operator.rshift, "pow": operator.pow}


def _int_op(name: str, a: int, b: int) -> int:
    if name in ("div", "floordiv", "mod") and b == 0:
        raise ScalarSemanticsError("integer division by zero")
    if name in ("lshift", "rshift") and not 0 <= b < 64:
        raise ScalarSemanticsError(f"shift count {b} is negative or not smaller than the width")
    if name == "pow" and b < 0:
        raise ScalarSemanticsError("an integer raised to a negative power is not an integer; use floats")
    if name == "pow" and abs(a) > 1 and b > 64:
        raise ScalarSemanticsError(f"the integer result of {a} ** {b} does not fit in 64 bits")
    r = _INT_OPS[name](a, b)
    if name == "pow":  # Warp has no integer power: the exact value, when it fits
        if not INT64_MIN <= r <= INT64_MAX:
            raise ScalarSemanticsError(f"the integer result of {a} ** {b} does not fit in 64 bits")
        return r
    return _wrap_int32(r, a, b)


_FLOAT_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
              "floordiv": lambda x, y: np.floor(x / y), "mod": np.fmod, "pow": np.power}


def _float_op(name: str, a: float, b: float) -> float:
    if name not in _FLOAT_OPS:
        raise ScalarSemanticsError(f"'{name}' is not defined for floats")
    with np.errstate(all="ignore"):  # inf and nan are values, as in the native code
        return float(_FLOAT_OPS[name](np.float32(a), np.float32(b)))


def fold_binary(name: str, a, b):
    """`a <name> b` for Python numbers with Warp's semantics: ints as int32 (int64 beyond), floats as float32
    (an int mixed with a float is converted to float32, where Warp would refuse the mix). Raises
    ScalarSemanticsError when the operation has no value."""
    if _is_int(a) and _is_int(b):
        return _int_op(name, int(a), int(b))
    return _float_op(name, float(a), float(b))


def fold_compare(name: str, a, b) -> bool:
    """A comparison of Python numbers as C compares an int32 or float32 literal: a float on either side makes
    it a float32 comparison."""
    if not (_is_int(a) and _is_int(b)):
        a, b = np.float32(a), np.float32(b)
    return bool({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[name])



def wrap_int(value: int, bits: int, signed: bool) -> int:
    """`value` converted to an integer type of `bits` bits, modulo 2**bits as C converts."""
    value %= 2**bits
    return value - 2**bits if signed and value >= 2 ** (bits - 1) else value


def comparison_type(a, b):
    """The type C compares two scalars in (the usual arithmetic conversions), as Warp's comparison operators do:
    the wider float if either is a float (float32 for a 16-bit float mixed with another type); otherwise both
    promoted to at least 32 bits, then the wider, the unsigned one at equal width."""

    if a is b and a is not T.bool_:
        return a
    if T.is_float(a) or T.is_float(b):
        floats = [t for t in (a, b) if T.is_float(t)]
        widest = max(floats, key=T.type_size_in_bytes)
        return widest if T.type_size_in_bytes(widest) >= 4 else T.float32

    def promoted(t):
        return T.int32 if t is T.bool_ or np.dtype(t._np_).itemsize < 4 else t

    a, b = promoted(a), promoted(b)
    if a is b:
        return a
    size_a, size_b = np.dtype(a._np_).itemsize, np.dtype(b._np_).itemsize
    if size_a != size_b:
        return a if size_a > size_b else b
    return a if np.dtype(a._np_).kind == "u" else b
