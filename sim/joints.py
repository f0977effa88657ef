"""Joint types of articulated bodies (Model.joint_type) and the per-axis settings of a joint (JointDofConfig).

The numbering follows Newton's `JointType`. Each joint has `joint_dof_dim = (linear axes, angular axes)`:
revolute (0, 1), prismatic (1, 0), ball (0, 3), fixed (0, 0), free (3, 3), D6 (up to 3, up to 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

JOINT_PRISMATIC = 0
JOINT_REVOLUTE = 1
JOINT_BALL = 2
JOINT_FIXED = 3
JOINT_FREE = 4
JOINT_D6 = 6

JOINT_NAMES = {JOINT_PRISMATIC: "prismatic", JOINT_REVOLUTE: "revolute", JOINT_BALL: "ball",
               JOINT_FIXED: "fixed", JOINT_FREE: "free", JOINT_D6: "d6"}

#: an "unlimited" joint limit [m or rad] (Newton's MAXVAL)
JOINT_LIMIT_UNLIMITED = 1.0e10


def joint_coord_count(joint_type: int, axis_count: int) -> int:
    """Entries of joint_q a joint has: 7 for free (position, quaternion), 4 for ball, else one per axis."""
    if joint_type == JOINT_FREE:
        return 7
    if joint_type == JOINT_BALL:
        return 4
    return axis_count


@dataclass
class JointDofConfig:
    """Settings of one axis (degree of freedom) of a joint; the keyword arguments of add_joint_* are these.

    Attributes:
        axis: direction in the joint's parent anchor frame (normalised), vec3.
        limit_lower, limit_upper: coordinate limits [m or rad]; +-JOINT_LIMIT_UNLIMITED: none.
        limit_ke: stiffness of the limit's penalty spring [N/m or N m/rad].
        limit_kd: damping of the limit while it is violated [N s/m or N m s/rad].
        target_pos: drive position target [m or rad] (Model.joint_target_pos, Control.joint_target_pos).
        target_vel: drive velocity target [m/s or rad/s] (Model.joint_target_vel, Control.joint_target_vel).
        target_ke: drive stiffness (position gain) [N/m or N m/rad]; 0: no position drive.
        target_kd: drive damping (velocity gain) [N s/m or N m s/rad]; 0: no velocity drive.
        effort_limit: largest force or torque the drive exerts [N or N m].
        armature: inertia added to the axis's diagonal of the mass matrix [kg or kg m^2].
        friction: joint friction coefficient [N or N m] (stored for other solvers; SolverFeatherstone ignores
            it, as Newton's does).
        damping: passive viscous damping [N s/m or N m s/rad], always active.
    """

    axis: tuple = (1.0, 0.0, 0.0)
    limit_lower: float = -JOINT_LIMIT_UNLIMITED
    limit_upper: float = JOINT_LIMIT_UNLIMITED
    limit_ke: float = 1.0e4
    limit_kd: float = 1.0e1
    target_pos: float = 0.0
    target_vel: float = 0.0
    target_ke: float = 0.0
    target_kd: float = 0.0
    effort_limit: float = 1.0e6
    armature: float = 0.0
    friction: float = 0.0
    damping: float = 0.0

    def __post_init__(self):
        axis = np.asarray(self.axis, dtype=np.float64).reshape(-1)
        if axis.shape != (3,) or not np.linalg.norm(axis) > 0:
            raise ValueError(f"a joint axis is a non-zero 3-vector, got {self.axis!r}")
        self.axis = tuple(axis / np.linalg.norm(axis))
        if self.limit_lower > self.limit_upper:
            raise ValueError(f"joint limit_lower {self.limit_lower} is above limit_upper {self.limit_upper}")
        for name in ("limit_ke", "limit_kd", "target_ke", "target_kd", "effort_limit", "armature", "friction",
                     "damping"):
            if getattr(self, name) < 0:
                raise ValueError(f"joint {name} must be >= 0, got {getattr(self, name)}")

    #: the fields stored per degree of freedom in the Model, in Model attribute order (joint_<name>)
    PER_DOF = ("limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_pos", "target_vel", "target_ke",
               "target_kd", "effort_limit", "armature", "friction", "damping")
