"""SolverXPBD: extended position-based dynamics with Jacobi iterations, differentiable end to end."""

from __future__ import annotations

import numpy as np

import kernels as wp

from ...bending import check_bending_model
from ...geometry import shape_data
from ...worlds import world_shape_slots
from ...self_contact import self_contact_of
from ..base import PARTICLE_FEATURES, PARTICLE_IGNORED_KEYS, PARTICLE_SCENE_KEYS, Solver
from . import kernels as k
from .self_contact import (displacements, pair_start_distances, primitive_displacements,
                           solve_edge_edge_contacts, solve_vertex_triangle_contacts)


class SolverXPBD(Solver):
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
        bending edges, by model.bending_model (docs/bending.md), compliance 1 / (edge_bending_properties[:, 0]
            * edge_rest_scale): "quadratic", the vector constraint C = sum_i edge_bending_weights[:, i] x_i (the
            bend vector; linear, smooth through folds); "dihedral", C = dihedral angle - edge_rest_angle (the sign
            convention of the builder; wraps at +-pi). edge_bending_properties[:, 1] (damping) is not used.
        shapes: every particle against every shape (shape_sdf), pushed out to distance particle_radius, with
            positional Coulomb friction of coefficient model.soft_contact_mu (static: the tangential motion since
            the step's start relative to the shape's surface is removed; sliding: by at most mu times the normal
            correction). Shapes attached to bodies sit at state_in.body_q and move with state_in.body_qd (one-way
            coupling: the bodies feel nothing). Contact
            corrections are summed, not averaged, so a contact that starts does not change the average of the
            other corrections: the step is continuous in its inputs.

    Momentum: each constraint's correction is mass-weighted and sums to zero momentum, so internal constraints
    conserve linear momentum.

    Corrections without atomics when no Tape records: each constraint writes its particles' corrections into its
    own slots (CorrectionSlots) and a gather kernel sums each particle's slots (deterministic, and no
    compare-and-swap loops on the CPU). On a Tape they are added atomically into per-iteration `delta` arrays,
    which keeps the taped memory per iteration small.

    Differentiability: on a Tape (model.requires_grad or a state with gradients) every iteration reads and
    writes its own arrays (positions, correction slots, lambdas), so the Tape never sees an array overwritten
    after it was read; inverse masses and the triangle edges' rest lengths and stiffnesses are computed once
    per step from model.particle_mass, tri_poses and tri_materials. Without a Tape the solver reuses its
    buffers from step to step. Differentiable inputs: the initial state, particle_mass, spring_stiffness,
    spring_rest_length, tri_poses, tri_materials, edge_bending_properties, shape_transform, shape_scale,
    soft_contact_mu and the external forces (docs/gradients.md lists what is not). Memory per step grows with
    `iterations` (about 3 particle arrays and the lambdas each).

    Args:
        model: the Model to simulate.
        iterations: Jacobi iterations per step.
        relaxation: scale of the averaged correction (1: plain averaging; above 1 over-relaxes).
        damping: velocity damping rate [1/s], added to model.particle_damping.
    """

    name = "xpbd"
    title = "SolverXPBD: cloth and particles"
    role = "particles"
    simulates = PARTICLE_FEATURES
    scene_keys = PARTICLE_SCENE_KEYS
    ignored_keys = {
        **PARTICLE_IGNORED_KEYS,
        "*.tri_ka": "SolverXPBD's membrane is one distance constraint per triangle edge, stiffened by tri_ke only; "
                    "tri_ka (Lame lambda) is not read",
        "*.tri_kd": "SolverXPBD's membrane has no damping term; tri_kd is not read (use the solver's damping)",
        "*.edge_kd": "SolverXPBD's bending constraint has no damping term; edge_kd is not read",
        "*.spring_kd": "SolverXPBD's springs are compliant distance constraints without damping; spring_kd is not "
                       "read",
    }

    @classmethod
    def from_scene(cls, model, sim_spec):
        """The solver of a scene's validated `sim` section (`sim.solver`: iterations, relaxation, damping)."""
        s = sim_spec.solver
        return cls(model, iterations=s.iterations, relaxation=s.relaxation, damping=s.damping)

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
        self.slots = CorrectionSlots(model)
        self._shape_buffers = {}  # shape_data's reused per-shape arrays (no Tape)

    def settings(self, model, dt: float) -> k.XPBDSettings:
        """The kernels' settings for a step of `dt` [s]."""
        s = k.XPBDSettings()
        s.dt = float(dt)
        s.relaxation = self.relaxation
        s.damping = self.damping + float(model.particle_damping)
        s.gravity = model.gravity
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

        scratch = None if grad else self._scratch(model)

        def positions(slot: str, *, accumulated: bool = False):
            """A position-sized array: new (zeroed) ones on a Tape, one per use; else the solver's own buffer,
            cleared only when kernels add into it (`accumulated`) rather than write every element."""
            if scratch is None:
                return wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=grad)
            buf = scratch[slot]
            if accumulated:
                buf.zero_()
            return buf

        self_contact = self_contact_of(model)
        if self_contact is not None:
            self_contact.begin_step(state_in.particle_q, fresh=grad)
        # no listed pair (a cloth falling free of itself): no pair passes
        pairs = self_contact is not None and self_contact.has_pairs
        # with self-contact the solved positions go through the displacement bound into state_out
        x_end = state_out.particle_q if self_contact is None else positions("x_end")
        # with pairs, the prediction is kept (the iterations ping-pong between x1 and x0): the pair passes measure
        # how far each vertex moved from it
        x = x_end if self.iterations == 0 else positions("x_predicted" if pairs else "x0")
        x_predicted = x
        wp.launch(k.predict_positions, dim=n, device=device,
                  inputs=[state_in.particle_q, state_in.particle_qd, f_state, f_control, model.particle_mass,
                          model.particle_flags, settings], outputs=[x])

        lambdas = self._zero_lambdas(model, grad, scratch, 0)
        edges = self._triangle_edges(model, grad)
        inv_mass = wp.zeros(n, dtype=float, device=device, requires_grad=grad) if scratch is None \
            else scratch["inv_mass"]
        wp.launch(k.inverse_masses, dim=n, device=device, inputs=[model.particle_mass, model.particle_flags],
                  outputs=[inv_mass])
        shapes = shape_data(model, state_in, self._shape_buffers)
        touching = self_contact.touching_counts() if self_contact is not None else None
        start_distances = self._pair_start_distances(model, self_contact, x_predicted, scratch) \
            if pairs else None
        for it in range(self.iterations):
            delta = positions("delta", accumulated=scratch is None)  # the gather writes every element
            contact_delta = positions("contact_delta", accumulated=True)
            corrections = self.slots.corrections(scratch)
            # every constraint kernel writes all its multipliers: the scratch set needs no clearing
            new_lambdas = self._new_lambdas(model, grad) if scratch is None else scratch["lambdas"][(it + 1) % 2]
            self._project(model, state_in, x, inv_mass, lambdas, new_lambdas, edges, shapes, settings, delta,
                          corrections, contact_delta, use_slots=scratch is not None)
            if scratch is not None:
                wp.launch(k.gather_corrections, dim=n, device=device,
                          inputs=[self.slots.start, corrections], outputs=[delta])
            lambdas = new_lambdas
            if model.particle_grid_enabled:
                self._particle_contacts(model, state_in, x, inv_mass, contact_delta, grad)
            if pairs:
                touching = self._self_contacts(model, self_contact, x, state_in.particle_q, x_predicted, inv_mass,
                                               touching, start_distances, scratch, contact_delta)
            x_next = x_end if it == self.iterations - 1 else positions(f"x{(it + 1) % 2}")
            wp.launch(k.apply_corrections, dim=n, device=device, inputs=[x, delta, contact_delta, settings],
                      outputs=[x_next])
            x = x_next

        if self_contact is not None:
            self_contact.end_step(state_in.particle_q, x, None, dt, state_out.particle_q, None, fresh=grad)
            x = state_out.particle_q
        wp.launch(k.update_velocities, dim=n, device=device, inputs=[state_in.particle_q, x, settings],
                  outputs=[state_out.particle_qd])

    # ------------------------------------------------------------------------------------------------ helpers

    def _particle_contacts(self, model, state_in, x, inv_mass, contact_delta, grad: bool):
        """Particle-particle contact corrections (hash grid), averaged per particle into `contact_delta`.

        `inv_mass` is this step's inverse masses computed from `model.particle_mass` (not the model's stored
        `particle_inv_mass`), so a mass changed or learned after finalize splits the corrections, and d/d(mass)
        flows through collisions."""
        from ...particle_contact import solve_particle_contacts
        n, device = model.particle_count, model.device
        pair_delta = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=grad)
        pair_count = wp.zeros(n, dtype=wp.int32, device=device)
        solve_particle_contacts(model, x, inv_mass, pair_delta, pair_count,
                                particle_q_prev=state_in.particle_q)
        wp.launch(k.add_averaged_corrections, dim=n, device=device, inputs=[pair_delta, pair_count],
                  outputs=[contact_delta])

    def _pair_start_distances(self, model, self_contact, x_predicted, scratch):
        """(vertex-triangle, edge-edge) slacks of this step's pairs (distance less thickness, pair_start_distances)
        at its predicted positions x_predicted [m], slot by slot (for the contact passes to skip the pairs that
        cannot touch); None without self-contact. Not taped: on a Tape (scratch None) new arrays, which the
        replayed passes keep reading."""
        if self_contact is None:
            return None
        d = model.device
        vt_slots, ee_slots = self_contact.data.vt_start.shape[0], self_contact.data.ee_start.shape[0]
        if scratch is None or scratch.get("vt_distance") is None or scratch["vt_distance"].shape[0] != vt_slots \
                or scratch["ee_distance"].shape[0] != ee_slots:
            distances = (wp.zeros(vt_slots, dtype=float, device=d), wp.zeros(ee_slots, dtype=float, device=d))
            if scratch is not None:
                scratch["vt_distance"], scratch["ee_distance"] = distances
        else:
            distances = (scratch["vt_distance"], scratch["ee_distance"])
        wp.launch(pair_start_distances, dim=max(*self_contact.active, 1), device=d,
                  inputs=[x_predicted, self_contact.data, *distances], record_tape=False)
        return distances

    def _self_contacts(self, model, self_contact, x, x_start, x_predicted, inv_mass, count, start_distances,
                       scratch, contact_delta):
        """Cloth self-contact corrections of this step's pairs (sim/self_contact.py), added into
        `contact_delta`, each pair's share set by the touching-pair counts `count` of the previous iteration;
        the pairs that cannot touch (start_distances at x_predicted, and how far each vertex moved since)
        skipped; x_start: the step's start, from which friction measures the slip. Returns this iteration's
        counts."""
        n, d = model.particle_count, model.device
        touching = wp.zeros(n, dtype=wp.int32, device=d)
        sizes = (n, max(self_contact.tri_count, 1), max(self_contact.edge_count, 1))
        if scratch is None or scratch.get("moved_edge") is None or scratch["moved_edge"].shape[0] != sizes[2] \
                or scratch["moved_triangle"].shape[0] != sizes[1]:
            moved = tuple(wp.empty(size, dtype=float, device=d) for size in sizes)
            if scratch is not None:
                scratch["moved"], scratch["moved_triangle"], scratch["moved_edge"] = moved
        else:
            moved = (scratch["moved"], scratch["moved_triangle"], scratch["moved_edge"])
        wp.launch(displacements, dim=n, device=d, inputs=[x, x_predicted, moved[0]], record_tape=False)
        wp.launch(primitive_displacements, dim=max(sizes[1:]), device=d,
                  inputs=[moved[0], self_contact.data, *moved[1:]], record_tape=False)
        inputs = [x, x_start, inv_mass, self_contact.data, model.soft_contact_mu, count, *start_distances, *moved]
        vertices, edges = self_contact.active  # those listing pairs
        if vertices:
            wp.launch(solve_vertex_triangle_contacts, dim=vertices, device=d, inputs=inputs,
                      outputs=[contact_delta, touching])
        if edges:
            wp.launch(solve_edge_edge_contacts, dim=edges, device=d, inputs=inputs,
                      outputs=[contact_delta, touching])
        return touching

    def _scratch(self, model) -> dict:
        """Buffers reused from step to step when no Tape needs every intermediate array: two position arrays
        (ping-pong), the corrections, and two sets of Lagrange multipliers."""
        key = (model.particle_count, model.spring_count, model.tri_count, model.edge_count, model.bending_model)
        if getattr(self, "_scratch_key", None) != key:
            n, d = model.particle_count, model.device
            self._scratch_buffers = {name: wp.zeros(n, dtype=wp.vec3, device=d)
                                     for name in ("x0", "x1", "x_predicted", "x_end", "delta", "contact_delta")}
            self._scratch_buffers["lambdas"] = [self._new_lambdas(model, False) for _ in range(2)]
            self._scratch_buffers["inv_mass"] = wp.zeros(n, dtype=float, device=d)
            self._scratch_buffers["corrections"] = wp.zeros(max(self.slots.count, 1), dtype=wp.vec3, device=d)
            self._scratch_key = key
        return self._scratch_buffers

    @staticmethod
    def _new_lambdas(model, grad: bool) -> tuple:
        """Zeroed multipliers of springs, triangle edges and bending edges (vec3 for the quadratic model's
        vector constraint)."""
        edge_dtype = wp.vec3 if check_bending_model(model.bending_model) == "quadratic" else float
        return tuple(wp.zeros(size, dtype=dtype, device=model.device, requires_grad=grad)
                     for size, dtype in ((model.spring_count, float), (model.tri_count * 3, float),
                                         (model.edge_count, edge_dtype)))

    def _zero_lambdas(self, model, grad: bool, scratch=None, slot: int = 0) -> tuple:
        """Zeroed Lagrange multipliers (springs, triangle edges, bending edges): new arrays, or set `slot` of
        the scratch buffers."""
        if scratch is None:
            return self._new_lambdas(model, grad)
        out = scratch["lambdas"][slot]
        for a in out:
            a.zero_()
        return out

    @staticmethod
    def _triangle_edges(model, grad: bool) -> tuple:
        """Rest lengths and stiffnesses of the triangle edges, computed once per step from tri_poses and
        tri_materials (on the Tape, so their gradients reach those)."""
        size = model.tri_count * 3
        rest = wp.zeros(size, dtype=float, device=model.device, requires_grad=grad)
        stiffness = wp.zeros(size, dtype=float, device=model.device, requires_grad=grad)
        if model.tri_count:
            wp.launch(k.triangle_edge_constants, dim=(model.tri_count, 3), device=model.device,
                      inputs=[model.tri_poses, model.tri_materials], outputs=[rest, stiffness])
        return rest, stiffness

    def _project(self, model, state_in, x, inv_mass, lambdas, new, edges, shapes, settings, delta, corrections,
                 contact_delta, use_slots: bool):
        """Launch every constraint kernel of one iteration on positions `x`, multipliers `lambdas` in, `new` out."""
        device = model.device
        spring_lambda, tri_lambda, edge_lambda = lambdas
        particles = [x, inv_mass]
        slots = [self.slots.slot_of, int(use_slots)]
        if model.spring_count:
            wp.launch(k.solve_springs, dim=model.spring_count, device=device,
                      inputs=particles + [model.spring_indices, model.spring_rest_length, model.spring_stiffness,
                                          spring_lambda, settings, self.degree, self.slots.spring_base] + slots,
                      outputs=[delta, corrections, new[0]])
        if model.tri_count:
            wp.launch(k.solve_triangle_edges, dim=(model.tri_count, 3), device=device,
                      inputs=particles + [model.tri_indices, edges[0], edges[1], tri_lambda, settings, self.degree,
                                          self.slots.tri_base] + slots,
                      outputs=[delta, corrections, new[1]])
        if model.edge_count:
            if model.bending_model == "quadratic":
                kernel, geometry = k.solve_bending_quadratic, [model.edge_bending_weights, model.edge_rest_scale]
            else:
                kernel, geometry = k.solve_bending, [model.edge_rest_angle, model.edge_rest_scale]
            wp.launch(kernel, dim=model.edge_count, device=device,
                      inputs=particles + [model.edge_indices] + geometry + [
                          model.edge_bending_properties, edge_lambda, settings, self.degree,
                          self.slots.edge_base] + slots,
                      outputs=[delta, corrections, new[2]])
        if model.shape_count:
            wp.launch(k.solve_shape_contacts, dim=(model.particle_count, world_shape_slots(model)), device=device,
                      inputs=[x, state_in.particle_q, model.particle_mass, model.particle_flags,
                              model.particle_radius, shapes, model.soft_contact_mu, settings],
                      outputs=[contact_delta])


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


