"""The cache index: a second process finds its module through a key computed before code generation and compiles
no IR; any change to what decides the generated code (a referenced constant, a called @wp.func, a struct field)
misses; a damaged or stale index entry falls back to the normal build.

Each test writes a small kernel module into pytest's tmp_path and runs it in fresh processes on a private cache,
since what matters is what a second process finds on disk.
"""

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kernels as wp
from kernels.compiler import cache_index

KERNEL_MODULE = '''
import kernels as wp

SCALE = wp.constant(2.0)


@wp.struct
class Params:
    offset: float
    spare: int


@wp.func
def twice(x: float):
    return x * 2.0


@wp.kernel
def affine(x: wp.array(dtype=float), p: Params, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = twice(x[i]) * SCALE + p.offset * x[i] * x[i]


@wp.kernel
def floordiv_on_path(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] // 1.0
'''

# Run in a fresh interpreter: load the module above, launch both kernels, differentiate `affine` with a tape,
# and print one JSON line: what was compiled, what came from where, and the numbers.
WORKER = r'''
import json, sys
import numpy as np
import kernels as wp
import kernels.compiler.driver, kernels.runtime.module
from autodiff import Tape

compiled = []
original = kernels.compiler.driver.compile_ir
def counting_compile_ir(source, kind, name, param_types):
    compiled.append(name)
    return original(source, kind, name, param_types)
kernels.compiler.driver.compile_ir = counting_compile_ir
kernels.runtime.module.compile_ir = counting_compile_ir

sys.path.insert(0, sys.argv[1])
import index_kernels as m
wp.load_module(m)
module = kernels.runtime.module.get_module("index_kernels")
ir_after_load = [m.affine.ir is not None, m.floordiv_on_path.ir is not None]
compiled_at_load = list(compiled)

x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, requires_grad=True)
y = wp.zeros(3, dtype=float, requires_grad=True)
p = m.Params(offset=0.5)
tape = Tape()
with tape:
    wp.launch(m.affine, 3, inputs=[x, p, y])
tape.backward(grads={y: np.ones(3, dtype=np.float32)})
z = wp.zeros(3, dtype=float)
wp.launch(m.floordiv_on_path, 3, inputs=[x, z])
try:
    wp.launch(m.floordiv_on_path, 3, inputs=[x, z], adjoint=True, adj_inputs=[x.grad, z])
    adjoint_error = None
except wp.CompileError as e:
    adjoint_error = str(e)
print(json.dumps({
    "cold_builds": module.cold_builds, "index_hits": module.index_hits,
    "compiled_at_load": compiled_at_load, "ir_after_load": ir_after_load, "compiled": compiled,
    "y": y.numpy().tolist(), "grad": x.grad.numpy().tolist(), "z": z.numpy().tolist(),
    "adjoint_error": adjoint_error, "access": {k: list(v) for k, v in m.affine.param_access().items()},
    "tid_ndim": m.affine.tid_ndim,
}))
'''


def _write_module(directory, text=KERNEL_MODULE):
    path = os.path.join(str(directory), "index_kernels.py")
    with open(path, "w") as f:
        f.write(text)
    for stale in glob.glob(os.path.join(str(directory), "__pycache__", "index_kernels*")):
        os.remove(stale)  # same size and second as the old file: make Python read the new source


def _run(tmp_path) -> dict:
    env = dict(os.environ, KERNELS_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("KERNELS_MODE", None)
    proc = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "src")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"worker failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])


def _index_entries(tmp_path) -> list:
    return glob.glob(os.path.join(str(tmp_path / "cache"), "*", "index", "*.py"))


def _expected(scale=2.0, factor=2.0, offset=0.5):
    x = np.array([1.0, 2.0, 3.0])
    return (x * factor * scale + offset * x * x).tolist(), (factor * scale + 2.0 * offset * x).tolist()


@pytest.fixture
def src(tmp_path):
    (tmp_path / "src").mkdir()
    _write_module(tmp_path / "src")
    return tmp_path / "src"


