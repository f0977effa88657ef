"""Two of issue 34's wrong numbers: a scalar wp.tid() of a multi-dimensional launch, and a gradient through an
array held by an element of an array of structs.

- `i = wp.tid()` in a kernel launched with dim=(3, 4) is the first coordinate (Warp 1.19), not the flat index.
- `holders[0].values[0].x = src[0]`, with `holders` an array of structs: Warp keeps each array's gradient pointer
  inside it; kernels keeps a struct argument's gradient arrays beside the struct, so an element read from an
  array of structs has none. Backward refuses (it skipped the launch and left src.grad zero before); the same
  store through a struct argument is differentiated.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape

import _warp_reference


@wp.kernel
def count_first_coordinate(counts: wp.array(dtype=int), flat: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(counts, i, 1)
    a, b = wp.tid()
    flat[a * 4 + b] = i


def test_scalar_tid_of_a_2d_launch_is_the_first_coordinate():
    counts, flat = wp.zeros(3, dtype=int), wp.zeros(12, dtype=int)
    wp.launch(count_first_coordinate, dim=(3, 4), inputs=[counts, flat])
    np.testing.assert_array_equal(counts.numpy(), [4, 4, 4])
    np.testing.assert_array_equal(flat.numpy(), np.repeat(np.arange(3), 4))


@wp.struct
class Holder:
    values: wp.array(dtype=wp.vec3)


@wp.kernel
def store_through_array_of_structs(holders: wp.array(dtype=Holder), src: wp.array(dtype=float)):
    holders[0].values[0].x = src[0]


@wp.kernel
def store_through_struct(holder: Holder, src: wp.array(dtype=float)):
    holder.values[0].x = src[0]


def _holder():
    holder = Holder()
    holder.values = wp.array([[2.0, 3.0, 4.0]], dtype=wp.vec3, requires_grad=True)
    return holder


def test_gradient_through_an_array_of_structs_is_refused_not_zero():
    holder = _holder()
    holders = wp.array([holder], dtype=Holder)
    src = wp.array([5.0], dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(store_through_array_of_structs, dim=1, inputs=[holders, src])
    np.testing.assert_array_equal(holder.values.numpy(), [[5.0, 3.0, 4.0]])  # the forward runs
    holder.values.grad.fill_(wp.vec3(1.0))
    with pytest.raises(wp.CompileError, match="array field 'values' of an element of an array of structs"):
        tape.backward()
    assert src.grad.numpy()[0] == 0.0


def test_the_same_store_through_a_struct_argument_is_differentiated():
    holder = _holder()
    src = wp.array([5.0], dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(store_through_struct, dim=1, inputs=[holder, src])
    holder.values.grad.fill_(wp.vec3(1.0))
    tape.backward()
    np.testing.assert_array_equal(src.grad.numpy(), [1.0])
    np.testing.assert_array_equal(holder.values.grad.numpy(), [[0.0, 1.0, 1.0]])


_PROGRAM = '''
@wp.kernel
def k(counts: wp.array(dtype=int), firsts: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(counts, i, 1)
    a, b, c = wp.tid()
    firsts[(a * 3 + b) * 2 + c] = i


def run(wp, Tape):
    counts, firsts = wp.zeros(4, dtype=int, device="cpu"), wp.zeros(24, dtype=int, device="cpu")
    wp.launch(k, dim=(4, 3, 2), inputs=[counts, firsts], device="cpu")
    return {"counts": counts.numpy(), "firsts": firsts.numpy()}
'''


def test_tid_is_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "scalar_tid")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
