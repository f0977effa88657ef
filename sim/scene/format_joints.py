"""The articulation part of the scene format: `joints` (bodies of `bodies` connected into trees) and `robot` (a
URDF or USD Physics file imported). Declared like the rest of the format (format.py imports these sections);
a scene with either is stepped by SolverFeatherstone."""

from __future__ import annotations

import warnings

import numpy as np

from .schema import (DEFAULTS, REQUIRED, Boolean, Choice, Ctx, Field, FilePath, Kind, ListOf, MappingOf,
                     Number, Rotation, Section, String, Vector, suggest, exactly_one)

IDENTITY = (0.0, 0.0, 0.0, 1.0)
JOINT_TYPES = ("revolute", "prismatic", "ball", "fixed", "free", "d6")
WORLD = "world"


class Raw(Kind):
    """A value whose kind depends on another key (a joint's coordinates on its type): checked by the section's
    check, which knows the type."""

    def __init__(self, doc_type: str):
        self.doc_type = doc_type

    def convert(self, value, ctx):
        return value


ANCHOR = Section([
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "position of the joint frame in the body frame (the world's "
          "for parent world)"),
    Field("rot", Rotation(), IDENTITY, "", "orientation of the joint frame"),
], doc="A joint frame on a body: the joint's axes are in the parent anchor frame.", title="joint anchor")

LIMITS = Section([
    Field("lower", Number(), None, "m or rad", "lower coordinate limit (default: none)"),
    Field("upper", Number(), None, "m or rad", "upper coordinate limit (default: none)"),
    Field("ke", Number(min=0), 1.0e4, "N/m or N m/rad", "stiffness of the penalty past a limit"),
    Field("kd", Number(min=0), 10.0, "N s/m or N m s/rad", "damping while past a limit"),
], doc="Coordinate limits of an axis, enforced by a penalty spring.", title="joint limits",
    checks=[lambda spec, ctx: _check_limits(spec, ctx)])

DRIVE = Section([
    Field("target_pos", Number(), 0.0, "m or rad", "position target"),
    Field("target_vel", Number(), 0.0, "m/s or rad/s", "velocity target"),
    Field("ke", Number(min=0), 0.0, "N/m or N m/rad", "position gain (0: no position drive)"),
    Field("kd", Number(min=0), 0.0, "N s/m or N m s/rad", "velocity gain (0: no velocity drive)"),
    Field("effort_limit", Number(positive=True), 1.0e6, "N or N m", "largest force or torque of the drive"),
], doc="A PD drive on an axis: ke (target_pos - q) + kd (target_vel - qd), clamped to the effort limit.",
    title="joint drive")

_AXIS_SETTINGS = [
    Field("limits", LIMITS, None, "", "coordinate limits"),
    Field("drive", DRIVE, None, "", "PD drive"),
    Field("armature", Number(min=0), 0.0, "kg or kg m^2", "inertia added to the axis"),
    Field("damping", Number(min=0), 0.0, "N s/m or N m s/rad", "passive viscous damping"),
    Field("friction", Number(min=0), 0.0, "N or N m", "friction coefficient (stored; SolverFeatherstone ignores "
          "it)"),
]

D6_AXIS = Section([Field("axis", Vector(3), REQUIRED, "", "direction in the parent anchor frame")] + _AXIS_SETTINGS,
                  doc="One axis of a d6 joint.", title="d6 axis",
                  checks=[lambda spec, ctx: _check_axis_vector(spec.axis, ctx.child("axis"))])

_COORDINATES = [
    Field("q", Raw("number, list or rotation"), None, "m, rad", "initial coordinates: revolute/prismatic a "
          "number; ball a rotation (quaternion or {axis, angle}); d6 one number per axis; free and fixed none (a "
          "free joint starts at its child body's pos and rot)"),
    Field("qd", Raw("number or list"), None, "m/s, rad/s", "initial velocities: a number, [3] (ball: angular "
          "velocity in the parent anchor frame) or one per axis (d6); free joints take their child body's vel "
          "and angular_vel"),
    Field("forces", Raw("list"), None, "N or N m", "control: generalized force on the joint's axes during "
          "frame 1, 2, ... (one entry per frame: a number for one axis, a list per axis otherwise; frames past "
          "the list get none)"),
]

