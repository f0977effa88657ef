"""wp.Volume (NanoVDB grids; kernels/runtime/volume.py, kernels/native/volume.h): Warp's own asset (rocks.nvdb,
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
    with pytest.raises(RuntimeError, match="Invalid NanoVDB grid structure"):
        wp.Volume.load_from_nvdb(_nvdb_file(bytes(damaged)))
    damaged = bytearray(grid)
    root = 672 + struct.unpack_from("<Q", damaged, 672 + 24)[0]
    struct.pack_into("<q", damaged, root + 64 + 8, 12345)  # the first root tile's child offset
    with pytest.raises(RuntimeError, match="child reference"):
        wp.Volume.load_from_nvdb(_nvdb_file(bytes(damaged)))
    damaged = bytearray(grid)
    struct.pack_into("<I", damaged, 636, 9)
    with pytest.raises(RuntimeError, match="Half grids are not supported"):
        wp.Volume.load_from_nvdb(_nvdb_file(bytes(damaged)))


def _test_asset(name):
    spec = importlib.util.find_spec("warp")
    path = spec and os.path.join(list(spec.submodule_search_locations)[0], "tests", "assets", name)
    if not path or not os.path.exists(path):
        pytest.skip("warp-lang's test assets (a test extra) are not installed")
    return path


_TYPED_PROGRAM = '''
import numpy as np

ASSETS = {assets!r}


@wp.kernel
def probe(vf: wp.uint64, vi: wp.uint64, vv: wp.uint64, points: wp.array(dtype=wp.vec3),
          scalars: wp.array2d(dtype=float), ints: wp.array2d(dtype=int), vectors: wp.array2d(dtype=wp.vec3),
          grads: wp.array(dtype=wp.mat33)):
    t = wp.tid()
    p = points[t]
    scalars[t, 0] = wp.volume_sample(vf, p, wp.Volume.LINEAR, dtype=float)
    scalars[t, 1] = wp.volume_lookup(vf, int(p[0]), int(p[1]), int(p[2]), dtype=float)
    ints[t, 0] = wp.volume_sample_i(vi, p)
    ints[t, 1] = wp.volume_lookup(vi, int(p[0]), int(p[1]), int(p[2]), dtype=int)
    ints[t, 2] = wp.volume_sample(vi, p, wp.Volume.CLOSEST, dtype=int)
    vectors[t, 0] = wp.volume_sample_v(vv, p, wp.Volume.LINEAR)
    vectors[t, 1] = wp.volume_lookup_v(vv, int(p[0]), int(p[1]), int(p[2]))
    g = wp.mat33(0.0)
    vectors[t, 2] = wp.volume_sample_grad(vv, p, wp.Volume.LINEAR, g, dtype=wp.vec3)
    grads[t] = g


def run(wp, Tape):
    volumes = []
    for path in ASSETS:
        with open(path, "rb") as f:
            volumes.append(wp.Volume.load_from_nvdb(f))
    rng = np.random.default_rng(3)
    pts = rng.uniform(-13.0, 13.0, size=(500, 3)).astype(np.float32)  # the grids' voxels are [-10, 10]^3
    points = wp.array(pts, dtype=wp.vec3)
    scalars = wp.zeros((500, 2), dtype=float)
    ints = wp.zeros((500, 3), dtype=int)
    vectors = wp.zeros((500, 3), dtype=wp.vec3)
    grads = wp.zeros(500, dtype=wp.mat33)
    wp.launch(probe, dim=500, inputs=[v.id for v in volumes] + [points, scalars, ints, vectors, grads])
    return {{"scalars": scalars.numpy(), "ints": ints.numpy(), "vectors": vectors.numpy(), "grads": grads.numpy(),
             "counts": np.array([v.get_voxel_count() for v in volumes]),
             "tiles": np.sort(volumes[2].get_tiles().numpy(), axis=0)}}
'''


def test_typed_grids_are_warps(tmp_path):
    """float, int32 and vec3f grids (Warp's test assets) through the dtype-generic and the typed builtins."""
    assets = [_test_asset(n) for n in ("test_grid.nvdb", "test_int32_grid.nvdb", "test_vec_grid.nvdb")]
    warp, ours = _warp_reference.both(_TYPED_PROGRAM.format(assets=assets), str(tmp_path), "volume_typed")
    for key in ("scalars", "ints", "vectors", "grads", "counts", "tiles"):
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
    assert np.count_nonzero(ours["ints"][:, 0]) > 100  # not all background


@wp.kernel
def sample_vector(volume: wp.uint64, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.volume_sample(volume, points[i], wp.Volume.LINEAR, dtype=wp.vec3)


def test_vector_sampling_gradient_matches_central_differences():
    with open(_test_asset("test_vec_grid.nvdb"), "rb") as f:
        volume = wp.Volume.load_from_nvdb(f)
    rng = np.random.default_rng(4)
    # inside voxel cells, away from their faces (the trilinear field has kinks there)
    cells = rng.integers(-9, 9, size=(10, 3)) + rng.uniform(0.3, 0.7, size=(10, 3))
    points = wp.array(cells.astype(np.float32), dtype=wp.vec3)

    def fn(p):
        out = wp.zeros(p.shape[0], dtype=wp.vec3)
        wp.launch(sample_vector, dim=p.shape[0], inputs=[volume.id, p, out])
        return out

    gradcheck(fn, [points], eps=0.01)


def test_dtype_errors():
    @wp.kernel
    def bad_dtype(volume: wp.uint64, out: wp.array(dtype=float)):
        out[0] = float(wp.volume_sample(volume, wp.vec3(0.0), wp.Volume.LINEAR, dtype=wp.mat22))

    with pytest.raises(Exception, match="unsupported dtype"):
        wp.launch(bad_dtype, dim=1, inputs=[0, wp.zeros(1, dtype=float)])

    @wp.kernel
    def bad_grad(volume: wp.uint64, out: wp.array(dtype=float)):
        g = wp.vec3(0.0)
        out[0] = wp.volume_sample_grad(volume, wp.vec3(0.0), wp.Volume.LINEAR, g, dtype=wp.vec3)[0]

    with pytest.raises(Exception, match="Incompatible gradient type, expected mat33f, got vec3f"):
        wp.launch(bad_grad, dim=1, inputs=[0, wp.zeros(1, dtype=float)])


@wp.kernel
def sample_value_and_gradient(a: wp.uint64, b: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    g = wp.vec3(0.0)
    v = wp.volume_sample_grad_f(a, p[i], wp.Volume.LINEAR, g)
    gv = wp.mat33(0.0)
    w = wp.volume_sample_grad(b, p[i], wp.Volume.LINEAR, gv, dtype=wp.vec3)
    # the value and every gradient component weighted differently, so each adjoint path is exercised
    out[i] = v + 0.3 * g[0] - 0.7 * g[1] + 1.1 * g[2] + 0.5 * (w[1] + gv[0, 1] - 2.0 * gv[2, 0] + gv[1, 2])


def test_sample_grad_is_differentiable_through_its_gradient():
    """volume_sample_grad's adjoint w.r.t. uvw covers its gradient output (the field's mixed second
    derivatives), as Warp's does: central differences of value and gradient agree with the tape."""
    with open(_test_asset("test_grid.nvdb"), "rb") as f:
        scalar = wp.Volume.load_from_nvdb(f)
    with open(_test_asset("test_vec_grid.nvdb"), "rb") as f:
        vector = wp.Volume.load_from_nvdb(f)
    assert scalar.id != vector.id
    rng = np.random.default_rng(5)
    cells = rng.integers(-9, 9, size=(8, 3)) + rng.uniform(0.3, 0.7, size=(8, 3))
    points = wp.array(cells.astype(np.float32), dtype=wp.vec3)

    def fn(p):
        out = wp.zeros(p.shape[0], dtype=float)
        wp.launch(sample_value_and_gradient, dim=p.shape[0], inputs=[scalar.id, vector.id, p, out])
        return out

    gradcheck(fn, [points], eps=0.01)


MAT43D = wp.types.matrix(shape=(4, 3), dtype=wp.float64)


@wp.kernel
def store_and_lookup(volume: wp.uint64, ijk: wp.array2d(dtype=wp.int32), values: wp.array(dtype=wp.vec4d),
                     stored: wp.array(dtype=wp.vec4d), indices: wp.array(dtype=int)):
    t = wp.tid()
    wp.volume_store(volume, ijk[t, 0], ijk[t, 1], ijk[t, 2], values[t])
    stored[t] = wp.volume_lookup(volume, ijk[t, 0], ijk[t, 1], ijk[t, 2], dtype=wp.vec4d)
    indices[t] = wp.volume_lookup_index(volume, ijk[t, 0], ijk[t, 1], ijk[t, 2])


@wp.kernel
def sample_both_ways(volume: wp.uint64, values: wp.array(dtype=wp.vec4d), points: wp.array(dtype=wp.vec3),
                     sampled: wp.array(dtype=wp.vec4d), by_index: wp.array(dtype=wp.vec4d),
                     grads: wp.array(dtype=MAT43D), grads_by_index: wp.array(dtype=MAT43D)):
    t = wp.tid()
    p = points[t]
    g = MAT43D()
    sampled[t] = wp.volume_sample_grad(volume, p, wp.Volume.LINEAR, g, dtype=wp.vec4d)
    grads[t] = g
    background = wp.vec4d(-1.0, 2.0, -3.0, 5.0)
    gi = MAT43D()
    by_index[t] = wp.volume_sample_grad_index(volume, p, wp.Volume.LINEAR, values, background, gi)
    grads_by_index[t] = gi


def test_store_lookup_and_index_sampling_agree():
    """An allocated vec4d volume: values stored per voxel read back; voxel indices are the voxels' order; sampling
    the grid and sampling the same values through their indices (volume_sample_grad_index) agree, gradients
    included, and far from the allocated tiles both give the background."""
    background = wp.vec4d(-1.0, 2.0, -3.0, 5.0)
    volume = wp.Volume.allocate(min=[-9, -9, -9], max=[9, 9, 9], voxel_size=0.5, bg_value=background)
    assert volume.dtype is wp.vec4d and volume.get_grid_info().type_str == "Vec4d"
    ijk = volume.get_voxels()  # tiles -16 .. 15 on each axis
    n = ijk.shape[0]
    rng = np.random.default_rng(6)
    values = wp.array(rng.uniform(-1.0, 1.0, size=(n, 4)), dtype=wp.vec4d)
    stored = wp.zeros(n, dtype=wp.vec4d)
    indices = wp.zeros(n, dtype=int)
    wp.launch(store_and_lookup, dim=n, inputs=[volume.id, ijk, values, stored, indices])
    np.testing.assert_array_equal(stored.numpy(), values.numpy())
    np.testing.assert_array_equal(indices.numpy(), np.arange(n))
    pts = rng.uniform(-20.0, 20.0, size=(200, 3)).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3)
    out = [wp.zeros(200, dtype=wp.vec4d) for _ in range(2)] + [wp.zeros(200, dtype=MAT43D) for _ in range(2)]
    wp.launch(sample_both_ways, dim=200, inputs=[volume.id, values, points] + out)
    # the same arithmetic; multiply-add contraction may fuse the two paths differently (round-off apart)
    np.testing.assert_allclose(out[1].numpy(), out[0].numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[3].numpy(), out[2].numpy(), rtol=1e-12, atol=1e-12)
    far = np.any((pts > 16.0) | (pts < -17.0), axis=1)  # every corner outside the tiles
    assert far.any() and (~far).any()
    # (trilinear weights are float32 and sum to 1 within its rounding)
    np.testing.assert_allclose(out[0].numpy()[far], np.tile(np.array(background), (far.sum(), 1)), rtol=1e-6)
    assert np.abs(out[2].numpy()[~far]).max() > 0.1  # gradients inside are not all zero


@wp.kernel
def sample_index_scalar(volume: wp.uint64, values: wp.array(dtype=float), background: wp.array(dtype=float),
                        points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    t = wp.tid()
    out[t] = wp.volume_sample_index(volume, points[t], wp.Volume.LINEAR, values, background[0])


def test_sample_index_gradients_match_central_differences():
    """volume_sample_index of an index grid (allocate_by_tiles, bg_value None): gradients w.r.t. the points, the
    voxel values and the background by central differences."""
    tiles = wp.array(np.array([[0, 0, 0], [8, 0, 0]], dtype=np.int32), dtype=wp.int32)
    volume = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=None)
    assert volume.is_index and volume.get_voxel_count() == 1024
    rng = np.random.default_rng(7)
    values = wp.array(rng.uniform(-1.0, 1.0, size=1024), dtype=float)
    background = wp.array([0.25], dtype=float)
    # inside cells, some straddling the allocated tiles' edge (the background enters there)
    cells = rng.integers([-1, 0, 0], [16, 7, 7], size=(12, 3)) + rng.uniform(0.3, 0.7, size=(12, 3))
    points = wp.array(cells.astype(np.float32), dtype=wp.vec3)

    def fn(v, b, p):
        out = wp.zeros(p.shape[0], dtype=float)
        wp.launch(sample_index_scalar, dim=p.shape[0], inputs=[volume.id, v, b, p, out])
        return out

    gradcheck(fn, [values, background, points], eps=0.01)


@wp.kernel
def sample_index_with_gradient(volume: wp.uint64, values: wp.array(dtype=wp.vec3), background: wp.array(dtype=wp.vec3),
                               points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    t = wp.tid()
    g = values.dtype(0.0) * 0.0  # an argument's element type, constructed as Warp's volume tests do
    grad = wp.mat33()
    v = wp.volume_sample_grad_index(volume, points[t], wp.Volume.LINEAR, values, background[0], grad)
    zero = type(grad)()
    grad = grad + zero
    out[t] = wp.dot(v + g, wp.vec3(1.0, -2.0, 0.5)) + grad[0, 1] - 0.5 * grad[2, 0] + 0.3 * grad[1, 2] + grad[1, 1]


def test_sample_grad_index_gradients_match_central_differences():
    """volume_sample_grad_index is differentiable through its value and its gradient output, w.r.t. the points
    (mixed second derivatives), the voxel values and the background; `a.dtype(...)` and `type(v)()` construct."""
    tiles = wp.array(np.array([[0, 0, 0], [0, 8, 0]], dtype=np.int32), dtype=wp.int32)
    volume = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=None)
    rng = np.random.default_rng(8)
    values = wp.array(rng.uniform(-1.0, 1.0, size=(1024, 3)), dtype=wp.vec3)
    background = wp.array([[0.25, -0.5, 1.0]], dtype=wp.vec3)
    cells = rng.integers([0, -1, 0], [7, 16, 7], size=(10, 3)) + rng.uniform(0.3, 0.7, size=(10, 3))
    points = wp.array(cells.astype(np.float32), dtype=wp.vec3)

    def fn(v, b, p):
        out = wp.zeros(p.shape[0], dtype=float)
        wp.launch(sample_index_with_gradient, dim=p.shape[0], inputs=[volume.id, v, b, p, out])
        return out

    gradcheck(fn, [values, background, points], eps=0.01)


_ALLOCATION_PROGRAM = '''
import numpy as np


@wp.kernel
def probe(volume: wp.uint64, ijk: wp.array2d(dtype=wp.int32), indices: wp.array(dtype=int),
          counts: wp.array(dtype=int)):
    t = wp.tid()
    indices[t] = wp.volume_lookup_index(volume, ijk[t, 0], ijk[t, 1], ijk[t, 2])
    if t == 0:
        counts[0] = wp.volume_voxel_count(volume)


@wp.kernel
def store_lookup(volume: wp.uint64, ijk: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.vec3d)):
    t = wp.tid()
    v = wp.vec3d(wp.float64(ijk[t, 0]), wp.float64(0.5) * wp.float64(ijk[t, 1]), wp.float64(ijk[t, 2] - 1))
    wp.volume_store(volume, ijk[t, 0], ijk[t, 1], ijk[t, 2], v)
    out[t] = wp.volume_lookup(volume, ijk[t, 0] + 1, ijk[t, 1], ijk[t, 2], dtype=wp.vec3d)


def run(wp, Tape):
    rng = np.random.default_rng(9)
    pts = rng.integers(-200, 200, size=(60, 3)).astype(np.int32)
    queries = np.concatenate([pts, pts + 1, rng.integers(-300, 300, size=(200, 3))]).astype(np.int32)
    q = wp.array(queries, dtype=wp.int32)
    out = {{}}
    volumes = {{
        "voxels": wp.Volume.allocate_by_voxels(wp.array(pts, dtype=wp.int32), voxel_size=0.5),
        "tiles": wp.Volume.allocate_by_tiles(wp.array(pts, dtype=wp.int32), voxel_size=0.5, bg_value=None),
        "vec3d": wp.Volume.allocate_by_tiles(wp.array(pts, dtype=wp.int32), voxel_size=(0.5, 0.25, 1.0),
                                             bg_value=wp.vec3d(1.0, -2.0, 3.0)),
    }}
    for name, volume in volumes.items():
        indices = wp.zeros(len(queries), dtype=int)
        counts = wp.zeros(1, dtype=int)
        wp.launch(probe, dim=len(queries), inputs=[volume.id, q, indices, counts])
        voxels = volume.get_voxels().numpy()
        out[name + "_indices"] = indices.numpy()
        out[name + "_count"] = np.array([counts.numpy()[0], volume.get_voxel_count()])
        out[name + "_voxels"] = voxels[np.lexsort(voxels.T[::-1])]
        out[name + "_stats"] = np.array(tuple(volume.get_active_stats()))
    values = wp.zeros(len(queries), dtype=wp.vec3d)
    wp.launch(store_lookup, dim=len(queries), inputs=[volumes["vec3d"].id, q, values])
    out["vec3d_values"] = values.numpy()
    return out
'''


def test_allocation_is_warps(tmp_path):
    """Index grids of voxels and of tiles and a vec3d grid allocated from the same points by real Warp and by
    kernels: voxel indices, counts, voxel lists, active statistics and stored values agree exactly."""
    warp, ours = _warp_reference.both(_ALLOCATION_PROGRAM.format(), str(tmp_path), "volume_allocation")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
    assert (ours["voxels_indices"] >= 0).sum() >= 60 and (ours["voxels_indices"] < 0).sum() > 100


def test_rebuild_in_place():
    """A rebuildable tile volume keeps its id and size over rebuilds; a topology beyond its capacity sets the
    status flags and leaves it unchanged; the in-kernel voxel count follows the topology."""
    status = wp.zeros(1, dtype=wp.uint32)
    first = wp.array(np.array([[0, 0, 0]], dtype=np.int32), dtype=wp.int32)
    volume = wp.Volume.allocate_by_tiles(first, voxel_size=1.0, bg_value=1.5, rebuildable=True, max_tiles=3,
                                         max_lower_nodes=2, max_upper_nodes=2, status=status)
    assert int(status.numpy()[0]) == wp.Volume.REBUILD_SUCCESS
    assert volume.get_rebuild_info() == wp.Volume.RebuildInfo("tiles", 3 * 512, 3, 2, 2)
    ident, size = volume.id, volume.get_grid_info().size_in_bytes
    second = wp.array(np.array([[8, 0, 0], [0, 200, 0], [9, 1, 1]], dtype=np.int32), dtype=wp.int32)
    volume.rebuild(second, status=status)
    assert int(status.numpy()[0]) == wp.Volume.REBUILD_SUCCESS
    assert (volume.id, volume.get_grid_info().size_in_bytes) == (ident, size)
    assert volume.get_active_stats() == wp.Volume.ActiveStats(1024, 2, 2, 1)
    tiles = volume.get_tiles().numpy()
    np.testing.assert_array_equal(tiles[np.lexsort(tiles.T[::-1])], [[0, 200, 0], [8, 0, 0]])
    too_many = wp.array(np.array([[0, 0, 0], [8, 0, 0], [16, 0, 0], [24, 0, 0]], dtype=np.int32), dtype=wp.int32)
    volume.rebuild(too_many, status=status)
    assert int(status.numpy()[0]) & wp.Volume.REBUILD_LEAF_CAPACITY_EXCEEDED
    assert volume.get_active_stats() == wp.Volume.ActiveStats(1024, 2, 2, 1)  # unchanged
    with pytest.raises(RuntimeError, match="not rebuildable"):
        wp.Volume.allocate_by_tiles(first, voxel_size=1.0).rebuild(first)
