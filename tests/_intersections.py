"""Independent geometric checks of contact results, in float64 numpy (no solver code): exact counts of
intersecting triangle pairs, of segments crossing triangles, and of points inside a closed mesh.

Two non-coplanar triangles intersect exactly when an edge of one crosses the other; a segment crosses a triangle
when its ends lie strictly on opposite sides of the triangle's plane and the line through it passes strictly
inside the three edges (signs of orient3d determinants). Pairs sharing a vertex touch by construction and are
not counted. The broad phase is a sweep along x over bounding boxes, then a full box test.
"""

import numpy as np


def _orient(a, b, c, d):
    """Signed volume (times 6) of the tetrahedra (a, b, c, d), row by row."""
    return np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a)


def segments_cross_triangles(p, q, a, b, c) -> np.ndarray:
    """Whether segment i (p[i], q[i]) crosses triangle i (a[i], b[i], c[i]) strictly, bool [n]."""
    s1, s2 = _orient(a, b, c, p), _orient(a, b, c, q)
    straddles = s1 * s2 < 0.0
    e1, e2, e3 = _orient(p, q, a, b), _orient(p, q, b, c), _orient(p, q, c, a)
    inside = ((e1 > 0) & (e2 > 0) & (e3 > 0)) | ((e1 < 0) & (e2 < 0) & (e3 < 0))
    return straddles & inside


def box_pairs(lo_a, hi_a, lo_b, hi_b, *, same: bool = False) -> tuple:
    """Index pairs (i, j) whose boxes overlap: sweep along x over b's sorted lower corners, then all axes.
    With `same` (a and b are one set), each unordered pair once with i < j."""
    order = np.argsort(lo_b[:, 0], kind="stable")
    sorted_lo = lo_b[order, 0]
    begin = np.searchsorted(sorted_lo, lo_a[:, 0] - (hi_b[:, 0] - lo_b[:, 0]).max(initial=0.0), side="left")
    end = np.searchsorted(sorted_lo, hi_a[:, 0], side="right")
    counts = end - begin
    i = np.repeat(np.arange(len(lo_a)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    j = order[np.repeat(begin, counts) + offsets]
    keep = np.all((lo_a[i] <= hi_b[j]) & (lo_b[j] <= hi_a[i]), axis=1)
    if same:
        keep &= i < j
    return i[keep], j[keep]


def count_triangle_intersections(x, triangles) -> int:
    """Number of pairs of triangles of the mesh (positions x [n, 3], triangles [m, 3]) that intersect, pairs
    sharing a vertex excepted."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    corners = x[t]
    lo, hi = corners.min(axis=1), corners.max(axis=1)
    i, j = box_pairs(lo, hi, lo, hi, same=True)
    shared = np.any(t[i][:, :, None] == t[j][:, None, :], axis=(1, 2))
    i, j = i[~shared], j[~shared]
    hit = np.zeros(len(i), bool)
    for first, second in ((i, j), (j, i)):
        for e in range(3):
            p, q = corners[first, e], corners[first, (e + 1) % 3]
            a, b, c = corners[second, 0], corners[second, 1], corners[second, 2]
            hit |= segments_cross_triangles(p, q, a, b, c)
    return int(hit.sum())


def count_edges_crossing_mesh(x, edges, mesh_vertices, mesh_triangles) -> int:
    """Number of segments (x[edges[:, 0]], x[edges[:, 1]]) that cross a triangle of a static mesh."""
    x = np.asarray(x, dtype=np.float64)
    e = np.asarray(edges, dtype=np.int64)
    p, q = x[e[:, 0]], x[e[:, 1]]
    corners = np.asarray(mesh_vertices, dtype=np.float64)[np.asarray(mesh_triangles, dtype=np.int64)]
    i, j = box_pairs(np.minimum(p, q), np.maximum(p, q), corners.min(axis=1), corners.max(axis=1))
    crossed = segments_cross_triangles(p[i], q[i], corners[j, 0], corners[j, 1], corners[j, 2])
    return int(len(np.unique(i[crossed])))


def winding_numbers(points, mesh_vertices, mesh_triangles, chunk: int = 256) -> np.ndarray:
    """Generalised winding number of each point with respect to a closed mesh (about 1 inside, 0 outside):
    the sum of the faces' signed solid angles (Van Oosterom and Strackee) over 4 pi."""
    pts = np.asarray(points, dtype=np.float64)
    c = np.asarray(mesh_vertices, dtype=np.float64)[np.asarray(mesh_triangles, dtype=np.int64)]
    out = np.empty(len(pts))
    for s in range(0, len(pts), chunk):
        a, b, d = (c[None, :, k] - pts[s:s + chunk, None] for k in range(3))
        la, lb, ld = (np.linalg.norm(v, axis=2) for v in (a, b, d))
        num = np.einsum("pfi,pfi->pf", a, np.cross(b, d))
        den = la * lb * ld + np.einsum("pfi,pfi->pf", a, b) * ld + np.einsum("pfi,pfi->pf", b, d) * la \
            + np.einsum("pfi,pfi->pf", d, a) * lb
        out[s:s + chunk] = np.sum(2.0 * np.arctan2(num, den), axis=1) / (4.0 * np.pi)
    return out


def mesh_edges(triangles) -> np.ndarray:
    """The undirected edges of a triangle mesh, each once, [e, 2]."""
    t = np.asarray(triangles, dtype=np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    return np.unique(np.sort(e, axis=1), axis=0)