JOINT = Section([
    Field("name", String(), None, "", "joint name (for losses and messages); default joint_<index>"),
    Field("type", Choice(*JOINT_TYPES), REQUIRED, "", "joint type"),
    Field("parent", String(), WORLD, "", "parent body name, or world"),
    Field("child", String(), REQUIRED, "", "child body name"),
    Field("parent_anchor", ANCHOR, DEFAULTS, "", "joint frame on the parent (in the world for parent world)"),
    Field("child_anchor", ANCHOR, DEFAULTS, "", "joint frame on the child"),
    Field("axis", Vector(3), None, "", "revolute/prismatic: the axis in the parent anchor frame (required)"),
    Field("linear_axes", ListOf(D6_AXIS), None, "", "d6: up to 3 translation axes"),
    Field("angular_axes", ListOf(D6_AXIS), None, "", "d6: up to 3 rotation axes"),
] + _AXIS_SETTINGS + _COORDINATES, doc="A joint between two bodies (or a body and the world). A body is the "
    "child of at most one joint; each body of a scene with joints is the child of one.",
    title="joints[]", checks=[lambda spec, ctx: check_joint(spec, ctx)])

# Keys a joint type takes besides name, type, parent, child and the anchors.
_TYPE_KEYS = {
    "revolute": {"axis", "limits", "drive", "armature", "damping", "friction", "q", "qd", "forces"},
    "prismatic": {"axis", "limits", "drive", "armature", "damping", "friction", "q", "qd", "forces"},
    "ball": {"armature", "damping", "friction", "q", "qd", "forces"},
    "fixed": set(),
    "free": {"forces"},
    "d6": {"linear_axes", "angular_axes", "q", "qd", "forces"},
}
_COMMON_KEYS = {"name", "type", "parent", "child", "parent_anchor", "child_anchor"}


def _check_limits(spec, ctx: Ctx):
    if spec.lower is not None and spec.upper is not None and spec.lower > spec.upper:
        ctx.child("upper").fail(f"the upper limit {spec.upper:g} is below the lower limit {spec.lower:g}")


def _check_axis_vector(axis, ctx: Ctx):
    if axis is not None and np.linalg.norm(axis) == 0:
        ctx.fail("the axis must not be zero")


def dof_count(spec) -> int:
    """Degrees of freedom of a validated joint spec."""
    if spec.type in ("revolute", "prismatic"):
        return 1
    if spec.type == "ball":
        return 3
    if spec.type == "free":
        return 6
    if spec.type == "fixed":
        return 0
    return len(spec.linear_axes or []) + len(spec.angular_axes or [])


def check_joint(spec, ctx: Ctx):
    """The keys the joint's type takes, its axis, and its initial coordinates, velocities and forces."""
    allowed = _COMMON_KEYS | _TYPE_KEYS[spec.type]
    for key in spec.keys():
        if spec.given(key) and key not in allowed:
            takes = ", ".join(sorted(_TYPE_KEYS[spec.type])) or "no other keys"
            ctx.child(key).fail(f"a {spec.type} joint does not take `{key}` (it takes {takes})")
    if spec.type in ("revolute", "prismatic"):
        if spec.axis is None:
            ctx.fail(f"missing required key 'axis' (the {spec.type} joint's axis in the parent anchor frame)")
        _check_axis_vector(spec.axis, ctx.child("axis"))
    if spec.type == "d6":
        for key in ("linear_axes", "angular_axes"):
            if len(getattr(spec, key) or []) > 3:
                ctx.child(key).fail(f"expected at most 3 axes, got {len(getattr(spec, key))}")
        if dof_count(spec) == 0:
            ctx.fail("a d6 joint needs at least one axis in linear_axes or angular_axes")
    check_coordinates(spec, ctx, spec.type, dof_count(spec))


