"""What the URDF and USD Physics importers share: the parsed robot (links, joints, shapes), its checks, and its
assembly into a ModelBuilder (tree order, fixed-joint collapse, base joint, initial coordinates).

Transforms are numpy 7-vectors (px, py, pz, qx, qy, qz, qw) in metres, as sim.builder_joints uses them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..builder import combine_shapes
from ..joints import JOINT_D6, JOINT_LIMIT_UNLIMITED, JointDofConfig
from ..model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE
from ..spatial import matrix_from_quat, quat_between, transform_inverse, transform_multiply, transform_normalized

IDENTITY = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
SHAPE_KINDS = {"box": SHAPE_BOX, "sphere": SHAPE_SPHERE, "capsule": SHAPE_CAPSULE}
AXIS_VECTORS = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


class ImporterError(ValueError):
    """A robot file that cannot be imported. str() is one line naming the file, the line where known, the
    element and what was expected: `arm.urdf:12: joint 'elbow': unknown joint type 'screw'; expected one of ...`.

    Attributes:
        path: the file, as given ("<string>" for XML passed as text).
        line: 1-based line of the offending element, or None (USD files, whole-file problems).
        element: the link, joint or prim, e.g. "joint 'elbow'" or "prim </arm/hinge>", or None.
        reason: the message without the location.
    """

    def __init__(self, path: str, line: int | None, element: str | None, reason: str):
        self.path, self.line, self.element, self.reason = path, line, element, reason
        location = f"{path}:{line}" if line is not None else path
        super().__init__(f"{location}: {element}: {reason}" if element else f"{location}: {reason}")


class ImportWarning(UserWarning):
    """Parts of a robot file that were not imported (ImportResult.ignored lists them too)."""


@dataclass
class ShapeSpec:
    """A collision shape on a link: kind "box" (size = half extents), "sphere" (radius,) or "capsule" (radius,
    half height along the local y axis), posed by `xform` in the link frame [m]."""

    kind: str
    xform: np.ndarray
    size: tuple


@dataclass
class VisualSpec:
    """Visual geometry, kept for USD output: kind "box"/"sphere"/"cylinder"/"capsule"/"mesh", `size` in metres
    (as the file states it, scaled), `filename` (URDF: as written; USD: the prim path) and `scale` for meshes,
    pose `xform` in the frame of `link` (after collapse_fixed_joints: the link it was merged into), `line` of
    the element in the file (URDF)."""

    link: str
    kind: str
    xform: np.ndarray
    size: tuple = ()
    filename: str | None = None
    scale: tuple = (1.0, 1.0, 1.0)
    line: int | None = None


@dataclass
class LinkSpec:
    """A rigid body. mass [kg], com (body frame) [m], inertia about the com in body axes [kg m^2]: None means
    from the collision shapes at `density` (as ModelBuilder.add_body). `pose`: world pose of the body frame
    when the file states one (USD); None: from its parent joint at zero coordinates (URDF)."""

    name: str
    mass: float | None = None
    com: np.ndarray | None = None
    inertia: np.ndarray | None = None
    shapes: list = field(default_factory=list)
    pose: np.ndarray | None = None
    density: float | None = None
    line: int | None = None
    where: str = ""


@dataclass
class JointSpec:
    """A joint: kind "revolute", "prismatic", "ball", "fixed", "free" or "d6"; parent link name (None: the
    world, then parent_xform is in world), child link name; the anchor frames on both; the axis (joint frame)
    and the JointDofConfig keywords of its axis (`dof`); a D6 joint has instead `linear_axes` and
    `angular_axes`, each a list of JointDofConfig keyword dicts with their "axis"; `where` locates it for error
    messages ("joint 'elbow'")."""

    name: str
    kind: str
    parent: str | None
    child: str
    parent_xform: np.ndarray = field(default_factory=lambda: IDENTITY.copy())
    child_xform: np.ndarray = field(default_factory=lambda: IDENTITY.copy())
    axis: tuple = (1.0, 0.0, 0.0)
    dof: dict = field(default_factory=dict)
    linear_axes: list = field(default_factory=list)
    angular_axes: list = field(default_factory=list)
    line: int | None = None
    where: str = ""


@dataclass
class ImportResult:
    """What an importer added to the builder.

    Attributes:
        path: the file imported.
        body: link (URDF) or rigid-body prim path (USD) -> body index; links merged by collapse_fixed_joints
            map to the body they were merged into.
        joint: joint name (URDF) or prim path (USD) -> joint index, including the base joint added by the
            importer (under "base_joint" / "floating_base" / "fixed_base").
        visuals: visual geometry (VisualSpec), not simulated; kept for USD output.
        velocity_limit: joint name -> velocity limit [m/s or rad/s] from the file (SolverFeatherstone does not
            enforce velocity limits).
        dof: for joints of the file that became axes of one D6 joint (an MJCF body with several joints, the
            D6 joint named after them joined by "_"): joint name -> its index into joint_qd.
        ignored: one line per part of the file that was not imported (also issued as one ImportWarning).
    """

    path: str
    body: dict = field(default_factory=dict)
    joint: dict = field(default_factory=dict)
    visuals: list = field(default_factory=list)
    velocity_limit: dict = field(default_factory=dict)
    dof: dict = field(default_factory=dict)
    ignored: list = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ rotations


def up_axis_xform(file_up: str, builder) -> np.ndarray:
    """The rotation from a file's up axis ("x", "y" or "z") to the builder's, as a transform."""
    up = np.asarray(AXIS_VECTORS[file_up.lower()])
    return np.concatenate([np.zeros(3), quat_between(up, builder.up_vector)])


def placement(xform, file_up: str, builder) -> np.ndarray:
    """World transform applied to an imported robot: `xform` (None: identity) after the up-axis rotation."""
    return transform_multiply(transform_normalized(xform), up_axis_xform(file_up, builder))


# ------------------------------------------------------------------------------------------------ assembly


def _world_poses(links, joints, roots, root_pose, error):
    """World pose of every link: the file's where it states one, else from the parent at zero coordinates."""
    poses = {}
    by_child = {j.child: j for j in joints}
    for name in _tree_order(links, joints, roots, error):
        link = links[name]
        joint = by_child.get(name)
        if link.pose is not None:
            poses[name] = transform_multiply(root_pose, link.pose)
        elif joint is None:
            poses[name] = root_pose
        else:
            parent = root_pose if joint.parent is None else poses[joint.parent]
            poses[name] = transform_multiply(transform_multiply(parent, joint.parent_xform),
                                             transform_inverse(joint.child_xform))
    return poses


