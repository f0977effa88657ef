"""Warp's `warp.autograd` through the shim (warp_shim/autograd.py): Jacobians against analytic ones and the project's
gradcheck, Warp's refusals and failure reports, and the same Jacobians as real Warp's; and `@wp.func`'s
`name`/`module`/`inline` options (kernels/compiler/function.py)."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import Tape, gradcheck
from warp_shim import autograd as ag


@wp.kernel
def _mixed(a: wp.array(dtype=float), b: wp.array(dtype=wp.vec3), out1: wp.array(dtype=wp.vec2),
           out2: wp.array(dtype=float)):
    t = wp.tid()
    out1[t] = wp.vec2(a[t] * wp.length(b[t]), -a[t] * wp.dot(b[t], wp.vec3(0.1, 1.0, -0.1)))
    out2[t] = a[t] * a[t] + b[t][0]


@wp.func
def _square(x: float):
    return x * x


@wp.func_grad(_square)
def _wrong_square_grad(x: float, adj: float):
    wp.adjoint[x] -= 2.0 * x * adj  # the wrong sign: a check must catch it


@wp.kernel
def _wrong(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = _square(a[t])


@wp.kernel(enable_backward=False)
def _forward_only(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = 2.0 * a[t]


def _mixed_args():
    a = wp.array([1.0, 2.0, -0.5], dtype=float, requires_grad=True)
    b = wp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.2, 0.3, -0.4]], dtype=wp.vec3, requires_grad=True)
    out1 = wp.zeros(3, dtype=wp.vec2, requires_grad=True)
    out2 = wp.zeros(3, dtype=float, requires_grad=True)
    return a, b, out1, out2


def test_jacobian_shapes_values_and_agreement_with_gradcheck():
    a, b, out1, out2 = _mixed_args()
    jac = ag.jacobian(_mixed, 3, [a, b], [out1, out2])
    assert sorted(jac) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # rows: output scalars; columns: input elements of the input's dtype
    assert jac[0, 0].shape == (6, 3) and jac[1, 0].shape == (6, 3) and jac[1, 0].dtype is wp.vec3
    # d out2 / d a = diag(2 a); d out2 / d b = e_x per row
    np.testing.assert_allclose(jac[0, 1].numpy(), np.diag(2.0 * a.numpy()), rtol=1e-6)
    expect = np.zeros((3, 3, 3), np.float32)
    expect[np.arange(3), np.arange(3), 0] = 1.0
    np.testing.assert_array_equal(jac[1, 1].numpy(), expect)
    np.testing.assert_array_equal(out1.numpy(), 0.0)  # a kernel's Jacobian leaves its outputs as they were

    # w . (J x-row) is the tape gradient of sum(w * out): the project's gradcheck confirms it by central
    # differences, so each Jacobian row is right
    w1 = np.random.default_rng(1).standard_normal((3, 2))
    w2 = np.zeros(3)

    def fn(x, y):
        o1, o2 = wp.zeros(3, dtype=wp.vec2), wp.zeros(3, dtype=float)
        wp.launch(_mixed, 3, inputs=[x, y], outputs=[o1, o2])
        return [o1, o2]

    report = gradcheck(fn, [wp.clone(a), wp.clone(b)], weights=[w1, w2])
    np.testing.assert_allclose(w1.reshape(-1) @ jac[0, 0].numpy(), report.numeric[0], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(w1.reshape(-1) @ jac[1, 0].numpy().reshape(6, 9), report.numeric[1], rtol=1e-3,
                               atol=1e-4)

    fd = ag.jacobian_fd(_mixed, 3, [a, b], [out1, out2], eps=1e-3)
    for key in jac:
        np.testing.assert_allclose(fd[key].numpy(), jac[key].numpy(), atol=2e-3, rtol=1e-2)
    assert ag.gradcheck(_mixed, 3, [a, b], [out1, out2], eps=1e-3, show_summary=False)


def test_masks_limits_and_python_functions():
    a, b, out1, out2 = _mixed_args()
    jac = ag.jacobian(_mixed, 3, [a, b], [out1, out2], input_output_mask=[("a", "out2"), (1, 0)],
                      max_outputs_per_var=2)
    assert sorted(jac) == [(0, 1), (1, 0)]
    assert np.isnan(jac[0, 1].numpy()[2:]).all() and not np.isnan(jac[0, 1].numpy()[:2]).any()
    fd = ag.jacobian_fd(_mixed, 3, [a, b], [out1, out2], max_inputs_per_var=4)  # 4 of b's 9 scalars
    cols = fd[1, 0].numpy().reshape(6, 9)
    assert not np.isnan(cols[:, :4]).any() and np.isnan(cols[:, 4:]).all()

    def pipeline(x, calls):
        y = wp.zeros_like(x, requires_grad=True)
        wp.launch(_wrong, len(x), inputs=[x], outputs=[y])
        calls.assign(calls.numpy() + 1)  # a function that changes an input: restore_inputs puts it back
        return y

    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    calls = wp.zeros(1, dtype=wp.int32)
    j_ad = ag.jacobian(pipeline, inputs=[x, calls])[0, 0].numpy()
    j_fd = ag.jacobian_fd(pipeline, inputs=[x, calls])[0, 0].numpy()
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(calls.numpy(), [0])
    np.testing.assert_allclose(j_fd, np.diag([2.0, 4.0]), rtol=1e-2)
    np.testing.assert_allclose(j_ad, -np.diag([2.0, 4.0]))  # the wrong custom gradient, reported as it is


def test_failures_and_refusals_say_what_warp_says(capsys):
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    assert not ag.gradcheck(_wrong, 2, [a], [out], raise_exception=False)
    assert "Gradient check for kernel" in capsys.readouterr().out
    with pytest.raises(ValueError, match="finite difference and autodiff gradients do not match"):
        ag.gradcheck(_wrong, 2, [a], [out], show_summary=False)
    with pytest.raises(ValueError, match="Kernel must have backward pass enabled to compute Jacobians"):
        ag.jacobian(_forward_only, 2, [a], [out])
    np.testing.assert_allclose(ag.jacobian_fd(_forward_only, 2, [a], [out])[0, 0].numpy(), 2.0 * np.eye(2),
                               rtol=1e-3)  # forward launches only: fine without a backward
    with pytest.raises(ValueError, match="A list of output arguments must be provided"):
        ag.jacobian(_mixed, 2, [a])
    with pytest.raises(ValueError, match="The inputs argument must be provided"):
        ag.gradcheck(_mixed, 2)

    with Tape() as tape:
        a2, b2, o1, o2 = _mixed_args()
        wp.launch(_mixed, 3, inputs=[a2, b2], outputs=[o1, o2])
        wp.launch(_wrong, 2, inputs=[a], outputs=[out])
        wp.launch(_forward_only, 2, inputs=[a], outputs=[out])  # backward disabled: skipped
    assert not ag.gradcheck_tape(tape, raise_exception=False, show_summary=False, eps=1e-3)
    assert ag.gradcheck_tape(tape, blacklist_kernels=[_wrong.key], show_summary=False, eps=1e-3)
    assert ag.gradcheck_tape(tape, whitelist_kernels=[_mixed.key], show_summary=False, eps=1e-3)


def test_func_options():
    with pytest.raises(TypeError, match="inline must be a bool"):
        @wp.func(inline=1)
        def bad(x: float) -> float:
            return x

    @wp.func(inline=False, module="unique")
    def helper(x: float) -> float:
        return x * 2.0

    @wp.func(name="renamed_helper", inline=True)
    def helper2(x: float) -> float:
        return x + 1.0

    assert helper.inline_hint == "noinline" and helper2.inline_hint == "forceinline"
    assert helper.module.name != __name__ and helper2.module.name == __name__  # Warp's f.module: a Module

    @wp.kernel(module=helper.module)
    def uses(a: wp.array(dtype=float)):
        t = wp.tid()
        a[t] = helper(float(t)) + helper2(0.0)

    a = wp.zeros(4, dtype=float)
    wp.launch(uses, 4, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), 2.0 * np.arange(4) + 1.0)


_PROGRAM = '''
import importlib


@wp.kernel
def mixed(a: wp.array(dtype=float), b: wp.array(dtype=wp.vec3), out1: wp.array(dtype=wp.vec2),
          out2: wp.array(dtype=wp.quat)):
    t = wp.tid()
    out1[t] = wp.vec2(a[t] * wp.length(b[t]), -a[t] * wp.dot(b[t], wp.vec3(0.1, 1.0, -0.1)))
    out2[t] = wp.normalize(wp.quat(a[t], b[t][0], b[t][1], b[t][2]))


def run(wp, Tape):
    ag = importlib.import_module("warp.autograd" if wp.__name__ == "warp" else "warp_shim.autograd")
    a = wp.array([1.0, 2.0, -0.5], dtype=float, requires_grad=True)
    b = wp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.2, 0.3, -0.4]], dtype=wp.vec3, requires_grad=True)
    o1 = wp.zeros(3, dtype=wp.vec2, requires_grad=True)
    o2 = wp.zeros(3, dtype=wp.quat, requires_grad=True)
    out = {}
    results = (("ad", ag.jacobian(mixed, 3, [a, b], [o1, o2], max_outputs_per_var=7)),
               ("fd", ag.jacobian_fd(mixed, 3, [a, b], [o1, o2], max_inputs_per_var=5)))
    for name, jacobians in results:
        for (i, o), j in jacobians.items():
            out[f"{name}_{i}{o}"] = j.numpy()
    out["passed"] = [ag.gradcheck(mixed, 3, [a, b], [o1, o2], eps=1e-3, show_summary=False,
                                  raise_exception=False)]
    return out
'''


def test_jacobians_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "autograd")
    assert sorted(warp) == sorted(ours)
    for key, value in warp.items():
        assert ours[key].shape == value.shape, key
        if key.startswith("ad"):  # the same adjoint, NaN rows past max_outputs_per_var included
            np.testing.assert_allclose(ours[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
        else:  # central differences in float32: a few ulps of the outputs over 2 eps
            np.testing.assert_allclose(ours[key], value, rtol=1e-3, atol=2e-3, err_msg=key)


def test_jacobian_plot_needs_matplotlib_or_draws_one_panel_per_pair():
    a, b, out1, out2 = _mixed_args()
    jac = ag.jacobian(_mixed, 3, [a, b], [out1, out2])
    try:
        import matplotlib
        matplotlib.use("Agg")
    except ImportError:
        with pytest.raises(ImportError, match="jacobian_plot needs matplotlib"):
            ag.jacobian_plot(jac, _mixed, [a, b], show_plot=False)
        return
    fig = ag.jacobian_plot(jac, _mixed, [a, b], show_plot=False, show_colorbar=False)
    assert len(fig.axes) == len(jac)
