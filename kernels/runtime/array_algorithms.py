"""Whole-array algorithms of Warp's `wp.utils`: prefix sums, key-value sorts, run-length encoding, sums, inner
products and casts, computed on the host with numpy (arrays on a CUDA device go through a copy).

None of them is recorded on a Tape, as in Warp. Scalar results follow Warp's CPU: scans and sums accumulate in
the array's own precision.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from .array import array

__all__ = ["array_scan", "radix_sort_pairs", "segmented_sort_pairs", "runlength_encode", "array_sum",
           "array_inner", "array_cast"]

_SCAN_SCALARS = (T.int32, T.int64, T.float32, T.float64)


def _host(a) -> np.ndarray:
    """The array's elements as numpy, trailing component axes included (a copy for device arrays)."""
    return np.array(a.numpy(), copy=True)


def _store(a, values: np.ndarray) -> None:
    a.assign(np.ascontiguousarray(values.reshape(a.numpy().shape)))


def _same_device(*arrays, what: str) -> None:
    devices = {str(a.device) for a in arrays if a is not None}
    if len(devices) > 1:
        raise RuntimeError(f"{what} storage devices do not match ({' vs '.join(sorted(devices))})")


def array_scan(in_array, out_array, inclusive: bool = True) -> None:
    """Prefix sum of `in_array` into `out_array` (same dtype and size; vectors component-wise).

    Args:
        in_array: int32, int64, float32 or float64 scalars or vectors of them, any shape (scanned in row-major
            order).
        out_array: the result, same dtype and size.
        inclusive: include each element in its own sum (else the sum of the elements before it).
    """
    _same_device(in_array, out_array, what="In and out array")
    if in_array.size != out_array.size:
        raise RuntimeError(f"In and out array storage sizes do not match ({in_array.size} vs {out_array.size})")
    if not T.types_equal(in_array.dtype, out_array.dtype):
        raise RuntimeError(f"In and out array data types do not match ({T.type_repr(in_array.dtype)} vs "
                           f"{T.type_repr(out_array.dtype)})")
    if in_array.size == 0:
        return
    if T.scalar_type(in_array.dtype) not in _SCAN_SCALARS:
        raise RuntimeError(f"Unsupported data type: {T.type_repr(in_array.dtype)}")
    comps = in_array.dtype._length_ if T.is_composite(in_array.dtype) else 1
    x = _host(in_array).reshape(in_array.size, comps)
    total = np.cumsum(x, axis=0, dtype=x.dtype)
    if not inclusive:
        total = np.concatenate([np.zeros((1, comps), x.dtype), total[:-1]])
    _store(out_array, total)


def _sortable(keys: np.ndarray) -> np.ndarray:
    """Unsigned integers ordered as the keys are (IEEE floats: -0.0 before 0.0; NaN by its bits), as a radix
    sort sees them."""
    if keys.dtype.kind == "f":
        bits = keys.view(np.uint32 if keys.itemsize == 4 else np.uint64)
        top = bits.dtype.type(1) << bits.dtype.type(8 * keys.itemsize - 1)
        return np.where(bits & top, ~bits, bits | top)
    if keys.dtype.kind == "i":
        unsigned = keys.view(np.uint32 if keys.itemsize == 4 else np.uint64)
        return unsigned ^ (unsigned.dtype.type(1) << unsigned.dtype.type(8 * keys.itemsize - 1))
    return keys


_SORT_KEYS = (T.int32, T.uint32, T.float32, T.int64, T.uint64, T.float64)


