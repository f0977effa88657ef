"""tools/bench_rigid_baseline.py: the tree before issue 36, exported from git history and run in a subprocess beside
the rigid bench's own runs. A stand-in tree (a commit of a scratch repository with a bench_rigid whose runs only
count themselves) checks the export, the protocol and the clean-up without compiling the real old tree."""

import os
import subprocess
import tempfile
import textwrap

import pytest

from tools import bench_rigid_baseline
from tools.bench_rigid_baseline import BaselineTree

STAND_IN_BENCH = textwrap.dedent('''
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Boxes:
        shape: tuple

    def ours_forward_run(boxes, steps, threads=None):
        def run():
            import os, time
            if steps == 99 and os.path.exists("runs.txt") and open("runs.txt").read().count("99") >= 2:
                time.sleep(60)  # hangs after its two warm-up runs
            with open("runs.txt", "a") as f:
                f.write(f"{boxes.shape} {steps} {threads}\\n")
            return steps != 13
        return run
''')


def git(folder, *args):
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A scratch repository whose one commit holds the four packages, BASELINE pointing at it."""
    repo = tmp_path / "repo"
    for package in bench_rigid_baseline.PACKAGES:
        (repo / package).mkdir(parents=True)
        (repo / package / "__init__.py").write_text("")
    (repo / "tools" / "bench_rigid.py").write_text(STAND_IN_BENCH)
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "stand-in")
    monkeypatch.setattr(bench_rigid_baseline, "BASELINE", git(repo, "rev-parse", "HEAD"))
    return repo


def test_the_tree_runs_in_its_subprocess_when_asked_and_is_removed_after(stand_in):
    tree = BaselineTree((2, 3, 4), 7, root=str(stand_in))
    assert tree.start() is None
    folder = tree.folder
    assert os.path.isfile(os.path.join(folder, "tools", "bench_rigid.py"))
    try:
        assert tree.run_on("all")() is True
        assert tree.run_on("one")() is True
        # the warm-up ran each kind once; then the two asked for, in order
        runs = open(os.path.join(folder, "runs.txt")).read().splitlines()
        assert runs == ["(2, 3, 4) 7 None", "(2, 3, 4) 7 1", "(2, 3, 4) 7 None", "(2, 3, 4) 7 1"]
    finally:
        tree.close()
    assert not os.path.exists(folder) and tree.process is None


def test_a_run_with_non_finite_poses_says_so(stand_in):
    tree = BaselineTree((1, 1, 1), 13, root=str(stand_in))
    assert tree.start() is None
    try:
        assert tree.run_on("all")() is False
    finally:
        tree.close()


def test_a_clone_without_the_commit_says_why_and_leaves_nothing(tmp_path, monkeypatch):
    repo = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(repo))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    os.mkdir(tempfile.tempdir)
    why = BaselineTree((10, 10, 10), 300, root=str(repo)).start()
    assert why is not None and bench_rigid_baseline.BASELINE in why and "lacks commit" in why
    assert os.listdir(tempfile.tempdir) == []


def test_a_tree_that_fails_to_start_says_why_and_is_removed(stand_in, monkeypatch):
    (stand_in / "tools" / "bench_rigid.py").write_text("raise ImportError('no bench here')\n")
    git(stand_in, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "broken")
    monkeypatch.setattr(bench_rigid_baseline, "BASELINE", git(stand_in, "rev-parse", "HEAD"))
    tree = BaselineTree((1, 1, 1), 1, root=str(stand_in))
    why = tree.start()
    assert why is not None and "no bench here" in why
    assert tree.folder is None and tree.process is None


def test_a_tree_that_hangs_is_killed_and_the_run_says_so(stand_in, monkeypatch):
    monkeypatch.setattr(bench_rigid_baseline, "RUN_TIMEOUT", 1.0)
    tree = BaselineTree((1, 1, 1), 99, root=str(stand_in))
    assert tree.start() is None
    try:
        with pytest.raises(RuntimeError, match="no answer within 1 s"):
            tree.run_on("all")()
        assert tree.process.wait(timeout=10) is not None  # killed
    finally:
        tree.close()
    assert tree.process is None and tree.folder is None