class CorrectionSlots:
    """Where each constraint writes its particles' corrections, laid out by particle so that each particle's
    slots are contiguous (the gather, and its gradient, stay in one thread's memory).

    Constraint-side numbering: springs 2 per spring from `spring_base`, triangle edges 2 per edge (3 per
    triangle) from `tri_base`, bending edges 4 per edge (o0, o1, v0, v1) from `edge_base`; `slot_of` maps that
    numbering to the slot. Particle i sums slots start[i] to start[i + 1]; bending edges with a missing opposite
    vertex write to slots past start[particle_count], which no particle reads."""

    def __init__(self, model):
        d = model.device
        self.spring_base = 0
        self.tri_base = 2 * model.spring_count
        self.edge_base = self.tri_base + 6 * model.tri_count
        self.count = self.edge_base + 4 * model.edge_count
        owners = [np.zeros(0, np.int64)]
        if model.spring_count:
            owners.append(model.spring_indices.numpy().reshape(-1).astype(np.int64))
        if model.tri_count:
            tris = model.tri_indices.numpy()
            ends = np.stack([tris, np.roll(tris, -1, axis=1)], axis=2)  # edge e: vertex e, vertex (e + 1) % 3
            owners.append(ends.reshape(-1).astype(np.int64))
        if model.edge_count:
            edges = model.edge_indices.numpy().astype(np.int64)
            valid = np.repeat((edges[:, 0] >= 0) & (edges[:, 1] >= 0), 4)
            owners.append(np.where(valid, edges.reshape(-1), model.particle_count))  # unread: sorted last
        owner = np.concatenate(owners)
        order = np.argsort(owner, kind="stable")
        slot_of = np.empty(len(owner), np.int64)
        slot_of[order] = np.arange(len(owner))
        start = np.searchsorted(owner[order], np.arange(model.particle_count + 1))
        self.start = wp.array(start.astype(np.int32), dtype=wp.int32, device=d)
        self.slot_of = wp.array(slot_of.astype(np.int32), dtype=wp.int32, device=d)
        self._placeholder = wp.zeros(1, dtype=wp.vec3, device=d)

    def corrections(self, scratch):
        """The slot array of an iteration: the solver's reused buffer without a Tape (every slot is rewritten each
        iteration, so it needs no clearing); on a Tape a one-element placeholder (corrections go to delta)."""
        if scratch is None:
            return self._placeholder
        return scratch["corrections"]
