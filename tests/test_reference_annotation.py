"""`wp.ref[T]` (Warp 1.19's pass-by-reference parameters): the annotation object has Warp's API, and a @wp.func
annotated with one is refused in one line when a kernel calling it is built (kernels' functions take and return
values; the refusal says to return the updated value instead). Never compiled as a by-value copy, which would
silently drop the caller's update."""

import pytest

import kernels as wp
from kernels.reference import Reference


def test_the_annotation_object():
    r = wp.ref[wp.int32]
    assert isinstance(r, Reference)
    assert r.dtype is wp.int32 and r.value_type is wp.int32
    assert repr(r) == "wp.ref[int32]"
    assert r == wp.ref[wp.int32] and hash(r) == hash(wp.ref[wp.int32])
    assert r != wp.ref[wp.float32]
    assert wp.ref[wp.vec3].dtype is wp.vec3


@wp.func
def add_one(x: wp.ref[wp.float32]):
    x += 1.0


@wp.kernel
def calls_add_one(a: wp.array(dtype=float)):
    add_one(a[0])


def test_a_reference_parameter_is_refused_when_built():
    a = wp.zeros(1, dtype=float)
    with pytest.raises(wp.CompileError, match=r"parameter 'x': wp.ref\[T\] parameters \(pass by reference\) are "
                                              r"not supported"):
        wp.launch(calls_add_one, dim=1, inputs=[a])
    assert a.numpy()[0] == 0.0
