"""sim.import_mjcf: a MuJoCo MJCF model (bodies, joints, geoms, inertias, limits, simple actuators) into a
ModelBuilder, read through the `mujoco` package's compiler.

MuJoCo compiles the file first (defaults, classes, includes, `fromto`, inertias from geoms, degrees to radians),
so this module reads the compiled mjModel, not the XML. What is imported and what is refused:
docs/articulations.md.
"""

from __future__ import annotations

import os
import re
from functools import partial

import numpy as np

from ..spatial import matrix_from_quat, quat_between, transform_multiply
from .assembly import (IDENTITY, ImporterError, ImportResult, JointSpec, LinkSpec, ShapeSpec, VisualSpec,
                       add_shape, add_to_builder, limit_or_unlimited, placement, report_ignored)

# mjtJoint and mjtGeom values, by name (stable across MuJoCo 2.x-4.x)
_JOINT_KINDS = {0: "free", 1: "ball", 2: "prismatic", 3: "revolute"}
_MJ_JOINT_NAMES = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
_GEOM_NAMES = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box",
               7: "mesh", 8: "sdf"}
_Z_FROM_Y = quat_between((0.0, 1.0, 0.0), (0.0, 0.0, 1.0))  # MuJoCo's capsules and planes use z, ours y


def import_mjcf(source, builder, *, xform=None, density: float | None = None, limit_ke: float = 1.0e4,
                limit_kd: float = 1.0e1) -> ImportResult:
    """Add the bodies, joints and shapes of an MJCF model to `builder`, through `mujoco.MjModel`.

    Each MuJoCo body becomes a body with the compiled mass, centre of mass and inertia; a body with one joint
    gets that joint (hinge -> revolute, slide -> prismatic, ball, free), a body with several hinges and slides
    one D6 joint with an axis per joint in the file's order (named after them joined by "_"; ImportResult.dof
    gives each one's index into joint_qd), a body with none is welded to its parent (a fixed joint). Joint
    ranges become penalty limits (`limit_ke`, `limit_kd`; MuJoCo's solref is not translated), damping,
    armature and frictionloss go to the joint's axes, and position/velocity actuators on a joint with gear 1
    become its drive (target_ke = kp, target_kd = kv, effort_limit from
    forcerange). Initial coordinates: MuJoCo's qpos0 (the pose as written).

    Args:
        source: an .xml file (includes and mesh files resolved next to it), or MJCF text (starting with "<").
        builder: the sim.ModelBuilder to add to. MJCF is z up; the model is turned onto the builder's up axis.
        xform: world pose of the model (px, py, pz, qx, qy, qz, qw), applied after the up-axis rotation.
        density: density [kg/m^3] given to the shapes (only proportions; masses come from MuJoCo); None:
            builder.default_shape_density.
        limit_ke, limit_kd: stiffness and damping of the joint-limit penalty.

    Returns:
        ImportResult (body and joint indices by MuJoCo name, visual geoms, what was ignored).

    Raises:
        ImportError: the `mujoco` package is not installed (pip install mujoco, or the `mjcf` extra).
        FileNotFoundError: no file at `source`.
        ImporterError: what MuJoCo's compiler refuses (with the line it names), several joints on one body
            that a D6 joint cannot express (a ball among them, a slide after a hinge, hinges at different
            positions, more than 3 slides or hinges), collision geoms other than sphere, box, capsule (and
            static planes), a free joint below another body, a joint whose reference position `ref` is not zero.
    """
    mujoco = _mujoco()
    path, model = _compile(mujoco, source)
    error = partial(ImporterError, path)
    result = ImportResult(path)
    reader = _Reader(mujoco, model, result, error, dict(limit_ke=limit_ke, limit_kd=limit_kd))
    links, joints = reader.bodies()
    reader.actuators(joints)
    reader.report_unsupported(builder)
    density = builder.default_shape_density if density is None else float(density)
    root_pose = placement(xform, "z", builder)
    add_to_builder(builder, links, joints, result, error, root_pose=root_pose, floating=False, base_joint=None,
                   collapse_fixed=False, density=density)
    for name, axes in reader.d6_axes.items():
        start = builder.joint_qd_start[result.joint[name]]
        result.dof.update({axis: start + k for k, axis in enumerate(axes)})
    for shape in reader.static_shapes:
        shape = ShapeSpec(shape.kind, transform_multiply(root_pose, shape.xform), shape.size)
        if shape.kind == "plane":
            builder.add_shape_plane(shape.xform[:3], shape.xform[3:], width=shape.size[0], length=shape.size[1])
        else:
            add_shape(builder, shape, -1, density)
    report_ignored(result)
    return result


