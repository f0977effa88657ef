"""Host-side access to composite values (vectors, matrices, quaternions, transforms) with Warp 1.19's API and
errors: assignment of components and slices, matrix rows and columns (`get_row`, `set_row`, `get_col`, `set_col`),
rows given to a matrix constructor, and `from_ptr`. A mixin of `types.Composite` (whose `_data` holds the
components in storage order and `_shape_` the shape); kernels never call these.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .halfbits import bfloat16_bits_to_float32


def _is_number(x) -> bool:
    return isinstance(x, (bool, int, float, np.number)) or type(x).__name__ in _SCALAR_NAMES


_SCALAR_NAMES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
                 "float64", "bfloat16", "bool"}


class CompositeAccess:
    """Warp's Python API of composite values, over `self._data` (components in storage order) and `_shape_`."""

    def _scalar_name(self) -> str:
        return self._wp_scalar_type_.__name__

    def _check_key(self, key) -> None:
        """Warp's KeyErrors for a key that is no index (None, a string), or more indices than a matrix has."""
        if isinstance(key, tuple) and self._category_ == "matrix" and len(key) > 2:
            raise KeyError(f"Invalid key, expected one or two indices, got {len(key)}")
        if key is None or isinstance(key, (str, bytes, float)):
            expected = "int or pair of ints" if self._category_ == "matrix" else "int or slice"
            raise KeyError(f"Invalid key {key}, expected {expected}")

    def _assign(self, key, value) -> None:
        """`self[key] = value` with Warp's errors: a component takes one number, a slice or a matrix row a
        number (every component) or a sequence of numbers of the same size."""
        view = self._data.reshape(self._shape_)
        target = view[key]
        if not isinstance(target, np.ndarray):  # one component
            if not _is_number(value):
                raise TypeError(f"Expected to assign a `{self._scalar_name()}` value but got "
                                f"`{type(value).__name__}` instead")
            values = np.asarray(value)
        elif _is_number(value):
            values = np.asarray(value)
        elif isinstance(value, CompositeAccess):
            values = value._data.reshape(value._shape_)
        else:
            try:
                items = list(value)
            except TypeError:
                raise TypeError(f"Expected to assign a slice from a sequence of values but got "
                                f"`{type(value).__name__}` instead") from None
            for x in items:
                if not _is_number(x) and not (isinstance(x, (list, tuple, np.ndarray, CompositeAccess))
                                              and target.ndim > 1):
                    raise TypeError(f"Expected to assign a slice from a sequence of `{self._scalar_name()}` values "
                                    f"but got `{type(x).__name__}` instead")
            values = np.asarray([np.asarray(x._data if isinstance(x, CompositeAccess) else x) for x in items])
            if values.shape != target.shape:
                raise ValueError("Can only assign sequence of same size")
        # integers wrap like the C++ types (`v[0] = -1` in a uint vector), as the constructors do
        with np.errstate(over="ignore", invalid="ignore"):
            view[key] = values.astype(self._data.dtype)

    def _check_rows(self, args) -> None:
        """A matrix constructed from one sequence per row: each must have one value per column (Warp's TypeError)."""
        if self._category_ != "matrix" or len(args) != self._shape_[0] or len(args) < 2:
            return
        cols = self._shape_[1]
        for row in args:
            if isinstance(row, (list, tuple)) and len(row) != cols:
                raise TypeError(f"Invalid argument in matrix constructor, expected row of length {cols}, "
                                f"got {row}")

    def _line_index(self, i, axis) -> int:
        n = self._shape_[axis]
        if not -n <= i < n:
            raise IndexError("Invalid row index" if axis == 0 else "Invalid column index")
        return i + n if i < 0 else i

    def get_row(self, r):
        """Row r (-rows <= r < rows) as a new vector of the matrix's scalar type."""
        return self[self._line_index(r, 0)]  # a matrix's row is a new vector (Composite.__getitem__)

    def get_col(self, c):
        """Column c (-cols <= c < cols) as a new vector of the matrix's scalar type."""
        return self[:, self._line_index(c, 1)]

    def set_row(self, r, v) -> None:
        """Set row r to v (one number for every element, or one value per column), in place."""
        self._assign(self._line_index(r, 0), v)

    def set_col(self, c, v) -> None:
        """Set column c to v (one number for every element, or one value per row), in place."""
        self._assign((slice(None), self._line_index(c, 1)), v)

    @classmethod
    def from_ptr(cls, ptr):
        """A new value with the native bytes at address `ptr` (float16 components read as stored)."""
        if not ptr:
            raise RuntimeError("NULL pointer exception")
        size = ctypes.sizeof(cls._ctype())
        raw = (ctypes.c_char * size).from_address(ptr).raw
        value = cls()
        storage = np.frombuffer(raw, dtype=np.dtype(cls._wp_scalar_type_._np_))
        if cls._wp_scalar_type_.__name__ == "bfloat16":  # stored as its bits, held as float32 values
            storage = bfloat16_bits_to_float32(storage)
        value._data[...] = storage.astype(value._data.dtype)
        return value
