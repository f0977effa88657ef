"""tile_arange's range at compile time: the bounds as the output type holds them, and the element count.

The native fill computes `start + i * step` at the output element type, so the count is derived from the bounds
rounded to that type (Warp 1.19's rule): a float32 range `(0.0, 3.0000001, 0.99999999)` is `[0, 3)` by 1, three
elements, not the four a double-precision count gives. Integer ranges are counted exactly (ceiling division), so
a range wider than a double's mantissa keeps its last element. Errors carry Warp's wording: a zero or underflowing
step, an empty range, a bound the output type cannot hold, an uncountable range.
"""

from __future__ import annotations

import math

import numpy as np

from ... import halfbits
from ... import types as T
from ...typesys import describe

MAX_POSITIONAL = 3


def _plain(value):
    """The Python number of a bound (`wp.constant(wp.int64(...))` arrives as a scalar value)."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _as_float(value, dtype) -> float:
    """`value` rounded once to the floating-point type `dtype` (an integer straight from its exact value)."""
    if isinstance(value, int):
        # one rounding: through a double first could land on the other side of a tie
        exact = np.int64(value) if value < 0 else np.uint64(value)
        value = float(np.float64(exact) if dtype is T.float64 else np.float32(exact))
    else:
        value = float(value)
    if dtype is T.float16:
        return float(np.float16(value))
    if dtype is T.bfloat16:
        return float(halfbits.round_to_bfloat16(value))
    if dtype is T.float32:
        with np.errstate(over="ignore"):
            return float(np.float32(value))
    return value


def _bound(name: str, value, dtype):
    """A range argument as the output type represents it; ValueError when it cannot."""
    value = _plain(value)
    out_of_range = f"tile_arange() {name}={value} is out of range for the output type {describe(dtype)}"
    if T.is_int(dtype):
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"tile_arange() {name}={value} has a fractional part, which the integer output "
                                 f"type {describe(dtype)} cannot represent")
            value = int(value)
        bits = 8 * np.dtype(dtype._np_).itemsize
        low, high = (0, 2 ** bits - 1) if dtype._kind_ == "uint" else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
        if not low <= value <= high:
            raise ValueError(out_of_range)
        return value
    finite = not isinstance(value, float) or math.isfinite(value)
    try:
        represented = _as_float(value, dtype)
    except OverflowError:
        raise ValueError(f"tile_arange() {name}={value} is too wide to use as an integer bound; write it as a "
                         f"floating-point literal to build a {describe(dtype)} range") from None
    if finite and not math.isfinite(represented):
        raise ValueError(out_of_range)
    return represented


def arange_range(args: list, dtype) -> tuple:
    """(start, step, count) of `tile_arange(*args, dtype=dtype)`, `args` the positional compile-time values.

    Raises TypeError (arity, dtype) or ValueError (bounds) with Warp's messages."""
    if len(args) > MAX_POSITIONAL:
        raise TypeError(f"tile_arange() accepts at most 3 positional arguments, got {len(args)}")
    if not args:
        raise TypeError("tile_arange() requires at least one positional argument specifying the range")
    if not T.is_scalar(dtype) or dtype is T.bool_:
        raise TypeError(f"tile_arange() requires a numeric scalar dtype, but got {describe(dtype)}")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    start, stop, step = (_bound(n, v, dtype) for n, v in (("start", start), ("stop", stop), ("step", step)))
    if step == 0:
        raise ValueError("tile_arange() step cannot be zero")
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        raise ValueError(f"tile_arange() requires a non-empty range, but start={start}, stop={stop}, step={step} "
                         "produces no elements; zero-length tile dimensions are not supported.")
    if T.is_int(dtype):
        count = -((stop - start) // -step)
    else:
        # the quotient too at the output type: (0.0, 0.3, 0.1) in float32 must not count a fourth element
        with np.errstate(over="ignore", divide="ignore"):
            quotient = _as_float((stop - start) / step, dtype)
        if not math.isfinite(quotient):
            raise ValueError(f"tile_arange() start={start}, stop={stop}, step={step} spans more elements than "
                             "can be counted; the step is too small for the range.")
        count = math.ceil(quotient)
    # a nonempty range holds its start even when the quotient rounds to zero
    return start, step, max(1, count)
