"""Collider geometry in the kernel language: signed distance and outward normal of each shape type, and where
a shape is and how fast its surface moves when it is attached to a rigid body.

Shared by the solvers' contact kernels. Distances in metres; negative inside the shape.
"""

import kernels as wp

from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE
from .worlds import element_worlds, world_shape_table

#: Distance reported for points that cannot touch a shape (outside a finite plane's extent).
FAR = wp.constant(1.0e6)
#: How much farther than the contact reach a closed mesh is searched, so that a point inside it is pushed out.
CLOSED_MESH_REACH = wp.constant(4.0)


@wp.func
def sphere_sdf(p: wp.vec3, radius: float):
    """Distance and outward normal of a sphere of `radius` at the origin, in its local frame."""
    l = wp.length(p)
    n = wp.vec3(0.0, 1.0, 0.0)
    if l > 1.0e-9:
        n = p / l
    return l - radius, n


@wp.func
def box_sdf(p: wp.vec3, half: wp.vec3):
    """Distance and outward normal of a box with half extents `half`, centred at the origin."""
    q = wp.vec3(wp.abs(p[0]) - half[0], wp.abs(p[1]) - half[1], wp.abs(p[2]) - half[2])
    outside = wp.vec3(wp.max(q[0], 0.0), wp.max(q[1], 0.0), wp.max(q[2], 0.0))
    lo = wp.length(outside)
    if lo > 0.0:
        n = wp.vec3(wp.sign(p[0]) * outside[0], wp.sign(p[1]) * outside[1], wp.sign(p[2]) * outside[2]) / lo
        return lo, n
    # inside: the nearest face
    if q[0] >= q[1] and q[0] >= q[2]:
        return q[0], wp.vec3(wp.sign(p[0]), 0.0, 0.0)
    if q[1] >= q[2]:
        return q[1], wp.vec3(0.0, wp.sign(p[1]), 0.0)
    return q[2], wp.vec3(0.0, 0.0, wp.sign(p[2]))


@wp.func
def capsule_sdf(p: wp.vec3, radius: float, half_height: float):
    """Distance and outward normal of a capsule along local y (segment +-half_height, swept by radius)."""
    c = wp.vec3(0.0, wp.clamp(p[1], -half_height, half_height), 0.0)
    d, n = sphere_sdf(p - c, radius)
    return d, n


@wp.func
def plane_sdf(p: wp.vec3, width: float, length: float):
    """Distance above the local x-z plane (normal +y); beyond a finite plane's extent, FAR."""
    if (width > 0.0 and wp.abs(p[0]) > width) or (length > 0.0 and wp.abs(p[2]) > length):
        return FAR, wp.vec3(0.0, 1.0, 0.0)
    return p[1], wp.vec3(0.0, 1.0, 0.0)


@wp.func
def shape_sdf(shape_type: int, pose: wp.transform, scale: wp.vec3, x: wp.vec3):
    """Signed distance [m] of world point `x` to a shape and the shape's outward normal there (world frame)."""
    d, n = local_shape_sdf(shape_type, scale, wp.transform_point(wp.transform_inverse(pose), x))
    return d, wp.quat_rotate(wp.transform_get_rotation(pose), n)


@wp.func
def local_shape_sdf(shape_type: int, scale: wp.vec3, local: wp.vec3):
    """Signed distance [m] of a primitive shape at point `local` of its own frame, and its outward normal in
    that frame (FAR for a mesh: see mesh_sdf)."""
    d = FAR
    n = wp.vec3(0.0, 1.0, 0.0)
    if shape_type == SHAPE_SPHERE:
        d, n = sphere_sdf(local, scale[0])
    elif shape_type == SHAPE_BOX:
        d, n = box_sdf(local, scale)
    elif shape_type == SHAPE_CAPSULE:
        d, n = capsule_sdf(local, scale[0], scale[1])
    elif shape_type == SHAPE_PLANE:
        d, n = plane_sdf(local, scale[0], scale[1])
    return d, n


