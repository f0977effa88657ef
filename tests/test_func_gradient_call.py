"""`wp.grad(f)(x, ...)` in kernels: the gradient of a scalar @wp.func or builtin at run time (Warp's form, used by
its particle_repulsion example). Checked against central differences of f (autodiff.gradcheck's finite
differences, float64), against closed forms, with a custom @wp.func_grad, bound to a local, and its refusals: a
non-scalar f, an argument without a gradient, a gradient through wp.grad itself (second derivatives are not
derived), and rebinding a local bound to a function or to wp.grad(f).
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck
from kernels.errors import CompileError
from kernels.compiler.nvrtc import render_cuda_source


@wp.func
def potential(d: wp.vec3d):
    return wp.float64(1.0) / (wp.length(d) + wp.float64(0.25))


@wp.func
def mixed(x: wp.float64, v: wp.vec2d):
    return x * x * v[0] + wp.sin(v[1]) * x


@wp.func
def mixed32(x: float, v: wp.vec2):
    return x * x * v[0] + wp.sin(v[1]) * x


@wp.func
def squared(x: float):
    return x * x


@wp.func_grad(squared)
def squared_grad(x: float, adj_ret: float):
    # deliberately not 2x: shows that wp.grad runs the custom adjoint
    wp.adjoint[x] += 3.0 * x * adj_ret


@wp.func
def vector_valued(x: float):
    return wp.vec2(x, x)


@wp.func
def with_count(x: float, n: int):
    return x * float(n)


@wp.kernel
def potential_values(x: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = potential(x[i])


@wp.kernel(enable_backward=False)
def potential_gradients(x: wp.array(dtype=wp.vec3d), g: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    g[i] = wp.grad(potential)(x[i])


@wp.kernel
def mixed_values(x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec2d), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = mixed(x[i], v[i])


@wp.kernel
def mixed_gradients(x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec2d), gx: wp.array(dtype=wp.float64),
                    gv: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    a, b = wp.grad(mixed)(x[i], v[i])
    gx[i] = a
    gv[i] = b


@wp.kernel
def custom_gradient(x: wp.array(dtype=float), g: wp.array(dtype=float)):
    i = wp.tid()
    g[i] = wp.grad(squared)(x[i])


@wp.kernel(enable_backward=False)
def builtin_and_bound_gradients(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    b, a = wp.grad(wp.atan2)(y[i], x[i])  # a builtin's gradient, one value per argument
    g = wp.grad(mixed32)  # bound to a local, called later
    gx, gv = g(x[i], wp.vec2(y[i], x[i]))
    out[i, 0] = b
    out[i, 1] = a
    out[i, 2] = gx
    out[i, 3] = gv[1]


@wp.kernel
def gradient_of_a_constant_argument(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # wp.grad of a value that carries no gradient, inside a differentiable kernel: allowed
    i = wp.tid()
    s = wp.grad(squared)(wp.stop_gradient(x[i]))
    y[i] = s * x[i]


def _finite_difference_gradient(kernel, inputs, device):
    """d y_i / d inputs by central differences of the float64 kernel (gradcheck's), one row per input."""
    n = inputs[0].shape[0]

    def fn(*xs):
        y = wp.zeros(n, dtype=wp.float64, device=device)
        wp.launch(kernel, dim=n, inputs=[*xs, y], device=device)
        return y

    report = gradcheck(fn, inputs, weights=[np.ones(n)], raise_on_fail=False)
    return report.numeric


def test_gradient_of_one_argument_matches_central_differences(device):
    rng = np.random.default_rng(0)
    x = wp.array(rng.normal(size=(16, 3)), dtype=wp.vec3d, device=device)
    g = wp.zeros(16, dtype=wp.vec3d, device=device)
    wp.launch(potential_gradients, dim=16, inputs=[x, g], device=device)
    numeric = _finite_difference_gradient(potential_values, [x], device)[0].reshape(16, 3)
    np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-6, atol=1e-8)
    r = np.linalg.norm(x.numpy(), axis=1, keepdims=True)
    np.testing.assert_allclose(g.numpy(), -x.numpy() / r / (r + 0.25) ** 2, rtol=1e-12)


def test_gradient_of_several_arguments_is_a_tuple(device):
    rng = np.random.default_rng(1)
    x = wp.array(rng.normal(size=12), dtype=wp.float64, device=device)
    v = wp.array(rng.normal(size=(12, 2)), dtype=wp.vec2d, device=device)
    gx = wp.zeros(12, dtype=wp.float64, device=device)
    gv = wp.zeros(12, dtype=wp.vec2d, device=device)
    wp.launch(mixed_gradients, dim=12, inputs=[x, v, gx, gv], device=device)
    numeric = _finite_difference_gradient(mixed_values, [x, v], device)
    np.testing.assert_allclose(gx.numpy(), numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gv.numpy(), numeric[1].reshape(12, 2), rtol=1e-6, atol=1e-8)


