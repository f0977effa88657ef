"""Turn a validated scene (`format.SCENE` spec) into a Model, a solver and the per-object bookkeeping the runner
and the USD writer need (which particles and triangles belong to which object)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import kernels as wp

from ..builder import ModelBuilder
from ..spatial import quat_normalized, quat_rotate
from ..model import ContactParams, Control
from ..solvers.base import Solver
from ..solvers.registry import body_solver_name, solver_class
from .build_worlds import add_worlds
from .build_joints import (SceneJoint, add_robot, add_scene_joints, body_shapes, initial_body_state,
                           spread_joint_force, upload_forces)
from .format import MATERIAL
from .format_joints import articulated
from .schema import Ctx


@dataclass
class SceneObject:
    """One cloth or particle object: its particles are `model.particle_q[start:stop]`; `triangles` (cloth only)
    index them from `start`, shape [tri_count, 3]."""

    name: str
    kind: str  # "cloth" or "particles"
    start: int
    stop: int
    radius: np.ndarray  # contact radius of each particle [m], shape [stop - start]
    color: tuple
    triangles: np.ndarray | None = None
    # the object's rows of model.tri_*, edge_* and spring_* arrays: (first, end)
    tri_range: tuple = (0, 0)
    edge_range: tuple = (0, 0)
    spring_range: tuple = (0, 0)
    # control forces [N] per frame on each particle, vec3 shape [frames]; None: no control
    forces: object = None
    world: int = 0  # the scene world it belongs to (sim.worlds)

    @property
    def count(self) -> int:
        return self.stop - self.start


@dataclass
class SceneBody:
    """A rigid body: `index` into the model's body arrays; `shapes` in the body frame, as UsdWriter takes them."""

    name: str
    index: int
    shapes: list
    color: tuple
    shape_rows: list = field(default_factory=list)  # the body's rows of the model's shape arrays
    world: int = 0  # the scene world it belongs to (sim.worlds)


class CoupledSolver(Solver):
    """Bodies and particles in one step: the bodies' solver moves the bodies, the particle solver moves cloth and
    particles against the bodies' shapes at the step's start (one-way coupling: bodies feel no cloth)."""

    def __init__(self, rigid, particles):
        self.rigid, self.particles = rigid, particles

    def step(self, model, state_in, state_out, control, dt: float):
        self.rigid.step(model, state_in, state_out, control, dt)
        self.particles.step(model, state_in, state_out, control, dt)

    def notify_model_changed(self, flags):
        self.rigid.notify_model_changed(flags)
        self.particles.notify_model_changed(flags)


@dataclass
class BuiltScene:
    model: object
    solver: object
    dt: float  # substep [s]
    objects: list = field(default_factory=list)
    colliders: list = field(default_factory=list)  # collider specs (type, name, pos, rot, ...)
    substeps: int = 1
    bodies: list = field(default_factory=list)  # SceneBody
    collider_shapes: list = field(default_factory=list)  # the colliders' rows of the model's shape arrays
    joints: list = field(default_factory=list)  # SceneJoint: the scene's joints, then the robot's
    uses_rigid: bool = False  # bodies stepped by SolverRigid (else SolverFeatherstone, or none)
    gravity: float = -9.81  # [m/s^2] along the up axis
    max_distance: float | None = None  # sim.max_distance [m]: the blow-up check's distance bound (None: derived)
    max_speed: float | None = None  # sim.max_speed [m/s]: its speed bound (None: derived)
    world_count: int = 1  # sim.worlds: objects, bodies and joints are listed world after world

    def control(self, frame: int):
        """The Control of the steps of `frame` (1-based): the objects' and joints' control forces, or None
        without any (drive targets are the model's)."""
        active = [o for o in self.objects if o.forces is not None and frame <= o.forces.shape[0]]
        pushed = [j for j in self.joints if j.forces is not None and frame <= j.force_frames]
        if not active and not pushed:
            return None
        m = self.model
        c = Control()
        if active:
            c.particle_f = wp.zeros(m.particle_count, dtype=wp.vec3, device=m.device,
                                    requires_grad=_forces_require_grad(active))
            for o in active:
                wp.launch(spread_force, dim=o.count, inputs=[o.forces, frame - 1, o.start], outputs=[c.particle_f],
                          device=m.device)
        if pushed:
            c.joint_f = wp.zeros(m.joint_dof_count, dtype=float, device=m.device,
                                 requires_grad=_forces_require_grad(pushed))
            for j in pushed:
                wp.launch(spread_joint_force, dim=j.dof_count, inputs=[j.forces, frame - 1, j.dof_count, j.dof_start],
                          outputs=[c.joint_f], device=m.device)
        return c

    def joint(self, name: str) -> SceneJoint | None:
        return next((j for j in self.joints if j.name == name), None)

    def step_frame(self, state, scratch, frame: int, fresh_state=None):
        """Advance `state` by one frame (`substeps` solver steps); returns the new state. With `fresh_state` (a
        function returning a new State) every step writes a new State, as a Tape needs; otherwise the two given
        states alternate."""
        control = self.control(frame)
        for _ in range(self.substeps):
            out = fresh_state() if fresh_state is not None else scratch
            self.solver.step(self.model, state, out, control, self.dt)
            state, scratch = out, state
        return state, scratch

    @property
    def capturable(self) -> bool:
        """Whether a frame's steps can be captured once and replayed (kernels.runtime.capture): every frame launches the
        same work, on the device alone. Not with control forces (each frame launches with its own frame index),
        nor with rigid bodies in a model built for gradients (SolverRigid then sizes its contact slots on the
        host each step; without gradients its contacts never leave the device), nor with cloth self-contact (the
        host decides at each step whether the pairs are searched again, sim/self_contact.py)."""
        if self.bodies and self.model.requires_grad:
            return False
        if getattr(self.model, "self_contact_enabled", False):
            return False
        return all(o.forces is None for o in self.objects) and all(j.forces is None for j in self.joints)

    def object_of_particle(self, index: int) -> SceneObject | None:
        for o in self.objects:
            if o.start <= index < o.stop:
                return o
        return None


