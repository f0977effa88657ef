"""An array as a condition in a kernel (`if a:`, `not a`, `a or b`, `while not a:`), as Warp allows: true when the
array has memory, false for an argument passed as None. Against real Warp, with a gradient through the branch it
guards (central differences), and in the CUDA source (compiled to PTX, no GPU needed)."""

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

import _warp_reference


@wp.kernel
def _conditions(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=int)):
    out[0] = 0
    if not a:
        out[0] = out[0] + 1
    if b:
        out[0] = out[0] + 10
    if a or b:
        out[0] = out[0] + 100
    while not b:
        out[0] = out[0] + 1000
        break


@wp.kernel
def _square_or_default(a: wp.array(dtype=float), scale: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if scale:
        out[i] = a[i] * a[i] * scale[0]
    else:
        out[i] = a[i] * a[i]


def test_an_array_is_true_when_it_has_memory():
    out = wp.zeros(1, dtype=int)
    wp.launch(_conditions, 1, inputs=[None, wp.zeros(2, dtype=float), out])
    assert out.numpy()[0] == 111
    wp.launch(_conditions, 1, inputs=[wp.zeros(2, dtype=float), None, out])
    assert out.numpy()[0] == 1100


def test_gradient_through_the_branch_it_guards():
    scale = wp.array([3.0], dtype=wp.float64)

    def fn(a):
        out = wp.zeros(a.shape[0], dtype=wp.float64, requires_grad=True)
        wp.launch(_square_or_default_f64, a.shape[0], inputs=[a, scale, out])
        return out

    gradcheck(fn, [wp.array(np.array([0.5, -1.5, 2.0]), dtype=wp.float64)])


@wp.kernel
def _square_or_default_f64(a: wp.array(dtype=wp.float64), scale: wp.array(dtype=wp.float64),
                           out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if scale:
        out[i] = a[i] * a[i] * scale[0]
    else:
        out[i] = a[i] * a[i]


_PROGRAM = '''
import numpy as np


@wp.kernel
def conditions(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=int)):
    out[0] = 0
    if not a:
        out[0] = out[0] + 1
    if b:
        out[0] = out[0] + 10
    if a or b:
        out[0] = out[0] + 100


def run(wp, Tape):
    results = []
    for a, b in ((None, wp.zeros(2, dtype=float, device="cpu")), (wp.zeros(2, dtype=float, device="cpu"), None),
                 (None, None)):
        out = wp.zeros(1, dtype=int, device="cpu")
        wp.launch(conditions, 1, inputs=[a, b, out], device="cpu")
        results.append(out.numpy()[0])
    return {"results": np.array(results)}
'''


def test_values_are_warps(tmp_path):
    pytest.importorskip("warp", reason="warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "array_truthiness")
    np.testing.assert_array_equal(ours["results"], warp["results"])


def test_cuda_source_compiles_to_ptx():
    from kernels.compiler.nvrtc import compile_source, render_cuda_source

    source = render_cuda_source([_conditions, _square_or_default], adjoint=True)
    assert "array_truthy" in source
    compile_source(source, 90, "array_truthiness.cu", "ptx")
