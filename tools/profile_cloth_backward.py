"""Where the backward of tools/bench_cloth_contact.py's forward+backward row goes (issue 31: at most 3x forward).

    python tools/profile_cloth_backward.py [--cells 64] [--drop 960] [--steps 4]

Drops the bench's stress-case cloth (self-collision on, XPBD, the bench's dt) for `--drop` substeps (960: the
bench's 48 frames, the pile), then tapes `--steps` substeps from that state as the bench row does and prints the
untaped forward, the taped forward + backward, their ratio, and the CPU time of each adjoint the tape runs. Then
each of the kernels whose adjoints cost most, launched alone forward and with adjoint=True on the arguments the
solver gave it (gradients of ones into what it writes): the compiled code's cost, without the host's.

Times are the process's CPU time (time.process_time) with wp.config.cpu_threads = 1; per-kernel times wrap each
launch, so they include its argument packing.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

import kernels as wp
from autodiff import Tape

try:
    from . import bench_cloth_contact as bench
    from .profile_rigid import print_shares, timed_launches
except ImportError:  # run as a script: tools/ is on sys.path, the repository root is not
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tools import bench_cloth_contact as bench
    from tools.profile_rigid import print_shares, timed_launches


def alone(record, repeats: int = 20) -> tuple:
    """(forward, adjoint) CPU time [s] per launch of one recorded launch (kernel, dim, inputs, outputs)."""
    kernel, dim, inputs, outputs = record
    def grad(v):
        return wp.zeros_like(v) if isinstance(v, wp.array) and v.dtype in (wp.vec3, wp.float32) else None
    adj_in = [grad(v) for v in inputs]
    adj_out = [grad(v) for v in outputs]
    for a in adj_out:
        if a is not None:
            a.fill_(1.0)
    runs = {"forward": dict(), "adjoint": dict(adjoint=True, adj_inputs=adj_in, adj_outputs=adj_out)}
    out = []
    for kwargs in runs.values():
        wp.launch(kernel, dim, inputs, outputs, record_tape=False, **kwargs)  # built outside the timing
        start = time.process_time()
        for _ in range(repeats):
            wp.launch(kernel, dim, inputs, outputs, record_tape=False, **kwargs)
        wp.synchronize()
        out.append((time.process_time() - start) / repeats)
    return tuple(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--drop", type=int, default=960, help="substeps dropped before the taped ones")
    parser.add_argument("--steps", type=int, default=4, help="taped substeps")
    args = parser.parse_args()
    wp.config.cpu_threads = 1
    model = bench.build(args.cells, True)
    step = bench.make_solver(model, "xpbd")
    dt = 1.0 / (bench.FPS * bench.SUBSTEPS["xpbd"])
    state, scratch = model.state(), model.state()
    for _ in range(args.drop):
        step.step(model, state, scratch, None, dt)
        state, scratch = scratch, state
    bench.taped_steps(model, step, state, dt, args.steps)  # compiles outside the timing
    records = {}
    launch = wp.launch

    def keep(kernel, dim, inputs=(), outputs=(), **kwargs):
        records.setdefault(kernel.key, (kernel, dim, list(inputs), list(outputs)))
        return launch(kernel, dim, inputs, outputs, **kwargs)
    for attempt in range(2):
        forward, adjoint = collections.defaultdict(float), collections.defaultdict(float)
        start = time.process_time()
        bench.taped_steps(model, step, state, dt, args.steps)
        wp.synchronize()
        f = time.process_time() - start
        start = time.process_time()
        tape = Tape()
        wp.launch = keep  # timed_launches wraps the launch it finds: this one, which keeps each kernel's arguments
        try:
            with timed_launches(collections.defaultdict(float), adjoint):
                with tape:
                    end = bench.taped_steps(model, step, state, dt, args.steps)
                tape.backward(grads={end.particle_q: np.ones((model.particle_count, 3), np.float32)})
                wp.synchronize()
        finally:
            wp.launch = launch
        fb = time.process_time() - start
        print(f"try {attempt + 1}: forward {f:.3f} s, forward+backward {fb:.3f} s, ratio {fb / f:.2f}, "
              f"adjoint launches {sum(adjoint.values()):.3f} s")
    print_shares("adjoint", adjoint)
    print("    kernel alone, per launch: forward / adjoint")
    for name, _ in sorted(adjoint.items(), key=lambda kv: -kv[1])[:3]:
        if name in records:
            fwd, adj = alone(records[name])
            print(f"    {name:32s} {1e3 * fwd:8.3f} / {1e3 * adj:8.3f} ms")


if __name__ == "__main__":
    main()
