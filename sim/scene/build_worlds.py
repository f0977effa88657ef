"""A scene with `sim.worlds: N` as N worlds of one model: each world's objects, bodies and joints are built in a
builder of their own (from the scene's spec, or the one its `worlds.K.` overrides made) and added as one world
(ModelBuilder.begin_world / add_builder / end_world, sim/builder_worlds.py); the colliders are added after, shared
(world -1).

Every world stays at the scene's place: the shared colliders are where the scene puts them, so a world moved
aside would miss them. Worlds never touch each other wherever they are (contacts are filtered by world); `sim run`
lays them out side by side only in the USD it writes (sim/scene/world_output.py).
"""

from __future__ import annotations

import dataclasses

from ..builder import ModelBuilder


def add_worlds(b: ModelBuilder, world_specs: list, add_world_content) -> tuple:
    """Add world k's content of `world_specs[k]` as world k of `b`; (SceneObjects, their specs, SceneBodies,
    SceneJoints) of all worlds, world after world, with indices into `b`'s arrays and their `world` set.
    `add_world_content(builder, scene)` adds one world's objects (sim.scene.build's, which calls this)."""
    objects, specs, bodies, joints = [], [], [], []
    for k, spec in enumerate(world_specs):
        s = spec.sim
        one = ModelBuilder(up_axis=s.up_axis, gravity=s.gravity, bending=s.bending)
        world_objects, world_specs_k, world_bodies, world_joints = add_world_content(one, spec)
        p0, b0, s0 = b.particle_count, b.body_count, len(b.shape_type)
        t0, e0, g0 = len(b.tri_indices), len(b.edge_indices), len(b.spring_indices)
        j0, q0, d0 = b.joint_count, b.joint_coord_count, b.joint_dof_count
        if b.begin_world() != k:
            raise AssertionError("the scene's worlds are the builder's first")
        b.add_builder(one)
        b.end_world()
        objects += [dataclasses.replace(o, start=o.start + p0, stop=o.stop + p0, world=k,
                                        tri_range=_shift(o.tri_range, t0), edge_range=_shift(o.edge_range, e0),
                                        spring_range=_shift(o.spring_range, g0)) for o in world_objects]
        specs += world_specs_k
        bodies += [dataclasses.replace(body, index=body.index + b0, world=k,
                                       shape_rows=[r + s0 for r in body.shape_rows]) for body in world_bodies]
        joints += [dataclasses.replace(j, index=j.index + j0, dof_start=j.dof_start + d0,
                                       coord_start=j.coord_start + q0, world=k) for j in world_joints]
    return objects, specs, bodies, joints


def _shift(pair: tuple, by: int) -> tuple:
    return (pair[0] + by, pair[1] + by)
