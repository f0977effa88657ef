"""Where a many-world cloth step's CPU time goes, kernel by kernel, against its arithmetic (issue 37).

    python tools/profile_cpu_kernels.py [--solver semi_implicit|xpbd] [--worlds 64] [--steps 20] [--repeats 5]
                                        [--threads 1]

1. One step of tools/bench_worlds.py's 32x32 cloth (`--solver`) in a `--worlds`-world Model on one thread: for each
   kernel the CPU time per launch, the elements it runs over, nanoseconds per element, the floating-point operations
   per element (counted by hand from the kernel's source, FLOPS_PER_ELEMENT below: every +, -, *, /, sqrt and
   comparison of the taken path; a fused multiply-add counts 2) and the rate that makes.
2. The hottest kernel, eval_triangle_forces, against hand-written C++ doing its arithmetic on the same arrays
   (tools/cpu_kernel_loops.cpp, built with the backend's own flags): one triangle after another (what the generated
   loop could be at best without SIMD), and in blocks of 16 triangles whose arithmetic the C++ compiler vectorises
   across triangles (the forces then added in task order: the same sums). Each result is compared with the kernel's
   (largest difference relative to the largest force). Semi-implicit only.

Times are CPU time (time.process_time) on `--threads` threads (wp.config.cpu_threads, default 1), the best of
`--repeats`; per kernel also the wall time and, with more than one thread, the share of its launches whose chunks
ran on more than one pool thread (a launch the other threads did not join in time runs on the launching one).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import kernels as wp
from kernels.compiler import build
from kernels.runtime import thread_pool
from sim.solvers.semi_implicit import kernels as semi_kernels

try:
    from . import bench_worlds
    from .profile_rigid import timed_launches
except ImportError:  # run as a script: tools/ is on sys.path, the repository root is not
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tools import bench_worlds
    from tools.profile_rigid import timed_launches

HERE = os.path.dirname(os.path.abspath(__file__))
LOOPS_SOURCE = os.path.join(HERE, "cpu_kernel_loops.cpp")

#: FLOPs per element of the semi-implicit cloth kernels, counted from their source (sim/solvers/semi_implicit/
#: kernels.py and the @wp.func they call) on the path a hanging cloth takes:
#: triangle: deformation gradient and its rate 48, StVK stress 49, strain-rate stress 46, vertex forces 37,
#:     aerodynamics 85 (cross, two lengths, three divisions), the three sums 18;
#: bending (dihedral, per interior edge): two normals 30, squared norms 10, edge length 6, atan2 of a triple
#:     product and a dot ~40, the four gradients 40, the rate 20, the torque 6, four scaled forces 24;
#: contact (per particle and shape slot, a sphere or the ground plane): the shape's inverse pose 36, the point
#:     into the shape's frame 33, the distance and normal 2-10, the normal back to the world 30, the gap test 3
#:     (most pairs stop there);
#: integration (per particle): gravity, velocity, damping and position ~20.
#: Both solvers' contact kernels: the bound test first (~20: a difference, a squared norm, the slack), the
#: point into the shape's frame (its inverse pose read, computed once per step by place_shapes) 33, the distance
#: and normal 2-10, the normal back 30; the far pairs (most) stop after the bound test, the ground plane's do not.
#: XPBD (sim/solvers/xpbd/kernels.py), per element: a triangle edge (distance constraint: difference, length,
#:     the compliant multiplier update, two weighted corrections, the Jacobi share) ~45; a dihedral bending edge
#:     (the angle and its four gradients as above ~130, their weighted squared norms 28, the multiplier update
#:     and four corrections ~30) ~190; the gather of a particle's correction slots (6-7 slots) ~20; applying the
#:     corrections 9; predicting positions ~25; the velocities 10.
FLOPS_PER_ELEMENT = {"eval_triangle_forces": 283, "eval_bending_forces": 216,
                     "eval_shape_contact_forces": 108, "integrate_particles": 20,
                     "solve_triangle_edges": 45, "solve_bending": 190, "solve_shape_contacts": 108,
                     "gather_corrections": 20, "apply_corrections": 9, "predict_positions": 25,
                     "update_velocities": 10}
SCENES = {"semi_implicit": "cloth 32x32 semi-implicit", "xpbd": "cloth 32x32 XPBD"}


def launch_elements(dim) -> int:
    return int(np.prod(dim)) if isinstance(dim, (tuple, list)) else int(dim)


def profile_step(worlds: int, steps: int, repeats: int, solver: str = "semi_implicit") -> tuple:
    """(runner, rows, step): rows of (kernel, us per launch (CPU time), launches per step, elements, ns per
    element, FLOPs per element or None, wall us per launch, share of its parallel launches that more than one
    pool thread ran, None when none was parallel) for one step of the `solver`'s cloth in `worlds` worlds, and
    the whole step [us of CPU time]."""
    scene = next(s for s in bench_worlds.SCENES if s.name == SCENES[solver])
    runner = bench_worlds.Runner(scene, bench_worlds.batched_model(scene, worlds))
    runner.steps(2)
    step = min(_cpu_time(lambda: runner.steps(steps)) for _ in range(repeats)) / steps
    times, counts, dims = collections.defaultdict(float), collections.Counter(), {}
    walls, parallel, shared = collections.defaultdict(float), collections.Counter(), collections.Counter()
    with timed_launches(times):
        timed = wp.launch

        def counting(kernel, dim=None, *args, **kwargs):
            name = getattr(kernel, "key", str(kernel))
            counts[name] += 1
            dims[name] = dim
            start = time.perf_counter()
            try:
                return timed(kernel, dim, *args, **kwargs)
            finally:
                walls[name] += time.perf_counter() - start
                if wp.config.cpu_threads != 1 and launch_elements(dim) >= wp.config.cpu_parallel_threshold:
                    parallel[name] += 1
                    shared[name] += len(thread_pool.last_launch_threads()) > 1

        wp.launch = counting
        try:
            runner.steps(steps)
        finally:
            wp.launch = timed
    rows = []
    for name, t in sorted(times.items(), key=lambda kv: -kv[1]):
        per_launch = t / counts[name]
        elements = launch_elements(dims[name])
        rows.append((name, 1e6 * per_launch, counts[name] / steps, elements, 1e9 * per_launch / elements,
                     FLOPS_PER_ELEMENT.get(name), 1e6 * walls[name] / counts[name],
                     shared[name] / parallel[name] if parallel[name] else None))
    return runner, rows, 1e6 * step


def _cpu_time(fn) -> float:
    wp.synchronize()
    start = time.process_time()
    fn()
    wp.synchronize()
    return time.process_time() - start


def build_loops(folder: str) -> ctypes.CDLL:
    """tools/cpu_kernel_loops.cpp compiled with the CPU backend's release flags, loaded."""
    out = os.path.join(folder, "cpu_kernel_loops.so")
    command = [*build.find_cxx(), *build.cpu_flags(False), LOOPS_SOURCE, "-o", out]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {LOOPS_SOURCE} failed:\n{done.stderr[-2000:]}")
    lib = ctypes.CDLL(out)
    for fn in (lib.tri_forces_scalar, lib.tri_forces_blocked):
        fn.restype = None
        fn.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * 7
    return lib


