"""Struct parameters reach user functions and kernel bodies by const reference in the generated C++ (a struct of
arrays passed by value was copied with memcpy at every call, four times per particle-shape pair): the source says
so, a function that assigns a field of its parameter still changes only its own value, and values and gradients
through struct members are those of numpy and finite differences."""

import numpy as np

import kernels as wp
from autodiff import gradcheck
from kernels.compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
from kernels.compiler.render_module import ModuleSource
from kernels.runtime.module import _callees


@wp.struct
class Params:
    scale: float
    offset: wp.vec3
    weights: wp.array(dtype=float)


@wp.func
def rescaled(p: Params, factor: float):
    """A copy of p with its scale multiplied (the caller's p keeps its own)."""
    p.scale = p.scale * factor
    return p


@wp.func
def weighted(p: Params, x: wp.vec3, i: int):
    q = rescaled(p, 2.0)
    return (x + p.offset) * (q.scale * p.weights[i]) + x * p.scale


@wp.kernel
def apply(p: Params, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = weighted(p, x[i], i) + wp.vec3(p.scale, 0.0, 0.0)


def source(kernel) -> str:
    kernel.compile_ir()
    src = ModuleSource("cpu", False)
    for fn in _callees(kernel.ir):
        src.add_function(fn)
    return src.source([src.render_kernel(kernel.ir, "k0_apply", render_adjoint_kernel)], render_adjoint_function)


def params(weights) -> Params:
    p = Params()
    p.scale, p.offset, p.weights = 0.5, wp.vec3(1.0, -2.0, 0.25), weights
    return p


def test_struct_parameters_are_const_references():
    text = source(apply)
    struct = next(line.split()[1] for line in text.splitlines() if line.startswith("struct S_") and "Params" in line)
    assert f"const wp::{struct}& v0_p = args.p;" in text  # the kernel's binding, forward and backward
    assert text.count(f"const wp::{struct}& v0_p = args.p;") == 2
    signatures = [line for line in text.splitlines() if "_weighted(" in line and line.startswith("static")]
    assert len(signatures) == 3  # forward, replay, adjoint
    assert all(f"const wp::{struct}& v0_p" in line for line in signatures)
    assert f"wp::{struct} v0_p" not in text  # no struct parameter by value left


def test_values_and_gradients_through_struct_members():
    rng = np.random.default_rng(1)
    n = 5
    x_np = rng.standard_normal((n, 3)).astype(np.float32)
    w_np = rng.uniform(0.5, 1.5, n).astype(np.float32)
    x = wp.array(x_np, dtype=wp.vec3)
    weights = wp.array(w_np, dtype=float)
    out = wp.zeros(n, dtype=wp.vec3)
    wp.launch(apply, n, inputs=[params(weights), x], outputs=[out])
    offset = np.array([1.0, -2.0, 0.25], np.float32)
    # the callee's rescaled copy has scale 1.0; the caller's p.scale stays 0.5 (added to x and to out's x)
    expected = (x_np + offset) * (1.0 * w_np)[:, None] + 0.5 * x_np + np.array([0.5, 0.0, 0.0], np.float32)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)

    def fn(x, weights):
        out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        wp.launch(apply, n, inputs=[params(weights), x], outputs=[out])
        return out

    gradcheck(fn, [x, weights])
