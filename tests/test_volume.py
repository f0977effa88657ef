"""wp.Volume (NanoVDB float grids; kernels/runtime/volume.py, kernels/native/volume.h): Warp's own asset (rocks.nvdb,
from the warp-lang test extra) sampled, looked up and mapped in kernels, compared with real Warp to the bit;
gradients w.r.t. the coordinate by central differences (autodiff.gradcheck); damaged files refused in one line.
"""

import importlib.util
import os
import struct
import zlib

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck

import _warp_reference


def _asset():
    spec = importlib.util.find_spec("warp")
    path = spec and os.path.join(list(spec.submodule_search_locations)[0], "examples", "assets", "rocks.nvdb")
    if not path or not os.path.exists(path):
        pytest.skip("warp-lang's example assets (a test extra) are not installed")
    return path


@pytest.fixture(scope="module")
def rocks():
    return _asset()


_PROGRAM = '''
import numpy as np

ASSET = {asset!r}


@wp.kernel
def probe(volume: wp.uint64, points: wp.array(dtype=wp.vec3), values: wp.array2d(dtype=float),
          vectors: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    p = points[i]
    q = wp.volume_world_to_index(volume, p)
    values[i, 0] = wp.volume_sample_f(volume, q, wp.Volume.LINEAR)
    values[i, 1] = wp.volume_sample_f(volume, q, wp.Volume.CLOSEST)
    values[i, 2] = wp.volume_lookup_f(volume, int(q[0]), int(q[1]), int(q[2]))
    g = wp.vec3()
    values[i, 3] = wp.volume_sample_grad_f(volume, q, wp.Volume.LINEAR, g)
    vectors[i, 0] = q
    vectors[i, 1] = g
    vectors[i, 2] = wp.volume_index_to_world(volume, q)
    vectors[i, 3] = wp.volume_world_to_index_dir(volume, p)
    vectors[i, 4] = wp.volume_index_to_world_dir(volume, p)


def run(wp, Tape):
    with open(ASSET, "rb") as f:
        volume = wp.Volume.load_from_nvdb(f)
    rng = np.random.default_rng(0)
    # the grid's world box is about [-19, 20] x [-1, 12] x [-16, 16]; a third of the probes lie outside it
    pts = rng.uniform([-25.0, -4.0, -20.0], [25.0, 15.0, 20.0], size=(3000, 3)).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3)
    values = wp.zeros((3000, 4), dtype=float)
    vectors = wp.zeros((3000, 5), dtype=wp.vec3)
    wp.launch(probe, dim=3000, inputs=[volume.id, points, values, vectors])
    return {{"values": values.numpy(), "vectors": vectors.numpy(),
             "voxel_size": np.array(volume.get_voxel_size())}}
'''


def test_values_are_warps(rocks, tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM.format(asset=rocks), str(tmp_path), "volume")
    for key in ("values", "vectors", "voxel_size"):
        np.testing.assert_array_equal(ours[key], warp[key])
    linear = ours["values"][:, 0]
    # a narrow-band distance field (background +-0.6): many probes fall inside the band, not only on background
    assert np.count_nonzero(np.abs(linear) < 0.55) > 100


@wp.kernel
def sample_world(volume: wp.uint64, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample_f(volume, wp.volume_world_to_index(volume, points[i]), wp.Volume.LINEAR)


def test_sampling_gradient_matches_central_differences(rocks):
    with open(rocks, "rb") as f:
        volume = wp.Volume.load_from_nvdb(f)
    voxel = volume.get_voxel_size()[0]
    # probes inside the distance field's narrow band, each inside a voxel cell (the trilinear field has kinks on
    # the cells' faces)
    rng = np.random.default_rng(1)
    candidates = rng.uniform([-19.0, -1.0, -15.0], [19.0, 11.0, 15.0], size=(4000, 3))
    candidates = (np.floor(candidates / voxel) + rng.uniform(0.3, 0.7, size=candidates.shape)) * voxel
    probe = wp.array(candidates.astype(np.float32), dtype=wp.vec3)
    values = wp.zeros(len(candidates), dtype=float)
    wp.launch(sample_world, dim=len(candidates), inputs=[volume.id, probe, values])
    band = candidates[np.abs(values.numpy()) < 0.4][:12]
    assert len(band) == 12
    points = wp.array(band.astype(np.float32), dtype=wp.vec3)

    def fn(p):
        out = wp.zeros(p.shape[0], dtype=float)
        wp.launch(sample_world, dim=p.shape[0], inputs=[volume.id, p, out])
        return out

    gradcheck(fn, [points], eps=0.01 * voxel)


def _nvdb_file(grid: bytes, codec: int = 0) -> bytes:
    """A one-grid .nvdb file around `grid` (the metadata record holds its size and an empty name)."""
    meta = bytearray(176)
    payload = grid if codec == 0 else struct.pack("<Q", len(zlib.compress(grid))) + zlib.compress(grid)
    struct.pack_into("<Q", meta, 8, len(payload))
    header = struct.pack("<QIHH", 0x304244566F6E614E, 32 << 21, 1, codec)
    return header + bytes(meta) + payload


def test_damaged_files_are_refused(rocks):
    with open(rocks, "rb") as f:
        data = f.read()
    from kernels.runtime.volume import _grid_bytes
    grid = bytearray(_grid_bytes(data))
    wp.Volume.load_from_nvdb(_nvdb_file(bytes(grid)))  # the same grid, uncompressed: accepted
    wp.Volume.load_from_nvdb(_nvdb_file(bytes(grid), codec=1))
    with pytest.raises(RuntimeError, match="NanoVDB signature"):
        wp.Volume.load_from_nvdb(b"not a volume at all, just some bytes")
    with pytest.raises(RuntimeError, match="codec 2"):
        wp.Volume.load_from_nvdb(data[:14] + struct.pack("<H", 2) + data[16:])
    damaged = bytearray(grid)
    struct.pack_into("<I", damaged, 672 + 32 + 8, 10**6)  # a million upper nodes
    with pytest.raises(RuntimeError, match="invalid NanoVDB grid"):
        wp.Volume.load_from_nvdb(_nvdb_file(bytes(damaged)))
    damaged = bytearray(grid)
    root = 672 + struct.unpack_from("<Q", damaged, 672 + 24)[0]
    struct.pack_into("<q", damaged, root + 64 + 8, 12345)  # the first root tile's child offset
    with pytest.raises(RuntimeError, match="child offset"):
        wp.Volume.load_from_nvdb(_nvdb_file(bytes(damaged)))
    damaged = bytearray(grid)
    struct.pack_into("<I", damaged, 636, 4)
    with pytest.raises(RuntimeError, match="int32 grids are not supported"):
        wp.Volume.load_from_nvdb(_nvdb_file(bytes(damaged)))
