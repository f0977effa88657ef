"""`wp.indexedarray`: Warp's arrays read through index arrays, which kernels does not provide.

The names exist so that a Warp module that only mentions them (a struct field annotated `wp.indexedarray[float]`)
still imports: the struct is refused when it is used, and making an indexed array raises at once, each with a
line saying what to do instead. Nothing here computes anything.
"""

from __future__ import annotations

_WHY = ("wp.indexedarray (an array read through index arrays) is not supported by kernels; gather the elements "
        "into a new array (array[indices] on the host, or a kernel reading a[idx[i]])")


class _IndexedArrayType:
    """The type `wp.indexedarray[dtype]` names: refused where a kernel or struct would use it."""

    _unsupported_ = _WHY

    def __init__(self, dtype, ndim):
        self.dtype, self.ndim = dtype, ndim

    def __repr__(self):
        return f"indexedarray(dtype={self.dtype!r}, ndim={self.ndim})"


def _indexed_type(ndim):
    class indexedarray:  # noqa: N801  (Warp's name)
        def __class_getitem__(cls, dtype):
            return _IndexedArrayType(dtype, ndim)

        def __new__(cls, *args, **kwargs):
            raise TypeError(_WHY)

    indexedarray.__qualname__ = indexedarray.__name__ = "indexedarray" if ndim == 1 else f"indexedarray{ndim}d"
    return indexedarray


indexedarray = _indexed_type(1)
indexedarray1d = indexedarray
indexedarray2d = _indexed_type(2)
indexedarray3d = _indexed_type(3)
indexedarray4d = _indexed_type(4)