def check_coordinates(spec, ctx: Ctx, kind: str, dofs: int):
    """Convert `q`, `qd` and `forces` of a joint (or a robot joint) of type `kind` with `dofs` axes in place."""
    if spec.q is not None:
        if kind == "ball":
            spec.__dict__["q"] = Rotation().convert(spec.q, ctx.child("q"))
        else:
            spec.__dict__["q"] = _numbers(spec.q, dofs, ctx.child("q"), "coordinate")
    if spec.qd is not None:
        spec.__dict__["qd"] = _numbers(spec.qd, dofs, ctx.child("qd"), "velocity")
    if spec.forces is not None:
        if not isinstance(spec.forces, list) or not spec.forces:
            ctx.child("forces").fail("expected a list with one entry per frame")
        spec.__dict__["forces"] = [_numbers(f, dofs, ctx.child("forces").child(i), "force")
                                   for i, f in enumerate(spec.forces)]


def _numbers(value, n: int, ctx: Ctx, what: str) -> tuple:
    """`n` numbers: a bare number when n == 1, else a list of n."""
    if n == 1 and not isinstance(value, (list, tuple)):
        return (Number().convert(value, ctx),)
    if not isinstance(value, (list, tuple)) or len(value) != n:
        shape = "a number" if n == 1 else f"a list of {n} numbers (one {what} per axis)"
        ctx.fail(f"expected {shape}, got {value!r}")
    return tuple(Number().convert(v, ctx.child(i)) for i, v in enumerate(value))


# ---------------------------------------------------------------------------------------------------- robot

ROBOT_JOINT = Section([
    Field("drive", DRIVE, None, "", "PD drive of the joint's axis (replaces the robot's drive gains)"),
] + _COORDINATES, doc="Settings of one imported joint, by its name in the file (URDF joint name; USD prim path).",
    title="robot joint")

ROBOT = Section([
    Field("urdf", FilePath(".urdf"), None, "", "URDF file, relative to the scene file (give one of urdf, usd)"),
    Field("usd", FilePath(".usd", ".usda", ".usdc"), None, "", "USD Physics file, relative to the scene file"),
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "world position of the robot's root"),
    Field("rot", Rotation(), IDENTITY, "", "world orientation of the robot's root (after the up-axis turn)"),
    Field("floating", Boolean(), None, "", "a free root (true) or welded to the world (false); default: the "
          "file's convention (URDF welded, USD free)"),
    Field("root_path", String(), None, "", "USD: import only the prims below this path"),
    Field("scale", Number(positive=True), 1.0, "", "URDF: factor on every length"),
    Field("up_axis", Choice("y", "z"), "z", "", "URDF: the file's up axis (turned onto the scene's)"),
    Field("density", Number(positive=True), None, "kg/m^3", "density of the shapes of links without mass data"),
    Field("armature", Number(min=0), 0.0, "kg m^2", "armature of every imported axis"),
    Field("limit_ke", Number(min=0), 1.0e4, "N m/rad", "stiffness of every joint-limit penalty"),
    Field("limit_kd", Number(min=0), 10.0, "N m s/rad", "damping of every joint-limit penalty"),
    Field("drive_ke", Number(min=0), 0.0, "N m/rad", "URDF: drive position gain of every axis (0: none)"),
    Field("drive_kd", Number(min=0), 0.0, "N m s/rad", "URDF: drive velocity gain of every axis (0: none)"),
    Field("collapse_fixed_joints", Boolean(), False, "", "merge links joined by fixed joints into one body"),
    Field("cylinder_as_capsule", Boolean(), False, "", "import cylinder colliders as capsules"),
    Field("joints", MappingOf(ROBOT_JOINT), {}, "", "per joint name: initial coordinates, drive, forces"),
    Field("color", Vector(3, min=0), (0.6, 0.6, 0.65), "", "display colour of the links (RGB in [0, 1])"),
], doc="A robot imported from a URDF or USD Physics file (sim.import_urdf / sim.import_usd_physics): one body "
       "per link (named after it) and its joints, simulated by SolverFeatherstone.", title="robot",
    checks=[exactly_one("urdf", "usd"), lambda spec, ctx: _check_robot_options(spec, ctx)])

