"""wp.tile_stack (kernels/tile_stack_type.py, kernels/native/tile_stack.h): push, pop, count and clear in one lane
(a CPU block, as warp-lang's CPU backend runs it) against a Python list, the refusals (a stack updated inside a
@wp.func, a value of another type, cooperative CPU blocks), and Warp's values on the same program."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from kernels.errors import CompileError, LaunchError

import _warp_reference

CAPACITY = wp.constant(3)


@wp.kernel
def stack_script(ops: wp.array(dtype=int), values: wp.array(dtype=wp.vec3), out_slot: wp.array(dtype=int),
                 out_value: wp.array(dtype=wp.vec3), out_count: wp.array(dtype=int)):
    # op codes: 0 push, 1 pop, 2 clear, 3 push with has_value false
    s = wp.tile_stack(capacity=CAPACITY, dtype=wp.vec3)
    for k in range(ops.shape[0]):
        op = ops[k]
        if op == 0 or op == 3:
            out_slot[k] = wp.tile_stack_push(s, values[k], op == 0)
        elif op == 1:
            v, slot = wp.tile_stack_pop(s)
            out_slot[k] = slot
            out_value[k] = v
        else:
            wp.tile_stack_clear(s)
        out_count[k] = wp.tile_stack_count(s)


def _reference(ops, values):
    stack, slots, popped, counts = [], [], [], []
    for op, v in zip(ops, values):
        slot, value = -2, np.zeros(3)
        if op in (0, 3):
            slot = -1
            if op == 0 and len(stack) < 3:
                slot = len(stack)
                stack.append(v)
        elif op == 1:
            slot, value = (len(stack) - 1, stack.pop()) if stack else (-1, np.zeros(3))
        else:
            stack.clear()
        slots.append(slot)
        popped.append(value)
        counts.append(len(stack))
    return np.array(slots), np.array(popped), np.array(counts)


def test_one_lane_is_a_lifo_stack(device):
    rng = np.random.default_rng(4)
    ops = rng.integers(0, 4, size=40).astype(np.int32)
    values = rng.normal(size=(40, 3)).astype(np.float32)
    slots = wp.full(40, -2, dtype=int, device=device)
    popped = wp.zeros(40, dtype=wp.vec3, device=device)
    counts = wp.zeros(40, dtype=int, device=device)
    wp.launch_tiled(stack_script, dim=[1], inputs=[wp.array(ops, dtype=int, device=device),
                                                    wp.array(values, dtype=wp.vec3, device=device), slots, popped,
                                                    counts], block_dim=16, device=device)
    want_slots, want_values, want_counts = _reference(ops, values)
    np.testing.assert_array_equal(slots.numpy(), want_slots)
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    np.testing.assert_array_equal(popped.numpy()[ops == 1], want_values[ops == 1])


@wp.func
def push_in_func(s: wp.tile_stack(capacity=CAPACITY, dtype=int), value: int):
    wp.tile_stack_push(s, value, True)


@wp.kernel
def pushes_through_a_func(out: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=CAPACITY, dtype=int)
    push_in_func(s, 7)
    out[0] = wp.tile_stack_count(s)


@wp.kernel
def pushes_a_float(out: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=CAPACITY, dtype=int)
    out[0] = wp.tile_stack_push(s, 1.5, True)


@wp.kernel
def one_push(out: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=CAPACITY, dtype=int)
    out[0] = wp.tile_stack_push(s, 1, True)


def test_refusals(device):
    out = wp.zeros(1, dtype=int, device=device)
    # Warp passes a stack by reference: a copy updated in the function would leave the caller's count at 0
    with pytest.raises(CompileError, match="passed into a @wp.func"):
        wp.launch_tiled(pushes_through_a_func, dim=[1], inputs=[out], block_dim=8, device=device)
    with pytest.raises(TypeError, match="does not match"):
        wp.launch_tiled(pushes_a_float, dim=[1], inputs=[out], block_dim=8, device=device)
    with pytest.raises(ValueError, match="positive integer"):
        wp.tile_stack(capacity=0, dtype=int)
    # in Warp every lane of a cooperative block pushes; a CPU block here is one lane
    old = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = True
    try:
        with pytest.raises(LaunchError, match="cooperative"):
            wp.launch_tiled(one_push, dim=[1], inputs=[out], block_dim=8, device="cpu")
    finally:
        wp.config.enable_cpu_blocks = old


_PROGRAM = '''
import numpy as np

CAP = wp.constant(2)


@wp.kernel
def stacks(out_i: wp.array(dtype=int), out_f: wp.array(dtype=float)):
    i, j = wp.tid()
    a = wp.tile_stack(capacity=CAP, dtype=int)
    b = wp.tile_stack(capacity=CAP, dtype=float)
    out_i[i * 8 + 0] = wp.tile_stack_push(a, i * 10 + j, True)
    out_i[i * 8 + 1] = wp.tile_stack_push(a, i, i % 2 == 0)
    out_i[i * 8 + 2] = wp.tile_stack_push(a, 5, True)
    out_i[i * 8 + 3] = wp.tile_stack_count(a)
    v, slot = wp.tile_stack_pop(a)
    out_i[i * 8 + 4] = v
    out_i[i * 8 + 5] = slot
    wp.tile_stack_push(b, float(i) * 0.5, True)
    wp.tile_stack_clear(a)
    out_i[i * 8 + 6] = wp.tile_stack_count(a)
    w, slot_b = wp.tile_stack_pop(b)
    out_f[i] = w
    e, slot_e = wp.tile_stack_pop(b)
    out_i[i * 8 + 7] = slot_e


def run(wp, Tape):
    out_i = wp.zeros(32, dtype=int)
    out_f = wp.zeros(4, dtype=float)
    wp.launch_tiled(stacks, dim=[4], inputs=[out_i, out_f], block_dim=32)
    return {"ints": out_i.numpy(), "floats": out_f.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_stack")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
