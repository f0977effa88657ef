"""Many worlds in one Model: the contact filter the kernels share, each world's index ranges, per-world views of
State arrays and per-world reductions for losses.

A Model built with ModelBuilder.begin_world/end_world or replicate (sim/builder_worlds.py) holds `world_count`
independent worlds; every particle, body, shape and joint knows its world (Model.particle_world, body_world,
shape_world, joint_world; -1: shared with every world, such as the ground). Two elements interact only when
`worlds_interact` says so. The elements of one world are contiguous, so a world's part of any array is a slice:
`model.world_slice(i)` gives the slices, `model.world_state(state, i)` a State of views (no copies; writes go
through to the batched arrays).

Losses per world: `world_center_of_mass` and `world_kinetic_energy` reduce particles into an array of
[world_count] entries; `sum_worlds` adds such an array into the one-element loss a Tape differentiates. Worlds
do not interact, so the gradient of the sum with respect to world i's parameters is world i's own gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import kernels as wp

#: index kinds with a range per world (Model.world_ranges keys)
RANGE_KINDS = ("particle", "body", "shape", "joint", "joint_coord", "joint_dof", "spring", "tri", "edge",
               "articulation")


@wp.func
def worlds_interact(world_a: int, world_b: int):
    """Whether elements of worlds world_a and world_b may touch: the same world, or either is shared (-1)."""
    return world_a == world_b or world_a < 0 or world_b < 0


def _ranges_of(worlds: np.ndarray, world_count: int, kind: str) -> np.ndarray:
    """(start, end) of each world's elements, shape [world_count, 2]; checked contiguous. (0, 0): none."""
    out = np.zeros((world_count, 2), dtype=np.int64)
    for w in range(world_count):
        idx = np.flatnonzero(worlds == w)
        if len(idx) == 0:
            continue
        if idx[-1] - idx[0] + 1 != len(idx):
            raise ValueError(f"the {kind}s of world {w} are not contiguous (another world's {kind}s lie between)")
        out[w] = (idx[0], idx[-1] + 1)
    return out


def world_ranges(builder) -> dict:
    """{kind: int64 array [world_count, 2] of (start, end)} for every kind in RANGE_KINDS, from a builder's
    world lists (an element of springs, triangles and edges belongs to its first particle's world)."""
    n = builder.world_count
    pw = np.asarray(builder.particle_world, dtype=np.int64)

    def first_particle_world(indices):
        first = [next((int(i) for i in idx if i >= 0), -1) for idx in indices]
        return pw[first] if len(first) else np.zeros(0, np.int64)

    jw = np.asarray(builder.joint_world, dtype=np.int64)
    r = {
        "particle": _ranges_of(pw, n, "particle"),
        "body": _ranges_of(np.asarray(builder.body_world, dtype=np.int64), n, "body"),
        "shape": _ranges_of(np.asarray(builder.shape_world, dtype=np.int64), n, "shape"),
        "joint": _ranges_of(jw, n, "joint"),
        "spring": _ranges_of(first_particle_world(builder.spring_indices), n, "spring"),
        "tri": _ranges_of(first_particle_world(builder.tri_indices), n, "triangle"),
        "edge": _ranges_of(first_particle_world([e[2:] for e in builder.edge_indices]), n, "edge"),
    }
    q_start = np.asarray(builder.joint_q_start + [builder.joint_coord_count], dtype=np.int64)
    qd_start = np.asarray(builder.joint_qd_start + [builder.joint_dof_count], dtype=np.int64)
    r["joint_coord"] = np.stack([q_start[r["joint"][:, 0]], q_start[r["joint"][:, 1]]], axis=1) if n else \
        np.zeros((0, 2), np.int64)
    r["joint_dof"] = np.stack([qd_start[r["joint"][:, 0]], qd_start[r["joint"][:, 1]]], axis=1) if n else \
        np.zeros((0, 2), np.int64)
    starts = builder._articulation_starts() if builder.joint_count else []
    art_world = jw[np.asarray(starts, dtype=np.int64)] if starts else np.zeros(0, np.int64)
    r["articulation"] = _ranges_of(art_world, n, "articulation")
    for key in ("joint_coord", "joint_dof"):  # a world without joints has an empty range
        r[key][r["joint"][:, 0] == r["joint"][:, 1]] = 0
    return r


