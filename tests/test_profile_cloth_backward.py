"""tools/profile_cloth_backward.py runs on a small cloth: the taped backward's adjoints are timed per kernel, and
the costliest kernels are launched alone forward and as adjoints."""

import sys

import kernels as wp
from tools import profile_cloth_backward


def test_profiles_the_taped_backward_per_kernel(monkeypatch, capsys):
    monkeypatch.setattr(wp.config, "cpu_threads", wp.config.cpu_threads)  # main() sets one thread: restored after
    monkeypatch.setattr(sys, "argv", ["profile_cloth_backward.py", "--cells", "4", "--drop", "2", "--steps", "1"])
    profile_cloth_backward.main()
    out = capsys.readouterr().out
    assert out.count("ratio") == 2
    # every constraint kernel of the cloth's XPBD iteration has its adjoint run by the tape
    for kernel in ("solve_triangle_edges", "solve_bending_quadratic"):
        assert f"adjoint {kernel}" in out
    alone = out.split("kernel alone, per launch: forward / adjoint")[1].strip().splitlines()
    assert len(alone) == 3 and all(line.split()[-1] == "ms" for line in alone)
