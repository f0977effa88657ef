"""sim.import_usd_physics: rigid bodies, joints, drives and collision primitives of a USD stage (UsdPhysics
schemas, read with usd-core's pxr) into a ModelBuilder.

Stage units are converted to SI (metersPerUnit, kilogramsPerUnit; revolute angles from degrees) and the
stage's up axis is turned onto the builder's. What is imported and what is refused: docs/articulations.md.
"""

from __future__ import annotations

import errno
import math
import os
import re
from dataclasses import replace

import numpy as np

from ..spatial import (matrix_from_quat, quat_between, quat_multiply, quat_rotate, transform_inverse,
                       transform_multiply)
from .assembly import (AXIS_VECTORS, ImporterError, ImportResult, JointSpec, LinkSpec, ShapeSpec, VisualSpec,
                       add_shape, add_to_builder, limit_or_unlimited, placement, report_ignored)

_JOINT_KINDS = (("RevoluteJoint", "revolute"), ("PrismaticJoint", "prismatic"), ("SphericalJoint", "ball"),
                ("FixedJoint", "fixed"))
# the articulation root only marks where an articulation starts: the joints give its tree
_ALWAYS_KNOWN_SCHEMAS = {"PhysicsArticulationRootAPI"}
_PHYSICS_PREFIXES = ("physics:", "physx", "drive:", "limit:", "newton:", "mjc:")
_DRIVE = {"revolute": "angular", "prismatic": "linear"}
# the axes of a generic PhysicsJoint (a D6 joint), as PhysicsLimitAPI and PhysicsDriveAPI name them
_D6_AXES = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")


def import_usd_physics(source, builder, *, xform=None, floating: bool | None = None,
                       base_joint: dict | None = None, root_path: str = "/", density: float | None = None,
                       armature: float = 0.0, limit_ke: float = 1.0e4, limit_kd: float = 1.0e1,
                       collapse_fixed_joints: bool = False, cylinder_as_capsule: bool = False) -> ImportResult:
    """Add the rigid bodies and joints of a USD stage (UsdPhysics schemas) to `builder`.

    Args:
        source: a USD file (.usd, .usda, .usdc) or an open Usd.Stage.
        builder: the sim.ModelBuilder to add to.
        xform: world pose (px, py, pz, qx, qy, qz, qw) [m] applied to the whole stage after its up-axis
            rotation.
        floating: bodies not jointed to the world: True or None (USD's meaning: an unjointed body is free) get
            a free joint; False welds them to the world where they are.
        base_joint: instead, their joint as a dict: "joint_type" (sim.JOINT_*, default D6) and keywords of
            ModelBuilder.add_joint; its axes are world axes.
        root_path: import only the prims below this path.
        density: density [kg/m^3] of collision shapes of bodies whose MassAPI gives no mass; None:
            builder.default_shape_density.
        armature: armature of every imported axis (UsdPhysics has none).
        limit_ke, limit_kd: stiffness and damping of the joint-limit penalty.
        collapse_fixed_joints: merge bodies joined by fixed joints into one body.
        cylinder_as_capsule: cylinder colliders become capsules of the same radius and overall length; False:
            refused.

    Returns:
        ImportResult with prim paths as names.

    Raises:
        FileNotFoundError: no file at `source`.
        ImporterError: an unreadable stage, mesh or other unsupported colliders, unsupported joint types
            (generic PhysicsJoints are D6 joints of their free axes, with limits and drives per axis), a
            joint whose child (body1) is not a rigid body, kinematic loops; the message names the prim.
    """
    from pxr import Usd, UsdGeom, UsdPhysics

    if floating is not None and base_joint is not None:
        raise ValueError("import_usd_physics takes floating or base_joint, not both")
    stage, path = _open(source, Usd)
    error = lambda line, where, reason: ImporterError(path, line, where, reason)  # noqa: E731
    result = ImportResult(path)
    reader = _StageReader(stage, path, result, cylinder_as_capsule, UsdGeom, UsdPhysics)
    links, joints, static_shapes = reader.read(root_path, dict(limit_ke=limit_ke, limit_kd=limit_kd))
    root_pose = placement(xform, UsdGeom.GetStageUpAxis(stage), builder)
    reader.check_gravity(builder, root_pose)
    density = builder.default_shape_density if density is None else float(density)
    add_to_builder(builder, links, joints, result, error, root_pose=root_pose,
                   floating=floating is None or floating, base_joint=base_joint,
                   collapse_fixed=collapse_fixed_joints, density=density, armature=armature)
    for shape in static_shapes:
        add_shape(builder, replace(shape, xform=transform_multiply(root_pose, shape.xform)), -1, density)
    reader.report_unread()
    report_ignored(result)
    return result


