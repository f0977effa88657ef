"""`wp.indexedarray`: a strided array read through optional int32 index arrays, one per dimension (Warp's).

`indexedarray(data, [I, None, J])` has shape (len(I), data.shape[1], len(J)); its element (i, j, k) is
data[I[i], j, J[k]]. No element is copied: kernels read and write the parent's memory through the indices
(native/indexedarray.h), and `a[idx]` of an array with an index array makes one (array.__getitem__).

Gradients: the gradient of an indexed array is the same indexing of its parent's gradient (`.grad`), so a kernel's
adjoint adds into the parent elements the indices select (an index repeated adds twice, atomically). The Tape
follows the parent array. Warp 1.19 gives no gradient here (its adjoint through indexed arrays is empty).
"""

from __future__ import annotations

import typing

import numpy as np

from .. import types as T
from ..typesys import ArrayType, ArrayValue, IndexedArrayDescriptor
from .array_copy import copy_hooks, element_copy, index_view


def _annotation(ndim: int, params) -> ArrayType:
    """`wp.indexedarray[dtype]` / `wp.indexedarray[dtype, Literal[ndim]]` as a kernel type."""
    if isinstance(params, tuple):
        dtype, ndim = params
        if typing.get_origin(ndim) is typing.Literal:
            (ndim,) = typing.get_args(ndim)
    else:
        dtype = params
    if not isinstance(ndim, int) or not 1 <= ndim <= 4:
        raise TypeError(f"wp.indexedarray[...]: ndim must be 1 to 4, got {ndim!r}")
    return ArrayType(T.Any if dtype is typing.Any or dtype is T.Any else T.canonical_type(dtype), ndim, True)


def _check_index_array(indices, device):
    """Warp's checks of one index array (its wording)."""
    from .array import array

    if not isinstance(indices, array):
        raise ValueError(f"Indices must be a Warp array, got {type(indices)}")
    if indices.ndim != 1:
        raise ValueError(f"Index array must be one-dimensional, got {indices.ndim}")
    if indices.dtype is not T.int32:
        raise ValueError(f"Index array must use int32, got dtype {indices.dtype}")
    if indices.device != device:
        raise ValueError(f"Index array device ({indices.device} does not match data array device ({device}))")


class indexedarray(ArrayValue):  # noqa: N801  (Warp's name)
    """Warp's `wp.indexedarray(data, indices)`: see the module docstring.

    Args:
        data: the parent `wp.array` (1-4 dims); None gives the annotation form `wp.indexedarray(dtype=float)`.
        indices: one int32 index array (for dimension 0) or a list of up to ndim of them, None where a dimension
            is taken whole.
        dtype, ndim: checked against `data` when given; the annotation's element type and dims without data.
    """

    _wp_indexed_ = True
    is_contiguous = False

    def __class_getitem__(cls, params):
        return _annotation(1, params)

    def __init__(self, data=None, indices=None, dtype=None, ndim=None):
        from .array import array

        if dtype is not None:
            dtype = T.canonical_type(dtype)
        self.data = data
        self.indices = [None] * 4
        if data is None:
            self.dtype, self.ndim, self.device = dtype, ndim or 1, None
            self.shape = (0,) * self.ndim
            self.size = 0
            return
        if not isinstance(data, array):
            raise ValueError("Indexed array data must be a Warp array")
        if dtype is not None and dtype != data.dtype:
            raise ValueError(f"Requested dtype ({dtype}) does not match dtype of data array ({data.dtype})")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(f"Requested dimensionality ({ndim}) does not match dimensionality of data array "
                             f"({data.ndim})")
        self.dtype, self.ndim, self.device = data.dtype, data.ndim, data.device
        shape = list(data.shape)
        if isinstance(indices, (list, tuple)):
            if len(indices) > self.ndim:
                raise ValueError(f"Number of indices provided ({len(indices)}) exceeds number of dimensions "
                                 f"({self.ndim})")
            for d, idx in enumerate(indices):
                if idx is not None:
                    _check_index_array(idx, data.device)
                    self.indices[d] = idx
                    shape[d] = idx.shape[0]
        elif isinstance(indices, array):
            _check_index_array(indices, data.device)
            self.indices[0] = indices
            shape[0] = indices.shape[0]
        elif indices is not None:
            raise ValueError("Indices must be a single Warp array or a list of Warp arrays")
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape))

    # ------------------------------------------------------------------------------------------------ kernel type

    @property
    def type(self) -> ArrayType:
        return ArrayType(self.dtype, self.ndim, True)

    @property
    def requires_grad(self) -> bool:
        return self.data is not None and self.data.requires_grad

    @property
    def grad(self):
        """The same indexing of the parent's gradient array (None when the parent has none)."""
        g = None if self.data is None else self.data.grad
        return None if g is None else indexedarray(g, self.indices[:self.ndim])

    def __ctype__(self) -> IndexedArrayDescriptor:
        return self._descriptor()

    def _descriptor(self, consume: bool = False) -> IndexedArrayDescriptor:
        """The native `wp::indexedarray_t` (`consume`: the parent's descriptor with the consume flag, for a
        gradient that plain writes take, as launch.pack_adjoint_args does for plain arrays)."""
        d = IndexedArrayDescriptor()
        if self.data is None:
            return d
        d.data = self.data._own_grad_descriptor(False) if consume else self.data._descriptor()
        for k in range(self.ndim):
            idx = self.indices[k]
            d.indices[k] = (idx._descriptor().data or None) if idx is not None else None
            d.shape[k] = self.shape[k]
        return d

    # ------------------------------------------------------------------------------------------------ host side

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        return self.data is not None

    def _grid(self):
        """numpy index tuple selecting this array's elements of the parent's numpy form (element components
        trailing)."""
        axes = [self.indices[d].numpy().astype(np.intp) if self.indices[d] is not None
                else np.arange(self.shape[d]) for d in range(self.ndim)]
        return np.ix_(*axes)

    def numpy(self) -> np.ndarray:
        """A contiguous copy of the selected elements (vectors add trailing dimensions)."""
        return np.ascontiguousarray(self.data.numpy()[self._grid()])

    def list(self):
        from .array import array

        return array(self.numpy(), dtype=self.dtype).list()

    def contiguous(self):
        """A new contiguous `wp.array` holding the selected elements."""
        from .array import array

        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def to(self, device):
        from .device import get_device

        device = get_device(device)
        return self if device == self.device else self.contiguous().to(device)

    def _scatter(self, values: np.ndarray):
        """Write `values` (this array's numpy form) into the parent's selected elements."""
        if self.size == 0:
            return
        parent = self.data
        if parent.is_cuda:
            host = parent.numpy()
            host[self._grid()] = values
            parent.assign(host)
        else:
            parent.numpy()[self._grid()] = values

    def assign(self, src):
        from .array import array

        if isinstance(src, (array, indexedarray)):
            values = src.numpy()
        else:
            values = array(src, dtype=self.dtype, device="cpu").numpy()
        self._scatter(np.broadcast_to(values, self.numpy().shape))

    def fill_(self, value):
        from .array_create import full

        if self.size == 0:
            return
        try:
            filled = full(self.shape, value, dtype=self.dtype, device="cpu")
        except Exception as e:  # noqa: BLE001  Warp's one error for any value the dtype cannot take
            raise ValueError(f"Failed to convert the value to the array data type: {e}") from e
        self._scatter(filled.numpy())

    def zero_(self):
        if self.size:
            self._scatter(np.zeros_like(self.numpy()))

    def __str__(self):
        return f"indexedarray{self.dtype}" if self.device is None else str(self.numpy())

    def __repr__(self):
        if self.data is None:
            return f"indexedarray(dtype={T.type_repr(self.dtype)}, ndim={self.ndim})"
        return f"indexedarray(shape={self.shape}, dtype={T.type_repr(self.dtype)}, device={self.device})"


