"""Warp's `wp.config.verify_autograd_array_access`: arrays read by taped launches and copies are marked, and a later
write to a marked array prints a warning naming the writer and the user's line (see `kernels.array.mark_write`).

The marks live on the arrays (shared by every tape, as in Warp): `Tape.backward()` and `Tape.reset()` clear the
marks of the arrays their records touch, views' parents included, so a training loop with a fresh tape per
iteration reports nothing. This is a coarse, per-array check between launches; reads and writes of one element
inside one kernel are checked exactly by the compiler when a gradient is asked for (kernels/compiler/passes/inplace.py).
"""

from __future__ import annotations

import os
import sys

import kernels as wp
from kernels.tape_interface import signature

_INTERNAL = tuple(os.path.dirname(m.__file__) + os.sep for m in (wp, sys.modules[__package__]))


def caller_location() -> tuple:
    """(file, line) of the innermost frame outside the toolkit: where the user launched or copied."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_INTERNAL) and f"{os.sep}warp_shim{os.sep}" not in name:
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None


def _path_value(values: list, access):
    """The toolkit array at ArrayPath `access` among launch `values` (in parameter order), or None."""
    obj = values[access.param]
    for f in access.fields:
        obj = getattr(obj, f, None) if obj is not None else None
    return obj if isinstance(obj, wp.array) else None


def mark_launch(kernel, inputs, outputs):
    """Report writes to arrays read earlier, then mark the arrays this launch reads (also those it writes too:
    a later overwrite spoils the gradient through this launch's reads all the same)."""
    values = list(inputs) + list(outputs)
    access = [(path, _path_value(values, path)) for path in signature(kernel).access]
    filename, lineno = None, None
    for path, a in access:
        if a is not None and path.written and a._is_read:
            if filename is None:
                filename, lineno = caller_location()
            a.mark_write(arg_name=path.path, kernel_name=kernel.name, filename=filename, lineno=lineno)
    for path, a in access:
        if a is not None and path.read:
            a.mark_read()


def mark_copy(dest, src):
    if dest._is_read:
        filename, lineno = caller_location()
        dest.mark_write(operation="an array copy", filename=filename, lineno=lineno)
    src.mark_read()


def clear(arrays):
    """Forget the reads of `arrays` and of the arrays they are views of."""
    for a in arrays:
        a.mark_init()
        for parent in a._parents():
            parent.mark_init()


def recorded_arrays(records) -> list:
    """Every toolkit array a list of tape records reads or writes (struct members included)."""
    out = []
    for rec in records:
        kernel = getattr(rec, "kernel", None)
        if kernel is not None:
            values = list(rec.inputs) + list(rec.outputs)
            out.extend(a for a in (_path_value(values, p) for p in signature(kernel).access) if a is not None)
        elif hasattr(rec, "dest"):
            out.extend((rec.dest, rec.src))
    return out
