"""Ray casting of a playback's frames on the toolkit's own kernels: one `wp.Mesh` holds every object's triangles
(points become small spheres), refitted each frame; one kernel casts a ray per pixel and shades the hit.

Shading: the object's display colour times (ambient + Lambert term of one directional light), the Lambert term
zeroed where a shadow ray toward the light hits anything; smooth vertex normals on curved surfaces (cloth,
spheres, capsules), flat ones on boxes and planes; surfaces are two-sided (cloth has no inside). The ground gets a
light checkerboard so that motion and height over it can be seen. The background is a vertical gradient.
"""

# no `from __future__ import annotations`: kernels evaluates the kernel's annotations itself
import numpy as np

import kernels as wp

from ..playback import Playback, shape_triangles
from ..usd import vertex_normals
from .camera import Camera

AMBIENT = 0.3  # share of the colour lit by ambient light (the rest by the light, where it is not shadowed)
POINT_SPHERE_BANDS = 4  # latitude bands of the small spheres drawn for points (48 triangles each)
SKY_TOP = (0.62, 0.72, 0.85)
SKY_BOTTOM = (0.93, 0.94, 0.96)
AMBIENT_K = wp.constant(AMBIENT)


@wp.kernel
def _shade_pixels(mesh: wp.uint64, indices: wp.array(dtype=wp.int32), normals: wp.array(dtype=wp.vec3),
                  face_track: wp.array(dtype=wp.int32), track_color: wp.array(dtype=wp.vec3), eye: wp.vec3,
                  forward: wp.vec3, right: wp.vec3, image_up: wp.vec3, tan_half_x: float, tan_half_y: float,
                  width: int, height: int, light: wp.vec3, max_t: float, offset: float, shadows: int,
                  ground_on: int, world_up: wp.vec3, ground_height: float, ground_low: wp.vec3,
                  ground_high: wp.vec3, ground_color: wp.vec3, checker_cell: float, checker_u: wp.vec3,
                  checker_v: wp.vec3, sky_top: wp.vec3, sky_bottom: wp.vec3, pixels: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    x = tid % width
    y = tid // width
    sx = (2.0 * (float(x) + 0.5) / float(width) - 1.0) * tan_half_x
    sy = (1.0 - 2.0 * (float(y) + 0.5) / float(height)) * tan_half_y
    d = wp.normalize(forward + sx * right + sy * image_up)
    s = float(y) / float(height)
    color = sky_top * (1.0 - s) + sky_bottom * s
    # the ground is intersected here, not kept in the mesh: its box would hold every ray in the BVH
    t_ground = max_t
    if ground_on != 0:
        along = wp.dot(d, world_up)
        if along != 0.0:
            t = (ground_height - wp.dot(eye, world_up)) / along
            if t > 0.0 and t < max_t:
                hit = eye + t * d
                lo = hit - ground_low
                hi = ground_high - hit
                if wp.min(wp.min(lo[0], lo[1]), lo[2]) >= 0.0 and wp.min(wp.min(hi[0], hi[1]), hi[2]) >= 0.0:
                    t_ground = t
    q = wp.mesh_query_ray(mesh, eye, d, t_ground)
    lit_any = int(0)
    base = wp.vec3(0.0)
    n = wp.vec3(0.0)
    g = wp.vec3(0.0)
    p = wp.vec3(0.0)
    if q.result:
        f = q.face
        n0 = normals[indices[3 * f]]
        n1 = normals[indices[3 * f + 1]]
        n2 = normals[indices[3 * f + 2]]
        # barycentrics as mesh_eval_position weighs the corners: u, v, 1 - u - v
        n = q.u * n0 + q.v * n1 + (1.0 - q.u - q.v) * n2
        g = q.normal
        if wp.dot(g, d) > 0.0:  # two-sided: the face seen from the eye's side
            g = -g
        if wp.dot(n, g) <= 0.0 or wp.length(n) < 1.0e-6:
            n = g  # a vertex normal pointing away (a sharp fold seen edge-on): the face's own
        n = wp.normalize(n)
        base = track_color[face_track[f]]
        p = eye + q.t * d
        lit_any = 1
    elif t_ground < max_t:
        p = eye + t_ground * d
        g = world_up
        if wp.dot(g, d) > 0.0:
            g = -g
        n = g
        base = ground_color
        cu = int(wp.floor(wp.dot(p, checker_u) / checker_cell))
        cv = int(wp.floor(wp.dot(p, checker_v) / checker_cell))
        if (cu + cv) % 2 != 0:
            base = base * 0.88
        lit_any = 1
    if lit_any != 0:
        lit = wp.max(wp.dot(n, light), 0.0)
        if shadows != 0 and lit > 0.0:
            blocker = wp.mesh_query_ray(mesh, p + offset * g, light, max_t)
            if blocker.result:
                lit = 0.0
        color = base * (AMBIENT_K + (1.0 - AMBIENT_K) * lit)
    pixels[tid] = color


class FrameRaster:
    """Renders frames of a playback: the geometry is assembled once, moved and refitted per frame.

    Args:
        playback: what to draw.
        shadows: cast shadow rays (about 1.5x the time of a frame without them).
        device: kernels device; the CPU by default.
    """

    def __init__(self, playback: Playback, *, shadows: bool = True, device=None):
        self.playback = playback
        self.shadows = bool(shadows)
        self.device = wp.get_device(device or "cpu")
        grounds = [t for t in playback.tracks if t.is_ground]
        self._ground = grounds[0] if grounds else None  # drawn by the kernel itself; any other ground as a mesh
        drawn = [t for t in playback.tracks if t is not self._ground]
        self._parts = [_Part(track) for track in drawn]
        offsets = np.cumsum([0] + [part.vertex_count for part in self._parts])
        faces = [part.faces + start for part, start in zip(self._parts, offsets[:-1])]
        face_track = [np.full(len(part.faces), i, np.int32) for i, part in enumerate(self._parts)]
        if not faces:  # nothing to draw: one degenerate triangle far away keeps the mesh valid
            faces, face_track = [np.zeros((1, 3), np.int32)], [np.zeros(1, np.int32)]
        self._faces = np.concatenate(faces).astype(np.int32)
        self._face_track = np.concatenate(face_track)
        low, high = playback.bounds(include_ground=False)
        self.scene_size = float(max(np.linalg.norm(high - low), 1e-3))
        colors = np.array([t.color for t in drawn] or [[0.0, 0.0, 0.0]], np.float32)
        dev = self.device
        self._points = wp.array(self._world_points(0), dtype=wp.vec3, device=dev)
        self._indices = wp.array(self._faces.reshape(-1), dtype=wp.int32, device=dev)
        self._normals = wp.array(self._world_normals(0), dtype=wp.vec3, device=dev)
        self._face_track_array = wp.array(self._face_track, dtype=wp.int32, device=dev)
        self._colors = wp.array(colors, dtype=wp.vec3, device=dev)
        self._mesh = wp.Mesh(self._points, self._indices)
        self._frame = 0
        self._pixels = None

    def render(self, frame: int, camera: Camera) -> np.ndarray:
        """The image of frame index `frame` seen by `camera`: uint8 RGB, shape (height, width, 3)."""
        self._move_to(frame)
        w, h = camera.width, camera.height
        if self._pixels is None or self._pixels.shape[0] != w * h:
            self._pixels = wp.empty(w * h, dtype=wp.vec3, device=self.device)
        forward, right, up = camera.basis()
        tan_half_y = float(np.tan(np.radians(camera.fov) / 2))
        light = _light_direction(forward, right, self.playback.up_vector)
        world_up = self.playback.up_vector
        reach = float(np.linalg.norm(camera.eye - camera.look_at)) + 40.0 * self.scene_size
        wp.launch(_shade_pixels, dim=w * h, device=self.device, inputs=[
            self._mesh.id, self._indices, self._normals, self._face_track_array, self._colors,
            wp.vec3(*camera.eye), wp.vec3(*forward), wp.vec3(*right), wp.vec3(*up), tan_half_y * w / h,
            tan_half_y, w, h, wp.vec3(*light), reach, 1e-4 * self.scene_size, int(self.shadows),
            *self._ground_arguments(world_up), wp.vec3(*SKY_TOP), wp.vec3(*SKY_BOTTOM), self._pixels])
        rgb = self._pixels.numpy().reshape(h, w, 3)
        return (np.clip(rgb, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)

    def _ground_arguments(self, world_up: np.ndarray) -> list:
        """ground_on, world_up, ground_height, ground_low, ground_high, ground_color, checker_cell, checker_u,
        checker_v of the kernel: the ground's box is padded along the up axis so its plane lies inside."""
        cu, cv = _ground_axes(self.playback.up_axis)
        ground = self._ground
        if ground is None:
            return [0, wp.vec3(*world_up), 0.0, wp.vec3(0.0), wp.vec3(0.0), wp.vec3(0.0), 1.0, wp.vec3(*cu),
                    wp.vec3(*cv)]
        low, high = ground.vertices.min(axis=0), ground.vertices.max(axis=0)
        height = float(np.mean(ground.vertices @ world_up))
        pad = 1e-3 * self.scene_size + 1e-6 * float(np.abs(high - low).max())
        return [1, wp.vec3(*world_up), height, wp.vec3(*(low - pad)), wp.vec3(*(high + pad)),
                wp.vec3(*ground.color), _checker_cell(self.scene_size), wp.vec3(*cu), wp.vec3(*cv)]

    def _move_to(self, frame: int):
        if frame == self._frame:
            return
        self._points.assign(self._world_points(frame))
        self._normals.assign(self._world_normals(frame))
        self._mesh.refit()
        self._frame = frame

    def _world_points(self, frame: int) -> np.ndarray:
        parts = [part.world_points(frame) for part in self._parts]
        return np.concatenate(parts).astype(np.float32) if parts else np.full((3, 3), 1e6, np.float32)

    def _world_normals(self, frame: int) -> np.ndarray:
        parts = [part.world_normals(frame) for part in self._parts]
        return np.concatenate(parts).astype(np.float32) if parts else np.zeros((3, 3), np.float32)


class _Part:
    """One track as triangles: its vertices and unit vertex normals in world coordinates at any frame."""

    def __init__(self, track):
        self.track = track
        if track.kind == "points":
            unit, faces = shape_triangles("sphere", radius=1.0, bands=POINT_SPHERE_BANDS)
            count = len(track.vertices)
            self._unit = unit.astype(np.float32)
            self._radii = track.radii.astype(np.float32)[:, None, None]
            self.faces = (faces[None] + len(unit) * np.arange(count)[:, None, None]).reshape(-1, 3)
            self.vertex_count = count * len(unit)
            self._sphere_normals = np.broadcast_to(self._unit, (count,) + unit.shape).reshape(-1, 3)
        else:
            self.faces = track.faces
            self.vertex_count = len(track.vertices)
            # flat-shaded shapes (boxes, planes) have vertices of their own per face, so averaging is harmless
            self._local_normals = vertex_normals(track.vertices, track.faces).astype(np.float32)

    def world_points(self, frame: int) -> np.ndarray:
        if self.track.kind == "points":
            centres = self.track.world_vertices(frame)
            return (centres[:, None, :] + self._radii * self._unit[None]).reshape(-1, 3)
        return self.track.world_vertices(frame)

    def world_normals(self, frame: int) -> np.ndarray:
        if self.track.kind == "points":
            return self._sphere_normals
        if self.track.positions is not None:
            return vertex_normals(self.track.positions[frame], self.track.faces)
        if self.track.transforms is not None:
            m = self.track.transforms[frame][:3, :3].astype(np.float64)
            n = self._local_normals @ np.linalg.inv(m)  # normals go by the inverse transpose (scale ops)
            length = np.linalg.norm(n, axis=1, keepdims=True)
            return np.divide(n, length, out=np.zeros_like(n), where=length > 0)
        return self._local_normals


def _light_direction(forward: np.ndarray, right: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Unit vector toward the light: high above, to the camera's right and a little behind it, so the sides
    facing the viewer are lit and shadows fall to the left of objects, onto ground the camera sees."""
    horizontal_back = -(forward - np.dot(forward, up) * up)
    light = 2.0 * up + 0.35 * horizontal_back + 0.9 * right
    return light / np.linalg.norm(light)


def _ground_axes(up_axis: str) -> tuple[tuple, tuple]:
    return ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)) if up_axis == "Y" else ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0))


def _checker_cell(scene_size: float) -> float:
    """A round checker size (1, 2 or 5 times a power of ten) of about a sixth of the scene's size."""
    target = scene_size / 6
    power = 10.0 ** np.floor(np.log10(target))
    return float(min((m * power for m in (1.0, 2.0, 5.0, 10.0)), key=lambda c: abs(np.log(c / target))))