def _tree_order(links, joints, roots, error) -> list:
    """Link names depth first from each root, children in file order."""
    children = {}
    for j in joints:
        children.setdefault(j.parent, []).append(j.child)
    order, stack = [], list(reversed(roots))
    while stack:
        name = stack.pop()
        order.append(name)
        stack.extend(reversed(children.get(name, [])))
    if len(order) != len(links):
        loop = sorted(set(links) - set(order))
        raise error(None, None, f"links {loop} form a kinematic loop (not supported: articulations are trees)")
    return order


def check_tree(links: dict, joints: list, error) -> list:
    """The root links (children of no joint, or of a joint to the world), after checking every joint names
    existing links and every link is the child of at most one joint. `error(line, element, reason)` makes the
    importer's ImporterError."""
    parent_joint = {}
    for j in joints:
        for role, name in (("parent", j.parent), ("child", j.child)):
            if name is not None and name not in links:
                raise error(j.line, j.where, f"{role} link {name!r} does not exist")
        if j.child == j.parent:
            raise error(j.line, j.where, f"parent and child are the same link {j.child!r}")
        if j.child in parent_joint:
            raise error(j.line, j.where, f"link {j.child!r} is already the child of {parent_joint[j.child].where} "
                                         "(a kinematic loop, or a joint whose parent and child are swapped; "
                                         "articulations are trees)")
        parent_joint[j.child] = j
    return [n for n in links if n not in parent_joint or parent_joint[n].parent is None]


