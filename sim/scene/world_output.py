"""The USD output of a scene with several worlds (`sim.worlds: N`): one file with the worlds side by side, or one
file per world (`sim run --split`).

Side by side, world k's prims are named `<name>_w<k>` and its points and bodies are written moved by the world's
offset: the worlds lie on a grid across the up axis (ModelBuilder.replicate's layout, sim/builder_worlds.py),
`sim.world_spacing` apart (default one and a half times the scene's initial horizontal extent, at least 1 m). The
offsets are stored in the stage's custom layer data (`sim:world_offsets`, [m], one (x, y, z) per world), so a
reader can bring any world back to the scene's place. The ground is written once; the other colliders once per
world, at the world's offset (they are shared in the simulation, where every world stays at the scene's place).
Split, `out/<scene>_w<k>.usd` holds world k as a one-world run of the scene would write it: the same prim names,
no offset.
"""

from __future__ import annotations

import os

import numpy as np

from ..builder_worlds import grid_offsets
from .build import collider_usd_shape, usd_shape

#: smallest distance between two worlds in the USD [m]
MIN_WORLD_SPACING = 1.0


def split_paths(path: str, world_count: int) -> list:
    """`out/cloth.usd` -> [`out/cloth_w0.usd`, `out/cloth_w1.usd`, ...]."""
    stem, extension = os.path.splitext(path)
    return [f"{stem}_w{k}{extension}" for k in range(world_count)]


def world_spacing(built, spacing: float | None) -> float:
    """The distance [m] between neighbouring worlds: `spacing`, or 1.5 times world 0's initial extent across the
    up axis (its particles, bodies with their shapes and the non-ground colliders), at least MIN_WORLD_SPACING."""
    if spacing is not None:
        return float(spacing)
    m = built.model
    up = int(m.up_axis)
    points = []
    if m.particle_count:
        q = m.particle_q.numpy()
        points += [q[o.start:o.stop] for o in built.objects if o.world == 0]
    if built.bodies:
        q0 = m.body_q0.numpy()
        for b in built.bodies:
            if b.world == 0:
                reach = max((_shape_reach(s) for s in b.shapes), default=0.0)
                points.append(q0[b.index, :3] + np.array([[-reach] * 3, [reach] * 3]))
    poses = m.shape_transform.numpy() if built.colliders else None
    for c, row in zip(built.colliders, built.collider_shapes):
        if c.type != "ground":
            reach = _shape_reach(usd_shape(c))
            points.append(poses[row, :3] + np.array([[-reach] * 3, [reach] * 3]))
    if not points:
        return MIN_WORLD_SPACING
    p = np.concatenate([np.asarray(x, np.float64).reshape(-1, 3) for x in points])
    across = [a for a in range(3) if a != up]
    extent = float(np.max(p[:, across].max(axis=0) - p[:, across].min(axis=0)))
    return max(1.5 * extent, MIN_WORLD_SPACING)


def _shape_reach(shape: dict) -> float:
    """An upper bound [m] of how far a shape (UsdWriter's description) reaches from its frame's origin."""
    centre = float(np.linalg.norm(shape.get("pos", (0.0, 0.0, 0.0))))
    if shape["kind"] == "box":
        return centre + float(np.linalg.norm(shape["half_extents"]))
    if shape["kind"] == "mesh":
        points = np.asarray(shape["points"], np.float64).reshape(-1, 3) * np.asarray(shape.get("scale", 1.0))
        return centre + float(np.linalg.norm(points, axis=1).max()) if len(points) else centre
    return centre + float(shape.get("radius", 0.0)) + float(shape.get("half_height", 0.0))


def world_offsets(built, spacing: float | None) -> np.ndarray:
    """Offsets [m], shape [world_count, 3], of the worlds in the side-by-side USD."""
    d = world_spacing(built, spacing)
    up = int(built.model.up_axis)
    step = np.full(3, d)
    step[up] = 0.0
    return grid_offsets(built.world_count, step, up)


