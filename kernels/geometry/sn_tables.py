"""The surface nets tables, derived here from the cube's geometry, in OpenVDB's numbering (the one Warp's
`IsoSurfaceNets` and its tests use: y is the cube's "up", so corner 3 is (0, 0, 1) and corner 4 is (0, 1, 0)).

A cell's case: bit c set when corner c is below the threshold. `EDGE_GROUP_TABLE[case * 13]` is the number of
surface sheets (vertices) in the cell, `EDGE_GROUP_TABLE[case * 13 + 1 + e]` the sheet (1-based) crossing edge e, or
0 when edge e is not crossed. Sheets are the connected pieces of the crossings, joined face by face; on a face with
two diagonal inside corners the two are cut off separately (the rule marching cubes uses here, mc_tables.py),
sheets numbered in the order of their first edge. `AMBIGUOUS_FACE[case]` names the case's one ambiguous face
whose two cut-off corners belong to the same sheet (joined through the cell), 0 when there is none or several
(face ids: 1 the z = 0 face, 2 x = 1, 3 z = 1, 4 x = 0, 5 y = 0, 6 y = 1). Two cells that both have the shared face
as that face would give one pair of vertices four quads; both then take the complementary case, which pairs the
crossings the other way round that face, so they still agree there and the mesh stays 2-manifold.
"""

from __future__ import annotations

CORNER_OFFSETS = ((0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1), (0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 1, 1))
EDGE_TO_CORNERS = ((0, 1), (1, 2), (3, 2), (0, 3), (4, 5), (5, 6), (7, 6), (4, 7), (0, 4), (1, 5), (2, 6), (3, 7))
#: face id -> (axis, side) of the face, and the id of the same face seen from the neighbour across it
FACES = {1: (2, 0), 2: (0, 1), 3: (2, 1), 4: (0, 0), 5: (1, 0), 6: (1, 1)}
OPPOSITE_FACE = {1: 3, 3: 1, 2: 4, 4: 2, 5: 6, 6: 5}


def _ring(axis: int, side: int) -> list:
    """The face's corners in order around it."""
    u, v = [d for d in range(3) if d != axis]
    return [next(c for c, o in enumerate(CORNER_OFFSETS) if o[axis] == side and o[u] == a and o[v] == b)
            for a, b in ((0, 0), (1, 0), (1, 1), (0, 1))]


def _edge(a: int, b: int) -> int:
    return next(e for e, pair in enumerate(EDGE_TO_CORNERS) if set(pair) == {a, b})


def _case_row(case: int) -> tuple:
    """(group row of 13, number of merged ambiguous faces, the last one's id)."""
    parent = list(range(12))

    def root(e):
        while parent[e] != e:
            e = parent[e]
        return e

    ambiguous_faces = []
    for fid, (axis, side) in FACES.items():
        ring = _ring(axis, side)
        inside = [(case >> c) & 1 for c in ring]
        cuts = [k for k in range(4) if inside[k] != inside[(k + 1) % 4]]
        edges = [_edge(ring[k], ring[(k + 1) % 4]) for k in cuts]
        if len(cuts) == 2:
            parent[root(edges[0])] = root(edges[1])
        elif len(cuts) == 4:
            ambiguous_faces.append((fid, edges))
            for n in range(4):  # the corner between two successive crossings: join them around inside corners
                if inside[(cuts[n] + 1) % 4]:
                    parent[root(edges[n])] = root(edges[(n + 1) % 4])
    row, ids = [0] * 13, {}
    for e, (a, b) in enumerate(EDGE_TO_CORNERS):
        if ((case >> a) & 1) != ((case >> b) & 1):
            row[1 + e] = ids.setdefault(root(e), len(ids) + 1)
    row[0] = len(ids)
    # the ambiguous faces whose two cut-off corners belong to one sheet (joined through the cell): the vertex of
    # that sheet would meet the neighbour's in four quads if the neighbour did the same
    merged = [fid for fid, edges in ambiguous_faces if len({root(e) for e in edges}) == 1]
    return tuple(row), len(merged), merged[-1] if merged else 0


def _tables() -> tuple:
    groups, faces = [], []
    for case in range(256):
        row, ambiguous, face_id = _case_row(case)
        groups.extend(row)
        faces.append(face_id if ambiguous == 1 else 0)
    return tuple(groups), tuple(faces)


EDGE_GROUP_TABLE, AMBIGUOUS_FACE = _tables()
