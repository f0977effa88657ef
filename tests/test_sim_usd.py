"""sim.usd.UsdWriter: stage metadata, time-sampled meshes, points and bodies read back with pxr, collider prims and
their world transforms, validation of a file with every prim type, atomic writes, and the input errors."""

import os

import numpy as np
import pytest

pxr = pytest.importorskip("pxr")
from pxr import Gf, Usd, UsdGeom  # noqa: E402

from sim.usd import UsdWriter, validation_errors, vertex_normals  # noqa: E402
import sim.usd  # noqa: E402


def _grid(n=4):
    """An n x n vertex grid in the x-z plane at y = 1 [m] and its 2 (n-1)^2 triangles (normals +y)."""
    x, z = np.meshgrid(np.linspace(0.0, 1.0, n), np.linspace(0.0, 1.0, n))
    points = np.stack([x.ravel(), np.ones(n * n), z.ravel()], axis=1)
    index = np.arange(n * n).reshape(n, n)
    a, b, c, d = index[:-1, :-1].ravel(), index[:-1, 1:].ravel(), index[1:, 1:].ravel(), index[1:, :-1].ravel()
    return points, np.concatenate([np.stack([a, d, b], 1), np.stack([b, d, c], 1)])


def _rotation(q):
    """3x3 rotation matrix of the quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _world(prim, local, time=Usd.TimeCode.Default()):
    """`local` (3,) mapped to world space by the prim's local-to-world transform."""
    matrix = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(time)
    return np.array(matrix.Transform(Gf.Vec3d(*map(float, local))))


ROT = (0.1, 0.7, -0.2, 0.6)  # not normalised on purpose: the writer normalises


def _write_everything(path, *, frames=(0, 1, 2), fps=24.0, up_axis="y", float_type=np.float64):
    """A file with every prim type; returns the cloth and particle positions written per frame and the body poses."""
    points, faces = _grid()
    points = points.astype(float_type)
    rng = np.random.default_rng(0)
    particles = rng.uniform(-1, 1, (5, 3)).astype(float_type)
    w = UsdWriter(path, fps=fps, up_axis=up_axis, meters_per_unit=0.01)
    assert w.add_mesh("cloth 0", points, faces, normals=True, color=(0.8, 0.3, 0.2)) == "/World/cloth_0"
    assert w.add_points("particles", particles, np.linspace(0.01, 0.05, 5)) == "/World/particles"
    assert w.add_points("dust", particles, 0.02, color=(0.5, 0.5, 0.5)) == "/World/dust"
    assert w.add_collider("sphere", kind="sphere", pos=(0, 1, 0), radius=0.4) == "/World/sphere"
    assert w.add_collider("box", kind="box", pos=(1, 2, 3), rot=ROT, half_extents=(0.1, 0.2, 0.3)) == "/World/box"
    assert w.add_collider("1capsule", kind="capsule", rot=ROT, radius=0.1, half_height=0.5) == "/World/_1capsule"
    assert w.add_collider("ground", kind="plane") == "/World/ground"
    assert w.add_collider("ground", kind="plane", width=2.0, length=3.0, pos=(0, -1, 0)) == "/World/ground_1"
    shapes = [dict(kind="box", pos=(0.5, 0, 0), rot=ROT, half_extents=(0.1, 0.2, 0.3)),
              dict(kind="sphere", radius=0.2, name="head"),
              dict(kind="mesh", name="hull", pos=(0, 0, 1), points=_grid(2)[0], faces=_grid(2)[1], scale=(2, 1, 3))]
    assert w.add_body("body", shapes) == "/World/body"
    cloth, dots, poses = {}, {}, {}
    for frame in frames:
        cloth[frame] = points + rng.normal(0, 0.1, points.shape).astype(float_type)
        dots[frame] = particles + frame
        poses[frame] = (np.array([frame, 2.0 * frame, 0.5]), rng.normal(size=4))
        w.write_frame(frame, points={"cloth 0": cloth[frame], "/World/particles": dots[frame]},
                      bodies={"body": poses[frame]})
    assert w.close() == os.fspath(path) and w.closed
    return faces, cloth, dots, poses


