"""Warp's generic constructors and overload stubs (issue 34), checked against real warp-lang.

- `type(x)(...)`, `type(x).dtype(...)`, `a.dtype(...)` in a generic kernel construct a value of the type of a
  run-time value (a scalar, vector, matrix or struct; an array's element type), with gradients through them.
- `@wp.overload` on a stub defined after the generic kernel (so that the stub rebinds the kernel's name) finds the
  kernel by module and qualified name, as Warp does; a return annotation on a stub and an ambiguous lookup are
  refused with Warp's messages.
- An undefined name is Warp's KeyError, "Referencing undefined symbol: ...".
"""

import importlib.util
from typing import Any

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

import _warp_reference

_PROGRAM = '''
from typing import Any


@wp.struct
class Pair:
    a: float
    b: wp.vec2


@wp.kernel
def generic_copies(x: wp.array(dtype=Any), s: Any, out: wp.array(dtype=float)):
    i = wp.tid()
    zero = type(x[i])()
    one = type(x).dtype(x[i]) * x.dtype.dtype(2.0)
    half = x.dtype(x[i]) + zero
    p = type(s)(s.a * 3.0, s.b)
    out[i] = float(wp.length(one) + wp.length(half)) + p.a + p.b[1] + float(type(i)(2.7))


def run(wp, Tape):
    x = wp.array([[1.0, 2.0, 2.0], [0.0, 3.0, 4.0]], dtype=wp.vec3d, device="cpu")
    s = Pair()
    s.a = 1.5
    s.b = wp.vec2(0.25, 0.5)
    out = wp.zeros(2, dtype=float, device="cpu")
    k = wp.overload(generic_copies, [wp.array(dtype=wp.vec3d), Pair, wp.array(dtype=float)])
    wp.launch(k, dim=2, inputs=[x, s, out], device="cpu")
    return {"out": out.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "generic_type_of")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


@wp.kernel
def scaled_copy(x: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = type(x[i])(x[i] * x[i]) + x.dtype(1.5)


def test_gradient_through_type_of_constructors():
    def fn(x):
        out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
        wp.launch(scaled_copy, dim=3, inputs=[x, out])
        return out

    x = wp.array([0.5, -1.0, 2.0], dtype=wp.float64, requires_grad=True)
    np.testing.assert_allclose(fn(x).numpy(), [1.75, 2.5, 5.5])
    gradcheck(fn, [x])


@wp.kernel
def stubbed(x: Any, out: wp.array(dtype=float)):
    out[0] = float(x) * 2.0


def stubbed(x: wp.float64, out: wp.array(dtype=float)): ...  # noqa: F811  (Warp's stub form rebinds the name)


def test_overload_stub_defined_after_the_kernel_finds_it():
    kernel = wp.overload(stubbed)
    out = wp.zeros(1, dtype=float)
    wp.launch(kernel, dim=1, inputs=[wp.float64(1.25), out])
    assert out.numpy()[0] == 2.5


def test_overload_stub_refusals_are_warps():
    @wp.kernel
    def returns_nothing(x: Any):
        return

    with pytest.raises(TypeError, match=r"Return annotations are not allowed on @wp\.overload stubs"):
        @wp.overload
        def returns_nothing(x: float) -> float: ...  # noqa: F811

    def factory(x: Any):
        return

    wp.kernel(name="factory_a")(factory)
    wp.kernel(name="factory_b")(factory)
    with pytest.raises(RuntimeError, match="Ambiguous kernel lookup"):
        @wp.overload
        def factory(x: float): ...  # noqa: F811


def test_undefined_name_is_warps_key_error():
    @wp.kernel(module="unique")
    def kernel():
        _ = typez(1)(0)  # noqa: F821

    with pytest.raises(KeyError, match="Referencing undefined symbol: typez"):
        wp.launch(kernel, dim=1, inputs=[])
