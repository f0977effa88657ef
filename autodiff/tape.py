"""`Tape`: records kernel launches and replays their adjoints in reverse to compute gradients.

Arrays that are not toolkit arrays (numpy arrays, torch tensors, anything passed through `__array_interface__` or
DLPack) are constants for differentiation: backward passes no gradient array for them, so their memory is never
written. The arrays inside a struct argument are those the launch passed (a tape keeps a copy of the struct as
the launch saw it: assigning its fields afterwards does not move that launch's gradients); their gradient buffers
are looked up when backward runs, so gradients reach them whether `requires_grad` was set before or after the
array was put into the struct.

Gradient buffers: `requires_grad=True` gives an array a zeroed `.grad` at once; `backward(grads={a: g})` gives
`a` one if it has none. After `backward()`, arrays hold their adjoints until `zero()` or `reset()`, except what a
write consumed: a plain write `a[i] = v` in a kernel and a copy into `a` (wp.copy, wp.clone, assign) replace the
element, so their adjoint takes its gradient and zeroes it, and earlier writers of that element get none (Warp's
final-write-wins). An array created with `retain_grad=True` keeps its gradient through plain writes and copies.
Copies between toolkit arrays are recorded like launches. An array that carries gradient from
one taped launch to a later one must have a gradient buffer; if it has none, `backward()` raises
MissingGradientError naming it (and the struct field it sits in) rather than silently dropping the gradient.
"""

from __future__ import annotations

import warnings
import weakref
from itertools import chain, repeat
from operator import is_, itemgetter

import numpy as np

import kernels as wp
from kernels import capture
from kernels.array import array as _array
from kernels.array import copy_hooks, copy_plan, copy_window, host_write_hooks
from kernels.launch import args_ctype, check_backward, launch_adjoint, pack_array, struct_params, tape_hooks
from kernels.struct import packed_derived
from kernels.mesh import ray_gradient_meshes
from kernels.typesys import ArrayType, is_differentiable_type, is_struct

from . import read_flags


class OverwriteError(RuntimeError):
    """An array read by an earlier taped launch was then overwritten: its gradient would be wrong."""


class MissingGradientError(RuntimeError):
    """An array that carries gradient between two taped launches has no gradient buffer."""


class _Record:
    """A recorded launch: `kernel` ran over `bounds` on `device` with arguments `values` (in parameter order, the
    first `n_in` its inputs; struct arguments as the launch saw them), packed as `params` (their native bytes,
    which its adjoint reads again); `arrays`: the arrays it touches (see _access_meta). Few objects per record
    (no Launch, bytes rather than a ctypes struct): a long tape gives the garbage collector little to walk."""

    __slots__ = ("kernel", "n_in", "values", "bounds", "params", "device", "arrays")

    def __init__(self, kernel, n_in, values, bounds, params, device, arrays):
        self.kernel, self.n_in, self.values, self.bounds = kernel, n_in, values, bounds
        self.params, self.device, self.arrays = params, device, arrays

    @property
    def inputs(self) -> list:
        return self.values[:self.n_in]

    @property
    def outputs(self) -> list:
        return self.values[self.n_in:]


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


class _CopyRecord:
    """A recorded copy (wp.copy, wp.clone, array.assign): `count` elements of `src` at `src_offset` went to `dest`
    at `dest_offset` (`whole`: every element of two same-shaped strided views).

    Its adjoint adds the copied window of dest's gradient into src's, then zeroes that window of dest's gradient:
    the copy overwrote those elements, so whatever gradient reached them belongs to this copy alone, not to
    earlier writes of dest (unless dest has `retain_grad`)."""

    __slots__ = ("dest", "src", "dest_offset", "src_offset", "count", "whole")

    def __init__(self, dest, src, dest_offset, src_offset, count, whole):
        self.dest, self.src = dest, src
        self.dest_offset, self.src_offset, self.count, self.whole = dest_offset, src_offset, count, whole

    def run(self):
        dest, src = self.dest, self.src
        if dest.grad is None or self.count == 0:
            return
        g_dest = copy_window(dest.grad, self.dest_offset, self.count, self.whole)
        g_src = copy_window(src.grad, self.src_offset, self.count, self.whole) if src.grad is not None else None
        keep = dest.retain_grad

        def adjoint():
            if dest.grad.is_cuda or (src.grad is not None and src.grad.is_cuda):
                _device_copy_adjoint(dest.grad, src.grad, g_dest, g_src, keep)
                return
            if g_src is not None:
                g_src[...] += g_dest
            if not keep:
                g_dest[...] = 0

        rec = capture.recorder(dest.device)
        if rec is not None:
            rec.host(adjoint)
        else:
            adjoint()