def test_second_process_compiles_no_ir(tmp_path, src):
    first = _run(tmp_path)
    assert (first["cold_builds"], first["index_hits"]) == (1, 0)
    assert "affine" in first["compiled_at_load"] and "twice" in first["compiled_at_load"]
    assert len(_index_entries(tmp_path)) == 1

    second = _run(tmp_path)
    assert (second["cold_builds"], second["index_hits"]) == (0, 1)
    assert second["compiled_at_load"] == []
    assert second["ir_after_load"] == [False, False]
    assert second["compiled"] == [], "launch, tape and backward need no IR after an index hit"
    y, grad = _expected()
    for report in (first, second):
        np.testing.assert_allclose(report["y"], y, rtol=1e-6)
        np.testing.assert_allclose(report["grad"], grad, rtol=1e-6)
        assert report["z"] == [1.0, 2.0, 3.0]
    # what the index restores equals what the build computed
    for key in ("adjoint_error", "access", "tid_ndim"):
        assert second[key] == first[key], key
    assert "floordiv" in second["adjoint_error"] and "index_kernels.py:" in second["adjoint_error"]
    assert second["access"]["x"] == [True, False] and second["access"]["y"] == [False, True]


@pytest.mark.parametrize("old, new, expected", [
    ("SCALE = wp.constant(2.0)", "SCALE = wp.constant(3.0)", _expected(scale=3.0)),
    ("    return x * 2.0", "    return x * 5.0", _expected(factor=5.0)),
    ("    spare: int", "    spare: float", _expected()),
], ids=["constant", "func-body", "struct-field"])
def test_change_to_what_the_code_depends_on_misses(tmp_path, src, old, new, expected):
    assert _run(tmp_path)["index_hits"] == 0
    assert _run(tmp_path)["index_hits"] == 1
    assert old in KERNEL_MODULE
    _write_module(src, KERNEL_MODULE.replace(old, new))

    changed = _run(tmp_path)
    assert changed["index_hits"] == 0
    assert changed["cold_builds"] == 1, "the generated code differs: a new library"
    assert "affine" in changed["compiled_at_load"]
    np.testing.assert_allclose(changed["y"], expected[0], rtol=1e-6)
    np.testing.assert_allclose(changed["grad"], expected[1], rtol=1e-6)
    assert _run(tmp_path)["index_hits"] == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong-kernels", "library-gone"])
