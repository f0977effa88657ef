"""Write assets/cushion.obj: a closed, outward-oriented superellipsoid (a rounded slab, like a cushion or a
stool top) used by scenes/cloth_on_mesh.yaml. Run: python tools/gen_cushion.py"""

from __future__ import annotations

import argparse
import os

import numpy as np

HALF = np.array([0.45, 0.2, 0.35])  # half extents [m]
POWER = 4.0  # |x/a|^p + |y/b|^p + |z/c|^p = 1: large p is boxy, 2 an ellipsoid
DIVISIONS = 12  # grid cells along each edge of the cube the surface is mapped from


def cushion(half=HALF, power=POWER, n=DIVISIONS) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (v, 3), outward triangles (t, 3)) of the superellipsoid, mapped radially from a cube's faces."""
    index: dict = {}
    vertices, triangles = [], []

    def vertex(p):
        key = tuple(np.round(p, 9))
        if key not in index:
            d = p / np.linalg.norm(p)
            r = np.sum(np.abs(d / half) ** power) ** (-1.0 / power)
            index[key] = len(vertices)
            vertices.append(d * r)
        return index[key]

    s = np.linspace(-1.0, 1.0, n + 1)
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u_axis, v_axis = (axis + 1) % 3, (axis + 2) % 3
            ids = np.empty((n + 1, n + 1), np.int64)
            for a in range(n + 1):
                for b in range(n + 1):
                    p = np.zeros(3)
                    p[axis], p[u_axis], p[v_axis] = sign, s[a], s[b]
                    ids[a, b] = vertex(p)
            for a in range(n):
                for b in range(n):
                    q = (ids[a, b], ids[a + 1, b], ids[a + 1, b + 1], ids[a, b + 1])
                    quads = [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
                    triangles += quads if sign > 0 else [t[::-1] for t in quads]
    return np.array(vertices), np.array(triangles)


def main():
    argparse.ArgumentParser(description=__doc__).parse_args()
    v, t = cushion()
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets", "cushion.obj")
    with open(path, "w") as f:
        f.write("# superellipsoid cushion written by tools/gen_cushion.py (closed, outward-oriented)\n")
        f.writelines(f"v {x:.6f} {y:.6f} {z:.6f}\n" for x, y, z in v)
        f.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in t)
    print(f"wrote {path}: {len(v)} vertices, {len(t)} triangles")


if __name__ == "__main__":
    main()