def test_stage_metadata(tmp_path):
    path = tmp_path / "out" / "sim.usd"  # the directory is created
    _write_everything(path, frames=(3, 4, 7), fps=24.0, up_axis="Z")
    stage = Usd.Stage.Open(str(path))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 0.01
    assert stage.GetTimeCodesPerSecond() == 24.0 and stage.GetFramesPerSecond() == 24.0
    assert stage.GetStartTimeCode() == 3.0 and stage.GetEndTimeCode() == 7.0
    assert stage.GetDefaultPrim().GetPath() == "/World" and stage.GetDefaultPrim().IsA(UsdGeom.Xform)
    with open(path, "rb") as f:
        assert f.read(8) == b"PXR-USDC"  # .usd is written as a binary crate


@pytest.mark.parametrize("float_type", [np.float32, np.float64])
def test_mesh_and_points_time_samples(tmp_path, float_type):
    path = tmp_path / "sim.usdc"
    faces, cloth, dots, _ = _write_everything(path, float_type=float_type)
    stage = Usd.Stage.Open(str(path))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/cloth_0"))
    assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * len(faces)
    np.testing.assert_array_equal(np.array(mesh.GetFaceVertexIndicesAttr().Get()), faces.ravel())
    assert mesh.GetFaceVertexIndicesAttr().GetNumTimeSamples() == 0  # topology written once
    assert mesh.GetPointsAttr().GetTimeSamples() == [0.0, 1.0, 2.0]
    assert mesh.GetNormalsInterpolation() == UsdGeom.Tokens.vertex
    assert mesh.GetDoubleSidedAttr().Get() is True and mesh.GetSubdivisionSchemeAttr().Get() == "none"
    np.testing.assert_allclose(np.array(mesh.GetDisplayColorAttr().Get()), [[0.8, 0.3, 0.2]], rtol=1e-6)
    points = UsdGeom.Points(stage.GetPrimAtPath("/World/particles"))
    widths = np.array(points.GetWidthsAttr().Get())
    np.testing.assert_allclose(widths, 2 * np.linspace(0.01, 0.05, 5), rtol=1e-6)
    assert points.GetWidthsInterpolation() == UsdGeom.Tokens.vertex
    for frame, expected in cloth.items():
        time = Usd.TimeCode(frame)
        got = np.array(mesh.GetPointsAttr().Get(time))
        np.testing.assert_array_equal(got, expected.astype(np.float32))
        np.testing.assert_allclose(np.array(mesh.GetExtentAttr().Get(time)),
                                   [expected.min(0), expected.max(0)], rtol=1e-6)
        np.testing.assert_allclose(np.array(mesh.GetNormalsAttr().Get(time)), vertex_normals(expected, faces),
                                   atol=1e-6)
        np.testing.assert_array_equal(np.array(points.GetPointsAttr().Get(time)), dots[frame].astype(np.float32))
        # a Points extent encloses the spheres: half the largest width beyond the centres
        np.testing.assert_allclose(np.array(points.GetExtentAttr().Get(time)),
                                   [dots[frame].min(0) - 0.05, dots[frame].max(0) + 0.05], rtol=1e-6)
    dust = UsdGeom.Points(stage.GetPrimAtPath("/World/dust"))
    assert dust.GetWidthsInterpolation() == UsdGeom.Tokens.constant
    np.testing.assert_allclose(np.array(dust.GetWidthsAttr().Get()), [0.04], rtol=1e-6)
    assert dust.GetPointsAttr().GetNumTimeSamples() == 0  # never named in a frame: its initial value only


