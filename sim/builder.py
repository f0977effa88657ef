"""ModelBuilder: assemble particles, springs, cloth, rigid bodies and colliders in Python, then `finalize` into a
Model.

Rotations are given as a `wp.quat` or a plain (x, y, z, w) tuple. Positions in metres, masses in kilograms.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import kernels as wp

from .bending import (DEFAULT_BENDING, bending_scale, check_bending_model, curved_rest_warning, dihedral_angle,
                      hinge_weights)
from .builder_joints import JointBuilderMixin
from .builder_worlds import WorldBuilderMixin
from .mesh_shape import build_collider_meshes, checked_mesh, mesh_bounding_radius
from .model import (DEFAULT_DAMPRATIO, DEFAULT_TIMECONST, PARTICLE_ACTIVE, PENALTY_KE, SHAPE_BOX, SHAPE_CAPSULE,
                    SHAPE_MATERIAL_KEYS, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE, Model)
from .self_contact import default_thickness
from .spatial import (matrix_from_quat, quat_from_axis_angle, quat_identity,  # noqa: F401 (sim's API)
                      quat_normalized, quat_rotate)

_AXES = {"x": 0, "y": 1, "z": 2}


class ModelBuilder(JointBuilderMixin, WorldBuilderMixin):
    """Collects the pieces of a Model. `up_axis` ("x", "y" or "z") sets gravity's direction and the ground.

    `bending` picks the bending model of every edge (Model.bending_model, see docs/bending.md): "quadratic"
    (default; smooth everywhere, for nearly flat rest shapes: rest angles are taken as 0, and `finalize` warns
    when a stiff hinge's rest angle exceeds sim.bending.FLAT_REST_TOLERANCE) or "dihedral" (keeps curved rest
    shapes, but its force jumps when a hinge folds through +-pi).

    Articulations (sim/builder_joints.py): add_joint_revolute, add_joint_prismatic, add_joint_ball,
    add_joint_fixed, add_joint_free, add_joint_d6 and add_articulation; see docs/articulations.md.

    Worlds (sim/builder_worlds.py): begin_world, end_world, add_builder and replicate; see docs/worlds.md.
    """

    def __init__(self, up_axis: str = "y", gravity: float = -9.81, *, bending: str = DEFAULT_BENDING):
        if up_axis not in _AXES:
            raise ValueError(f"up_axis must be 'x', 'y' or 'z', got {up_axis!r}")
        self.up_axis = _AXES[up_axis]
        self.gravity = gravity
        self.bending = check_bending_model(bending)
        self.particle_q, self.particle_qd, self.particle_mass, self.particle_radius = [], [], [], []
        self.particle_flags = []
        self.particle_thickness = {}  # particle index -> self-contact thickness [m], for colliding cloths
        self.spring_indices, self.spring_rest_length, self.spring_stiffness, self.spring_damping = [], [], [], []
        self.tri_indices, self.tri_poses, self.tri_areas, self.tri_materials = [], [], [], []
        self.edge_indices, self.edge_rest_angle, self.edge_bending_properties = [], [], []
        self.edge_rest_scale, self.edge_bending_weights = [], []
        self.shape_type, self.shape_transform, self.shape_scale, self.shape_body = [], [], [], []
        self.shape_density, self.shape_material = [], []
        self.shape_mesh = []  # (vertices, triangles) of mesh shapes, None for the others
        self.default_particle_radius = 0.01
        # rigid bodies: what add_body was told; mass properties are computed from the shapes at finalize
        self.body_q, self.body_qd = [], []
        self.body_mass, self.body_com, self.body_inertia = [], [], []
        #: density of shapes attached to bodies [kg/m^3] when add_shape_* is not given one
        self.default_shape_density = 1000.0
        #: contact material of new shapes (see Model.shape_material_* and docs/rigid_contact.md): the normal
        #: force's time constant [s] and damping ratio (the default form), or, when ke [N/m] or kd [N s/m] is set
        #: (here or in add_shape_*), the penalty form; kf [N s/m], mu, restitution
        self.default_shape_timeconst = DEFAULT_TIMECONST
        self.default_shape_dampratio = DEFAULT_DAMPRATIO
        self.default_shape_ke = None
        self.default_shape_kd = None
        self.default_shape_kf = 100.0
        self.default_shape_mu = 0.5
        self.default_shape_restitution = 0.0
        self._init_joints()
        self._init_worlds()

    @property
    def up_vector(self) -> np.ndarray:
        v = np.zeros(3)
        v[self.up_axis] = 1.0
        return v

    @property
    def particle_count(self) -> int:
        return len(self.particle_q)

    @property
    def body_count(self) -> int:
        return len(self.body_q)

    # ------------------------------------------------------------------------------------------------ particles

    def add_particle(self, pos, vel=(0.0, 0.0, 0.0), mass: float = 1.0, radius: float | None = None,
                     flags: int = PARTICLE_ACTIVE) -> int:
        """Add a particle at `pos` [m] with velocity `vel` [m/s] and `mass` [kg] (0: fixed). Returns its index."""
        if mass < 0:
            raise ValueError(f"particle mass must be >= 0 (0 fixes the particle), got {mass}")
        self.particle_q.append(np.asarray(pos, dtype=np.float64).reshape(3))
        self.particle_qd.append(np.asarray(vel, dtype=np.float64).reshape(3))
        self.particle_mass.append(float(mass))
        self.particle_radius.append(self.default_particle_radius if radius is None else float(radius))
        self.particle_flags.append(int(flags))
        self.particle_world.append(self.current_world)
        return len(self.particle_q) - 1

    def add_particle_grid(self, pos, rot, vel, dim_x: int, dim_y: int, dim_z: int, cell_x: float, cell_y: float,
                          cell_z: float, mass: float, jitter: float = 0.0, radius: float | None = None,
                          seed: int = 42) -> list:
        """A block of dim_x * dim_y * dim_z particles spaced by cell_* [m], rotated by `rot` about `pos`."""
        q = quat_normalized(rot)
        rng = np.random.default_rng(seed)
        out = []
        for z in range(dim_z):
            for y in range(dim_y):
                for x in range(dim_x):
                    local = np.array([x * cell_x, y * cell_y, z * cell_z]) + rng.uniform(-1, 1, 3) * jitter
                    out.append(self.add_particle(np.asarray(pos) + quat_rotate(q, local), vel, mass, radius))
        return out

    def add_spring(self, i: int, j: int, ke: float, kd: float, rest_length: float | None = None) -> int:
        """A spring between particles i and j with stiffness `ke` [N/m] and damping `kd` [N s/m]."""
        if rest_length is None:
            rest_length = float(np.linalg.norm(self.particle_q[i] - self.particle_q[j]))
        self.spring_indices.append((i, j))
        self.spring_rest_length.append(rest_length)
        self.spring_stiffness.append(ke)
        self.spring_damping.append(kd)
        return len(self.spring_indices) - 1

    # ------------------------------------------------------------------------------------------------ cloth

    def add_triangle(self, i: int, j: int, k: int, tri_ke: float, tri_ka: float, tri_kd: float,
                     tri_drag: float = 0.0, tri_lift: float = 0.0) -> float:
        """A membrane triangle over particles i, j, k with Lame parameters `tri_ke` (mu) and `tri_ka` (lambda)
        [N/m] and damping `tri_kd`. Returns its rest area [m^2]; degenerate triangles are refused."""
        p, q, r = self.particle_q[i], self.particle_q[j], self.particle_q[k]
        e1, e2 = q - p, r - p
        n = np.cross(e1, e2)
        area = 0.5 * np.linalg.norm(n)
        if area < 1e-12:
            raise ValueError(f"triangle ({i}, {j}, {k}) has zero area")
        # rest frame: x along e1, y in the triangle's plane
        ax = e1 / np.linalg.norm(e1)
        ay = np.cross(n / np.linalg.norm(n), ax)
        dm = np.array([[e1 @ ax, e2 @ ax], [e1 @ ay, e2 @ ay]])
        self.tri_indices.append((i, j, k))
        self.tri_poses.append(np.linalg.inv(dm))
        self.tri_areas.append(area)
        self.tri_materials.append((tri_ke, tri_ka, tri_kd, tri_drag, tri_lift))
        return area

    def add_edge(self, o0: int, o1: int, v0: int, v1: int, edge_ke: float, edge_kd: float,
                 rest: float | None = None) -> int:
        """A bending edge v0-v1 between triangles (o0, v0, v1) and (o1, v1, v0); -1 for a missing opposite.
        `edge_ke` [N/m/rad] and `edge_kd` use warp.sim/Newton's scale (see `sim.bending.bending_scale`).
        `rest` [rad] (default: the current dihedral angle) is used by the dihedral model only."""
        scale, weights = 0.0, np.zeros(4)
        if o0 >= 0 and o1 >= 0:
            corners = [self.particle_q[k] for k in (o0, o1, v0, v1)]
            if rest is None:
                rest = dihedral_angle(*corners)
            scale = bending_scale(*corners)
            weights = hinge_weights(*corners)
        self.edge_indices.append((o0, o1, v0, v1))
        self.edge_rest_scale.append(scale)
        self.edge_bending_weights.append(weights)
        if rest is None:
            rest = 0.0
        self.edge_rest_angle.append(rest)
        self.edge_bending_properties.append((edge_ke, edge_kd))
        return len(self.edge_indices) - 1

    def add_cloth_mesh(self, pos, rot, scale: float, vel, vertices, indices, density: float, tri_ke: float = 1e3,
                       tri_ka: float = 1e3, tri_kd: float = 1e-1, edge_ke: float = 0.0, edge_kd: float = 0.0,
                       add_springs: bool = False, spring_ke: float = 1e3, spring_kd: float = 0.0,
                       radius: float | None = None, fixed: tuple = (), self_collision: bool = False,
                       thickness: float | None = None) -> list:
        """A triangle mesh (vertices [n, 3], triangle indices [m, 3]) as cloth with areal `density` [kg/m^2];
        each vertex gets a third of the mass of its triangles. `fixed` vertex indices get mass 0.

        `self_collision`: the cloth collides with itself and with every other cloth that has it on
        (vertex-triangle and edge-edge proximity contacts, sim/self_contact.py), keeping `thickness` [m]
        between surfaces (default: a quarter of the mean edge length)."""
        verts = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
        tris = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
        if tris.size and (tris.min() < 0 or tris.max() >= len(verts)):
            raise ValueError("cloth triangle indices out of range of the vertices")
        q = quat_normalized(rot)
        start = self.particle_count
        world = np.asarray(pos, dtype=np.float64) + quat_rotate(q, verts * scale)
        masses = np.zeros(len(verts))
        for t in tris:
            a, b, c = world[t]
            masses[t] += density * 0.5 * np.linalg.norm(np.cross(b - a, c - a)) / 3.0
        fixed = set(int(f) for f in fixed)
        ids = [self.add_particle(world[k], vel, 0.0 if k in fixed else masses[k], radius) for k in range(len(verts))]
        for t in tris:
            self.add_triangle(*(start + int(k) for k in t), tri_ke, tri_ka, tri_kd)
        if self_collision:
            h = default_thickness(world, tris) if thickness is None else float(thickness)
            if not h > 0:
                raise ValueError(f"cloth thickness must be positive, got {thickness}")
            self.particle_thickness.update((i, h) for i in ids)
        for o0, o1, v0, v1 in _mesh_edges(tris):
            if add_springs:
                self.add_spring(start + v0, start + v1, spring_ke, spring_kd)
            if edge_ke > 0 or edge_kd > 0:
                self.add_edge(-1 if o0 < 0 else start + o0, -1 if o1 < 0 else start + o1, start + v0, start + v1,
                              edge_ke, edge_kd)
        return ids

    def add_cloth_grid(self, pos, rot, vel, dim_x: int, dim_y: int, cell_x: float, cell_y: float, mass: float,
                       tri_ke: float = 1e3, tri_ka: float = 1e3, tri_kd: float = 1e-1, edge_ke: float = 0.0,
                       edge_kd: float = 0.0, add_springs: bool = False, spring_ke: float = 1e3,
                       spring_kd: float = 0.0, fix_left: bool = False, fix_right: bool = False,
                       fix_top: bool = False, fix_bottom: bool = False, radius: float | None = None,
                       self_collision: bool = False, thickness: float | None = None) -> list:
        """A (dim_x + 1) x (dim_y + 1) vertex grid of cells `cell_x` x `cell_y` [m] in the local x-y plane,
        rotated by `rot` about `pos`; each vertex has `mass` [kg]. `fix_*` pins an edge (mass 0).
        `self_collision` and `thickness` [m]: as in add_cloth_mesh. Returns the particle indices, row by row."""
        if dim_x < 1 or dim_y < 1:
            raise ValueError("a cloth grid needs dim_x >= 1 and dim_y >= 1")
        if mass <= 0:
            raise ValueError(f"cloth vertex mass must be positive, got {mass}")
        verts, fixed = [], []
        for y in range(dim_y + 1):
            for x in range(dim_x + 1):
                verts.append((x * cell_x, y * cell_y, 0.0))
                if (fix_left and x == 0) or (fix_right and x == dim_x) or (fix_bottom and y == 0) or \
                        (fix_top and y == dim_y):
                    fixed.append(len(verts) - 1)
        tris = []
        for y in range(dim_y):
            for x in range(dim_x):
                v0 = y * (dim_x + 1) + x
                v1, v2, v3 = v0 + 1, v0 + dim_x + 1, v0 + dim_x + 2
                tris += [(v0, v1, v3), (v0, v3, v2)] if (x + y) % 2 == 0 else [(v0, v1, v2), (v1, v3, v2)]
        cell_area = cell_x * cell_y
        # per-vertex mass is given directly: density chosen so that an interior vertex gets `mass`
        ids = self.add_cloth_mesh(pos, rot, 1.0, vel, verts, tris, density=mass / cell_area, tri_ke=tri_ke,
                                  tri_ka=tri_ka, tri_kd=tri_kd, edge_ke=edge_ke, edge_kd=edge_kd,
                                  add_springs=add_springs, spring_ke=spring_ke, spring_kd=spring_kd,
                                  radius=radius, fixed=fixed, self_collision=self_collision,
                                  thickness=thickness)
        pinned = set(fixed)
        for k, pid in enumerate(ids):  # every vertex gets exactly `mass`, unless fixed
            self.particle_mass[pid] = 0.0 if k in pinned else float(mass)
        return ids

    # ------------------------------------------------------------------------------------------------ colliders

    def _add_shape(self, kind, pos, rot, scale, body, density, material) -> int:
        q = quat_normalized(rot)
        if body < -1 or body >= self.body_count:
            raise ValueError(f"shape body {body} does not exist (there are {self.body_count} bodies; -1: static)")
        density = self.default_shape_density if density is None else float(density)
        if density < 0:
            raise ValueError(f"shape density must be >= 0, got {density}")
        ke, kd, kf, mu, restitution, timeconst, dampratio = self._shape_material(*material)
        self.shape_type.append(kind)
        self.shape_transform.append(np.concatenate([np.asarray(pos, dtype=np.float64).reshape(3), q]))
        self.shape_scale.append(np.asarray(scale, dtype=np.float64).reshape(3))
        self.shape_body.append(int(body))
        self.shape_density.append(density)
        self.shape_material.append((ke, kd, kf, mu, restitution, timeconst, dampratio))
        self.shape_mesh.append(None)
        self.shape_world.append(self.current_world)
        return len(self.shape_type) - 1

    def _shape_material(self, ke, kd, kf, mu, restitution, timeconst=None, dampratio=None) -> tuple:
        """(ke, kd, kf, mu, restitution, timeconst, dampratio) of a new shape, None taking the builder's
        defaults. The normal force has the penalty form (timeconst 0) when ke or kd is given or set as the
        builder's default, else the time-constant form (ke = kd = 0); a shape is given one form, not both."""
        penalty_given = ke is not None or kd is not None
        if penalty_given and (timeconst is not None or dampratio is not None):
            raise ValueError("shape contact material: give either ke/kd (penalty form) or timeconst/dampratio "
                             "(time-constant form), not both")
        if not penalty_given and timeconst is None and dampratio is None:
            penalty_given = self.default_shape_ke is not None or self.default_shape_kd is not None
            ke, kd = self.default_shape_ke, self.default_shape_kd
        if penalty_given:
            ke = PENALTY_KE if ke is None else float(ke)
            kd = 0.0 if kd is None else float(kd)
            timeconst, dampratio = 0.0, self.default_shape_dampratio
        else:
            ke = kd = 0.0
            timeconst = self.default_shape_timeconst if timeconst is None else float(timeconst)
            dampratio = self.default_shape_dampratio if dampratio is None else float(dampratio)
            if not timeconst > 0 or not dampratio > 0:
                raise ValueError(f"shape contact material: timeconst and dampratio must be positive, got "
                                 f"{timeconst} and {dampratio}")
        kf = self.default_shape_kf if kf is None else float(kf)
        mu = self.default_shape_mu if mu is None else float(mu)
        restitution = self.default_shape_restitution if restitution is None else float(restitution)
        if min(ke, kd, kf, mu) < 0 or not 0.0 <= restitution <= 1.0:
            raise ValueError("shape contact material: ke, kd, kf and mu must be >= 0 and restitution in [0, 1]")
        return ke, kd, kf, mu, restitution, timeconst, dampratio

    # Keyword-only arguments shared by add_shape_*: `density` [kg/m^3] (mass of shapes on bodies) and the contact
    # material of rigid-body contacts (Model.shape_material_*, docs/rigid_contact.md): the normal force as
    # timeconst [s] and dampratio [-] (the default form), or as ke [N/m] and kd [N s/m] (the penalty form, taken
    # when either is given; not both forms), and kf [N s/m], mu, restitution; None takes the builder's
    # default_shape_* value. With `body` >= 0, pos and rot are in the body's frame.

    def add_shape_sphere(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius: float = 1.0,
                         body: int = -1, *, density=None, ke=None, kd=None, kf=None, mu=None,
                         restitution=None, timeconst=None, dampratio=None) -> int:
        """A sphere collider of `radius` [m] centred at `pos`."""
        if radius <= 0:
            raise ValueError(f"sphere radius must be positive, got {radius}")
        return self._add_shape(SHAPE_SPHERE, pos, rot, (radius, 0.0, 0.0), body, density,
                               (ke, kd, kf, mu, restitution, timeconst, dampratio))

    def add_shape_box(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), hx: float = 0.5, hy: float = 0.5,
                      hz: float = 0.5, body: int = -1, *, density=None, ke=None, kd=None, kf=None, mu=None,
                      restitution=None, timeconst=None, dampratio=None) -> int:
        """A box collider with half extents hx, hy, hz [m]."""
        if min(hx, hy, hz) <= 0:
            raise ValueError("box half extents must be positive")
        return self._add_shape(SHAPE_BOX, pos, rot, (hx, hy, hz), body, density,
                               (ke, kd, kf, mu, restitution, timeconst, dampratio))

    def add_shape_capsule(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), radius: float = 0.5,
                          half_height: float = 0.5, body: int = -1, *, density=None, ke=None, kd=None, kf=None,
                          mu=None, restitution=None, timeconst=None, dampratio=None) -> int:
        """A capsule collider: a segment of 2 * half_height along local y, swept by `radius` [m]."""
        if radius <= 0 or half_height < 0:
            raise ValueError("capsule radius must be positive and half_height non-negative")
        return self._add_shape(SHAPE_CAPSULE, pos, rot, (radius, half_height, 0.0), body, density,
                               (ke, kd, kf, mu, restitution, timeconst, dampratio))

    def add_shape_plane(self, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), width: float = 0.0,
                        length: float = 0.0, body: int = -1, *, ke=None, kd=None, kf=None, mu=None,
                        restitution=None, timeconst=None, dampratio=None) -> int:
        """A plane through `pos` whose normal is the rotated local +y axis (infinite when width/length are 0).
        Planes have no mass, and rigid bodies collide with static planes only."""
        return self._add_shape(SHAPE_PLANE, pos, rot, (width, length, 0.0), body, 0.0,
                               (ke, kd, kf, mu, restitution, timeconst, dampratio))

    def add_shape_mesh(self, vertices, indices, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0),
                       scale: float = 1.0, body: int = -1, *, ke=None, kd=None, kf=None, mu=None,
                       restitution=None, timeconst=None, dampratio=None) -> int:
        """A triangle-mesh collider: `vertices` (n, 3) in the shape frame [file units], `indices` (m, 3) or
        flat, scaled by `scale` [m/unit] and placed at pos/rot (in the body frame with `body` >= 0, so it
        moves with the body). Cloth and particles collide with it through a BVH (sim.geometry.mesh_sdf); a
        closed, consistently oriented mesh is a solid, any other a two-sided surface. A mesh adds no mass to
        its body (give the body a mass, or other shapes). SolverRigid does not collide meshes with bodies."""
        if not scale > 0:
            raise ValueError(f"mesh collider scale must be positive, got {scale}")
        mesh = checked_mesh(vertices, indices)
        shape = self._add_shape(SHAPE_MESH, pos, rot, (scale, scale, scale), body, 0.0,
                                (ke, kd, kf, mu, restitution, timeconst, dampratio))
        self.shape_mesh[shape] = mesh
        return shape

    def add_ground_plane(self, height: float = 0.0, **material) -> int:
        """An infinite ground plane at `height` [m] along the up axis, normal pointing up. Keyword arguments
        ke, kd (or timeconst, dampratio), kf, mu, restitution set its contact material (see add_shape_plane)."""
        pos = self.up_vector * height
        rot = (0.0, 0.0, 0.0, 1.0)
        if self.up_axis == 0:
            rot = tuple(quat_from_axis_angle((0, 0, 1), -math.pi / 2))
        elif self.up_axis == 2:
            rot = tuple(quat_from_axis_angle((1, 0, 0), math.pi / 2))
        return self.add_shape_plane(pos, rot, **material)

    # ------------------------------------------------------------------------------------------------ rigid bodies

    def add_body(self, xform=None, *, pos=None, rot=None, mass: float | None = None, com=None, inertia=None,
                 linear_velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0)) -> int:
        """A free rigid body; returns its index, to pass as `body` to add_shape_*.

        Args:
            xform: initial pose of the body frame, a wp.transform or (px, py, pz, qx, qy, qz, qw); or give
                `pos` [m] and `rot` (quaternion (x, y, z, w)) instead. Default: the origin, unrotated.
            mass: mass [kg]. None: from the attached shapes' densities. Given: the shapes' mass distribution is
                scaled to it (their densities then only set proportions). A body with no mass is kinematic.
            com: centre of mass in the body frame [m]; None: the mass-weighted centre of the shapes.
            inertia: 3x3 inertia tensor about the centre of mass in body axes [kg m^2]; None: from the shapes
                (analytic sphere, box and capsule tensors, rotated and moved by the parallel-axis theorem).
            linear_velocity: initial velocity of the centre of mass [m/s], world frame.
            angular_velocity: initial angular velocity [rad/s], world frame.
        """
        if xform is not None and (pos is not None or rot is not None):
            raise ValueError("add_body takes either xform or pos/rot, not both")
        if xform is not None:
            t = np.asarray(xform, dtype=np.float64).reshape(-1)
            if t.shape != (7,):
                raise ValueError(f"a body transform is (px, py, pz, qx, qy, qz, qw), got {xform!r}")
            p, q = t[:3], quat_normalized(t[3:])
        else:
            p = np.zeros(3) if pos is None else np.asarray(pos, dtype=np.float64).reshape(3)
            q = quat_normalized((0.0, 0.0, 0.0, 1.0) if rot is None else rot)
        if mass is not None and mass < 0:
            raise ValueError(f"body mass must be >= 0, got {mass}")
        if inertia is not None:
            inertia = np.asarray(inertia, dtype=np.float64).reshape(3, 3)
            if not np.allclose(inertia, inertia.T) or np.linalg.eigvalsh(inertia).min() < 0:
                raise ValueError("a body inertia must be a symmetric positive semi-definite 3x3 matrix")
        self.body_q.append(np.concatenate([p, q]))
        self.body_qd.append(np.concatenate([np.asarray(angular_velocity, dtype=np.float64).reshape(3),
                                            np.asarray(linear_velocity, dtype=np.float64).reshape(3)]))
        self.body_mass.append(None if mass is None else float(mass))
        self.body_com.append(None if com is None else np.asarray(com, dtype=np.float64).reshape(3))
        self.body_inertia.append(inertia)
        self.body_world.append(self.current_world)
        return self.body_count - 1

    def body_mass_properties(self, body: int) -> tuple:
        """(mass [kg], centre of mass in the body frame [m] (3,), inertia about it in body axes [kg m^2] (3, 3))
        of a body, as finalize computes them."""
        shapes = [s for s, b in enumerate(self.shape_body) if b == body]
        mass, com, inertia = combine_shapes([self.shape_type[s] for s in shapes],
                                             [self.shape_transform[s] for s in shapes],
                                             [self.shape_scale[s] for s in shapes],
                                             [self.shape_density[s] for s in shapes])
        if self.body_com[body] is not None:  # inertia about the given centre instead
            d = self.body_com[body] - com
            inertia = inertia + mass * (d @ d * np.eye(3) - np.outer(d, d))
            com = self.body_com[body]
        given = self.body_mass[body]
        if given is not None:
            if given > 0 and mass <= 0 and self.body_inertia[body] is None:
                raise ValueError(f"body {body} has a mass but neither shapes with volume nor an inertia")
            inertia = inertia * (given / mass) if mass > 0 else inertia
            mass = given
        if self.body_inertia[body] is not None:
            inertia = self.body_inertia[body]
        return float(mass), com, inertia

    # ------------------------------------------------------------------------------------------------ finalize

    def finalize(self, device=None, requires_grad: bool = False) -> Model:
        """Copy everything into arrays on `device`. With `requires_grad`, arrays a user may differentiate
        (initial state, masses, material parameters, collider poses) get gradient buffers."""
        m = Model(device)
        d = m.device
        rg = requires_grad
        m.requires_grad = rg
        g = np.zeros(3)
        g[self.up_axis] = self.gravity
        m.gravity = wp.vec3(*g)
        m.up_axis = self.up_axis

        def arr(data, dtype, shape_tail=(), grad=False, np_dtype=np.float32):
            a = np.asarray(data, dtype=np_dtype).reshape((-1,) + shape_tail) if len(data) else \
                np.zeros((0,) + shape_tail, dtype=np_dtype)
            return wp.array(a, dtype=dtype, device=d, requires_grad=rg and grad)

        m.particle_count = self.particle_count
        m.particle_q = arr(self.particle_q, wp.vec3, (3,), grad=True)
        m.particle_qd = arr(self.particle_qd, wp.vec3, (3,), grad=True)
        mass = np.asarray(self.particle_mass, dtype=np.float64)
        m.particle_mass = arr(mass, float, grad=True)
        m.particle_inv_mass = arr(np.where(mass > 0, 1.0 / np.where(mass > 0, mass, 1.0), 0.0), float, grad=True)
        m.particle_radius = arr(self.particle_radius, float)
        m.particle_flags = arr(self.particle_flags, wp.int32, np_dtype=np.int32)
        m.particle_max_radius = float(max(self.particle_radius, default=0.0))
        thickness = np.zeros(self.particle_count)
        thickness[list(self.particle_thickness)] = list(self.particle_thickness.values())
        m.particle_thickness = arr(thickness, float)
        m.self_contact_enabled = bool(self.particle_thickness)

        m.spring_count = len(self.spring_indices)
        m.spring_indices = arr(self.spring_indices, wp.int32, (2,), np_dtype=np.int32).reshape((m.spring_count, 2)) \
            if m.spring_count else wp.zeros((0, 2), dtype=wp.int32, device=d)
        m.spring_rest_length = arr(self.spring_rest_length, float, grad=True)
        m.spring_stiffness = arr(self.spring_stiffness, float, grad=True)
        m.spring_damping = arr(self.spring_damping, float, grad=True)

        m.tri_count = len(self.tri_indices)
        m.tri_indices = wp.array(np.asarray(self.tri_indices, np.int32).reshape(-1, 3), dtype=wp.int32, device=d)
        m.tri_poses = arr(self.tri_poses, wp.mat22, (2, 2), grad=True)
        m.tri_areas = arr(self.tri_areas, float)
        m.tri_materials = wp.array(np.asarray(self.tri_materials, np.float32).reshape(-1, 5), dtype=float, device=d,
                                   requires_grad=rg)

        m.edge_count = len(self.edge_indices)
        m.edge_indices = wp.array(np.asarray(self.edge_indices, np.int32).reshape(-1, 4), dtype=wp.int32, device=d)
        m.edge_rest_angle = arr(self.edge_rest_angle, float)
        m.edge_rest_scale = arr(self.edge_rest_scale, float)
        m.edge_bending_weights = wp.array(np.asarray(self.edge_bending_weights, np.float32).reshape(-1, 4),
                                          dtype=float, device=d)
        m.edge_bending_properties = wp.array(np.asarray(self.edge_bending_properties, np.float32).reshape(-1, 2),
                                             dtype=float, device=d, requires_grad=rg)
        m.bending_model = self.bending
        if self.bending == "quadratic":
            curved = curved_rest_warning(self.edge_indices, self.edge_rest_angle, self.edge_bending_properties)
            if curved is not None:
                warnings.warn(curved, stacklevel=2)

        m.shape_count = len(self.shape_type)
        m.shape_type = arr(self.shape_type, wp.int32, np_dtype=np.int32)
        m.shape_transform = arr(self.shape_transform, wp.transform, (7,), grad=True)
        m.shape_scale = arr(self.shape_scale, wp.vec3, (3,), grad=True)
        m.shape_body = arr(self.shape_body, wp.int32, np_dtype=np.int32)
        m.shape_bounding_radius = arr([_bounding_radius(t, sc, mesh) for t, sc, mesh in
                                       zip(self.shape_type, self.shape_scale, self.shape_mesh)], float)
        m.shape_mesh, m.shape_mesh_id, m.shape_mesh_closed = build_collider_meshes(self.shape_mesh, d)
        material = np.asarray(self.shape_material, dtype=np.float64).reshape(-1, len(SHAPE_MATERIAL_KEYS))
        for k, name in enumerate(SHAPE_MATERIAL_KEYS):
            setattr(m, "shape_material_" + name, arr(material[:, k], float, grad=True))
        self._finalize_bodies(m, arr)
        self._finalize_joints(m, arr)
        self._finalize_worlds(m, arr)
        return m

    def _finalize_bodies(self, m: Model, arr):
        """Body arrays of `m`, with mass properties from the attached shapes."""
        props = [self.body_mass_properties(b) for b in range(self.body_count)]
        mass = np.array([p[0] for p in props])
        inertia = np.array([p[2] for p in props]).reshape(-1, 3, 3)
        dynamic = mass > 0
        inv_inertia = np.zeros_like(inertia)
        if dynamic.any():
            inv_inertia[dynamic] = np.linalg.pinv(inertia[dynamic])
        m.body_count = self.body_count
        m.body_q0 = arr(self.body_q, wp.transform, (7,), grad=True)
        m.body_qd0 = arr(self.body_qd, wp.spatial_vector, (6,), grad=True)
        m.body_mass = arr(mass, float, grad=True)
        m.body_inv_mass = arr(np.where(dynamic, 1.0 / np.where(dynamic, mass, 1.0), 0.0), float, grad=True)
        m.body_inertia = arr(inertia, wp.mat33, (3, 3), grad=True)
        m.body_inv_inertia = arr(inv_inertia, wp.mat33, (3, 3), grad=True)
        m.body_com = arr([p[1] for p in props], wp.vec3, (3,), grad=True)


