"""`CheckpointedRollout`: differentiate a long rollout keeping only every k-th state, recomputing segments in
backward, so that memory grows like sqrt(steps) while the gradient equals the full tape's.

    rollout = CheckpointedRollout(lambda i, a, b: solver.step(model, a, b, None, dt), None, num_steps=1000,
                                  state_arrays=("particle_q", "particle_qd"))
    tape = Tape()
    with tape:
        final = rollout.run(model.state(requires_grad=True), observe=accumulate_loss)
        wp.launch(final_loss, dim=n, inputs=[final.particle_q, loss])
    tape.backward(loss=loss)  # gradients reach state0's arrays and every model array the steps read

Contract of the callables:
    step_fn(i, state_in, state_out): advance step i (0-based) by launching kernels. It must write every state
        array of `state_out` from `state_in` (never read `state_out`), must not keep references to the states, and
        must be a deterministic function of `state_in` and of arrays the rollout does not write: anything carried
        from one step to the next belongs in the state. Arrays of a state that are not state arrays are scratch
        (overwritten before being read in each step, as `particle_f` is by the solvers).
    clone_state(state): a new state object whose arrays are copies of `state`'s, each array that gradients flow
        through with a zeroed gradient buffer. None uses `clone_state` of this module. It is never taped.
    observe(n, state): optional, called after every step with the state after n steps (n = 1..num_steps); launches
        kernels that accumulate results (a loss) into arrays outside the state. In backward it runs again on
        recomputed states, so losses at intermediate steps contribute gradient; arrays it (or step_fn) writes are
        saved before the recomputation and restored after it, so their values are those of the forward pass.
        The state it receives is reused afterwards: copy what you need to keep.
"""

from __future__ import annotations

import contextlib
import copy
import math

import kernels as wp
from kernels.tape_interface import copy_hooks, launch_hooks, signature

from .tape import Tape


def clone_state(state):
    """A shallow copy of `state` whose array attributes are copies; float arrays get zeroed gradient buffers."""
    out = copy.copy(state)
    for name, a in vars(state).items():
        if isinstance(a, wp.array):
            setattr(out, name, wp.clone(a, requires_grad=_is_float_array(a)))
    return out


_default_clone_state = clone_state  # the constructor's argument of the same name shadows it


def state_bytes(state, names=None, *, gradients: bool = True) -> int:
    """Bytes of the arrays of `state` (those in `names`, or all), with their gradient buffers if `gradients`."""
    total = 0
    for name in names if names is not None else vars(state):
        a = getattr(state, name, None)
        if isinstance(a, wp.array):
            total += _nbytes(a) + (_nbytes(a.grad) if gradients and a.grad is not None else 0)
    return total