def radix_sort_pairs(keys, values, count: int, begin_bit: int = 0, end_bit: int | None = None) -> None:
    """Stable sort of keys[:count] with values[:count] moved alongside; both arrays hold at least 2 * count
    elements (the second half is scratch space in Warp). Only key bits [begin_bit, end_bit) are compared."""
    _same_device(keys, values, what="Keys and values array")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Keys and values array storage must be large enough to contain 2*count elements")
    if keys.dtype not in _SORT_KEYS or T.type_size_in_bytes(values.dtype) not in (4, 8):
        raise RuntimeError(f"Unsupported keys and values data types: {T.type_repr(keys.dtype)}, "
                           f"{T.type_repr(values.dtype)}")
    for name, arr in (("keys", keys), ("values", values)):
        if not arr.is_contiguous:
            raise RuntimeError(f"radix_sort_pairs() requires a contiguous {name} array, got non-contiguous {name} "
                               f"with data types: {T.type_repr(keys.dtype)}, {T.type_repr(values.dtype)}")
    width = 8 * T.type_size_in_bytes(keys.dtype)
    end = width if end_bit is None else end_bit
    if not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (begin_bit, end)):
        raise RuntimeError("begin_bit and end_bit must be integers")
    if not 0 <= begin_bit <= end <= width:
        raise RuntimeError(f"Invalid radix sort bit range [{begin_bit}, {end}) for {width}-bit keys")
    k, v = _host(keys), _host(values)
    key = _sortable(k[:count]).astype(np.uint64)
    if end - begin_bit < 64:
        key = (key >> np.uint64(begin_bit)) & np.uint64((1 << (end - begin_bit)) - 1)
    order = np.argsort(key, kind="stable")
    k[:count], v[:count] = k[:count][order], v[:count][order]
    _store(keys, k)
    _store(values, v)


def segmented_sort_pairs(keys, values, count: int, segment_start_indices, segment_end_indices=None) -> None:
    """Stable sort of each segment [start, end) of keys[:count] (int32 or float32), values moved alongside.
    Without `segment_end_indices`, adjacent starts bound the segments (N starts: N - 1 segments)."""
    if not isinstance(count, (int, np.integer)) or isinstance(count, bool):
        raise TypeError("count must be an integer")
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    if count > 2**31 - 1:
        raise ValueError(f"count must not exceed {2**31 - 1}, got {count}")
    arrays = (keys, values, segment_start_indices, segment_end_indices)
    if len({str(a.device) for a in arrays if a is not None}) > 1:
        raise RuntimeError("Keys, values, and segment index array storage devices must match")
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Array storage must be large enough to contain 2*count elements")
    for name, arr in (("keys", keys), ("values", values)):
        if not arr.is_contiguous:
            raise RuntimeError(f"segmented_sort_pairs() requires a contiguous {name} array")
    for name, arr in (("segment_start_indices", segment_start_indices), ("segment_end_indices", segment_end_indices)):
        if arr is None:
            continue
        if arr.dtype is not T.int32:
            raise RuntimeError(f"{name} array must be of type int32")
        if arr.ndim != 1:
            raise RuntimeError(f"{name} must be one-dimensional")
        if not arr.is_contiguous:
            raise RuntimeError(f"segmented_sort_pairs() requires a contiguous {name} array")
    if segment_end_indices is not None and segment_end_indices.size != segment_start_indices.size:
        raise RuntimeError("segment_start_indices and segment_end_indices must have the same size "
                           f"({segment_start_indices.size} vs {segment_end_indices.size})")
    if keys.dtype not in (T.int32, T.float32) or values.dtype is not T.int32:
        raise RuntimeError(f"Unsupported data type: {T.type_repr(keys.dtype)}")
    starts = _host(segment_start_indices).astype(np.int64)
    if segment_end_indices is None:
        starts, ends = starts[:-1], starts[1:]
    else:
        ends = _host(segment_end_indices).astype(np.int64)
    for s, e in zip(starts, ends):
        if not 0 <= s <= e <= count:
            raise ValueError(f"invalid segment [{s}, {e}): segments must satisfy 0 <= start <= end <= {count}")
    k, v = _host(keys), _host(values)
    for s, e in zip(starts, ends):
        order = np.argsort(_sortable(k[s:e]), kind="stable")
        k[s:e], v[s:e] = k[s:e][order], v[s:e][order]
    _store(keys, k)
    _store(values, v)