def _bounding_radius(kind: int, scale, mesh=None) -> float:
    """Radius [m] of a sphere about the shape's origin containing it; 0 for planes (never bounded)."""
    if kind == SHAPE_MESH:
        return mesh_bounding_radius(mesh[0], float(scale[0]))
    if kind == SHAPE_SPHERE:
        return float(scale[0])
    if kind == SHAPE_BOX:
        return float(np.linalg.norm(scale))
    if kind == SHAPE_CAPSULE:
        return float(scale[0] + scale[1])
    return 0.0


def _shape_mass_properties(kind: int, scale, density: float) -> tuple:
    """(mass [kg], inertia about the shape's centre in its own axes [kg m^2]) of a solid shape; planes: 0."""
    if kind == SHAPE_SPHERE:
        r = scale[0]
        mass = density * 4.0 / 3.0 * math.pi * r ** 3
        return mass, np.eye(3) * 0.4 * mass * r * r
    if kind == SHAPE_BOX:
        hx, hy, hz = scale
        mass = density * 8.0 * hx * hy * hz
        return mass, np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy]) * mass / 3.0
    if kind == SHAPE_CAPSULE:
        r, h = scale[0], scale[1]
        cylinder = density * math.pi * r * r * 2.0 * h
        caps = density * 4.0 / 3.0 * math.pi * r ** 3  # the two hemispheres
        axial = cylinder * r * r / 2.0 + caps * 0.4 * r * r
        # each hemisphere's centre is 3r/8 beyond the cylinder's end: parallel-axis shift folded in
        transverse = cylinder * (r * r / 4.0 + h * h / 3.0) + caps * (0.4 * r * r + h * h + 0.75 * h * r)
        return cylinder + caps, np.diag([transverse, axial, transverse])
    return 0.0, np.zeros((3, 3))


