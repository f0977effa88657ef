"""Learned parameters: a scene key path (`cloth.0.vel`, `cloth.0.material.tri_ke`, `colliders.1.pos`, ...)
mapped to a flat float variable and to the model or initial-state entries it sets.

Each iteration `apply` launches kernels that copy the variable into those entries inside the Tape, so the
gradient reaches the variable. With `log: true` the variable holds log(value) (positive scalars such as
stiffness, where steps should be relative).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import kernels as wp

from ..scene.errors import SceneError
from .learnable import LEARNABLE, REFUSED, RIGID_MATERIAL_KEYS, acting_solvers, learnable_summary, pattern_of

# material key -> (model array, column or None)
MATERIAL_TARGETS = {"tri_ke": ("tri_materials", 0), "tri_ka": ("tri_materials", 1), "tri_kd": ("tri_materials", 2),
                    "edge_ke": ("edge_bending_properties", 0), "edge_kd": ("edge_bending_properties", 1),
                    "spring_ke": ("spring_stiffness", None), "spring_kd": ("spring_damping", None)}
RANGE_OF = {"tri_materials": "tri_range", "edge_bending_properties": "edge_range", "spring_stiffness": "spring_range",
            "spring_damping": "spring_range"}


@wp.func
def decode(x: float, log: int):
    y = x
    if log != 0:
        y = wp.exp(x)
    return y


@wp.kernel
def assign_float(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                 rows: wp.array(dtype=wp.int32), dst: wp.array(dtype=float)):
    j = wp.tid()
    dst[rows[j]] = decode(var[src[j]], log)


@wp.kernel
def assign_column(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                  rows: wp.array(dtype=wp.int32), column: int, dst: wp.array2d(dtype=float)):
    j = wp.tid()
    dst[rows[j], column] = decode(var[src[j]], log)


@wp.kernel
def assign_vec3(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                dst: wp.array(dtype=wp.vec3)):
    j = wp.tid()
    s = src[j]
    dst[rows[j]] = wp.vec3(var[s], var[s + 1], var[s + 2])


@wp.kernel
def assign_vec3_component(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                          rows: wp.array(dtype=wp.int32), component: int, base: wp.array(dtype=wp.vec3),
                          dst: wp.array(dtype=wp.vec3)):
    j = wp.tid()
    x = decode(var[src[j]], log)
    b = base[j]
    dst[rows[j]] = wp.vec3(wp.where(component == 0, x, b[0]), wp.where(component == 1, x, b[1]),
                           wp.where(component == 2, x, b[2]))


@wp.kernel
def assign_position(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                    rotation: wp.array(dtype=wp.quat), dst: wp.array(dtype=wp.transform)):
    j = wp.tid()
    s = src[j]
    dst[rows[j]] = wp.transform(wp.vec3(var[s], var[s + 1], var[s + 2]), rotation[j])


@wp.kernel
def assign_rotation(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                    position: wp.array(dtype=wp.vec3), dst: wp.array(dtype=wp.transform)):
    """dst = (position, the variable's quaternion (x, y, z, w) normalised): a collider's learned rotation."""
    j = wp.tid()
    s = src[j]
    norm = wp.sqrt(var[s] * var[s] + var[s + 1] * var[s + 1] + var[s + 2] * var[s + 2] + var[s + 3] * var[s + 3])
    q = wp.quat(var[s] / norm, var[s + 1] / norm, var[s + 2] / norm, var[s + 3] / norm)
    dst[rows[j]] = wp.transform(position[j], q)


@wp.kernel
def assign_spatial_part(var: wp.array(dtype=float), src: wp.array(dtype=wp.int32), rows: wp.array(dtype=wp.int32),
                        part: int, base: wp.array(dtype=wp.spatial_vector), dst: wp.array(dtype=wp.spatial_vector)):
    """Set the angular (part 0) or linear (part 1) half of spatial vectors, keeping the other half of `base`."""
    j = wp.tid()
    s = src[j]
    v = wp.vec3(var[s], var[s + 1], var[s + 2])
    b = base[j]
    top = wp.where(part == 0, v, wp.spatial_top(b))
    bottom = wp.where(part == 1, v, wp.spatial_bottom(b))
    dst[rows[j]] = wp.spatial_vector(top, bottom)


@wp.kernel
def assign_scaled_matrix(var: wp.array(dtype=float), log: int, src: wp.array(dtype=wp.int32),
                         rows: wp.array(dtype=wp.int32), factor: float, base: wp.array(dtype=wp.mat33),
                         dst: wp.array(dtype=wp.mat33)):
    """dst = base * (value * factor): an inertia scaled with its body's mass (factor = 1 / the built mass)."""
    j = wp.tid()
    dst[rows[j]] = base[j] * (decode(var[src[j]], log) * factor)


@dataclass
class Target:
    """Where a parameter goes: `array` names an attribute of the model ('model') or initial state ('state');
    `rows` are the entries set, `src` the variable offset each reads; `how` picks the kernel."""

    owner: str  # "model", "state" or "object" (a SceneObject attribute)
    array: str
    how: str  # "float", "column", "vec3", "vec3_component", "spatial_part", "position", "rotation",
    # "scaled_matrix"
    rows: np.ndarray
    src: np.ndarray
    column: int = 0
    obj: object = None
    rotation: object = None  # "position": the shapes' fixed rotations (x, y, z, w), shape [len(rows), 4]
    base: object = None  # "vec3_component"/"spatial_part": the vectors whose other components stay; "rotation":
    # the shapes' fixed positions, shape [len(rows), 3];
    # "scaled_matrix": the matrices scaled
    factor: float = 1.0  # "scaled_matrix": the factor on the value
    arrays: tuple = ()  # rows, src and rotation/base on the device, made once by `upload`

    def upload(self, device):
        """Copy the index arrays (and rotation or base) to `device` once, for every later `apply`."""
        extra = None
        if self.how == "position":
            extra = wp.array(self.rotation, dtype=wp.quat, device=device)
        elif self.how in ("vec3_component", "rotation"):
            extra = wp.array(self.base, dtype=wp.vec3, device=device)
        elif self.how == "spatial_part":
            extra = wp.array(self.base, dtype=wp.spatial_vector, device=device)
        elif self.how == "scaled_matrix":
            extra = wp.array(self.base, dtype=wp.mat33, device=device)
        self.arrays = (wp.array(self.rows.astype(np.int32), dtype=wp.int32, device=device),
                       wp.array(self.src.astype(np.int32), dtype=wp.int32, device=device), extra)


class LearnedParameter:
    """One learned scene key. `variable` is the optimised float array (log of the value when `log`)."""

    def __init__(self, path: str, targets: list, initial: np.ndarray, *, log: bool = False, bounds=None,
                 shape=()):
        self.path, self.targets, self.log, self.shape = path, targets, bool(log), tuple(shape)
        initial = np.asarray(initial, np.float64).reshape(-1)
        if self.log and np.any(initial <= 0):
            raise ValueError(f"{path}: log: true needs a positive value, got {initial.min():g}")
        self._initial = np.log(initial) if self.log else initial
        self.bounds = None
        if bounds is not None:
            lo, hi = bounds
            self.bounds = (np.log(lo) if self.log else lo, np.log(hi) if self.log else hi)
        self.variable = None

    @property
    def size(self) -> int:
        return self._initial.size

    def initial_variable(self) -> np.ndarray:
        return self._initial.astype(np.float32)

    def start_from(self, values):
        """Start from `values` (in the scene's units) instead of the scene's own."""
        start = self.encode(values)
        if start.size != self.size:
            raise ValueError(f"{self.path}: expected {self.size} value(s), got {start.size}")
        self._initial = start

    def allocate(self, device, values=None):
        """Create the variable array (initial values, or `values` in value space) and put the targets' index
        arrays on `device`."""
        x = self._initial if values is None else self.encode(values)
        self.variable = wp.array(np.asarray(x, np.float32), dtype=float, device=device, requires_grad=True)
        for t in self.targets:
            t.upload(device)

    def encode(self, values) -> np.ndarray:
        v = np.asarray(values, np.float64).reshape(-1)
        return np.log(v) if self.log else v

    def value(self) -> np.ndarray:
        """Current value(s) in the scene's units, shape `shape` (a scalar as shape ())."""
        x = self.variable.numpy().astype(np.float64)
        return (np.exp(x) if self.log else x).reshape(self.shape)

    def yaml_value(self):
        """The value as a scene key takes it (a number or nested lists)."""
        v = self.value()
        return float(v) if v.ndim == 0 else v.tolist()

    def apply(self, built, state0):
        """Launch the kernels that write the variable into the model / initial state (record them on a Tape)."""
        d, var, log = built.model.device, self.variable, int(self.log)
        for t in self.targets:
            owner = {"model": built.model, "state": state0, "object": t.obj}[t.owner]
            dst = getattr(owner, t.array)
            rows, src, extra = t.arrays
            n = len(t.rows)
            if t.how == "float":
                wp.launch(assign_float, dim=n, inputs=[var, log, src, rows], outputs=[dst], device=d)
            elif t.how == "column":
                wp.launch(assign_column, dim=n, inputs=[var, log, src, rows, t.column], outputs=[dst], device=d)
            elif t.how == "vec3":
                wp.launch(assign_vec3, dim=n, inputs=[var, src, rows], outputs=[dst], device=d)
            elif t.how == "vec3_component":
                wp.launch(assign_vec3_component, dim=n, inputs=[var, log, src, rows, t.column, extra],
                          outputs=[dst], device=d)
            elif t.how == "spatial_part":
                wp.launch(assign_spatial_part, dim=n, inputs=[var, src, rows, t.column, extra], outputs=[dst],
                          device=d)
            elif t.how == "scaled_matrix":
                wp.launch(assign_scaled_matrix, dim=n, inputs=[var, log, src, rows, t.factor, extra], outputs=[dst],
                          device=d)
            elif t.how == "rotation":
                wp.launch(assign_rotation, dim=n, inputs=[var, src, rows, extra], outputs=[dst], device=d)
            else:
                wp.launch(assign_position, dim=n, inputs=[var, src, rows, extra], outputs=[dst], device=d)


def resolve(path: str, scene, built, *, log: bool = False, bounds=None, where: str = "parameters",
            key: tuple = (), frames: int | None = None) -> LearnedParameter:
    """The LearnedParameter for scene key `path` of the validated `scene` (spec) built into `built`; `frames`
    (default sim.frames) sizes a joint's forces that the scene does not give.
    Raises SceneError (at `where`, config key path `key`) for a key that does not exist or cannot be learned."""
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]

    def fail(msg):
        raise SceneError(where, key, f"{path}: {msg}")

    try:
        targets, initial, shape = _targets(parts, scene, built, fail, frames or scene.sim.frames)
    except (IndexError, KeyError, TypeError):
        fail("no such key in the scene")
    _check_acted_on(pattern_of(parts), scene, fail)
    if log and any(t.how in ("vec3", "position", "rotation", "spatial_part") or t.array == "forces"
                   for t in targets):
        fail("log: true applies to positive scalars (stiffness, mass, radius), not to vectors")
    try:
        return LearnedParameter(path, targets, initial, log=log, bounds=bounds, shape=shape)
    except ValueError as e:
        fail(str(e).split(": ", 1)[-1])


