"""`Tape`: records kernel launches and replays their adjoints in reverse to compute gradients.

Arrays that are not toolkit arrays (numpy arrays, torch tensors, anything passed through `__array_interface__` or
DLPack) are constants for differentiation: backward passes no gradient array for them, so their memory is never
written. Arrays inside structs are looked up when backward runs, so gradients reach them whether `requires_grad`
was set before or after the array was put into the struct.

Gradient buffers: `requires_grad=True` gives an array a zeroed `.grad` at once; `backward(grads={a: g})` gives
`a` one if it has none. Every gradient is retained (there is no separate `retain_grad`): after `backward()`,
intermediate arrays hold their adjoints too, until `zero()` or `reset()`. An array that carries gradient from
one taped launch to a later one must have a gradient buffer; if it has none, `backward()` raises
MissingGradientError naming it (and the struct field it sits in) rather than silently dropping the gradient.
"""

from __future__ import annotations

import warnings

import kernels as wp
from kernels import capture
from kernels.launch import tape_hooks
from kernels.typesys import ArrayType, is_struct


class OverwriteError(RuntimeError):
    """An array read by an earlier taped launch was then overwritten: its gradient would be wrong."""


class MissingGradientError(RuntimeError):
    """An array that carries gradient between two taped launches has no gradient buffer."""


class _Record:
    __slots__ = ("kernel", "dim", "inputs", "outputs", "device")

    def __init__(self, kernel, dim, inputs, outputs, device):
        self.kernel, self.dim, self.inputs, self.outputs, self.device = kernel, dim, inputs, outputs, device


class _Callback:
    """A `record_func` backward closure and the device of the arrays it works on."""

    __slots__ = ("fn", "device")

    def __init__(self, fn, device):
        self.fn, self.device = fn, device

    def run(self):
        rec = capture.recorder(self.device)
        if rec is not None:  # backward inside a capture: the closure runs at each replay, in its place
            rec.host(self.fn)
        else:
            self.fn()