def combine_shapes(kinds, transforms, scales, densities) -> tuple:
    """(mass [kg], centre of mass (3,) [m], inertia about it (3, 3) [kg m^2]) of shapes posed by `transforms`
    (p, q) in a common frame: each tensor rotated into that frame, then moved by the parallel-axis theorem."""
    parts = [(_shape_mass_properties(k, sc, d), t) for k, sc, d, t in zip(kinds, scales, densities, transforms)]
    mass = sum(mp[0] for mp, _ in parts)
    if mass <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(mp[0] * np.asarray(t[:3]) for mp, t in parts) / mass
    inertia = np.zeros((3, 3))
    for (m, local), t in parts:
        rot = matrix_from_quat(t[3:])  # columns: rotated axes
        d = np.asarray(t[:3]) - com
        inertia += rot @ local @ rot.T + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def _mesh_edges(tris: np.ndarray) -> list:
    """Each undirected edge once as (opposite 0, opposite 1 or -1, v0, v1), in order of first appearance."""
    edges: dict = {}
    for t in tris:
        for a, b, c in ((t[0], t[1], t[2]), (t[1], t[2], t[0]), (t[2], t[0], t[1])):
            key = (min(a, b), max(a, b))
            if key in edges:
                edges[key][1] = int(c)
            else:
                edges[key] = [int(c), -1, int(a), int(b)]
    return [tuple(v) for v in edges.values()]