@dataclass(frozen=True)
class WorldSlice:
    """The index ranges of one world in the batched arrays (Python slices), e.g. `state.particle_q[s.particle]`.
    joint_coord indexes joint_q, joint_dof joint_qd / joint_f; the others the arrays named after them."""

    world: int
    particle: slice
    body: slice
    shape: slice
    joint: slice
    joint_coord: slice
    joint_dof: slice
    spring: slice
    tri: slice
    edge: slice
    articulation: slice


def world_slice(model, world: int) -> WorldSlice:
    """The slices of world `world` (0 <= world < model.world_count) of `model`."""
    if not 0 <= world < model.world_count:
        raise IndexError(f"world {world} does not exist (the model has {model.world_count} worlds)")
    return WorldSlice(world, **{k: slice(int(model.world_ranges[k][world, 0]), int(model.world_ranges[k][world, 1]))
                                for k in RANGE_KINDS})


def world_state(model, state, world: int):
    """A State whose arrays are views of world `world`'s part of `state`'s (particle_q/qd/f, body_q/qd/f,
    joint_q/qd): reading them reads the batched state, writing them writes it."""
    s = world_slice(model, world)
    view = type(state)()  # a State like `state` (sim.model's; not imported: sim.model imports this module)
    for name, part in (("particle_q", s.particle), ("particle_qd", s.particle), ("particle_f", s.particle),
                       ("body_q", s.body), ("body_qd", s.body), ("body_f", s.body),
                       ("joint_q", s.joint_coord), ("joint_qd", s.joint_dof)):
        a = getattr(state, name, None)
        setattr(view, name, None if a is None else a[part])
    view.particle_count = s.particle.stop - s.particle.start
    view.body_count = s.body.stop - s.body.start
    return view


_SHARED_CACHE = "_shared_world_arrays"


def element_worlds(model, kind: str, count: int) -> wp.array:
    """Model.<kind>_world (int32, [count]) for the kernels; a model assembled by hand without one gets a cached
    array of -1 (every element shared: the filter then changes nothing)."""
    a = getattr(model, kind + "_world", None)
    if a is not None and a.shape[0] == count:
        return a
    cache = model.__dict__.setdefault(_SHARED_CACHE, {})
    a = cache.get((kind, count))
    if a is None:
        a = wp.full(count, -1, dtype=wp.int32, device=model.device)
        cache[(kind, count)] = a
    return a


def world_shape_table(model) -> wp.array:
    """The shapes a particle of each world meets, int32 [world_count + 1, slots]: row w + 1 lists the shared
    shapes and world w's, row 0 (for shared particles) every shape, each in index order and padded with -1.
    slots is the longest row that a particle uses (shape_count for a model without worlds, where row 0 is
    0, 1, 2, ...). Built on the host once per model (cached; shape_world never changes)."""
    key = "_world_shape_table"
    cached = model.__dict__.get(key)
    shape_world = element_worlds(model, "shape", model.shape_count)
    if cached is not None and cached[0] is shape_world:
        return cached[1]
    shapes = shape_world.numpy().astype(np.int64)
    particles = element_worlds(model, "particle", model.particle_count).numpy()
    rows = [np.arange(model.shape_count)]
    rows += [np.flatnonzero((shapes == w) | (shapes < 0)) for w in range(model.world_count)]
    used = np.unique(particles.astype(np.int64) + 1) if len(particles) else np.zeros(0, np.int64)
    slots = max([len(rows[r]) for r in used], default=0)
    table = np.full((len(rows), max(slots, 1)), -1, dtype=np.int32)
    for r, row in enumerate(rows):
        row = row[:slots]
        table[r, :len(row)] = row
    array = wp.array(table, dtype=wp.int32, device=model.device)
    model.__dict__[key] = (shape_world, array, slots)
    return array


