"""Record the trajectory that configs/cloth_stiffness_fit.yaml fits: scenes/cloth_hanging.yaml simulated with
its own (ground-truth) material, particle positions of every frame saved to configs/data/.

    python tools/make_fit_reference.py    # writes configs/data/cloth_hanging_reference.npz
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from sim.scene import Scene  # noqa: E402

SCENE = os.path.join(ROOT, "scenes", "cloth_hanging.yaml")
OUT = os.path.join(ROOT, "configs", "data", "cloth_hanging_reference.npz")


def record(scene: Scene) -> np.ndarray:
    """Positions [frames + 1, particles, 3] (m) of frames 0..frames."""
    built = scene.build("cpu")
    state, scratch = built.model.state(), built.model.state()
    frames = [state.particle_q.numpy().copy()]
    for f in range(1, scene.spec.sim.frames + 1):
        state, scratch = built.step_frame(state, scratch, f)
        frames.append(state.particle_q.numpy().copy())
    return np.stack(frames)


def main():
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    scene = Scene.load(SCENE)
    material = scene.spec.cloth[0].material
    positions = record(scene)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, cloth=positions.astype(np.float32), tri_ke=material.tri_ke, tri_kd=material.tri_kd)
    print(f"wrote {OUT}: {positions.shape[0]} frames of {positions.shape[1]} particles "
          f"(tri_ke {material.tri_ke:g}, tri_kd {material.tri_kd:g})")


if __name__ == "__main__":
    main()