def _check_acted_on(pattern: str, scene, fail):
    """Refuse a key that no solver of the scene reads (its gradient would be a silent zero): see REFUSED."""
    acting = acting_solvers(pattern, scene)
    if not acting:
        fail("nothing in the scene is simulated by a solver that reads it")
    reasons = [REFUSED.get((solver, pattern)) for solver in acting]
    if all(reasons):
        fail(f"not learnable with the {' and '.join(acting)} solver: {'; '.join(dict.fromkeys(reasons))}")


def _object(parts, scene, built, fail):
    group, i = parts[0], parts[1]
    specs = scene.cloth if group == "cloth" else scene.particles
    if not isinstance(i, int) or i >= len(specs):
        fail(f"no {group} object {i} (the scene has {len(specs)})")
    offset = 0 if group == "cloth" else len(scene.cloth)
    return specs[i], built.objects[offset + i]


def _targets(parts, scene, built, fail, frames: int):
    head = parts[0]
    m = built.model
    if head in ("cloth", "particles") and len(parts) >= 3:
        spec, obj = _object(parts, scene, built, fail)
        key = parts[2]
        rows = np.arange(obj.start, obj.stop)
        if key == "vel" and len(parts) == 3:
            if spec.velocities is not None:
                fail("the object sets per-particle `velocities`: learn those instead")
            return [Target("state", "particle_qd", "vec3", rows, np.zeros(len(rows), int))], np.array(spec.vel), (3,)
        if key == "velocities" and len(parts) == 3:
            init = m.particle_qd.numpy()[obj.start:obj.stop].astype(np.float64)
            return [Target("state", "particle_qd", "vec3", rows, 3 * np.arange(len(rows)))], init, (obj.count, 3)
        if key == "mass" and len(parts) == 3:
            if head == "cloth" and spec.grid is None:
                fail("a mesh cloth's mass comes from its density, which is not learnable; use a grid")
            mass = m.particle_mass.numpy()[obj.start:obj.stop]
            free = rows[mass > 0]
            return [Target("model", "particle_mass", "float", free, np.zeros(len(free), int))], \
                np.array([mass[mass > 0][0]]), ()
        if key == "forces" and len(parts) == 3:
            if obj.forces is None:
                fail("the object has no `forces` list in the scene: add one (a force per frame) to learn it")
            frames = obj.forces.shape[0]
            init = obj.forces.numpy().astype(np.float64)
            return [Target("object", "forces", "vec3", np.arange(frames), 3 * np.arange(frames), obj=obj)], init, \
                (frames, 3)
        if key == "material" and head == "cloth" and len(parts) == 4:
            if isinstance(spec.material, str):
                fail(f"the cloth uses the named material '{spec.material}': learn materials.{spec.material}."
                     f"{parts[3]}")
            return _material_targets(parts[3], [obj], built, fail)
    if head == "materials" and len(parts) == 3:
        name = parts[1]
        if name not in scene.materials:
            fail(f"no material named '{name}'")
        users = [built.objects[i] for i, c in enumerate(scene.cloth) if c.material == name]
        if not users:
            fail(f"no cloth uses material '{name}'")
        return _material_targets(parts[2], users, built, fail)
    if head == "colliders" and len(parts) == 4 and parts[2] == "material":
        i = parts[1]
        if not isinstance(i, int) or i >= len(scene.colliders):
            fail(f"no collider {i} (the scene has {len(scene.colliders)})")
        return _rigid_material_targets(parts[3], [built.collider_shapes[i]], built, fail)
    if head == "colliders" and len(parts) == 3:
        return _collider_targets(parts[1], parts[2], scene, built, fail)
    if head == "bodies" and len(parts) >= 3:
        return _body_targets(parts, scene, built, fail)
    if head == "joints" and len(parts) >= 3:
        i = parts[1]
        if not isinstance(i, int) or i >= len(scene.joints):
            fail(f"no joint {i} (the scene has {len(scene.joints)})")
        return _joint_targets(built.joints[i], parts[2:], built, frames, fail)
    if parts[:2] == ["robot", "joints"] and len(parts) >= 4 and scene.robot is not None:
        joint = built.joint(str(parts[2]))
        if joint is None:
            fail(f"no joint named '{parts[2]}' in the robot")
        return _joint_targets(joint, parts[3:], built, frames, fail)
    if parts == ["sim", "contact", "mu"]:
        # Model.soft_contact_mu is the array the particle solvers read (the struct's float has no gradient)
        return [Target("model", "soft_contact_mu", "float", np.array([0]), np.array([0]))], \
            np.array([scene.sim.contact.mu]), ()
    fail(f"not a learnable parameter (learnable: {learnable_summary()}). The other contact settings, gravity, "
         "counts and time stepping are constants of the solvers' kernels and have no gradient")