def _open(source, Usd):
    if isinstance(source, Usd.Stage):
        return source, source.GetRootLayer().identifier
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, "USD file not found", path)
    try:
        stage = Usd.Stage.Open(path)
    except Exception as e:  # pxr raises Tf.ErrorException: "Error in '<C++ function>' ... : '<message>'"
        raise _open_error(path, str(e)) from None
    if stage is None:
        raise ImporterError(path, None, None, "cannot open the USD stage")
    return stage, path


def _open_error(path: str, text: str) -> ImporterError:
    """One line from pxr's error text: its first message, with the line number when the parser gives one."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    message = first.split(" : '", 1)[-1].rstrip("'").strip()
    located = re.match(rf"{re.escape(path)}:(\d+):\d+: (.*)", message)
    if located:
        return ImporterError(path, int(located.group(1)), None, f"malformed USD: {located.group(2)}")
    return ImporterError(path, None, None, f"cannot open the USD stage: {message or 'unknown error'}")


def _quat(gf_quat) -> np.ndarray:
    """(x, y, z, w) of a Gf quaternion; a zero quaternion (UsdPhysics' "not set") is the identity."""
    imaginary = gf_quat.GetImaginary()
    q = np.array([imaginary[0], imaginary[1], imaginary[2], gf_quat.GetReal()], dtype=np.float64)
    n = np.linalg.norm(q)
    return q / n if n > 0 else np.array([0.0, 0.0, 0.0, 1.0])


class _StageReader:
    """Walks the stage once: bodies, colliders, joints, visual geometry; records what it read from each prim so
    that the rest (authored physics attributes, applied schemas) is reported as not imported."""

    def __init__(self, stage, path, result, cylinder_as_capsule, UsdGeom, UsdPhysics):
        self.stage, self.path, self.result = stage, path, result
        self.cylinder_as_capsule = cylinder_as_capsule
        self.UsdGeom, self.UsdPhysics = UsdGeom, UsdPhysics
        # unauthored: metres, as Newton reads it (USD's own fallback would be centimetres)
        self.meters = UsdGeom.GetStageMetersPerUnit(stage) if UsdGeom.StageHasAuthoredMetersPerUnit(stage) else 1.0
        self.kilograms = UsdPhysics.GetStageKilogramsPerUnit(stage)
        self.cache = UsdGeom.XformCache()
        self.read_attributes: dict = {}  # prim path -> names read
        self.read_schemas: dict = {}
        self.prims = []
        self.gravity = None

    def error(self, prim, reason):
        return ImporterError(self.path, None, f"prim <{prim.GetPath()}>", reason)

    def get(self, prim, name):
        """The authored value of an attribute (None when not authored), marked as read."""
        self.read_attributes.setdefault(str(prim.GetPath()), set()).add(name)
        attribute = prim.GetAttribute(name)
        return attribute.Get() if attribute and attribute.HasAuthoredValue() else None

    def pose(self, prim):
        """(rigid world pose in metres, world scale (3,)) of a prim."""
        from pxr import Gf
        transform = Gf.Transform(self.cache.GetLocalToWorldTransform(prim))
        pose = np.concatenate([np.asarray(transform.GetTranslation()) * self.meters,
                               _quat(transform.GetRotation().GetQuat())])
        return pose, np.asarray(transform.GetScale(), dtype=np.float64)

    def body_of(self, prim):
        """The nearest rigid-body prim at or above `prim`, or None."""
        while prim and prim.GetPath() != prim.GetPath().absoluteRootPath:
            if self.is_body(prim):
                return prim
            prim = prim.GetParent()
        return None

    def is_body(self, prim):
        if not prim.HasAPI(self.UsdPhysics.RigidBodyAPI):
            return False
        return self.get(prim, "physics:rigidBodyEnabled") is not False

    # -------------------------------------------------------------------------------------------- the walk

    def read(self, root_path, joint_settings):
        from pxr import Usd
        root = self.stage.GetPrimAtPath(root_path)
        if not root:
            raise ImporterError(self.path, None, None, f"no prim at root_path {root_path!r}")
        links, joints, static_shapes, colliders = {}, [], [], []
        for prim in Usd.PrimRange(root):
            self.prims.append(prim)
            if self.is_body(prim):
                links[str(prim.GetPath())] = self.link(prim)
            elif prim.IsA(self.UsdPhysics.Joint):
                joint = self.joint(prim, joint_settings)
                if joint is not None:
                    joints.append(joint)
            elif prim.IsA(self.UsdPhysics.Scene):
                self.scene(prim)
            if prim.HasAPI(self.UsdPhysics.CollisionAPI):
                colliders.append(prim)
            elif prim.IsA(self.UsdGeom.Gprim) and self.body_of(prim) is not None:
                self.visual(prim)
        for prim in colliders:
            body = self.body_of(prim)
            shape = self.collider(prim, body)
            if shape is None:
                continue
            if body is None:
                static_shapes.append(shape)
            else:
                links[str(body.GetPath())].shapes.append(shape)
        return links, joints, static_shapes

    def link(self, prim) -> LinkSpec:
        path = str(prim.GetPath())
        pose, scale = self.pose(prim)
        link = LinkSpec(path, pose=pose, where=f"prim <{path}>")
        self.read_schemas.setdefault(path, set()).add("PhysicsRigidBodyAPI")
        if not prim.HasAPI(self.UsdPhysics.MassAPI):
            return link
        self.read_schemas[path].add("PhysicsMassAPI")
        mass = self.get(prim, "physics:mass")
        if mass is not None and mass > 0:
            link.mass = mass * self.kilograms
        density = self.get(prim, "physics:density")
        if density is not None and density > 0:
            link.density = density * self.kilograms / self.meters ** 3
        com = self.get(prim, "physics:centerOfMass")
        if com is not None and all(math.isfinite(c) for c in com):
            link.com = np.asarray(com, dtype=np.float64) * scale * self.meters
        diagonal = self.get(prim, "physics:diagonalInertia")
        axes = self.get(prim, "physics:principalAxes")
        if diagonal is not None and any(d > 0 for d in diagonal):
            rot = matrix_from_quat(_quat(axes)) if axes is not None else np.eye(3)
            link.inertia = rot @ np.diag(np.asarray(diagonal, dtype=np.float64)) @ rot.T
            link.inertia *= self.kilograms * self.meters ** 2
        return link

    def scene(self, prim):
        direction = self.get(prim, "physics:gravityDirection")
        magnitude = self.get(prim, "physics:gravityMagnitude")
        self.gravity = (prim, direction, magnitude)

    def check_gravity(self, builder, root_pose):
        """A stage gravity different from the builder's is reported (the builder's is what simulates)."""
        if self.gravity is None:
            return
        prim, direction, magnitude = self.gravity
        up = np.asarray(AXIS_VECTORS[self.UsdGeom.GetStageUpAxis(self.stage).lower()])
        direction = -up if direction is None or not np.any(direction) else np.asarray(direction, np.float64)
        magnitude = 9.81 if magnitude is None or not math.isfinite(magnitude) else magnitude * self.meters
        stage_g = quat_rotate(root_pose[3:], direction / np.linalg.norm(direction)) * magnitude
        builder_g = builder.up_vector * builder.gravity
        if not np.allclose(stage_g, builder_g, rtol=1e-3, atol=1e-3):
            def show(g):
                return (np.round(g, 4) + 0.0).tolist()  # + 0.0: no "-0.0"
            self.result.ignored.append(f"prim <{prim.GetPath()}>: gravity {show(stage_g)} m/s^2 (the builder's "
                                       f"{show(builder_g)} is used)")

    # -------------------------------------------------------------------------------------------- shapes

    def collider(self, prim, body):
        """ShapeSpec of a collider, posed in its body's frame (in world for static colliders)."""
        path = str(prim.GetPath())
        self.read_schemas.setdefault(path, set()).add("PhysicsCollisionAPI")
        if self.get(prim, "physics:collisionEnabled") is False:
            self.result.ignored.append(f"prim <{path}>: disabled collider (physics:collisionEnabled = 0)")
            return None
        pose, scale = self.pose(prim)
        if body is not None:
            pose = transform_multiply(transform_inverse(self.pose(body)[0]), pose)
        kind = prim.GetTypeName()
        if kind == "Cube":
            size = self.read_geometry(prim, "size", 2.0)
            return ShapeSpec("box", pose, tuple(size / 2 * scale * self.meters))
        if kind == "Sphere":
            radius = self.read_geometry(prim, "radius", 1.0) * self._uniform(prim, scale, (0, 1, 2))
            return ShapeSpec("sphere", pose, (radius * self.meters,))
        if kind in ("Capsule", "Cylinder"):
            return self.round_shape(prim, kind, pose, scale)
        if kind == "Mesh":
            raise self.error(prim, "mesh colliders are not supported (collision shapes: Cube, Sphere, Capsule); "
                                   "replace the mesh by primitives or remove its PhysicsCollisionAPI")
        raise self.error(prim, f"{kind or 'an untyped prim'} colliders are not supported (collision shapes: Cube, "
                               "Sphere, Capsule)")

    def read_geometry(self, prim, name, default):
        value = prim.GetAttribute(name).Get()
        return np.float64(default) if value is None else np.asarray(value, dtype=np.float64)

    def _uniform(self, prim, scale, axes):
        values = scale[list(axes)]
        if not np.allclose(values, values[0], rtol=1e-6):
            raise self.error(prim, f"a {prim.GetTypeName()} collider needs the same scale on its axes "
                                   f"{[('x', 'y', 'z')[a] for a in axes]}, got {scale.tolist()}")
        return float(values[0])

    def round_shape(self, prim, kind, pose, scale):
        if kind == "Cylinder" and not self.cylinder_as_capsule:
            raise self.error(prim, "cylinder colliders are not supported (no cylinder shape); pass "
                                   "cylinder_as_capsule=True to approximate them by capsules")
        axis_name = str(prim.GetAttribute("axis").Get() or "Z").lower()
        axis = "xyz".index(axis_name)
        radial = [a for a in range(3) if a != axis]
        radius = float(self.read_geometry(prim, "radius", 1.0)) * self._uniform(prim, scale, radial) * self.meters
        length = float(self.read_geometry(prim, "height", 2.0)) * scale[axis] * self.meters
        half = length / 2 if kind == "Capsule" else max(length / 2 - radius, 0.0)
        turn = quat_between((0.0, 1.0, 0.0), AXIS_VECTORS[axis_name])  # our capsules lie along y
        return ShapeSpec("capsule", np.concatenate([pose[:3], quat_multiply(pose[3:], turn)]), (radius, half))

    def visual(self, prim):
        """Geometry under a body without a collider: kept for output."""
        body = self.body_of(prim)
        pose, scale = self.pose(prim)
        pose = transform_multiply(transform_inverse(self.pose(body)[0]), pose)
        kind = prim.GetTypeName().lower()
        self.result.visuals.append(VisualSpec(str(body.GetPath()), "mesh" if kind == "mesh" else kind, pose,
                                              filename=str(prim.GetPath()), scale=tuple(scale * self.meters)))

    # -------------------------------------------------------------------------------------------- joints

    def joint(self, prim, settings):
        path = str(prim.GetPath())
        kind = next((k for name, k in _JOINT_KINDS if prim.IsA(getattr(self.UsdPhysics, name))), None)
        if kind is None and prim.GetTypeName() == "PhysicsJoint":
            kind = "d6"
        if kind is None:
            raise self.error(prim, f"{prim.GetTypeName()} is not supported (joints: PhysicsRevoluteJoint, "
                                   "PhysicsPrismaticJoint, PhysicsSphericalJoint, PhysicsFixedJoint, PhysicsJoint)")
        if self.get(prim, "physics:jointEnabled") is False:
            self.result.ignored.append(f"prim <{path}>: disabled joint (physics:jointEnabled = 0)")
            return None
        if self.get(prim, "physics:excludeFromArticulation"):
            raise self.error(prim, "a joint excluded from the articulation (a loop closure) is not supported")
        joint_schema = self.UsdPhysics.Joint(prim)
        body0 = self.target(prim, joint_schema.GetBody0Rel())
        body1 = self.target(prim, joint_schema.GetBody1Rel())
        if body1 is None or not self.is_body(body1):
            raise self.error(prim, "physics:body1 must be a rigid body (the joint's child); swap body0 and body1 "
                                   "if the child is body0")
        parent_xform = self.frame(prim, body0, "0")
        child_xform = self.frame(prim, body1, "1")
        parent = str(body0.GetPath()) if body0 is not None and self.is_body(body0) else None
        joint = JointSpec(path, kind, parent, str(body1.GetPath()), parent_xform=parent_xform,
                          child_xform=child_xform, where=f"prim <{path}>")
        if kind in ("revolute", "prismatic"):
            joint.axis = AXIS_VECTORS[str(self.get(prim, "physics:axis") or "X").lower()]
            joint.dof = self.dof(prim, kind, settings)
        elif kind == "d6":
            self.d6_axes(prim, joint, settings)
        return joint

    def d6_axes(self, prim, joint, settings):
        """The free axes of a generic PhysicsJoint: transX/Y/Z then rotX/Y/Z of the joint frame on body0, each
        free unless its PhysicsLimitAPI has low > high (locked); limits and PhysicsDriveAPI of the same name.
        Nothing free: a fixed joint."""
        for token in _D6_AXES:
            angular = token.startswith("rot")
            dof = dict(settings)
            if prim.HasAPI(self.UsdPhysics.LimitAPI, token):
                self.read_schemas.setdefault(str(prim.GetPath()), set()).add(f"PhysicsLimitAPI:{token}")
                low = self.get(prim, f"limit:{token}:physics:low")
                high = self.get(prim, f"limit:{token}:physics:high")
                if low is not None and high is not None and low > high:
                    continue
                to_si = math.pi / 180.0 if angular else self.meters
                for name, value, sign in (("limit_lower", low, -1.0), ("limit_upper", high, 1.0)):
                    dof[name] = limit_or_unlimited(None if value is None else value * to_si, sign)
            self.drive(prim, token, angular, dof)
            dof["axis"] = AXIS_VECTORS[token[-1].lower()]
            (joint.angular_axes if angular else joint.linear_axes).append(dof)
        if not joint.linear_axes and not joint.angular_axes:
            joint.kind = "fixed"

    def target(self, prim, relationship):
        targets = relationship.GetTargets()
        if len(targets) > 1:
            raise self.error(prim, f"{relationship.GetName()} has {len(targets)} targets; expected one")
        if not targets:
            return None
        target = self.stage.GetPrimAtPath(targets[0])
        if not target:
            raise self.error(prim, f"{relationship.GetName()} names {targets[0]}, which does not exist")
        return target

    def frame(self, prim, body, which):
        """The joint frame on body0/body1 ("0"/"1") in that body's frame, or in world when it is no body."""
        position = self.get(prim, f"physics:localPos{which}")
        rotation = self.get(prim, f"physics:localRot{which}")
        position = np.zeros(3) if position is None else np.asarray(position, dtype=np.float64)
        rotation = np.array([0.0, 0.0, 0.0, 1.0]) if rotation is None else _quat(rotation)
        if body is None:
            return np.concatenate([position * self.meters, rotation])
        pose, scale = self.pose(body)
        local = np.concatenate([position * scale * self.meters, rotation])
        return local if self.is_body(body) else transform_multiply(pose, local)

    def dof(self, prim, kind, settings) -> dict:
        """JointDofConfig keywords: limits and the drive, converted to SI and radians."""
        angular = kind == "revolute"
        to_si = math.pi / 180.0 if angular else self.meters
        dof = dict(settings)
        for name, sign in (("lower", -1.0), ("upper", 1.0)):
            value = self.get(prim, f"physics:{name}Limit")
            dof["limit_" + name] = limit_or_unlimited(None if value is None else value * to_si, sign)
        self.drive(prim, _DRIVE[kind], angular, dof)
        return dof

    def drive(self, prim, instance: str, angular: bool, dof: dict) -> None:
        """PhysicsDriveAPI:<instance> into `dof` (JointDofConfig keywords), in SI units: angular targets are
        in degrees and gains per degree in the stage, linear ones in stage units."""
        if not prim.HasAPI(self.UsdPhysics.DriveAPI, instance):
            return
        to_si = math.pi / 180.0 if angular else self.meters
        force = self.kilograms * self.meters * (self.meters if angular else 1.0)  # N or N m per stage unit
        self.read_schemas.setdefault(str(prim.GetPath()), set()).add(f"PhysicsDriveAPI:{instance}")
        drive = {key: self.get(prim, f"drive:{instance}:physics:{key}")
                 for key in ("stiffness", "damping", "targetPosition", "targetVelocity", "maxForce", "type")}
        if drive["type"] == "acceleration":
            self.result.ignored.append(f"prim <{prim.GetPath()}>: drive type 'acceleration' (imported as a force "
                                       "drive)")
        gains = force / to_si  # per stage unit of the coordinate -> per m or rad
        for key, name, factor in (("stiffness", "target_ke", gains), ("damping", "target_kd", gains),
                                  ("targetPosition", "target_pos", to_si), ("targetVelocity", "target_vel", to_si),
                                  ("maxForce", "effort_limit", force)):
            if drive[key] is not None and math.isfinite(drive[key]):
                dof[name] = drive[key] * factor

    # -------------------------------------------------------------------------------------------- leftovers

    def report_unread(self):
        """One line per prim listing the physics attributes and applied schemas that were not imported."""
        for prim in self.prims:
            path = str(prim.GetPath())
            read = self.read_attributes.get(path, set())
            attributes = sorted(a.GetName() for a in prim.GetAuthoredAttributes()
                                if a.GetName().startswith(_PHYSICS_PREFIXES) and a.GetName() not in read)
            known = _ALWAYS_KNOWN_SCHEMAS | self.read_schemas.get(path, set())
            schemas = [s for s in prim.GetAppliedSchemas() if s not in known and _is_physics(s)]
            if schemas or attributes:
                parts = ([f"applied schemas {schemas}"] if schemas else []) + \
                    ([f"attributes {attributes}"] if attributes else [])
                self.result.ignored.append(f"prim <{path}>: {'; '.join(parts)}")


def _is_physics(schema: str) -> bool:
    return schema.startswith(("Physics", "Physx", "PhysX", "Newton", "Mjc"))