def _mujoco():
    try:
        import mujoco
    except ImportError:
        raise ImportError("sim.import_mjcf needs the `mujoco` package: pip install mujoco (or the `mjcf` extra "
                          "of this toolkit)") from None
    return mujoco


def _compile(mujoco, source):
    """(path for messages, mjModel); MuJoCo's own compile errors become ImporterError with its line."""
    text = isinstance(source, str) and source.lstrip().startswith("<")
    path = "<string>" if text else os.fspath(source)
    if not text and not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such MJCF file")
    try:
        model = mujoco.MjModel.from_xml_string(source) if text else mujoco.MjModel.from_xml_path(path)
    except ValueError as e:
        message = " ".join(str(e).replace("Error: ", "", 1).split())
        line = re.search(r"line (\d+)", message)
        found = re.search(r"Element (name )?'([^']*)'", message)  # "Element name 'a', id 1" or "Element 'joint'"
        element = None
        if found and found.group(2):
            element = f"element {found.group(2)!r}" if found.group(1) else f"<{found.group(2)}>"
        reason = re.sub(r"\s*Element .*$", "", message)
        raise ImporterError(path, int(line.group(1)) if line else None, element, reason) from None
    return path, model


def _show(vector) -> tuple:
    return tuple(float(v) for v in vector)


def _xform(pos, quat_wxyz) -> np.ndarray:
    w, x, y, z = (float(v) for v in quat_wxyz)
    return np.array([*map(float, pos), x, y, z, w])