def test_damaged_index_entry_falls_back_to_the_build(tmp_path, src, damage):
    first = _run(tmp_path)
    (entry,) = _index_entries(tmp_path)
    with open(entry) as f:
        text = f.read()
    if damage == "garbage":
        text = "\x00\x01 not a record"
    elif damage == "truncated":
        text = text[: len(text) // 2]
    elif damage == "wrong-kernels":
        text = text.replace("'affine'", "'something_else'")
    else:
        (lib,) = glob.glob(os.path.join(str(tmp_path / "cache"), "*", "index_kernels_*", "module.so"))
        os.remove(lib)
    with open(entry, "w") as f:
        f.write(text)

    fallback = _run(tmp_path)
    assert fallback["index_hits"] == 0
    assert fallback["cold_builds"] == (1 if damage == "library-gone" else 0)
    assert fallback["ir_after_load"] == [True, True]
    for key in ("y", "grad", "z", "adjoint_error", "access"):
        assert fallback[key] == first[key], key
    # the build rewrote the entry: the next process hits again
    assert _run(tmp_path)["index_hits"] == 1


def test_corrupt_library_behind_an_index_entry_is_rebuilt(tmp_path, src):
    _run(tmp_path)
    (lib,) = glob.glob(os.path.join(str(tmp_path / "cache"), "*", "index_kernels_*", "module.so"))
    with open(lib, "wb") as f:
        f.write(b"this is not a shared library\n" * 64)
    rebuilt = _run(tmp_path)
    assert (rebuilt["index_hits"], rebuilt["cold_builds"]) == (0, 1)
    np.testing.assert_allclose(rebuilt["y"], _expected()[0], rtol=1e-6)
    assert _run(tmp_path)["index_hits"] == 1


def test_kernel_referencing_an_arbitrary_python_object_is_not_indexed(tmp_path, src):
    # wp.static(helper()) evaluated at compile time (helper is defined after the kernel, so the decorator could
    # not evaluate it) runs Python the index cannot see into: such a module always takes the full build
    text = KERNEL_MODULE.replace("SCALE = wp.constant(2.0)", "") \
        .replace("* SCALE", "* wp.static(helper())") + "\n\ndef helper():\n    return 2.0\n"
    _write_module(src, text)
    assert _run(tmp_path)["index_hits"] == 0
    second = _run(tmp_path)
    assert (second["index_hits"], second["cold_builds"]) == (0, 0)
    np.testing.assert_allclose(second["y"], _expected()[0], rtol=1e-6)
    assert _index_entries(tmp_path) == []


def test_kernel_with_a_static_evaluated_by_its_decorator_is_indexed_by_the_value(tmp_path, src):
    # the value was taken when the decorator ran: the key holds the value, not the helper that made it
    text = KERNEL_MODULE.replace("SCALE = wp.constant(2.0)", "def helper():\n    return 2.0\n") \
        .replace("* SCALE", "* wp.static(helper())")
    _write_module(src, text)
    assert _run(tmp_path)["index_hits"] == 0
    second = _run(tmp_path)
    assert (second["index_hits"], second["cold_builds"]) == (1, 0)
    np.testing.assert_allclose(second["y"], _expected()[0], rtol=1e-6)


DEBUG_MODULE = '''
import kernels as wp


@wp.kernel
def read_past_the_end(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i + 1]
'''

DEBUG_WORKER = r'''
import json, sys
import kernels as wp
import kernels.runtime.module
sys.path.insert(0, sys.argv[1])
import index_kernels as m
x = wp.zeros(4, dtype=float)
y = wp.zeros(4, dtype=float)
try:
    wp.launch(m.read_past_the_end, 4, inputs=[x, y])
    error = None
except wp.LaunchError as e:
    error = str(e)
module = kernels.runtime.module.get_module("index_kernels")
print(json.dumps({"index_hits": module.index_hits, "ir": m.read_past_the_end.ir is not None, "error": error}))
'''


def test_debug_mode_bounds_check_works_after_an_index_hit(tmp_path, src):
    _write_module(src, DEBUG_MODULE)
    env = dict(os.environ, KERNELS_CACHE_DIR=str(tmp_path / "cache"), KERNELS_MODE="debug")
    reports = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", DEBUG_WORKER, str(src)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        reports.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert [(r["index_hits"], r["ir"]) for r in reports] == [(0, True), (1, False)]
    assert reports[1]["error"] is not None and "out of bounds" in reports[1]["error"]
    assert reports[1]["error"] == reports[0]["error"]


# ---------------------------------------------------------------------------------------------------------------
# the pre-key in one process


def _make_kernel(scale_value, module_name):
    scale = scale_value

    @wp.kernel(module=module_name)
    def scaled(x: wp.array(dtype=float)):
        x[wp.tid()] = x[wp.tid()] * scale

    return scaled


def test_pre_key_follows_closure_values_and_settings(monkeypatch):
    a = _make_kernel(2.0, "test_cache_index_prekey_a")
    b = _make_kernel(2.0, "test_cache_index_prekey_a")
    c = _make_kernel(3.0, "test_cache_index_prekey_a")
    key_a = cache_index.module_key("m", [a], False)
    assert key_a is not None
    assert cache_index.module_key("m", [b], False) == key_a
    assert cache_index.module_key("m", [c], False) != key_a
    assert cache_index.module_key("m", [a], True) != key_a
    monkeypatch.setattr(wp.config, "max_unroll", wp.config.max_unroll + 1)
    assert cache_index.module_key("m", [a], False) != key_a


def test_pre_key_follows_func_overloads_reached_through_other_funcs():
    @wp.func
    def inner_index_probe(x: float):
        return x + 1.0

    @wp.func
    def outer_index_probe(x: float):
        return inner_index_probe(x) * 2.0

    @wp.kernel(module="test_cache_index_prekey_b")
    def uses_outer(x: wp.array(dtype=float)):
        x[wp.tid()] = outer_index_probe(x[wp.tid()])

    before = cache_index.module_key("m", [uses_outer], False)

    @wp.func
    def inner_index_probe(x: int):  # noqa: F811  (an overload of the same @wp.func)
        return x + 1

    assert cache_index.module_key("m", [uses_outer], False) != before


def test_in_process_hit_loads_without_ir(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))
    first = _make_kernel(4.0, "test_cache_index_hit_first")
    x = wp.array(np.ones(3, dtype=np.float32), dtype=float)
    wp.launch(first, 3, inputs=[x])
    assert first.ir is not None
    # an identical kernel in another module: same pre-key, found in the index
    second = _make_kernel(4.0, "test_cache_index_hit_first")
    second.module.pending.remove(second)
    from kernels.runtime.module import Module
    other = Module("test_cache_index_hit_first")
    other.register(second)
    other.build()
    assert other.index_hits == 1 and second.ir is None
    wp.launch(second, 3, inputs=[x])
    np.testing.assert_allclose(x.numpy(), [16.0, 16.0, 16.0])
    assert second.source_text is not None and "scaled_forward" in second.source_text
    assert second.compile_ir() is not None, "the IR is still there to be had on request"