class WorldsWriter:
    """Receives the frames of all worlds and writes them to one UsdWriter-like receiver (side by side) or to one
    per world (split). `write_frame` takes points and bodies keyed by (world, name) and routes each to its file,
    under its prim name, moved by its world's offset. The rest of UsdWriter's run-time interface (save, close,
    abort, last_frame, saved_frame) acts on every file; `paths` are the files written."""

    def __init__(self, writers: list, routes: dict, paths: list):
        self.writers, self.routes, self.paths = writers, routes, paths

    def write_frame(self, frame, *, points: dict | None = None, bodies: dict | None = None):
        per = [({}, {}) for _ in self.writers]
        for key, p in (points or {}).items():
            w, name, offset = self.routes[key]
            per[w][0][name] = np.asarray(p, np.float64) + offset
        for key, (pos, rot) in (bodies or {}).items():
            w, name, offset = self.routes[key]
            per[w][1][name] = (np.asarray(pos, np.float64) + offset, rot)
        for writer, (p, b) in zip(self.writers, per):
            writer.write_frame(frame, points=p, bodies=b)

    def save(self) -> str:
        for w in self.writers:
            w.save()
        return self.paths[0] if self.paths else None

    def close(self) -> str:
        for w in self.writers:
            w.close()
        return self.paths[0] if self.paths else None

    def abort(self):
        for w in self.writers:
            w.abort()

    @property
    def last_frame(self):
        frames = [w.last_frame for w in self.writers]
        return None if any(f is None for f in frames) else min(frames)

    @property
    def saved_frame(self):
        frames = [w.saved_frame for w in self.writers]
        return None if any(f is None for f in frames) else min(frames)


def worlds_writer(built, output, *, make, paths: list, spacing: float | None) -> WorldsWriter:
    """A WorldsWriter of `built`'s worlds: side by side in one receiver when `paths` has one entry (or none:
    `make` is a recorder), else one per world. `make(path)` makes a receiver; `output` is the scene's output
    section (normals, colliders)."""
    split = len(paths) > 1
    count = built.world_count
    offsets = np.zeros((count, 3)) if split else world_offsets(built, spacing)
    writers = [make(p) for p in (paths if paths else [None])]
    if not split and hasattr(writers[0], "set_layer_data"):
        writers[0].set_layer_data("sim:world_offsets", offsets)
    routes = {}
    q = built.model.particle_q.numpy()
    q0 = built.model.body_q0.numpy()
    for obj in built.objects:
        w, suffix = (obj.world, "") if split else (0, f"_w{obj.world}")
        routes[(obj.world, obj.name)] = (w, obj.name + suffix, offsets[obj.world])
        points = q[obj.start:obj.stop] + offsets[obj.world]
        if obj.kind == "cloth":
            writers[w].add_mesh(obj.name + suffix, points, obj.triangles, normals=output.normals, color=obj.color)
        else:
            writers[w].add_points(obj.name + suffix, points, obj.radius, color=obj.color)
    for body in built.bodies:
        w, suffix = (body.world, "") if split else (0, f"_w{body.world}")
        routes[(body.world, body.name)] = (w, body.name + suffix, offsets[body.world])
        writers[w].add_body(body.name + suffix, body.shapes, pos=q0[body.index, :3] + offsets[body.world],
                            rot=q0[body.index, 3:])
    if output.colliders:
        _add_colliders(built, writers, offsets, split)
    return WorldsWriter(writers, routes, list(paths))


def _add_colliders(built, writers: list, offsets: np.ndarray, split: bool):
    poses = built.model.shape_transform.numpy()
    for c, row in zip(built.colliders, built.collider_shapes):
        shape = collider_usd_shape(c, poses[row])
        if split:
            for w in writers:
                w.add_collider(c.name, **shape)
        elif c.type == "ground":  # infinite: once, drawn wide enough for every world
            span = float(np.max(np.ptp(offsets, axis=0))) if len(offsets) else 0.0
            shape.update(width=shape["width"] + span / 2, length=shape["length"] + span / 2)
            writers[0].add_collider(c.name, **shape)
        else:
            for k, offset in enumerate(offsets):
                writers[0].add_collider(f"{c.name}_w{k}", **dict(shape, pos=tuple(np.add(shape["pos"], offset))))
