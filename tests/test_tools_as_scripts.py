"""The tools that import their sibling modules run as the README shows them, `python tools/NAME.py`, from the
repository root with nothing on PYTHONPATH (the profilers used to stop at `from tools import ...`: the repository
root is not on sys.path when a script runs)."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _scripts_importing_siblings() -> list:
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tools", "*.py"))):
        with open(path) as f:
            text = f.read()
        # those with a command line (argparse), where --help stops before any work
        if ('__name__ == "__main__"' in text and "argparse" in text
                and ("from tools import" in text or "from tools." in text)):
            names.append(os.path.basename(path))
    return names


SCRIPTS = _scripts_importing_siblings()


def test_the_profilers_are_among_them():
    assert {"profile_rigid.py", "profile_cpu_kernels.py", "profile_cloth_backward.py", "bench_worlds.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_runs_as_a_script(name):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, os.path.join("tools", name), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "usage:" in done.stdout