def runlength_encode(values, run_values, run_lengths, run_count=None, value_count: int | None = None):
    """Runs of equal consecutive int32 values: their values and lengths; returns the number of runs, or writes it
    into `run_count` (an int32 array of one element) and returns that array."""
    _same_device(values, run_values, run_lengths, run_count, what="run_values, run_lengths and values")
    if value_count is None:
        value_count = values.size
    elif value_count < 0:
        raise RuntimeError(f"value_count must be non-negative, got {value_count}")
    if run_values.size < value_count or run_lengths.size < value_count:
        raise RuntimeError(f"Output array storage sizes must be at least equal to value_count ({value_count})")
    if run_values.dtype is not values.dtype:
        raise RuntimeError(f"values and run_values data types do not match ({T.type_repr(values.dtype)} vs "
                           f"{T.type_repr(run_values.dtype)})")
    if run_lengths.dtype is not T.int32:
        raise RuntimeError("run_lengths array must be of type int32")
    if run_count is not None and (run_count.dtype is not T.int32 or run_count.size < 1):
        raise RuntimeError("run_count array must be of type int32")
    if values.dtype is not T.int32:
        raise RuntimeError(f"Unsupported data type: {T.type_repr(values.dtype)}")
    x = _host(values).reshape(-1)[:value_count]
    starts = np.flatnonzero(np.concatenate([[True], x[1:] != x[:-1]])) if value_count else np.zeros(0, np.int64)
    lengths = np.diff(np.append(starts, value_count))
    n = len(starts)
    if n:
        rv, rl = _host(run_values).reshape(-1), _host(run_lengths).reshape(-1)
        rv[:n], rl[:n] = x[starts], lengths
        _store(run_values, rv)
        _store(run_lengths, rl)
    if run_count is None:
        return int(n)
    rc = _host(run_count).reshape(-1)
    rc[0] = n
    _store(run_count, rc)
    return run_count


def _axis(operation: str, axis, ndim: int):
    if axis is None:
        return None
    if axis < -ndim or axis >= ndim:
        raise IndexError(f"{operation}() axis {axis} is out of bounds for an array of {ndim} dimensions")
    return axis % ndim


def _reduce(x: np.ndarray, out, count, axis, dtype, ndim):
    """Sum over the first `count` elements (flattened) or along `axis`, with composite components kept: as Warp,
    a numpy scalar (or component row) without `out` and `axis`, else an array."""
    comps = x.shape[ndim:]
    if axis is None:
        flat = x.reshape((-1,) + comps)[:count]
        total = flat.sum(axis=0, dtype=flat.dtype) if len(flat) else np.zeros(comps, x.dtype)
        total = np.asarray(total, dtype=x.dtype).reshape((1,) + comps)
        if out is None:
            return total[0]
        _store(out, total)
        return out
    part = np.take(x, np.arange(min(count, x.shape[axis])), axis=axis)
    total = part.sum(axis=axis, dtype=x.dtype, keepdims=True)
    if out is None:

        return array(total, dtype=dtype, device="cpu")
    _store(out, total)
    return out


def _check_out(out, like, dtype, axis) -> None:
    """Warp's checks of a reduction's `out` array: device, dtype, shape (1,) or `like`'s with `axis` of size 1."""
    if out is None:
        return
    if str(out.device) != str(like.device):
        raise RuntimeError("out storage device should match values array")
    if not T.types_equal(out.dtype, dtype):
        raise RuntimeError(f"out array should have type {T.type_repr(dtype)}")
    shape = (1,) if axis is None else tuple(1 if i == axis else n for i, n in enumerate(like.shape))
    if tuple(out.shape) != shape:
        raise RuntimeError(f"out array should have shape {shape}")