def world_shape_slots(model) -> int:
    """The slots of world_shape_table(model): the second launch dimension of particle-shape contact kernels."""
    world_shape_table(model)
    return model.__dict__["_world_shape_table"][2]


# ------------------------------------------------------------------------------------------------ per-world losses


@wp.kernel
def world_mass_moment_kernel(particle_world: wp.array(dtype=wp.int32), particle_mass: wp.array(dtype=float),
                             particle_q: wp.array(dtype=wp.vec3), moment: wp.array(dtype=wp.vec3),
                             mass: wp.array(dtype=float)):
    i = wp.tid()
    w = particle_world[i]
    if w >= 0:
        m = particle_mass[i]
        wp.atomic_add(moment, w, particle_q[i] * m)
        wp.atomic_add(mass, w, m)


@wp.kernel
def world_center_kernel(moment: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
                        center: wp.array(dtype=wp.vec3)):
    w = wp.tid()
    if mass[w] > 0.0:
        center[w] = moment[w] / mass[w]


@wp.kernel
def world_kinetic_energy_kernel(particle_world: wp.array(dtype=wp.int32), particle_mass: wp.array(dtype=float),
                                particle_qd: wp.array(dtype=wp.vec3), energy: wp.array(dtype=float)):
    i = wp.tid()
    w = particle_world[i]
    if w >= 0:
        v = particle_qd[i]
        wp.atomic_add(energy, w, 0.5 * particle_mass[i] * wp.dot(v, v))


@wp.kernel
def sum_worlds_kernel(per_world: wp.array(dtype=float), total: wp.array(dtype=float)):
    wp.atomic_add(total, 0, per_world[wp.tid()])


def _per_world(model, dtype, *inputs):
    grad = any(a is not None and a.requires_grad for a in inputs)
    return wp.zeros(model.world_count, dtype=dtype, device=model.device, requires_grad=grad)


def world_center_of_mass(model, state) -> wp.array:
    """Centre of mass of each world's particles [m], vec3, shape [world_count] (zero for a world of no mass;
    shared particles, world -1, count in none)."""
    moment = _per_world(model, wp.vec3, model.particle_mass, state.particle_q)
    mass = _per_world(model, float, model.particle_mass)
    center = _per_world(model, wp.vec3, model.particle_mass, state.particle_q)
    if model.particle_count:
        wp.launch(world_mass_moment_kernel, dim=model.particle_count,
                  inputs=[model.particle_world, model.particle_mass, state.particle_q], outputs=[moment, mass],
                  device=model.device)
    if model.world_count:
        wp.launch(world_center_kernel, dim=model.world_count, inputs=[moment, mass], outputs=[center],
                  device=model.device)
    return center


def world_kinetic_energy(model, state) -> wp.array:
    """Kinetic energy of each world's particles sum(m |v|^2) / 2 [J], shape [world_count]."""
    energy = _per_world(model, float, model.particle_mass, state.particle_qd)
    if model.particle_count:
        wp.launch(world_kinetic_energy_kernel, dim=model.particle_count,
                  inputs=[model.particle_world, model.particle_mass, state.particle_qd], outputs=[energy],
                  device=model.device)
    return energy


def sum_worlds(per_world: wp.array) -> wp.array:
    """The sum of a per-world loss (float, shape [world_count]) as the one-element array a Tape's backward
    takes: worlds are independent, so its gradient with respect to world i's parameters is that of world i's
    loss alone. Report the per-world values with `per_world.numpy()`."""
    total = wp.zeros(1, dtype=float, device=per_world.device, requires_grad=per_world.requires_grad)
    if per_world.shape[0]:
        wp.launch(sum_worlds_kernel, dim=per_world.shape[0], inputs=[per_world], outputs=[total],
                  device=per_world.device)
    return total