class CheckpointedRollout:
    """A rollout of `num_steps` steps whose backward pass recomputes segments from checkpoints.

    Forward (`run`) keeps a copy of the state arrays every `checkpoint_every` steps and records a single entry on
    the active Tape. Backward walks the segments in reverse: it restores a segment's start state, replays the
    segment (steps and observe calls) under a local Tape, seeds the segment's end state with the adjoint flowing
    back from later steps, and carries the adjoint of the start state to the previous segment; the first
    segment's start adjoint is added into `state0`'s gradients. Gradients of other arrays the steps read
    (model parameters) accumulate across segments; no gradient outside the rollout's own states is zeroed.

    At most about num_steps / k + k + 3 states are held at once (checkpoints, one segment, the carried adjoint
    and the final state): 2 sqrt(num_steps) + 3 with the default k, against num_steps for a full tape.

    Args:
        step_fn: step_fn(i, state_in, state_out), see the module docstring.
        clone_state: clone_state(state) -> new state, see the module docstring; None: `clone_state` here.
        num_steps: number of steps (>= 1).
        checkpoint_every: steps per segment k; None: ceil(sqrt(num_steps)).
        state_arrays: names of the state's array attributes that hold the state: checkpointed, and their adjoints
            carried between segments. None: every array attribute of the initial state.

    Attributes:
        peak_states: most states held at once by the rollout (a checkpoint counts as one), forward or backward.
        peak_state_bytes: most bytes of states (with gradient buffers) and checkpoints held at once.
    """

    def __init__(self, step_fn, clone_state=None, num_steps: int = 1, checkpoint_every: int | None = None, *,
                 state_arrays=None):
        if not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
        k = math.isqrt(num_steps - 1) + 1 if checkpoint_every is None else checkpoint_every  # ceil(sqrt(n))
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"checkpoint_every must be a positive int or None, got {checkpoint_every!r}")
        self.step_fn = step_fn
        self.clone_state = clone_state if clone_state is not None else _default_clone_state
        self.num_steps = num_steps
        self.checkpoint_every = min(k, num_steps)
        self.state_arrays = tuple(state_arrays) if state_arrays is not None else None
        self._ledger = _Ledger()

    @property
    def segments(self) -> list:
        """(first step, end step) of each segment."""
        k = self.checkpoint_every
        return [(b, min(b + k, self.num_steps)) for b in range(0, self.num_steps, k)]

    @property
    def peak_states(self) -> int:
        return self._ledger.peak_count

    @property
    def peak_state_bytes(self) -> int:
        return self._ledger.peak_bytes

    @staticmethod
    def full_tape_state_bytes(state, num_steps: int) -> int:
        """Bytes of the states a fully taped rollout of `num_steps` steps holds: one new state (with gradient
        buffers) per step, like `state`."""
        return num_steps * state_bytes(state)

    # -------------------------------------------------------------------------------------------- forward

    def run(self, state0, observe=None, *, tape: Tape | None = None):
        """Run every step from `state0` and return the final state (a new object). When a Tape is recording (or
        `tape` is given), one entry is recorded on it whose backward differentiates the whole rollout."""
        names = self._state_names(state0)
        outer = tape if tape is not None else _active_tape()
        self._ledger = ledger = _Ledger()
        collector = _LaunchCollector(state0)
        if outer is not None:
            launch_hooks.append(collector)  # the last hook gets the launches: nothing reaches the outer tape
            copy_hooks.append(_ignore_copy)  # nor do copies: the recomputation in backward makes them again
        try:
            final, checkpoints = self._forward(state0, names, observe, collector, ledger)
        finally:
            if outer is not None:
                launch_hooks.remove(collector)
                copy_hooks.remove(_ignore_copy)
        if outer is None:
            return final

        def backward():
            self._backward(state0, final, checkpoints, names, observe, list(collector.written.values()), ledger)

        arrays = [getattr(s, n) for s in (state0, final) for n in names] + list(collector.gradient_arrays.values())
        outer.record_func(backward, [a for a in arrays if isinstance(a, wp.array) and a.grad is not None])
        return final

    def _state_names(self, state0) -> tuple:
        if self.state_arrays is None:
            return tuple(n for n, a in vars(state0).items() if isinstance(a, wp.array))
        for n in self.state_arrays:
            if not isinstance(getattr(state0, n, None), wp.array):
                raise ValueError(f"state array '{n}' is not an array attribute of the initial state")
        return self.state_arrays

    def _forward(self, state0, names, observe, collector, ledger):
        """Step from state0 through two alternating states, keeping a snapshot at every segment start."""
        checkpoints = [self._snapshot(state0, names, ledger)]
        cur, spare = state0, None
        for i in range(self.num_steps):
            if spare is None:
                with _untaped():
                    out = self.clone_state(cur)
                ledger.hold(out, state_bytes(out))
                collector.add_internal(out)
            else:
                out, spare = spare, None
            self.step_fn(i, cur, out)
            if observe is not None:
                observe(i + 1, out)
            if (i + 1) % self.checkpoint_every == 0 and i + 1 < self.num_steps:
                checkpoints.append(self._snapshot(out, names, ledger))
            if cur is not state0:
                spare = cur
            cur = out
        if spare is not None:
            ledger.release(spare)
        return cur, checkpoints

    @staticmethod
    def _snapshot(state, names, ledger) -> dict:
        snap = {n: wp.clone(getattr(state, n), requires_grad=False) for n in names}
        ledger.hold(snap, sum(_nbytes(a) for a in snap.values()))
        return snap

    # -------------------------------------------------------------------------------------------- backward

    def _backward(self, state0, final, checkpoints, names, observe, written, ledger):
        # recomputation writes arrays outside the states again (loss accumulators): put back what they hold now
        saved = [(a, wp.clone(a, requires_grad=False)) for a in written]
        try:
            self._backward_segments(state0, final, checkpoints, names, observe, ledger)
        finally:
            for a, values in saved:
                a.assign(values)

    def _backward_segments(self, state0, final, checkpoints, names, observe, ledger):
        carry = final  # state whose gradients hold the adjoint flowing into the current segment's end
        for j in reversed(range(len(checkpoints))):
            begin, end = self.segments[j]
            states = self._restore(state0, checkpoints[j], end - begin, ledger)
            local = Tape()
            with local:
                for i in range(begin, end):
                    self.step_fn(i, states[i - begin], states[i - begin + 1])
                    if observe is not None:
                        observe(i + 1, states[i - begin + 1])
            _copy_gradients(carry, states[-1], names, required=True)
            if j == 0:  # start from what state0 already holds, so that the local backward adds to it
                _copy_gradients(state0, states[0], names, required=True)
            local.backward()  # never local.zero(): it would zero the parameters' gradients too
            if j == 0:
                _copy_gradients(states[0], state0, names, required=False)
            if carry is not final:
                ledger.release(carry)
            for s in states[1:]:
                ledger.release(s)
            carry = states[0]
            del states, local
        ledger.release(carry)

    def _restore(self, template, checkpoint, steps, ledger) -> list:
        """The start state of a segment (restored from its checkpoint) and `steps` fresh states, zero gradients."""
        with _untaped():
            start = self.clone_state(template)
            for n, values in checkpoint.items():
                getattr(start, n).assign(values)
            states = [start] + [self.clone_state(start) for _ in range(steps)]
        for s in states:
            for a in vars(s).values():
                if isinstance(a, wp.array) and a.grad is not None:
                    a.grad.zero_()
            ledger.hold(s, state_bytes(s))
        return states


