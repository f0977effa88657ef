"""`SolverSemiImplicit`: forces from the current state, then one semi-implicit Euler step."""

from __future__ import annotations

import kernels as wp

from ...bending import check_bending_model
from ...geometry import shape_data
from ...model import State
from ...worlds import world_shape_slots
from ...self_contact import self_contact_of
from ..base import PARTICLE_FEATURES, PARTICLE_IGNORED_KEYS, PARTICLE_SCENE_KEYS, Solver
from . import kernels as k
from .self_contact import eval_self_contact_forces


class SolverSemiImplicit(Solver):
    """Explicit forces (springs, membrane triangles, bending of `model.bending_model`, shape contact, particle
    contact, external) and a semi-implicit Euler update: v' = (v + dt (f / m + g)) (1 - damping dt),
    x' = x + dt v'.

    Differentiable through a Tape when every step writes a fresh State (`state_out` never aliases `state_in`).
    Explicit, hence stable for dt well below sqrt(m / k) of the stiffest spring, membrane or contact (ke), and
    for c dt / m below 1 for every viscous coefficient c (contact kd and kf, spring and membrane damping).
    Shapes attached to rigid bodies sit at state_in.body_q, and contact damping and friction act on the velocity
    relative to the body's surface (one-way coupling: the bodies feel nothing; step them with SolverRigid).

    Args:
        model: the Model to simulate.
        damping: velocity damping rate [1/s]; None uses `model.particle_damping`.
    """

    name = "semi_implicit"
    title = "SolverSemiImplicit: cloth and particles"
    role = "particles"
    simulates = PARTICLE_FEATURES
    scene_keys = PARTICLE_SCENE_KEYS
    ignored_keys = PARTICLE_IGNORED_KEYS

    @classmethod
    def from_scene(cls, model, sim_spec):
        """The solver of a scene's validated `sim` section: `sim.solver.damping` added to the model's."""
        return cls(model, damping=sim_spec.solver.damping + model.particle_damping)

    def __init__(self, model, *, damping: float | None = None):
        self.model = model
        self.damping = damping
        self._shape_buffers = {}  # shape_data's reused per-shape arrays (no Tape)

    def step(self, model, state_in, state_out, control, dt: float):
        """Advance `state_in` by `dt` [s] into `state_out`. Forces are accumulated into `state_in.particle_f`
        (zeroed first), so after the step it holds the forces [N] that moved the particles."""
        if model.particle_count == 0:
            return
        if state_in.particle_f is None:
            state_in.particle_f = wp.zeros(model.particle_count, dtype=wp.vec3, device=model.device,
                                           requires_grad=model.requires_grad)
        f = state_in.particle_f
        f.zero_()
        self_contact = self_contact_of(model)
        if self_contact is not None:
            grad = bool(model.requires_grad or state_in.particle_q.requires_grad)
            self_contact.begin_step(state_in.particle_q, fresh=grad)
        self.eval_forces(model, state_in, control, f)
        if self_contact is None:
            self.integrate(model, state_in, state_out, f, dt)
            return
        # integrate freely, then bound each vertex's displacement (sim/self_contact.py) into state_out
        free = self._free_state(model, grad)
        self.integrate(model, state_in, free, f, dt)
        self_contact.end_step(state_in.particle_q, free.particle_q, free.particle_qd, dt, state_out.particle_q,
                              state_out.particle_qd, fresh=grad)

    def _free_state(self, model, grad: bool):
        """Where a self-colliding step integrates before the displacement bound: positions and velocities [m, m/s]
        (vec3 [particle_count]). New arrays on a Tape (each step's adjoint reads its own); else two kept from step
        to step (a whole model.state() per step cost about 70 us, a sixth of the 64 x 64 cloth's step without
        self-collision)."""
        if grad:
            return _integration_state(model, True)
        key = (model.particle_count, str(model.device))
        if getattr(self, "_free_key", None) != key:
            self._free = _integration_state(model, False)
            self._free_key = key
        return self._free

    def eval_forces(self, model, state, control, f):
        """Add every force on the particles of `state` into `f` [N], shape [particle_count], vec3."""
        x, v, device = state.particle_q, state.particle_qd, model.device
        if model.spring_count:
            wp.launch(k.eval_spring_forces, dim=model.spring_count, inputs=[x, v, _springs(model), f], device=device)
        if model.tri_count:
            wp.launch(k.eval_triangle_forces, dim=model.tri_count, inputs=[x, v, _triangles(model), f], device=device)
        if model.edge_count:
            wp.launch(_bending_kernel(model), dim=model.edge_count, inputs=[x, v, _edges(model), f], device=device)
        if model.shape_count:
            wp.launch(k.eval_shape_contact_forces, dim=(model.particle_count, world_shape_slots(model)),
                      inputs=[x, v, model.particle_radius, model.particle_flags,
                              shape_data(model, state, self._shape_buffers),
                              model.soft_contact, model.soft_contact_mu, f], device=device)
        self_contact = self_contact_of(model)
        if self_contact is not None and self_contact.has_pairs:  # no listed pair: no force
            # over the vertices and edges that list pairs (a few per cent of a folding cloth's): the serial loops
            # over every one cost 180 us a step in the 64 x 64 drop's fold. On a Tape no pair is skipped: the
            # backward would read the offsets of a later step
            grad = bool(model.requires_grad or x.requires_grad)
            offset = self_contact.offsets_at(None if grad else x)
            vertices, edges = self_contact.active
            if vertices + edges:
                wp.launch(eval_self_contact_forces, dim=vertices + edges, device=device,
                          inputs=[x, v, self_contact.data, offset, model.soft_contact, model.soft_contact_mu,
                                  vertices, f])
        if model.particle_grid_enabled:
            from ... import particle_contact  # written alongside the hash grid; imported only when enabled
            particle_contact.eval_particle_contacts(model, state, f)
        if control is not None and getattr(control, "particle_f", None) is not None:
            wp.launch(k.add_external_forces, dim=model.particle_count, inputs=[control.particle_f, f], device=device)

    def integrate(self, model, state_in, state_out, f, dt: float):
        """Semi-implicit Euler from `state_in` with forces `f` into `state_out`."""
        damping = model.particle_damping if self.damping is None else self.damping
        params = k.IntegratorParams()
        params.gravity = model.gravity
        params.dt = float(dt)
        params.velocity_scale = max(0.0, 1.0 - float(damping) * float(dt))
        wp.launch(k.integrate_particles, dim=model.particle_count,
                  inputs=[state_in.particle_q, state_in.particle_qd, f, model.particle_mass, model.particle_flags,
                          params],
                  outputs=[state_out.particle_q, state_out.particle_qd], device=model.device)