def array_sum(values, out=None, value_count: int | None = None, axis: int | None = None):
    """Sum of the elements (float32/float64 scalars or vectors of them): a Python float (a vector for vector
    arrays) without `out` and `axis`, else the `out` array (shape 1, or the input's shape with `axis` of size 1)."""
    if T.scalar_type(values.dtype) not in (T.float32, T.float64):
        raise RuntimeError(f"Unsupported data type: {T.type_repr(values.dtype)}")
    axis = _axis("array_sum", axis, values.ndim)
    _check_out(out, values, values.dtype, axis)
    count = value_count if value_count is not None else (values.size if axis is None else values.shape[axis])
    return _reduce(_host(values), out, count, axis, values.dtype, values.ndim)


def array_inner(a, b, out=None, count: int | None = None, axis: int | None = None):
    """Inner product of two arrays of one shape and dtype (vectors: the dot products of their elements, summed):
    a Python float without `out` and `axis`, else the `out` array (as array_sum)."""
    if a.shape != b.shape:
        raise ValueError(f"array_inner() arguments must have the same shape, got {a.shape} and {b.shape}")
    if str(a.device) != str(b.device):
        raise RuntimeError(f"A and b array storage devices do not match ({a.device} vs {b.device})")
    if not T.types_equal(a.dtype, b.dtype):
        raise RuntimeError(f"A and b array data types do not match ({T.type_repr(a.dtype)} vs "
                           f"{T.type_repr(b.dtype)})")
    scalar = T.scalar_type(a.dtype)
    axis = _axis("array_inner", axis, a.ndim)
    _check_out(out, a, scalar, axis)
    if scalar not in (T.float32, T.float64):
        raise RuntimeError(f"Unsupported data type: {T.type_repr(a.dtype)}")
    x, y = _host(a), _host(b)
    prod = x * y
    if prod.ndim > a.ndim:
        comps = a.dtype._length_
        prod = prod.reshape(prod.shape[:a.ndim] + (comps,)).sum(axis=-1, dtype=prod.dtype)
    n = count if count is not None else (a.size if axis is None else a.shape[axis])
    return _reduce(prod, out, n, axis, scalar, a.ndim)


def array_cast(in_array, out_array, count: int | None = None) -> None:
    """Element-wise conversion of `in_array` into `out_array`'s dtype (C-style scalar conversion). Arrays of
    different dimensions or element shapes are converted as flat sequences of scalars (`count` then counts input
    elements, each of its components converted); partial counts need 1-d arrays."""
    if str(in_array.device) != str(out_array.device):
        raise RuntimeError(f"Array storage devices do not match ({in_array.device} vs {out_array.device})")
    shape_in = T.type_shape(in_array.dtype) if T.is_composite(in_array.dtype) else ()
    shape_out = T.type_shape(out_array.dtype) if T.is_composite(out_array.dtype) else ()
    x, y = _host(in_array), _host(out_array)
    ndim, in_shape, out_shape = in_array.ndim, tuple(in_array.shape), tuple(out_array.shape)
    if ndim != out_array.ndim or shape_in != shape_out:
        n_in = int(np.prod(shape_in, dtype=np.int64))
        x, y = x.reshape(-1), y.reshape(-1)
        ndim, in_shape, out_shape = 1, x.shape, y.shape
        if count is not None:
            count *= n_in
    size_in, size_out = int(np.prod(in_shape, dtype=np.int64)), int(np.prod(out_shape, dtype=np.int64))
    if count is None:
        count = size_in
    if ndim > 1 and count < size_in:
        raise RuntimeError("Partial cast is not supported for arrays with more than one dimension")
    if ndim > 1 and in_shape != out_shape:
        raise RuntimeError(f"Array shapes do not match ({in_shape} vs {out_shape})")
    if count > size_in or count > size_out:
        raise RuntimeError(f"Cast count ({count}) exceeds the input size ({size_in}) or output size ({size_out})")
    if ndim == 1:
        y[:count] = x[:count].astype(y.dtype)
    else:
        y[...] = x.astype(y.dtype)
    _store(out_array, y)
