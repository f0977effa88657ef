"""Read back any USD this toolkit writes (sim/usd.py) as drawable tracks of triangles or points, frame by frame.

    pb = load("out/cloth.usd")
    for track in pb.tracks:
        v = track.world_vertices(frame)     # (V, 3) world positions [stage units] at frame index `frame`
    low, high = pb.bounds()                 # box around every object over the whole animation

Both `sim render` and `sim view` draw from this one reader. Everything becomes triangles (cloth and mesh prims as
they are, sphere, cube, capsule and plane prims tessellated by `shape_triangles`) or points with radii (Points
prims). A track moves in one of two ways: its vertices are time-sampled (`positions`: cloth, particles) or its
transform is (`transforms`: rigid bodies and articulation links, whose Xform carries the time samples); a track
with neither is static and its vertices are already in world coordinates.

Frames are the union of the time codes at which any attribute of the stage holds a sample; a prim without a sample
at a frame shows USD's value there (the last sample before it, interpolated between samples).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

#: colours of objects that have no displayColor, in turn (muted, distinguishable on a white or grey ground)
DEFAULT_COLORS = np.array([[0.85, 0.45, 0.25], [0.30, 0.55, 0.80], [0.45, 0.70, 0.35], [0.75, 0.65, 0.30],
                           [0.60, 0.45, 0.75], [0.40, 0.70, 0.70]], np.float32)
#: colour of a ground plane that has no displayColor
GROUND_COLOR = np.array([0.78, 0.78, 0.76], np.float32)
#: radius of points whose prim has no widths [stage units]
DEFAULT_POINT_RADIUS = 0.01
_SPHERE_BANDS = 12  # latitude bands of a tessellated sphere; twice as many longitude segments


class PlaybackError(Exception):
    """A file that cannot be played back; str() is one line, "path: what is wrong"."""


@dataclass
class Track:
    """One drawable object.

    Attributes:
        name: the prim path, e.g. "/World/cloth".
        kind: "mesh" (triangles) or "points" (spheres of `radii`).
        vertices: (V, 3) float32 [stage units]: in the object's local frame when `transforms` is given, the first
            frame's world positions when `positions` is, and world positions of a static object.
        faces: (F, 3) int32 vertex indices, counter-clockwise seen from outside, for meshes; None for points.
        radii: (V,) float32 point radii [stage units] for points; None for meshes.
        color: (3,) float32 display colour in [0, 1].
        positions: (T, V, 3) float32 world positions per frame (a deforming mesh or moving points), or None.
        transforms: (T, 4, 4) float32 local-to-world matrices per frame, acting on column vectors
            (world = M @ [x, y, z, 1]), for an object moved rigidly; None when it does not move that way.
        is_ground: a static plane facing the stage's up axis (renderers may draw it as the floor).
    """

    name: str
    kind: str
    vertices: np.ndarray
    faces: np.ndarray | None
    radii: np.ndarray | None
    color: np.ndarray
    positions: np.ndarray | None
    transforms: np.ndarray | None
    is_ground: bool = False

    def world_vertices(self, frame: int) -> np.ndarray:
        """(V, 3) float32 world positions at frame index `frame` (0 <= frame < the playback's frame_count)."""
        if self.positions is not None:
            return self.positions[frame]
        if self.transforms is not None:
            m = self.transforms[frame]
            return (self.vertices @ m[:3, :3].T + m[:3, 3]).astype(np.float32)
        return self.vertices

    @property
    def is_static(self) -> bool:
        return self.positions is None and self.transforms is None

    def bounds(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) world box of the object over frames [start, stop), points padded by their radii."""
        if self.positions is not None:
            world = self.positions[start:stop]
        elif self.transforms is not None:
            m = self.transforms[start:stop]
            world = np.einsum("tij,vj->tvi", m[:, :3, :3], self.vertices) + m[:, None, :3, 3]
        else:
            world = self.vertices[None]
        pad = float(self.radii.max()) if self.radii is not None and len(self.radii) else 0.0
        return world.min(axis=(0, 1)) - pad, world.max(axis=(0, 1)) + pad


@dataclass
class Playback:
    """A loaded animation.

    Attributes:
        tracks: the drawable objects, in stage order.
        times: (T,) float64 USD time code of each frame (the frame numbers `sim run` wrote); seconds are
            times / fps.
        fps: time codes per second of the stage.
        up_axis: "Y" or "Z".
        path: the file it was read from.
        skipped: prim paths of geometry this reader does not draw (prim types it does not know), for a note.
    """

    tracks: list[Track]
    times: np.ndarray
    fps: float
    up_axis: str
    path: str = ""
    skipped: list[str] = field(default_factory=list)

    @property
    def frame_count(self) -> int:
        return len(self.times)

    @property
    def up_vector(self) -> np.ndarray:
        """(3,) float32 unit vector of the up axis."""
        return np.array([0, 1, 0] if self.up_axis == "Y" else [0, 0, 1], np.float32)

    def bounds(self, start: int = 0, stop: int | None = None,
               include_ground: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(low, high), each (3,) float32: the world box around the objects over frames [start, stop) (all frames
        by default), the ground left out unless `include_ground` (it is usually far larger than the scene).
        A playback with nothing but ground gives the ground's box; with no tracks, the unit cube around 0."""
        stop = self.frame_count if stop is None else stop
        if not 0 <= start < stop <= self.frame_count:
            raise ValueError(f"frames [{start}, {stop}) are not within the {self.frame_count} frames")
        chosen = [t for t in self.tracks if include_ground or not t.is_ground] or self.tracks
        if not chosen:
            return np.full(3, -0.5, np.float32), np.full(3, 0.5, np.float32)
        boxes = [t.bounds(start, stop) for t in chosen]
        low = np.min([b[0] for b in boxes], axis=0)
        high = np.max([b[1] for b in boxes], axis=0)
        return low.astype(np.float32), high.astype(np.float32)


def load(path) -> Playback:
    """Reads the USD file at `path` (.usd, .usda, .usdc, as written by `sim run`, `sim optimize` or UsdWriter).

    Raises:
        PlaybackError: a missing file, a file USD cannot open, a stage without time samples (nothing to play), or
            a malformed prim (a mesh whose point count changes over time, a face index out of range, ...).
    """
    path = os.fspath(path)
    from pxr import Tf, Usd, UsdGeom
    if not os.path.exists(path):
        raise PlaybackError(f"{path}: no such file")
    if os.path.isdir(path):
        raise PlaybackError(f"{path}: is a directory, not a USD file")
    try:
        stage = Usd.Stage.Open(path)
    except Tf.ErrorException as e:
        raise PlaybackError(f"{path}: not a USD file USD can open ({_first_line(e)})") from None
    if stage is None:
        raise PlaybackError(f"{path}: not a USD file USD can open")
    times = _stage_times(stage)
    if len(times) == 0:
        raise PlaybackError(f"{path}: the file has no time samples: nothing to play (write it with `sim run`, or "
                            f"open a still scene in a USD viewer)")
    up = "Z" if UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z else "Y"
    fps = float(stage.GetTimeCodesPerSecond()) or 24.0
    reader = _Reader(stage, times, path, up)
    tracks = reader.tracks()
    return Playback(tracks, times, fps, up, path, reader.skipped)


# ------------------------------------------------------------------------------------------ tessellation


def shape_triangles(kind: str, **size) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) float32 and counter-clockwise faces (F, 3) int32 of a primitive shape, centred at the
    origin, in the conventions of `sim.geometry` and `UsdWriter.add_collider` [stage units]:

        sphere:  radius
        box:     half_extents (hx, hy, hz); every face has its own 4 vertices (flat, not smoothed, normals)
        capsule: radius, half_height: the segment from -half_height to +half_height along y, swept by radius
        plane:   width, length: half extents along x and z; normal +y

    A sphere has 12 latitude bands of 24 segments (its silhouette's area is within 1.2% of the true disc's).
    """
    if kind == "sphere":
        return _capsule(float(size["radius"]), 0.0)
    if kind == "capsule":
        return _capsule(float(size["radius"]), float(size["half_height"]))
    if kind == "box":
        return _box(np.asarray(size["half_extents"], np.float64))
    if kind == "plane":
        w, ln = float(size["width"]), float(size["length"])
        v = np.array([[-w, 0, -ln], [w, 0, -ln], [w, 0, ln], [-w, 0, ln]], np.float32)
        return v, np.array([[0, 2, 1], [0, 3, 2]], np.int32)
    raise ValueError(f"unknown shape kind {kind!r}; expected sphere, box, capsule or plane")


def _capsule(radius: float, half_height: float) -> tuple[np.ndarray, np.ndarray]:
    """A latitude-longitude sphere whose upper hemisphere is lifted by half_height and lower one lowered by it."""
    bands, segments = _SPHERE_BANDS, 2 * _SPHERE_BANDS
    polar = np.linspace(0.0, np.pi, bands + 1)[1:-1]
    if half_height > 0:  # the equator twice, once per hemisphere: the cylinder between them
        polar = np.sort(np.concatenate([polar, [np.pi / 2]]))
    azimuth = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    rings = []
    seen_equator = False
    for theta in polar:
        y = radius * np.cos(theta)
        if np.isclose(theta, np.pi / 2) and half_height > 0:
            y, seen_equator = (half_height if not seen_equator else -half_height), True
        else:
            y += half_height if theta < np.pi / 2 else -half_height
        r = radius * np.sin(theta)
        rings.append(np.stack([r * np.cos(azimuth), np.full(segments, y), r * np.sin(azimuth)], axis=1))
    top = np.array([[0.0, radius + half_height, 0.0]])
    bottom = np.array([[0.0, -radius - half_height, 0.0]])
    vertices = np.concatenate([top] + rings + [bottom])
    faces = []
    j = np.arange(segments)
    nxt = (j + 1) % segments
    faces.append(np.stack([np.zeros(segments, int), 1 + j, 1 + nxt], axis=1))
    for k in range(len(rings) - 1):
        a, b = 1 + k * segments, 1 + (k + 1) * segments
        faces.append(np.stack([a + j, b + j, b + nxt], axis=1))
        faces.append(np.stack([a + j, b + nxt, a + nxt], axis=1))
    last, pole = 1 + (len(rings) - 1) * segments, len(vertices) - 1
    faces.append(np.stack([last + j, np.full(segments, pole), last + nxt], axis=1))
    return vertices.astype(np.float32), _outward(vertices, np.concatenate(faces))


def _box(half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vertices, faces = [], []
    for axis in range(3):
        u, w = (axis + 1) % 3, (axis + 2) % 3
        for sign in (-1.0, 1.0):
            quad = np.zeros((4, 3))
            quad[:, axis] = sign
            quad[:, u] = [-1, 1, 1, -1]
            quad[:, w] = [-1, -1, 1, 1]
            base = len(vertices) * 4
            vertices.append(quad * half)
            faces += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
    v = np.concatenate(vertices)
    return v.astype(np.float32), _outward(v, np.array(faces))


def _outward(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Faces of a convex shape around the origin, each turned so that its normal points away from the origin
    (for such a shape every point x of a face has n . x > 0 for the outward normal n)."""
    p = vertices[faces]
    normal = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    inward = np.einsum("ij,ij->i", normal, p.mean(axis=1)) < 0
    faces = faces.copy()
    faces[inward] = faces[inward][:, [0, 2, 1]]
    return faces.astype(np.int32)