# the tapes recording now (at most one: Warp refuses nested tapes, and so do we)
_recording: list = []


def recording_tape():
    """The Tape recording now (inside its `with`), or None."""
    return _recording[-1] if _recording else None


def _release_all(holds: list, dirty: list):
    """Run and forget the release callbacks of Tape.hold; `dirty[0]`: whether a backward ran since the last
    zero()."""
    while holds:
        holds.pop()(not dirty[0])


class Tape:
    """Record launches inside `with tape:`; `backward()` computes gradients into the arrays' `.grad`."""

    def __init__(self):
        self.launches: list = []
        self.touched: dict = {}  # id -> array whose gradient this tape has used or seeded
        self._reads: dict = {}  # id(array argument) -> name of the last kernel that read it
        self.scopes: list = []  # (launch index, name, metadata) at a scope's begin, (launch index, None, None) at end
        self._open_scopes: list = []  # indices into self.scopes of the begins not ended yet
        self._holds: list = []  # see hold()
        self._dirty = [False]  # whether gradients may be non-zero: a backward ran since the last zero()
        # during backward(): id(struct) -> its adjoint struct (a struct passed to many launches, such as a solver's
        # model data, is made and packed once; the records keep the structs alive, so ids stay unique)
        self._adjoint_memo: dict | None = None
        # id(struct copy in a record) -> its _Snapshot, for the copies kept with the struct's packed form
        self._snapshot_of: dict = {}
        self._written = [0, {}]  # see _written_roots
        weakref.finalize(self, _release_all, self._holds, self._dirty)

    def hold(self, release):
        """Call `release(zeroed)` when this tape lets go of its record: at reset() or when the tape is freed;
        `zeroed`: whether every gradient of the recorded launches' arrays is zero then (no backward ran since
        the last zero()). Solvers lend the intermediates of taped steps this way and take them back for later
        tapes."""
        self._holds.append(release)

    # ------------------------------------------------------------------------------------------------ recording

    def __enter__(self):
        if _recording:
            raise RuntimeError("a Tape is already recording: tapes cannot be nested")
        _recording.append(self)
        tape_hooks.append(self._record_launch)
        copy_hooks.append(self._record_copy)
        host_write_hooks.append(self._check_host_write)
        return self

    def __exit__(self, *exc):
        tape_hooks.remove(self._record_launch)
        copy_hooks.remove(self._record_copy)
        host_write_hooks.remove(self._check_host_write)
        _recording.remove(self)

    def _check_host_write(self, a, operation: str):
        """Refuse a write from the host into memory that a launch or copy recorded on this tape wrote: backward
        would hand that write's gradient to the recorded writer, whose values the host write replaced (Warp gives
        such gradients silently). The records are scanned once, as writes are looked up."""
        if a._foreign or not self.launches:
            return
        written = self._written_roots()
        writer = written.get(_memory_root(a))
        if writer is not None:
            raise HostWriteError(
                f"{operation} writes {_describe_array(a)} on the host while the tape records, after {writer} "
                f"recorded on this tape wrote it: the gradient through that write would be wrong. Write it before "
                f"the tape records (or after), or with a kernel or wp.copy, which the tape records.")

    def _written_roots(self) -> dict:
        """id of the memory root of each array a record wrote -> what wrote it (the last writer), updated with the
        records added since the last call."""
        cache = self._written
        start, written = cache
        for rec in self.launches[start:]:
            cls = rec.__class__
            if cls is _Record:
                for w in _rw_getters(rec.kernel)[1](rec.arrays):
                    if w is not None:
                        written[_memory_root(w)] = f"a launch of kernel '{rec.kernel.name}'"
            elif cls is _CopyRecord:
                written[_memory_root(rec.dest)] = "a recorded copy (wp.copy, wp.clone or assign)"
        cache[0] = len(self.launches)
        return written

    def _record_copy(self, dest, src, dest_offset, src_offset, count):
        if dest._foreign or src._foreign:
            return  # foreign memory is constant for differentiation
        n, whole = copy_plan(dest, src, dest_offset, src_offset, count)
        self._touch(dest)
        self._touch(src)
        self.launches.append(_CopyRecord(dest, src, dest_offset, src_offset, n, whole))
        if wp.config.verify_autograd_array_access:
            read_flags.mark_copy(dest, src)

    def record_scope_begin(self, name, metadata=None):
        """Open a named scope over the launches recorded from now on (Warp's scopes, for visualisation)."""
        self._open_scopes.append(len(self.scopes))
        self.scopes.append((len(self.launches), name, metadata or {}))

    def record_scope_end(self):
        """Close the innermost open scope; a scope with no launches leaves no markers."""
        if not self._open_scopes:
            raise RuntimeError("ended tape scope, but scope not present")
        begin = self._open_scopes.pop()
        if begin == len(self.scopes) - 1 and self.scopes[begin][0] == len(self.launches):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.launches), None, None))

    def visualize(self, filename: str | None = None, simplify_graph: bool = True, hide_readonly_arrays=False,
                  array_labels: dict | None = None, choose_longest_node_name=True, ignore_graph_scopes=False,
                  track_inputs=None, track_outputs=None, track_input_names=None, track_output_names=None,
                  graph_direction: str = "LR") -> str:
        """The record as GraphViz DOT source (also written to `filename` if given): launches (consecutive
        identical ones merged into one "repeated Nx" node with `simplify_graph`), the arrays they read and
        write, and the scopes as clusters. The remaining arguments of Warp's signature are accepted and unused."""
        from .tape_graph import to_dot
        dot = to_dot(self, simplify_graph=simplify_graph, array_labels=array_labels,
                     ignore_graph_scopes=ignore_graph_scopes, graph_direction=graph_direction)
        if filename is not None:
            with open(filename, "w") as f:
                f.write(dot)
        return dot

    @property
    def gradients(self) -> "_Gradients":
        """`tape.gradients[a]`: the gradient of array `a` (its `.grad`), or of struct `a` (a struct of the same type
        whose arrays are its arrays' gradients)."""
        return _Gradients(self)

    def _record_launch(self, kernel, dim, inputs, outputs, device, launch):
        # the Launch keeps its own copy of the arguments; the caller's lists may change after the launch
        values = launch.values
        direct, struct_args = _arrays_plan(kernel)
        # the differentiable toolkit arrays the launch touches, one per entry of _access_meta(kernel) (None where
        # the argument or member is no such array): one flat list per record, few objects for the collector
        arrays = [v if isinstance(v, _array) and not v._foreign else None for v in map(values.__getitem__, direct)]
        for index, paths, nested in struct_args:
            s = values[index]
            if s is None:
                arrays.extend([None] * len(paths))
                continue
            # the struct as this launch saw it: later assignments to its fields must not move this launch's adjoint
            # to other arrays (the Launch keeps its own list of the arguments). Made once per packed form of the
            # struct, which lives until a field is assigned, and shared by the tapes that record it meanwhile (a
            # solver's model data and pooled per-step structs are copied once); a struct with struct members at
            # every launch, as their fields change without a new packed form
            derived = None if nested else packed_derived(s)
            known = derived.get(_Snapshot) if derived is not None else None
            if known is None:
                known = _Snapshot(_copy_struct(s))
                if derived is not None:
                    derived[_Snapshot] = known
            if derived is not None:
                self._snapshot_of[id(known.struct)] = known
            values[index] = known.struct
            if paths:
                members = known.members.get(kernel)
                if members is None:
                    members = known.members[kernel] = _members(known.struct, paths)
                arrays.extend(members)
        if wp.config.overwrite_check != "off":
            self._check_overwrite(kernel, values)
        self.launches.append(_Record(kernel, len(inputs), values, launch.bounds, bytes(launch.params), launch.device,
                                     arrays))
        if wp.config.verify_autograd_array_access:
            read_flags.mark_launch(kernel, inputs, outputs)

    def record_func(self, backward, arrays):
        """Record a Python callback run during backward (in reverse order with the launches); `arrays` are the
        arrays whose gradients it reads or writes (zeroed by `zero()`). Inside a capture of a backward on a CUDA
        device the callback runs once, when captured, as in Warp: the device work it launches is what replays."""
        for a in arrays:
            self._touch(a)
        device = next((a.device for a in arrays if isinstance(a, wp.array)), wp.get_device())
        self.launches.append(_Callback(backward, device))

    def _check_overwrite(self, kernel, values):
        """Warn (or raise, see wp.config.overwrite_check) when a launch of `kernel` on `values` writes an array that
        an earlier launch on this tape read; then mark the arrays it reads."""
        read_by = self._reads
        get_written, written_names, get_read = _overwrite_plan(kernel)
        # the writes first, against earlier launches only: a kernel that updates an array in place is fine
        written = get_written(values)
        if read_by and not read_by.keys().isdisjoint(map(id, written)):
            for v, name in zip(written, written_names):
                if id(v) in read_by and isinstance(v, _array):
                    msg = (f"kernel '{kernel.name}' writes array '{name}', which kernel '{read_by[id(v)]}' "
                           f"read earlier on this tape: gradients through the earlier read would use the new values")
                    if wp.config.overwrite_check == "error":
                        raise OverwriteError(msg)
                    warnings.warn(msg, stacklevel=4)
        # by id: the records keep the arguments alive, so no id is reused while the tape holds them
        read_by.update(zip(map(id, get_read(values)), repeat(kernel.name)))

    # ------------------------------------------------------------------------------------------------ backward

    def _touch(self, a):
        if a is not None and isinstance(a, wp.array) and a._grad is not None:
            self.touched[id(a)] = a

    def _memo_struct_adjoint(self, value, t) -> tuple:
        """(_struct_adjoint, its native form), made and packed once per struct during backward() (see
        _adjoint_memo; nothing changes them while backward runs); for a struct copy kept with its struct's packed
        form, made again only when one of its members' gradient arrays changed (_Snapshot.adjoint)."""
        memo = self._adjoint_memo
        entry = memo.get(id(value))
        if entry is None:
            snapshot = self._snapshot_of.get(id(value))
            if snapshot is not None:
                entry = snapshot.adjoint(self)
            else:
                adj = self._struct_adjoint(value, t)
                entry = (adj, _pack_struct_adjoint(adj, t))
            memo[id(value)] = entry
        return entry

    def _struct_adjoint(self, s, t):
        """A struct of the same type whose array members are the members' gradient arrays."""
        zero, array_fields, struct_fields = _struct_plan(t)
        adj = object.__new__(t)
        # the zero struct's members: its composite members are only packed, never changed in place
        adj.__dict__.update(zero.__dict__)
        touched = self.touched
        for name in array_fields:
            v = getattr(s, name)
            if v is not None and not v._foreign:
                g = v._grad
                if g is not None:
                    touched[id(v)] = v
                    object.__setattr__(adj, name, g)
        for name, ft in struct_fields:
            object.__setattr__(adj, name, self._struct_adjoint(getattr(s, name), ft))
        return adj

    def backward(self, loss=None, grads: dict | None = None):
        """Seed `loss.grad` with 1 (a one-element array), and/or each array in `grads` with its seed, then run the
        recorded adjoints in reverse. Gradients accumulate into `.grad` until `zero()`."""
        self._dirty[0] = True
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
        live = _LiveGradients(grads, loss)
        schedule = self._schedule(live)  # raises before any adjoint has run
        self._adjoint_memo = {}
        try:
            for rec in schedule:
                if rec.__class__ is _Record:
                    for mesh in ray_gradient_meshes(rec.values):
                        # ray casts add into the points' gradient: current in the mesh header, zeroed by zero()
                        mesh._sync_point_gradient()
                        self._touch(mesh.points)
                    launch_adjoint(rec.kernel, rec.device, rec.bounds, rec.params, rec.values,
                                   *self._adjoint_params(rec))
                else:
                    rec.run()
        finally:
            self._adjoint_memo = None
        if wp.config.verify_autograd_array_access:  # the reads are used up: later writes harm no gradient
            read_flags.clear(read_flags.recorded_arrays(self.launches))

    def _schedule(self, live: "_LiveGradients") -> list:
        """The records whose adjoints backward() runs, in the order it runs them (the reverse of the record),
        found in one pass from the last record to the first, before any adjoint runs.

        An adjoint runs when something its launch wrote may carry gradient; it then adds into the gradients of
        what the launch read (adjoints are linear in the gradients of what a kernel writes, so the others would
        add zeros: e.g. the poses of states that only a later step's kinematics re-derive and no loss reads).

        Raises MissingGradientError where a gradient would stop at an array without a gradient buffer: a copy
        from an array with one into an array without one; or a launch whose writes carry gradient reading such
        an array that the last launch to write it before computed from arrays with gradients. The pass meets
        that reader first, so the array waits in `pending` until its writer is met. Raises for a kernel without
        an adjoint that gradient reaches."""
        may_carry, add, live_add = live.may_carry, live.add, live.ids.add
        pending: dict = {}  # id(array without a gradient buffer) -> (a record that reads it, that array)
        schedule = []
        for rec in reversed(self.launches):
            cls = rec.__class__
            if cls is _Callback:
                schedule.append(rec)
                live.opaque = True  # it may write any gradient
                continue
            if cls is _CopyRecord:
                if rec.src._grad is not None and rec.dest._grad is None:
                    raise MissingGradientError(
                        "a copy (wp.copy, wp.clone or array.assign) on the tape writes an array without a gradient "
                        "buffer from one that has one: gradients cannot flow back through it. Create the "
                        "destination with requires_grad=True.")
                pending.pop(id(rec.dest), None)  # a copy from an array without gradient carries none
                if may_carry(rec.dest):
                    schedule.append(rec)
                    add(rec.src)
                continue
            arrays = rec.arrays
            get_reads, get_writes = _rw_getters(rec.kernel)
            written = get_writes(arrays)
            if pending and not pending.keys().isdisjoint(map(id, written)):
                self._check_pending_writes(rec, pending)
            writes = [a for a in written if a is not None and a._grad is not None]
            if not writes:
                continue
            runs = any(map(may_carry, writes))
            for a in get_reads(arrays):
                if a is not None:
                    g = a._grad
                    if g is None:
                        pending[id(a)] = (rec, a)
                    elif runs:
                        live_add(id(g) if g._owner is None else _grad_key(g))
            if runs:
                check_backward(rec.kernel)
                schedule.append(rec)
        return schedule

    @staticmethod
    def _check_pending_writes(rec, pending: dict):
        """`rec` is the last launch before the readers in `pending` to write the arrays it writes: raise
        MissingGradientError if it wrote one of them from arrays with gradients."""
        arrays = rec.arrays
        read_entries, write_entries = _rw_entries(rec.kernel)
        for i in write_entries:
            a = arrays[i]
            if a is None or id(a) not in pending:
                continue
            reader, _ = pending.pop(id(a))
            if any(b is not None and b._grad is not None for b in map(arrays.__getitem__, read_entries)):
                entry = next(e for e in _rw_entries(reader.kernel)[0] if reader.arrays[e] is a)
                path = _access_meta(reader.kernel)[entry][0]
                source_path = _access_meta(rec.kernel)[i][0]
                raise MissingGradientError(
                    f"{_describe_path(path)} of kernel '{reader.kernel.name}' is written by kernel "
                    f"'{rec.kernel.name}' ({_describe_path(source_path)}) and read here, but has no gradient "
                    f"buffer: gradients cannot flow back through it. Create that array with requires_grad=True.")

    def _adjoint_params(self, rec) -> tuple:
        """(adjoint values, packed adjoint arguments) of a recorded launch: each array's own gradient (consumed by
        plain writes unless the array has retain_grad, see pack_adjoint_args), each struct's adjoint struct; the
        arrays with gradients are touched."""
        k = rec.kernel
        device = rec.device
        values = rec.values
        adj_values = [None] * len(values)
        packed = args_ctype(k)()
        touched = self.touched
        for index, name, t, is_array in _adjoint_slots(k):
            v = values[index]
            if is_array:
                if not isinstance(v, _array) or v._foreign:
                    continue
                g = v._grad
                if g is None:
                    continue
                touched[id(v)] = v
                if g.__class__ is not _array or g.dtype is not t.dtype or g.ndim != t.ndim or g.device is not device:
                    pack_array(k, index, t, g, device)  # a gradient set by hand that does not fit: raises
                if v._retain_grad:
                    setattr(packed, name, g._descriptor())
                else:
                    setattr(packed, name, g._desc_consume or g._consuming_descriptor())
                adj_values[index] = g
            elif v is not None:
                adj, c = self._memo_struct_adjoint(v, t)
                setattr(packed, name, c)
                adj_values[index] = adj
        return adj_values, packed

    def zero(self):
        """Zero every gradient this tape has touched: those its launches' adjoints read or write (the arrays and
        struct members the kernels access), the seeded ones and those of copies and record_func arrays, so that
        rounds never accumulate."""
        touched = self.touched
        # one flat pass at C speed over every record's arrays (Nones and arrays without gradients included)
        arrays = list(chain.from_iterable([rec.arrays for rec in self.launches if rec.__class__ is _Record]))
        touched.update(zip(map(id, arrays), arrays))
        touched.pop(id(None), None)
        for a in touched.values():
            g = a._grad
            if g is not None:
                g.zero_()
        self._dirty[0] = False

    def reset(self):
        """Zero the gradients and clear the record (and, with verify_autograd_array_access, its read marks)."""
        if wp.config.verify_autograd_array_access:
            read_flags.clear(read_flags.recorded_arrays(self.launches))
        self.zero()
        self.launches = []
        self._written = [0, {}]
        self.scopes = []
        self._open_scopes = []
        self.touched = {}
        self._reads = {}
        self._snapshot_of = {}
        _release_all(self._holds, self._dirty)


