"""`PlaybackRecorder`: UsdWriter's interface, recording into a `sim.playback.Playback` in memory instead of a file.

A scene run given `record=PlaybackRecorder.factory(...)` (see `Scene.run`) adds its objects and frames here exactly
as it would to its USD file, so `sim view scenes/cloth.yaml` shows what `sim run` would have written, frame by frame
as the frames are computed. Tracks are the ones `sim.playback.load` would read back from that file: cloth and
particles deform, body shapes move rigidly with their body, colliders are static.

The playback grows while a viewer reads it from another thread: per-frame arrays live in buffers that double when
full, each track's `positions`/`transforms` is a view of the frames written so far, and `times` (which gives the
frame count) is replaced last, so a reader never sees a frame count ahead of the data.
"""

from __future__ import annotations

import numpy as np

from ..spatial import matrix_from_quat, quat_normalized
from ..playback import DEFAULT_COLORS, GROUND_COLOR, Playback, Track, shape_triangles
from ..usd import as_faces, as_points, checked_shape, fan_faces, prim_identifier, unique_name

_INFINITE_PLANE_HALF = 10.0  # half the edge drawn for an infinite plane [stage units]: UsdWriter's default extent


class _Growing:
    """Rows of one shape appended one at a time; `view` is the rows so far (a view of a buffer that doubles)."""

    def __init__(self, row_shape: tuple, dtype=np.float32):
        self._buffer = np.zeros((4,) + row_shape, dtype)
        self.count = 0

    def append(self, row) -> np.ndarray:
        if self.count == len(self._buffer):
            grown = np.zeros((2 * len(self._buffer),) + self._buffer.shape[1:], self._buffer.dtype)
            grown[:self.count] = self._buffer[:self.count]
            self._buffer = grown  # a reader holding the old view keeps valid, older data
        self._buffer[self.count] = row
        self.count += 1
        return self._buffer[:self.count]

    @property
    def last(self) -> np.ndarray:
        return self._buffer[self.count - 1]


def _pose_matrix(pos, rot) -> np.ndarray:
    """The 4x4 local-to-world matrix (column vectors) of a position and a quaternion (x, y, z, w)."""
    m = np.eye(4)
    m[:3, :3] = matrix_from_quat(quat_normalized(rot))
    m[:3, 3] = np.asarray(pos, np.float64)
    return m


def _shape_geometry(shape: dict) -> tuple:
    """Vertices (in the frame the shape's pos and rot are relative to) and faces of a checked UsdWriter shape."""
    kind = shape["kind"]
    if kind == "mesh":
        vertices, faces = shape["points"] * np.asarray(shape["scale"]), fan_faces(shape["faces"])
    elif kind == "plane":
        vertices, faces = shape_triangles("plane", width=shape["width"] or _INFINITE_PLANE_HALF,
                                          length=shape["length"] or _INFINITE_PLANE_HALF)
    else:
        size = {k: shape[k] for k in ("radius", "half_extents", "half_height") if k in shape}
        vertices, faces = shape_triangles(kind, **size)
    q = shape["rot"]  # a Gf.Quatf: real part apart
    local = _pose_matrix(shape["pos"], (*q.GetImaginary(), q.GetReal()))
    world = np.asarray(vertices, np.float64) @ local[:3, :3].T + local[:3, 3]
    return world.astype(np.float32), np.asarray(faces, np.int32)


