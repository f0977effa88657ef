"""Smoke test of tools/bench.py: the quick run finishes and prints its table (every section); CUDA and unknown
sections are refused clearly."""

import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_quick_prints_table():
    # warp-lang is a test extra (tests/warp_compat); its columns here would only add its cold compiles
    proc = subprocess.run([sys.executable, os.path.join("tools", "bench.py"), "--quick", "--no-warp"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = next((line for line in lines if line.startswith("benchmark")), None)
    assert header is not None, proc.stdout
    assert header.split()[:4] == ["benchmark", "unit", "ours", "numpy"]
    for prefix in ("saxpy", "cloth", "rigid 1000 boxes", "rigid 100 boxes forward+backward",
                   "articulation 7-dof arm forward", "articulation 20-link chain backward / forward",
                   "cloth throw optimisation iteration", "loss+gradient peak memory, checkpointed",
                   "xpbd32 (steps/s)", "cloth drop 8x8 XPBD 10 it, 20 substeps, self-collision",
                   "sim render cloth.yaml 13 frames 160x90, whole command", "worlds (world-steps/s)",
                   "worlds targets:"):
        assert any(line.startswith(prefix) for line in lines), (prefix, proc.stdout)
    assert lines[-1].startswith("targets:") and lines[-1].count("PASS") + lines[-1].count("MISS") >= 1


def test_bench_device_choices():
    from tools import bench
    assert bench.parse_args(["--device", "cuda"]).device == "cuda"
    assert bench.parse_args(["--device", "cuda:1"]).device == "cuda:1"
    with pytest.raises(SystemExit) as info:
        bench.parse_args(["--device", "tpu"])
    assert info.value.code == 2


def test_bench_on_cuda_without_a_gpu_says_so(capsys):
    import kernels as wp
    from tools import bench
    if wp.get_cuda_device_count() > 0:
        pytest.skip("this machine has a GPU")
    assert bench.main(["--device", "cuda", "--quick"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_bench_only_selects_sections():
    from tools import bench
    assert bench.parse_args(["--only", "rigid", "optim"]).only == ["rigid", "optim"]
    assert bench.parse_args([]).only == list(bench.SECTIONS)
    with pytest.raises(SystemExit) as info:
        bench.parse_args(["--only", "fluids"])
    assert info.value.code == 2
    assert bench.closing_line({}) == "targets: none in the sections run"
