"""sim.mesh_io.load_mesh: OBJ face forms, relative indices and fan triangulation; USD meshes in world space; every
error names the file and (OBJ) the line."""

import numpy as np
import pytest

from sim.mesh_io import MeshFormatError, fan_triangles, load_mesh

try:
    from pxr import Gf, Usd, UsdGeom
except ImportError:  # OBJ loading needs no usd-core
    Usd = None

needs_pxr = pytest.mark.skipif(Usd is None, reason="usd-core (pxr) is not installed")

QUAD_VERTICES = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
QUAD_TRIANGLES = [[0, 1, 2], [0, 2, 3]]


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("face", [
    "f 1 2 3 4",
    "f 1/1 2/2 3/3 4/4",
    "f 1//1 2//1 3//1 4//1",
    "f 1/1/1 2/2/1 3/3/1 4/4/1",
    "f -4 -3 -2 -1",
    "f -4/1/1 -3//1 3 -1/4",
])
def test_obj_quad_face_forms(tmp_path, face):
    text = ("# a unit quad\nmtllib quad.mtl\no quad\ng group\n" + QUAD_VERTICES +
            "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvn 0 0 1\ns off\nusemtl cloth\n" + face + "\n")
    vertices, triangles = load_mesh(_write(tmp_path, "quad.obj", text))
    assert vertices.dtype == np.float64 and vertices.shape == (4, 3)
    np.testing.assert_array_equal(vertices, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    assert triangles.dtype == np.int32
    np.testing.assert_array_equal(triangles, QUAD_TRIANGLES)


def test_obj_pentagon_fan_weights_and_relative_indices(tmp_path):
    # the 4th value w is ignored; the relative indices of the second face count only the vertices above it
    text = ("v 0 0 0 1\nv 1 0 0\nv 2 1 0\nv 1 2 0\nv 0 1 0\nf 1 2 3 4 5\n"
            "v 5 5 5\nf -1 -2 -3  # trailing comment\n")
    vertices, triangles = load_mesh(_write(tmp_path, "pentagon.obj", text))
    assert vertices.shape == (6, 3)
    np.testing.assert_array_equal(triangles, [[0, 1, 2], [0, 2, 3], [0, 3, 4], [5, 4, 3]])


def test_obj_face_may_precede_its_vertices(tmp_path):
    vertices, triangles = load_mesh(_write(tmp_path, "late.obj", "f 1 2 3\nv 0 0 0\nv 1 0 0\nv 0 1 0\n"))
    assert vertices.shape == (3, 3)
    np.testing.assert_array_equal(triangles, [[0, 1, 2]])


def test_fan_triangles_mixed_polygons():
    triangles = fan_triangles([3, 5, 4], [0, 1, 2, 10, 11, 12, 13, 14, 20, 21, 22, 23])
    np.testing.assert_array_equal(triangles, [[0, 1, 2], [10, 11, 12], [10, 12, 13], [10, 13, 14],
                                              [20, 21, 22], [20, 22, 23]])


@pytest.mark.parametrize("text, line, message", [
    (QUAD_VERTICES + "\n\nf 1 2 3\nf 1 2 9\n", 8, "face index 9 out of range (4 vertices)"),
    (QUAD_VERTICES + "f 1 2 -5\n", 5, "face index -5 out of range (4 vertices so far)"),
    (QUAD_VERTICES + "f 0 1 2\n", 5, "face index 0"),
    (QUAD_VERTICES + "f 1 2\n", 5, "face with 2 vertex(es), expected at least 3"),
    (QUAD_VERTICES + "f 1 2 x\n", 5, "bad face vertex 'x'"),
    (QUAD_VERTICES + "f 1 2/a 3\n", 5, "bad face vertex '2/a'"),
    (QUAD_VERTICES + "f 1 2 3/1/1/1\n", 5, "bad face vertex"),
    ("v 0 0 0\nv 1 0\nf 1 2 3\n", 2, "vertex with 2 coordinate(s), expected 3"),
    ("v 0 0 0\nv 1 zero 0\n", 2, "vertex coordinates are not numbers: 1 zero 0"),
    ("v 0 0 nan\n", 1, "not finite"),
])
def test_obj_errors_name_file_and_line(tmp_path, text, line, message):
    path = _write(tmp_path, "cloth.obj", text)
    with pytest.raises(MeshFormatError) as info:
        load_mesh(path)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.path == str(path) and error.line == line
    assert f"cloth.obj:{line}: " in str(error) and message in str(error)


def test_obj_without_faces(tmp_path):
    with pytest.raises(MeshFormatError, match=r"points\.obj: no faces \(4 vertices\)") as info:
        load_mesh(_write(tmp_path, "points.obj", QUAD_VERTICES))
    assert info.value.line is None


def test_missing_file_and_unsupported_extension(tmp_path):
    with pytest.raises(FileNotFoundError, match="mesh file not found.*nothing.obj"):
        load_mesh(tmp_path / "nothing.obj")
    with pytest.raises(MeshFormatError, match=r"cloth\.stl: unsupported mesh format '\.stl'; supported: \.obj, "
                                              r"\.usd, \.usda, \.usdc"):
        load_mesh(_write(tmp_path, "cloth.stl", "solid"))
    with pytest.raises(MeshFormatError, match="quad.obj: prim_path '/World/quad' given, but an OBJ file has no prims"):
        load_mesh(_write(tmp_path, "quad.obj", QUAD_VERTICES + "f 1 2 3\n"), prim_path="/World/quad")


# ------------------------------------------------------------------------------------------------------ USD


def _usd_stage(path, *, orientation=None):
    """/World (translated by (0, 0, 5)) with a Cube, then /World/quad: a quad and a triangle, translated by
    (1, 2, 3) and rotated 90 degrees about z; and /World/second, another mesh."""
    stage = Usd.Stage.CreateNew(str(path))
    world = UsdGeom.Xform.Define(stage, "/World")
    world.AddTranslateOp().Set(Gf.Vec3d(0, 0, 5))
    UsdGeom.Cube.Define(stage, "/World/box")
    mesh = UsdGeom.Mesh.Define(stage, "/World/quad")
    mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0)])
    mesh.CreateFaceVertexCountsAttr([4, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 3, 1, 4, 2])
    if orientation:
        mesh.CreateOrientationAttr(orientation)
    mesh.AddTranslateOp().Set(Gf.Vec3d(1, 2, 3))
    mesh.AddRotateZOp().Set(90.0)
    other = UsdGeom.Mesh.Define(stage, "/World/second")
    other.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (0, 1, 0)])
    other.CreateFaceVertexCountsAttr([3])
    other.CreateFaceVertexIndicesAttr([0, 1, 2])
    stage.Save()
    return path


