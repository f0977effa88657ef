"""Warp's `@wp.func(inline=...)` hint reaches the C++ compilers: `inline=False` keeps a function (forward, replay and
adjoint) out of line on the CPU and on CUDA, `inline=True` inlines it on both; the default is unchanged. The hint
changes where code lives, never a value or a gradient (checked against finite differences)."""

import re

import numpy as np

import kernels as wp
from autodiff import gradcheck
from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source
from kernels.compiler.render import CPU
from kernels.compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
from kernels.compiler.render_module import ModuleSource


@wp.func(inline=False)
def kept_apart(x: wp.float64, y: wp.float64):
    return wp.sin(x) * y + x * x


@wp.func(inline=True)
def always_inlined(x: wp.float64):
    return wp.exp(0.5 * x)


@wp.func
def compiler_decides(x: wp.float64):
    return x * 3.0


@wp.kernel
def hinted(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = kept_apart(x[i], y[i]) + always_inlined(y[i]) * compiler_decides(x[i])


def _qualifiers(source: str, name: str) -> dict:
    """{C++ function name: its qualifiers} for the forward, replay and adjoint of user function `name`."""
    found = {}
    for m in re.finditer(r"static CUDA_CALLABLE ([\w ]+?) [\w:<>,]+ ((?:replay_|adj_)?f\d+_" + name + r")\(", source):
        found[m.group(2).split("_f")[0] if m.group(2).startswith(("replay_", "adj_")) else "forward"] = m.group(1)
    return found


def _cpu_source() -> str:
    hinted.compile_ir()
    src = ModuleSource(CPU, False)
    src.add_callees(hinted.ir)
    return src.source([src.render_kernel(hinted.ir, "k0_hinted", render_adjoint_kernel)], render_adjoint_function)


def test_hints_are_rendered_for_forward_replay_and_adjoint():
    for source in (_cpu_source(), render_cuda_source([hinted])):
        assert _qualifiers(source, "kept_apart") == {"forward": "WP_INLINE_NEVER", "replay": "WP_INLINE_NEVER",
                                                     "adj": "WP_INLINE_NEVER"}
        assert set(_qualifiers(source, "always_inlined").values()) == {"WP_INLINE_ALWAYS"}
        assert _qualifiers(source, "compiler_decides") == {"forward": "inline WP_FORCE_INLINE",
                                                           "replay": "inline WP_FORCE_INLINE", "adj": "inline"}


def test_cuda_source_with_hints_compiles_to_ptx():
    ptx = compile_source_to_ptx(render_cuda_source([hinted]), 90, "hinted.cu")
    assert "k0_hinted_cuda_forward" in ptx and "k0_hinted_cuda_backward" in ptx
    assert re.search(r"\.func .*kept_apart", ptx)  # a callable function of its own, not inlined away


def test_values_and_gradients_do_not_depend_on_the_hint():
    rng = np.random.default_rng(3)
    xs, ys = rng.uniform(-2.0, 2.0, 16), rng.uniform(-1.0, 1.0, 16)
    x, y = wp.array(xs, dtype=wp.float64), wp.array(ys, dtype=wp.float64)
    out = wp.zeros(16, dtype=wp.float64)
    wp.launch(hinted, dim=16, inputs=[x, y, out])
    want = np.sin(xs) * ys + xs * xs + np.exp(0.5 * ys) * xs * 3.0
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-14)

    def fn(a, b):
        res = wp.zeros(16, dtype=wp.float64, requires_grad=True)
        wp.launch(hinted, dim=16, inputs=[a, b, res])
        return res

    gradcheck(fn, [wp.array(xs, dtype=wp.float64), wp.array(ys, dtype=wp.float64)])