class _LiveGradients:
    """Which gradients may be non-zero when Tape.backward reaches a record, as its schedule is planned from the
    last record to the first before any adjoint runs: the seeded ones, those of arrays read by an adjoint
    scheduled to run before (it adds into them), and those not known to be zero now (on the CPU: any non-zero
    element; inside a capture: anything but a gradient the capture zeroed and nothing wrote since, which is zero
    there at every replay). After a record_func callback, every gradient.

    `ids` holds gradient keys (_grad_key): views of one array share their gradient memory, so an adjoint that
    adds into one view's gradient makes every view of that array live."""

    def __init__(self, grads, loss):
        self.ids: set = set()
        self.zero: dict = {}  # id(array) -> whether its gradient was found zero
        self.opaque = False
        for a in list(grads or ()) + ([loss] if loss is not None else []):
            self.add(a)

    def add(self, a):
        if a._grad is not None:
            self.ids.add(_grad_key(a._grad))

    def may_carry(self, a) -> bool:
        g = a._grad
        if g is None:
            return False
        if self.opaque or (id(g) if g._owner is None else _grad_key(g)) in self.ids:
            return True
        known = self.zero.get(id(a))
        if known is None:
            rec = capture.recorder(a.device)
            if rec is not None:
                known = rec.is_fresh(g)
            elif g.is_cuda:
                known = not _device_any_nonzero(g)
            else:
                known = not _any_nonzero(g.numpy())
            self.zero[id(a)] = known
        return not known


