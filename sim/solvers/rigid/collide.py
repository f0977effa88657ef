"""Narrow phase of rigid-body contact in the kernel language: the contact points of a pair of shapes and the
wrench their forces put on one body of the pair.

A pair (a, b) is taken in canonical order: type(a) < type(b) (sphere < box < capsule < plane), or the same type and
a's shape index lower. Both bodies of a pair evaluate it in that order, each on its own thread, so they compute the
same points and forces to the last bit and receive exactly opposite forces. A pair's candidate contact points
("features") are visited in one loop that shares the two poses and, for two boxes, one separating-axis test:

    sphere-sphere, sphere-box, sphere-capsule, sphere-plane: 1, the sphere's centre against b's distance field;
    box-box: up to 4, the corners of one box's face clipped to the other's (below); none when a face axis
        separates the boxes;
    box-capsule: 11, the box's 8 corners against the capsule, the capsule's 2 end points and its segment's
        point closest to the box against the box;
    box-plane: 8 corners; capsule-plane: 2 end points;
    capsule-capsule: 5, each capsule's 2 end points against the other, and the closest points of the two
        segments when they lie strictly inside both (crossing capsules; at an end, the end point covers it).

Every feature has a signed distance d [m] (negative when penetrating), a unit normal n pointing from b toward a (the
direction of the force on a), and a contact point x [m] midway between the surfaces, where both bodies receive
their equal and opposite forces (so contacts conserve angular momentum). A feature with d < 0 is a contact: its
force is contact_law.contact_force.

Box against box: corners of one box inside the other are not pushed out through the nearest face (a box resting
on a box of the same size has its corners exactly on the edges of the lower box's top face, where "nearest
face" is a coin toss between the top and a side, and a side gives no support; turned a little about the vertical,
its corners leave the lower face altogether). Instead, as in face clipping: the reference face is the face of
either box along whose axis the boxes overlap least (separating-axis test over the 6 face axes); the incident
face is the other box's face most opposed to it. Each of the incident face's 4 corners is moved to the nearest
point of the reference rectangle and back onto the incident plane along the normal, which gives 4 contact points
inside the overlap of the two faces, continuous in the poses, with the local depth; a point that lands off the
incident face (by more than the margin) is dropped. When the least overlap is negative, a face axis separates the
boxes and every such point lies at a positive distance: the pair has no contact. Edge-edge contacts are only
approximated by this.
"""

import kernels as wp

from ...geometry import capsule_sdf, shape_sdf
from ...model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SPHERE
from .contact_law import ContactSettings, PairContext, contact_wrench


@wp.func
def box_corner(pose: wp.transform, half: wp.vec3, k: int):
    """World position of corner k (0..7) of a box: bit 0, 1, 2 of k choose the sign along x, y, z."""
    sx = float((k & 1) * 2 - 1)
    sy = float(((k >> 1) & 1) * 2 - 1)
    sz = float(((k >> 2) & 1) * 2 - 1)
    return wp.transform_point(pose, wp.vec3(half[0] * sx, half[1] * sy, half[2] * sz))


@wp.func
def capsule_end(pose: wp.transform, half_height: float, k: int):
    """World position of end k (0: -y, 1: +y) of a capsule's segment."""
    return wp.transform_point(pose, wp.vec3(0.0, half_height * float(k * 2 - 1), 0.0))


@wp.func
def point_contact(p: wp.vec3, radius: float, type_b: int, pose_b: wp.transform, scale_b: wp.vec3):
    """A sphere of `radius` at p against shape b: (distance [m], normal from b toward p, contact point)."""
    d, n = shape_sdf(type_b, pose_b, scale_b, p)
    d = d - radius
    return d, n, p - n * (radius + 0.5 * d)


@wp.func
def segment_closest_parameter(a: wp.vec3, b: wp.vec3, p: wp.vec3):
    """t in [0, 1] of the point a + t (b - a) closest to p."""
    ab = b - a
    denominator = wp.dot(ab, ab)
    if denominator < 1.0e-12:
        return 0.0
    return wp.clamp(wp.dot(p - a, ab) / denominator, 0.0, 1.0)


