"""bfloat16 bit patterns on the host: numpy has no bfloat16 dtype, so arrays and arguments hold its 16 bits as uint16.

bfloat16 is the upper half of an IEEE float32 (1 sign, 8 exponent, 7 mantissa bits). Converting from float32
rounds to nearest, ties to even, as Warp and the native `wp::bfloat16` (kernels/native/core.h) do; NaNs stay NaN
(a quiet bit is forced, because truncating a signalling NaN's low mantissa bits would leave an infinity).
"""

from __future__ import annotations

import numpy as np

_QUIET_BIT = np.uint32(0x0040_0000)


def float32_to_bfloat16_bits(values) -> np.ndarray:
    """uint16 bit patterns of `values` (any shape, converted to float32 first) rounded to bfloat16."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32)
    nan = np.isnan(f)
    # ties to even: add 0x7fff plus the lowest kept bit, then truncate (cannot overflow a finite value past inf)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (np.where(nan, bits | _QUIET_BIT, rounded) >> np.uint32(16)).astype(np.uint16).reshape(f.shape)


def bfloat16_bits_to_float32(bits) -> np.ndarray:
    """float32 values of uint16 bfloat16 bit patterns (exact: every bfloat16 is a float32)."""
    b = np.asarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).reshape(b.shape)


def round_to_bfloat16(values) -> np.ndarray:
    """`values` as float32, rounded to the nearest bfloat16."""
    return bfloat16_bits_to_float32(float32_to_bfloat16_bits(values))
