"""Runs one small program on real warp-lang and on kernels, for tests that compare values to Warp's bit for bit.

A program is Python source without an import of `wp`: it defines module-level kernels and a function
`run(wp, Tape) -> {name: numpy array}` (Tape: the framework's tape class). `both(source, folder, name)` writes
it twice (`import warp as wp` / `import kernels as wp`), runs Warp's copy in a child process (_warp_child.py)
and ours in this process, without fused multiply-add as Warp's CPU backend compiles, and returns
(Warp's arrays, ours).
"""

from __future__ import annotations

import os

import numpy as np

import _warp_child


def both(source: str, folder: str, name: str) -> tuple:
    """({array name: Warp's value}, {array name: ours}) for program `source` (see the module docstring)."""
    import kernels
    from autodiff import Tape

    paths = {}
    for framework in ("warp", "kernels"):
        paths[framework] = os.path.join(folder, f"{name}_{framework}.py")
        with open(paths[framework], "w") as f:
            f.write(f"import {framework} as wp\n\n\n{source}")
    out = os.path.join(folder, f"{name}_warp.npz")
    child = _warp_child.start("program", paths["warp"], out)
    contract, kernels.config.fp_contract = kernels.config.fp_contract, False
    try:
        ours = _warp_child.load_module(paths["kernels"], f"kernels_reference_{name}").run(kernels, Tape)
        child.finish(timeout=600)
    finally:
        kernels.config.fp_contract = contract
        child.kill()
    return _warp_child.read_npz(out), {k: np.asarray(v) for k, v in ours.items()}