def _integration_state(model, grad: bool) -> State:
    """A State with only the two arrays `integrate` writes (zeroed positions and velocities)."""
    state = State()
    state.particle_count = model.particle_count
    state.particle_q, state.particle_qd = (wp.zeros(model.particle_count, dtype=wp.vec3, device=model.device,
                                                    requires_grad=grad) for _ in range(2))
    return state


# Structs are rebuilt each step from the model's current arrays, so a model array replaced between steps is seen.


def _springs(model) -> k.SpringData:
    s = k.SpringData()
    s.indices = model.spring_indices
    s.rest_length = model.spring_rest_length
    s.stiffness = model.spring_stiffness
    s.damping = model.spring_damping
    return s


def _triangles(model) -> k.TriangleData:
    t = k.TriangleData()
    t.indices = model.tri_indices
    t.poses = model.tri_poses
    t.areas = model.tri_areas
    t.materials = model.tri_materials
    # a Tape that wants d/d(drag, lift) needs the aerodynamic force's adjoint even where both are zero
    t.every_aerodynamic_force = int(bool(getattr(model.tri_materials, "requires_grad", False)))
    return t


def _edges(model) -> k.BendingData:
    e = k.BendingData()
    e.indices = model.edge_indices
    e.rest_angle = model.edge_rest_angle
    e.rest_scale = model.edge_rest_scale
    e.weights = model.edge_bending_weights
    e.properties = model.edge_bending_properties
    return e


def _bending_kernel(model):
    """The force kernel of `model.bending_model`."""
    if check_bending_model(model.bending_model) == "quadratic":
        return k.eval_quadratic_bending_forces
    return k.eval_bending_forces


def _shapes(model, state=None) -> k.ShapeData:
    """Colliders; shapes attached to bodies are placed at `state`'s body poses (the model's initial ones
    without a state)."""
    return shape_data(model, state)
