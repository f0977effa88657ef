"""SolverXPBD's self-contact corrections: one Jacobi pass over this step's vertex-triangle and edge-edge pairs
(sim/self_contact.py) per iteration, added into the iteration's contact corrections.

A pair is a relative position r = (this side's closest point) - (the other side's), a combination of its four
vertices with barycentric weights that sum to 1 on each side. A pair closer than its thickness h gets the
change dr = n (h - d) minus its tangential slip since the step's start (all of it below Coulomb's limit
mu (h - d), static friction; that much of it above), spread over the vertices by inverse mass and weight
(dx_k = +-w_k m_k^-1 dr / sum_k w_k^2 m_k^-1): momentum is conserved and r changes by exactly dr. Jacobi
share: each pair's correction is scaled by 1 / the largest pair count (SelfContactData.degree) of its vertices,
the same factor for its four vertices, so momentum stays exact; the counts are those of pairs touching in the
previous iteration (at the step's start for the first), so the share follows the contacts that act.

Most kept pairs are farther apart than their thickness (they are kept for what may happen before the next
search), so each iteration first skips, exactly, every pair that cannot touch: a pair's distance changes by at
most the largest displacement of a vertex on each side, so a pair at distance d0 at the step's predicted
positions (x + v dt + a dt^2, where the first iteration starts) whose sides moved by at most m1 and m2 since
then is still apart when d0 - m1 - m2 >= h. The test reads four floats where the closest points cost a
projection; measured from the prediction rather than from the step's start, m1 and m2 are the iterations'
corrections only, not the step's motion: in the 64 x 64 pile it skips 2/3 of the pairs measured from the start,
most of them from the prediction (the passes cost 27% less, one more pass over the pairs per step included).
A skipped pair would have contributed nothing, its gradient included.
"""

import kernels as wp


from ...self_contact import (EE_SLOTS, VT_SLOTS, SelfContactData, contact_normal, edge_edge_pair,
                             order_free_module, vertex_triangle_pair)

# Run-to-run deterministic (each kernel runs thread index by thread index on the CPU, in one order whatever the
# thread count): the passes add corrections into shared vertices by float atomics, and with two threads the 64 x 64
# drop's positions differed from run to run.
wp.set_module_options({"deterministic": wp.DeterministicMode.RUN_TO_RUN})
# the slacks and displacements are order-free (each thread writes its own): on every thread
ORDER_FREE = order_free_module(__name__)

#: relative slack of the skip test against rounding in the distances (a pair within it is solved, not skipped)
SKIP_SLACK = 1.0e-4


@wp.kernel(module=ORDER_FREE)
def pair_start_distances(x: wp.array(dtype=wp.vec3), data: SelfContactData, vt_slack: wp.array(dtype=float),
                         ee_slack: wp.array(dtype=float)):
    """Each pair's slack [m] at positions x (the step's prediction): its distance less its thickness h (less
    SKIP_SLACK h against rounding), slot by slot (vertex-triangle slots of the tid-th vertex listing pairs,
    then edge-edge slots of the tid-th edge). dim >= max(data.active_count). Not differentiated: the slacks only
    decide which pairs are skipped."""
    tid = wp.tid()
    if tid < data.active_count[0]:
        i = data.vt_active[tid]
        for k in range(data.vt_count[i]):
            a, b, c, w, u = vertex_triangle_pair(x, data, i, k)
            h = 0.5 * (data.thickness[i] + data.thickness[a])
            vt_slack[i * VT_SLOTS + k] = wp.length(u) - h * (1.0 + SKIP_SLACK)
    if tid < data.active_count[1]:
        e = data.ee_active[tid]
        for k in range(data.ee_count[e]):
            j0, j1, s, t, u = edge_edge_pair(x, data, e, k)
            h = 0.5 * (data.thickness[data.edge_indices[e, 0]] + data.thickness[j0])
            ee_slack[e * EE_SLOTS + k] = wp.length(u) - h * (1.0 + SKIP_SLACK)


@wp.kernel(module=ORDER_FREE)
def displacements(x: wp.array(dtype=wp.vec3), x_reference: wp.array(dtype=wp.vec3), moved: wp.array(dtype=float)):
    """moved[i] = |x_i - x_reference_i| [m]: how far each vertex moved since the positions where the pairs'
    slacks were measured (the step's prediction). Not differentiated."""
    i = wp.tid()
    moved[i] = wp.length(x[i] - x_reference[i])


