"""Runs one small program on real warp-lang and on kernels, for tests that compare values to Warp's bit for bit.

A program is Python source without an import of `wp`: it defines module-level kernels and a function
`run(wp, Tape) -> {name: numpy array}` (Tape: the framework's tape class). `both(source, folder, name)` writes
it twice (`import warp as wp` / `import kernels as wp`), runs Warp's copy in a child process
(`python _warp_reference.py MODULE OUT CACHE`, so `import warp` is never the shim another test may have
installed) and ours in this process, without fused multiply-add as Warp's CPU backend compiles, and returns
(Warp's arrays, ours).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

TESTS = os.path.dirname(os.path.abspath(__file__))


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def warp_cache_dir() -> str:
    """Warp's kernel cache for these tests, kept between runs (Warp checks its own entries)."""
    path = os.path.join(tempfile.gettempdir(), f"kernels-warp-diff-cache-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def both(source: str, folder: str, name: str) -> tuple:
    """({array name: Warp's value}, {array name: ours}) for program `source` (see the module docstring)."""
    import pytest

    import kernels
    from autodiff import Tape

    paths = {}
    for framework in ("warp", "kernels"):
        paths[framework] = os.path.join(folder, f"{name}_{framework}.py")
        with open(paths[framework], "w") as f:
            f.write(f"import {framework} as wp\n\n\n{source}")
    out = os.path.join(folder, f"{name}_warp.npz")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), paths["warp"], out, warp_cache_dir()],
                             cwd=TESTS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    contract, kernels.config.fp_contract = kernels.config.fp_contract, False
    try:
        ours = _load(paths["kernels"], f"kernels_reference_{name}").run(kernels, Tape)
        log, _ = child.communicate(timeout=600)
    finally:
        kernels.config.fp_contract = contract
        if child.poll() is None:
            child.kill()
    if child.returncode != 0:
        if "No module named 'warp'" in log:
            pytest.skip("warp-lang cannot be imported in a child process")
        pytest.fail(f"Warp's run failed:\n{log[-4000:]}")
    with np.load(out) as data:
        warp = {k: data[k] for k in data.files}
    return warp, {k: np.asarray(v) for k, v in ours.items()}


def main(module_path: str, out_path: str, cache_dir: str) -> int:
    import warp as wp

    wp.config.kernel_cache_dir = cache_dir
    wp.config.quiet = True
    wp.init()
    arrays = _load(module_path, "warp_reference_program").run(wp, wp.Tape)
    np.savez(out_path, **{k: np.asarray(v) for k, v in arrays.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