def triangle_comparison(runner, repeats: int, folder: str) -> list:
    """Rows (way, us per launch, ns per triangle, largest difference from the kernel relative to its largest
    force) of eval_triangle_forces on `runner`'s model and current state: the generated kernel, then the
    hand-written loops."""
    model, state = runner.model, runner.pair[0]
    tris = semi_kernels.TriangleData()
    tris.indices, tris.poses, tris.areas, tris.materials = (model.tri_indices, model.tri_poses, model.tri_areas,
                                                            model.tri_materials)
    tris.every_aerodynamic_force = 1  # the hand-written loops compute the air's force too (zero here)
    n = model.tri_count
    force = wp.zeros(model.particle_count, dtype=wp.vec3, device="cpu")

    def generated():
        wp.launch(semi_kernels.eval_triangle_forces, dim=n, inputs=[state.particle_q, state.particle_qd, tris],
                  outputs=[force], device="cpu")

    arrays = [np.ascontiguousarray(a) for a in (state.particle_q.numpy(), state.particle_qd.numpy(),
                                                 model.tri_indices.numpy(), model.tri_poses.numpy(),
                                                 model.tri_areas.numpy(), model.tri_materials.numpy())]
    assert arrays[2].dtype == np.int32 and all(a.dtype == np.float32 for k, a in enumerate(arrays) if k != 2)
    lib = build_loops(folder)
    out = np.zeros((model.particle_count, 3), np.float32)

    def hand(fn):
        return lambda: fn(n, *(a.ctypes.data for a in arrays), out.ctypes.data)

    ways = [("generated kernel (wp.launch)", generated, lambda: force.numpy().copy()),
            ("hand-written, one triangle at a time", hand(lib.tri_forces_scalar), lambda: out.copy()),
            ("hand-written, blocks of 16 vectorised", hand(lib.tri_forces_blocked), lambda: out.copy())]
    results, rows = [], []
    for name, run, read in ways:
        force.zero_()
        out[:] = 0.0
        run()
        results.append(read())
        best = min(_cpu_time(run) for _ in range(repeats))
        rows.append([name, 1e6 * best, 1e9 * best / n])
    scale = float(np.abs(results[0]).max()) or 1.0
    for row, result in zip(rows, results):
        row.append(float(np.abs(result - results[0]).max()) / scale)
    return rows


