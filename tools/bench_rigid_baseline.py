"""The rigid section's yardstick for issue 36: the 1000 falling boxes on the tree before the issue's first change.

Issue 36 made rigid contacts hold (the time-constant form, coupled passes) on the condition that the falling boxes
keep at least 0.8x of the body-steps/s they had before it, at the same step. A rate recorded in some earlier
session is no yardstick: this machine's speed is not the same from one session to the next. So the bench runs
the tree of BASELINE, the commit before the issue's first one, side by side with ours: its kernels/, sim/,
autodiff/ and tools/ are exported from this repository's history (`git archive`, nothing is checked out in the
working tree) into a temporary folder, and a subprocess of this interpreter runs that tree's own
tools/bench_rigid.py forward run (the same lattice, step and step count; its penalty contacts) whenever the
section's rounds ask, interleaved with ours, on all cores or on one thread. The subprocess compiles that tree's
kernels once (cached afterwards, like ours).

Without git, or in a clone that lacks the commit (a shallow one), `BaselineTree.start` says why and the rows stay
empty.
"""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

#: the tree before issue 36's first commit (3260139, rigid contacts in a time-constant form)
BASELINE = "9135769"
#: what the baseline needs of its tree (no assets, scenes or tests)
PACKAGES = ("kernels", "sim", "autodiff", "tools")
#: seconds the subprocess may take to start (its kernels compile cold: about a minute here) and to answer a run
START_TIMEOUT = 900.0
RUN_TIMEOUT = 300.0

# Runs in the exported tree: one warm-up run of each kind (compiling), then a run per line read ("all" or "one"),
# answering whether its final poses are finite; "quit" ends it.
CHILD = r'''
import json, os, sys
tree = os.path.realpath(sys.argv[1])
import sim
if not os.path.realpath(sim.__file__).startswith(tree + os.sep):
    raise SystemExit(f"the baseline imported sim from {sim.__file__}, not from {tree}")
from tools import bench_rigid
boxes, steps = bench_rigid.Boxes(tuple(json.loads(sys.argv[2]))), int(sys.argv[3])
runs = {"all": bench_rigid.ours_forward_run(boxes, steps), "one": bench_rigid.ours_forward_run(boxes, steps, threads=1)}
for run in runs.values():
    run()
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "quit":
        break
    print("finite" if runs[line.strip()]() else "nonfinite", flush=True)
'''


class BaselineTree:
    """The forward run of the 1000 falling boxes on the tree of BASELINE, in a subprocess (module docstring).

    start() exports the tree and starts the subprocess (compiling its kernels), returning None or why it cannot;
    run_on(kind) is a run for bench_sim.best_steps_per_second ("all" cores or "one" thread); close() ends the
    subprocess and removes the tree. A subprocess that does not answer within START_TIMEOUT or RUN_TIMEOUT
    seconds is killed, so a tree that hangs cannot hang the bench."""

    def __init__(self, shape: tuple, steps: int, root: str | None = None):
        self.shape, self.steps = tuple(shape), int(steps)
        self.root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.folder = None
        self.process = None
        self._lines = queue.Queue()  # the subprocess's output lines, None at its end (read by a thread)

    def start(self) -> str | None:
        """Export the tree and start its subprocess; None when it is ready, else why not (nothing left behind)."""
        try:
            archive = subprocess.run(["git", "-C", self.root, "archive", "--format=tar", BASELINE, *PACKAGES],
                                     capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"git could not export the tree {BASELINE} ({type(e).__name__})"
        if archive.returncode != 0:
            return (f"this clone lacks commit {BASELINE}, the tree before issue 36 (a shallow clone?): "
                    f"{archive.stderr.decode(errors='replace').strip()[:200]}")
        self.folder = tempfile.mkdtemp(prefix="bench_rigid_baseline_")
        try:
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                # the "data" filter where this Python has it (3.10.12 on): plain files under the folder only
                tar.extractall(self.folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
            env = dict(os.environ, PYTHONPATH=self.folder)
            self.process = subprocess.Popen(
                [sys.executable, "-c", CHILD, self.folder, json.dumps(self.shape), str(self.steps)],
                cwd=self.folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
            threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()
            ready, said = self._reply(START_TIMEOUT)
        except OSError as e:
            self.close()
            return f"the baseline tree {BASELINE} could not start ({e})"
        if ready != "ready":
            error = [line for line in said if line.strip()]
            self.close()
            return f"the baseline tree {BASELINE} failed to start: {error[-1] if error else 'no output'}"
        return None

    def run_on(self, kind: str):
        """A callable running the baseline once on `kind` ("all" cores, "one" thread); it returns whether the final
        poses were finite, and raises when the subprocess died."""
        def run() -> bool:
            self.process.stdin.write(kind + "\n")
            self.process.stdin.flush()
            reply, said = self._reply(RUN_TIMEOUT)
            if reply not in ("finite", "nonfinite"):
                raise RuntimeError(f"the baseline tree {BASELINE} stopped: {said[-1] if said else 'no reply'}")
            return reply == "finite"
        return run

    def _pump(self, stream) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def _reply(self, timeout: float) -> tuple:
        """(the subprocess's next protocol word, or "" at its end or when it did not answer within `timeout`
        seconds (then it is killed); the lines it printed before, e.g. its compile messages or a traceback)."""
        said = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                self.process.kill()
                return "", said + [f"no answer within {timeout:g} s"]
            if line is None:
                return "", said
            word = line.strip()
            if word in ("ready", "finite", "nonfinite"):
                return word, said
            said.append(line.rstrip())

    def close(self) -> None:
        """End the subprocess and remove the exported tree."""
        if self.process is not None:
            try:
                if self.process.poll() is None:
                    self.process.stdin.write("quit\n")
                    self.process.stdin.flush()
                    self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
            self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
