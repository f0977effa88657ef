"""Warp's numbers for `wp.static` evaluation and for atomic_min/max at NaN (issue 34).

- `wp.static(expr)` over names that are not the kernel's own is evaluated once, when the decorator runs.
- A loop index after a loop over a constant, non-empty range holds the range's last value, as in Python; a
  later `wp.static(index)` reads it (Warp's test_static nested-loop case).
- atomic_min/max follow fmin/fmax: a NaN element is replaced by the value, a NaN value leaves a number alone; the
  adjoint gives the element's gradient to the value that ended in the element, a NaN value meeting a NaN
  element included (Warp's rule, though NaN != NaN).
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

import _warp_reference


def test_static_expression_runs_once_when_the_decorator_runs():
    reads = []

    class Box:
        @property
        def value(self):
            reads.append(1)
            return 3 + len(reads)

    box = Box()

    @wp.kernel
    def k(out: wp.array(dtype=int)):
        out[0] = wp.static(box.value)

    assert len(reads) == 1
    out = wp.zeros(1, dtype=int)
    wp.launch(k, dim=1, inputs=[out])
    assert out.numpy()[0] == 4 and len(reads) == 1


@wp.kernel
def loop_index_after(n: int, out: wp.array(dtype=int)):
    i = 5
    for i in range(4):
        pass
    out[0] = i
    idx = 0
    for g in range(2):
        for g in range(3):  # noqa: B007  (the inner loop rebinds the outer index, as Python does)
            pass
        out[1 + idx] = wp.static(g)
        idx += 1
    j = 7
    if n > 1:
        for j in range(3):
            pass
    out[3] = j
    m = 9
    for m in range(n):
        pass
    out[4] = m  # a run-time range: the binding from before the loop (the case is left as it was)


def test_loop_index_after_a_constant_range_is_its_last_value():
    out = wp.zeros(5, dtype=int)
    wp.launch(loop_index_after, dim=1, inputs=[3, out])
    np.testing.assert_array_equal(out.numpy()[:4], [3, 2, 2, 2])
    wp.launch(loop_index_after, dim=1, inputs=[1, out])
    assert out.numpy()[3] == 7


@wp.kernel
def atomic_minmax(a: wp.array(dtype=float), b: wp.array(dtype=float), lo: wp.array(dtype=float),
                  hi: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    lo[i] = a[i]
    hi[i] = a[i]
    out[i] = wp.atomic_min(lo, i, b[i]) + wp.atomic_max(hi, i, b[i])


NAN = float("nan")
ROWS_A = [-1.0, NAN, NAN, -1.0, NAN, 2.0, 5.0]
ROWS_B = [NAN, -1.0, NAN, 2.0, 2.0, NAN, 1.0]


def test_atomic_minmax_at_nan_is_fmin_fmax():
    a, b = wp.array(ROWS_A, dtype=float), wp.array(ROWS_B, dtype=float)
    lo, hi, out = (wp.zeros(len(ROWS_A), dtype=float) for _ in range(3))
    wp.launch(atomic_minmax, dim=len(ROWS_A), inputs=[a, b, lo, hi, out])
    np.testing.assert_array_equal(lo.numpy(), np.fmin(ROWS_A, ROWS_B).astype(np.float32))
    np.testing.assert_array_equal(hi.numpy(), np.fmax(ROWS_A, ROWS_B).astype(np.float32))


@wp.kernel
def atomic_min_only(slot: wp.array(dtype=float), value: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.atomic_min(slot, i, value[i])


def test_atomic_min_adjoint_at_nan_goes_to_the_value_that_was_written():
    rows = [(NAN, NAN, 1.0), (NAN, 2.0, 1.0), (2.0, NAN, 0.0), (5.0, 2.0, 1.0), (2.0, 5.0, 0.0)]
    slot = wp.array([r[0] for r in rows], dtype=float, requires_grad=True)
    value = wp.array([r[1] for r in rows], dtype=float, requires_grad=True)
    out = wp.zeros(len(rows), dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(atomic_min_only, dim=len(rows), inputs=[slot, value, out])
    tape.backward(grads={slot: np.ones(len(rows), dtype=np.float32)})
    np.testing.assert_array_equal(value.grad.numpy(), [r[2] for r in rows])


@wp.kernel
def atomic_minmax_loss(x: wp.array(dtype=wp.float64), lo: wp.array(dtype=wp.float64),
                       hi: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_min(lo, 0, x[i] * x[i])
    wp.atomic_max(hi, 0, x[i] * wp.float64(3.0))


def test_atomic_minmax_gradient_against_central_differences():
    def fn(x):
        lo = wp.full(1, 10.0, dtype=wp.float64, requires_grad=True)
        hi = wp.full(1, -10.0, dtype=wp.float64, requires_grad=True)
        wp.launch(atomic_minmax_loss, dim=x.shape[0], inputs=[x, lo, hi])
        return lo, hi

    gradcheck(fn, [wp.array(np.array([0.9, -0.4, 1.3]), dtype=wp.float64)])


_PROGRAM = '''
@wp.kernel
def k(a: wp.array(dtype=float), b: wp.array(dtype=float), lo: wp.array(dtype=float),
      hi: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    lo[i] = a[i]
    hi[i] = a[i]
    out[i] = wp.atomic_min(lo, i, b[i]) + wp.atomic_max(hi, i, b[i])


@wp.kernel
def statics(out: wp.array(dtype=int)):
    idx = 0
    for g in range(2):
        for g in range(3):
            pass
        out[idx] = wp.static(g)
        idx += 1


def run(wp, Tape):
    nan = float("nan")
    rows_a = [-1.0, nan, nan, -1.0, nan, 2.0, 5.0]
    rows_b = [nan, -1.0, nan, 2.0, 2.0, nan, 1.0]
    a = wp.array(rows_a, dtype=float, device="cpu", requires_grad=True)
    b = wp.array(rows_b, dtype=float, device="cpu", requires_grad=True)
    lo, hi, out = (wp.zeros(7, dtype=float, device="cpu", requires_grad=True) for _ in range(3))
    tape = Tape()
    with tape:
        wp.launch(k, dim=7, inputs=[a, b, lo, hi, out], device="cpu")
    lo.grad.fill_(1.0)
    hi.grad.fill_(2.0)
    tape.backward()
    s = wp.zeros(2, dtype=int, device="cpu")
    wp.launch(statics, dim=1, inputs=[s], device="cpu")
    return {"lo": lo.numpy(), "hi": hi.numpy(), "b_grad": b.grad.numpy(), "statics": s.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "static_and_atomic_nan")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


@wp.kernel
def loop_index_then_rebound_in_a_while(out: wp.array(dtype=int)):
    s = int(0)
    for i in range(2):
        s = s + i
    k = int(0)
    while k < 3:
        i = i + 1  # the index left by the loop (1), rebound in a dynamic loop: carried, not a constant
        k = k + 1
    out[0] = i


def test_loop_index_after_its_range_rebound_in_a_dynamic_loop_is_carried():
    out = wp.zeros(1, dtype=int)
    wp.launch(loop_index_then_rebound_in_a_while, dim=1, inputs=[out])
    assert out.numpy()[0] == 4