@wp.func
def mesh_sdf(mesh: wp.uint64, closed: int, p: wp.vec3, scale: float, max_dist: float):
    """Distance and outward normal of a triangle mesh (BVH `mesh`, vertices in the shape frame before `scale`)
    at local point p [m]; (FAR, +y) when no face lies within max_dist [m] (CLOSED_MESH_REACH times that for a
    closed mesh: an unbounded search costs six times as much, and only a point that tunnelled is deeper).

    An open mesh (closed = 0) is a two-sided surface: the distance is unsigned and the normal points from the
    closest surface point to p. A closed, consistently oriented mesh is a solid: inside points get a negative
    distance (the sign of the closest face's normal) and the normal points out. Differentiable with respect to p
    through the closest point's barycentric coordinates (mesh_query_point's adjoint)."""
    q = p / scale
    if closed != 0:  # searched farther: a point up to CLOSED_MESH_REACH times max_dist inside is pushed out
        query = wp.mesh_query_point_sign_normal(mesh, q, max_dist * CLOSED_MESH_REACH / scale)
    else:
        query = wp.mesh_query_point_no_sign(mesh, q, max_dist / scale)
    if not query.result:
        return FAR, wp.vec3(0.0, 1.0, 0.0)
    delta = q - wp.mesh_eval_position(mesh, query.face, query.u, query.v)
    l = wp.length(delta)
    n = wp.mesh_eval_face_normal(mesh, query.face)
    if l > 1.0e-9:
        n = delta / l
    d = l * scale
    if closed != 0 and query.sign < 0.0:
        d = -d
        n = -n
    return d, n


@wp.struct
class ShapeData:
    """Colliders as the particle contact kernels see them.

    type: SHAPE_* [shape_count] int32; transform: pose in world for static shapes, in the body frame for shapes
    attached to a body [shape_count]; scale: size [m] [shape_count] vec3; body: body index or -1 [shape_count]
    int32. body_q (body poses, transform), body_qd (spatial velocities (angular [rad/s], linear velocity of the
    centre of mass [m/s]), world frame) and body_com (centre of mass in the body frame [m], vec3): [body_count],
    read only for shapes with body >= 0, so they may be empty when there are no bodies. mesh: BVH id of each
    mesh shape (0 for others) [shape_count] uint64; mesh_closed: 1 for a closed, consistently oriented mesh
    (a solid), 0 for a two-sided surface [shape_count] int32. pose, inverse: each shape's world pose this step
    and its inverse [shape_count] transform, and bound: the radius [m] of a sphere about the shape's origin that
    holds the whole shape, -1 for an unbounded one (a plane, a mesh) [shape_count] float; all three computed
    once per step by `place_shapes` (shape_data), so that a particle-shape pair does not
    recompute them and a pair beyond a shape's bound stops before any rotation (most pairs of a scene).
    particle_world: each particle's world [particle_count] int32 (-1: shared); world_shapes: the shapes a particle
    of world w meets, row w + 1, then -1 [world_count + 1, slots] int32 (sim.worlds.world_shape_table): contact
    kernels launch over (particle, slot), so that N worlds cost N times one world's pairs, not N^2.
    """

    type: wp.array(dtype=wp.int32)
    transform: wp.array(dtype=wp.transform)
    scale: wp.array(dtype=wp.vec3)
    body: wp.array(dtype=wp.int32)
    body_q: wp.array(dtype=wp.transform)
    body_qd: wp.array(dtype=wp.spatial_vector)
    body_com: wp.array(dtype=wp.vec3)
    mesh: wp.array(dtype=wp.uint64)
    mesh_closed: wp.array(dtype=wp.int32)
    pose: wp.array(dtype=wp.transform)
    inverse: wp.array(dtype=wp.transform)
    bound: wp.array(dtype=float)
    particle_world: wp.array(dtype=wp.int32)
    world_shapes: wp.array2d(dtype=wp.int32)


@wp.func
def shape_bound(shape_type: int, scale: wp.vec3):
    """Radius [m] of a sphere about a shape's origin that holds the shape; -1 for an unbounded one (a plane's
    distance keeps falling below it however finite its extent; a mesh's vertices are not looked at)."""
    if shape_type == SHAPE_SPHERE:
        return scale[0]
    if shape_type == SHAPE_BOX:
        return wp.length(scale)
    if shape_type == SHAPE_CAPSULE:
        return scale[0] + scale[1]
    return -1.0


@wp.func
def attached_pose(transform: wp.transform, b: int, body_q: wp.array(dtype=wp.transform)):
    """World pose of a shape with body-frame `transform` on body b (b < 0: static, `transform` is its pose)."""
    if b >= 0:
        return wp.transform_multiply(body_q[b], transform)
    return transform


