"""Where SolverRigid's CPU time goes on tools/bench_rigid.py's scenes (issue 36's speed targets), on one thread.

    python tools/profile_rigid.py [--steps 90 300] [--grad-steps 100]

Prints, for the 1000 falling boxes after each of `--steps` steps: the CPU time of one step from that state, the
same step without body-body candidates (the part a narrow phase once per pair could halve), the CPU time of each
kernel, and how many box pairs reach the narrow phase (bounds and bounding spheres overlap, counted in numpy from
the poses) against the contacts that overlap (sim.penetration, also from the poses alone). Then for the 100-box
rollout of the bench's forward+backward row: the untaped forward (the bench's forward row), the taped forward and
the backward, each kernel's share of the last two. Then each of the bench's three runs split into the kernels'
own time (the native calls, forward and adjoint) and the host's (Python: the solver, argument packing, the tape).

Times are the process's CPU time (time.process_time) with wp.config.cpu_threads = 1, best of 3 where a total is
quoted; per-kernel times wrap each launch (and each adjoint the tape runs), so they include its argument packing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import sys
import time
import types

import numpy as np

import kernels as wp
import sim
from autodiff import Tape
from autodiff import tape as tape_module
from sim.penetration import box_pile_depths

try:
    from . import bench_rigid
except ImportError:  # run as a script: tools/ is on sys.path, the repository root is not
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tools import bench_rigid


def kernel_name(kernel) -> str:
    return getattr(kernel, "key", None) or getattr(kernel, "__name__", str(kernel))


@contextlib.contextmanager
def timed_launches(forward: dict, adjoint: dict | None = None):
    """Add each launch's CPU time [s] to forward[kernel name] (and each adjoint the tape runs to
    adjoint[kernel name]) inside the block."""
    launch, launch_adjoint = wp.launch, tape_module.launch_adjoint

    def timed(kernel, *args, **kwargs):
        start = time.process_time()
        try:
            return launch(kernel, *args, **kwargs)
        finally:
            forward[kernel_name(kernel)] += time.process_time() - start

    def timed_adjoint(kernel, *args):
        start = time.process_time()
        try:
            return launch_adjoint(kernel, *args)
        finally:
            adjoint[kernel_name(kernel)] += time.process_time() - start

    wp.launch = timed
    if adjoint is not None:
        tape_module.launch_adjoint = timed_adjoint
    try:
        yield
    finally:
        wp.launch, tape_module.launch_adjoint = launch, launch_adjoint


def print_shares(label: str, times: dict, per: float = 1.0, unit: str = "ms", top: int = 6):
    total = sum(times.values())
    print(f"    {label} launches in all {1e3 * total / per:9.3f} {unit}")
    for name, t in sorted(times.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {label} {name:32s} {1e3 * t / per:9.3f} {unit} {100 * t / total:5.1f} %")


def box_rotations(quats: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices of (x, y, z, w) quaternions."""
    x, y, z, w = quats.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def narrow_phase_pairs(poses: np.ndarray, half: float, margin: float) -> int:
    """Box pairs whose world bounds (grown by margin) and bounding spheres (radius sqrt(3) half, plus margin)
    overlap: those the contact kernel's narrow phase evaluates (today once for each body of the pair)."""
    x = poses[:, :3]
    extent = np.abs(box_rotations(poses[:, 3:])).sum(axis=2) * half
    lo, hi = x - extent, x + extent
    i, j = np.triu_indices(len(x), 1)
    bounds = np.all((lo[j] <= hi[i] + margin) & (lo[i] <= hi[j] + margin), axis=1)
    reach = 2.0 * np.sqrt(3.0) * half + margin
    spheres = ((x[i] - x[j]) ** 2).sum(axis=1) < reach * reach
    return int((bounds & spheres).sum())


def profile_large(at_steps, repeat: int = 20):
    boxes = bench_rigid.Boxes((10, 10, 10))
    model = bench_rigid.ours_model(boxes, requires_grad=False)
    solver = sim.SolverRigid(model)
    a, b = model.state(), model.state()
    done = 0
    for target in sorted(at_steps):
        for _ in range(target - done):
            solver.step(model, a, b, None, bench_rigid.DT)
            a, b = b, a
        done = target
        q0, qd0 = a.body_q.numpy().copy(), a.body_qd.numpy().copy()
        scratch_in, scratch_out = model.state(), model.state()

        def one_step_time() -> float:
            best = float("inf")
            for _ in range(3):
                start = time.process_time()
                for _ in range(repeat):
                    scratch_in.body_q.assign(q0)
                    scratch_in.body_qd.assign(qd0)
                    solver.step(model, scratch_in, scratch_out, None, bench_rigid.DT)
                wp.synchronize()
                best = min(best, (time.process_time() - start) / repeat)
            return best

        whole = one_step_time()
        per_kernel = collections.defaultdict(float)
        with timed_launches(per_kernel):
            for _ in range(repeat):
                scratch_in.body_q.assign(q0)
                scratch_in.body_qd.assign(qd0)
                solver.step(model, scratch_in, scratch_out, None, bench_rigid.DT)
        movable = solver._movable_ids
        solver._movable_ids = wp.zeros(0, dtype=wp.int32, device=model.device)
        try:
            static_only = one_step_time()
        finally:
            solver._movable_ids = movable
        pairs = narrow_phase_pairs(q0, boxes.half_extent, float(model.rigid_contact_margin))
        overlapping = len(box_pile_depths(q0, (boxes.half_extent,) * 3))
        print(f"1000 boxes after {target} steps: a step {1e3 * whole:.2f} ms; without body-body candidates "
              f"{1e3 * static_only:.2f} ms (body-body: {1e3 * (whole - static_only):.2f} ms, "
              f"{100 * (whole - static_only) / whole:.0f} %); box pairs reaching the narrow phase {pairs} "
              f"(evaluated {2 * pairs} times), overlapping contacts {overlapping}")
        print_shares("step", per_kernel, per=repeat, unit="ms/step")


