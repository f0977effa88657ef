"""SolverSemiImplicit's self-contact forces over this step's vertex-triangle and edge-edge pairs
(sim/self_contact.py): a penalty spring ke (h - d) along the pair's normal, damping kd of the approaching normal
speed and regularised Coulomb friction (kf, mu) of the tangential relative velocity, with sim.contact's ke, kd,
kf and Model.soft_contact_mu. A pair's force f acts on this side's closest point and -f on the other's, spread
over the vertices by their barycentric weights (which sum to 1 on each side): momentum is conserved."""

import kernels as wp


from ...model import ContactParams
from ...self_contact import (EE_SLOTS, VT_SLOTS, SelfContactData, contact_normal, edge_edge_pair,
                             vertex_triangle_pair)
from .kernels import friction_force

# Run-to-run deterministic (each kernel runs thread index by thread index on the CPU, in one order whatever the
# thread count): the forces are added into shared vertices by float atomics, and with two threads the 64 x 64 drop's
# positions differed from run to run.
wp.set_module_options({"deterministic": wp.DeterministicMode.RUN_TO_RUN})


@wp.func
def pair_force(u: wp.vec3, relative_velocity: wp.vec3, h: float, params: ContactParams, mu: float):
    """Force [N] on this side of a pair at separation u [m] (this side's closest point minus the other's)
    moving apart at relative_velocity [m/s]; zero beyond the thickness h [m]."""
    n, d = contact_normal(u, u)
    depth = h - d
    if depth <= 0.0:
        return wp.vec3(0.0, 0.0, 0.0)
    vn = wp.dot(relative_velocity, n)
    fn = params.ke * depth
    fd = -params.kd * wp.min(vn, 0.0)
    return n * (fn + fd) + friction_force(relative_velocity - n * vn, fn, params.kf, mu)


#: relative margin of the skip test against rounding in the distances (a pair within it is computed, not skipped)
SKIP_SLACK = 1.0e-4


@wp.func
def cannot_touch(u_start: wp.vec3, h: float, offset_a: float, offset_b: float):
    """Whether a pair whose separation at the search was u_start [m], with sides whose vertices are at most
    offset_a and offset_b [m] from their search positions relative to the drift (SelfContact.offsets_at), is
    still farther apart than its thickness h [m]: its force is then zero, and skipping it changes nothing."""
    return wp.length(u_start) - offset_a - offset_b > h * (1.0 + SKIP_SLACK)


@wp.func
def vertex_triangle_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), data: SelfContactData,
                           offset: wp.array(dtype=float), params: ContactParams, mu: float,
                           f: wp.array(dtype=wp.vec3), p: int):
    """The forces of vertex p's pairs with its triangles (a, b, c), the closest point's weights w."""
    skip = offset.shape[0] > 0
    for k in range(data.vt_count[p]):
        t = data.vt_triangle[p * VT_SLOTS + k]
        h = 0.5 * (data.thickness[p] + data.thickness[data.tri_indices[t, 0]])
        if skip:
            corners = wp.max(wp.max(offset[data.tri_indices[t, 0]], offset[data.tri_indices[t, 1]]),
                             offset[data.tri_indices[t, 2]])
            if cannot_touch(data.vt_start[p * VT_SLOTS + k], h, offset[p], corners):
                continue
        a, b, c, w, u = vertex_triangle_pair(x, data, p, k)
        rel = v[p] - (v[a] * w[0] + v[b] * w[1] + v[c] * w[2])
        force = pair_force(u, rel, h, params, mu)
        wp.atomic_add(f, p, force)
        wp.atomic_sub(f, a, force * w[0])
        wp.atomic_sub(f, b, force * w[1])
        wp.atomic_sub(f, c, force * w[2])


@wp.func
def edge_edge_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), data: SelfContactData,
                     offset: wp.array(dtype=float), params: ContactParams, mu: float, f: wp.array(dtype=wp.vec3),
                     e: int):
    """The forces of edge e = (i0, i1)'s pairs with its edges (j0, j1), weights (1 - s, s) and (1 - t, t)."""
    skip = offset.shape[0] > 0
    i0 = data.edge_indices[e, 0]
    i1 = data.edge_indices[e, 1]
    for k in range(data.ee_count[e]):
        other = data.ee_edge[e * EE_SLOTS + k]
        h = 0.5 * (data.thickness[i0] + data.thickness[data.edge_indices[other, 0]])
        if skip:
            if cannot_touch(data.ee_start[e * EE_SLOTS + k], h, wp.max(offset[i0], offset[i1]),
                            wp.max(offset[data.edge_indices[other, 0]], offset[data.edge_indices[other, 1]])):
                continue
        j0, j1, s, t, u = edge_edge_pair(x, data, e, k)
        rel = v[i0] * (1.0 - s) + v[i1] * s - v[j0] * (1.0 - t) - v[j1] * t
        force = pair_force(u, rel, h, params, mu)
        wp.atomic_add(f, i0, force * (1.0 - s))
        wp.atomic_add(f, i1, force * s)
        wp.atomic_sub(f, j0, force * (1.0 - t))
        wp.atomic_sub(f, j1, force * t)


@wp.kernel
def eval_self_contact_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), data: SelfContactData,
                             offset: wp.array(dtype=float), params: ContactParams, mu: wp.array(dtype=float),
                             vertices: int, f: wp.array(dtype=wp.vec3)):
    """Every listed pair's force, in one launch of dim = vertices + edges: thread i < vertices takes the i-th
    vertex listing pairs (data.vt_active, in index order: the same sums as over every vertex), the others the
    edges (data.ee_active); a thread past active_count does nothing. With `offset` not empty
    (SelfContact.offsets_at), the pairs that cannot touch (cannot_touch: most of the listed ones, kept for
    what may happen before the next search) are skipped without computing their closest points."""
    i = wp.tid()
    if i < vertices:
        if i < data.active_count[0]:
            vertex_triangle_forces(x, v, data, offset, params, mu[0], f, data.vt_active[i])
    elif i - vertices < data.active_count[1]:
        edge_edge_forces(x, v, data, offset, params, mu[0], f, data.ee_active[i - vertices])