def render(rows, step_us: float, worlds: int, comparison, solver: str = "semi_implicit", threads: int = 1) -> str:
    launched = sum(us * launches for _, us, launches, *_ in rows)
    lines = [f"{SCENES[solver]}, {worlds} worlds, {threads} thread{'s' if threads > 1 else ''}: {step_us:.0f} us "
             f"(CPU) per step, {step_us / worlds:.1f} us per world-step; the kernels {launched:.0f} us of it (the "
             "rest: Python, launches, allocations)",
             f"{'kernel':32} {'us/launch':>10} {'launches':>8} {'elements':>9} {'ns/elem':>8} {'FLOP/elem':>9} "
             f"{'GFLOP/s':>8} {'wall us':>9} {'shared':>7}"]
    for name, us, launches, elements, ns, flops, wall, shared in rows:
        rate = f"{flops / ns:8.2f}" if flops else f"{'-':>8}"
        share = f"{100 * shared:6.0f}%" if shared is not None else f"{'-':>7}"
        lines.append(f"{name:32} {us:10.1f} {launches:8.1f} {elements:9d} {ns:8.1f} {flops or '-':>9} {rate} "
                     f"{wall:9.1f} {share}")
    if comparison:
        flops = FLOPS_PER_ELEMENT["eval_triangle_forces"]
        lines.append("eval_triangle_forces against hand-written C++ on the same arrays:")
        lines.append(f"  {'way':40} {'us/launch':>10} {'ns/tri':>7} {'GFLOP/s':>8} {'max rel diff':>12}")
        for name, us, ns, diff in comparison:
            lines.append(f"  {name:40} {us:10.1f} {ns:7.1f} {flops / ns:8.2f} {diff:12.1e}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", choices=sorted(SCENES), default="semi_implicit")
    parser.add_argument("--worlds", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="wp.config.cpu_threads (default 1)")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads: expected an integer >= 1")
    wp.config.cpu_threads = args.threads
    runner, rows, step = profile_step(args.worlds, args.steps, args.repeats, args.solver)
    comparison = None
    if args.solver == "semi_implicit":
        with tempfile.TemporaryDirectory() as folder:
            wp.config.cpu_threads = 1  # against one-thread hand-written loops
            comparison = triangle_comparison(runner, args.repeats, folder)
    print(render(rows, step, args.worlds, comparison, args.solver, args.threads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