def _resolved_mass(link: LinkSpec, density: float):
    """(mass, com, inertia) of a link, computing what it leaves None from its shapes at `density`."""
    kinds = [SHAPE_KINDS[s.kind] for s in link.shapes]
    scales = [_shape_scale(s) for s in link.shapes]
    d = link.density if link.density is not None else density
    mass, com, inertia = combine_shapes(kinds, [s.xform for s in link.shapes], scales, [d] * len(kinds))
    if link.com is not None:
        offset = link.com - com
        inertia = inertia + mass * (offset @ offset * np.eye(3) - np.outer(offset, offset))
        com = link.com
    if link.mass is not None:
        inertia = inertia * (link.mass / mass) if mass > 0 else inertia
        mass = link.mass
    if link.inertia is not None:
        inertia = link.inertia
    return float(mass), np.asarray(com, dtype=np.float64), np.asarray(inertia, dtype=np.float64)


def _shape_scale(shape: ShapeSpec):
    if shape.kind == "box":
        return tuple(shape.size)
    if shape.kind == "sphere":
        return (shape.size[0], 0.0, 0.0)
    return (shape.size[0], shape.size[1], 0.0)


def collapse_fixed_joints(links: dict, joints: list, density: float, frames: dict | None = None) -> dict:
    """Merge each link attached by a fixed joint to another link into that link (mass properties combined,
    shapes and child joints moved); returns merged link name -> the link it went into, and fills `frames` (when
    given) with merged link name -> its frame in that link's frame. Fixed joints to the world stay. Edits
    `links` and `joints` in place."""
    merged = {}
    frames = {} if frames is None else frames
    for j in [j for j in joints if j.kind == "fixed" and j.parent is not None]:
        parent = merged.get(j.parent, j.parent)
        child = links.pop(j.child)
        # the child frame in the parent link frame
        x_pc = transform_multiply(j.parent_xform, transform_inverse(j.child_xform))
        host = links[parent]
        m0, c0, i0 = _resolved_mass(host, density)
        m1, c1, i1 = _resolved_mass(child, density)
        r1 = matrix_from_quat(x_pc[3:])
        c1 = x_pc[:3] + r1 @ c1
        mass = m0 + m1
        com = (m0 * c0 + m1 * c1) / mass if mass > 0 else c0
        inertia = np.zeros((3, 3))
        for m, c, i in ((m0, c0, i0), (m1, c1, r1 @ i1 @ r1.T)):
            d = c - com
            inertia += i + m * (d @ d * np.eye(3) - np.outer(d, d))
        host.mass, host.com, host.inertia = mass, com, inertia
        host.shapes += [ShapeSpec(s.kind, transform_multiply(x_pc, s.xform), s.size) for s in child.shapes]
        for k in joints:
            if k.parent == j.child:
                k.parent, k.parent_xform = parent, transform_multiply(x_pc, k.parent_xform)
        for name in [name for name, into in merged.items() if into == j.child]:
            merged[name], frames[name] = parent, transform_multiply(x_pc, frames[name])
        merged[j.child], frames[j.child] = parent, x_pc
        joints.remove(j)
    return merged


def joint_coordinates(joint: JointSpec, x_wp: np.ndarray, x_wc: np.ndarray) -> list:
    """Coordinates of a joint whose parent anchor is at world pose x_wp and child anchor at x_wc."""
    rel = transform_multiply(transform_inverse(x_wp), x_wc)
    if rel[6] < 0:  # the quaternion with w >= 0, so that angles come out in [-pi, pi]
        rel[3:] = -rel[3:]
    kind = joint.kind
    if kind == "revolute":
        return [_angle_about(rel[3:], joint.axis)]
    if kind == "prismatic":
        axis = np.asarray(joint.axis, dtype=np.float64)
        return [float(rel[:3] @ axis / np.linalg.norm(axis))]
    if kind == "ball":
        return list(rel[3:])
    if kind == "d6":
        return d6_coordinates([a["axis"] for a in joint.linear_axes], [a["axis"] for a in joint.angular_axes],
                              rel)
    return []


