"""`*x` in kernel calls (Warp 1.19's unpacking): vector and quaternion components, matrix rows, slices of them with
compile-time bounds, and 1-d array elements through such a slice; values and gradients checked against real Warp
and central finite differences, and Warp's refusals."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

import _warp_reference


@wp.kernel
def unpack_values(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33),
                  out: wp.array(dtype=float)):
    x = v[0]
    w4 = wp.vec4(*x, a[0])  # a vector and one more
    r = wp.matrix_from_rows(*m[0][1:])  # two rows of a 3x3: 2x3
    p = wp.vec3(*a[1:7:2])  # array elements 1, 3, 5
    q = wp.quat(*w4)
    out[0] = wp.dot(w4, wp.vec4(1.0, 2.0, 3.0, 4.0)) + wp.max(*x[:-1])
    out[1] = r[1, 2] * r[0, 0] + wp.length_sq(p) + q[3] * wp.vec2(*x[-2:])[0]


def _inputs():
    rng = np.random.default_rng(3)
    a = wp.array(rng.uniform(-1, 1, 8), dtype=float, requires_grad=True)
    v = wp.array(rng.uniform(-1, 1, (1, 3)), dtype=wp.vec3, requires_grad=True)
    m = wp.array(rng.uniform(-1, 1, (1, 3, 3)), dtype=wp.mat33, requires_grad=True)
    return a, v, m


def test_unpacked_values():
    a, v, m = _inputs()
    out = wp.zeros(2, dtype=float)
    wp.launch(unpack_values, dim=1, inputs=[a, v, m, out])
    an, x, mm = a.numpy(), v.numpy()[0], m.numpy()[0]
    w4 = np.array([*x, an[0]])
    expected0 = w4 @ [1, 2, 3, 4] + max(x[0], x[1])
    expected1 = mm[2, 2] * mm[1, 0] + np.sum(an[[1, 3, 5]] ** 2) + an[0] * x[1]
    np.testing.assert_allclose(out.numpy(), [expected0, expected1], rtol=1e-5)


def test_gradients_through_unpacked_values():
    def fn(a, v, m):
        out = wp.zeros(2, dtype=float, requires_grad=True)
        wp.launch(unpack_values, dim=1, inputs=[a, v, m, out])
        return out

    gradcheck(fn, list(_inputs()))


@pytest.mark.parametrize("body, kind, words", [
    ("v = wp.vec3i(*arr[:n])", ValueError, "Slice component must be a compile-time constant"),
    ("v = wp.vec3i(*arr[0:])", ValueError, "requires explicit upper bound"),
    ("v = wp.vec3i(*arr[:-3])", ValueError, "cannot be negative for arrays"),
    ("v = wp.vec3i(*arr[5:2:-1])", ValueError, "step cannot be negative"),
    ("v = wp.vec3i(*arr)", TypeError, "sliced with bounds known at compile-time"),
    ("x = 42\n    v = wp.vec3i(*x)", TypeError, "Starred expressions are only supported for"),
    ("v = wp.vec3i(*wp.vec3i(1, 2, 3)[3:])", wp.CompileError, "empty sequence"),
])
def test_what_cannot_unpack_is_refused_in_warps_words(tmp_path, body, kind, words):
    path = tmp_path / "refused_unpack.py"
    path.write_text("import kernels as wp\n\n\n@wp.kernel(module='unique')\n"
                    f"def k(arr: wp.array(dtype=int), n: int):\n    {body}\n")
    spec = importlib.util.spec_from_file_location(f"refused_unpack_{abs(hash(body))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(kind, match=words):
        wp.launch(module.k, dim=1, inputs=[wp.zeros(10, dtype=int), 3])


_PROGRAM = '''
@wp.kernel
def k(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33),
      out: wp.array(dtype=float)):
    x = v[0]
    w4 = wp.vec4(*x, a[0])
    r = wp.matrix_from_rows(*m[0][1:])
    p = wp.vec3(*a[1:7:2])
    q = wp.quat(*w4)
    out[0] = wp.dot(w4, wp.vec4(1.0, 2.0, 3.0, 4.0)) + wp.max(*x[:-1])
    out[1] = r[1, 2] * r[0, 0] + wp.length_sq(p) + q[3] * wp.vec2(*x[-2:])[0]


def run(wp, Tape):
    import numpy as np
    rng = np.random.default_rng(3)
    a = wp.array(rng.uniform(-1, 1, 8), dtype=float, requires_grad=True, device="cpu")
    v = wp.array(rng.uniform(-1, 1, (1, 3)), dtype=wp.vec3, requires_grad=True, device="cpu")
    m = wp.array(rng.uniform(-1, 1, (1, 3, 3)), dtype=wp.mat33, requires_grad=True, device="cpu")
    out = wp.zeros(2, dtype=float, requires_grad=True, device="cpu")
    tape = Tape()
    with tape:
        wp.launch(k, dim=1, inputs=[a, v, m, out], device="cpu")
    tape.backward(grads={out: wp.array([1.0, 0.5], dtype=float, device="cpu")})
    return {"out": out.numpy(), "a": a.grad.numpy(), "v": v.grad.numpy(), "m": m.grad.numpy()}
'''


def test_unpacking_is_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "unpack_starred")
    for key in warp:
        np.testing.assert_allclose(ours[key], warp[key], rtol=1e-6, atol=1e-7, err_msg=key)