# ------------------------------------------------------------------------------------------------ helpers


class _Ledger:
    """Counts the states (and checkpoints) the rollout holds, and their bytes, with the peaks."""

    def __init__(self):
        self.held: dict = {}  # id -> bytes
        self.peak_count = 0
        self.peak_bytes = 0

    def hold(self, obj, nbytes: int):
        self.held[id(obj)] = nbytes
        self.peak_count = max(self.peak_count, len(self.held))
        self.peak_bytes = max(self.peak_bytes, sum(self.held.values()))

    def release(self, obj):
        self.held.pop(id(obj), None)


class _LaunchCollector:
    """Tape hook for the untaped forward pass: records nothing, but notes the arrays outside the rollout's states
    that launches use: those with gradients (registered on the outer tape so that its zero() reaches them) and
    those written (restored after backward's recomputation)."""

    def __init__(self, state0):
        self.internal: set = set()
        self.gradient_arrays: dict = {}
        self.written: dict = {}
        self.add_internal(state0)

    def add_internal(self, state):
        self.internal.update(id(a) for a in vars(state).values() if isinstance(a, wp.array))

    def __call__(self, kernel, dim, inputs, outputs, device, launch=None):
        values = list(inputs) + list(outputs)
        for access in signature(kernel).access:
            a = values[access.param]
            for f in access.fields:
                a = getattr(a, f, None)
            if not isinstance(a, wp.array) or a._foreign or id(a) in self.internal:
                continue
            if a.grad is not None:
                self.gradient_arrays[id(a)] = a
            if access.written:
                self.written[id(a)] = a


@contextlib.contextmanager
def _untaped():
    """Launches inside (copies made by clone_state) reach no tape and no collector."""
    def ignore(*args):
        pass

    launch_hooks.append(ignore)
    copy_hooks.append(ignore)
    try:
        yield
    finally:
        launch_hooks.remove(ignore)
        copy_hooks.remove(ignore)


def _ignore_copy(*args):
    pass


def _active_tape() -> Tape | None:
    if not launch_hooks:
        return None
    if isinstance(launch_hooks[-1], _LaunchCollector):
        raise RuntimeError("a checkpointed rollout cannot run inside the forward pass of another one")
    tape = getattr(launch_hooks[-1], "__self__", None)
    if not isinstance(tape, Tape):
        raise RuntimeError("a launch hook that is not an autodiff.Tape is active: pass the tape to run(tape=...)")
    return tape


def _copy_gradients(src, dst, names, *, required: bool):
    """dst.<name>.grad = src.<name>.grad for each state array; a missing source gradient copies as zero."""
    for n in names:
        s, d = getattr(src, n), getattr(dst, n)
        if d.grad is None:
            if required and s.grad is not None:
                raise ValueError(f"state array '{n}' of a state made by clone_state has no gradient buffer: "
                                 f"gradients cannot flow through it")
            continue
        if s.grad is None:
            d.grad.zero_()
        else:
            d.grad.assign(s.grad)


def _is_float_array(a) -> bool:
    try:
        return wp.types.is_float(wp.types.scalar_type(a.dtype))
    except TypeError:  # struct elements
        return False


def _nbytes(a) -> int:
    return a.size * wp.types.type_size_in_bytes(a.dtype)