def _angle_about(q, axis) -> float:
    """The angle [rad] of quaternion q (w >= 0) about `axis` (its rotation's component along it)."""
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    return 2.0 * math.atan2(float(np.asarray(q[:3]) @ axis), q[3])


def d6_coordinates(linear_axes, angular_axes, rel) -> list:
    """Coordinates of a D6 joint (ModelBuilder.add_joint_d6) whose child anchor sits at `rel` (a transform) in
    its parent anchor frame: displacements along the linear axes (least squares), then the intrinsic angles
    about the angular axes. Several angular axes must be orthogonal unless `rel` has no rotation."""
    q = []
    if linear_axes:
        a = np.stack([np.asarray(x, np.float64) / np.linalg.norm(x) for x in linear_axes], axis=1)
        q += [float(v) for v in np.linalg.lstsq(a, rel[:3], rcond=None)[0]]
    axes = [np.asarray(x, np.float64) / np.linalg.norm(x) for x in angular_axes]
    quat = rel[3:] if rel[6] >= 0 else -rel[3:]
    if len(axes) <= 1 or np.linalg.norm(quat[:3]) < 1e-12:
        return q + [_angle_about(quat, x) for x in axes]
    if any(abs(axes[i] @ axes[k]) > 1e-6 for i in range(len(axes)) for k in range(i)):
        raise ValueError("the angles of a D6 joint with non-orthogonal angular axes at a rotated pose are not "
                         "recovered; pose the bodies at zero angles")
    third = np.cross(axes[0], axes[1])
    sign = 1.0 if len(axes) < 3 or axes[2] @ third > 0 else -1.0
    basis = np.stack([axes[0], axes[1], third], axis=1)
    m = basis.T @ matrix_from_quat(quat) @ basis  # = Rx(q1) Ry(q2) Rz(q3) in the axes' own basis
    angles = [math.atan2(-m[1, 2], m[2, 2]), math.atan2(m[0, 2], math.hypot(m[1, 2], m[2, 2])),
              sign * math.atan2(-m[0, 1], m[0, 0])]
    return q + angles[:len(axes)]


def add_to_builder(builder, links: dict, joints: list, result: ImportResult, error, *, root_pose,
                   floating: bool, base_joint: dict | None, collapse_fixed: bool, density: float,
                   armature: float = 0.0) -> ImportResult:
    """Add the links (dict name -> LinkSpec, in file order) and joints (list of JointSpec) to `builder`: bodies
    depth first from each root, one articulation per root, roots not jointed to the world attached by a fixed
    joint (`floating` False), a free joint (True) or `base_joint` (a dict: "joint_type" (sim.JOINT_*) and the
    keywords of ModelBuilder.add_joint). `root_pose` places the whole robot in the world."""
    roots = check_tree(links, joints, error)
    merged, frames = {}, {}
    if collapse_fixed:
        merged = collapse_fixed_joints(links, joints, density, frames)
        for v in result.visuals:
            if v.link in merged:
                v.link, v.xform = merged[v.link], transform_multiply(frames[v.link], v.xform)
    poses = _world_poses(links, joints, roots, root_pose, error)
    by_child = {j.child: j for j in joints}
    for name in _tree_order(links, joints, roots, error):
        link = links[name]
        try:
            result.body[name] = body = builder.add_body(xform=poses[name], **_body_mass_arguments(link))
            for s in link.shapes:
                add_shape(builder, s, body, link.density if link.density is not None else density)
        except ValueError as e:
            raise error(link.line, link.where, str(e)) from None
        joint = by_child.get(name)
        if joint is None:
            builder.add_articulation()
            result.joint.update(_add_base_joint(builder, body, poses[name], floating, base_joint))
            continue
        if joint.parent is None:
            builder.add_articulation()
            x_wp = transform_multiply(root_pose, joint.parent_xform)
        else:
            x_wp = transform_multiply(poses[joint.parent], joint.parent_xform)
        parent = -1 if joint.parent is None else result.body[joint.parent]
        try:
            result.joint[joint.name] = _add_joint(builder, joint, parent, body, x_wp if parent < 0 else None,
                                                  armature)
        except ValueError as e:
            raise error(joint.line, joint.where, str(e)) from None
        q = joint_coordinates(joint, x_wp, transform_multiply(poses[name], joint.child_xform))
        start = builder.joint_q_start[result.joint[joint.name]]
        if joint.kind != "free":
            builder.joint_q[start:start + len(q)] = q
    for name, into in merged.items():
        result.body[name] = result.body[into]
    return result