class HostWriteError(RuntimeError):
    """A write from the host into an array that a launch or copy recorded on the recording tape wrote."""


def _memory_root(a) -> int:
    """The id of the array whose memory `a` views (its own when it views none)."""
    owner = a._owner
    while owner.__class__ is wp.array:
        a, owner = owner, owner._owner
    return id(a)


def _describe_array(a) -> str:
    return (f"an array of shape {a.shape} and type {wp.types.type_repr(a.dtype)} on {a.device}"
            f"{f' at 0x{a.ptr:x}' if a.ptr else ''}")


def _grad_key(g) -> int:
    """The id of the array whose memory gradient `g` views (g's own for an array that views nothing)."""
    owner = g._owner
    while owner.__class__ is wp.array:
        g, owner = owner, owner._owner
    return id(g)


def _pack_struct_adjoint(adj, t):
    """The native form of adjoint struct `adj` (of type t, see Tape._struct_adjoint): its members' gradient
    arrays, zero elsewhere (what adj._to_ctype() gives, without caching the form for a struct used once)."""
    _, array_fields, struct_fields = _struct_plan(t)
    c = t._wp_struct_.ctype()()
    for name in array_fields:
        g = getattr(adj, name)
        if g is not None:
            setattr(c, name, g._descriptor())
    for name, ft in struct_fields:
        setattr(c, name, _pack_struct_adjoint(getattr(adj, name), ft))
    return c


