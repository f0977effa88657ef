"""The CUDA path of every module-level test kernel compiles to PTX (forward and backward), with or without a GPU.

One NVRTC compile per test module (all its kernels in one source); compiled PTX is cached like CPU builds.
"""

import glob
import importlib
import os

import pytest

import kernels as wp
from kernels.errors import CompileError
from kernels.runtime.module import get_module
from kernels.compiler.nvrtc import compile_source_to_ptx, render_cuda_source

HERE = os.path.dirname(__file__)
TEST_MODULES = sorted(os.path.basename(f)[:-3] for f in glob.glob(os.path.join(HERE, "test_*.py"))
                      if not f.endswith("test_ptx.py"))


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def test_compile_ptx_gives_forward_and_backward_entry_points():
    ptx = wp.compile_ptx(saxpy, arch=90)
    entries = [line for line in ptx.splitlines() if ".entry" in line]
    assert any("saxpy_cuda_forward" in e for e in entries), entries
    assert any("saxpy_cuda_backward" in e for e in entries), entries
    assert ".target sm_90" in ptx


@pytest.mark.parametrize("module_name", TEST_MODULES)
def test_every_kernel_of_a_test_module_compiles_to_ptx(module_name):
    module = importlib.import_module(module_name)
    kernels = []
    for k in get_module(module.__name__).kernels:
        try:
            k.compile_ir()
        except CompileError:
            continue  # kernels written to fail compilation (error tests)
        kernels.append(k)
    if not kernels:
        pytest.skip(f"{module_name} defines no module-level kernels")
    ptx = compile_source_to_ptx(render_cuda_source(kernels), 90, f"{module_name}.cu")
    for i, k in enumerate(kernels):
        assert f"k{i}_{k.name}_cuda_forward" in ptx