def _body_mass_arguments(link: LinkSpec) -> dict:
    """add_body's mass, com and inertia for a link; a point mass with no shapes gets a zero inertia tensor."""
    inertia = link.inertia
    if link.mass is not None and inertia is None and not link.shapes:
        inertia = np.zeros((3, 3))
    return dict(mass=link.mass, com=link.com, inertia=inertia)


def add_shape(builder, shape: ShapeSpec, body: int, density: float) -> int:
    pos, rot = shape.xform[:3], shape.xform[3:]
    if shape.kind == "box":
        hx, hy, hz = shape.size
        return builder.add_shape_box(pos, rot, hx=hx, hy=hy, hz=hz, body=body, density=density)
    if shape.kind == "sphere":
        return builder.add_shape_sphere(pos, rot, radius=shape.size[0], body=body, density=density)
    return builder.add_shape_capsule(pos, rot, radius=shape.size[0], half_height=shape.size[1], body=body,
                                     density=density)


def _add_joint(builder, joint: JointSpec, parent: int, child: int, x_wp, armature: float) -> int:
    frames = dict(parent_xform=joint.parent_xform if x_wp is None else x_wp, child_xform=joint.child_xform)
    if joint.kind in ("revolute", "prismatic"):
        dof = dict(joint.dof)
        dof.setdefault("armature", armature)
        add = builder.add_joint_revolute if joint.kind == "revolute" else builder.add_joint_prismatic
        return add(parent, child, axis=joint.axis, **frames, **dof)
    if joint.kind == "ball":
        return builder.add_joint_ball(parent, child, armature=armature, **frames)
    if joint.kind == "fixed":
        return builder.add_joint_fixed(parent, child, **frames)
    if joint.kind == "d6":
        linear, angular = ([JointDofConfig(**{"armature": armature, **a}) for a in axes]
                           for axes in (joint.linear_axes, joint.angular_axes))
        return builder.add_joint_d6(parent, child, linear_axes=linear, angular_axes=angular, **frames)
    return builder.add_joint_free(child, parent=parent, **frames)


def _add_base_joint(builder, body: int, pose, floating: bool, base_joint: dict | None) -> dict:
    """The joint holding a root link to the world; returns {name: index}."""
    if base_joint is not None:
        spec = dict(base_joint)
        joint_type = spec.pop("joint_type", JOINT_D6)
        # the position goes on the world side, the rotation on the child side, so the axes stay world axes
        parent_xform = np.concatenate([pose[:3], IDENTITY[3:]])
        child_xform = np.concatenate([np.zeros(3), transform_inverse(pose)[3:]])
        spec.setdefault("parent_xform", parent_xform)
        spec.setdefault("child_xform", child_xform)
        return {"base_joint": builder.add_joint(joint_type, -1, body, **spec)}
    if floating:
        return {"floating_base": builder.add_joint_free(body)}
    return {"fixed_base": builder.add_joint_fixed(-1, body, parent_xform=pose)}


def limit_or_unlimited(value, sign: float) -> float:
    """A limit from a file, with missing or infinite values as the builder's 'no limit'."""
    if value is None or not math.isfinite(value):
        return sign * JOINT_LIMIT_UNLIMITED
    return float(value)


def report_ignored(result: ImportResult, stacklevel: int = 3) -> None:
    """Issue one ImportWarning listing everything in result.ignored."""
    if result.ignored:
        lines = "\n  ".join(result.ignored)
        warnings.warn(f"{result.path}: not imported:\n  {lines}", ImportWarning, stacklevel=stacklevel)
