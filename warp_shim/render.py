"""`warp.render` for Warp programs run through the shim: `UsdRenderer` writes through `sim.usd.UsdWriter`.

Warp's renderer API is immediate: inside `begin_frame(t)` ... `end_frame()` a program calls `render_points`,
`render_mesh`, ... with the current values, and the first call with a name creates the prim. Here each frame's
values are gathered and written as one `UsdWriter.write_frame`, so the file is the toolkit's own USD output
(atomic writes, `sim view` plays it). `OpenGLRenderer` needs a window this toolkit does not open: constructing
one raises `RendererUnavailable`, with the line to use instead.
"""

from __future__ import annotations

import numpy as np

# `sim` is imported where a renderer is made, not here: Warp programs import warp.render at their top even when
# they never render, and importing `sim` defines its solvers' kernels (0.6-0.8 s of a small example's run).

__all__ = ["UsdRenderer", "OpenGLRenderer", "RendererUnavailable"]


class RendererUnavailable(RuntimeError):
    """A Warp renderer this toolkit does not provide (the message says what to use instead)."""


def _numpy(value) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)


def _solid_color(colors):
    """One (r, g, b) for the prim, or None: Warp also takes per-point colours, which a display colour cannot
    hold, so those fall back to the viewer's default."""
    if colors is None:
        return None
    c = np.asarray(colors, dtype=np.float64)
    return tuple(c) if c.shape == (3,) else None