def test_collider_prims_and_transforms(tmp_path):
    path = tmp_path / "sim.usda"
    _write_everything(path)
    stage = Usd.Stage.Open(str(path))
    sphere = UsdGeom.Sphere(stage.GetPrimAtPath("/World/sphere"))
    assert sphere.GetRadiusAttr().Get() == pytest.approx(0.4)
    np.testing.assert_allclose(_world(sphere, (0, 0, 0)), [0, 1, 0])

    box = UsdGeom.Cube(stage.GetPrimAtPath("/World/box"))
    assert box.GetSizeAttr().Get() == 2.0
    half = np.array([0.1, 0.2, 0.3])
    for corner in ([1, 1, 1], [-1, 1, -1], [1, -1, 1]):
        np.testing.assert_allclose(_world(box, corner), np.array([1, 2, 3]) + _rotation(ROT) @ (half * corner),
                                   atol=1e-6)

    capsule = UsdGeom.Capsule(stage.GetPrimAtPath("/World/_1capsule"))
    assert capsule.GetAxisAttr().Get() == "Y"
    assert capsule.GetRadiusAttr().Get() == pytest.approx(0.1)
    assert capsule.GetHeightAttr().Get() == pytest.approx(1.0)
    # the segment's end (0, half_height, 0) along the rotated local y
    np.testing.assert_allclose(_world(capsule, (0, 0.5, 0)), _rotation(ROT) @ [0, 0.5, 0], atol=1e-6)
    np.testing.assert_allclose(np.array(capsule.GetExtentAttr().Get()), [[-0.1, -0.6, -0.1], [0.1, 0.6, 0.1]],
                               rtol=1e-6)

    infinite = UsdGeom.Plane(stage.GetPrimAtPath("/World/ground"))
    assert infinite.GetAxisAttr().Get() == "Y"
    assert infinite.GetWidthAttr().Get() == 20.0 and infinite.GetLengthAttr().Get() == 20.0
    finite = UsdGeom.Plane(stage.GetPrimAtPath("/World/ground_1"))
    assert finite.GetWidthAttr().Get() == 4.0 and finite.GetLengthAttr().Get() == 6.0  # twice the half extents
    np.testing.assert_allclose(_world(finite, (0, 0, 0)), [0, -1, 0])


def test_body_time_samples_and_shapes(tmp_path):
    path = tmp_path / "sim.usda"
    _, _, _, poses = _write_everything(path)
    stage = Usd.Stage.Open(str(path))
    body = UsdGeom.Xform(stage.GetPrimAtPath("/World/body"))
    ops = body.GetOrderedXformOps()
    assert [op.GetOpType() for op in ops] == [UsdGeom.XformOp.TypeTranslate, UsdGeom.XformOp.TypeOrient]
    assert ops[0].GetTimeSamples() == [0.0, 1.0, 2.0] and ops[1].GetTimeSamples() == [0.0, 1.0, 2.0]
    box = stage.GetPrimAtPath("/World/body/shape_0")
    assert box.IsA(UsdGeom.Cube) and stage.GetPrimAtPath("/World/body/head").IsA(UsdGeom.Sphere)
    hull = UsdGeom.Mesh(stage.GetPrimAtPath("/World/body/hull"))
    assert len(hull.GetPointsAttr().Get()) == 4 and list(hull.GetFaceVertexCountsAttr().Get()) == [3, 3]
    assert hull.GetPointsAttr().GetNumTimeSamples() == 0
    half = np.array([0.1, 0.2, 0.3])
    for frame, (pos, quat) in poses.items():
        time = Usd.TimeCode(frame)
        np.testing.assert_allclose(np.array(ops[0].Get(time)), pos)
        q = ops[1].Get(time)
        expected = np.asarray(quat) / np.linalg.norm(quat)
        np.testing.assert_allclose([*q.GetImaginary(), q.GetReal()], expected, atol=1e-6)
        # body pose composed with the shape's local pose
        corner = pos + _rotation(quat) @ (np.array([0.5, 0, 0]) + _rotation(ROT) @ half)
        np.testing.assert_allclose(_world(box, (1, 1, 1), time), corner, atol=1e-5)
        # a mesh's points scaled in its own frame, then placed on the body
        np.testing.assert_allclose(_world(hull.GetPrim(), (1, 1, 1), time),
                                   pos + _rotation(quat) @ np.array([2.0, 1.0, 4.0]), atol=1e-5)