@wp.func
def segments_closest_parameters(p0: wp.vec3, p1: wp.vec3, q0: wp.vec3, q1: wp.vec3):
    """(s, t) in [0, 1]^2 of the closest points p0 + s (p1 - p0) and q0 + t (q1 - q0) of two segments."""
    u = p1 - p0
    v = q1 - q0
    w = p0 - q0
    a = wp.dot(u, u)
    b = wp.dot(u, v)
    c = wp.dot(v, v)
    d = wp.dot(u, w)
    e = wp.dot(v, w)
    denominator = a * c - b * b
    s = 0.0
    if denominator > 1.0e-9 * a * c:  # not parallel
        s = wp.clamp((b * e - c * d) / denominator, 0.0, 1.0)
    t = 0.0
    if c > 1.0e-12:
        t = wp.clamp((b * s + e) / c, 0.0, 1.0)
    if a > 1.0e-12:  # s again for the clamped t
        s = wp.clamp((b * t - d) / a, 0.0, 1.0)
    return s, t


@wp.func
def box_closest_point(pose: wp.transform, half: wp.vec3, p: wp.vec3):
    """The point of a solid box closest to the world point p (p itself when inside)."""
    local = wp.transform_point(wp.transform_inverse(pose), p)
    clamped = wp.vec3(wp.clamp(local[0], -half[0], half[0]), wp.clamp(local[1], -half[1], half[1]),
                      wp.clamp(local[2], -half[2], half[2]))
    return wp.transform_point(pose, clamped)


@wp.func
def segment_box_closest(p0: wp.vec3, p1: wp.vec3, pose: wp.transform, half: wp.vec3):
    """A point of segment p0-p1 (nearly) closest to a box: alternating projections between the two convex sets
    from the segment's point closest to the box centre (exact for a segment crossing a face)."""
    t = segment_closest_parameter(p0, p1, wp.transform_get_translation(pose))
    for _ in range(4):
        c = box_closest_point(pose, half, p0 + (p1 - p0) * t)
        t = segment_closest_parameter(p0, p1, c)
    return p0 + (p1 - p0) * t


@wp.func
def box_axes(pose: wp.transform):
    """A box's face axes (local x, y, z in world) as the rows of a matrix."""
    return wp.transpose(wp.quat_to_matrix(wp.transform_get_rotation(pose)))


@wp.func
def box_extent(axes: wp.mat33, half: wp.vec3, u: wp.vec3):
    """Half the length of a box's projection on the unit axis u [m]; the rows of `axes` are its face axes."""
    return half[0] * wp.abs(wp.dot(axes[0], u)) + half[1] * wp.abs(wp.dot(axes[1], u)) + \
        half[2] * wp.abs(wp.dot(axes[2], u))


@wp.func
def box_box_axis(pose_a: wp.transform, half_a: wp.vec3, pose_b: wp.transform, half_b: wp.vec3):
    """(index, overlap [m]) of the face axis of least overlap: 0-2 a's local x, y, z, 3-5 b's; ties go to the
    lower index. A negative overlap separates the boxes."""
    axes_a = box_axes(pose_a)
    axes_b = box_axes(pose_b)
    delta = wp.transform_get_translation(pose_a) - wp.transform_get_translation(pose_b)
    best = float(1.0e30)
    best_axis = int(0)
    for k in range(6):
        u = wp.vec3(0.0, 0.0, 0.0)
        if k < 3:
            u = axes_a[k]
        else:
            u = axes_b[k - 3]
        overlap = box_extent(axes_a, half_a, u) + box_extent(axes_b, half_b, u) - wp.abs(wp.dot(delta, u))
        if overlap < best:
            best = overlap
            best_axis = k
    return best_axis, best