def _fixed(ndim: int):
    def make(*args, **kwargs):
        kwargs["ndim"] = ndim
        return indexedarray(*args, **kwargs)

    make.__name__ = make.__qualname__ = f"indexedarray{ndim}d"
    make.__doc__ = f"Create or annotate a {ndim}-dimensional wp.indexedarray."
    return make


indexedarray1d = _fixed(1)
indexedarray2d = _fixed(2)
indexedarray3d = _fixed(3)
indexedarray4d = _fixed(4)


def is_indexed(value) -> bool:
    return getattr(value, "_wp_indexed_", False)


def copy_indexed(dest, src, dest_offset: int = 0, src_offset: int = 0, count: int = 0):
    """`wp.copy` where either side is an indexed array: the same shape and dtype, element by element (Warp
    refuses offsets and partial counts here, in these words)."""
    count = count or src.size
    if src_offset != 0 or dest_offset != 0 or count != src.size or count != dest.size:
        raise RuntimeError("dest_offset, src_offset, and count are not supported when copying to/from "
                           "non-contiguous indexed or Fabric arrays")
    if dest.shape != src.shape:
        raise RuntimeError(f"Incompatible array shapes for copy: {dest.shape} and {src.shape}")
    if copy_hooks and (src.requires_grad or dest.requires_grad):
        # a Tape is recording: it follows copies between plain arrays only, and a gradient must not stop here
        raise RuntimeError("wp.copy to or from an indexed array is not recorded by the Tape, so no gradient "
                           "would flow through it: gather the elements in a kernel (out[i] = a[i]) instead")
    if dest.size == 0:
        return
    values = src.numpy()
    if hasattr(dest, "_scatter"):  # an indexed or Fabric array
        dest._scatter(values)
    else:
        dest.assign(values)


def index_array_view(parent, key: tuple):
    """`parent[key]` where some entries of `key` are index arrays: the parent viewed by the ints and slices
    (index arrays taken whole), then indexed along the dimensions that kept an index array (Warp's rule)."""
    from .array import array

    view_key, positions, kept = [], {}, 0
    for k in key:
        if isinstance(k, array):
            positions[kept] = k
            view_key.append(slice(None))
            kept += 1
        else:
            view_key.append(k)
            kept += 0 if isinstance(k, (int, np.integer)) else 1
    view = parent[tuple(view_key)] if any(not (isinstance(k, slice) and k == slice(None)) for k in view_key) \
        else parent
    return indexedarray(view, [positions.get(d) for d in range(view.ndim)])


element_copy.append(copy_indexed)
index_view.append(index_array_view)