class Tape:
    """Record launches inside `with tape:`; `backward()` computes gradients into the arrays' `.grad`."""

    def __init__(self):
        self.launches: list = []
        self.touched: dict = {}  # id -> array whose gradient this tape has used or seeded
        self._reads: dict = {}  # id(array) -> name of the kernel that read it

    # ------------------------------------------------------------------------------------------------ recording

    def __enter__(self):
        tape_hooks.append(self._record_launch)
        return self

    def __exit__(self, *exc):
        tape_hooks.remove(self._record_launch)

    def _record_launch(self, kernel, dim, inputs, outputs, device):
        rec = _Record(kernel, dim, inputs, outputs, device)
        self._check_overwrite(rec)
        self.launches.append(rec)

    def record_func(self, backward, arrays):
        """Record a Python callback run during backward (in reverse order with the launches); `arrays` are the
        arrays whose gradients it reads or writes (zeroed by `zero()`)."""
        for a in arrays:
            self._touch(a)
        device = next((a.device for a in arrays if isinstance(a, wp.array)), wp.get_device())
        self.launches.append(_Callback(backward, device))

    def _check_overwrite(self, rec):
        mode = wp.config.overwrite_check
        if mode == "off":
            return
        access = rec.kernel.param_access()
        values = list(rec.inputs) + list(rec.outputs)
        for name, v in zip(rec.kernel.arg_names, values):
            if not isinstance(v, wp.array):
                continue
            reads, writes = access.get(name, (False, False))
            if writes and id(v) in self._reads:
                msg = (f"kernel '{rec.kernel.name}' writes array '{name}', which kernel '{self._reads[id(v)]}' "
                       f"read earlier on this tape: gradients through the earlier read would use the new values")
                if mode == "error":
                    raise OverwriteError(msg)
                warnings.warn(msg, stacklevel=4)
        for name, v in zip(rec.kernel.arg_names, values):
            if isinstance(v, wp.array) and access.get(name, (False, False))[0]:
                self._reads.setdefault(id(v), rec.kernel.name)

    # ------------------------------------------------------------------------------------------------ backward

    def _touch(self, a):
        if a is not None and isinstance(a, wp.array) and a.grad is not None:
            self.touched[id(a)] = a

    def _adjoint_of(self, value, t):
        if isinstance(t, ArrayType):
            if isinstance(value, wp.array) and not value._foreign and value.grad is not None:
                self._touch(value)
                return value.grad
            return None
        if is_struct(t) and value is not None:
            return self._struct_adjoint(value, t)
        return None

    def _struct_adjoint(self, s, t):
        """A struct of the same type whose array members are the members' gradient arrays."""
        adj = t()
        for name, ft in t._wp_struct_.fields.items():
            v = getattr(s, name)
            if isinstance(ft, ArrayType):
                if v is not None and not v._foreign and v.grad is not None:
                    self._touch(v)
                    object.__setattr__(adj, name, v.grad)
            elif is_struct(ft):
                object.__setattr__(adj, name, self._struct_adjoint(v, ft))
        return adj

    def backward(self, loss=None, grads: dict | None = None):
        """Seed `loss.grad` with 1 (a one-element array), and/or each array in `grads` with its seed, then run the
        recorded adjoints in reverse. Gradients accumulate into `.grad` until `zero()`."""
        if loss is not None:
            if loss.size != 1:
                raise ValueError(f"backward(loss=...) needs a one-element array, got shape {loss.shape}")
            if loss.grad is None:
                loss.requires_grad = True
            loss.grad.fill_(1.0)
            self._touch(loss)
        for a, seed in (grads or {}).items():
            if a.grad is None:
                a.grad = wp.zeros(a.shape, dtype=a.dtype, device=a.device)
            a.grad.assign(seed)
            self._touch(a)
        self._check_gradient_chain()
        for rec in reversed(self.launches):
            if isinstance(rec, _Callback):
                rec.run()
                continue
            k = rec.kernel
            adj_in = [self._adjoint_of(v, t) for v, t in zip(rec.inputs, k.arg_types)]
            adj_out = [self._adjoint_of(v, t) for v, t in zip(rec.outputs, k.arg_types[len(rec.inputs):])]
            wp.launch(k, rec.dim, inputs=rec.inputs, outputs=rec.outputs, device=rec.device, adjoint=True,
                      adj_inputs=adj_in, adj_outputs=adj_out)

    def _arrays_of(self, rec):
        """(path, array, read, written) for the differentiable toolkit arrays a recorded launch touches."""
        values = dict(zip(rec.kernel.arg_names, list(rec.inputs) + list(rec.outputs)))
        out = []
        for path, (read, written) in rec.kernel.param_access().items():
            head, *fields = path.split(".")
            obj = values.get(head)
            for f in fields:
                obj = getattr(obj, f, None) if obj is not None else None
            if isinstance(obj, wp.array) and not obj._foreign and _differentiable(obj.dtype):
                out.append((path, obj, read, written))
        return out

    def _check_gradient_chain(self):
        """Refuse to run when an array written by one launch on the gradient path and read by a later one has no
        gradient buffer: the gradient would stop there and the earlier inputs would silently get zeros."""
        writer: dict = {}  # id(array) -> (record, path) of its latest writer so far
        for rec in self.launches:
            if not isinstance(rec, _Record):
                continue
            arrays = self._arrays_of(rec)
            feeds_gradient = any(w and a.grad is not None for _, a, _, w in arrays)
            for path, a, read, _ in arrays:
                if not (read and feeds_gradient and a.grad is None and id(a) in writer):
                    continue
                source, source_path = writer[id(a)]
                if any(r and b.grad is not None for _, b, r, _ in self._arrays_of(source)):
                    where = _describe_path(path)
                    raise MissingGradientError(
                        f"{where} of kernel '{rec.kernel.name}' is written by kernel '{source.kernel.name}' "
                        f"({_describe_path(source_path)}) and read here, but has no gradient buffer: gradients "
                        f"cannot flow back through it. Create that array with requires_grad=True.")
            for path, a, _, written in arrays:
                if written:
                    writer[id(a)] = (rec, path)

    def zero(self):
        """Zero every gradient this tape has touched, seeded ones included, so rounds never accumulate."""
        for rec in self.launches:
            if isinstance(rec, _Record):
                for v, t in zip(list(rec.inputs) + list(rec.outputs), rec.kernel.arg_types):
                    self._adjoint_of(v, t)
        for a in self.touched.values():
            if a.grad is not None:
                a.grad.zero_()

    def reset(self):
        """Zero the gradients and clear the record."""
        self.zero()
        self.launches = []
        self.touched = {}
        self._reads = {}


def _differentiable(dtype) -> bool:
    """Whether values of `dtype` carry gradients: float scalars and composites, structs with such a field."""
    info = getattr(dtype, "_wp_struct_", None)
    if info is not None:
        return any(_differentiable(t) for t in info.fields.values() if not hasattr(t, "ndim"))
    return wp.types.is_float(wp.types.scalar_type(dtype))


def _describe_path(path: str) -> str:
    head, *fields = path.split(".")
    if not fields:
        return f"array argument '{head}'"
    return f"field '{'.'.join(fields)}' of struct argument '{head}'"