@wp.func
def face_contact(ref_pose: wp.transform, ref_half: wp.vec3, axis: int, inc_pose: wp.transform,
                 inc_half: wp.vec3, k: int, margin: float):
    """Corner k (0..3) of the incident box's face that faces the reference box's face normal to `axis`, moved
    into that face's rectangle: (valid, distance [m], normal from the reference box toward the incident one,
    contact point)."""
    ref_axes = box_axes(ref_pose)
    inc_axes = box_axes(inc_pose)
    ref_center = wp.transform_get_translation(ref_pose)
    inc_center = wp.transform_get_translation(inc_pose)
    n = ref_axes[axis]
    if wp.dot(inc_center - ref_center, n) < 0.0:
        n = -n
    i1 = (axis + 1) % 3
    i2 = (axis + 2) % 3
    u1 = ref_axes[i1]
    u2 = ref_axes[i2]
    face_center = ref_center + n * ref_half[axis]
    # the incident face: the one whose outward normal m is most opposed to n (|n . m| >= 1 / sqrt(3))
    j = int(0)
    best = float(-1.0)
    for c in range(3):
        along = wp.abs(wp.dot(inc_axes[c], n))
        if along > best:
            best = along
            j = c
    m = inc_axes[j]
    if wp.dot(m, n) > 0.0:
        m = -m
    j1 = (j + 1) % 3
    j2 = (j + 2) % 3
    v1 = inc_axes[j1]
    v2 = inc_axes[j2]
    inc_face = inc_center + m * inc_half[j]
    corner = inc_face + v1 * (inc_half[j1] * float((k & 1) * 2 - 1)) + v2 * (inc_half[j2] * float((k >> 1) * 2 - 1))
    # clamp into the reference rectangle, then back onto the incident plane along n
    r = corner - face_center
    q = face_center + u1 * wp.clamp(wp.dot(r, u1), -ref_half[i1], ref_half[i1]) + \
        u2 * wp.clamp(wp.dot(r, u2), -ref_half[i2], ref_half[i2])
    d = wp.dot(inc_face - q, m) / wp.dot(n, m)
    on_face = q + n * d - inc_face
    valid = wp.abs(wp.dot(on_face, v1)) <= inc_half[j1] + margin and \
        wp.abs(wp.dot(on_face, v2)) <= inc_half[j2] + margin
    return valid, d, n, q + n * (0.5 * d)


@wp.func
def box_box_feature(pose_a: wp.transform, half_a: wp.vec3, pose_b: wp.transform, half_b: wp.vec3, axis: int,
                    k: int, margin: float):
    """Contact point k (0..3) of two boxes, clipped against the face of least overlap `axis` (box_box_axis)."""
    if axis < 3:  # a's face is the reference: its normal points toward b
        valid, d, n, x = face_contact(pose_a, half_a, axis, pose_b, half_b, k, margin)
        return valid, d, -n, x
    valid, d, n, x = face_contact(pose_b, half_b, axis - 3, pose_a, half_a, k, margin)
    return valid, d, n, x


@wp.func
def box_capsule_feature(pose_a: wp.transform, half_a: wp.vec3, pose_b: wp.transform, scale_b: wp.vec3, k: int):
    """Box a against capsule b: corners (k < 8), the capsule's end points (8, 9), its point closest to the box."""
    if k < 8:
        d, n, x = point_contact(box_corner(pose_a, half_a, k), 0.0, SHAPE_CAPSULE, pose_b, scale_b)
        return True, d, n, x
    p = wp.vec3(0.0, 0.0, 0.0)
    if k < 10:
        p = capsule_end(pose_b, scale_b[1], k - 8)
    else:
        p = segment_box_closest(capsule_end(pose_b, scale_b[1], 0), capsule_end(pose_b, scale_b[1], 1), pose_a,
                                half_a)
    d, n, x = point_contact(p, scale_b[0], SHAPE_BOX, pose_a, half_a)
    return True, d, -n, x  # the normal from the point's shape (b) toward a


@wp.func
def capsule_capsule_feature(pose_a: wp.transform, scale_a: wp.vec3, pose_b: wp.transform, scale_b: wp.vec3,
                            k: int):
    """End points of a (k 0, 1) against b, of b (2, 3) against a, and the segments' interior closest points (4)."""
    if k < 2:
        d, n, x = point_contact(capsule_end(pose_a, scale_a[1], k), scale_a[0], SHAPE_CAPSULE, pose_b, scale_b)
        return True, d, n, x
    if k < 4:
        d, n, x = point_contact(capsule_end(pose_b, scale_b[1], k - 2), scale_b[0], SHAPE_CAPSULE, pose_a,
                                scale_a)
        return True, d, -n, x
    a0 = capsule_end(pose_a, scale_a[1], 0)
    a1 = capsule_end(pose_a, scale_a[1], 1)
    b0 = capsule_end(pose_b, scale_b[1], 0)
    b1 = capsule_end(pose_b, scale_b[1], 1)
    s, t = segments_closest_parameters(a0, a1, b0, b1)
    interior = s > 1.0e-4 and s < 1.0 - 1.0e-4 and t > 1.0e-4 and t < 1.0 - 1.0e-4
    pa = a0 + (a1 - a0) * s
    pb = b0 + (b1 - b0) * t
    d, n = capsule_sdf(pa - pb, scale_a[0] + scale_b[0], 0.0)  # a sphere about pb through pa, as capsule_sdf
    return interior, d, n, pa - n * (scale_a[0] + 0.5 * d)


