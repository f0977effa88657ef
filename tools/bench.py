"""Benchmark the CPU backend side by side with numpy and Warp CPU: bandwidth, launch overhead, compile, autodiff,
tiled GEMM, cloth simulation, rigid bodies, optimisation.

Run `python tools/bench.py` (or `python -m tools.bench`); `--quick` takes smaller sizes and fewer repeats, and
`--only SECTION ...` runs some sections (saxpy launch compile autodiff gemm cloth rigid articulation optim contention
sweep cloth_contact render view worlds mesh). Every number in the
printed table is measured in this run; a closing line checks them against the targets of the performance issue.
Warp's columns are left empty when `warp` is not installed.

What is measured: saxpy GB/s count 12 bytes per element for the kernels and numpy (`y += a*x`), 8 for the
memcpy column (`np.copyto`, one thread); launch overheads are µs per call of a dim=1 kernel; cold and warm are the
seconds `load_module` takes in a fresh interpreter, with an empty compile cache and then the cache it filled;
"backward / forward" is ((forward+backward) - forward) / forward; tiled GEMM GFLOP/s count 2*n^3 flops for an
n x n float32 product (`launch_tiled` of TILED_GEMM against numpy's `a @ b`, which calls its BLAS); cloth rows
count solver substeps per second of a hanging cloth falling past a sphere (tools/bench_sim.py), and their Warp CPU
column is Newton on Warp's CPU backend with the same cloth, empty when `newton` is not installed. Rigid rows count
bodies x steps per second of 1000 boxes falling onto the ground (tools/bench_rigid.py), on all cores and on one
thread, against Newton's semi-implicit solver (one thread); articulation rows count joints x steps per second of a
7-dof arm and a 20-link chain swinging under gravity (tools/bench_articulation.py), against Newton's
SolverFeatherstone and MuJoCo (its own column, '-' when `mujoco` is not installed); optimisation rows are seconds per
iteration of configs/cloth_throw.yaml against a
diffsim_cloth-style iteration in Newton, and the peak traced memory of one loss + gradient with the full tape and
the checkpointed rollout (tools/bench_optim.py). The contention section runs workloads in separate processes alone,
two at once and next to a busy core, on this toolkit's thread pool and on the OpenMP runtime it replaced
(tools/bench_contention.py). The render section times `sim render` of scenes/cloth.yaml to an MP4 at 640x360, the
whole command in a fresh process and ray casting alone (tools/bench_render.py).
The view section times `sim view` of out/cloth.usd from the command to its first frame drawn in a headless
Chromium (tools/bench_view.py). The worlds section counts world-steps/s of 1 to 256 worlds in one Model against
the same worlds one after another (tools/bench_worlds.py). Each number is the best of several runs, except the
contention rates (one run each).
`--threads N` runs our kernels on N threads (wp.config.cpu_threads).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

if __package__ in (None, ""):  # run as a script: tools/ is on sys.path, the repository root is not
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernels  # noqa: E402

try:
    from . import (bench_articulation, bench_cloth_contact, bench_contention, bench_mesh, bench_optim, bench_render,
                   bench_sweep, bench_rigid, bench_rigid_baseline, bench_sim, bench_view, bench_worlds)
    from .bench_kernels import (COMPILE_CHILD, GEMM_TILE, SMALL_KERNELS, SPRING_KERNEL_SCALAR, SPRING_KERNEL_VEC3,
                                TILED_GEMM)
    from .bench_report import (Row, articulation_rows, closing_line, cloth_rows, optim_rows, render_table,
                               rigid_rows, spring_backward_ratio)
    from .bench_settings import FULL, QUICK, SECTIONS, Settings
except ImportError:
    from tools import (bench_articulation, bench_cloth_contact, bench_contention, bench_mesh, bench_optim,
                       bench_render, bench_sweep, bench_rigid, bench_rigid_baseline, bench_sim, bench_view,
                       bench_worlds)
    from tools.bench_kernels import (COMPILE_CHILD, GEMM_TILE, SMALL_KERNELS, SPRING_KERNEL_SCALAR,
                                     SPRING_KERNEL_VEC3, TILED_GEMM)
    from tools.bench_report import (Row, articulation_rows, closing_line, cloth_rows, optim_rows, render_table,
                                    rigid_rows, spring_backward_ratio)
    from tools.bench_settings import FULL, QUICK, SECTIONS, Settings

try:
    import warp
except ImportError:  # Warp is optional: its columns stay empty
    warp = None


# ---------------------------------------------------------------------------------------------------------------
# Backends


@dataclass
class Backend:
    """A kernel library under test: ours (`kernels`) or Warp, with its kernel modules loaded from files."""

    name: str  # "ours" or "warp"
    wp: object  # the library module
    root: str  # scratch directory: kernel files and compile cache
    modules: dict = field(default_factory=dict)

    def tape(self):
        if self.name == "warp":
            return self.wp.Tape()
        from autodiff import Tape
        return Tape()

    def load(self, module_name: str, source: str):
        """Write `source` as module `module_name` under this backend's scratch directory and import it."""
        if module_name not in self.modules:
            unique_name = f"{module_name}_{self.name}"  # both backends import their copy in this process
            directory = os.path.join(self.root, "modules")
            path = write_kernel_module(directory, unique_name, self.wp.__name__, source)
            spec = importlib.util.spec_from_file_location(unique_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[unique_name] = module
            spec.loader.exec_module(module)
            self.modules[module_name] = module
        return self.modules[module_name]

    def unload(self, module_name: str):
        """Forget a module loaded by `load`, so that the next `load` of that name imports new source."""
        self.modules.pop(module_name, None)
        sys.modules.pop(f"{module_name}_{self.name}", None)


def write_kernel_module(directory: str, module_name: str, library: str, source: str) -> str:
    """Write a kernel module file headed by `import <library> as wp`; returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{module_name}.py")
    with open(path, "w") as f:
        f.write(f"import {library} as wp\n\n{source}")
    return path


@contextlib.contextmanager
def stderr_silenced():
    """Send file descriptor 2 to /dev/null: Warp's native init warns about a missing CUDA driver there."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def make_backends(scratch: str) -> dict:
    """Ours, and Warp when it is installed, each with a private compile cache under `scratch`."""
    ours = Backend("ours", kernels, os.path.join(scratch, "ours"))
    kernels.config.cache_dir = os.path.join(ours.root, "cache")
    backends = {"ours": ours}
    if warp is not None:
        backends["warp"] = Backend("warp", warp, os.path.join(scratch, "warp"))
        warp.config.log_level = warp.LOG_WARNING
        warp.config.kernel_cache_dir = os.path.join(backends["warp"].root, "cache")
        with stderr_silenced():
            warp.init()
    return backends


# ---------------------------------------------------------------------------------------------------------------
# Timing. Contenders run in turns, one call each per round, so that load from other processes on the machine
# falls on all of them alike rather than on whichever was measured during a busy second.


def best_seconds(runs: dict, repeats: int, warmup: int = 1) -> dict:
    """Shortest wall time of each `runs[key]()` over `repeats` interleaved rounds, after `warmup` rounds."""
    for _ in range(warmup):
        for run in runs.values():
            run()
    best = dict.fromkeys(runs, math.inf)
    for _ in range(repeats):
        for key, run in runs.items():
            t0 = time.perf_counter()
            run()
            best[key] = min(best[key], time.perf_counter() - t0)
    return best


# ---------------------------------------------------------------------------------------------------------------
# 1. saxpy bandwidth


def saxpy_kernel_run(backend: Backend, count: int):
    """A call of `y = a*x + y` on float32 arrays of `count` elements, launched on `backend`."""
    lib = backend.wp
    module = backend.load("bench_small", SMALL_KERNELS)
    x = lib.array(np.ones(count, np.float32), dtype=lib.float32, device="cpu")
    y = lib.array(np.ones(count, np.float32), dtype=lib.float32, device="cpu")

    def run():
        lib.launch(module.saxpy, count, inputs=[0.5, x, y], device="cpu")
        lib.synchronize()

    return run


def saxpy_numpy_run(count: int):
    """A call of numpy's `y += a*x` on float32 arrays."""
    x = np.ones(count, np.float32)
    y = np.ones(count, np.float32)
    return lambda: y.__iadd__(np.float32(0.5) * x)


def copy_run(count: int):
    """A call of `np.copyto` between float32 arrays: the memory bandwidth ceiling."""
    src = np.ones(count, np.float32)
    dst = np.empty(count, np.float32)
    return lambda: np.copyto(dst, src)


def saxpy_gbps(backends: dict, settings: Settings) -> dict:
    """GB/s of saxpy per backend and for numpy (12 bytes per element: read x, read y, write y) and of a copy
    (8 bytes per element)."""
    count = settings.saxpy_count
    runs = {name: saxpy_kernel_run(backend, count) for name, backend in backends.items()}
    runs.update(numpy=saxpy_numpy_run(count), copy=copy_run(count))
    seconds = best_seconds(runs, settings.saxpy_repeats)
    return {key: (8 if key == "copy" else 12) * count / t / 1e9 for key, t in seconds.items()}


# ---------------------------------------------------------------------------------------------------------------
# 2. launch overhead


GRAPH_LAUNCHES = 100  # launches in the captured graph of the launch section


def launch_calls(backend: Backend) -> dict:
    """Launches of a dim=1 kernel: 1 array argument, 8 mixed arguments, a replay of a recorded launch, and (ours:
    Warp captures only on CUDA) a captured graph of GRAPH_LAUNCHES launches; {kind: (call, launches per call)}."""
    lib = backend.wp
    module = backend.load("bench_small", SMALL_KERNELS)
    a = lib.zeros(1, dtype=lib.float32, device="cpu")
    b = lib.ones(1, dtype=lib.float32, device="cpu")
    c = lib.ones(1, dtype=lib.int32, device="cpu")
    d = lib.ones((1, 3), dtype=lib.float32, device="cpu")
    eight = [a, b, c, d, 2.0, 3.0, 4, 5]
    cmd = lib.launch(module.tiny_one_arg, 1, inputs=[a], device="cpu", record_cmd=True)
    calls = {
        "one": (lambda: lib.launch(module.tiny_one_arg, 1, inputs=[a], device="cpu"), 1),
        "eight": (lambda: lib.launch(module.tiny_eight_args, 1, inputs=eight, device="cpu"), 1),
        "replay": (cmd.launch, 1),
    }
    if backend.name == "ours":
        with lib.ScopedCapture("cpu") as capture:
            for _ in range(GRAPH_LAUNCHES):
                lib.launch(module.tiny_one_arg, 1, inputs=[a], device="cpu")
        graph = capture.graph
        calls["graph"] = (lambda: lib.capture_launch(graph), GRAPH_LAUNCHES)
    return calls


def repeated(call, count: int):
    """A function that calls `call()` `count` times."""
    def run():
        for _ in range(count):
            call()

    return run


def launch_microseconds(backends: dict, settings: Settings) -> dict:
    """µs per launch, {backend: {"one" | "eight" | "replay" | "graph": µs}}."""
    count = settings.launch_count
    calls = {(name, kind): call for name, backend in backends.items()
             for kind, call in launch_calls(backend).items()}
    per_round = {key: max(1, count // per_call) for key, (_, per_call) in calls.items()}  # calls per timed round
    runs = {key: repeated(call, per_round[key]) for key, (call, _) in calls.items()}
    seconds = best_seconds(runs, settings.launch_rounds)
    out = {name: {} for name in backends}
    for (name, kind), t in seconds.items():
        out[name][kind] = t / (per_round[(name, kind)] * calls[(name, kind)][1]) * 1e6
    return out


# ---------------------------------------------------------------------------------------------------------------
# 3. cold compile and warm load, each in a fresh interpreter


def load_seconds_in_child(backend_name: str, kernel_dir: str, module_name: str, cache_dir: str) -> dict:
    """Run COMPILE_CHILD; returns its JSON: seconds spent in load_module, and (ours) the number of cold builds."""
    cmd = [sys.executable, "-c", COMPILE_CHILD, backend_name, kernel_dir, module_name, cache_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{backend_name} compile child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cold_then_warm(backend: Backend, kernel_dir: str) -> tuple:
    """Seconds of a cold build into a new empty cache directory, then of a warm load from it."""
    cache_dir = tempfile.mkdtemp(prefix="cache_", dir=kernel_dir)
    first = load_seconds_in_child(backend.name, kernel_dir, "bench_springs", cache_dir)
    second = load_seconds_in_child(backend.name, kernel_dir, "bench_springs", cache_dir)
    if backend.name == "ours" and (first["cold_builds"], second["cold_builds"]) != (1, 0):
        print(f"warning: expected 1 cold build then 0, got {first['cold_builds']} then {second['cold_builds']} "
              f"(were kernels/native headers edited meanwhile? they are part of the cache key)", file=sys.stderr)
    return first["seconds"], second["seconds"]


def compile_seconds(backends: dict, spring_source: str, settings: Settings) -> dict:
    """Best cold and warm seconds of the spring kernel, {backend: {"cold": s, "warm": s}}; backends in turns."""
    kernel_dirs = {}
    for name, backend in backends.items():
        kernel_dirs[name] = os.path.join(backend.root, "compile")
        write_kernel_module(kernel_dirs[name], "bench_springs", backend.wp.__name__, spring_source)
    out = {name: {"cold": math.inf, "warm": math.inf} for name in backends}
    for _ in range(settings.compile_repeats):
        for name, backend in backends.items():
            cold, warm = cold_then_warm(backend, kernel_dirs[name])
            out[name]["cold"] = min(out[name]["cold"], cold)
            out[name]["warm"] = min(out[name]["warm"], warm)
    return out


# ---------------------------------------------------------------------------------------------------------------
# 4. autodiff: forward vs forward + backward


def spring_state(count: int) -> dict:
    """Positions [m] and velocities [m/s] of a helical chain of `count` particles, shape [count, 3], and rest
    lengths [m], shape [count]."""
    rng = np.random.default_rng(0)
    theta = np.linspace(0.0, 40.0 * np.pi, count)
    x = np.stack([np.cos(theta), np.sin(theta), 1e-3 * np.arange(count)], axis=1)
    x += 1e-3 * rng.standard_normal(x.shape)
    v = 0.1 * rng.standard_normal(x.shape)
    segment = np.linalg.norm(np.roll(x, -1, axis=0) - x, axis=1)
    return {"x": x.astype(np.float32), "v": v.astype(np.float32), "rest": (0.9 * segment).astype(np.float32)}


def spring_launch_args(backend: Backend, state: dict, vec3: bool) -> tuple:
    """(inputs, outputs, output gradient seeds) of `spring_forces`, arrays with gradients."""
    lib = backend.wp
    count = len(state["rest"])
    vtype = lib.vec3 if vec3 else lib.float32
    shape = count if vec3 else (count, 3)

    def grad_array(values):
        return lib.array(values, dtype=vtype, device="cpu", requires_grad=True)

    x, v = grad_array(state["x"]), grad_array(state["v"])
    rest = lib.array(state["rest"], dtype=lib.float32, device="cpu")
    wind = lib.vec3(1.0, 0.0, 0.0) if vec3 else 1.0
    f = lib.zeros(shape, dtype=vtype, device="cpu", requires_grad=True)
    energy = lib.zeros(count, dtype=lib.float32, device="cpu", requires_grad=True)
    seeds = {f: lib.ones(shape, dtype=vtype, device="cpu"), energy: lib.ones(count, dtype=lib.float32, device="cpu")}
    return [x, v, rest, 100.0, 0.5, wind], [f, energy], seeds


def spring_runs(backend: Backend, spring_source: str, vec3: bool, count: int) -> dict:
    """Calls of a forward launch of `spring_forces` and of a taped forward launch plus `tape.backward`."""
    lib = backend.wp
    kernel = backend.load("bench_springs_ad", spring_source).spring_forces
    inputs, outputs, seeds = spring_launch_args(backend, spring_state(count), vec3)

    def forward():
        lib.launch(kernel, count, inputs=inputs, outputs=outputs, device="cpu")
        lib.synchronize()

    def forward_backward():
        tape = backend.tape()
        with tape:
            lib.launch(kernel, count, inputs=inputs, outputs=outputs, device="cpu")
        tape.backward(grads=seeds)
        lib.synchronize()

    return {"forward": forward, "forward_backward": forward_backward}


def autodiff_milliseconds(backends: dict, spring_source: str, vec3: bool, settings: Settings) -> dict:
    """Best ms of forward and forward+backward, {backend: {"forward": ms, "forward_backward": ms}}."""
    runs = {(name, kind): run for name, backend in backends.items()
            for kind, run in spring_runs(backend, spring_source, vec3, settings.spring_count).items()}
    seconds = best_seconds(runs, settings.spring_repeats)
    out = {name: {} for name in backends}
    for (name, kind), t in seconds.items():
        out[name][kind] = 1e3 * t
    return out


def vec3_builtins_work(ours: Backend) -> tuple:
    """Whether our compiler builds the vec3 spring kernel (length, normalize, dot, cross, cw_mul); (ok, reason)."""
    try:
        module = ours.load("bench_springs_ad", SPRING_KERNEL_VEC3)
        kernels.load_module(module)
        module.spring_forces.ensure_built()
    except Exception as e:  # any compile failure means: fall back to scalar math
        ours.unload("bench_springs_ad")
        return False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return True, ""


# ---------------------------------------------------------------------------------------------------------------
# 5. tiled GEMM


def gemm_matrices(size: int) -> tuple:
    """Two random float32 matrices of shape [size, size]."""
    rng = np.random.default_rng(0)
    return (rng.standard_normal((size, size)).astype(np.float32),
            rng.standard_normal((size, size)).astype(np.float32))


def gemm_kernel_run(backend: Backend, a_np, b_np):
    """A call of TILED_GEMM on `backend`, after checking one result against numpy; raises if it is wrong."""
    lib = backend.wp
    kernel = backend.load("bench_gemm", TILED_GEMM).tiled_gemm
    a, b = (lib.array(m, dtype=lib.float32, device="cpu") for m in (a_np, b_np))
    c = lib.zeros(a_np.shape, dtype=lib.float32, device="cpu")
    size, (tile_m, _, tile_n) = a_np.shape[0], GEMM_TILE

    def run():
        lib.launch_tiled(kernel, dim=[size // tile_m, size // tile_n], inputs=[a, b, c], block_dim=64,
                         device="cpu")
        lib.synchronize()

    run()
    expected = a_np @ b_np
    error = float(np.abs(c.numpy() - expected).max() / np.abs(expected).max())
    if not error < 1e-4:
        raise RuntimeError(f"{backend.name} tiled GEMM differs from numpy: max relative error {error:.2e}")
    return run


def gemm_gflops(backends: dict, settings: Settings) -> dict:
    """GFLOP/s of the tiled GEMM per backend and of numpy's `a @ b`. Warp's CPU tile path is optional: when it
    fails to build, run or match numpy, its entry is None (printed as '-') and the reason goes to stderr."""
    a_np, b_np = gemm_matrices(settings.gemm_size)
    runs = {"numpy": lambda: a_np @ b_np}
    for name, backend in backends.items():
        try:
            runs[name] = gemm_kernel_run(backend, a_np, b_np)
        except Exception as e:  # Warp's CPU tile path is optional; ours must work
            if name == "ours":
                raise
            reason = str(e).splitlines()[0] if str(e) else ""
            print(f"note: Warp's CPU tiled GEMM did not run ({type(e).__name__}: {reason})", file=sys.stderr)
    seconds = best_seconds(runs, settings.gemm_repeats)
    flops = 2.0 * settings.gemm_size ** 3
    out = {key: flops / t / 1e9 for key, t in seconds.items()}
    out.setdefault("warp", None)
    return out


# ---------------------------------------------------------------------------------------------------------------
# 6. cloth simulation: steps/s of our sim solvers and of Newton's (on Warp CPU), tools/bench_sim.py


def cloth_steps_per_second(backends: dict, settings: Settings) -> dict:
    """Steps/s of the cloth benchmark, {(solver, cells): {"ours": {...}, "reference": {...} or None}}, plus
    "warnings" and "notes" (why XPBD or Newton rows are empty). XPBD is measured when `sim.SolverXPBD` runs."""
    frames = dict(settings.cloth_frames)
    notes = []
    xpbd, reason = bench_sim.xpbd_works()
    if not xpbd:
        frames.pop("xpbd", None)
        notes.append(f"sim.SolverXPBD did not run ({reason}); its rows are left out")
    newton, reason = bench_sim.newton_available()
    if newton is None:
        notes.append(f"newton is not importable ({reason}); the reference cloth rows are '-'")
    out = bench_sim.cloth_steps_per_second(settings.cloth_sizes, frames, settings.cloth_repeats, newton,
                                           lambda source: backends["ours"].load("bench_sim_loss", source))
    out["notes"] = notes
    out["newton"] = None if newton is None else newton.__version__
    return out


# ---------------------------------------------------------------------------------------------------------------
# 7. rigid bodies: bodies x steps/s of boxes falling on the ground, ours against Newton's, tools/bench_rigid.py


def rigid_body_steps_per_second(backends: dict, settings: Settings) -> dict:
    """Bodies x steps/s, {"large": {"ours": ..., "reference": ... or None}, "small": {"forward": ...,
    "forward_backward": ...}}, plus "warnings", "notes" and "newton" (its version, None when not importable)."""
    newton, reason = bench_sim.newton_available()
    notes = [] if newton else [f"newton is not importable ({reason}); the reference rigid row is '-'"]
    baseline = None
    if settings.rigid_baseline:
        baseline = bench_rigid_baseline.BaselineTree(settings.rigid_boxes, settings.rigid_steps)
        why_not = baseline.start()
        if why_not:
            notes.append(f"the rigid rows of the tree before issue 36 are '-': {why_not}")
            baseline = None
    try:
        out = bench_rigid.body_steps_per_second(
            bench_rigid.Boxes(settings.rigid_boxes), settings.rigid_steps,
            bench_rigid.Boxes(settings.rigid_grad_boxes), settings.rigid_grad_steps, settings.rigid_repeats, newton,
            lambda source: backends["ours"].load("bench_rigid_loss", source), baseline=baseline)
    finally:
        if baseline is not None:
            baseline.close()
    out["notes"] = notes
    out["newton"] = None if newton is None else newton.__version__
    return out


# ---------------------------------------------------------------------------------------------------------------
# 8. articulations: joints x steps/s of two chains, ours against Newton's Featherstone and MuJoCo,
# tools/bench_articulation.py


def articulation_steps_per_second(settings: Settings) -> dict:
    """bench_articulation.joint_steps_per_second's dict; a note when Newton is not importable."""
    newton, reason = bench_sim.newton_available()
    out = bench_articulation.joint_steps_per_second(settings.articulation_steps, settings.articulation_grad_steps,
                                                    settings.articulation_repeats, newton)
    if newton is None:
        out["notes"].append(f"newton is not importable ({reason}); the reference articulation rows are '-'")
    return out


# ---------------------------------------------------------------------------------------------------------------
# 9. optimisation: seconds per iteration of the cloth throw, ours against Newton's; tape memory, tools/bench_optim.py


def optimisation_costs(settings: Settings) -> dict:
    """{"iteration": bench_optim.seconds_per_iteration's dict, "memory": bench_optim.tape_memory's dict}, plus
    "warnings" and "newton" (its version, None when not importable)."""
    newton, reason = bench_sim.newton_available()
    iteration = bench_optim.seconds_per_iteration(settings.optim_repeats, newton)
    warnings = list(iteration.pop("warnings"))
    if newton is None:
        warnings.append(f"newton is not importable ({reason}); the reference iteration row is '-'")
    return {"iteration": iteration, "memory": bench_optim.tape_memory(settings.optim_memory_frames),
            "warnings": warnings, "newton": None if newton is None else newton.__version__}


# ---------------------------------------------------------------------------------------------------------------
# Table (the generic pieces and the simulation sections' rows are in tools/bench_report.py)


def kernel_rows(results: dict, settings: Settings, kernel_label: str) -> list:
    """The rows of the kernel sections (saxpy, launch, compile, autodiff, gemm) that were measured."""
    def both(d, key):
        return {"ours": d["ours"][key], "warp": d["warp"][key] if "warp" in d else None}

    rows = []
    if "saxpy" in results:
        saxpy = results["saxpy"]
        n_saxpy = f"{settings.saxpy_count:.0e}".replace("+0", "")
        rows.append(Row(f"saxpy {n_saxpy} float32 (12 B/elem)", "GB/s", saxpy["ours"], saxpy["numpy"],
                        saxpy["copy"], saxpy.get("warp")))
    if "launch" in results:
        launch = results["launch"]
        rows += [Row("launch dim=1, 1 array arg", "us", **both(launch, "one")),
                 Row("launch dim=1, 8 args", "us", **both(launch, "eight")),
                 Row("recorded launch replay", "us", **both(launch, "replay")),
                 Row(f"captured graph replay, per launch ({GRAPH_LAUNCHES} launches)", "us",
                     launch["ours"].get("graph"))]
    if "compile" in results:
        rows += [Row(f"cold compile {kernel_label}", "s", **both(results["compile"], "cold")),
                 Row(f"warm load {kernel_label}", "s", **both(results["compile"], "warm"))]
    if "autodiff" in results:
        ad = results["autodiff"]
        n_spring = f"{settings.spring_count:.0e}".replace("+0", "")
        rows += [Row(f"forward {kernel_label} {n_spring}", "ms", **both(ad, "forward")),
                 Row(f"forward+backward {kernel_label} {n_spring}", "ms", **both(ad, "forward_backward")),
                 Row("backward / forward", "x", spring_backward_ratio(ad["ours"]),
                     warp=spring_backward_ratio(ad["warp"]) if "warp" in ad else None)]
    if "gemm" in results:
        gemm, n_gemm = results["gemm"], settings.gemm_size
        rows.append(Row(f"tiled GEMM {n_gemm}x{n_gemm} float32 ({'x'.join(map(str, GEMM_TILE))} tiles)", "GFLOP/s",
                        gemm["ours"], gemm["numpy"], warp=gemm["warp"]))
    return rows


def table_rows(results: dict, settings: Settings, kernel_label: str) -> list:
    """The measurements as table rows, in the order of the issue."""
    rows = kernel_rows(results, settings, kernel_label)
    if "cloth" in results:
        rows += cloth_rows(results["cloth"], settings)
    if "rigid" in results:
        rows += rigid_rows(results["rigid"], settings)
    if "articulation" in results:
        rows += articulation_rows(results["articulation"], settings)
    if "optim" in results:
        rows += optim_rows(results["optim"])
    if "cloth_contact" in results:
        rows += bench_cloth_contact.rows(results["cloth_contact"], Row)
    if "render" in results:
        rows += bench_render.rows(results["render"], Row)
    if "mesh" in results:
        rows += bench_mesh.rows(results["mesh"], Row)
    return rows


def footnotes(results: dict) -> list:
    """The notes under the table of the simulation sections that were measured."""
    lines = []
    if "cloth" in results:
        lines += bench_sim.cloth_footnotes(results["cloth"])
    if "rigid" in results:
        lines += bench_rigid.footnotes(results["rigid"])
    if "articulation" in results:
        lines += bench_articulation.footnotes(results["articulation"])
    if "optim" in results:
        lines += bench_optim.footnotes(results["optim"])
    if "cloth_contact" in results:
        lines += bench_cloth_contact.footnotes(results["cloth_contact"])
    if "render" in results:
        lines += bench_render.footnotes(results["render"])
    if "mesh" in results:
        lines += bench_mesh.footnotes(results["mesh"])
    return lines


# ---------------------------------------------------------------------------------------------------------------
# Driver


def measure_all(backends: dict, settings: Settings, spring_source: str, vec3: bool, sections=SECTIONS) -> dict:
    """Run the benchmarks of `sections`; nested dicts of numbers keyed by section, then backend (or numpy, copy)."""
    measures = {
        "saxpy": lambda: saxpy_gbps(backends, settings),
        "launch": lambda: launch_microseconds(backends, settings),
        "compile": lambda: compile_seconds(backends, spring_source, settings),
        "autodiff": lambda: autodiff_milliseconds(backends, spring_source, vec3, settings),
        "gemm": lambda: gemm_gflops(backends, settings),
        "cloth": lambda: cloth_steps_per_second(backends, settings),
        "rigid": lambda: rigid_body_steps_per_second(backends, settings),
        "articulation": lambda: articulation_steps_per_second(settings),
        "optim": lambda: optimisation_costs(settings),
        "contention": lambda: bench_contention.measure(settings.contention_seconds, settings.contention_workloads,
                                                       1 if settings is QUICK else 2),
        "sweep": lambda: bench_sweep.measure(settings.sweep_runs, settings.sweep_frames),
        "cloth_contact": lambda: bench_cloth_contact.measure(*settings.cloth_contact),
        "render": lambda: bench_render.measure(*settings.render),
        "view": lambda: bench_view.measure(quick=settings is QUICK),
        "worlds": lambda: bench_worlds.measure(quick=settings is QUICK),
        "mesh": lambda: bench_mesh.measure(*settings.mesh),
    }
    return {section: measures[section]() for section in SECTIONS if section in sections}


def describe_run(quick: bool) -> str:
    """The title line: versions, cores, and the load average, since other processes on the machine skew timings."""
    warp_name = f"Warp {warp.__version__}" if warp else "Warp (not installed)"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"kernels {kernels.__version__} vs numpy {np.__version__} vs {warp_name} on CPU, {os.cpu_count()} cores, "
            f"load average {load:.1f}{' (--quick)' if quick else ''}")


def parse_args(argv=None) -> argparse.Namespace:
    """--quick, --only and --device (cuda: the GPU rows of tools/bench_cuda.py; --only picks them by the sections
    they belong to: saxpy, launch, cloth, rigid, gemm, optim)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (under a minute)")
    parser.add_argument("--device", default="cpu", help="device to benchmark: cpu (default) or cuda")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), metavar="SECTION",
                        help=f"run only these sections, of: {' '.join(SECTIONS)}")
    parser.add_argument("--no-warp", action="store_true",
                        help="leave the warp-lang columns empty even when it is installed (its cold compiles are slow)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="CPU threads of our kernels (wp.config.cpu_threads; default: all the cores allowed)")
    args = parser.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    if args.device not in ("cpu", "cuda") and not (args.device.startswith("cuda:") and args.device[5:].isdigit()):
        parser.error(f"--device {args.device}: unknown device; use cpu, cuda or cuda:N")
    return args


def main(argv=None) -> int:
    """Measure the selected sections, then print the title, the table, its notes and the targets line."""
    args = parse_args(argv)
    kernels.keep_freed_host_memory()  # as the `sim` CLI does (kernels/runtime/host_memory.py)
    if args.device != "cpu":  # the GPU rows, tools/bench_cuda.py
        try:
            from . import bench_cuda
        except ImportError:
            from tools import bench_cuda
        return bench_cuda.main(args.quick, args.only)
    if args.no_warp:
        global warp
        warp = None
    settings = QUICK if args.quick else FULL
    if args.threads is not None:
        kernels.config.cpu_threads = args.threads
    with tempfile.TemporaryDirectory(prefix="kernels-bench-") as scratch:
        backends = make_backends(scratch)
        vec3, reason = True, ""
        if {"compile", "autodiff"} & set(args.only):
            vec3, reason = vec3_builtins_work(backends["ours"])
        spring_source = SPRING_KERNEL_VEC3 if vec3 else SPRING_KERNEL_SCALAR
        kernel_label = "spring vec3 kernel" if vec3 else "spring kernel (scalar)"
        results = measure_all(backends, settings, spring_source, vec3, args.only)
    print(describe_run(args.quick))
    if not vec3:
        print(f"note: vec3 builtins not available in kernels ({reason}); the spring kernel uses scalar math")
    print(render_table(table_rows(results, settings, kernel_label),
                       extra_columns=("mujoco",) if "articulation" in results else ()))
    if "contention" in results:
        print(bench_contention.render(bench_contention.table(results["contention"])))
    if "sweep" in results:
        print(bench_sweep.render(results["sweep"], args.quick))
    if "view" in results:
        print(bench_view.render(results["view"]))
    if "worlds" in results:
        print(bench_worlds.render(results["worlds"]))
    for line in footnotes(results):
        print(line)
    print(closing_line(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
