"""`wp.adjoint[...]` in a @wp.func_grad body as Warp 1.19 has it: the adjoint of a parameter, of a struct field or
a vector component of one (read, `+=`, `=`), and of an array parameter (its gradient array: `wp.adjoint[xs][i] +=`,
read, passed on); and a custom adjoint belongs to the overload its signature names. Gradients by central
differences where the custom adjoint is the true derivative, values against real Warp.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

import _warp_child
import _warp_reference

_PROGRAM = '''
@wp.struct
class S:
    scalar: float
    vec: wp.vec3


@wp.func
def f(x: S):
    return x.vec[0] * x.vec[1] + x.scalar * 2.0


@wp.func_grad(f)
def adj_f(x: S, adj_ret: float):
    wp.adjoint[x.scalar] += 2.0 * adj_ret
    wp.adjoint[x.vec][0] += x.vec[1] * adj_ret
    wp.adjoint[x.vec].y = wp.adjoint[x.vec].y + x.vec[0] * adj_ret


@wp.func
def square_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    ys[i] = xs[i] * xs[i]


@wp.func_grad(square_into)
def adj_square_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    g = wp.adjoint[ys]
    wp.adjoint[xs][i] += 2.0 * xs[i] * g[i]


@wp.func
def overloaded(x: float, y: float):
    return x * y


@wp.func
def overloaded(x: S):
    return x.scalar * 3.0


@wp.func_grad(overloaded)
def adj_overloaded(x: S, adj_ret: float):
    wp.adjoint[x.scalar] += 30.0 * adj_ret  # deliberately not the derivative: shows which overload has it


@wp.kernel
def struct_kernel(xs: wp.array(dtype=S), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = f(xs[i]) + overloaded(xs[i]) + overloaded(xs[i].scalar, xs[i].vec[2])


@wp.kernel
def array_kernel(xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    square_into(wp.tid(), xs, ys)


def run(wp, Tape):
    xs = wp.zeros(2, dtype=S, device="cpu", requires_grad=True)
    values = xs.numpy()
    values["scalar"] = [1.5, -2.0]
    values["vec"] = [[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]]
    xs = wp.array(values, dtype=S, device="cpu", requires_grad=True)
    out = wp.zeros(2, dtype=float, device="cpu", requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(struct_kernel, dim=2, inputs=[xs], outputs=[out], device="cpu")
    tape.backward(grads={out: wp.ones_like(out)})
    grad = xs.grad.numpy()
    a = wp.array([0.5, -1.5, 2.0], dtype=float, device="cpu", requires_grad=True)
    b = wp.zeros(3, dtype=float, device="cpu", requires_grad=True)
    tape2 = Tape()
    with tape2:
        wp.launch(array_kernel, dim=3, inputs=[a, b], device="cpu")
    tape2.backward(grads={b: wp.array([1.0, 2.0, 3.0], dtype=float, device="cpu")})
    return {"out": out.numpy(), "scalar_grad": grad["scalar"], "vec_grad": np.array(grad["vec"]),
            "b": b.numpy(), "a_grad": a.grad.numpy()}
'''


def _ours(tmp_path):
    path = tmp_path / "adjoint_access_program.py"
    path.write_text("import numpy as np\nimport kernels as wp\n\n\n" + _PROGRAM)
    return _warp_child.load_module(str(path), "adjoint_access_program")


def test_adjoints_of_fields_components_and_arrays(tmp_path):
    out = _ours(tmp_path).run(wp, Tape)
    # out = v0 v1 + 2 s + 3 s + s v2
    np.testing.assert_allclose(out["out"], [2.0 + 5.0 * 1.5 + 1.5 * 3.0, -0.5 - 10.0 - 8.0])
    # d/ds: 2 (f's) + 30 (the struct overload's custom adjoint) + v2 (the float overload's derived one)
    np.testing.assert_allclose(out["scalar_grad"], [32.0 + 3.0, 32.0 + 4.0])
    np.testing.assert_allclose(out["vec_grad"], [[2.0, 1.0, 1.5], [0.5, -1.0, -2.0]])
    np.testing.assert_allclose(out["b"], [0.25, 2.25, 4.0])
    np.testing.assert_allclose(out["a_grad"], [1.0, -6.0, 12.0])


def test_adjoints_of_fields_components_and_arrays_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both("import numpy as np\n\n\n" + _PROGRAM, str(tmp_path), "adjoint_access")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


@wp.func
def square_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    ys[i] = xs[i] * xs[i]


@wp.func_grad(square_into)
def adj_square_into(i: int, xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    wp.adjoint[xs][i] += 2.0 * xs[i] * wp.adjoint[ys][i]


@wp.kernel
def square_kernel(xs: wp.array(dtype=float), ys: wp.array(dtype=float)):
    square_into(wp.tid(), xs, ys)


def test_an_array_parameters_adjoint_is_its_gradient_array():
    def fn(x):
        y = wp.zeros(3, dtype=float, requires_grad=True)
        wp.launch(square_kernel, 3, [x, y])
        return y

    gradcheck(fn, [wp.array(np.array([0.5, -1.5, 2.0], dtype=np.float32))])
