"""Warp's own example programs (warp-lang's `warp/examples/core` and `warp/examples/optim`) run unedited on
`kernels` through `warp_shim`, and on real warp-lang, in child processes; their arrays compared.

Each example runs with headless options and small sizes (`EXAMPLES`). A child (`example_runner.py`) saves every
array its `example` object holds; `compare` matches ours against Warp's. `warp_shim` compiles without fused
multiply-add, as Warp's CPU backend does, so most examples agree to the bit; the tolerance of each is stated
with its reason where it is not exact.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(HERE, "example_runner.py")


@dataclasses.dataclass(frozen=True)
class Example:
    """How one example is run and compared.

    Attributes:
        args: command-line options (headless, small sizes; Warp's own test options where it has them).
        stage: also pass `--stage-path` (a temporary .usd): the example writes USD through `warp.render`.
        ci: part of the subset the default test run covers (all run with KERNELS_WARP_EXAMPLES=all).
        rtol: largest difference allowed, relative to the array's largest magnitude (at least 1e-6).
        why: the reason for a tolerance above 1e-6.
        loose: arrays compared with `loose_rtol` instead (with their reason in `why`).
        loose_rtol: the tolerance of the `loose` arrays.
        ignore: arrays not compared (with their reason in `why`).
    """

    args: tuple = ()
    stage: bool = False
    ci: bool = False
    rtol: float = 1e-6
    why: str = ""
    loose: tuple = ()
    loose_rtol: float = 0.0
    ignore: tuple = ()


_ADAM = ("forward values agree to the bit; gradients differ by round-off (kernels' adjoints sum in another order "
         "than Warp's), and Adam, which divides each gradient element by its own magnitude, turns that round-off "
         "into a visible step where a gradient element is near zero (the parameters after one step); the loss is "
         "a sum of 250,000 float32 terms by wp.atomic_add, which kernels' threads add in another order than "
         "Warp's sequential loop (1e-5 of it)")
_ADAM_PARAMS = ("optimizer.params", "vx_arrays[0]", "vy_arrays[0]", "loss")

#: The examples of warp/examples/core and warp/examples/optim that real Warp runs on a CPU, and how.
EXAMPLES = {
    "core.example_dem": Example(("--num-frames", "1"), stage=True, ci=True),
    "core.example_fdtd_3d": Example(("--headless", "--resolution", "48", "--num-steps", "10",
                                     "--steps-per-frame", "5"), ci=True, ignore=("e_x_center_plane_buffer",),
                                    why="a wp.empty buffer the example fills only when it draws a frame (never "
                                        "when headless): uninitialised memory in both runs"),
    "core.example_fft_poisson_navier_stokes_2d": Example(("--headless", "--num-steps", "4", "--sim-substeps",
                                                          "2")),
    "core.example_fluid": Example(("--headless", "--num-frames", "4")),
    "core.example_graph_capture": Example(("--headless", "--num-frames", "4"), ci=True),
    "core.example_mesh": Example(("--num-frames", "4"), stage=True, ci=True, rtol=1e-5,
                                 why="closest points on triangles: kernels' own routine (native/mesh.h) rounds "
                                     "differently from Warp's"),
    "core.example_mesh_intersect": Example((), stage=True, ci=True),
    "core.example_nvdb": Example(("--num-frames", "4"), stage=True, ci=True),
    "core.example_raycast": Example(("--headless", "--width", "64", "--height", "64"), ci=True),
    "core.example_raymarch": Example(("--headless", "--width", "128", "--height", "64"), ci=True),
    "core.example_sample_mesh": Example(("--num-frames", "1"), stage=True),
    "core.example_sph": Example(("--num-frames", "1"), stage=True),
    "core.example_wave": Example(("--num-frames", "4"), stage=True, ci=True),
    "optim.example_diffray": Example(
        ("--headless", "--train-iters", "2", "--height", "64"), rtol=5e-5, loose=("rays", "pixels", "images",
                                                                                    "target_pixels"),
        loose_rtol=3e-3, why="kernels intersects rays with triangles by Moller-Trumbore, Warp by the watertight "
                             "(Woop) test: hit barycentrics differ by float32 round-off (the target image by 2e-6); "
                             "the texture lookup's int() and the shading clamps turn that into a texel's step on "
                             "rays whose texture coordinate sits on a texel boundary (rays, pixels: up to 2e-3 of "
                             "the largest value, a few rays); the learned rotation after two steps agrees to 2e-5"),
    "optim.example_fluid_checkpoint": Example(("--headless", "--train-iters", "1", "--num-frames", "10"),
                                              rtol=1e-5, loose=_ADAM_PARAMS, loose_rtol=1e-3, why=_ADAM),
    "optim.example_fluid_checkpoint_custom_backward": Example(
        ("--headless", "--train-iters", "1", "--num-frames", "5", "--pressure-iterations", "3",
         "--segment-size", "3"), ci=True, rtol=1e-5, loose=_ADAM_PARAMS, loose_rtol=1e-3, why=_ADAM),
    "optim.example_navier_stokes_perturbation": Example(
        ("--headless", "--train-iters", "2", "--lead-steps", "2", "--spin-up-steps", "4"), loose=(
            "delta_omega_norm_sq", "loss"), loose_rtol=1e-4,
        why="delta_omega_norm_sq and the loss are sums of 262,144 float32 terms by wp.atomic_add, which kernels' "
            "threads add in another order than Warp's sequential loop (up to 6e-6 of them, varying from run to "
            "run); the fields and the gradients agree"),
    "optim.example_particle_repulsion": Example(("--headless", "--num-frames", "4"), ci=True),
}

#: Examples in warp/examples/core and optim that real warp-lang does not run on a CPU-only machine (not counted).
NOT_ON_CPU = {
    "core.example_alloc_tracker": "Warp 1.19 fails on its CPU: 'Failed to allocate 2400000 bytes on device cpu'",
    "core.example_custom_allocator": "Warp's custom allocators are CUDA-only",
    "core.example_spin_lock": "runs on device 'cuda' only",
    "core.example_work_queue": "runs on device 'cuda' only",
    "core.example_cupy": "CuPy (CUDA) interop",
    "core.example_torch": "PyTorch interop (torch is not a dependency)",
    "core.example_render_opengl": "needs an OpenGL window (Warp's own test suite skips it)",
}


@dataclasses.dataclass
class Run:
    """One run of an example: its arrays, the program's wall time [s], and how it ended."""

    arrays: dict
    seconds: float
    returncode: int
    output: str


def examples_dir() -> str:
    """warp-lang's `warp/examples` folder (without importing warp)."""
    import importlib.util

    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("warp-lang is not installed (it is a test extra: pip install -e '.[test]')")
    return os.path.join(list(spec.submodule_search_locations)[0], "examples")


def run_example(impl: str, name: str, *, env: dict | None = None, timeout: float = 600.0) -> Run:
    """Run example `name` on `impl` ("kernels" or "warp") in a child process."""
    spec = EXAMPLES[name]
    child_env = dict(os.environ, **(env or {}))
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, child_env.get("PYTHONPATH", "")]))
    # as a user's Python does: bytecode cached (warp-lang's modules were compiled when pip installed them; ours, an
    # editable install, are compiled once at first import). A machine with PYTHONDONTWRITEBYTECODE set would
    # otherwise charge our ~150 modules' compilation (~0.3 s) to every example's time and not Warp's.
    child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="warp_example_") as tmp:
        out = os.path.join(tmp, "arrays.npz")
        args = ["--device", "cpu", *spec.args]
        if spec.stage:
            args += ["--stage-path", os.path.join(tmp, "stage.usd")]
        cmd = [sys.executable, RUNNER, "--impl", impl, "--example", name, "--out", out, "--", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env, cwd=tmp, timeout=timeout)
        output = (proc.stdout + proc.stderr)[-4000:]
        if proc.returncode != 0 or not os.path.exists(out):
            return Run({}, float("nan"), proc.returncode or 1, output)
        if spec.stage and not os.path.exists(os.path.join(tmp, "stage.usd")):
            return Run({}, float("nan"), 1, output + "\nthe example wrote no USD stage")
        with np.load(out) as data:
            arrays = {k: data[k] for k in data.files}
    seconds = float(arrays.pop("__seconds__"))
    return Run(arrays, seconds, 0, output)


