"""The explicit stability limit of a semi-implicit scene's time step, estimated from its stiffest terms and
lightest particles, so `sim validate`/`sim run` can warn before a run blows up.

Semi-implicit (symplectic) Euler is stable for dt < 2 / omega_max. The factors below were measured by bisecting the
largest stable dt of a perturbed 4 x 4 cloth (tools-free, see the tests): membrane dt ~ 0.456 sqrt(m / (tri_ke +
0.3 tri_ka)) (tri_ke 500 N/m, 0.05 kg: 4.6 ms), edge springs ~ 0.68 sqrt(m / spring_ke); contact is a spring of
stiffness ke against a fixed collider, 2 sqrt(m / ke); bending acts as edge_ke / h^2 over an edge of length h.
Each factor is taken a little lower, so the estimate errs on the safe side.
"""

from __future__ import annotations

import math

import numpy as np

MEMBRANE, SPRING, BENDING, CONTACT = 0.42, 0.6, 1.5, 1.8


def stability_limit(spec):
    """(dt limit [s], what sets it) of a validated scene spec with the semi-implicit solver; None otherwise."""
    s = spec.sim
    if s.solver.type != "semi_implicit":
        return None
    limits = []
    contact = bool(spec.colliders)
    for i, c in enumerate(spec.cloth):
        mat = spec.materials[c.material] if isinstance(c.material, str) else c.material
        m, h = _lightest_and_shortest(c)
        if m is None:
            continue
        k_membrane = mat.tri_ke + 0.3 * mat.tri_ka
        if k_membrane > 0:
            limits.append((MEMBRANE * math.sqrt(m / k_membrane), f"cloth[{i}] membrane (tri_ke, tri_ka)"))
        if mat.springs and mat.spring_ke > 0:
            limits.append((SPRING * math.sqrt(m / mat.spring_ke), f"cloth[{i}] springs (spring_ke)"))
        if mat.edge_ke > 0:
            limits.append((BENDING * h * math.sqrt(m / mat.edge_ke), f"cloth[{i}] bending (edge_ke)"))
        if contact:
            limits.append((CONTACT * math.sqrt(m / s.contact.ke), f"cloth[{i}] contact (sim.contact.ke)"))
    for i, p in enumerate(spec.particles):
        if contact:
            limits.append((CONTACT * math.sqrt(p.mass / s.contact.ke), f"particles[{i}] contact (sim.contact.ke)"))
        if s.particle_contact.enabled:
            limits.append((CONTACT * math.sqrt(0.5 * p.mass / s.particle_contact.ke),
                           f"particles[{i}] particle contact (sim.particle_contact.ke)"))
    return min(limits) if limits else None


def _lightest_and_shortest(c):
    """(lightest vertex mass [kg], shortest edge [m]) of a cloth spec."""
    if c.grid is not None:
        return (c.mass if c.mass is not None else 0.01), min(c.grid.cell_x, c.grid.cell_y)
    mesh = c.mesh if c.mesh is not None else c.inline
    v = np.asarray(mesh.vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(mesh.triangles, dtype=np.int64).reshape(-1, 3)
    if len(t) == 0:
        return None, None
    scale = getattr(c.mesh, "scale", 1.0) if c.mesh is not None else 1.0
    v = v * scale
    area = 0.5 * np.linalg.norm(np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]), axis=1)
    vertex_area = np.zeros(len(v))
    for k in range(3):
        np.add.at(vertex_area, t[:, k], area / 3.0)
    used = vertex_area > 0
    edges = np.concatenate([np.linalg.norm(v[t[:, a]] - v[t[:, b]], axis=1) for a, b in ((0, 1), (1, 2), (2, 0))])
    return float(c.density * vertex_area[used].min()), float(edges.min())


def stability_warning(spec, dt: float) -> str | None:
    """A warning when `dt` exceeds the estimated limit: the estimate, what sets it, and the substeps that would
    satisfy it."""
    found = stability_limit(spec)
    if found is None or dt <= found[0]:
        return None
    limit, what = found
    substeps = math.ceil(spec.sim.substeps * dt / limit)
    return (f"dt {dt * 1000:.3g} ms exceeds the estimated stability limit of the semi-implicit solver, "
            f"{limit * 1000:.3g} ms (set by {what}): the run may blow up; sim.substeps >= {substeps} would satisfy it "
            "(or use the xpbd solver)")