@wp.kernel
def place_shapes(transform: wp.array(dtype=wp.transform), body: wp.array(dtype=wp.int32),
                 body_q: wp.array(dtype=wp.transform), shape_type: wp.array(dtype=wp.int32),
                 scale: wp.array(dtype=wp.vec3), pose: wp.array(dtype=wp.transform),
                 inverse: wp.array(dtype=wp.transform), bound: wp.array(dtype=float)):
    """Each shape's world pose (at its body's pose body_q when it has one), its inverse and its bound
    (shape_bound), one thread per shape [shape_count]: what every particle-shape pair of a step reads. The bound
    has no gradient: it only skips pairs whose contact is zero in a neighbourhood (the slack of beyond_bound)."""
    s = wp.tid()
    world = attached_pose(transform[s], body[s], body_q)
    pose[s] = world
    inverse[s] = wp.transform_inverse(world)
    bound[s] = shape_bound(shape_type[s], scale[s])


@wp.func
def shape_of_slot(shapes: ShapeData, p: int, k: int):
    """The shape in contact slot k of particle p (its world's shapes and the shared ones), -1 for none."""
    return shapes.world_shapes[shapes.particle_world[p] + 1, k]


@wp.func
def body_point_velocity(body_q: wp.transform, body_qd: wp.spatial_vector, body_com: wp.vec3, x: wp.vec3):
    """Velocity [m/s] of the world point x moving with a body: v_com + w x (x - com)."""
    com = wp.transform_point(body_q, body_com)
    return wp.spatial_bottom(body_qd) + wp.cross(wp.spatial_top(body_qd), x - com)


@wp.func
def shape_point_velocity(shapes: ShapeData, s: int, x: wp.vec3):
    """Velocity [m/s] of the world point x carried by shape s: zero for static shapes."""
    b = shapes.body[s]
    if b >= 0:
        return body_point_velocity(shapes.body_q[b], shapes.body_qd[b], shapes.body_com[b], x)
    return wp.vec3(0.0, 0.0, 0.0)


@wp.func
def beyond_bound(shapes: ShapeData, s: int, x: wp.vec3, reach: float):
    """Whether world point `x` is farther than `reach` [m] from every point of shape s, by its bound sphere
    (no rotation: a few operations), or for a plane by its height above the plane (one rotation). Conservative:
    the slack covers the rounding of the exact distance, which subtracts coordinates of size |x| and |origin|
    (1e-5 of them, some 80 float epsilons). A point below a plane or inside its reach is never skipped."""
    r = shapes.bound[s]
    pose = shapes.pose[s]
    origin = wp.transform_get_translation(pose)
    gap = x - origin
    size = wp.abs(x[0]) + wp.abs(x[1]) + wp.abs(x[2]) + wp.abs(origin[0]) + wp.abs(origin[1]) + wp.abs(origin[2])
    slack = 1.0e-5 * size + 1.0e-6
    if r < 0.0:
        if shapes.type[s] != SHAPE_PLANE:
            return False
        # a plane (finite or not) is never nearer than the height above its infinite plane: one rotation of +y
        # instead of the point into the plane's frame and the normal back (the ground's pairs in most scenes)
        normal = wp.quat_rotate(wp.transform_get_rotation(pose), wp.vec3(0.0, 1.0, 0.0))
        return wp.dot(gap, normal) > reach + slack
    limit = r + reach + slack
    return wp.dot(gap, gap) > limit * limit


@wp.func
def collider_sdf(shapes: ShapeData, s: int, x: wp.vec3, reach: float):
    """Signed distance [m] of world point `x` to collider s (primitive or mesh, at its body's pose when it has
    one) and the outward normal there (world frame). `reach` [m]: the largest distance the caller acts on;
    a point farther than that from the shape may report FAR (+y normal)."""
    if beyond_bound(shapes, s, x, reach):
        return FAR, wp.vec3(0.0, 1.0, 0.0)
    kind = shapes.type[s]
    local = wp.transform_point(shapes.inverse[s], x)
    if kind == SHAPE_MESH:
        d, n = mesh_sdf(shapes.mesh[s], shapes.mesh_closed[s], local, shapes.scale[s][0], reach)
        return d, wp.quat_rotate(wp.transform_get_rotation(shapes.pose[s]), n)
    d, n = local_shape_sdf(kind, shapes.scale[s], local)
    return d, wp.quat_rotate(wp.transform_get_rotation(shapes.pose[s]), n)