def _forces_require_grad(objects) -> bool:
    return any(o.forces.requires_grad for o in objects)


@wp.kernel
def spread_force(forces: wp.array(dtype=wp.vec3), frame: int, start: int, particle_f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    particle_f[start + i] = forces[frame]


def cloth_geometry(spec) -> tuple:
    """Local vertices [n, 3] (m) and triangles [m, 3] of a cloth spec, before its pos/rot."""
    if spec.grid is not None:
        g = spec.grid
        xs, ys = np.meshgrid(np.arange(g.dim_x + 1) * g.cell_x, np.arange(g.dim_y + 1) * g.cell_y)
        verts = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
        return verts, None
    if spec.mesh is not None:
        return spec.mesh.vertices * spec.mesh.scale, spec.mesh.triangles
    return np.asarray(spec.inline.vertices, np.float64), np.asarray(spec.inline.triangles, np.int64)


def fixed_vertices(spec, verts: np.ndarray) -> list:
    """Indices named by `fix`: integers as given, sides and corners of the local bounding box in x and y."""
    if not spec.fix:
        return []
    lo, hi = verts[:, :2].min(axis=0), verts[:, :2].max(axis=0)
    tol = 1e-6 * max(float(np.max(hi - lo)), 1e-12)
    at = {"left": np.abs(verts[:, 0] - lo[0]) <= tol, "right": np.abs(verts[:, 0] - hi[0]) <= tol,
          "bottom": np.abs(verts[:, 1] - lo[1]) <= tol, "top": np.abs(verts[:, 1] - hi[1]) <= tol}
    out = set()
    for f in spec.fix:
        if isinstance(f, int):
            out.add(f)
        elif f.endswith("_edge"):
            out.update(np.nonzero(at[f[:-5]])[0].tolist())
        else:
            a, b = f.split("_")
            out.update(np.nonzero(at[a] & at[b])[0].tolist())
    return sorted(out)


def _material(scene, cloth):
    m = cloth.material
    if m is None:
        return MATERIAL.convert({}, Ctx(None))
    return scene.materials[m] if isinstance(m, str) else m


def _add_cloth(b: ModelBuilder, scene, c) -> SceneObject:
    mat = _material(scene, c)
    verts, tris = cloth_geometry(c)
    fixed = fixed_vertices(c, verts)
    common = dict(tri_ke=mat.tri_ke, tri_ka=mat.tri_ka, tri_kd=mat.tri_kd, edge_ke=mat.edge_ke, edge_kd=mat.edge_kd,
                  add_springs=mat.springs, spring_ke=mat.spring_ke, spring_kd=mat.spring_kd, radius=c.radius,
                  self_collision=c.self_collision, thickness=c.thickness)
    start = b.particle_count
    ranges = (len(b.tri_indices), len(b.edge_indices), len(b.spring_indices))
    if c.grid is not None:
        g = c.grid
        ids = b.add_cloth_grid(c.pos, c.rot, c.vel, g.dim_x, g.dim_y, g.cell_x, g.cell_y,
                               mass=c.mass if c.mass is not None else 0.01, **common)
        for k in fixed:
            b.particle_mass[ids[k]] = 0.0
        tris = np.asarray(b.tri_indices[-2 * g.dim_x * g.dim_y:], np.int64) - start
    else:
        density = c.density if c.density is not None else 0.2
        b.add_cloth_mesh(c.pos, c.rot, 1.0, c.vel, verts, tris, density=density, fixed=fixed, **common)
    stop = b.particle_count
    _set_velocities(b, c, start)
    return SceneObject(c.name, "cloth", start, stop, np.full(stop - start, c.radius), tuple(c.color),
                       np.asarray(tris, np.int32), (ranges[0], len(b.tri_indices)), (ranges[1], len(b.edge_indices)),
                       (ranges[2], len(b.spring_indices)))


def _set_velocities(b: ModelBuilder, spec, start: int):
    if spec.velocities is not None:
        for k, v in enumerate(spec.velocities):
            b.particle_qd[start + k] = np.asarray(v, np.float64)


def _add_particles(b: ModelBuilder, p) -> SceneObject:
    start = b.particle_count
    if p.grid is not None:
        g = p.grid
        radius = p.radius if p.radius is not None else 0.5 * g.spacing
        b.add_particle_grid(p.pos, p.rot, p.vel, *g.dim, g.spacing, g.spacing, g.spacing, mass=p.mass,
                            jitter=g.jitter, radius=radius, seed=g.seed)
    else:
        radius = p.radius if p.radius is not None else 0.01
        world = np.asarray(p.pos) + quat_rotate(quat_normalized(p.rot), np.asarray(p.points, np.float64))
        for x in world.reshape(-1, 3):
            b.add_particle(x, p.vel, p.mass, radius)
    stop = b.particle_count
    _set_velocities(b, p, start)
    return SceneObject(p.name, "particles", start, stop, np.full(stop - start, radius), tuple(p.color))


def _contact_material(spec) -> dict:
    """The builder keywords of a rigid material: the normal force's penalty form (ke, kd) when the scene gave ke
    or kd, else its time-constant form."""
    m = spec.material
    form = dict(ke=m.ke, kd=m.kd) if m.given("ke") or m.given("kd") else \
        dict(timeconst=m.timeconst, dampratio=m.dampratio)
    return dict(form, kf=m.kf, mu=m.mu, restitution=m.restitution)


def _add_shape(b: ModelBuilder, s, body: int = -1, **extra):
    """A sphere, box, capsule or mesh spec (collider or body shape) as a builder shape."""
    if s.type == "sphere":
        return b.add_shape_sphere(s.pos, s.rot, radius=s.radius, body=body, **extra)
    if s.type == "box":
        return b.add_shape_box(s.pos, s.rot, *s.half_extents, body=body, **extra)
    if s.type == "capsule":
        return b.add_shape_capsule(s.pos, s.rot, radius=s.radius, half_height=s.half_height, body=body, **extra)
    if s.type == "mesh":
        extra.pop("density", None)  # a mesh adds no mass
        return b.add_shape_mesh(s.vertices, s.triangles, s.pos, s.rot, scale=s.scale, body=body, **extra)
    raise AssertionError(s.type)  # the format admits only the types above


def _add_collider(b: ModelBuilder, c) -> int:
    if c.type == "ground":
        return b.add_ground_plane(c.height, **_contact_material(c))
    return _add_shape(b, c, **_contact_material(c))


def usd_shape(s) -> dict:
    """A shape spec as UsdWriter describes shapes."""
    out = dict(kind=s.type, pos=tuple(s.pos), rot=tuple(s.rot))
    if s.type == "box":
        out["half_extents"] = tuple(s.half_extents)
    elif s.type == "mesh":
        out.update(points=s.vertices, faces=s.triangles, scale=(s.scale,) * 3)
    else:
        out["radius"] = s.radius
        if s.type == "capsule":
            out["half_height"] = s.half_height
    return out


def collider_usd_shape(c, pose) -> dict:
    """The UsdWriter description of a collider spec at its model pose (px, py, pz, qx, qy, qz, qw): the pose the
    builder gave it, so the ground's orientation for the up axis is not worked out twice."""
    shape = dict(kind="plane", width=c.size / 2, length=c.size / 2) if c.type == "ground" else usd_shape(c)
    shape.update(pos=tuple(float(v) for v in pose[:3]), rot=tuple(float(v) for v in pose[3:]))
    return shape


def _add_body(b: ModelBuilder, spec) -> SceneBody:
    index = b.add_body(pos=spec.pos, rot=spec.rot, mass=spec.mass, linear_velocity=spec.vel,
                       angular_velocity=spec.angular_vel)
    rows = [_add_shape(b, s, index, density=s.density, **_contact_material(spec)) for s in spec.shapes]
    return SceneBody(spec.name, index, [usd_shape(s) for s in spec.shapes], tuple(spec.color), rows)


def _contact(spec) -> ContactParams:
    return ContactParams(ke=spec.ke, kd=spec.kd, kf=spec.kf, mu=spec.mu, margin=spec.margin)


def make_solver(model, sim_spec, articulated: bool = False):
    """The particle solver named by `sim.solver.type`, coupled with the bodies' solver when the model has
    bodies (sim/solvers/registry.py: the articulated one for a scene with joints or a robot); each is made by
    its class's `from_scene` from the validated `sim` section."""
    solver = solver_class(sim_spec.solver.type).from_scene(model, sim_spec)
    if model.body_count == 0:
        return solver
    bodies = solver_class(body_solver_name(articulated)).from_scene(model, sim_spec)
    if articulated and not model.particle_count:
        return bodies
    return CoupledSolver(bodies, solver)


def add_world_content(b: ModelBuilder, scene) -> tuple:
    """Add one world's content of the validated scene spec `scene` (cloth, particles, bodies, joints, robot;
    not the colliders) to `b`: (SceneObjects, the cloth and particle specs they come from, SceneBodies,
    SceneJoints)."""
    objects = [_add_cloth(b, scene, c) for c in scene.cloth] + [_add_particles(b, p) for p in scene.particles]
    bodies = [_add_body(b, body) for body in scene.bodies]
    joints = add_scene_joints(b, scene, {body.name: body.index for body in bodies})
    if scene.robot is not None:
        robot_joints, links, visuals = add_robot(b, scene)
        joints += list(robot_joints.values())
        color = tuple(scene.robot.color)
        bodies += [SceneBody(name, index, body_shapes(b, index) + visuals.get(index, []), color)
                   for name, index in links]
    return objects, list(scene.cloth) + list(scene.particles), bodies, joints


def build_scene(scene, device=None, requires_grad: bool = False, world_specs=None) -> BuiltScene:
    """Model and solver for the validated scene spec `scene` on `device` (default: the scene's sim.device).
    With sim.worlds > 1, `world_specs` (one spec per world, default `scene` for each) are the worlds' contents,
    built as worlds of one model with the colliders shared (sim/scene/build_worlds.py)."""
    s = scene.sim
    b = ModelBuilder(up_axis=s.up_axis, gravity=s.gravity, bending=s.bending)
    if s.worlds == 1:
        objects, specs, bodies, joints = add_world_content(b, scene)
    else:
        objects, specs, bodies, joints = add_worlds(b, world_specs or [scene] * s.worlds, add_world_content)
    collider_shapes = [_add_collider(b, c) for c in scene.colliders]
    model = b.finalize(device=wp.get_device(device or s.device), requires_grad=requires_grad)
    if joints:
        initial_body_state(model)
        upload_forces(joints, model.device, requires_grad)
    model.particle_damping = s.particle_damping
    model.soft_contact = _contact(s.contact)
    model.particle_contact = _contact(s.particle_contact)
    model.particle_grid_enabled = bool(s.particle_contact.enabled and model.particle_count > 1)
    dt = 1.0 / (s.fps * s.substeps)
    for obj, spec in zip(objects, specs):
        if spec.forces is not None:
            obj.forces = wp.array(np.asarray(spec.forces, np.float32).reshape(-1, 3), dtype=wp.vec3,
                                  device=model.device, requires_grad=requires_grad)
    is_articulated = articulated(scene)
    return BuiltScene(model, make_solver(model, s, is_articulated), dt, objects, list(scene.colliders), s.substeps,
                      bodies, collider_shapes, joints, uses_rigid=bool(bodies) and not is_articulated,
                      gravity=s.gravity, max_distance=s.max_distance, max_speed=s.max_speed,
                      world_count=s.worlds)