def _material_targets(key, objects, built, fail):
    if key not in MATERIAL_TARGETS:
        fail(f"unknown material key (learnable: {', '.join(MATERIAL_TARGETS)})")
    array, column = MATERIAL_TARGETS[key]
    rows = np.concatenate([np.arange(*getattr(o, RANGE_OF[array])) for o in objects])
    if len(rows) == 0:
        fail(f"the cloth has no {array.split('_')[0]} entries for {key} to act on (is the term enabled?)")
    data = getattr(built.model, array).numpy()
    initial = data[rows[0]] if column is None else data[rows[0], column]
    how = "float" if column is None else "column"
    return [Target("model", array, how, rows, np.zeros(len(rows), int), column or 0)], np.array([initial]), ()


def _rigid_material_targets(key, shape_rows: list, built, fail):
    if key not in RIGID_MATERIAL_KEYS:
        fail(f"unknown material key (learnable: {', '.join(RIGID_MATERIAL_KEYS)})")
    rows = np.asarray(shape_rows, int)
    array = f"shape_material_{key}"
    initial = getattr(built.model, array).numpy()[rows[0]]
    return [Target("model", array, "float", rows, np.zeros(len(rows), int))], np.array([initial]), ()


def _body_targets(parts, scene, built, fail):
    i, key = parts[1], parts[2]
    if not isinstance(i, int) or i >= len(scene.bodies):
        fail(f"no body {i} (the scene has {len(scene.bodies)})")
    body = built.bodies[i]
    if key == "material" and len(parts) == 4:
        return _rigid_material_targets(parts[3], body.shape_rows, built, fail)
    if key == "mass" and len(parts) == 3:
        m = built.model
        mass = float(m.body_mass.numpy()[body.index])
        if mass <= 0:
            fail("the body has no mass to scale")
        rows, inertia = np.array([body.index]), m.body_inertia.numpy()[body.index:body.index + 1]
        return [Target("model", "body_mass", "float", rows, np.array([0])),
                Target("model", "body_inertia", "scaled_matrix", rows, np.array([0]), base=inertia,
                       factor=1.0 / mass)], np.array([mass]), ()
    if key in ("vel", "angular_vel") and len(parts) == 3:
        qd = built.model.body_qd0.numpy()[body.index:body.index + 1].astype(np.float32)
        part = 1 if key == "vel" else 0
        initial = qd[0, 3:] if part == 1 else qd[0, :3]
        return [Target("state", "body_qd", "spatial_part", np.array([body.index]), np.array([0]), part, base=qd)], \
            initial.astype(np.float64), (3,)
    fail("not learnable for a body (learnable: vel, angular_vel, mass (its inertia scales with it), material.{"
         + ",".join(RIGID_MATERIAL_KEYS) + "})")


