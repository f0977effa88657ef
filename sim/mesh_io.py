"""Load triangle meshes for cloth from Wavefront OBJ and USD files.

    vertices, triangles = load_mesh("assets/flag.obj")           # (n, 3) float64, (m, 3) int32
    vertices, triangles = load_mesh("assets/scene.usda", prim_path="/World/flag")

Polygons are triangulated as fans (0, i, i + 1). Coordinates are returned in the file's units, unscaled. `pxr`
(usd-core) is imported only to read USD files.
"""

from __future__ import annotations

import errno
import os

import numpy as np

OBJ_EXTENSIONS = (".obj",)
USD_EXTENSIONS = (".usd", ".usda", ".usdc")


class MeshFormatError(ValueError):
    """A mesh file that cannot be read. str() is one line: `cloth.obj:12: face index 9 out of range (8 vertices)`.

    Attributes:
        path: the file, as given.
        line: 1-based line number of the offending statement, or None (a whole-file problem, or a USD file).
        reason: the message without the location.
    """

    def __init__(self, path: str, line: int | None, reason: str):
        self.path, self.line, self.reason = path, line, reason
        location = f"{path}:{line}" if line is not None else path
        super().__init__(f"{location}: {reason}")


def load_mesh(path: str | os.PathLike, prim_path: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The vertices and triangles of the mesh in an OBJ or USD file.

    Args:
        path: a `.obj`, `.usd`, `.usda` or `.usdc` file.
        prim_path: USD only: the `UsdGeom.Mesh` to read; None reads the first mesh in the stage. Its points are
            transformed to world space by the prim's local-to-world transform.

    Returns:
        vertices: positions [file units], shape (n, 3), float64.
        triangles: counter-clockwise vertex indices, shape (m, 3), int32.

    Raises:
        FileNotFoundError: no file at `path`.
        MeshFormatError: malformed content, an unsupported extension, no faces, (USD) no such mesh, or (OBJ) a
            `prim_path`.
    """
    path = os.fspath(path)
    extension = os.path.splitext(path)[1].lower()
    if extension not in OBJ_EXTENSIONS + USD_EXTENSIONS:
        raise MeshFormatError(path, None, f"unsupported mesh format {extension or '(no extension)'!r}; "
                                          f"supported: {', '.join(OBJ_EXTENSIONS + USD_EXTENSIONS)}")
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, "mesh file not found", path)
    if prim_path is not None and extension in OBJ_EXTENSIONS:
        raise MeshFormatError(path, None, f"prim_path {prim_path!r} given, but an OBJ file has no prims")
    if extension in OBJ_EXTENSIONS:
        return _load_obj(path)
    return _load_usd(path, prim_path)


def fan_triangles(counts: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Polygons given as vertex counts (each >= 3) and their concatenated indices -> fan triangles, shape
    (sum(counts - 2), 3), int32: polygon (v0, v1, ..., vk-1) gives (v0, vi, vi+1) for i = 1 .. k-2."""
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    per_face = counts - 2
    face = np.repeat(np.arange(len(counts)), per_face)
    # i of each triangle within its polygon: 1, 2, ..., k-2
    i = np.arange(len(face)) - np.repeat(np.cumsum(per_face) - per_face, per_face) + 1
    first = starts[face]
    return np.stack([indices[first], indices[first + i], indices[first + i + 1]], axis=1).astype(np.int32)


# ------------------------------------------------------------------------------------------------------ OBJ


def _load_obj(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Reads `v` and `f` statements; every other statement (vt, vn, o, g, s, usemtl, mtllib, l, ...) is ignored."""
    vertices: list[tuple[float, float, float]] = []
    counts: list[int] = []
    indices: list[int] = []
    lines: list[int] = []  # the line of each face index, to name it when it is out of range
    with open(path, encoding="utf-8", errors="replace") as file:
        for number, text in enumerate(file, start=1):
            words = text.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "v":
                vertices.append(_obj_vertex(words[1:], path, number))
            elif words[0] == "f":
                face = _obj_face(words[1:], len(vertices), path, number)
                counts.append(len(face))
                indices.extend(face)
                lines.extend([number] * len(face))
    if not counts:
        raise MeshFormatError(path, None, f"no faces ({len(vertices)} vertices)")
    index_array = np.asarray(indices, dtype=np.int64)
    # positive indices may name vertices defined further down, so they are checked once all are read
    bad = np.flatnonzero(index_array >= len(vertices))
    if len(bad):
        k = bad[0]
        raise MeshFormatError(path, lines[k], f"face index {index_array[k] + 1} out of range "
                                              f"({len(vertices)} vertices)")
    return np.asarray(vertices, dtype=np.float64).reshape(-1, 3), fan_triangles(counts, index_array)


def _obj_vertex(values: list[str], path: str, line: int) -> tuple[float, float, float]:
    if len(values) < 3:
        raise MeshFormatError(path, line, f"vertex with {len(values)} coordinate(s), expected 3")
    try:
        # a 4th value is the weight w, and some exporters append r g b: neither moves the vertex
        xyz = tuple(float(v) for v in values[:3])
    except ValueError:
        raise MeshFormatError(path, line, f"vertex coordinates are not numbers: {' '.join(values[:3])}") from None
    if not all(np.isfinite(xyz)):
        raise MeshFormatError(path, line, f"vertex coordinates are not finite: {' '.join(values[:3])}")
    return xyz


def _obj_face(references: list[str], vertex_count: int, path: str, line: int) -> list[int]:
    """0-based vertex indices of one `f` statement; `a`, `a/t`, `a//n` and `a/t/n` forms, negative = relative."""
    if len(references) < 3:
        raise MeshFormatError(path, line, f"face with {len(references)} vertex(es), expected at least 3")
    face = []
    for reference in references:
        parts = reference.split("/")
        try:
            if len(parts) > 3:
                raise ValueError
            index = int(parts[0])
            for part in parts[1:]:  # texture and normal indices are unused, but must still be numbers
                if part:
                    int(part)
        except ValueError:
            raise MeshFormatError(path, line, f"bad face vertex {reference!r}: expected a, a/t, a//n or a/t/n "
                                              "with integer indices") from None
        if index == 0:
            raise MeshFormatError(path, line, "face index 0: OBJ indices start at 1")
        if index < 0:
            # relative to the vertices read so far: -1 is the last one
            if -index > vertex_count:
                raise MeshFormatError(path, line, f"face index {index} out of range ({vertex_count} vertices so "
                                                  "far)")
            face.append(vertex_count + index)
        else:
            face.append(index - 1)
    return face


# ------------------------------------------------------------------------------------------------------ USD


def meters_per_unit(path: str | os.PathLike) -> float:
    """Metres per unit of the coordinates that load_mesh reads from `path`: a USD stage's authored
    metersPerUnit, else 1 (OBJ files carry no unit; an unauthored USD unit is read as metres, as
    sim.import_usd_physics does, not as USD's centimetre fallback)."""
    path = os.fspath(path)
    if os.path.splitext(path)[1].lower() not in USD_EXTENSIONS:
        return 1.0
    from pxr import Usd, UsdGeom
    stage = Usd.Stage.Open(path)
    return float(UsdGeom.GetStageMetersPerUnit(stage)) if UsdGeom.StageHasAuthoredMetersPerUnit(stage) else 1.0


def _load_usd(path: str, prim_path: str | None) -> tuple[np.ndarray, np.ndarray]:
    from pxr import Tf, Usd, UsdGeom

    try:
        stage = Usd.Stage.Open(path)
    except Tf.ErrorException as error:
        raise MeshFormatError(path, None, f"cannot open USD stage: {_first_line(error)}") from None
    if stage is None:
        raise MeshFormatError(path, None, "cannot open USD stage")
    mesh = UsdGeom.Mesh(_find_mesh_prim(stage, path, prim_path))
    where = f"mesh {mesh.GetPath()}"
    points_attr = mesh.GetPointsAttr()
    time = Usd.TimeCode.Default()
    points = points_attr.Get(time)
    if points is None:
        # only time samples (an animation): its first frame
        time = Usd.TimeCode.EarliestTime()
        points = points_attr.Get(time)
    counts, indices = mesh.GetFaceVertexCountsAttr().Get(time), mesh.GetFaceVertexIndicesAttr().Get(time)
    if points is None or counts is None or indices is None or len(counts) == 0:
        raise MeshFormatError(path, None, f"{where} has no points or no faces")
    vertices = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    counts, indices = np.asarray(counts, dtype=np.int64), np.asarray(indices, dtype=np.int64)
    _check_usd_topology(vertices, counts, indices, path, where)
    # Gf matrices act on row vectors: p_world = p_local * M
    matrix = np.asarray(UsdGeom.Xformable(mesh).ComputeLocalToWorldTransform(time), dtype=np.float64)
    vertices = vertices @ matrix[:3, :3] + matrix[3, :3]
    triangles = fan_triangles(counts, indices)
    if mesh.GetOrientationAttr().Get(time) == UsdGeom.Tokens.leftHanded:
        triangles = triangles[:, ::-1].copy()  # callers expect counter-clockwise (right-handed) winding
    return vertices, triangles


def _find_mesh_prim(stage, path: str, prim_path: str | None):
    from pxr import Sdf, UsdGeom

    if prim_path is None:
        for prim in stage.Traverse():
            if prim.IsA(UsdGeom.Mesh):
                return prim
        raise MeshFormatError(path, None, "the stage has no UsdGeom.Mesh prim")
    if not Sdf.Path.IsValidPathString(prim_path) or not Sdf.Path(prim_path).IsAbsolutePath():
        raise MeshFormatError(path, None, f"invalid prim path {prim_path!r}: expected an absolute path like "
                                          "'/World/cloth'")
    prim = stage.GetPrimAtPath(prim_path)
    if not prim.IsValid():
        raise MeshFormatError(path, None, f"no prim at {prim_path}")
    if not prim.IsA(UsdGeom.Mesh):
        raise MeshFormatError(path, None, f"prim {prim_path} is a {prim.GetTypeName() or 'typeless prim'}, "
                                          "not a Mesh")
    return prim


def _check_usd_topology(vertices: np.ndarray, counts: np.ndarray, indices: np.ndarray, path: str,
                        where: str) -> None:
    if np.any(counts < 3):
        raise MeshFormatError(path, None, f"{where}: a face has {counts.min()} vertices, expected at least 3")
    if counts.sum() != len(indices):
        raise MeshFormatError(path, None, f"{where}: faceVertexCounts add up to {counts.sum()} but there are "
                                          f"{len(indices)} faceVertexIndices")
    bad = indices[(indices < 0) | (indices >= len(vertices))]
    if len(bad):
        raise MeshFormatError(path, None, f"{where}: face index {bad[0]} out of range ({len(vertices)} vertices)")
    if not np.all(np.isfinite(vertices)):
        raise MeshFormatError(path, None, f"{where}: points are not finite")


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
