"""`SolverRigid`: free rigid bodies with contacts, integrated with semi-implicit Newton-Euler steps."""

from __future__ import annotations

import weakref

import numpy as np

import kernels as wp
from autodiff.tape import recording_tape

from ...hashgrid import HashGrid, hash_grid_dims_for
from ...model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE
from ...worlds import element_worlds
from ..base import Solver
from . import kernels as k
from .contact_law import MAX_PAIR_FEATURES


#: coupled contact passes: the most a step may run (one launch each, a Jacobi pass converging slowly beyond a few),
#: and the defaults (docs/rigid_contact.md)
MAX_CONTACT_ITERATIONS = 16
DEFAULT_CONTACT_ITERATIONS = 3
DEFAULT_CONTACT_RELAXATION = 0.5
#: steps that nothing differentiates record the contacts of this many partners of each body shape for the coupled
#: passes; the contacts of further partners keep the law's force (a box in a pile touches the ground and about 6)
RECORDED_PARTNERS = 12


class SolverRigid(Solver):
    """Free rigid bodies (sphere, box, capsule shapes) with contacts against static shapes and each other.

    A step computes contact forces from the current state, adds gravity and Control.body_f, and integrates
    semi-implicitly (see kernels.integrate_bodies): the linear velocity first, then the position; the angular
    momentum, then the orientation (quaternion, renormalised) and the angular velocity at the new orientation,
    which treats the gyroscopic term implicitly and conserves angular momentum exactly when no torque acts.

    Contacts (between touching points; see collide.py for which points each shape pair has, and
    docs/rigid_contact.md):
        normal, time-constant form (the default): a spring-damper of the pair's effective mass m_eff at the
            point (from both bodies' masses and inertias), stated per material as a time constant tau [s] and a
            damping ratio zeta (stiffness m_eff / (tau zeta)^2, damping 2 m_eff / tau, as MuJoCo's solref),
            implicit along the normal over the step, its time scale kept above 2 steps and stretched by 4 e
            steps for restitution e; resting depth about g (tau + dt)^2 whatever the mass. Contacts that share
            a body are coupled by `contact_iterations` Jacobi passes on their normal impulses (see below).
            Penalty form (a shape given ke/kd): ke * depth while approaching, e^2 ke * depth while separating,
            plus damping kd * (approach speed), explicit. Both forms: restitution e as the ratio of unloading to loading
            stiffness (a contact gives back the fraction e^2 of the energy it stored, so bounces leave at e times
            the arrival speed independently of the masses), blended smoothly over normal speeds
            ~ `restitution_velocity`; never pulling.
        friction: Coulomb, regularised smoothly: mu fn tanh(kf |v_t| / (mu fn)) against the slip v_t (viscous
            with slope kf at small slip, mu fn when sliding). There is no true static friction: a body on a slope
            creeps at about mu fn / kf.
        material: per shape (Model.shape_material_*; ModelBuilder.add_shape_* keywords), a contact uses the
            mean of its two shapes' values (of each form's coefficients: a pair of one penalty and one
            time-constant shape has half of each). Forces are continuous in the state, and with
            `contact_smoothing` (on by default when gradients are requested) so is their slope as a contact starts
            or ends: rollouts are differentiable with respect to the initial state, body_mass, body_inertia and
            the materials.
        contact partners: every body shape against every static shape, with a bounding-sphere test in the kernel
            (O(n) for a ground plane); body shapes against each other, on different bodies only, as all pairs up
            to `all_pairs_limit` body shapes and through a hash grid of bounding spheres above. Planes attached to
            bodies collide with static shapes only. Each pair's contact points share one narrow phase (collide.py);
            each body sums its wrenches in a fixed order, so results do not depend on thread timing.

    The time-constant form is stable at any step. Explicit otherwise: the penalty form is stable for dt well below
    sqrt(m_eff / (n ke)) (n contact points carrying a body of effective mass m_eff), friction for kf dt / m_eff
    below about 1/4 per contact, and the hysteresis damping for (load / restitution_velocity) dt / m_eff below 1.

    Differentiable through a Tape when every step writes a fresh State (`state_out` never aliases `state_in`).

    Args:
        model: the Model to simulate.
        linear_damping: rate [1/s] at which linear velocities decay.
        angular_damping: rate [1/s] at which angular momenta decay.
        restitution_velocity: normal speed [m/s] over which a contact turns from loading to unloading; bounces at
            speeds well above it follow the restitution coefficient.
        contact_smoothing: depth [m] over which a contact's stiffness ramps up from 0 to full (the force's slope
            then does not jump when a contact starts or ends between two steps, which is what makes finite
            differences of a rollout agree with its gradient); bodies rest about half of it deeper. None: 1 mm
            when the model was finalized with requires_grad, else 0.
        body_contacts: whether bodies collide with each other (they always collide with static shapes).
        all_pairs_limit: up to this many body shapes, every pair is tested each step; above, a hash grid finds
            the candidate pairs.
        excluded_shape_pairs: pairs of shape indices (a, b) that never collide (SolverFeatherstone excludes the
            shapes of the two bodies of each joint).
        contact_iterations: coupled passes of the time-constant contacts per step (0 to 16; 0: each contact
            alone).
            Each pass predicts every body's velocity at the end of the step from all its contacts and corrects
            each contact's normal impulse toward the law's target speed (contact_law.coupled_normal_impulse), so
            that contacts sharing a body hold together: a heavy body on light ones sinks less. Pass 0's contacts
            are recorded (RECORDED_PARTNERS partners a shape when nothing is differentiated); the passes do not
            run the narrow phase again.
        contact_relaxation: the fraction (0, 1] of a contact's speed error one pass corrects (Jacobi
            under-relaxation: the contacts of one body correct together).
    """

    name = "rigid"
    title = "SolverRigid: bodies"
    role = "bodies"
    simulates = frozenset({"rigid_bodies", "shape_contact", "body_contact"})
    scene_keys = ("bodies.*", "colliders.*")
    ignored_keys = {
        "bodies.*.mass": "SolverRigid reads the inverse mass and inertia computed when the scene is built; a "
                         "body's mass is learnable when SolverFeatherstone moves it (a scene with joints)",
    }

    @classmethod
    def from_scene(cls, model, sim_spec):
        """The solver of a scene's validated `sim` section (`sim.rigid`: damping, restitution_velocity,
        body_contacts)."""
        r = sim_spec.rigid
        return cls(model, linear_damping=r.linear_damping, angular_damping=r.angular_damping,
                   restitution_velocity=r.restitution_velocity, body_contacts=r.body_contacts)

    def __init__(self, model, *, linear_damping: float = 0.0, angular_damping: float = 0.0,
                 restitution_velocity: float = 0.2, contact_smoothing: float | None = None,
                 body_contacts: bool = True, all_pairs_limit: int = 64,
                 excluded_shape_pairs=(), contact_iterations: int = DEFAULT_CONTACT_ITERATIONS,
                 contact_relaxation: float = DEFAULT_CONTACT_RELAXATION):
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
        if contact_iterations not in range(MAX_CONTACT_ITERATIONS + 1):
            raise ValueError(f"contact_iterations must be an integer from 0 to {MAX_CONTACT_ITERATIONS}, got "
                             f"{contact_iterations}")
        if not 0.0 < contact_relaxation <= 1.0:
            raise ValueError(f"contact_relaxation must lie in (0, 1], got {contact_relaxation}")
        self.contact_iterations = int(contact_iterations)
        self.contact_relaxation = float(contact_relaxation)
        self.body_contacts = bool(body_contacts)
        self._setup_contacts(model, all_pairs_limit, excluded_shape_pairs)

    def _setup_contacts(self, model, all_pairs_limit: int, excluded_shape_pairs):
        """The rows of the contact kernels (one per shape on a body), grouped by body for the gather, and where
        each row looks for partners: every static shape; unless it is a plane, the other bodies' non-plane shapes,
        all of them up to `all_pairs_limit` such shapes, else through a hash grid of their bounding spheres."""
        device = model.device
        shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
        shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
        on_body = np.flatnonzero(shape_body >= 0).astype(np.int32)
        static = np.flatnonzero(shape_body < 0).astype(np.int32)
        # body-body candidates: planes on bodies are unbounded, so they meet static shapes only
        movable = on_body[shape_type[on_body] != SHAPE_PLANE]
        if not self.body_contacts or len(np.unique(shape_body[movable])) < 2:
            movable = movable[:0]
        shape_world = element_worlds(model, "shape", model.shape_count).numpy()
        refuse_mesh_contacts(on_body, static, movable, shape_type, shape_body, excluded_shape_pairs, shape_world)
        self._rows = _int_array(on_body, device)
        order = np.argsort(shape_body[on_body], kind="stable")
        start = np.zeros(model.body_count + 1, np.int64)
        np.cumsum(np.bincount(shape_body[on_body], minlength=model.body_count), out=start[1:])
        self._body_row_start = _int_array(start, device)
        self._body_rows = _int_array(order, device)
        self._static_ids = _int_array(static, device)
        self._excluded_start, self._excluded = _excluded_partners(on_body, excluded_shape_pairs, model.shape_count,
                                                                  device)
        self._movable_ids = _int_array(movable, device)
        self._grid = None
        self._idle_grid = HashGrid(1, 1, 1, device=device).build(wp.zeros(0, dtype=wp.vec3, device=device), 1.0)
        if len(movable) > all_pairs_limit:
            self._grid = HashGrid(*(hash_grid_dims_for(len(movable)),) * 3, device=device)
            radius = model.shape_bounding_radius.numpy()[movable]
            self._grid_cell = float(2.0 * radius.max()) + model.rigid_contact_margin
        self._bounds = tuple(wp.zeros(len(movable), dtype=wp.vec3, device=device) for _ in range(3))
        rows = len(on_body)
        # buffers of steps that nothing differentiates (steps that may be differentiated allocate their own)
        self._one_row_per_body = len(np.unique(shape_body[on_body])) == len(on_body)
        body_row = np.full(model.body_count, -1, np.int64)
        body_row[shape_body[on_body]] = np.arange(len(on_body))
        self._body_row = _int_array(body_row, device)  # used when one row per body
        self._no_external = wp.zeros(0, dtype=wp.spatial_vector, device=device)
        self._no_twist = wp.zeros(0, dtype=wp.spatial_vector, device=device)
        self._no_state = _NoState(device)
        self._partner_count = wp.zeros(rows, dtype=wp.int32, device=device)
        self._row_wrench = wp.zeros(rows, dtype=wp.spatial_vector, device=device)
        self._no_partners = wp.zeros((rows, 0), dtype=wp.int32, device=device)
        # the coupled passes act on time-constant contacts only: a model of penalty shapes skips them
        timeconst = model.shape_material_timeconst.numpy() if model.shape_count else np.zeros(0)
        self._coupled = bool((timeconst > 0.0).any())
        self._pass_arrays = {}  # scratch of the coupled passes of steps that nothing differentiates
        # the kernels' struct arguments, kept while their fields stay the same (see _struct): the solver's own,
        # and those holding a State's arrays, per State
        self._structs = {}
        self._state_structs = weakref.WeakKeyDictionary()
        self._taped_arrays = weakref.WeakKeyDictionary()  # State -> the scratch of its differentiated steps
        self._taped_markers = weakref.WeakKeyDictionary()  # State -> backward_marker of the tape that last used it
        self._no_record = k.ContactRecord()
        for name, dtype in (("x", wp.vec3), ("n", wp.vec3), ("vt", wp.vec3), ("vn", float), ("impulse", float),
                            ("mass", float), ("mu", float), ("kf", float), ("body_a", wp.int32),
                            ("body_b", wp.int32)):
            setattr(self._no_record, name, wp.zeros((0, 0), dtype=dtype, device=device))
        # contact slots per shape of differentiated steps: every possible partner when that is few (nothing then
        # is read on the host: such steps can be captured), else grown to the most partners seen
        self._slots_fixed = contact_slots_fixed(model)
        self._slots = max(most_seen(on_body, np.concatenate([static, movable]), shape_world), 1) \
            if self._slots_fixed else 4

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
        if self._one_row_per_body and self._rows.shape[0] and self._pass_count(dt) == 0 and \
                self._contacts_need_gradients(model, state_in):
            self._step_differentiated(model, state_in, state_out, control, f, dt)
            return
        external = getattr(control, "body_f", None) if control is not None else None
        if self._eval_contact_forces(model, state_in, f, dt, None, (external, state_out)):
            return  # the last coupled pass added the external wrenches and integrated
        if external is not None:
            wp.launch(k.add_external_wrenches, dim=model.body_count, inputs=[external, f], device=model.device)
        self.integrate(model, state_in, state_out, f, dt)

    def _step_differentiated(self, model, state_in, state_out, control, f, dt: float):
        """step() when the contact forces may be differentiated, every body has at most one shape and no coupled
        pass runs: the
        partners recorded (find_contacts), then contacts, external wrenches and integration in one taped kernel
        (step_bodies), so that the backward pass runs one adjoint per step."""
        self._begin_taped_step(state_in)
        partners, count = self._record_partners(model, state_in)
        external = getattr(control, "body_f", None) if control is not None else None
        wp.launch(k.step_bodies, dim=model.body_count,
                  inputs=[self.shape_data(model), state_in.body_q, state_in.body_qd, model.body_com, model.body_mass,
                          model.body_inertia, self._rows, self._body_row, self.contact_settings(model, dt), partners,
                          count, self._no_external if external is None else external, 0 if external is None else 1,
                          self.integration_settings(dt)],
                  outputs=[f, state_out.body_q, state_out.body_qd], device=model.device)

    def eval_contact_forces(self, model, state, f, *, dt: float = 0.0, iterations: int | None = None):
        """Set `f` (shape [body_count], spatial_vector) to the contact wrenches on the bodies of `state`, for a
        step of `dt` [s] (the time-constant form is implicit over it; 0: the instantaneous force), after
        `iterations` coupled passes (None: the solver's contact_iterations; none when dt is 0).

        Each body shape's contact partners are found by one thread that looks at its candidates; each pair's
        contact points share one narrow phase (collide.py); each body sums its wrenches in a fixed order (no float
        atomics), so results do not depend on thread timing. When no input of the contact forces carries a
        gradient, that thread also sums its partners' wrenches, and the step stays on the device (it can be
        captured and replays bit for bit). Otherwise the partners are recorded (not differentiated) in slots
        sized on the host to the largest count, and the taped kernel differentiates only those pairs, one thread per
        body shape: the backward pass does not revisit pairs that do not touch.

        Coupled passes (docs/rigid_contact.md): pass 0 (the law) records its contacts; each further pass is one
        launch over the bodies (kernels.coupled_pass) that moves every recorded contact's impulse on from the
        pass before, predicting the bodies' end velocities from that pass's wrenches
        (contact_law.coupled_normal_impulse); the last pass's wrenches go to `f`."""
        self._eval_contact_forces(model, state, f, dt, iterations, None)

    def _eval_contact_forces(self, model, state, f, dt: float, iterations, finish) -> bool:
        """eval_contact_forces; with `finish` = (external wrenches or None, state_out), the last coupled pass
        (when one runs) also adds the external wrenches to `f` and integrates into state_out: returns whether it
        did (else step() launches both)."""
        rows = self._rows.shape[0]
        f.zero_()
        if rows == 0:
            return False
        shapes = self.shape_data(model)
        taped = self._contacts_need_gradients(model, state)
        candidates = self.contact_candidates(model, state, shapes)
        passes = self._pass_count(dt, iterations)
        partners = None
        if taped:
            self._begin_taped_step(state)
            partners = self._record_partners(model, state, shapes, self.contact_settings(model, dt), candidates)
        arrays = self._step_arrays(state, taped)
        if passes == 0:
            self._contact_pass(model, state, shapes, self.contact_settings(model, dt), candidates, partners, f)
            return False
        record = self._contact_record(model, partners, arrays, state)
        law_f = self._pass_array(model, "law", arrays, taped)
        bodies = self._struct(state, "bodies", k.BodyArrays, q=state.body_q, qd=state.body_qd, com=model.body_com,
                              mass=model.body_mass, inertia=model.body_inertia)
        # the law's kernel predicts the bodies' end twists when it stores whole body wrenches (one row a body)
        previous_twist = self._pass_array(model, ("twist", "law" if taped else 1), arrays, taped)
        settings = self.contact_settings(model, dt, record=record,
                                         twist=previous_twist if self._one_row_per_body else None, state=state)
        self._contact_pass(model, state, shapes, settings, candidates, partners, law_f)
        if not self._one_row_per_body:
            wp.launch(k.predict_twists, dim=model.body_count, inputs=[bodies, law_f, float(dt)],
                      outputs=[previous_twist], device=model.device, record_tape=taped)
        count = self._partner_count if partners is None else partners[1]
        previous_impulse = record.impulse
        integration = self.integration_settings(dt)
        for p in range(passes):
            last = p == passes - 1
            end, external, state_out = self._pass_end(integration, finish if last else None)
            # untaped passes alternate between two arrays of each kind; a tape needs every pass's own
            key = p if taped else p % 2
            current_f = f if last else self._pass_array(model, ("f", key), arrays, taped)
            twist = self._no_twist if end.integrate else self._pass_array(model, ("twist", key), arrays, taped)
            impulse = self._scratch(arrays, ("impulse", key), record.impulse.shape, float, taped)
            wp.launch(k.coupled_pass, dim=model.body_count,
                      inputs=[bodies, self._body_row_start, self._body_rows, count, record, float(dt),
                              self.contact_relaxation, law_f, previous_twist, previous_impulse, end, external],
                      outputs=[impulse, current_f, twist, state_out.body_q, state_out.body_qd],
                      device=model.device, record_tape=taped)
            previous_twist, previous_impulse = twist, impulse
        return finish is not None

    def _pass_end(self, integration: k.IntegrationSettings, finish) -> tuple:
        """(PassEnd, external wrenches, state_out) of a coupled pass (`integration`: the step's
        IntegrationSettings): integrating into finish's state_out when
        `finish` = (external or None, state_out) is given, else predicting twists (empty arrays in their place)."""
        external, state_out = (None, None) if finish is None else finish
        end = self._struct(None, ("pass_end", finish is None), k.PassEnd, settings=integration,
                           integrate=0 if finish is None else 1, has_external=0 if external is None else 1)
        return end, self._no_external if external is None else external, \
            self._no_state if state_out is None else state_out

    def _contact_record(self, model, partners, arrays: dict, state) -> k.ContactRecord:
        """Where pass 0 records the time-constant contacts of every row, in the step's `arrays`
        (_step_arrays): when taped (`partners` recorded), a place for every candidate point of every recorded
        partner (the coupled passes differentiate through them), else for RECORDED_PARTNERS partners a row;
        only the effective mass is cleared: it marks the columns that hold a contact."""
        taped = partners is not None
        columns = (partners[0].shape[1] if taped else RECORDED_PARTNERS) * MAX_PAIR_FEATURES
        shape = (self._rows.shape[0], max(columns, 1))
        fields = {name: self._scratch(arrays, ("record", name), shape, dtype, taped)
                  for name, dtype in (("x", wp.vec3), ("n", wp.vec3), ("vt", wp.vec3), ("vn", float),
                                      ("impulse", float), ("mu", float), ("kf", float), ("mass", float))}
        fields["mass"].zero_()
        for name in ("body_a", "body_b"):
            fields[name] = self._scratch(arrays, ("record", name), shape, wp.int32, False)
        # untaped steps share the solver's arrays whatever the state
        return self._struct(state if taped else None, "record", k.ContactRecord, **fields)

    def _contact_pass(self, model, state, shapes, settings, candidates, partners, f):
        """One evaluation of every contact wrench into `f` (eval_contact_forces): summed while scanning for
        partners when `partners` is None (nothing differentiated), else over the recorded (partners, count)."""
        device = model.device
        rows = self._rows.shape[0]
        to_body = 1 if self._one_row_per_body else 0
        if partners is None:
            scan = [shapes, state.body_q, state.body_qd, model.body_com, self._rows, candidates, settings]
            count, row_wrench = self._partner_count, self._row_wrench
            wp.launch(k.find_contacts, dim=rows, inputs=scan + [self._no_partners, count, to_body, row_wrench, f],
                      device=device, record_tape=False)
            if not to_body:
                wp.launch(k.gather_body_wrenches, dim=model.body_count,
                          inputs=[self._body_row_start, self._body_rows, row_wrench, f], device=device,
                          record_tape=False)
            return
        partners, count = partners
        row_wrench = self._row_wrench if to_body else \
            wp.empty(rows, dtype=wp.spatial_vector, device=device, requires_grad=True)
        wp.launch(k.eval_partner_wrenches, dim=rows,
                  inputs=[shapes, state.body_q, state.body_qd, model.body_com, self._rows, settings, partners, count,
                          to_body, row_wrench, f], device=device)
        if not to_body:
            wp.launch(k.gather_body_wrenches, dim=model.body_count,
                      inputs=[self._body_row_start, self._body_rows, row_wrench, f], device=device)

    def _pass_count(self, dt: float, iterations: int | None = None) -> int:
        """How many coupled passes precede the final contact evaluation of a step of dt [s]."""
        if dt <= 0.0 or not self._coupled:
            return 0
        return self.contact_iterations if iterations is None else int(iterations)

    def _step_arrays(self, state, taped: bool) -> dict:
        """Where a step from `state` keeps its scratch arrays: the solver's own when nothing is differentiated;
        when taped, arrays of that state's steps (a tape's backward reads what each step's launches read, so
        every state has its own, allocated at its first taped step and reused when it is stepped again: a new
        rollout over the same States, e.g. the next round of an optimisation, allocates nothing; a step from a
        state writes that state's body_f too, so it keeps no more than the state already does)."""
        if not taped:
            return self._pass_arrays
        arrays = self._taped_arrays.get(state)
        if arrays is None:
            arrays = self._taped_arrays[state] = {}
        return arrays

    def _scratch(self, arrays: dict, key, shape, dtype, grad: bool) -> wp.array:
        """arrays[key], (re)allocated zero when missing or of another shape (a reused array's gradient is zero:
        _begin_taped_step)."""
        spec = (tuple(shape), dtype)
        kept = arrays.get(key)
        if kept is None or kept[0] != spec:
            kept = arrays[key] = (spec, wp.zeros(shape, dtype=dtype, device=self.model.device, requires_grad=grad))
        return kept[1]

    def _begin_taped_step(self, state):
        """Before a step from `state` that may be differentiated: zero the gradients of that state's scratch arrays
        when a backward may have left them non-zero (a tape that nobody zeroed must not add a new backward into an
        earlier one's), i.e. when the tape that last recorded them ran one since its zero() (its backward_marker);
        then keep the marker of the tape recording now. Zeroing once per step only when needed, not each array at
        each reuse, spares the ~20 zero_ a step that a round's tape.zero() already did."""
        arrays = self._step_arrays(state, True)
        marker = self._taped_markers.get(state)
        if marker is not None and marker[0]:
            for kept in arrays.values():
                if kept[1].grad is not None:
                    kept[1].grad.zero_()
        tape = recording_tape()
        self._taped_markers[state] = tape.backward_marker() if tape is not None else [False]

    def _pass_array(self, model, key, arrays: dict, taped: bool) -> wp.array:
        """A [body_count] spatial_vector array of a coupled pass in the step's `arrays` (bodies without shapes
        keep their zero)."""
        return self._scratch(arrays, key, (model.body_count,), wp.spatial_vector, taped)

    def _record_partners(self, model, state, shapes=None, settings=None, candidates=None) -> tuple:
        """(partners [rows, slots] int32, count [rows] int32): every body shape's touching partners, recorded by
        find_contacts (not differentiated) in the arrays of steps from `state` (_step_arrays: a tape keeps the
        arrays its launches read), with as many slots as the most partners of any shape (grown and recorded again
        when a shape has more)."""
        device = model.device
        if wp.is_capturing(device) and not self._slots_fixed:
            raise RuntimeError("a SolverRigid step whose contact forces may be differentiated cannot be captured "
                               f"with more than {FIXED_SLOT_BUDGET} possible shape pairs: it sizes its contact slots "
                               "on the host; capture steps whose inputs need no gradient, or launch this one "
                               "uncaptured")
        shapes = self.shape_data(model) if shapes is None else shapes
        settings = self.contact_settings(model) if settings is None else settings
        candidates = self.contact_candidates(model, state) if candidates is None else candidates
        rows = self._rows.shape[0]
        scan = [shapes, state.body_q, state.body_qd, model.body_com, self._rows, candidates, settings]
        arrays = self._step_arrays(state, True)
        count = self._scratch(arrays, "partner_count", (rows,), wp.int32, False)
        while True:
            partners = self._scratch(arrays, "partners", (rows, self._slots), wp.int32, False)
            wp.launch(k.find_contacts, dim=rows, inputs=scan + [partners, count, 0, self._row_wrench, self._row_wrench],
                      device=device, record_tape=False)
            if self._slots_fixed:  # a slot for every possible partner
                return partners, count
            most = int(count.numpy().max())
            if most <= self._slots:
                return partners, count
            self._slots = most + max(4, most // 4)  # every partner gets a slot: record again, wider

    def contact_candidates(self, model, state, shapes=None) -> k.CandidateShapes:
        """Where the body shapes of `state` look for contact partners (the hash grid rebuilt for `state`). Only
        find_contacts reads them, which no tape records: the same arrays serve every step."""
        centers, lower, upper = self._bounds
        if self._movable_ids.shape[0]:
            wp.launch(k.movable_shape_bounds, dim=self._movable_ids.shape[0],
                      inputs=[self.shape_data(model) if shapes is None else shapes, state.body_q, self._movable_ids,
                              centers, lower, upper],
                      device=model.device, record_tape=False)
        grid = self._idle_grid
        if self._grid is not None:
            grid = self._grid.build(centers, self._grid_cell, keep_arrays=True)
        return self._struct(None, "candidates", k.CandidateShapes, static_ids=self._static_ids,
                            movable_ids=self._movable_ids, excluded_start=self._excluded_start,
                            excluded=self._excluded, use_grid=0 if self._grid is None else 1, grid=grid,
                            lower=lower, upper=upper)

    def integration_settings(self, dt: float) -> k.IntegrationSettings:
        return self._struct(None, "integration_settings", k.IntegrationSettings, gravity=self.model.gravity,
                            dt=float(dt), linear_scale=max(0.0, 1.0 - self.linear_damping * float(dt)),
                            angular_scale=max(0.0, 1.0 - self.angular_damping * float(dt)))

    def contact_settings(self, model, dt: float = 0.0, record=None, twist=None,
                         state=None) -> k.ContactSettings:
        """The contact kernels' settings for a step of dt [s], recording the time-constant contacts into `record`
        (a ContactRecord) when given, and the bodies' predicted end twists into `twist` ([body_count]
        spatial_vector) when given; `state`: the State whose arrays `record` and `twist` are (see _struct)."""
        return self._struct(state, ("contact_settings", record is None, twist is None), k.ContactSettings,
                            margin=float(model.rigid_contact_margin),
                            restitution_velocity=self.restitution_velocity, smoothing=self.contact_smoothing,
                            dt=float(dt), record=0 if record is None else 1,
                            contacts=self._no_record if record is None else record,
                            twist=self._no_twist if twist is None else twist)

    def _struct(self, state, name, cls, **fields):
        """A `cls` struct with these field values: the same object as at the last call of this `name` (for
        `state`, when the fields hold its arrays) when every field is the same (the same arrays and structs, equal
        numbers and vectors), else a new one kept for the next call. A reused struct keeps its packed form, so a
        launch packs it at no cost and a tape copies it once (a tape keeps its own copy of each struct it
        records: no later launch changes what an earlier one saw). Building, checking and packing the ~10 structs
        of a step anew took a third of the host time of a taped 100-box step, half of an untaped one's
        (docs/rigid_contact.md)."""
        store = self._structs if state is None else self._state_structs.setdefault(state, {})
        key = tuple((field, _value_key(v)) for field, v in fields.items())
        kept = store.get(name)
        if kept is not None and len(kept[0]) == len(key) and \
                all(a[0] == b[0] and _same_value(a[1], b[1]) for a, b in zip(kept[0], key)):
            return kept[1]
        value = cls()
        for field, v in fields.items():
            setattr(value, field, v)
        store[name] = (key, value)
        return value

    @staticmethod
    def _contacts_need_gradients(model, state) -> bool:
        """Whether any input of the contact forces has a gradient array (a tape could differentiate them)."""
        inputs = (state.body_q, state.body_qd, model.body_com, model.shape_transform, model.shape_scale,
                  model.shape_material_ke, model.shape_material_kd, model.shape_material_kf,
                  model.shape_material_mu, model.shape_material_restitution, model.shape_material_timeconst,
                  model.shape_material_dampratio, model.body_mass, model.body_inertia)
        return any(a is not None and a.requires_grad for a in inputs)

    def integrate(self, model, state_in, state_out, f, dt: float):
        """Newton-Euler step of every body from `state_in` with wrenches `f` into `state_out`."""
        wp.launch(k.integrate_bodies, dim=model.body_count,
                  inputs=[state_in.body_q, state_in.body_qd, f, model.body_mass, model.body_inertia, model.body_com,
                          self.integration_settings(dt)],
                  outputs=[state_out.body_q, state_out.body_qd], device=model.device)

    def shape_data(self, model) -> k.RigidShapeData:
        """The model's shapes for the contact kernels: built again when one of the model's arrays was replaced
        (so replaced arrays are seen), else the same struct as the step before (a tape keeps a copy of each struct
        it records, so reusing it is safe)."""
        arrays = (model.shape_type, model.shape_transform, model.shape_scale, model.shape_body,
                  model.shape_material_ke, model.shape_material_kd, model.shape_material_kf, model.shape_material_mu,
                  model.shape_material_restitution, model.shape_material_timeconst, model.shape_material_dampratio,
                  model.body_mass, model.body_inertia, element_worlds(model, "shape", model.shape_count))
        cached = self.__dict__.get("_shape_data_cache")
        if cached is not None and cached[0] is model and all(x is y for x, y in zip(cached[1], arrays)):
            return cached[2]
        s = k.RigidShapeData()
        (s.type, s.transform, s.scale, s.body, s.ke, s.kd, s.kf, s.mu, s.restitution, s.timeconst, s.dampratio,
         s.body_mass, s.body_inertia, s.world) = arrays
        self._shape_data_cache = (model, arrays, s)
        return s


class _NoState:
    """The empty body arrays a coupled pass that does not integrate writes nothing into."""

    def __init__(self, device):
        self.body_q = wp.zeros(0, dtype=wp.transform, device=device)
        self.body_qd = wp.zeros(0, dtype=wp.spatial_vector, device=device)


#: differentiated steps give every shape on a body a slot for every other shape when this covers the products
FIXED_SLOT_BUDGET = 4096


def contact_slots_fixed(model) -> bool:
    """Whether SolverRigid's differentiated steps on `model` size their contact slots without reading anything on
    the host (few shapes: shapes on bodies x the shapes one world sees <= FIXED_SLOT_BUDGET), so that they can be
    captured."""
    if not model.shape_count:
        return True
    on_body = int((model.shape_body.numpy() >= 0).sum())
    shape_world = element_worlds(model, "shape", model.shape_count).numpy()
    rows = np.flatnonzero(model.shape_body.numpy() >= 0)
    return on_body * most_seen(rows, np.arange(model.shape_count), shape_world) <= FIXED_SLOT_BUDGET


def most_seen(rows: np.ndarray, shapes: np.ndarray, shape_world: np.ndarray) -> int:
    """The most of `shapes` (indices) that one of the shapes `rows` can meet: those of its world and the shared
    ones (world -1); all of them when a row is shared."""
    if (shape_world[rows] < 0).any():
        return len(shapes)
    worlds = shape_world[shapes]
    shared = int((worlds < 0).sum())
    own = np.bincount(worlds[worlds >= 0]) if (worlds >= 0).any() else np.zeros(1, np.int64)
    return shared + int(own.max())


def _value_key(value):
    """What SolverRigid._struct compares of a field value: numbers and vectors by value (a vector may be changed
    in place: its values now, as bytes), anything else (arrays, structs) by identity."""
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return (kind, value)
    if isinstance(value, wp.array) or hasattr(value, "_wp_struct_"):
        return value
    return (kind, value.numpy().tobytes())


def _same_value(a, b) -> bool:
    return a is b or (type(a) is tuple and type(b) is tuple and a == b)


def _int_array(values: np.ndarray, device) -> wp.array:
    """An int32 array on `device` (an empty one too)."""
    return wp.array(np.ascontiguousarray(values, dtype=np.int32), dtype=wp.int32, device=device)


SHAPE_NAMES = {SHAPE_SPHERE: "sphere", SHAPE_BOX: "box", SHAPE_CAPSULE: "capsule", SHAPE_PLANE: "plane",
               SHAPE_MESH: "mesh"}


def refuse_mesh_contacts(rows, static, movable, shape_type, shape_body, excluded_pairs, shape_world=None):
    """Raise ValueError naming the first pair of shapes that would collide in SolverRigid with a mesh among them:
    its contact kernels collide primitives only (a mesh shape collides with cloth and particles). Shapes of two
    different worlds (`shape_world`, -1 shared) never collide."""
    if not (shape_type == SHAPE_MESH).any():
        return
    excluded = {(int(a), int(b)) for a, b in excluded_pairs} | {(int(b), int(a)) for a, b in excluded_pairs}

    def name(shape):
        body = int(shape_body[shape])
        where = f"on body {body}" if body >= 0 else "static"
        return f"shape {int(shape)} ({SHAPE_NAMES.get(int(shape_type[shape]), 'unknown')}, {where})"

    movable_set = set(int(m) for m in movable)
    for row in rows:
        partners = list(static)
        if int(row) in movable_set:
            partners += [m for m in movable if shape_body[m] != shape_body[row]]
        for other in partners:
            if (int(row), int(other)) in excluded:
                continue
            if shape_world is not None and min(shape_world[row], shape_world[other]) >= 0 and \
                    shape_world[row] != shape_world[other]:
                continue
            if shape_type[row] == SHAPE_MESH or shape_type[other] == SHAPE_MESH:
                raise ValueError(f"SolverRigid: rigid contact between {name(row)} and {name(other)} is not "
                                 "supported: mesh shapes collide with cloth and particles only (exclude the pair "
                                 "with excluded_shape_pairs, turn off body_contacts, or use a primitive shape)")


def _excluded_partners(rows: np.ndarray, pairs, shape_count: int, device) -> tuple:
    """(start [len(rows) + 1], partners): the shapes row t must not pair with are
    partners[start[t]:start[t + 1]], from the symmetric list of excluded shape pairs."""
    pairs = np.asarray(list(pairs), dtype=np.int64).reshape(-1, 2)
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= shape_count):
        raise ValueError(f"excluded_shape_pairs: shape indices must lie in [0, {shape_count})")
    both = np.concatenate([pairs, pairs[:, ::-1]]) if len(pairs) else pairs
    row_of = np.full(shape_count, -1, np.int64)
    row_of[rows] = np.arange(len(rows))
    both = both[row_of[both[:, 0]] >= 0]
    both = np.unique(both, axis=0)
    order = np.lexsort((both[:, 1], row_of[both[:, 0]]))
    both = both[order]
    start = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(np.bincount(row_of[both[:, 0]], minlength=len(rows)), out=start[1:])
    return _int_array(start, device), _int_array(both[:, 1], device)