_URDF_ONLY = ("scale", "up_axis", "drive_ke", "drive_kd")


def _check_robot_options(spec, ctx: Ctx):
    for key in (_URDF_ONLY if spec.usd is not None else ("root_path",)):
        if spec.given(key):
            ctx.child(key).fail(f"`{key}` applies to {'URDF' if spec.usd is not None else 'USD'} files only")


def check_robot(spec, ctx: Ctx, up_axis: str, gravity: float):
    """Import the file into a scratch builder (so that `sim validate` reports a broken file) and check the
    joints named under `joints` (called by the scene's check, which knows the up axis)."""
    result, builder = import_robot(spec, up_axis, ctx, gravity=gravity)
    spec.__dict__["imported"] = result
    spec.__dict__["visual_meshes"] = read_visual_meshes(spec, result, ctx)
    for name, joint in spec.joints.items():
        jctx = ctx.child("joints").child(name)
        if name not in result.joint:
            known = ", ".join(n for n in result.joint if not n.endswith("_base")) or "none"
            jctx.fail(f"no joint named '{name}'{suggest(name, result.joint)} in {_file(spec)} (joints: {known})")
        j = result.joint[name]
        kind, dofs = _builder_joint_kind(builder, j)
        if joint.drive is not None and kind not in ("revolute", "prismatic"):
            jctx.child("drive").fail(f"'{name}' is a {kind} joint; drives act on revolute and prismatic joints")
        if kind in ("free", "fixed") and (joint.q is not None or joint.qd is not None):
            jctx.child("q" if joint.q is not None else "qd").fail(f"'{name}' is a {kind} joint: its coordinates "
                                                                  "are not set here")
        if dofs == 0 and joint.forces is not None:
            jctx.child("forces").fail(f"'{name}' is a fixed joint: it has no axes to push")
        check_coordinates(joint, jctx, kind, dofs)


def read_visual_meshes(spec, result, ctx: Ctx | None) -> list:
    """The mesh files of a URDF robot's visuals (sim.importers.visual_meshes), for the USD output; a file that
    cannot be read fails at the `urdf` key, naming the URDF line. USD robots: none (their visual prims are not
    carried to the output)."""
    from ..importers import ImporterError
    from ..importers.visual_meshes import load_visual_meshes
    if spec.urdf is None:
        return []
    try:
        return load_visual_meshes(result)
    except ImporterError as e:
        if ctx is None:
            raise
        ctx.child("urdf").fail(f"cannot read the robot's visual meshes: {e}")


def _file(spec) -> str:
    return spec.urdf if spec.urdf is not None else spec.usd


def _builder_joint_kind(builder, j: int) -> tuple:
    from ..joints import JOINT_NAMES
    return JOINT_NAMES[builder.joint_type[j]], sum(builder.joint_dof_dim[j])


def import_robot(spec, up_axis: str, ctx: Ctx | None, builder=None, gravity: float = -9.81):
    """Import the robot of a validated `robot` spec into `builder` (a scratch one when None); (ImportResult,
    builder). An ImporterError becomes a SceneError at the file's key; import warnings are kept in
    ImportResult.ignored (`sim info` lists them)."""
    from ..builder import ModelBuilder
    from ..importers import ImporterError, import_urdf, import_usd_physics
    builder = builder or ModelBuilder(up_axis=up_axis, gravity=gravity)
    xform = tuple(spec.pos) + tuple(float(v) for v in spec.rot)
    common = dict(xform=xform, floating=spec.floating, density=spec.density, armature=spec.armature,
                  limit_ke=spec.limit_ke, limit_kd=spec.limit_kd, collapse_fixed_joints=spec.collapse_fixed_joints,
                  cylinder_as_capsule=spec.cylinder_as_capsule)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if spec.urdf is not None:
                result = import_urdf(spec.urdf, builder, scale=spec.scale, up_axis=spec.up_axis,
                                     target_ke=spec.drive_ke, target_kd=spec.drive_kd, **common)
            else:
                result = import_usd_physics(spec.usd, builder, root_path=spec.root_path or "/", **common)
    except (ImporterError, OSError, ValueError) as e:
        key = "urdf" if spec.urdf is not None else "usd"
        if ctx is None:
            raise
        ctx.child(key).fail(f"cannot import the robot: {e}")
    return result, builder



