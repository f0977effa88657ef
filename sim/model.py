"""Model (static description of a scene), State (what changes each step) and Control (inputs).

Names follow warp.sim / Newton. Every array documents its shape and SI unit. Arrays with no entries (a model
without triangles, say) are still allocated with length 0 so that kernels can be launched uniformly.
"""

from __future__ import annotations

import numpy as np

import kernels as wp

from .bending import DEFAULT_BENDING

# Shape types of `Model.shape_type`
SHAPE_SPHERE = 0
SHAPE_BOX = 1
SHAPE_CAPSULE = 2
SHAPE_PLANE = 3
SHAPE_MESH = 4

# Bits of `Model.particle_flags`
PARTICLE_ACTIVE = 1

# Rigid-body contact materials (`Model.shape_material_<key>`, docs/rigid_contact.md)
SHAPE_MATERIAL_KEYS = ("ke", "kd", "kf", "mu", "restitution", "timeconst", "dampratio")
DEFAULT_TIMECONST = 0.001  # [s]: the time-constant form's default time constant
DEFAULT_DAMPRATIO = 1.0  # its default damping ratio (critical)
PENALTY_KE = 1.0e5  # [N/m]: the penalty form's stiffness when only kd is given


@wp.struct
class ContactParams:
    """Contact material between particles and shapes (and between particles). For particle-shape contact the
    solvers read mu from `Model.soft_contact_mu` (an array, so that a Tape differentiates it)."""

    ke: float  # normal stiffness [N/m]
    kd: float  # normal damping [N s/m]
    kf: float  # friction stiffness (regularisation of Coulomb friction) [N s/m]
    mu: float  # Coulomb friction coefficient [-]
    margin: float  # distance at which contacts start [m]


