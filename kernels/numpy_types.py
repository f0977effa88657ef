"""Warp's conversions between kernel scalar types and numpy's (`wp.dtype_from_numpy`, `wp.dtype_to_numpy`)."""

from __future__ import annotations

import numpy as np

from .types import (bool_, canonical_type, float16, float32, float64, int8, int16, int32, int64, is_scalar, uint8,
                    uint16, uint32, uint64)


def dtype_from_numpy(numpy_dtype):
    """The kernel scalar type of a numpy dtype (Warp's `wp.dtype_from_numpy`)."""
    nd = np.dtype(numpy_dtype)
    for t in (float16, float32, float64, int8, uint8, int16, uint16, int32, uint32, int64, uint64, bool_):
        if np.dtype(t._np_) == nd:  # bfloat16 has no numpy dtype of its own
            return t
    raise TypeError(f"no kernel type for numpy dtype {nd}")


def dtype_to_numpy(t):
    """The numpy scalar type of a kernel scalar type (Warp's `wp.dtype_to_numpy`: `np.float32` for float32, the
    storage type `np.uint16` for bfloat16); a TypeError for other types, as in Warp."""
    t = canonical_type(t)
    if not is_scalar(t):
        raise TypeError(f"Cannot convert {t} to a NumPy type")
    return np.dtype(t._np_).type
