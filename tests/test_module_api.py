"""Warp's module API (kernels/runtime/module_options.py, module_load.py): module hashes, options, module="unique"
kernels named by their content, and wp.force_load. Hashes are checked against what must and must not change
them (Warp's rules: the code and the resolved options, not where the code lives); builds by their results."""

import importlib.util
import os
import tempfile

import numpy as np
import pytest

import kernels as wp

BODY = """
import kernels as wp

@wp.func
def fn(value: float):
    return value * {scale}

@wp.func
def fn(value: float, other: float):
    return value + other

@wp.kernel
def k(a: wp.array(dtype=float)):
    a[wp.tid()] = fn(a[wp.tid()]) + fn(1.0, 2.0)
"""


def _module_from_text(text: str, name: str):
    """The kernels Module of a Python module made from `text` in a file of its own (deleted after import)."""
    fd, path = tempfile.mkstemp(suffix=".py")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        os.remove(path)
    return wp.get_module(name)


def test_hash_follows_code_not_place():
    same_a = _module_from_text(BODY.format(scale=2.0), "module_api_a")
    same_b = _module_from_text(BODY.format(scale=2.0), "module_api_b")
    other = _module_from_text(BODY.format(scale=3.0), "module_api_c")  # one overload's body differs
    assert same_a.hash_module() == same_b.hash_module()
    assert other.hash_module() != same_a.hash_module()
    assert len(same_a.hash_module()) == 32  # a SHA-256 digest, as Warp's


def test_hash_follows_resolved_options():
    m = _module_from_text(BODY.format(scale=2.0), "module_api_options")
    base = m.hash_module()
    old_mode, old_verify = wp.config.mode, wp.config.verify_fp
    try:
        m.options["mode"] = wp.config.mode  # explicit and resolved give one hash
        assert m.hash_module() == base
        m.options["mode"] = None
        wp.config.mode = "debug" if old_mode == "release" else "release"
        assert m.hash_module() != base
        wp.config.mode = old_mode
        wp.config.verify_fp = not old_verify
        assert m.hash_module() != base
        wp.config.verify_fp = old_verify
        hashes = set()
        for level in (None, 2, 3):
            m.options["optimization_level"] = level
            hashes.add(m.hash_module())
        assert len(hashes) == 3
    finally:
        wp.config.mode, wp.config.verify_fp = old_mode, old_verify
        m.options["optimization_level"] = None


def test_inline_hint_is_part_of_the_hash():
    def make(inline):
        @wp.func(inline=inline, module="unique")
        def f(x: float) -> float:
            return x + 1.0

        @wp.kernel(module=f.module)
        def k(a: wp.array(dtype=float)):
            a[wp.tid()] = f(1.0)
        return f.module

    assert isinstance(make(None), wp.Module)
    assert len({make(inline).hash_module() for inline in (None, False, True)}) == 3


def _factory(value, **options):
    @wp.kernel(module="unique", **options)
    def scaled(a: wp.array(dtype=float)):
        a[wp.tid()] = a[wp.tid()] * value
    return scaled


def test_unique_kernels_are_named_by_content():
    first, again, other = _factory(2.0), _factory(2.0), _factory(3.0)
    assert first is again  # the same kernel made again: the same object, as in Warp
    assert other is not first and other.module.name != first.module.name
    assert first.module.name.startswith(first.key + "_") and len(first.module.name) == len(first.key) + 9
    bounded = _factory(2.0, launch_bounds=64)
    assert bounded is not first and bounded.options["launch_bounds"] == 64
    # False is the default spilling: the same kernel
    assert _factory(2.0, enable_cuda_smem_spilling=False) is first
    a = wp.array(np.arange(4, dtype=np.float32))
    wp.launch(first, 4, [a])
    wp.launch(other, 4, [a])
    np.testing.assert_array_equal(a.numpy(), np.arange(4) * 6.0)


def test_kernel_and_module_option_refusals():
    with pytest.raises(ValueError, match="module_options requires module=\"unique\""):
        _factory_named({})
    with pytest.raises(TypeError, match="module_options must be a dict"):
        _factory(2.0, module_options=[("fast_math", True)])
    with pytest.raises(ValueError, match="unknown module_options: 'no_such_option'"):
        _factory(2.0, module_options={"no_such_option": 1})
    with pytest.raises(TypeError, match="got bool"):
        _factory(2.0, module_options={"deterministic_max_records": True})
    with pytest.raises(ValueError, match="must be non-negative, got -1"):
        _factory(2.0, module_options={"deterministic_max_records": -1})
    with pytest.raises(ValueError, match="cannot be specified together"):
        _factory(2.0, launch_bounds=64, cuda_max_registers=32)
    with pytest.raises(ValueError, match="must be >= 1"):
        _factory(2.0, cuda_max_registers=0)
    kept = _factory(2.0, module_options={"deterministic_max_records": 2})
    assert kept.module.options["deterministic_max_records"] == 2
    assert kept is not _factory(2.0)  # options are part of the content