class Model:
    """Static data of a simulation. Create with `ModelBuilder.finalize`.

    Particles:
        particle_count: number of particles.
        particle_q: initial positions [m], shape [particle_count], vec3.
        particle_qd: initial velocities [m/s], shape [particle_count], vec3.
        particle_mass: masses [kg], shape [particle_count]; 0 for fixed particles.
        particle_inv_mass: inverse masses [1/kg], shape [particle_count]; 0 for fixed particles.
        particle_radius: contact radii [m], shape [particle_count].
        particle_flags: bit flags (PARTICLE_ACTIVE), shape [particle_count], int32.
        particle_thickness: self-contact thickness [m] of the vertices of cloths built with self_collision
            (0 for the others), shape [particle_count]; see sim/self_contact.py.
        self_contact_enabled: whether any cloth collides with itself (and with the other such cloths).
    Springs:
        spring_indices: particle pairs, shape [spring_count, 2], int32.
        spring_rest_length [m], spring_stiffness [N/m], spring_damping [N s/m]: shape [spring_count].
    Triangles (membrane FEM, StVK on the 2x2 rest frame):
        tri_indices: shape [tri_count, 3], int32.
        tri_poses: inverse rest-frame matrices [1/m], shape [tri_count], mat22.
        tri_areas: rest areas [m^2], shape [tri_count].
        tri_materials: (mu [N/m], lambda [N/m], damping [N s/m], drag, lift), shape [tri_count, 5].
    Bending edges (hinges: the two triangles of an edge; models compared in docs/bending.md):
        bending_model: "quadratic" (energy ke/2 * edge_rest_scale * |b|^2 with the bend vector
            b = sum_i edge_bending_weights[e, i] x_i: constant Hessian, smooth everywhere, rest shape flat) or
            "dihedral" (ke/2 * edge_rest_scale * (angle - rest)^2: keeps curved rest shapes, but the angle wraps
            at +-pi, so the force jumps when a hinge folds through). Read by both solvers at every step.
        edge_indices: (opposite 0, opposite 1, edge vertex 0, edge vertex 1), shape [edge_count, 4], int32;
            -1 for a missing opposite vertex (boundary edge: no bending).
        edge_rest_angle: rest dihedral angles [rad], shape [edge_count] (dihedral model only).
        edge_rest_scale: rest edge length times the mean doubled area of the two triangles [m^3], shape
            [edge_count]; the bending energy is ke/2 * edge_rest_scale * (angle - rest)^2, so that `ke` means what
            it means in warp.sim/Newton (force ke * angle * length^2 at rest). The quadratic model has the same
            energy to second order around a flat rest shape (|b| = 2 sin(angle / 2) for an unstretched fold).
        edge_bending_weights: the quadratic model's weights of (o0, o1, v0, v1) [1/m], shape [edge_count, 4]:
            cotangent weights of the rest triangles over the rest edge length (zeros for boundary edges).
        edge_bending_properties: (stiffness ke [N/m/rad], damping kd [N s/m/rad]), shape [edge_count, 2].
    Rigid bodies (free bodies; see SolverRigid):
        body_count: number of bodies.
        body_q0: initial poses of the body frames in world, shape [body_count], transform (p, q (x, y, z, w)).
        body_qd0: initial spatial velocities, shape [body_count], spatial_vector laid out as (angular velocity w
            [rad/s], linear velocity v of the centre of mass [m/s]), both in world coordinates. The same layout is
            used everywhere (State.body_qd; State.body_f holds (torque about the centre of mass [N m],
            force [N]) in world coordinates).
        body_mass: masses [kg], shape [body_count]; 0 for a kinematic body, which moves with its velocity and
            ignores forces.
        body_inv_mass: inverse masses [1/kg] (0 for kinematic bodies), shape [body_count].
        body_inertia: inertia tensors about the centre of mass in body-frame axes [kg m^2], shape [body_count],
            mat33.
        body_inv_inertia: their inverses [1/(kg m^2)] (0 for kinematic bodies), shape [body_count], mat33.
        body_com: centres of mass in the body frame [m], shape [body_count], vec3.
    Shapes (colliders, static unless attached to a body):
        shape_type: SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE or SHAPE_MESH, shape [shape_count], int32.
        shape_transform: pose in world for static shapes, relative to the body frame for shapes attached to a
            body, shape [shape_count], transform. A plane passes through the pose's origin and its normal is the
            pose's local +y axis.
        shape_scale: sphere (radius, 0, 0); box half extents; capsule (radius, half height, 0) along local y;
            plane (width, length, 0) with 0 meaning infinite [m]; mesh (s, s, s), the uniform scale from the mesh's
            vertices to metres [m/unit]; shape [shape_count], vec3.
        shape_mesh: the wp.Mesh (BVH over the unscaled vertices in the shape frame) of each mesh shape, None
            for others, a list of length shape_count (host objects; kept alive by the Model).
        shape_mesh_id: their ids for kernels, 0 for other shapes, shape [shape_count], uint64.
        shape_mesh_closed: 1 for a closed, consistently oriented mesh (a solid: inside is known), 0 for an
            open one (a two-sided surface), shape [shape_count], int32.
        shape_body: body index or -1 for static shapes, shape [shape_count], int32.
        shape_bounding_radius: radius of a sphere about the shape's origin that contains it [m] (0 for planes),
            shape [shape_count], as built (SolverRigid's hash grid reads it; its contact kernels recompute it from
            shape_scale, which sim optimize may change).
        Contact material of rigid-body contacts (SolverRigid, SolverFeatherstone; docs/rigid_contact.md), per
        shape; a contact uses the mean of its two shapes' values. The normal force has a time-constant form
        (timeconst > 0, ke = kd = 0; the default) and a penalty form (timeconst = 0):
        shape_material_timeconst: time constant tau of the normal spring-damper of the pair's effective mass
            [s] (0: penalty form), shape [shape_count].
        shape_material_dampratio: its damping ratio zeta [-] (stiffness m_eff / (tau zeta)^2, damping
            2 m_eff / tau), shape [shape_count].
        shape_material_ke: penalty normal stiffness [N/m] per contact point, shape [shape_count].
        shape_material_kd: penalty normal damping [N s/m] per contact point, shape [shape_count].
        shape_material_kf: slope of the regularised friction at zero slip [N s/m], shape [shape_count].
        shape_material_mu: Coulomb friction coefficient [-], shape [shape_count].
        shape_material_restitution: coefficient of restitution e in [0, 1] [-], shape [shape_count].
    Joints and articulations (ModelBuilder.add_joint_*, SolverFeatherstone; docs/articulations.md). Units of
    per-axis values are [m]-based for linear axes and [rad]-based for angular ones:
        joint_count, joint_dof_count (velocity entries), joint_coord_count (position entries),
        articulation_count.
        joint_type: sim.joints.JOINT_* (Newton's numbering), shape [joint_count], int32.
        joint_parent: parent body, -1 for the world; joint_child: child body; shape [joint_count], int32.
        joint_ancestor: the joint whose child is this joint's parent body, -1 at a root, shape [joint_count].
        joint_X_p: parent anchor frame in the parent body's frame (in world for the world), shape
            [joint_count], transform. joint_X_c: child anchor frame in the child body's frame, same shape.
        joint_axis: axis of each degree of freedom in the parent anchor frame (unit), shape [joint_dof_count],
            vec3.
        joint_dof_dim: (linear axis count, angular axis count) per joint, shape [joint_count, 2], int32.
        joint_q_start, joint_qd_start: first entry of each joint in joint_q / joint_qd, shape
            [joint_count + 1], int32 (the last entry is the total).
        joint_q: initial joint coordinates [m, rad; quaternions (x, y, z, w) for ball and free joints], shape
            [joint_coord_count]. joint_qd: initial joint velocities [m/s, rad/s], shape [joint_dof_count].
        joint_limit_lower, joint_limit_upper: coordinate limits [m or rad], shape [joint_dof_count].
        joint_limit_ke: limit stiffness [N/m or N m/rad]; joint_limit_kd: limit damping [N s/m or N m s/rad].
        joint_target_pos [m or rad], joint_target_vel [m/s or rad/s]: initial drive targets (Control copies
            them), shape [joint_dof_count].
        joint_target_ke [N/m or N m/rad], joint_target_kd [N s/m or N m s/rad]: drive gains, joint_effort_limit
            [N or N m]: the largest drive force, shape [joint_dof_count].
        joint_armature: inertia added to the mass matrix diagonal [kg or kg m^2], shape [joint_dof_count].
        joint_friction [N or N m] (not used by SolverFeatherstone), joint_damping: passive viscous damping
            [N s/m or N m s/rad], shape [joint_dof_count].
        articulation_start: first joint of each articulation, shape [articulation_count + 1], int32 (the last
            entry is joint_count); an articulation's joints are contiguous and each comes after its ancestor.
        joint_articulation: the articulation of each joint, shape [joint_count], int32.
    Worlds (ModelBuilder.begin_world/end_world/replicate, sim/worlds.py, docs/worlds.md):
        world_count: number of independent worlds (0 when the builder made none: one shared world).
        particle_world, body_world, shape_world, joint_world: the world of each particle, body, shape and
            joint, shape [particle_count] (and so on), int32; -1: shared with every world (static colliders,
            the ground). Contacts never join two different worlds.
        world_ranges: {kind: (start, end) of each world's elements, int64 numpy [world_count, 2]} for the kinds
            of sim.worlds.RANGE_KINDS (host data; `world_slice(i)` gives them as slices).
    Settings:
        gravity: acceleration [m/s^2], vec3.
        up_axis: 0, 1 or 2 (x, y, z).
        particle_damping: velocity damping rate [1/s] applied by the integrators.
        soft_contact: ContactParams for particle-shape contact.
        soft_contact_mu: its Coulomb coefficient as the array the particle solvers read [-], shape [1]
            (a property, see there).
        particle_contact: ContactParams for particle-particle contact.
        particle_grid_enabled: whether particle-particle contact is simulated.
        rigid_contact_margin: distance [m] below which rigid-body contact candidates are kept (SolverRigid); forces
            start at touching distance.
    """

    def __init__(self, device):
        self.device = wp.get_device(device)
        self.requires_grad = False
        self.particle_count = 0
        self.spring_count = 0
        self.tri_count = 0
        self.edge_count = 0
        self.shape_count = 0
        self.body_count = 0
        self.joint_count = 0
        self.joint_dof_count = 0
        self.joint_coord_count = 0
        self.articulation_count = 0
        # a Model assembled by hand (not by ModelBuilder.finalize) has no bodies: states still get body arrays
        self.body_q0 = wp.zeros(0, dtype=wp.transform, device=self.device)
        self.body_qd0 = wp.zeros(0, dtype=wp.spatial_vector, device=self.device)
        self.joint_q = wp.zeros(0, dtype=float, device=self.device)
        self.joint_qd = wp.zeros(0, dtype=float, device=self.device)
        self.shape_mesh = []
        self.shape_mesh_id = wp.zeros(0, dtype=wp.uint64, device=self.device)
        self.shape_mesh_closed = wp.zeros(0, dtype=wp.int32, device=self.device)
        self.rigid_contact_margin = 0.01
        self.gravity = wp.vec3(0.0, -9.81, 0.0)
        self.up_axis = 1
        self.particle_damping = 0.0
        # kf (viscous friction) stays explicit-stable for light cloth vertices (kf dt / m < 1 at dt = 1e-3, m = 0.01 kg)
        self.soft_contact = ContactParams(ke=1.0e4, kd=10.0, kf=10.0, mu=0.5, margin=0.01)
        self._soft_contact_mu = wp.zeros(1, dtype=float, device=self.device)
        self._soft_contact_mu_copied = None  # the soft_contact.mu last copied into the array
        self.particle_contact = ContactParams(ke=1.0e3, kd=1.0, kf=10.0, mu=0.5, margin=0.01)
        self.particle_grid_enabled = False
        self.self_contact_enabled = False
        self.particle_max_radius = 0.0
        self.bending_model = DEFAULT_BENDING
        self.world_count = 0
        self.world_ranges = {}
        for kind in ("particle", "body", "shape", "joint"):
            setattr(self, kind + "_world", wp.zeros(0, dtype=wp.int32, device=self.device))

    @property
    def num_worlds(self) -> int:
        """The number of worlds (world_count; MuJoCo-Warp's name)."""
        return self.world_count

    def world_slice(self, world: int):
        """The index ranges of world `world` as slices (sim.worlds.WorldSlice: particle, body, shape, joint,
        joint_coord, joint_dof, spring, tri, edge, articulation)."""
        from .worlds import world_slice
        return world_slice(self, world)

    def world_state(self, state: "State", world: int) -> "State":
        """A State of views of world `world`'s part of `state` (no copies: see sim.worlds.world_state)."""
        from .worlds import world_state
        return world_state(self, state, world)

    @property
    def soft_contact_mu(self) -> wp.array:
        """Coulomb friction coefficient of particle-shape contact, the array the particle solvers read [-],
        shape [1].

        `soft_contact.mu` is the setting; it is copied in here whenever it changed since the last read. Kernels
        read the array rather than the struct's float so that a Tape sees the coefficient: `sim optimize` learns
        `sim.contact.mu` by writing this array inside the Tape. Assigning a number sets `soft_contact.mu`
        (warp.sim's `soft_contact_mu` is a float attribute)."""
        mu = float(self.soft_contact.mu)
        if mu != self._soft_contact_mu_copied:
            self._soft_contact_mu.fill_(mu)
            self._soft_contact_mu_copied = mu
        if self.requires_grad and not self._soft_contact_mu.requires_grad:
            self._soft_contact_mu.requires_grad = True
        return self._soft_contact_mu

    @soft_contact_mu.setter
    def soft_contact_mu(self, value: float):
        self.soft_contact.mu = float(value)

    def state(self, requires_grad: bool | None = None) -> "State":
        """A new State holding the model's initial particle positions and velocities and body poses and
        velocities (length-0 body arrays when there are no bodies)."""
        rg = self.requires_grad if requires_grad is None else requires_grad
        s = State()
        s.particle_q = wp.clone(self.particle_q, requires_grad=rg)
        s.particle_qd = wp.clone(self.particle_qd, requires_grad=rg)
        s.particle_f = wp.zeros(self.particle_count, dtype=wp.vec3, device=self.device, requires_grad=rg)
        s.particle_count = self.particle_count
        s.body_q = wp.clone(self.body_q0, requires_grad=rg)
        s.body_qd = wp.clone(self.body_qd0, requires_grad=rg)
        s.body_f = wp.zeros(self.body_count, dtype=wp.spatial_vector, device=self.device, requires_grad=rg)
        s.body_count = self.body_count
        s.joint_q = wp.clone(self.joint_q, requires_grad=rg)
        s.joint_qd = wp.clone(self.joint_qd, requires_grad=rg)
        return s

    def control(self) -> "Control":
        """A new Control with no external forces; with joints, joint_f zero and the drive targets copied from
        the model (requires_grad as the model)."""
        c = Control()
        c.particle_f = None
        c.body_f = None
        if self.joint_dof_count:
            rg = self.requires_grad
            c.joint_f = wp.zeros(self.joint_dof_count, dtype=float, device=self.device, requires_grad=rg)
            c.joint_target_pos = wp.clone(self.joint_target_pos, requires_grad=rg)
            c.joint_target_vel = wp.clone(self.joint_target_vel, requires_grad=rg)
        return c

    def total_mass(self) -> float:
        return float(np.sum(self.particle_mass.numpy()))


