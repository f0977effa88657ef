"""One kernel's signature as launch, capture and the Tape see it: its parameters (name, type, kind), the ctypes
struct its arguments are packed into, and which arrays (parameters or struct members, by path) it reads and
writes. Made once per concrete kernel (`Kernel.signature`); what it holds never changes after that."""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter

from .. import types as T
from ..typesys import ArrayType, array_descriptor_type, is_differentiable_type, is_struct


class ParamKind(enum.Enum):
    """How a parameter is packed and whether gradients pass through it."""

    ARRAY = "array"  # an array descriptor; its gradient is an array of the same type
    STRUCT = "struct"  # a @struct by value; its adjoint is a struct of the same type holding gradient arrays
    VALUE = "value"  # a scalar, vector, matrix...: packed by value, no gradient array


@dataclass(frozen=True)
class Param:
    """One kernel parameter: position `index`, `name`, kernel type `type`, `kind`."""

    index: int
    name: str
    type: object
    kind: ParamKind


@dataclass(frozen=True)
class ArrayPath:
    """An array the kernel accesses: `path` ("x", "p.output"), the head parameter's `param` index, the struct
    member names `fields` below it (empty for an array parameter), and whether the kernel `read`s and `written`s it
    (a write includes atomics)."""

    path: str
    param: int
    fields: tuple
    read: bool
    written: bool


@dataclass(frozen=True)
class StructArrays:
    """A struct parameter (`param` index) and the differentiable `paths` of its members the kernel accesses (in
    ArrayPath order, possibly none); `nested`: whether its type has struct members (whose fields can change
    without the outer struct being packed again)."""

    param: int
    paths: tuple
    nested: bool


def pick(indices: tuple):
    """A callable giving the tuple of a sequence's items at `indices` (operator.itemgetter gives a bare item for
    one index, and takes no zero)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if len(indices) == 1:
        i = indices[0]
        return lambda seq: (seq[i],)
    return lambda seq: ()


def ctype_of(t):
    """The ctypes type a parameter of kernel type `t` is packed as."""
    if isinstance(t, ArrayType):
        return array_descriptor_type(t)
    if is_struct(t):
        return t._wp_struct_.ctype()
    if T.is_composite(t):
        return t._ctype()
    return t._ctype_


def _member_type(t, fields):
    for f in fields:
        t = t._wp_struct_.fields[f] if is_struct(t) else None
    return t


class KernelSignature:
    """The signature of a concrete (non-generic) kernel.

    Parameters are known at once; what depends on the typed IR (which arrays the kernel reads and writes) is
    worked out at first use, from `kernel.param_access()`, and kept.

    Tracked arrays: the arrays whose element type has a gradient, as a Tape keeps them per launch in one flat
    list, `tracked` in order: the array parameters' paths (in parameter order), then each struct parameter's
    member paths (in parameter order)."""

    def __init__(self, kernel):
        self._kernel = kernel
        self.name: str = kernel.name
        self.params: tuple = tuple(
            Param(i, n, t, ParamKind.ARRAY if isinstance(t, ArrayType) else
                  ParamKind.STRUCT if is_struct(t) else ParamKind.VALUE)
            for i, (n, t) in enumerate(zip(kernel.arg_names, kernel.arg_types)))
        self.names: tuple = tuple(p.name for p in self.params)
        self.types: tuple = tuple(p.type for p in self.params)
        #: indices of the struct parameters (packed again when a struct's fields change)
        self.struct_params: tuple = tuple(p.index for p in self.params if p.kind is ParamKind.STRUCT)
        #: the array and struct parameters: what an adjoint launch passes gradients for
        self.adjoint_params: tuple = tuple(p for p in self.params if p.kind is not ParamKind.VALUE)

    @cached_property
    def args_ctype(self) -> type:
        """ctypes mirror of the kernel's `<entry>_args` struct."""
        fields = [(p.name, ctype_of(p.type)) for p in self.params]
        return type(f"{self.name}_args", (ctypes.Structure,), {"_fields_": fields})

    # ------------------------------------------------------------------------------------------- array access

    @cached_property
    def access(self) -> tuple:
        """Every array path the kernel reads or writes, as ArrayPaths (in the order the IR names them)."""
        index = {n: i for i, n in enumerate(self.names)}
        out = []
        for path, (read, written) in self._kernel.param_access().items():
            head, *fields = path.split(".")
            out.append(ArrayPath(path, index[head], tuple(fields), bool(read), bool(written)))
        return tuple(out)

    @cached_property
    def tracked(self) -> tuple:
        """The ArrayPaths with a differentiable element type: array parameters first, then struct members, each
        group in parameter order (ties in access order)."""
        paths = [a for a in self.access
                 if isinstance(t := _member_type(self.types[a.param], a.fields), ArrayType)
                 and is_differentiable_type(t.dtype)]
        return tuple(sorted(paths, key=lambda a: (bool(a.fields), a.param)))

    @cached_property
    def tracked_array_params(self) -> tuple:
        """Indices of the array parameters among `tracked` (the first entries of a tracked list)."""
        return tuple(a.param for a in self.tracked if not a.fields)

    @cached_property
    def tracked_structs(self) -> tuple:
        """A StructArrays for every struct parameter, in parameter order (their paths follow the array
        parameters' in a tracked list)."""
        out = []
        for i in self.struct_params:
            fields = self.types[i]._wp_struct_.fields
            out.append(StructArrays(i, tuple(a for a in self.tracked if a.fields and a.param == i),
                                    any(is_struct(ft) for ft in fields.values())))
        return tuple(out)

    @cached_property
    def tracked_reads(self) -> tuple:
        """Positions in `tracked` of the arrays the kernel reads."""
        return tuple(i for i, a in enumerate(self.tracked) if a.read)

    @cached_property
    def tracked_writes(self) -> tuple:
        """Positions in `tracked` of the arrays the kernel writes."""
        return tuple(i for i, a in enumerate(self.tracked) if a.written)

    @cached_property
    def pick_tracked_reads(self):
        """Callable: a tracked list -> the tuple of its entries the kernel reads."""
        return pick(self.tracked_reads)

    @cached_property
    def pick_tracked_writes(self):
        """Callable: a tracked list -> the tuple of its entries the kernel writes."""
        return pick(self.tracked_writes)

    @cached_property
    def written_array_params(self) -> tuple:
        """The array parameters (not struct members, any element type) the kernel writes, as Params."""
        access = {a.path: a for a in self.access if not a.fields}
        return tuple(p for p in self.params if p.kind is ParamKind.ARRAY and p.name in access
                     and access[p.name].written)

    @cached_property
    def pick_written_array_params(self):
        """Callable: launch values (in parameter order) -> the tuple of the written array parameters' values."""
        return pick(tuple(p.index for p in self.written_array_params))

    @cached_property
    def pick_read_array_params(self):
        """Callable: launch values -> the tuple of the values of the array parameters the kernel reads."""
        access = {a.path: a for a in self.access if not a.fields}
        return pick(tuple(p.index for p in self.params if p.kind is ParamKind.ARRAY and p.name in access
                          and access[p.name].read))