def _factory_named(options):
    @wp.kernel(module_options=options)
    def k(a: wp.array(dtype=float)):
        a[0] = 1.0
    return k


def test_optimization_level_and_target_flags_build_the_same_numbers():
    x = np.linspace(-2.0, 2.0, 64).astype(np.float32)
    results = []
    old = wp.config.fp_contract
    wp.config.fp_contract = False  # each operation rounded (as numpy), whatever the optimiser fuses
    try:
        for options in ({}, {"optimization_level": 0}, {"cpu_compiler_flags": ""}):
            @wp.kernel(module="unique", module_options=options)
            def poly(a: wp.array(dtype=float), out: wp.array(dtype=float)):
                i = wp.tid()
                out[i] = a[i] * a[i] - 3.0 * a[i]
            out = wp.zeros(64, dtype=float)
            wp.launch(poly, 64, [wp.array(x), out])
            results.append(out.numpy())
    finally:
        wp.config.fp_contract = old
    for r in results:
        np.testing.assert_array_equal(r, x * x - np.float32(3.0) * x)
    with pytest.raises(ValueError, match="optimization_level must be an integer from 0 to 3"):
        wp.launch(_factory(5.0, module_options={"optimization_level": 7}), 1, [wp.zeros(1)])


@pytest.mark.parametrize("workers", [0, 2])
def test_force_load_loads_every_module(workers):
    modules = [_module_from_text(BODY.format(scale=float(i + 4 + 10 * workers)), f"module_api_load_{workers}_{i}")
               for i in range(2)]
    wp.force_load(device="cpu", modules=modules, max_workers=workers)
    for m in modules:
        assert any(ctx is None for ctx, _ in m.execs)
        assert all(k.lib is not None for k in m.kernels)


def test_force_load_reports_a_kernel_that_cannot_build():
    bad = _module_from_text(BODY.replace("fn(1.0, 2.0)", "no_such_function(1.0)").format(scale=2.0),
                            "module_api_bad")
    good = _module_from_text(BODY.format(scale=9.0), "module_api_good")
    with pytest.raises(Exception, match="no_such_function"):
        wp.force_load(device="cpu", modules=[bad, good], max_workers=2)
    assert all(k.lib is not None for k in good.kernels)  # the other module still loaded


AOT_BODY = """
import kernels as wp

@wp.kernel
def add(a: wp.array(dtype=wp.int32), b: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    out[i] = a[i] + b[i] * {factor}
"""


def _run_add(module_name):
    import sys

    a = wp.array(np.arange(5, dtype=np.int32))
    out = wp.zeros(5, dtype=wp.int32)
    wp.launch(sys.modules[module_name].add, 5, [a, a, out])
    return out.numpy()


def _import_as(text: str, name: str):
    """Import `text` as Python module `name` (kept in sys.modules, as a reload would find it)."""
    import sys

    fd, path = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        os.remove(path)
    return module


def test_aot_compile_and_load(tmp_path):
    name = "module_api_aot"
    _import_as(AOT_BODY.format(factor=2), name)
    m = wp.get_module(name)
    paths = wp.compile_aot_module(name, device="cpu", module_dir=tmp_path)
    assert paths == [tmp_path / m._get_compile_output_name()] and paths[0].stat().st_size > 0
    assert paths[0].name.startswith(m.get_module_identifier() + ".cpu") and paths[0].suffix == ".o"
    assert m.get_module_identifier() == f"wp_{name}_{m.hash_module().hex()[:7]}"
    wp.load_aot_module(name, device="cpu", module_dir=tmp_path)
    np.testing.assert_array_equal(_run_add(name), np.arange(5) * 3)
    # the code changed: its hash names another artifact, which does not exist
    _import_as(AOT_BODY.format(factor=3), name)
    with pytest.raises(FileNotFoundError, match="Binary file not found"):
        wp.load_aot_module(name, device="cpu", module_dir=tmp_path)