class State:
    """Time-varying data.

    particle_q: positions [m], shape [particle_count], vec3.
    particle_qd: velocities [m/s], shape [particle_count], vec3.
    particle_f: forces accumulated during a step [N], shape [particle_count], vec3.
    body_q: poses of the body frames in world, shape [body_count], transform.
    body_qd: spatial velocities (angular velocity [rad/s], linear velocity of the centre of mass [m/s]), world
        coordinates, shape [body_count], spatial_vector.
    body_f: wrenches accumulated during a step (torque about the centre of mass [N m], force [N]), world
        coordinates, shape [body_count], spatial_vector.
    joint_q: joint coordinates [m, rad; quaternions for ball and free joints], shape [joint_coord_count].
    joint_qd: joint velocities [m/s, rad/s], shape [joint_dof_count] (layout in Model's joint section).
    """

    particle_q = None
    particle_qd = None
    particle_f = None
    particle_count = 0
    body_q = None
    body_qd = None
    body_f = None
    body_count = 0
    joint_q = None
    joint_qd = None

    def clear_forces(self):
        if self.particle_f is not None:
            self.particle_f.zero_()
        if self.body_f is not None:
            self.body_f.zero_()


class Control:
    """External inputs for a step.

    particle_f: external forces added to particles [N], shape [particle_count], vec3, or None.
    body_f: external wrenches on bodies (torque about the centre of mass [N m], force [N]), world coordinates,
        shape [body_count], spatial_vector, or None.
    joint_f: generalized joint forces [N or N m] added to every degree of freedom, shape [joint_dof_count], or
        None. For a free joint: the force at the centre of mass, then the torque, in the parent anchor frame.
    joint_target_pos: drive position targets [m or rad], shape [joint_dof_count], or None (the model's).
    joint_target_vel: drive velocity targets [m/s or rad/s], shape [joint_dof_count], or None (the model's).
    (Newton 1.8 calls these two joint_target_q and joint_target_qd.)
    """

    particle_f = None
    body_f = None
    joint_f = None
    joint_target_pos = None
    joint_target_vel = None
