"""Joints and articulations of ModelBuilder: add_joint_* and add_articulation, and their arrays at finalize.

A joint connects a parent body (or the world, -1) to a child body. Its frame on the parent is `parent_xform`
(the parent anchor, in the parent body's frame or in world for -1), on the child `child_xform`; the joint's
coordinates move the child anchor relative to the parent anchor, and axes are given in the parent anchor frame.
"""

from __future__ import annotations

import numpy as np

import kernels as wp

from .joints import (JOINT_BALL, JOINT_D6, JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, JointDofConfig,
                     joint_coord_count)
from .spatial import quat_rotate, transform_inverse, transform_multiply, transform_normalized


class JointBuilderMixin:
    """The joint half of ModelBuilder (see sim/builder.py). Lists are per joint, per axis (dof) or per joint
    coordinate; `joint_q` and `joint_qd` hold the initial coordinates and may be edited before finalize."""

    def _init_joints(self):
        self.joint_type, self.joint_parent, self.joint_child = [], [], []
        self.joint_X_p, self.joint_X_c, self.joint_dof_dim = [], [], []
        self.joint_q_start, self.joint_qd_start = [], []
        self.joint_axis = []
        self.joint_dof_config: list[JointDofConfig] = []
        #: initial joint coordinates [m, rad, quaternions], one list entry per coordinate
        self.joint_q = []
        #: initial joint velocities [m/s, rad/s], one list entry per degree of freedom
        self.joint_qd = []
        self.articulation_start = []

    @property
    def joint_count(self) -> int:
        return len(self.joint_type)

    @property
    def joint_dof_count(self) -> int:
        return len(self.joint_qd)

    @property
    def joint_coord_count(self) -> int:
        return len(self.joint_q)

    # ------------------------------------------------------------------------------------------------ joints

    def add_joint(self, joint_type: int, parent: int, child: int, *, linear_axes=(), angular_axes=(),
                  parent_xform=None, child_xform=None) -> int:
        """A joint of any type (sim.joints.JOINT_*) with its axes as JointDofConfig (or bare axis vectors);
        add_joint_revolute and the others call this. Returns the joint's index."""
        if not -1 <= parent < self.body_count or not 0 <= child < self.body_count:
            raise ValueError(f"joint parent {parent} / child {child}: not bodies (there are {self.body_count}; "
                             "-1 is the world for the parent)")
        if parent == child:
            raise ValueError(f"a joint needs two different bodies, got body {child} twice")
        if child in self.joint_child:
            raise ValueError(f"body {child} is already the child of joint {self.joint_child.index(child)}")
        axes = [a if isinstance(a, JointDofConfig) else JointDofConfig(axis=a)
                for a in list(linear_axes) + list(angular_axes)]
        if len(linear_axes) > 3 or len(angular_axes) > 3:
            raise ValueError("a joint has at most 3 linear and 3 angular axes")
        self.joint_q_start.append(self.joint_coord_count)
        self.joint_qd_start.append(self.joint_dof_count)
        self.joint_type.append(int(joint_type))
        self.joint_parent.append(int(parent))
        self.joint_child.append(int(child))
        self.joint_X_p.append(transform_normalized(parent_xform, "a joint transform"))
        self.joint_X_c.append(transform_normalized(child_xform, "a joint transform"))
        self.joint_dof_dim.append((len(linear_axes), len(angular_axes)))
        for a in axes:
            self.joint_axis.append(a.axis)
            self.joint_dof_config.append(a)
            self.joint_qd.append(0.0)
        coords = [0.0] * joint_coord_count(joint_type, len(axes))
        if joint_type in (JOINT_BALL, JOINT_FREE):
            coords[-1] = 1.0  # identity quaternion
        self.joint_q.extend(coords)
        self.joint_world.append(self.current_world)
        return self.joint_count - 1

    def add_joint_revolute(self, parent: int, child: int, *, parent_xform=None, child_xform=None,
                           axis=(1.0, 0.0, 0.0), **dof) -> int:
        """A hinge about `axis` (parent anchor frame) through the anchors; coordinate: the angle [rad].

        Keyword arguments of the axis (JointDofConfig): limit_lower, limit_upper [rad], limit_ke [N m/rad],
        limit_kd [N m s/rad], target_pos [rad], target_vel [rad/s], target_ke [N m/rad], target_kd
        [N m s/rad], effort_limit [N m], armature [kg m^2], friction, damping [N m s/rad]."""
        return self.add_joint(JOINT_REVOLUTE, parent, child, angular_axes=[JointDofConfig(axis=axis, **dof)],
                              parent_xform=parent_xform, child_xform=child_xform)

    def add_joint_prismatic(self, parent: int, child: int, *, parent_xform=None, child_xform=None,
                            axis=(1.0, 0.0, 0.0), **dof) -> int:
        """A slider along `axis` (parent anchor frame); coordinate: the displacement [m]. Keyword arguments as
        add_joint_revolute's, in linear units (m, N/m, N s/m, N, kg)."""
        return self.add_joint(JOINT_PRISMATIC, parent, child, linear_axes=[JointDofConfig(axis=axis, **dof)],
                              parent_xform=parent_xform, child_xform=child_xform)

    def add_joint_ball(self, parent: int, child: int, *, parent_xform=None, child_xform=None,
                       armature: float = 0.0, friction: float = 0.0, damping: float = 0.0) -> int:
        """A spherical joint: coordinates the child anchor's orientation in the parent anchor frame (unit
        quaternion x, y, z, w), velocities its angular velocity in the parent anchor frame [rad/s]. No limits
        or drives (yet); `armature` [kg m^2] and `damping` [N m s/rad] apply to each of the 3 axes."""
        axes = [JointDofConfig(axis=a, armature=armature, friction=friction, damping=damping) for a in np.eye(3)]
        return self.add_joint(JOINT_BALL, parent, child, angular_axes=axes, parent_xform=parent_xform,
                              child_xform=child_xform)

    def add_joint_fixed(self, parent: int, child: int, *, parent_xform=None, child_xform=None) -> int:
        """A weld: the child anchor stays at the parent anchor (no coordinates)."""
        return self.add_joint(JOINT_FIXED, parent, child, parent_xform=parent_xform, child_xform=child_xform)

    def add_joint_free(self, child: int, *, parent_xform=None, child_xform=None, parent: int = -1) -> int:
        """Six degrees of freedom. Coordinates (as Newton's): the child anchor's position [m] and orientation
        (quaternion x, y, z, w) in the parent anchor frame, 7 entries, initialised from the child body's pose
        (add_body's xform) so that forward kinematics reproduces it. Velocities: the child's centre-of-mass
        velocity [m/s], then its angular velocity [rad/s], both in the parent anchor frame (6 entries;
        initialised from add_body's velocities when the parent is the world)."""
        axes = [JointDofConfig(axis=a) for a in np.eye(3)]
        joint = self.add_joint(JOINT_FREE, parent, child, linear_axes=axes,
                               angular_axes=[JointDofConfig(axis=a) for a in np.eye(3)],
                               parent_xform=parent_xform, child_xform=child_xform)
        x_pj = self.joint_X_p[joint] if parent < 0 else transform_multiply(self.body_q[parent], self.joint_X_p[joint])
        x_j = transform_multiply(transform_multiply(transform_inverse(x_pj), self.body_q[child]), self.joint_X_c[joint])
        start = self.joint_q_start[joint]
        self.joint_q[start:start + 7] = list(x_j)
        if parent < 0:
            q_inv = transform_inverse(x_pj)[3:]
            w, v = self.body_qd[child][:3], self.body_qd[child][3:]
            dof = self.joint_qd_start[joint]
            self.joint_qd[dof:dof + 6] = list(quat_rotate(q_inv, v)) + list(quat_rotate(q_inv, w))
        return joint

    def add_joint_d6(self, parent: int, child: int, *, linear_axes=(), angular_axes=(), parent_xform=None,
                     child_xform=None) -> int:
        """A generic joint of up to 3 linear and 3 angular axes (JointDofConfig, or axis vectors with default
        settings), in the parent anchor frame. Coordinates: the displacements along the linear axes [m], then
        the angles [rad] of successive rotations about the angular axes (each axis turned by the rotations
        before it, intrinsic order), which pass through the displaced joint origin."""
        return self.add_joint(JOINT_D6, parent, child, linear_axes=linear_axes, angular_axes=angular_axes,
                              parent_xform=parent_xform, child_xform=child_xform)

    def add_articulation(self, joints=None) -> int:
        """Start an articulation (a tree of joints solved together, one mass matrix). Without `joints`, the
        articulation begins with the next joint added (warp.sim style); with a list of joint indices (Newton
        style), those contiguous joints form it. Joints in no articulation at finalize: each root joint
        (parent -1) starts one. Returns the articulation's index."""
        start = self.joint_count
        if joints is not None:
            joints = [int(j) for j in joints]
            if not joints or joints != list(range(joints[0], joints[0] + len(joints))):
                raise ValueError(f"an articulation's joints must be contiguous and increasing, got {joints}")
            if joints[-1] >= self.joint_count:
                raise ValueError(f"joint {joints[-1]} does not exist (there are {self.joint_count})")
            start = joints[0]
        if self.articulation_start and start < self.articulation_start[-1]:
            raise ValueError("articulations must be added in joint order")
        if not self.articulation_start or start != self.articulation_start[-1]:
            self.articulation_start.append(start)
        return len(self.articulation_start) - 1

    # ------------------------------------------------------------------------------------------------ finalize

    def _articulation_starts(self) -> list:
        """Articulation start joints: the explicit ones, plus every root joint in a stretch before them."""
        starts = set(self.articulation_start)
        first = min(starts, default=self.joint_count)
        starts |= {j for j in range(first) if self.joint_parent[j] < 0}
        if self.joint_count and 0 not in starts:
            raise ValueError("joint 0 must start an articulation (its parent is a body, not the world)")
        return sorted(starts)

    def _joint_ancestors(self, starts) -> list:
        """Per joint, the joint whose child is its parent body (-1 at a root), checked to come earlier in the
        same articulation (the solver walks each articulation's joints in order)."""
        child_joint = {c: j for j, c in enumerate(self.joint_child)}
        art = np.searchsorted(np.asarray(starts), np.arange(self.joint_count), side="right") - 1
        ancestors = []
        for j, parent in enumerate(self.joint_parent):
            a = child_joint.get(parent, -1) if parent >= 0 else -1
            if parent >= 0 and (a < 0 or a >= j or art[a] != art[j]):
                raise ValueError(f"joint {j}: its parent body {parent} must be the child of an earlier joint of "
                                 "the same articulation")
            ancestors.append(a)
        return ancestors

    def _finalize_joints(self, m, arr):
        """Joint and articulation arrays of `m` (see Model)."""
        d = m.device
        starts = self._articulation_starts()
        ints = dict(dtype=wp.int32, np_dtype=np.int32)
        m.joint_count = self.joint_count
        m.joint_dof_count = self.joint_dof_count
        m.joint_coord_count = self.joint_coord_count
        m.articulation_count = len(starts)
        m.joint_type = arr(self.joint_type, **ints)
        m.joint_parent = arr(self.joint_parent, **ints)
        m.joint_child = arr(self.joint_child, **ints)
        m.joint_ancestor = arr(self._joint_ancestors(starts), **ints)
        m.joint_X_p = arr(self.joint_X_p, wp.transform, (7,))
        m.joint_X_c = arr(self.joint_X_c, wp.transform, (7,))
        m.joint_axis = arr(self.joint_axis, wp.vec3, (3,))
        m.joint_q_start = arr(self.joint_q_start + [self.joint_coord_count], **ints)
        m.joint_qd_start = arr(self.joint_qd_start + [self.joint_dof_count], **ints)
        dim = np.asarray(self.joint_dof_dim, np.int32).reshape(-1, 2)
        m.joint_dof_dim = wp.array(dim, dtype=wp.int32, device=d)
        m.joint_q = arr(self.joint_q, float, grad=True)
        m.joint_qd = arr(self.joint_qd, float, grad=True)
        for name in JointDofConfig.PER_DOF:
            values = [getattr(c, name) for c in self.joint_dof_config]
            setattr(m, "joint_" + name, arr(values, float, grad=True))
        m.articulation_start = arr(starts + [self.joint_count], **ints)
        art = np.searchsorted(np.asarray(starts), np.arange(self.joint_count), side="right") - 1
        m.joint_articulation = arr(art, **ints)