@wp.kernel(module=ORDER_FREE)
def primitive_displacements(moved: wp.array(dtype=float), data: SelfContactData,
                            moved_triangle: wp.array(dtype=float), moved_edge: wp.array(dtype=float)):
    """The largest displacement of each triangle's and edge's vertices [m] (displacements): a pass reads one
    number for the other side of a pair. dim = max(tri_count, edge_count). Not differentiated."""
    i = wp.tid()
    if i < data.tri_indices.shape[0]:
        moved_triangle[i] = wp.max(wp.max(moved[data.tri_indices[i, 0]], moved[data.tri_indices[i, 1]]),
                                   moved[data.tri_indices[i, 2]])
    if i < data.edge_indices.shape[0]:
        moved_edge[i] = wp.max(moved[data.edge_indices[i, 0]], moved[data.edge_indices[i, 1]])


@wp.func
def cannot_touch(slack: float, moved_a: float, moved_b: float):
    """Whether a pair with `slack` [m] at the step's prediction (pair_start_distances), whose sides moved by at
    most moved_a and moved_b [m] since, is still farther apart than its thickness (the module docstring)."""
    return slack - moved_a - moved_b > 0.0


@wp.func
def pair_change(u: wp.vec3, u_start: wp.vec3, slip: wp.vec3, h: float, mu: float):
    """The change dr [m] of a pair's relative position u (u_start at the step's start; slip: the relative
    motion of its two material points since then) that restores the thickness h, with positional friction;
    and whether the pair touches."""
    n, d = contact_normal(u, u_start)
    depth = h - d
    if depth <= 0.0:
        return wp.vec3(0.0, 0.0, 0.0), False
    dr = n * depth
    moved = slip + dr
    tangential = moved - n * wp.dot(moved, n)
    limit = mu * depth
    if limit > 0.0:
        length = wp.length(tangential)
        if length > limit:
            dr = dr - tangential * (limit / length)
        else:
            dr = dr - tangential  # no division: its derivative holds down to zero slip
    return dr, True


@wp.func
def pair_share(count: wp.array(dtype=wp.int32), i: int, j: int, k: int, l: int):
    """1 / the largest touching-pair count of the four vertices: the pair's Jacobi share."""
    d = wp.max(wp.max(count[i], count[j]), wp.max(count[k], count[l]))
    return 1.0 / float(wp.max(d, 1))


@wp.kernel
def solve_vertex_triangle_contacts(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3),
                                   inv_mass: wp.array(dtype=float), data: SelfContactData,
                                   friction: wp.array(dtype=float), count: wp.array(dtype=wp.int32),
                                   vt_slack: wp.array(dtype=float), ee_slack: wp.array(dtype=float),
                                   moved: wp.array(dtype=float), moved_triangle: wp.array(dtype=float),
                                   moved_edge: wp.array(dtype=float), delta: wp.array(dtype=wp.vec3),
                                   touching: wp.array(dtype=wp.int32)):
    """One thread per vertex v listing pairs (data.vt_active; dim >= active_count[0]), over its triangles
    (a, b, c): r = x_v - (wa x_a + wb x_b + wc x_c), skipping the pairs that cannot touch (vt_slack:
    pair_start_distances; moved, moved_triangle: displacements). The vertex's own corrections and count are
    summed here and added once (atomics are the kernel's main cost on the CPU)."""
    if wp.tid() >= data.active_count[0]:
        return
    v = data.vt_active[wp.tid()]
    own = wp.vec3(0.0, 0.0, 0.0)
    own_count = int(0)
    for k in range(data.vt_count[v]):
        if cannot_touch(vt_slack[v * VT_SLOTS + k], moved[v], moved_triangle[data.vt_triangle[v * VT_SLOTS + k]]):
            continue
        a, b, c, w, u = vertex_triangle_pair(x, data, v, k)
        u_start = data.vt_start[v * VT_SLOTS + k]
        # relative motion of the touching material points since the step's start (weights held fixed)
        slip = x[v] - x_start[v] - ((x[a] - x_start[a]) * w[0] + (x[b] - x_start[b]) * w[1]
                                    + (x[c] - x_start[c]) * w[2])
        h = 0.5 * (data.thickness[v] + data.thickness[a])
        dr, active = pair_change(u, u_start, slip, h, friction[0])
        denom = inv_mass[v] + inv_mass[a] * w[0] * w[0] + inv_mass[b] * w[1] * w[1] + inv_mass[c] * w[2] * w[2]
        if active and denom > 0.0:
            own_count = own_count + 1
            wp.atomic_add(touching, a, 1)
            wp.atomic_add(touching, b, 1)
            wp.atomic_add(touching, c, 1)
            s = dr * (pair_share(count, v, a, b, c) / denom)
            own = own + s * inv_mass[v]
            wp.atomic_add(delta, a, s * (-inv_mass[a] * w[0]))
            wp.atomic_add(delta, b, s * (-inv_mass[b] * w[1]))
            wp.atomic_add(delta, c, s * (-inv_mass[c] * w[2]))
    if own_count > 0:
        wp.atomic_add(touching, v, own_count)
        wp.atomic_add(delta, v, own)