# rotate 90 degrees about z: (x, y, z) -> (-y, x, z); then + (1, 2, 3) and the parent's + (0, 0, 5)
QUAD_WORLD = [[1, 2, 8], [1, 3, 8], [0, 3, 8], [0, 2, 8], [1, 4, 8]]


@needs_pxr
@pytest.mark.parametrize("name", ["mesh.usda", "mesh.usdc", "mesh.usd"])
def test_usd_first_mesh_in_world_space(tmp_path, name):
    vertices, triangles = load_mesh(_usd_stage(tmp_path / name))
    assert vertices.dtype == np.float64 and triangles.dtype == np.int32
    np.testing.assert_allclose(vertices, QUAD_WORLD, atol=1e-12)
    np.testing.assert_array_equal(triangles, [[0, 1, 2], [0, 2, 3], [1, 4, 2]])


@needs_pxr
def test_usd_mesh_by_prim_path(tmp_path):
    vertices, triangles = load_mesh(_usd_stage(tmp_path / "mesh.usda"), prim_path="/World/second")
    np.testing.assert_allclose(vertices, [[0, 0, 5], [1, 0, 5], [0, 1, 5]])
    np.testing.assert_array_equal(triangles, [[0, 1, 2]])


@needs_pxr
def test_usd_left_handed_mesh_is_rewound(tmp_path):
    _, triangles = load_mesh(_usd_stage(tmp_path / "mesh.usda", orientation="leftHanded"))
    np.testing.assert_array_equal(triangles, [[2, 1, 0], [3, 2, 0], [2, 4, 1]])


@needs_pxr
def test_usd_time_sampled_points_read_at_first_sample(tmp_path):
    stage = Usd.Stage.CreateNew(str(tmp_path / "anim.usda"))
    mesh = UsdGeom.Mesh.Define(stage, "/cloth")
    mesh.CreateFaceVertexCountsAttr([3])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 2])
    for t in (2.0, 3.0):
        mesh.CreatePointsAttr().Set([(t, 0, 0), (t + 1, 0, 0), (t, 1, 0)], t)
    stage.Save()
    vertices, _ = load_mesh(tmp_path / "anim.usda")
    np.testing.assert_array_equal(vertices, [[2, 0, 0], [3, 0, 0], [2, 1, 0]])


@pytest.mark.parametrize("prim_path, message", [
    ("/World/missing", "no prim at /World/missing"),
    ("/World/box", "prim /World/box is a Cube, not a Mesh"),
    ("World/quad", "invalid prim path"),
])
@needs_pxr
def test_usd_prim_path_errors(tmp_path, prim_path, message):
    path = _usd_stage(tmp_path / "scene.usda")
    with pytest.raises(MeshFormatError, match="scene.usda: ") as info:
        load_mesh(path, prim_path=prim_path)
    assert info.value.line is None and message in str(info.value)


@needs_pxr
def test_usd_without_mesh_and_unreadable(tmp_path):
    stage = Usd.Stage.CreateNew(str(tmp_path / "empty.usda"))
    UsdGeom.Xform.Define(stage, "/World")
    stage.Save()
    with pytest.raises(MeshFormatError, match=r"empty\.usda: the stage has no UsdGeom\.Mesh prim"):
        load_mesh(tmp_path / "empty.usda")
    with pytest.raises(MeshFormatError, match=r"broken\.usda: cannot open USD stage"):
        load_mesh(_write(tmp_path, "broken.usda", "#usda 1.0\ndef Mesh \"m\" {\n"))


@needs_pxr
def test_usd_bad_topology(tmp_path):
    stage = Usd.Stage.CreateNew(str(tmp_path / "bad.usda"))
    mesh = UsdGeom.Mesh.Define(stage, "/bad")
    mesh.CreatePointsAttr([(0, 0, 0), (1, 0, 0), (0, 1, 0)])
    mesh.CreateFaceVertexCountsAttr([3])
    mesh.CreateFaceVertexIndicesAttr([0, 1, 7])
    stage.Save()
    with pytest.raises(MeshFormatError, match=r"bad\.usda: mesh /bad: face index 7 out of range \(3 vertices\)"):
        load_mesh(tmp_path / "bad.usda")