@wp.func
def dihedral_angle_gradients(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3):
    """The bending angle of edge x2-x3 and its gradient, for both solvers.

    (x0, x1, x2, x3) = (opposite 0, opposite 1, edge vertex 0, edge vertex 1): the signed angle [rad] between
    the normals of triangles (x0, x2, x3) and (x1, x3, x2) about x3 - x2 (ModelBuilder's convention, zero for a
    flat cloth), and d(angle)/dx of each vertex [rad/m] in Bridson et al.'s closed form (they sum to zero).
    Returns (angle, d0, d1, d2, d3, ok); ok is False for a degenerate hinge, with zero gradients.
    """
    n1 = wp.cross(x2 - x0, x3 - x0)
    n2 = wp.cross(x3 - x1, x2 - x1)
    n1_sq = wp.dot(n1, n1)
    n2_sq = wp.dot(n2, n2)
    edge = x3 - x2
    edge_length = wp.length(edge)
    zero = wp.vec3()
    if n1_sq < 1.0e-20 or n2_sq < 1.0e-20 or edge_length < 1.0e-9:
        return 0.0, zero, zero, zero, zero, False
    e_hat = edge / edge_length
    angle = wp.atan2(wp.dot(wp.cross(n1, n2), e_hat), wp.dot(n1, n2))
    m1 = n1 / n1_sq
    m2 = n2 / n2_sq
    d0 = m1 * (-edge_length)
    d1 = m2 * (-edge_length)
    d2 = -(m1 * wp.dot(x0 - x3, e_hat) + m2 * wp.dot(x1 - x3, e_hat))
    d3 = -(m1 * wp.dot(x2 - x0, e_hat) + m2 * wp.dot(x2 - x1, e_hat))
    return angle, d0, d1, d2, d3, True


def shape_data(model, state=None, scratch: dict | None = None) -> ShapeData:
    """The colliders of `model` for the particle contact kernels; shapes attached to bodies are placed at
    `state.body_q` / move with `state.body_qd` (the model's initial body state when `state` is None or has none).
    Launches place_shapes (on the Tape when one records, so gradients reach body_q and shape_transform): call
    it once per step, after the bodies moved. `scratch`: a dict the caller keeps from step to step, whose
    buffers are reused when no gradient is needed (one allocation less per array and step)."""
    s = ShapeData()
    s.type = model.shape_type
    s.transform = model.shape_transform
    s.scale = model.shape_scale
    s.body = model.shape_body
    s.body_q = getattr(state, "body_q", None)
    s.body_qd = getattr(state, "body_qd", None)
    if s.body_q is None:
        s.body_q = model.body_q0
    if s.body_qd is None:
        s.body_qd = model.body_qd0
    s.body_com = model.body_com
    count = model.shape_count
    grad = bool(model.requires_grad or getattr(s.body_q, "requires_grad", False)
                or getattr(model.shape_transform, "requires_grad", False))
    if scratch is not None and not grad:  # no Tape: the caller's buffers, rewritten every step
        if scratch.get("pose") is None or scratch["pose"].shape[0] != count:
            scratch.update({name: wp.zeros(count, dtype=dtype, device=model.device)
                            for name, dtype in (("pose", wp.transform), ("inverse", wp.transform),
                                                ("bound", float))})
        s.pose, s.inverse, s.bound = scratch["pose"], scratch["inverse"], scratch["bound"]
    else:  # fresh arrays, so that a Tape sees every step's poses
        s.pose, s.inverse, s.bound = (wp.zeros(count, dtype=dtype, device=model.device, requires_grad=grad)
                                      for dtype in (wp.transform, wp.transform, float))
    if count:
        wp.launch(place_shapes, dim=count, device=model.device,
                  inputs=[s.transform, s.body, s.body_q, s.type, s.scale], outputs=[s.pose, s.inverse, s.bound])
    s.mesh = model.shape_mesh_id
    s.mesh_closed = model.shape_mesh_closed
    s.particle_world = element_worlds(model, "particle", model.particle_count)
    s.world_shapes = world_shape_table(model)
    return s