@pytest.mark.parametrize("name", ["sim.usd", "sim.usda"])
def test_file_with_every_prim_type_validates(tmp_path, name):
    _write_everything(tmp_path / name)
    assert validation_errors(tmp_path / name) == []


def test_validator_catches_missing_metadata(tmp_path):
    # the check above is only worth something if the validators see this kind of mistake
    stage = Usd.Stage.CreateNew(str(tmp_path / "bare.usda"))
    UsdGeom.Xform.Define(stage, "/World")
    stage.Save()
    assert validation_errors(tmp_path / "bare.usda")


def test_usda_is_text_and_zero_frames_is_valid(tmp_path):
    points, faces = _grid(3)
    w = UsdWriter(tmp_path / "still.usda", fps=30.0, root="Scene")
    w.add_mesh("cloth", points, faces)
    path = w.close()
    text = open(path).read()
    assert text.startswith("#usda 1.0") and 'defaultPrim = "Scene"' in text
    stage = Usd.Stage.Open(path)
    assert stage.GetStartTimeCode() == 0.0 and stage.GetEndTimeCode() == 0.0
    np.testing.assert_array_equal(np.array(UsdGeom.Mesh(stage.GetPrimAtPath("/Scene/cloth")).GetPointsAttr().Get()),
                                  points.astype(np.float32))
    assert validation_errors(path) == []


def _temporary_files(directory):
    return [name for name in os.listdir(directory) if ".tmp" in name]


def test_failed_export_leaves_nothing(tmp_path, monkeypatch):
    def half_written_then_crash(layer, path, file_format):
        with open(path, "wb") as f:
            f.write(b"PXR-USDC half a file")
        raise OSError("disk full")

    monkeypatch.setattr(sim.usd, "_export_layer", half_written_then_crash)
    path = tmp_path / "sim.usd"
    with pytest.raises(OSError, match="disk full"):
        _write_everything(path)
    assert os.listdir(tmp_path) == []

    path.write_bytes(b"previous run")
    with pytest.raises(OSError, match="disk full"):
        _write_everything(path)
    assert path.read_bytes() == b"previous run" and _temporary_files(tmp_path) == []


def test_interrupted_close_can_be_retried(tmp_path, monkeypatch):
    w = UsdWriter(tmp_path / "sim.usd")
    w.add_points("p", np.zeros((2, 3)), 0.1)
    w.write_frame(0, points={"p": np.ones((2, 3))})
    real_export = sim.usd._export_layer

    def interrupted(layer, path, file_format):
        open(path, "wb").close()
        raise KeyboardInterrupt

    monkeypatch.setattr(sim.usd, "_export_layer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        w.close()
    assert os.listdir(tmp_path) == [] and not w.closed
    monkeypatch.setattr(sim.usd, "_export_layer", real_export)
    assert Usd.Stage.Open(w.close()).GetEndTimeCode() == 0.0


def test_abort_and_context_manager(tmp_path):
    w = UsdWriter(tmp_path / "sub" / "aborted.usd")
    w.add_points("p", np.zeros((2, 3)), 0.1)
    w.abort()
    w.abort()
    assert os.listdir(tmp_path) == []
    with pytest.raises(RuntimeError, match="closed"):
        w.write_frame(0, points={"p": np.zeros((2, 3))})
    with pytest.raises(RuntimeError, match="closed"):
        w.close()

    with pytest.raises(ZeroDivisionError):
        with UsdWriter(tmp_path / "crashed.usd") as w:
            w.add_points("p", np.zeros((2, 3)), 0.1)
            1 / 0
    assert os.listdir(tmp_path) == []
    with UsdWriter(tmp_path / "ok.usda") as w:
        w.add_points("p", np.zeros((2, 3)), 0.1)
    assert os.listdir(tmp_path) == ["ok.usda"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(path="sim.abc"), "unsupported USD extension '.abc'"),
    (dict(path="sim"), "unsupported USD extension"),
    (dict(up_axis="x"), "USD stages support only the Y and Z up axes"),
    (dict(up_axis="w"), "up_axis must be 'y' or 'z'"),
    (dict(fps=0.0), "fps must be a positive number"),
    (dict(meters_per_unit=-1.0), "meters_per_unit must be a positive number"),
])
def test_constructor_errors(tmp_path, kwargs, message):
    path = tmp_path / kwargs.pop("path", "sim.usd")
    with pytest.raises(ValueError, match=message):
        UsdWriter(path, **kwargs)


