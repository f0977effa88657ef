"""What cloth self-contact's full search (sim/self_contact.py) and its partial searches
(sim/self_contact_partial.py) share: the slot counts and search constants, the pair lists' struct, the primitives'
boxes, the closest point on a triangle and the full search's vertex-triangle pair test. See sim/self_contact.py
for the method."""

import kernels as wp

from .worlds import worlds_interact


def order_free_module(name: str) -> str:
    """The module (`<name>.order_free`) for the kernels of the self-contact module `name` whose results do not
    depend on the order their threads run in, which therefore run on every thread although the module's other
    kernels are run-to-run deterministic (serial on the CPU). A kernel belongs there when each thread writes only
    its own outputs and its atomics are integer counts whose value it does not read, or minima of non-negative,
    non-NaN distances (the same minimum in any order), or slots taken in a list that a later kernel puts in a
    fixed order (sim/self_contact_partial.py): never a float sum."""
    module = f"{name}.order_free"
    wp.set_module_options({"deterministic": wp.DeterministicMode.NOT_GUARANTEED}, module)
    return module

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

VT_SLOTS = 48  # triangles kept per vertex
EE_SLOTS = 48  # edges kept per edge
QUERY_RADIUS = 2.0  # the pair search radius r_q, in thicknesses
GAMMA = 0.4  # fraction of a vertex's distance to its nearest primitive it may move between searches (< 1/2)
#: default thickness as a fraction of a cloth's mean edge length: below the 0.71 edge lengths between a flat
#: grid's vertex and the nearest triangle not containing it, so a cloth at rest touches nothing of its own
DEFAULT_THICKNESS_FRACTION = 0.25
#: the distance the candidate tests give two primitives that never pair: beyond every query radius
NO_PAIR = 1.0e30


@wp.struct
class SelfContactData:
    """Collision primitives and this step's pairs, as the kernels see them.

    tri_indices: the collision triangles' vertices [tri_count, 3] int32 (a subset of Model.tri_indices).
    edge_indices: the collision edges' vertices [edge_count, 2] int32.
    thickness: distance kept between surfaces at each particle [m] [particle_count] (0: not colliding).
    vt_triangle, vt_count: triangles (rows of tri_indices) near each vertex, slot v * VT_SLOTS + k for
        k < vt_count[v] [particle_count * VT_SLOTS], [particle_count] int32.
    ee_edge, ee_count: edges near each edge, slot e * EE_SLOTS + k [edge_count * EE_SLOTS], [edge_count].
    degree: the number of touching pairs (closer than their thickness at the search) each particle
        belongs to [particle_count] (int32): a Jacobi solver scales a pair's correction by 1 / the largest count
        of its vertices, which keeps momentum exact.
    vt_start, ee_start: each pair's separation (this side's closest point minus the other's) at the search
        [m], vec3, one per slot.
    world: each particle's world [particle_count] int32 (Model.particle_world; -1: shared): primitives of two
        different worlds never pair.
    vt_active, ee_active: the vertices and edges with listed pairs, in increasing order, active_count[0] and
        active_count[1] of them [particle_count], [edge_count], [2] int32 (sim/self_contact_active.py): the
        solvers' pair passes run over these.
    """

    tri_indices: wp.array2d(dtype=wp.int32)
    edge_indices: wp.array2d(dtype=wp.int32)
    thickness: wp.array(dtype=float)
    vt_triangle: wp.array(dtype=wp.int32)
    vt_start: wp.array(dtype=wp.vec3)
    vt_count: wp.array(dtype=wp.int32)
    ee_edge: wp.array(dtype=wp.int32)
    ee_start: wp.array(dtype=wp.vec3)
    ee_count: wp.array(dtype=wp.int32)
    degree: wp.array(dtype=wp.int32)
    world: wp.array(dtype=wp.int32)
    vt_active: wp.array(dtype=wp.int32)
    ee_active: wp.array(dtype=wp.int32)
    active_count: wp.array(dtype=wp.int32)


