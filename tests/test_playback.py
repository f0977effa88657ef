"""sim.playback: USD files read back as tracks, checked against what was written and what was simulated."""

import os

import numpy as np
import pytest

pytest.importorskip("pxr")

from pxr import Usd, UsdGeom  # noqa: E402

from sim import playback  # noqa: E402
from sim.scene import Scene  # noqa: E402
from sim.usd import UsdWriter  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = ("cloth", "particles", "rigid_stack", "arm", "cloth_on_mesh")


def _rotate(q, v):
    """v rotated by the unit quaternion q = (x, y, z, w), by the matrix of its components (no library helper)."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return np.asarray(v, float) @ r.T


def _track(pb, suffix):
    (track,) = [t for t in pb.tracks if t.name.endswith(suffix)]
    return track


def test_written_prims_come_back_where_they_were_put(tmp_path):
    path = tmp_path / "all.usda"
    rot = (0.0, 0.0, np.sin(0.3), np.cos(0.3))
    cloth0 = np.array([[0, 1, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1]], np.float32)
    with UsdWriter(path, fps=30, up_axis="z") as w:
        w.add_mesh("cloth", cloth0, [[0, 1, 2, 3]], color=(0.1, 0.2, 0.3))
        w.add_points("sand", np.zeros((3, 3)), radii=[0.01, 0.02, 0.03])
        w.add_collider("wall", kind="box", pos=(1, 2, 3), rot=rot, half_extents=(0.1, 0.2, 0.3))
        w.add_collider("pill", kind="capsule", pos=(0, 0, 1), radius=0.1, half_height=0.2)
        w.add_collider("floor", kind="plane", rot=(np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)))
        w.add_body("crate", shapes=[dict(kind="sphere", radius=0.5, pos=(0, 0, 1))])
        for frame in range(4):
            w.write_frame(frame, points={"cloth": cloth0 + frame, "sand": np.full((3, 3), frame * 0.5)},
                          bodies={"crate": ((frame, 0, 0), rot)})
    pb = playback.load(path)
    assert pb.frame_count == 4 and pb.fps == 30 and pb.up_axis == "Z"
    np.testing.assert_array_equal(pb.times, [0, 1, 2, 3])

    cloth = _track(pb, "cloth")
    assert cloth.kind == "mesh" and cloth.positions.shape == (4, 4, 3) and cloth.transforms is None
    np.testing.assert_allclose(cloth.world_vertices(2), cloth0 + 2)
    np.testing.assert_allclose(cloth.color, (0.1, 0.2, 0.3), atol=1e-6)
    assert sorted(map(tuple, np.sort(cloth.faces, axis=1))) == [(0, 1, 2), (0, 2, 3)]  # the quad as two triangles

    sand = _track(pb, "sand")
    assert sand.kind == "points" and sand.faces is None
    np.testing.assert_allclose(sand.radii, [0.01, 0.02, 0.03], rtol=1e-6)
    np.testing.assert_allclose(sand.world_vertices(3), np.full((3, 3), 1.5))

    wall = _track(pb, "wall")  # static: its vertices are world positions, the box's corners rotated and moved
    assert wall.is_static and not wall.is_ground
    corners = np.array([[sx * 0.1, sy * 0.2, sz * 0.3] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    expected = _rotate(rot, corners) + (1, 2, 3)
    got = np.unique(np.round(wall.world_vertices(0), 5), axis=0)
    np.testing.assert_allclose(got, np.unique(np.round(expected, 5), axis=0), atol=2e-5)

    pill = _track(pb, "pill")
    low, high = pill.bounds(0, 1)
    np.testing.assert_allclose(low, (-0.1, -0.3, 0.9), atol=1e-5)  # the capsule's axis is local y
    np.testing.assert_allclose(high, (0.1, 0.3, 1.1), atol=1e-5)

    floor = _track(pb, "floor")  # a plane turned from +y to +z: the ground of a z-up stage
    assert floor.is_ground and floor.world_vertices(0)[:, 2].max() < 1e-6

    crate = _track(pb, "crate/shape_0")
    assert crate.transforms.shape == (4, 4, 4) and crate.positions is None
    for frame in range(4):
        centre = crate.world_vertices(frame).mean(axis=0)
        np.testing.assert_allclose(centre, _rotate(rot, (0, 0, 1)) + (frame, 0, 0), atol=1e-5)
        radius = np.linalg.norm(crate.world_vertices(frame) - centre, axis=1)
        np.testing.assert_allclose(radius, 0.5, rtol=1e-5)

    low, high = pb.bounds()
    assert low[0] <= -0.49 and high[0] >= 3.49 and high[2] >= 3.3  # the crate's path, the cloth's last frame
    low1, high1 = pb.bounds(0, 1)
    assert high1[0] < high[0]
    ground_low, _ = pb.bounds(include_ground=True)
    assert ground_low[0] <= -10 + 1e-5


@pytest.mark.parametrize("kind,size,volume", [
    ("sphere", dict(radius=0.5), 4 / 3 * np.pi * 0.125),
    ("capsule", dict(radius=0.5, half_height=1.0), 4 / 3 * np.pi * 0.125 + np.pi * 0.25 * 2.0),
    ("box", dict(half_extents=(0.1, 0.2, 0.3)), 0.2 * 0.4 * 0.6),
])
def test_shapes_are_closed_outward_and_of_the_right_volume(kind, size, volume):
    v, f = playback.shape_triangles(kind, **size)
    assert v.dtype == np.float32 and f.dtype == np.int32
    # closed: every directed edge has its reverse in another face (vertices welded by position: a box's faces
    # have vertices of their own)
    _, welded = np.unique(np.round(v, 6), axis=0, return_inverse=True)
    w = welded.reshape(-1)[f]
    edges = {(int(a), int(b)) for tri in w for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0]))}
    assert len(edges) == 3 * len(f) and all((b, a) in edges for a, b in edges)
    # outward and of the right size: the divergence theorem gives the volume from the oriented faces
    p = v[f].astype(np.float64)
    signed = np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6
    assert signed == pytest.approx(volume, rel=0.03 if kind != "box" else 1e-6)


def test_plane_faces_up_and_unknown_kind_is_refused():
    v, f = playback.shape_triangles("plane", width=2, length=3)
    p = v[f]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert np.all(n[:, 1] > 0) and v[:, 0].max() == 2 and v[:, 2].max() == 3
    with pytest.raises(ValueError, match="unknown shape kind 'cone'"):
        playback.shape_triangles("cone", radius=1)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """Each shipped scene run for 3 frames: its USD path and its final simulation state."""
    folder = tmp_path_factory.mktemp("shipped")
    runs = {}
    for name in SHIPPED:
        out = folder / f"{name}.usd"
        scene = Scene.load(os.path.join(ROOT, "scenes", f"{name}.yaml"))
        result = scene.run(frames=3, out=str(out), progress=False)
        runs[name] = (out, scene, result.state)
    return runs


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_scenes_play_back_as_simulated(name, shipped):
    out, scene, state = shipped[name]
    pb = playback.load(out)
    assert pb.frame_count == 4 and pb.fps == scene.spec.sim.fps
    assert pb.up_axis == scene.spec.sim.up_axis.upper()
    built = scene.build("cpu")
    q = state.particle_q.numpy()
    for obj in built.objects:  # particles and cloth: the last frame is the final state
        track = _track(pb, "/" + obj.name)
        assert track.kind == ("mesh" if obj.kind == "cloth" else "points")
        np.testing.assert_allclose(track.world_vertices(3), q[obj.start:obj.stop], atol=1e-6)
    body_q = state.body_q.numpy() if built.bodies else None
    for body in built.bodies:  # the centre of each body's shape is at its simulated pose
        tracks = [t for t in pb.tracks if f"/{body.name}/" in t.name]
        assert len(tracks) == len(body.shapes)
        for track, shape in zip(tracks, body.shapes):
            centre = 0.5 * (track.world_vertices(3).min(axis=0) + track.world_vertices(3).max(axis=0))
            offset = _rotate(body_q[body.index, 3:], shape.get("pos", (0, 0, 0)))
            # every tessellated shape is point-symmetric about its centre, so its box's centre is that centre
            np.testing.assert_allclose(centre, body_q[body.index, :3] + offset, atol=1e-5)
    grounds = [t for t in pb.tracks if t.is_ground]
    assert len(grounds) == (0 if name == "arm" else 1)
    low, high = pb.bounds()
    assert np.all(low < high)


def test_bad_files_are_one_line_errors(tmp_path):
    with pytest.raises(playback.PlaybackError, match=r"missing.usd: no such file"):
        playback.load(tmp_path / "missing.usd")
    with pytest.raises(playback.PlaybackError, match="is a directory"):
        playback.load(tmp_path)
    junk = tmp_path / "junk.usd"
    junk.write_text("this is not USD\n")
    with pytest.raises(playback.PlaybackError, match=r"junk.usd: not a USD file") as e:
        playback.load(junk)
    assert "\n" not in str(e.value)
    still = tmp_path / "still.usda"
    with UsdWriter(still) as w:
        w.add_collider("ball", kind="sphere", radius=1)
    with pytest.raises(playback.PlaybackError, match="still.usda: the file has no time samples"):
        playback.load(still)


def test_a_mesh_whose_point_count_changes_is_refused(tmp_path):
    path = str(tmp_path / "grow.usda")
    stage = Usd.Stage.CreateNew(path)
    mesh = UsdGeom.Mesh.Define(stage, "/m")
    mesh.CreateFaceVertexCountsAttr([3])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2])
    mesh.CreatePointsAttr().Set([(0, 0, 0), (1, 0, 0), (0, 1, 0)], 0)
    mesh.GetPointsAttr().Set([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)], 1)
    stage.Save()
    with pytest.raises(playback.PlaybackError, match="number of points changes over time"):
        playback.load(path)
