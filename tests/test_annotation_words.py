"""Annotations with Warp 1.19's rules and words (issue 34): a string annotation is evaluated with the function's
closure too (a kernel factory's `"wp.array(dtype=dtype)"`), a wrong return annotation is spelled as written
(`int`), and the note naming the caller of a function that failed to compile comes before the message, so that
the text ends with Warp's message (patterns anchored at the end, as Warp's tests write them, match)."""

import numpy as np
import pytest

import kernels as wp


def _factory(dtype):
    def fill(out: "wp.array(dtype=dtype)"):  # noqa: F821  (`dtype` is the factory's, read from the closure)
        i = wp.tid()
        out[i] = dtype(4.5)

    return wp.Kernel(func=fill, module="unique")


def test_string_annotations_see_the_closure():
    for dtype in (wp.float32, wp.float64, wp.int32):
        out = wp.zeros(2, dtype=dtype)
        wp.launch(_factory(dtype), dim=2, inputs=[out])
        np.testing.assert_array_equal(out.numpy(), [4.5, 4.5] if dtype is not wp.int32 else [4, 4])


@wp.func
def _wrong_return(x: float) -> int:
    return x * 2.0


@wp.kernel(module="unique")
def _calls_wrong_return(out: wp.array(dtype=float)):
    out[0] = float(_wrong_return(1.0))


def test_a_wrong_return_annotation_ends_with_warps_message():
    with pytest.raises(wp.CompileError, match=r"called from '_calls_wrong_return'[\s\S]*The function `_wrong_return` "
                                              r"has its return type annotated as `int` but the code returns a value "
                                              r"of type `float32`\.$"):
        wp.launch(_calls_wrong_return, dim=1, inputs=[wp.zeros(1, dtype=float)])
