"""print(t) of a tile: Warp's layout (numpy-style nested brackets, %g floats, ` = tile(shape=(...), storage=...)`),
checked against real Warp's output for 1-d and 2-d tiles of int32 and float32. The storage is named for a tile
straight from a constructor or tile_load (kernels has one kind of tile; Warp's rules for the others are left out of
the comparison). Tiles of vectors are refused (Warp prints their raw bits)."""

import os
import re
import subprocess
import sys

import pytest

import kernels as wp

_PROGRAM = '''
import numpy as np
import {module} as wp

wp.config.quiet = True


@wp.kernel(enable_backward=False)
def show(x: wp.array(dtype=wp.int32), y: wp.array2d(dtype=float)):
    wp.print(wp.tile_load(x, shape=(5,)))
    wp.print(wp.tile_load(y, shape=(2, 3), storage="shared"))
    print(wp.tile_ones(shape=(1, 2), dtype=float) * 0.25)


x = wp.array(np.arange(-2, 3), dtype=wp.int32, device="cpu")
y = wp.array(np.arange(6).reshape(2, 3) * 0.5 - 1e-3, dtype=float, device="cpu")
wp.launch_tiled(show, dim=1, inputs=[x, y], block_dim=32, device="cpu")
wp.synchronize_device("cpu")
'''


def _printed(tmp_path, module):
    path = tmp_path / f"print_{module}.py"
    path.write_text(_PROGRAM.format(module=module))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if not line.startswith(("Warp ", "   ", "     ", "Module ",
                                                                                 "kernels:"))]
    # the last tile is computed (tile_ones(...) * 0.25): its storage label is Warp's own business
    return re.sub(r"(0\.25\]\] = tile\(shape=\(1,2\)), storage=\w+\)", r"\1)", "\n".join(lines))


def test_layout_is_warps(tmp_path):
    ours = _printed(tmp_path, "kernels")
    assert ours == _printed(tmp_path, "warp")
    assert "[[0.25 0.25]] = tile(shape=(1,2))" in ours


@wp.kernel
def _vectors(v: wp.array(dtype=wp.vec3)):
    wp.print(wp.tile_load(v, shape=(2,)))


def test_tiles_of_vectors_are_refused():
    with pytest.raises(TypeError, match="kernels prints tiles of scalars"):
        wp.launch_tiled(_vectors, [1], [wp.zeros(2, dtype=wp.vec3)], block_dim=1)
