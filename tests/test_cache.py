"""The on-disk compile cache: reuse across processes, recovery from corrupt entries, concurrent builders, the
cache-directory settings, and the errors of a failing or missing C++ compiler.

Most tests run tests/_cache_worker.py in fresh processes on a private cache directory (pytest's tmp_path), since
what matters is what a second process finds on disk.
"""

import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import kernels as wp

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cache_worker.py")
EXPECTED = [2.0 * i + 1.0 for i in range(8)]  # what the worker's kernel computes


def _worker_env(cache_dir, **overrides) -> dict:
    env = dict(os.environ)
    env["KERNELS_CACHE_DIR"] = str(cache_dir)
    env.pop("KERNELS_MODE", None)
    env.update(overrides)
    return env


def _parse_report(proc) -> dict:
    assert proc.returncode == 0, f"worker failed:\n{proc.stdout}\n{proc.stderr}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"worker printed no report:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1])


def _run_worker(cache_dir, *args, env=None) -> dict:
    proc = subprocess.run([sys.executable, WORKER, *args], env=env or _worker_env(cache_dir),
                          capture_output=True, text=True, timeout=300)
    return _parse_report(proc)


def _libraries(cache_dir) -> list:
    """Paths of the cached kernel module libraries under `cache_dir` (complete entries only; not the runtime
    library of the thread pool and BVH builder, which every cache holds once)."""
    return sorted(p for p in glob.glob(os.path.join(str(cache_dir), "**", "module.so"), recursive=True)
                  if not os.path.basename(os.path.dirname(p)).startswith("runtime_"))


def _temporary_dirs(cache_dir) -> list:
    """Build directories left behind (they are named with a leading dot until renamed into place)."""
    return [p for p in glob.glob(os.path.join(str(cache_dir), "**", ".*"), recursive=True) if os.path.isdir(p)]


def test_second_process_loads_from_cache(tmp_path):
    first = _run_worker(tmp_path)
    second = _run_worker(tmp_path)
    assert first["cold_builds"] == 1
    assert second["cold_builds"] == 0
    assert first["result"] == EXPECTED
    assert second["result"] == EXPECTED
    assert len(_libraries(tmp_path)) == 1


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_cache_entry_is_rebuilt(tmp_path, damage):
    assert _run_worker(tmp_path)["cold_builds"] == 1
    (lib,) = _libraries(tmp_path)
    with open(lib, "wb") as f:
        if damage == "garbage":
            f.write(b"this is not a shared library\n" * 64)

    rebuilt = _run_worker(tmp_path)
    assert rebuilt["result"] == EXPECTED
    assert rebuilt["cold_builds"] == 1, "a library that fails to load must be compiled again"
    (lib,) = _libraries(tmp_path)
    assert os.path.getsize(lib) > 1000
    # the rebuilt entry is good: the next process loads it
    assert _run_worker(tmp_path)["cold_builds"] == 0


