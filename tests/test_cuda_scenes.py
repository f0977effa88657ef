"""Every shipped scene and optimisation config gives the CPU's results on a GPU, within float tolerance.

The same YAML, unchanged, is run once on the CPU and once on cuda:0 (frames captured as CUDA graphs where the CPU
captures, as `sim run` does); the positions after a few frames, and the losses and learned values after two
iterations, are compared. Float32 sums in another order (atomics, a thread pool against thousands of threads)
differ in the last bits and contacts can amplify that, so the horizon is short and the tolerance is absolute in
metres (radians for joints). Skipped, saying so, where no GPU is usable (CI).
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

import kernels as wp
from sim.optimization import load_config, optimize
from sim.scene import Scene

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "scenes", "*.yaml")))
CONFIGS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "configs", "*.yaml")))
FRAMES = 5
POSITION_TOLERANCE = 2e-3  # m (rad for joint coordinates)
POSITIONS = ("particle_q", "body_q", "joint_q")


def _gpu() -> str:
    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device is usable here: the CPU/GPU agreement runs on a GPU (tools/gpu_check.sh)")
    return "cuda:0"


def _positions(state) -> dict:
    out = {}
    for name in POSITIONS:
        a = getattr(state, name, None)
        if a is not None and a.size:
            out[name] = a.numpy().astype(np.float64)
    return out


@pytest.mark.parametrize("name", SCENES)
def test_scene_on_cuda_matches_the_cpu(name):
    gpu = _gpu()
    path = os.path.join(ROOT, "scenes", f"{name}.yaml")
    cpu_state = Scene.load(path).run(frames=FRAMES, write=False, device="cpu").state
    gpu_state = Scene.load(path).run(frames=FRAMES, write=False, device=gpu).state
    cpu, got = _positions(cpu_state), _positions(gpu_state)
    assert cpu.keys() == got.keys()
    assert cpu, f"scene {name} has no positions to compare"
    for key in cpu:
        diff = float(np.abs(cpu[key] - got[key]).max())
        assert np.isfinite(got[key]).all(), f"{name}: {key} on the GPU is not finite"
        assert diff < POSITION_TOLERANCE, f"{name}: {key} differs from the CPU's by {diff:.2e} after {FRAMES} frames"


@pytest.mark.parametrize("name", CONFIGS)
def test_optimisation_config_on_cuda_matches_the_cpu(name):
    gpu = _gpu()
    path = os.path.join(ROOT, "configs", f"{name}.yaml")
    runs = {}
    for device in ("cpu", gpu):
        runs[device] = optimize(load_config(path, []), iterations=2, write=False, device=wp.get_device(device))
    cpu, got = runs["cpu"], runs[gpu]
    np.testing.assert_allclose(got.losses, cpu.losses, rtol=1e-3, atol=1e-6,
                               err_msg=f"{name}: the GPU's losses differ from the CPU's")
    assert got.params.keys() == cpu.params.keys()
    for key, value in cpu.params.items():
        np.testing.assert_allclose(np.asarray(got.params[key], dtype=np.float64),
                                   np.asarray(value, dtype=np.float64), rtol=1e-2, atol=1e-5,
                                   err_msg=f"{name}: learned {key} on the GPU differs from the CPU's")