def test_aot_strip_hash_loads_what_was_compiled(tmp_path):
    name = "module_api_aot_strip"
    _import_as(AOT_BODY.format(factor=2), name)
    wp.compile_aot_module(name, device="cpu", module_dir=tmp_path, strip_hash=True)
    import sys

    before = sys.modules[name].add
    _import_as(AOT_BODY.format(factor=5), name)  # redefined: the module holds the new kernel only
    assert [k.key for k in wp.get_module(name).kernels] == ["add"] and wp.get_module(name).kernels[0] is not before
    a, out = wp.array(np.arange(5, dtype=np.int32)), wp.zeros(5, dtype=wp.int32)
    wp.launch(before, 5, [a, a, out])  # the earlier kernel object still builds and runs its own code
    np.testing.assert_array_equal(out.numpy(), np.arange(5) * 3)
    wp.load_aot_module(name, device="cpu", module_dir=tmp_path, strip_hash=True)
    np.testing.assert_array_equal(_run_add(name), np.arange(5) * 3)  # Warp's rule: the compiled code runs


def test_aot_refuses_a_damaged_artifact_and_cuda(tmp_path):
    name = "module_api_aot_damaged"
    _import_as(AOT_BODY.format(factor=2), name)
    (path,) = wp.compile_aot_module(name, device="cpu", module_dir=tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="not loaded: .*hash"):
        wp.load_aot_module(name, device="cpu", module_dir=tmp_path)
    with pytest.raises(NotImplementedError, match="CUDA ahead-of-time artifacts"):
        wp.compile_aot_module(name, arch=90, module_dir=tmp_path)


def test_aot_generic_kernels_follow_warps_rules(tmp_path):
    name = "module_api_aot_generic"
    _import_as('''
from typing import Any
import kernels as wp

@wp.kernel
def scale(x: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    x[i] = s * x[i]
''', name)
    with pytest.raises(RuntimeError, match="No compilable kernels found"):
        wp.compile_aot_module(name, device="cpu", module_dir=tmp_path)
    import sys

    generic = sys.modules[name].scale
    f32 = wp.overload(generic, [wp.array(dtype=wp.float32), wp.float32])
    f64 = wp.overload(generic, [wp.array(dtype=wp.float64), wp.float64])
    with pytest.raises(RuntimeError, match="multiple overloads"):
        wp.compile_aot_module(name, device="cpu", module_dir=tmp_path, strip_hash=True)
    wp.compile_aot_module(name, device="cpu", module_dir=tmp_path, strip_hash=False)
    wp.load_aot_module(name, device="cpu", module_dir=tmp_path)
    for kernel, dtype, factor in ((f32, wp.float32, 2.0), (f64, wp.float64, 3.0)):
        x = wp.array(np.arange(3, dtype=np.float64), dtype=dtype)
        wp.launch(kernel, 3, [x, factor])
        np.testing.assert_array_equal(x.numpy(), np.arange(3) * factor)


def test_cpu_kernel_cache_key_names_the_target():
    native = wp.get_cpu_kernel_cache_key(cpu_compiler_flags="-march=native")
    generic = wp.get_cpu_kernel_cache_key(cpu_compiler_flags="")
    assert native != generic and native.startswith(f"{wp.config.version}-")
    # flags that do not pick the instruction set leave the target alone
    assert wp.get_cpu_kernel_cache_key(cpu_compiler_flags="-march=native -O2") == native
    old = wp.config.cpu_compiler_flags
    try:
        wp.config.cpu_compiler_flags = None  # the default: -march=native
        assert wp.get_cpu_kernel_cache_key() == native
        wp.config.cpu_compiler_flags = ""
        assert wp.get_cpu_kernel_cache_key() == generic
    finally:
        wp.config.cpu_compiler_flags = old
    kernel = _factory(11.0, module_options={"cpu_compiler_flags": ""})
    name = kernel.module._get_compile_output_name(wp.get_device("cpu"))
    assert name == f"{kernel.module.get_module_identifier()}.cpu{generic.rsplit('-', 1)[1]}.o"


@wp.func
def _helper_for_references(value: float):
    return value + 1.0


def test_module_references_and_dependents():
    def make():
        @wp.kernel(module="unique")
        def uses_helper(a: wp.array(dtype=float)):
            a[wp.tid()] = _helper_for_references(a[wp.tid()])
        return uses_helper

    helper_module = _helper_for_references.module
    kernels_made = [make() for _ in range(3)]
    assert len({id(k) for k in kernels_made}) == 1
    canonical = kernels_made[0].module
    assert helper_module in canonical.references and canonical not in canonical.references
    assert canonical in helper_module.dependents
    # the two kernels made again were dropped: no module of theirs depends on the helper
    assert not {m for m in helper_module.dependents if m.name.startswith(canonical.name.rsplit("_", 1)[0])} - {
        canonical}