#: drive key -> the model's per-axis array
DRIVE_TARGETS = {"target_pos": "joint_target_pos", "target_vel": "joint_target_vel", "ke": "joint_target_ke",
                 "kd": "joint_target_kd"}


def _joint_targets(joint, rest: list, built, frames: int, fail):
    """A joint's initial coordinate or velocity (`q` [m, rad], `qd` [m/s, rad/s]), its per-frame forces
    (`forces`, shape [frames] for one axis, else [frames, axes]) or a drive setting of its axis (`drive.KEY`); all
    but `forces` for revolute and prismatic joints (one axis, a plain number)."""
    if rest in (["q"], ["qd"]):
        if joint.kind not in ("revolute", "prismatic"):
            fail(f"'{joint.name}' is a {joint.kind} joint: q and qd are learnable for revolute and prismatic joints")
        array, row = ("joint_q", joint.coord_start) if rest == ["q"] else ("joint_qd", joint.dof_start)
        return [Target("state", array, "float", np.array([row]), np.array([0]))], \
            np.array([getattr(built.model, array).numpy()[row]], np.float64), ()
    if rest == ["forces"]:
        if joint.dof_count == 0:
            fail(f"'{joint.name}' is a {joint.kind} joint: it has no axes to push")
        if joint.forces is None:  # learned from zero, one entry per simulated frame
            joint.forces = wp.zeros(frames * joint.dof_count, dtype=float, device=built.model.device,
                                    requires_grad=True)
            joint.force_frames = frames
        n = joint.forces.shape[0]
        shape = (joint.force_frames,) if joint.dof_count == 1 else (joint.force_frames, joint.dof_count)
        return [Target("object", "forces", "float", np.arange(n), np.arange(n), obj=joint)], \
            joint.forces.numpy().astype(np.float64), shape
    if len(rest) == 2 and rest[0] == "drive" and rest[1] in DRIVE_TARGETS:
        if joint.kind not in ("revolute", "prismatic"):
            fail(f"'{joint.name}' is a {joint.kind} joint: drive keys are learnable for revolute and prismatic "
                 "joints")
        array = DRIVE_TARGETS[rest[1]]
        row = np.array([joint.dof_start])
        return [Target("model", array, "float", row, np.array([0]))], \
            np.array([getattr(built.model, array).numpy()[joint.dof_start]]), ()
    fail(f"not learnable for a joint (learnable: q, qd, forces, drive.{{{','.join(DRIVE_TARGETS)}}})")