class _Reader:
    """Reads a compiled mjModel into the importers' LinkSpec/JointSpec, recording what it leaves out."""

    def __init__(self, mujoco, model, result: ImportResult, error, joint_settings: dict):
        self.mj, self.m, self.result, self.error = mujoco, model, result, error
        self.joint_settings = joint_settings
        self.static_shapes = []
        self.joint_of = {}  # mjModel id of a hinge or slide -> (its JointSpec, its axis's dof keywords)
        self.links_pose = {}  # body name -> world pose, for free bodies
        self.d6_axes = {}  # D6 joint name -> the names of the MuJoCo joints that are its axes, in order

    def name(self, kind: str, index: int) -> str:
        obj = getattr(self.m, kind)(index)
        return obj.name or f"{kind}{index}"

    def bodies(self):
        m = self.m
        links, joints = {}, []
        for g in range(m.ngeom):
            if m.geom_bodyid[g] == 0:
                self.geom(g, None, "world")
        for b in range(1, m.nbody):
            name = self.name("body", b)
            where = f"body {name!r}"
            r = matrix_from_quat(_xform((0, 0, 0), m.body_iquat[b])[3:])
            link = LinkSpec(name, mass=float(m.body_mass[b]), com=np.array(m.body_ipos[b], dtype=np.float64),
                            inertia=r @ np.diag(m.body_inertia[b]) @ r.T, where=where)
            for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]):
                self.geom(g, link, name)
            links[name] = link
            parent = None if m.body_parentid[b] == 0 else self.name("body", m.body_parentid[b])
            joints.append(self.joint(b, name, parent, where))
            link.pose = self.links_pose.get(name)
            if m.body_gravcomp[b] != 0:
                self.result.ignored.append(f"{where}: gravcomp {m.body_gravcomp[b]:g} not imported")
        return links, joints

    def joint(self, b: int, body: str, parent: str | None, where: str) -> JointSpec:
        """The JointSpec holding body `b` to its parent (a weld when the body has no joint)."""
        m = self.m
        x_pb = _xform(m.body_pos[b], m.body_quat[b])  # body frame in the parent's
        count, first = int(m.body_jntnum[b]), int(m.body_jntadr[b])
        if count == 0:
            return JointSpec(f"{body}_weld", "fixed", parent, body, parent_xform=x_pb, where=where)
        if count > 1:
            return self.joints_as_d6(range(first, first + count), body, parent, x_pb, where)
        j = first
        name = self.name("joint", j)
        spec = JointSpec(name, _JOINT_KINDS[int(m.jnt_type[j])], parent, body, where=f"joint {name!r}")
        kind = spec.kind
        if kind == "free":
            if parent is not None:
                raise self.error(None, spec.where, f"a free joint below {parent!r} (only top-level bodies float)")
            self.links_pose[body] = x_pb  # in world: the joint's coordinates are the body's pose, as qpos's
            return self._passive(spec, j)
        anchor = np.concatenate([np.asarray(m.jnt_pos[j], dtype=np.float64), IDENTITY[3:]])
        spec.child_xform = anchor
        spec.parent_xform = transform_multiply(x_pb, anchor)
        spec.axis = tuple(float(v) for v in m.jnt_axis[j])
        if kind in ("revolute", "prismatic"):
            spec.dof = self.axis_settings(j, spec.where)
            self.joint_of[j] = (spec, spec.dof)
        else:
            if m.jnt_limited[j]:
                self.result.ignored.append(f"{spec.where}: ball range (a cone limit) not imported")
            self._passive(spec, j)
        return spec

    def axis_settings(self, j: int, where: str) -> dict:
        """JointDofConfig keywords of hinge or slide j: the limit penalty, range, damping, armature,
        frictionloss (its stiffness is reported); a `ref` other than 0 is refused."""
        m = self.m
        qpos0 = float(m.qpos0[m.jnt_qposadr[j]])
        if qpos0 != 0.0:
            raise self.error(None, where, f"ref = {qpos0:g} is not supported (the pose as written must be the "
                                          "joint's zero)")
        dof = dict(self.joint_settings)
        if m.jnt_limited[j]:
            dof["limit_lower"] = limit_or_unlimited(float(m.jnt_range[j][0]), -1.0)
            dof["limit_upper"] = limit_or_unlimited(float(m.jnt_range[j][1]), 1.0)
        adr = int(m.jnt_dofadr[j])
        for attribute, key in (("dof_damping", "damping"), ("dof_armature", "armature"),
                               ("dof_frictionloss", "friction")):
            dof[key] = float(getattr(m, attribute)[adr])
        self._stiffness(j, where)
        return dof

    def _stiffness(self, j: int, where: str) -> None:
        if self.m.jnt_stiffness[j] != 0:
            self.result.ignored.append(f"{where}: stiffness {self.m.jnt_stiffness[j]:g} (a joint spring) not "
                                       "imported")

    def _passive(self, spec: JointSpec, j: int) -> JointSpec:
        """Ball and free joint j: damping, armature, frictionloss and stiffness are reported."""
        m = self.m
        dof = int(m.jnt_dofadr[j])
        ndof = {"free": 6, "ball": 3}[spec.kind]
        for attribute, key in (("dof_damping", "damping"), ("dof_armature", "armature"),
                               ("dof_frictionloss", "friction")):
            if np.asarray(getattr(m, attribute)[dof:dof + ndof]).any():
                self.result.ignored.append(f"{spec.where}: {key} on a {_MJ_JOINT_NAMES[int(m.jnt_type[j])]} "
                                           "joint not imported")
        self._stiffness(j, spec.where)
        return spec

    def joints_as_d6(self, ids, body: str, parent: str | None, x_pb, where: str) -> JointSpec:
        """Several hinges and slides on one body as one D6 joint, axes in the file's order. MuJoCo applies a
        body's joints one after the other, each in the frame the previous ones moved; a D6 joint translates
        first and then turns about one point, so the slides must come before the hinges and the hinges must
        share their `pos`. Anything else is refused rather than imported as a different mechanism."""
        m = self.m
        names = [self.name("joint", j) for j in ids]
        spec = JointSpec("_".join(names), "d6", parent, body, where=where)
        hinges = []
        for j, name in zip(ids, names):
            kind = _MJ_JOINT_NAMES[int(m.jnt_type[j])]
            here = f"joint {name!r} of body {body!r}"
            if kind not in ("hinge", "slide"):
                raise self.error(None, here, f"a {kind} joint together with other joints on one body is not "
                                             f"supported (joints {names}; several hinges and slides become one "
                                             "D6 joint)")
            first_hinge = names[ids.index(hinges[0])] if hinges else None
            if kind == "slide" and hinges:
                raise self.error(None, here, f"a slide after the hinge {first_hinge!r} on one body moves along the "
                                             "turned axis, which a D6 joint (linear axes first, then angular ones) "
                                             "cannot express; write the slides before the hinges")
            if kind == "hinge" and hinges and not np.allclose(m.jnt_pos[j], m.jnt_pos[hinges[0]], atol=1e-9):
                raise self.error(None, here, f"hinges at different positions on one body ({first_hinge!r} at "
                                             f"{_show(m.jnt_pos[hinges[0]])}, this one at {_show(m.jnt_pos[j])}) "
                                             "are not supported: a D6 joint turns about one point")
            if kind == "hinge":
                hinges.append(j)
            axis = dict(axis=_show(m.jnt_axis[j]), **self.axis_settings(j, here))
            (spec.angular_axes if kind == "hinge" else spec.linear_axes).append(axis)
            self.joint_of[j] = (spec, axis)
        if len(spec.linear_axes) > 3 or len(spec.angular_axes) > 3:
            raise self.error(None, where, f"{len(spec.linear_axes)} slides and {len(spec.angular_axes)} hinges on "
                                          "one body: a D6 joint has at most 3 of each")
        self.d6_axes[spec.name] = names
        pivot = hinges[0] if hinges else ids[0]  # slides move the same wherever their `pos` is
        spec.child_xform = np.concatenate([np.asarray(m.jnt_pos[pivot], dtype=np.float64), IDENTITY[3:]])
        spec.parent_xform = transform_multiply(x_pb, spec.child_xform)
        return spec

    def geom(self, g: int, link: LinkSpec | None, body: str) -> None:
        """A sphere, box or capsule becomes a shape of `link` (None: static), a non-colliding geom a visual."""
        m = self.m
        kind = _GEOM_NAMES.get(int(m.geom_type[g]), str(m.geom_type[g]))
        size = tuple(float(v) for v in m.geom_size[g])
        pose = _xform(m.geom_pos[g], m.geom_quat[g])
        where = f"geom {self.name('geom', g)!r} of body {body!r}"
        if m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0:
            self.result.visuals.append(VisualSpec(body, kind, pose, size))
            return
        if kind == "sphere":
            shape = ShapeSpec("sphere", pose, size[:1])
        elif kind == "box":
            shape = ShapeSpec("box", pose, size)
        elif kind == "capsule":
            shape = ShapeSpec("capsule", transform_multiply(pose, np.concatenate([np.zeros(3), _Z_FROM_Y])), size[:2])
        elif kind == "plane" and link is None:
            shape = ShapeSpec("plane", transform_multiply(pose, np.concatenate([np.zeros(3), _Z_FROM_Y])), size[:2])
        else:
            raise self.error(None, where, f"{kind} collision geometry is not supported (sphere, box, capsule, "
                                          "static plane; contype=conaffinity=0 makes it visual only)")
        if link is None:
            self.static_shapes.append(shape)
        else:
            link.shapes.append(shape)

    def actuators(self, joints: list) -> None:
        """Position and velocity actuators on a joint (gear 1, no activation dynamics) become its drive."""
        m = self.m
        for a in range(m.nu):
            where = f"actuator {self.name('actuator', a)!r}"
            j = int(m.actuator_trnid[a][0])
            spec, dof = self.joint_of.get(j, (None, None)) if m.actuator_trntype[a] == 0 else (None, None)
            gain, bias = m.actuator_gainprm[a], m.actuator_biasprm[a]
            simple = (spec is not None and m.actuator_dyntype[a] == 0
                      and m.actuator_gaintype[a] == 0 and m.actuator_biastype[a] == 1
                      and np.allclose(m.actuator_gear[a], [1, 0, 0, 0, 0, 0]) and bias[0] == 0.0)
            kp, kv = float(-bias[1]), float(-bias[2])
            position = simple and gain[0] == kp and kp > 0 and kv >= 0
            velocity = simple and kp == 0 and gain[0] == kv and kv > 0
            if not (position or velocity):
                self.result.ignored.append(f"{where}: not a position or velocity actuator on a hinge or slide "
                                           "with gear 1 (not imported; apply its force through Control.joint_f)")
                continue
            dof.update(target_ke=kp, target_kd=kv, target_pos=0.0, target_vel=0.0)
            if m.actuator_forcelimited[a]:
                low, high = (float(v) for v in m.actuator_forcerange[a])
                dof["effort_limit"] = max(-low, high)
                if low != -high:
                    self.result.ignored.append(f"{where}: forcerange [{low:g}, {high:g}] imported as "
                                               f"+-{max(-low, high):g}")

    def report_unsupported(self, builder) -> None:
        """Model parts with no counterpart, one line each."""
        m = self.m
        for count, what in ((m.ntendon, "tendons"), (m.neq, "equality constraints"), (m.nsensor, "sensors"),
                            (m.nkey, "keyframes"), (m.nsite, "sites"), (m.nexclude, "contact exclusions")):
            if count:
                self.result.ignored.append(f"{count} {what} not imported")
        if m.opt.disableflags & int(self.mj.mjtDisableBit.mjDSBL_CONTACT):
            self.result.ignored.append('option <flag contact="disable"/>: a solver setting, not the model\'s '
                                       "(SolverFeatherstone(model, contacts=False) does the same)")
        g = np.asarray(m.opt.gravity, dtype=np.float64)
        if not np.allclose(g, (0.0, 0.0, builder.gravity)):  # the file's z is turned onto the builder's up
            self.result.ignored.append(f"option gravity {tuple(float(v) for v in g)} (the builder's is used)")
