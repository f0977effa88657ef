"""The sweep section of tools/bench.py: 16 runs of the cloth scene (60 frames) one after another in one process,
then as `sim sweep` with 1 and 2 workers (Ray when installed, else local processes); runs per minute of each.
Target: 2 workers at least 1.7x of 1 worker on a machine with 2 free cores."""

from __future__ import annotations

import os
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 1.7


def _sweep_file(folder: str, runs: int, frames: int) -> str:
    path = os.path.join(folder, "bench_sweep.yaml")
    with open(path, "w") as f:
        f.write(f"scene: {os.path.join(ROOT, 'scenes', 'cloth.yaml')}\nset: [sim.frames={frames}]\n"
                f"axes:\n  materials.cotton.tri_ke: {{logrange: [1.0e2, 1.0e4], count: {runs}}}\n"
                "metrics: [max_speed]\n")
    return path


def measure(runs: int, frames: int) -> dict:
    """Runs per minute: `serial` (one process, one thread), `workers_1` and `workers_2` (sim sweep, 1 thread each);
    empty when `runs` is 0 (quick mode: starting Ray alone takes longer than the smoke test allows)."""
    if runs == 0:
        return {}
    import sim
    from sim.sweeps import load_sweep
    import kernels
    before = kernels.config.cpu_threads
    with tempfile.TemporaryDirectory() as folder:
        path = _sweep_file(folder, runs, frames)
        kernels.config.cpu_threads = 1  # the serial reference runs like one sweep run (1 thread)
        t0 = time.perf_counter()
        for run in load_sweep(path).runs:
            sim.Scene.load(os.path.join(ROOT, "scenes", "cloth.yaml"), run.overrides).run(write=False)
        rates = {"serial": runs * 60.0 / (time.perf_counter() - t0)}
        for workers in (1, 2):
            t0 = time.perf_counter()
            sim.sweep(path, workers=workers, out_dir=os.path.join(folder, f"w{workers}"), say=lambda text: None)
            rates[f"workers_{workers}"] = runs * 60.0 / (time.perf_counter() - t0)
    kernels.config.cpu_threads = before
    rates.update(runs=runs, frames=frames)
    return rates


def speedup(rates: dict):
    """2 workers / 1 worker, None when the section was skipped."""
    return rates["workers_2"] / rates["workers_1"] if rates else None


def render(rates: dict, quick: bool) -> str:
    if not rates:
        return "sweep: skipped in --quick (a local Ray takes ~10 s to start); run tools/bench.py --only sweep"
    ratio = speedup(rates)
    verdict = "meets" if ratio >= TARGET else "misses"
    return (f"sweep ({rates['runs']} cloth runs x {rates['frames']} frames): serial {rates['serial']:.1f} runs/min, "
            f"1 worker {rates['workers_1']:.1f}, 2 workers {rates['workers_2']:.1f} runs/min; 2 workers / 1 = "
            f"{ratio:.2f}x ({verdict} the {TARGET}x target)")
