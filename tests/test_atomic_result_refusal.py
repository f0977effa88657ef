"""A value returned by an atomic that indexes an array with a gradient (kernels/compiler/passes/atomic_results.py):
the backward, which does not run atomics again, cannot know the index, so its derivation is refused with a clear
error (Warp 1.19 computes it from a stale slot on the CPU: data.grad [2, 0, 0, ...] for a counter kernel whose
right answer is [2, 4, 6, ...]; in deterministic mode it refuses, as kernels does with its WarpDeterminismError).
Forward launches run as before; a stored old value, which the backward does not need, is still differentiated."""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck


@wp.kernel
def take_slots(data: wp.array(dtype=float), counter: wp.array(dtype=wp.int32), out: wp.array(dtype=float)):
    i = wp.tid()
    slot = wp.atomic_add(counter, 0, 1)
    out[slot] = data[i] * 2.0


@wp.func
def next_slot(counter: wp.array(dtype=wp.int32)) -> int:
    return wp.atomic_add(counter, 0, 1)


@wp.kernel
def take_slots_through_function(data: wp.array(dtype=float), counter: wp.array(dtype=wp.int32),
                                 out: wp.array(dtype=float)):
    i = wp.tid()
    s = next_slot(counter)
    if s >= 0:
        out[s] = data[i]


@wp.kernel(module="unique", module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN})
def take_slots_deterministic(data: wp.array(dtype=float), counter: wp.array(dtype=wp.int32),
                             out: wp.array(dtype=float)):
    i = wp.tid()
    slot = wp.atomic_add(counter, 0, 1)
    out[slot] = data[i]


def _taped(kernel, n=8):
    data = wp.array(np.arange(n, dtype=np.float32), requires_grad=True)
    counter = wp.zeros(1, dtype=wp.int32)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(kernel, n, [data, counter, out])
    return tape, out


@pytest.mark.parametrize("kernel", [take_slots, take_slots_through_function])
def test_backward_through_a_counter_slot_is_refused(kernel):
    tape, out = _taped(kernel)
    assert sorted(out.numpy().tolist()) != [0.0] * 8  # the forward ran
    with pytest.raises(wp.CompileError, match="value returned by .*indexes an array that carries a gradient"):
        tape.backward(grads={out: wp.ones_like(out)})


def test_deterministic_mode_refuses_in_warps_words():
    tape, out = _taped(take_slots_deterministic)
    with pytest.raises(wp.WarpDeterminismError, match="cannot differentiate kernel .* automatically"):
        tape.backward(grads={out: wp.ones_like(out)})


@wp.kernel
def old_values(x: wp.array(dtype=float), acc: wp.array(dtype=float), old: wp.array(dtype=float)):
    i = wp.tid()
    old[i] = wp.atomic_add(acc, 0, x[i] * x[i])


def test_a_stored_old_value_is_still_differentiated():
    x = wp.array(np.linspace(0.5, 1.5, 4).astype(np.float32), requires_grad=True)

    def total(x_):
        acc = wp.zeros(1, dtype=float, requires_grad=True)
        old = wp.zeros(4, dtype=float, requires_grad=True)
        wp.launch(old_values, 4, [x_, acc, old])
        return acc

    gradcheck(total, [x])  # raises with its report when the tape's gradient is not central differences


@wp.func
def saved_slot(counter: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32), i: int) -> int:
    s = wp.atomic_add(counter, 0, 1)
    slots[i] = s
    return s


@wp.func_replay(saved_slot)
def replay_saved_slot(counter: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32), i: int) -> int:
    return slots[i]


@wp.kernel
def take_saved_slots(data: wp.array(dtype=float), counter: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32),
                     out: wp.array(dtype=float)):
    i = wp.tid()
    s = saved_slot(counter, slots, i)
    out[s] = data[i] * data[i]


def test_a_slot_whose_function_has_a_custom_replay_is_differentiated():
    """Warp's wp.func_replay: the replay gives the slot the forward saved, so the backward knows the index
    (Warp's test_grad_customs.py test_custom_replay_grad)."""
    x = wp.array(np.linspace(0.5, 1.5, 6).astype(np.float32), requires_grad=True)

    def squares(x_):
        out = wp.zeros(6, dtype=float, requires_grad=True)
        wp.launch(take_saved_slots, 6, [x_, wp.zeros(1, dtype=wp.int32), wp.zeros(6, dtype=wp.int32), out])
        return out

    gradcheck(squares, [x])