# ----------------------------------------------------------------------------------------------- reading


def _first_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text[:200]


def _stage_times(stage) -> np.ndarray:
    """Sorted union of the time codes of every attribute's samples."""
    from pxr import Usd
    times: set[float] = set()
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        for attr in prim.GetAttributes():
            if attr.GetNumTimeSamples():
                times.update(attr.GetTimeSamples())
    return np.array(sorted(times), np.float64)


class _Reader:
    """Turns the gprims of one stage into Tracks, evaluating transforms and points at every frame time."""

    def __init__(self, stage, times: np.ndarray, path: str, up_axis: str):
        from pxr import Usd, UsdGeom
        self.stage, self.times, self.path, self.up_axis = stage, times, path, up_axis
        self.codes = [Usd.TimeCode(float(t)) for t in times]
        self._caches = [UsdGeom.XformCache(code) for code in self.codes]
        self.skipped: list[str] = []

    def tracks(self) -> list[Track]:
        from pxr import Usd, UsdGeom
        tracks = []
        for prim in self.stage.Traverse(Usd.TraverseInstanceProxies()):
            if not prim.IsA(UsdGeom.Gprim):
                continue
            imageable = UsdGeom.Imageable(prim)
            if imageable.ComputeVisibility(self.codes[0]) == UsdGeom.Tokens.invisible:
                continue
            if imageable.ComputePurpose() in (UsdGeom.Tokens.guide, UsdGeom.Tokens.proxy):
                continue
            track = self._track(prim)
            if track is None:
                self.skipped.append(str(prim.GetPath()))
                continue
            if not np.all(np.isfinite(track.vertices)):
                raise PlaybackError(f"{self.path}: {track.name}: non-finite point positions")
            tracks.append(track)
        uncoloured = [t for t in tracks if t.color is None]
        for i, track in enumerate(t for t in uncoloured if not t.is_ground):
            track.color = DEFAULT_COLORS[i % len(DEFAULT_COLORS)].copy()
        for track in uncoloured:
            if track.is_ground:
                track.color = GROUND_COLOR.copy()
        return tracks

    def _track(self, prim) -> Track | None:
        from pxr import UsdGeom
        name = str(prim.GetPath())
        transforms = self._transforms(prim)
        color = _display_color(prim)
        if prim.IsA(UsdGeom.Mesh) or prim.IsA(UsdGeom.Points):
            return self._point_based(prim, name, transforms, color)
        shape = _shape_of(prim)
        if shape is None:
            return None
        vertices, faces = shape
        is_ground = False
        if transforms.shape[0] == 1:
            m = transforms[0]
            vertices = (vertices @ m[:3, :3].T + m[:3, 3]).astype(np.float32)
            is_ground = prim.IsA(UsdGeom.Plane) and self._faces_up(vertices, faces)
            transforms = None
        return Track(name, "mesh", vertices, faces, None, color, None, transforms, is_ground)

    def _point_based(self, prim, name: str, transforms: np.ndarray, color) -> Track | None:
        from pxr import UsdGeom
        attr = UsdGeom.PointBased(prim).GetPointsAttr()
        is_mesh = prim.IsA(UsdGeom.Mesh)
        faces = _mesh_faces(prim, self.path) if is_mesh else None
        if attr.GetNumTimeSamples() > 0:
            local = [_vec3(attr.Get(code)) for code in self.codes]
            counts = {len(p) for p in local}
            if len(counts) != 1:
                raise PlaybackError(f"{self.path}: {name}: the number of points changes over time "
                                    f"({min(counts)} to {max(counts)}); only a fixed topology can be played")
            local = np.stack(local)
        else:
            local = _vec3(attr.Get())[None]
        count = local.shape[1]
        if count == 0:
            return None
        if faces is not None and len(faces) and faces.max() >= count:
            raise PlaybackError(f"{self.path}: {name}: face vertex index {int(faces.max())} is out of range for "
                                f"{count} points")
        radii = None if is_mesh else _radii(prim, count)
        kind = "mesh" if is_mesh else "points"
        if local.shape[0] == 1 and transforms.shape[0] == 1:  # static: bake the pose in
            m = transforms[0]
            vertices = (local[0] @ m[:3, :3].T + m[:3, 3]).astype(np.float32)
            return Track(name, kind, vertices, faces, radii, color, None, None)
        if local.shape[0] == 1:  # rigidly moved by its (or an ancestor's) transform
            return Track(name, kind, local[0], faces, radii, color, None, transforms)
        m = transforms if transforms.shape[0] > 1 else np.broadcast_to(transforms, (len(local), 4, 4))
        world = np.einsum("tij,tvj->tvi", m[:, :3, :3], local) + m[:, None, :3, 3]
        return Track(name, kind, local[0], faces, radii, color, world.astype(np.float32), None)

    def _transforms(self, prim) -> np.ndarray:
        """(T, 4, 4) float32 local-to-world matrices (column-vector convention), or (1, 4, 4) when they are the
        same at every frame."""
        rows = np.stack([np.array(cache.GetLocalToWorldTransform(prim), np.float64) for cache in self._caches])
        columns = rows.transpose(0, 2, 1).astype(np.float32)  # Gf matrices act on row vectors: p' = p M
        if np.all(columns == columns[0]):
            return columns[:1]
        return columns

    def _faces_up(self, vertices: np.ndarray, faces: np.ndarray) -> bool:
        p = vertices[faces[0]]
        n = np.cross(p[1] - p[0], p[2] - p[0])
        up = 1 if self.up_axis == "Y" else 2
        return bool(abs(n[up]) > 0.999 * np.linalg.norm(n))