# ---------------------------------------------------------------------------------------------------- scene


def articulated(spec) -> bool:
    """Whether a validated scene has joints or a robot (then SolverFeatherstone moves its bodies)."""
    return bool(spec.joints) or spec.robot is not None


def check_articulation(spec, ctx: Ctx):
    """Cross-references of `joints` and `robot` in a validated scene spec: joint names unique, parents and
    children are bodies, every body hangs from the world through exactly one joint, jointed bodies take their
    pose from the joint, and `sim.rigid` (SolverRigid's settings) is not given."""
    if not articulated(spec):
        return
    if spec.sim.given("rigid"):
        ctx.child("sim").child("rigid").fail("SolverRigid's settings, but a scene with joints or a robot moves its "
                                             "bodies with SolverFeatherstone (no settings); remove sim.rigid")
    if spec.robot is not None:
        check_robot(spec.robot, ctx.child("robot"), spec.sim.up_axis, spec.sim.gravity)
        names = {b.name: i for i, b in enumerate(spec.bodies)}
        for link in spec.robot.imported.body:
            if link in names:
                ctx.child("bodies").child(names[link]).child("name").fail(
                    f"name '{link}' is also a link of the robot ({_file(spec.robot)})")
    _check_joint_graph(spec, ctx)


def _check_joint_graph(spec, ctx: Ctx):
    bodies = {b.name: i for i, b in enumerate(spec.bodies)}
    joints = ctx.child("joints")
    seen, held_by = {}, {}
    for i, j in enumerate(spec.joints):
        name = j.name or f"joint_{i}"
        j.__dict__["name"] = name
        if name in seen:
            joints.child(i).child("name").fail(f"name '{name}' is already used by joints[{seen[name]}]")
        seen[name] = i
        for key in ("parent", "child"):
            value = getattr(j, key)
            if value == WORLD and key == "parent":
                continue
            if value not in bodies:
                known = ", ".join(bodies) or "none"
                also = "world or " if key == "parent" else ""
                joints.child(i).child(key).fail(f"no body named '{value}' (expected {also}one of the scene's "
                                                f"bodies: {known})")
        if j.parent == j.child:
            joints.child(i).child("child").fail(f"the child is the parent ('{j.child}'): a joint connects two "
                                                "bodies")
        if j.child in held_by:
            joints.child(i).child("child").fail(f"body '{j.child}' is already the child of joints[{held_by[j.child]}]"
                                                " (a body hangs from one joint; loops are not supported)")
        held_by[j.child] = i
    for name, b in bodies.items():
        if name not in held_by:
            ctx.child("bodies").child(b).fail(
                f"body '{name}' is the child of no joint: in a scene with joints, SolverFeatherstone moves only "
                "jointed bodies (give it a joint; type free with parent world lets it move freely)")
        joint = spec.joints[held_by[name]]
        if joint.type != "free":
            for key in ("pos", "rot", "vel", "angular_vel"):
                if spec.bodies[b].given(key):
                    ctx.child("bodies").child(b).child(key).fail(
                        f"body '{name}' is held by the {joint.type} joint joints[{held_by[name]}]: its pose and "
                        "velocity come from the joint's anchors, q and qd")
    for i, j in enumerate(spec.joints):  # every chain of parents must reach the world
        chain, body = [], j.child
        while body != WORLD:
            if body in chain:
                joints.child(i).fail(f"the joints holding {', '.join(chain)} form a loop: every chain of "
                                     "parents must reach world")
            chain.append(body)
            body = spec.joints[held_by[body]].parent
