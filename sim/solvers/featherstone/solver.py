"""`SolverFeatherstone`: articulated rigid bodies in reduced (joint) coordinates."""

from __future__ import annotations

import warnings

import numpy as np

import kernels as wp

from ...articulation import eval_poses, eval_velocities, joint_data, launch_fk
from . import kernels as k
from .contacts import LinkContacts
from .mass_matrix import solve_mass_matrix


class SolverFeatherstone:
    """Articulations (trees of joints, see ModelBuilder.add_joint_*) simulated in joint coordinates.

    A step, per articulation: forward kinematics of State.joint_q; twists and velocity-product accelerations
    of the bodies and their bias wrenches (inertial forces, gravity, Control.body_f) by recursive Newton-Euler;
    the generalized forces tau = joint forces - S^T (subtree bias wrenches), where the joint forces are
    Control.joint_f, passive damping (Model.joint_damping), the PD drive on each axis
    target_ke (target_pos - q) + target_kd (target_vel - qd) clamped to +-effort_limit, and limit penalties
    limit_ke (limit - q) - limit_kd qd beyond a limit; the joint-space mass matrix H by the composite-rigid-body
    algorithm, with the armature on its diagonal; qdd = H^-1 tau by a tiled Cholesky factorisation and solve per
    articulation (mass_matrix.py); semi-implicit Euler of the coordinates (quaternions of ball and free joints
    normalised); forward kinematics of the new coordinates into State.body_q and State.body_qd.

    Drives and limits act on revolute, prismatic and D6 axes; ball and free joints get joint_f and damping only,
    as in Newton's SolverFeatherstone (1.8). Model.joint_friction is not simulated (nor is it by Newton's): a
    warning says so when it is non-zero.
    Contacts: the shapes on the links collide with static shapes (the ground) and, with `body_contacts`, with the
    shapes of other bodies, except those of a joint's parent and child; the contact wrenches are SolverRigid's
    (penalty normal force, regularised Coulomb friction, per-shape materials; see SolverRigid) at the poses and
    velocities of the joint state, and enter with Control.body_f (torque about the centre of mass [N m], force
    [N], world) through the bias wrenches, i.e. as J^T f. Bodies that are the child of no joint are not moved.
    Explicit in the joint and contact forces: stable for dt well below sqrt(m_eff / ke) of the stiffest limit,
    drive or contact.

    Differentiable through a Tape when every step writes a fresh State (state_out never aliases state_in):
    with respect to the initial joint_q and joint_qd, Control.joint_f and the drive targets, the model's gains,
    damping, masses and inertias, with or without contacts, and the shapes' contact materials and the static
    shapes' poses and sizes (tests/test_articulation_contact_gradients.py). Through contact, finite differences
    agree only where the rollout is well conditioned: a stiff contact (dt near sqrt(m_eff / ke)) or a contact
    starting with damping (its force jumps, docs/gradients.md) makes them depend on the step.

    The model's joint arrays are read through a struct built here: assign new values into them (`.assign`,
    `.numpy()[...] = `), or make a new solver after replacing one.

    Args:
        model: the Model to simulate (with at least one joint for anything to happen).
        contacts: whether the links' shapes collide at all (False: none, as MuJoCo's `<flag contact="disable"/>`).
        body_contacts: whether links collide with the shapes of other bodies (always with static shapes).
        restitution_velocity: as for SolverRigid [m/s].
        contact_smoothing: as for SolverRigid [m] (None: 1 mm when the model has requires_grad, else 0).
    """

    def __init__(self, model, *, contacts: bool = True, body_contacts: bool = True,
                 restitution_velocity: float = 0.2, contact_smoothing: float | None = None):
        self.model = model
        if model.joint_count and np.any(model.joint_friction.numpy() != 0.0):
            warnings.warn("SolverFeatherstone does not simulate joint_friction (nor does Newton's); the model's "
                          "non-zero values are ignored", stacklevel=2)
        self.contacts = LinkContacts(model, enabled=contacts, body_contacts=body_contacts,
                                     restitution_velocity=restitution_velocity, contact_smoothing=contact_smoothing)
        starts = model.articulation_start.numpy() if model.articulation_count else np.zeros(1, np.int32)
        qd_start = model.joint_qd_start.numpy() if model.joint_count else np.zeros(1, np.int32)
        dof_start = qd_start[starts].astype(np.int32)
        #: most dofs of an articulation: the tile size of the mass matrix (at least 1)
        self.max_articulation_dofs = max(int(np.diff(dof_start).max(initial=0)), 1)
        self.dof_start = wp.array(dof_start, dtype=wp.int32, device=model.device)
        self._no_body_f = wp.zeros(0, dtype=wp.spatial_vector, device=model.device)
        self._joints = joint_data(model) if model.joint_count else None

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance the joints of `state_in` by `dt` [s] into `state_out` (joint_q, joint_qd, body_q, body_qd)."""
        if dt <= 0.0:
            raise ValueError(f"dt must be positive, got {dt}")
        if model.articulation_count == 0:
            return
        if state_out is state_in or state_out.joint_q is state_in.joint_q:
            raise ValueError("SolverFeatherstone.step needs distinct state_in and state_out")
        qdd = self.eval_joint_accelerations(model, state_in, control)
        wp.launch(k.integrate_joints, dim=model.joint_count,
                  inputs=[self._joints, model.body_com, state_in.joint_q, state_in.joint_qd, qdd, float(dt)],
                  outputs=[state_out.joint_q, state_out.joint_qd], device=model.device)
        launch_fk(model, self._joints, state_out.joint_q, state_out.joint_qd, state_out)

    def eval_joint_accelerations(self, model, state, control) -> wp.array:
        """qdd = H^-1 (tau - C) [m/s^2, rad/s^2], shape [joint_dof_count], at `state` under `control`."""
        device, rg = model.device, model.requires_grad
        joints = self._joints
        bodies = self._bodies(model)
        body_q = wp.zeros(model.body_count, dtype=wp.transform, device=device, requires_grad=rg)
        body_f = self._no_body_f
        if control is not None and getattr(control, "body_f", None) is not None:
            body_f = control.body_f
        n = model.joint_count
        contact_f = self._no_body_f
        if self.contacts.active:
            body_qd = wp.zeros(model.body_count, dtype=wp.spatial_vector, device=device, requires_grad=rg)
            self.contacts.fill_unjointed(model, state, body_q, body_qd)
        wp.launch(eval_poses, dim=n, inputs=[joints, state.joint_q], outputs=[body_q], device=device)
        if self.contacts.active:
            wp.launch(eval_velocities, dim=n, inputs=[joints, state.joint_q, state.joint_qd, body_q, model.body_com],
                      outputs=[body_qd], device=device)
            contact_f = self.contacts.wrenches(model, state, body_q, body_qd)
        wp.launch(k.eval_joint_motion, dim=n,
                  inputs=[joints, state.joint_q, state.joint_qd, body_q, model.body_com, model.body_mass,
                          model.body_inertia], outputs=[bodies], device=device)
        wp.launch(k.eval_bias_wrenches, dim=n,
                  inputs=[joints, body_q, model.body_com, model.body_mass, body_f, contact_f, model.gravity],
                  outputs=[bodies],
                  device=device)
        tau = wp.zeros(model.joint_dof_count, dtype=float, device=device, requires_grad=rg)
        wp.launch(k.eval_joint_forces, dim=n,
                  inputs=[joints, state.joint_q, state.joint_qd, self._drive(model, control), bodies],
                  outputs=[tau], device=device)
        size = self.max_articulation_dofs
        H = wp.zeros((model.articulation_count, size, size), dtype=float, device=device, requires_grad=rg)
        wp.launch(k.eval_mass_matrix, dim=n, inputs=[joints, model.joint_articulation, model.joint_armature, bodies],
                  outputs=[H], device=device)
        qdd = wp.zeros(model.joint_dof_count, dtype=float, device=device, requires_grad=rg)
        solve_mass_matrix(H, self.dof_start, tau, qdd, device)
        return qdd

    @staticmethod
    def _bodies(model) -> k.ArticulatedBodies:
        """Fresh per-step intermediates (a Tape keeps the ones its launches read)."""
        device, rg = model.device, model.requires_grad
        b = k.ArticulatedBodies()
        sizes = {"joint": model.joint_count, "body": model.body_count, "dof": model.joint_dof_count}
        for name, dtype, size in (("v_j", wp.spatial_vector, "joint"), ("c", wp.spatial_vector, "joint"),
                                  ("A", wp.mat33, "body"), ("h", wp.vec3, "body"), ("cA", wp.mat33, "body"),
                                  ("ch", wp.vec3, "body"), ("cm", float, "body"), ("cf", wp.spatial_vector, "body"),
                                  ("S", wp.spatial_vector, "dof")):
            setattr(b, name, wp.zeros(sizes[size], dtype=dtype, device=device, requires_grad=rg))
        return b

    @staticmethod
    def _drive(model, control) -> k.JointDrive:
        """The joint-force parameters: the model's, with Control's joint_f and targets where given."""
        d = k.JointDrive()
        for name in ("limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd",
                     "effort_limit", "damping"):
            setattr(d, name, getattr(model, "joint_" + name))
        d.target_pos = getattr(control, "joint_target_pos", None)
        d.target_vel = getattr(control, "joint_target_vel", None)
        d.joint_f = getattr(control, "joint_f", None)
        if d.target_pos is None:
            d.target_pos = model.joint_target_pos
        if d.target_vel is None:
            d.target_vel = model.joint_target_vel
        if d.joint_f is None:
            d.joint_f = wp.zeros(model.joint_dof_count, dtype=float, device=model.device)
        return d