@wp.kernel
def solve_edge_edge_contacts(x: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3),
                             inv_mass: wp.array(dtype=float), data: SelfContactData, friction: wp.array(dtype=float),
                             count: wp.array(dtype=wp.int32), vt_slack: wp.array(dtype=float),
                             ee_slack: wp.array(dtype=float), moved: wp.array(dtype=float),
                             moved_triangle: wp.array(dtype=float), moved_edge: wp.array(dtype=float),
                             delta: wp.array(dtype=wp.vec3), touching: wp.array(dtype=wp.int32)):
    """One thread per edge (i0, i1) listing pairs (data.ee_active), over its edges (j0, j1): r = the closest
    points' difference, weights
    (1 - s, s) and (1 - t, t), skipping the pairs that cannot touch (as solve_vertex_triangle_contacts). The
    edge's own corrections and counts are summed here and added once."""
    if wp.tid() >= data.active_count[1]:
        return
    e = data.ee_active[wp.tid()]
    i0 = data.edge_indices[e, 0]
    i1 = data.edge_indices[e, 1]
    own0 = wp.vec3(0.0, 0.0, 0.0)
    own1 = wp.vec3(0.0, 0.0, 0.0)
    own_count = int(0)
    moved_e = moved_edge[e]
    for k in range(data.ee_count[e]):
        if cannot_touch(ee_slack[e * EE_SLOTS + k], moved_e, moved_edge[data.ee_edge[e * EE_SLOTS + k]]):
            continue
        j0, j1, s, t, u = edge_edge_pair(x, data, e, k)
        u_start = data.ee_start[e * EE_SLOTS + k]
        h = 0.5 * (data.thickness[i0] + data.thickness[j0])
        slip = (x[i0] - x_start[i0]) * (1.0 - s) + (x[i1] - x_start[i1]) * s - (x[j0] - x_start[j0]) * (1.0 - t) \
            - (x[j1] - x_start[j1]) * t
        dr, active = pair_change(u, u_start, slip, h, friction[0])
        denom = inv_mass[i0] * (1.0 - s) * (1.0 - s) + inv_mass[i1] * s * s + inv_mass[j0] * (1.0 - t) * (1.0 - t) \
            + inv_mass[j1] * t * t
        if active and denom > 0.0:
            own_count = own_count + 1
            wp.atomic_add(touching, j0, 1)
            wp.atomic_add(touching, j1, 1)
            g = dr * (pair_share(count, i0, i1, j0, j1) / denom)
            own0 = own0 + g * (inv_mass[i0] * (1.0 - s))
            own1 = own1 + g * (inv_mass[i1] * s)
            wp.atomic_add(delta, j0, g * (-inv_mass[j0] * (1.0 - t)))
            wp.atomic_add(delta, j1, g * (-inv_mass[j1] * t))
    if own_count > 0:
        wp.atomic_add(touching, i0, own_count)
        wp.atomic_add(touching, i1, own_count)
        wp.atomic_add(delta, i0, own0)
        wp.atomic_add(delta, i1, own1)
