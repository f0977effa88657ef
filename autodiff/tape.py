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

import kernels as wp
from kernels.tape_interface import (ParamKind, args_ctype, check_backward, copy_hooks, copy_plan, host_write_hooks,
                                    is_struct, launch_adjoint, launch_hooks, pack_array, pack_indexed, packed_derived,
                                    ray_gradient_meshes, signature)

from . import read_flags
from .tape_live import LiveGradients, grad_key
from .tape_records import CallbackRecord, CopyRecord, LaunchRecord
from .tape_structs import StructSnapshot, copy_struct, pack_struct_adjoint, struct_adjoint, struct_members


class OverwriteError(RuntimeError):
    """An array read by an earlier taped launch was then overwritten: its gradient would be wrong."""


class MissingGradientError(RuntimeError):
    """An array that carries gradient between two taped launches has no gradient buffer."""


_ARRAY = wp.array  # the toolkit's array class, looked up once (isinstance checks on the per-launch path)

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
        # id(struct copy in a record) -> its StructSnapshot, for the copies kept with the struct's packed form
        self._snapshot_of: dict = {}
        self._written = [0, {}]  # see _written_roots
        weakref.finalize(self, _release_all, self._holds, self._dirty)

    def hold(self, release):
        """Call `release(zeroed)` when this tape lets go of its record: at reset() or when the tape is freed;
        `zeroed`: whether every gradient of the recorded launches' arrays is zero then (no backward ran since
        the last zero()). Solvers lend the intermediates of taped steps this way and take them back for later
        tapes."""
        self._holds.append(release)

    def backward_marker(self) -> list:
        """A one-element list that stays current after this tape is gone: [True] once a backward ran and until
        the next zero() (the gradients of the recorded launches' arrays may be non-zero), else [False]. A solver
        that keeps a taped step's scratch arrays for later tapes keeps the marker of the tape that recorded them
        and zeroes their gradients before reusing them only when it says so (tape.zero() zeroed them already)."""
        return self._dirty

    # ------------------------------------------------------------------------------------------------ recording

    def __enter__(self):
        if _recording:
            raise RuntimeError("a Tape is already recording: tapes cannot be nested")
        _recording.append(self)
        launch_hooks.append(self._record_launch)
        copy_hooks.append(self._record_copy)
        host_write_hooks.append(self._check_host_write)
        return self

    def __exit__(self, *exc):
        launch_hooks.remove(self._record_launch)
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
            if cls is LaunchRecord:
                for w in signature(rec.kernel).pick_tracked_writes(rec.arrays):
                    if w is not None:
                        written[_memory_root(w)] = f"a launch of kernel '{rec.kernel.name}'"
            elif cls is CopyRecord:
                written[_memory_root(rec.dest)] = "a recorded copy (wp.copy, wp.clone or assign)"
        cache[0] = len(self.launches)
        return written

    def _record_copy(self, dest, src, dest_offset, src_offset, count):
        if dest._foreign or src._foreign:
            return  # foreign memory is constant for differentiation
        n, whole = copy_plan(dest, src, dest_offset, src_offset, count)
        self._touch(dest)
        self._touch(src)
        self.launches.append(CopyRecord(dest, src, dest_offset, src_offset, n, whole))
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
        sig = kernel.signature  # (tape_interface.signature, without a call: this runs once per taped launch)
        # the differentiable toolkit arrays the launch touches, one per entry of sig.tracked (None where the
        # argument or member is no such array): one flat list per record, few objects for the collector
        arrays = [v if isinstance(v, _ARRAY) and not v._foreign else _indexed_parent(v)
                  for v in map(values.__getitem__, sig.tracked_array_params)]
        for struct_arrays in sig.tracked_structs:
            index, paths, nested = struct_arrays.param, struct_arrays.paths, struct_arrays.nested
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
            known = derived.get(StructSnapshot) if derived is not None else None
            if known is None:
                known = StructSnapshot(copy_struct(s))
                if derived is not None:
                    derived[StructSnapshot] = known
            if derived is not None:
                self._snapshot_of[id(known.struct)] = known
            values[index] = known.struct
            if paths:
                members = known.members.get(kernel)
                if members is None:
                    members = known.members[kernel] = struct_members(known.struct, paths)
                arrays.extend(members)
        if wp.config.overwrite_check != "off":
            self._check_overwrite(kernel, values)
        self.launches.append(LaunchRecord(kernel, len(inputs), values, launch.bounds, bytes(launch.params),
                                          launch.device, arrays))
        if wp.config.verify_autograd_array_access:
            read_flags.mark_launch(kernel, inputs, outputs)

    def record_func(self, backward, arrays):
        """Record a Python callback run during backward (in reverse order with the launches); `arrays` are the
        arrays whose gradients it reads or writes (zeroed by `zero()`). Inside a capture of a backward on a CUDA
        device the callback runs once, when captured, as in Warp: the device work it launches is what replays."""
        for a in arrays:
            self._touch(a)
        device = next((a.device for a in arrays if isinstance(a, wp.array)), wp.get_device())
        self.launches.append(CallbackRecord(backward, device))

    def _check_overwrite(self, kernel, values):
        """Warn (or raise, see wp.config.overwrite_check) when a launch of `kernel` on `values` writes an array that
        an earlier launch on this tape read; then mark the arrays it reads."""
        read_by = self._reads
        sig = signature(kernel)
        # the writes first, against earlier launches only: a kernel that updates an array in place is fine
        # an indexed array reads and writes its parent's memory: tracked as the parent
        written = [_indexed_parent(v) or v for v in sig.pick_written_array_params(values)]
        if read_by and not read_by.keys().isdisjoint(map(id, written)):
            for v, param in zip(written, sig.written_array_params):
                name = param.name
                if id(v) in read_by and isinstance(v, wp.array):
                    msg = (f"kernel '{kernel.name}' writes array '{name}', which kernel '{read_by[id(v)]}' "
                           f"read earlier on this tape: gradients through the earlier read would use the new values")
                    if wp.config.overwrite_check == "error":
                        raise OverwriteError(msg)
                    warnings.warn(msg, stacklevel=4)
        # by id: the records keep the arguments alive, so no id is reused while the tape holds them
        read_by.update(zip((id(_indexed_parent(v) or v) for v in sig.pick_read_array_params(values)),
                           repeat(kernel.name)))

    # ------------------------------------------------------------------------------------------------ backward

    def _touch(self, a):
        if a is not None and isinstance(a, wp.array) and a._grad is not None:
            self.touched[id(a)] = a

    def _memo_struct_adjoint(self, value, t) -> tuple:
        """(_struct_adjoint, its native form), made and packed once per struct during backward() (see
        _adjoint_memo; nothing changes them while backward runs); for a struct copy kept with its struct's packed
        form, made again only when one of its members' gradient arrays changed (StructSnapshot.adjoint)."""
        memo = self._adjoint_memo
        entry = memo.get(id(value))
        if entry is None:
            snapshot = self._snapshot_of.get(id(value))
            if snapshot is not None:
                entry = snapshot.adjoint(self.touched)
            else:
                adj = self._struct_adjoint(value, t)
                entry = (adj, pack_struct_adjoint(adj, t))
            memo[id(value)] = entry
        return entry

    def _struct_adjoint(self, s, t):
        """A struct of the same type whose array members are the members' gradient arrays (those touched)."""
        return struct_adjoint(s, t, self.touched)

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
        live = LiveGradients(grads, loss)
        schedule = self._schedule(live)  # raises before any adjoint has run
        self._adjoint_memo = {}
        try:
            for rec in schedule:
                if rec.__class__ is LaunchRecord:
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

    def _schedule(self, live: LiveGradients) -> list:
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
            if cls is CallbackRecord:
                schedule.append(rec)
                live.opaque = True  # it may write any gradient
                continue
            if cls is CopyRecord:
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
            sig = signature(rec.kernel)
            written = sig.pick_tracked_writes(arrays)
            if pending and not pending.keys().isdisjoint(map(id, written)):
                self._check_pending_writes(rec, pending)
            writes = [a for a in written if a is not None and a._grad is not None]
            if not writes:
                self._check_untracked_writes(rec, sig)
                continue
            runs = any(map(may_carry, writes))
            for a in sig.pick_tracked_reads(arrays):
                if a is not None:
                    g = a._grad
                    if g is None:
                        pending[id(a)] = (rec, a)
                    elif runs:
                        live_add(id(g) if g._owner is None else grad_key(g))
            if runs:
                check_backward(rec.kernel)
                schedule.append(rec)
        return schedule

    @staticmethod
    def _check_untracked_writes(rec, sig):
        """A kernel that writes into an array held by a struct element of an array (`holders[i].values[j] = x`)
        writes where the Tape cannot see; its adjoint is refused (the element's array has no gradient array
        here). Raise that refusal when the kernel reads an array with a gradient, rather than skip the launch
        and leave that gradient silently without the write's contribution."""
        error = rec.kernel.adjoint_error
        if error is not None and getattr(error, "untracked_writes", False) and \
                any(a is not None and a._grad is not None for a in sig.pick_tracked_reads(rec.arrays)):
            raise error

    @staticmethod
    def _check_pending_writes(rec, pending: dict):
        """`rec` is the last launch before the readers in `pending` to write the arrays it writes: raise
        MissingGradientError if it wrote one of them from arrays with gradients."""
        arrays = rec.arrays
        sig = signature(rec.kernel)
        for i in sig.tracked_writes:
            a = arrays[i]
            if a is None or id(a) not in pending:
                continue
            reader, _ = pending.pop(id(a))
            if any(b is not None and b._grad is not None for b in map(arrays.__getitem__, sig.tracked_reads)):
                reader_sig = signature(reader.kernel)
                entry = next(e for e in reader_sig.tracked_reads if reader.arrays[e] is a)
                path = reader_sig.tracked[entry].path
                source_path = sig.tracked[i].path
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
        array_class = _ARRAY
        for param in signature(k).adjoint_params:
            index, name, t = param.index, param.name, param.type
            v = values[index]
            if param.kind is ParamKind.ARRAY and t.indexed:
                adj_values[index] = self._indexed_adjoint(k, index, t, v, packed, name, device)
            elif param.kind is ParamKind.ARRAY:
                if not isinstance(v, array_class) or v._foreign:
                    continue
                g = v._grad
                if g is None:
                    continue
                touched[id(v)] = v
                if g.__class__ is not array_class or g.dtype is not t.dtype or g.ndim != t.ndim \
                        or g.device is not device:
                    pack_array(k, index, t, g, device)  # a gradient set by hand that does not fit: raises
                if v._retain_grad:
                    setattr(packed, name, g._desc_retain or g._own_grad_descriptor(True))
                else:
                    setattr(packed, name, g._desc_consume or g._own_grad_descriptor(False))
                adj_values[index] = g
            elif v is not None:
                adj, c = self._memo_struct_adjoint(v, t)
                setattr(packed, name, c)
                adj_values[index] = adj
        return adj_values, packed

    def _indexed_adjoint(self, kernel, index, t, v, packed, name, device):
        """The adjoint of indexed array argument `v`: the same indexing of its parent's gradient (consumed by
        plain writes unless the parent has retain_grad), packed into `packed.name`; None without one."""
        parent = _indexed_parent(v)
        if parent is None or parent._grad is None:
            return None
        self.touched[id(parent)] = parent
        g = v.grad
        setattr(packed, name, pack_indexed(kernel, index, t, g, device, consume=not parent._retain_grad))
        return g

    def zero(self):
        """Zero every gradient this tape has touched: those its launches' adjoints read or write (the arrays and
        struct members the kernels access), the seeded ones and those of copies and record_func arrays, so that
        rounds never accumulate."""
        touched = self.touched
        # one flat pass at C speed over every record's arrays (Nones and arrays without gradients included)
        arrays = list(chain.from_iterable([rec.arrays for rec in self.launches if rec.__class__ is LaunchRecord]))
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


def _indexed_parent(v):
    """The parent array of indexed array `v` (Warp's wp.indexedarray), the array whose gradient the Tape follows
    for it; None for anything else."""
    if getattr(v, "_wp_indexed_", False) and v.data is not None and not v.data._foreign:
        return v.data
    return None


def _describe_path(path: str) -> str:
    head, *fields = path.split(".")
    if not fields:
        return f"array argument '{head}'"
    return f"field '{'.'.join(fields)}' of struct argument '{head}'"
