"""Warp's name and operator rules in kernels (issue 34), checked against real warp-lang.

- A name that is neither local, a closure variable, a global nor a Python builtin is looked up in the package, so
  `vec3(...)`, `mat22(...)` work without the `wp.` prefix, as in Warp.
- A @wp.func named like an operator (`add`, `mul`, ...) in the kernel's scope replaces the builtin in `a + b`,
  `a * b` and `x += b` where one of its overloads takes the operand types; other operand types keep the builtin.
- `isfinite`, `isnan`, `isinf` of vectors, quaternions and matrices: finite when every component is, NaN or
  infinite when some component is (Warp 1.19's composite overloads).
- A literal bool is a range() bound, the int it is in Python (`range(wp.static(True))`).
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

import _warp_reference

_PROGRAM = '''
@wp.struct
class Complex:
    real: float
    imag: float


@wp.func
def add(a: Complex, b: Complex) -> Complex:
    return Complex(a.real + b.real, a.imag + b.imag)


@wp.func
def mul(a: Complex, b: Complex) -> Complex:
    return Complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)


@wp.kernel
def operators(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    a = Complex(x[0], x[1])
    b = Complex(x[2], 4.0)
    c = a + b
    d = a * b
    d *= c
    v = vec3(x[0], 2.0, 3.0) * 3.0  # the builtin: `mul` takes no vectors
    m = mat22(1.0, x[1], 3.0, 4.0)
    out[0] = c.real
    out[1] = c.imag
    out[2] = d.real
    out[3] = d.imag
    out[4] = v[0] + v[2]
    out[5] = (m * vec2(1.0, x[2]))[0]
    out[6] = x[0] * x[1] + x[2]


@wp.kernel
def classify(vectors: wp.array(dtype=wp.vec3), quats: wp.array(dtype=wp.quatd), mats: wp.array(dtype=wp.mat22h),
             out: wp.array(dtype=int)):
    i = wp.tid()
    r = 0
    if wp.isfinite(vectors[i]):
        r += 1
    if wp.isnan(vectors[i]):
        r += 2
    if wp.isinf(vectors[i]):
        r += 4
    if wp.isfinite(quats[i]):
        r += 8
    if wp.isnan(quats[i]):
        r += 16
    if wp.isinf(quats[i]):
        r += 32
    if wp.isfinite(mats[i]):
        r += 64
    if wp.isnan(mats[i]):
        r += 128
    if wp.isinf(mats[i]):
        r += 256
    out[i] = r


def run(wp, Tape):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, device="cpu", requires_grad=True)
    out = wp.zeros(7, dtype=float, device="cpu", requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(operators, dim=1, inputs=[x, out], device="cpu")
    out.grad.fill_(1.0)
    tape.backward()
    inf, nan = float("inf"), float("nan")
    rows = [[0.0, 1.0, 2.0], [nan, 1.0, 2.0], [0.0, -inf, 2.0], [nan, inf, 0.0]]
    vectors = wp.array(rows, dtype=wp.vec3, device="cpu")
    quats = wp.array([r + [1.0] for r in rows[1:]] + [[0.0, 0.0, 0.0, 1.0]], dtype=wp.quatd, device="cpu")
    mats = wp.array([[[r[0], 1.0], [r[2], r[1]]] for r in rows[::-1]], dtype=wp.mat22h, device="cpu")
    flags = wp.zeros(4, dtype=int, device="cpu")
    wp.launch(classify, dim=4, inputs=[vectors, quats, mats, flags], device="cpu")
    return {"out": out.numpy(), "x_grad": x.grad.numpy(), "flags": flags.numpy()}
'''


def test_values_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "operator_names")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


@wp.func
def mul(a: wp.vec2d, b: wp.vec2d) -> wp.vec2d:  # the operator `*` on two vec2d: complex multiplication
    return wp.vec2d(a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


@wp.kernel
def complex_cube(z: wp.array(dtype=wp.vec2d), out: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    w = z[i] * z[i]
    w *= z[i]
    out[i] = w * wp.float64(2.0)  # vec2d * float64: no overload of the user `mul` takes it, the builtin runs


def test_user_operator_values_and_gradient():
    z = wp.array(np.array([[1.0, 2.0], [0.5, -1.5]]), dtype=wp.vec2d, requires_grad=True)
    out = wp.zeros(2, dtype=wp.vec2d, requires_grad=True)
    wp.launch(complex_cube, dim=2, inputs=[z, out])
    expect = 2.0 * (np.array([1 + 2j, 0.5 - 1.5j]) ** 3)
    np.testing.assert_allclose(out.numpy()[:, 0] + 1j * out.numpy()[:, 1], expect, rtol=1e-12)

    def cube(z):
        out = wp.zeros(2, dtype=wp.vec2d, requires_grad=True)
        wp.launch(complex_cube, dim=2, inputs=[z, out])
        return out

    gradcheck(cube, [z])


def test_classification_is_not_differentiable_but_its_branches_are():
    @wp.kernel
    def guarded(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        if wp.isfinite(v[i]):
            out[i] = wp.dot(v[i], v[i])

    v = wp.array(np.array([[1.0, 2.0, 3.0], [np.inf, 0.0, 0.0]], dtype=np.float32), dtype=wp.vec3,
                 requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(guarded, dim=2, inputs=[v, out])
    out.grad.fill_(1.0)
    tape.backward()
    np.testing.assert_array_equal(out.numpy(), [14.0, 0.0])
    np.testing.assert_array_equal(v.grad.numpy(), [[2.0, 4.0, 6.0], [0.0, 0.0, 0.0]])


@wp.kernel(module="unique")
def bool_bounds(out: wp.array(dtype=wp.int32)):
    count = int(0)
    for _ in range(wp.static(True)):
        count += 1
    for _ in range(False, 3):
        count += 10
    out[0] = count


def test_a_literal_bool_is_a_range_bound_as_in_python():
    out = wp.zeros(1, dtype=wp.int32)
    wp.launch(bool_bounds, dim=1, inputs=[out])
    assert out.numpy()[0] == 31  # Warp's test_static: range(wp.static(True)) runs once


def test_cuda_source_compiles_to_ptx():
    pytest.importorskip("cuda.bindings")
    from kernels.compiler.nvrtc import compile_source, render_cuda_source

    @wp.kernel(module="unique")
    def classify_all(v: wp.array(dtype=wp.vec3h), q: wp.array(dtype=wp.quatd), m: wp.array(dtype=wp.mat22),
                     out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = int(wp.isfinite(v[i])) + int(wp.isnan(q[i])) + int(wp.isinf(m[i]))

    source = render_cuda_source([classify_all], adjoint=True)
    compile_source(source, 90, "classify.cu", "ptx")