@wp.func
def closest_point_triangle(p: wp.vec3, a: wp.vec3, b: wp.vec3, c: wp.vec3):
    """Barycentric weights (wa, wb, wc) of the point of triangle abc closest to p (Ericson, "Real-Time
    Collision Detection", 5.1.5); differentiable where the closest feature does not change."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return wp.vec3(1.0, 0.0, 0.0)
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return wp.vec3(0.0, 1.0, 0.0)
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return wp.vec3(1.0 - v, v, 0.0)
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return wp.vec3(0.0, 0.0, 1.0)
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return wp.vec3(1.0 - w, 0.0, w)
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return wp.vec3(0.0, 1.0 - w, w)
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return wp.vec3(1.0 - v - w, v, w)


@wp.func
def triangle_separation(x: wp.array(dtype=wp.vec3), v: int, a: int, b: int, c: int):
    """Weights w of the point of triangle (a, b, c) closest to vertex v and the separation u = x_v - (w_a x_a +
    w_b x_b + w_c x_c) [m] at positions x; differentiable where the closest feature does not change."""
    w = closest_point_triangle(x[v], x[a], x[b], x[c])
    return w, x[v] - (x[a] * w[0] + x[b] * w[1] + x[c] * w[2])


@wp.func
def edge_separation(x: wp.array(dtype=wp.vec3), i0: int, i1: int, j0: int, j1: int):
    """Parameters s (on edge i0 i1) and t (on j0 j1) of the edges' closest points and the separation u = the
    closest point on the first minus the one on the second [m] at positions x."""
    st = wp.closest_point_edge_edge(x[i0], x[i1], x[j0], x[j1], 1.0e-12)
    s = st[0]
    t = st[1]
    return s, t, x[i0] * (1.0 - s) + x[i1] * s - x[j0] * (1.0 - t) - x[j1] * t


@wp.func
def vertex_triangle_candidate(x: wp.array(dtype=wp.vec3), data: SelfContactData, v: int, t: int):
    """The candidate test of both searches (full and partial): vertex v's separation u from triangle t at
    positions x [m] and its length, NO_PAIR when the two never pair (v is a corner of t, or they are of two
    different worlds)."""
    a = data.tri_indices[t, 0]
    b = data.tri_indices[t, 1]
    c = data.tri_indices[t, 2]
    if v == a or v == b or v == c or not worlds_interact(data.world[v], data.world[a]):
        return wp.vec3(0.0, 0.0, 0.0), NO_PAIR
    w, u = triangle_separation(x, v, a, b, c)
    return u, wp.length(u)


@wp.func
def edges_apart_along_midline(p0: wp.vec3, p1: wp.vec3, q0: wp.vec3, q1: wp.vec3, radius: float):
    """Whether segments p0 p1 and q0 q1 are, provably, at least `radius` [m] apart: their projections on the
    line through their midpoints are (every point of a segment projects within half its projected length of
    its midpoint's, and two points are at least as far apart as their projections), with a relative margin of
    1e-4 against rounding, so that no pair closer than `radius` is ever refused. Of the edge pairs whose grown
    boxes overlap in the 64 x 64 drop's pile, it refuses a quarter to a half (side-by-side neighbours of one
    sheet), each for a fraction of the exact test's cost."""
    delta = 0.5 * (q0 + q1 - p0 - p1)
    length = wp.length(delta)
    spread = 0.5 * (wp.abs(wp.dot(p1 - p0, delta)) + wp.abs(wp.dot(q1 - q0, delta)))
    return length * length - spread > radius * (1.0 + 1.0e-4) * length


@wp.func
def edge_edge_candidate(x: wp.array(dtype=wp.vec3), data: SelfContactData, e: int, f: int, query_radius: float):
    """The candidate test of both searches: the separation u of edge e from edge f at positions x [m] (e's
    closest point minus f's) and its length, NO_PAIR when they never pair (a shared vertex, or two worlds) or
    are provably at least query_radius apart (edges_apart_along_midline: the exact test skipped)."""
    i0 = data.edge_indices[e, 0]
    i1 = data.edge_indices[e, 1]
    j0 = data.edge_indices[f, 0]
    j1 = data.edge_indices[f, 1]
    if i0 == j0 or i0 == j1 or i1 == j0 or i1 == j1 or not worlds_interact(data.world[i0], data.world[j0]):
        return wp.vec3(0.0, 0.0, 0.0), NO_PAIR
    if edges_apart_along_midline(x[i0], x[i1], x[j0], x[j1], query_radius):
        return wp.vec3(0.0, 0.0, 0.0), NO_PAIR
    s, t, u = edge_separation(x, i0, i1, j0, j1)
    return u, wp.length(u)


@wp.func
def boxes_overlap(lower_a: wp.vec3, upper_a: wp.vec3, lower_b: wp.vec3, upper_b: wp.vec3):
    """Whether boxes a and b overlap (touching counts)."""
    return (lower_a[0] <= upper_b[0] and lower_b[0] <= upper_a[0] and lower_a[1] <= upper_b[1]
            and lower_b[1] <= upper_a[1] and lower_a[2] <= upper_b[2] and lower_b[2] <= upper_a[2])