class PlaybackRecorder:
    """Receives a simulation's prims and frames the way `sim.usd.UsdWriter` does and grows `playback`.

    Args:
        fps: frames per second (time codes per second, as the USD file would have).
        up_axis: "y" or "z".
        meters_per_unit: accepted for UsdWriter's signature; lengths stay in stage units.
        on_frame: called with the recorder after each `write_frame` (the viewer shows the new frame).
    """

    def __init__(self, *, fps: float = 60.0, up_axis: str = "y", meters_per_unit: float = 1.0, on_frame=None):
        self.playback = Playback([], np.zeros(0, np.float64), float(fps), str(up_axis).upper(), path="")
        self.on_frame = on_frame
        self._uncoloured = 0  # objects given a colour from DEFAULT_COLORS so far
        self._times = _Growing((), np.float64)
        self._deforming: dict[str, tuple] = {}  # name -> (track, growing positions)
        self._bodies: dict[str, list] = {}  # name -> [(track, growing transforms)] one per shape
        self._body_poses: dict[str, np.ndarray] = {}  # name -> initial pose (4, 4)
        self._closed = False
        self._prim_names: set[str] = set()  # names under /World, made unique as UsdWriter makes them

    @classmethod
    def factory(cls, on_frame=None):
        """A `record` argument for `Scene.run`: makes a recorder with the scene's settings."""
        def make(**settings):
            return cls(on_frame=on_frame, **settings)
        return make

    # --------------------------------------------------------------------------------------- prims (UsdWriter)

    def add_mesh(self, name: str, points, faces, *, normals: bool = False, color=None,
                 double_sided: bool = True) -> str:
        p = as_points(points, f"mesh {name!r} points").astype(np.float32)
        f = fan_faces(as_faces(faces, len(p), f"mesh {name!r} faces"))
        return self._add_deforming(name, Track(self._path(name), "mesh", p, f, None, self._color(color), None, None))

    def add_points(self, name: str, points, radii, *, color=None) -> str:
        p = as_points(points, f"points {name!r}").astype(np.float32)
        r = np.broadcast_to(np.asarray(radii, np.float32), (len(p),)).copy()
        return self._add_deforming(name, Track(self._path(name), "points", p, None, r, self._color(color), None,
                                               None))

    def add_collider(self, name: str, *, kind: str, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), color=None,
                     **size) -> str:
        shape = checked_shape(dict(size, kind=kind, pos=pos, rot=rot, color=color), f"collider {name!r}")
        vertices, faces = _shape_geometry(shape)
        up = {"Y": 1, "Z": 2}[self.playback.up_axis]
        normal = np.cross(vertices[faces[0, 1]] - vertices[faces[0, 0]], vertices[faces[0, 2]] - vertices[faces[0, 0]])
        is_ground = kind == "plane" and abs(normal[up]) > 0.999 * np.linalg.norm(normal)
        # an uncoloured ground gets the reader's floor colour and takes no turn in the palette, as in the reader
        shown = GROUND_COLOR.copy() if is_ground and color is None else self._color(color)
        track = Track(self._path(name), "mesh", vertices, faces, None, shown, None, None, is_ground)
        self.playback.tracks.append(track)
        return track.name

    def add_body(self, name: str, shapes, *, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0)) -> str:
        checked = [checked_shape(shape, f"body {name!r} shape {i}") for i, shape in enumerate(shapes)]
        if name in self._bodies or name in self._deforming:
            raise ValueError(f"name {name!r} is already used by another animated prim")
        pose = _pose_matrix(pos, rot)
        path = self._path(name)
        parts, shape_names = [], set()
        for i, shape in enumerate(checked):
            vertices, faces = _shape_geometry(shape)
            label = unique_name(prim_identifier(str(shape["name"] if shape["name"] is not None else f"shape_{i}")),
                            shape_names)
            track = Track(f"{path}/{label}", "mesh", vertices, faces, None, self._color(shape["color"]), None, None)
            parts.append((track, _Growing((4, 4))))
            self.playback.tracks.append(track)
        self._bodies[name] = parts
        self._body_poses[name] = pose
        return path

    # ---------------------------------------------------------------------------------------------- frames

    def write_frame(self, frame: float, *, points: dict | None = None, bodies: dict | None = None) -> None:
        """One frame, as `UsdWriter.write_frame` takes it; objects not named keep their last value."""
        if self._closed:
            raise RuntimeError("the recorder is closed")
        points, bodies = points or {}, bodies or {}
        unknown = [k for k in points if k not in self._deforming] + [k for k in bodies if k not in self._bodies]
        if unknown:
            raise ValueError(f"no animated prim named {unknown[0]!r}")
        count = self._times.count
        if count and float(frame) <= self._times.last:
            raise ValueError(f"frame {frame} is not after the previous frame {self._times.last:g}")
        values = {name: as_points(value, f"frame {frame}: {name} points", len(self._deforming[name][0].vertices))
                  for name, value in points.items()}
        poses = {name: _pose_matrix(*pose) for name, pose in bodies.items()}
        for name, (track, rows) in self._deforming.items():
            track.positions = rows.append(values[name] if name in values else
                                          rows.last if count else track.vertices)
        for name, parts in self._bodies.items():
            pose = poses[name] if name in poses else parts[0][1].last if count else self._body_poses[name]
            for track, rows in parts:
                track.transforms = rows.append(pose)
        self.playback.times = self._times.append(float(frame))  # last: the frame count follows the data
        if self.on_frame is not None:
            self.on_frame(self)

    # ------------------------------------------------------------------------------------ finishing (UsdWriter)

    def save(self) -> None:
        """Nothing to save: the frames are in memory."""

    def close(self) -> None:
        """The run is over: no more frames. Returns None where UsdWriter returns its path: nothing was written."""
        self._closed = True

    def abort(self) -> None:
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def last_frame(self) -> float | None:
        return self._times.last if self._times.count else None

    @property
    def saved_frame(self) -> float | None:
        return self.last_frame

    # ------------------------------------------------------------------------------------------- internals

    def _path(self, name: str) -> str:
        """The prim path UsdWriter would give `name`, so that tracks are named as `sim.playback.load` names
        them."""
        return f"/World/{unique_name(prim_identifier(str(name)), self._prim_names)}"

    def _color(self, color) -> np.ndarray:
        if color is not None:
            return np.clip(np.asarray(color, np.float32).reshape(3), 0.0, 1.0)
        self._uncoloured += 1
        return DEFAULT_COLORS[(self._uncoloured - 1) % len(DEFAULT_COLORS)].copy()

    def _add_deforming(self, name: str, track: Track) -> str:
        if name in self._bodies or name in self._deforming:
            raise ValueError(f"name {name!r} is already used by another animated prim")
        self._deforming[name] = (track, _Growing(track.vertices.shape))
        self.playback.tracks.append(track)
        return track.name
