"""The module option `cpu_inline_unit_growth` (this toolkit's): GCC's inlining budget for one module, part of its
compiler flags and so of its cache keys; the rigid solver's module sets it (its vector builtins were left as calls)."""

import numpy as np
import pytest

import kernels as wp
from kernels.compiler import build
from kernels.runtime import module_options


def test_the_budget_joins_the_module_flags():
    assert module_options.resolve_options({"cpu_inline_unit_growth": None})["cpu_compiler_flags"] == \
        wp.config.cpu_compiler_flags
    flags = module_options.resolve_options({"cpu_inline_unit_growth": 500})["cpu_compiler_flags"]
    assert flags.split() == ["-march=native", "--param=inline-unit-growth=500"]
    assert "--param=inline-unit-growth=500" in build.cpu_flags(False, None, flags)
    kept = module_options.resolve_options({"cpu_inline_unit_growth": 7, "cpu_compiler_flags": "-march=x86-64"})
    assert kept["cpu_compiler_flags"] == "-march=x86-64 --param=inline-unit-growth=7"  # the user's target kept


@pytest.mark.parametrize("bad", [-1, 1.5, True, "100"])
def test_a_budget_that_is_not_a_percentage_is_refused(bad):
    with pytest.raises(ValueError, match="cpu_inline_unit_growth must be a non-negative integer"):
        module_options.resolve_options({"cpu_inline_unit_growth": bad})


@wp.kernel(module="unique", module_options={"cpu_inline_unit_growth": 1000})
def _scaled(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    y[i] = wp.cross(x[i], wp.vec3(0.0, 0.0, 1.0)) * 2.0


def test_a_module_with_a_budget_builds_and_computes():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    a, b = wp.array(x, dtype=wp.vec3), wp.zeros(4, dtype=wp.vec3)
    wp.launch(_scaled, dim=4, inputs=[a, b])
    np.testing.assert_array_equal(b.numpy(), np.cross(x, [0.0, 0.0, 1.0]).astype(np.float32) * 2.0)
    assert "--param=inline-unit-growth=1000" in _scaled.module.resolve_options()["cpu_compiler_flags"]


def test_the_rigid_solver_module_raises_its_budget():
    import sim.solvers.rigid.kernels as rigid

    flags = wp.get_module(rigid.__name__).resolve_options()["cpu_compiler_flags"]
    assert "--param=inline-unit-growth=" in flags