def _vec3(value) -> np.ndarray:
    if value is None:
        return np.zeros((0, 3), np.float32)
    return np.asarray(value, dtype=np.float32).reshape(-1, 3)


def _mesh_faces(prim, path: str) -> np.ndarray:
    """Triangles (fans of the polygons) of a Mesh prim, counter-clockwise (left-handed meshes flipped)."""
    from pxr import UsdGeom
    mesh = UsdGeom.Mesh(prim)
    counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get() or [], np.int64)
    indices = np.asarray(mesh.GetFaceVertexIndicesAttr().Get() or [], np.int64)
    if counts.sum() != len(indices) or np.any(counts < 3) or np.any(indices < 0):
        raise PlaybackError(f"{path}: {prim.GetPath()}: malformed faces (faceVertexCounts sum to {counts.sum()} "
                            f"for {len(indices)} indices, or a face has fewer than 3 vertices)")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    triangles = []
    for k in np.unique(counts):  # one vectorised fan per polygon size
        first = starts[counts == k]
        for i in range(1, k - 1):
            triangles.append(np.stack([indices[first], indices[first + i], indices[first + i + 1]], axis=1))
    faces = np.concatenate(triangles) if triangles else np.zeros((0, 3), np.int64)
    if mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded:
        faces = faces[:, [0, 2, 1]]
    return faces.astype(np.int32)