def test_custom_adjoint_is_used(device):
    x = wp.array(np.array([1.0, -2.0, 0.5], np.float32), dtype=float, device=device)
    g = wp.zeros(3, dtype=float, device=device)
    wp.launch(custom_gradient, dim=3, inputs=[x, g], device=device)
    np.testing.assert_allclose(g.numpy(), [3.0, -6.0, 1.5])


def test_builtin_gradient_and_a_gradient_bound_to_a_local(device):
    x_np = np.array([0.5, -1.5, 2.0], np.float32)
    y_np = np.array([1.0, 0.25, -0.75], np.float32)
    out = wp.zeros((3, 4), dtype=float, device=device)
    wp.launch(builtin_and_bound_gradients, dim=3, inputs=[wp.array(x_np, dtype=float, device=device),
                                                         wp.array(y_np, dtype=float, device=device), out],
              device=device)
    r2 = x_np ** 2 + y_np ** 2
    expect = np.stack([x_np / r2, -y_np / r2, 2 * x_np * y_np + np.sin(x_np), np.cos(x_np) * x_np], axis=1)
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6, atol=1e-7)


def test_constant_argument_in_a_taped_kernel(device):
    # y = stop_gradient(3 x) * x (3 x: squared's custom adjoint): dy/dx = 3 x
    x = wp.array(np.array([1.0, -2.0, 0.5], np.float32), dtype=float, device=device, requires_grad=True)
    y = wp.zeros(3, dtype=float, device=device, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(gradient_of_a_constant_argument, dim=3, inputs=[x, y], device=device)
    tape.backward(grads={y: wp.array(np.ones(3, np.float32), dtype=float, device=device)})
    np.testing.assert_allclose(y.numpy(), [3.0, 12.0, 0.75])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -6.0, 1.5])


def test_cuda_forward_source_carries_the_adjoint_it_calls():
    # a CUDA module built without adjoints still defines the adjoint that wp.grad calls
    source = render_cuda_source([potential_gradients], adjoint=False)
    assert "adj_f" in source and "potential" in source


def _kernel_error(folder, body: str) -> str:
    namespace = {"wp": wp, "vector_valued": vector_valued, "with_count": with_count, "squared": squared,
                 "potential": potential, "mixed": mixed}
    source = f"@wp.kernel\ndef k(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n    i = wp.tid()\n{body}"
    path = str(folder / f"refusal_{abs(hash(body))}.py")
    with open(path, "w") as f:
        f.write("import kernels as wp\n" + source)
    code = compile("import kernels as wp\n" + source, path, "exec")
    exec(code, namespace)
    with pytest.raises(CompileError) as info:
        namespace["k"].compile_ir()
        from kernels.compiler.passes.adjoint import adjoint_error
        error = adjoint_error(namespace["k"].ir)
        if error is not None:
            raise error
    return str(info.value)


def test_refusals(tmp_path):
    assert "must return one float scalar" in _kernel_error(tmp_path,
                                                            "    v = wp.grad(vector_valued)(x[i])\n    y[i] = v[0]\n")
    assert "argument 'n'" in _kernel_error(tmp_path, "    a, b = wp.grad(with_count)(x[i], 3)\n    y[i] = a\n")
    assert "second derivatives" in _kernel_error(tmp_path, "    y[i] = wp.grad(squared)(x[i])\n")
    assert "Cannot reassign local 'g'" in _kernel_error(tmp_path, "    g = wp.grad(squared)\n    g = 1.0\n    y[i] = g\n")
    assert "Cannot reassign local 'g'" in _kernel_error(tmp_path, "    g = wp.grad(squared)\n    g += 1.0\n")
    assert "rebinding function-valued local 'f' to another function" in _kernel_error(
        tmp_path, "    f = squared\n    f = vector_valued\n    y[i] = f(x[i])[0]\n")
    assert "rebinding function-valued local 'f' to a non-function" in _kernel_error(
        tmp_path, "    f = squared\n    f = 2.0\n    y[i] = f\n")
    assert "return one float scalar" in _kernel_error(
        tmp_path, "    v = wp.grad(wp.normalize)(wp.vec3(x[i], 1.0, 0.0))\n    y[i] = v[0]\n")
    assert "gives one gradient per argument" in _kernel_error(tmp_path, "    y[i] = wp.grad(with_count)(x[i], 3)\n")


def test_forward_only_cuda_build_renders_the_called_adjoints():
    """A GPU's first launch builds forward entry points alone; the adjoints wp.grad calls come along (NVRTC, no
    GPU needed)."""
    from kernels.compiler.nvrtc import compile_source, render_cuda_source
    kernels = [potential_gradients, mixed_gradients, custom_gradient, builtin_and_bound_gradients,
               gradient_of_a_constant_argument]
    source = render_cuda_source(kernels, adjoint=False)
    assert "_cuda_backward" not in source
    compile_source(source, 90, "forward_only.cu", "ptx")
