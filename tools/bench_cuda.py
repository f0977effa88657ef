"""GPU rows of `python tools/bench.py --device cuda`: bandwidth, launch costs, tiled GEMM and the simulation on a
CUDA device, each against the reference measured on the same device in the same run.

- saxpy (y = a x + y) at 10^8 elements: GB/s (12 bytes per element: x and y read, y written) against the device's
  copy bandwidth, measured here with cuMemcpyDtoD (bytes read + bytes written);
- launch overhead: microseconds per `wp.launch` of a one-thread kernel (host side, to the stream), and per launch
  in the replay of a CUDA graph of 1000 such launches;
- tiled GEMM (`wp.tile_matmul`) in float32 against torch's cuBLAS `a @ b` (TF32 off: plain float32 on both sides),
  both checked against each other;
- cloth (XPBD, 16 substeps of a 60 fps frame, captured as a graph), 1000 falling boxes (SolverRigid) and an
  iteration of `sim optimize configs/cloth_throw.yaml`.
Device time is measured with CUDA events around the timed region (median of the repeats), after a warm-up.
Warp and Newton are not installed on the GPU machine (their wheels exceed what a device call carries): the
published figures to compare with are named in docs/cuda.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import kernels as wp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DEV = "cuda:0"


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def tiny(a: wp.array(dtype=float)):
    a[0] = a[0] + 1.0


GEMM_TILE = (64, 64, 16)


@wp.kernel
def tiled_gemm(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(64, 64), dtype=float)
    for k in range(a.shape[1] // 16):
        ta = wp.tile_load(a, shape=(64, 16), offset=(i * 64, k * 16))
        tb = wp.tile_load(b, shape=(16, 64), offset=(k * 16, j * 64))
        wp.tile_matmul(ta, tb, acc)
    wp.tile_store(c, acc, offset=(i * 64, j * 64))


def event_ms(run, repeats: int, warmup: int = 2) -> float:
    """Median device milliseconds of `run()` between two CUDA events on the current stream."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start, end = wp.Event(DEV, enable_timing=True), wp.Event(DEV, enable_timing=True)
        wp.record_event(start)
        run()
        wp.record_event(end)
        times.append(wp.get_event_elapsed_time(start, end))
    return float(np.median(times))


def copy_gbps(count: int, repeats: int) -> float:
    """Device-to-device copy bandwidth, bytes read + written per second / 1e9."""
    src = wp.empty(count, dtype=float, device=DEV)
    dst = wp.empty(count, dtype=float, device=DEV)
    ms = event_ms(lambda: wp.copy(dst, src), repeats)
    return 2 * 4 * count / (ms * 1e-3) / 1e9


def saxpy_gbps(count: int, repeats: int) -> float:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(count, dtype=np.float32)
    y_np = rng.standard_normal(count, dtype=np.float32)
    x, y = wp.array(x_np, device=DEV), wp.array(y_np, device=DEV)
    wp.launch(saxpy, dim=count, inputs=[2.0, x, y], device=DEV)
    got = y.numpy()
    if not np.allclose(got, 2.0 * x_np + y_np, rtol=1e-6, atol=1e-6):
        raise RuntimeError("saxpy on the GPU differs from numpy")
    ms = event_ms(lambda: wp.launch(saxpy, dim=count, inputs=[2.0, x, y], device=DEV), repeats)
    return 3 * 4 * count / (ms * 1e-3) / 1e9


def launch_microseconds(count: int = 2000) -> tuple:
    """(host microseconds per wp.launch of a tiny kernel, device microseconds per launch of a graph replay)."""
    a = wp.zeros(1, dtype=float, device=DEV)
    wp.launch(tiny, dim=1, inputs=[a], device=DEV)
    wp.synchronize()
    t0 = time.perf_counter()
    for _ in range(count):
        wp.launch(tiny, dim=1, inputs=[a], device=DEV)
    host_us = (time.perf_counter() - t0) / count * 1e6
    wp.synchronize()
    a.zero_()
    with wp.ScopedCapture(DEV) as cap:
        for _ in range(1000):
            wp.launch(tiny, dim=1, inputs=[a], device=DEV)
    ms = event_ms(lambda: wp.capture_launch(cap.graph), 5, warmup=1)
    if float(a.numpy()[0]) != 1000.0 * (5 + 1):
        raise RuntimeError(f"graph replays gave {a.numpy()[0]}, expected {1000.0 * 6}")
    return host_us, ms * 1e3 / 1000


