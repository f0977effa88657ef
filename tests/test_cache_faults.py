"""Fault injection on the compile cache: damaged libraries and PTX files are rebuilt (one line saying so), never
loaded; temporaries of killed builds are removed by the next build, those of live processes never."""

import os
import signal
import subprocess
import sys
import time

import pytest

import kernels as wp
from test_cache import WORKER, _libraries, _run_worker, _temporary_dirs, _worker_env


def _damaged_run(tmp_path, damage):
    first = _run_worker(tmp_path)
    assert first["cold_builds"] == 1
    [lib] = _libraries(tmp_path)
    damage(lib)
    proc = subprocess.run([sys.executable, WORKER], env=_worker_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"the damaged entry crashed the process ({proc.returncode}):\n{proc.stderr}"
    return proc, first


def _check_rebuilt(tmp_path, proc, first):
    import json
    report = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert report["result"] == first["result"]
    assert report["cold_builds"] == 1, "the damaged library must be rebuilt"
    damaged_lines = [ln for ln in proc.stderr.splitlines() if "is damaged" in ln and "rebuilding" in ln]
    assert len(damaged_lines) == 1, proc.stderr
    assert _run_worker(tmp_path)["cold_builds"] == 0, "the rebuilt entry is intact"


def test_truncated_library_is_rebuilt_not_loaded(tmp_path):
    def truncate(lib):
        size = os.path.getsize(lib)
        with open(lib, "r+b") as f:
            f.truncate(size // 2)

    proc, first = _damaged_run(tmp_path, truncate)
    _check_rebuilt(tmp_path, proc, first)
    assert "size" in proc.stderr


def test_library_overwritten_inside_is_rebuilt_not_loaded(tmp_path):
    def overwrite(lib):
        size = os.path.getsize(lib)
        with open(lib, "r+b") as f:
            f.seek(size // 2)
            f.write(b"\xcc" * 4096)

    proc, first = _damaged_run(tmp_path, overwrite)
    _check_rebuilt(tmp_path, proc, first)
    assert "hash" in proc.stderr


def test_library_without_its_manifest_is_rebuilt(tmp_path):
    proc, first = _damaged_run(tmp_path, lambda lib: os.unlink(lib + ".sha256"))
    _check_rebuilt(tmp_path, proc, first)


def test_damaged_ptx_is_recompiled(tmp_path, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc")
    monkeypatch.setattr(wp.config, "cache_dir", str(tmp_path))

    @wp.kernel(module="test_cache_faults_ptx")
    def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    ptx = wp.compile_ptx(axpy)
    [path] = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".ptx")]
    with open(path, "r+") as f:
        f.truncate(len(ptx) // 3)
    again = wp.compile_ptx(axpy)
    assert again == ptx
    with open(path) as f:
        assert f.read() == ptx, "the damaged file was replaced"


def _plant_temporary(cache_dir, pid):
    root = os.path.join(str(cache_dir), "0.1.0")
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, f".planted_module.{pid}.abc123")
    os.makedirs(path)
    with open(os.path.join(path, "module.cpp"), "w") as f:
        f.write("// half-built\n")
    return path


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_dead_builds_are_removed_live_ones_kept(tmp_path):
    dead = _plant_temporary(tmp_path, _dead_pid())
    live = _plant_temporary(tmp_path, os.getpid())
    _run_worker(tmp_path)
    assert not os.path.exists(dead), "a dead process's temporary is removed by the next build"
    assert os.path.exists(live), "a live process's temporary is never touched"


def test_build_killed_during_compile_leaves_nothing_after_the_next_run(tmp_path):
    proc = subprocess.Popen([sys.executable, WORKER], env=_worker_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not _temporary_dirs(tmp_path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    if proc.poll() is not None:
        pytest.skip("the build finished before a temporary directory was seen")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _temporary_dirs(tmp_path), "the killed build left its temporary (the situation under test)"
    report = _run_worker(tmp_path)
    assert report["result"][1] == 3.0
    assert _temporary_dirs(tmp_path) == []
    assert len(_libraries(tmp_path)) == 1
