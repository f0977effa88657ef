"""sim.import_urdf: a URDF robot (links, joints, inertials, collision primitives) into a ModelBuilder.

Parameter names follow Newton's `parse_urdf`. What is imported and what is refused: docs/articulations.md.
"""

from __future__ import annotations

import errno
import math
import os
import xml.etree.ElementTree as ET
from functools import partial
from xml.parsers import expat

import numpy as np

from ..spatial import matrix_from_quat, quat_between, quat_multiply
from .assembly import (IDENTITY, ImporterError, ImportResult, JointSpec, LinkSpec, ShapeSpec, VisualSpec,
                       add_to_builder, limit_or_unlimited, placement, report_ignored)

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_KNOWN = {"robot": {"link", "joint", "material"},
          "link": {"inertial", "visual", "collision"},
          "joint": {"origin", "parent", "child", "axis", "limit", "dynamics"}}
# capsules are an extension (Drake writes `length`, Newton reads `height`); URDF's own axis for them is z
_Y_TO_Z = quat_between((0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def import_urdf(source, builder, *, xform=None, floating: bool | None = None, base_joint: dict | None = None,
                scale: float = 1.0, up_axis: str = "z", density: float | None = None, armature: float = 0.0,
                limit_ke: float = 1.0e4, limit_kd: float = 1.0e1, target_ke: float = 0.0, target_kd: float = 0.0,
                joint_damping_mode: str = "passive", ignore_inertial_definitions: bool = False,
                collapse_fixed_joints: bool = False, cylinder_as_capsule: bool = False) -> ImportResult:
    """Add the robot of a URDF file to `builder`: one body per link, one joint per joint (planar: a D6 joint),
    and a joint holding the root link to the world.

    Args:
        source: a .urdf file, or URDF XML text (starting with "<").
        builder: the sim.ModelBuilder to add to.
        xform: world pose of the root link (px, py, pz, qx, qy, qz, qw), applied after the up-axis rotation.
        floating: True: the root link gets a free joint (6 dof); False or None (URDF's default): a fixed joint.
        base_joint: instead of `floating`, the root's joint as a dict: "joint_type" (sim.JOINT_*, default D6)
            and keywords of ModelBuilder.add_joint (linear_axes, angular_axes); its axes are world axes.
        scale: factor on every length (positions, sizes, prismatic limits) and on inertia (scale**2).
        up_axis: the file's up axis ("z" for ROS robots); the robot is turned onto the builder's up axis.
        density: density [kg/m^3] of the collision shapes of links without <inertial> (their mass then comes
            from the shapes, as in Newton); None: builder.default_shape_density.
        armature: armature [kg m^2 or kg] of every imported axis (URDF has none).
        limit_ke, limit_kd: stiffness and damping of the joint-limit penalty.
        target_ke, target_kd: drive gains of every revolute/prismatic axis (URDF has none; 0: no drive).
        joint_damping_mode: "passive": <dynamics damping> is the joint's passive damping; "drive": it becomes
            the drive's target_kd.
        ignore_inertial_definitions: compute every link's mass from its collision shapes at `density`.
        collapse_fixed_joints: merge links joined by fixed joints into one body (mass properties combined).
        cylinder_as_capsule: collision cylinders become capsules of the same radius and overall length
            (half_height = length / 2 - radius, at least 0); False: a cylinder is refused.

    Returns:
        ImportResult (body and joint indices by name, visual geometry, velocity limits, what was ignored).

    Raises:
        FileNotFoundError: no file at `source`.
        ImporterError: malformed XML (with its line), an unknown joint type, mesh or cylinder
            collision geometry, missing or malformed attributes; the message names file, line and element.
    """
    if joint_damping_mode not in ("passive", "drive"):
        raise ValueError(f"joint_damping_mode must be 'passive' or 'drive', got {joint_damping_mode!r}")
    if floating is not None and base_joint is not None:
        raise ValueError("import_urdf takes floating or base_joint, not both")
    path, root, lines = _read(source)
    error = partial(ImporterError, path)
    result = ImportResult(path)
    parser = _Parser(path, lines, scale, result, cylinder_as_capsule=cylinder_as_capsule,
                     ignore_inertial=ignore_inertial_definitions, drive_damping=joint_damping_mode == "drive",
                     joint_settings=dict(limit_ke=limit_ke, limit_kd=limit_kd, target_ke=target_ke,
                                         target_kd=target_kd))
    links, joints = parser.robot(root)
    density = builder.default_shape_density if density is None else float(density)
    add_to_builder(builder, links, joints, result, error, root_pose=placement(xform, up_axis, builder),
                   floating=bool(floating), base_joint=base_joint, collapse_fixed=collapse_fixed_joints,
                   density=density, armature=armature)
    report_ignored(result)
    return result


def _read(source):
    """(path label, root element, {element: line}) of a URDF file or XML text."""
    text = os.fspath(source)
    if isinstance(text, str) and text.lstrip().startswith("<"):
        path, data = "<string>", text.encode()
    else:
        path = text
        if not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, "URDF file not found", path)
        with open(path, "rb") as f:
            data = f.read()
    builder, lines = ET.TreeBuilder(), {}
    parser = expat.ParserCreate()

    def start(tag, attrs):
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise ImporterError(path, e.lineno, None, f"malformed XML: {expat.ErrorString(e.code)}") from None
    root = builder.close()
    if root.tag != "robot":
        raise ImporterError(path, lines.get(root), None, f"expected a <robot> root element, got <{root.tag}>")
    return path, root, lines


def _rpy_quat(roll, pitch, yaw) -> np.ndarray:
    """URDF's fixed-axis roll (x), pitch (y), yaw (z): R = Rz Ry Rx, as a quaternion (x, y, z, w)."""
    def about(i, a):
        q = np.zeros(4)
        q[i], q[3] = math.sin(a / 2), math.cos(a / 2)
        return q
    return quat_multiply(about(2, yaw), quat_multiply(about(1, pitch), about(0, roll)))


class _Parser:
    """Reads <link> and <joint> elements into LinkSpec and JointSpec; every error names its element."""

    def __init__(self, path, lines, scale, result, *, cylinder_as_capsule, ignore_inertial, drive_damping,
                 joint_settings):
        self.path, self.lines, self.scale, self.result = path, lines, scale, result
        self.cylinder_as_capsule, self.ignore_inertial = cylinder_as_capsule, ignore_inertial
        self.drive_damping, self.joint_settings = drive_damping, joint_settings

    def error(self, element, where, reason):
        return ImporterError(self.path, self.lines.get(element), where, reason)

    def ignore(self, element, where, what):
        self.result.ignored.append(f"line {self.lines.get(element)}: {where}: {what}")

    def robot(self, root):
        links, joints = {}, []
        for el in root:
            name = el.get("name")
            if el.tag == "link":
                link = self.link(el)
                if link.name in links:
                    raise self.error(el, link.where, "a second link of that name")
                links[link.name] = link
            elif el.tag == "joint":
                joints.append(self.joint(el))
            elif el.tag not in _KNOWN["robot"]:
                label = f"<{el.tag}>" + (f" {name!r}" if name else "")
                self.ignore(el, f"robot {root.get('name')!r}", f"{label} element (not imported)")
                self._note_transmission_joints(el)
        self._world_link(links, joints)
        return links, joints

    def _note_transmission_joints(self, el):
        """Transmissions name the joints they drive: list them, so a reader sees what has no actuator model."""
        joints = [j.get("name") for j in el.iter("joint") if j.get("name")]
        if el.tag == "transmission" and joints:
            self.result.ignored[-1] += f" for joints {joints}"

    def _world_link(self, links, joints):
        """A link named "world" with no inertial and no shapes is the world itself (a common URDF idiom)."""
        world = links.get("world")
        if world is None or world.mass is not None or world.shapes or any(j.child == "world" for j in joints):
            return
        del links["world"]
        for j in joints:
            if j.parent == "world":
                j.parent = None

    def floats(self, element, attribute, count, where, default=None):
        text = element.get(attribute)
        if text is None:
            if default is None:
                raise self.error(element, where, f"<{element.tag}> needs the attribute {attribute!r}")
            return tuple(default)
        try:
            values = tuple(float(v) for v in text.split())
        except ValueError:
            values = ()
        if len(values) != count or not all(math.isfinite(v) for v in values):
            raise self.error(element, where, f"<{element.tag} {attribute}=...>: expected {count} finite number"
                                             f"{'s' if count > 1 else ''}, got {text!r}")
        return values

    def origin(self, parent, where) -> np.ndarray:
        origin = parent.find("origin")
        if origin is None:
            return IDENTITY.copy()
        xyz = np.asarray(self.floats(origin, "xyz", 3, where, (0, 0, 0))) * self.scale
        return np.concatenate([xyz, _rpy_quat(*self.floats(origin, "rpy", 3, where, (0, 0, 0)))])

    # -------------------------------------------------------------------------------------------- links

    def link(self, el) -> LinkSpec:
        name = el.get("name")
        if not name:
            raise self.error(el, "<link>", "a link needs a name")
        where = f"link {name!r}"
        link = LinkSpec(name, line=self.lines.get(el), where=where)
        for child in el:
            if child.tag not in _KNOWN["link"]:
                self.ignore(child, where, f"<{child.tag}> element (not imported)")
        inertial = el.find("inertial")
        if inertial is not None and not self.ignore_inertial:
            self.inertial(inertial, link)
        for visual in el.findall("visual"):
            self.result.visuals.extend(self.visual(visual, name, where))
        for collision in el.findall("collision"):
            link.shapes.extend(self.collision(collision, where))
        return link

    def inertial(self, el, link):
        where = link.where
        frame = self.origin(el, where)
        mass_el = el.find("mass")
        if mass_el is None:
            raise self.error(el, where, "<inertial> needs a <mass value=...> element")
        link.mass = self.floats(mass_el, "value", 1, where)[0]
        if link.mass < 0:
            raise self.error(mass_el, where, f"mass must be >= 0, got {link.mass}")
        link.com = frame[:3]
        tensor_el = el.find("inertia")
        if tensor_el is not None:
            names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
            ixx, ixy, ixz, iyy, iyz, izz = (self.floats(tensor_el, n, 1, where, (0.0,))[0] for n in names)
            tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) * self.scale ** 2
            rot = matrix_from_quat(frame[3:])  # the inertial frame's axes into the link frame
            link.inertia = rot @ tensor @ rot.T

    def geometry(self, el, where):
        """(kind, size, pose, the geometry element) of a <visual> or <collision>."""
        geometry = el.find("geometry")
        if geometry is None or len(geometry) == 0:
            raise self.error(el, where, f"<{el.tag}> needs a <geometry> with a box, sphere, cylinder, capsule "
                                        "or mesh")
        shape = geometry[0]
        s = self.scale
        if shape.tag == "box":
            size = tuple(v * s / 2 for v in self.floats(shape, "size", 3, where))
        elif shape.tag == "sphere":
            size = (self.floats(shape, "radius", 1, where)[0] * s,)
        elif shape.tag in ("cylinder", "capsule"):
            length_name = "height" if shape.tag == "capsule" and shape.get("length") is None else "length"
            size = (self.floats(shape, "radius", 1, where)[0] * s, self.floats(shape, length_name, 1, where)[0] * s)
        elif shape.tag == "mesh":
            if not shape.get("filename"):
                raise self.error(shape, where, "<mesh> needs a filename")
            size = ()
        else:
            raise self.error(shape, where, f"unknown geometry <{shape.tag}>; expected box, sphere, cylinder, "
                                           "capsule or mesh")
        return shape.tag, size, self.origin(el, where), shape

    def visual(self, el, link_name, where):
        kind, size, pose, shape = self.geometry(el, where)
        if kind == "mesh":
            scale = self.floats(shape, "scale", 3, where, (1, 1, 1))
            return [VisualSpec(link_name, kind, pose, filename=shape.get("filename"),
                               scale=tuple(v * self.scale for v in scale), line=self.lines.get(shape))]
        return [VisualSpec(link_name, kind, pose, size=size, line=self.lines.get(shape))]

    def collision(self, el, where):
        kind, size, pose, shape = self.geometry(el, where)
        if kind == "mesh":
            raise self.error(shape, where, f"mesh collision geometry {shape.get('filename')!r} is not supported "
                                           "(collision shapes: box, sphere, capsule); replace it by primitives")
        if kind == "cylinder" and not self.cylinder_as_capsule:
            raise self.error(shape, where, "cylinder collision geometry is not supported (no cylinder shape); "
                                           "pass cylinder_as_capsule=True to approximate it by a capsule")
        if kind in ("cylinder", "capsule"):
            radius, length = size
            half = max(length / 2 - radius, 0.0) if kind == "cylinder" else length / 2
            rotated = np.concatenate([pose[:3], quat_multiply(pose[3:], _Y_TO_Z)])  # our capsules lie along y
            return [ShapeSpec("capsule", rotated, (radius, half))]
        return [ShapeSpec(kind, pose, size)]

    # -------------------------------------------------------------------------------------------- joints

    def joint(self, el) -> JointSpec:
        name = el.get("name")
        if not name:
            raise self.error(el, "<joint>", "a joint needs a name")
        where = f"joint {name!r}"
        kind = el.get("type")
        if kind not in JOINT_TYPES:
            raise self.error(el, where, f"unknown joint type {kind!r}; expected one of {', '.join(JOINT_TYPES)}")
        links = {}
        for role in ("parent", "child"):
            ref = el.find(role)
            if ref is None or not ref.get("link"):
                raise self.error(el, where, f"needs a <{role} link=...> element")
            links[role] = ref.get("link")
        for child in el:
            if child.tag not in _KNOWN["joint"]:
                what = f"<{child.tag}> (mimic of joint {child.get('joint')!r})" if child.tag == "mimic" else \
                    f"<{child.tag}>"
                self.ignore(child, where, f"{what} not imported")
        joint = JointSpec(name, {"continuous": "revolute", "floating": "free"}.get(kind, kind), links["parent"],
                          links["child"], parent_xform=self.origin(el, where), line=self.lines.get(el), where=where)
        axis = el.find("axis")
        if axis is not None and kind in ("revolute", "continuous", "prismatic", "planar"):
            joint.axis = self.floats(axis, "xyz", 3, where, (1, 0, 0))
            if not np.linalg.norm(joint.axis) > 0:
                raise self.error(axis, where, "the axis must not be zero")
        if joint.kind in ("revolute", "prismatic"):
            joint.dof = self.dof(el, joint, continuous=kind == "continuous")
        elif kind == "planar":
            self.planar(el, joint)
        return joint

    def planar(self, el, joint):
        """A planar joint as a D6 joint: linear axes u, v spanning the plane normal to <axis> ((u, v, axis)
        right-handed, u from the coordinate axis least aligned with <axis>), then the angular axis <axis>.
        <dynamics> and effort apply to all three axes; lower/upper limits are reported (no plane limits)."""
        n = np.asarray(joint.axis, dtype=np.float64) / np.linalg.norm(joint.axis)
        e = np.eye(3)[int(np.argmin(np.abs(n)))]
        u = e - (e @ n) * n
        u /= np.linalg.norm(u)
        v = np.cross(n, u)
        dof = self.dof(el, joint, continuous=True)
        limit = el.find("limit")
        if limit is not None and (limit.get("lower") is not None or limit.get("upper") is not None):
            self.ignore(limit, joint.where, "lower/upper limits of a planar joint not imported")
        joint.kind = "d6"
        joint.linear_axes = [dict(dof, axis=tuple(u)), dict(dof, axis=tuple(v))]
        joint.angular_axes = [dict(dof, axis=tuple(n))]

    def optional(self, element, attribute, where):
        if element is None or element.get(attribute) is None:
            return None
        return self.floats(element, attribute, 1, where)[0]

    def dof(self, el, joint, continuous) -> dict:
        """JointDofConfig keywords of a revolute, continuous or prismatic joint: limits, effort, dynamics."""
        where, dof = joint.where, dict(self.joint_settings)
        linear = self.scale if joint.kind == "prismatic" else 1.0
        limit, dynamics = el.find("limit"), el.find("dynamics")
        if not continuous:
            for name, sign in (("lower", -1.0), ("upper", 1.0)):
                value = self.optional(limit, name, where)
                dof["limit_" + name] = limit_or_unlimited(None if value is None else value * linear, sign)
        effort, velocity = self.optional(limit, "effort", where), self.optional(limit, "velocity", where)
        if effort is not None:
            dof["effort_limit"] = effort
        if velocity is not None:
            self.result.velocity_limit[joint.name] = velocity * linear
        damping, friction = self.optional(dynamics, "damping", where), self.optional(dynamics, "friction", where)
        if damping is not None:
            dof["target_kd" if self.drive_damping else "damping"] = damping
        if friction is not None:
            dof["friction"] = friction
        return dof
