"""The one way tests run real warp-lang: in a child process (so that Warp's import and its compile run beside ours,
and `import warp` is never the shim another test may have installed), with Warp's kernel cache kept between runs
in a private temp folder (Warp checks its own entries).

    python tests/_warp_child.py program MODULE.py OUT.npz CACHE_DIR
        MODULE defines `run(wp, Tape) -> {name: array}` (see _warp_reference.py); the arrays go to OUT.
    python tests/_warp_child.py cases MODULE.py MANIFEST.json OUT.npz CACHE_DIR
        the generated cases of the differential tests (see _diff_runner.py); every output and gradient goes to
        OUT, each case's refusal to OUT.errors.json.

In the test's process: `start(job, *args)` starts one, and `WarpChild.finish()` waits for it, skipping the test
when the child cannot import warp and failing it (with Warp's log) when the run fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import traceback

import numpy as np

TESTS = os.path.dirname(os.path.abspath(__file__))


def load_module(path: str, name: str):
    """Import the file at `path` as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def warp_cache_dir() -> str:
    """Warp's kernel cache for the tests, kept between runs: a warm run skips Warp's compile."""
    path = os.path.join(tempfile.gettempdir(), f"kernels-warp-diff-cache-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


class WarpChild:
    """A running child; `finish()` waits for it."""

    def __init__(self, args: list):
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), *args], cwd=TESTS,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def finish(self, timeout: float = 900, *, required: bool = True) -> bool:
        """Wait for the child; True when it succeeded. A failed run skips the test when warp cannot be imported,
        else fails it with Warp's log (or, with `required=False`, returns False)."""
        import pytest

        try:
            log, _ = self.process.communicate(timeout=timeout)
        finally:
            self.kill()
        if self.process.returncode == 0:
            return True
        if "No module named 'warp'" in log:
            pytest.skip("warp-lang cannot be imported in a child process")
        if required:
            pytest.fail(f"Warp's run failed:\n{log[-4000:]}")
        return False

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start(job: str, *args: str) -> WarpChild:
    """Start `job` ("program" or "cases") with its file arguments; the cache folder is added."""
    return WarpChild([job, *args, warp_cache_dir()])


def read_npz(path: str) -> dict:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _init_warp(cache_dir: str, *, optimization_level=None):
    import warp as wp

    wp.config.kernel_cache_dir = cache_dir
    wp.config.quiet = True
    if optimization_level is not None:
        wp.config.optimization_level = optimization_level
    wp.init()
    return wp


def _run_program(module_path: str, out_path: str, cache_dir: str):
    wp = _init_warp(cache_dir)
    arrays = load_module(module_path, "warp_reference_program").run(wp, wp.Tape)
    np.savez(out_path, **{k: np.asarray(v) for k, v in arrays.items()})


def _run_cases(module_path: str, manifest_path: str, out_path: str, cache_dir: str):
    from _diff_runner import run_expressions, run_gradients

    # compile time is most of the run; the semantics do not depend on the optimiser
    wp = _init_warp(cache_dir, optimization_level=0)
    module = load_module(module_path, "warp_diff_cases")
    with open(manifest_path) as f:
        manifest = json.load(f)
    results, errors = run_expressions(wp, module, [e for e in manifest if e["kind"] in ("scalar", "composite")])
    more, more_errors = run_gradients(wp, wp.Tape, module, [e for e in manifest if e["kind"] == "gradient"])
    results.update(more)
    errors.update(more_errors)
    np.savez(out_path, **{k: np.asarray(v) for k, v in results.items()})
    with open(out_path + ".errors.json", "w") as f:
        json.dump(errors, f)


JOBS = {"program": _run_program, "cases": _run_cases}

if __name__ == "__main__":
    try:
        JOBS[sys.argv[1]](*sys.argv[2:])
    except Exception:  # noqa: BLE001  (the parent shows the log)
        traceback.print_exc()
        sys.exit(1)