@wp.func
def feature_count(type_a: int, type_b: int):
    """Number of candidate contact points of a pair with type_a <= type_b."""
    if type_a == SHAPE_SPHERE:
        if type_b == SHAPE_PLANE or type_b == SHAPE_SPHERE or type_b == SHAPE_BOX or type_b == SHAPE_CAPSULE:
            return 1
        return 0
    if type_a == SHAPE_BOX:
        if type_b == SHAPE_BOX:
            return 4
        if type_b == SHAPE_CAPSULE:
            return 11
        if type_b == SHAPE_PLANE:
            return 8
        return 0
    if type_a == SHAPE_CAPSULE:
        if type_b == SHAPE_CAPSULE:
            return 5
        if type_b == SHAPE_PLANE:
            return 2
    return 0


@wp.func
def pair_feature(type_a: int, pose_a: wp.transform, scale_a: wp.vec3, type_b: int, pose_b: wp.transform,
                 scale_b: wp.vec3, box_axis: int, k: int, margin: float):
    """Candidate contact point k of shapes a and b (type_a <= type_b, k < feature_count; two boxes clip against
    their face of least overlap `box_axis`): (valid, distance [m], normal from b toward a, contact point [m])."""
    if type_a == SHAPE_SPHERE:
        d, n, x = point_contact(wp.transform_get_translation(pose_a), scale_a[0], type_b, pose_b, scale_b)
        return True, d, n, x
    if type_a == SHAPE_BOX:
        if type_b == SHAPE_BOX:
            valid, d, n, x = box_box_feature(pose_a, scale_a, pose_b, scale_b, box_axis, k, margin)
            return valid, d, n, x
        if type_b == SHAPE_CAPSULE:
            valid, d, n, x = box_capsule_feature(pose_a, scale_a, pose_b, scale_b, k)
            return valid, d, n, x
        d, n, x = point_contact(box_corner(pose_a, scale_a, k), 0.0, type_b, pose_b, scale_b)
        return True, d, n, x
    if type_b == SHAPE_CAPSULE:
        valid, d, n, x = capsule_capsule_feature(pose_a, scale_a, pose_b, scale_b, k)
        return valid, d, n, x
    d, n, x = point_contact(capsule_end(pose_a, scale_a[1], k), scale_a[0], type_b, pose_b, scale_b)
    return True, d, n, x


@wp.func
def pair_contacts(ctx: PairContext, body_q: wp.array(dtype=wp.transform),
                  body_qd: wp.array(dtype=wp.spatial_vector), body_com: wp.array(dtype=wp.vec3),
                  settings: ContactSettings, type_a: int, pose_a: wp.transform, scale_a: wp.vec3, type_b: int,
                  pose_b: wp.transform, scale_b: wp.vec3):
    """(touching, wrench on ctx's self body) of shapes a and b in canonical order (type_a <= type_b): whether any
    candidate point penetrates, and the sum of their contact wrenches (zero unless ctx.forces). The points are
    visited in one loop (one copy of the contact law, which keeps the compiled code small); two boxes run their
    separating-axis test once, before it."""
    count = feature_count(type_a, type_b)
    axis = int(0)
    if type_a == SHAPE_BOX and type_b == SHAPE_BOX:
        best, overlap = box_box_axis(pose_a, scale_a, pose_b, scale_b)
        axis = best
        if overlap < 0.0:  # a face axis separates the boxes: every clipped point lies at a positive distance
            count = 0
    touching = bool(False)
    w = wp.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(count):
        valid, d, n, x = pair_feature(type_a, pose_a, scale_a, type_b, pose_b, scale_b, axis, k, settings.margin)
        if valid:
            touching = touching or d < 0.0
            w = w + contact_wrench(ctx, body_q, body_qd, body_com, settings, d, n, x, k)
    return touching, w
