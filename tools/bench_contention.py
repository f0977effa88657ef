"""Throughput when processes share the machine, for tools/bench.py's `contention` section.

Each workload runs in a child process, measured for a fixed time after its warm-up (compiles, first steps):
cloth 32x32 and 64x64 forward steps with XPBD and semi-implicit (tools/bench_sim.py's cloth), and saxpy over 1e7
floats. Scenarios: one process alone; two processes started together (each one's rate is reported, and the lower
of the two); one process next to a busy-loop process pinned to one core. Runtimes, side by side: this toolkit's
thread pool (config.cpu_runtime = "pool"), the OpenMP runtime it replaced ("openmp", OpenMP's default waiting), and
the same under OMP_WAIT_POLICY=passive.

    python tools/bench_contention.py [--quick]        # or: python tools/bench.py --only contention
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: the repository root is not on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernels as wp  # noqa: E402

WORKLOADS = ("xpbd32", "xpbd64", "semi32", "semi64", "saxpy")
SCENARIOS = ("alone", "pair", "busy")
RUNTIMES = {"pool": {"KERNELS_CPU_RUNTIME": "pool"},
            "openmp": {"KERNELS_CPU_RUNTIME": "openmp"},
            "openmp passive": {"KERNELS_CPU_RUNTIME": "openmp", "OMP_WAIT_POLICY": "passive"}}
UNITS = {"saxpy": "launches/s"}
CLOTH = ("xpbd32", "xpbd64", "semi32", "semi64")


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


# ---------------------------------------------------------------------------------------------------------------
# Child: one workload, measured after the parent says go


def _workload(name: str):
    """A function doing one unit of work (a cloth step, a saxpy launch), warmed up."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if name == "saxpy":
        n = 10_000_000
        x, y = wp.ones(n, dtype=float), wp.zeros(n, dtype=float)

        def step():
            wp.launch(saxpy, n, inputs=[2.0, x, y])
    else:
        import bench_sim
        solver_name = "xpbd" if name.startswith("xpbd") else "semi_implicit"
        cloth = bench_sim.Cloth(int(name[-2:]))
        model = bench_sim.ours_model(cloth, requires_grad=False)
        solver = bench_sim.ours_solver(model, solver_name)
        pair = [model.state(), model.state()]
        dt = 1.0 / bench_sim.FRAMES_PER_SECOND / bench_sim.SUBSTEPS

        def step():
            solver.step(model, pair[0], pair[1], None, dt)
            pair.reverse()
    for _ in range(10):
        step()
    return step


def child(name: str, go: str, seconds: float) -> None:
    step = _workload(name)
    with open(go + f".ready.{os.getpid()}", "w"):
        pass
    while not os.path.exists(go):
        time.sleep(0.001)
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        count += 1
    print(json.dumps({"rate": count / (time.perf_counter() - t0)}))


def _busy_loop() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    while True:
        pass


# ---------------------------------------------------------------------------------------------------------------
# Parent


def run_scenario(workload: str, scenario: str, runtime: str, seconds: float, extra_env=None) -> list:
    """The rates of the measured processes of one scenario (one number, or two for "pair"). Thread-count variables
    of this environment are not passed on (each process uses every core) unless given in `extra_env`."""
    env = dict(os.environ, **RUNTIMES[runtime])
    env.pop("KERNELS_NUM_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    if runtime == "pool":
        env.pop("OMP_WAIT_POLICY", None)
    env.update(extra_env or {})
    with tempfile.TemporaryDirectory(prefix="kernels-contention-") as scratch:
        go = os.path.join(scratch, "go")
        count = 2 if scenario == "pair" else 1
        cmd = [sys.executable, os.path.abspath(__file__), "--child", workload, go, str(seconds)]
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(count)]
        while len([f for f in os.listdir(scratch) if ".ready." in f]) < count:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.01)
        busy = None
        if scenario == "busy":
            busy = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--busy"])
            time.sleep(0.2)
        with open(go, "w"):
            pass
        outs = [p.communicate() for p in procs]
        if busy is not None:
            busy.kill()
            busy.wait()
    rates = []
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"{workload} {scenario} {runtime}: child failed:\n{err[-2000:]}")
        rates.append(json.loads(out.strip().splitlines()[-1])["rate"])
    return rates


def measure(seconds: float, workloads=WORKLOADS, alone_repeats: int = 2) -> dict:
    """{workload: {runtime: {scenario: [rates]}}}; the single-process rate is the best of `alone_repeats` runs (the
    reference every ratio divides by, so the least disturbed one)."""
    def scenario(w, s, r):
        if s == "alone":
            return [max(run_scenario(w, s, r, seconds)[0] for _ in range(alone_repeats))]
        return run_scenario(w, s, r, seconds)

    return {w: {r: {s: scenario(w, s, r) for s in SCENARIOS} for r in RUNTIMES} for w in workloads}


def table(results: dict) -> list:
    """Rows: workload x scenario; columns: each runtime's rate (the lower one for a pair) and its ratio to the same
    runtime alone."""
    header = ["workload", "scenario"] + [f"{r}" for r in RUNTIMES] + [f"{r} vs alone" for r in RUNTIMES]
    rows = [header]
    for w, per_runtime in results.items():
        for s in SCENARIOS:
            rates = [min(per_runtime[r][s]) for r in RUNTIMES]
            alone = [per_runtime[r]["alone"][0] for r in RUNTIMES]
            unit = UNITS.get(w, "steps/s")
            label = {"alone": "1 process", "pair": "2 at once (each, lower)", "busy": "next to a busy core"}[s]
            rows.append([f"{w} ({unit})", label] + [f"{x:,.0f}" for x in rates]
                        + [f"{x / a:.2f}x" if a else "-" for x, a in zip(rates, alone)])
    return rows


def worst_pair_ratio(results: dict, runtime: str = "pool") -> float:
    """The lowest (rate of either of two processes at once) / (rate alone) over the cloth workloads measured."""
    ratios = [min(r[runtime]["pair"]) / r[runtime]["alone"][0] for w, r in results.items() if w in CLOTH]
    return min(ratios) if ratios else float("nan")


def worst_alone_ratio(results: dict) -> float:
    """The lowest pool / previous runtime ratio of the single-process rates (every workload measured)."""
    ratios = [r["pool"]["alone"][0] / r["openmp"]["alone"][0] for r in results.values()]
    return min(ratios) if ratios else float("nan")


def render(rows: list) -> str:
    widths = [max(len(str(r[k])) for r in rows) for k in range(len(rows[0]))]
    lines = [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter measurements")
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--child", nargs=3, metavar=("WORKLOAD", "GO", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.busy:
        _busy_loop()
    if args.child:
        child(args.child[0], args.child[1], float(args.child[2]))
        return 0
    results = measure(1.0 if args.quick else 3.0, args.only, 1 if args.quick else 2)
    print(f"contention: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(render(table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