def compare(name: str, warp: dict, ours: dict) -> list:
    """Differences between Warp's arrays and ours, one line each (empty: they agree within the example's
    tolerance). Private attributes (`_name`) are implementation detail and not compared; an array Warp's
    example holds that ours lacks is a difference only when it is the example's own (not its optimiser's)."""
    spec = EXAMPLES[name]
    problems = []
    public = {k: v for k, v in warp.items() if not k.rsplit(".", 1)[-1].startswith("_")}
    if not public:
        problems.append("Warp's run holds no arrays to compare")
    for key, expected in sorted(public.items()):
        if key in spec.ignore:
            continue
        if key not in ours:
            if not key.startswith("optimizer."):
                problems.append(f"{key}: missing")
            continue
        got = ours[key]
        if got.shape != expected.shape or got.dtype != expected.dtype:
            problems.append(f"{key}: {got.shape} {got.dtype}, Warp {expected.shape} {expected.dtype}")
            continue
        if expected.dtype.kind not in "fc":
            if not np.array_equal(got, expected):
                problems.append(f"{key}: {np.count_nonzero(got != expected)} of {got.size} values differ")
            continue
        rtol = spec.loose_rtol if any(key.startswith(p) for p in spec.loose) else spec.rtol
        scale = max(1e-6, float(np.nanmax(np.abs(expected)))) if expected.size else 1.0
        if not np.array_equal(np.isnan(got), np.isnan(expected)):
            problems.append(f"{key}: NaN in different places")
            continue
        error = float(np.nanmax(np.abs(got.astype(np.float64) - expected))) / scale if expected.size else 0.0
        if error > rtol:
            problems.append(f"{key}: differs by {error:.3g} of its largest value (tolerance {rtol:g})")
    return problems


def selected(everything: bool) -> list:
    """Example names to run: the CI subset, or all."""
    return [n for n, e in EXAMPLES.items() if everything or e.ci]