def _radii(prim, count: int) -> np.ndarray:
    from pxr import UsdGeom
    widths = UsdGeom.Points(prim).GetWidthsAttr().Get()
    if widths is None or len(widths) == 0:
        return np.full(count, DEFAULT_POINT_RADIUS, np.float32)
    w = np.asarray(widths, np.float32)
    return (np.full(count, w[0]) if len(w) != count else w).astype(np.float32) / 2


def _display_color(prim) -> np.ndarray | None:
    from pxr import UsdGeom
    primvar = UsdGeom.Gprim(prim).GetDisplayColorPrimvar()
    value = primvar.Get() if primvar and primvar.HasValue() else None
    if value is None or len(value) == 0:
        return None
    c = np.asarray(value, np.float32).reshape(-1, 3).mean(axis=0)
    return np.clip(c, 0.0, 1.0)


def _shape_of(prim) -> tuple[np.ndarray, np.ndarray] | None:
    """Tessellation of a UsdGeom primitive in its own frame (its xform ops are in the transform), or None for a
    prim type this reader does not draw."""
    from pxr import UsdGeom
    if prim.IsA(UsdGeom.Sphere):
        return shape_triangles("sphere", radius=UsdGeom.Sphere(prim).GetRadiusAttr().Get())
    if prim.IsA(UsdGeom.Cube):
        half = UsdGeom.Cube(prim).GetSizeAttr().Get() / 2
        return shape_triangles("box", half_extents=(half, half, half))
    if prim.IsA(UsdGeom.Capsule):
        capsule = UsdGeom.Capsule(prim)
        v, f = shape_triangles("capsule", radius=capsule.GetRadiusAttr().Get(),
                               half_height=capsule.GetHeightAttr().Get() / 2)
        return _y_to_axis(v, capsule.GetAxisAttr().Get()), f
    if prim.IsA(UsdGeom.Plane):
        plane = UsdGeom.Plane(prim)
        v, f = shape_triangles("plane", width=plane.GetWidthAttr().Get() / 2,
                               length=plane.GetLengthAttr().Get() / 2)
        return _y_to_axis(v, plane.GetAxisAttr().Get()), f
    return None


def _y_to_axis(vertices: np.ndarray, axis) -> np.ndarray:
    """Vertices of a shape built along +y, turned to have that direction along `axis` ("X", "Y" or "Z") by a
    cyclic permutation of the coordinates (a rotation, so windings stay outward)."""
    axis = str(axis or "Y")
    if axis == "X":
        return vertices[:, [1, 2, 0]].copy()  # new (x, y, z) = old (y, z, x): old y along x
    if axis == "Z":
        return vertices[:, [2, 0, 1]].copy()  # new (x, y, z) = old (z, x, y): old y along z
    return vertices