def test_frames_must_increase(tmp_path):
    w = UsdWriter(tmp_path / "sim.usd")
    w.add_points("p", np.zeros((2, 3)), 0.1)
    w.write_frame(2, points={"p": np.zeros((2, 3))})
    w.write_frame(5, points={"p": np.zeros((2, 3))})  # gaps are fine
    for frame in (5, 4):
        with pytest.raises(ValueError, match=f"frame {frame} is not after the previous frame 5"):
            w.write_frame(frame, points={"p": np.zeros((2, 3))})
    w.abort()


def test_bad_frame_input_writes_nothing(tmp_path):
    w = UsdWriter(tmp_path / "sim.usda")
    w.add_points("p", np.zeros((2, 3)), 0.1)
    w.add_body("b", [dict(kind="sphere", radius=1.0)])
    cases = [
        (dict(points={"q": np.zeros((2, 3))}), r"no mesh or points named 'q' \(known: p\)"),
        (dict(points={"p": np.zeros((3, 3))}), r"expected shape \(2, 3\), got \(3, 3\)"),
        (dict(points={"p": np.full((2, 3), np.nan)}), "2 point\\(s\\) are not finite"),
        (dict(points={"p": np.ones((2, 3))}, bodies={"b": ((0, 0, 0), (0, 0, 0, 0))}), "zero quaternion"),
        (dict(bodies={"b": (0, 0, 0)}), r"expected \(pos, quat\)"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            w.write_frame(1, **kwargs)
    path = w.close()
    stage = Usd.Stage.Open(path)
    assert stage.GetPrimAtPath("/World/p").GetAttribute("points").GetNumTimeSamples() == 0
    assert stage.GetEndTimeCode() == 0.0


def test_add_errors_leave_no_prim(tmp_path):
    w = UsdWriter(tmp_path / "sim.usda")
    points, faces = _grid(2)
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 4\)"):
        w.add_mesh("cloth", points, faces + 1)
    with pytest.raises(ValueError, match="kind must be one of sphere, box, capsule, plane"):
        w.add_collider("c", kind="cylinder", radius=1.0)
    with pytest.raises(ValueError, match="unknown parameter\\(s\\) half_extent; a box takes half_extents"):
        w.add_collider("c", kind="box", half_extent=(1, 1, 1))
    with pytest.raises(ValueError, match="missing parameter 'radius'"):
        w.add_collider("c", kind="sphere")
    with pytest.raises(ValueError, match="radius must be a positive number"):
        w.add_body("b", [dict(kind="capsule", radius=-1.0, half_height=1.0)])
    with pytest.raises(ValueError, match=r"body 'b' shape 0 \(mesh\) faces: indices must lie in \[0, 4\)"):
        w.add_body("b", [dict(kind="mesh", points=points, faces=faces + 1)])
    with pytest.raises(ValueError, match=r"\(mesh\): missing parameter 'faces'"):
        w.add_body("b", [dict(kind="mesh", points=points)])
    with pytest.raises(ValueError, match="radii must be"):
        w.add_points("p", points, [0.1, 0.2])
    w.add_points("p", points, 0.1)
    with pytest.raises(ValueError, match="'p' is already used"):
        w.add_mesh("p", points, faces)
    stage = Usd.Stage.Open(w.close())
    assert [str(p.GetPath()) for p in stage.Traverse()] == ["/World", "/World/p"]


def test_vertex_normals_are_area_weighted():
    # two triangles hinged on the edge 0-1 along x, the second twice the area of the first
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 1], [0, 2, -2]], float)
    normals = vertex_normals(points, np.array([[0, 1, 2], [0, 3, 1]]))
    n1, n2 = np.array([0, -1, 1]) / np.sqrt(2), np.array([0, -1, -1]) / np.sqrt(2)
    a1, a2 = np.sqrt(2) / 2, np.sqrt(8) / 2
    expected = (a1 * n1 + a2 * n2) / np.linalg.norm(a1 * n1 + a2 * n2)
    np.testing.assert_allclose(normals[0], expected)
    np.testing.assert_allclose(normals[2], n1)
    np.testing.assert_allclose(normals[3], n2)


