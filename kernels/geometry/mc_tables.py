"""The marching cubes case tables, derived here from the cube's geometry (not transcribed from a published table).

Corner `c` of a cell sits at offset `CUBE_CORNER_OFFSETS[c]` from the cell's lowest node and is bit `c` of the
cell's case code, set when the field there is below the threshold ("inside"). The 12 edges join corners differing
in one coordinate, listed from the lower corner to the upper one.

Each case's surface is built face by face: on every cube face the crossing points of its edges are joined by
segments; on a face whose inside corners sit on a diagonal (the ambiguous face) the two inside corners are cut off
separately. Two cells sharing a face see the same four values, so they take the same decision there and the
surface is watertight across cells. The segments of a case chain into closed loops (every crossing edge touches
two faces), each loop is split into a fan of triangles, and every triangle is wound counter-clockwise seen from the
outside (the side above the threshold). 256 cases, 820 triangles.
"""

from __future__ import annotations

#: (x, y, z) offset of each of the 8 corners from the cell's lowest node: the bottom square (z = 0) counter-clockwise
#: seen from +z, then the top square above it.
CUBE_CORNER_OFFSETS = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1))


def _edges() -> tuple:
    """The bottom square's sides, the top square's, then the 4 verticals, each as (lower corner, upper corner)."""
    pairs = [(c, (c + 1) % 4) for c in range(4)] + [(4 + c, 4 + (c + 1) % 4) for c in range(4)]
    pairs += [(c, c + 4) for c in range(4)]
    return tuple(tuple(sorted(p, key=lambda c: sum(CUBE_CORNER_OFFSETS[c]))) for p in pairs)


EDGE_TO_CORNERS = _edges()


def edge_axis(edge: int) -> int:
    """The axis (0 x, 1 y, 2 z) along which `edge` runs."""
    a, b = EDGE_TO_CORNERS[edge]
    return next(d for d in range(3) if CUBE_CORNER_OFFSETS[a][d] != CUBE_CORNER_OFFSETS[b][d])


def _faces() -> list:
    """The 6 faces, each as its 4 corners in counter-clockwise order seen from outside the cube."""
    faces = []
    for axis in range(3):
        u, v = [d for d in range(3) if d != axis]
        right_handed = (u, v, axis) in ((0, 1, 2), (1, 2, 0), (2, 0, 1))
        for side in (0, 1):
            ring = []
            for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):  # counter-clockwise about +axis when right-handed
                ring.append(next(c for c, o in enumerate(CUBE_CORNER_OFFSETS)
                                 if o[axis] == side and o[u] == du and o[v] == dv))
            # the outward normal is +axis on the upper face, -axis on the lower one
            faces.append(ring if right_handed == (side == 1) else ring[::-1])
    return faces


def _edge_between(a: int, b: int) -> int:
    return next(e for e, pair in enumerate(EDGE_TO_CORNERS) if set(pair) == {a, b})


def _face_segments(case: int, ring: list) -> dict:
    """Segments on one face as {from edge: to edge}, running from where the boundary walk leaves the inside to where
    it entered it, so that chained segments keep the inside region on one side."""
    inside = [(case >> c) & 1 for c in ring]
    crossings = []  # (kind, edge) in counter-clockwise order around the face
    for k in range(4):
        if inside[k] != inside[(k + 1) % 4]:
            crossings.append(("exit" if inside[k] else "entry", _edge_between(ring[k], ring[(k + 1) % 4])))
    segments = {}
    for n, (kind, edge) in enumerate(crossings):
        if kind == "entry":
            # the inside run starting here ends at the next crossing (an exit): one segment per inside run, so
            # diagonal inside corners are cut off separately
            segments[crossings[(n + 1) % len(crossings)][1]] = edge
    return segments


def _case_triangles(case: int) -> list:
    following = {}
    for ring in _FACES:
        following.update(_face_segments(case, ring))
    triangles, seen = [], set()
    for start in sorted(following):
        if start in seen:
            continue
        loop, edge = [start], following[start]
        seen.add(start)
        while edge != start:
            loop.append(edge)
            seen.add(edge)
            edge = following[edge]
        # the walk runs clockwise seen from outside the surface: reverse it for counter-clockwise triangles
        loop.reverse()
        triangles += _split_loop(loop)
    return triangles


def _share_a_face(e0: int, e1: int) -> bool:
    return bool(_EDGE_FACES[e0] & _EDGE_FACES[e1])


def _split_loop(loop: list) -> list:
    """Triangles covering a loop of edge crossings, none of whose inner diagonals lies in a cube face.

    A diagonal joining two crossings of one face would lie in the face the neighbouring cell shares; its own
    triangles may use the same segment, and the surface would no longer be a 2-manifold there. Found by dynamic
    programming over the loop's sub-polygons (the loops have at most 12 corners)."""
    n = len(loop)
    best = {}  # (i, j) -> (cost, triangles) for the polygon loop[i..j] closed by the chord (i, j)

    def chord_cost(i: int, j: int) -> int:
        return 0 if j - i == 1 or (i == 0 and j == n - 1) else int(_share_a_face(loop[i], loop[j]))

    for span in range(1, n):
        for i in range(n - span):
            j = i + span
            if span == 1:
                best[i, j] = (0, [])
                continue
            options = []
            for m in range(i + 1, j):  # the triangle on the chord (i, j)
                cost = best[i, m][0] + best[m, j][0] + chord_cost(i, m) + chord_cost(m, j)
                options.append((cost, m))
            cost, m = min(options)  # ties: the smallest m, so a fan from loop[0] when it is clean
            best[i, j] = (cost, best[i, m][1] + [(loop[i], loop[m], loop[j])] + best[m, j][1])
    cost, triangles = best[0, n - 1]
    assert cost == 0, f"no clean split of the loop {loop}"
    return triangles


_FACES = _faces()
#: the two faces (indices into _FACES) each edge bounds
_EDGE_FACES = [frozenset(f for f, ring in enumerate(_FACES) if set(pair) <= set(ring)) for pair in EDGE_TO_CORNERS]


def _tables() -> tuple:
    ranges, indices = [0], []
    for case in range(256):
        for tri in _case_triangles(case):
            indices.extend(tri)
        ranges.append(len(indices))
    return tuple(ranges), tuple(indices)


#: CASE_TO_TRI_RANGE[c] : CASE_TO_TRI_RANGE[c + 1] is case c's slice of TRI_LOCAL_INDICES (257 entries).
#: TRI_LOCAL_INDICES: three edge numbers per triangle, all cases one after the other (2460 entries).
CASE_TO_TRI_RANGE, TRI_LOCAL_INDICES = _tables()