def test_concurrent_builds_of_one_module(tmp_path):
    cache_dir = tmp_path / "cache"
    go = tmp_path / "go"
    procs, ready_files = [], []
    for k in range(2):
        ready = tmp_path / f"ready{k}"
        ready_files.append(ready)
        procs.append(subprocess.Popen(
            [sys.executable, WORKER, "--ready-file", str(ready), "--go-file", str(go)],
            env=_worker_env(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready_files):
            assert all(p.poll() is None for p in procs), "a worker exited before the start barrier"
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.01)
        go.touch()  # both are past their imports: release them together onto the empty cache
        reports = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=300)
            reports.append(_parse_report(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for report in reports:
        assert report["result"] == EXPECTED
    assert sum(r["cold_builds"] for r in reports) >= 1
    assert len(_libraries(cache_dir)) == 1, "both processes build the same entry: one complete entry remains"
    assert _temporary_dirs(cache_dir) == []
    assert _run_worker(cache_dir)["cold_builds"] == 0


def test_cache_dir_environment_variable_is_honoured(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    report = _run_worker(first)
    assert report["cache_dir"] == str(first)
    assert len(_libraries(first)) == 1
    # another directory starts empty: the module is compiled again there, and nothing is written to the first
    report = _run_worker(second)
    assert report["cold_builds"] == 1
    assert len(_libraries(second)) == 1
    assert len(_libraries(first)) == 1


def test_config_cache_dir_overrides_environment_variable(tmp_path):
    env_dir, config_dir = tmp_path / "env", tmp_path / "config"
    report = _run_worker(env_dir, "--cache-dir", str(config_dir))
    assert report["cold_builds"] == 1
    assert len(_libraries(config_dir)) == 1
    assert not env_dir.exists() or _libraries(env_dir) == []


def test_config_cache_dir_is_honoured_in_process(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))

    @wp.kernel(module="test_cache_in_process_dir")
    def add_seven(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] + 7.0

    x = wp.zeros(3, dtype=float, device="cpu")
    wp.launch(add_seven, 3, inputs=[x], device="cpu")
    np.testing.assert_array_equal(x.numpy(), [7.0, 7.0, 7.0])
    assert len(_libraries(tmp_path)) == 1
    assert add_seven.module.cold_builds == 1


MISSING_HEADER = "/nonexistent/kernels_test_missing_header.h"


def _kept_source_path(message: str) -> str:
    match = re.search(r"generated source kept at (\S+\.cpp)", message)
    assert match, f"the error does not give the generated source's path:\n{message}"
    return match.group(1)


def test_failing_cxx_compile_raises_native_compile_error(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(wp.config, "cxx_flags", ("-include", MISSING_HEADER))

    @wp.kernel(module="test_cache_failing_cxx")
    def never_compiles(x: wp.array(dtype=float)):
        x[wp.tid()] = 1.0

    x = wp.zeros(2, dtype=float, device="cpu")
    with pytest.raises(wp.NativeCompileError) as info:
        wp.launch(never_compiles, 2, inputs=[x], device="cpu")
    message = str(info.value)
    path = _kept_source_path(message)
    assert os.path.isfile(path)
    assert os.path.realpath(path).startswith(os.path.realpath(str(tmp_path)))
    with open(path) as f:
        assert "never_compiles_forward" in f.read()
    assert "kernels_test_missing_header.h" in message, "the compiler's own output is part of the error"
    assert _libraries(tmp_path) == []
    # the error stays with the kernel: a second launch raises it again, without another compile
    with pytest.raises(wp.NativeCompileError):
        wp.launch(never_compiles, 2, inputs=[x], device="cpu")


def test_failing_cxx_compile_in_a_fresh_process(tmp_path):
    report = _run_worker(tmp_path, "--cxx-flags", json.dumps(["-include", MISSING_HEADER]))
    assert report.get("error_type") == "NativeCompileError", report
    assert os.path.isfile(_kept_source_path(report["error"]))
    assert _libraries(tmp_path) == []


def test_missing_cxx_compiler_says_what_to_install(tmp_path):
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    # no compiler on PATH and a $CXX that does not exist: the fallbacks c++, g++, clang++ find nothing either, and
    # a `ziglang` package without its zig binary shadows the installed wheel (the last fallback)
    shadow = tmp_path / "shadow" / "ziglang"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    path = os.pathsep.join([str(shadow.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = _worker_env(tmp_path / "cache", PATH=str(empty_bin), CXX="/nonexistent/bin/c++", PYTHONPATH=path)
    report = _run_worker(tmp_path / "cache", env=env)
    assert report.get("error_type") == "NativeCompileError", report
    message = report["error"]
    assert "no C++ compiler" in message
    assert "install" in message and "g++" in message
    assert "CXX" in message and "pip install ziglang" in message
    assert _libraries(tmp_path / "cache") == []


def test_a_kernel_the_cxx_compiler_rejects_is_isolated_by_bisection(tmp_path, monkeypatch):
    """One natively failing kernel among 8: the other 7 build and run, in 1 + 2*log2(8) builds at most."""
    from kernels.runtime import module as kmodule

    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))
    real_build = kmodule.build_cpu
    builds = []

    def build_rejecting_k5(source, name, debug, notice=None, **flags):
        builds.append(source.count("_forward("))
        if "bisect_k5" in source:
            raise wp.NativeCompileError("the C++ compiler rejects bisect_k5 (simulated)")
        return real_build(source, name, debug, notice, **flags)

    monkeypatch.setattr(kmodule, "build_cpu", build_rejecting_k5)
    made = []
    for n in range(8):
        def body(out: wp.array(dtype=float)):
            out[wp.tid()] = 1.0

        body.__name__ = body.__qualname__ = f"bisect_k{n}"
        made.append(wp.kernel(body, module="test_cache_bisect"))
    out = wp.zeros(1, dtype=float, device="cpu")
    for n, k in enumerate(made):
        if n == 5:
            with pytest.raises(wp.NativeCompileError, match="bisect_k5"):
                wp.launch(k, 1, inputs=[out], device="cpu")
        else:
            wp.launch(k, 1, inputs=[out], device="cpu")
    assert len(builds) <= 7, builds


def test_a_library_build_keys_on_the_compilers_stamp_without_running_it(tmp_path, monkeypatch):
    # the compile cache's key names the compiler by a stat of its binary (path, size, mtime), once per process:
    # no `c++ --version` subprocess before a process's first library; another binary at that path, another key
    from kernels.compiler import build

    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))
    cxx = build.find_cxx()
    monkeypatch.setattr(build, "_compiler_stamps", {})
    first = build.compiler_stamp(cxx)
    assert first[-3] == os.path.realpath(cxx[0]) and first[-2] == os.stat(first[-3]).st_size

    def no_subprocess(*args, **kwargs):
        raise AssertionError("ran the compiler although nothing was compiled")

    built = build.build_cpu("extern \"C\" int f() { return 1; }\n", "stamp_probe", False, headers=False)
    monkeypatch.setattr(build, "_compiler_stamps", {})
    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert build.build_cpu("extern \"C\" int f() { return 1; }\n", "stamp_probe", False,
                           headers=False).path == built.path
    monkeypatch.setattr(build, "_compiler_stamps", {tuple(cxx): first[:-1] + (first[-1] + 1,)})
    key = build.cache_key("x", repr(build.compiler_stamp(cxx)), [], False)
    assert key != build.cache_key("x", repr(first), [], False)