def test_large_cloth_writes_quickly(tmp_path):
    import time
    points, faces = _grid(64)
    start = time.perf_counter()
    w = UsdWriter(tmp_path / "big.usd")
    w.add_mesh("cloth", points.astype(np.float32), faces)
    for frame in range(600):
        w.write_frame(frame, points={"cloth": points + 0.001 * frame})
    w.close()
    # about 0.4 s on one core; the bound leaves room for a loaded machine
    assert time.perf_counter() - start < 5.0


def test_references_and_bodies_read_back_in_the_order_added(tmp_path):
    # references and bodies are authored in batches (at the next read of the stage): whatever the interleaving
    # with other prims and frames, each is there in call order, placed, scaled, referencing its asset
    asset = tmp_path / "asset.usda"
    w = UsdWriter(asset)
    w.add_collider("thing", kind="sphere", radius=0.5)
    w.close()
    path = tmp_path / "refs.usda"
    w = UsdWriter(path)
    expected = {}
    for i in range(6):
        pos, rot, scale = (i, 0.5 * i, -1.0), (0.1 * i, 0.2, 0.0, 1.0), (1.0 + i, 2.0, 0.5)
        w.add_reference(f"ref {i}", asset, pos=pos, rot=rot, scale=scale)
        expected[f"ref_{i}"] = (pos, rot, scale)
        if i == 2:
            w.add_body("body", [dict(kind="box", half_extents=(0.1, 0.2, 0.3))], pos=(0, 1, 0))
            expected["body"] = ((0, 1, 0), (0, 0, 0, 1), (1, 1, 1))
        if i == 3:
            w.add_points("dots", np.zeros((2, 3)), 0.1)
            expected["dots"] = None
    w.write_frame(0, bodies={"ref 5": ((9.0, 9.0, 9.0), (0, 0, 0, 1)), "body": ((0, 2, 0), (0, 0, 0, 1))})
    w.close()
    stage = Usd.Stage.Open(str(path))
    assert [p.GetName() for p in stage.GetPrimAtPath("/World").GetChildren()] == list(expected)
    for name, placed in expected.items():
        if placed is None:
            continue
        pos, rot, scale = placed
        prim = stage.GetPrimAtPath(f"/World/{name}")
        ops = [op.GetOpName() for op in UsdGeom.Xformable(prim).GetOrderedXformOps()]
        assert ops == ["xformOp:translate", "xformOp:orient"] + (["xformOp:scale"] if name != "body" else [])
        local = np.array([1.0, 2.0, 3.0])
        world = np.asarray(pos) + _rotation(rot) @ (np.asarray(scale) * local)
        np.testing.assert_allclose(_world(prim, local), world, atol=1e-5)
        if name != "body":
            assert stage.GetPrimAtPath(f"/World/{name}/thing").IsA(UsdGeom.Sphere)  # the asset's prim
    ref5 = UsdGeom.Xformable(stage.GetPrimAtPath("/World/ref_5")).GetOrderedXformOps()[0]
    assert ref5.GetTimeSamples() == [0.0] and tuple(ref5.Get(0)) == (9.0, 9.0, 9.0)
    assert stage.GetPrimAtPath("/World/body/shape_0").IsA(UsdGeom.Cube)
    assert not validation_errors(path)
