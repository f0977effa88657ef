"""Small triangle meshes for the collision tests: an icosphere (closed, outward) and an open square."""

import numpy as np

_ICOSAHEDRON_FACES = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
                      (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9),
                      (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]


def icosphere(subdivisions: int = 0) -> tuple:
    """(vertices (n, 3) on the unit sphere, outward triangles (m, 3))."""
    t = (1.0 + 5.0 ** 0.5) / 2.0
    v = [np.array(p, float) / np.linalg.norm(p) for p in
         [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
          (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]]
    faces = list(_ICOSAHEDRON_FACES)
    for _ in range(subdivisions):
        middle: dict = {}

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in middle:
                m = v[a] + v[b]
                v.append(m / np.linalg.norm(m))
                middle[key] = len(v) - 1
            return middle[key]

        faces = [f for a, b, c in faces for f in
                 ((a, mid(a, b), mid(c, a)), (b, mid(b, c), mid(a, b)), (c, mid(c, a), mid(b, c)),
                  (mid(a, b), mid(b, c), mid(c, a)))]
    return np.array(v), np.array(faces)


def square(half: float = 1.0) -> tuple:
    """An open square of side 2 half in the x-z plane, facing +y: two triangles."""
    v = np.array([[-half, 0, -half], [half, 0, -half], [half, 0, half], [-half, 0, half]], float)
    return v, np.array([[0, 2, 1], [0, 3, 2]])


def box(half) -> tuple:
    """A closed, outward-oriented box with half extents `half` centred at the origin: 12 triangles."""
    hx, hy, hz = half
    v = np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])
