"""Warp's example programs (warp-lang's warp/examples/core and optim) run unedited through `warp_shim`, with
Warp's numbers: each runs on real warp-lang and on kernels (child processes, small sizes) and every array the
example holds is compared (tests/warp_compat/examples.py).

By default a representative subset runs (`ci=True` in EXAMPLES: particles on a hash grid, a mesh, mesh
intersection, ray casting, noise, ray marching, a sparse volume, a wave on a grid, FDTD, a checkpointed
differentiable fluid, particle repulsion with wp.grad); KERNELS_WARP_EXAMPLES=all runs every
example that real Warp runs on a CPU.
"""

import concurrent.futures
import os

import pytest

import examples
import kernels as wp

pytest.importorskip("warp", reason="warp-lang (a test extra) provides the example programs")

EVERYTHING = os.environ.get("KERNELS_WARP_EXAMPLES", "") == "all"
NAMES = examples.selected(EVERYTHING)


@pytest.fixture(scope="module")
def runs():
    """{name: (Warp's run, ours)}, the children run side by side (one per core)."""
    env = {"KERNELS_CACHE_DIR": wp.config.cache_dir}
    workers = max(1, min(4, len(os.sched_getaffinity(0))))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = {(name, impl): pool.submit(examples.run_example, impl, name, env=env)
                   for name in NAMES for impl in ("warp", "kernels")}
        return {name: (futures[name, "warp"].result(), futures[name, "kernels"].result()) for name in NAMES}


def test_every_cpu_example_is_listed():
    # a new example in the installed warp-lang must be listed, to be run or to say why it is not
    source = examples.examples_dir()
    found = {f"{folder}.{f[:-3]}" for folder in ("core", "optim") for f in os.listdir(os.path.join(source, folder))
             if f.startswith("example_") and f.endswith(".py")}
    assert found == set(examples.EXAMPLES) | set(examples.NOT_ON_CPU)


@pytest.mark.parametrize("name", NAMES)
def test_warp_example(name, runs):
    warp_run, ours = runs[name]
    assert warp_run.returncode == 0, f"real Warp failed (the baseline):\n{warp_run.output}"
    assert ours.returncode == 0, f"the example failed through warp_shim:\n{ours.output}"
    problems = examples.compare(name, warp_run.arrays, ours.arrays)
    assert not problems, "arrays differ from Warp's:\n" + "\n".join(problems)