def gemm(size: int, repeats: int) -> dict:
    """GFLOP/s of our tiled GEMM and of torch's cuBLAS GEMM (None when torch has no CUDA)."""
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((size, size), dtype=np.float32)
    b_np = rng.standard_normal((size, size), dtype=np.float32)
    a, b = wp.array(a_np, device=DEV), wp.array(b_np, device=DEV)
    c = wp.zeros((size, size), dtype=float, device=DEV)
    tm, tn, _ = GEMM_TILE

    def ours():
        wp.launch_tiled(tiled_gemm, dim=(size // tm, size // tn), inputs=[a, b, c], block_dim=64, device=DEV)

    ours()
    expected = a_np.astype(np.float64) @ b_np.astype(np.float64)
    err = float(np.linalg.norm(c.numpy() - expected) / np.linalg.norm(expected))
    if not err < 1e-5:
        raise RuntimeError(f"tiled GEMM differs from float64: relative error {err:.1e}")
    flops = 2.0 * size ** 3
    out = {"ours": flops / (event_ms(ours, repeats, warmup=1) * 1e-3) / 1e9, "torch": None, "error": err}
    try:
        import torch
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False
            ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
            torch.matmul(ta, tb)
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(repeats):
                s.record()
                torch.matmul(ta, tb)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            ms = float(np.median(times))
            out["torch"] = flops / (ms * 1e-3) / 1e9
    except ImportError:
        pass
    return out


def cloth_steps(cells: int, frames: int) -> float:
    """XPBD substeps per second of the benchmark cloth on the GPU, one frame (16 substeps) captured as a graph."""
    from tools import bench_sim
    import sim
    model = bench_sim.ours_model(bench_sim.Cloth(cells), requires_grad=False, device=DEV)
    solver = sim.SolverXPBD(model, iterations=bench_sim.XPBD_ITERATIONS)
    a, b = model.state(), model.state()
    dt = 1.0 / bench_sim.FRAMES_PER_SECOND / bench_sim.SUBSTEPS
    solver.step(model, a, b, None, dt)  # scratch buffers and modules before the capture
    with wp.ScopedCapture(DEV) as cap:
        for _ in range(bench_sim.SUBSTEPS // 2):
            solver.step(model, a, b, None, dt)
            solver.step(model, b, a, None, dt)
    ms = event_ms(lambda: [wp.capture_launch(cap.graph) for _ in range(frames)], 3, warmup=1)
    if not np.isfinite(a.particle_q.numpy()).all():
        raise RuntimeError("the GPU cloth blew up")
    return frames * bench_sim.SUBSTEPS / (ms * 1e-3)


def boxes_steps(shape: tuple, steps: int) -> float:
    """Bodies x steps per second of SolverRigid on a lattice of boxes, launched (not captured)."""
    from tools import bench_rigid
    import sim
    boxes = bench_rigid.Boxes(shape)
    model = bench_rigid.ours_model(boxes, requires_grad=False, device=DEV)
    solver = sim.SolverRigid(model)
    a, b = model.state(), model.state()

    def run():
        nonlocal a, b
        for _ in range(steps):
            solver.step(model, a, b, None, bench_rigid.DT)
            a, b = b, a

    ms = event_ms(run, 3, warmup=1)
    if not np.isfinite(a.body_q.numpy()).all():
        raise RuntimeError("the GPU boxes blew up")
    return boxes.count * steps / (ms * 1e-3)


def cloth_throw_seconds(iterations: int) -> float:
    """Seconds per iteration of `sim optimize configs/cloth_throw.yaml` on the GPU (after one warm-up iteration)."""
    from sim.optimization import load_config, optimize
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "configs", "cloth_throw.yaml")
    # no output files: the iteration is measured, not the USD and video writing after the last one
    optimize(load_config(path, []), iterations=1, write=False, device=wp.get_device(DEV))
    result = optimize(load_config(path, []), iterations=iterations, write=False, device=wp.get_device(DEV))
    return result.seconds_per_iteration


# the sections of tools/bench.py --only each group of GPU rows belongs to
SECTION_OF = {"bandwidth": "saxpy", "launches": "launch", "cloth": "cloth", "boxes": "rigid", "gemm": "gemm",
              "cloth_throw": "optim"}


def measure(quick: bool, sections=None) -> list:
    """Rows (label, ours, reference, unit/ratio note) for the table; `sections` (tools/bench.py --only names)
    selects groups of rows (all when None)."""
    rows = []

    def attempt(label, fn):
        t0 = time.perf_counter()
        done = len(rows)
        try:
            fn()
        except Exception as e:  # noqa: BLE001  one failed row must not hide the others
            import traceback
            traceback.print_exc(limit=-4)
            rows.append((label, "failed", "", f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"))
        # each row as soon as it is measured: a run cut short by a time limit still shows what it measured
        for row in rows[done:]:
            print("  " + " | ".join(str(c) for c in row), flush=True)
        print(f"  ({label}: {time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)

    count = 10**7 if quick else 10**8
    reps = 5 if quick else 20

    def bandwidth():
        copy = copy_gbps(count, reps)
        ours = saxpy_gbps(count, reps)
        rows.append((f"saxpy {count:.0e} [GB/s]", f"{ours:.0f}", f"copy {copy:.0f}", f"{ours / copy:.2f} of copy"))

    def launches():
        host, graph = launch_microseconds()
        rows.append(("launch overhead [us/launch]", f"{host:.2f}", "", "wp.launch, host side"))
        rows.append(("graph replay [us/launch]", f"{graph:.2f}", "", "1000 launches in one CUDA graph"))

    def gemm_row():
        size = 1024 if quick else 4096
        g = gemm(size, 3)
        ref = g["torch"]
        rows.append((f"tiled GEMM {size}^2 fp32 [GFLOP/s]", f"{g['ours']:.0f}",
                     f"cuBLAS {ref:.0f}" if ref else "-", f"{g['ours'] / ref:.3f}x cuBLAS" if ref else ""))

    def cloth_rows():
        for cells in (32, 256):
            rate = cloth_steps(cells, 2 if quick else 5)
            rows.append((f"cloth {cells}x{cells} XPBD [substeps/s]", f"{rate:,.0f}", "", "graph of 16 substeps"))

    def boxes_row():
        rate = boxes_steps((10, 10, 10), 20 if quick else 50)
        rows.append(("1000 boxes SolverRigid [body-steps/s]", f"{rate:,.0f}", "", "launched"))

    def throw_row():
        rows.append(("cloth_throw iteration [s]", f"{cloth_throw_seconds(2 if quick else 3):.3f}", "", "sim optimize"))

    # cheapest first: a run cut short by a time limit still has them
    for label, fn in (("bandwidth", bandwidth), ("launches", launches), ("cloth", cloth_rows), ("boxes", boxes_row),
                      ("gemm", gemm_row), ("cloth_throw", throw_row)):
        if sections is None or SECTION_OF[label] in sections:
            attempt(label, fn)
    return rows


def render(rows: list) -> str:
    d = wp.get_device(DEV)
    head = f"{d.name} (sm_{d.arch}, {d.sm_count} SMs)"
    widths = [max(len(str(r[k])) for r in rows + [("row", "ours", "reference", "note")]) for k in range(4)]
    lines = [head, " | ".join(h.ljust(w) for h, w in zip(("row", "ours", "reference", "note"), widths))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def main(quick: bool, sections=None) -> int:
    if wp.get_cuda_device_count() == 0:
        print("bench --device cuda: no CUDA device on this machine", file=sys.stderr)
        return 2
    print(render(measure(quick, sections)))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    sys.exit(main(parser.parse_args().quick))
