"""How a module's CUDA programs are built (kernels/runtime/cuda_module.py), without a GPU: NVRTC compiles for real, the
driver's module loading is replaced. Forward entry points are one program per batch; adjoints one program per
kernel, compiled side by side, each kernel loading its own; a kernel whose program fails keeps the error and the
others load; tools/cuda_report.py --precompile compiles the same units (the same cache entries)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import kernels as wp
from kernels.runtime import cuda_driver as cu
from kernels.runtime import cuda_module
from kernels.errors import NativeCompileError

pytest.importorskip("cuda.bindings.nvrtc")


@wp.kernel
def doubled(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def sines(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i]


@wp.kernel
def norms(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.length(x[i])


KERNELS = [doubled, sines, norms]
ORDINAL = 7  # a device number no real GPU of a test machine is likely to have: only these fakes see it


@pytest.fixture
def loaded(monkeypatch):
    """The driver's module loading faked: every loaded image recorded, functions named by (module, entry)."""
    images = []
    monkeypatch.setattr(cu, "info", lambda ordinal: SimpleNamespace(arch=90))
    monkeypatch.setattr(cu, "module_load", lambda ordinal, image: images.append(image) or len(images))
    monkeypatch.setattr(cu, "module_function", lambda module, name: (module, name))
    for k in KERNELS:
        k.ensure_ir()
        monkeypatch.setattr(k, "cuda", {})
        monkeypatch.setattr(k, "cuda_errors", {})
    return images


def test_forward_entry_points_are_one_program_and_adjoints_one_per_kernel(loaded):
    assert cuda_module.build_units(KERNELS, adjoint=False) == [KERNELS]
    assert cuda_module.build_units(KERNELS, adjoint=True) == [[k] for k in KERNELS]
    cuda_module._build(KERNELS, ORDINAL, adjoint=False)
    assert len(loaded) == 1 and loaded[0][:4] == b"\x7fELF"
    assert [k.cuda[ORDINAL].forward for k in KERNELS] == [(1, f"k{i}_{k.name}_cuda_forward")
                                                          for i, k in enumerate(KERNELS)]
    cuda_module._build(KERNELS, ORDINAL, adjoint=True)
    assert len(loaded) == 4 and all(image[:4] == b"\x7fELF" for image in loaded)
    # each adjoint its own module, in the batch's order: the entry point is k0_ of its one-kernel program
    assert [k.cuda[ORDINAL].backward for k in KERNELS] == [(2 + i, f"k0_{k.name}_cuda_backward")
                                                           for i, k in enumerate(KERNELS)]


def test_a_failing_adjoint_program_keeps_its_error_and_the_others_load(loaded, monkeypatch):
    real = cuda_module.unit_source

    def broken_for_sines(kernels, adjoint, debug=False):
        source = real(kernels, adjoint, debug)
        return source + "this is not C++;\n" if kernels[0] is sines else source

    monkeypatch.setattr(cuda_module, "unit_source", broken_for_sines)
    cuda_module._build(KERNELS, ORDINAL, adjoint=True)
    assert len(loaded) == 2
    assert isinstance(sines.cuda_errors[(ORDINAL, True)], NativeCompileError)
    assert doubled.cuda[ORDINAL].backward is not None and norms.cuda[ORDINAL].backward is not None
    assert sines.cuda.get(ORDINAL) is None or sines.cuda[ORDINAL].backward is None


def test_precompile_fills_the_cache_entries_the_launches_read(monkeypatch, tmp_path):
    """tools/cuda_report.py's jobs compile exactly the build units' sources: a later build compiles nothing."""
    import sys
    import os
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tools import cuda_report
    from kernels.compiler import nvrtc
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))
    name = doubled.module.name
    for adjoint, batch in zip((False, True), cuda_module.module_batches(doubled.module)):
        for i in range(len(cuda_module.build_units(batch, adjoint))):
            assert cuda_report._precompile_one((name, adjoint, i))[2] is None
    compiled = []
    real = nvrtc._compile
    monkeypatch.setattr(nvrtc, "_compile", lambda *a: compiled.append(a[3]) or real(*a))
    for k in doubled.module.kernels:
        monkeypatch.setattr(k, "cuda", {})
        monkeypatch.setattr(k, "cuda_errors", {})
    monkeypatch.setattr(cu, "info", lambda ordinal: SimpleNamespace(arch=90))
    monkeypatch.setattr(cu, "module_load", lambda ordinal, image: 1)
    monkeypatch.setattr(cu, "module_function", lambda module, name: (module, name))
    forward, backward = cuda_module.module_batches(doubled.module)
    cuda_module._build(forward, ORDINAL, adjoint=False)
    cuda_module._build(backward, ORDINAL, adjoint=True)
    assert compiled == [], "every program came from the cache"
