"""Worlds of ModelBuilder: begin_world/end_world, add_builder and replicate, and the world arrays at finalize.

A world is a group of particles, bodies, shapes and joints that interacts only with itself and with world -1
(everything added outside begin_world/end_world: shared static colliders such as the ground). Many worlds in one
Model are stepped by one launch per kernel; contacts never cross two different worlds (see sim/worlds.py).
Names and semantics follow Newton's ModelBuilder (world indices, -1 for the shared world).
"""

from __future__ import annotations

import numpy as np

import kernels as wp

from .worlds import world_ranges


def grid_offsets(count: int, spacing, up_axis: int) -> np.ndarray:
    """Offsets [m], shape [count, 3], laying `count` worlds out on a grid of `spacing` (x, y, z) [m]: along the
    one, two or three axes with a non-zero spacing, as square (cubic) as the count allows, centred on the origin
    except along the up axis (worlds are not pushed below the ground)."""
    spacing = np.asarray(spacing, dtype=np.float64).reshape(3)
    axes = [a for a in range(3) if spacing[a] != 0.0]
    offsets = np.zeros((count, 3))
    if not axes or count == 0:
        return offsets
    side = int(np.ceil(count ** (1.0 / len(axes)) - 1e-9))
    for i in range(count):
        rest = i
        for a in axes:  # the first non-zero axis varies fastest
            offsets[i, a] = (rest % side) * spacing[a]
            rest //= side
    centre = 0.5 * (offsets.min(axis=0) + offsets.max(axis=0))
    centre[up_axis] = 0.0
    return offsets - centre


