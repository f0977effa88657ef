"""`SolverFeatherstone`: articulated rigid bodies in reduced (joint) coordinates."""

from __future__ import annotations

import warnings

import numpy as np

import kernels as wp
from autodiff.tape import recording_tape

from ...articulation import eval_joint_offsets, eval_velocities, joint_data, launch_fk
from ..base import ModelChange, Solver
from . import kernels as k
from .contacts import LinkContacts
from .mass_matrix import solve_mass_matrix


class SolverFeatherstone(Solver):
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
    (time-constant or penalty normal force, regularised Coulomb friction, per-shape materials; see SolverRigid
    and docs/rigid_contact.md) at the poses and velocities of the joint state, and enter with Control.body_f
    (torque about the centre of mass [N m], force [N], world) through the bias wrenches, i.e. as J^T f. The
    time-constant form takes each link's own mass and inertia as its effective mass (LinkContacts.wrenches).
    Bodies that are the child of no joint are not moved. Explicit in the joint forces and the penalty contacts:
    stable for dt well below sqrt(m_eff / ke) of the stiffest limit, drive or penalty contact.

    Differentiable through a Tape when every step writes a fresh State (state_out never aliases state_in):
    with respect to the initial joint_q and joint_qd, Control.joint_f and the drive targets, the model's gains,
    damping, masses and inertias, with or without contacts, and the shapes' contact materials and the static
    shapes' poses and sizes (tests/test_articulation_contact_gradients.py). Through contact, finite differences
    agree only where the rollout is well conditioned: a stiff contact (dt near sqrt(m_eff / ke)) or a contact
    starting with damping (its force jumps, docs/gradients.md) makes them depend on the step.

    The model's joint arrays are read through a struct built here: assign new values into them (`.assign`; on
    the CPU also `.numpy()[...] = `, which is a copy on a GPU), or make a new solver after replacing one.

    Args:
        model: the Model to simulate (with at least one joint for anything to happen).
        contacts: whether the links' shapes collide at all (False: none, as MuJoCo's `<flag contact="disable"/>`).
        body_contacts: whether links collide with the shapes of other bodies (always with static shapes).
        restitution_velocity: as for SolverRigid [m/s].
        contact_smoothing: as for SolverRigid [m] (None: 1 mm when the model has requires_grad, else 0).
    """

    name = "featherstone"
    title = "SolverFeatherstone: bodies of a scene with joints or a robot"
    role = "bodies"
    articulated = True
    simulates = frozenset({"rigid_bodies", "articulations", "joint_drives", "joint_limits", "shape_contact",
                           "body_contact"})
    scene_keys = ("bodies.*", "joints.*", "robot.*", "colliders.*")
    ignored_keys = {
        "bodies.*.vel": "SolverFeatherstone moves bodies by their joint coordinates: a jointed body's initial "
                        "velocity is its joint's qd (learn joints.N.qd)",
        "bodies.*.angular_vel": "SolverFeatherstone moves bodies by their joint coordinates: a jointed body's "
                                "initial velocity is its joint's qd (learn joints.N.qd)",
    }

    @classmethod
    def from_scene(cls, model, sim_spec):
        """The solver of a scene with joints or a robot (no settings of its own in the scene)."""
        return cls(model)

    def notify_model_changed(self, flags: ModelChange):
        """Rebuild the joint struct the kernels read after the model's joint arrays were replaced."""
        if flags & ModelChange.JOINTS and self.model.joint_count:
            self._joints = joint_data(self.model)

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
        self._reused = None  # the intermediates of untaped steps (see _scratch)
        self._pool: dict = {}  # id(model) -> intermediates of taped steps that their tapes let go of
        self._no_joint_f = None

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance the joints of `state_in` by `dt` [s] into `state_out` (joint_q, joint_qd, body_q, body_qd)."""
        if dt <= 0.0:
            raise ValueError(f"dt must be positive, got {dt}")
        if model.articulation_count == 0:
            return
        if state_out is state_in or state_out.joint_q is state_in.joint_q:
            raise ValueError("SolverFeatherstone.step needs distinct state_in and state_out")
        s = self._scratch(model)
        qdd = self._joint_accelerations(model, state_in, control, s, float(dt))
        wp.launch(k.integrate_joints, dim=model.joint_count,
                  inputs=[self._joints, model.body_com, state_in.joint_q, state_in.joint_qd, qdd, float(dt)],
                  outputs=[state_out.joint_q, state_out.joint_qd, s.fk_X_local], device=model.device)
        launch_fk(model, self._joints, state_out.joint_q, state_out.joint_qd, state_out, (s.fk_X_local, s.fk_v_j),
                  offsets_done=True)

    def eval_joint_accelerations(self, model, state, control) -> wp.array:
        """qdd = H^-1 (tau - C) [m/s^2, rad/s^2], shape [joint_dof_count], at `state` under `control` (a new
        array), with the instantaneous contact forces (not made implicit over a step)."""
        s = self._scratch(model, lend=False)
        qdd = self._joint_accelerations(model, state, control, s, 0.0)
        return qdd if s is not self._reused else wp.clone(qdd)

    def _joint_accelerations(self, model, state, control, s: "_Scratch", dt: float) -> wp.array:
        """qdd, in the step's intermediates `s` (reused from step to step without requires_grad), with the
        contact forces of a step of dt [s]."""
        device = model.device
        joints = self._joints
        bodies = s.bodies
        body_f = self._no_body_f
        if control is not None and getattr(control, "body_f", None) is not None:
            body_f = control.body_f
        n = model.joint_count
        contact_f = self._no_body_f
        if self.contacts.active:
            self.contacts.fill_unjointed(model, state, s.body_q, s.body_qd)
        wp.launch(eval_joint_offsets, dim=n, inputs=[joints, state.joint_q], outputs=[s.X_local], device=device)
        wp.launch(k.eval_joint_motion, dim=n,
                  inputs=[joints, state.joint_q, state.joint_qd, s.X_local, model.body_com, model.body_mass,
                          model.body_inertia], outputs=[s.body_q, bodies], device=device)
        if self.contacts.active:
            wp.launch(eval_velocities, dim=n, inputs=[joints, bodies.v_j, s.body_q, model.body_com],
                      outputs=[s.body_qd], device=device)
            contact_f = self.contacts.wrenches(model, state, s.body_q, s.body_qd, dt)
        wp.launch(k.eval_bias_wrenches, dim=n,
                  inputs=[joints, s.body_q, model.body_com, model.body_mass, body_f, contact_f, model.gravity],
                  outputs=[bodies],
                  device=device)
        wp.launch(k.eval_joint_forces, dim=n,
                  inputs=[joints, state.joint_q, state.joint_qd, self._drive(model, control, s.drive), bodies],
                  outputs=[s.tau], device=device)
        wp.launch(k.eval_mass_matrix, dim=n, inputs=[joints, model.joint_articulation, model.joint_armature, bodies],
                  outputs=[s.H], device=device)
        solve_mass_matrix(s.H, self.dof_start, s.tau, s.qdd, device)
        return s.qdd

    def _scratch(self, model, lend: bool = True) -> "_Scratch":
        """The intermediates of a step. Untaped: one set, reused (nothing reads a step's intermediates later).
        On a Tape, which reads them again in its backward: a set of its own for each step, lent to the tape
        (Tape.hold) and reused by later tapes once that one is reset or freed (with `lend`; inside a capture,
        whose graph keeps its arrays, always a new set). A reused set has the arrays that steps add into zeroed,
        and its gradients unless the tape zeroed them."""
        tape = recording_tape() if model.requires_grad else None
        if tape is None:
            s = self._reused
            if s is None or s.model is not model:
                s = self._reused = _Scratch(model, self.max_articulation_dofs)
            else:
                s.zero_accumulated()
            return s
        if not lend or wp.is_capturing(model.device):
            return _Scratch(model, self.max_articulation_dofs)
        pool = self._pool.setdefault(id(model), [])
        if pool and pool[-1].model is model:
            s = pool.pop()
            s.zero_accumulated()
            if not s.grads_zeroed:
                s.zero_grads()
        else:
            s = _Scratch(model, self.max_articulation_dofs)
        tape.hold(lambda zeroed: _give_back(pool, s, zeroed))
        return s

    def _drive(self, model, control, d: k.JointDrive) -> k.JointDrive:
        """The joint-force parameters in `d` (a step's own struct: a Tape reads the struct it recorded when it
        runs the backward): the model's, with Control's joint_f and targets where given. Fields are assigned only
        when an array changed (an unchanged struct packs faster)."""
        if self._no_joint_f is None:
            self._no_joint_f = wp.zeros(model.joint_dof_count, dtype=float, device=model.device)
        for name in ("limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd",
                     "effort_limit", "damping"):
            _assign(d, name, getattr(model, "joint_" + name))
        target_pos = getattr(control, "joint_target_pos", None)
        target_vel = getattr(control, "joint_target_vel", None)
        joint_f = getattr(control, "joint_f", None)
        _assign(d, "target_pos", model.joint_target_pos if target_pos is None else target_pos)
        _assign(d, "target_vel", model.joint_target_vel if target_vel is None else target_vel)
        _assign(d, "joint_f", self._no_joint_f if joint_f is None else joint_f)
        return d


def _give_back(pool: list, s: "_Scratch", grads_zeroed: bool):
    s.grads_zeroed = grads_zeroed
    pool.append(s)


def _assign(struct, name: str, value):
    if getattr(struct, name) is not value:
        setattr(struct, name, value)


class _Scratch:
    """The intermediates of one step: the bodies' poses and velocities (body_q, body_qd [body_count]), the
    ArticulatedBodies, tau and qdd [joint_dof_count], the mass matrices H [articulation_count, N, N], and the
    joints' offsets and twists (X_local, fk_X_local, fk_v_j [joint_count])."""

    def __init__(self, model, size: int):
        device, rg = model.device, model.requires_grad
        self.model = model
        b = k.ArticulatedBodies()
        sizes = {"joint": model.joint_count, "body": model.body_count, "dof": model.joint_dof_count}
        for name, dtype, count in (("v_j", wp.spatial_vector, "joint"), ("c", wp.spatial_vector, "joint"),
                                   ("A", wp.mat33, "body"), ("h", wp.vec3, "body"), ("cA", wp.mat33, "body"),
                                   ("ch", wp.vec3, "body"), ("cm", float, "body"), ("cf", wp.spatial_vector, "body"),
                                   ("S", wp.spatial_vector, "dof")):
            setattr(b, name, wp.zeros(sizes[count], dtype=dtype, device=device, requires_grad=rg))
        self.bodies = b
        self.body_q = wp.zeros(model.body_count, dtype=wp.transform, device=device, requires_grad=rg)
        self.body_qd = wp.zeros(model.body_count, dtype=wp.spatial_vector, device=device, requires_grad=rg)
        self.tau = wp.zeros(model.joint_dof_count, dtype=float, device=device, requires_grad=rg)
        self.qdd = wp.zeros(model.joint_dof_count, dtype=float, device=device, requires_grad=rg)
        self.H = wp.zeros((model.articulation_count, size, size), dtype=float, device=device, requires_grad=rg)
        # per joint: the offsets of the step's coordinates, and those and the twists of the new state's
        self.X_local, self.fk_X_local = (wp.zeros(model.joint_count, dtype=wp.transform, device=device,
                                                  requires_grad=rg) for _ in range(2))
        self.fk_v_j = wp.zeros(model.joint_count, dtype=wp.spatial_vector, device=device, requires_grad=rg)
        self.drive = k.JointDrive()
        self.grads_zeroed = True  # whether every gradient is zero (a tape that held the set zeroed them)

    def arrays(self) -> list:
        b = self.bodies
        return [b.v_j, b.c, b.A, b.h, b.cA, b.ch, b.cm, b.cf, b.S, self.body_q, self.body_qd, self.tau, self.qdd,
                self.H, self.X_local, self.fk_X_local, self.fk_v_j]

    def zero_accumulated(self):
        """Zero the arrays that a step adds into (the others it overwrites whole)."""
        for a in (self.bodies.cA, self.bodies.ch, self.bodies.cm, self.bodies.cf, self.H):
            a.zero_()

    def zero_grads(self):
        """Zero every gradient (of a set that an earlier tape used and did not zero)."""
        for a in self.arrays():
            if a.grad is not None:
                a.grad.zero_()
