"""The tools that import their sibling modules run as the README shows them, `python tools/NAME.py`, from the
repository root with nothing on PYTHONPATH (the profilers used to stop at `from tools import ...`: the repository
root is not on sys.path when a script runs). Every script has a command line, so that `--help` answers before any
work (bench_view.py used to run its benchmark, make_fit_reference.py to rewrite its data file)."""

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


def _scripts() -> list:
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tools", "*.py"))):
        with open(path) as f:
            if '__name__ == "__main__"' in f.read():
                names.append(os.path.basename(path))
    return names


def test_every_script_has_a_command_line():
    lacking = [name for name in _scripts() if "argparse" not in open(os.path.join(ROOT, "tools", name)).read()]
    assert lacking == []


# each with the file it writes (bench_view.py writes only into a temporary folder)
WRITERS = {"bench_view.py": None, "gen_cushion.py": "assets/cushion.obj",
           "make_fit_reference.py": "configs/data/cloth_hanging_reference.npz"}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_help_of_a_script_that_writes_or_measures_does_neither(name):
    written = WRITERS[name] and os.path.join(ROOT, WRITERS[name])
    before = written and os.stat(written).st_mtime_ns
    done = subprocess.run([sys.executable, os.path.join("tools", name), "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stderr
    assert not written or os.stat(written).st_mtime_ns == before


def test_the_profilers_are_among_them():
    assert {"profile_rigid.py", "profile_cpu_kernels.py", "profile_cloth_backward.py", "bench_worlds.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_runs_as_a_script(name):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, os.path.join("tools", name), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "usage:" in done.stdout
