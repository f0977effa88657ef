"""SolverXPBD: extended position-based dynamics with Jacobi iterations, differentiable end to end."""

from __future__ import annotations

import numpy as np

import kernels as wp

from ...geometry import shape_data
from . import kernels as k


class SolverXPBD:
    """Extended position-based dynamics (Macklin et al. 2016) with Jacobi iterations.

    A step predicts x* = x + dt v + dt^2 (g + f_ext / m) for movable particles, then runs `iterations` Jacobi
    iterations. In each one, every constraint computes its XPBD multiplier update from the iteration's positions
    and multipliers, scales it by 1 / (the largest number of constraints on any of its particles), and adds the
    matching position correction; x_{k+1} = x_k + relaxation * (delta + contact_delta). Because positions move by
    exactly what the multipliers account for, converged iterations reach the compliant equilibrium (the same
    static state as the force-based solver). Finally v = (x_end - x) / dt, damped by max(1 - damping dt, 0).

    Constraints:
        springs: distance constraints, compliance 1 / spring_stiffness (spring_damping is not used).
        triangles: the membrane as one distance constraint per triangle edge, stiffness 2 mu A / L0^2 with mu
            from tri_materials[:, 0], A the rest area and L0 the rest edge length (tri_materials lambda, damping,
            drag and lift are not used). Robust for any stretch and a faithful match of StVK's mu term for a
            stretch along an edge; shear resistance comes from the diagonal edges.
        bending edges: C = dihedral angle - edge_rest_angle (the sign convention of the builder), compliance
            1 / (edge_bending_properties[:, 0] * edge_rest_scale).
        shapes: every particle against every shape (shape_sdf), pushed out to distance particle_radius, with
            positional Coulomb friction of coefficient model.soft_contact.mu (static: the tangential motion since
            the step's start relative to the shape's surface is removed; sliding: by at most mu times the normal
            correction). Shapes attached to bodies sit at state_in.body_q and move with state_in.body_qd (one-way
            coupling: the bodies feel nothing). Contact
            corrections are summed, not averaged, so a contact that starts does not change the average of the
            other corrections: the step is continuous in its inputs.

    Momentum: each constraint's correction is mass-weighted and sums to zero momentum, so internal constraints
    conserve linear momentum.

    Differentiability: every iteration reads and writes its own arrays (positions, corrections, lambdas),
    so the Tape never sees an array overwritten after it was read, and inverse masses are computed in the
    kernels from model.particle_mass. Differentiable inputs: the initial state, particle_mass, spring_stiffness,
    spring_rest_length, tri_poses, tri_materials, edge_bending_properties, shape_transform, shape_scale and the
    external forces. Memory per step grows with `iterations` (about 3 particle arrays and the lambdas each).

    Args:
        model: the Model to simulate.
        iterations: Jacobi iterations per step.
        relaxation: scale of the averaged correction (1: plain averaging; above 1 over-relaxes).
        damping: velocity damping rate [1/s], added to model.particle_damping.
    """

    def __init__(self, model, *, iterations: int = 10, relaxation: float = 1.0, damping: float = 0.0):
        if iterations < 0:
            raise ValueError(f"iterations must be >= 0, got {iterations}")
        if relaxation <= 0.0:
            raise ValueError(f"relaxation must be positive, got {relaxation}")
        if damping < 0.0:
            raise ValueError(f"damping must be >= 0, got {damping}")
        self.model = model
        self.iterations = int(iterations)
        self.relaxation = float(relaxation)
        self.damping = float(damping)
        self._no_force = wp.zeros(model.particle_count, dtype=wp.vec3, device=model.device)
        self.degree = constraint_degrees(model)

    def settings(self, model, dt: float) -> k.XPBDSettings:
        """The kernels' settings for a step of `dt` [s]."""
        s = k.XPBDSettings()
        s.dt = float(dt)
        s.relaxation = self.relaxation
        s.damping = self.damping + float(model.particle_damping)
        s.gravity = model.gravity
        s.friction = float(model.soft_contact.mu)
        return s

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance `state_in` by `dt` [s] into `state_out` (which must be a different State).

        External forces [N]: state_in.particle_f plus control.particle_f (when control and it are not None).
        """
        if dt <= 0.0:
            raise ValueError(f"dt must be positive, got {dt}")
        if state_out is state_in or state_out.particle_q is state_in.particle_q:
            raise ValueError("SolverXPBD.step needs distinct state_in and state_out")
        n = model.particle_count
        if n == 0:
            return
        device = model.device
        grad = bool(model.requires_grad or state_in.particle_q.requires_grad)
        settings = self.settings(model, dt)
        f_control = self._no_force
        if control is not None and control.particle_f is not None:
            f_control = control.particle_f
        f_state = state_in.particle_f if state_in.particle_f is not None else self._no_force

        def positions():
            return wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=grad)

        x = state_out.particle_q if self.iterations == 0 else positions()
        wp.launch(k.predict_positions, dim=n, device=device,
                  inputs=[state_in.particle_q, state_in.particle_qd, f_state, f_control, model.particle_mass,
                          model.particle_flags, settings], outputs=[x])

        lambdas = self._zero_lambdas(model, grad)
        for it in range(self.iterations):
            delta = positions()
            contact_delta = positions()
            lambdas = self._project(model, state_in, x, lambdas, settings, delta, contact_delta, grad)
            if model.particle_grid_enabled:
                self._particle_contacts(model, state_in, x, contact_delta, grad)
            x_next = state_out.particle_q if it == self.iterations - 1 else positions()
            wp.launch(k.apply_corrections, dim=n, device=device, inputs=[x, delta, contact_delta, settings],
                      outputs=[x_next])
            x = x_next

        wp.launch(k.update_velocities, dim=n, device=device, inputs=[state_in.particle_q, x, settings],
                  outputs=[state_out.particle_qd])

    # ------------------------------------------------------------------------------------------------ helpers

    def _particle_contacts(self, model, state_in, x, contact_delta, grad: bool):
        """Particle-particle contact corrections (hash grid), averaged per particle into `contact_delta`."""
        from ...particle_contact import solve_particle_contacts
        n, device = model.particle_count, model.device
        pair_delta = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=grad)
        pair_count = wp.zeros(n, dtype=wp.int32, device=device)
        solve_particle_contacts(model, x, model.particle_inv_mass, pair_delta, pair_count,
                                particle_q_prev=state_in.particle_q)
        wp.launch(k.add_averaged_corrections, dim=n, device=device, inputs=[pair_delta, pair_count],
                  outputs=[contact_delta])

    def _zero_lambdas(self, model, grad: bool) -> tuple:
        """Lagrange multipliers at the start of a step: springs, triangle edges, bending edges."""
        return tuple(wp.zeros(size, dtype=float, device=model.device, requires_grad=grad)
                     for size in (model.spring_count, model.tri_count * 3, model.edge_count))

    def _project(self, model, state_in, x, lambdas, settings, delta, contact_delta, grad: bool) -> tuple:
        """Launch every constraint kernel of one iteration on positions `x`; returns the new lambdas."""
        device = model.device
        spring_lambda, tri_lambda, edge_lambda = lambdas
        new = self._zero_lambdas(model, grad)
        particles = [x, model.particle_mass, model.particle_flags]
        if model.spring_count:
            wp.launch(k.solve_springs, dim=model.spring_count, device=device,
                      inputs=particles + [model.spring_indices, model.spring_rest_length, model.spring_stiffness,
                                          spring_lambda, settings],
                      outputs=[delta, self.degree, new[0]])
        if model.tri_count:
            wp.launch(k.solve_triangle_edges, dim=(model.tri_count, 3), device=device,
                      inputs=particles + [model.tri_indices, model.tri_poses, model.tri_materials, tri_lambda,
                                          settings],
                      outputs=[delta, self.degree, new[1]])
        if model.edge_count:
            wp.launch(k.solve_bending, dim=model.edge_count, device=device,
                      inputs=particles + [model.edge_indices, model.edge_rest_angle, model.edge_rest_scale,
                                          model.edge_bending_properties,
                                          edge_lambda, settings],
                      outputs=[delta, self.degree, new[2]])
        if model.shape_count:
            wp.launch(k.solve_shape_contacts, dim=(model.particle_count, model.shape_count), device=device,
                      inputs=[x, state_in.particle_q, model.particle_mass, model.particle_flags,
                              model.particle_radius, shape_data(model, state_in), settings],
                      outputs=[contact_delta])
        return new


def constraint_degrees(model) -> wp.array:
    """Number of springs, triangle edges and bending edges acting on each particle, shape [particle_count]
    (float). Topology is static, so it is counted once."""
    degree = np.zeros(model.particle_count)
    if model.spring_count:
        np.add.at(degree, model.spring_indices.numpy().reshape(-1), 1.0)
    if model.tri_count:
        np.add.at(degree, model.tri_indices.numpy().reshape(-1), 2.0)  # each vertex is on two of the three edges
    if model.edge_count:
        edges = model.edge_indices.numpy()
        ke = model.edge_bending_properties.numpy()[:, 0]
        bending = edges[(edges[:, 0] >= 0) & (edges[:, 1] >= 0) & (ke > 0.0)]
        np.add.at(degree, bending.reshape(-1), 1.0)
    return wp.array(degree.astype(np.float32), dtype=float, device=model.device)
