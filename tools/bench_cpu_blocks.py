"""Launch cost of the one-lane CPU path (block_dim=1) beside a reference tree, for changes to the launch machinery.

    python tools/bench_cpu_blocks.py                          # this tree
    python tools/bench_cpu_blocks.py --reference /path/tree   # ... beside another checkout, rounds alternating

Prints, per case, the best per-launch time over the rounds [us]: a 16-thread wp.launch (Python overhead), a 1M-thread
saxpy, and a launch_tiled tile_load + tile_sum + tile_store over 4096 rows of 64 (block_dim=64, one lane). The
reference runs the same cases in a child process whose `kernels` is the reference tree's (docs/cpu_blocks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CASES = ("launch 16 threads", "saxpy 1M threads", "tile rowsum 4096x64")


def measure(rounds: int) -> dict:
    """{case: best seconds per launch} in this process (its `kernels`)."""
    import numpy as np

    import kernels as wp

    @wp.kernel
    def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def tile_rowsum(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(a[i], shape=64)
        wp.tile_store(out, wp.tile_sum(t), offset=i)

    x, y = wp.array(np.ones(16, np.float32)), wp.zeros(16, dtype=float)
    xb, yb = wp.array(np.ones(1 << 20, np.float32)), wp.zeros(1 << 20, dtype=float)
    a, out = wp.array(np.ones((4096, 64), np.float32)), wp.zeros(4096, dtype=float)
    calls = {
        CASES[0]: (lambda: wp.launch(saxpy, 16, inputs=[x, y, 2.0]), 2000),
        CASES[1]: (lambda: wp.launch(saxpy, 1 << 20, inputs=[xb, yb, 2.0]), 50),
        CASES[2]: (lambda: wp.launch_tiled(tile_rowsum, [4096], inputs=[a, out], block_dim=64), 50),
    }
    best = {}
    for case, (fn, n) in calls.items():
        fn()  # build and warm up
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times.append((time.perf_counter() - t0) / n)
        best[case] = min(times)
    return best


def _child(tree: str, rounds: int) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--json", "--rounds", str(rounds)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", help="another checkout of the repository to compare with")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per case (best kept)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of this tree and the reference")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.rounds)))
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"this tree": here}
    if args.reference:
        trees["reference"] = os.path.abspath(args.reference)
    best = {name: {case: float("inf") for case in CASES} for name in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():
            for case, seconds in _child(tree, args.rounds).items():
                best[name][case] = min(best[name][case], seconds)
    print(f"| case | {' | '.join(f'{name} [us]' for name in trees)} |")
    print(f"|---|{'---:|' * len(trees)}")
    for case in CASES:
        print(f"| {case} | {' | '.join(f'{best[name][case] * 1e6:.1f}' for name in trees)} |")


if __name__ == "__main__":
    main()