class UsdRenderer:
    """Warp's `warp.render.UsdRenderer`: a time-sampled USD stage of points, meshes, shapes and references.

    Args:
        stage: output path (`.usd`, `.usdc` or `.usda`).
        up_axis: "X", "Y" or "Z" as in Warp; "X" cannot be written (USD has no x up axis) and is a ValueError.
        fps: frames per second; `begin_frame(t)` writes at time code `t * fps`.
        scaling: uniform factor applied to every position and size written [stage units per simulation unit].
    """

    def __init__(self, stage, up_axis: str = "Y", fps: float = 60, scaling: float = 1.0, **_warp_options):
        if not isinstance(stage, (str, bytes)) and not hasattr(stage, "__fspath__"):
            raise TypeError("UsdRenderer(stage): this toolkit's renderer takes an output path, not a Usd.Stage")
        from sim.usd import UsdWriter

        self.writer = UsdWriter(stage, fps=float(fps), up_axis=str(up_axis).lower())
        self.stage_path = self.writer.path
        self.fps = float(fps)
        self.scaling = float(scaling)
        self.up_axis = str(up_axis).lower()
        self.time = 0.0
        self._points: dict = {}
        self._bodies: dict = {}
        self._known: set = set()

    # ------------------------------------------------------------------------------------------ frames

    def begin_frame(self, time: float) -> None:
        """Start gathering the frame at simulation time `time` [s]."""
        self.time = float(time)
        self._points, self._bodies = {}, {}

    def end_frame(self) -> None:
        """Write the gathered frame."""
        if self._points or self._bodies:
            self.writer.write_frame(self.time * self.fps, points=self._points, bodies=self._bodies)
        self._points, self._bodies = {}, {}

    def save(self) -> bool:
        """Write the stage so far to its file (atomically); the renderer stays usable. Returns True, as Warp's."""
        self.writer.save()
        print(f"Saved the USD stage file at '{self.stage_path}'")
        return True

    # -------------------------------------------------------------------------------------- primitives

    def render_points(self, name: str, points, radius, colors=None, as_spheres: bool = True, visible: bool = True):
        """Particles as a `UsdGeom.Points`; `radius` a number or one per point [units]."""
        p = _numpy(points).reshape(-1, 3) * self.scaling
        if name not in self._known:
            self.writer.add_points(name, p, np.asarray(radius, dtype=np.float64) * self.scaling,
                                   color=_solid_color(colors))
            self._known.add(name)
        self._points[name] = p

    def render_mesh(self, name: str, points, indices, colors=None, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0),
                    scale=(1.0, 1.0, 1.0), update_topology: bool = False, parent_body=None, is_template=False,
                    smooth_shading: bool = True, visible: bool = True):
        """A triangle mesh (`indices`: 3 vertex ids per triangle) placed by pos, rot (x, y, z, w) and scale;
        the topology is written once."""
        from sim.spatial import quat_rotate

        p = _numpy(points).reshape(-1, 3) * _numpy(scale)
        p = (quat_rotate(_numpy(rot), p) + _numpy(pos)) * self.scaling
        if name not in self._known:
            faces = np.asarray(indices.numpy() if hasattr(indices, "numpy") else indices).reshape(-1, 3)
            self.writer.add_mesh(name, p, faces, color=_solid_color(colors))
            self._known.add(name)
        self._points[name] = p

    def render_ref(self, name: str, path: str, pos, rot, scale, color=None):
        """The USD file at `path`, referenced and placed by pos, rot (x, y, z, w) and scale."""
        self._body(name, pos, rot, lambda p, q: self.writer.add_reference(
            name, path, pos=p, rot=q, scale=_numpy(scale) * self.scaling))

    def render_box(self, name: str, pos, rot, extents, parent_body=None, is_template=False, color=None):
        """A box of half extents `extents` (3,) [units]."""
        shape = dict(kind="box", half_extents=tuple(_numpy(extents) * self.scaling), color=_solid_color(color))
        self._body(name, pos, rot, lambda p, q: self.writer.add_body(name, [shape], pos=p, rot=q))

    def render_sphere(self, name: str, pos, rot, radius, parent_body=None, is_template=False, color=None):
        """A sphere of radius `radius` [units]."""
        shape = dict(kind="sphere", radius=float(radius) * self.scaling, color=_solid_color(color))
        self._body(name, pos, rot, lambda p, q: self.writer.add_body(name, [shape], pos=p, rot=q))

    def render_capsule(self, name: str, pos, rot, radius, half_height, parent_body=None, is_template=False,
                       up_axis: int = 1, color=None):
        """A capsule along its local y axis (Warp's default `up_axis=1`)."""
        if up_axis != 1:
            raise ValueError("UsdRenderer.render_capsule: only up_axis=1 (local y) is supported")
        shape = dict(kind="capsule", radius=float(radius) * self.scaling,
                     half_height=float(half_height) * self.scaling, color=_solid_color(color))
        self._body(name, pos, rot, lambda p, q: self.writer.add_body(name, [shape], pos=p, rot=q))

    def render_ground(self, size: float = 100.0, plane=None):
        """A ground plane through the origin, normal along the up axis, `size` [units] from the centre to an
        edge (Warp's meaning)."""
        if plane is not None:
            raise ValueError("UsdRenderer.render_ground: a custom plane equation is not supported")
        # the writer's plane lies in local x-z; for a z-up stage, turn it so its normal is +z
        rot = (0.0, 0.0, 0.0, 1.0) if self.up_axis == "y" else (0.7071067811865476, 0.0, 0.0, 0.7071067811865476)
        half = float(size) * self.scaling
        self.writer.add_collider("ground", kind="plane", rot=rot, width=half, length=half)

    def _body(self, name: str, pos, rot, create) -> None:
        p = tuple(_numpy(pos) * self.scaling)
        q = tuple(_numpy(rot))
        if name not in self._known:
            create(p, q)
            self._known.add(name)
        self._bodies[name] = (p, q)

    def __getattr__(self, name: str):
        if name.startswith("render_"):
            raise AttributeError(f"UsdRenderer.{name} is not provided by this toolkit's renderer (it writes "
                                 "points, meshes, references, boxes, spheres, capsules and a ground plane)")
        raise AttributeError(name)


class OpenGLRenderer:
    """Warp's interactive OpenGL window, not provided: constructing one says what to use instead."""

    def __init__(self, *args, **kwargs):
        raise RendererUnavailable(
            "warp.render.OpenGLRenderer: this toolkit opens no OpenGL window; write the frames with "
            "warp.render.UsdRenderer('out.usd') and play them with `sim view out.usd`")
