"""`SolverRigid`: free rigid bodies with penalty contacts, integrated with semi-implicit Newton-Euler steps."""

from __future__ import annotations

import numpy as np

import kernels as wp

from ...hashgrid import HashGrid, hash_grid_dims_for
from ...model import SHAPE_PLANE
from . import kernels as k


class SolverRigid:
    """Free rigid bodies (sphere, box, capsule shapes) with contacts against static shapes and each other.

    A step computes contact forces from the current state, adds gravity and Control.body_f, and integrates
    semi-implicitly (see kernels.integrate_bodies): the linear velocity first, then the position; the angular
    momentum, then the orientation (quaternion, renormalised) and the angular velocity at the new orientation,
    which treats the gyroscopic term implicitly and conserves angular momentum exactly when no torque acts.

    Contacts (penalty, between touching points; see collide.py for which points each shape pair has):
        normal: ke * depth while approaching, e^2 ke * depth while separating (restitution e: a contact gives
            back the fraction e^2 of the energy it stored, so bounces leave at e times the arrival speed
            independently of the masses), blended smoothly over normal speeds ~ `restitution_velocity`; plus
            damping kd * (approach speed); never pulling.
        friction: Coulomb, regularised smoothly: mu fn tanh(kf |v_t| / (mu fn)) against the slip v_t (viscous
            with slope kf at small slip, mu fn when sliding). There is no true static friction: a body on a slope
            creeps at about mu fn / kf.
        material: per shape (Model.shape_material_ke/kd/kf/mu/restitution; ModelBuilder.add_shape_* keywords),
            a contact uses the mean of its two shapes' values. Forces are continuous in the state, and with
            `contact_smoothing` (on by default when gradients are requested) so is their slope as a contact starts
            or ends: rollouts are differentiable with respect to the initial state, body_mass, body_inertia and
            the materials.
        broad phase: every body shape against every static shape, with a bounding-sphere test in the kernel (O(n)
            for a ground plane); body shapes against each other, on different bodies only, as all pairs up to
            `all_pairs_limit` body shapes and through a hash grid of bounding spheres above. Planes attached to
            bodies collide with static shapes only.

    Explicit in the contact forces: stable for dt well below sqrt(m_eff / (n ke)) (n contact points carrying a body
    of effective mass m_eff), for kf dt / m_eff below about 1/4 per contact, and for the hysteresis damping
    (load / restitution_velocity) dt / m_eff below 1.

    Differentiable through a Tape when every step writes a fresh State (`state_out` never aliases `state_in`).

    Args:
        model: the Model to simulate.
        linear_damping: rate [1/s] at which linear velocities decay.
        angular_damping: rate [1/s] at which angular momenta decay.
        restitution_velocity: normal speed [m/s] over which a contact turns from loading to unloading; bounces at
            speeds well above it follow the restitution coefficient.
        contact_smoothing: depth [m] over which a contact's stiffness ramps up from 0 to ke (the force's slope
            then does not jump when a contact starts or ends between two steps, which is what makes finite
            differences of a rollout agree with its gradient); bodies rest about half of it deeper. None: 1 mm
            when the model was finalized with requires_grad, else 0.
        body_contacts: whether bodies collide with each other (they always collide with static shapes).
        all_pairs_limit: up to this many body shapes, every pair is tested each step; above, a hash grid finds
            the candidate pairs.
    """

    def __init__(self, model, *, linear_damping: float = 0.0, angular_damping: float = 0.0,
                 restitution_velocity: float = 0.2, contact_smoothing: float | None = None,
                 body_contacts: bool = True, all_pairs_limit: int = 64):
        if linear_damping < 0 or angular_damping < 0:
            raise ValueError("damping rates must be >= 0")
        if not restitution_velocity > 0:
            raise ValueError(f"restitution_velocity must be positive, got {restitution_velocity}")
        self.model = model
        self.linear_damping = float(linear_damping)
        self.angular_damping = float(angular_damping)
        self.restitution_velocity = float(restitution_velocity)
        if contact_smoothing is None:
            contact_smoothing = 1.0e-3 if model.requires_grad else 0.0
        if contact_smoothing < 0:
            raise ValueError(f"contact_smoothing must be >= 0, got {contact_smoothing}")
        self.contact_smoothing = float(contact_smoothing)
        self.body_contacts = bool(body_contacts)
        self._setup_pairs(model, all_pairs_limit)

    def _setup_pairs(self, model, all_pairs_limit: int):
        """The fixed candidate pair lists (body shape x static shape; body shape pairs when few) or the hash grid."""
        device = model.device
        shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
        shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
        on_body = np.flatnonzero(shape_body >= 0).astype(np.int32)
        static = np.flatnonzero(shape_body < 0).astype(np.int32)
        self.static_pairs = _pair_array(np.stack(np.meshgrid(on_body, static, indexing="ij"), -1).reshape(-1, 2),
                                        device)
        # body-body candidates: planes on bodies are unbounded, so they meet static shapes only
        movable = on_body[shape_type[on_body] != SHAPE_PLANE]
        self._grid_ids = None
        self.body_pairs = _pair_array(np.zeros((0, 2), np.int32), device)
        if self.body_contacts and len(movable) > 1:
            if len(movable) <= all_pairs_limit:
                i, j = np.triu_indices(len(movable), 1)
                pairs = np.stack([movable[i], movable[j]], -1)
                self.body_pairs = _pair_array(pairs[shape_body[pairs[:, 0]] != shape_body[pairs[:, 1]]], device)
            else:
                self._grid_ids = wp.array(movable, dtype=wp.int32, device=device)
                self._grid = HashGrid(*(hash_grid_dims_for(len(movable)),) * 3, device=device)
                radius = model.shape_bounding_radius.numpy()[movable]
                self._grid_cell = float(2.0 * radius.max()) + model.rigid_contact_margin
                self._pair_capacity = 8 * len(movable)

    # ------------------------------------------------------------------------------------------------ step

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance the bodies of `state_in` by `dt` [s] into `state_out`. Wrenches are accumulated into
        `state_in.body_f` (zeroed first), so after the step it holds the contact and external wrenches
        (torque about the centre of mass [N m], force [N]) that moved the bodies; gravity is not included."""
        if dt <= 0.0:
            raise ValueError(f"dt must be positive, got {dt}")
        if model.body_count == 0:
            return
        if state_out is state_in or state_out.body_q is state_in.body_q:
            raise ValueError("SolverRigid.step needs distinct state_in and state_out")
        if state_in.body_f is None:
            state_in.body_f = wp.zeros(model.body_count, dtype=wp.spatial_vector, device=model.device,
                                       requires_grad=model.requires_grad)
        f = state_in.body_f
        f.zero_()
        self.eval_contact_forces(model, state_in, f)
        if control is not None and getattr(control, "body_f", None) is not None:
            wp.launch(k.add_external_wrenches, dim=model.body_count, inputs=[control.body_f, f],
                      device=model.device)
        self.integrate(model, state_in, state_out, f, dt)

    def eval_contact_forces(self, model, state, f):
        """Add the contact wrenches on the bodies of `state` into `f`, shape [body_count], spatial_vector."""
        shapes = self.shape_data(model)
        settings = k.ContactSettings()
        settings.margin = float(model.rigid_contact_margin)
        settings.restitution_velocity = self.restitution_velocity
        settings.smoothing = self.contact_smoothing
        for pairs, count in ((self.static_pairs, self.static_pairs.shape[0]), self.find_body_pairs(model, state)):
            if count:
                wp.launch(k.eval_contact_forces, dim=(count, k.FEATURES),
                          inputs=[pairs, shapes, state.body_q, state.body_qd, model.body_com, settings, f],
                          device=model.device)

    def find_body_pairs(self, model, state) -> tuple:
        """(pairs [n, 2] int32, n): the body-shape pairs whose bounding spheres may touch in `state`."""
        if self._grid_ids is None:
            return self.body_pairs, self.body_pairs.shape[0]
        device, n = model.device, self._grid_ids.shape[0]
        shapes = self.shape_data(model)
        settings = k.ContactSettings()
        settings.margin = float(model.rigid_contact_margin)
        centers = wp.empty(n, dtype=wp.vec3, device=device)
        wp.launch(k.shape_centers, dim=n, inputs=[shapes, state.body_q, self._grid_ids, centers], device=device,
                  record_tape=False)
        grid = self._grid.build(centers, self._grid_cell)
        while True:
            # new arrays each step: a tape keeps the ones its launches read
            pairs = wp.zeros((self._pair_capacity, 2), dtype=wp.int32, device=device)
            count = wp.zeros(1, dtype=wp.int32, device=device)
            wp.launch(k.find_grid_pairs, dim=n,
                      inputs=[shapes, state.body_q, self._grid_ids, centers, grid, settings, pairs, count],
                      device=device, record_tape=False)
            found = int(count.numpy()[0])
            if found <= self._pair_capacity:
                return pairs, found
            self._pair_capacity = 2 * found

    def integrate(self, model, state_in, state_out, f, dt: float):
        """Newton-Euler step of every body from `state_in` with wrenches `f` into `state_out`."""
        settings = k.IntegrationSettings()
        settings.gravity = model.gravity
        settings.dt = float(dt)
        settings.linear_scale = max(0.0, 1.0 - self.linear_damping * float(dt))
        settings.angular_scale = max(0.0, 1.0 - self.angular_damping * float(dt))
        wp.launch(k.integrate_bodies, dim=model.body_count,
                  inputs=[state_in.body_q, state_in.body_qd, f, model.body_mass, model.body_inertia, model.body_com,
                          settings],
                  outputs=[state_out.body_q, state_out.body_qd], device=model.device)

    @staticmethod
    def shape_data(model) -> k.RigidShapeData:
        """The model's shapes for the contact kernels (rebuilt each step, so replaced model arrays are seen)."""
        s = k.RigidShapeData()
        s.type = model.shape_type
        s.transform = model.shape_transform
        s.scale = model.shape_scale
        s.body = model.shape_body
        s.bounding_radius = model.shape_bounding_radius
        s.ke = model.shape_material_ke
        s.kd = model.shape_material_kd
        s.kf = model.shape_material_kf
        s.mu = model.shape_material_mu
        s.restitution = model.shape_material_restitution
        return s


def _pair_array(pairs: np.ndarray, device) -> wp.array:
    """Shape pairs as an int32 array [n, 2] (an empty one keeps its two columns)."""
    pairs = np.ascontiguousarray(pairs, dtype=np.int32).reshape(-1, 2)
    if len(pairs) == 0:
        return wp.zeros((0, 2), dtype=wp.int32, device=device)
    return wp.array(pairs, dtype=wp.int32, device=device)