class WorldBuilderMixin:
    """The world half of ModelBuilder (see sim/builder.py). Every particle, body, shape and joint records the
    world it was added in (`particle_world`, `body_world`, `shape_world`, `joint_world`: -1 outside a world)."""

    def _init_worlds(self):
        #: the world new entities go to (-1: shared), and the number of worlds begun so far
        self.current_world = -1
        self.world_count = 0
        self.particle_world, self.body_world, self.shape_world, self.joint_world = [], [], [], []

    def begin_world(self) -> int:
        """Start a new world: everything added until end_world belongs to it. Worlds do not nest. Returns the
        world's index."""
        if self.current_world != -1:
            raise RuntimeError(f"begin_world: world {self.current_world} is still open (call end_world first)")
        self.current_world = self.world_count
        self.world_count += 1
        return self.current_world

    def end_world(self):
        """Close the current world: what is added next is shared (world -1)."""
        if self.current_world == -1:
            raise RuntimeError("end_world: no world is open (call begin_world first)")
        self.current_world = -1

    def replicate(self, builder, copy_count: int, spacing=(0.0, 0.0, 0.0)) -> list:
        """Add `copy_count` copies of `builder`, each as a new world, offset on a grid of `spacing` (x, y, z)
        [m] (see grid_offsets; all at the same place by default: worlds never touch each other). Returns the
        new worlds' indices."""
        if copy_count < 0:
            raise ValueError(f"replicate: copy_count must be >= 0, got {copy_count}")
        worlds = []
        for offset in grid_offsets(int(copy_count), spacing, self.up_axis):
            worlds.append(self.begin_world())
            self.add_builder(builder, offset=offset)
            self.end_world()
        return worlds

    def add_builder(self, builder, *, offset=(0.0, 0.0, 0.0)):
        """Append everything of `builder` (its particles, springs, triangles, edges, bodies, shapes, joints and
        articulations), translated by `offset` [m], to the current world (or to world -1 outside one). The
        other builder must have no worlds of its own and the same up axis, gravity and bending model."""
        if builder is self:
            raise ValueError("add_builder: a builder cannot add itself")
        if builder.world_count:
            raise ValueError("add_builder: the builder to add has worlds of its own; add a builder without worlds")
        for name in ("up_axis", "gravity", "bending"):
            if getattr(builder, name) != getattr(self, name):
                raise ValueError(f"add_builder: {name} differs ({getattr(builder, name)!r} vs "
                                 f"{getattr(self, name)!r}): one Model has one {name}")
        offset = np.asarray(offset, dtype=np.float64).reshape(3)
        world = self.current_world
        p0, b0, j0 = self.particle_count, self.body_count, self.joint_count
        self._add_particles_of(builder, offset, p0, world)
        self._add_bodies_of(builder, offset, b0, world)
        self._add_shapes_of(builder, offset, b0, world)
        self._add_joints_of(builder, offset, b0, j0, world)

    def _add_particles_of(self, src, offset, p0: int, world: int):
        self.particle_q += [q + offset for q in src.particle_q]
        self.particle_qd += [np.array(v) for v in src.particle_qd]
        self.particle_mass += src.particle_mass
        self.particle_radius += src.particle_radius
        self.particle_flags += src.particle_flags
        self.particle_world += [world] * src.particle_count
        self.particle_thickness.update((p0 + i, h) for i, h in src.particle_thickness.items())
        self.spring_indices += [(i + p0, j + p0) for i, j in src.spring_indices]
        self.spring_rest_length += src.spring_rest_length
        self.spring_stiffness += src.spring_stiffness
        self.spring_damping += src.spring_damping
        self.tri_indices += [tuple(int(v) + p0 for v in t) for t in src.tri_indices]
        self.tri_poses += [np.array(p) for p in src.tri_poses]
        self.tri_areas += src.tri_areas
        self.tri_materials += src.tri_materials
        self.edge_indices += [tuple(-1 if v < 0 else int(v) + p0 for v in e) for e in src.edge_indices]
        self.edge_rest_angle += src.edge_rest_angle
        self.edge_bending_properties += src.edge_bending_properties
        self.edge_rest_scale += src.edge_rest_scale
        self.edge_bending_weights += [np.array(w) for w in src.edge_bending_weights]

    def _add_bodies_of(self, src, offset, b0: int, world: int):
        for q in src.body_q:
            self.body_q.append(np.concatenate([q[:3] + offset, q[3:]]))
        self.body_qd += [np.array(v) for v in src.body_qd]
        self.body_mass += src.body_mass
        self.body_com += [None if c is None else np.array(c) for c in src.body_com]
        self.body_inertia += [None if i is None else np.array(i) for i in src.body_inertia]
        self.body_world += [world] * src.body_count

    def _add_shapes_of(self, src, offset, b0: int, world: int):
        for s, body in enumerate(src.shape_body):
            t = np.array(src.shape_transform[s])
            if body < 0:  # static shapes are placed in world; shapes on bodies move with their body
                t[:3] += offset
            self.shape_transform.append(t)
            self.shape_body.append(body + b0 if body >= 0 else -1)
        self.shape_type += src.shape_type
        self.shape_scale += [np.array(sc) for sc in src.shape_scale]
        self.shape_density += src.shape_density
        self.shape_material += src.shape_material
        self.shape_mesh += src.shape_mesh  # (vertices, triangles) are shared, never modified
        self.shape_world += [world] * len(src.shape_type)

    def _add_joints_of(self, src, offset, b0: int, j0: int, world: int):
        q0, qd0 = self.joint_coord_count, self.joint_dof_count
        for j in range(src.joint_count):
            parent = src.joint_parent[j]
            x_p = np.array(src.joint_X_p[j])
            if parent < 0:  # anchored in world: the anchor moves with the copy, the coordinates stay
                x_p[:3] += offset
            self.joint_X_p.append(x_p)
            self.joint_parent.append(parent + b0 if parent >= 0 else -1)
        self.joint_type += src.joint_type
        self.joint_child += [c + b0 for c in src.joint_child]
        self.joint_X_c += [np.array(x) for x in src.joint_X_c]
        self.joint_dof_dim += src.joint_dof_dim
        self.joint_q_start += [s + q0 for s in src.joint_q_start]
        self.joint_qd_start += [s + qd0 for s in src.joint_qd_start]
        self.joint_axis += [np.array(a) for a in src.joint_axis]
        self.joint_dof_config += src.joint_dof_config  # read only at finalize
        self.joint_q += src.joint_q
        self.joint_qd += src.joint_qd
        self.joint_world += [world] * src.joint_count
        # the copy's articulations: its explicit starts and its root joints (as finalize would find them)
        starts = src._articulation_starts() if src.joint_count else []
        for s in starts:
            if not self.articulation_start or self.articulation_start[-1] != s + j0:
                self.articulation_start.append(s + j0)

    # ------------------------------------------------------------------------------------------------ finalize

    def _check_worlds(self):
        """Refuse elements that join two different worlds (a spring, triangle, edge or joint between them)."""
        pw = np.asarray(self.particle_world, dtype=np.int64)
        bw = np.asarray(self.body_world, dtype=np.int64)

        def check(kind, indices, worlds):
            for n, idx in enumerate(indices):
                ws = {int(worlds[i]) for i in idx if i >= 0}
                if len(ws) > 1:
                    raise ValueError(f"{kind} {n} joins worlds {sorted(ws)}: elements of different worlds "
                                     "never interact")

        check("spring", self.spring_indices, pw)
        check("triangle", self.tri_indices, pw)
        check("edge", self.edge_indices, pw)
        check("joint", zip(self.joint_parent, self.joint_child), bw)
        for s, b in enumerate(self.shape_body):
            if b >= 0 and self.shape_world[s] != self.body_world[b]:
                raise ValueError(f"shape {s} (world {self.shape_world[s]}) is on body {b} of world "
                                 f"{self.body_world[b]}")

    def _finalize_worlds(self, m, arr):
        """World arrays of `m` (particle_world, body_world, shape_world, joint_world; int32) and the host-side
        index ranges of each world (Model.world_ranges, see sim/worlds.py)."""
        if self.current_world != -1:
            raise RuntimeError(f"finalize: world {self.current_world} is still open (call end_world first)")
        self._check_worlds()
        ints = dict(np_dtype=np.int32)
        m.world_count = self.world_count
        m.particle_world = arr(self.particle_world, wp.int32, **ints)
        m.body_world = arr(self.body_world, wp.int32, **ints)
        m.shape_world = arr(self.shape_world, wp.int32, **ints)
        m.joint_world = arr(self.joint_world, wp.int32, **ints)
        m.world_ranges = world_ranges(self)
