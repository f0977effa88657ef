"""SolverSemiImplicit's self-contact forces over this step's vertex-triangle and edge-edge pairs
(sim/self_contact.py): a penalty spring ke (h - d) along the pair's normal, damping kd of the approaching normal
speed and regularised Coulomb friction (kf, mu) of the tangential relative velocity, with sim.contact's ke, kd,
kf and Model.soft_contact_mu. A pair's force f acts on this side's closest point and -f on the other's, spread
over the vertices by their barycentric weights (which sum to 1 on each side): momentum is conserved."""

import kernels as wp


from ...model import ContactParams
from ...self_contact import SelfContactData, contact_normal, edge_edge_pair, vertex_triangle_pair
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


@wp.kernel
def eval_vertex_triangle_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), data: SelfContactData,
                                params: ContactParams, mu: wp.array(dtype=float), f: wp.array(dtype=wp.vec3)):
    """One thread per vertex p listing pairs (data.vt_active, in index order: the same sums as over every
    vertex; dim >= active_count[0]), over its triangles (a, b, c) with the closest point's weights w."""
    if wp.tid() >= data.active_count[0]:
        return
    p = data.vt_active[wp.tid()]
    for k in range(data.vt_count[p]):
        a, b, c, w, u = vertex_triangle_pair(x, data, p, k)
        rel = v[p] - (v[a] * w[0] + v[b] * w[1] + v[c] * w[2])
        force = pair_force(u, rel, 0.5 * (data.thickness[p] + data.thickness[a]), params, mu[0])
        wp.atomic_add(f, p, force)
        wp.atomic_sub(f, a, force * w[0])
        wp.atomic_sub(f, b, force * w[1])
        wp.atomic_sub(f, c, force * w[2])


@wp.kernel
def eval_edge_edge_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), data: SelfContactData,
                          params: ContactParams, mu: wp.array(dtype=float), f: wp.array(dtype=wp.vec3)):
    """One thread per edge (i0, i1) listing pairs (data.ee_active, in index order; dim >= active_count[1]), over
    its edges (j0, j1), weights (1 - s, s) and (1 - t, t)."""
    if wp.tid() >= data.active_count[1]:
        return
    e = data.ee_active[wp.tid()]
    i0 = data.edge_indices[e, 0]
    i1 = data.edge_indices[e, 1]
    for k in range(data.ee_count[e]):
        j0, j1, s, t, u = edge_edge_pair(x, data, e, k)
        rel = v[i0] * (1.0 - s) + v[i1] * s - v[j0] * (1.0 - t) - v[j1] * t
        force = pair_force(u, rel, 0.5 * (data.thickness[i0] + data.thickness[j0]), params, mu[0])
        wp.atomic_add(f, i0, force * (1.0 - s))
        wp.atomic_add(f, i1, force * s)
        wp.atomic_sub(f, j0, force * (1.0 - t))
        wp.atomic_sub(f, j1, force * t)