def _collider_targets(i, key, scene, built, fail):
    if not isinstance(i, int) or i >= len(scene.colliders):
        fail(f"no collider {i} (the scene has {len(scene.colliders)})")
    c = scene.colliders[i]
    m = built.model
    i = built.collider_shapes[i]  # the collider's row of the model's shape arrays
    row = np.array([i])
    if key == "pos" and c.type != "ground":
        rotation = np.asarray(m.shape_transform.numpy()[i, 3:], np.float32).reshape(1, 4)
        return [Target("model", "shape_transform", "position", row, np.array([0]), rotation=rotation)], \
            np.array(c.pos), (3,)
    if key == "rot" and c.type not in ("ground", "sphere"):  # a quaternion (x, y, z, w), normalised when applied
        position = np.asarray(m.shape_transform.numpy()[i, :3], np.float32).reshape(1, 3)
        return [Target("model", "shape_transform", "rotation", row, np.array([0]), base=position)], \
            np.array(c.rot), (4,)
    scale = m.shape_scale.numpy()
    component = {("sphere", "radius"): 0, ("capsule", "radius"): 0, ("capsule", "half_height"): 1}.get((c.type, key))
    if component is not None:
        base = scale[i:i + 1].astype(np.float32)
        return [Target("model", "shape_scale", "vec3_component", row, np.array([0]), component, base=base)], \
            np.array([scale[i, component]]), ()
    if c.type == "box" and key == "half_extents":
        return [Target("model", "shape_scale", "vec3", row, np.array([0]))], scale[i].astype(np.float64), (3,)
    fail(f"not learnable for a {c.type} collider")
