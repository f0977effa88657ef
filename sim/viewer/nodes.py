"""The viser scene node of one playback track, and how it moves from frame to frame.

Deforming tracks (cloth, particles) send their vertices each frame; rigid tracks (bodies, links) send their
geometry once and then only a pose, so a robot's visual meshes cost a few numbers a frame.
"""

from __future__ import annotations

import re

import numpy as np


def _rgb(color) -> tuple:
    """A colour in [0, 1] as the 0-255 integers viser takes."""
    c = np.clip(np.asarray(color, np.float64).reshape(3), 0.0, 1.0)
    return tuple(int(round(255 * v)) for v in c)


def _node_name(index: int, name: str) -> str:
    """A unique, flat scene-tree path: viser makes '/' a parent, and a track name may hold one."""
    return f"/sim/{index:03d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', name) or 'track'}"


def _rigid_parts(vertices: np.ndarray, transform0: np.ndarray) -> tuple:
    """(vertices with the first transform's scale and shear applied, the inverse of that stretch (3, 3)).

    A track's transforms may carry a scale (a box's half extents, a mesh's scale op); viser places a node by a
    rotation and a translation only, so the constant stretch S of M = R S goes into the vertices once, and each
    frame's rotation is M S^-1."""
    m = np.asarray(transform0, np.float64)[:3, :3]
    u, _, vt = np.linalg.svd(m)
    if np.linalg.det(u @ vt) < 0:  # a mirroring transform: the reflection stays in the stretch
        u[:, -1] *= -1
    rotation = u @ vt
    stretch = rotation.T @ m
    return np.asarray(vertices, np.float64) @ stretch.T, np.linalg.inv(stretch)


def _wxyz(rotation: np.ndarray) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a rotation matrix (3, 3)."""
    from viser.transforms import SO3
    return np.asarray(SO3.from_matrix(rotation).wxyz, np.float64)


class TrackNode:
    """One track shown in a viser scene: created at frame 0, moved by `show(frame)`.

    Args:
        scene: the server's `viser.SceneApi`.
        index: the track's position in the playback (makes node names unique).
        track: a `sim.playback.Track`.
    """

    def __init__(self, scene, index: int, track):
        self.track = track
        self.rigid = track.transforms is not None
        self.deforming = track.positions is not None
        name = _node_name(index, track.name)
        vertices = np.asarray(track.vertices, np.float64)
        self.unstretch = None
        pose = {}
        if self.rigid:
            vertices, self.unstretch = _rigid_parts(vertices, track.transforms[0])
            pose = self._pose(0)
        elif self.deforming:
            vertices = np.asarray(track.positions[0], np.float64)
        else:
            vertices = np.asarray(track.world_vertices(0), np.float64)
        color = _rgb(track.color)
        if track.kind == "points":
            radii = np.asarray(track.radii if track.radii is not None else [0.01], np.float64)
            self.handle = scene.add_point_cloud(
                name, points=vertices.astype(np.float32), colors=color, point_size=float(2.0 * np.median(radii)),
                point_shape="circle", precision="float32", **pose)
        else:
            # cloth and planes have two sides worth seeing; shadows on a software-rendered page cost more than
            # they show
            self.handle = scene.add_mesh_simple(
                name, vertices=vertices.astype(np.float32), faces=np.asarray(track.faces, np.uint32), color=color,
                side="double", cast_shadow=False, receive_shadow=False, **pose)

    def show(self, frame: int) -> None:
        """Move the node to `frame` (0-based, below the playback's frame count)."""
        if self.rigid:
            pose = self._pose(frame)
            self.handle.position = pose["position"]
            self.handle.wxyz = pose["wxyz"]
        elif self.deforming:
            values = np.asarray(self.track.positions[frame], np.float32)
            if self.track.kind == "points":
                self.handle.points = values
            else:
                self.handle.vertices = values

    def _pose(self, frame: int) -> dict:
        m = np.asarray(self.track.transforms[frame], np.float64)
        return {"position": m[:3, 3].copy(), "wxyz": _wxyz(m[:3, :3] @ self.unstretch)}