@wp.kernel
def sum_body_heights(q: wp.array(dtype=wp.transform), loss: wp.array(dtype=float)):
    """The bench's loss (bench_rigid.LOSS_SOURCE): the sum of the bodies' heights [m]."""
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.transform_get_translation(q[i])[1])


def profile_small(steps: int):
    boxes = bench_rigid.Boxes((5, 4, 5))
    model = bench_rigid.ours_model(boxes, requires_grad=True)
    solver = sim.SolverRigid(model)
    states = [model.state() for _ in range(steps + 1)]
    loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def taped(forward: dict | None = None, adjoint: dict | None = None) -> tuple:
        tape = Tape()
        loss.zero_()
        timing = timed_launches(forward, adjoint) if forward is not None else contextlib.nullcontext()
        with timing:
            start = time.process_time()
            with tape:
                for t in range(steps):
                    solver.step(model, states[t], states[t + 1], None, bench_rigid.DT)
                wp.launch(sum_body_heights, dim=model.body_count, inputs=[states[-1].body_q, loss], device="cpu")
            middle = time.process_time()
            tape.backward(loss=loss)
            wp.synchronize()
            end = time.process_time()
        tape.zero()
        return middle - start, end - middle

    plain = bench_rigid.ours_forward_run(boxes, steps, threads=1)
    plain()
    untaped = float("inf")
    for _ in range(3):
        start = time.process_time()
        plain()
        untaped = min(untaped, time.process_time() - start)
    taped()
    forward_time, backward_time = min((taped() for _ in range(3)), key=sum)
    print(f"100 boxes x {steps} steps: untaped forward {1e3 * untaped:.1f} ms, taped forward "
          f"{1e3 * forward_time:.1f} ms ({forward_time / untaped:.2f}x), backward {1e3 * backward_time:.1f} ms; "
          f"(taped forward + backward) / untaped forward {(forward_time + backward_time) / untaped:.2f}")
    forward, adjoint = collections.defaultdict(float), collections.defaultdict(float)
    taped(forward, adjoint)
    print_shares("forward", forward)
    print_shares("adjoint", adjoint)


def host_split(steps_large: int = 300, steps_small: int = 100):
    """The bench's runs (bench_rigid: 1000 boxes forward, 100 boxes forward, 100 boxes forward+backward), best of 3
    by CPU time: the time in the kernels' native calls (launch._run, forward and adjoint), the rest (host)."""
    from kernels.runtime import launch as launch_module
    native = collections.defaultdict(float)
    run_native = launch_module._run

    def timed(kernel, *args, **kwargs):
        start = time.process_time()
        try:
            return run_native(kernel, *args, **kwargs)
        finally:
            adjoint = len(args) > 3 and args[3] is not None
            native[(kernel_name(kernel), "adjoint" if adjoint else "forward")] += time.process_time() - start

    def load(source):  # bench_rigid compiles its loss from source; the same kernel is this module's
        return types.SimpleNamespace(sum_body_heights=sum_body_heights)


    runs = {"1000 boxes forward": bench_rigid.ours_forward_run(bench_rigid.Boxes((10, 10, 10)), steps_large,
                                                               threads=1),
            "100 boxes forward": bench_rigid.ours_forward_run(bench_rigid.Boxes((5, 4, 5)), steps_small, threads=1),
            "100 boxes forward+backward": bench_rigid.ours_forward_backward_run(bench_rigid.Boxes((5, 4, 5)),
                                                                                steps_small, load)}
    launch_module._run = timed
    try:
        for label, run in runs.items():
            run()
            best = None
            for _ in range(3):
                native.clear()
                start = time.process_time()
                run()
                total = time.process_time() - start
                if best is None or total < best[0]:
                    best = (total, dict(native))
            total, kernels_time = best
            inside = sum(kernels_time.values())
            print(f"{label}: {1e3 * total:.1f} ms, kernels {1e3 * inside:.1f} ms ({100 * inside / total:.0f} %), "
                  f"host {1e3 * (total - inside):.1f} ms")
            for (name, kind), t in sorted(kernels_time.items(), key=lambda kv: -kv[1])[:5]:
                print(f"    {name} ({kind}) {1e3 * t:.1f} ms")
    finally:
        launch_module._run = run_native


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[90, 300])
    parser.add_argument("--grad-steps", type=int, default=100)
    args = parser.parse_args(argv)
    wp.config.cpu_threads = 1
    profile_large(args.steps)
    profile_small(args.grad_steps)
    host_split(max(args.steps), args.grad_steps)


if __name__ == "__main__":
    main()