@wp.kernel(enable_backward=False)
def _flag_nonzero_words(words: wp.array(dtype=wp.uint32), flag: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if words[i] != wp.uint32(0):
        flag[0] = 1


def _device_any_nonzero(g) -> bool:
    """Whether CUDA gradient `g` may hold anything but zeros: checked on the device (one small launch and a
    four-byte read) for a contiguous gradient of whole 32-bit words; True (may carry) inside a capture, where
    nothing can be read, and where the words cannot be seen (a strided view is read whole on the host)."""
    if wp.is_capturing(g.device):
        return True
    if not g.is_contiguous:
        return _any_nonzero(g.numpy())
    nbytes = g._buf.nbytes  # the layout's size: nothing is read
    if nbytes == 0:
        return False
    if nbytes % 4:
        return _any_nonzero(g.numpy())
    words = wp.array(ptr=g.ptr, shape=(nbytes // 4,), dtype=wp.uint32, device=g.device)
    words._owner = g  # keeps the gradient's memory alive while the view is used
    flag = wp.zeros(1, dtype=wp.int32, device=g.device)
    wp.launch(_flag_nonzero_words, dim=nbytes // 4, inputs=[words, flag], device=g.device, record_tape=False)
    return bool(flag.numpy()[0])


def _device_copy_adjoint(g_dest_array, g_src_array, g_dest, g_src, keep: bool):
    """_CopyRecord's adjoint where a gradient is in device memory (`g_dest`, `g_src`: the windows' layouts, see
    wp.copy_window): src's window += dest's window, then dest's window = 0 unless kept. Through the host, in
    order with the device's work."""
    from kernels import cuda_memory
    dest_o, src_o = g_dest_array._ordinal, g_src_array._ordinal if g_src_array is not None else -1
    if g_src is not None:
        moved = cuda_memory.read(g_dest, dest_o) if dest_o >= 0 else np.array(g_dest)
        if src_o >= 0:
            cuda_memory.write(g_src, src_o, cuda_memory.read(g_src, src_o) + moved)
        else:
            g_src[...] += moved
    if not keep:
        if dest_o >= 0:
            cuda_memory.fill(g_dest, dest_o, np.zeros((), dtype=np.uint8))
        else:
            g_dest[...] = 0


def _any_nonzero(buf) -> bool:
    """Whether a gradient buffer holds anything but zeros (structured dtypes: any non-zero byte)."""
    if buf.dtype.fields is not None:
        return bool(np.ascontiguousarray(buf).view(np.uint8).any())
    return np.count_nonzero(buf) != 0  # a few times faster than buf.any() on the small arrays of a step


class _Gradients:
    """The mapping behind `Tape.gradients`."""

    def __init__(self, tape):
        self._tape = tape

    def __getitem__(self, value):
        if isinstance(value, wp.array):
            if value.grad is None:
                raise KeyError("the array has no gradient buffer (create it with requires_grad=True)")
            return value.grad
        if is_struct(type(value)):
            return self._tape._struct_adjoint(value, type(value))
        raise KeyError(f"no gradient for a {type(value).__name__}")

    def __contains__(self, value):
        return (isinstance(value, wp.array) and value.grad is not None) or is_struct(type(value))

    def get(self, value, default=None):
        return self[value] if value in self else default


def _describe_path(path: str) -> str:
    head, *fields = path.split(".")
    if not fields:
        return f"array argument '{head}'"
    return f"field '{'.'.join(fields)}' of struct argument '{head}'"


_ZERO_STRUCTS: dict = {}  # struct type -> an instance with every member at its default


def _zero_struct(t):
    z = _ZERO_STRUCTS.get(t)
    if z is None:
        z = _ZERO_STRUCTS[t] = t()
    return z


def _arg_kinds(kernel) -> list:
    """(0 array, 1 struct or 2 other, type) of each kernel parameter, once per kernel."""
    kinds = getattr(kernel, "_tape_arg_kinds", None)
    if kinds is None:
        kinds = kernel._tape_arg_kinds = [(0 if isinstance(t, ArrayType) else 1 if is_struct(t) else 2, t)
                                          for t in kernel.arg_types]
    return kinds


def _overwrite_plan(kernel) -> tuple:
    """(getter of the array arguments (not struct members) the kernel writes, their parameter names, getter of
    those it reads), once per kernel (see _tuple_getter)."""
    plan = getattr(kernel, "_tape_overwrite_plan", None)
    if plan is None:
        access = kernel.param_access()
        arrays = [(i, name, *access.get(name, (False, False)))
                  for i, (name, t) in enumerate(zip(kernel.arg_names, kernel.arg_types)) if isinstance(t, ArrayType)]
        written = [(i, name) for i, name, _, w in arrays if w]
        plan = kernel._tape_overwrite_plan = (_tuple_getter(tuple(i for i, _ in written)),
                                              tuple(name for _, name in written),
                                              _tuple_getter(tuple(i for i, _, r, _ in arrays if r)))
    return plan


def _adjoint_slots(kernel) -> list:
    """(index, name, type, is an array) of the kernel's array and struct parameters, once per kernel: what an
    adjoint launch passes gradients for and zero() walks."""
    slots = getattr(kernel, "_tape_adjoint_slots", None)
    if slots is None:
        slots = kernel._tape_adjoint_slots = [
            (i, name, t, kind == 0) for i, (name, (kind, t)) in enumerate(zip(kernel.arg_names, _arg_kinds(kernel)))
            if kind != 2]
    return slots


def _access_plan(kernel) -> list:
    """_access_paths grouped by head parameter (array parameters first, then struct parameters, each in parameter
    order), without the arrays whose element type has no gradient:
    [(index, [(path, member names, read, written)], whether the head is a struct)], once per kernel (a struct
    parameter's paths all have member names, an array parameter's one path none)."""
    plan = getattr(kernel, "_tape_access_plan", None)
    if plan is None:
        groups: dict = {}
        for path, index, fields, read, written in _access_paths(kernel):
            t = kernel.arg_types[index]
            for f in fields:
                t = t._wp_struct_.fields[f] if is_struct(t) else None
            if isinstance(t, ArrayType) and is_differentiable_type(t.dtype):
                groups.setdefault(index, []).append((path, fields, read, written))
        # the array parameters first, then the struct parameters (see _arrays_plan)
        plan = kernel._tape_access_plan = sorted(((index, paths, bool(paths[0][1])) for index, paths in groups.items()),
                                                 key=lambda entry: (entry[2], entry[0]))
    return plan


def _arrays_plan(kernel) -> tuple:
    """(indices of the array parameters in _access_plan, [(index, access paths, whether its type has struct
    members)] of every struct parameter, the paths empty for those with no differentiable member the kernel
    accesses), once per kernel: the entries of a record's arrays are the array parameters' and then the struct
    parameters' paths, in parameter order."""
    plan = getattr(kernel, "_tape_arrays_plan", None)
    if plan is None:
        access = _access_plan(kernel)
        heads = {index: paths for index, paths, is_struct in access if is_struct}
        direct = tuple(index for index, _, is_struct in access if not is_struct)
        structs = [(index, heads.get(index, []), bool(_struct_plan(kernel.arg_types[index])[2]))
                   for index in struct_params(kernel)]
        plan = kernel._tape_arrays_plan = (direct, structs)
    return plan


class _Snapshot:
    """A Tape's copy of a struct argument, `struct`, as its launches packed it; `members`: kernel -> the arrays at
    the kernel's access paths in it (see _members). Tapes share it while the struct keeps its packed form."""

    __slots__ = ("struct", "members", "_fields", "_adjoint")

    def __init__(self, struct):
        self.struct, self.members = struct, {}
        self._fields = tuple(getattr(struct, name) for name in _struct_plan(type(struct))[1])  # its array members
        self._adjoint = None  # (gradient arrays of _fields, adjoint struct, native form, {id: member with one})

    def adjoint(self, tape) -> tuple:
        """(Tape._struct_adjoint of the struct, its native form) for `tape`'s backward, with the members that have
        gradients touched: made again only when a member's gradient array changed (kernels never write either:
        the adjoint's native form is copied into each adjoint launch's arguments)."""
        grads = tuple([None if v is None or v._foreign else v._grad for v in self._fields])
        known = self._adjoint
        if known is not None and all(map(is_, grads, known[0])):
            tape.touched.update(known[3])
            return known[1], known[2]
        t = type(self.struct)
        adj = tape._struct_adjoint(self.struct, t)
        self._adjoint = (grads, adj, _pack_struct_adjoint(adj, t),
                         {id(v): v for v, g in zip(self._fields, grads) if g is not None})
        return adj, self._adjoint[2]


def _members(struct, paths) -> list:
    """The differentiable toolkit arrays of `struct` at access paths `paths` (None where there is none)."""
    members = []
    for _, fields, _, _ in paths:
        obj = struct
        for f in fields:
            obj = getattr(obj, f, None) if obj is not None else None
        members.append(obj if isinstance(obj, _array) and not obj._foreign else None)
    return members


def _copy_struct(s):
    """A struct of the same type holding the same member values (struct members copied the same way)."""
    t = type(s)
    c = object.__new__(t)
    c.__dict__.update(s.__dict__)
    for name, _ in _struct_plan(t)[2]:
        member = getattr(s, name)
        if member is not None:
            object.__setattr__(c, name, _copy_struct(member))
    return c


def _access_meta(kernel) -> list:
    """(path, read, written) of each entry of a record's arrays: the paths of _access_plan in order, once per
    kernel."""
    meta = getattr(kernel, "_tape_access_meta", None)
    if meta is None:
        meta = kernel._tape_access_meta = [(path, read, written) for _, paths, _ in _access_plan(kernel)
                                           for path, _, read, written in paths]
    return meta


def _rw_entries(kernel) -> tuple:
    """(indices of the entries of a record's arrays that the kernel reads, of those it writes), once per
    kernel."""
    rw = getattr(kernel, "_tape_rw_entries", None)
    if rw is None:
        meta = _access_meta(kernel)
        rw = kernel._tape_rw_entries = (tuple(i for i, (_, r, _) in enumerate(meta) if r),
                                        tuple(i for i, (_, _, w) in enumerate(meta) if w))
    return rw


def _rw_getters(kernel) -> tuple:
    """(callable giving the tuple of entries of a record's arrays that the kernel reads, the same for those it
    writes), once per kernel."""
    getters = getattr(kernel, "_tape_rw_getters", None)
    if getters is None:
        getters = kernel._tape_rw_getters = tuple(_tuple_getter(entries) for entries in _rw_entries(kernel))
    return getters


def _tuple_getter(indices: tuple):
    """A callable giving the tuple of a sequence's items at `indices` (operator.itemgetter gives a bare item for
    one index, and takes no zero)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if len(indices) == 1:
        i = indices[0]
        return lambda seq: (seq[i],)
    return lambda seq: ()


def _access_paths(kernel) -> list:
    """kernel.param_access() as (path, index of the head parameter, member names, read, written), split once per
    kernel."""
    paths = getattr(kernel, "_tape_access_paths", None)
    if paths is None:
        paths = []
        for path, (read, written) in kernel.param_access().items():
            head, *fields = path.split(".")
            paths.append((path, kernel.arg_names.index(head), fields, read, written))
        kernel._tape_access_paths = paths
    return paths


_STRUCT_PLANS: dict = {}


def _struct_plan(t):
    """(an instance with every member at its default, names of the array members, (name, type) of the struct
    members) of struct type t."""
    plan = _STRUCT_PLANS.get(t)
    if plan is None:
        fields = t._wp_struct_.fields
        plan = _STRUCT_PLANS[t] = (_zero_struct(t), [n for n, ft in fields.items() if isinstance(ft, ArrayType)],
                                   [(n, ft) for n, ft in fields.items() if is_struct(ft)])
    return plan
